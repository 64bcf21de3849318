"""P0 (Yang, Lei, Lyu, Ying, AISTATS 2021): the ``p0_excess`` check, excess risk, generalization,
optimization and iterate norms of P0 Alg. 1 / Alg. 2 on a ``p0_risk`` study swept over n
(``studies/p0_thm2_risk.toml``, ``p0_thm3_risk``, ``p0_thm5_private``; the kind is
``stabsim.experiments.p0_excess_risk``).

Check ``p0_excess``
    Thm 2 / 3 / 5 (EXPLICIT-DD, (1-gamma)-quantile of the excess risk over replicates vs the bound at
    each n), their RATE claims and Cor 1 / 2 rates (log-log slope in n of the mean excess risk),
    Thm A.6 / Cor A.6 (generalization gap quantile), Thm A.8 (optimization error quantile), Lemma
    A.10 (max over runs of ||w_{t+1}||^2), Lemma A.12 (quantile of R(w_priv) - R(w_bar_T)) --
    whichever keys the study lists.

Also the rules of the private rate rows: ``SATURATION_FACTOR`` / ``noise_saturation`` (a noise that
pins w_priv whatever the training did) and ``rate_log_factors`` (the log factors of an O~ claim).
"""

from __future__ import annotations

import inspect
import math

import numpy as np

from stabsim.engine.measures import REPLICATE
from stabsim.setups.p0 import risk_constants
from stabsim.judging.rates import SHAPE_SATURATED
from stabsim.judging.rules import check_bound, check_rate, rate_exponent
from stabsim.registry import register_check
from stabsim.analyses.base import CheckResult, figure_name
from stabsim.analyses.p0_measures import max_measure, overlay, quantile_measure, rate_figure, stack_n

_VACUOUS = ("the bound is far above the loss range (c_1 = 100 sqrt(6) e^{3/2} G max(1,G) ln(6e/gamma) and "
            "c_2 = (6 + 19e)(M + GD) make it vacuous at simulation sizes, docs/errata.md, Conventions)")


#: Saturation rule of the private rate rows (fixed before any run): the private output
#: w_priv = Proj_W(w_bar_T + u), u ~ N(0, sigma^2 I_d), is *saturated* when the noise's typical norm
#: sigma sqrt(d) exceeds SATURATION_FACTOR x the radius R of W at EVERY n of the sweep.  Then, since
#: ||w_bar_T|| <= R, the direction of w_bar_T + u is within arcsin(R / ||u||) <= arcsin(1/10) ~ 5.7 deg of u's,
#: so w_priv is (up to that angle) the projected Gaussian R u/||u|| whatever the training did: its risk is
#: pinned at the projected-noise risk, independent of n, and the sweep cannot show any rate in n.
SATURATION_FACTOR = 10.0


def noise_saturation(sigma, d: int, radius: float, factor: float = SATURATION_FACTOR) -> tuple[bool, float]:
    """(saturated, min over the sweep of sigma sqrt(d) / R) by the rule of ``SATURATION_FACTOR``.

    ``sigma``: the noise level at each swept n; ``radius``: the radius of W (an unbounded W is never
    saturated: nothing pins the output)."""
    sig = np.atleast_1d(np.asarray(sigma, dtype=float))
    if not math.isfinite(radius) or radius <= 0 or sig.size == 0:
        return False, math.nan
    ratio = sig * math.sqrt(d) / radius
    return bool(np.all(ratio > factor)), float(ratio.min())


def rate_log_factors(bnd) -> str:
    """The log factors a RATE entry writes beside its polynomial exponent (registry ``log_factors``),
    or "unstated (O~)" for an O~ claim that names none."""
    lf = str(bnd.extra.get("log_factors", "")) if getattr(bnd, "extra", None) else ""
    if not lf and "O~" in (bnd.func.__doc__ or ""):
        lf = "unstated (O~)"
    return lf



def loss_range(G: float, M: float, radius: float, norms=None):
    """The largest value the loss can take at the points measured, the trivial bound of an excess risk,
    optimization error or generalization gap of P0 (all losses here are >= 0, so F(w) - F(w*) <= sup l(w, .)
    and |F(w) - F_S(w)| <= sup l(w, .)).  G-Lipschitz in w on W with l(0, z, z') <= M (P0's M), so for
    w in the ball of radius ``radius``: l(w, z, z') <= M + G ||w|| <= M + G radius (auc_hinge: exactly
    1 + 2 kappa R).  On an unbounded W ``norms`` (the largest ||w|| measured at each n, e.g. max over
    replicates of ||w_bar_T||) is used instead when G is finite there; None when neither is known."""
    if math.isfinite(radius):
        return M + G * radius
    if norms is not None and math.isfinite(G):
        return M + G * np.asarray(norms, dtype=float)
    return None


