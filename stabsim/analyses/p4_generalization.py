"""P4 (Wang, Lei, Ying, Zhou: DP-SGD with low noise): the remaining bounds on one DP-SGD setting
per study (studies ``p4_gen_point_smooth``, ``p4_gen_point_holder``, ``p4_gen_pair_smooth``,
``p4_gen_pair_holder``).

Check ``p4_more``
    On the kind ``p4_gen`` (:mod:`stabsim.experiments.p4_generalization`): generalization gap
    (Lemmas 13, 17, Thm 15), on-average stability (Lemmas 14(b), 19(b)), optimization error
    (Thm 16(b), Lemma 20) and the proof-derived explicit excess-risk bounds of Thm 3/6, each
    key evaluated at the lower 95% CI ends of its data-dependent inputs (:func:`applicable_keys`
    lists the keys of a pointwise/pairwise, smooth/Hoelder setting).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from stabsim.engine.measures import REPLICATE, mean_ci
from stabsim.setups.p4 import loss_of as _loss, radius_of as _radius, reference as _reference
from stabsim.registry import register_check, twin_problem
from stabsim.judging.rules import check_bound
from stabsim.analyses.base import CheckResult, sweep_slices


def _M(lossf, kappa) -> float:
    """M = sup_z ||df(0; z)|| (P4 Eq. (4) with the gradient reading P4-E1) for the linear-margin losses:
    |phi'(0)| sup ||dm/dw||; point_lsq: sup |y| ||x|| <= kappa (|y| <= 1)."""
    scale = lossf._data_scale(kappa)
    if lossf.name == "point_lsq":
        return kappa
    from stabsim.engine.losses import HINGE, LOGISTIC, QHINGE, SQUARED

    dphi = {HINGE: 1.0, LOGISTIC: 0.5, SQUARED: 2.0, QHINGE: lossf.q}[lossf.phi]
    return dphi * scale


def _loss_sup(lossf, kappa, R) -> float:
    """sup of f over the data and the l2 ball of radius R, with m = sup |margin|: 1 + m for the hinge and
    the logistic loss (phi(m) <= 1 + |m|), (1 + m)^q for the q-hinge, (1 + m)^2 for the squared losses.
    (``lossf.q`` is only meaningful for the q-hinge: every loss carries a default q = 2.)"""
    m = lossf._margin_range(kappa, R)
    name = lossf.name
    if "qhinge" in name:
        return (1.0 + m) ** lossf.q
    if "hinge" in name or "logistic" in name:
        return 1.0 + m
    return (1.0 + m) ** 2


def trivial_bound(qty: str, c) -> tuple[float | None, str]:
    """(the largest value the measured ``qty`` can take, a note) for one p4_gen cell, or (None, why) when W is
    unbounded.  Every P4 loss is >= 0 and at most S = ``_loss_sup`` on the ball of radius R (hinge, logistic:
    phi(m) <= 1 + |m|; q-hinge: (1 + |m|)^q; squared: (1 + |m|)^2; point_lsq with |y| <= 1: (w.x - y)^2 / 2
    <= (1 + kappa R)^2), and w_priv, every iterate w_j and every neighbour's output lie in W (projected), so:
    excess risk F(w_priv) - F(w_ref) <= S (F(w_ref) >= 0); optimization error (1/T) sum_j fhat_j(w_j) -
    fhat_j(w_ref) <= S; generalization gap F - F_S or the twin f(w(S^(k)); z_k) - f(w(S); z_k): |.| <= S;
    on-average stability ||w - w^(i)||^2 <= (2R)^2; sum_j eta_j^2 fhat_j(w_j) <= T eta_max^2 S."""
    import math

    R = c["R"]
    if not math.isfinite(R):
        return None, "no trivial bound: W is unbounded"
    S = _loss_sup(c["lossf"], c["kappa"], R)
    if qty in ("excess_risk", "opt_error", "gen_gap"):
        return S, f"trivial bound: the loss range sup f over W and the data = {S:.4g} (R = {R:g})"
    if qty == "onavg_stability":
        return (2 * R) ** 2, f"trivial bound: diameter^2 of W = {(2 * R) ** 2:.4g}"
    if qty == "eta2_weighted_train_risk":
        v = c["T"] * c["eta"] ** 2 * S
        return v, f"trivial bound: T eta^2 sup f = {v:.4g}"
    return None, ""


