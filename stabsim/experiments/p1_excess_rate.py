"""P1 (Yang et al. 2021): the ``p1_excess`` study kind, the runs behind the excess-risk rates of
Theorems 1, 2 and 3 (studies ``p1_thm1_rate``, ``p1_thm2_rate``, ``p1_thm3_rate``; errata P1-E1 ...).

Kind ``p1_excess``
    One fresh data set S per replicate (the theorems' E_{S,A}); P1 Alg. 1 run for the theorem's
    horizon T(n) with its step size eta(n) (``[schedule] rule``):

    ``thm1``  T = c_T n^2, eta = c_eta T^{-3/4}            (Thm 1, Eq. (3))
    ``thm2``  T = c_T n,   eta = c_eta T^{-1/2}            (Thm 2, Eq. (4))
    ``thm3``  eta_j = 2/(mu (j+1)), last iterate w_T,
              T = c_T n^{(2L+mu)/(4L+mu)} mu^{-(4L+2mu)/(4L+mu)}  (Thm 3)

    (T rounded to the nearest integer >= 1).  Per replicate: ``excess`` = F(A(S)) - F(w*) with F
    in closed form (``auc_squared`` on the ``auc_*`` problems) or by a U-statistic on a fresh test
    sample of size ``[risk] m`` drawn for that replicate (``auc_hinge`` on ``auc_separable``, where
    F(w*) = 0 exactly at w* = e_1/(2 gamma)); ``FS_out``; for ``thm3`` also ``mu_S`` = the PL
    constant of that F_S (smallest Hessian eigenvalue; quadratic losses only).  ``T_used``,
    ``eta_used`` (nan for the schedule) are per-cell variables.

Its check is ``p1_excess_rate`` (``stabsim.analyses.p1_excess_rate``).
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from stabsim.setups.constants import cell_constants
from stabsim.setups.p1 import pl_constant, population_minimiser, population_risk_per_replicate, replicate_data_sets
from stabsim.registry import (REQUIRED, Param, StudyError, choice, integer, number, register_kind, twin_kwargs, twin_params,
                        twin_problem, validate_twin)


SCHEDULE = {
    "rule": Param("theorem schedule: thm1, thm2 or thm3 (see stabsim.experiments.p1_excess_rate)", REQUIRED,
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
    L = cell_constants(params)["L"]
    T = max(1, int(round(s["c_T"] * n ** ((2 * L + mu) / (4 * L + mu)) * mu ** (-(4 * L + 2 * mu) / (4 * L + mu)))))
    return T, ("pl", float(mu)), "last", math.nan


def _validate_excess(spec):
    """Thm 3 needs mu; Alg. 1 only; F(w*) must be known exactly for the cell's loss and problem."""
    from stabsim.engine.constraints import get_constraint

    validate_twin(spec)
    for cell in spec.cells():
        p = spec.cell_params(cell)
        a, s = p["algorithm"], p["schedule"]
        if s["rule"] == "thm3" and s["mu"] is None:
            raise StudyError("p1_excess: [schedule] rule = 'thm3' needs [schedule] mu (the PL constant)")
        if a["name"] != "p1_alg1":
            raise StudyError(f"p1_excess: [algorithm] name must be 'p1_alg1' (P1 Thm 1-3), got {a['name']!r}")
        try:
            population_minimiser(twin_problem(p["data"]), a["loss"], get_constraint(a["constraint"]).radius)
        except ValueError as e:
            raise StudyError(f"p1_excess: {e}") from None


@register_kind("p1_excess", params=twin_params(schedule=SCHEDULE, risk=EXCESS_RISK), validate=_validate_excess,
               description="P1 Thm 1-3: Alg. 1 with T(n), eta(n) of the theorem, one data set per replicate, "
                           "excess risk F(A(S)) - F(w*)")
def excess_cell(spec, cell, replicates) -> xr.Dataset:
    """One cell of a ``p1_excess`` study (see the module docstring)."""
    from stabsim.engine.constraints import get_constraint
    from stabsim.risk import empirical_risk
    from stabsim.engine.twin_runs import run_twin

    p = spec.cell_params(cell)
    d, a, rk = p["data"], p["algorithm"], p["risk"]
    pb = twin_problem(d)
    n = d["n"]
    T, eta, output, eta_val = excess_schedule(p)
    reps = np.asarray(replicates, dtype=np.int64)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    X, y = replicate_data_sets(pb, n, data_seed, reps)
    kw = twin_kwargs(spec, p)
    kw.update(T=T, eta=eta, output=output, checkpoints=np.array([T]), record_outputs=True, neighbour="same")
    ds = run_twin(X, y, replicates=reps, problem=pb, **kw)
    W = np.ascontiguousarray(ds["output"].sel(run="S").values[:, -1, :])
    R = len(reps)
    F, Fse, method = population_risk_per_replicate(W, pb, a["loss"], rk["m"], spec.seed, reps)
    _, Fstar = population_minimiser(pb, a["loss"], get_constraint(a["constraint"]).radius)
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
