"""Signals: SIGTERM handled like Ctrl-C, and long numba kernels that a signal can stop.

A batch scheduler ends a job with SIGTERM (then SIGKILL after a grace period); a person
with Ctrl-C (SIGINT).  Both must stop a run within a couple of seconds, keep what is
finished and say how to resume.

* ``sigterm_as_interrupt()`` (used by the CLI) makes SIGTERM raise ``Terminated``, a
  ``KeyboardInterrupt``, so every ``except KeyboardInterrupt`` path (the study runner's
  "interrupted ... to resume, ..." message) treats both alike; ``stabsim`` then exits with
  128 + 15 = 143 (130 for SIGINT).
* A signal is remembered, not only raised: Python drops an exception raised inside a
  finalizer (``__del__``, ``weakref.finalize``; it prints "Exception ignored in ...") and goes
  on.  numba-cuda frees device memory in finalizers, and on a GPU a SIGTERM landed there and
  the run went on for minutes.  ``raise_if_interrupted()`` raises the remembered signal again;
  the study runner calls it after every chunk, the CLI between studies, and
  ``call_interruptible`` while it waits for a kernel.
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


#: signals received inside ``sigterm_as_interrupt`` (the raise of one can be lost: module docstring)
_received: list[int] = []


def _interrupt(signum: int) -> KeyboardInterrupt:
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def _on_signal(signum, frame):
    _received.append(int(signum))
    raise _interrupt(signum)


def raise_if_interrupted() -> None:
    """Raise the interrupt of a signal received in ``sigterm_as_interrupt`` whose exception was
    lost (raised inside a finalizer); nothing when no signal came."""
    if _received:
        raise _interrupt(_received[-1])


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Within the block, SIGTERM raises ``Terminated`` and Ctrl-C ``KeyboardInterrupt`` (as
    Python's own handler does), and both are remembered for ``raise_if_interrupted`` (only in
    the main thread; elsewhere a no-op).  A SIGINT handler other than Python's is left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received.clear()
    old_term = signal.signal(signal.SIGTERM, _on_signal)
    own_int = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if own_int:
        signal.signal(signal.SIGINT, _on_signal)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old_term)
        if own_int:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        _received.clear()


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
            raise_if_interrupted()
    except BaseException:
        stop[0] = 1
        th.join(STOP_GRACE_S)
        raise
    if "error" in box:
        raise box["error"]
    return box.get("value")