def _ci(values, quantity, mc_se=0.0):
    """Replicate mean with its 95% t-CI, widened by 1.96 ``mc_se`` on both sides: the Monte Carlo error of
    F(w_priv) comes from one test sample shared by all replicates, so it does not average out; the standard
    error of the replicate mean of the estimates is <= the mean of the per-w standard errors (Minkowski)."""
    m = mean_ci(xr.DataArray(np.asarray(values, float)[:, None], dims=(REPLICATE, "case"), coords={"case": [0]}))
    if mc_se > 0:
        m["lower"] = m["lower"] - 1.96 * mc_se
        m["upper"] = m["upper"] + 1.96 * mc_se
    m.attrs.update(quantity=quantity)
    return m


def _lo(values):
    """Lower end of the 95% CI of a replicate mean, floored at 0: the conservative plug-in for a bound that
    increases in the quantity (every EXPLICIT-DD input here)."""
    return max(float(_ci(values, "")["lower"].values[0]), 0.0)


_KEYS_POINT_SMOOTH = ("P4.Lemma13a.gen", "P4.Thm15a.gen", "P4.Lemma20.sum_eta2_FS",
                      "P4.Thm3.excess_explicit.printed", "P4.Thm3.excess_explicit.corrected")
_KEYS_POINT_HOLDER = ("P4.Lemma13b.gen", "P4.Lemma14b.onavg", "P4.Thm15b.gen", "P4.Thm16b.opt",
                      "P4.Lemma20.sum_eta2_FS")
_KEYS_PAIR_SMOOTH = ("P4.Lemma17a.gen", "P4.Lemma20.opt", "P4.Lemma20.sum_eta2_FS",
                     "P4.Thm6.excess_explicit.printed", "P4.Thm6.excess_explicit.corrected")
_KEYS_PAIR_HOLDER = ("P4.Lemma17b.gen", "P4.Lemma19b.onavg.printed", "P4.Lemma19b.onavg.corrected",
                     "P4.Lemma20.opt", "P4.Lemma20.sum_eta2_FS")


def applicable_keys(pairwise: bool, smooth: bool) -> tuple:
    """The P4 keys the ``p4_more`` check evaluates for a (pointwise/pairwise, smooth/Hoelder) setting."""
    return {(False, True): _KEYS_POINT_SMOOTH, (False, False): _KEYS_POINT_HOLDER,
            (True, True): _KEYS_PAIR_SMOOTH, (True, False): _KEYS_PAIR_HOLDER}[(pairwise, smooth)]


