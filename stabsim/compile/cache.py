"""Where numba keeps its on-disk cache of compiled kernels.

numba's cache (``@njit(cache=True)``) checks only the time stamp and size of the file that
*defines* a function.  A kernel that inlines a helper from another module (``rng.py``,
``losses.py``, ``constraints.py``, a constant imported from elsewhere) would be served
stale after an edit of that module.  ``configure_numba_cache()`` therefore points numba at
a cache folder keyed by the package's source hash (``stabsim.runtime.codeid.source_sha256``): any
edit of any module of the package gives a fresh folder, so nothing compiled from other
source is ever loaded.

It runs in ``stabsim/__init__.py`` before any kernel is imported.  A ``NUMBA_CACHE_DIR``
set by the user is respected (the user then owns staleness).  The folder is
``$XDG_CACHE_HOME/stabsim/numba/<hash16>`` (default ``~/.cache/...``); when that cannot be
written, ``<tmp>/stabsim-numba-<uid>/<hash16>``; when neither can, kernels compile without an
on-disk cache (``configure_numba_cache`` returns None), with one warning line.  A user's
``NUMBA_CACHE_DIR`` that cannot be written falls back the same way, also with one warning.

Symbols.  numba names the machine code of a function by its qualified name, its argument types
and a counter that every process starts at 1.  A cache entry written by one process and
another written by a second process can therefore carry the same symbol for *different*
functions (closures of one factory share a qualified name); a process that loads both links
one definition for both, silently.  This happened: the warm-up's workers compiled two kinds of
the twin kernel under the same count, and the suite then ran P4 Alg. 2 with another kind's
code.  The kernel factories now name each closure (``stabsim.kernels.twin._own_name``), and
``spread_function_ids()`` starts this process's counter at a random 40-bit offset, so that
counts no longer coincide across processes (tests/test_cache_symbols.py).

Saves.  numba adds a compiled signature to a function's cache file in steps: it reads the
function's index, picks the first data-file name the index does not use, writes the index with
the new entry, then the data file.  Two processes that add *different* signatures of one function
at the same moment (the warm-up's workers, whose kernels share helpers such as ``stream_key``;
two runs sharing a cache) can pick the same name, and the index written last may then pair one
signature with the machine code written last, the other's: a later process would load it for
the wrong argument types.  ``serialize_cache_saves()`` replaces numba's save with one that holds
an exclusive lock (``fcntl.flock`` on a file in the cache folder) from reading the index to
writing it, and writes a new entry's data file before the index entry that names it, so that a
reader never finds an entry whose data is not yet written (tests/test_cache_saves.py).  Loads
take no lock.  Without ``fcntl`` (Windows) numba's own save is kept.

The variable ``STABSIM_NUMBA_CACHE_AUTO`` marks a ``NUMBA_CACHE_DIR`` that stabsim chose,
so that a child process (a dask worker, a test subprocess) running *other* stabsim source
computes its own folder instead of inheriting its parent's.
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from pathlib import Path

AUTO_MARK = "STABSIM_NUMBA_CACHE_AUTO"


def _writable(d: Path) -> bool:
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / f".probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        probe.write_bytes(b"")
        probe.unlink()
        return True
    except OSError:
        return False


def cache_candidates(source_hash: str) -> list[Path]:
    """Per-hash cache folders, preferred first."""
    key = source_hash[:16]
    out = []
    xdg = os.environ.get("XDG_CACHE_HOME")
    try:
        base = Path(xdg) if xdg else Path.home() / ".cache"
    except (RuntimeError, KeyError):  # no home directory
        base = None
    if base is not None:
        out.append(base / "stabsim" / "numba" / key)
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    out.append(Path(tempfile.gettempdir()) / f"stabsim-numba-{uid}" / key)
    return out


def configure_numba_cache(package_dir=None) -> str | None:
    """Point numba's cache at a folder keyed by the source hash of ``package_dir`` (default:
    the stabsim package).  Returns the folder in use, the user's ``NUMBA_CACHE_DIR``, or None
    (nothing writable: caching is turned off, ``disable_numba_cache``).  An unwritable folder (the
    user's ``NUMBA_CACHE_DIR``, a read-only install with an unwritable HOME) falls back to the next
    writable one, or to no cache, with one warning line on stderr."""
    from stabsim.runtime.codeid import source_sha256

    env = os.environ
    user = env.get("NUMBA_CACHE_DIR")
    bad_user = None
    if user and user != env.get(AUTO_MARK):
        if _writable(Path(user)):
            return user
        # numba would fail at import ("cannot cache function ...: no locator available") when
        # the package folder and HOME cannot be written either: fall back, with one warning
        bad_user = user
        env.pop("NUMBA_CACHE_DIR", None)
        _reload()
    try:
        h = source_sha256(package_dir)
    except OSError:
        return None
    cands = cache_candidates(h)
    chosen = next((d for d in cands if _writable(d)), None)
    if chosen is None:
        if user:  # the inherited folder of another source (or an unwritable one): do not use it
            env.pop("NUMBA_CACHE_DIR", None)
            env.pop(AUTO_MARK, None)
            _reload()
        # a read-only install with an unwritable HOME and temp folder: compile in every process
        # rather than fail at import (numba's own default folders are not keyed by the source)
        disable_numba_cache()
        _warn(f"{'NUMBA_CACHE_DIR=' + bad_user + ' and ' if bad_user else ''}no cache folder "
              f"({', '.join(map(str, cands))}) can be written; numba kernels are compiled in every process "
              "without an on-disk cache (set NUMBA_CACHE_DIR to a writable folder to keep them)")
        return None
    env["NUMBA_CACHE_DIR"] = env[AUTO_MARK] = str(chosen)
    _reload()
    if bad_user:
        _warn(f"NUMBA_CACHE_DIR={bad_user} cannot be written; numba's cache is kept in {chosen} instead")
    return str(chosen)


_warned = False


def _warn(msg: str) -> None:
    """One line on stderr, once per process."""
    global _warned
    if not _warned:
        _warned = True
        print(f"stabsim: warning: {msg}", file=sys.stderr)


def disable_numba_cache() -> None:
    """Make ``@njit(cache=True)`` compile without an on-disk cache (no locator is looked up, so
    an unwritable folder cannot fail the decoration at import)."""
    from numba.core.dispatcher import Dispatcher

    Dispatcher.enable_caching = lambda self: None


def spread_function_ids() -> bool:
    """Start numba's per-process function counter (part of every compiled symbol's name) at a
    random offset below 2^40 (module docstring, "Symbols").  numba numbers functions in
    ``numba.core.bytecode.FunctionIdentity._unique_ids``, a private counter; where a numba
    version has none, nothing is changed and False is returned (the kernels' own names still
    keep stabsim's closures apart)."""
    import itertools
    import secrets

    try:
        from numba.core.bytecode import FunctionIdentity
    except ImportError:
        return False
    if not hasattr(FunctionIdentity, "_unique_ids"):
        return False
    FunctionIdentity._unique_ids = itertools.count(1 + secrets.randbits(40))
    return True


#: the lock file of ``serialize_cache_saves``, one per cache folder
SAVE_LOCK = ".stabsim-save.lock"


def _serialized_save(self, key, data):
    """numba's ``IndexDataCacheFile.save`` under an exclusive lock, a new entry's data written
    before its index entry (module docstring, "Saves")."""
    import fcntl
    import itertools

    try:
        lock = open(os.path.join(self._cache_path, SAVE_LOCK), "a")
    except OSError:   # an unwritable folder: numba's own save fails or warns as it would
        return _serialized_save.numba_save(self, key, data)
    with lock:   # closing the file releases the lock, also on an error
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
        except OSError:   # a file system without locks (some network mounts): unlocked, as numba saves
            pass
        overloads = self._load_index()
        name = overloads.get(key)
        if name is not None:   # the same signature again: its data file is replaced whole
            self._save_data(name, data)
            return
        used = set(overloads.values())
        name = next(n for n in map(self._data_name, itertools.count(1)) if n not in used)
        self._save_data(name, data)
        overloads[key] = name
        self._save_index(overloads)


def serialize_cache_saves() -> bool:
    """Make numba's on-disk cache saves one at a time across processes (module docstring,
    "Saves").  False where it cannot (no ``fcntl``, or a numba without the cache file class)."""
    try:
        import fcntl  # noqa: F401

        from numba.core.caching import IndexDataCacheFile
    except ImportError:
        return False
    if IndexDataCacheFile.save is not _serialized_save:
        _serialized_save.numba_save = IndexDataCacheFile.save
        IndexDataCacheFile.save = _serialized_save
    return True


def _reload() -> None:
    """numba reads NUMBA_CACHE_DIR when imported; if it already is, make it re-read."""
    if "numba" in sys.modules:
        from numba.core import config

        config.reload_config()
