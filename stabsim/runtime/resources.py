"""Memory and disk needs, estimated before anything is allocated or computed.

A request beyond what the machine has (``run_twin(replicates=2 * 10**7)``, a study with
d = 10^6 and metric learning, ...) must fail at once with the size and how to shrink it,
not after minutes of preparation with a numpy ``MemoryError`` or an uncaught traceback.

``available_memory()``: the smallest of the memory available now (``psutil`` when
installed, else ``os.sysconf``), the cgroup limit (containers, batch jobs) and the
address-space limit (``ulimit -v``).  ``check_memory`` / ``check_disk`` raise
``ResourceError`` (a ``ValueError`` and a ``MemoryError``) naming the need, the limit and
how to shrink the request.  ``STABSIM_MEMORY_LIMIT`` (bytes, or with a k/M/G/T suffix)
overrides the memory limit (for tests, or to leave room for other jobs).  A study's needs
(one chunk, all its results): ``stabsim.study.needs``.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import re
import shutil
from pathlib import Path


class ResourceError(ValueError, MemoryError):
    """An estimated memory or disk need beyond what the machine has."""


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover


def _parse_size(text: str) -> int | None:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)i?[bB]?\s*", text)
    if not m:
        return None
    mult = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def _cgroup_available() -> int | None:
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit == "max":
            return None
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        return max(0, int(limit) - used)
    except (OSError, ValueError):
        return None


def available_memory() -> int | None:
    """Bytes this process can still allocate (None if unknown)."""
    env = os.environ.get("STABSIM_MEMORY_LIMIT")
    if env:
        v = _parse_size(env)
        if v is not None:
            return v
    cands = []
    try:
        import psutil

        cands.append(int(psutil.virtual_memory().available))
    except Exception:  # noqa: BLE001  (not installed, or no /proc)
        try:
            cands.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            pass
    cg = _cgroup_available()
    if cg is not None:
        cands.append(cg)
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            cands.append(int(soft))
    except (ImportError, ValueError, OSError):
        pass
    return min(cands) if cands else None


#: requests below this many bytes are not checked: asking the system (psutil) costs more than a
#: small ``run_twin`` call itself (benchmarks/README.md, "run_twin's overhead per call"), and
#: numpy's own MemoryError covers a host that has not even this much left
CHECK_MEMORY_FROM = 64 * 2**20


def check_memory(need: float, what: str, shrink: str) -> None:
    """Raise ``ResourceError`` when ``need`` bytes exceed the available memory (requests of
    ``CHECK_MEMORY_FROM`` bytes or more; smaller ones are not checked)."""
    if need < CHECK_MEMORY_FROM:
        return
    avail = available_memory()
    if avail is not None and need > avail:
        raise ResourceError(f"{what} needs about {fmt_bytes(need)} of memory, but only {fmt_bytes(avail)} "
                            f"is available; {shrink}")


def free_disk(path) -> int | None:
    """Free bytes on the file system of ``path`` (its nearest existing parent)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return int(shutil.disk_usage(p).free)
    except OSError:
        return None


def check_disk(need: float, path, what: str, shrink: str) -> None:
    free = free_disk(path)
    if free is not None and need > free:
        raise ResourceError(f"{what} needs about {fmt_bytes(need)} of disk in {path}, but only "
                            f"{fmt_bytes(free)} is free; {shrink}")