# ---- one n-sweep slice of a p0_risk study ------------------------------------------------------

class _Slice:
    """What every row of ``p0_excess`` reads from one slice of a ``p0_risk`` study along n: the constants
    (``stabsim.setups.p0.risk_constants``), the schedule T(n), eta(n), the risks R(w_bar_T) (with their
    test-sample SE) and R(w*), the excess risk, the lower CI ends of the Rademacher averages and the
    notes every row carries.  Records G, kappa, max R(w*) and the Rademacher averages in ``res.measured``."""

    def __init__(self, spec, res, label, params, sub, gamma, keys):
        self.label, self.params, self.sub, self.gamma, self.keys = label, params, sub, gamma, keys
        self.ns = sub["n"].values.astype(float)
        c = risk_constants(params)
        self.G, self.M, self.kappa, self.Rball, self.B, self.dim = (c["G"], c["M"], c["kappa"], c["radius"],
                                                                    c["B"], c["d"])
        self.bounded = math.isfinite(self.Rball)
        self.T = sub["T"].values.astype(float)
        self.eta = sub["eta"].values.astype(float)
        self.Fstar = sub["F_wstar"].values.astype(float)
        self.sfx = f" ({label})" if label else ""
        self.lab = (label + ", ") if label else ""
        self.setting = (f"d={self.dim}, {'R=%g' % self.Rball if self.bounded else 'W=R^d'}, "
                        f"{spec.sections['p0']['schedule']}, gamma={gamma}" + (f", {label}" if label else ""))
        res.measured["G" + self.sfx] = self.G
        res.measured["kappa" + self.sfx] = self.kappa
        res.measured["max R(w*) on the test sample" + self.sfx] = float(self.Fstar.max())
        self.F = self.rv("F_out")  # (R, n)
        self.Fse = self.rv("F_out_se").mean(0)
        self.excess = self.F - self.Fstar[None, :]
        # trivial bound of R(w_bar_T) - R(w*), R_S(w_bar_T) - R_S(w*), R(w_bar_T) - R_S(w_bar_T): the loss range
        # at w_bar_T (``loss_range``), on an unbounded W at the largest ||w_bar_T|| over replicates
        self.BT = sub["B_T"].transpose(REPLICATE, "n").values.max(axis=0) if "B_T" in sub else None
        self.triv_out = loss_range(self.G, self.M, self.Rball, self.BT)
        self.triv_note = ("trivial bound (the loss range at w_bar_T): " + (
            f"M + G R = {self.M:g} + {self.G:.4g} x {self.Rball:g}" if self.bounded else
            "M + G max ||w_bar_T|| (max over replicates, at each n)") if self.triv_out is not None else
            "no trivial bound (W unbounded and no norm of the output known)")
        self.base = [f"G = {self.G:.4g}, M = {self.M}, kappa = {self.kappa:.4g}", f"gamma = {gamma}",
                     "T, eta per n: " + ", ".join(f"n={int(a)}: T={int(b)}, eta={e:.3g}"
                                                  for a, b, e in zip(self.ns, self.T, self.eta))]
        self.rad_W = self.rad_WD = None
        if "rad_W" in sub:
            self._rademacher_lower_ends(res)
        self.rad_note = ("Rademacher averages: Monte-Carlo (t uniform on 1..T), hinge supremum by subgradient "
                         "ascent = a lower estimate; the lower 2-SE end is plugged in, which can only lower the bound")
        self.coord = ("n", self.ns)

    def rv(self, var):
        """The variable ``var`` of the slice as a (replicate, n) array."""
        return self.sub[var].transpose(REPLICATE, "n").values  # (R, n)

    def _rademacher_lower_ends(self, res):
        # lower CI end of a lower estimate: the bound stays below its value at the true R_t
        rw, rd = self.rv("rad_W"), self.rv("rad_WD")  # the SE over data sets includes the Monte-Carlo error
        Rn = rw.shape[0]
        self.rad_W = np.maximum(rw.mean(0) - 2 * rw.std(0, ddof=1) / math.sqrt(Rn), 0.0)
        self.rad_WD = np.maximum(rd.mean(0) - 2 * rd.std(0, ddof=1) / math.sqrt(Rn), 0.0)
        for a_, v1, v2 in zip(self.ns, rw.mean(0), rd.mean(0)):
            res.measured[f"rad_avg W, n={int(a_)}{self.sfx}"] = float(v1)
            res.measured[f"rad_avg W_D, n={int(a_)}{self.sfx}"] = float(v2)


