"""P4 (Wang, Lei, Ying, Zhou: differentially private SGD with low noise): the ``p4_risk`` study
kind and the analysis checks of the P4 studies (``studies/p4_*.toml``).

Kind ``p4_risk``
    ``run_twin`` with the outputs w_priv recorded, reduced per replicate and checkpoint to
    ``FS_out`` = F_S(w_priv) and ``F_out`` = F(w_priv) (Monte Carlo on a fresh test sample of
    size ``[risk] m``, with ``F_out_se``), plus ``FS_wstar`` = F_S(w*) per replicate for the
    problem's known minimiser (p4_lsq: P4's w*, exact population minimiser for kappa = 0 and,
    by symmetry of the noise, also the least-squares minimiser for kappa > 0 up to the
    rejection step; see the check notes).  ``[risk] T_per_n`` > 0 sets T = ceil(T_per_n n)
    (so T can follow a swept n); ``[risk] eps`` > 0 sets sigma from P4 Thm 2 / Thm 5 with the
    paper's beta search (``stabsim.privacy.calibration.p4_beta_search``) at ``[risk] delta``.
    The outputs themselves are not kept.

Checks
    ``p4_onavg``   Lemma 14(a) (pointwise Alg. 1) / Lemma 19(a) (pairwise Alg. 2): on-average
                   argument stability of w_priv (and of the iterate) vs the bound evaluated at
                   the measured sum_j eta_j^2 E[F_S(w_j)] (``eta2_loss_path``).
    ``p4_opt``     Thm 16(a): E[F_S(w_priv)] - F_S(w*) vs the bound / (T eta).
    ``p4_rates``   Thm 3(a)/(b): slope in n of the excess risk E[F(w_priv)] - F(w*) (T = T_per_n n).
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from ..measures import REPLICATE, mean_ci, onavg_stability
from ..study import Param, StudySpec, _problem, _twin_kwargs, _validate_twin, boolean, integer, number, \
    register_kind, twin_params, choice
from ..verdicts import check_bound, check_rate
from ..analyses.base import CheckResult, constant_eta, figure_name, register_check, sweep_slices

RISK = {
    "m": Param("test sample size for the Monte Carlo F(w_priv)", 20000, integer(3, " (test sample size)"),
               sweepable=False),
    "population": Param("estimate F(w_priv)", True, boolean, sweepable=False),
    "T_per_n": Param("if > 0: T = ceil(T_per_n * n) (overrides [algorithm] T)", 0.0, number(ge=0)),
    "eps": Param("if > 0: sigma calibrated by P4 Thm 2/5 at this eps (overrides [algorithm] sigma)", 0.0,
                 number(ge=0)),
    "delta": Param("privacy delta for the calibration", 1e-5, number(gt=0, lt=1), sweepable=False),
    "schedule": Param("'fixed' ([algorithm] eta, T) or P4's recommended eta and T ~ n for Thm '3a' / '3b'",
                      "fixed", choice(("fixed", "3a", "3b"))),
    "c": Param("constant c of the recommended step size", 1.0, number(gt=0)),
    "schedule_eps": Param("eps used in the recommended step size when [risk] eps = 0 (non-private runs)", 4.0,
                          number(gt=0), sweepable=False),
}


def _effective(p):
    """(T, sigma, calibration note) of a p4_risk cell."""
    from ..constraints import get_constraint
    from ..losses import get_loss

    a, d, rk = p["algorithm"], p["data"], p["risk"]
    T = int(math.ceil(rk["T_per_n"] * d["n"])) if rk["T_per_n"] > 0 else a["T"]
    eta = a["eta"]
    if rk["schedule"] != "fixed":
        from ..theory.p4 import recommended_schedule

        e_s = rk["eps"] if rk["eps"] > 0 else rk["schedule_eps"]
        eta_r, T_r = recommended_schedule(theorem=rk["schedule"], n=d["n"], eps=e_s, delta=rk["delta"], d=d["d"],
                                          c=rk["c"])
        eta = float(eta_r)
        if rk["T_per_n"] <= 0:
            T = int(T_r)
    sigma, note = a["sigma"], ""
    if rk["eps"] > 0:
        from ..privacy.calibration import p4_beta_search

        pb = _problem(d)
        loss = get_loss(a["loss"], a["q"])
        G = loss.G(pb.kappa, get_constraint(a["constraint"]).radius)
        if not math.isfinite(G):
            raise ValueError("P4 calibration needs a finite Lipschitz constant G: give a constraint l2:R")
        res = p4_beta_search(rk["eps"], rk["delta"], d["n"], T, G, pairwise=loss.pairwise)
        sigma = math.sqrt(res.sigma2)
        note = f"beta = {res.beta:.4g}, sigma^2 = {res.sigma2:.4g} (G = {G:.4g})"
    return T, sigma, note, eta


def _validate_p4_risk(spec):
    from ..study import StudyError

    _validate_twin(spec)
    for cell in spec.cells():
        p = spec.cell_params(cell)
        if p["data"]["problem"] != "p4_lsq" or p["algorithm"]["loss"] != "point_lsq":
            raise StudyError("p4_risk: needs [data] problem = 'p4_lsq' and [algorithm] loss = 'point_lsq' "
                             "(the known w* and Monte Carlo F)")
        if p["algorithm"]["w0"] != "zeros":
            raise StudyError("p4_risk: [algorithm] w0 must be 'zeros' (P4: w_1 = 0)")
        try:
            _effective(p)
        except Exception as e:  # infeasible privacy parameters etc.
            raise StudyError(f"p4_risk: cell {cell.coords}: {e}") from None


@register_kind("p4_risk", params=twin_params(risk=RISK), validate=_validate_p4_risk,
               description="P4 DP-SGD runs + F_S(w_priv), F(w_priv) and F_S(w*) per replicate (T, sigma from n, eps)")
def p4_risk_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``p4_risk`` study (see the module docstring)."""
    from ..risk import empirical_risk, population_risk
    from ..twin import log_checkpoints, run_twin

    p = spec.cell_params(cell)
    d, a, rk = p["data"], p["algorithm"], p["risk"]
    pb = _problem(d)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    T, sigma, note, eta = _effective(p)
    if d["per_replicate"]:
        sets = [pb.sample(d["n"], data_seed, int(r)) for r in replicates]
        X, y = np.stack([s[0] for s in sets]), np.stack([s[1] for s in sets])
    else:
        X, y = pb.sample(d["n"], data_seed, 0)
    kw = _twin_kwargs(spec, p)
    ck = a["checkpoints"]
    if p["risk"]["schedule"] != "fixed":
        kw["eta"] = eta
    kw.update(T=T, sigma=sigma, record_outputs=True,
              checkpoints=log_checkpoints(T, ck) if isinstance(ck, int) else np.asarray([c for c in ck if c <= T] or [T]))
    reps = np.asarray(replicates, dtype=np.int64)
    ds = run_twin(X, y, replicates=reps, problem=pb, **kw)
    W = np.ascontiguousarray(ds["output"].sel(run="S").values)  # (R, t, p)
    R, nt = W.shape[:2]
    wstar = np.asarray(pb.w_star_paper, dtype=float)
    if d["per_replicate"]:
        FS = np.stack([np.asarray(empirical_risk(W[i], X[i], y[i], a["loss"])) for i in range(R)])
        FSw = np.array([float(empirical_risk(wstar, X[i], y[i], a["loss"])) for i in range(R)])
    else:
        FS = np.asarray(empirical_risk(W, X, y, a["loss"]))
        FSw = np.full(R, float(empirical_risk(wstar, X, y, a["loss"])))
    out = ds.drop_vars(["output", "run"])
    # only the final checkpoint matters for the rates; keep T as a data variable (it varies with n)
    out["FS_out"] = (("replicate", "t"), FS.reshape(R, nt), {"long_name": "F_S(w_priv)", "units": "1"})
    out["FS_wstar"] = ("replicate", FSw, {"long_name": "F_S(w*)", "units": "1"})
    if rk["population"]:
        est = population_risk(W, pb, a["loss"], m=rk["m"], seed=spec.seed, replicate=0)
        out["F_out"] = (("replicate", "t"), np.asarray(est.value).reshape(R, nt),
                        {"long_name": "F(w_priv)", "units": "1", "description": f"{est.method}"})
        out["F_out_se"] = (("replicate", "t"), np.asarray(est.se).reshape(R, nt),
                           {"long_name": "standard error of F(w_priv)", "units": "1"})
        Fw = population_risk(wstar, pb, a["loss"], m=rk["m"], seed=spec.seed, replicate=0)
        out.attrs.update(F_wstar=float(np.asarray(Fw.value)), F_wstar_se=float(np.asarray(Fw.se)))
    # a swept n changes T, hence the checkpoints: store the final values on a fixed "t" = last only
    out = out.isel(t=[-1]).drop_vars([v for v in ("sum_eta", "sum_eta2", "eta_t") if v in out.coords])
    out = out.assign_coords(t=[0])  # "final" (T varies with n); the true T is in T_eff
    out["T_eff"] = ((), T)
    out["sigma_eff"] = ((), sigma)
    out["eta_eff"] = ((), float(eta) if not isinstance(eta, str) else math.nan)
    out.attrs.update(problem=pb.name, data_seed=data_seed, calibration=note or "sigma as given",
                     data_sets="per-replicate" if d["per_replicate"] else "shared")
    return out


