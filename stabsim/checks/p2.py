"""P2 (Kang, Liu, Li, Wang: sharper utility bounds for DP pairwise learning): the study kinds
``p2_gd``, ``p2_elastic``, ``p2_privacy`` and the analysis checks of ``studies/p2_*.toml``.

Neighbour relation.  P2's stability notions (Def. 6 pairwise locally elastic stability,
Def. 7, Lemma 1, Thm 3) use REMOVAL: D^{-i} = D with z_i removed (n - 1 points).  Every
stability number below is measured with exact removal: ``kernels/p2_removal.py`` re-runs
Alg. 1 on D^{-i} with the same noise b_1..b_T (coupled), and ``stabsim.elastic`` re-solves
the ERM on D^{-i} (exact leave-one-out) for Lemma 1.  The twin kernel's replace-one coupling
is NOT used for any P2 stability number.  P2's DP definition (Thm 1) uses replacement
("differing by one single entry"); the privacy check uses the replace-one sensitivity 4G/n.

Kind ``p2_gd``  (P2 Alg. 1, full batch over all ordered pairs, eta = 1/L, theta_0 = 0,
    last iterate, no projection (P2-E2), sigma = 8 G sqrt(T log(1/delta))/(n eps) (Thm 1,
    equality) or 0 with ``[p2] private = false``; T fixed or by the Remark 2 / Thm 3 rule
    T = ceil(c_T log(n eps / sqrt(p))) / ceil(c_T log(sqrt(n) eps)).  One data set per
    replicate (the expectations of Thms 2/3 are over D and the noise).  Per replicate:

    ``excess``   L_test(theta_T) - min_theta L_test, where L_test is the U-statistic over all
                 ordered pairs of a fresh test sample of size ``m_test`` (independent of D) and
                 the minimum is the certified ERM on that sample.  E[L_test(theta) - min L_test]
                 >= L_P(theta) - min L_P (E min L_test <= min L_P), so the estimate is biased
                 UP (conservative for an upper bound), by about the ERM optimism ~ p/m_test.
    ``gap0``     L(theta_0; D) - L(theta*; D) (Thm 2's data-dependent term; certified ERM on D).
    ``mu_path``  min over t < T of ||grad L(theta_t; D)||^2 / (2 (L(theta_t; D) - L(theta*; D))):
                 the PL constant (Def. 5) at the iterates the run visited.  It is >= the PL
                 constant of Def. 5 (an infimum over all theta), so bounds decreasing in mu
                 evaluated at it are SMALLER than with the true mu (a stricter test).
    ``beta_n``   (replicate, k) mean over the ordered pairs of ``m_beta`` fresh test points of
                 |l(theta_T(D); z', z'') - l(theta_T(D^{-i}); z', z'')|, i = k = 0..K-1 (the data
                 are i.i.d., so the first K points are a uniform random subset), shared noise.
    ``M_ell``    sup of the loss at theta_T over the data domain (||x|| <= kappa): phi(-sup|m|).
    plus ``theta_norm``, ``dist_removed`` ||theta_T(D) - theta_T(D^{-i})||, ``FS_T``, ``LP_T``.

Kind ``p2_elastic``  (P2 Lemma 1 for A*_D = argmin L(.; D), via ``stabsim.elastic``): per
    replicate (own D) and removed index i = 0..K-1, beta_n(z_i; z', z'') averaged over the
    ordered pairs of a fresh test sample, by exact leave-one-out and by the pairwise influence
    function (Eq. 4); ``beta_sup`` = max over i (a lower bound on the sup over z_i).

Kind ``p2_privacy``  (Thm 1): for (T, n, eps, delta) the printed sigma and the smallest sigma
    for which the dp_accounting PLD (and RDP) accountant certifies (eps, delta)-DP of the
    T-fold composition of Gaussian mechanisms with replace-one sensitivity 4G/n
    (``privacy.accountant.p2_gradient_perturbation``).  Deterministic (one replicate).

Checks
    ``p2_excess``   Thm 2 (EXPLICIT-DD, mean excess vs the mean over D of the bound at the
                    measured gap0 and mu_path), Remark 2 / Lemma 2 / Lemma 3 rates (slope in n of
                    the mean excess), Thm 3 rate (slope in n; the (1 - xi)-quantile's slope is
                    reported too) and Thm 3's constant-free envelope (the (1 - xi)-quantile of the
                    excess vs Eq. (5) without the c_1..c_3 terms, at the measured sup-beta).
    ``p2_lemma1``   Lemma 1: slope in n of beta_n (exact removal) vs O(1/n).
    ``p2_thm1``     Thm 1: sigma needed by the accountant vs the printed sigma.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import xarray as xr

from ..measures import REPLICATE, empirical_quantile_index, mean_ci, order_statistic_ci_indices
from ..study import (TWIN_DATA, Param, StudyError, StudySpec, _problem, boolean, choice, integer, number,
                     register_kind)
from ..verdicts import check_bound, check_rate
from ..analyses.base import CheckResult, figure_name, rate_explanation, register_check, sweep_slices

_DATA = {k: TWIN_DATA[k] for k in ("problem", "d", "n", "seed", "gamma", "rho", "pi", "flip", "kappa")}
_P2_LOSSES = ("ranking_logistic", "auc_logistic", "auc_ordered_logistic", "metric_logistic")
_LINEAR = ("ranking_logistic", "auc_logistic", "auc_ordered_logistic")

NEIGHBOUR_NOTE = ("neighbour relation: REMOVAL (D^{-i} = D without z_i, n - 1 points, P2 Def. 6), exact: "
                  "Alg. 1 re-run on D^{-i} with the same noise b_1..b_T (not the twin kernel's replace-one proxy)")


# =============================================================================================
# shared helpers
# =============================================================================================

def _loss_constants(loss_name, pb):
    """(Loss, G, L, p) for P2's assumptions: G-Lipschitz and L-smooth per pair (Defs. 3, 4) over
    data with ||x|| <= kappa = pb.kappa, labels in {-1, +1}; unconstrained (Alg. 1 has no
    projection).  Logistic phi: |phi'| <= 1, phi'' <= 1/4."""
    from ..losses import get_loss

    lf = get_loss(loss_name)
    G, L = lf.G(pb.kappa), lf.L(pb.kappa)
    if not (math.isfinite(G) and math.isfinite(L)):
        raise ValueError(f"P2 needs a G-Lipschitz, L-smooth loss; {loss_name!r} has G = {G}, L = {L} unconstrained")
    p = pb.d * pb.d if lf.matrix else pb.d
    return lf, float(G), float(L), int(p)


