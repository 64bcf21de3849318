"""A second lane of studies: a worker process that computes studies from the back of a run's list
while the calling process computes them from the front.

A full-profile suite left about 90 core-seconds of its two cores idle while studies computed
(benchmarks/README.md, "A second lane of studies"): a study's serial stretches (P1 Table 1's timed
runs, one at a time; P4's figures' per-replicate metrics; P3's figures' short kernels; the Python
between chunks) leave one core free, and the analyses' worker does not always have work for it.
``StudyLane`` runs one worker process that takes the *last* study not yet started, computes it
with ``run_study`` into the same output folder, and takes the next one from the back when done;
``stabsim run`` keeps taking studies from the front.  The worker runs at the idle scheduling class
(``SCHED_IDLE``; else at the lowest priority, nice 19) with numba on one thread: it computes only
on a core that nothing else wants, so the studies of the calling process (and the analyses) run
as before, and a core that would idle computes a later study instead.  Once the calling process
has no study left to start (``StudyLane.finished(wait=True)``), the worker's next chunks use every
core: the run then waits for the worker's last study, which by then has the machine to itself.

Nothing changes in the results: a study is a pure function of its file, computed by the same
``run_study`` (numbers do not depend on the thread count), written into its own folder under its
own lock.  Only the order in which studies finish, and so the order of the printed summaries,
differs.  ``STABSIM_ONE_LANE=1`` switches the lane off; it is off for one study, for a dask
scheduler and for the GPU backend.  On an interrupt the worker is stopped at once: its finished
chunks are on disk, and running the same command again resumes its study like any other.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from functools import partial

from stabsim.study.execution import Executor

#: Set to "1" to compute every study in the calling process (no second lane).
ONE_LANE_ENV = "STABSIM_ONE_LANE"

_FINISH = None   # (in the worker) the event set once the calling process has no study left to start


def _lowest_priority() -> str:
    """This process at the idle scheduling class, else at nice 19; what was done."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        return "SCHED_IDLE"
    except (AttributeError, OSError):
        pass
    try:
        os.nice(19 - os.nice(0))
        return "nice 19"
    except (AttributeError, OSError):
        return "default priority"


def _init_lane(plugins, finish) -> None:
    from stabsim.study.helper_process import ignore_interrupts, prepare_helper

    global _FINISH
    ignore_interrupts()
    _FINISH = finish
    _lowest_priority()
    prepare_helper(plugins)


class _LaneExecutor(Executor):
    """The in-process ``Executor`` of the worker: its chunks use every core once the calling
    process has no study left to start (``_FINISH`` set)."""

    def run(self, func, spec, jobs, backend="cpu"):
        import numba

        for job in jobs:
            if _FINISH is not None and _FINISH.is_set():
                numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
            yield from super().run(func, spec, [job], backend=backend)


def failure_text(e: Exception) -> str:
    """How a study that could not run is reported: "skipped (...)" for a missing optional
    package, else "error (...)"."""
    text = f"{type(e).__name__}: {e}"
    missing = isinstance(e, ImportError) or "ImportError" in str(e) or "not installed" in str(e)
    return ("skipped (missing optional package: " if missing else "error (") + text + ")"


def _run_in_lane(spec, out, kwargs):
    """(RunResult, None) or (None, failure text) of ``run_study`` in the worker."""
    from stabsim.runtime.resources import release_freed_memory
    from stabsim.study.run import run_study

    try:
        result = run_study(spec, out, executor=_LaneExecutor(), progress=False, **kwargs)
        result.lane = True
        return result, None
    except Exception as e:   # handed to the caller as text: it reports it like its own failures
        return None, failure_text(e)
    finally:
        release_freed_memory()   # as the calling process does between its studies


