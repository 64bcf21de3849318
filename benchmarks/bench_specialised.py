"""The general replicate against the one compiled for a configuration (issue #17, item 3).

Run from the repository root::

    python benchmarks/bench_specialised.py        # about 1 minute warm, plus about 4 s per new build

For each configuration it times the kernel call inside ``run_twin`` (R = 1, one numba thread,
T = 2·10^5) with ``specialise=False`` (the kind's general build: the cold start's own rule is
turned off) and ``specialise=True`` (``stabsim.kernels.twin.wants_specialised``), alternating,
and checks that both record the same numbers bit for bit.  Medians over ``--rounds`` rounds, ns
per twin step; nothing is asserted.  See benchmarks/README.md, "Builds specialised to a
configuration".
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # this checkout before any installed copy

import numba  # noqa: E402

import stabsim.engine.twin_runs as st  # noqa: E402
from stabsim import make_problem  # noqa: E402
from stabsim.kernels import twin as kt  # noqa: E402

P1 = dict(algorithm="p1_alg1", loss="auc_hinge", constraint=("l2", 10.0), eta=0.01)
PAIRS = dict(algorithm="p4_alg2", loss="auc_hinge", constraint=("l2", 5.0), eta=0.05, w_ref=True)
POINTS = dict(algorithm="p4_alg1", loss="point_logistic", constraint=("l2", 5.0), eta=0.05, w_ref=True)
CONFIGS = [(f"P1 Alg. 1, AUC hinge, l2, d = {d}", d, P1) for d in (2, 10, 20, 50, 100)] + [
    ("P4 Alg. 2 (uniform pairs), AUC hinge, no noise, d = 10", 10, PAIRS),
    ("P4 Alg. 2, noise sigma = 0.5, d = 10", 10, dict(PAIRS, sigma=0.5)),
    ("P4 Alg. 1, point logistic, noise sigma = 0.5, d = 10", 10, dict(POINTS, sigma=0.5)),
]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--steps", type=int, default=200_000, help="T of each call")
    args = ap.parse_args(argv)
    numba.set_num_threads(1)
    kt.SPECIALISE_COLD = False   # specialise=False: the general build, even where it is not compiled yet
    calls = []
    real = st.twin_kernel

    def timed(*a, **k):
        t0 = time.perf_counter()
        out = real(*a, **k)
        calls.append(time.perf_counter() - t0)
        return out

    st.twin_kernel = timed
    T = args.steps
    print(f"kernel call, ns per twin step (R = 1, T = {T:,}, median of {args.rounds} rounds)\n")
    print(f"{'configuration':58s} {'general':>9s} {'special.':>9s} {'change':>8s}  same numbers")
    for label, d, cfg in CONFIGS:
        X, y = make_problem("auc_noisy", d=d).sample(1000, seed=0)
        kw = {k: v for k, v in cfg.items() if k != "w_ref"}
        if cfg.get("w_ref"):
            kw["w_ref"] = np.zeros(d)

        def run(specialise):
            return st.run_twin(X, y, T=T, replicates=1, seed=0, neighbour="flip", raw=True, progress=False,
                               specialise=specialise, **kw)

        recs = {sp: run(sp).rec for sp in (False, True)}   # compiles or loads both builds
        times = {False: [], True: []}
        for _ in range(args.rounds):
            for sp in (False, True):
                calls.clear()
                run(sp)
                times[sp].append(calls[-1])
        ns = {sp: float(np.median(v)) * 1e9 / T for sp, v in times.items()}
        same = np.array_equal(recs[False].view(np.int64), recs[True].view(np.int64))
        print(f"{label:58s} {ns[False]:9.1f} {ns[True]:9.1f} {100 * (ns[True] / ns[False] - 1):+7.0f}%  "
              f"{'yes' if same else 'NO'}", flush=True)


if __name__ == "__main__":
    main()