def _pair_values(lf, w, Xa, ya, Xb, yb):
    """l(w; z_a, z_b) for aligned arrays of pairs (linear forms via ``elastic``, metric by hand)."""
    if not lf.matrix:
        from ..elastic import _pair_values as lin

        return lin(lf, w, Xa, ya, Xb, yb)
    d = Xa.shape[1]
    Th = np.asarray(w, float).reshape(d, d)
    D = Xa - Xb
    quad = np.einsum("mi,ij,mj->m", D, Th, D)
    m = ya * yb * (1.0 - quad)
    return np.logaddexp(0.0, -m)


def _sup_loss(lf, kappa, norm):
    """sup over ||x|| <= kappa, |y| <= 1 of the logistic loss at a parameter of norm ``norm``."""
    return float(np.logaddexp(0.0, lf._margin_range(kappa, norm)))


def _T_of(rule, c_T, n, eps, p, T_fixed):
    """T of P2 Remark 2 ('remark2': T = O(log(n eps / sqrt(p)))) or Thm 3 ('thm3': T = O(log(sqrt(n) eps))),
    with the O(.) constant c_T chosen in the study file; 'fixed': T_fixed.  At least 1."""
    if rule == "fixed":
        return int(T_fixed)
    arg = n * eps / math.sqrt(p) if rule == "remark2" else math.sqrt(n) * eps
    return max(1, int(math.ceil(c_T * math.log(max(arg, 1.0 + 1e-12)))))