# ---- helpers ------------------------------------------------------------------------------------

def _constants(params) -> dict:
    from ..constraints import get_constraint
    from ..losses import get_loss

    a = params["algorithm"]
    pb = _problem(params["data"])
    loss = get_loss(a["loss"], a["q"])
    R = get_constraint(a["constraint"]).radius
    return {"G": loss.G(pb.kappa, R), "L": loss.L(pb.kappa, R), "kappa": pb.kappa, "loss": loss,
            "pairwise": loss.pairwise, "problem": pb}


def _F_star(pb, seed=0, m=400000) -> tuple[float, str]:
    """F(w*): 0 for p4_lsq with kappa = 0 (exact), else a large Monte Carlo estimate (fixed test stream)."""
    if pb.F_star is not None:
        return float(pb.F_star), "exact"
    from ..risk import population_risk

    est = population_risk(np.asarray(pb.w_star_paper, float), pb, pb.loss_name, m=m, seed=seed, replicate=1)
    return float(np.asarray(est.value)), f"Monte Carlo, m = {m}, SE {float(np.asarray(est.se)):.2g}"


def _setting(params, extra=""):
    a, d = params["algorithm"], params["data"]
    s = f"{a['name']}, {a['loss']}, {d['problem']}, n={d['n']}, eta={a['eta']}, sigma={a['sigma']}"
    return s + (f", {extra}" if extra else "")


