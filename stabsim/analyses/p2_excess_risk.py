"""P2 (Kang, Liu, Li, Wang: sharper utility bounds for DP pairwise learning): the ``p2_excess`` check,
excess risk of P2 Alg. 1 against n on a ``p2_gd`` study (``studies/p2_thm2_excess.toml``, ``p2_thm3_hp``,
``p2_lemma3_metric``; the kind is ``stabsim.experiments.p2_excess_risk``).

Check ``p2_excess``
    Thm 2 (EXPLICIT-DD, mean excess vs the mean over D of the bound at the measured gap0 and
    mu_path), Remark 2 / Lemma 2 / Lemma 3 rates (slope in n of the mean excess), Thm 3 rate
    (slope in n; the (1 - xi)-quantile's slope is reported too) and Thm 3's constant-free envelope
    (the (1 - xi)-quantile of the excess vs Eq. (5) without the c_1..c_3 terms, at the measured
    sup-beta), and Def. 6 / Lemma 1's O(1/n) on Alg. 1's output (removal, shared noise).
"""

from __future__ import annotations

import numpy as np

from stabsim.engine.measures import REPLICATE, mean_ci
from stabsim.setups.p2 import NEIGHBOUR_NOTE, loss_constants
from stabsim.registry import register_check, twin_problem
from stabsim.judging.rules import check_bound, check_rate
from stabsim.analyses.base import CheckResult, figure_name, rate_explanation, sweep_slices
from stabsim.analyses.p2_measures import overlay, quantile_measure, setting

_EXP_RATES = ("P2.Remark2.excess", "P2.Lemma2.excess.exp", "P2.Lemma3.excess.exp")
_HP_RATES = ("P2.Thm3.excess", "P2.Lemma2.excess.hp", "P2.Lemma3.excess.hp")
_GD_KEYS = ("P2.Thm2.excess", "P2.Thm3.excess.explicit", "P2.Lemma1.beta") + _EXP_RATES + _HP_RATES

_PRE_ASYMPTOTIC = ("pre-asymptotic: at these n the Thm 1 noise sigma = 8G sqrt(T log(1/delta))/(n eps) is O(1), "
                   "so the excess risk is dominated by the noise floor p sigma^2/(2 mu) ~ T/n^2 and the "
                   "optimisation term (1 - mu/L)^T gap0, not by the O(.) leading term; see the figure")


class _Slice:
    """One n-sweep slice of a ``p2_gd`` study: the loss constants G, L, p (``stabsim.setups.p2``), eps,
    T(n), sigma(n), the excess risk (replicate, n) and its replicate mean, mu_path and gap0 per data
    set, the figure's setting line."""

    def __init__(self, spec, label, params, sub, xi):
        self.label, self.params, self.sub, self.xi = label, params, sub, xi
        self.ns = sub["n"].values.astype(float)
        _, self.G, self.L, self.p = loss_constants(params["algorithm"]["loss"], twin_problem(params["data"]))
        self.eps = params["p2"]["eps"]
        self.T = sub["T_eff"].values.astype(float)
        self.sigma = sub["sigma_eff"].values.astype(float)
        self.excess = sub["excess"].transpose(REPLICATE, "n")
        self.sfx = f" ({label})" if label else ""
        self.setting = setting(params, f"eps={self.eps}" + ("" if params["p2"]["private"] else " (sigma=0)")
                               + f", T={int(self.T.min())}..{int(self.T.max())}")
        self.mean_m = mean_ci(self.excess)
        self.mean_m.attrs.update(quantity="excess_risk",
                                 note="mean over replicates (fresh D each) of L_test(theta_T) - min L_test")
        self.mu = sub["mu_path"].transpose(REPLICATE, "n")
        self.gap0 = sub["gap0"].transpose(REPLICATE, "n")


