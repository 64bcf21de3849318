"""Does the rate in n show up?

P1 Theorem 5 (smooth, convex loss): Alg. 1 is eps-UAS with eps = 4 G eta t / n, so at a fixed
number of steps T the stability should fall like n^-1.  We run a small sweep over n (the AUC
logistic loss, eta and T fixed), measure E||A_T(S) - A_T(S')|| at t = T in each run, and compare
the log-log slope in n (bootstrap CI over replicates) with the bound's exponent -1; we also check
the bound's values along n.  The figure goes to OUT/rate_in_n.png.

    python examples/rate_in_n.py [OUT]                (STABSIM_EXAMPLE_SMALL=1: a tiny sweep)
"""

import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import stabsim  # noqa: E402

SMALL = os.environ.get("STABSIM_EXAMPLE_SMALL") == "1"
out = Path(sys.argv[1] if len(sys.argv) > 1 else "example_output")
out.mkdir(parents=True, exist_ok=True)

ns, T, R = ((20, 40, 80), 200, 16) if SMALL else ((50, 100, 200, 400, 800), 2000, 200)
problem = stabsim.make_problem("auc_separable", d=10)
X_all, _ = problem.sample(max(ns), seed=0)   # kappa (so G) from the largest sample
runs = []
for n in ns:
    X, y = problem.sample(n, seed=0)
    runs.append(stabsim.run_twin(X, y, algorithm="p1_alg1", loss="auc_logistic", constraint=("l2", 5.0),
                                 eta=0.05, T=T, replicates=R, seed=1, neighbour="flip"))

rate = stabsim.judge(runs, "P1.Thm5.uas", X=X_all, rate=True)
print(f"slope of E||A_T(S) - A_T(S')|| in n over n = {list(ns)}: {rate.slope:.3g} "
      f"[{rate.slope_lower:.3g}, {rate.slope_upper:.3g}] vs the bound's {rate.exponent:g}: {rate.label}")
bound = stabsim.judge(runs, "P1.Thm5.uas", X=X_all)
print(f"the bound 4 G eta T / n along n: {bound.verdict} (tightness {bound.tightness_min:.3g} .. "
      f"{bound.tightness_max:.3g})")
stabsim.overlay_figure(runs, "P1.Thm5.uas", X=X_all, rate=True, path=out / "rate_in_n.png")
print(f"figure: {out / 'rate_in_n.png'}")