def _overlay(res, name, measure, bounds, verdicts, params, extra="", x=None):
    from ..plots import plot_bound_overlay
    from ..theory import get

    fig = plot_bound_overlay(measure, [(get(k), v) for k, v in bounds], verdicts=verdicts, x=x,
                             setting=_setting(params, extra))
    return res.figure(name, fig)


def _rate_figure(res, key, n, exc, verdict, params, label="", kappa=None, floor=None) -> str:
    """Log-log figure of a P4 rate verdict: the replicate mean of the excess risk with its 95% CI
    against n, the fitted slope line and the theorem's exponent (``plot_rate_fit``); ``floor``:
    optional level drawn as a dashed "eta sigma^2 d floor" line.  Returns the registered file name."""
    from ..plots import default_title, plot_rate_fit
    from ..theory import get

    tpn = params["risk"]["T_per_n"]
    extra = ", ".join(x for x in (f"kappa={kappa:g}" if kappa is not None else "", label,
                                  f"eta per schedule {params['risk']['schedule']}",
                                  f"T = {tpn:g} n" if tpn > 0 else "") if x)
    fig = plot_rate_fit(n, verdict.details, verdict, y_reps=exc, floor=floor, quantity="excess_risk", xname="n",
                        title=default_title(get(key), "excess_risk", f"{params['algorithm']['loss']}, "
                                                                     f"{params['data']['problem']}, {extra}"))
    return res.figure(figure_name(key, label), fig)


# ---- Lemma 14(a) / 19(a): on-average stability -------------------------------------------------

_ONAVG_KEYS = {"P4.Lemma14a.onavg": False, "P4.Lemma19a.onavg": True}  # key -> pairwise


@register_check("p4_onavg", description="P4 Lemma 14(a)/19(a): on-average argument stability of w_priv vs the "
                                        "bound at the measured sum_j eta_j^2 E[F_S(w_j)]")