def _record_slice(res, s):
    """T, sigma, mu_path, gap0, the mean excess and the ERM certificates into ``res.measured``; a note
    where an ERM (on D or on the test sample) is not certified."""
    sub, sfx, label, mu, gap0 = s.sub, s.sfx, s.label, s.mu, s.gap0
    res.measured[f"T{sfx}"] = s.T.astype(int).tolist()
    res.measured[f"sigma{sfx}"] = [round(float(v), 6) for v in s.sigma]
    if not bool(np.isnan(mu).all()):
        res.measured[f"mu_path median over D{sfx}"] = [float(v) for v in mu.median(REPLICATE).values]
        res.measured[f"gap0 mean{sfx}"] = [float(v) for v in gap0.mean(REPLICATE).values]
    res.measured[f"mean excess{sfx}"] = [float(v) for v in s.mean_m["estimate"].values]
    res.measured[f"max ERM certificate on the test samples{sfx}"] = float(sub["LP_cert"].max())
    if not bool(np.isnan(sub["FS_cert"]).all()):
        res.measured[f"max ERM certificate on D{sfx}"] = float(sub["FS_cert"].max())
    bad_D = int((sub["FS_cert"] > 1e-6).sum())
    if bad_D:
        res.notes.append(f"{label or 'all'}: {bad_D} of {sub['FS_cert'].size} data sets D have an uncertified ERM "
                         "(certificate > 1e-6: the minimiser may not exist, e.g. separable data; PL fails there)")
    if float(sub["LP_cert"].max()) > 1e-6:
        res.notes.append(f"{label or 'all'}: min L_test is not certified (max certificate "
                         f"{float(sub['LP_cert'].max()):.2g}; risk.erm has no curvature certificate for the metric "
                         "forms): the excess uses the solver's value, so it may be low by the solver's error")


def trivial_excess(s, quantile: float | None = None):
    """An upper bound on what the measured excess can reach, per n (None when it cannot be said): P2 Alg. 1
    starts at theta_0 = 0 and takes T steps of size eta = 1/L with gradients of norm <= G plus N(0, sigma^2 I_p)
    noise, so ||theta_T|| <= T G/L + ||sum_t b_t||/L with ||sum_t b_t|| ~ sigma sqrt(T) chi_p.  The excess
    L_test(theta_T) - min L_test <= the sup of the logistic loss at theta_T over the data domain,
    log(1 + e^{c ||theta_T||}) (c ||theta|| = the loss's largest |margin|, linear in ||theta||), which is
    <= log 2 + c ||theta_T||.  Mean (Thm 2): log 2 + c (T G + sigma sqrt(T p))/L (E chi_p <= sqrt p);
    ``quantile`` q (Thm 3's (1 - xi)-quantile): log(1 + e^{c (T G + sigma sqrt(T) chi_p^{-1}(q))/L}), the
    bound being increasing in ||sum_t b_t||."""
    from scipy.stats import chi

    from stabsim.engine.losses import get_loss

    lf = get_loss(s.params["algorithm"]["loss"])
    kappa = twin_problem(s.params["data"]).kappa
    c1, c2 = lf._margin_range(kappa, 1.0), lf._margin_range(kappa, 2.0)
    if not (np.isfinite(c1) and c1 > 0 and abs(c2 - 2 * c1) <= 1e-9 * c2):
        return None      # the margin is not linear in ||theta||: no simple cap
    noise = s.sigma * np.sqrt(s.T) * (np.sqrt(s.p) if quantile is None else chi.ppf(quantile, s.p))
    reach = (s.T * s.G + noise) / s.L
    return np.log(2.0) + c1 * reach if quantile is None else np.logaddexp(0.0, c1 * reach)


