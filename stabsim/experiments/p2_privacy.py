"""P2 (Kang, Liu, Li, Wang: sharper utility bounds for DP pairwise learning), Thm 1: the ``p2_privacy``
study kind, the noise of Alg. 1 against privacy accountants (``studies/p2_thm1_privacy.toml``; analysed by
``p2_thm1`` in ``stabsim.analyses.p2_privacy``).

Kind ``p2_privacy``  (Thm 1): for (T, n, eps, delta) the printed sigma and the smallest sigma
    for which the dp_accounting PLD (and RDP) accountant certifies (eps, delta)-DP of the
    T-fold composition of Gaussian mechanisms with replace-one sensitivity 4G/n
    (``privacy.accountant.p2_gradient_perturbation``; P2's DP definition uses replacement,
    "differing by one single entry").  Deterministic (one replicate).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from stabsim.engine.measures import REPLICATE
from stabsim.registry import Param, StudySpec, integer, number, register_kind

_PRIV = {
    "T": Param("number of GD steps", 10, integer(1)),
    "n": Param("number of examples", 100, integer(2)),
    "eps": Param("claimed epsilon", 1.0, number(gt=0)),
    "delta": Param("claimed delta", 1e-5, number(gt=0, lt=1)),
    "G": Param("Lipschitz constant G", 1.0, number(gt=0), sweepable=False),
}


@register_kind("p2_privacy", params={"privacy": _PRIV},
               description="P2 Thm 1: printed sigma vs the sigma the PLD/RDP accountants need")
def p2_privacy_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``p2_privacy`` study: deterministic accountant numbers (copied to every replicate)."""
    from stabsim.privacy import accountant as acc

    q = spec.cell_params(cell)["privacy"]
    mech = acc.p2_gradient_perturbation(q["T"], q["n"], q["G"], q["eps"], q["delta"])
    disc = 1e-3  # PLD value discretization; dp_accounting's PLD is pessimistic, so eps (hence sigma_needed) is
    #              an upper estimate (at 1e-4 the ratio sigma_needed / printed agrees to 7 digits here)
    vals = {
        "sigma_printed": mech.sigma_paper,
        "sigma_needed_pld": acc.sigma_needed(mech, None, "pld", pld_discretization=disc),
        "eps_pld": acc.epsilon(mech, "pld", pld_discretization=disc),
        "eps_rdp": acc.epsilon(mech, "rdp"),
        "eps_zcdp": acc.zcdp_to_dp(mech.rho(1.0), q["delta"]),
    }
    reps = np.asarray(replicates, dtype=np.int64)
    ds = xr.Dataset(coords={REPLICATE: reps})
    for k, v in vals.items():
        ds[k] = (REPLICATE, np.full(reps.size, float(v)), {"long_name": k, "units": "1"})
    ds.attrs.update(relation="replace-one sensitivity 4G/n (P2's DP: databases differing in one entry)",
                    note=mech.note, pld_discretization=disc)
    return ds
