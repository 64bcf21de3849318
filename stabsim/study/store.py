"""The on-disk chunk store of a study run (used by ``stabsim.study``).

Layout of one study's output directory ``OUT/STUDY``::

    study.json                           manifest: study id, fingerprint, profile, grid size
    chunks/<cell-id>__r<start>-<stop>.nc one finished chunk (cell x replicates start..stop-1)
    chunks/KEEP                          present when --keep-chunks was asked (kept with the chunks)
    data.nc                              the assembled results (written last)
    .lock                                held (flock) by the run that is writing here

Guarantees
----------
* **Atomic files** (``stabsim.runtime.atomic_files``).  Every file (chunk, ``data.nc``,
  ``study.json``) is written to a hidden temporary ``.<name>.<pid>.<random>.tmp`` in the same
  directory, flushed to disk, checked, and moved to its final name with ``os.replace``.  A
  killed run leaves at most a temporary file (removed on the next start), never a half-written
  file under a final name.
* **Self-describing chunks.**  A chunk carries attrs ``chunk_fingerprint`` (the study's),
  ``chunk_cell_id``, ``chunk_cell`` (JSON coordinates), ``chunk_replicates`` (``start:stop``),
  ``chunk_replicates_sha256`` (of the int64 replicate ids), ``chunk_sha256`` (of every
  variable's values) and ``chunk_attrs_sha256`` (of every attr, global and per variable:
  an edited attr would silently drop out of data.nc).  ``validate_chunk`` re-opens a file with xarray and checks all of them;
  a file that fails (truncated, foreign, wrong replicates, altered values) is deleted and
  its chunk recomputed.
* **Fast, exact chunk format.**  Chunks are netCDF-3 files (xarray's ``scipy`` engine): h5py and
  h5netcdf cost a fixed time to write and to read even a tiny file, netCDF-3 a small fraction
  of it, which keeps chunking overhead small (benchmarks/README.md, "Data files").  netCDF-3 has no
  int64 and few attribute types, so ``encode_chunk`` stores int64 variables as int32 (only
  when every value fits; marker attr ``stabsim_dtype``) and every attribute dict as JSON
  (attr ``stabsim_attrs``); ``open_chunk`` undoes both, so a chunk reads back identical to
  what the kind returned.  A chunk netCDF-3 cannot hold exactly (unsigned or complex
  dtypes, int64 beyond int32, array-valued attrs, ...) is written as netCDF-4 (h5netcdf)
  instead; readers detect the format from the file's magic bytes.  ``data.nc`` is netCDF-4.
* **Checked data.nc** (``stabsim.runtime.data_integrity``).
  ``write_data`` stores every numeric array variable with HDF5's Fletcher-32 filter and a
  SHA-256 of every variable (name, dims, dtype, values, attrs) and the global attrs in attr
  ``stabsim_integrity`` (computed over everything but itself): Fletcher-32 alone misses
  HDF5's index nodes, whose damage reads back as fill values; ``verify_data`` reads every
  value and checks both, raising ``DamagedData`` with the path.
* **Code and backend.**  Chunks also record the code that computed them
  (``chunk_code_*``, ``stabsim.runtime.codeid``) and the backend they ran on (``chunk_backend``);
  ``validate_chunk(..., code=, backend=)`` reports an intact chunk of other code as ``STALE``
  and one of another backend as ``OTHER_BACKEND``.
* **One writer.**  ``StudyDir.lock()`` takes an exclusive ``fcntl.flock`` on ``.lock``; the
  kernel drops it when the process dies, so a killed run never blocks its resume.

Nothing here knows about study kinds, TOML or numba.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import xarray as xr

from stabsim.runtime.atomic_files import atomic_write_netcdf, atomic_write_text, is_temp
from stabsim.runtime.data_integrity import ENGINE, StoreError, canon_attr, clean_encoding, feed

#: the file in ``chunks/`` that records ``--keep-chunks`` beside the chunks
KEEP_MARKER = "KEEP"
CHUNK_RE = re.compile(r"^(?P<cell>.+)__r(?P<start>\d+)-(?P<stop>\d+)\.nc$")
# ---- hashing ---------------------------------------------------------------------------

def replicates_sha256(reps) -> str:
    return hashlib.sha256(np.ascontiguousarray(np.asarray(reps, dtype=np.int64)).tobytes()).hexdigest()


def content_sha256(ds: xr.Dataset) -> str:
    """SHA-256 over the names, shapes, dtypes and values of every variable (coords included)."""
    h = hashlib.sha256()
    for name in sorted(map(str, ds.variables)):
        feed(h, name, ds[name].values)
    return h.hexdigest()


#: the chunk attrs that hold checksums (not covered by ``attrs_sha256``)
CHUNK_CHECKSUM_ATTRS = ("chunk_sha256", "chunk_attrs_sha256")


def attrs_sha256(ds: xr.Dataset) -> str:
    """SHA-256 over a chunk's global attrs (less ``CHUNK_CHECKSUM_ATTRS``) and every variable's
    attrs, in canonical JSON (numpy scalars as numbers, tuples and arrays as lists): the same
    before writing and after ``open_chunk``, whichever chunk format holds it."""
    glob = {str(k): canon_attr(v) for k, v in ds.attrs.items() if k not in CHUNK_CHECKSUM_ATTRS}
    per_var = {str(n): {str(k): canon_attr(v) for k, v in ds.variables[n].attrs.items()}
               for n in sorted(map(str, ds.variables))}
    text = json.dumps([glob, per_var], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


# ---- the chunk format -----------------------------------------------------------------

NC3_MARKER = "stabsim_chunk_format"
NC3_VERSION = "nc3-exact-1"
_INT32 = np.iinfo(np.int32)


def _json_attrs(attrs: dict) -> str | None:
    out = {}
    for k, v in attrs.items():
        if isinstance(v, np.generic) and v.dtype.kind in "biuf":
            v = v.item()
        if isinstance(v, (list, tuple)) and all(isinstance(x, (str, int, float)) and not isinstance(x, bool)
                                                for x in v):
            v = list(v)
        elif not isinstance(v, (str, int, float)) or isinstance(v, bool):
            return None
        out[str(k)] = v
    return json.dumps(out, sort_keys=True)


def _rebuild(ds: xr.Dataset, variables: dict, attrs: dict) -> xr.Dataset:
    """A dataset with ``ds``'s coordinate/data-variable split and the given variables."""
    return xr.Dataset({n: variables[n] for n in ds.data_vars},
                      coords={n: variables[n] for n in ds.coords}, attrs=attrs)