def _thm2_row(res, s, rows, entries):
    """P2 Thm 2 (EXPLICIT-DD): the mean excess vs the mean over D of the bound at each D's measured
    gap0 and mu_path; appends (verdict, explanation) to ``rows`` and the curve to ``entries``."""
    from stabsim.theory import get

    T, ns, p, G, L, mu, gap0 = s.T, s.ns, s.p, s.G, s.L, s.mu, s.gap0
    if bool(np.isnan(mu).any()):
        raise ValueError("mu_path is NaN for some data set (no step with L - L* > 1e-9)")
    b_r = get("P2.Thm2.excess")(T=T[None, :], n=ns[None, :], p=p, G=G, L=L, mu=np.minimum(mu.values, L * (1 - 1e-12)),
                                sigma=s.sigma[None, :], gap0=np.maximum(gap0.values, 0.0))
    bound = b_r.mean(axis=0)
    triv = trivial_excess(s)
    v = check_bound(s.mean_m, bound, "EXPLICIT-DD", key="P2.Thm2.excess", trivial_bound=triv,
                    notes=[f"G = {G:.4g}, L = {L:.4g} (eta = 1/L), p = {p}",
                           "trivial bound of the mean excess: " + ("none (margin not linear in ||theta||)" if triv is None
                           else "log 2 + c (T G + sigma sqrt(T p))/L = " + ", ".join(f"{x:.3g}" for x in triv)),
                           "bound averaged over D at each D's measured gap0 and mu_path (E_D of the "
                           "conditional bound)", "mu_path >= Def. 5's mu: the bound used is the smaller one"])
    rows.append((v, None if v.ok else "mean excess risk above Thm 2's bound: " + "; ".join(v.notes)))
    entries.append((get("P2.Thm2.excess"), bound))
    res.measured[f"Thm 2 bound (mean over D){s.sfx}"] = [float(x) for x in bound]


def _rate_rows(s, keys, q_m, rows, entries):
    """P2 Remark 2, Lemma 2 / 3 (in expectation and with high probability) and Thm 3 (RATE): the slope
    in n of the mean excess (the (1 - xi)-quantile's slope is noted for the high-probability claims)."""
    from stabsim.theory import get

    ns, xi, params, T = s.ns, s.xi, s.params, s.T
    for key in [k for k in keys if k in _EXP_RATES + _HP_RATES]:
        b = get(key)
        expo = float(b.rate["n"])
        bvals = b(n=ns, p=s.p, eps=s.eps)
        notes = [f"n in {ns.astype(int).tolist()}, T = {T.astype(int).tolist()} "
                 f"({params['p2']['T_rule']} rule, c_T = {params['p2']['c_T']}), sigma = "
                 f"{np.round(s.sigma, 4).tolist()}"]
        if key in _HP_RATES:
            qs = np.polyfit(np.log(ns), np.log(np.maximum(q_m['estimate'].values, 1e-300)), 1)[0]
            notes.append(f"slope of the mean excess; the ({1 - xi:g})-quantile's slope is {qs:.3g} (point estimate)")
        v = check_rate(ns, s.excess.values, expo, "upper", key=key, quantity="excess_risk", paired=True,
                       bound_values=bvals, notes=notes)
        entries.append((b, bvals))
        expl = rate_explanation(v, f"the mean excess decays more slowly than n^{expo:g} on this range: "
                                   + _PRE_ASYMPTOTIC + ". " + "; ".join(v.notes))
        if v.verdict == "faster than claimed":
            expl = ("consistent: the excess decays faster than the O(.) claim on this range (exponent not "
                    "attained). With sigma^2 ~ T log(1/delta)/(n eps)^2 the noise terms (p sigma^2/(2 mu), "
                    "p T^2 sigma^2 in Thm 2's A) fall like log(n)/n^2 and still dominate the statistical ~1/n term "
                    "at these n, so the local slope lies between -1 and -2")
        rows.append((v, expl))


