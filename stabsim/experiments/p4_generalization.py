"""P4 (Wang, Lei, Ying, Zhou: DP-SGD with low noise): the ``p4_gen`` study kind, the remaining
bounds of generalization, stability and optimization (studies ``p4_gen_*``, ``p4_rates_thm4``,
``p4_rates_thm6``, ``p4_rates_thm7``; checks ``p4_more`` in
:mod:`stabsim.analyses.p4_generalization` and ``p4_more_rates`` in :mod:`stabsim.analyses.p4_rates`).

Kind ``p4_gen``
    ``run_twin`` of P4 Alg. 1 (``p4_alg1``) or Alg. 2 (``p4_alg2``) with any loss, one data set
    per replicate, the replaced index uniform and the replacement a fresh independent copy
    (P4 Def. 6), shared indices and noise.  Per replicate, at the final step T only:

    ``FS_out``   F_S(w_priv) (pairwise: Fbar_S over the n(n-1) ordered pairs),
    ``F_out``    F(w_priv) (closed form when the problem has one, else Monte Carlo on a fresh
                 test sample of size ``[p4] m``; ``F_out_se``),
    ``nu_out``   ||w_priv(S) - w_priv(S^(i))||^2, ``nu_iter`` = ||w_T - w_T^(i)||^2 (kernel
                 numbering, = P4's w_{T+1}); their replicate means are on-average stability,
    ``eta2_path`` sum_{j<=T} eta_j^2 fhat_j(w_j) (P4 numbering; the kernel's eta2_loss_path),
                 an unbiased estimate of sum_j eta_j^2 E[F_S(w_j)],
    ``path_gap`` (1/T) sum_{j<=T} [fhat_j(w_j) - fhat_j(w_ref)]: unbiased for the
                 eta-weighted path average (1/sum eta) sum_j eta_j E[F_S(w_j) - F_S(w_ref)] for
                 constant eta (the left-hand side of P4 Thm 16 / Lemma 20 divided by sum eta),
    ``FS_ref``   F_S(w_ref),
    ``gen_twin`` pointwise only: f(w_priv(S^(k)); z_k) - f(w_priv(S); z_k) with z_k the replaced example
                 and k uniform, an unbiased estimate of the generalization gap E[F(w_priv) - F_S(w_priv)]
                 (the identity that opens the proof of P4 Lemma 13) with no Monte Carlo error and, with
                 shared noise, a far smaller variance than F - F_S; the pointwise gen-gap rows use it.

    The reference point w_ref (:func:`stabsim.setups.p4.reference`) is the population minimiser
    w* where it is known exactly (p4_lsq kappa = 0; closed form for auc_squared; e1/gamma
    (pointwise hinge) and e1/(2 gamma) (AUC hinge) on the auc_* problems, derived there), else
    P4's w* of the p4_* design with F(w*) by Monte Carlo.  ``[p4] eps`` > 0 calibrates sigma by
    P4 Thm 2 / Thm 5 with the paper's beta search (grid step 1e-4) at ``[p4] delta``;
    ``[p4] theorem`` ("3", "4", "6", "7") sets eta and T by the rate theorem (part b if
    F(w_ref) = 0 exactly, else part a; ``stabsim.theory.p4.recommended_schedule``).
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from stabsim.setups.p4 import P4, loss_of as _loss, radius_of as _radius, reference as _reference
from stabsim.registry import StudySpec, register_kind, twin_params, twin_problem, validate_twin


def _delta(p):
    """The cell's privacy delta: [p4] delta, or 1/n^2 when it is 0."""
    dl = p["p4"]["delta"]
    return 1.0 / p["data"]["n"] ** 2 if dl == 0 else dl


def _gen_effective(p, value=True):
    """(T, eta, sigma, calibration note, (w_ref, F_ref, how, exact), part) of a p4_gen cell
    (``value=False``: the reference point's risk not estimated, see ``setups.p4.reference``)."""
    from stabsim.privacy.calibration import p4_beta_search
    from stabsim.theory.p4 import recommended_schedule

    a, d, pk = p["algorithm"], p["data"], p["p4"]
    pb = twin_problem(d)
    lossf = _loss(a)
    ref = _reference(pb, lossf, value)
    T, eta, part = a["T"], a["eta"], ""
    if pk["theorem"]:
        part = "b" if (ref[3] and ref[1] == 0.0) else "a"
        th = pk["theorem"] + part
        e_s = pk["eps"] if pk["eps"] > 0 else pk["schedule_eps"]
        alpha = None if lossf.smooth else lossf.holder
        eta_r, T_r = recommended_schedule(theorem=th, n=d["n"], eps=e_s, delta=_delta(p), d=pb.d, alpha=alpha,
                                          c=pk["c"], L=lossf.L(pb.kappa, _radius(a)))
        eta, T = float(eta_r), int(T_r)
    sigma, note = a["sigma"], "sigma as given"
    if pk["eps"] > 0:
        G = lossf.G(pb.kappa, _radius(a))
        if not math.isfinite(G):
            raise ValueError("P4 calibration needs a finite Lipschitz constant G: give a constraint l2:R")
        res = p4_beta_search(pk["eps"], _delta(p), d["n"], T, G, pairwise=lossf.pairwise)
        sigma = math.sqrt(res.sigma2)
        note = f"beta = {res.beta:.4g}, sigma^2 = {res.sigma2:.4g} (G = {G:.4g}, grid step 1e-4)"
    return T, eta, sigma, note, ref, part