def _evaluate(key, sub, c):
    """(measured per-replicate values, quantity, bound value, notes) for one key on one cell."""
    from stabsim.theory import get

    b = get(key)
    n, T, eta, sig2 = c["n"], c["T"], c["eta"], c["sigma"] ** 2
    L, alpha, M, d = c["L"], c["alpha"], c["M"], c["d"]
    p = 2 * alpha / (1 + alpha)
    FS, F, nu = sub["FS_out"].values, sub["F_out"].values, sub["nu_out"].values
    c["mc_se"] = float(np.nanmean(sub["F_out_se"].values))
    e2 = sub["eta2_path"].values
    notes = []
    gen = F - FS
    twin = not c["pairwise"]
    if twin:  # pointwise: the twin estimator (no Monte Carlo error, much smaller variance), see p4_gen_cell
        gen = sub["gen_twin"].values
        notes.append("gen. gap measured by the twin estimator f(w_priv(S^(k)); z_k) - f(w_priv(S); z_k) (unbiased, "
                     f"k uniform); the direct F - F_S gives {np.mean(F - FS):.3g} (SE {np.std(F - FS) / np.sqrt(len(F)):.2g})")
    if alpha == 0:
        sum_pow, pow_note = T * eta ** 2, "alpha = 0: F_S^0 = 1, so sum_j eta_j^2 E[F_S^0(w_j)] = T eta^2 exactly"
    elif alpha < 1:
        B = c["fsup"]
        sum_pow = B ** (p - 1) * _lo(e2)
        pow_note = (f"sum_j eta_j^2 E[F_S^(2a/(1+a))(w_j)] >= B^((a-1)/(1+a)) sum_j eta_j^2 E[F_S(w_j)] (F_S <= B = "
                    f"{B:.4g} on the ball): this lower plug-in is conservative")
    else:
        sum_pow, pow_note = None, ""
    if key in ("P4.Lemma13a.gen", "P4.Lemma17a.gen"):
        bound = b(L=L, EFS=_lo(FS), nu=_lo(nu))
        notes.append("kappa = 'opt' (closed-form minimiser); E[F_S(w_priv)] and nu = lower 95% CI ends of the "
                     "replicate means (conservative)")
        return gen, "gen_gap", bound, notes
    if key == "P4.Thm15a.gen":
        bound = b(n=n, L=L, EFS=_lo(FS), sum_eta2_EFS=_lo(e2), T=T, eta=eta)
        notes.append("kappa = 'opt'; E[F_S(w_priv)] and sum eta^2 E[F_S(w_t)] = lower 95% CI ends (conservative)")
        return gen, "gen_gap", bound, notes
    if key == "P4.Lemma13b.gen":
        bound = b(alpha=alpha, L=L, EFS_pow=_lo(FS ** p), nu=_lo(nu), M=M)
        notes.append(f"alpha = {alpha:g}, M = {M:.4g}; kappa = 'opt'")
        return gen, "gen_gap", bound, notes
    if key == "P4.Lemma17b.gen":
        bound = b(alpha=alpha, L=L, EF_pow=_lo(np.maximum(F, 0) ** p), nu=_lo(nu), M=M)
        notes.append(f"alpha = {alpha:g}, M = {M:.4g}; kappa = 'opt'; E[Fbar^(2a/(1+a))(w_priv)] as printed (population)")
        return gen, "gen_gap", bound, notes
    if key == "P4.Thm15b.gen":
        bound = b(n=n, alpha=alpha, L=L, EFS_pow=_lo(FS ** p), sum_eta2_EFS_pow=sum_pow, T=T, eta=eta, M=M)
        notes.append(pow_note)
        return gen, "gen_gap", bound, notes
    if key in ("P4.Lemma14b.onavg", "P4.Lemma19b.onavg.printed", "P4.Lemma19b.onavg.corrected"):
        bound = b(n=n, alpha=alpha, L=L, sum_eta2_EFS_pow=sum_pow, T=T, eta=eta, M=M)
        notes.append(pow_note)
        notes.append("nu = replicate mean of ||w_priv(S) - w_priv(S^(i))||^2 (Def. 6 design: fresh S, uniform i, "
                     "fresh z'_i, shared indices and noise)")
        return nu, "onavg_stability", bound, notes
    if key in ("P4.Thm16b.opt", "P4.Lemma20.opt"):
        bound = b(alpha=alpha, L=L, sigma2=sig2, d=d, w_star_norm2=c["w2"], F_star=c["F_ref"], t=T, eta=eta, M=M)
        notes.append(f"measured: (1/T) sum_j [fhat_j(w_j) - fhat_j(w_ref)], unbiased for the theorem's eta-weighted "
                     f"average of E[F_S(w_j) - F_S(w_ref)]; w_ref: {c['ref_how']}, ||w_ref||^2 = {c['w2']:.4g}, "
                     f"F(w_ref) = {c['F_ref']:.4g}")
        return sub["path_gap"].values, "opt_error", bound, notes
    if key == "P4.Lemma20.sum_eta2_FS":
        bound = b(alpha=alpha, L=L, sigma2=sig2, d=d, w_star_norm2=c["w2"], F_star=c["F_ref"], t=T, eta=eta, M=M)
        notes.append("measured: sum_j eta_j^2 fhat_j(w_j) (unbiased); for Alg. 1 this is P4 Eq. (8)/(11)")
        return e2, "eta2_weighted_train_risk", bound, notes
    if "excess_explicit" in key:
        bound = b(n=n, T=T, eta=eta, L=L, sigma2=sig2, d=d, w_star_norm2=c["w2"], F_star=c["F_ref"])
        notes.append(f"measured: F(w_priv) - F(w_ref) ({c['F_method']}); kappa = 'opt'; w_ref: {c['ref_how']}")
        return F - c["F_ref"], "excess_risk", bound, notes
    raise ValueError(f"p4_more: key {key!r} is not handled")


