"""Where the chunks of a study run and how they come back: ``Executor`` (in-process, or a
dask.distributed cluster: ``local:N`` / a scheduler address), ``_compute_chunk`` (one cell x
a block of replicates on one backend, ``stabsim.engine.backend``; what a dask worker runs, so it
stays importable by this path), the code-identity stamp every chunk carries (``StaleCode``),
the backend stamp (``chunk_backend``, ``OtherBackend``), and ``_run_jobs`` (compute the
missing chunks of a study, write each as it finishes, report an interruption)."""

from __future__ import annotations

import os
import re
import sys

import numpy as np
import xarray as xr

from stabsim.runtime.signals import raise_if_interrupted
from stabsim.registry import StudyError, get_kind
from stabsim.study.store import StoreError


class StaleCode(StudyError):
    """Stored chunks, or a dask worker, come from other code than this process's."""


class OtherBackend(StudyError):
    """Stored chunks, or a chunk a dask worker returned, were computed on another backend
    (``chunk_backend``: "cpu" or "cuda") than the run asks for; the two agree only to rounding."""


def _stamp_backend(ds: xr.Dataset, backend: str) -> xr.Dataset:
    """Record where a chunk was computed: ``chunk_backend`` ("cpu"/"cuda"), ``chunk_device``."""
    from stabsim.engine.backend import device_description

    ds.attrs["chunk_backend"] = backend
    ds.attrs["chunk_device"] = device_description() if backend == "cuda" else "cpu"
    return ds


def _code_mismatch(what: str, old: dict, new: dict, how: str) -> str:
    from stabsim.runtime.codeid import describe, differences

    changed = "; ".join(differences(old, new)) or "identity not recorded"
    return (f"{what} other code than this process: {describe(old)}; this process runs {describe(new)} "
            f"(changed: {changed}). Mixing results of two versions of the code is refused; {how}")


_WORKER_HOW = ("start the dask workers from the same stabsim source (same files, same numba/numpy/"
               "python) as the process that runs the study")


def _stamp_code(ds: xr.Dataset, expected: dict | None) -> xr.Dataset:
    """Record the identity of the code that computed a chunk (``chunk_code_*`` attrs);
    with ``expected`` (the client's identity), refuse to compute on other code."""
    from stabsim.runtime.codeid import code_identity, matches

    mine = code_identity()
    if expected is not None and not matches(mine, expected):
        import socket

        raise StaleCode(_code_mismatch(f"the dask worker on {socket.gethostname()} (pid {os.getpid()}) runs",
                                       mine, expected, _WORKER_HOW))
    ds.attrs.update({f"chunk_{k}": v for k, v in mine.items()})
    return ds


def _check_returned_code(ds: xr.Dataset, mine: dict) -> None:
    """A chunk coming back from a worker must carry this process's code identity (a worker
    running an older stabsim does not stamp it at all)."""
    from stabsim.runtime.codeid import matches, recorded_identity

    rec = recorded_identity({k: v for k, v in ds.attrs.items() if k.startswith("chunk_code_")})
    if not matches(rec, mine):
        raise StaleCode(_code_mismatch("a chunk came back from a dask worker computed by", rec, mine, _WORKER_HOW))