class StudyLane:
    """A queue of studies taken from the front by the calling process (``take``) and from the
    back by one worker process (see the module doc): the worker is handed the last study not yet
    taken as soon as it is free, while two or more are left.  Use as a context manager: leaving
    it normally waits for the worker; leaving it with an exception (an interrupt) stops the
    worker at once."""

    def __init__(self, specs, out, run_kwargs, plugins=()):
        self._left = deque(specs)
        self._out, self._kwargs = str(out), dict(run_kwargs)
        self._lock = threading.Lock()
        self._done: deque = deque()   # (spec, RunResult or None, failure text or None)
        self._idle = threading.Event()   # set while the worker has no study
        self._idle.set()
        self._broken = False
        self._closing = False   # set on an interrupt: the worker is killed, nothing is given back
        ctx = multiprocessing.get_context("spawn")   # not forked: numba's threads may be running
        self._finish = ctx.Event()
        # (concurrent.futures, not multiprocessing.Pool: a worker that dies fails its study
        # instead of leaving it unanswered)
        self._pool = ProcessPoolExecutor(1, mp_context=ctx, initializer=_init_lane,
                                         initargs=(tuple(plugins), self._finish))
        with self._lock:
            self._hand_out()

    @classmethod
    def start(cls, specs, out, run_kwargs, scheduler=None, backend=None, plugins=()) -> StudyLane | None:
        """A started lane, or None: switched off (``STABSIM_ONE_LANE=1``), fewer than three
        studies, a dask scheduler, a backend other than the CPU, one core, or no worker process
        can start here."""
        from stabsim.study.execution import _parse_scheduler

        if (os.environ.get(ONE_LANE_ENV) == "1" or len(specs) < 3 or backend not in (None, "cpu")
                or _parse_scheduler(scheduler)[0] != "local" or (os.cpu_count() or 1) < 2):
            return None
        try:
            return cls(specs, out, run_kwargs, plugins)
        except Exception:   # no worker processes here (no semaphores, a sandbox)
            if multiprocessing.parent_process() is not None:
                raise
            return None

    def _hand_out(self) -> None:
        """The last study to the worker if it is free and two or more are left (lock held)."""
        if self._broken or not self._idle.is_set() or len(self._left) < 2:
            return
        spec = self._left.pop()
        try:
            fut = self._pool.submit(_run_in_lane, spec, self._out, self._kwargs)
        except Exception:   # the worker died earlier (BrokenProcessPool): this process computes the rest
            self._broken = True
            self._left.append(spec)
            return
        self._idle.clear()
        fut.add_done_callback(partial(self._done_callback, spec))

    def _done_callback(self, spec, fut) -> None:   # (in the pool's management thread)
        if self._closing:   # killed on an interrupt: its finished chunks are on disk, nothing to say
            self._idle.set()
            return
        try:
            done = (spec, *fut.result())
        except BaseException as e:   # noqa: BLE001  (the worker died: this process computes the study)
            print(f"the second lane's worker stopped ({type(e).__name__}: {e}); study {spec.id!r} and "
                  "the rest are computed here", file=sys.stderr)
            done = None
        with self._lock:
            if done is None:
                self._broken = True
                self._left.append(spec)
            else:
                self._done.append(done)
            self._idle.set()
            self._hand_out()

    def take(self):
        """The next study for the calling process, or None when none is left."""
        with self._lock:
            spec = self._left.popleft() if self._left else None
            self._hand_out()
        return spec

    def finished(self, wait: bool = False) -> list:
        """(spec, RunResult or None, failure text or None) of the studies the worker finished
        since the last call; with ``wait`` (nothing left to take), after its last one: its
        remaining chunks then use every core."""
        if wait:
            self._finish.set()
            while not self._idle.wait(0.25):   # (a timeout: a signal is handled between waits)
                pass
        with self._lock:
            out = list(self._done)
            self._done.clear()
        return out

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:   # an interrupt: the worker's finished chunks are on disk
            self._closing = True
            for proc in list(getattr(self._pool, "_processes", {}).values()):
                try:   # best effort: concurrent.futures has no public way to stop a running call
                    proc.kill()
                except Exception:   # noqa: BLE001
                    pass
        self._pool.shutdown(wait=True, cancel_futures=True)
        return False


def take_studies(specs, lane: StudyLane | None):
    """Yields ``(spec, None)`` for each study to compute here, in order, and ``(spec, (result,
    failure))`` for each study ``lane`` finished, as soon as it is seen (``StudyLane``)."""
    if lane is None:
        for spec in specs:
            yield spec, None
        return
    while True:
        for spec, result, failure in lane.finished():
            yield spec, (result, failure)
        spec = lane.take()
        if spec is None:   # nothing left to start here: wait for the worker's last study
            for spec, result, failure in lane.finished(wait=True):
                yield spec, (result, failure)
            spec = lane.take()   # one its worker gave back (it stopped), or none
            if spec is None:
                return
        yield spec, None