def _effective(params):
    """(T, sigma, eta, G, L, p, Loss, problem) of a p2_gd cell."""
    from ..privacy.calibration import p2_sigma

    d, a, s = params["data"], params["algorithm"], params["p2"]
    pb = _problem(d)
    lf, G, L, p = _loss_constants(a["loss"], pb)
    T = _T_of(s["T_rule"], s["c_T"], d["n"], s["eps"], p, a["T"])
    sigma = p2_sigma(T, d["n"], G, s["eps"], s["delta"]) if s["private"] else 0.0
    return T, float(sigma), 1.0 / L, G, L, p, lf, pb


# =============================================================================================
# kind p2_gd
# =============================================================================================

_GD_ALG = {
    "loss": Param("a G-Lipschitz, L-smooth pairwise loss", "ranking_logistic", choice(_P2_LOSSES)),
    "T": Param("number of GD steps when [p2] T_rule = 'fixed'", 10, integer(1, " (the number of steps)")),
}
_GD_P2 = {
    "eps": Param("privacy budget epsilon (Thm 1 sigma; also in the T rules)", 1.0, number(gt=0)),
    "delta": Param("privacy delta (Thm 1)", 1e-5, number(gt=0, lt=1), sweepable=False),
    "private": Param("add the Thm 1 noise (false: sigma = 0)", True, boolean),
    "T_rule": Param("'fixed', 'remark2' (T = ceil(c_T log(n eps/sqrt p))) or 'thm3' (T = ceil(c_T log(sqrt(n) eps)))",
                    "fixed", choice(("fixed", "remark2", "thm3")), sweepable=False),
    "c_T": Param("O(.) constant of the T rule, fixed in the study file", 1.0, number(gt=0), sweepable=False),
    "removals": Param("K: removal neighbours D^{-i}, i = 0..K-1, per data set (0: none)", 0, integer(0),
                      sweepable=False),
    "m_test": Param("fresh test sample size (L_P as a U-statistic over its ordered pairs)", 800,
                    integer(10, " (test sample size)"), sweepable=False),
    "m_beta": Param("test points whose ordered pairs estimate E_{z',z''} beta", 150, integer(3), sweepable=False),
    "xi": Param("failure probability xi of Thm 3 (analysis only)", 0.1, number(gt=0, lt=1), sweepable=False),
    "erm_D": Param("certified ERM on D (gap0, mu_path; needed by Thm 2 and the Thm 3 envelope)", True, boolean,
                   sweepable=False),
}


def _validate_gd(spec):
    for cell in spec.cells():
        p = spec.cell_params(cell)
        try:
            T, sigma, eta, G, L, pdim, lf, pb = _effective(p)
        except ValueError as e:
            raise StudyError(f"p2_gd: cell {cell.coords}: {e}") from None
        if lf.matrix != (pb.name == "metric"):
            raise StudyError(f"p2_gd: loss {lf.name!r} and problem {pb.name!r} do not match "
                             "(metric_logistic goes with problem 'metric', the linear losses with auc_*)")
        if p["p2"]["removals"] > p["data"]["n"]:
            raise StudyError(f"p2_gd: [p2] removals = {p['p2']['removals']} exceeds n = {p['data']['n']}")


@register_kind("p2_gd", params={"data": _DATA, "algorithm": _GD_ALG, "p2": _GD_P2}, validate=_validate_gd,
               description="P2 Alg. 1 on D and on removal neighbours D^{-i} (shared noise) + excess risk, PL, beta")
