"""P1 (Yang et al. 2021): the ``twin_risk`` study kind, the runs behind Thm 4/5 (generalization),
Thm 6(a)/7(a)/6(b)/7(b) (optimization error) and Lemma 1 (studies ``p1_thm4_gen``, ``p1_thm5_gen``,
``p1_thm6a_opt``, ``p1_thm7a_opt_hp``, ``p1_thm6b7b_sc``, ``p1_lem1_gen``).

Kind ``twin_risk``
    ``run_twin`` with the outputs recorded, reduced per replicate and checkpoint to
    ``FS_out`` = F_S(A_t(S)), ``F_out`` = F(A_t(S)) (closed form or a U-statistic over a fresh
    test sample of size ``[risk] m``, with ``F_out_se``), and per data set the certified ERM
    (``FS_wS`` = F_S(w_hat), ``erm_certificate`` >= F_S(w_hat) - min_W F_S, ``wS_dist0_sq`` =
    ||w_0 - w_hat||^2).  The outputs themselves are not kept.  On real data (``[data] dataset`` /
    ``file``), F is the U-statistic over the pairs of the stratified held-out part
    (``[data] test_fraction``, required), which the algorithm never sees.

Its studies are judged by the overlay check (Thm 4/5 generalization, Thm 6(a), 7(a); see the
``[check]`` sections) and by ``p1_lem1`` (``stabsim.analyses.p1_stability``) and ``p1_sc_rate``
(``stabsim.analyses.p1_optimization``).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from stabsim.registry import (DATA_SOURCE, Param, StudyError, StudySpec, boolean, integer, number, register_kind,
                        source_arrays, twin_kwargs, twin_params, twin_problem, validate_twin)


RISK = {
    "m": Param("test sample size for F (U-statistic); ignored with a closed form", 2000,
               integer(3, " (test sample size)"), sweepable=False),
    "population": Param("estimate F(A_t(S))", True, boolean, sweepable=False),
    "erm": Param("certified ERM w_S per data set", True, boolean, sweepable=False),
    "erm_tol": Param("ERM certificate target", 1e-8, number(gt=0), sweepable=False),
}


def _data(spec, d, pb, replicates):
    """(X, y, data seed) of a cell: one data set per replicate stacked (``[data] per_replicate``), else the shared
    one."""
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    if d["per_replicate"]:
        return (*pb.sample_replicates(d["n"], data_seed, replicates), data_seed)
    X, y = pb.sample(d["n"], data_seed, 0)
    return X, y, data_seed


def _validate_twin_risk(spec):
    """``twin``'s validation plus w_0 = 0 (the stored ||w_0 - w_S||^2 assumes it); on real data,
    F needs a held-out part (``[data] test_fraction``)."""
    validate_twin(spec)
    for cell in spec.cells():
        p = spec.cell_params(cell)
        if p["algorithm"]["w0"] != "zeros":
            raise StudyError("twin_risk: [algorithm] w0 must be 'zeros' (||w_0 - w_S|| assumes w_0 = 0)")
        if spec.data_source and p["risk"]["population"] and not p["data"]["test_fraction"] > 0:
            raise StudyError("twin_risk on real data estimates F(A_t(S)) on a held-out part: set [data] "
                             "test_fraction (e.g. 0.3), or [risk] population = false")


def _cell_data(spec, d, replicates):
    """(X, y, data seed, problem, held-out test sample or None): a synthetic problem's data set(s),
    or the training rows of a real data set with its stratified held-out part."""
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    if spec.data_source:
        X, y, X_test, y_test = source_arrays(spec, d, data_seed)
        return X, y, data_seed, None, (X_test, y_test)
    pb = twin_problem(d)
    X, y, data_seed = _data(spec, d, pb, replicates)
    return X, y, data_seed, pb, None


@register_kind("twin_risk", params=twin_params(data=DATA_SOURCE, risk=RISK), validate=_validate_twin_risk,
               description="twin runs + F_S and F of the outputs per replicate/checkpoint + certified ERM")
def twin_risk_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``twin_risk`` study (see the module docstring)."""
    from stabsim.risk import empirical_risk, erm, population_risk
    from stabsim.engine.twin_runs import run_twin

    p = spec.cell_params(cell)
    d, a, rk = p["data"], p["algorithm"], p["risk"]
    X, y, data_seed, pb, held_out = _cell_data(spec, d, replicates)
    kw = twin_kwargs(spec, p)
    kw["record_outputs"] = True
    reps = np.asarray(replicates, dtype=np.int64)
    ds = run_twin(X, y, replicates=reps, problem=pb, **kw)
    W = np.ascontiguousarray(ds["output"].sel(run="S").values)  # (R, t, p)
    R, nt = W.shape[:2]
    loss, q = a["loss"], a["q"]
    if d["per_replicate"]:
        FS = np.stack([np.asarray(empirical_risk(W[i], X[i], y[i], loss, q=q)) for i in range(R)])
    else:
        FS = np.asarray(empirical_risk(W, X, y, loss, q=q))
    out = ds.drop_vars(["output", "run"])
    out["FS_out"] = (("replicate", "t"), FS.reshape(R, nt),
                     {"long_name": "F_S(A_t(S))", "units": "1", "description": "empirical risk of the output"})
    if rk["population"]:
        # on real data F is the U-statistic over the held-out pairs (independent of the training rows)
        est = population_risk(W, held_out if held_out is not None else pb, loss, m=rk["m"], seed=spec.seed,
                              replicate=0, q=q)
        out["F_out"] = (("replicate", "t"), np.asarray(est.value).reshape(R, nt),
                        {"long_name": "F(A_t(S))", "units": "1", "description": f"{est.method}: {est.note}"})
        out["F_out_se"] = (("replicate", "t"), np.asarray(est.se).reshape(R, nt),
                           {"long_name": "standard error of F(A_t(S))", "units": "1",
                            "description": est.se_method})
    if rk["erm"]:
        sets = [(X[i], y[i]) for i in range(R)] if d["per_replicate"] else [(X, y)]
        res = [erm(Xs, ys, loss, a["constraint"], tol=rk["erm_tol"], q=q) for Xs, ys in sets]
        if not d["per_replicate"]:
            res = res * R
        w0 = np.zeros_like(res[0].w)  # TODO: w0 = "random" is not supported by twin_risk's distance
        out["FS_wS"] = ("replicate", np.array([r.value for r in res]),
                        {"long_name": "F_S(w_S) (certified ERM value)", "units": "1"})
        out["erm_certificate"] = ("replicate", np.array([r.certificate for r in res]),
                                  {"long_name": "proven bound on F_S(w_S) - min_W F_S", "units": "1",
                                   "description": res[0].certificate_method})
        out["wS_dist0_sq"] = ("replicate", np.array([float(np.sum((r.w - w0) ** 2)) for r in res]),
                              {"long_name": "||w_0 - w_S||^2", "units": "1"})
    src = spec.data_source or {}
    out.attrs.update(problem=pb.name if pb is not None else f"{src.get('kind')}: {src.get('path') or src.get('name')}",
                     data_seed=data_seed,
                     data_sets="per-replicate" if d["per_replicate"] else "shared")
    return out
