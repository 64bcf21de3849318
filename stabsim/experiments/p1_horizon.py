"""P1 (Yang et al. 2021): the ``p1_horizon`` study kind, the runs behind Remark 7 (the buffer-s
update's O(sqrt(s)/sqrt(t)) optimization error; study ``p1_rem7_buffer``).

Kind ``p1_horizon``
    One run per horizon T in ``[horizon] T`` with the constant step c/sqrt(T) (Remark 7's
    eta ~ 1/sqrt(t)); ``FS_out`` (replicate, horizon) and the certified ERM of the shared data set.

Its check is ``p1_buffer`` (``stabsim.analyses.p1_optimization``).
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from stabsim.registry import Param, StudyError, number, register_kind, twin_kwargs, twin_params, twin_problem, validate_twin


def _horizons(v):
    """``[horizon] T``: at least 2 distinct integers >= 2, sorted."""
    from stabsim.registry import BadValue

    if isinstance(v, list) and len(v) >= 2 and all(isinstance(x, int) and not isinstance(x, bool) and x >= 2
                                                   for x in v) and len(set(v)) == len(v):
        return sorted(v)
    raise BadValue("must be a list of at least 2 distinct integers >= 2 (the horizons T)")


HORIZON = {
    "T": Param("horizons T: one run per T with the constant step eta = c/sqrt(T)", [100, 1000, 10000], _horizons,
               sweepable=False),
    "c": Param("step constant c in eta = c/sqrt(T)", 0.5, number(gt=0, what=" (step constant)"), sweepable=False),
}


def _validate_horizon(spec):
    """``twin``'s validation plus w_0 = 0 (the stored ||w_0 - w_S||^2 assumes it)."""
    validate_twin(spec)
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
    from stabsim.risk import empirical_risk, erm
    from stabsim.engine.twin_runs import run_twin

    p = spec.cell_params(cell)
    d, a, h = p["data"], p["algorithm"], p["horizon"]
    pb = twin_problem(d)
    reps = np.asarray(replicates, dtype=np.int64)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    X, y = pb.sample(d["n"], data_seed, 0)
    FS = np.empty((len(reps), len(h["T"])))
    for j, T in enumerate(h["T"]):
        kw = twin_kwargs(spec, p)
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
