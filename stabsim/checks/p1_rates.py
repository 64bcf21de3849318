"""P1 (Yang et al. 2021): the rate and non-convex studies -- Theorems 1, 2, 3 (excess-risk rates
with T, eta chosen as functions of n), 5 (generalization, via ``p1_gen``), 6(b)/7(b)
(strongly convex rates), 8 (gradient norm), 9 (PL), 10 (Alg. 3, DP), Lemma 1 and Remark 7.
Errata: docs/errata.md (ids P1-E1 ... P1-E9).

Kinds
-----
``p1_excess``   One fresh data set S per replicate (the theorems' E_{S,A}); P1 Alg. 1 run for
                the theorem's horizon T(n) with its step size eta(n) (``[schedule] rule``):

                ``thm1``  T = c_T n^2, eta = c_eta T^{-3/4}            (Thm 1, Eq. (3))
                ``thm2``  T = c_T n,   eta = c_eta T^{-1/2}            (Thm 2, Eq. (4))
                ``thm3``  eta_j = 2/(mu (j+1)), last iterate w_T,
                          T = c_T n^{(2L+mu)/(4L+mu)} mu^{-(4L+2mu)/(4L+mu)}  (Thm 3)

                (T rounded to the nearest integer >= 1).  Per replicate: ``excess`` =
                F(A(S)) - F(w*) with F in closed form (``auc_squared`` on the ``auc_*`` problems)
                or by a U-statistic on a fresh test sample of size ``[risk] m`` drawn for that
                replicate (``auc_hinge`` on ``auc_separable``, where F(w*) = 0 exactly at
                w* = e_1/(2 gamma)); ``FS_out``; for ``thm3`` also ``mu_S`` = the PL constant of
                that F_S (smallest Hessian eigenvalue; quadratic losses only).  ``T_used``,
                ``eta_used`` (nan for the schedule) are per-cell variables.
``p1_path``     Alg. 1 with the iterates recorded at every step (``output = "last"``): per
                replicate, ``grad_avg`` = (1/t) sum_{j=1}^t ||grad F_S(w_{j-2})||^2 (w_{-1} = w_0),
                ``FS_last`` = F_S(w_t) at ``[path] grid`` log-spaced t, and ``m2`` = the exact
                E_{i,i'}||grad f(w_j; z_i, z_i')||^2 (i, i' uniform with replacement, the
                expectation over the two fresh indices of P1 Thm 8/9's alpha_0 condition) at
                every j = 0..T; the certified ERM value of each F_S (``FS_wS``, certificate) and
                its PL constant ``mu_S`` (quadratic losses).  Own numba kernel ``path_stats``.
``p1_dp``       P1 Alg. 3 (``stabsim.privacy.p1_alg3``) run once per replicate on that
                replicate's own data set; ``excess`` = F(w_K) - F(w*) (closed form), ``eta_used``,
                ``two_over_L``, ``excess_w0`` = F(w_0) - F(w*).
``p1_horizon``  One run per horizon T in ``[horizon] T`` with the constant step c/sqrt(T)
                (Remark 7's eta ~ 1/sqrt(t)); ``FS_out`` (replicate, horizon) and the certified ERM.

Checks
------
``p1_excess_rate``  Thm 1/2/3: log-log slope in n of E[excess] (bootstrap over replicates,
                    independent per n) vs the theorem's exponent, "upper" rule.
``p1_path``         Thm 8 (EXPLICIT-DD, alpha_0^2 = max_j of the replicate mean of m2,
                    F_S(w_0) exact) and Thm 9 (EXPLICIT-DD, same alpha_0, plus the ERM
                    certificate added to the measured gap).
``p1_sc_rate``      Thm 6(b) (mean) and 7(b) ((1-delta)-quantile) optimization error in t.
``p1_dp``           Thm 10: slope in n per (eps, step reading) and the step-size CONDITION.
``p1_lem1``         Lemma 1 with eps_stab = G x (measured UAS) and with G x (Thm 5 UAS bound).
``p1_buffer``       Remark 7: opt-error slope in the horizon T per buffer size s and in s at the
                    largest T (kind ``p1_horizon``).
Remarks 8/9 (rates of other algorithms, "comparison curves only") are drawn in the
Thm 10 figures without a verdict.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from numba import njit, prange

from ..losses import pair_loss_grad
from ..measures import (
    REPLICATE,
    empirical_quantile_index,
    mean_ci,
    order_statistic_ci_indices,
    uas_mean,
)
from ..study import (
    REQUIRED,
    Param,
    StudyError,
    _problem,
    _twin_kwargs,
    _validate_twin,
    boolean,
    choice,
    integer,
    number,
    register_kind,
    twin_params,
)
from ..verdicts import (
    SlopeFit,
    Verdict,
    check_bound,
    check_rate,
    rate_class,
    rate_exponent,
)
from ..analyses.base import CheckResult, figure_name, rate_explanation, register_check, sweep_slices

# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def _consts(params) -> dict:
    """G, L, kappa, radius of the cell's loss on its problem (shared with checks/p1.py)."""
    from .p1 import _constants

    return _constants(params)


def _optimum(pb, loss: str, radius: float):
    """(w*, F(w*)) of the population risk over W, where it is known exactly.

    ``auc_squared`` on the ``auc_*`` problems: the closed-form unconstrained minimiser (it is the
    minimiser over W when ||w*|| <= R).  ``auc_hinge`` on ``auc_separable``: w* = e_1/(2 gamma)
    has margin exactly 1 on every +/- pair, so F(w*) = 0 = min F.
    """
    if loss == pb.loss_name and pb.F_star is not None and pb.w_star is not None:
        w, F = np.asarray(pb.w_star, float), float(pb.F_star)
    elif loss == "auc_hinge" and getattr(pb, "w_star_hinge", None) is not None:
        w, F = np.asarray(pb.w_star_hinge, float), 0.0
    else:
        raise ValueError(f"F(w*) is not known exactly for loss {loss!r} on problem {pb.name!r}; allowed: "
                         f"{pb.loss_name!r} on the auc_* problems, or 'auc_hinge' on 'auc_separable'")
    if math.isfinite(radius) and float(np.linalg.norm(w)) > radius:
        raise ValueError(f"the population minimiser has ||w*|| = {np.linalg.norm(w):.4g} > R = {radius:g}: "
                         "the minimiser over W is then unknown; use a larger constraint radius")
    return w, F


def _population(W, pb, loss, m, seed, reps):
    """F(w) per replicate: closed form when available, else a fresh test sample per replicate."""
    from ..risk import population_risk

    est = population_risk(W, pb, loss)  if loss == pb.loss_name and pb.risk(np.zeros(pb.d)) is not None \
        else None
    if est is not None:
        return np.asarray(est.value, float), np.zeros(len(W)), est.method
    vals, ses = np.empty(len(W)), np.empty(len(W))
    for i, r in enumerate(reps):
        e = population_risk(W[i], pb, loss, m=m, seed=seed, replicate=int(r))
        vals[i], ses[i] = float(e.value), float(e.se)
    return vals, ses, "u_statistic (fresh test sample per replicate)"


def pl_constant(X, y, loss) -> float:
    """The PL constant of F_S for a quadratic loss: the smallest eigenvalue of its (constant)
    Hessian, obtained exactly from gradient differences H e_k = grad(e_k) - grad(0).
    (For a convex quadratic, 2 mu (F_S(w) - min F_S) <= ||grad F_S(w)||^2 holds with mu =
    lambda_min(H) when H is positive definite, P1's assumption (A4).)"""
    from ..losses import SQUARED, get_loss
    from ..risk import empirical_grad

    lf = get_loss(loss)
    if lf.phi != SQUARED or lf.matrix:
        raise ValueError(f"pl_constant needs a linear pairwise squared loss, got {loss!r}")
    d = X.shape[1]
    g0 = empirical_grad(np.zeros(d), X, y, lf)
    H = np.stack([empirical_grad(np.eye(d)[k], X, y, lf) - g0 for k in range(d)], axis=1)
    return float(np.linalg.eigvalsh(0.5 * (H + H.T))[0])


