"""Compile the recorded kernels on every core at once, before a run starts.

numba compiles a kernel the first time it is called, one after the other, on one core.
``warm()`` compiles the kernels listed in ``stabsim/data/kernel_signatures.pkl``
(``stabsim.compile.signatures``: every kernel and signature the quick suite compiles) in a pool of
worker processes, one per core; each writes its results to numba's on-disk cache
(``stabsim.compile.cache``), from which the run then loads them.  Nothing is computed, so no number
depends on it.

``stabsim run`` calls it once per source version: a marker file in the cache folder records that
the warm-up ran, so a warm cache costs nothing.  It is skipped on one core (nothing to gain), when
``STABSIM_NO_WARMUP=1``, and when numba has no on-disk cache.  A kernel that fails to compile in a
worker (a signature recorded by another numba version, say) is simply left for the run to compile.
Given ``entries`` (a part of the list: a few studies' kernels, ``stabsim.study.warm``) and
``mark=False``, it compiles those the same way and writes no marker.

``python -m stabsim.compile.warmup`` runs the warm-up and prints what was done.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from stabsim.compile.helper import compile_entries, usable_cores
from stabsim.compile.signatures import load_signatures

# numba files a cache entry under the source file's folder path too, so two checkouts of the same
# source (same cache folder) do not share entries: one marker per checkout
MARKER = "warmup-done-" + hashlib.sha1(str(Path(__file__).resolve().parent).encode()).hexdigest()[:16]
#: compiled first, each in its own task: the twin kernel's four replicates take most of the time
_HEAVY = re.compile(r"_CPU_REPLICATES\[\d\]$")


def tasks(entries) -> list:
    """The worker tasks for ``entries``: the twin replicates one per task (largest first), the
    other kernels one task per module."""
    heavy = [[e] for e in entries if _HEAVY.search(e[1])]
    by_module: dict[str, list] = {}
    for e in entries:
        if not _HEAVY.search(e[1]):
            by_module.setdefault(e[0], []).append(e)
    return heavy + sorted(by_module.values(), key=len, reverse=True)


def _cache_dir() -> Path | None:
    from numba.core.config import CACHE_DIR

    return Path(CACHE_DIR) if CACHE_DIR else None


def warm(processes: int | None = None, log=None, entries=None, cache=None, mark: bool = True) -> dict | None:
    """Compile the recorded kernels (``entries``, default ``load_signatures()``) on ``processes``
    workers (default: the usable cores), unless this source version already did (the marker in
    ``cache``, default numba's cache folder), or there is one core.  Returns what was done, or None.
    ``mark=False`` (a part of the list, ``stabsim.study.warm``): no marker is written."""
    cache = _cache_dir() if cache is None else Path(cache)
    if os.environ.get("STABSIM_NO_WARMUP") == "1" or cache is None or (cache / MARKER).exists():
        return None
    n = processes or usable_cores()
    entries = load_signatures() if entries is None else entries
    if (n or 1) < 2 or not entries:
        return None
    t0 = time.perf_counter()
    if log:
        what = "the kernels" if mark else "the study's kernels"
        log(f"compiling {what} on {n} cores first (once per stabsim version; STABSIM_NO_WARMUP=1 skips it)")
    # spawned, not forked: a fork of a process whose numba threads are running can hang
    try:
        with ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn")) as pool:
            counts = list(pool.map(compile_entries, tasks(entries)))
    except Exception as e:   # no worker processes here (no semaphores, a sandbox): the run compiles as usual
        if log:
            log(f"warm-up skipped: {type(e).__name__}: {e}")
        return None
    done = {"compiled": sum(c[0] for c in counts), "failed": sum(c[1] for c in counts),
            "seconds": time.perf_counter() - t0, "processes": n}
    if mark:
        try:
            cache.mkdir(parents=True, exist_ok=True)
            (cache / MARKER).write_text(repr(done) + "\n")
        except OSError:
            pass
    return done


def _main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="compile stabsim's recorded kernels on every core (the warm-up)")
    ap.parse_args(argv)
    print(warm(log=print))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
