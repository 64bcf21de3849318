"""P2 (Kang, Liu, Li, Wang: sharper utility bounds for DP pairwise learning), Thm 1: the ``p2_thm1``
check, the printed noise of Alg. 1 against privacy accountants (``studies/p2_thm1_privacy.toml``; the
kind ``p2_privacy`` is in ``stabsim.experiments.p2_privacy``).

Check ``p2_thm1``
    Thm 1: sigma needed by the accountant (dp_accounting PLD, replace-one sensitivity 4G/n) vs the
    printed sigma.
"""

from __future__ import annotations

import dataclasses

import xarray as xr

from stabsim.engine.measures import REPLICATE
from stabsim.judging.rules import check_bound
from stabsim.registry import register_check
from stabsim.analyses.base import CheckResult, figure_name, sweep_slices
from stabsim.analyses.p2_measures import overlay


@register_check("p2_thm1", description="P2 Thm 1: accountant sigma needed for (eps, delta) vs the printed sigma")
def check_thm1(spec, ds) -> CheckResult:
    """P2 Thm 1 (CONDITION) on a ``p2_privacy`` study swept over T: holds iff the sigma the PLD
    accountant needs is below the printed sigma at every T."""
    from stabsim.theory import get

    res = CheckResult()
    if "P2.Thm1.sigma" not in spec.bounds.get("keys", []):
        raise ValueError("[bounds] keys must contain P2.Thm1.sigma")
    if "T" not in ds.dims:
        raise ValueError("p2_thm1 needs a [sweep] T")
    b = get("P2.Thm1.sigma")
    for label, params, sub in sweep_slices(spec, ds, consumed=("T",)):
        q = params["privacy"]
        Ts = sub["T"].values.astype(float)
        need = sub["sigma_needed_pld"].isel({REPLICATE: 0}, drop=True)
        m = xr.Dataset({"estimate": need, "lower": need, "upper": need})
        m.attrs.update(quantity="noise_sigma", n_replicates=1, level=1.0,
                       note="smallest sigma with PLD-accountant epsilon <= eps (deterministic)")
        printed = b(T=Ts, n=q["n"], G=q["G"], eps=q["eps"], delta=q["delta"])
        v0 = check_bound(m, printed, "EXPLICIT", quantity="noise_sigma",
                         notes=["CONDITION: holds iff sigma_needed (dp_accounting PLD, T-fold Gaussian, replace-one "
                                "sensitivity 4G/n) < printed sigma at every T"])
        v = dataclasses.replace(v0, key="P2.Thm1.sigma", tag="CONDITION")
        fig = overlay(res, figure_name("P2.Thm1.sigma", label), m, [(b, printed)], [v], f"n={q['n']}, G={q['G']}, "
                       f"eps={q['eps']}, delta={q['delta']}", x="T")
        res.add(v, figure=fig, label=label or None,
                explanation=None if v.ok else "the printed sigma is below what the accountant needs: " + "; ".join(v.notes))
        sfx = f" ({label})" if label else ""
        res.measured[f"eps_pld at printed sigma{sfx}"] = [float(x) for x in sub["eps_pld"].isel({REPLICATE: 0}).values]
        res.measured[f"eps_rdp at printed sigma{sfx}"] = [float(x) for x in sub["eps_rdp"].isel({REPLICATE: 0}).values]
        res.measured[f"eps zCDP cross-check{sfx}"] = [float(x) for x in sub["eps_zcdp"].isel({REPLICATE: 0}).values]
        res.measured[f"sigma_needed_pld / printed{sfx}"] = [float(x) for x in (need.values / printed)]
    res.notes.append("P2's DP relation is replacement (databases differing in one entry); sensitivity of the averaged "
                     "all-pairs gradient 4G/n; full batch, so no subsampling amplification (q = 1, errata P2-E4).")
    return res