def _stack_data(pb, n, data_seed, reps):
    sets = [pb.sample(n, data_seed, int(r)) for r in reps]
    return np.stack([s[0] for s in sets]), np.stack([s[1] for s in sets])


def _sfx(label):
    return f" ({label})" if label else ""


def _setting(params, sched: str) -> str:
    a, d = params["algorithm"], params["data"]
    return f"{a['loss']}, {d['problem']} (d={d['d']}), {a['constraint']}, {sched}"


_SCHED_TEXT = {"thm1": "T = c n^2, eta = c' T^-3/4", "thm2": "T = c n, eta = c' T^-1/2",
               "thm3": "eta_j = 2/(mu(j+1)), tuned T(n), last iterate"}


def _rate_figure(res, key, x, measure, bound, verdict, params, xname, setting="", extra=()):
    """Two panels: measurement with CI and the O(.) expression (constant 1), and the slope fit."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ..plots import default_title, plot_bound_overlay, plot_rate_fit
    from ..theory import get

    fig = Figure(figsize=(13.0, 5.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    b = get(key)
    plot_bound_overlay(measure, [(f"{key} O(.) expression, constant 1", bound), *extra], verdicts=[verdict], x=xname,
                       ax=ax1, title="measurement (95% CI) and the O(.) expression")
    plot_rate_fit(x, verdict.details, verdict, quantity=measure.attrs.get("quantity", ""), xname=xname, ax=ax2,
                  title="log-log slope (bootstrap CI) vs the theorem's exponent")
    fig.suptitle(default_title(b, measure.attrs.get("quantity", ""), setting))
    return fig


def _measure_over(values: xr.DataArray, quantity: str, note: str) -> xr.Dataset:
    m = mean_ci(values)
    m.attrs.update(quantity=quantity, note=note)
    return m


# ---------------------------------------------------------------------------------------------
# kind p1_excess (Theorems 1-3)
# ---------------------------------------------------------------------------------------------

SCHEDULE = {
    "rule": Param("theorem schedule: thm1, thm2 or thm3 (see stabsim.checks.p1_rates)", REQUIRED,
                  choice(("thm1", "thm2", "thm3")), sweepable=False),
    "c_T": Param("constant in T(n)", 1.0, number(gt=0, what=" (constant of T(n))"), sweepable=False),
    "c_eta": Param("constant in eta(T) (thm1, thm2)", 1.0, number(gt=0, what=" (constant of eta)"),
                   sweepable=False),
    "mu": Param("PL constant of the eta_j = 2/(mu(j+1)) schedule and of T(n) (thm3)", None,
                number(gt=0, what=" (PL constant)"), sweepable=False),
}
EXCESS_RISK = {
    "m": Param("test sample size per replicate for F when there is no closed form", 4000,
               integer(3, " (test sample size)"), sweepable=False),
}


def excess_schedule(params, n: int | None = None):
    """(T, eta argument for run_twin, output rule, eta value or nan) of a ``p1_excess`` cell."""
    s, a = params["schedule"], params["algorithm"]
    n = params["data"]["n"] if n is None else n
    rule = s["rule"]
    if rule == "thm1":
        T = max(1, int(round(s["c_T"] * n ** 2)))
        eta = s["c_eta"] * T ** -0.75
        return T, eta, a["output"], eta
    if rule == "thm2":
        T = max(1, int(round(s["c_T"] * n)))
        eta = s["c_eta"] * T ** -0.5
        return T, eta, a["output"], eta
    mu = s["mu"]
    L = _consts(params)["L"]
    T = max(1, int(round(s["c_T"] * n ** ((2 * L + mu) / (4 * L + mu)) * mu ** (-(4 * L + 2 * mu) / (4 * L + mu)))))
    return T, ("pl", float(mu)), "last", math.nan


def _validate_excess(spec):
    from ..constraints import get_constraint

    _validate_twin(spec)
    for cell in spec.cells():
        p = spec.cell_params(cell)
        a, s = p["algorithm"], p["schedule"]
        if s["rule"] == "thm3" and s["mu"] is None:
            raise StudyError("p1_excess: [schedule] rule = 'thm3' needs [schedule] mu (the PL constant)")
        if a["name"] != "p1_alg1":
            raise StudyError(f"p1_excess: [algorithm] name must be 'p1_alg1' (P1 Thm 1-3), got {a['name']!r}")
        try:
            _optimum(_problem(p["data"]), a["loss"], get_constraint(a["constraint"]).radius)
        except ValueError as e:
            raise StudyError(f"p1_excess: {e}") from None


@register_kind("p1_excess", params=twin_params(schedule=SCHEDULE, risk=EXCESS_RISK), validate=_validate_excess,
               description="P1 Thm 1-3: Alg. 1 with T(n), eta(n) of the theorem, one data set per replicate, "
                           "excess risk F(A(S)) - F(w*)")
def excess_cell(spec, cell, replicates) -> xr.Dataset:
    """One cell of a ``p1_excess`` study (see the module docstring)."""
    from ..constraints import get_constraint
    from ..risk import empirical_risk
    from ..twin import run_twin

    p = spec.cell_params(cell)
    d, a, rk = p["data"], p["algorithm"], p["risk"]
    pb = _problem(d)
    n = d["n"]
    T, eta, output, eta_val = excess_schedule(p)
    reps = np.asarray(replicates, dtype=np.int64)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    X, y = _stack_data(pb, n, data_seed, reps)
    kw = _twin_kwargs(spec, p)
    kw.update(T=T, eta=eta, output=output, checkpoints=np.array([T]), record_outputs=True, neighbour="same")
    ds = run_twin(X, y, replicates=reps, problem=pb, **kw)
    W = np.ascontiguousarray(ds["output"].sel(run="S").values[:, -1, :])
    R = len(reps)
    F, Fse, method = _population(W, pb, a["loss"], rk["m"], spec.seed, reps)
    _, Fstar = _optimum(pb, a["loss"], get_constraint(a["constraint"]).radius)
    FS = np.array([float(empirical_risk(W[i], X[i], y[i], a["loss"])) for i in range(R)])
    out = xr.Dataset(
        {"excess": ("replicate", F - Fstar, {"long_name": "F(A(S)) - F(w*)", "description": method}),
         "F_out": ("replicate", F, {"long_name": "F(A(S))"}),
         "F_out_se": ("replicate", Fse, {"long_name": "standard error of F(A(S)) (0: closed form)"}),
         "FS_out": ("replicate", FS, {"long_name": "F_S(A(S))"}),
         "T_used": ((), float(T), {"long_name": "number of steps T(n)"}),
         "eta_used": ((), float(eta_val), {"long_name": "constant step eta(n) (nan: schedule 2/(mu(j+1)))"}),
         "F_star": ((), float(Fstar), {"long_name": "F(w*)"})},
        coords={"replicate": reps})
    if p["schedule"]["rule"] == "thm3":
        out["mu_S"] = ("replicate", np.array([pl_constant(X[i], y[i], a["loss"]) for i in range(R)]),
                       {"long_name": "PL constant of F_S (lambda_min of its Hessian)"})
    out.attrs.update(problem=pb.name, data_seed=data_seed, data_sets="per-replicate", output=str(output or "eta_weighted_lag2"))
    return out


_EXCESS_KEYS = ("P1.Thm1.rate", "P1.Thm2.rate", "P1.Thm3.rate")


@register_check("p1_excess_rate", description="P1 Thm 1/2/3: slope in n of E[F(A(S))] - F(w*) with T(n), eta(n) "
                                              "of the theorem vs the claimed exponent")
def check_excess_rate(spec, ds) -> CheckResult:
    from ..theory import get

    res = CheckResult()
    keys = [k for k in spec.bounds.get("keys", []) if k in _EXCESS_KEYS]
    if not keys:
        raise ValueError(f"[bounds] keys must contain one of {_EXCESS_KEYS}")
    if "n" not in ds.dims or ds.sizes["n"] < 3:
        raise ValueError("the rate studies sweep n over at least 3 values")
    for label, params, sub in sweep_slices(spec, ds, consumed=("n",)):
        n = sub["n"].values.astype(float)
        T = sub["T_used"].values.astype(float)
        eta = sub["eta_used"].values.astype(float)
        y = sub["excess"].transpose(REPLICATE, "n")
        measure = _measure_over(y, "excess_risk", "mean over replicates (fresh S each) of F(A(S)) - F(w*)")
        c = _consts(params)
        rule = params["schedule"]["rule"]
        for key in keys:
            notes = [f"T(n) = {', '.join(f'{t:.0f}' for t in T)}"]
            if key == "P1.Thm3.rate":
                mu = params["schedule"]["mu"]
                expo = rate_exponent(key, "n", L=c["L"], mu=mu)
                bound = get(key)(n=n, L=c["L"], mu=mu, T=T)
                notes.append(f"L = {c['L']:.4g} (per-pair smoothness bound), mu = {mu:g}")
            else:
                expo = rate_exponent(key, "n")
                bound = get(key)(n=n, T=T, eta=eta)
                notes.append(f"eta(n) = {', '.join(f'{e:.3g}' for e in eta)}")
            v = check_rate(n, y.values, expo, "upper", paired=False, key=key, quantity="excess_risk",
                           bound_values=bound, seed=spec.seed, notes=notes)
            fig = res.figure(figure_name(key, label), _rate_figure(res, key, n, measure, bound, v, params, "n",
                                                                   _setting(params, _SCHED_TEXT[rule])))
            expl = rate_explanation(v, "the measured excess risk decays more slowly than the claimed n-rate on this "
                                       "range of n: " + "; ".join(v.notes))
            res.add(v, figure=fig, label=label or None, explanation=expl)
        sfx = _sfx(label)
        res.measured["G" + sfx] = c["G"]
        res.measured["L" + sfx] = c["L"]
        res.measured["F(w*)" + sfx] = float(sub["F_star"].values.ravel()[0])
        res.measured["mean excess risk by n" + sfx] = [float(x) for x in measure["estimate"].values]
        if rule == "thm2":
            etamax = float(np.nanmax(eta))
            res.notes.append(f"Thm 2 needs eta <= 2/L: max eta = {etamax:.4g}, 2/L = {2 / c['L']:.4g}"
                             + ("" if etamax <= 2 / c["L"] else "  ** NOT satisfied **"))
        if rule == "thm3" and "mu_S" in sub:
            mu = params["schedule"]["mu"]
            mus = float(sub["mu_S"].min())
            res.measured["min over data sets of the PL constant of F_S" + sfx] = mus
            res.notes.append(f"(A4) PL with mu = {mu:g}: the smallest PL constant of the sampled F_S is {mus:.4g}"
                             + (" (so (A4) holds with mu)" if mu <= mus else "  ** (A4) NOT satisfied **"))
    res.notes.append("RATE entries are O(.) statements: the slope of the replicate-mean excess risk in n is "
                     "compared with the exponent ('upper': consistent iff the CI's lower end <= exponent); the "
                     "O(.) expression with constant 1 is drawn only to show the shape (never fitted).")
    return res


# ---------------------------------------------------------------------------------------------
# path statistics kernel (Thm 8 / 9)
# ---------------------------------------------------------------------------------------------

@njit(cache=True, parallel=True)
def path_stats(form, phi, q, W, X3, y3, data_idx, FS, GSQ, M2, gbuf, gpbuf, dxbuf):
    """For every parameter vector W[k] on the data set X3[data_idx[k]] (exact sums over pairs):

    FS[k]  = F_S(w) = 1/(n(n-1)) sum_{a != b} f(w; z_a, z_b)
    GSQ[k] = ||grad F_S(w)||^2
    M2[k]  = (1/n^2) sum_{a, b} ||grad f(w; z_a, z_b)||^2  (a, b uniform with replacement; the
             a = b terms vanish for the linear pairwise forms since x_a - x_b = 0)
    gbuf, gpbuf (K, p) and dxbuf (K, d) are workspaces (no allocation in the loop).
    """
    K, p = W.shape
    n = X3.shape[1]
    inv_pairs = 1.0 / (n * (n - 1.0))
    inv_sq = 1.0 / (n * n * 1.0)
    for k in prange(K):
        di = data_idx[k]
        Xs = X3[di]
        ys = y3[di]
        w = W[k]
        g = gbuf[k]
        gp = gpbuf[k]
        dx = dxbuf[k]
        for c in range(p):
            g[c] = 0.0
        fs = 0.0
        m2 = 0.0
        for ia in range(n):
            for ib in range(n):
                if ia == ib:
                    continue
                for c in range(p):
                    gp[c] = 0.0
                fs += pair_loss_grad(form, phi, q, w, Xs, ia, ys[ia], ib, ys[ib], 1.0, gp, dx)
                s2 = 0.0
                for c in range(p):
                    g[c] += gp[c]
                    s2 += gp[c] * gp[c]
                m2 += s2
        gs = 0.0
        for c in range(p):
            gs += (g[c] * inv_pairs) ** 2
        FS[k] = fs * inv_pairs
        GSQ[k] = gs
        M2[k] = m2 * inv_sq


def path_statistics(W, X3, y3, data_idx, loss):
    """(F_S, ||grad F_S||^2, E||grad f||^2) for W (K, p); numpy front end of ``path_stats``."""
    from ..losses import get_loss

    lf = get_loss(loss)
    if lf.matrix or not lf.pairwise:
        raise ValueError(f"path statistics need a linear pairwise loss, got {loss!r}")
    W = np.ascontiguousarray(W, dtype=np.float64)
    X3 = np.ascontiguousarray(X3, dtype=np.float64)
    y3 = np.ascontiguousarray(y3, dtype=np.float64)
    K, p = W.shape
    out = [np.empty(K) for _ in range(3)]
    path_stats(lf.form, lf.phi, float(lf.q), W, X3, y3, np.ascontiguousarray(data_idx, dtype=np.int64),
               *out, np.zeros((K, p)), np.zeros((K, p)), np.zeros((K, X3.shape[2])))
    return out


# ---------------------------------------------------------------------------------------------
# kind p1_path (Theorems 8, 9)
# ---------------------------------------------------------------------------------------------

PATH = {"grid": Param("number of log-spaced t at which grad_avg and FS_last are kept", 25,
                      integer(2, " (checkpoint count)"), sweepable=False),
        "erm": Param("certified ERM per data set (Thm 9)", True, boolean, sweepable=False)}


def _validate_path(spec):
    _validate_twin(spec)
    for cell in spec.cells():
        a = spec.cell_params(cell)["algorithm"]
        if a["name"] != "p1_alg1" or a["output"] != "last" or a["w0"] != "zeros":
            raise StudyError("p1_path: needs [algorithm] name = 'p1_alg1', output = 'last' (the iterates w_t "
                             "are read from the outputs) and w0 = 'zeros'")


@register_kind("p1_path", params=twin_params(path=PATH), validate=_validate_path,
               description="P1 Thm 8/9: iterates of Alg. 1 at every step -> running mean of ||grad F_S||^2, "
                           "F_S(w_t), the gradient moment alpha_0^2, certified ERM")
def path_cell(spec, cell, replicates) -> xr.Dataset:
    """One cell of a ``p1_path`` study (see the module docstring)."""
    from ..risk import erm
    from ..twin import log_checkpoints, run_twin

    p = spec.cell_params(cell)
    d, a = p["data"], p["algorithm"]
    pb = _problem(d)
    reps = np.asarray(replicates, dtype=np.int64)
    R = len(reps)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    if d["per_replicate"]:
        X3, y3 = _stack_data(pb, d["n"], data_seed, reps)
        didx = np.arange(R)
    else:
        X, y = pb.sample(d["n"], data_seed, 0)
        X3, y3, didx = X[None], y[None], np.zeros(R, dtype=np.int64)
    T = a["T"]
    kw = _twin_kwargs(spec, p)
    kw.update(checkpoints=np.arange(1, T + 1), record_outputs=True, neighbour="same")
    ds = run_twin(X3 if d["per_replicate"] else X3[0], y3 if d["per_replicate"] else y3[0], replicates=reps,
                  problem=pb, **kw)
    W = ds["output"].sel(run="S").values            # (R, T, p): w_1 .. w_T
    p_ = W.shape[2]
    allW = np.concatenate([np.zeros((R, 1, p_)), W], axis=1)   # w_0 .. w_T
    FS, GSQ, M2 = (v.reshape(R, T + 1) for v in
                   path_statistics(allW.reshape(-1, p_), X3, y3, np.repeat(didx, T + 1), a["loss"]))
    # (1/t) sum_{j=1}^t ||grad F_S(w_{j-2})||^2 with w_{-1} = w_0: the sequence g0, g0, g1, ..., g_{T-2}
    seq = np.concatenate([GSQ[:, :1], GSQ[:, :T - 1]], axis=1)   # j = 1..T
    run_avg = np.cumsum(seq, axis=1) / np.arange(1, T + 1)
    grid = log_checkpoints(T, p["path"]["grid"])
    out = xr.Dataset(
        {"grad_avg": (("replicate", "t"), run_avg[:, grid - 1],
                      {"long_name": "(1/t) sum_{j=1}^t ||grad F_S(w_{j-2})||^2"}),
         "FS_last": (("replicate", "t"), FS[:, grid],
                     {"long_name": "F_S(w_t) (last iterate)"}),
         "m2": (("replicate", "step"), M2, {"long_name": "E_{i,i'}||grad f(w_j; z_i, z_i')||^2 (exact, j = step)"}),
         "FS_w0": ("replicate", FS[:, 0], {"long_name": "F_S(w_0)"})},
        coords={"replicate": reps, "t": grid, "step": np.arange(T + 1)})
    if p["path"]["erm"]:
        sets = [(X3[i], y3[i]) for i in range(R)] if d["per_replicate"] else [(X3[0], y3[0])]
        res = [erm(Xs, ys, a["loss"], a["constraint"]) for Xs, ys in sets]
        if not d["per_replicate"]:
            res = res * R
        out["FS_wS"] = ("replicate", np.array([r.value for r in res]), {"long_name": "F_S(w_S) (certified ERM)"})
        out["erm_certificate"] = ("replicate", np.array([r.certificate for r in res]),
                                  {"long_name": "proven bound on F_S(w_S) - min F_S"})
        out["wS_norm"] = ("replicate", np.array([float(np.linalg.norm(r.w)) for r in res]),
                          {"long_name": "||w_S||"})
    from ..losses import SQUARED, get_loss
    if get_loss(a["loss"]).phi == SQUARED:
        mus = [pl_constant(X3[i], y3[i], a["loss"]) for i in range(len(X3))]
        out["mu_S"] = ("replicate", np.array([mus[i] for i in didx]), {"long_name": "PL constant of F_S"})
    out.attrs.update(problem=pb.name, data_seed=data_seed,
                     data_sets="per-replicate" if d["per_replicate"] else "shared")
    return out


def _alpha0_sq(sub):
    """alpha_0^2 := max over steps j of the replicate mean of E_{i,i'}||grad f(w_j; z_i, z_i')||^2."""
    m = sub["m2"].mean(REPLICATE)
    j = int(np.argmax(m.values))
    return float(m.values[j]), int(m["step"].values[j])


@register_check("p1_path", description="P1 Thm 8 (running mean of ||grad F_S||^2) and Thm 9 (PL gap of the last "
                                       "iterate) with measured alpha_0^2 and F_S(w_0)")
def check_path(spec, ds) -> CheckResult:
    from ..theory import get

    res = CheckResult()
    keys = [k for k in spec.bounds.get("keys", []) if k in ("P1.Thm8.grad", "P1.Thm9.pl")]
    if not keys:
        raise ValueError("[bounds] keys must contain P1.Thm8.grad or P1.Thm9.pl")
    from .p1 import _overlay

    for label, params, sub in sweep_slices(spec, ds):
        c = _consts(params)
        a = params["algorithm"]
        a0sq, jmax = _alpha0_sq(sub)
        t = sub["t"].values.astype(float)
        sfx = _sfx(label)
        res.measured["alpha_0^2 (max_j of the mean gradient moment)" + sfx] = a0sq
        res.measured["L" + sfx] = c["L"]
        for key in keys:
            if key == "P1.Thm8.grad":
                eta = a["eta"]
                if isinstance(eta, str):
                    raise ValueError("Thm 8 needs a constant step size")
                FS0 = float(sub["FS_w0"].max())
                measure = _measure_over(sub["grad_avg"], "grad_norm_sq",
                                        "mean over replicates of (1/t) sum_j ||grad F_S(w_{j-2})||^2")
                b = get(key)(t=t, eta=float(eta), L=c["L"], FS_w0=FS0, alpha0=math.sqrt(a0sq))
                v = check_bound(measure, b, "EXPLICIT-DD", key=key, notes=[
                    f"F_S(w_0) = {FS0:.4g}", f"alpha_0^2 = {a0sq:.4g} (max at step {jmax})", f"L = {c['L']:.4g}",
                    (f"eta = {eta:g}; printed condition 1/(2 sqrt L) = {1 / (2 * math.sqrt(c['L'])):.4g}, "
                     f"corrected 1/(2L) = {1 / (2 * c['L']):.4g} (P1-E5)")])
                fig = _overlay(res, key, measure, [(key, b)], [v], label, params)
                expl = None if v.ok else "measured running mean of ||grad F_S||^2 above Thm 8: " + "; ".join(v.notes)
                if float(eta) > 1 / (2 * c["L"]) or float(eta) > 1 / (2 * math.sqrt(c["L"])):
                    res.notes.append(f"Thm 8 step condition NOT met: eta = {eta}")
                res.measured["F_S(w_0)" + sfx] = FS0
            else:
                eta = a["eta"]
                if not (isinstance(eta, str) and eta.startswith("pl:")):
                    raise ValueError("Thm 9 needs the schedule eta = 'pl:mu' (eta_j = 2/(mu(j+1)))")
                mu = float(eta.split(":")[1])
                cert = float(sub["erm_certificate"].max())
                gap = sub["FS_last"] - sub["FS_wS"] + cert
                measure = _measure_over(gap, "pl_gap", "E_A F_S(w_t) - F_S(w_hat) + ERM certificate")
                b = get(key)(t=t, L=c["L"], mu=mu, alpha0=math.sqrt(a0sq))
                notes = [f"mu = {mu:g}", f"alpha_0^2 = {a0sq:.4g} (max at step {jmax})", f"L = {c['L']:.4g}",
                         f"ERM certificate {cert:.2g} added"]
                if "mu_S" in sub:
                    mus = float(sub["mu_S"].min())
                    notes.append(f"PL constant of F_S = {mus:.4g}" + (" >= mu" if mus >= mu else " < mu: (A4) FAILS"))
                    res.measured["PL constant of F_S (min)" + sfx] = mus
                v = check_bound(measure, b, "EXPLICIT-DD", key=key, notes=notes)
                fig = _overlay(res, key, measure, [(key, b)], [v], label, params)
                expl = None if v.ok else "measured PL gap above Thm 9: " + "; ".join(v.notes)
                if a["constraint"] != "none":
                    wmax = float(sub["wS_norm"].max()) if "wS_norm" in sub else math.nan
                    res.notes.append(
                        f"Thm 9 is stated without projection; the run projects onto {a['constraint']} because the "
                        f"first steps 2/(mu(j+1)) >> 2/L would overflow unprojected; ||w_S|| <= {wmax:.3g} lies "
                        "inside W, so min_W F_S = min F_S")
            res.add(v, figure=fig, label=label or None, explanation=expl)
    res.notes.append("alpha_0^2 is the max over the recorded steps j of the replicate mean of the exact "
                     "E_{i,i'}||grad f(w_j; z_i, z_i')||^2 (i, i' fresh uniform indices, independent of w_j): "
                     "the theorems' 'for any j' is checked on the simulated steps only (EXPLICIT-DD)")
    return res


# ---------------------------------------------------------------------------------------------
# Thm 6(b) / 7(b): strongly convex rates in t (kind twin_risk)
# ---------------------------------------------------------------------------------------------

def _quantile_fit(x, vals, p, level, n_boot, seed) -> tuple[SlopeFit, np.ndarray]:
    """Log-log slope of the empirical p-quantile over replicates (rows) against x, with a
    paired percentile bootstrap over replicates (the same resample at every x)."""
    from ..measures import bootstrap_counts

    R, m = vals.shape
    k = empirical_quantile_index(R, p) - 1
    q = np.sort(vals, axis=0)[k]
    lx = np.log(x)
    slope, icpt = np.polyfit(lx, np.log(q), 1)
    counts = bootstrap_counts(R, n_boot, seed)
    boots = []
    order = np.argsort(vals, axis=0)
    for cnt in counts:
        # quantile of the resample: the k-th order statistic of the multiset given by the counts
        qb = np.empty(m)
        for j in range(m):
            c = np.cumsum(cnt[order[:, j]])
            qb[j] = vals[order[np.searchsorted(c, k + 1), j], j]
        if np.all(qb > 0):
            boots.append(qb)
    B = np.log(np.array(boots))
    xc = lx - lx.mean()
    sl = (B - B.mean(1, keepdims=True)) @ xc / (xc @ xc)
    lo, hi = np.quantile(sl, [0.5 - level / 2, 0.5 + level / 2])
    return SlopeFit(slope=float(slope), lower=float(lo), upper=float(hi), intercept=float(icpt), level=level,
                    n_replicates=R, n_boot=n_boot, seed=seed, paired=True, x=np.asarray(x, float), mean=q,
                    n_dropped=n_boot - len(boots)), q


@register_check("p1_sc_rate", description="P1 Thm 6(b)/7(b): slope in t of the optimization error with "
                                          "eta_j = 2/(alpha(j+1)) (mean / (1-delta)-quantile) vs -1")
def check_sc_rate(spec, ds) -> CheckResult:

    res = CheckResult()
    keys = [k for k in spec.bounds.get("keys", []) if k in ("P1.Thm6b.rate", "P1.Thm7b.rate")]
    if not keys:
        raise ValueError("[bounds] keys must contain P1.Thm6b.rate or P1.Thm7b.rate")
    delta = spec.bounds.get("delta") or 0.1
    tmin = 10  # the O(1/t) claim is asymptotic; the first steps with eta_j = 2/(alpha(j+1)) >> 2/L are excluded
    for label, params, sub in sweep_slices(spec, ds, consumed=("neighbour",)):
        a = params["algorithm"]
        eta = a["eta"]
        if not (isinstance(eta, str) and eta.startswith("strongly_convex:")):
            raise ValueError("Thm 6(b)/7(b) need eta = 'strongly_convex:alpha'")
        alpha = float(eta.split(":")[1])
        output = a["output"] or "eta_weighted_lag2"
        if output not in ("eta_weighted_lag2", "t_weighted_lag2"):
            raise ValueError(f"Thm 6(b)/7(b) use the eta- or t-weighted output, got {output!r}")
        # Thm 7(b) defines w_bar_t = sum j w_{j-2} / sum j; Thm 6(b) does not define it (Alg. 1's output is
        # eta-weighted): both readings are checked for 6(b), 7(b) only with its own output.
        slice_keys = [k for k in keys if output == "t_weighted_lag2" or k == "P1.Thm6b.rate"]
        cert = float(sub["erm_certificate"].max())
        sub = sub.sel(t=sub["t"] >= tmin)
        gap = (sub["FS_out"] - sub["FS_wS"] + cert).transpose(REPLICATE, "t")
        t = sub["t"].values.astype(float)
        c = _consts(params)
        notes = [f"alpha = {alpha:g}, output {output}", f"ERM certificate {cert:.2g} added", f"t >= {tmin}"]
        for key in slice_keys:
            _sc_row(res, spec, key, label, params, gap, t, c, alpha, delta, notes, output)
    res.notes.append(_SC_NOTE)
    res.notes.append("the run is projected onto an l2 ball containing w_S: the first steps 2/(alpha(j+1)) are "
                     ">> 2/L and would overflow unprojected")
    return res


_SC_NOTE = ("(A3) asks every pair loss f to be alpha-strongly convex; the squared AUC loss is only strongly convex "
            "through F_S (its pair Hessians have rank 1), so alpha here is a lower bound on the strong convexity of "
            "F_S: outside the theorem's literal assumption, so the verdicts check the claimed rate under this "
            "weaker condition.")
_SC_ETA_WEIGHTED = ("reading 'eta-weighted output' (Alg. 1's output; Thm 6 does not define w_bar_t): with eta_j = "
                    "2/(alpha(j+1)) this average gives w_{-1} = w_0 the weight eta_1/sum_j eta_j ~ 1/log t, so "
                    "heuristically F_S(w_bar_t) - F_S(w_S) >= (alpha/2)||w_bar_t - w_S||^2 decays like 1/log^2 t, "
                    "not 1/t: the O(1/t) claim needs the t-weighted average of Thm 7(b) (checked in the "
                    "output=t_weighted_lag2 row, the likely intended reading; errata P1-F1). ")


def _sc_row(res, spec, key, label, params, gap, t, c, alpha, delta, notes, output):
    from ..theory import get

    if key == "P1.Thm6b.rate":
        measure = _measure_over(gap, "opt_error", "E_A F_S(w_bar_t) - F_S(w_hat) + certificate")
        bound = get(key)(t=t, G=c["G"], alpha=alpha)
        v = check_rate(t, gap.values, rate_exponent(key, "t"), "upper", paired=True, key=key,
                       quantity="opt_error", bound_values=bound, seed=spec.seed, notes=notes)
    else:
        fit, q = _quantile_fit(t, gap.values, 1 - delta, 0.95, 2000, spec.seed)
        expo = rate_exponent(key, "t")
        verdict, qual = rate_class(fit, expo, "upper", 0.0)   # no last-decade fit here: the global class
        matched = fit.lower <= expo <= fit.upper
        bound = get(key)(t=t, G=c["G"], alpha=alpha, delta=delta)
        ratio = q / bound
        R = gap.sizes[REPLICATE]
        l, u, _cov = order_statistic_ci_indices(R, 1 - delta, 0.95)
        srt = np.sort(gap.values, axis=0)
        measure = xr.Dataset({"estimate": ("t", q), "lower": ("t", srt[l - 1] if l >= 1 else np.full(len(t), np.nan)),
                              "upper": ("t", srt[u - 1] if u <= R else np.full(len(t), np.inf))},
                             coords={"t": t})
        measure.attrs.update(quantity="opt_error_quantile", n_replicates=R, level=0.95)
        v = Verdict(key=key, quantity="opt_error_quantile", tag="RATE",
                    verdict=verdict, qualifier=qual, n_replicates=R, level=0.95,
                    slope=fit.slope, slope_lower=fit.lower, slope_upper=fit.upper, exponent=expo, tol=0.0,
                    kind="upper", rate_matched=matched, tightness_min=float(ratio.min()),
                    tightness_max=float(ratio.max()),
                    notes=tuple(notes) + ((f"(1-delta)-quantile, delta = {delta}; paired bootstrap of the "
                                           f"quantile slope ({fit.n_boot} resamples)"),), details=fit)
    fig = res.figure(figure_name(key, label), _rate_figure(res, key, t, measure, bound, v, params, "t",
                                                             _setting(params, f"eta_j = 2/(alpha(j+1)), {output}")))
    expl = None
    if not v.ok:
        expl = (_SC_ETA_WEIGHTED if output == "eta_weighted_lag2" else "") + \
            f"the optimization error does not decay like 1/t here ({v.label}): " + "; ".join(v.notes)
    res.add(v, figure=fig, label=label or None, explanation=expl)


# ---------------------------------------------------------------------------------------------
# kind p1_dp (Theorem 10, Alg. 3)
# ---------------------------------------------------------------------------------------------

PRIVACY = {
    "eps": Param("privacy budget epsilon", 1.0, number(gt=0, what=" (privacy budget)")),
    "delta": Param("privacy delta", 1e-3, number(gt=0, lt=1, what=" (privacy delta)"), sweepable=False),
    "eta_rule": Param("Thm 10 step size: 'thm10' (as printed) or 'thm10_corrected' (P1-E7)", "thm10",
                      choice(("thm10", "thm10_corrected"))),
}


def _validate_dp(spec):
    from ..constraints import get_constraint

    _validate_twin(spec)
    for cell in spec.cells():
        p = spec.cell_params(cell)
        a = p["algorithm"]
        cons = get_constraint(a["constraint"])
        if not cons.bounded:
            raise StudyError("p1_dp: Thm 10's step size needs a bounded W: [algorithm] constraint = 'l2:R'")
        try:
            _optimum(_problem(p["data"]), a["loss"], cons.radius)
        except ValueError as e:
            raise StudyError(f"p1_dp: {e}") from None


@register_kind("p1_dp", params=twin_params(privacy=PRIVACY), validate=_validate_dp,
               description="P1 Thm 10: Alg. 3 (DP localized SGD) once per replicate on its own data set; "
                           "excess risk F(w_K) - F(w*)")
def dp_cell(spec, cell, replicates) -> xr.Dataset:
    """One cell of a ``p1_dp`` study: ``stabsim.privacy.p1_alg3`` per replicate (own S each)."""
    from ..constraints import get_constraint
    from ..privacy.algorithms import calibration_record, p1_alg3

    p = spec.cell_params(cell)
    d, a, pr = p["data"], p["algorithm"], p["privacy"]
    pb = _problem(d)
    cons = get_constraint(a["constraint"])
    _, Fstar = _optimum(pb, a["loss"], cons.radius)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    reps = np.asarray(replicates, dtype=np.int64)
    W, etas = [], []
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # one replicate per call: thread start-up costs 30x the work (results identical)
    try:
        for r in reps:
            X, y = pb.sample(d["n"], data_seed, int(r))
            ds = p1_alg3(X, y, eps=pr["eps"], delta=pr["delta"], loss=a["loss"], constraint=a["constraint"],
                         eta=pr["eta_rule"], replicates=np.array([r]), seed=spec.seed, neighbour="same",
                         kappa=pb.kappa, problem=pb)
            W.append(ds["w_priv"].sel(run="S").values[0])
            etas.append(calibration_record(ds)["eta"])
    finally:
        numba.set_num_threads(threads)
    W = np.array(W)
    F, _, method = _population(W, pb, a["loss"], 4000, spec.seed, reps)
    c = _consts(p)
    out = xr.Dataset(
        {"excess": ("replicate", F - Fstar, {"long_name": "F(w_K) - F(w*)", "description": method}),
         "eta_used": ((), float(etas[0]), {"long_name": "base step eta of Alg. 3"}),
         "two_over_L": ((), 2.0 / c["L"], {"long_name": "2/L (Thm 10 requires eta <= 2/L)"}),
         "excess_w0": ((), float(_population(np.zeros((1, W.shape[1])), pb, a["loss"], 4000, spec.seed,
                                             reps[:1])[0][0] - Fstar),
                       {"long_name": "F(w_0) - F(w*) (w_0 = 0: the excess risk of not moving)"})},
        coords={"replicate": reps})
    out.attrs.update(problem=pb.name, data_seed=data_seed, data_sets="per-replicate")
    return out


@register_check("p1_dp", description="P1 Thm 10: slope in n of E[F(w_K)] - F(w*) of Alg. 3 per (eps, step "
                                     "reading) and the step-size condition eta <= 2/L")
def check_dp(spec, ds) -> CheckResult:
    from ..theory import get

    res = CheckResult()
    keys = spec.bounds.get("keys", [])
    if "P1.Thm10.rate" not in keys:
        raise ValueError("[bounds] keys must contain P1.Thm10.rate")
    if "n" not in ds.dims or ds.sizes["n"] < 3:
        raise ValueError("the Thm 10 study sweeps n over at least 3 values")
    for label, params, sub in sweep_slices(spec, ds, consumed=("n",)):
        pr, a = params["privacy"], params["algorithm"]
        c = _consts(params)
        from ..constraints import get_constraint
        D = get_constraint(a["constraint"]).diameter
        n = sub["n"].values.astype(float)
        y = sub["excess"].transpose(REPLICATE, "n")
        measure = _measure_over(y, "excess_risk", "mean over replicates (fresh S each) of F(w_K) - F(w*)")
        bound = get("P1.Thm10.rate")(n=n, d=params["data"]["d"], eps=pr["eps"], delta=pr["delta"], G=c["G"], D=D)
        eta = sub["eta_used"].values.astype(float)
        reading = "printed" if pr["eta_rule"] == "thm10" else "corrected (P1-E7)"
        v = check_rate(n, y.values, rate_exponent("P1.Thm10.rate", "n"), "upper", paired=False,
                       key="P1.Thm10.rate", quantity="excess_risk", bound_values=bound, seed=spec.seed,
                       notes=[f"step reading: {reading}", f"eps = {pr['eps']:g}, delta = {pr['delta']:g}",
                              f"eta(n) = {', '.join(f'{e:.3g}' for e in eta)}", f"G = {c['G']:.4g}, D = {D:g}"])
        # Remarks 8/9: rates quoted for other algorithms (for comparison curves only) -- drawn, not checked
        extra = [(f"{k} (comparison, other algorithm; not checked)",
                  get(k)(n=n, d=params["data"]["d"], eps=pr["eps"], delta=pr["delta"]))
                 for k in ("P1.Rem8.huai", "P1.Rem8.xue", "P1.Rem9.alg5", "P1.Rem9.p0") if k in keys]
        fig = res.figure(figure_name("P1.Thm10.rate", label), _rate_figure(
            res, "P1.Thm10.rate", n, measure, bound, v, params, "n",
            _setting(params, f"Alg. 3, eps={pr['eps']:g}, delta={pr['delta']:g}, eta {reading}"), extra))
        expl = None
        triv = float(sub["excess_w0"].values.ravel()[0]) if "excess_w0" in sub else math.nan
        res.measured["F(w_0) - F(w*)" + _sfx(label)] = triv
        res.measured["mean excess risk by n" + _sfx(label)] = [float(x) for x in measure["estimate"].values]
        if not v.ok:
            above = int(np.sum(bound >= triv))
            expl = ("" if above else "NOTE: the O(.) expression (constant 1) is below F(w_0) - F(w*) at every n, "
                    "so a shallower slope is not explained by vacuity; the O(.) constant is arbitrary, so this may "
                    "still be pre-asymptotic curvature. ") + (f"pre-asymptotic: the O(.) expression G D (1/sqrt n + sqrt(d) log^1.5(1/delta)/(eps n)) with "
                    f"constant 1 is >= the excess risk of not moving at all, F(w_0) - F(w*) = {triv:.3g}, at "
                    f"{above} of {len(n)} n values, so the theorem constrains nothing there; the measured excess "
                    f"is {', '.join(f'{x:.3g}' for x in measure['estimate'].values)} (a large fraction of "
                    f"F(w_0) - F(w*)): with eta_k = 4^-k eta ({reading} eta = {eta[0]:.3g} at the smallest n) "
                    "Alg. 3 stays near w_0 = 0 and the 1/sqrt(n) regime is not reached; " + "; ".join(v.notes))
        res.add(v, figure=fig, label=label or None, explanation=expl)
        # the CONDITION entry of this reading: Thm 10 requires its step eta <= 2/L
        ckey = "P1.Thm10.eta.printed" if pr["eta_rule"] == "thm10" else "P1.Thm10.eta.corrected"
        if ckey in keys:
            twoL = float(sub["two_over_L"].values.ravel()[0])
            formula = get(ckey)(n=n, d=params["data"]["d"], G=c["G"], D=D, eps=pr["eps"], delta=pr["delta"])
            if not np.allclose(formula, eta, rtol=1e-9):
                raise ValueError(f"the step used by Alg. 3 {eta} differs from the registry's {ckey} {formula}")
            margin = float(np.min(twoL - eta))
            cv = Verdict(key=ckey, quantity="step_size", tag="CONDITION",
                         verdict="holds" if margin >= 0 else "violated", n_replicates=0, level=math.nan,
                         worst_margin=margin, worst_at={"n": float(n[int(np.argmin(twoL - eta))])},
                         tightness_min=float(np.min(eta / twoL)), tightness_max=float(np.max(eta / twoL)),
                         notes=((f"eta(n) from the registry formula equals the step Alg. 3 used; condition "
                                 f"eta <= 2/L = {twoL:.4g}"),))
            res.add(cv, figure=fig, label=label or None,
                    explanation=None if cv.ok else f"the {reading} step exceeds 2/L: Thm 10 does not apply")
    res.notes.append("Thm 10's exponents are asymptotic: -1/2 in n once 1/sqrt(n) dominates the private term "
                     "sqrt(d) log^{3/2}(1/delta)/(eps n) (slope -1 before that); 'upper' rule against -1/2.")
    if any(k.startswith(("P1.Rem8", "P1.Rem9")) for k in keys):
        res.notes.append("Remarks 8/9 (Huai et al., Xue et al., Alg. 5 of App. F, P0 [43]) are rates of other "
                         "algorithms quoted for comparison (comparison curves only): they are drawn in the "
                         "figures with constant 1 and get no verdict (Xue et al. and Alg. 5 are not implemented; "
                         "P0 Alg. 2 and P3's algorithms are checked by the P0/P3 studies).")
    res.notes.append("CONDITION rows: the registry's step-size formula (printed / corrected reading) is "
                     "evaluated and compared with the step Alg. 3 actually used, and with Thm 10's requirement "
                     "eta <= 2/L; the privacy of the calibrated noise is audited elsewhere (stabsim audit).")
    return res


# ---------------------------------------------------------------------------------------------
# Lemma 1 (kind twin_risk with a neighbour sweep)
# ---------------------------------------------------------------------------------------------

def _abs_measure(gap: xr.DataArray, widen: float) -> xr.Dataset:
    """|E gap| with a CI: the mean-CI [lo, hi] (widened by ``widen``) mapped through |.|."""
    m = mean_ci(gap)
    lo, hi = m["lower"] - widen, m["upper"] + widen
    out = xr.Dataset({"estimate": abs(m["estimate"]), "upper": np.maximum(abs(lo), abs(hi)),
                      "lower": xr.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(abs(lo), abs(hi)))})
    out.attrs.update(m.attrs)
    out.attrs.update(quantity="gen_gap", note="|mean over replicates (fresh S each) of F_S - F|")
    return out


@register_check("p1_lem1", description="P1 Lemma 1: |E[F_S(A(S)) - F(A(S))]| <= 2 eps_stab, eps_stab = G x UAS "
                                       "(measured, and the Thm 4/5 UAS bound)")
def check_lem1(spec, ds) -> CheckResult:
    from ..losses import get_loss
    from ..theory import get
    from ..analyses.base import constant_eta
    from .p1 import _overlay

    res = CheckResult()
    if "P1.Lem1.gen" not in spec.bounds.get("keys", []):
        raise ValueError("[bounds] keys must contain P1.Lem1.gen")
    if not spec.sections["data"]["per_replicate"]:
        raise ValueError("Lemma 1 is about E_{S,A}: set [data] per_replicate = true")
    for label, params, sub in sweep_slices(spec, ds, consumed=("neighbour",)):
        cands = [sub.sel(neighbour=v).assign_attrs(neighbour=str(v)) for v in sub["neighbour"].values] \
            if "neighbour" in sub.dims else [sub]
        s0 = cands[0]   # the run on S does not depend on the neighbour: any candidate gives the gap
        widen = 2.0 * float(s0["F_out_se"].mean())
        # t <= 2: the output sum_j eta_j w_{j-2}/sum_j eta_j is w_0 on S and S' (data independent): UAS = 0 and
        # E_S[F_S(w_0) - F(w_0)] = 0 exactly (U-statistic), a bound 0 no finite-sample CI can certify -> skipped
        keep = s0["t"] >= 3
        cands = [cnd.sel(t=keep) for cnd in cands]
        s0 = cands[0]
        measure = _abs_measure(s0["FS_out"] - s0["F_out"], widen).assign_coords(t=s0["t"])
        uas = uas_mean(cands)
        c = _consts(params)
        t = measure["t"].values.astype(float)
        n, eta = params["data"]["n"], constant_eta(params)
        smooth = get_loss(params["algorithm"]["loss"]).phi != 0  # HINGE = 0
        thm = "P1.Thm5.uas" if smooth else "P1.Thm4.uas"
        uas_bound = get(thm)(t=t, n=n, eta=eta, G=c["G"])
        rows = [("eps_stab = G x measured UAS", c["G"] * uas["estimate"].values),
                (f"eps_stab = G x {thm} bound", c["G"] * uas_bound)]
        bounds, verdicts = [], []
        for what, eps_stab in rows:
            b = get("P1.Lem1.gen")(eps_stab=eps_stab)
            v = check_bound(measure, b, "EXPLICIT", key="P1.Lem1.gen", quantity="gen_gap",
                            notes=[what, f"G = {c['G']:.4g}", f"CI widened by 2 x mean SE of F ({widen:.2g})",
                                   f"UAS: max over neighbours {uas.attrs.get('candidates', '')}"])
            bounds.append(("P1.Lem1.gen", b))
            verdicts.append(v)
        fig = _overlay(res, "P1.Lem1.gen", measure, bounds, verdicts, label, params)
        for (what, _), v in zip(rows, verdicts):
            expl = None
            if not v.ok:
                expl = (what + ": " + ("expected for a plug-in: the measured UAS is a mean over data sets S and "
                                       "replaced points (k random, flip / farthest replacement), an average-case "
                                       "stability, while Lemma 1 needs the uniform stability, a sup over all "
                                       "neighbouring S, S' (worst data set, worst replaced point): the measured "
                                       "value underestimates it, so 2 G x it need not bound the gap; "
                                       if "measured" in what else "") + "; ".join(v.notes))
            res.add(v, figure=fig, label=", ".join(x for x in (label, what) if x), explanation=expl)
    res.notes.append("t <= 2 is skipped: there A(S) = A(S') = w_0 (UAS 0) and the expected gap is exactly 0, "
                     "which a confidence interval cannot certify to be <= 0.")
    res.notes.append("Lemma 1 applies to eps-uniformly stable algorithms; G x UAS is uniform stability for a "
                     "G-Lipschitz loss (P1 Def. 1).  With the measured UAS the bound is a plug-in (the sup over "
                     "S, S' is only sampled); with the Thm 4/5 bound it is the paper's route to its gen bound.")
    return res


# ---------------------------------------------------------------------------------------------
# Remark 7: buffer-s update (kind twin_risk, sweep buffer)
# ---------------------------------------------------------------------------------------------

def _horizons(v):
    from ..study import _Bad

    if isinstance(v, list) and len(v) >= 2 and all(isinstance(x, int) and not isinstance(x, bool) and x >= 2
                                                   for x in v) and len(set(v)) == len(v):
        return sorted(v)
    raise _Bad("must be a list of at least 2 distinct integers >= 2 (the horizons T)")


HORIZON = {
    "T": Param("horizons T: one run per T with the constant step eta = c/sqrt(T)", [100, 1000, 10000], _horizons,
               sweepable=False),
    "c": Param("step constant c in eta = c/sqrt(T)", 0.5, number(gt=0, what=" (step constant)"), sweepable=False),
}


def _validate_horizon(spec):
    _validate_twin(spec)
    for cell in spec.cells():
        a = spec.cell_params(cell)["algorithm"]
        if a["w0"] != "zeros":
            raise StudyError("p1_horizon: [algorithm] w0 must be 'zeros'")


@register_kind("p1_horizon", params=twin_params(horizon=HORIZON), validate=_validate_horizon,
               description="P1 Remark 7 / Thm 6(a): one run per horizon T with the constant step c/sqrt(T); "
                           "F_S of the output at T and the certified ERM")
def horizon_cell(spec, cell, replicates) -> xr.Dataset:
    """One cell of a ``p1_horizon`` study: for every horizon T in ``[horizon] T`` the algorithm runs T
    steps with the constant step eta = c/sqrt(T) (Remark 7's 'eta ~ 1/sqrt(t)'); ``FS_out`` (replicate,
    horizon) = F_S of the output after T steps; certified ERM of the (shared) data set."""
    from ..risk import empirical_risk, erm
    from ..twin import run_twin

    p = spec.cell_params(cell)
    d, a, h = p["data"], p["algorithm"], p["horizon"]
    pb = _problem(d)
    reps = np.asarray(replicates, dtype=np.int64)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    X, y = pb.sample(d["n"], data_seed, 0)
    FS = np.empty((len(reps), len(h["T"])))
    for j, T in enumerate(h["T"]):
        kw = _twin_kwargs(spec, p)
        kw.update(T=int(T), eta=h["c"] / math.sqrt(T), checkpoints=np.array([T]), record_outputs=True,
                  neighbour="same")
        ds = run_twin(X, y, replicates=reps, problem=pb, **kw)
        FS[:, j] = np.asarray(empirical_risk(ds["output"].sel(run="S").values[:, -1, :], X, y, a["loss"]))
    res = erm(X, y, a["loss"], a["constraint"])
    R = len(reps)
    out = xr.Dataset(
        {"FS_out": (("replicate", "horizon"), FS, {"long_name": "F_S(output after T steps), eta = c/sqrt(T)"}),
         "FS_wS": ("replicate", np.full(R, res.value), {"long_name": "F_S(w_S) (certified ERM)"}),
         "erm_certificate": ("replicate", np.full(R, res.certificate),
                             {"long_name": "proven bound on F_S(w_S) - min F_S"}),
         "wS_dist0_sq": ("replicate", np.full(R, float(np.sum(res.w ** 2))), {"long_name": "||w_0 - w_S||^2"})},
        coords={"replicate": reps, "horizon": np.asarray(h["T"], dtype=np.int64)})
    out.attrs.update(problem=pb.name, data_seed=data_seed, data_sets="shared")
    return out


def local_slopes(t, mean) -> list[tuple[float, float, float]]:
    """(T_j, T_{j+1}, log-log slope of the mean between them) for consecutive horizons."""
    t, mean = np.asarray(t, float), np.asarray(mean, float)
    return [(float(t[j]), float(t[j + 1]), float(math.log(mean[j + 1] / mean[j]) / math.log(t[j + 1] / t[j])))
            for j in range(len(t) - 1) if mean[j] > 0 and mean[j + 1] > 0]


def _buffer_explanation(v, local) -> str:
    """Remark 7's T-slope row, told from the measured local slopes (no constants from side runs)."""
    txt = ("measured local slopes of the mean between consecutive T: "
           + ", ".join(f"{a:.0f}->{b:.0f}: {x:.2f}" for a, b, x in local))
    if local:
        a, b, x = max(local, key=lambda z: z[2])
        txt += f" (flattest {x:.2f} at {a:.0f}->{b:.0f})"
    if v.local_slope is not None:
        hit = v.local_lower <= v.exponent <= v.local_upper
        txt += (f"; last decade (T >= {v.details.local_from:.0f}): slope {v.local_slope:.3g} "
                f"[{v.local_lower:.3g}, {v.local_upper:.3g}], which "
                + (("contains -1/2 and excludes 0: the error decays again after the plateau, at a rate compatible "
                    "with -1/2" if v.local_upper < 0 else "contains -1/2 but also 0: too few horizons in the last "
                    "decade to tell") if hit else "does not contain -1/2"))
    return txt + ". The error stays far below the explicit bound; "


