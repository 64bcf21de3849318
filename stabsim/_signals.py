"""Signals: SIGTERM handled like Ctrl-C, and long numba kernels that a signal can stop.

A batch scheduler ends a job with SIGTERM (then SIGKILL after a grace period); a person
with Ctrl-C (SIGINT).  Both must stop a run within a couple of seconds, keep what is
finished and say how to resume.

* ``sigterm_as_interrupt()`` (used by the CLI) makes SIGTERM raise ``Terminated``, a
  ``KeyboardInterrupt``, so every ``except KeyboardInterrupt`` path (the study runner's
  "interrupted ... to resume, ..." message) treats both alike; ``stabsim`` then exits with
  128 + 15 = 143 (130 for SIGINT).
* ``call_interruptible(fn, *args, stop=flag)``: a compiled kernel holds the main thread
  until it returns, and Python runs signal handlers only between bytecodes, so a kernel
  call of hours could not be interrupted.  Called from the main thread, the kernel runs in a
  helper thread (the kernels are compiled with ``nogil=True``) while the main thread waits
  and stays responsive; on a signal it sets ``flag[0] = 1``, which the kernel polls (every
  4096 steps on the fast kinds, every step on the general path) before it returns early.
  The unfinished call's output is discarded (the exception propagates) and nothing else
  changes, so results are bit-identical to an uninterrupted call.  From another thread
  (a dask worker), the kernel is called directly.
"""

from __future__ import annotations

import contextlib
import signal
import threading

import numpy as np

#: Seconds the main thread waits for an interrupted kernel to return before it re-raises anyway.
STOP_GRACE_S = 1.5


class Terminated(KeyboardInterrupt):
    """SIGTERM (or another terminating signal) received; ``signum`` says which."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(f"terminated by signal {signum}")
        self.signum = int(signum)


def exit_status(exc: BaseException) -> int:
    """The exit status for an interrupt: 128 + signal number (130 for Ctrl-C, 143 for SIGTERM)."""
    return 128 + (exc.signum if isinstance(exc, Terminated) else int(signal.SIGINT))


def _raise_terminated(signum, frame):
    raise Terminated(signum)


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Within the block, SIGTERM raises ``Terminated`` (only in the main thread; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def new_stop_flag() -> np.ndarray:
    return np.zeros(1, dtype=np.int64)


def call_interruptible(fn, *args, stop: np.ndarray):
    """``fn(*args)``; from the main thread, in a helper thread that a signal can stop (see the
    module docstring): ``fn`` must poll ``stop[0]`` and return early once it is set."""
    if threading.current_thread() is not threading.main_thread():
        return fn(*args)
    import numba

    nthreads = numba.get_num_threads()   # thread-local in numba: carry the caller's setting over
    box = {}

    def target():
        try:
            numba.set_num_threads(nthreads)
            box["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001  (handed to the caller)
            box["error"] = e

    th = threading.Thread(target=target, name="stabsim-kernel", daemon=True)
    th.start()
    try:
        while th.is_alive():
            th.join(0.25)
    except BaseException:
        stop[0] = 1
        th.join(STOP_GRACE_S)
        raise
    if "error" in box:
        raise box["error"]
    return box.get("value")