def _compute_chunk(func, spec, coords, reps, numba_threads=None, expected_code=None, plugins=None,
                   backend="cpu"):
    """Run one chunk (in-process or on a dask worker).  ``expected_code``: the identity of
    the process that submitted it; a worker running other code refuses (``StaleCode``).
    ``plugins``: ``(names, folders)`` of user modules to import first (``stabsim.registry.plugins``);
    then ``func`` may be the kind's name, looked up after the import.  ``backend``: every
    ``run_twin`` of the chunk runs there (``stabsim.engine.backend.use_backend``; the study's client
    passes the backend it resolved, "cpu" or "cuda"; a worker that cannot run it raises
    ``BackendError`` before computing); recorded as the chunk's ``chunk_backend``."""
    from stabsim.engine.backend import resolve_backend, use_backend

    if expected_code is not None:
        _stamp_code(xr.Dataset(), expected_code)  # fail before computing
    backend = resolve_backend(backend)
    if plugins:
        from stabsim.registry.plugins import ensure_loaded

        ensure_loaded(plugins[0], plugins[1])
    if isinstance(func, str):
        func = get_kind(func).func
    if numba_threads:
        import numba

        numba.set_num_threads(max(1, min(int(numba_threads), numba.config.NUMBA_NUM_THREADS)))
    from stabsim.engine.twin_runs import progress_bars

    with progress_bars(False), use_backend(backend):  # a study shows its own progress over chunks
        ds = func(spec, dict(coords), np.asarray(reps, dtype=np.int64))
    if not isinstance(ds, xr.Dataset) or "replicate" not in ds.dims:
        raise TypeError(f"study kind {spec.kind!r} must return an xarray.Dataset with a 'replicate' dim")
    if not np.array_equal(ds["replicate"].values, reps):
        raise ValueError(f"study kind {spec.kind!r} returned replicate ids that differ from the requested ones")
    return _stamp_backend(_stamp_code(ds, expected_code), backend)


def _parse_scheduler(scheduler):
    if scheduler in (None, "", "local", "local:0", "in-process"):
        return ("local", None)
    if isinstance(scheduler, str):
        m = re.fullmatch(r"local:(\d+)", scheduler)
        if m and int(m.group(1)) >= 1:
            return ("cluster", int(m.group(1)))
        if re.fullmatch(r"(tcp|tls|ucx|inproc)://\S+", scheduler):
            return ("address", scheduler)
    raise StudyError(f"scheduler = {scheduler!r}: must be 'local' (in-process), 'local:N' (a dask "
                     "LocalCluster with N >= 1 worker processes) or a scheduler address 'tcp://host:port'")


