"""P0 (Yang, Lei, Lyu, Ying, AISTATS 2021): the concentration checks, Rademacher averages (Lemma 4 / 5,
``studies/p0_lem4_rademacher.toml``) and Hoeffding's inequality for U-statistics (Thm A.7,
``studies/p0_thmA7_hoeffding.toml``); the kinds are in ``stabsim.experiments.p0_concentration``.

Checks
    ``p0_rademacher``  Lemma 4 (EXPLICIT: mean over data sets of the MC estimate vs 2 D kappa / sqrt t,
                       4 G D kappa / sqrt t printed, 4 D kappa / sqrt t corrected) and Lemma 5 (RATE).

Thm A.7 (the (1-gamma)-quantile of R_S(w) - R(w) vs (M + G B) sqrt(ln(1/gamma)/n)) is judged by
the generic overlay check (``[check]`` in the study file; ``stabsim.analyses.overlay``).
"""

from __future__ import annotations

import numpy as np

from stabsim.engine.measures import REPLICATE, mean_ci

from stabsim.registry import register_check, twin_problem
from stabsim.judging.rules import check_bound, check_rate
from stabsim.analyses.base import CheckResult, figure_name, rate_explanation, sweep_slices
from stabsim.analyses.p0_measures import overlay, rate_figure

# ---- check p0_rademacher (Lemma 4 / 5) ---------------------------------------------------------

@register_check("p0_rademacher", description="P0 Lemma 4 (EXPLICIT) / Lemma 5 (RATE): Monte-Carlo Rademacher "
                                             "averages vs the bounds")
def check_rademacher(spec, ds) -> CheckResult:
    """P0 Lemma 4 (EXPLICIT, linear and AUC hinge classes) and Lemma 5 (RATE in t, nuclear ball) on a
    ``p0_rademacher`` study."""
    from stabsim.theory import get

    res = CheckResult()
    keys = spec.bounds.get("keys", [])
    D = spec.sections["rademacher"]["radius"]
    for label, params, sub in sweep_slices(spec, ds):
        pb = twin_problem(params["data"])
        kappa, dim = pb.kappa, pb.d
        G = 2 * kappa  # auc_hinge's parameter-Lipschitz constant
        t = sub["t"].values.astype(float)
        lab = (label + ", ") if label else ""
        setting = f"{pb.name} d={dim}, n={params['data']['n']}, D={D}"
        for cls, prefix in (("linear", "P0.Lem4.rademacher_linear"), ("auc_hinge", "P0.Lem4.rademacher_auc_hinge")):
            ks = [k for k in keys if k.startswith(prefix)]
            if not ks:
                continue
            m = mean_ci(sub["rad_" + cls].transpose(REPLICATE, "t"))
            m.attrs.update(quantity="rademacher", note=f"mean over data sets of the MC estimate of R_t ({cls})")
            bounds, verdicts = [], []
            exact = cls == "linear" or dim == 2
            for k in ks:
                kw = dict(t=t, D=D, kappa=kappa)
                if k.endswith("printed"):
                    kw["G"] = G
                b = get(k)(**kw)
                verdicts.append(check_bound(m, b, "EXPLICIT", key=k, notes=[
                    f"kappa = sup||x|| = {kappa:.4g}, D = {D} (radius)",
                    "supremum exact (closed form / d = 2 enumeration)" if exact else
                    "supremum by subgradient ascent (lower estimate): 'holds' does not certify"]))
                bounds.append((k, b))
            fig = overlay(res, figure_name(prefix, label), m, bounds, verdicts, setting)
            for v in verdicts:
                res.add(v, figure=fig, label=lab + cls + ("" if not v.key.endswith(("printed", "corrected"))
                                                          else ", " + v.key.rsplit(".", 1)[-1]),
                        explanation=None if v.ok else "Rademacher estimate above Lemma 4"
                        + (" as printed, 4 G D kappa/sqrt(t) with G = 2 kappa (errata P0-E14: the contraction "
                           "step needs the hinge's scalar Lipschitz constant 1, not G)" if v.key.endswith("printed")
                           else "") + ": " + "; ".join(v.notes))
            res.measured[f"R_t({cls}) at t={int(t[-1])}{' (' + label + ')' if label else ''}"] = float(m["estimate"][-1])
        if "P0.Lem5.rademacher_nuclear" in keys:
            k = "P0.Lem5.rademacher_nuclear"
            y = sub["rad_nuclear"].transpose(REPLICATE, "t").values
            Xs, _ = pb.sample(200000, spec.seed, 0, stream=7)
            nx2 = np.sum(Xs ** 2, axis=1)
            chi = float(np.linalg.eigvalsh((Xs * nx2[:, None]).T @ Xs / len(Xs)).max())
            b = get(k)(t=t, D=D, chi=chi, d=dim)
            v = check_rate(t, y, get(k).rate["t"], "upper", key=k, quantity="rademacher", paired=True, bound_values=b,
                           notes=[f"chi = ||E ||X||^2 X X^T||_op = {chi:.4g} (Monte Carlo, 2e5 draws)",
                                  "closed-form supremum (spectral norm, the dual of the nuclear norm)"])
            fig = rate_figure(res, figure_name(k, label), t, v.details, v, "rademacher", "t",
                               f"P0 Lemma 5: nuclear-ball class, slope in t ({setting})")
            res.add(v, figure=fig, label=lab + "nuclear, slope in t",
                    explanation=rate_explanation(v, "R_t decays more slowly than t^-1/2: " + "; ".join(v.notes)))
            res.measured["chi" + (f" ({label})" if label else "")] = chi
            if dim < 3:
                res.notes.append("Lemma 5 assumes d >= 3")
    res.notes.append("R_t (P0 Eq. (4)) is estimated per data set from Monte-Carlo draws of (anchor i, indices "
                     "i_1..i_t, signs); the CI is over data sets (a t-interval on the mean)")
    return res



