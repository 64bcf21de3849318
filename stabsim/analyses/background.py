"""Analyse finished studies in worker processes while the next study computes (issue #17).

A study's analysis (bounds, verdicts, figures, summary.md) is single-threaded Python: run after
each study in the process that computes, it left one of two cores idle for about 80 s of the
full suite.  ``BackgroundAnalyses`` runs the analyses in ``WORKERS`` spawned worker process(es)
instead, so that they overlap with the next studies' computation; the workers run numba on one
thread (the computing process keeps every core), with BLAS on one thread and a short OpenMP spin
(:mod:`stabsim.thread_pools`), at a lower priority (``NICE``): at normal priority the worker
now and then took a core from one of the computing process's OpenMP threads, which held the
others at the loop's barrier (the quick suite: 42 s more CPU, 10 s more wall than analysing in
place; at nice 10 the same as in place, the full suite 12 s faster than at normal priority).
One worker: a second one let the quick suite's last analyses finish 18 s sooner but cost as much
CPU as it saved (benchmarks/README.md, "Two thread pools").
Each analysis writes only into its own study's folder (and the accounting memo, which is written
atomically), so they can run side by side.

The analyses are the same functions on the same files (data.nc is complete when a study's run
returns), so nothing they write changes.  Results are handed back in the studies' order; an
analysis that raises re-raises its exception in the calling process when its result is
collected, as an analysis run in place would.  ``stabsim run`` uses it for runs of
``WARM_STUDIES`` studies or more (the suite) when a worker process can start; otherwise, and
with ``STABSIM_ANALYSE_INLINE=1``, it analyses in place as before.  On an interrupt the worker is
stopped at once; the data of every finished study is already on disk, and ``stabsim report`` or a
rerun of the command redoes an unfinished analysis (its analysis.json, written last and whole, is
then missing or older than data.nc: ``stabsim.report.collect``).
"""

from __future__ import annotations

import multiprocessing
import os

#: Set to "1" to analyse each study in the computing process, after it (no worker process).
INLINE_ENV = "STABSIM_ANALYSE_INLINE"
#: worker processes for the analyses
WORKERS = 1
#: the workers' scheduling priority, below the computing process (os.nice increment)
NICE = 10


def _init_worker(plugins) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's: it stops this worker
    try:   # the computation first: a descheduled OpenMP thread holds all its threads at a barrier
        os.nice(NICE)
    except (AttributeError, OSError):
        pass
    import numba

    from ..thread_pools import configure_thread_pools
    from ..builtin import load_all

    configure_thread_pools()
    numba.set_num_threads(1)   # the computing process keeps the cores (numbers do not depend on it)
    load_all()
    if plugins:
        from ..plugins import load_plugins

        load_plugins(list(plugins))


def _analyse(study_dir, run_seconds, out_dir) -> dict:
    from . import analyse

    return analyse(study_dir, run_seconds=run_seconds, out_dir=out_dir)


class BackgroundAnalyses:
    """Analyses run in worker processes, collected in submission order (see the module doc).

    Use as a context manager: leaving it normally waits for the worker to finish; leaving it
    with an exception (an interrupt) stops the worker at once."""

    def __init__(self, plugins=(), workers=WORKERS):
        ctx = multiprocessing.get_context("spawn")   # not forked: numba's threads may be running
        self._pool = ctx.Pool(workers, initializer=_init_worker, initargs=(tuple(plugins),))
        self._pending: list = []

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
        self._pending.append((study_dir, self._pool.apply_async(_analyse, (str(study_dir), run_seconds,
                                                                          None if out_dir is None else str(out_dir)))))

    def ready(self, wait: bool = False):
        """(study_dir, analysis record) of the finished analyses at the head of the queue, in
        submission order; with ``wait``, of all of them.  Re-raises an analysis' exception."""
        while self._pending and (wait or self._pending[0][1].ready()):
            study_dir, res = self._pending.pop(0)
            yield study_dir, res.get()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self._pool.close()
        else:
            self._pool.terminate()
        self._pool.join()
        return False