def encode_chunk(ds: xr.Dataset) -> xr.Dataset | None:
    """A copy of ``ds`` that netCDF-3 stores exactly (see ``open_chunk``), or None."""
    ga = _json_attrs(ds.attrs)
    if ga is None:
        return None
    variables = {}
    for name, var in ds.variables.items():
        va = _json_attrs(var.attrs)
        if va is None:
            return None
        attrs = {"stabsim_attrs": va}
        kind, size = var.dtype.kind, var.dtype.itemsize
        vals = var.values
        if kind == "i" and size == 8:
            if vals.size and (vals.min() < _INT32.min or vals.max() > _INT32.max):
                return None
            attrs["stabsim_dtype"] = "int64"
            vals = vals.astype(np.int32)
        elif (kind == "f" and size in (4, 8)) or (kind == "i" and size in (1, 2, 4)) or kind == "b":
            pass
        elif kind in "OU" and all(isinstance(x, str) for x in vals.ravel().tolist()):
            pass
        else:
            return None
        variables[name] = xr.Variable(var.dims, vals, attrs)
    return _rebuild(ds, variables, {NC3_MARKER: NC3_VERSION, "stabsim_attrs": ga})


def _decode_chunk(ds: xr.Dataset) -> xr.Dataset:
    if ds.attrs.get(NC3_MARKER) != NC3_VERSION:
        return ds
    variables = {}
    for name, var in ds.variables.items():
        attrs = dict(var.attrs)
        dtype = attrs.pop("stabsim_dtype", None)
        new = var.astype(dtype) if dtype else var.copy(deep=False)
        new.attrs = json.loads(attrs.pop("stabsim_attrs", "{}"))
        new.encoding = {}
        variables[name] = new
    out = _rebuild(ds, variables, json.loads(ds.attrs["stabsim_attrs"]))
    out.set_close(ds.close)
    return out


def _engine_of(path) -> str:
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic[:3] == b"CDF":
        return "scipy"
    if magic == b"\x89HDF":
        return "h5netcdf"
    raise StoreError(f"{path} is not a netCDF file")


