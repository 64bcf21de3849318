"""The checksums of ``data.nc`` (used by ``stabsim.study`` and ``stabsim.reporting.analyse``):
``write_data`` writes it atomically with HDF5's Fletcher-32 filter on every numeric array
variable and a SHA-256 of every variable's values, dims, dtype and attrs and of the global
attrs (attr ``stabsim_integrity``, computed over everything but itself); ``verify_data``
reads every value and checks both, raising ``DamagedData`` with the path and the reason.
``weak_checksum`` tells a file of an older method (Fletcher-32 only for the array values).
The hashing of values and attrs (``feed``, ``canon_attr``) is shared with the chunk checksums
of ``stabsim.study.store``."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import xarray as xr

from stabsim.runtime.atomic_files import atomic_write_netcdf

#: the netCDF engine of data.nc
ENGINE = "h5netcdf"


class StoreError(RuntimeError):
    """A problem with the output directory (locked, foreign contents, unreadable files)."""


def feed(h, name: str, values: np.ndarray) -> None:
    """Hash one variable's name, shape, dtype and values into ``h`` (strings by value, so that a
    netCDF round trip, which may change their dtype, hashes the same)."""
    values = np.asarray(values)
    h.update(name.encode() + b"\0" + str(values.shape).encode() + b"\0")
    if values.dtype.kind in "OUS":  # strings: dtype differs before/after a netCDF round trip
        h.update(b"str\0" + json.dumps([str(v) for v in values.ravel().tolist()]).encode())
    else:
        h.update(values.dtype.str.encode() + b"\0" + np.ascontiguousarray(values).tobytes())


def canon_attr(v):
    """An attr value as plain JSON-able Python (numpy scalars as numbers, arrays and tuples as lists)."""
    if isinstance(v, np.ndarray):
        return [canon_attr(x) for x in v.tolist()]
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (list, tuple)):
        return [canon_attr(x) for x in v]
    return v


def clean_encoding(ds: xr.Dataset) -> xr.Dataset:
    """Drop on-disk encodings inherited from source files (chunk sizes, fill values...)."""
    for v in ds.variables.values():
        v.encoding = {}
    return ds


# Writing with HDF5's Fletcher-32 filter costs no more than without, reading costs about twice
# the plain read, and a SHA-256 over the same values costs as much again on top of the read
# (benchmarks/README.md, "Data files").
# Every numeric array variable is stored with Fletcher-32 (verified by HDF5 itself on every read,
# by any reader: xarray, h5py, netCDF-C).  The filter covers the chunks' bytes, not the file's
# metadata: a flipped bit in a B-tree node of a variable's chunk index makes HDF5 miss the chunk
# and return fill values (NaN) without any error.  So a SHA-256 over every variable's values,
# dims, dtype and attrs and the global attrs (``_integrity_digest``) is kept in the attr
# ``stabsim_integrity`` and checked by ``verify_data`` on every read.

INTEGRITY_ATTR = "stabsim_integrity"
INTEGRITY_METHOD = "fletcher32+sha256-2"
#: methods of data.nc files written by older stabsim; still verified by their own rule
#: (``weak_checksum`` tells them; ``run_study`` rewrites such a file with the current method)
OLD_INTEGRITY_METHODS = ("fletcher32+sha256-1",)


class DamagedData(StoreError):
    """data.nc cannot be read, or its checksums do not match its contents."""


def _fletcher_ok(var) -> bool:
    return var.ndim >= 1 and var.size > 0 and var.dtype.kind in "biuf"


#: a numeric variable is hashed in slabs of its first dim of about this many bytes, so a lazily
#: assembled (dask) data.nc is never held whole in memory for its checksum
_SLAB_BYTES = 64 * 2**20


def _feed_var(h, name: str, var) -> None:
    """``feed(h, name, var.values)`` (the same bytes hashed), reading a numeric
    variable slab by slab along its first dim."""
    if var.ndim == 0 or var.dtype.kind in "OUS":
        feed(h, name, var.values)
        return
    h.update(name.encode() + b"\0" + str(var.shape).encode() + b"\0" + var.dtype.str.encode() + b"\0")
    row = max(1, int(np.prod(var.shape[1:], dtype=np.int64)) * var.dtype.itemsize)
    step = max(1, _SLAB_BYTES // row)
    for i in range(0, var.shape[0], step):
        h.update(np.ascontiguousarray(var[i:i + step].values).reshape(-1).view(np.uint8))


def _integrity_digest(ds: xr.Dataset, filtered, *, method: str = INTEGRITY_METHOD) -> str:
    """SHA-256 over every variable (name, dims, shape, dtype, values, attrs, in name order) and
    the global attrs except ``INTEGRITY_ATTR``.  The older method ``fletcher32+sha256-1`` left
    the values of the ``filtered`` variables to Fletcher-32, which covers the chunks' bytes but
    not HDF5's index of them: a flipped bit in a B-tree node read back as all-NaN, unnoticed."""
    h = hashlib.sha256()
    filtered = set(filtered) if method in OLD_INTEGRITY_METHODS else set()
    for name in sorted(map(str, ds.variables)):
        var = ds.variables[name]
        if method not in OLD_INTEGRITY_METHODS:
            h.update(f"{name}\0dims{tuple(map(str, var.dims))}\0".encode())
        if name in filtered:  # values covered by Fletcher-32; shape and dtype here
            h.update(f"{name}\0{var.shape}\0{var.dtype.str}\0f32\0".encode())
        else:
            _feed_var(h, name, var)
        h.update(json.dumps(canon_attr(dict(var.attrs)), sort_keys=True, default=str).encode())
    attrs = {k: canon_attr(v) for k, v in ds.attrs.items() if k != INTEGRITY_ATTR}
    h.update(json.dumps(attrs, sort_keys=True, default=str).encode())
    return h.hexdigest()