def _reading(v) -> str:
    return "printed" if v.key.endswith("printed") else "corrected"


# ---- the rows of p0_excess, one helper per theorem ---------------------------------------------

def _thm2_thm3(res, s):
    """P0 Thm 2 (bounded W: T = n^2, eta ~ n^{-3/2}) and Thm 3 (unbounded W, W_t of Lemma A.10):
    the (1-gamma)-quantile of R(w_bar_T) - R(w*) vs the bound at the measured Rademacher averages."""
    from stabsim.theory import get

    for prefix, thm in (("P0.Thm2.excess", 2), ("P0.Thm3.excess", 3)):
        ks = [k for k in s.keys if k.startswith(prefix)]
        if not ks:
            continue
        if s.rad_W is None:
            raise ValueError(f"{prefix} needs the Rademacher averages: set [p0] rad_samples > 0")
        m = quantile_measure(s.excess, s.gamma, s.coord, widen=2 * s.Fse, quantity="excess_risk_quantile",
                             note="(1-gamma)-quantile over (S, A) of R(w_bar_T) - R(w*)")
        bounds, verdicts = [], []
        for k in ks:
            if thm == 2:
                b = get(k)(T=s.T, n=s.ns, eta=s.eta, G=s.G, M=s.M, D=2 * s.Rball, gamma=s.gamma, rad_avg=s.rad_W)
            else:
                b = get(k)(T=s.T, n=s.ns, eta=s.eta, G=s.G, M=s.M, D=s.B, gamma=s.gamma, rad_avg_Wt=s.rad_W,
                           rad_avg_WD=s.rad_WD)
            verdicts.append(check_bound(m, b, "EXPLICIT-DD", key=k, notes=s.base + [s.rad_note, s.triv_note],
                                        trivial_bound=s.triv_out))
            bounds.append((k, b))
        fig = overlay(res, figure_name(prefix, s.label), m, bounds, verdicts, s.setting)
        for v in verdicts:
            res.add(v, figure=fig, label=s.lab + _reading(v),
                    explanation=None if v.ok else "excess-risk quantile above the bound: " + "; ".join(v.notes))
        res.notes.append(f"Thm {thm}: " + _VACUOUS + "; tightness shows how far")


def _thm5(res, s, ks5, sig, delta, reading):
    """P0 Thm 5: the (1-gamma)-quantile of R(w_priv) - R(w*) of Alg. 2's output vs the bound at the
    sigma of Eq. (5)."""
    from stabsim.theory import get

    Fp = s.rv("F_priv")
    m = quantile_measure(Fp - s.Fstar[None, :], s.gamma, s.coord, widen=2 * s.rv("F_priv_se").mean(0),
                         quantity="excess_risk_quantile",
                         note="(1-gamma)-quantile over (S, A, u) of R(w_priv) - R(w*)")
    # w_priv = Proj_W(w_bar_T + u) lies in W: on a bounded W its excess risk is at most M + G R (the loss is
    # >= 0); on an unbounded W the Gaussian u makes ||w_priv|| unbounded: no trivial bound
    triv = loss_range(s.G, s.M, s.Rball) if s.bounded else None
    triv_note = (f"trivial bound M + G R = {triv:.4g} (w_priv in W)" if triv is not None
                 else "no trivial bound (W unbounded, w_priv = w_bar_T + Gaussian noise)")
    bounds, verdicts = [], []
    for k in ks5:
        b = get(k)(T=s.T, n=s.ns, eta=s.eta, G=s.G, M=s.M, D=2 * s.Rball, gamma=s.gamma, delta=delta, sigma=sig,
                   d=s.dim, rad_avg=s.rad_W)
        verdicts.append(check_bound(m, b, "EXPLICIT-DD", key=k, trivial_bound=triv, notes=s.base + [s.rad_note,
                                    f"sigma from Eq. (5), reading {reading}: "
                                    + ", ".join(f"{s_:.3g}" for s_ in sig), f"delta = {delta}", triv_note]))
        bounds.append((k, b))
    fig = overlay(res, figure_name("P0.Thm5.excess", s.label), m, bounds, verdicts, s.setting)
    for v in verdicts:
        res.add(v, figure=fig, label=s.lab + _reading(v),
                explanation=None if v.ok else "private excess-risk quantile above the bound: "
                + "; ".join(v.notes))
    for a_, s_ in zip(s.ns, sig):
        res.measured[f"sigma (Eq. 5), n={int(a_)}{s.sfx}"] = float(s_)