@register_check("p1_buffer", description="P1 Remark 7: optimization error of the buffer-s update: slope in t vs -1/2 "
                                         "per s, slope in s vs +1/2 at the last t")
def check_buffer(spec, ds) -> CheckResult:
    from ..theory import get

    res = CheckResult()
    key = "P1.Rem7.buffer_rate"
    if key not in spec.bounds.get("keys", []):
        raise ValueError(f"[bounds] keys must contain {key}")
    if "buffer" not in ds.dims or ds.sizes["buffer"] < 2:
        raise ValueError("Remark 7's study sweeps buffer over at least 2 values")
    if "horizon" not in ds.dims:
        raise ValueError("Remark 7's study is of kind p1_horizon (one run per horizon T, eta = c/sqrt(T))")
    per_s = []
    for label, params, sub in sweep_slices(spec, ds, consumed=("neighbour",)):
        s = params["algorithm"]["buffer"]
        cert = float(sub["erm_certificate"].max())
        gap = (sub["FS_out"] - sub["FS_wS"] + cert).rename(horizon="t").transpose(REPLICATE, "t")
        per_s.append((s, gap.isel(t=-1).values, params))
        t = gap["t"].values.astype(float)
        measure = _measure_over(gap, "opt_error", "E_A F_S(w_bar_t) - F_S(w_hat) + certificate")
        bound = get(key)(t=t, s=s)
        v = check_rate(t, gap.values, rate_exponent(key, "t"), "upper", paired=True, key=key, quantity="opt_error",
                       bound_values=bound, seed=spec.seed,
                       notes=[f"s = {s}, eta = {params['horizon']['c']:g}/sqrt(T), one run per T",
                              f"ERM certificate {cert:.2g} added"])
        fig = res.figure(figure_name(key, label), _rate_figure(
            res, key, t, measure, bound, v, params, "t",
            _setting(params, f"buffer s={s}, eta = {params['horizon']['c']:g}/sqrt(T)")))
        support = ""
        if s == 1:  # s = 1 is Alg. 1: Eq. (5) (Thm 6(a), eta_0 = eta_1) is an explicit bound with the same T-rate
            c = _consts(params)
            eq5 = get("P1.Thm6a.eta0_eta1")(dist_sq=float(sub["wS_dist0_sq"].max()), G=c["G"],
                                            eta=params["horizon"]["c"] / np.sqrt(t), t=t)
            worst = float(np.max(measure["upper"].values / eq5))
            support = (f"at s = 1 the explicit Eq. (5) bound (Thm 6(a), eta_0 = eta_1), whose T-slope is exactly "
                       f"-1/2, {'holds' if worst < 1 else 'is exceeded'} at every T (max CI-upper/bound "
                       f"{worst:.2g}): ")
            res.measured["max (CI upper)/Eq. (5) at s = 1"] = worst
        local = local_slopes(t, gap.values.mean(axis=0))
        res.measured[f"local T-slopes at s = {s} (T_j -> T_j+1)"] = {f"{int(a_)}->{int(b_)}": round(x_, 3)
                                                                    for a_, b_, x_ in local}
        res.add(v, figure=fig, label=(label or "") + " (slope in t)",
                explanation=None if v.ok else support + _buffer_explanation(v, local) + "; ".join(v.notes))
    per_s.sort(key=lambda z: z[0])
    svals = np.array([z[0] for z in per_s], dtype=float)
    Y = np.stack([z[1] for z in per_s], axis=1)
    tl = int(ds["horizon"].values[-1])
    bound = get(key)(t=float(tl), s=svals)
    measure = _measure_over(xr.DataArray(Y, dims=(REPLICATE, "s"), coords={"s": svals}), "opt_error",
                            f"E_A F_S(w_bar_t) - F_S(w_hat) + certificate at t = {tl}")
    v = check_rate(svals, Y, rate_exponent(key, "s"), "upper", paired=True, key=key, quantity="opt_error",
                   bound_values=bound, seed=spec.seed,
                   notes=[f"t = {tl}", "paired: replicate r shares its index sequence across s"])
    fig = res.figure(figure_name(key, "slope in s"), _rate_figure(res, key, svals, measure, bound, v, per_s[0][2], "s",
                                                                  _setting(per_s[0][2], f"t = {tl}")))
    res.add(v, figure=fig, label=f"slope in s at t={tl}",
            explanation=rate_explanation(v, "the optimization error grows faster than sqrt(s): " + "; ".join(v.notes)))
    res.notes.append("Remark 7 states O(sqrt(s)/sqrt(t)) for a constant step eta ~ 1/sqrt(t) (Remark 7's reading of "
                     "Eq. (5)): every horizon T is a separate run with eta = c/sqrt(T), output Alg. 1's average; "
                     "the decaying schedule eta_j = c/sqrt(j) would give log(t)/sqrt(t) instead.")
    return res