def open_chunk(path, *, lazy: bool = False) -> xr.Dataset:
    """A chunk as the kind returned it (int64 and attrs restored).  ``lazy``: dask-backed."""
    ds = xr.open_dataset(path, engine=_engine_of(path), chunks={} if lazy else None)
    if not lazy:
        ds.load()
        ds.close()
    return _decode_chunk(ds)


def write_chunk_file(ds: xr.Dataset, path, check=None) -> str:
    """Atomically write a chunk: netCDF-3 when exact, else netCDF-4.  Returns the engine."""
    enc = encode_chunk(ds)
    if enc is not None:
        try:
            atomic_write_netcdf(enc, path, check=check, engine="scipy")
            return "scipy"
        except (StoreError, OSError):
            raise
        except Exception:  # netCDF-3 cannot take it (names, sizes ...): fall back
            pass
    atomic_write_netcdf(clean_encoding(ds.copy()), path, check=check, engine=ENGINE)
    return ENGINE


# ---- one study directory -----------------------------------------------------------------

class StudyDir:
    """Paths and file operations of ``OUT/STUDY``."""

    def __init__(self, root):
        self.root = Path(root)
        self.chunk_dir = self.root / "chunks"
        self.manifest_path = self.root / "study.json"
        self.data_path = self.root / "data.nc"
        self.keep_marker = self.chunk_dir / KEEP_MARKER
        self._lock_fd = None

    # locking
    @contextlib.contextmanager
    def lock(self):
        import fcntl

        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / ".lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                other = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
                raise StoreError(f"another stabsim run (pid {other}) is writing to {self.root}; "
                                 "wait for it to finish or stop it first") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            yield self
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    # manifest
    def read_manifest(self) -> dict | None:
        if not self.manifest_path.exists():
            return None
        try:
            return json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise StoreError(f"{self.manifest_path} is unreadable ({e})") from None

    def write_manifest(self, manifest: dict) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.manifest_path, json.dumps(manifest, indent=1, sort_keys=True) + "\n")

    def keeps_chunks(self) -> bool:
        """``--keep-chunks`` was asked here once (``chunks/KEEP``: it survives a lost study.json)."""
        return self.keep_marker.is_file()

    def mark_keep_chunks(self) -> None:
        if not self.keeps_chunks():
            self.chunk_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.keep_marker, "stabsim: keep these chunks after data.nc is written "
                              "(--keep-chunks); delete this folder by hand when done\n")

    def has_results(self) -> bool:
        """Anything a run would produce (manifest, chunks, data.nc)."""
        if self.manifest_path.exists() or self.data_path.exists():
            return True
        return self.chunk_dir.is_dir() and any(self.chunk_dir.iterdir())

    def wipe(self) -> list[Path]:
        """Delete this directory's results (``--force``).  Returns what was removed."""
        removed = []
        for p in (self.data_path, self.manifest_path):
            if p.exists():
                p.unlink()
                removed.append(p)
        if self.chunk_dir.exists():
            shutil.rmtree(self.chunk_dir)
            removed.append(self.chunk_dir)
        removed += self.remove_temps()
        return removed

    def remove_temps(self) -> list[Path]:
        """Delete leftover temporary files of killed runs (only safe while holding the lock)."""
        removed = []
        for d in (self.root, self.chunk_dir):
            if d.is_dir():
                for p in d.iterdir():
                    if is_temp(p):
                        p.unlink(missing_ok=True)
                        removed.append(p)
        return removed

    # chunks
    def chunk_path(self, cell_id: str, start: int, stop: int) -> Path:
        return self.chunk_dir / f"{cell_id}__r{start}-{stop}.nc"

    def chunk_files(self) -> list[Path]:
        if not self.chunk_dir.is_dir():
            return []
        return sorted(p for p in self.chunk_dir.iterdir() if CHUNK_RE.match(p.name))

    def write_chunk(self, ds: xr.Dataset, path: Path, meta: dict) -> None:
        """Atomically write one chunk, stamped with ``meta`` (see ``chunk_attrs``) and its checksum."""
        self.chunk_dir.mkdir(parents=True, exist_ok=True)
        ds = ds.copy()
        ds.attrs.update(meta)
        ds.attrs["chunk_sha256"] = content_sha256(ds)
        ds.attrs["chunk_attrs_sha256"] = attrs_sha256(ds)

        def check(tmp):
            reason = validate_chunk(tmp, meta)
            if reason:
                raise StoreError(f"chunk {path.name} does not survive a netCDF round trip ({reason}); "
                                 "the study kind returned data netCDF cannot store exactly")

        write_chunk_file(ds, path, check=check)