def _lemA12(res, s, ks12, sig):
    """P0 Lemma A.12: the (1-gamma)-quantile of the utility loss R(w_priv) - R(w_bar_T) vs
    2 G sigma sqrt(d) ln^{1/4}(1/gamma) (printed, P0-E10) and the proof's form, along sigma."""
    from stabsim.theory import get

    gamma, G, dim = s.gamma, s.G, s.dim
    diff = s.rv("F_priv") - s.F
    widen = 2 * (s.rv("F_priv_se").mean(0) + s.Fse)
    m = quantile_measure(diff, gamma, ("sigma", sig), widen=widen, quantity="dp_utility_loss",
                         note="(1-gamma)-quantile of R(w_priv) - R(w_bar_T)")
    # both w_priv and w_bar_T lie in W: |R(w_priv) - R(w_bar_T)| <= G ||w_priv - w_bar_T|| <= G D = 2 G R, and
    # <= M + G R (both risks in [0, M + G R]); unbounded W: none
    triv = min(2 * G * s.Rball, loss_range(G, s.M, s.Rball)) if s.bounded else None
    tnote = (f"trivial bound min(G D, M + G R) = {triv:.4g}" if triv is not None else "no trivial bound (W unbounded)")
    bounds, verdicts = [], []
    for k in ks12:
        b = get(k)(G=G, sigma=sig, d=dim, gamma=gamma)
        verdicts.append(check_bound(m, b, "EXPLICIT", key=k, trivial_bound=triv, notes=[f"G = {G:.4g}", f"d = {dim}",
                                    f"gamma = {gamma}", "sigma = Eq. (5) at each n", tnote]))
        bounds.append((k, b))
    fig = overlay(res, figure_name("P0.LemA12", s.label), m, bounds, verdicts, s.setting, x="sigma")
    expl12 = ("P0-E10: the printed 2 G sigma sqrt(d) ln^{1/4}(1/gamma) is below the proof's bound when "
              "ln(1/gamma) < 1 (gamma > 1/e)")
    for v in verdicts:
        res.add(v, figure=fig, label=s.lab + _reading(v),
                explanation=None if v.ok else "utility-loss quantile above the bound: "
                + "; ".join(v.notes) + ("; " + expl12 if v.key.endswith("printed") else ""))
    if math.log(1 / gamma) < 1:
        res.notes.append(f"gamma = {gamma} > 1/e: " + expl12)


def _gen_gap(res, s, ksA6):
    """P0 Thm A.6 (stability -> generalization at the proof-form Eq. (9), gamma/2 each) and Cor A.6
    (at each run's ||w_bar_T||): the (1-gamma)-quantile of R(w_bar_T) - R_S(w_bar_T)."""
    from stabsim.theory import get

    gap = s.F - s.rv("FS_out")
    m = quantile_measure(gap, s.gamma, s.coord, widen=2 * s.Fse, quantity="gen_gap_quantile",
                         note="(1-gamma)-quantile over (S, A) of R(w_bar_T) - R_S(w_bar_T)")
    BT = s.rv("B_T").max(axis=0)
    # R(w) - R_S(w) <= sup_z l(w, z) since l >= 0: the loss range at w_bar_T (M + G R, or M + G max ||w_bar_T||)
    triv = loss_range(s.G, s.M, s.Rball, BT)
    bounds, verdicts = [], []
    for k in ksA6:
        if k.startswith("P0.ThmA6"):
            from stabsim.theory.p0 import eq9_avg_proof
            if not s.bounded:
                raise ValueError("Thm A.6 needs a bounded output (||A(S)|| <= B): use a constraint l2:R")
            eps_stab = eq9_avg_proof(T=s.T, n=s.ns, eta=s.eta, G=s.G, gamma=s.gamma / 2)
            b = get(k)(eps_stab=eps_stab, n=s.ns, G=s.G, M=s.M, B=s.Rball, gamma=s.gamma / 2)
            nt = ["eps_stab = Eq. (9) proof form at gamma/2 (P0-E4, valid for all T), bound at gamma/2 "
                  "(Cor A.5: failure probability gamma/2 + gamma/2)", f"B = W's radius {s.Rball}"]
        else:
            b = get(k)(T=s.T, n=s.ns, eta=s.eta, G=s.G, M=s.M, B_T=BT, gamma=s.gamma)
            nt = ["B_T = max over replicates of ||w_bar_T||: the bound at each run's own B_T is "
                  "below this one, so the quantile comparison stays valid"]
        verdicts.append(check_bound(m, b, "EXPLICIT" if k.startswith("P0.ThmA6") else "EXPLICIT-DD",
                                    key=k, notes=s.base + nt + [s.triv_note], trivial_bound=triv))
        bounds.append((k, b))
    fig = overlay(res, figure_name("P0.A6.gen", s.label), m, bounds, verdicts, s.setting)
    for v in verdicts:
        res.add(v, figure=fig, label=s.lab + v.key.split(".")[1] + " " + v.key.rsplit(".", 1)[-1],
                explanation=None if v.ok else "generalization-gap quantile above the bound: "
                + "; ".join(v.notes))
    for a_, bt in zip(s.ns, BT):
        res.measured[f"max ||w_bar_T||, n={int(a_)}{s.sfx}"] = float(bt)


