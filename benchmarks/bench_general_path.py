"""The twin kernel's general path: nanoseconds per twin step, buffer sizes s = 1..16.

    python benchmarks/bench_general_path.py [--T 200000] [--threads 1]

P1 Remark 7's buffer update (``p1_buffer``: each step averages the gradients of the pairs
(i_t, i_{t-j}), j = 1..s) with the AUC hinge on ``auc_noisy`` (d = 10, n = 200), eta = 0.5/sqrt(T),
one replicate, S' = S with one label flipped (both runs computed), l2 ball of radius 2 and no
constraint.  s = 1 runs twice: on its fast kind (P1 Alg. 1) and forced onto the general kind
(``kernel_kind`` patched), which every s > 1 uses.  Best of three calls after a warm-up call.

The general path was dominated by numba's reference counting (atomic increments and decrements on
every array view and call; ``stabsim/kernels/nrt_free.py``); to see the "before" numbers, check
out a commit before f812f53 and run this script there.  Nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--T", type=int, default=200_000)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    import numba

    import stabsim
    import stabsim.kernels.twin as tw
    from stabsim.engine.synthetic import make_problem

    numba.set_num_threads(a.threads)
    X, y = make_problem("auc_noisy", d=10).sample(200, 0)
    kind_of = tw.kernel_kind
    print(f"| buffer s | kind | constraint | ns per twin step (T = {a.T}, {a.threads} thread) |")
    print("|---|---|---|---|")
    for s, forced in ((1, False), (1, True), (2, True), (4, True), (16, True)):
        tw.kernel_kind = (lambda *args: tw.GENERAL) if forced else kind_of
        for cons in ("l2:2.0", "none"):
            kw = dict(algorithm="p1_buffer", buffer=s, loss="auc_hinge", constraint=cons,
                      eta=0.5 / np.sqrt(a.T), replicates=1, neighbour="flip", progress=False)
            stabsim.run_twin(X, y, T=100, **kw)
            best = min(_timed(stabsim.run_twin, X, y, T=a.T, **kw) for _ in range(3))
            kind = "general" if forced or s > 1 else "fast (P1 Alg. 1)"
            print(f"| {s} | {kind} | {cons} | {best / a.T * 1e9:.1f} |", flush=True)
    tw.kernel_kind = kind_of


def _timed(fn, *args, **kw):
    t0 = time.perf_counter()
    fn(*args, **kw)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
