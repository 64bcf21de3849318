"""Compile named kernels into numba's on-disk cache: the worker task of the warm-up
(``stabsim.compile.warmup``) and the helper process that compiles beside a cold call
(``stabsim.compile.beside``).

``python -m stabsim.compile.helper`` reads a pickled pair of (module, name, signatures) lists
from its standard input, compiles the first, prints "compiled" after it when there is a second,
then compiles the second; its exit status is 1 if any signature failed (or none compiled).
Nothing is computed, so no number depends on it.
"""

from __future__ import annotations

import os
import pickle
import sys

from stabsim.compile.signatures import resolve


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def compile_entries(entries) -> tuple[int, int]:
    """Compile (module, name, signatures) entries in this process; (compiled, failed) counts."""
    ok = bad = 0
    for module, path, sigs in entries:
        try:
            disp = resolve(module, path)
        except Exception:
            bad += len(sigs)
            continue
        for sig in sigs:
            try:
                disp.compile(sig)
                ok += 1
            except Exception:
                bad += 1
    return ok, bad


def main() -> int:
    """The helper process: compile the pair of entry lists read from stdin (see the module's text)."""
    now, later = pickle.load(sys.stdin.buffer)
    ok, bad = compile_entries(now)
    if later:   # the caller waits for this line only (compile_beside.finish)
        print("compiled", flush=True)
        ok2, bad2 = compile_entries(later)
        ok, bad = ok + ok2, bad + bad2
    return 1 if bad or not ok else 0


if __name__ == "__main__":
    sys.exit(main())
