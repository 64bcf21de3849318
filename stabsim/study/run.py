"""Running a study: ``run_study`` (``stabsim run``) into ``OUT/<id>/``, resuming whatever an
earlier run finished, ``run_studies`` (several studies on one executor) and ``RunResult``.
The steps: claim the directory, check data.nc, validate the chunks, plan the missing ones
(``stabsim.study.resume``), compute them (``stabsim.study.execution``), assemble data.nc
(``stabsim.study.assembly``)."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from stabsim.registry import KINDS, StudyError, StudySpec
from stabsim.study.store import StoreError, StudyDir
from stabsim.study.assembly import assemble
from stabsim.study.execution import Executor, _run_jobs
from stabsim.study.resume import _check_data, _claim_dir, _log_plan, _plan_chunks, _remove_chunks, _scan_chunks


@dataclass
class RunResult:
    study_id: str
    out_dir: Path
    data_path: Path
    n_chunks: int
    reused: int = 0
    computed: int = 0
    invalid: list = field(default_factory=list)       # (file name, reason) of deleted chunks
    stale: list = field(default_factory=list)         # chunks of other code, recomputed (recompute_stale)
    other_backend: list = field(default_factory=list)  # chunks of another backend, recomputed (recompute_stale)
    backend: str = "cpu"                               # where this run computes ("cpu"/"cuda", resolved)
    removed_temps: list = field(default_factory=list)
    status: str = "complete"                           # or "already complete"
    seconds: float = 0.0
    lane: bool = False                                 # computed by the second lane's worker (stabsim.study.lane)

    def summary(self) -> str:
        if self.status == "already complete":
            return f"{self.study_id}: already complete -> {self.data_path}"
        extra = f", {len(self.invalid)} invalid recomputed" if self.invalid else ""
        where = " (second lane, on idle cores)" if self.lane else ""
        return (f"{self.study_id}: {self.n_chunks} chunks ({self.reused} reused, {self.computed} computed"
                f"{extra}) on {self.backend} in {self.seconds:.1f} s{where} -> {self.data_path}")


def run_study(spec: StudySpec, out_dir, *, scheduler=None, client=None, force: bool = False,
              progress: bool = True, keep_chunks: bool = False, resume_hint: str | None = None,
              log=None, executor: "Executor | None" = None, recompute_stale: bool = False,
              backend: str | None = None) -> RunResult:
    """Run ``spec`` into ``out_dir/<spec.id>/``; resume whatever an earlier run finished.

    scheduler : None / ``"local"`` (in-process; numba threads parallelise inside a chunk),
        ``"local:N"`` (a dask ``LocalCluster`` with N single-threaded worker processes, each
        running numba with cpu_count // N threads) or ``"tcp://host:port"`` (an existing
        dask cluster).  ``client``: an existing ``dask.distributed.Client`` instead.
        Workers only compute; this process writes every chunk, so workers need no access
        to ``out_dir``.
    force : if ``out_dir/<id>`` holds a *different* study (another seed, sweep, parameter:
        the refusal names the keys that changed), remove that study's data.nc and chunks
        (without ``force`` that is an error).  Only what is invalid for this study goes:
        chunks that validate for it are kept.  A changed ``replicates`` or ``chunk`` is not
        a different study: every valid replicate is reused (re-chunked as needed).
    keep_chunks : keep ``chunks/`` after ``data.nc`` is written and checked (default: delete).
        Remembered in ``study.json``: later runs keep them too.
    recompute_stale : chunks computed by other code (``stabsim.runtime.codeid``: another source hash
        or numba/numpy/Python version), or on another backend, are an error naming both;
        with this, they are deleted and recomputed (the chunks of this code and backend are
        kept).
    backend : ``"cpu"``, ``"cuda"`` or ``"auto"`` (``stabsim.engine.backend``): where every chunk's
        ``run_twin`` runs; None: the study's ``[run] backend`` (default "cpu").  Resolved once
        here ("auto": the GPU if usable, else the CPU with a warning), so all chunks of a run
        use one backend; recorded on every chunk (``chunk_backend``) and in data.nc
        (``study_backend``, ``study_device``).  The backends agree only to rounding: a resume
        never mixes them (chunks of another backend are refused unless ``recompute_stale``).
    executor : an ``Executor`` shared between several studies (then ``scheduler`` and
        ``client`` are ignored and the caller closes it).

    Every finished chunk is written at once (atomically, ``stabsim.study.store``); on start,
    existing chunks are validated and invalid ones deleted and recomputed; data.nc's
    checksums are verified (a damaged one is moved aside to ``data.nc.damaged``, said so,
    and rebuilt from kept chunks or recomputed).  On Ctrl-C the
    finished chunks stay, a message says how to resume, and KeyboardInterrupt is re-raised.
    """
    log = log or (lambda msg: print(msg, file=sys.stderr))
    t0 = time.perf_counter()
    sd = StudyDir(Path(out_dir) / spec.id)
    kind = KINDS[spec.kind]
    result = RunResult(spec.id, sd.root, sd.data_path, spec.n_chunks)
    result.backend = _resolve_backend(spec, backend)
    try:
        lock = sd.lock()
        lock.__enter__()
    except StoreError as e:
        raise StudyError(str(e)) from None
    try:
        _run_locked(spec, sd, kind, result, log, force=force, keep_chunks=keep_chunks,
                    recompute_stale=recompute_stale, scheduler=scheduler, client=client, executor=executor,
                    progress=progress, resume_hint=resume_hint)
    finally:
        lock.__exit__(None, None, None)
    result.seconds = time.perf_counter() - t0
    return result


def _resolve_backend(spec, backend) -> str:
    """The concrete backend ("cpu"/"cuda") of one run: ``backend`` (``--backend``) or the study's
    ``[run] backend``, resolved once in this process (``stabsim.engine.backend.resolve_backend``)."""
    from stabsim.engine.backend import BackendError, check_backend_name, resolve_backend

    asked = spec.backend if backend is None else backend
    try:
        return resolve_backend(check_backend_name(asked))
    except (BackendError, ValueError) as e:
        where = f"[run] backend = {asked!r}" if backend is None else f"--backend {asked}"
        raise StudyError(f"study {spec.id!r}: {where}: {e}") from None


def run_studies(specs, out_dir, *, scheduler=None, client=None, **kw) -> list[RunResult]:
    """``run_study`` for several studies, sharing one executor (one dask cluster)."""
    with Executor(scheduler, client) as ex:
        return [run_study(spec, out_dir, executor=ex, **kw) for spec in specs]


def _run_locked(spec, sd, kind, result, log, *, force, keep_chunks, recompute_stale, scheduler, client,
                executor, progress, resume_hint):
    """``run_study`` inside the directory's lock: the resume steps of ``stabsim.study.resume``,
    then the missing chunks, then data.nc."""
    from stabsim.runtime.codeid import code_identity

    code = code_identity()
    cells = spec.cells()

    # 1. study.json: the directory belongs to this study?
    keep, foreign_study = _claim_dir(spec, sd, result, log, force=force, keep_chunks=keep_chunks)
    # 2. data.nc: verified (checksums) before it is believed
    done, data_note = _check_data(spec, sd, result, log, code, force=force, keep=keep,
                                  recompute_stale=recompute_stale, foreign_study=foreign_study,
                                  backend=result.backend)
    if done:
        return
    # 3. chunks: each checks itself (study, cell, replicates, checksum, code)
    cjson = {c.id: json.dumps(c.coords, sort_keys=True) for c in cells}
    valid = _scan_chunks(spec, sd, cells, cjson, result, log, code, force=force, recompute_stale=recompute_stale,
                         backend=result.backend)
    # 4. cover replicates 0..R-1 of every cell with valid chunks (any chunking); the gaps are jobs
    cover, jobs, expected, used, reused_reps = _plan_chunks(spec, sd, cells, valid, cjson)
    result.reused = len(used)
    result.n_chunks = len(used) + len(jobs)
    _log_plan(spec, log, result, data_note, cover, jobs, used, reused_reps, len(cells))

    # 5. compute the missing chunks (in the kind's order, where it has one)
    if jobs and kind.job_order is not None:
        jobs = kind.job_order(spec, jobs)
    if jobs:
        _run_jobs(spec, kind, sd, jobs, expected, result, scheduler, client, executor, progress, log,
                  resume_hint, backend=result.backend)

    # 6. assemble, then drop the chunks data.nc now holds (unless kept)
    assemble(spec, sd, cover=cover)
    if not keep:
        _remove_chunks(sd, spec, log=log)