def _thm3_envelope(res, s, q_m):
    """P2 Thm 3, Eq. (5) without the c_1..c_3 terms (EXPLICIT-DD): the (1 - xi)-quantile of the excess
    vs the constant-free envelope at the measured sup-beta, M_ell and mu (each making it smaller)."""
    from stabsim.theory import get

    sub, ns, xi, label, setting_ = s.sub, s.ns, s.xi, s.label, s.setting
    if sub.sizes.get("k", 0) == 0:
        raise ValueError("P2.Thm3.excess.explicit needs [p2] removals >= 1 (measured sup-beta)")
    nb = sub["beta_n"].max("k") * sub["n"]                # n * beta_n, sup over the K removed i
    sup_beta = nb.max(REPLICATE).values                   # sup over D and noise seen
    M = sub["M_ell"].max(REPLICATE).values
    mu_max = sub["mu_path"].max(REPLICATE).values
    env = get("P2.Thm3.excess.explicit")(n=ns, sup_Ebeta=sup_beta, M_ell=M, G=s.G, mu=mu_max, xi=xi)
    q_m.attrs["quantity"] = "excess_risk"
    q_m.attrs["gamma"] = xi
    triv = trivial_excess(s, quantile=1.0 - xi)
    v = check_bound(q_m, env, "EXPLICIT-DD", key="P2.Thm3.excess.explicit", quantity="excess_risk",
                    trivial_bound=triv,
                    notes=["trivial bound of the quantile: " + ("none" if triv is None else
                           "log(1 + e^{c (T G + sigma sqrt(T) chi_p^-1(1 - xi))/L}) = " + ", ".join(f"{x:.3g}" for x in triv)),f"measured: the ({1 - xi:g})-quantile over D and noise of the excess risk (order-"
                           "statistic CI), xi = " + f"{xi:g}",
                           "envelope = Eq. (5) without the c_1, c_2, c_3 terms, at sup-beta = max over D of "
                           "max over the K removed i of n beta_n (<= the true sup), M_ell = max over D of the "
                           "sup loss at theta_T (<= the true M_ell), mu = max over D of mu_path (>= each D's "
                           "mu): every input makes the envelope smaller than the theorem's right-hand side",
                           NEIGHBOUR_NOTE])
    fig = overlay(res, figure_name("P2.Thm3.excess.explicit", label), q_m,
                  [("P2 Thm 3 Eq. (5) without the c_1..c_3 terms (a lower envelope of the bound)", env)],
                  [v], setting_, ylabel=f"{1 - xi:g}-quantile of L_P(θ_T) − min L_P",
                  title=f"P2 Theorem 3, Eq. (5): excess risk, {setting_}")
    expl = None
    if not v.ok:
        expl = ("inconclusive, not a violation: the envelope omits the c_1..c_3 terms of Eq. (5) (unspecified "
                "constants), so the full bound is larger; " + "; ".join(v.notes))
    res.add(v, figure=fig, label=label or None, explanation=expl)
    sfx = s.sfx
    res.measured[f"sup-beta = max n beta_n{sfx}"] = [float(x) for x in sup_beta]
    res.measured[f"M_ell{sfx}"] = [float(x) for x in M]
    res.measured[f"mu (max over D){sfx}"] = [float(x) for x in mu_max]
    res.measured[f"mean ||theta_T - theta_T(D^-i)||{sfx}"] = [float(x) for x in sub["dist_removed"].mean((REPLICATE, "k")).values]


