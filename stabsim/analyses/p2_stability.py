"""P2 (Kang, Liu, Li, Wang: sharper utility bounds for DP pairwise learning), Lemma 1: the ``p2_lemma1``
check, locally elastic stability of the ERM under removal (``studies/p2_lemma1_elastic.toml``; the kind
``p2_elastic`` is in ``stabsim.experiments.p2_stability``).

Check ``p2_lemma1``
    Lemma 1: slope in n of beta_n (exact removal: the ERM re-solved on D^{-i}) vs O(1/n).
"""

from __future__ import annotations

import numpy as np

from stabsim.engine.measures import REPLICATE, mean_ci
from stabsim.setups.p2 import NEIGHBOUR_NOTE
from stabsim.judging.rules import check_rate
from stabsim.registry import register_check
from stabsim.analyses.base import CheckResult, figure_name, rate_explanation, sweep_slices
from stabsim.analyses.p2_measures import overlay


@register_check("p2_lemma1", description="P2 Lemma 1: beta_n of ERM under removal vs O(1/n)")
def check_lemma1(spec, ds) -> CheckResult:
    """P2 Lemma 1 (RATE) on a ``p2_elastic`` study swept over n: the slope in n of the mean over D of
    max_i beta_n (exact leave-one-out), with the influence-function estimate (Eq. 4) beside it."""
    from stabsim.theory import get

    res = CheckResult()
    if "P2.Lemma1.beta" not in spec.bounds.get("keys", []):
        raise ValueError("[bounds] keys must contain P2.Lemma1.beta")
    if "n" not in ds.dims or ds.sizes["n"] < 2:
        raise ValueError("p2_lemma1 needs a [sweep] n with at least 2 values")
    b = get("P2.Lemma1.beta")
    for label, params, sub in sweep_slices(spec, ds, consumed=("n",)):
        ns = sub["n"].values.astype(float)
        sup_i = sub["beta_n"].max("k")                          # (replicate, n, estimator)
        exact = sup_i.sel(estimator="exact").transpose(REPLICATE, "n")
        infl = sup_i.sel(estimator="influence").transpose(REPLICATE, "n")
        m = mean_ci(exact)
        m.attrs.update(quantity="locally_elastic_beta",
                       note="mean over D of max over the K removed i of mean_pairs beta_n (exact leave-one-out)")
        bvals = b(n=ns)
        v = check_rate(ns, exact.values, -1.0, "upper", key="P2.Lemma1.beta", quantity="locally_elastic_beta",
                       paired=True, bound_values=bvals,
                       notes=[NEIGHBOUR_NOTE.replace("Alg. 1 re-run on D^{-i} with the same noise b_1..b_T",
                                                     "ERM re-solved on D^{-i} (stabsim.engine.elastic)"),
                              f"sup over z_i estimated by the max over K = {sub.sizes['k']} removed points "
                              "(a lower bound on the sup)"])
        mi = mean_ci(infl)
        fit_i = np.polyfit(np.log(ns), np.log(mi["estimate"].values), 1)[0]
        entries = [(b, bvals), ("influence-function estimate, Eq. (4) (not a bound)", mi["estimate"].values)]
        fig = overlay(res, figure_name("P2.Lemma1.beta", label), m, entries, [v, None],
                       f"ERM of {params['elastic']['loss']}, {params['data']['problem']}, d={params['data']['d']}",
                       ylabel="max_i mean_pairs β_n(z_i; z′, z″)  (removal)")
        expl = rate_explanation(v, "beta_n decays more slowly than 1/n on this range: " + "; ".join(v.notes))
        if v.verdict == "faster than claimed":
            expl = "consistent (decays at least as fast as 1/n) but the exponent itself is not attained"
        res.add(v, figure=fig, label=label or None, explanation=expl)
        sfx = f" ({label})" if label else ""
        res.measured[f"mean sup_i beta_n exact{sfx}"] = [float(x) for x in m["estimate"].values]
        res.measured[f"mean sup_i beta_n influence{sfx}"] = [float(x) for x in mi["estimate"].values]
        res.measured[f"slope of the influence estimate{sfx}"] = float(fit_i)
        lm = np.log(m["estimate"].values)
        res.measured[f"local slopes between successive n (exact){sfx}"] = [
            round(float(x), 3) for x in np.diff(lm) / np.diff(np.log(ns))]
        res.measured[f"median rel. error influence vs exact{sfx}"] = [float(x) for x in sub["rel_err"].median((REPLICATE, "k")).values]
        res.measured[f"max ERM certificate{sfx}"] = float(sub["erm_cert"].max())
    res.notes.append("Lemma 1 is about A*_D = argmin L(.; D) (no noise); the ERM is certified (stabsim.risk.erm).")
    res.notes.append("neighbour relation: REMOVAL (D^{-i} = D without z_i, n - 1 points, P2 Def. 6), exact "
                     "leave-one-out ERM re-solved on D^{-i} (stabsim.engine.elastic); the influence function (Eq. 4) is "
                     "shown beside it. beta_n is averaged over the ordered pairs of a fresh test sample.")
    return res