def chunk_attrs(fingerprint: str, cell_id: str, cell_json: str, reps: np.ndarray,
                cell_fingerprint: str | None = None) -> dict:
    """The attrs that identify a chunk (the expected values ``validate_chunk`` compares).
    ``cell_fingerprint``: the definition of its cell alone (``StudySpec.cell_fingerprints``)."""
    reps = np.asarray(reps, dtype=np.int64)
    out = {"chunk_fingerprint": fingerprint, "chunk_cell_id": cell_id, "chunk_cell": cell_json,
           "chunk_replicates": f"{int(reps[0])}:{int(reps[-1]) + 1}",
           "chunk_replicates_sha256": replicates_sha256(reps)}
    if cell_fingerprint is not None:
        out["chunk_cell_fingerprint"] = cell_fingerprint
    return out


STALE = "stale: "
OTHER_BACKEND = "other backend: "


def stored_backend(attrs) -> str:
    """The backend a chunk (``chunk_backend``) or data.nc (``study_backend``) was computed on
    ("cpu" or "cuda"); results written before the GPU backend existed record none: "cpu"."""
    return str(attrs.get("chunk_backend", attrs.get("study_backend", "cpu")) or "cpu")


def validate_chunk(path, expected: dict, *, code: dict | None = None, backend: str | None = None) -> str | None:
    """None if ``path`` is a complete chunk with the ``expected`` attrs; else the reason.

    ``code``: the running code's identity (``stabsim.runtime.codeid.code_identity()``); a chunk that is
    intact but was computed by other code gets a reason starting with ``STALE`` (it is not
    damaged: the caller decides whether to recompute it).  ``backend`` ("cpu"/"cuda"): a chunk
    valid in every other respect but computed on another backend (``stored_backend``) gets a
    reason starting with ``OTHER_BACKEND`` (the backends agree only to rounding)."""
    try:
        ds = open_chunk(path)
        recorded = ds.attrs.get("chunk_attrs_sha256")
        if recorded is not None and attrs_sha256(ds) != recorded:
            return "attrs checksum mismatch (an attribute differs from the one written)"
        if code is not None and ds.attrs.get("chunk_sha256") and content_sha256(ds) == ds.attrs.get("chunk_sha256"):
            from stabsim.runtime.codeid import describe, matches, recorded_identity

            rec = recorded_identity({k: v for k, v in ds.attrs.items() if k.startswith("chunk_code_")})
            if not matches(rec, code):
                return f"{STALE}computed by {describe(rec)}"
        same_cell = (expected.get("chunk_cell_fingerprint") is not None
                     and ds.attrs.get("chunk_cell_fingerprint") == expected["chunk_cell_fingerprint"])
        for key, val in expected.items():
            if key == "chunk_fingerprint" and same_cell:
                continue  # another sweep around the same cell: its replicates are the same
            if key == "chunk_cell_fingerprint" and ds.attrs.get(key) is None and \
                    ds.attrs.get("chunk_fingerprint") == expected.get("chunk_fingerprint"):
                continue  # written before cells recorded their own fingerprint
            if ds.attrs.get(key) != val:
                return f"attr {key} is {ds.attrs.get(key)!r}, expected {val!r}"
        if "replicate" not in ds.dims:
            return "no replicate dimension"
        if replicates_sha256(ds["replicate"].values) != expected.get("chunk_replicates_sha256"):
            return "replicate ids differ from the expected ones"
        if content_sha256(ds) != ds.attrs.get("chunk_sha256"):
            return "content checksum mismatch"
        if recorded is None:  # chunks of older code get here only as STALE above
            return "no attrs checksum (chunk_attrs_sha256)"
        if backend is not None and stored_backend(ds.attrs) != backend:
            return f"{OTHER_BACKEND}computed on backend {stored_backend(ds.attrs)!r}"
    except Exception as e:  # unreadable, truncated, not netCDF ...
        return f"unreadable ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
    return None