def write_data(ds: xr.Dataset, path, check=None) -> None:
    """Atomically write ``data.nc`` with checksums: Fletcher-32 on every numeric array
    variable, a SHA-256 of the rest in attr ``stabsim_integrity``; the temporary file is
    verified (``verify_data``) and then ``check(tmp)`` runs, before the rename."""
    ds = clean_encoding(ds.copy())
    filtered = sorted(str(n) for n, v in ds.variables.items() if _fletcher_ok(v))
    ds.attrs.pop(INTEGRITY_ATTR, None)
    ds.attrs[INTEGRITY_ATTR] = json.dumps({"method": INTEGRITY_METHOD, "fletcher32": filtered,
                                           "sha256": _integrity_digest(ds, filtered)}, sort_keys=True)
    encoding = {n: {"fletcher32": True} for n in filtered}

    def full_check(tmp):
        verify_data(tmp, load=False)
        if check is not None:
            check(tmp)

    atomic_write_netcdf(ds, path, check=full_check, engine=ENGINE, encoding=encoding)


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


def verify_data(path, *, load: bool = True) -> xr.Dataset | None:
    """Check ``data.nc``'s checksums; return it loaded into memory (``load``) or None.

    Both read every value (HDF5 checks every Fletcher-32 checksum) and check the SHA-256 of the
    values, dims, dtypes and attrs; ``load=False`` returns nothing (used right after writing).  Raises ``DamagedData`` naming the file and the reason; a
    file written before checksums existed raises ``DamagedData`` too, with ``legacy=True``.
    """
    path = Path(path)
    try:
        if load:
            ds = xr.load_dataset(path, engine=ENGINE)
        else:
            ds = xr.open_dataset(path, engine=ENGINE)
    except Exception as e:  # truncated, not HDF5, Fletcher-32 mismatch ("data error detected") ...
        raise DamagedData(f"{path} is damaged or unreadable ({_first_line(e)})") from None
    try:
        raw = ds.attrs.get(INTEGRITY_ATTR)
        if raw is None:
            err = DamagedData(f"{path} carries no checksums (written by an older stabsim); its values "
                              "cannot be verified")
            err.legacy = True
            raise err
        try:
            rec = json.loads(raw)
            filtered = list(rec["fletcher32"])
            digest = rec["sha256"]
            method = rec["method"]
        except (ValueError, KeyError, TypeError):
            raise DamagedData(f"{path} is damaged (its checksum record {INTEGRITY_ATTR} is unreadable)") from None
        missing = [n for n in filtered if n not in ds.variables]
        if missing:
            raise DamagedData(f"{path} is damaged (variables {missing} listed in its checksums are missing)")
        unfiltered = [n for n in ds.variables if n not in filtered and _fletcher_ok(ds.variables[n])]
        if unfiltered:
            raise DamagedData(f"{path} is damaged (variables {unfiltered} carry no checksum)")
        if method != INTEGRITY_METHOD and method not in OLD_INTEGRITY_METHODS:
            raise DamagedData(f"{path} is damaged or of an unknown checksum method {method!r} (this stabsim "
                              f"writes {INTEGRITY_METHOD!r})")
        try:
            actual = _integrity_digest(ds, filtered, method=method)
        except Exception as e:
            raise DamagedData(f"{path} is damaged or unreadable ({_first_line(e)})") from None
        if actual != digest:
            what = ("attrs, strings and scalars" if method in OLD_INTEGRITY_METHODS else
                    "values, dims, dtypes and attrs")
            raise DamagedData(f"{path} is damaged: the SHA-256 of its {what} does not match the one "
                              "recorded when it was written")
        import h5py

        try:
            with h5py.File(path, "r") as f:
                off = [n for n in filtered if not f[n].fletcher32]
        except Exception as e:
            raise DamagedData(f"{path} is damaged or unreadable ({_first_line(e)})") from None
        if off:
            raise DamagedData(f"{path} is damaged (no Fletcher-32 filter on {off})")
    finally:
        if not load:
            ds.close()
    return ds if load else None


def weak_checksum(ds: xr.Dataset) -> bool:
    """Whether a verified data.nc was written with an older checksum method
    (``OLD_INTEGRITY_METHODS``: its array values were covered by Fletcher-32 only)."""
    try:
        return json.loads(ds.attrs.get(INTEGRITY_ATTR, "{}")).get("method") in OLD_INTEGRITY_METHODS
    except (ValueError, AttributeError):
        return False