def _lemma1_on_gd(res, s):
    """Def. 6 / P2 Lemma 1's O(1/n) (RATE) measured on Alg. 1's output theta_T (removal, shared noise),
    not on Lemma 1's ERM (that is ``p2_lemma1``)."""
    from stabsim.theory import get

    sub, ns, label = s.sub, s.ns, s.label
    if sub.sizes.get("k", 0) == 0:
        raise ValueError("P2.Lemma1.beta on p2_gd needs [p2] removals >= 1")
    bl = get("P2.Lemma1.beta")
    y = sub["beta_n"].max("k").transpose(REPLICATE, "n")
    mb = mean_ci(y)
    mb.attrs.update(quantity="locally_elastic_beta")
    bv = bl(n=ns)
    v = check_rate(ns, y.values, float(bl.rate["n"]), "upper", key="P2.Lemma1.beta",
                   quantity="locally_elastic_beta", paired=True, bound_values=bv,
                   notes=["measured on Alg. 1's output theta_T (noisy GD, T by the study's rule), not on "
                          "Lemma 1's ERM A*_D (see p2_lemma1_elastic for that)", NEIGHBOUR_NOTE,
                          f"sup over z_i estimated by the max over K = {sub.sizes['k']} removed points"])
    fig = overlay(res, figure_name("P2.Lemma1.beta", label), mb, [(bl, bv)], [v], s.setting,
                  ylabel="max_i mean_pairs β_n(z_i; z′, z″) of θ_T (removal)")
    expl = rate_explanation(v, "beta_n of the noisy GD output decays more slowly than 1/n on this range "
                               "(Lemma 1 is stated for the ERM; T grows like log n here): " + "; ".join(v.notes))
    if v.verdict == "faster than claimed":
        expl = "consistent (decays at least as fast as 1/n) but the exponent itself is not attained"
    res.add(v, figure=fig, label=(label + ", " if label else "") + "Alg. 1 theta_T", explanation=expl)
    res.measured[f"mean max_i beta_n of theta_T{s.sfx}"] = [float(x) for x in mb["estimate"].values]


@register_check("p2_excess", description="P2 Thm 2 / Thm 3 / Remark 2 / Lemmas 2-3: excess risk of Alg. 1 vs n")
def check_excess(spec, ds) -> CheckResult:
    """P2 Thm 2, the rate claims (Remark 2, Lemmas 2 / 3, Thm 3), Thm 3's constant-free envelope and
    Lemma 1 on Alg. 1's output, on a ``p2_gd`` study swept over n: whichever keys the study lists."""
    res = CheckResult()
    keys = [k for k in spec.bounds.get("keys", []) if k in _GD_KEYS]
    if not keys:
        raise ValueError(f"[bounds] keys names none of {_GD_KEYS}")
    if "n" not in ds.dims or ds.sizes["n"] < 2:
        raise ValueError("p2_excess needs a [sweep] n with at least 2 values")
    xi = spec.sections["p2"]["xi"]
    for label, params, sub in sweep_slices(spec, ds, consumed=("n",)):
        s = _Slice(spec, label, params, sub, xi)
        _record_slice(res, s)
        rows, entries = [], []
        if "P2.Thm2.excess" in keys:
            _thm2_row(res, s, rows, entries)
        q_m = quantile_measure(s.excess, 1 - xi)
        _rate_rows(s, keys, q_m, rows, entries)
        if rows:  # one figure for every key compared with the mean excess
            fig = overlay(res, figure_name(rows[0][0].key, label), s.mean_m, entries, [r[0] for r in rows], s.setting,
                          ylabel="E[L_P(θ_T)] − min L_P")
            for v, expl in rows:
                res.add(v, figure=fig, label=label or None, explanation=expl)
        if "P2.Thm3.excess.explicit" in keys:
            _thm3_envelope(res, s, q_m)
        if "P2.Lemma1.beta" in keys:
            _lemma1_on_gd(res, s)
    res.notes.append("stability measurements (beta_n, ||theta_T(D) - theta_T(D^{-i})||, sup-beta of Thm 3): "
                     + NEIGHBOUR_NOTE + ". The excess-risk measurements involve no neighbour.")
    res.notes.append("excess risk: L_test(theta_T) - min L_test on a fresh test sample per replicate (U-statistic over "
                     "all ordered pairs; certified ERM); its expectation is >= L_P(theta_T) - min L_P (conservative).")
    res.notes.append("G, L: per-pair constants of the loss for ||x|| <= kappa (|phi'| <= 1, phi'' <= 1/4), not the "
                     "printed Lemma 2/3 values (errata P2-E3); eta = 1/L; Alg. 1 unprojected (P2-E2).")
    res.notes.append("RATE rows: the O(.) curve is drawn with constant 1; only the slope in n is tested (upper rule, "
                     "paired bootstrap over replicates: replicate r's data set, test sample and noise at every n are functions "
                     "of r alone, so whole rows are resampled).")
    return res