def check_onavg(spec, ds) -> CheckResult:
    from ..theory import get

    res = CheckResult()
    keys = [k for k in spec.bounds.get("keys", []) if k in _ONAVG_KEYS]
    if not keys:
        raise ValueError("[bounds] keys must contain P4.Lemma14a.onavg or P4.Lemma19a.onavg")
    if not spec.sections["data"]["per_replicate"]:
        raise ValueError("on-average stability needs [data] per_replicate = true (one S per replicate)")
    for label, params, sub in sweep_slices(spec, ds):
        c = _constants(params)
        a = params["algorithm"]
        eta, n = constant_eta(params), params["data"]["n"]
        sfx = f" ({label})" if label else ""
        # E[sum_j eta_j^2 F_S(w_j)] (P4 numbering, w_1 = 0): the kernel's fhat_j(w_{j-1}) with w_0 = 0 is an
        # unbiased estimate of F_S at P4's w_j, so eta2_loss_path at t IS the sum over j = 1..t.  Use the lower
        # end of its 95% CI: the bound increases in it, so this is the conservative choice for "holds".
        s = mean_ci(sub["eta2_loss_path"])
        s_lo = np.maximum(s["lower"].values, 0.0)
        t = sub["t"].values.astype(float)
        for key in keys:
            if _ONAVG_KEYS[key] != c["pairwise"]:
                raise ValueError(f"{key} is for the {'pairwise' if _ONAVG_KEYS[key] else 'pointwise'} algorithm, "
                                 f"the study runs {a['name']} with {a['loss']}")
            bound = np.array([float(get(key)(n=n, L=c["L"], sum_eta2_EFS=s_lo[i], T=ti, eta=eta))
                              for i, ti in enumerate(t)])
            rows = []
            for var, what in (("dist_output", "w_priv"), ("dist_iterate", "iterate")):
                m = onavg_stability(sub, var=var)
                notes = [f"L = {c['L']:.4g} ({c['loss'].name}, sup||x|| = {c['kappa']:.4g}), eta = {eta:g} "
                         f"(<= 2/L = {2 / c['L']:.4g})",
                         f"sigma = {a['sigma']:g}, noise shared by S and S^(i): it cancels in w - w^(i)",
                         "sum_eta2_EFS = lower 95% CI end of the replicate mean of eta2_loss_path"]
                v = check_bound(m, bound, "EXPLICIT-DD", key=key, notes=notes)
                rows.append((v, m, what))
            fig = _overlay(res, figure_name(key, label), rows[0][1], [(key, bound)], [rows[0][0]], params)
            for v, m, what in rows:
                expl = None
                if not v.ok:
                    expl = f"on-average stability of the {what} above {key}: " + "; ".join(v.notes)
                res.add(v, figure=fig, label=f"{what}{', ' + label if label else ''}", explanation=expl)
                res.measured[f"max onavg ({what}){sfx}"] = float(m["estimate"].max())
            res.measured[f"bound at T{sfx}"] = float(bound[-1])
        res.measured[f"sum_eta2_EFS at T (mean, lower CI){sfx}"] = [float(s["estimate"].values[-1]), float(s_lo[-1])]
        res.measured[f"L{sfx}"] = c["L"]
    res.notes.append("Index shift: P4 numbers the iterates w_1 = 0, w_2, ...; the kernel's w_0 = 0, so the kernel's "
                     "w_{j-1} is P4's w_j and eta2_loss_path at t = sum_{j<=t} eta_j^2 fhat_j(kernel w_{j-1}) estimates "
                     "sum_{j=1}^t eta_j^2 E[F_S(w_j)] without shift.  The lemma's per-iterate form bounds P4's "
                     "w_{t+1} (the kernel's w_t, dist_iterate at t) with the sum up to t; w_priv at T is the mean "
                     "of P4's w_1..w_T, whose squared distance is <= the mean of the per-iterate ones (Jensen), "
                     "each <= the bound with the sum up to T-1 <= the stated bound at T (non-decreasing in T).")
    res.notes.append("On-average design: one data set per replicate, replaced index uniform (k = random), the "
                     "replacement an independent fresh copy, shared indices and noise (sigma = 0 here; with "
                     "shared noise the b_t cancel in the coupled difference, so the lemma is the non-private one).")
    return res


# ---- Thm 16(a): optimization error -----------------------------------------------------------------