def _cell_constants(params, sub):
    """The constants of one p4_gen cell that the bounds take: the run's T, eta, sigma, the loss's L, alpha,
    M and sup, the reference point's F(w_ref) and ||w_ref||^2, and how F(w_priv) was computed."""
    a = params["algorithm"]
    pb = twin_problem(params["data"])
    lossf = _loss(a)
    R = _radius(a)
    _, _, how, exact = _reference(pb, lossf)
    return {"n": params["data"]["n"], "T": int(sub["T_eff"].values.max()), "eta": float(sub["eta_eff"].values.max()),
            "sigma": float(sub["sigma_eff"].values.max()), "L": lossf.L(pb.kappa, R), "alpha": lossf.holder,
            "M": _M(lossf, pb.kappa), "d": pb.d, "w2": float(sub["wref_norm2"].values.max()),
            "F_ref": float(sub["F_ref"].values.max()), "fsup": _loss_sup(lossf, pb.kappa, R) if not lossf.smooth else 0,
            "pairwise": lossf.pairwise, "smooth": lossf.smooth, "loss": lossf.name, "lossf": lossf, "kappa": pb.kappa, "R": R,
            "ref_how": how, "ref_exact": exact,
            "F_method": "closed form" if float(np.nanmax(sub["F_out_se"].values)) == 0 else "Monte Carlo"}


_WHY_VIOLATED = {
    "P4.Thm3.excess_explicit.printed": "the printed proof coefficient (6 instead of 6L, P4-E8) makes the F(w*) term "
                                       "smaller than Thm 16(a) gives",
    "P4.Thm6.excess_explicit.printed": "the printed proof coefficient (4 instead of 6L, P4-E8) makes the F(w*) term "
                                       "smaller than Lemma 20 gives",
    "P4.Lemma19b.onavg.printed": "printed Mbar_{alpha,3} (P4-E2)",
}


#: y-axis groups of the summary figure: quantities in one unit share a panel.
_UNIT_PANELS = (
    (("gen_gap", "opt_error", "excess_risk"), "risk difference (loss units)\nmeasured mean (95% CI), bound (bar)"),
    (("onavg_stability",), "E (1/n) sum_i ||w - w^(i)||^2 (squared distance)\nmeasured mean (95% CI), bound (bar)"),
    (("eta2_weighted_train_risk",), "sum_j eta_j^2 E[F_S(w_j)] (step^2 x loss)\nmeasured mean (95% CI), bound (bar)"),
)