def _thmA8(res, s):
    """P0 Thm A.8: the (1-gamma)-quantile of the optimization error R_S(w_bar_T) - R_S(w*)."""
    from stabsim.theory import get

    if s.rad_W is None:
        raise ValueError("Thm A.8 needs the Rademacher averages: set [p0] rad_samples > 0")
    G, M, eta, T, ns, Rball = s.G, s.M, s.eta, s.T, s.ns, s.Rball
    opt = s.rv("FS_out") - s.rv("FS_wstar")
    m = quantile_measure(opt, s.gamma, s.coord, quantity="opt_error_quantile",
                         note="(1-gamma)-quantile of R_S(w_bar_T) - R_S(w*) (exact empirical risks)")
    if s.bounded:
        BTa, bnote = np.full_like(ns, Rball), f"B_t = W's radius {Rball} (>= ||w_t|| for every t)"
    else:
        BTa = np.sqrt((G ** 2 + 2 * M) * eta * T)
        bnote = "B_t = sqrt((G^2 + 2M) eta t) (Lemma A.10, eta <= 1), W_t its ball"
    k = "P0.ThmA8.opt"
    b = get(k)(T=T, eta=eta, G=G, M=M, B=s.B, B_T=BTa, gamma=s.gamma, rad_avg_Wt=s.rad_W, rad_avg_WB=s.rad_WD)
    # R_S(w_bar_T) - R_S(w*) <= R_S(w_bar_T) <= the loss range at w_bar_T (l >= 0)
    v = check_bound(m, b, "EXPLICIT-DD", key=k, trivial_bound=s.triv_out,
                    notes=s.base + [bnote, f"B = ||w*|| = {s.B:.4g}", s.rad_note, s.triv_note])
    fig = overlay(res, figure_name(k, s.label), m, [(k, b)], [v], s.setting)
    res.add(v, figure=fig, label=s.label or None,
            explanation=None if v.ok else "optimization-error quantile above Thm A.8: " + "; ".join(v.notes))


def _lemA10(res, s):
    """P0 Lemma A.10 (deterministic): the maximum over runs of ||w_{t+1}||^2 at each n, along t."""
    from stabsim.theory import get

    k = "P0.LemA10.iterate_norm_sq"
    G, M, eta, label, sub = s.G, s.M, s.eta, s.label, s.sub
    if s.bounded:
        res.notes.append("Lemma A.10 assumes no effective projection; W is bounded here")
    for j, nn in enumerate(s.ns):
        s1 = sub.isel(n=j)
        s1 = s1.isel(t_it=np.flatnonzero(np.isfinite(s1["iter_norm_sq"].values).all(axis=0)
                                         if s1["iter_norm_sq"].dims[0] == REPLICATE else
                                         np.isfinite(s1["iter_norm_sq"].values).all(axis=1)))
        t = s1["t_it"].values.astype(float)
        m = max_measure(s1["iter_norm_sq"].transpose(REPLICATE, "t_it").values, ("t_it", t),
                        "iterate_norm_sq", "max over runs of ||w_{t+1}||^2 (every run must satisfy it)")
        b = get(k)(t=t, eta=float(eta[j]), G=G, M=M)
        v = check_bound(m, b, "EXPLICIT", key=k, notes=[f"eta = {eta[j]:.4g} <= 1", f"G = {G:.4g}, M = {M}",
                                                         "deterministic: max over replicates, no CI"])
        fig = overlay(res, figure_name(k, f"n={int(nn)}" + ("_" + label if label else "")), m, [(k, b)], [v],
                      s.setting + f", n={int(nn)}", x="t_it")
        res.add(v, figure=fig, label=s.lab + f"n={int(nn)}",
                explanation=None if v.ok else "an iterate norm exceeds Lemma A.10 (deterministic): "
                + "; ".join(v.notes))


