"""P1 (Yang et al. 2021) Thm 4 / Thm 5 tightness: the ``p1_tightness`` study kind, the searched worst-case
neighbour (``stabsim.search``) next to the hand-picked ones (studies ``p1_thm4_tightness``,
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
    Output: ``dist_output`` (neighbour, replicate, t) with neighbour = searched / flip / farthest / fresh
    (``stabsim.setups.p1.NEIGHBOURS``).

Its check is ``p1_tightness`` (``stabsim.analyses.p1_worst_neighbour``).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..setups.p1 import NEIGHBOURS
from ..study import Param, StudyError, _problem, _twin_kwargs, _validate_twin, choice, integer, register_kind, \
    twin_params


def _check_k(v):
    """``[search] k``: 'all' or a non-empty list of indices >= 0 (sorted, without repeats)."""
    from ..study import _Bad

    if v == "all":
        return v
    if isinstance(v, list) and v and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in v):
        return sorted(set(v))
    raise _Bad("must be 'all' or a non-empty list of indices >= 0")


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
}


def _validate(spec):
    """One shared S; searched indices inside the data set; fresh ids disjoint from the search ids."""
    _validate_twin(spec)
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


_SEARCH_CACHE: dict = {}


def search_cell(spec, p):
    """The worst neighbour of a cell (cached; a pure function of the spec and the cell)."""
    from ..search import worst_neighbour

    d, s = p["data"], p["search"]
    pb = _problem(d)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    X, y = pb.sample(d["n"], data_seed, 0)
    kw = _twin_kwargs(spec, p)
    for drop in ("neighbour", "checkpoints", "record_outputs", "seed"):
        kw.pop(drop, None)
    key = (spec.data_fingerprint, repr(sorted((sec, sorted(v.items(), key=str)) for sec, v in p.items()
                                           if isinstance(v, dict))))
    if key not in _SEARCH_CACHE:
        _SEARCH_CACHE[key] = worst_neighbour(
            X, y, measure="mean", domain=("ball", float(pb.kappa)), k=s["k"], replicates=s["replicates"],
            fresh_replicates=0, seed=spec.seed, optimizer=s["optimizer"], max_evals=s["max_evals"],
            screen=s["screen"] or None, **kw)
    return X, y, pb, kw, _SEARCH_CACHE[key]


@register_kind("p1_tightness", params=twin_params(search=SEARCH), validate=_validate,
               description="searched worst-case neighbour (at T) + flip/farthest/fresh, evaluated on fresh replicates")
def tightness_cell(spec, cell, replicates) -> xr.Dataset:
    """One cell of a ``p1_tightness`` study (see the module docstring)."""
    from ..twin import run_twin

    p = spec.cell_params(cell)
    X, y, pb, kw, res = search_cell(spec, p)
    reps = np.asarray(replicates, dtype=np.int64)
    fresh = reps + p["search"]["fresh_start"]
    ck = _twin_kwargs(spec, p)["checkpoints"]
    runs = []
    for name in NEIGHBOURS:
        nb = res.neighbour if name == "searched" else name
        ds = run_twin(X, y, replicates=fresh, seed=spec.seed, neighbour=nb, checkpoints=ck, problem=pb,
                      progress=False, **kw)
        runs.append(ds["dist_output"].assign_coords(replicate=reps))
    out = xr.Dataset({"dist_output": xr.concat(runs, dim=xr.DataArray(list(NEIGHBOURS), dims="neighbour"))})
    out["dist_output"].attrs.update(long_name="||A_t(S) - A_t(S')|| on fresh replicate ids (id + fresh_start)")
    out.attrs.update(problem=pb.name, search_k=int(res.k), search_y=float(res.y),
                     search_x=" ".join(f"{v:.6g}" for v in res.x), search_in_sample=float(res.in_sample),
                     search_evals=int(res.n_evals), search_t=int(res.t),
                     search_domain=f"ball of radius kappa = {pb.kappa:.6g}",
                     fresh_start=int(p["search"]["fresh_start"]))
    return out