def _summary_figure(rows, title):
    """One cell: per key, the measured replicate mean with its 95% CI (black) and the bound (bar: green holds,
    red violated), log scale; one panel per unit (risk differences / squared distances / step^2 x loss), so
    quantities in different units never share an axis.  A CI lower end or a mean <= 0 is marked by a triangle /
    cross on the axis' lower limit (``stabsim.judging.plots.plot_bound_points``), never drawn at a made-up floor."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from stabsim.judging.plots import plot_bound_points

    groups = []
    for qs, ylabel in _UNIT_PANELS:
        g = [r for r in rows if r[1].attrs.get("quantity") in qs]
        if g:
            groups.append((g, ylabel))
    known = {q for qs, _ in _UNIT_PANELS for q in qs}
    for r in rows:  # a quantity of unknown unit gets its own panel
        if r[1].attrs.get("quantity") not in known:
            groups.append(([r], f"{r[1].attrs.get('quantity', '')}\nmeasured mean (95% CI), bound (bar)"))
    widths = [len(g) + 0.8 for g, _ in groups]
    fig = Figure(figsize=(max(5.0, 1.25 * sum(widths) + 0.5), 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(groups), squeeze=False, gridspec_kw={"width_ratios": widths})[0]
    for ax, (g, ylabel) in zip(axes, groups):
        pts = [(lab, *(float(m[k].values[0]) for k in ("estimate", "lower", "upper")), b, v) for lab, m, b, v in g]
        plot_bound_points(pts, ylabel=ylabel, ax=ax)
    fig.suptitle(title, fontsize=8)
    return fig


@register_check("p4_more", description="P4 Lemmas 13, 14(b), 17, 19(b), 20, Thms 15, 16(b), proof-derived Thm 3/6 "
                                       "bounds on one DP-SGD setting per study")
def check_more(spec, ds) -> CheckResult:
    res = CheckResult()
    want = list(spec.bounds.get("keys", []))
    if not want:
        raise ValueError("[bounds] keys must list the P4 keys to check")
    for label, params, sub in sweep_slices(spec, ds):
        rows = []
        c = _cell_constants(params, sub)
        ok_keys = applicable_keys(c["pairwise"], c["smooth"])
        bad = [k for k in want if k not in ok_keys]
        if bad:
            raise ValueError(f"keys {bad} do not apply to {'pairwise' if c['pairwise'] else 'pointwise'} "
                             f"{'smooth' if c['smooth'] else 'Hoelder'} {c['loss']}; allowed: {list(ok_keys)}")
        sfx = f" ({label})" if label else ""
        res.measured["T, eta, sigma" + sfx] = [c["T"], c["eta"], c["sigma"]]
        res.measured["L, alpha, M, F(w_ref), ||w_ref||^2" + sfx] = [c["L"], c["alpha"], c["M"], c["F_ref"], c["w2"]]
        for key in want:
            vals, qty, bound, notes = _evaluate(key, sub, c)
            uses_F = qty == "excess_risk" or (qty == "gen_gap" and c["pairwise"])
            m = _ci(vals, qty, c["mc_se"] if uses_F else 0.0)
            if uses_F and c["mc_se"] > 0:
                notes = notes + [f"CI widened by 1.96 x {c['mc_se']:.2g} (Monte Carlo error of F, shared test sample)"]
            tag = "EXPLICIT-DD" if key.split(".")[1].startswith(("Lemma13", "Lemma14", "Lemma17", "Lemma19", "Thm15")) \
                else "EXPLICIT"
            common = [f"{c['loss']}, alpha = {c['alpha']:g}, L = {c['L']:.4g}, n = {c['n']}, T = {c['T']}, "
                      f"eta = {c['eta']:.4g}, sigma = {c['sigma']:.4g}"]
            triv, tnote = trivial_bound(qty, c)
            v = check_bound(m, np.atleast_1d(float(bound)), tag, key=key, trivial_bound=triv,
                            notes=common + notes + ([tnote] if tnote else []))
            expl = None
            if not v.ok:
                expl = (_WHY_VIOLATED.get(key, "") + ("; " if key in _WHY_VIOLATED else "")
                        + f"measured mean {float(m['estimate'].values[0]):.4g} [{float(m['lower'].values[0]):.4g}, "
                          f"{float(m['upper'].values[0]):.4g}] "
                          f"vs bound {float(bound):.4g}: " + "; ".join(v.notes))
                if float(m["estimate"].values[0]) < float(bound) and key not in _WHY_VIOLATED:
                    more = ("; the full profile has more replicates" if spec.profile == "quick" else "")
                    ratio = float(m["estimate"].values[0]) / float(bound) if float(bound) > 0 else math.nan
                    expl = (f"inconclusive at {int(m.attrs.get('n_replicates', 0)) or 'this'} replicates: the mean is "
                            f"{ratio:.2g} of the bound, but the 95% CI reaches above it, so the data cannot tell "
                            f"whether the bound holds{more} -- " + expl)
                elif key not in _WHY_VIOLATED:
                    expl = "UNEXPLAINED (a bound of a proved lemma/theorem failed: investigate) -- " + expl
            rows.append((key[3:], m, float(bound), v))
            res.add(v, label=label or None, explanation=expl)
            res.measured[f"{key}{sfx}: measured mean, bound"] = [float(m["estimate"].values[0]), float(bound)]
        name = res.figure("bounds_" + ("".join(ch if ch.isalnum() else "-" for ch in label.replace(", ", "_")) or "all"),
                          _summary_figure(rows, f"{spec.id}: {label}\n({c['loss']}, n = {c['n']}, T = {c['T']}, "
                                                f"eta = {c['eta']:.3g}, sigma = {c['sigma']:.3g})"))
        for i in range(len(res.verdicts) - len(rows), len(res.verdicts)):
            res.links[i] = name
    res.notes.append("Every EXPLICIT-DD input (E[F_S(w_priv)], nu, sum eta^2 E[F_S]) is the lower end of its 95% CI "
                     "(the bounds increase in them); the measured quantity's CI upper end must lie below the bound.  "
                     "Per replicate: a fresh S, a uniform replaced index, a fresh independent z'_i, shared indices and "
                     "Gaussian noise (P4 Def. 6).  Pairwise F_S is Fbar_S over the n(n-1) ordered pairs.")
    return res