@register_check("p4_opt", description="P4 Thm 16(a): E[F_S(w_priv)] - F_S(w*) vs the bound / (T eta)")
def check_opt(spec, ds) -> CheckResult:
    from ..theory import get

    res = CheckResult()
    key = "P4.Thm16a.opt"
    fig_name, rows = figure_name(key), []
    for label, params, sub in sweep_slices(spec, ds):
        c = _constants(params)
        eta = float(sub["eta_eff"].values.max())
        T = int(sub["T_eff"].values.max())
        sigma = float(sub["sigma_eff"].values.max())
        pb = c["problem"]
        w2 = float(np.sum(np.asarray(pb.w_star_paper) ** 2))
        Fstar, how = _F_star(pb, spec.seed)
        res.measured[f"F(w*) ({how}){' (' + label + ')' if label else ''}"] = Fstar
        gap = (sub["FS_out"] - sub["FS_wstar"]).isel(t=-1)
        m = mean_ci(gap.expand_dims(T=[T]).transpose(REPLICATE, "T"))
        m.attrs.update(quantity="opt_error")
        b = get(key)(L=c["L"], sigma2=sigma ** 2, d=pb.d, w_star_norm2=w2, F_star=Fstar, t=T, eta=eta)
        v = check_bound(m, np.atleast_1d(b), "EXPLICIT", key=key,
                        notes=[f"T = {T}, eta = {eta:g}, sigma = {sigma:.4g}, d = {pb.d}, ||w*||^2 = {w2:.4g}, "
                               f"F(w*) = {Fstar:.4g}, L = {c['L']:g}"])
        res.add(v, label=label or None, figure=fig_name,
                explanation=None if v.ok else "E[F_S(w_priv)] - F_S(w*) above Thm 16(a)/(T eta): " + "; ".join(v.notes))
        rows.append((label or "all", float(m["estimate"].values[0]), float(m["lower"].values[0]),
                     float(m["upper"].values[0]), float(np.atleast_1d(b)[0]), v))
        sfx = f" ({label})" if label else ""
        res.measured["opt error (mean)" + sfx] = float(m["estimate"].values[0])
        res.measured["bound" + sfx] = float(np.atleast_1d(b)[0])
    if rows:
        from ..plots import plot_bound_points

        a, d = spec.sections["algorithm"], spec.sections["data"]
        res.figure(fig_name, plot_bound_points(
            rows, ylabel="E[F_S(w_priv)] − F_S(w*) at T",
            title=f"P4 Theorem 16(a): optimization error vs the bound / (T eta), one column per cell "
                  f"({a['name']}, {a['loss']}, {d['problem']}, n={d['n']}, T={a['T']}, eta={a['eta']})"))
    res.notes.append("Thm 16(a) bounds sum_j eta_j E[F_S(w_j) - F_S(w*)]; divided by T eta it bounds "
                     "E[F_S(w_priv)] - E[F_S(w*)] by Jensen (constant eta).  w* = P4's w* (p4_lsq); measured per "
                     "replicate as F_S(w_priv) - F_S(w*) on the same S, so E[F_S(w*)] = F(w*) is not needed.")
    return res


# ---- P4-F1: the constant-step privacy-noise floor of Thm 3(b) / 6(b) ---------------------------------

#: P4 Thm 2 / Thm 5: the calibration is (eps, delta)-DP only if sigma^2 >= 2.68 G^2 (for every admissible beta).
SIGMA2_MIN_OVER_G2 = 2.68
FLOOR_QUALIFIER = "floor (P4-F1)"
FLOOR_KEYS = ("P4.Thm3b.excess", "P4.Thm6b.excess")
ERRATUM_F1 = ("errata P4-F1 (P4: constant-step floor eta sigma^2 d of Thm 3(b)/6(b) vs sigma^2 >= 2.68 G^2 of "
              "Thm 2/5)")


