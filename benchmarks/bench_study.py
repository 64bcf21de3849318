"""Throughput of the study runner and the cost of chunking.

    python benchmarks/bench_study.py [--study studies/example_twin.toml] [--profile full]
                                     [--repeat 3] [--skip-dask]

Measures, for one study (default: ``example_twin``, profile ``full``):

* ``unchunked``: the same total work as plain in-process calls, one ``run_twin`` call per
  cell with all replicates (through the kind's cell function, so data sampling is included
  on both sides), no files;
* ``chunked``: ``run_study`` in-process (chunks of ``[study] chunk`` replicates, each
  written, checked and finally assembled into ``data.nc``); overhead = chunked / unchunked - 1
  (target < 10 % at the full profile's chunk size);
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

from stabsim.study import KINDS, Executor, load_study, run_study  # noqa: E402


def _steps(spec) -> int:
    T = spec.sections["algorithm"]["T"]
    total = 0
    for cell in spec.cells():
        total += spec.replicates * spec.cell_params(cell)["algorithm"].get("T", T)
    return total


def unchunked(spec) -> float:
    func = KINDS[spec.kind].func
    t0 = time.perf_counter()
    for cell in spec.cells():
        func(spec, cell.coords, np.arange(spec.replicates, dtype=np.int64))
    return time.perf_counter() - t0


def chunked(spec, root: Path, **kw) -> tuple[float, float]:
    out = Path(tempfile.mkdtemp(dir=root))
    t0 = time.perf_counter()
    res = run_study(spec, out, progress=False, log=lambda m: None, **kw)
    wall = time.perf_counter() - t0
    assert res.computed == spec.n_chunks
    shutil.rmtree(out)
    return wall, res.seconds


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
        unchunked(spec)

        rows = []
        t_single = best(lambda: unchunked(spec), args.repeat)
        rows.append(("in-process, one run_twin call per cell", t_single, ""))
        t_chunk = best(lambda: chunked(spec, root)[0], args.repeat)
        rows.append((f"in-process, chunks of {spec.chunk}", t_chunk,
                     f"overhead {100 * (t_chunk / t_single - 1):+.1f} %"))
        if not args.skip_dask:
            for n in (1, 2):
                t0 = time.perf_counter()
                ex = Executor(f"local:{n}")
                ex._start()
                ex.client.run(_warm_worker)
                startup = time.perf_counter() - t0
                try:
                    t = best(lambda: chunked(spec, root, executor=ex)[0], args.repeat)
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
        print(f"{name:<{w}}  {t:7.2f}  {steps / t / 1e6:8.2f}  {note}")


if __name__ == "__main__":
    main()
