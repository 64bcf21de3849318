"""P4 (Wang, Lei, Ying, Zhou: DP-SGD with low noise): stability (studies ``p4_lemma14a``,
``p4_lemma19a``, ``p4_lemma18``).

Lemma 14(a) / 19(a) (studies ``p4_lemma14a``, ``p4_lemma19a``: on-average stability against the
bound at the measured sum_j eta_j^2 E[F_S(w_j)]) are judged by the generic overlay check (``[check]`` in the study file; ``stabsim.analyses.overlay``).

Check ``p4_lemma18``
    Lemma 18: the largest one-step expansion ||w - eta df(w) - w' + eta df(w')||^2 - ||w - w'||^2
    found by the kind ``p4_expansion`` (:mod:`stabsim.experiments.p4_expansion`) vs
    Mbar^2 eta^{2/(1-alpha)} (printed and corrected constants, errata P4-E2).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from stabsim.engine.measures import REPLICATE

from stabsim.judging.rules import check_bound
from stabsim.registry import register_check
from stabsim.analyses.base import CheckResult, sweep_slices


# ---- Lemma 18: one-step expansion of the gradient map (Hoelder losses) -----------------------------

@register_check("p4_lemma18", description="P4 Lemma 18: largest one-step expansion found vs Mbar^2 eta^{2/(1-alpha)}")
def check_lemma18(spec, ds) -> CheckResult:
    from stabsim.theory import get

    res = CheckResult()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for label, params, sub in sweep_slices(spec, ds, consumed=("eta",)):
        etas = sub["eta"].values.astype(float) if "eta" in sub.dims else np.array([params["expansion"]["eta"]])
        alpha, L = float(sub["alpha"].values.max()), float(sub["L_holder"].values.max())
        worst = sub["expansion"].max(REPLICATE).values.reshape(-1)
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(etas, np.where(worst > 0, worst, np.nan), "ko-", label="largest expansion found")
        for key in ("P4.Lemma18.expansion.printed", "P4.Lemma18.expansion.corrected"):
            bound = np.array([float(get(key)(alpha=alpha, L=L, eta=e)) for e in etas])
            m = xr.Dataset({"estimate": ("eta", worst), "lower": ("eta", worst), "upper": ("eta", worst)},
                           coords={"eta": etas},
                           attrs={"quantity": "step_expansion", "n_replicates": int(sub.sizes[REPLICATE]), "level": 1.0})
            v = check_bound(m, bound, "EXPLICIT", key=key,
                            notes=[f"alpha = {alpha:g}, L = {L:.4g} (Hoelder constant of {params['expansion']['alpha_loss']})",
                                   "measure = the largest value over all sampled triples (a lower estimate of the sup: "
                                   "'holds' means no counterexample was found)"])
            expl = None if v.ok else ("a sampled triple expands more than the bound allows: " + "; ".join(v.notes)
                                      + (" (printed constant, P4-E2)" if key.endswith("printed") else ""))
            ax.plot(etas, bound, "--", label=f"{key[3:]} ({v.verdict})")
            res.add(v, label=label or None, explanation=expl, figure=None)
            res.measured[f"{key}: max tightness{' (' + label + ')' if label else ''}"] = float(np.nanmax(worst / bound))
        ax.set_xscale("log"); ax.set_yscale("log"); ax.set_xlabel("eta"); ax.set_ylabel("expansion")
        if np.any(worst <= 0):  # no expansion found at some eta: marked on the axis, not drawn at 1e-16
            from stabsim.judging.plots import mark_nonpositive

            mark_nonpositive(ax, etas, worst, color="k", line=False, label="largest expansion found <= 0")
        ax.set_title(f"P4 Lemma 18, {params['expansion']['alpha_loss']} (alpha = {alpha:g}, L = {L:.3g})", fontsize=9)
        ax.legend(fontsize=7)
        name = res.figure(f"lemma18_{''.join(ch if ch.isalnum() else '-' for ch in label) or 'all'}", fig)
        for i in range(len(res.verdicts) - 2, len(res.verdicts)):
            res.links[i] = name
    res.notes.append("Lemma 18 is deterministic; the measure is the largest expansion over random and kink-straddling "
                     "triples, so 'holds' certifies only that no counterexample was found.  At alpha = 0 the corrected "
                     "constant gives L^2 eta^2; for one f(.; z) the gradient jumps by at most sup||dm/dw|| = L/2 (the "
                     "package's hinge constant L = 2 sup||dm/dw|| also covers gradients at different data), so the "
                     "largest possible expansion is L^2 eta^2 / 4 and a tightness near 0.25 means the sampler finds "
                     "the worst case.")
    return res
