"""run_twin's own milliseconds around the kernel, piece by piece (issue #17, item 3).

Run from the repository root::

    python benchmarks/run_twin_overhead.py          # about 10 s with numba's cache warm

The workload is bench_lazy_c.py's (P1 Alg. 1, AUC hinge, d = 10, n = 1000, l2 ball, R = 1).  Each
named step of ``stabsim.engine.twin_runs.run_twin`` (validation, checkpoints, neighbours, the kernel, the
Dataset) is timed by wrapping the module-level function it calls, at T = 10 (the kernel takes
microseconds, Python's data stays in the CPU's caches) and at T = 10^6 (the kernel's 30 ms run
first).  It also counts the garbage collector's runs during the calls, and times the same Dataset
built in a loop of its own (caches warm) by run_twin's public construction and by xarray's private
``Dataset._construct_direct`` (checked ``identical``), the cheapest construction xarray has.  Medians over 25 calls; nothing is asserted.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_twin as bt  # noqa: E402

import numba  # noqa: E402
import pandas as pd  # noqa: E402
import xarray as xr  # noqa: E402

import stabsim.engine.twin_runs as st  # noqa: E402
from stabsim.runtime.provenance import provenance  # noqa: E402

PIECES = ("check_Xy", "log_checkpoints", "check_twin_memory", "kernel_step_sizes", "make_neighbours",
          "mirrored_kidx", "_initial_points", "extend_with_replacements", "replicate_blocks", "_meta",
          "_to_dataset", "twin_kernel")
CALLS = 25


def wrap_pieces() -> dict:
    """Replace each named function of stabsim.engine.twin_runs by a timed wrapper; returns name -> list of s."""
    spent = {name: [] for name in PIECES}
    for name in PIECES:
        def timed(*a, _f=getattr(st, name), _spent=spent[name], **k):
            t0 = time.perf_counter()
            out = _f(*a, **k)
            _spent.append(time.perf_counter() - t0)
            return out
        setattr(st, name, timed)
    return spent


def direct_dataset(rec, outs, reps, ck, etas, es, kidx, meta) -> xr.Dataset:
    """run_twin's Dataset (without outputs) through xarray's private constructor: no merge, no
    alignment, the two indexes built by hand."""
    sums = st.checkpoint_sums(etas, np.int64(es), ck)
    idx = {"replicate": xr.indexes.PandasIndex(pd.Index(reps), "replicate"),
           "t": xr.indexes.PandasIndex(pd.Index(ck), "t")}
    var = {name: index.create_variables()[name] for name, index in idx.items()}
    var["sum_eta"] = xr.Variable("t", sums[0], {"long_name": "sum_{j<=t} eta_j"})
    var["sum_eta2"] = xr.Variable("t", sums[1], {"long_name": "sum_{j<=t} eta_j^2"})
    var["eta_t"] = xr.Variable("t", etas[ck * es], {"long_name": "eta_t"})
    coord_names = set(var)
    for i, (name, ln, desc) in enumerate(st.REC_VARS):
        var[name] = xr.Variable(("replicate", "t"), rec[:, :, i], {"long_name": ln, "description": desc, "units": "1"})
    var["k"] = xr.Variable("replicate", kidx, {"long_name": "index of the replaced example"})
    return xr.Dataset._construct_direct(var, coord_names, {"replicate": len(reps), "t": len(ck)},
                                        provenance(**meta), idx)


def median_ms(samples) -> float:
    return float(np.median(samples)) * 1e3


def measure(X, y, T: int, spent: dict) -> dict:
    cons = ("l2", 10.0)
    for _ in range(3):
        bt.kernel_run(X, y, T, 1, cons)
    for v in spent.values():
        v.clear()
    events = []
    gc.callbacks.append(lambda phase, info: events.append(phase))
    totals = []
    try:
        for _ in range(CALLS):
            t0 = time.perf_counter()
            bt.kernel_run(X, y, T, 1, cons)
            totals.append(time.perf_counter() - t0)
    finally:
        gc.callbacks.pop()
    rec = st.run_twin(X, y, algorithm=bt.ALGORITHM, loss=bt.LOSS, constraint=cons, eta=bt.ETA, T=T, replicates=1,
                      seed=bt.SEED, neighbour=bt.NEIGHBOUR, raw=True)
    if not direct_dataset(*rec).identical(rec.dataset()):
        raise SystemExit("the private constructor built another Dataset: its timing would mean nothing")
    loops = {"public": [], "direct": []}   # the two constructions one after the other, caches warm
    for _ in range(CALLS):
        for name, build in (("public", rec.dataset), ("direct", lambda: direct_dataset(*rec))):
            t0 = time.perf_counter()
            build()
            loops[name].append(time.perf_counter() - t0)
    pieces = {name: median_ms(v) for name, v in spent.items() if v}
    outside = sum(ms for name, ms in pieces.items() if name != "twin_kernel")
    return {"T": T, "total": median_ms(totals), "pieces": pieces, "outside": outside,
            "gc_runs_per_call": events.count("start") / CALLS,
            "public_dataset": median_ms(loops["public"]), "direct_dataset": median_ms(loops["direct"])}


def main() -> None:
    numba.set_num_threads(1)
    X, y = bt.data(10)
    spent = wrap_pieces()
    rows = [measure(X, y, T, spent) for T in (10, 10 ** 6)]
    print("median ms per run_twin call (R = 1, d = 10)\n")
    print(f"{'piece':28s}" + "".join(f"{'T = ' + format(r['T'], ','):>16s}" for r in rows))
    for name in PIECES:
        print(f"{name:28s}" + "".join(f"{r['pieces'].get(name, float('nan')):16.3f}" for r in rows))
    for label, key in (("sum of the pieces but kernel", "outside"), ("whole call", "total"),
                       ("Dataset in a loop, public", "public_dataset"),
                       ("Dataset in a loop, private", "direct_dataset"), ("gc runs per call", "gc_runs_per_call")):
        print(f"{label:28s}" + "".join(f"{r[key]:16.3f}" for r in rows))


if __name__ == "__main__":
    main()
