"""How much privacy does this calibration buy?

P4 Alg. 1 (DP-SGD with low noise, pointwise) calibrates its per-step Gaussian noise sigma to a
claimed (eps, delta) by the paper's Theorem 2.  The privacy ledger accounts the exact eps that
noise buys at delta (PLD for the subsampled steps, RDP beside it) and the sigma that would be
needed, for a few claimed eps; a row is "private" when the eps bought is at most the one claimed.
The table goes to OUT/privacy_ledger.md.

    python examples/privacy_calibration.py [OUT]      (STABSIM_EXAMPLE_SMALL=1: fewer, smaller rows)
"""

import os
import sys
from pathlib import Path

from stabsim.privacy import ledger as L
from stabsim.privacy.errors import InfeasiblePrivacyParameters

SMALL = os.environ.get("STABSIM_EXAMPLE_SMALL") == "1"
out = Path(sys.argv[1] if len(sys.argv) > 1 else "example_output")
out.mkdir(parents=True, exist_ok=True)

n, T = (200, 100) if SMALL else (500, 300)
delta = 1.0 / n ** 2
mechanisms = []
for eps in ((2.0, 4.0) if SMALL else (2.0, 4.0, 8.0)):
    try:
        mechanisms.append(L.p4_dpsgd(n, T, eps, delta))
    except InfeasiblePrivacyParameters as e:   # Theorem 2's conditions cannot be met at this eps
        print(f"eps = {eps:g}: no calibration ({e})")
rows = L.ledger(mechanisms)
print(L.format_ledger(rows))
for r in rows:
    print(f"claimed eps {r.eps_target:g}: the noise buys eps {r.eps_bought:.3g} ({r.method}); "
          f"sigma is {r.sigma_ratio:.3g} x the sigma needed -> {r.verdict}")
(out / "privacy_ledger.md").write_text(L.ledger_markdown(rows) + "\n")
print(f"table: {out / 'privacy_ledger.md'}")