def constant_step_floor(n, mean, eta, sigma, d: int, G: float, verdict) -> dict:
    """The P4-F1 floor of a Thm 3(b)/6(b) rate row and whether the measured curve flattens at it.

    ``n``, ``mean``, ``eta``, ``sigma``: the sweep, the replicate-mean excess risk and the cell's step and noise
    at each n; ``verdict``: the row's ``check_rate`` Verdict.  The bound's optimization term sum_j eta^2 sigma^2 d /
    (T eta) leaves eta sigma_n^2 d (``floor``), and Thm 2/5's sigma^2 >= 2.68 G^2 bounds it below by the
    n-independent ``floor_min`` = 2.68 eta G^2 d (a constant when eta is).  The rule (fixed before the run):
    the row *flattens at the floor* iff (1) the cell is private and its step is constant over the sweep (the premise
    of P4-F1), (2) the rule verdict is not a success (the claimed decay is not seen), (3) the measure does not fall
    relative to the floor term: the lower end of its slope CI is >= the log-log slope of eta sigma_n^2 d over the
    sweep (measure / floor is not decreasing), and (4) the measure lies below the floor term at every n (the floor
    is what the bound keeps; a measure above it would be flat for another reason)."""
    n, mean = np.asarray(n, float), np.asarray(mean, float)
    eta = np.broadcast_to(np.asarray(eta, float), n.shape)
    sigma = np.broadcast_to(np.asarray(sigma, float), n.shape)
    floor = eta * sigma ** 2 * d
    out = {"floor": floor, "floor_min": SIGMA2_MIN_OVER_G2 * float(eta.min()) * G ** 2 * d,
           "floor_slope": math.nan, "flattens": False, "why": ""}
    private = bool(np.all(sigma > 0))
    const = bool(eta.max() <= eta.min() * (1 + 1e-9))
    if not (private and const):
        out["why"] = "non-private cell" if not private else "the step is not constant over the sweep"
        return out
    out["floor_slope"] = fs = float(np.polyfit(np.log(n), np.log(floor), 1)[0])
    below = bool(np.all(mean <= floor))
    flat = verdict.slope_lower is not None and verdict.slope_lower >= fs
    out["flattens"] = (not verdict.ok) and flat and below
    out["why"] = (f"measured slope {verdict.slope:.3g} [{verdict.slope_lower:.3g}, {verdict.slope_upper:.3g}] vs the "
                  f"floor term's slope {fs:.3g} ({'not decaying faster' if flat else 'decays faster'}); measured/floor "
                  f"= {float((mean / floor).min()):.2g}..{float((mean / floor).max()):.2g} "
                  f"({'below it at every n' if below else 'above it somewhere'})")
    return out


def floor_row(v, n, mean, eta, sigma, d: int, G: float, key: str):
    """(verdict, explanation or None, floor info or None) of a Thm 3(b)/6(b) rate row by the rule of
    ``constant_step_floor``: relabelled "inconclusive (floor (P4-F1))" when the curve flattens at the floor."""
    if key not in FLOOR_KEYS:
        return v, None, None
    fl = constant_step_floor(n, mean, eta, sigma, d, G, v)
    if not fl["flattens"]:
        return v, None, fl
    eta0 = float(np.asarray(eta, float).ravel()[0])
    text = (f"floor, not a rate: with the constant step eta = {eta0:.4g} the bound keeps the term eta sigma^2 d = "
            f"{fl['floor'][0]:.3g}..{fl['floor'][-1]:.3g} over n = {int(n[0])}..{int(n[-1])} (sigma = "
            f"{float(np.min(sigma)):.3g}..{float(np.max(sigma)):.3g}, d = {d}), and Thm 2/5 force sigma^2 >= 2.68 G^2, "
            f"so it never falls below 2.68 eta G^2 d = {fl['floor_min']:.3g} (G = {G:.4g}, the horizontal line), "
            "whatever n: Thm 3(b)/6(b)'s 1/n rate (which takes sigma^2 ~ T log(1/delta)/(n eps)^2 -> 0) contradicts "
            "the same paper's privacy theorems -- an inconsistency between the paper's theorems, not a "
            f"pre-asymptotic effect ({ERRATUM_F1}).  Measured: the curve flattens ({fl['why']}); the floor is a term "
            "of the upper bound and the projected iterates sit below it (the loss is capped on W), flat like it; "
            "the rate claim cannot be tested as stated")
    return v.relabel("inconclusive", FLOOR_QUALIFIER, note=f"P4-F1 floor: {fl['why']}"), text, fl


def _per_n(da, n) -> np.ndarray:
    """A per-cell parameter (sigma_eff, eta_eff) as one value per swept n (its max over other dims)."""
    if "n" in da.dims:
        other = [d for d in da.dims if d != "n"]
        return np.asarray(da.transpose("n", *other).values, float).reshape(len(n), -1).max(axis=1)
    return np.full(len(n), float(np.asarray(da.values, float).max()))


