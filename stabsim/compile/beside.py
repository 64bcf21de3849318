"""Compile one kernel in a helper process while this process compiles another.

A fresh install's first ``run_twin`` compiles two large units one after the other on one core:
the kind's replicate and the twin kernel around it.  They are separate compilations (the kernel
calls the replicate through its address, ``kernels.native_call``), so the second can be compiled
at the same time by another process: ``start(entries)`` starts ``python -m
stabsim.compile.helper``, which compiles the given (module, name, signatures) into numba's
on-disk cache, and ``finish(helper)`` waits for it once this process has compiled its own part;
the call that follows then loads the kernel from the cache instead of compiling it.  A caller may
also hand over callees that its own compilation types late (``twin._late_callees``: the fast
replicates' stream keys and first draws, then ``_record`` and the loss value): those the helper
has saved by then are loaded instead of compiled.  Nothing is computed in the helper, so no
number depends on it.

Nothing is started when there is nothing to gain: every signature already compiled in this
process or present in the on-disk cache, numba without an on-disk cache, a single usable core,
or ``STABSIM_NO_WARMUP=1`` (the variable that turns off the suite's warm-up too).  A helper that
fails, or does not finish within ``WAIT_SECONDS``, costs nothing but its time: this process then
compiles the kernel itself, as without a helper.  A subprocess (not ``multiprocessing``) runs
the helper, so that the user's own script is never imported again in a child.

A helper may also be given work for *later* (``start(entries, later)``): it compiles ``entries``,
says so on its standard output, and then compiles ``later`` while the caller goes on;
``finish`` waits for the first part only.  The twin kernel's cold start uses this for the
general build of a fast kind's replicate, after compiling a specialised one in this process
(``twin.replicate_address``).  A helper still compiling its later work is left to finish when
this process exits (one compilation, into numba's on-disk cache, where the next process finds
it); ``pending`` finds it, so that a call needing that very build waits for it instead of
compiling something else.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path

from stabsim.compile.helper import usable_cores
from stabsim.compile.signatures import resolve

#: the folder holding the stabsim package this module belongs to
_ROOT = str(Path(__file__).resolve().parents[2])
#: how long ``finish`` waits for a helper before compiling in this process instead
WAIT_SECONDS = 120.0


def in_cache(dispatcher, sig: tuple) -> bool:
    """Whether ``dispatcher`` has ``sig`` compiled in this process or in numba's on-disk cache
    (numba's index of the function's cache file, read without loading the machine code)."""
    if tuple(sig) in dispatcher.overloads:
        return True
    cache = dispatcher._cache
    key = cache._index_key(tuple(sig), dispatcher.targetctx.codegen())
    return key in cache._cache_file._load_index()


def cached(dispatcher, sig: tuple) -> bool:
    """``in_cache``, or True where it cannot tell (no on-disk cache, numba's internals moved):
    then nothing is started."""
    try:
        return in_cache(dispatcher, sig)
    except Exception:
        return True


def uncached(entries) -> list:
    """``entries`` ((module, dispatcher name, [signature, ...]) as in the warm-up's recorded list)
    without the signatures already ``cached``, and without names that do not resolve."""
    todo = []
    for module, name, sigs in entries:
        try:
            disp = resolve(module, name)
        except Exception:
            continue
        left = [s for s in sigs if not cached(disp, s)]
        if left:
            todo.append((module, name, left))
    return todo


def start(entries, later=()) -> subprocess.Popen | None:
    """Start compiling the ``uncached`` part of ``entries`` in a helper process, then (not waited
    for by ``finish``) that of ``later``; None if nothing needs it or it could not start."""
    if os.environ.get("STABSIM_NO_WARMUP") == "1" or usable_cores() < 2:
        return None
    todo, todo_later = uncached(entries), uncached(later)
    if not todo and not todo_later:
        return None
    try:
        # run from the folder holding this stabsim, so that the helper imports this very source
        # (``-m`` puts the working folder first on the path) and fills this source's cache
        proc = subprocess.Popen([sys.executable, "-m", "stabsim.compile.helper"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE if todo_later else subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, cwd=_ROOT)
        proc.stdin.write(pickle.dumps((todo, todo_later)))
        proc.stdin.close()
    except Exception:
        return None
    if todo_later:
        _LATER.append((proc, todo_later))
    return proc


#: helpers started with later work, and that work: [(process, [(module, name, [sig, ...]), ...])]
_LATER: list = []


def pending(module: str, name: str, sig: tuple) -> subprocess.Popen | None:
    """A helper of this process still running that compiles ``module.name`` for ``sig`` later."""
    for proc, todo in _LATER:
        if proc.poll() is None and any(m == module and n == name and tuple(sig) in map(tuple, sigs)
                                       for m, n, sigs in todo):
            return proc
    return None


def _first_part(helper: subprocess.Popen, timeout: float) -> bool:
    """Wait until ``helper`` has compiled its first part (it writes a line then) or ended; whether
    it got there within ``timeout`` seconds."""
    said = []
    reader = threading.Thread(target=lambda: said.append(helper.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return bool(said and said[0]) or (helper.poll() == 0)


def finish(helper: subprocess.Popen | None, timeout: float = WAIT_SECONDS) -> bool:
    """Wait for ``helper`` (up to ``timeout`` seconds; then it is stopped); whether it succeeded.
    A helper with later work is waited for until it has compiled its first part only."""
    if helper is None:
        return False
    if helper.stdout is not None:
        if _first_part(helper, timeout):
            return True
        stop(helper)
        return False
    try:
        return helper.wait(timeout) == 0
    except subprocess.TimeoutExpired:
        stop(helper)
        return False


def wait_for(helper: subprocess.Popen, timeout: float = WAIT_SECONDS) -> bool:
    """Wait for ``helper`` to end, later work included (``pending``); whether it succeeded in
    ``timeout`` seconds (a helper still running then is left to go on)."""
    try:
        return helper.wait(timeout) == 0
    except subprocess.TimeoutExpired:
        return False


def stop(helper: subprocess.Popen | None) -> None:
    """Stop ``helper`` (an interrupted call: its work is not waited for)."""
    if helper is not None and helper.poll() is None:
        helper.kill()
        helper.wait()