class Executor:
    """Where chunks run: in-process, or on a dask.distributed cluster (``local:N`` / address).

    The cluster is started lazily (on the first chunk to compute) and shut down by
    ``close()``; one executor can serve several studies (``stabsim run A B``).
    """

    def __init__(self, scheduler=None, client=None):
        self.client, self.cluster, self.numba_threads = client, None, None
        self._own = False
        self.mode, self._arg = ("client", None) if client is not None else _parse_scheduler(scheduler)

    def _start(self):
        if self.client is not None or self.mode == "local":
            return
        mode, arg = self.mode, self._arg
        import logging

        from dask.distributed import Client, LocalCluster

        if mode == "cluster":
            self.cluster = LocalCluster(n_workers=arg, threads_per_worker=1, processes=True,
                                        dashboard_address=None, silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
            self.numba_threads = max(1, (os.cpu_count() or 1) // arg)
        else:
            try:
                self.client = Client(arg, timeout="20s")
            except OSError as e:
                raise StudyError(f"cannot connect to the dask scheduler at {arg}: {e}") from None
        self._own = True

    def close(self, interrupted: bool = False):
        """Shut down what this executor started.  ``interrupted`` (Ctrl-C, SIGTERM): first kill
        the local workers' processes, whose running chunk is discarded anyway, so that the
        shutdown takes a fraction of a second instead of waiting for their kernels to finish."""
        if self._own:
            if interrupted and self.cluster is not None:
                for w in list(getattr(self.cluster, "workers", {}).values()):
                    try:  # best effort: distributed's Nanny -> WorkerProcess -> AsyncProcess
                        w.process.process.kill()
                    except Exception:  # noqa: BLE001
                        pass
            if self.client is not None:
                self.client.close()
            if self.cluster is not None:
                self.cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(interrupted=exc_type is not None and issubclass(exc_type, KeyboardInterrupt))

    def run(self, func, spec, jobs, backend="cpu"):
        """Yield ``(job, dataset)`` as chunks finish; ``jobs``: list of (cell, start, stop, path);
        ``backend``: where every chunk runs ("cpu" or "cuda", resolved by the caller)."""
        self._start()
        if self.client is None:
            for job in jobs:
                cell, start, stop, _ = job
                yield job, _compute_chunk(func, spec, cell.coords, np.arange(start, stop, dtype=np.int64),
                                          backend=backend)
            return
        from dask.distributed import as_completed

        from stabsim.runtime.codeid import code_identity

        futures = {}
        for job in jobs:
            cell, start, stop, path = job
            plug = None
            if spec.plugins:  # the worker imports them by name before unpickling anything of theirs
                from stabsim.registry.plugins import LOADED

                plug = (tuple(spec.plugins), tuple(sorted({LOADED.get(m, ("", ""))[1] for m in spec.plugins} - {""})))
            fut = self.client.submit(_compute_chunk, spec.kind if plug else func, spec, cell.coords,
                                     np.arange(start, stop, dtype=np.int64), self.numba_threads,
                                     key=f"stabsim-{spec.fingerprint[:8]}-{path.stem}", pure=False,
                                     expected_code=code_identity(), plugins=plug, backend=backend)
            futures[fut] = job
        try:
            for fut in as_completed(futures):
                job = futures.pop(fut)
                yield job, fut.result()
                fut.release()
        finally:
            for fut in futures:
                fut.cancel()


def _run_jobs(spec, kind, sd, jobs, expected, result, scheduler, client, executor, progress, log,
              resume_hint, backend="cpu"):
    from tqdm import tqdm

    from stabsim.runtime.resources import ResourceError
    from stabsim.study.needs import check_study

    try:  # memory of one chunk, disk of the results: refused before any allocation or compute
        check_study(spec, sd.root)
    except ResourceError as e:
        raise StudyError(str(e)) from None
    bar = tqdm(total=result.n_chunks, initial=result.n_chunks - len(jobs), unit="chunk", desc=spec.id,
               disable=not progress, file=sys.stderr, dynamic_ncols=True, smoothing=0.1)
    try:
        own = executor is None
        ex = Executor(scheduler, client) if own else executor
        try:
            from stabsim.runtime.codeid import code_identity

            mine = code_identity()
            for (cell, start, stop, path), ds in ex.run(kind.func, spec, jobs, backend=backend):
                _check_returned_code(ds, mine)  # a dask worker running other code never mixes in
                if ds.attrs.get("chunk_backend") != backend:  # nor one that computed elsewhere
                    raise OtherBackend(f"a chunk came back from a dask worker computed on backend "
                                       f"{ds.attrs.get('chunk_backend')!r}, not {backend!r} as asked; "
                                       f"{_WORKER_HOW}")
                sd.write_chunk(ds, path, expected[path.name])
                result.computed += 1
                bar.update(1)
                raise_if_interrupted()   # a signal whose raise a finalizer swallowed (stabsim.runtime.signals)
        except KeyboardInterrupt:
            if own:
                ex.close(interrupted=True)
                own = False
            raise
        finally:
            if own:
                ex.close()
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (stabsim.runtime.signals.Terminated)
        bar.close()
        done = result.reused + result.computed
        hint = resume_hint or "run the same run_study(...) call again"
        what = f"terminated (signal {e.signum})" if hasattr(e, "signum") else "interrupted"
        log(f"\n{what}: {done} of {result.n_chunks} chunks of study {spec.id!r} are saved in "
            f"{sd.chunk_dir}; to resume, {hint}")
        raise
    except (StudyError, StoreError):
        raise
    except Exception as e:
        done = result.reused + result.computed
        raise StudyError(f"study {spec.id!r}: a chunk failed ({type(e).__name__}: {e}); "
                         f"{done} finished chunks are kept in {sd.chunk_dir}") from e
    finally:
        bar.close()
