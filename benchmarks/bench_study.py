"""Throughput of the study runner and the cost of chunking.

    python benchmarks/bench_study.py [--study studies/example_twin.toml] [--profile full]
                                     [--repeat 3] [--skip-dask]

Measures, for one study (default: ``example_twin``, profile ``full``):

* ``unchunked``: the same total work as plain in-process calls, one ``run_twin`` call per
  cell with all replicates (through the kind's cell function, so data sampling is included
  on both sides), no files;
* ``chunked``: ``run_study`` in-process (chunks of ``[study] chunk`` replicates, each
  written, checked and finally assembled into ``data.nc``); overhead = chunked / unchunked - 1
  in wall and in CPU time (CPU time is steadier on a loaded machine), and the wall time spent
  outside the cell function within the same run (target < 10 % at the full profile's chunk
  size);
* ``dask local:1`` / ``local:2``: ``run_study`` on a LocalCluster with 1 and 2 worker
  processes, with the cluster started and warmed up beforehand (steady state), plus the
  start-up + warm-up time on its own.

Throughput is in replicate-steps per second (cells x replicates x T / wall time).  Times
are the best of ``--repeat`` runs.  The machine's load average is printed: on a shared
machine the numbers move with it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from stabsim.registry import KINDS
from stabsim.study import Executor, load_study, run_study


def _steps(spec) -> int:
    T = spec.sections["algorithm"]["T"]
    total = 0
    for cell in spec.cells():
        total += spec.replicates * spec.cell_params(cell)["algorithm"].get("T", T)
    return total


def _timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def unchunked(spec) -> tuple[float, float]:
    """(wall, cpu) of one cell-function call per cell with every replicate."""
    func = KINDS[spec.kind].func

    def go():
        for cell in spec.cells():
            func(spec, cell.coords, np.arange(spec.replicates, dtype=np.int64))
    return _timed(go)


def chunked(spec, root: Path, **kw) -> tuple[float, float, float]:
    """(wall, cpu, seconds inside the cell function) of a fresh ``run_study``."""
    out = Path(tempfile.mkdtemp(dir=root))
    kind = KINDS[spec.kind]
    inner = {"s": 0.0}
    real = kind.func

    def timed_cell(*a):
        t0 = time.perf_counter()
        try:
            return real(*a)
        finally:
            inner["s"] += time.perf_counter() - t0

    import stabsim.study.run as study_mod  # the module whose run_study calls assemble
    from stabsim.study.store import StudyDir

    real_write, real_assemble = StudyDir.write_chunk, study_mod.assemble

    def timed_write(self, *a, **k):
        t0 = time.perf_counter()
        try:
            return real_write(self, *a, **k)
        finally:
            PARTS["write"] += time.perf_counter() - t0

    def timed_assemble(*a, **k):
        t0 = time.perf_counter()
        try:
            return real_assemble(*a, **k)
        finally:
            PARTS["assemble"] += time.perf_counter() - t0

    PARTS.update(write=0.0, assemble=0.0)
    if "executor" not in kw:
        kind.func = timed_cell
    StudyDir.write_chunk, study_mod.assemble = timed_write, timed_assemble
    try:
        wall, cpu = _timed(lambda: run_study(spec, out, progress=False, log=lambda m: None, **kw))
    finally:
        kind.func = real
        StudyDir.write_chunk, study_mod.assemble = real_write, real_assemble
    shutil.rmtree(out)
    return wall, cpu, inner["s"], PARTS["write"], PARTS["assemble"]


PARTS = {"write": 0.0, "assemble": 0.0}


def _warm_worker():
    from stabsim import make_problem, run_twin

    X, y = make_problem("auc_separable", d=4).sample(20, 0)
    run_twin(X, y, T=10, replicates=2, neighbour="flip")
    return os.getpid()


def best(fn, repeat):
    return min(fn() for _ in range(repeat))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--study", default=str(REPO / "studies" / "example_twin.toml"))
    ap.add_argument("--profile", default="full")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-dask", action="store_true")
    args = ap.parse_args(argv)

    spec = load_study(args.study, args.profile)
    steps = _steps(spec)
    root = Path(tempfile.mkdtemp(prefix="bench_study_"))
    try:
        # warm-up: numba cache load, imports
        warm = load_study(args.study, "quick") if "quick" in spec.text else spec
        run_study(warm, root / "warm", progress=False, log=lambda m: None)

        rows = []
        singles, chunks = [], []
        for _ in range(args.repeat):  # interleaved, so both see the same machine load
            singles.append(unchunked(spec))
            chunks.append(chunked(spec, root))
        (w1, c1), (w2, c2, inner, t_write, t_asm) = min(singles), min(chunks)
        rows.append(("in-process, one run_twin call per cell", w1, f"cpu {c1:.2f} s"))
        rows.append((f"in-process, chunks of {spec.chunk} (run_study)", w2,
                     f"cpu {c2:.2f} s; overhead: wall {100 * (w2 / w1 - 1):+.1f} %, cpu "
                     f"{100 * (c2 / c1 - 1):+.1f} %, outside the cell function {w2 - inner:.2f} s "
                     f"= {100 * (w2 - inner) / inner:.1f} % of compute"))
        rows.append(("  of which: writing + checking each chunk", t_write,
                     f"{1000 * t_write / spec.n_chunks:.0f} ms per chunk"))
        rows.append(("  of which: assembling and writing data.nc", t_asm, "once per study"))
        if not args.skip_dask:
            for n in (1, 2):
                t0 = time.perf_counter()
                ex = Executor(f"local:{n}")
                ex._start()
                ex.client.run(_warm_worker)
                startup = time.perf_counter() - t0
                try:
                    t = min(chunked(spec, root, executor=ex)[0] for _ in range(args.repeat))
                finally:
                    ex.close()
                rows.append((f"dask local:{n} ({n} worker{'s' if n > 1 else ''}, "
                             f"{ex.numba_threads} numba thread{'s' if ex.numba_threads > 1 else ''} each)",
                             t, f"+ {startup:.1f} s cluster start-up/warm-up"))
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print(f"study {spec.id!r} profile {spec.profile!r}: {len(spec.cells())} cells x {spec.replicates} "
          f"replicates, chunk {spec.chunk} -> {spec.n_chunks} chunks, {steps:.3g} replicate-steps; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; best of {args.repeat}")
    w = max(len(r[0]) for r in rows)
    print(f"{'mode':<{w}}  {'wall s':>7}  {'Mstep/s':>8}  note")
    for name, t, note in rows:
        rate = f"{steps / t / 1e6:8.2f}" if not name.startswith("  ") else " " * 8
        print(f"{name:<{w}}  {t:7.2f}  {rate}  {note}")


if __name__ == "__main__":
    main()