# ---- Thm 3: rates in n -------------------------------------------------------------------------------

@register_check("p4_rates", description="P4 Thm 3(a)/(b): slope in n of E[F(w_priv)] - F(w*) (T = T_per_n n)")
def check_rates(spec, ds) -> CheckResult:
    res = CheckResult()
    if "n" not in spec.sweep:
        raise ValueError("p4_rates needs a [sweep] over n")
    keys = [k for k in spec.bounds.get("keys", []) if k in ("P4.Thm3a.excess", "P4.Thm3b.excess")]
    if not keys:
        raise ValueError("[bounds] keys must contain P4.Thm3a.excess or P4.Thm3b.excess")
    from ..theory import get

    for label, params, sub in sweep_slices(spec, ds, consumed=("n",)):
        c = _constants(params)
        pb = c["problem"]
        Fstar, how = _F_star(pb, spec.seed)
        res.measured[f"F(w*) ({how}){' (' + label + ')' if label else ''}"] = Fstar
        n = sub["n"].values.astype(float)
        exc = (sub["F_out"].isel(t=-1) - Fstar).transpose(REPLICATE, "n").values
        kappa_noise = pb.params["kappa"]
        key = "P4.Thm3b.excess" if kappa_noise == 0 else "P4.Thm3a.excess"
        if key not in keys:
            raise ValueError(f"kappa = {kappa_noise:g} needs {key} in [bounds] keys (3(b): F(w*) = 0 only)")
        expo = get(key).rate["n"]
        v = check_rate(n, exc, expo, "upper", key=key, quantity="excess_risk",
                       notes=[f"kappa (label noise) = {kappa_noise:g}, F(w*) = {Fstar:.4g}",
                              f"T = T_eff in {np.unique(sub['T_eff'].values).tolist()}, eta = eta_eff in "
                              f"{np.round(np.unique(sub['eta_eff'].values), 4).tolist()} (schedule {params['risk']['schedule']})",
                              f"sigma: {'calibrated at eps = ' + str(params['risk']['eps']) if params['risk']['eps'] > 0 else params['algorithm']['sigma']}"])
        sig_n = _per_n(sub["sigma_eff"], n)
        v, expl, fl = floor_row(v, n, np.nanmean(exc, axis=0), _per_n(sub["eta_eff"], n), sig_n, pb.d, c["G"], key)
        if expl is not None:
            expl += "; " + "; ".join(v.notes)
        elif not v.ok:
            expl = (f"the excess risk does not decay like n^{expo:g} on this range ({v.label}): " + "; ".join(v.notes))
            if np.nanmax(sig_n) > 0:
                expl += (f". The Thm 2 noise is sigma = {np.nanmin(sig_n):.3g}..{np.nanmax(sig_n):.3g} (sigma^2 >= "
                         "2.68 G^2 for every beta), so the projected noisy iterates sit at a noise floor"
                         + (f"; the P4-F1 floor rule does not apply: {fl['why']}" if fl is not None else ""))
        elif not v.rate_matched:
            expl = "consistent (decays at least as fast as the theorem says) but the exponent itself is not attained"
        flat = fl is not None and bool(np.isfinite(fl["floor_slope"]))
        fig = _rate_figure(res, key, n, exc, v, params, label, kappa_noise, floor=fl["floor_min"] if flat else None)
        if flat:
            res.measured["eta sigma^2 d per n, 2.68 eta G^2 d (P4-F1)" + (f" ({label})" if label else "")] = \
                [np.round(fl["floor"], 4).tolist(), round(fl["floor_min"], 4)]
        res.add(v, figure=fig, label=label or None, explanation=expl)
        sfx = f" ({label})" if label else ""
        res.measured["excess risk per n" + sfx] = np.nanmean(exc, axis=0).tolist()
        res.measured["sigma per n" + sfx] = np.atleast_1d(sub["sigma_eff"].values).tolist()
    res.notes.append("excess risk = F(w_priv) - F(w*) with F by Monte Carlo on a fresh test sample (shared by all "
                     "replicates, its SE is small next to the spread over replicates); slope fitted on log-log with a "
                     "paired bootstrap CI (check_rate, upper rule).  Thm 3 prescribes eta and T ~ n; a finite n range "
                     "can show pre-asymptotic curvature.")
    return res