def p2_gd_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``p2_gd`` study (see the module docstring)."""
    from .. import rng
    from ..kernels.p2_removal import p2_removal_kernel
    from ..risk import empirical_risk, erm

    p = spec.cell_params(cell)
    d, s = p["data"], p["p2"]
    T, sigma, eta, G, L, pdim, lf, pb = _effective(p)
    n = d["n"]
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    reps = np.asarray(replicates, dtype=np.int64)
    R = reps.size
    sets = [pb.sample(n, data_seed, int(r)) for r in reps]
    X = np.ascontiguousarray(np.stack([a for a, _ in sets]), dtype=np.float64)
    Y = np.ascontiguousarray(np.stack([b for _, b in sets]), dtype=np.float64)
    K = int(s["removals"])
    removes = np.tile(np.arange(K, dtype=np.int64), (R, 1)).reshape(R, K)
    W, WR, FS, GN = p2_removal_kernel(X, Y, lf.form, lf.phi, float(lf.q), float(eta), float(sigma), int(T),
                                      np.int64(spec.seed), reps, removes, np.array([T], dtype=np.int64), pdim)
    theta = W[:, 0]
    out = {k: np.full(R, np.nan) for k in ("excess", "LP_T", "LP_min", "LP_cert", "FS_T", "FS_min", "FS_cert",
                                           "gap0", "mu_path", "theta_norm", "M_ell")}
    beta = np.full((R, K), np.nan)
    dist = np.full((R, K), np.nan)
    for r in range(R):
        Xt, yt = pb.sample(s["m_test"], data_seed, int(reps[r]), stream=rng.STREAM_SPLIT)
        et = erm(Xt, yt, lf, tol=1e-10)
        ed = erm(X[r], Y[r], lf, tol=1e-10) if s["erm_D"] else None
        LPT = float(empirical_risk(theta[r], Xt, yt, lf))
        out["LP_T"][r], out["LP_min"][r], out["LP_cert"][r] = LPT, et.value, et.certificate
        out["excess"][r] = LPT - et.value
        out["FS_T"][r] = FS[r, T]
        if ed is not None:
            out["FS_min"][r], out["FS_cert"][r] = ed.value, ed.certificate
            out["gap0"][r] = FS[r, 0] - ed.value
            gaps = FS[r, :T] - ed.value
            ok = gaps > 1e-9
            out["mu_path"][r] = float(np.min(GN[r, :T][ok] / (2.0 * gaps[ok]))) if ok.any() else np.nan
        nrm = float(np.linalg.norm(theta[r]))
        out["theta_norm"][r] = nrm
        out["M_ell"][r] = _sup_loss(lf, pb.kappa, nrm)
        if K:
            mb = min(s["m_beta"], s["m_test"])
            a_, b_ = np.nonzero(~np.eye(mb, dtype=bool))
            Xa, ya, Xb, yb = Xt[a_], yt[a_], Xt[b_], yt[b_]
            l_full = _pair_values(lf, theta[r], Xa, ya, Xb, yb)
            for k in range(K):
                beta[r, k] = float(np.mean(np.abs(l_full - _pair_values(lf, WR[r, k], Xa, ya, Xb, yb))))
                dist[r, k] = float(np.linalg.norm(theta[r] - WR[r, k]))
    long = {"excess": "L_test(theta_T) - min L_test (fresh test sample; conservative estimate of L_P(theta_T) - min L_P)",
            "LP_T": "L_test(theta_T)", "LP_min": "min L_test (certified ERM value)", "LP_cert": "ERM certificate on the test sample",
            "FS_T": "L(theta_T; D)", "FS_min": "L(theta*; D) (certified ERM)", "FS_cert": "ERM certificate on D",
            "gap0": "L(theta_0; D) - L(theta*; D)", "mu_path": "min_t ||grad L(theta_t;D)||^2 / (2 (L(theta_t;D) - L*))",
            "theta_norm": "||theta_T||", "M_ell": "sup of the loss at theta_T over the data domain"}
    ds = xr.Dataset(coords={REPLICATE: reps})
    for k, v in out.items():
        ds[k] = (REPLICATE, v, {"long_name": long[k], "units": "1"})
    if K:  # (netCDF cannot hold a zero-length dim here)
        ds = ds.assign_coords(k=np.arange(K))
        ds["beta_n"] = ((REPLICATE, "k"), beta, {"long_name": "mean over test pairs of |l(theta_T(D)) - "
                                                "l(theta_T(D^{-i}))|", "units": "1", "neighbour_relation": "remove-one"})
        ds["dist_removed"] = ((REPLICATE, "k"), dist, {"long_name": "||theta_T(D) - theta_T(D^{-i})||", "units": "1"})
    ds["T_eff"] = ((), int(T))
    ds["sigma_eff"] = ((), float(sigma))
    ds["eta_eff"] = ((), float(eta))
    ds.attrs.update(problem=pb.name, data_seed=int(data_seed), data_sets="per-replicate", algorithm="P2 Alg. 1",
                    neighbour_relation="remove-one", neighbour="D^{-i} = D without z_i, i = 0..K-1 (exact removal)",
                    noise="shared between D and every D^{-i}", G=G, L=L, p=pdim, kappa=float(pb.kappa),
                    loss=lf.name)
    return ds


# =============================================================================================
# kind p2_elastic (Lemma 1, ERM)
# =============================================================================================

_EL = {
    "loss": Param("a smooth linear pairwise loss", "ranking_logistic", choice(_LINEAR)),
    "reg": Param("lambda of (lambda/2)||w||^2 (0 = Lemma 1 as printed)", 0.0, number(ge=0), sweepable=False),
    "removals": Param("K: removed indices i = 0..K-1 per data set", 8, integer(1), sweepable=False),
    "m_test": Param("fresh test points whose ordered pairs estimate E_{z',z''} beta", 150, integer(3),
                    sweepable=False),
}


@register_kind("p2_elastic", params={"data": _DATA, "elastic": _EL},
               description="P2 Lemma 1: locally elastic stability of ERM, exact leave-one-out vs influence function")
def p2_elastic_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``p2_elastic`` study (see the module docstring)."""
    from .. import rng
    from ..elastic import locally_elastic_stability

    p = spec.cell_params(cell)
    d, e = p["data"], p["elastic"]
    pb = _problem(d)
    n = d["n"]
    K = min(int(e["removals"]), n)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    reps = np.asarray(replicates, dtype=np.int64)
    R = reps.size
    bm = np.full((R, K, 2), np.nan)
    rel = np.full((R, K), np.nan)
    cert = np.full(R, np.nan)
    for r in range(R):
        X, y = pb.sample(n, data_seed, int(reps[r]))
        Xt, yt = pb.sample(e["m_test"], data_seed, int(reps[r]), stream=rng.STREAM_SPLIT)
        a_, b_ = np.nonzero(~np.eye(len(yt), dtype=bool))
        res = locally_elastic_stability(X, y, e["loss"], reg=e["reg"], indices=np.arange(K),
                                        test_pairs=(Xt[a_], yt[a_], Xt[b_], yt[b_]), tol=1e-11)
        bm[r] = res["beta_mean"].transpose("i", "estimator").sel(estimator=["exact", "influence"]).values
        rel[r] = res["rel_err"].values
        cert[r] = max(float(res.attrs["cert_full"]), float(np.nanmax(res["cert_loo"].values)))
    ds = xr.Dataset(coords={REPLICATE: reps, "k": np.arange(K), "estimator": ["exact", "influence"]})
    ds["beta_n"] = ((REPLICATE, "k", "estimator"), bm,
                    {"long_name": "mean over test pairs of |l(A*_D; z', z'') - l(A*_{D^{-i}}; z', z'')|", "units": "1",
                     "neighbour_relation": "remove-one"})
    ds["rel_err"] = ((REPLICATE, "k"), rel, {"long_name": "||delta_influence - delta_exact|| / ||delta_exact||"})
    ds["erm_cert"] = (REPLICATE, cert, {"long_name": "max ERM certificate (D and every D^{-i})"})
    ds.attrs.update(problem=pb.name, data_seed=int(data_seed), neighbour_relation="remove-one",
                    neighbour="D^{-i} = D without z_i, i = 0..K-1, exact leave-one-out ERM", loss=e["loss"],
                    reg=float(e["reg"]))
    return ds


