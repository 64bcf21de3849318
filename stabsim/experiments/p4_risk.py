"""P4 (Wang, Lei, Ying, Zhou: DP-SGD with low noise): the ``p4_risk`` study kind (studies
``p4_thm16a``, ``p4_rates_lownoise``, ``p4_rates_noisy``; their checks ``p4_opt`` and ``p4_rates``
are in :mod:`stabsim.analyses.p4_optimization` and :mod:`stabsim.analyses.p4_rates`).

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
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from stabsim.setups.p4 import RISK
from stabsim.registry import StudySpec, register_kind, twin_kwargs, twin_params, twin_problem, validate_twin

def _effective(p):
    """(T, sigma, calibration note) of a p4_risk cell."""
    from stabsim.engine.constraints import get_constraint
    from stabsim.engine.losses import get_loss

    a, d, rk = p["algorithm"], p["data"], p["risk"]
    T = int(math.ceil(rk["T_per_n"] * d["n"])) if rk["T_per_n"] > 0 else a["T"]
    eta = a["eta"]
    if rk["schedule"] != "fixed":
        from stabsim.theory.p4 import recommended_schedule

        e_s = rk["eps"] if rk["eps"] > 0 else rk["schedule_eps"]
        eta_r, T_r = recommended_schedule(theorem=rk["schedule"], n=d["n"], eps=e_s, delta=rk["delta"], d=d["d"],
                                          c=rk["c"])
        eta = float(eta_r)
        if rk["T_per_n"] <= 0:
            T = int(T_r)
    sigma, note = a["sigma"], ""
    if rk["eps"] > 0:
        from stabsim.privacy.calibration import p4_beta_search

        pb = twin_problem(d)
        loss = get_loss(a["loss"], a["q"])
        G = loss.G(pb.kappa, get_constraint(a["constraint"]).radius)
        if not math.isfinite(G):
            raise ValueError("P4 calibration needs a finite Lipschitz constant G: give a constraint l2:R")
        res = p4_beta_search(rk["eps"], rk["delta"], d["n"], T, G, pairwise=loss.pairwise)
        sigma = math.sqrt(res.sigma2)
        note = f"beta = {res.beta:.4g}, sigma^2 = {res.sigma2:.4g} (G = {G:.4g})"
    return T, sigma, note, eta


def _validate_p4_risk(spec):
    from stabsim.registry import StudyError

    validate_twin(spec)
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
    from stabsim.risk import empirical_risk, population_risk
    from stabsim.engine.twin_runs import log_checkpoints, run_twin

    p = spec.cell_params(cell)
    d, a, rk = p["data"], p["algorithm"], p["risk"]
    pb = twin_problem(d)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    T, sigma, note, eta = _effective(p)
    if d["per_replicate"]:
        X, y = pb.sample_replicates(d["n"], data_seed, replicates)
    else:
        X, y = pb.sample(d["n"], data_seed, 0)
    kw = twin_kwargs(spec, p)
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


