"""Files written whole or not at all: each goes to a hidden temporary ``.<name>.<pid>.<random>.tmp``
in the same directory, is flushed to disk (and checked, for netCDF), and is moved to its final name
with ``os.replace`` (``atomic_write_text``, ``atomic_write_netcdf``; ``is_temp`` tells a leftover
temporary file).  A full disk or a file-size limit is one ``OSError`` naming the path and what to
do (``write_error``)."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import uuid
from pathlib import Path

import xarray as xr

TMP_SUFFIX = ".tmp"


def _tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}{TMP_SUFFIX}")


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        _fsync_file(path)


def is_temp(path: Path) -> bool:
    return path.name.startswith(".") and path.name.endswith(TMP_SUFFIX)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all; a full disk (or a file-size limit) is an
    OSError naming ``path``."""
    path = Path(path)
    tmp = _tmp_name(path)
    try:
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise write_error(path, e, kept="nothing was replaced") from None
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    _fsync_dir(path.parent)


def atomic_write_netcdf(ds: xr.Dataset, path: Path, check=None, engine: str = "h5netcdf", encoding=None) -> None:
    """Write ``ds`` to ``path`` through a temporary file and ``os.replace``.

    ``check(tmp_path)``, when given, runs on the flushed temporary file before the rename
    and must raise if the file is not what it should be (it then never gets the final name).
    """
    path = Path(path)
    tmp = _tmp_name(path)
    try:
        try:
            _write_netcdf(ds, tmp, engine, encoding)
        except OSError as e:
            raise write_error(path, e) from None
        _fsync_file(tmp)
        if check is not None:
            check(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    _fsync_dir(path.parent)


#: Up to this size an HDF5 file is rendered in memory and then written with plain file I/O: a
#: full disk or a file-size limit (``ulimit -f``) is then one clean OSError, whereas HDF5
#: writing to the file itself fails in its close and destructors (a traceback for every
#: object, then a segmentation fault at exit).  Larger files are written directly after
#: checking their estimated size against the free disk and the file-size limit.
IN_MEMORY_WRITE_BYTES = 512 * 2**20


def _write_netcdf(ds: xr.Dataset, tmp: Path, engine: str, encoding) -> None:
    est = int(ds.nbytes) + 2**20
    if engine != "h5netcdf":
        ds.to_netcdf(tmp, engine=engine, encoding=encoding)
        return
    if est <= IN_MEMORY_WRITE_BYTES:
        import dask

        # With a dask.distributed client active, xarray would lock the in-memory target with a
        # distributed lock named after it, which the scheduler does not know: everything here is
        # in memory already, so write with the synchronous scheduler (a local lock).
        with dask.config.set(scheduler="synchronous"):
            data = ds.to_netcdf(engine=engine, encoding=encoding)
        with open(tmp, "wb") as f:
            f.write(data)
        return
    import resource

    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if soft != resource.RLIM_INFINITY and est > soft:
        raise OSError(errno.EFBIG, f"about {est} bytes exceed the file-size limit (ulimit -f) of {soft} bytes")
    free = shutil.disk_usage(tmp.parent).free
    if est > free:
        raise OSError(errno.ENOSPC, f"about {est} bytes needed, {free} bytes free on the disk")
    ds.to_netcdf(tmp, engine=engine, encoding=encoding)


def write_error(path: Path, e: OSError, kept: str = "nothing was replaced and finished chunks are kept") -> OSError:
    """``e`` as one OSError naming ``path``, the cause and what to do (``kept``: what is safe)."""
    why = {errno.ENOSPC: "the disk is full", errno.EFBIG: "a file-size limit (ulimit -f) was reached",
           errno.EDQUOT: "the disk quota is exceeded"}.get(e.errno, e.strerror or str(e))
    detail = f" ({e.strerror})" if e.strerror and e.strerror != why and e.errno in (errno.EFBIG, errno.ENOSPC) else ""
    err = OSError(f"cannot write {path}: {why}{detail}; {kept}: "
                  "free space (or raise the limit) and run the same command again")
    err.errno = e.errno
    return err