# =============================================================================================
# kind p2_privacy (Thm 1)
# =============================================================================================

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
    from ..privacy import accountant as acc

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


# =============================================================================================
# checks
# =============================================================================================

def _setting(params, extra=""):
    d, a = params["data"], params["algorithm"]
    s = f"{a['loss']}, {d['problem']}"
    return s + (f", {extra}" if extra else "")


def _overlay(res, name, measure, entries, verdicts, setting, x="n", title=None, ylabel=None):
    from ..plots import plot_bound_overlay

    fig = plot_bound_overlay(measure, entries, verdicts=verdicts, x=x, setting=setting, title=title, ylabel=ylabel)
    return res.figure(name, fig)


def _quantile_measure(values, p, level=0.95):
    """(1 - xi)-quantile over replicates along the remaining dim, distribution-free order-statistic CI."""
    dims = [dd for dd in values.dims if dd != REPLICATE]
    v = values.transpose(REPLICATE, *dims).values
    R = v.shape[0]
    srt = np.sort(v, axis=0)
    l, u, cov = order_statistic_ci_indices(R, p, level)
    est = srt[empirical_quantile_index(R, p) - 1]
    lower = srt[l - 1] if l >= 1 else np.full(est.shape, -np.inf)
    upper = srt[u - 1] if u <= R else np.full(est.shape, np.inf)
    coords = {dd: values[dd].values for dd in dims}
    m = xr.Dataset({"estimate": (dims, est), "lower": (dims, lower), "upper": (dims, upper)}, coords=coords)
    m.attrs.update(n_replicates=R, level=level, ci_method=f"distribution-free order statistics (coverage {cov:.3f})")
    return m


