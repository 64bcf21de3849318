"""Does P1 Theorem 4 hold here, and how tight is it?

P1 Alg. 1 (pair z_{i_t} with z_{i_{t-1}}) with the AUC hinge loss, a constant step eta and
projection onto an l2 ball: Theorem 4 says the algorithm is eps-uniformly argument stable in
expectation with eps = 2 sqrt(e) G eta (sqrt(5t) + 2t/n).  We run the twin trajectories on S and
S' (example k label-flipped, shared randomness), measure E||A_t(S) - A_t(S')|| with its CI, and
judge the bound along t; the figure goes to OUT/p1_thm4.png.

    python examples/p1_thm4_tightness.py [OUT]        (STABSIM_EXAMPLE_SMALL=1: a tiny run)
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

n, T, R = (40, 300, 16) if SMALL else (200, 5000, 200)
X, y = stabsim.make_problem("auc_separable", d=10).sample(n, seed=0)
ds = stabsim.run_twin(X, y, algorithm="p1_alg1", loss="auc_hinge", constraint=("l2", 5.0), eta=0.05, T=T,
                      replicates=R, seed=1, neighbour="flip")

v = stabsim.judge(ds, "P1.Thm4.uas", X=X)
print(f"P1 Theorem 4 at n = {n}, T = {T}, {R} replicates: {v.verdict}")
print(f"  worst margin (bound - CI upper end): {v.worst_margin:.3g} at {dict(v.worst_at)}")
print(f"  tightness (measured / bound): {v.tightness_min:.3g} .. {v.tightness_max:.3g}"
      + ("  -- vacuous: the bound is more than 100x the measurement" if v.vacuous else ""))
fig = stabsim.overlay_figure(ds, "P1.Thm4.uas", X=X, path=out / "p1_thm4.png")
print(f"figure: {out / 'p1_thm4.png'}")
