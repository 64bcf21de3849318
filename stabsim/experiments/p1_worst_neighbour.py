"""P1 (Yang et al. 2021) Thm 4 / Thm 5 tightness: the ``p1_tightness`` study kind, the searched worst-case
neighbour (``stabsim.engine.neighbour_search``) next to the hand-picked ones (studies ``p1_thm4_tightness``,
``p1_thm5_tightness``).

Kind ``p1_tightness``
    One shared data set S.  Once per cell (cached in-process; deterministic, so every chunk and
    worker finds the same neighbour), ``worst_neighbour`` maximises E||A_T(S) - A_T(S')|| at the
    final T over k in ``[search] k``, y' in {-1, +1} and x' in the ball of radius kappa (the
    problem's sup ||x||, so G -- and with it the bound -- stays valid for S'), with common random
    numbers on the search replicate ids 0 .. ``[search] replicates``-1.  Every chunk then runs the
    found neighbour, the hand-picked "flip" and "farthest" (k random per replicate, as in
    p1_thm4_uas) and "fresh" (k random, the replacement a fresh draw from the population: the
    on-average notion of P4 Def. 6 on this S) over all checkpoints on *fresh* replicate ids ``fresh_start + r`` (r = the
    study's replicate ids), disjoint from the search ids: the winner's curse does not bias them.
    Output: ``dist_output`` and ``dist_iterate`` (neighbour, replicate, t) with neighbour = searched /
    flip / farthest / fresh (``stabsim.setups.p1.NEIGHBOURS``), and ``eta2_loss_path`` (replicate, t)
    of the run on S (the same for every neighbour: sum_j eta_j^2 fhat_j(w_{j-1}), the measured input of
    P4's on-average lemmas); the search result per cell: ``search_k``, ``search_y``, ``search_x``
    (search_coord), ``search_in_sample``, ``search_evals``, ``search_t`` (also as attrs, which a sweep
    drops where the cells differ).  ``[search] measure``: what the search maximises at T, the mean of
    ||A_T(S) - A_T(S')|| or its (1 - ``gamma``)-quantile over the algorithm's randomness (P0 Thm 1's
    high-probability form).

    ``[lower_bound] instance = "bfgt"`` adds the lower-bound instance ``stabsim.engine.lower_bounds.bfgt_instance``
    (its own data set, neighbour and settings: n, hubs, eta, T of the section; P1 Alg. 1, AUC hinge,
    W = R^d) run on the study's replicate ids at ``checkpoints`` log-spaced steps of [1, T]:
    ``lb_dist_output`` and ``lb_dist_iterate`` (replicate, lb_t).

Its check is ``p1_tightness`` (``stabsim.analyses.p1_worst_neighbour``).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from stabsim.setups.p1 import NEIGHBOURS
from stabsim.registry import (Param, StudyError, choice, integer, number, open_unit, register_kind, twin_kwargs,
                        twin_params, twin_problem, validate_twin)


def _check_k(v):
    """``[search] k``: 'all' or a non-empty list of indices >= 0 (sorted, without repeats)."""
    from stabsim.registry import BadValue

    if v == "all":
        return v
    if isinstance(v, list) and v and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in v):
        return sorted(set(v))
    raise BadValue("must be 'all' or a non-empty list of indices >= 0")


SEARCH = {
    "replicates": Param("search replicate ids 0..R-1 (common random numbers)", 32,
                        integer(2, " (search replicates)"), sweepable=False),
    "k": Param("replaced indices searched: 'all' or a list", "all", _check_k, sweepable=False),
    "screen": Param("optimise only the best this many (k, y') pairs after screening (0: all)", 4,
                    integer(0), sweepable=False),
    "max_evals": Param("cap on objective evaluations (run_twin calls)", 300, integer(1), sweepable=False),
    "optimizer": Param("'de' or 'nelder-mead'", "de", choice(("de", "nelder-mead")), sweepable=False),
    "fresh_start": Param("first fresh replicate id (disjoint from the search ids)", 10 ** 6, integer(1),
                         sweepable=False),
    "measure": Param("what the search maximises at T: 'mean' of ||A_T(S) - A_T(S')|| or its (1-gamma)-'quantile'",
                     "mean", choice(("mean", "quantile")), sweepable=False),
    "gamma": Param("gamma of the (1-gamma)-quantile (measure = 'quantile')", 0.05, open_unit(), sweepable=False),
}

LOWER_BOUND = {
    "instance": Param("lower-bound instance beside the neighbours: 'none' or 'bfgt' (stabsim.engine.lower_bounds)",
                      "none", choice(("none", "bfgt")), sweepable=False),
    "n": Param("the instance's data set size", 200, integer(5), sweepable=False),
    "hubs": Param("the instance's hub positives (bfgt: hub-spoke pairs are its orthogonal kinks)", 1, integer(1),
                  sweepable=False),
    "eta": Param("the instance's constant step size (bfgt: eta c^2 >= 1/32 with c = 1)", 0.1,
                 number(ge=1 / 32), sweepable=False),
    "T": Param("the instance's number of steps", 2000, integer(2), sweepable=False),
    "checkpoints": Param("number of log-spaced checkpoints of the instance in [1, T]", 16, integer(3),
                         sweepable=False),
}


def _validate(spec):
    """One shared S; searched indices inside the data set; fresh ids disjoint from the search ids."""
    validate_twin(spec)
    for cell in spec.cells():
        p = spec.cell_params(cell)
        s, d = p["search"], p["data"]
        if p["data"]["per_replicate"]:
            raise StudyError("p1_tightness: [data] per_replicate must be false (the sup is for one S)")
        if s["k"] != "all" and max(s["k"]) >= d["n"]:
            raise StudyError(f"p1_tightness: [search] k = {s['k']} must be indices in [0, n = {d['n']})")
        if s["fresh_start"] < s["replicates"]:
            raise StudyError("p1_tightness: [search] fresh_start must be >= [search] replicates")
        if spec.replicates + s["fresh_start"] > 2 ** 62:
            raise StudyError("p1_tightness: fresh ids too large")
        lb, a = p["lower_bound"], p["algorithm"]
        if lb["instance"] != "none":
            if (a["name"], a["loss"]) != ("p1_alg1", "auc_hinge"):
                raise StudyError(f"p1_tightness: [lower_bound] instance = {lb['instance']!r} is an instance of P1 "
                                 "Alg. 1 with the AUC hinge (P1 Thm 4): it needs [algorithm] name = 'p1_alg1' and "
                                 "loss = 'auc_hinge'")
            try:
                _instance(lb)
            except ValueError as e:
                raise StudyError(f"p1_tightness: [lower_bound]: {e}") from None


_SEARCH_CACHE: dict = {}


def _instance(lb):
    """The ``[lower_bound]`` instance of a cell (``stabsim.engine.lower_bounds``)."""
    from stabsim.engine.lower_bounds import get_instance

    return get_instance(lb["instance"], n=lb["n"], hubs=lb["hubs"], eta=lb["eta"])


def lower_bound_checkpoints(lb) -> np.ndarray:
    """The instance's checkpoints: ``[lower_bound] checkpoints`` log-spaced steps of [1, T], and as many
    again log-spaced over the instance's growth window [fit_from, min(fit_to, T)] (where its exponent
    is fitted)."""
    from stabsim.engine.twin_runs import log_checkpoints

    inst = _instance(lb)
    T = lb["T"]
    ck = log_checkpoints(T, lb["checkpoints"])
    lo, hi = inst.fit_from, min(inst.fit_to, T)
    if lo < hi:
        ck = np.union1d(ck, np.unique(np.round(np.geomspace(lo, hi, lb["checkpoints"])).astype(np.int64)))
    return ck


def search_cell(spec, p):
    """The worst neighbour of a cell (cached; a pure function of the spec, the cell and the
    backend its ``run_twin`` calls run on: the chunk's, ``stabsim.engine.backend.use_backend``)."""
    from stabsim.engine.backend import default_backend
    from stabsim.engine.neighbour_search import worst_neighbour

    d, s = p["data"], p["search"]
    pb = twin_problem(d)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    X, y = pb.sample(d["n"], data_seed, 0)
    kw = twin_kwargs(spec, p)
    for drop in ("neighbour", "checkpoints", "record_outputs", "seed"):
        kw.pop(drop, None)
    key = (spec.data_fingerprint, default_backend(), repr(sorted((sec, sorted(v.items(), key=str)) for sec, v in p.items()
                                           if isinstance(v, dict))))
    if key not in _SEARCH_CACHE:
        measure = "mean" if s["measure"] == "mean" else ("quantile", s["gamma"])
        _SEARCH_CACHE[key] = worst_neighbour(
            X, y, measure=measure, domain=("ball", float(pb.kappa)), k=s["k"], replicates=s["replicates"],
            fresh_replicates=0, seed=spec.seed, optimizer=s["optimizer"], max_evals=s["max_evals"],
            screen=s["screen"] or None, **kw)
    return X, y, pb, kw, _SEARCH_CACHE[key]


@register_kind("p1_tightness", params=twin_params(search=SEARCH, lower_bound=LOWER_BOUND), validate=_validate,
               description="searched worst-case neighbour (at T) + flip/farthest/fresh, evaluated on fresh replicates")
def tightness_cell(spec, cell, replicates) -> xr.Dataset:
    """One cell of a ``p1_tightness`` study (see the module docstring)."""
    from stabsim.engine.twin_runs import run_twin

    p = spec.cell_params(cell)
    X, y, pb, kw, res = search_cell(spec, p)
    reps = np.asarray(replicates, dtype=np.int64)
    fresh = reps + p["search"]["fresh_start"]
    ck = twin_kwargs(spec, p)["checkpoints"]
    runs, path = {"dist_output": [], "dist_iterate": []}, None
    for name in NEIGHBOURS:
        nb = res.neighbour if name == "searched" else name
        ds = run_twin(X, y, replicates=fresh, seed=spec.seed, neighbour=nb, checkpoints=ck, problem=pb,
                      progress=False, **kw)
        for var in runs:
            runs[var].append(ds[var].assign_coords(replicate=reps))
        path = ds["eta2_loss_path"].assign_coords(replicate=reps) if path is None else path
    dim = xr.DataArray(list(NEIGHBOURS), dims="neighbour")
    out = xr.Dataset({var: xr.concat(v, dim=dim) for var, v in runs.items()})
    out["eta2_loss_path"] = path.drop_vars([c for c in path.coords if c not in path.dims])
    out["dist_output"].attrs.update(long_name="||A_t(S) - A_t(S')|| on fresh replicate ids (id + fresh_start)")
    out["dist_iterate"].attrs.update(long_name="||w_t - w'_t|| on fresh replicate ids (id + fresh_start)")
    out["eta2_loss_path"].attrs.update(long_name="sum_{j<=t} eta_j^2 fhat_j(w_{j-1}) of the run on S")
    # the search result also as per-cell variables: the attrs below are dropped where cells differ
    out["search_k"] = ((), int(res.k), {"long_name": "replaced index k of the searched neighbour"})
    out["search_y"] = ((), float(res.y), {"long_name": "label y' of the searched neighbour"})
    out["search_x"] = (("search_coord",), np.asarray(res.x, float), {"long_name": "x' of the searched neighbour"})
    out["search_in_sample"] = ((), float(res.in_sample), {"long_name": "the searched measure at T on the search ids"})
    out["search_evals"] = ((), int(res.n_evals), {"long_name": "objective evaluations of the search"})
    out["search_t"] = ((), int(res.t), {"long_name": "the step the search maximised at"})
    if p["lower_bound"]["instance"] != "none":
        out = out.merge(lower_bound_runs(spec, p["lower_bound"], reps))
    out.attrs.update(problem=pb.name, search_k=int(res.k), search_y=float(res.y),
                     search_x=" ".join(f"{v:.6g}" for v in res.x), search_in_sample=float(res.in_sample),
                     search_evals=int(res.n_evals), search_t=int(res.t),
                     search_domain=f"ball of radius kappa = {pb.kappa:.6g}",
                     fresh_start=int(p["search"]["fresh_start"]))
    return out


def lower_bound_runs(spec, lb, reps) -> xr.Dataset:
    """The ``[lower_bound]`` instance on the replicate ids ``reps``: ``lb_dist_output`` and
    ``lb_dist_iterate`` (replicate, lb_t)."""
    inst = _instance(lb)
    ds = inst.run(T=lb["T"], replicates=reps, seed=spec.seed, checkpoints=lower_bound_checkpoints(lb))
    out = xr.Dataset({f"lb_{v}": (("replicate", "lb_t"), ds[v].values) for v in ("dist_output", "dist_iterate")},
                     coords={"replicate": reps, "lb_t": ds["t"].values})
    out["lb_dist_output"].attrs.update(long_name=f"||A_t(S) - A_t(S')|| of the lower-bound instance {inst.name!r}")
    out["lb_dist_iterate"].attrs.update(long_name=f"||w_t - w'_t|| of the lower-bound instance {inst.name!r}")
    return out