def _rate_row_explanation(v, saturated, ratio, exponent, private, sig, Rball):
    """The explanation of a RATE row of ``p0_excess``: the saturation reading (the private output is
    pinned at the projected-noise risk, see ``SATURATION_FACTOR``), a slow decay, or none."""
    expl = None
    if saturated:
        expl = (f"saturated, no rate can be read: the noise u has norm ~ sigma sqrt(d) >= {ratio:.3g} x the "
                f"radius R = {Rball:g} of W at every n (rule: > {SATURATION_FACTOR:g} x R; sigma from Eq. (5) "
                "= " + ", ".join(f"{s_:.3g}" for s_ in sig) + "), so w_priv = Proj_W(w_bar_T + u) is within "
                f"{math.degrees(math.asin(min(1.0, 1 / ratio))):.2g} deg of the projected Gaussian R u/||u|| "
                "whatever w_bar_T is, and R(w_priv) is pinned at the projected-noise risk at every n; "
                "the n-rate needs sigma sqrt(d) well below R (larger eps or n). " + "; ".join(v.notes))
    elif not v.ok:
        expl = (f"{v.label}: the measured excess risk does not decay at the claimed n^{exponent:.3g} over this "
                "n range: " + "; ".join(v.notes))
        if private:
            expl += ("; the private output is dominated by the noise u (sigma from Eq. (5) is "
                     + ", ".join(f"{s_:.3g}" for s_ in sig) + "), so R(w_priv) sits near the risk of a "
                     "projected Gaussian: pre-asymptotic, the sqrt(d)/(sqrt(n) eps) regime needs sigma sqrt(d) "
                     "well below the ball radius")
    return expl


def _explicit_key(rate_key: str) -> str:
    """The explicit bound an O~ private rate is read from: Thm 5 (Cor 2 is Thm 5 for the AUC hinge), same reading."""
    return "P0.Thm5.excess." + ("printed" if rate_key.endswith(".printed") else "corrected")


def _explicit_shape(rate_key: str, s, sig, spec):
    """The explicit Theorem 5 bound over the sweep (its log factors are what the O~ rate hides), or
    None when it cannot be evaluated (not positive and finite)."""
    from stabsim.theory import get

    try:
        b = get(_explicit_key(rate_key))(T=s.T, n=s.ns, eta=s.eta, G=s.G, M=s.M, D=2 * s.Rball, gamma=s.gamma,
                                         delta=spec.sections["p0"]["delta"], sigma=sig, d=s.dim, rad_avg=s.rad_W)
    except (KeyError, ValueError, TypeError):
        return None
    b = np.asarray(b, dtype=float)
    return b if (b.shape == np.shape(s.ns) and np.all(np.isfinite(b)) and np.all(b > 0)) else None


