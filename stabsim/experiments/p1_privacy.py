"""P1 (Yang et al. 2021): the ``p1_dp`` study kind, the runs behind Theorem 10 (Alg. 3, the
differentially private localized SGD; study ``p1_thm10_dp``, errata P1-E7).

Kind ``p1_dp``
    P1 Alg. 3 (``stabsim.privacy.p1_alg3``) run once per replicate on that replicate's own data
    set; ``excess`` = F(w_K) - F(w*) (closed form), ``eta_used``, ``two_over_L``, ``excess_w0`` =
    F(w_0) - F(w*).

Its check is ``p1_dp`` (``stabsim.analyses.p1_excess_rate``).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from stabsim.setups.constants import cell_constants
from stabsim.setups.p1 import population_minimiser, population_risk_per_replicate
from stabsim.registry import Param, StudyError, choice, number, register_kind, twin_params, twin_problem, validate_twin


PRIVACY = {
    "eps": Param("privacy budget epsilon", 1.0, number(gt=0, what=" (privacy budget)")),
    "delta": Param("privacy delta", 1e-3, number(gt=0, lt=1, what=" (privacy delta)"), sweepable=False),
    "eta_rule": Param("Thm 10 step size: 'thm10' (as printed) or 'thm10_corrected' (P1-E7)", "thm10",
                      choice(("thm10", "thm10_corrected"))),
}


def _validate_dp(spec):
    """Thm 10 needs a bounded W (its step size uses the diameter D) and an exactly known F(w*)."""
    from stabsim.engine.constraints import get_constraint

    validate_twin(spec)
    for cell in spec.cells():
        p = spec.cell_params(cell)
        a = p["algorithm"]
        cons = get_constraint(a["constraint"])
        if not cons.bounded:
            raise StudyError("p1_dp: Thm 10's step size needs a bounded W: [algorithm] constraint = 'l2:R'")
        try:
            population_minimiser(twin_problem(p["data"]), a["loss"], cons.radius)
        except ValueError as e:
            raise StudyError(f"p1_dp: {e}") from None


@register_kind("p1_dp", params=twin_params(privacy=PRIVACY), validate=_validate_dp,
               description="P1 Thm 10: Alg. 3 (DP localized SGD) once per replicate on its own data set; "
                           "excess risk F(w_K) - F(w*)")
def dp_cell(spec, cell, replicates) -> xr.Dataset:
    """One cell of a ``p1_dp`` study: ``stabsim.privacy.p1_alg3`` per replicate (own S each)."""
    from stabsim.engine.constraints import get_constraint
    from stabsim.privacy.algorithms import P1Alg3Config, calibration_record, p1_alg3

    p = spec.cell_params(cell)
    d, a, pr = p["data"], p["algorithm"], p["privacy"]
    pb = twin_problem(d)
    cons = get_constraint(a["constraint"])
    _, Fstar = population_minimiser(pb, a["loss"], cons.radius)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    reps = np.asarray(replicates, dtype=np.int64)
    W, etas = [], []
    config = P1Alg3Config(eps=pr["eps"], delta=pr["delta"], eta=pr["eta_rule"], loss=a["loss"],
                          constraint=a["constraint"], kappa=pb.kappa)
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # one replicate per call: thread start-up costs 30x the work (results identical)
    try:
        for r in reps:
            X, y = pb.sample(d["n"], data_seed, int(r))
            ds = p1_alg3(X, y, config, replicates=np.array([r]), seed=spec.seed, neighbour="same", problem=pb)
            W.append(ds["w_priv"].sel(run="S").values[0])
            etas.append(calibration_record(ds)["eta"])
    finally:
        numba.set_num_threads(threads)
    W = np.array(W)
    F, _, method = population_risk_per_replicate(W, pb, a["loss"], 4000, spec.seed, reps)
    c = cell_constants(p)
    out = xr.Dataset(
        {"excess": ("replicate", F - Fstar, {"long_name": "F(w_K) - F(w*)", "description": method}),
         "eta_used": ((), float(etas[0]), {"long_name": "base step eta of Alg. 3"}),
         "two_over_L": ((), 2.0 / c["L"], {"long_name": "2/L (Thm 10 requires eta <= 2/L)"}),
         "excess_w0": ((), float(population_risk_per_replicate(np.zeros((1, W.shape[1])), pb, a["loss"], 4000, spec.seed,
                                             reps[:1])[0][0] - Fstar),
                       {"long_name": "F(w_0) - F(w*) (w_0 = 0: the excess risk of not moving)"})},
        coords={"replicate": reps})
    out.attrs.update(problem=pb.name, data_seed=data_seed, data_sets="per-replicate")
    return out
