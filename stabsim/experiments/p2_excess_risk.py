"""P2 (Kang, Liu, Li, Wang: sharper utility bounds for DP pairwise learning): the ``p2_gd`` study kind,
P2 Alg. 1 (gradient perturbation) with its excess risk and its removal stability (``studies/p2_thm2_excess.toml``,
``p2_thm3_hp``, ``p2_lemma3_metric``; analysed by ``p2_excess`` in ``stabsim.analyses.p2_excess_risk``).

Neighbour relation.  P2's stability notions (Def. 6 pairwise locally elastic stability, Def. 7,
Lemma 1, Thm 3) use REMOVAL: D^{-i} = D with z_i removed (n - 1 points).  ``kernels/p2_removal.py``
re-runs Alg. 1 on D^{-i} with the same noise b_1..b_T (coupled); the twin kernel's replace-one
coupling is NOT used for any P2 stability number.

Kind ``p2_gd``  (P2 Alg. 1, full batch over all ordered pairs, eta = 1/L, theta_0 = 0,
    last iterate, no projection (P2-E2), sigma = 8 G sqrt(T log(1/delta))/(n eps) (Thm 1,
    equality) or 0 with ``[p2] private = false``; T fixed or by the Remark 2 / Thm 3 rule
    T = ceil(c_T log(n eps / sqrt(p))) / ceil(c_T log(sqrt(n) eps)) (``stabsim.setups.p2``).  One
    data set per replicate (the expectations of Thms 2/3 are over D and the noise).  Per replicate:

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
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from stabsim.engine.measures import REPLICATE
from stabsim.setups.p2 import DATA_SECTION, P2_LOSSES, gd_setting
from stabsim.registry import Param, StudyError, StudySpec, boolean, choice, integer, number, register_kind


def _pair_values(lf, w, Xa, ya, Xb, yb):
    """l(w; z_a, z_b) for aligned arrays of pairs (linear forms via ``elastic``, metric by hand)."""
    if not lf.matrix:
        from stabsim.engine.elastic import _pair_values as lin

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


_GD_ALG = {
    "loss": Param("a G-Lipschitz, L-smooth pairwise loss", "ranking_logistic", choice(P2_LOSSES)),
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
    """Every cell: a valid T rule and sigma, a loss that fits the problem, at most n removals."""
    for cell in spec.cells():
        p = spec.cell_params(cell)
        try:
            T, sigma, eta, G, L, pdim, lf, pb = gd_setting(p)
        except ValueError as e:
            raise StudyError(f"p2_gd: cell {cell.coords}: {e}") from None
        if lf.matrix != (pb.name == "metric"):
            raise StudyError(f"p2_gd: loss {lf.name!r} and problem {pb.name!r} do not match "
                             "(metric_logistic goes with problem 'metric', the linear losses with auc_*)")
        if p["p2"]["removals"] > p["data"]["n"]:
            raise StudyError(f"p2_gd: [p2] removals = {p['p2']['removals']} exceeds n = {p['data']['n']}")


#: the per-replicate scalars of a ``p2_gd`` cell (``_replicate_measures``)
_MEASURES = ("excess", "LP_T", "LP_min", "LP_cert", "FS_T", "FS_min", "FS_cert", "gap0", "mu_path", "theta_norm",
             "M_ell")


def _replicate_measures(pb, lf, s, data_seed, rep, theta, WR, X, Y, FS, GN, T, K) -> dict:
    """One replicate's measures: the excess risk on its fresh test sample (certified ERM), the ERM on
    its D, ||theta_T|| and the sup of the loss there, and per removal k the pair-loss change beta
    and ||theta_T(D) - theta_T(D^{-k})|| (``_MEASURES`` and ``beta``, ``dist``: NaN where not asked)."""
    from stabsim.engine import rng
    from stabsim.risk import empirical_risk, erm

    out = dict.fromkeys(_MEASURES, np.nan)
    Xt, yt = pb.sample(s["m_test"], data_seed, rep, stream=rng.STREAM_SPLIT)
    et = erm(Xt, yt, lf, tol=1e-10)
    ed = erm(X, Y, lf, tol=1e-10) if s["erm_D"] else None
    LPT = float(empirical_risk(theta, Xt, yt, lf))
    out["LP_T"], out["LP_min"], out["LP_cert"] = LPT, et.value, et.certificate
    out["excess"] = LPT - et.value
    out["FS_T"] = FS[T]
    if ed is not None:
        out["FS_min"], out["FS_cert"] = ed.value, ed.certificate
        out["gap0"] = FS[0] - ed.value
        gaps = FS[:T] - ed.value
        ok = gaps > 1e-9
        out["mu_path"] = float(np.min(GN[:T][ok] / (2.0 * gaps[ok]))) if ok.any() else np.nan
    nrm = float(np.linalg.norm(theta))
    out["theta_norm"] = nrm
    out["M_ell"] = _sup_loss(lf, pb.kappa, nrm)
    out["beta"], out["dist"] = np.full(K, np.nan), np.full(K, np.nan)
    if K:
        mb = min(s["m_beta"], s["m_test"])
        a_, b_ = np.nonzero(~np.eye(mb, dtype=bool))
        Xa, ya, Xb, yb = Xt[a_], yt[a_], Xt[b_], yt[b_]
        l_full = _pair_values(lf, theta, Xa, ya, Xb, yb)
        for k in range(K):
            out["beta"][k] = float(np.mean(np.abs(l_full - _pair_values(lf, WR[k], Xa, ya, Xb, yb))))
            out["dist"][k] = float(np.linalg.norm(theta - WR[k]))
    return out


@register_kind("p2_gd", params={"data": DATA_SECTION, "algorithm": _GD_ALG, "p2": _GD_P2}, validate=_validate_gd,
               description="P2 Alg. 1 on D and on removal neighbours D^{-i} (shared noise) + excess risk, PL, beta")
def p2_gd_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``p2_gd`` study (see the module docstring)."""
    from stabsim.kernels.p2_removal import p2_removal_kernel
    from stabsim.runtime.thread_pools import map_in_threads

    p = spec.cell_params(cell)
    d, s = p["data"], p["p2"]
    T, sigma, eta, G, L, pdim, lf, pb = gd_setting(p)
    n = d["n"]
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    reps = np.asarray(replicates, dtype=np.int64)
    R = reps.size
    X, Y = (np.ascontiguousarray(a, dtype=np.float64) for a in pb.sample_replicates(n, data_seed, reps))
    K = int(s["removals"])
    removes = np.tile(np.arange(K, dtype=np.int64), (R, 1)).reshape(R, K)
    W, WR, FS, GN = p2_removal_kernel(X, Y, lf.form, lf.phi, float(lf.q), float(eta), float(sigma), int(T),
                                      np.int64(spec.seed), reps, removes, np.array([T], dtype=np.int64), pdim)
    theta = W[:, 0]
    # the replicates' test samples, ERMs and beta are independent: on numba's threads at once
    rows = map_in_threads(lambda r: _replicate_measures(pb, lf, s, data_seed, int(reps[r]), theta[r], WR[r],
                                                        X[r], Y[r], FS[r], GN[r], T, K), range(R))
    out = {k: np.array([row[k] for row in rows]) for k in _MEASURES}
    beta = np.array([row["beta"] for row in rows]).reshape(R, K)
    dist = np.array([row["dist"] for row in rows]).reshape(R, K)
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
