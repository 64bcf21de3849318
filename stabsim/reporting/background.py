"""Analyse finished studies in worker processes while the next study computes.

A study's analysis (bounds, verdicts, figures, summary.md) is single-threaded Python: run after
each study in the process that computes, it would leave one of two cores idle.
``BackgroundAnalyses`` runs the analyses in ``WORKERS`` spawned worker process(es) instead, so
that they overlap with the next studies' computation; the workers run numba on one thread (the
computing process keeps every core), with BLAS on one thread and a short OpenMP spin
(:mod:`stabsim.runtime.thread_pools`), at a lower priority (``NICE``): at normal priority a worker takes
a core from one of the computing process's OpenMP threads now and then, which holds the others
at the loop's barrier and costs more CPU and wall time than analysing in place.  One worker while
the studies compute: a second one throughout finishes the last analyses sooner but costs as much
CPU as it saves.  When the last study has computed, the computing process waits for the
analyses; if ``FINISH_MIN`` or more have not started yet, a second worker (``FINISH_WORKERS``)
takes them with the first, on the core the computation left (otherwise the suite ends with one
worker's queue and the other core idle).  The numbers: benchmarks/README.md, "Analyses beside
the computation".  To leave something for the second worker, each worker is handed at most
``AHEAD`` analyses beyond the one it runs; the rest wait here and are handed out as workers
finish (``Pool.apply_async``'s callback).
Each analysis writes only into its own study's folder (and the accounting memo, which is written
atomically), so they can run side by side.

The analyses are the same functions on the same files (data.nc is complete when a study's run
returns), so nothing they write changes.  Results are handed back in the studies' order; an
analysis that raises re-raises its exception in the calling process when its result is
collected, as an analysis run in place would.  ``stabsim run`` uses it for runs of
``WARM_STUDIES`` studies or more (the suite) when a worker process can start; otherwise, and
with ``STABSIM_ANALYSE_INLINE=1``, it analyses in place.  On an interrupt the worker is
stopped at once; the data of every finished study is already on disk, and ``stabsim report`` or a
rerun of the command redoes an unfinished analysis (its analysis.json, written last and whole, is
then missing or older than data.nc: ``stabsim.reporting.report.collect``).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections import deque
from functools import partial

#: Set to "1" to analyse each study in the computing process, after it (no worker process).
INLINE_ENV = "STABSIM_ANALYSE_INLINE"
#: worker processes for the analyses while the studies compute
WORKERS = 1
#: worker processes once the last study has computed (when FINISH_MIN analyses or more wait)
FINISH_WORKERS = 2
FINISH_MIN = 3
#: analyses handed to a worker beyond the one it runs (so that it never waits for the next)
AHEAD = 1
#: the workers' scheduling priority, below the computing process (os.nice increment)
NICE = 10


def _init_worker(plugins) -> None:
    from stabsim.study.helper_process import ignore_interrupts, prepare_helper

    ignore_interrupts()
    try:   # the computation first: a descheduled OpenMP thread holds all its threads at a barrier
        os.nice(NICE)
    except (AttributeError, OSError):
        pass
    prepare_helper(plugins, preload=("stabsim.judging.plots",))   # matplotlib, which the first figure imports anyway


def _analyse(study_dir, run_seconds, out_dir) -> dict:
    from stabsim.reporting.analyse import analyse

    return analyse(study_dir, run_seconds=run_seconds, out_dir=out_dir)


class _Analysis:
    """One submitted analysis: its arguments and, once handed to a worker, its async result."""

    def __init__(self, study_dir, args):
        self.study_dir = study_dir
        self.args = args
        self.result = None
        self.handed = threading.Event()


class BackgroundAnalyses:
    """Analyses run in worker processes, collected in submission order (see the module doc).

    Use as a context manager: leaving it normally waits for the workers to finish; leaving it
    with an exception (an interrupt) stops them at once."""

    def __init__(self, plugins=(), workers=WORKERS, finish_workers=FINISH_WORKERS):
        self._ctx = multiprocessing.get_context("spawn")   # not forked: numba's threads may be running
        self._plugins = tuple(plugins)
        self._finish_workers = finish_workers
        self._lock = threading.Lock()
        self._pools: list = []
        self._busy: list[int] = []            # analyses handed to each worker, not yet finished
        self._waiting: deque = deque()        # submitted, not yet handed to a worker
        self._pending: list[_Analysis] = []   # submitted, not yet collected (submission order)
        self._closing = False
        for _ in range(workers):
            self._add_worker()

    def _add_worker(self) -> None:
        pool = self._ctx.Pool(1, initializer=_init_worker, initargs=(self._plugins,))
        with self._lock:
            self._pools.append(pool)
            self._busy.append(0)
            self._hand_out()

    def _hand_out(self) -> None:
        """Give waiting analyses to workers with room (called with the lock held)."""
        if self._closing:
            return
        for i, pool in enumerate(self._pools):
            while self._waiting and self._busy[i] <= AHEAD:
                item = self._waiting.popleft()
                self._busy[i] += 1
                done = partial(self._finished, i)
                item.result = pool.apply_async(_analyse, item.args, callback=done, error_callback=done)
                item.handed.set()

    def _finished(self, i: int, _result) -> None:   # (in the pool's result thread)
        with self._lock:
            self._busy[i] -= 1
            self._hand_out()

    @classmethod
    def start(cls, plugins=()) -> BackgroundAnalyses | None:
        """A started worker, or None when switched off (``STABSIM_ANALYSE_INLINE=1``) or when no
        worker process can start (the caller then analyses in place)."""
        if os.environ.get(INLINE_ENV) == "1":
            return None
        try:
            return cls(plugins)
        except Exception:   # no worker processes here (no semaphores, a sandbox)
            if multiprocessing.parent_process() is not None:
                raise
            return None

    def submit(self, study_dir, run_seconds=None, out_dir=None) -> None:
        item = _Analysis(study_dir, (str(study_dir), run_seconds, None if out_dir is None else str(out_dir)))
        self._pending.append(item)
        with self._lock:
            self._waiting.append(item)
            self._hand_out()

    def ready(self, wait: bool = False):
        """(study_dir, analysis record) of the finished analyses at the head of the queue, in
        submission order; with ``wait`` (the studies are all submitted), of all of them, with a
        second worker when ``FINISH_MIN`` or more have not started.  Re-raises an analysis'
        exception."""
        if wait:
            with self._lock:
                extra = len(self._waiting) >= FINISH_MIN and len(self._pools) < self._finish_workers
            if extra:
                try:
                    self._add_worker()
                except Exception:   # (the first worker goes on alone)
                    pass
        while self._pending:
            head = self._pending[0]
            if not wait and not (head.handed.is_set() and head.result.ready()):
                return
            head.handed.wait()
            self._pending.pop(0)
            yield head.study_dir, head.result.get()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        with self._lock:
            self._closing = True
        for pool in self._pools:
            if exc_type is None:
                pool.close()
            else:
                pool.terminate()
        for pool in self._pools:
            pool.join()
        return False