def _rates(res, s, spec, sig):
    """The RATE claims (P0 Thm 2 / 3 / 5, Cor 1 / 2): the log-log slope in n of the replicate-mean
    excess risk (of w_priv for the private claims) vs the theorem's nominal exponent."""
    from stabsim.theory import get

    ns, dim, Rball, label = s.ns, s.dim, s.Rball, s.label
    rate_keys = [k for k in s.keys if get(k).tag == "RATE"]
    for k in rate_keys:
        bnd = get(k)
        private = k.startswith(("P0.Thm5", "P0.Cor2", "P0.Cor4"))
        y = (s.rv("F_priv") if private else s.F) - s.Fstar[None, :]
        expr = bnd(**{a_: v_ for a_, v_ in dict(n=ns, kappa=s.kappa, d=dim,
                                                  eps=s.params["p0"]["eps"]).items()
                      if a_ in inspect.signature(bnd.func).parameters})
        # the theorem's nominal polynomial exponent, never the local slope of the expression: over a short
        # n range ln^2 n turns n^-1/2 into a positive "exponent" (+0.11 over n = 16..48)
        exponent = rate_exponent(bnd, "n")
        logf = rate_log_factors(bnd)
        notes = [f"exponent = the theorem's nominal n^{exponent:.3g}" + (f"; log factors {logf} reported beside "
                 "it, not turned into an exponent" if logf else ""),
                 "slope of the replicate MEAN excess risk (the theorem is high-probability; the mean is "
                 "below the (1-gamma)-quantile plus gamma x loss range)",
                 f"schedule {bnd.extra.get('schedule', '') if hasattr(bnd, 'extra') else ''}".strip()]
        if np.any(y.mean(0) <= 0):
            res.notes.append(f"{k}: mean excess risk <= 0 at some n; no log-log slope")
            continue
        shape = _explicit_shape(k, s, sig, spec) if private else None
        if shape is not None:
            notes.append("the band's slow end is the log-log slope of the explicit Theorem 5 bound ("
                         + _explicit_key(k) + ") at the study's T, eta, sigma and delta: the factors the O~ hides")
        v = check_rate(ns, y, exponent, "upper", key=k, quantity="excess_risk_quantile", paired=False,
                       bound_values=expr, shape_values=shape, explicit_bound=shape, notes=notes,
                       log_factors=logf)
        saturated, ratio = noise_saturation(sig, dim, Rball) if private else (False, math.nan)
        if saturated:
            v = v.relabel("inconclusive", SHAPE_SATURATED, note=(
                f"saturated: sigma sqrt(d) / R >= {ratio:.3g} > {SATURATION_FACTOR:g} at every n (sigma = "
                + ", ".join(f"{s_:.3g}" for s_ in sig) + f", d = {dim}, R = {Rball:g})"))
        fit = v.details
        fig = rate_figure(res, figure_name(k, label), ns, fit, v, "excess risk", "n",
                          f"P0 {bnd.ref}: excess risk slope in n" + (f" ({label})" if label else ""))
        expl = _rate_row_explanation(v, saturated, ratio, exponent, private, sig, Rball)
        res.add(v, figure=fig, label=s.lab + "slope in n", explanation=expl)


# ---- check p0_excess ---------------------------------------------------------------------------

@register_check("p0_excess", description="P0 Thm 2/3/5 excess risk, rates (Thm 2/3/5, Cor 1/2), Thm A.6 / Cor A.6, "
                                         "A.8, Lemma A.10, A.12")
def check_excess(spec, ds) -> CheckResult:
    """P0 Thm 2 / 3 / 5, their RATE claims and Cor 1 / 2, Thm A.6 / Cor A.6, Thm A.8, Lemmas A.10 and
    A.12 on a ``p0_risk`` study swept over n: whichever keys ``[bounds] keys`` lists."""
    res = CheckResult()
    gamma = spec.bounds.get("gamma") or 0.1
    keys = spec.bounds.get("keys", [])
    if not keys:
        raise ValueError("[bounds] keys is empty")
    for label, params, sub in stack_n(spec, ds, None):
        s = _Slice(spec, res, label, params, sub, gamma, keys)
        _thm2_thm3(res, s)
        # ---- Thm 5 and Lemma A.12 (private output) ----
        ks5 = [k for k in keys if k.startswith("P0.Thm5.excess")]
        ks12 = [k for k in keys if k.startswith("P0.LemA12")]
        sig = sub["sigma"].values.astype(float)
        if (ks5 or ks12) and not np.all(sig > 0):
            raise ValueError("Thm 5 / Lemma A.12 need [p0] private = true")
        delta = spec.sections["p0"]["delta"]
        if ks5:
            _thm5(res, s, ks5, sig, delta, spec.sections['p0']['reading'])
        if ks12:
            _lemA12(res, s, ks12, sig)
        # ---- Thm A.6 / Cor A.6: generalization gap ----
        ksA6 = [k for k in keys if k.startswith("P0.ThmA6") or k.startswith("P0.CorA6")]
        if ksA6:
            _gen_gap(res, s, ksA6)
        if "P0.ThmA8.opt" in keys:
            _thmA8(res, s)
        if "P0.LemA10.iterate_norm_sq" in keys:
            _lemA10(res, s)
        _rates(res, s, spec, sig)
    return res