_EXP_RATES = ("P2.Remark2.excess", "P2.Lemma2.excess.exp", "P2.Lemma3.excess.exp")
_HP_RATES = ("P2.Thm3.excess", "P2.Lemma2.excess.hp", "P2.Lemma3.excess.hp")
_GD_KEYS = ("P2.Thm2.excess", "P2.Thm3.excess.explicit", "P2.Lemma1.beta") + _EXP_RATES + _HP_RATES

_PRE_ASYMPTOTIC = ("pre-asymptotic: at these n the Thm 1 noise sigma = 8G sqrt(T log(1/delta))/(n eps) is O(1), "
                   "so the excess risk is dominated by the noise floor p sigma^2/(2 mu) ~ T/n^2 and the "
                   "optimisation term (1 - mu/L)^T gap0, not by the O(.) leading term; see the figure")


@register_check("p2_excess", description="P2 Thm 2 / Thm 3 / Remark 2 / Lemmas 2-3: excess risk of Alg. 1 vs n")
def check_excess(spec, ds) -> CheckResult:
    from ..theory import get

    res = CheckResult()
    keys = [k for k in spec.bounds.get("keys", []) if k in _GD_KEYS]
    if not keys:
        raise ValueError(f"[bounds] keys names none of {_GD_KEYS}")
    if "n" not in ds.dims or ds.sizes["n"] < 2:
        raise ValueError("p2_excess needs a [sweep] n with at least 2 values")
    xi = spec.sections["p2"]["xi"]
    for label, params, sub in sweep_slices(spec, ds, consumed=("n",)):
        ns = sub["n"].values.astype(float)
        _, G, L, p = _loss_constants(params["algorithm"]["loss"], _problem(params["data"]))
        eps = params["p2"]["eps"]
        T = sub["T_eff"].values.astype(float)
        sigma = sub["sigma_eff"].values.astype(float)
        excess = sub["excess"].transpose(REPLICATE, "n")
        sfx = f" ({label})" if label else ""
        setting = _setting(params, f"eps={eps}" + ("" if params["p2"]["private"] else " (sigma=0)")
                           + f", T={int(T.min())}..{int(T.max())}")
        mean_m = mean_ci(excess)
        mean_m.attrs.update(quantity="excess_risk", note="mean over replicates (fresh D each) of L_test(theta_T) - min L_test")
        mu = sub["mu_path"].transpose(REPLICATE, "n")
        gap0 = sub["gap0"].transpose(REPLICATE, "n")
        res.measured[f"T{sfx}"] = T.astype(int).tolist()
        res.measured[f"sigma{sfx}"] = [round(float(v), 6) for v in sigma]
        if not bool(np.isnan(mu).all()):
            res.measured[f"mu_path median over D{sfx}"] = [float(v) for v in mu.median(REPLICATE).values]
            res.measured[f"gap0 mean{sfx}"] = [float(v) for v in gap0.mean(REPLICATE).values]
        res.measured[f"mean excess{sfx}"] = [float(v) for v in mean_m["estimate"].values]
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
        rows, entries = [], []
        # ---- Thm 2 (EXPLICIT-DD) --------------------------------------------------------------
        if "P2.Thm2.excess" in keys:
            if bool(np.isnan(mu).any()):
                raise ValueError("mu_path is NaN for some data set (no step with L - L* > 1e-9)")
            b_r = get("P2.Thm2.excess")(T=T[None, :], n=ns[None, :], p=p, G=G, L=L, mu=np.minimum(mu.values, L * (1 - 1e-12)),
                              sigma=sigma[None, :], gap0=np.maximum(gap0.values, 0.0))
            bound = b_r.mean(axis=0)
            v = check_bound(mean_m, bound, "EXPLICIT-DD", key="P2.Thm2.excess",
                            notes=[f"G = {G:.4g}, L = {L:.4g} (eta = 1/L), p = {p}",
                                   "bound averaged over D at each D's measured gap0 and mu_path (E_D of the "
                                   "conditional bound)", "mu_path >= Def. 5's mu: the bound used is the smaller one"])
            rows.append((v, None if v.ok else "mean excess risk above Thm 2's bound: " + "; ".join(v.notes)))
            entries.append((get("P2.Thm2.excess"), bound))
            res.measured[f"Thm 2 bound (mean over D){sfx}"] = [float(x) for x in bound]
        # ---- rates -----------------------------------------------------------------------------
        q_m = _quantile_measure(excess, 1 - xi)
        for key in [k for k in keys if k in _EXP_RATES + _HP_RATES]:
            b = get(key)
            expo = float(b.rate["n"])
            bvals = b(n=ns, p=p, eps=eps)
            notes = [f"n in {ns.astype(int).tolist()}, T = {T.astype(int).tolist()} "
                     f"({params['p2']['T_rule']} rule, c_T = {params['p2']['c_T']}), sigma = "
                     f"{np.round(sigma, 4).tolist()}"]
            if key in _HP_RATES:
                qs = np.polyfit(np.log(ns), np.log(np.maximum(q_m['estimate'].values, 1e-300)), 1)[0]
                notes.append(f"slope of the mean excess; the ({1 - xi:g})-quantile's slope is {qs:.3g} (point estimate)")
            v = check_rate(ns, excess.values, expo, "upper", key=key, quantity="excess_risk", paired=True,
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
        if rows:  # one figure for every key compared with the mean excess
            fig = _overlay(res, figure_name(rows[0][0].key, label), mean_m, entries, [r[0] for r in rows], setting,
                           ylabel="E[L_P(θ_T)] − min L_P")
            for v, expl in rows:
                res.add(v, figure=fig, label=label or None, explanation=expl)
        # ---- Thm 3, constant-free envelope ------------------------------------------------------
        if "P2.Thm3.excess.explicit" in keys:
            if sub.sizes.get("k", 0) == 0:
                raise ValueError("P2.Thm3.excess.explicit needs [p2] removals >= 1 (measured sup-beta)")
            nb = sub["beta_n"].max("k") * sub["n"]                # n * beta_n, sup over the K removed i
            sup_beta = nb.max(REPLICATE).values                   # sup over D and noise seen
            M = sub["M_ell"].max(REPLICATE).values
            mu_max = sub["mu_path"].max(REPLICATE).values
            env = get("P2.Thm3.excess.explicit")(n=ns, sup_Ebeta=sup_beta, M_ell=M, G=G, mu=mu_max, xi=xi)
            q_m.attrs["quantity"] = "excess_risk"
            q_m.attrs["gamma"] = xi
            v = check_bound(q_m, env, "EXPLICIT-DD", key="P2.Thm3.excess.explicit", quantity="excess_risk",
                            notes=[f"measured: the ({1 - xi:g})-quantile over D and noise of the excess risk (order-"
                                   "statistic CI), xi = " + f"{xi:g}",
                                   "envelope = Eq. (5) without the c_1, c_2, c_3 terms, at sup-beta = max over D of "
                                   "max over the K removed i of n beta_n (<= the true sup), M_ell = max over D of the "
                                   "sup loss at theta_T (<= the true M_ell), mu = max over D of mu_path (>= each D's "
                                   "mu): every input makes the envelope smaller than the theorem's right-hand side",
                                   NEIGHBOUR_NOTE])
            fig = _overlay(res, figure_name("P2.Thm3.excess.explicit", label), q_m,
                           [("P2 Thm 3 Eq. (5) without the c_1..c_3 terms (a lower envelope of the bound)", env)],
                           [v], setting, ylabel=f"{1 - xi:g}-quantile of L_P(θ_T) − min L_P",
                           title=f"P2 Theorem 3, Eq. (5): excess risk, {setting}")
            expl = None
            if not v.ok:
                expl = ("inconclusive, not a violation: the envelope omits the c_1..c_3 terms of Eq. (5) (unspecified "
                        "constants), so the full bound is larger; " + "; ".join(v.notes))
            res.add(v, figure=fig, label=label or None, explanation=expl)
            res.measured[f"sup-beta = max n beta_n{sfx}"] = [float(x) for x in sup_beta]
            res.measured[f"M_ell{sfx}"] = [float(x) for x in M]
            res.measured[f"mu (max over D){sfx}"] = [float(x) for x in mu_max]
            res.measured[f"mean ||theta_T - theta_T(D^-i)||{sfx}"] = [float(x) for x in sub["dist_removed"].mean((REPLICATE, "k")).values]
        # ---- Def. 6 / Lemma 1's O(1/n) on the algorithm's output (removal, shared noise) -------------
        if "P2.Lemma1.beta" in keys:
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
            fig = _overlay(res, figure_name("P2.Lemma1.beta", label), mb, [(bl, bv)], [v], setting,
                           ylabel="max_i mean_pairs β_n(z_i; z′, z″) of θ_T (removal)")
            expl = rate_explanation(v, "beta_n of the noisy GD output decays more slowly than 1/n on this range "
                                       "(Lemma 1 is stated for the ERM; T grows like log n here): " + "; ".join(v.notes))
            if v.verdict == "faster than claimed":
                expl = "consistent (decays at least as fast as 1/n) but the exponent itself is not attained"
            res.add(v, figure=fig, label=(label + ", " if label else "") + "Alg. 1 theta_T", explanation=expl)
            res.measured[f"mean max_i beta_n of theta_T{sfx}"] = [float(x) for x in mb["estimate"].values]
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


@register_check("p2_lemma1", description="P2 Lemma 1: beta_n of ERM under removal vs O(1/n)")
def check_lemma1(spec, ds) -> CheckResult:
    from ..theory import get

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
                                                     "ERM re-solved on D^{-i} (stabsim.elastic)"),
                              f"sup over z_i estimated by the max over K = {sub.sizes['k']} removed points "
                              "(a lower bound on the sup)"])
        mi = mean_ci(infl)
        fit_i = np.polyfit(np.log(ns), np.log(mi["estimate"].values), 1)[0]
        entries = [(b, bvals), ("influence-function estimate, Eq. (4) (not a bound)", mi["estimate"].values)]
        fig = _overlay(res, figure_name("P2.Lemma1.beta", label), m, entries, [v, None],
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
                     "leave-one-out ERM re-solved on D^{-i} (stabsim.elastic); the influence function (Eq. 4) is "
                     "shown beside it. beta_n is averaged over the ordered pairs of a fresh test sample.")
    return res


@register_check("p2_thm1", description="P2 Thm 1: accountant sigma needed for (eps, delta) vs the printed sigma")
def check_thm1(spec, ds) -> CheckResult:
    from ..theory import get

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
        fig = _overlay(res, figure_name("P2.Thm1.sigma", label), m, [(b, printed)], [v], f"n={q['n']}, G={q['G']}, "
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
