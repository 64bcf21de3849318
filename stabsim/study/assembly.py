"""Assembling a study's ``data.nc`` (``assemble``): the chunks concatenated along
``replicate`` per cell, the cells stacked along the sweep dims, with the provenance attrs
(``study_attrs``; ``study_backend``, ``study_device``: where the chunks ran); written
atomically with checksums (``stabsim.study.store``).  ``_refresh_attrs`` rewrites the attrs of a
finished data.nc whose study text changed in non-data fields only (and rewrites one of an
older checksum method with the current one)."""

from __future__ import annotations

import json
import platform
from pathlib import Path

import numpy as np
import xarray as xr

from stabsim.runtime.data_integrity import clean_encoding, write_data
from stabsim.runtime.provenance import provenance
from stabsim.registry import StudyError, StudySpec
from stabsim.registry.values import is_int, is_num
from stabsim.study.store import StoreError, StudyDir, open_chunk, stored_backend


_PROVENANCE_KEYS = ("stabsim_version", "git_commit", "numba_version", "numpy_version", "created",
                    "code_sha256", "code_git_commit", "code_git_dirty", "code_python", "code_numpy", "code_numba")


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("numpy", "numba", "scipy", "xarray", "dask", "distributed", "h5netcdf", "h5py"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = ""
    return out


def study_attrs(spec: StudySpec) -> dict:
    """Global provenance attrs of ``data.nc``."""
    return provenance(
        study_id=spec.id, study_kind=spec.kind, study_profile=spec.profile or "", seed=spec.seed,
        replicates=spec.replicates, study_fingerprint=spec.fingerprint,
        study_data_fingerprint=spec.data_fingerprint,
        study_file=spec.text, study_path=spec.path or "",
        study_spec=json.dumps(spec.normalized(), sort_keys=True),
        study_description=spec.description, sweep_dims=json.dumps(list(spec.sweep)),
        bounds=json.dumps(spec.bounds, sort_keys=True), versions=json.dumps(_versions(), sort_keys=True))


def _axis_values(values):
    if all(is_int(v) for v in values):
        return np.asarray(values, dtype=np.int64)
    if all(is_num(v) for v in values):
        return np.asarray(values, dtype=np.float64)
    if all(isinstance(v, bool) for v in values):
        return np.asarray(values, dtype=bool)
    return np.asarray([str(v) for v in values], dtype=object)


def _constant_along(arr: np.ndarray, axis: int) -> bool:
    first = np.take(arr, [0], axis=axis)
    if arr.dtype.kind == "f":
        return bool(np.all((arr == first) | (np.isnan(arr) & np.isnan(first))))
    return bool(np.all(arr == first))


#: Above this estimated size of data.nc, chunks are read lazily (dask) while assembling.
LAZY_ASSEMBLY_BYTES = 256 * 2**20


def assemble(spec: StudySpec, sd: StudyDir | str | Path, *, lazy: bool | None = None, cover: dict | None = None) -> Path:
    """Concatenate the chunks along ``replicate`` per cell, stack the cells along the sweep
    dims and write ``data.nc`` (atomically, checked; chunk files are left alone).  Returns
    the path of ``data.nc``.

    ``lazy``: read the chunks as dask arrays, so that memory holds only a few chunks at a
    time while ``data.nc`` is written.  Default: lazy when the result is estimated to exceed
    ``LAZY_ASSEMBLY_BYTES``; smaller results are assembled in memory (faster, and no dask
    import).

    ``cover``: ``{cell id: [(path, start, stop, lo, hi), ...]}``, the chunk files (holding
    replicates start..stop-1) whose replicates lo..hi-1 make up the cell, in order (what
    ``run_study`` found valid, in any chunking); default: the files of the spec's chunking.

    data.nc is written with checksums (``stabsim.runtime.data_integrity.write_data``: Fletcher-32 per array
    variable, SHA-256 of the rest), verified before it gets its final name.
    """
    import contextlib

    sd = sd if isinstance(sd, StudyDir) else StudyDir(sd)
    if cover is None:
        cover = {c.id: [(sd.chunk_path(c.id, a, b), a, b, a, b) for a, b in spec.chunk_ranges()]
                 for c in spec.cells()}
    if lazy is None:
        path0, a0, b0 = cover[spec.cells()[0].id][0][:3]
        per_rep = open_chunk(path0).nbytes / (b0 - a0)
        lazy = per_rep * spec.replicates * len(spec.cells()) > LAZY_ASSEMBLY_BYTES
    if lazy:
        import dask

        ctx = dask.config.set(scheduler="synchronous")
    else:
        ctx = contextlib.nullcontext()
    opened = []
    try:
        with ctx:
            out = _combine_cells(spec, cover, lazy, opened)

            def check(tmp):  # h5py directly: xarray's open is slow (benchmarks/README.md, "Data files")
                import h5py

                with h5py.File(tmp, "r") as f:
                    fp = f.attrs.get("study_fingerprint")
                    fp = fp.decode() if isinstance(fp, bytes) else fp
                    sizes = {d: f[d].shape[0] for d in out.dims if d in f}
                if fp != spec.fingerprint or sizes != dict(out.sizes):
                    raise StoreError(f"{tmp} does not read back as written")

            write_data(out, sd.data_path, check=check)
    finally:
        for ds in opened:
            ds.close()
    return sd.data_path


def _cell_dataset(pieces, lazy: bool, opened: list) -> tuple[xr.Dataset, list]:
    """One cell: its chunk pieces concatenated along ``replicate`` (each ``(path, start, stop,
    lo, hi)``, cut to lo..hi-1), auxiliary coordinates reset to variables (returned by name).
    Every opened chunk is appended to ``opened`` (closed by the caller)."""
    parts = []
    for path, start, stop, lo, hi in pieces:
        ds = open_chunk(path, lazy=lazy)
        opened.append(ds)
        if (lo, hi) != (start, stop):  # part of a chunk of another chunking
            ds = ds.isel(replicate=slice(lo - start, hi - start))
        parts.append(ds)
    cds = parts[0] if len(parts) == 1 else xr.concat(
        parts, dim="replicate", data_vars="minimal", coords="minimal", compat="equals",
        join="exact", combine_attrs="drop_conflicts")
    aux = [c for c in cds.coords if c not in cds.dims]
    return cds.reset_coords(aux), aux


def _combine_cells(spec: StudySpec, cover: dict, lazy: bool, opened: list) -> xr.Dataset:
    """The cells stacked along the sweep dims (labelled by the sweep values), auxiliary
    coordinates restored (keeping only the sweep dims they vary along), global attrs: the
    chunks' common attrs less per-chunk and per-cell ones, plus ``study_attrs``."""
    axes = list(spec.sweep)
    labels = {a: _axis_values(spec.sweep[a]) for a in axes}
    cells = []
    for cell in spec.cells():
        cds, aux = _cell_dataset(cover[cell.id], lazy, opened)
        if axes:
            pos = np.unravel_index(cell.index, [len(spec.sweep[a]) for a in axes])
            cds = cds.expand_dims({a: labels[a][[i]] for a, i in zip(axes, pos)})
        cells.append((cds, aux))
    aux = cells[0][1]
    if axes:
        grid = np.empty([len(spec.sweep[a]) for a in axes], dtype=object)
        for cell, (cds, _) in zip(spec.cells(), cells):
            grid.flat[cell.index] = cds
        out = xr.combine_nested(grid.tolist(), concat_dim=axes, data_vars="all", coords="different",
                                compat="equals", join="outer", combine_attrs="drop_conflicts")
    else:
        out = cells[0][0]
    out = out.set_coords([c for c in aux if c in out])
    # auxiliary coordinates keep only the sweep dims they vary along
    for name in aux:
        da = out[name]
        for a in axes:
            if a in da.dims and _constant_along(da.values, da.dims.index(a)):
                da = da.isel({a: 0}, drop=True)
        out = out.drop_vars(name).assign_coords({name: da.variable})
    attrs = {k: v for k, v in out.attrs.items() if not k.startswith("chunk_") and k not in _PROVENANCE_KEYS}
    for a in axes:  # per-cell attrs that happen to agree are not global facts
        attrs.pop(a, None)
        attrs.pop(spec.axes[a][1], None)
    attrs.update(study_attrs(spec))
    attrs.update(_backend_attrs(opened))
    out.attrs = attrs
    return clean_encoding(out)


def _backend_attrs(chunks) -> dict:
    """``study_backend`` ("cpu"/"cuda") and ``study_device`` of data.nc, from its chunks'
    ``chunk_backend``/``chunk_device`` (chunks written before the GPU backend: "cpu").  Chunks
    of two backends are refused here too (``run_study`` never lets them meet)."""
    backends = sorted({stored_backend(ds.attrs) for ds in chunks})
    if len(backends) > 1:
        raise StudyError(f"refusing to assemble data.nc from chunks computed on different backends "
                         f"({', '.join(map(repr, backends))}): they agree only to rounding")
    devices = sorted({str(ds.attrs.get("chunk_device", "cpu")) for ds in chunks})
    return {"study_backend": backends[0] if backends else "cpu", "study_device": "; ".join(devices) or "cpu"}


def _refresh_attrs(sd: StudyDir, spec: StudySpec, ds: xr.Dataset | None = None) -> None:
    """A finished data.nc whose study text changed only in non-data fields (description,
    bounds): rewrite its attrs (the code identity and creation time stay those of the run
    that computed it).  ``ds``: data.nc already loaded and verified."""
    from stabsim.runtime.data_integrity import verify_data, weak_checksum

    new = verify_data(sd.data_path) if ds is None else ds
    if weak_checksum(new):  # an older checksum method: rewritten with the full SHA-256 (values unchanged)
        write_data(new, sd.data_path)
    if new.attrs.get("study_file") == spec.text and new.attrs.get("study_profile") == (spec.profile or ""):
        return
    old = dict(new.attrs)
    new.attrs = {**{k: v for k, v in old.items() if k not in study_attrs(spec)}, **study_attrs(spec),
                 **{k: old[k] for k in _PROVENANCE_KEYS if k in old}}
    write_data(new, sd.data_path)
