"""Tightness of stability bounds: the searched worst-case neighbour (kind ``p1_tightness``) against the bound.

Check ``p1_tightness`` (studies ``p1_thm4_tightness`` (non-smooth hinge, P1.Thm4.uas), ``p1_thm5_tightness``
(smooth logistic, P1.Thm5.uas), ``p0_thm1_tightness`` (P0 Alg. 1, the (1-gamma)-quantile bound
P0.Eq9.avg.proof of Thm 1) and ``p4_lemma19a_tightness`` (P4 Alg. 2, the on-average bound P4.Lemma19a.onavg);
the key comes from ``[bounds] keys``, one of ``THEOREMS``)
    Per cell: (1) ``check_bound`` of the theorem's measure (``THEOREMS``: the mean or the (1-gamma)-quantile
    of ||A_t(S) - A_t(S')||, or E||A_t(S) - A_t(S')||^2 for P4's on-average stability) of the neighbour the
    theorem speaks of -- the searched worst case for a uniform bound, the on-average neighbour "fresh"
    (k random, i.i.d. replacement, conditional on the study's S) for P4 -- against the bound; the row
    carries (CI lower end)/bound (``lower_tightness_max``), and the largest fresh lower CI end of all
    neighbours over the bound, at T and over t, is reported in ``measured``.  (2) ``check_rate`` of the
    searched worst case's growth in t against the bound's leading term in t (P1 Thm 4: sqrt(t), exponent
    0.5; P1 Thm 5: t; P0 Thm 1: its ln(et) t/n term, exponent 1 with a log factor; kind "upper"; none for
    P4's measured-input bound).
    (3) Searched vs hand-picked on the same fresh replicate ids: the paired difference
    searched - max(flip, farthest) at T with its CI (means), or the CIs side by side (quantiles).
    (4) With ``[lower_bound] instance``: the instance (``stabsim.engine.lower_bounds``) against the bound at its
    own n, eta, G (a second row) and its exponent in t over the instance's window against sqrt(t) (a third
    row), next to the event model's prediction.  One figure: bound, flip, farthest, fresh and the searched
    worst case against t (left), the lower-bound instance (right).
    Across cells (``across_cells``), when the study sweeps ``[algorithm] eta`` and/or ``[data] n`` (study
    ``p1_thm4_tightness_sweep``): per slice of the other axes, every neighbour's measure and the bound at
    the final T against eta (resp. n) on log-log axes, and ``check_rate`` of the checked neighbour's
    exponent in it against the bound's: 1 in eta (every bound here but P4's is linear in eta), in n the
    bound's own least-squares log-log slope over the swept n at T (P1 Thm 4: only its 2t/n term depends
    on n), computed from the bound -- not a rate the paper states.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, replace

import numpy as np
import xarray as xr

from stabsim.engine.measures import mean_ci, uas_mean, uas_quantile
from stabsim.setups.constants import cell_constants
from stabsim.setups.p1 import NEIGHBOURS, ON_AVERAGE
from stabsim.judging.rules import bound_slope, check_bound, check_rate, fit_slope
from stabsim.registry import register_check
from stabsim.analyses.base import CheckResult, cell_setting, constant_eta, figure_name, sweep_slices
from stabsim.analyses.tightness_figure import sweep_figure, tightness_figure


@dataclass(frozen=True)
class Theorem:
    """A bound the check knows: its name, the measure it bounds ("mean", "quantile" = the (1-gamma)-
    quantile, "mean_sq" = E||.||^2), the exponent in t of the term the rate is compared with (None: no
    rate), that term, the formula, a note on the fit, the neighbour the bound row checks, its tag."""

    name: str
    measure: str
    exponent: float | None
    term: str
    formula: str
    note: str
    checked: str = "searched"
    tag: str = "EXPLICIT"
    log_factors: str = ""
    eta_linear: bool = True  # the bound is linear in eta (exponent 1); else its slope in eta is measured

    @property
    def ylabel(self) -> str:
        return {"mean": "E ||A_t(S) - A_t(S')||", "quantile": "(1-gamma)-quantile of ||A_t(S) - A_t(S')||",
                "mean_sq": "E ||A_t(S) - A_t(S')||^2"}[self.measure]


THEOREMS = {
    "P1.Thm4.uas": Theorem("P1 Thm 4", "mean", 0.5, "sqrt(t)", "2 sqrt(e) G eta (sqrt(5t) + 2t/n)",
                           "exponent 0.5 = the sqrt(5t) term; the 2t/n term grows like t^1 and dominates for "
                           "t > 5 n^2 / 4"),
    "P1.Thm5.uas": Theorem("P1 Thm 5", "mean", 1.0, "t", "4 G eta t / n",
                           "exponent 1: the bound 4 G eta t / n is linear in t"),
    "P0.Eq9.avg.proof": Theorem("P0 Thm 1", "quantile", 1.0, "t ln(et) / n",
                                "2 sqrt(e) eta G sqrt(t + ln^2(et) (t/n + ln(1/g) + sqrt(2 t ln(1/g)/n))^2)",
                                "exponent 1 = the ln(et) t/n term, which dominates the bound once t ln(et)/n > sqrt(t) "
                                "(t > ~30 at n = 20); the sqrt(t) term never leads here (ln(1/g) ln(et) > sqrt(t) for "
                                "t < ~200 at g = 0.1)", log_factors="ln(et)"),
    "P4.Lemma19a.onavg": Theorem("P4 Lemma 19(a)", "mean_sq", None, "", "(16 L (1 + 2t/n) e / n) sum_j eta^2 "
                                 "E[F_S(w_j)] (measured)", "", checked="fresh", tag="EXPLICIT-DD", eta_linear=False),
}


def _measure(sub, name, thm, gamma):
    """The theorem's measure of one neighbour's fresh-replicate distances (estimate, lower, upper)."""
    one = sub.sel(neighbour=name).drop_vars("neighbour").assign_attrs(neighbour=name)
    if thm.measure == "mean":
        return uas_mean(one)
    if thm.measure == "quantile":
        return uas_quantile(one, gamma)
    out = mean_ci(one["dist_output"] ** 2)
    out.attrs.update(quantity="onavg_stability", neighbour=name)
    return out


def _bound(key, thm, t, n, eta, c, gamma, sub, notes):
    """The bound on t (P4: at the measured sum_j eta^2 E[F_S(w_j)], the CI lower end floored at 0)."""
    from stabsim.theory import get

    if key.startswith("P1."):
        return np.asarray(get(key)(t=t, n=n, eta=eta, G=c["G"]), float)
    if key.startswith("P0."):
        return np.asarray(get(key)(T=t, n=n, eta=eta, G=c["G"], gamma=gamma), float)
    s = np.maximum(np.asarray(mean_ci(sub["eta2_loss_path"])["lower"].values, float), 0.0)
    notes.append("sum_j eta^2 E[F_S(w_j)] measured on this S (eta2_loss_path of the run on S, 95% CI lower end "
                 "floored at 0); the lemma bounds E_S of the on-average stability, here one S is fixed")
    return np.asarray([get(key)(n=n, L=c["L"], sum_eta2_EFS=float(si), T=float(ti), eta=eta)
                       for ti, si in zip(t, s)], float)


def _search_info(sub) -> dict:
    """The cell's search result: its per-cell variables ``search_*`` (kept in a sweep), else the
    attrs of the same names (data written before the variables existed)."""
    if "search_in_sample" not in sub:
        return {k: sub.attrs.get(f"search_{k}") for k in ("k", "y", "x", "evals", "t", "in_sample")}
    x = np.asarray(sub["search_x"].values, float)
    return {"k": int(sub["search_k"]), "y": float(sub["search_y"]), "x": " ".join(f"{v:.6g}" for v in x[np.isfinite(x)]),
            "evals": int(sub["search_evals"]), "t": int(sub["search_t"]), "in_sample": float(sub["search_in_sample"])}


def _search_note(sub):
    s = _search_info(sub)
    ins = np.nan if s["in_sample"] is None else s["in_sample"]
    return (f"found k={s['k']}, y'={s['y']}, x'=[{s['x']}] ({s['evals']} evaluations at t={s['t']}; in-sample "
            f"{float(ins):.4g})")


QUANTITY = {"mean": "uas_mean", "quantile": "uas_quantile", "mean_sq": "onavg_stability"}


def _rate(spec, key, thm, t, vals, bound, notes=()):
    """``check_rate`` of per-replicate values (R, len(t)) on the checkpoints where >= 10 % have diverged
    (the slope of their mean, also for a quantile bound: its rate in t is that of the mean here)."""
    use = (vals > 0).mean(axis=0) >= 0.1
    if thm.exponent is None or use.sum() < 3:
        return None
    return check_rate(t[use], vals[:, use], thm.exponent, "upper", key=key, quantity=QUANTITY[thm.measure],
                      bound_values=bound[use], seed=spec.seed, log_factors=thm.log_factors,
                      notes=[f"fit over t in [{t[use][0]:g}, {t[use][-1]:g}] ({int(use.sum())} checkpoints where "
                             ">= 10 % of replicates have diverged)", *notes])


def _rate_explanation(vr, thm, what="the worst case found"):
    if vr.verdict == "faster than claimed":
        return (f"{what} grows like t^{vr.slope:.2g} < t^{thm.exponent:g}: the {thm.term} term is not attained on "
                "this range (a lower estimate of the sup, so this does not prove the term loose)")
    if vr.verdict == "matches":
        return f"{what} grows like {thm.term}: the {thm.term} term of the bound is attained in rate"
    if vr.verdict == "inconsistent":
        return (f"{what} grows like t^{vr.slope:.2g}, faster than {thm.term}: "
                + ("the t/n term (or the " if thm.exponent < 1 else "the (") + "start-up of the divergence) "
                "dominates on this range")
    return "the slope fit is inconclusive: " + "; ".join(vr.notes)


def _searched_vs_hand_picked(sub, thm, curves, sfx, res):
    """Searched - max(flip, farthest) at T on the same fresh ids: a paired CI (means), or the CIs."""
    hand = [nm for nm in curves if nm not in ("searched",) + ON_AVERAGE]
    if "searched" not in curves or not hand:
        return
    T = float(sub["t"].values[-1])
    best = max(hand, key=lambda nm: float(curves[nm]["estimate"][-1]))
    if thm.measure == "quantile":
        s_, b_ = curves["searched"], curves[best]
        res.measured[f"searched vs {best} (best hand-picked) at T={T:g}: estimates and CIs" + sfx] = (
            f"{float(s_['estimate'][-1]):.4g} [{float(s_['lower'][-1]):.4g}, {float(s_['upper'][-1]):.4g}] vs "
            f"{float(b_['estimate'][-1]):.4g} [{float(b_['lower'][-1]):.4g}, {float(b_['upper'][-1]):.4g}]")
        if float(s_["upper"][-1]) < float(b_["estimate"][-1]):
            res.notes.append(f"{sfx.strip(' ()') or 'cell'}: the hand-picked {best} beats the searched neighbour at T "
                             "(the search missed it: raise [search] max_evals / screen)")
        return
    p = 2 if thm.measure == "mean_sq" else 1
    last = sub["dist_output"].isel(t=-1)
    diff = mean_ci(last.sel(neighbour="searched") ** p - last.sel(neighbour=best) ** p)
    lo, est, hi = (float(diff[v]) for v in ("lower", "estimate", "upper"))
    res.measured[f"searched - {best} (best hand-picked) at T={T:g}, paired on fresh ids" + sfx] = est
    res.measured[f"searched - {best} at T={T:g}: 95% CI" + sfx] = f"[{lo:.4g}, {hi:.4g}]"
    if hi < 0:
        res.notes.append(f"{sfx.strip(' ()') or 'cell'}: the hand-picked {best} beats the searched neighbour at T "
                         "(paired CI below 0; the search missed it: raise [search] max_evals / screen)")


@register_check("p1_tightness", description="searched worst-case UAS vs the bound (P1 Thm 4/5, P0 Thm 1, P4 "
                                           "Lemma 19a) and vs its growth in t; lower-bound instance")
def check_tightness(spec, ds) -> CheckResult:
    """Tightness: the searched worst case against the bound and its growth in t (module docstring)."""
    res = CheckResult()
    keys = [k for k in spec.bounds.get("keys", []) if k in THEOREMS]
    if len(keys) != 1:
        raise ValueError(f"[bounds] keys must name exactly one of {', '.join(THEOREMS)}")
    key = keys[0]
    thm = THEOREMS[key]
    gamma = spec.bounds.get("gamma")
    gamma = 0.05 if gamma is None else float(gamma)
    for label, params, sub in sweep_slices(spec, ds, consumed=("neighbour",)):
        _cell(spec, res, key, thm, gamma, label, params, sub)
    across_cells(spec, ds, res, key, thm, gamma)
    if any(a in spec.sweep for a in ("eta", "n")):
        res.notes.append("eta or n is swept: the rows across cells compare the exponents in eta and n; no per-cell "
                         "exponent in t (the short runs sit in the start-up of the divergence; the exponent in t "
                         "is the job of the unswept tightness studies).")
    res.notes.append("the searched neighbour is chosen on search replicate ids 0..R-1 (common random numbers) and "
                     "evaluated on disjoint fresh ids, so its fresh CI lower end is a valid lower estimate of the "
                     "sup over neighbours of the measure for this S; hand-picked neighbours draw k per replicate.")
    res.notes.append("three notions on the same S and the same algorithm randomness: the searched worst case (uniform "
                     "stability, a sup over neighbours), the typical neighbours flip / farthest (k random), and the "
                     "on-average one (k random, the replacement an i.i.d. draw: P4 Def. 6 conditional on S); the "
                     "measured inputs give their ratio at T.")
    return res


def tightness_trivial(c, eta, t, measure: str, sigma=0.0) -> tuple[np.ndarray | None, str]:
    """(trivial bound of the twin runs' distance at the steps ``t`` (squared for a ``mean_sq`` measure), note), or
    (None, why).  The diameter 2R of W when it is bounded; and, with a finite G and no gradient noise, the path
    bound 2 eta G t: both runs start at the same w_0 and each step (one pair's gradient, or an average of pair
    gradients, of norm <= G; the searched x' lies in the ball of radius kappa, so G still holds; a projection is
    non-expansive) moves them apart by at most 2 eta G, and an average of iterates is no farther apart than
    the farthest of them.  The smaller of the two, squared for E||.||^2."""
    from stabsim.judging.rules import coupled_distance_cap

    what = []
    if np.isfinite(c["radius"]):
        what.append(f"diameter 2R = {2 * c['radius']:g}")
    noisy = bool(sigma) and float(sigma) != 0.0
    walk = np.isfinite(c["G"]) and not noisy
    if walk:
        what.append(f"2 eta G t (eta G = {eta * c['G']:.3g})")
    triv = coupled_distance_cap(t, diameter=2.0 * c["radius"], eta=eta if walk else None, G=c["G"])
    if triv is None:
        return None, ("no trivial bound: W is unbounded and " + ("the run adds gradient noise" if noisy and
                                                                np.isfinite(c["G"]) else "G is infinite"))
    sq = measure == "mean_sq"
    return triv ** (2 if sq else 1), ("trivial bound: " + ("(min of " if len(what) > 1 else "(")
                                      + ", ".join(what) + ")" + ("^2" if sq else ""))


def _cell(spec, res, key, thm, gamma, label, params, sub):
    """One cell: bound row, rate row, searched vs hand-picked, lower-bound instance rows, figure."""
    c = cell_constants(params)
    eta, n = constant_eta(params), params["data"]["n"]
    t = sub["t"].values.astype(float)
    notes = [f"G = {c['G']:.4g}, L = {c['L']:.4g} ({c['loss']}, kappa = {c['kappa']:.4g})", _search_note(sub)]
    bound = _bound(key, thm, t, n, eta, c, gamma, sub, notes)
    curves = {nm: _measure(sub, nm, thm, gamma) for nm in NEIGHBOURS if nm in sub["neighbour"].values}
    triv, triv_note = tightness_trivial(c, eta, t, thm.measure, params["algorithm"].get("sigma", 0.0))
    vb = check_bound(curves[thm.checked], bound, thm.tag, key=key, trivial_bound=triv, notes=notes + [triv_note])
    vals = sub["dist_output"].sel(neighbour="searched").transpose("replicate", "t").values
    # a study sweeping eta or n compares exponents across cells; its short per-cell runs (T ~ 100)
    # sit in the start-up of the divergence, where a slope in t says nothing about the sqrt(t) term
    # (p1_thm4_tightness checks that), so no per-cell rate row there
    swept = any(a in spec.sweep for a in ("eta", "n"))
    vr = None if swept else _rate(spec, key, thm, t, vals, bound, notes=[thm.note])
    lb = _lower_bound(spec, res, key, thm, params, sub, label)
    fig = functools.partial(tightness_figure, t, curves, bound, [vb] + ([vr] if vr else []),   # drawn when saved
                            f"{thm.name} tightness: searched worst case vs hand-picked neighbours\n"
                            + cell_setting(params), thm, thm.ylabel, lower_bound=lb)
    figname = res.figure(figure_name(key.replace(".uas", "").replace(".onavg", "") + ".tightness", label), fig)
    lbl = label or None
    expl = None
    if not vb.ok:
        expl = (f"the {thm.checked} neighbour (fresh replicates) is not certified below the bound: "
                + "; ".join(vb.notes))
    res.add(vb, figure=figname, label=lbl, explanation=expl)
    if vr is not None:
        res.add(vr, figure=figname, label=lbl, explanation=_rate_explanation(vr, thm))
    if lb is not None:
        names = ("lower-bound instance", "lower-bound instance, per-iterate rate")
        for v, nm in zip(lb["verdicts"], names):
            expl = _rate_explanation(v, thm, "the lower-bound instance") if v.kind else None
            res.add(v, figure=figname, label=f"{label}, {nm}" if label else nm, explanation=expl)
    _measured(res, sub, thm, curves, bound, c, label)


def _measured(res, sub, thm, curves, bound, c, label):
    sfx = f" ({label})" if label else ""
    t = sub["t"].values.astype(float)
    T = t[-1]
    # the notion the bound speaks of: every neighbour for a uniform bound, the on-average one for P4
    same = [nm for nm in curves if thm.checked == "searched" or nm == thm.checked]
    what = "best lower estimate" if thm.checked == "searched" else f"{thm.checked} (on-average) lower CI end"
    res.measured[f"{what} / bound at T" + sfx] = max(float(curves[nm]["lower"][-1]) for nm in same) / float(bound[-1])
    res.measured[f"max over t of {what} / bound" + sfx] = float(
        np.max(np.max([curves[nm]["lower"].values for nm in same], axis=0) / bound))
    if thm.checked != "searched":
        res.measured["searched (uniform) lower CI end / on-average bound at T" + sfx] = \
            float(curves["searched"]["lower"][-1]) / float(bound[-1])
    for nm in curves:
        res.measured[f"{nm} at T={T:g}" + sfx] = float(curves[nm]["estimate"][-1])
    _searched_vs_hand_picked(sub, thm, curves, sfx, res)
    if "fresh" in sub["neighbour"].values:
        sq = (sub["dist_output"].sel(neighbour="fresh") ** 2).isel(t=-1)
        res.measured[f"on-average stability E||A(S) - A(S^(i))||^2 at T={T:g} (k random, i.i.d. z')" + sfx] = \
            float(sq.mean())
        res.measured[f"searched / on-average ({thm.measure}) at T={T:g}" + sfx] = \
            float(curves["searched"]["estimate"][-1]) / max(float(curves["fresh"]["estimate"][-1]), 1e-300)
    res.measured[f"bound at T={T:g}" + sfx] = float(bound[-1])
    ins = _search_info(sub)["in_sample"]
    res.measured["search in-sample at T" + sfx] = np.nan if ins is None else float(ins)
    res.measured["G" + sfx] = c["G"]
    if thm.measure != "mean_sq" and np.isfinite(c["radius"]) and bool((bound > 2 * c["radius"]).any()):
        t_cross = float(t[np.argmax(bound > 2 * c["radius"])])
        res.notes.append(f"{label or 'cell'}: ||A_t(S) - A_t(S')|| never exceeds the diameter 2R = "
                         f"{2 * c['radius']:g} of W, which the bound passes at t = {t_cross:g}: beyond it the "
                         "bound cannot be attained and the growth in t is capped by the projection")


def lower_bound_trivial(inst, t) -> tuple[np.ndarray, str]:
    """(trivial bound of E||A_t(S) - A_t(S')|| on the lower-bound instance at the steps ``t``, note).  W = R^d has
    no diameter, but both runs start at the same w_0 and take t steps of constant size eta along subgradients of
    one pair's loss, of norm <= G (``inst.G`` is the sup of ||x - x'|| over the +/- pairs of S and S', the
    AUC hinge's Lipschitz constant; same-label pairs have zero gradient), so ||w_j - w'_j|| <= 2 eta G j <= 2 eta G t
    for j <= t, and P1's output, an average of such w_{j-2}, is within 2 eta G t as well."""
    from stabsim.judging.rules import coupled_distance_cap

    triv = coupled_distance_cap(t, eta=inst.eta, G=inst.G)
    return triv, (f"trivial bound: 2 eta G t (coupled runs from one w_0, steps of norm <= eta G = "
                  f"{inst.eta * inst.G:.3g}; W = R^d has no diameter)")


def _lower_bound(spec, res, key, thm, params, sub, label):
    """The ``[lower_bound]`` instance's rows and panel (None when the study runs none): its mean
    distance against the bound at the instance's n, eta, G, and its exponent in t over the
    instance's window against sqrt(t), beside the event model's prediction."""
    from stabsim.engine.lower_bounds import get_instance
    from stabsim.theory import get

    lbp = params.get("lower_bound", {})
    if lbp.get("instance", "none") == "none" or "lb_dist_output" not in sub:
        return None
    inst = get_instance(lbp["instance"], n=lbp["n"], hubs=lbp["hubs"], eta=lbp["eta"])
    tl = sub["lb_t"].values.astype(float)
    per = sub["lb_dist_output"].rename(lb_t="t").transpose("replicate", "t")
    m = mean_ci(per)
    m.attrs.update(quantity="uas_mean", neighbour=f"lower-bound instance {inst.name}")
    bound = np.asarray(get(key)(t=tl, n=inst.n, eta=inst.eta, G=inst.G), float)
    triv, triv_note = lower_bound_trivial(inst, tl)   # W = R^d: no diameter, but <= 2 eta G t
    vb = check_bound(m, bound, "EXPLICIT", key=key, trivial_bound=triv,
                     notes=[inst.reference, f"G = {inst.G:g}, n = {inst.n}, eta = {inst.eta:g}, W = R^d; {inst.rate}",
                            triv_note])
    hi = min(inst.fit_to, tl[-1])
    use = (tl >= inst.fit_from) & (tl <= hi)
    exp = inst.expected(tl.astype(np.int64), samples=2000, seed=spec.seed)
    vr = None
    sfx = f" ({label})" if label else ""
    if use.sum() >= 3:
        # the rate row: the per-iterate distance, whose exact expected curve is t^(1/2) on the window up
        # to ~0.01 (the output's, averaged from j = 1, keeps an onset transient: reported beside it)
        slopes = {v: float(np.polyfit(np.log(tl[use]), np.log(exp[v][use]), 1)[0]) for v in ("output", "iterate")}
        it = sub["lb_dist_iterate"].transpose("replicate", "lb_t").values[:, use]
        vr = check_rate(tl[use], it, inst.exponent, "upper", key=key, quantity="", bound_values=bound[use],
                        seed=spec.seed,
                        notes=[f"per-iterate ||w_t - w'_t|| of the instance over t in [{tl[use][0]:g}, {tl[use][-1]:g}] "
                               f"(from 10 x the mean onset time to before its pieces run out; its event model's slope "
                               f"there: {slopes['iterate']:.3g}); {inst.rate}"])
        vr = replace(vr, quantity="iterate_dist")
        out = fit_slope(tl[use], per.values[:, use], seed=spec.seed)
        res.measured["lower-bound instance: output exponent over the window (CI) vs its event model" + sfx] = \
            f"{out.slope:.3g} [{out.lower:.3g}, {out.upper:.3g}] vs {slopes['output']:.3g}"
        res.measured[f"lower-bound instance: iterate exponent in t over [{tl[use][0]:g}, {tl[use][-1]:g}]" + sfx] = \
            float(vr.slope)
    else:
        res.notes.append(f"lower-bound instance{sfx}: its growth window [{inst.fit_from}, {min(inst.fit_to, tl[-1]):g}] "
                         "holds fewer than 3 checkpoints, no rate fit: raise [lower_bound] n and T (T > 10 n / 2)")
    Tl = tl[-1]
    res.measured[f"lower-bound instance {inst.name} at T={Tl:g}" + sfx] = float(m["estimate"][-1])
    res.measured[f"lower-bound instance: event model (expected) at T={Tl:g}" + sfx] = float(exp["output"][-1])
    res.measured[f"lower-bound instance: lower CI end / bound at T={Tl:g}" + sfx] = float(m["lower"][-1]) / float(bound[-1])
    return {"name": inst.name, "t": tl, "measure": m, "bound": bound, "expected": exp["output"],
            "verdicts": [vb] + ([vr] if vr else []), "fit": (inst.fit_from, hi),
            "title": f"lower-bound instance {inst.name!r} (BFGT 2020 mechanism): n={inst.n}, hubs={lbp['hubs']}, "
                     f"eta={inst.eta:g}, G={inst.G:g}, W=R^d\n{inst.rate}"}


# ---- across cells: the worst case at T against eta and against n --------------------------------

#: the swept variables the check fits across cells: name -> the (section, key) of the study file
ACROSS = {"eta": ("algorithm", "eta"), "n": ("data", "n")}


def across_cells(spec, ds, res, key, thm, gamma):
    """For each of eta, n (``ACROSS``) that the study sweeps over >= 2 numeric values: per slice of
    the other axes, ``_across`` (the measure at T against it, its exponent vs the bound's)."""
    for var, where in ACROSS.items():
        axis = next((a for a, sk in spec.axes.items() if sk == where and a in ds.dims), None)
        if axis is None or ds.sizes[axis] < 2:
            continue
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in spec.sweep[axis]):
            res.notes.append(f"across {var}: the swept values are not all numbers (a schedule?), no fit in {var}")
            continue
        for label, params, sub in sweep_slices(spec, ds, consumed=("neighbour", axis)):
            _across(spec, res, key, thm, gamma, var, axis, label, params, sub)


def _at_T(spec, key, thm, gamma, var, axis, params, sub):
    """Per swept value (ascending): the bound at T, each neighbour's measure at T and its
    per-replicate values at T (its distance, squared for E||.||^2), (R, len(x)) per neighbour."""
    sec, k = spec.axes[axis]
    xs = sorted(v.item() if hasattr(v, "item") else v for v in sub[axis].values)
    bound, meas, per, T = [], {}, {}, None
    for v in xs:
        cell = sub.sel({axis: v}).dropna("t", how="all", subset=["dist_output"])
        p = copy.deepcopy(params)
        p[sec][k] = v
        c = cell_constants(p)
        t = cell["t"].values.astype(float)
        if T is not None and t[-1] != T:
            raise ValueError(f"across {var}: the cells end at different T ({T:g}, {t[-1]:g})")
        T = t[-1]
        bound.append(float(_bound(key, thm, t, p["data"]["n"], constant_eta(p), c, gamma, cell, [])[-1]))
        for nm in NEIGHBOURS:
            if nm in cell["neighbour"].values:
                meas.setdefault(nm, []).append(_measure(cell, nm, thm, gamma).isel(t=-1, drop=True))
                last = cell["dist_output"].sel(neighbour=nm).isel(t=-1).transpose("replicate").values
                per.setdefault(nm, []).append(last ** (2 if thm.measure == "mean_sq" else 1))
    x = np.asarray(xs, float)
    curves = {nm: xr.concat(m, dim=xr.DataArray(x, dims=var)) for nm, m in meas.items()}
    return x, float(T), np.asarray(bound), curves, {nm: np.stack(v, axis=1) for nm, v in per.items()}


def _bound_exponent(thm, var, x, bound):
    """The bound's exponent in ``var`` and where it comes from."""
    slope = bound_slope(x, bound)
    if var == "eta" and thm.eta_linear:
        return 1.0, (f"the bound's exponent in eta: 1 ({thm.name}: {thm.formula} is linear in eta; its log-log "
                     f"slope over the swept eta at T: {slope:.4g})")
    what = ("only the 2t/n term depends on n, so it lies in (-1, 0)" if thm.name == "P1 Thm 4" else
            "the bound's own dependence on n at T")
    return slope, (f"the bound's exponent in {var} at T: {slope:.3g}, its own least-squares log-log slope over the "
                   f"swept {var} (computed from the bound at T, {what}; not a rate the paper states)")


def _across(spec, res, key, thm, gamma, var, axis, label, params, sub):
    """One slice: the theorem's measure of every neighbour and the bound at T against ``var``, the
    ``check_rate`` of the checked neighbour's exponent in ``var`` against the bound's (paired bootstrap
    over the replicate ids: every cell runs the same fresh ids, so the tuples over cells are i.i.d. in r)."""
    x, T, bound, curves, pers = _at_T(spec, key, thm, gamma, var, axis, params, sub)
    nm = thm.checked
    per = pers[nm]
    sfx = f" ({label})" if label else ""
    what = {"searched": "searched worst case", "fresh": "on-average neighbour (fresh)"}.get(nm, nm)
    if (per.mean(axis=0) <= 0).any():
        res.notes.append(f"across {var}{sfx}: the {what} has not diverged at T for some {var}, no exponent fit")
        return
    a, src = _bound_exponent(thm, var, x, bound)
    try:
        vr = check_rate(x, per, a, "upper", key=key, quantity=QUANTITY[thm.measure], bound_values=bound,
                        seed=spec.seed, notes=[f"{what} at T={T:g} against {var} = {', '.join(f'{v:g}' for v in x)}",
                                               src, "bootstrap paired over the fresh replicate ids, which every cell runs"
                                               + (" (the slope of the mean, also for the quantile bound)"
                                                  if thm.measure == "quantile" else "")])
    except ValueError as e:  # too few diverged replicates for a log-log fit
        res.notes.append(f"across {var}{sfx}: no exponent fit ({e})")
        return
    if var == "eta" and thm.eta_linear and vr.slope_upper - vr.slope_lower < 1e-4:
        vr = vr.uninformative(
            f"holds by construction: the {what} is exactly proportional to eta (slope CI width "
            f"{vr.slope_upper - vr.slope_lower:.1g}), as it is whenever the loss stays in its linear region: "
            "the gradients then do not depend on eta, so the gap is eta times an eta-free sum and the exponent 1 "
            "follows from the update rule, not from the data")
    others = {}
    for o, po in pers.items():
        if o != nm and (po.mean(axis=0) > 0).all():
            try:
                f = fit_slope(x, po, seed=spec.seed)
            except ValueError:
                continue
            others[o] = f"{f.slope:.3g} [{f.lower:.3g}, {f.upper:.3g}]"
    shown = copy.deepcopy(params)
    shown[spec.axes[axis][0]][spec.axes[axis][1]] = f"{x[0]:g}..{x[-1]:g}"
    fig = functools.partial(sweep_figure, x, var, curves, bound, vr, thm, a,   # drawn when saved
                            f"{thm.name} tightness at T={T:g} against {var}: {what} vs hand-picked neighbours\n"
                            + cell_setting(shown))
    figname = res.figure(figure_name(key.replace(".uas", "").replace(".onavg", "") + f".tightness_vs_{var}", label), fig)
    res.add(vr, figure=figname, label=(f"{label}, " if label else "") + f"across {var} at T={T:g}",
            explanation=_across_explanation(vr, var, a, what))
    res.measured[f"{what}: exponent in {var} at T={T:g} (95% CI)" + sfx] = \
        f"{vr.slope:.3g} [{vr.slope_lower:.3g}, {vr.slope_upper:.3g}]"
    res.measured[f"bound: exponent in {var} at T={T:g}" + sfx] = a
    if var == "eta" and thm.eta_linear:
        res.measured[f"bound: log-log slope in eta over the sweep at T={T:g}" + sfx] = bound_slope(x, bound)
    if others:
        res.measured[f"hand-picked / on-average: exponents in {var} at T={T:g} (95% CI)" + sfx] = \
            "; ".join(f"{o} {v}" for o, v in others.items())
    res.measured[f"{var} values" + sfx] = [float(v) for v in x]
    res.measured[f"{what} at T={T:g} by {var}" + sfx] = [float(v) for v in curves[nm]["estimate"].values]
    res.measured[f"bound at T={T:g} by {var}" + sfx] = [float(v) for v in bound]


def _across_explanation(vr, var, a, what):
    if vr.verdict == "matches":
        return (f"the {what} scales like {var}^{vr.slope:.2g}, consistent with the bound's exponent {a:.3g} in {var}: "
                f"the bound's dependence on {var} is attained in rate")
    if vr.verdict == "faster than claimed":
        how = "grows more slowly" if a > 0 else "decays faster"
        return (f"the {what} {how} in {var} than the bound ({var}^{vr.slope:.2g} vs {var}^{a:.3g}): the bound's "
                f"{var}-dependence is not attained on this range (a lower estimate of the sup, so this does not "
                "prove it loose)")
    if vr.verdict == "inconsistent":
        how = "grows faster" if a >= 0 else "decays more slowly"
        return (f"the {what} {how} in {var} than the bound ({var}^{vr.slope:.2g} vs {var}^{a:.3g}) on this range; "
                "the bound itself is checked per cell (its own rows)")
    return "the slope fit is inconclusive: " + "; ".join(vr.notes)
