"""P4 (Wang, Lei, Ying, Zhou: DP-SGD with low noise) Theorems 2 and 5: the noise calibration
(study ``p4_thm2_thm5_sigma2``; check ``p4_condition`` in :mod:`stabsim.analyses.p4_privacy`).

Kind ``p4_privacy``
    The paper's beta search (grid step 1e-4 and continuous) and sigma^2/G^2 at one
    (eps, n, T, delta) of ``[privacy]``, the formula at the chosen beta, the two conditions'
    margins, the privacy loss re-derived from Lemmas 8-10 and (``accountant``) dp_accounting's
    RDP epsilon.  Infeasible parameters give NaN rows with the reason in the attrs.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from stabsim.setups.p4 import PRIV
from stabsim.registry import StudySpec, register_kind


@register_kind("p4_privacy", params={"privacy": PRIV},
               description="P4 Thm 2/5: beta search, sigma^2 and its RDP accounting at one (eps, n, T, delta)")
def p4_privacy_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    from stabsim.privacy.calibration import p4_beta_search, p4_condition_margins
    from stabsim.theory import get

    p = spec.cell_params(cell)["privacy"]
    delta = 1.0 / p["n"] ** 2 if p["delta"] == 0 else p["delta"]
    pw = p["pairwise"]
    from stabsim.privacy.errors import InfeasiblePrivacyParameters

    R = len(replicates)
    try:
        grid = p4_beta_search(p["eps"], delta, p["n"], p["T"], 1.0, pw)
        cont = p4_beta_search(p["eps"], delta, p["n"], p["T"], 1.0, pw, continuous=True)
    except InfeasiblePrivacyParameters as e:  # reported by the check, never run silently
        nan = np.full(R, np.nan)
        return xr.Dataset({v: (("replicate",), nan) for v in ("s_grid", "s_cont", "s_formula", "beta", "margin1",
                                                              "margin2", "eps_rdp_rederived", "eps_accountant")},
                          coords={"replicate": np.asarray(replicates, dtype=np.int64)}, attrs={"infeasible": str(e)[:300]})
    key = "P4.Thm5.sigma2" if pw else "P4.Thm2.sigma2"
    s_formula = float(get(key)(beta=grid.beta, eps=p["eps"], delta=delta, n=p["n"], T=p["T"], G=1.0))
    m1, m2 = p4_condition_margins(grid.beta, p["eps"], delta, p["n"], p["T"], pw)
    # Re-derivation (errata P4-A): per step (lambda, 3.5 gamma^2 lambda (2G)^2/sigma^2)-RDP, gamma = k/n,
    # composed over T, converted with Lemma 10 at nu = delta: eps' = T 3.5 gamma^2 lambda 4/s + log(1/delta)/(lambda-1)
    lam = math.log(1 / delta) / ((1 - grid.beta) * p["eps"]) + 1
    gam = (2.0 if pw else 1.0) / p["n"]
    eps_rdp = p["T"] * 3.5 * gam ** 2 * lam * 4.0 / grid.sigma2_over_G2 + math.log(1 / delta) / (lam - 1)
    eps_acc = math.nan
    if p["accountant"]:
        try:
            from stabsim.privacy.accountant import epsilon, p4_dpsgd

            mech = p4_dpsgd(p["n"], p["T"], 1.0, p["eps"], delta, pw, sigma2=grid.sigma2)
            eps_acc = float(epsilon(mech, "rdp"))
        except Exception:  # dp_accounting missing: leave NaN
            eps_acc = math.nan
    rep = np.ones(R)
    return xr.Dataset({
        "s_grid": (("replicate",), rep * grid.sigma2_over_G2), "s_cont": (("replicate",), rep * cont.sigma2_over_G2),
        "s_formula": (("replicate",), rep * s_formula), "beta": (("replicate",), rep * grid.beta),
        "margin1": (("replicate",), rep * m1), "margin2": (("replicate",), rep * m2),
        "eps_rdp_rederived": (("replicate",), rep * eps_rdp), "eps_accountant": (("replicate",), rep * eps_acc),
    }, coords={"replicate": np.asarray(replicates, dtype=np.int64)}, attrs={"delta": float(delta)})