def _validate_gen(spec):
    from stabsim.registry import StudyError

    validate_twin(spec)
    if not spec.sections["data"]["per_replicate"]:
        raise StudyError("p4_gen: [data] per_replicate must be true (one S per replicate, P4 Def. 6)")
    for cell in spec.cells():
        p = spec.cell_params(cell)
        a = p["algorithm"]
        if a["name"] not in ("p4_alg1", "p4_alg2"):
            raise StudyError(f"p4_gen: [algorithm] name must be 'p4_alg1' or 'p4_alg2', got {a['name']!r}")
        if a["w0"] != "zeros" or a["neighbour"] != "fresh" or a["k"] != "random":
            raise StudyError("p4_gen: needs w0 = 'zeros' (P4: w_1 = 0), neighbour = 'fresh' and k = 'random' "
                             "(on-average stability, P4 Def. 6)")
        if isinstance(a["eta"], str):
            raise StudyError("p4_gen: [algorithm] eta must be a constant")
        try:   # (without the reference's Monte Carlo risk: compiled kernels and seconds per check)
            _gen_effective(p, value=False)
        except Exception as e:
            raise StudyError(f"p4_gen: cell {cell.coords}: {e}") from None


@register_kind("p4_gen", params=twin_params(p4=P4), validate=_validate_gen,
               description="P4 DP-SGD (Alg. 1/2): F_S, F of w_priv, on-average stability, path sums per replicate")
def p4_gen_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``p4_gen`` study (see the module docstring)."""
    from stabsim.risk import empirical_risk, population_risk
    from stabsim.engine.twin_runs import run_twin

    p = spec.cell_params(cell)
    d, a, pk = p["data"], p["algorithm"], p["p4"]
    pb = twin_problem(d)
    lossf = _loss(a)
    T, eta, sigma, note, (wref, Fref, how, exact), part = _gen_effective(p)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    X, y = pb.sample_replicates(d["n"], data_seed, replicates)
    reps = np.asarray(replicates, dtype=np.int64)
    ds = run_twin(X, y, algorithm=a["name"], loss=a["loss"], q=a["q"], constraint=a["constraint"], eta=eta, T=T,
                  replicates=reps, seed=spec.seed, neighbour="fresh", problem=pb, sigma=sigma,
                  checkpoints=[T], record_outputs=True, w_ref=wref)
    fin = ds.isel(t=-1)
    W = np.ascontiguousarray(fin["output"].sel(run="S").values)  # (R, p)
    R = W.shape[0]
    FS = np.array([float(empirical_risk(W[i], X[i], y[i], a["loss"], q=a["q"])) for i in range(R)])
    FSr = np.array([float(empirical_risk(wref, X[i], y[i], a["loss"], q=a["q"])) for i in range(R)])
    est = population_risk(W, pb, a["loss"], q=a["q"], m=pk["m"], seed=spec.seed, replicate=0)
    # twin estimator of the generalization gap (pointwise): f(A(S^(k)); z_k) - f(A(S); z_k) with z_k the
    # replaced example and k uniform is unbiased for E[F(A(S)) - F_S(A(S))] (the identity that starts the proof
    # of P4 Lemma 13; any coupling of the algorithm's randomness keeps the marginals) and, with shared noise,
    # has a far smaller variance than F(w) - F_S(w)
    gtw = np.full(R, np.nan)
    if not lossf.pairwise:
        Wp = fin["output"].sel(run="S'").values
        kk = fin["k"].values.astype(int)
        for i in range(R):
            z = (X[i, kk[i]], y[i, kk[i]])
            gtw[i] = lossf.value_grad(Wp[i], z)[0] - lossf.value_grad(W[i], z)[0]
    rv = ("replicate",)
    out = xr.Dataset({
        "FS_out": (rv, FS, {"long_name": "F_S(w_priv)"}),
        "F_out": (rv, np.asarray(est.value, float).reshape(R), {"long_name": "F(w_priv)", "description": est.method}),
        "F_out_se": (rv, np.asarray(est.se, float).reshape(R), {"long_name": "standard error of F(w_priv)"}),
        "FS_ref": (rv, FSr, {"long_name": "F_S(w_ref)"}),
        "gen_twin": (rv, gtw, {"long_name": "f(w_priv(S^(k)); z_k) - f(w_priv(S); z_k) (pointwise; NaN pairwise)"}),
        "nu_out": (rv, fin["dist_output"].values ** 2, {"long_name": "||w_priv(S) - w_priv(S^(i))||^2"}),
        "nu_iter": (rv, fin["dist_iterate"].values ** 2, {"long_name": "||w_T - w_T^(i)||^2 (kernel numbering)"}),
        "eta2_path": (rv, fin["eta2_loss_path"].values, {"long_name": "sum_j eta_j^2 fhat_j(w_j)"}),
        "path_gap": (rv, (fin["loss_path"].values - fin["loss_ref_path"].values) / T,
                     {"long_name": "(1/T) sum_j [fhat_j(w_j) - fhat_j(w_ref)]"}),
        "T_eff": ((), T), "eta_eff": ((), float(eta)), "sigma_eff": ((), float(sigma)),
        "F_ref": ((), float(Fref)), "wref_norm2": ((), float(np.sum(wref ** 2))),
    }, coords={"replicate": reps})
    out.attrs.update(calibration=note, reference=how, reference_exact=int(bool(exact)), part=part,
                     F_out_method=str(est.method), data_sets="per-replicate", data_seed=int(data_seed))
    return out