def twin_bytes(*, R: int, n: int, d: int, p: int, md: int, C: int, T: int, nS: int = 1,
               record_outputs: bool = False, step_arrays: int = 0, all_prev: bool = False,
               full_batch: bool = False, stats: bool = False, threads: int | None = None) -> dict:
    """Estimated peak bytes of one ``run_twin`` call: ``{"results", "inputs", "state", "total"}``.

    results: rec (R x C x 5 doubles, counted twice: the kernel's array and the Dataset built
    from it) and the recorded outputs (R x C x 2 x p); inputs: the data (copied, then
    extended by the replacement rows), the initial points (R x p), ``step_arrays`` T-long
    step-size arrays; state: what each kernel thread allocates per replicate (iterates,
    gradients, sums, the ALL_PREV index history of T + 1 entries, the d x d work matrices
    of metric learning and the class statistics).
    """
    if threads is None:
        try:
            import numba

            threads = numba.get_num_threads()
        except Exception:  # noqa: BLE001
            threads = os.cpu_count() or 1
    f8 = 8.0
    results = f8 * R * C * 5 * 2 + (f8 * R * C * 2 * p if record_outputs else 0.0)
    rows = n + (R if nS == 1 else 1)
    inputs = f8 * (nS * n * (d + 1) + nS * rows * (d + 1) + R * p + R * d + 4 * R) + f8 * step_arrays * (T + 1)
    per_rep = f8 * (10 * p + max(d, p) + 2 * md * md + 2 * md + (T + 1 if all_prev else 8)
                    + (4 * n + 160 if full_batch else 0) + (4 * (1 + d + d * d) if stats else 0))
    state = per_rep * min(R, max(1, int(threads)))
    return {"results": results, "inputs": inputs, "state": state, "total": results + inputs + state}


def release_freed_memory() -> bool:
    """Hand the memory that freed objects left in the C allocator's heap back to the system
    (glibc's ``malloc_trim(0)``); True if it ran, False where there is no glibc (macOS, musl).

    glibc keeps freed blocks below its mmap threshold (which grows up to 32 MiB with the sizes a
    process frees) for reuse, so without this a long ``stabsim run suite`` holds more memory between
    studies than it uses (benchmarks/README.md, "Memory").  Called between studies; nothing
    computed depends on it."""
    trim = _libc_function("malloc_trim", (ctypes.c_size_t,))
    if trim is None:
        return False
    trim(0)
    return True


def freeze_long_lived() -> None:
    """Move the objects alive now -- imported modules, numba's dispatchers and type tables,
    matplotlib's state -- out of the cyclic garbage collector's sight (a full collection, then
    ``gc.freeze()``), so that its later full collections walk only what the run creates.

    Most objects a suite's analysis worker tracks come from its imports; every full collection
    walks them again; frozen after the imports, the worker spends less CPU collecting at the same
    peak memory (benchmarks/README.md, "Memory").  Objects frozen here are never collected, so it
    is called once a process has imported what it keeps for its life, not between studies.
    Nothing computed depends on it."""
    gc.collect()   # garbage first: frozen, it would never be freed
    gc.freeze()


def limit_malloc_arenas(n: int = 1) -> bool:
    """Let this process's threads share ``n`` heaps of the C allocator (glibc's ``mallopt(M_ARENA_MAX,
    n)``), and the processes it starts too (``MALLOC_ARENA_MAX``; a value the user set is kept and
    used here too); True if it ran, False where there is no glibc.

    glibc gives threads heaps of their own (up to 8 per core); what numba's worker threads free
    there is not handed back by ``malloc_trim`` as well as the main heap's, so with a heap per
    thread a full suite's main process keeps more memory after the threaded studies (P1 Table 1).
    The kernels allocate per replicate, not per step, so sharing one heap costs no measurable
    time (benchmarks/README.md, "Memory").  Nothing computed depends on it.  Called by
    ``stabsim run`` before it starts worker threads."""
    value = os.environ.setdefault("MALLOC_ARENA_MAX", str(int(n)))
    mallopt = _libc_function("mallopt", (ctypes.c_int, ctypes.c_int))
    if mallopt is None or not value.isdigit():
        return False
    return bool(mallopt(_M_ARENA_MAX, int(value)))


_M_ARENA_MAX = -8   # glibc's malloc.h


@functools.cache
def _libc_function(name: str, argtypes: tuple):
    """glibc's function ``name`` (returning an int), looked up once (``find_library`` runs
    ``ldconfig``), or None where there is none."""
    import ctypes.util

    try:
        fn = getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name)
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = list(argtypes), ctypes.c_int
    return fn
