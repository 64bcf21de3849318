"""P0 (Yang, Lei, Lyu, Ying, AISTATS 2021): the concentration study kinds, Rademacher averages
(Lemma 4 / 5, ``studies/p0_lem4_rademacher.toml``) and Hoeffding's inequality for U-statistics
(Thm A.7, ``studies/p0_thmA7_hoeffding.toml``); analysed by ``p0_rademacher`` in
``stabsim.analyses.p0_concentration``.

Kinds
    ``p0_rademacher``  per replicate (one data set each) the Monte-Carlo R_t of the classes of
                       Lemma 4 (linear, AUC hinge) and Lemma 5 (nuclear ball) at a list of t.
    ``p0_hoeffding``   per replicate R_S(w) - R(w) at a fixed w (Thm A.7), R by a large U-statistic.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from stabsim.setups.p0 import per_replicate_data
from stabsim.registry import Param, StudyError, StudySpec, integer, number, register_kind, twin_params, twin_problem

# ---- kind p0_rademacher (Lemma 4 / 5) ----------------------------------------------------------

RAD_SECTION = {
    "t": Param("list of t (sample sizes of Eq. (4))", [2, 4, 8, 16, 32, 64],
               lambda v: sorted(set(integer(1)(x) for x in v)) if isinstance(v, list) and v else integer(1)(v),
               sweepable=False),
    "samples": Param("Monte-Carlo samples per replicate and t", 50, integer(2), sweepable=False),
    "radius": Param("radius D of the balls (l2 / nuclear)", 1.0, number(gt=0), sweepable=False),
}


def _validate_per_replicate_auc(kind):
    """Validator of ``kind``: one data set per replicate, labels +-1 (auc_separable / auc_noisy)."""
    def validate(spec):
        for cell in spec.cells():
            p = spec.cell_params(cell)
            if not p["data"]["per_replicate"]:
                raise StudyError(f"{kind}: [data] per_replicate must be true (the probability / expectation is "
                                 "over the data set S as well)")
            if p["data"]["problem"] not in ("auc_separable", "auc_noisy"):
                raise StudyError(f"{kind}: [data] problem must be 'auc_separable' or 'auc_noisy' (labels +-1), "
                                 f"got {p['data']['problem']!r}")
    return validate


_validate_rad = _validate_per_replicate_auc("p0_rademacher")


@register_kind("p0_rademacher", params={"data": dict(twin_params()["data"]), "rademacher": RAD_SECTION},
               validate=_validate_rad, description="Monte-Carlo Rademacher averages R_t of P0 Lemma 4 / 5 classes")
def p0_rademacher_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``p0_rademacher`` study: per replicate (own data set) and t the Monte-Carlo R_t
    (P0 Eq. (4)) of the linear and AUC hinge classes on the D-ball (Lemma 4) and the nuclear ball (Lemma 5)."""
    from stabsim.engine.rademacher import rademacher

    p = spec.cell_params(cell)
    d, rs = p["data"], p["rademacher"]
    pb = twin_problem(d)
    reps = np.asarray(replicates, dtype=np.int64)
    X, y = per_replicate_data(spec, d, pb, reps)
    ts = np.asarray(rs["t"] if isinstance(rs["t"], list) else [rs["t"]], dtype=np.int64)
    out = xr.Dataset(coords={"replicate": reps, "t": ts})
    for cls in ("linear", "auc_hinge", "nuclear"):
        vals = np.empty((len(reps), len(ts)))
        for i, r in enumerate(reps):
            for j, t in enumerate(ts):
                vals[i, j] = rademacher(X[i], y[i], cls, int(t), rs["radius"], samples=rs["samples"],
                                        seed=spec.seed, replicate=int(r) * 1000 + j).value
        meth = "closed form" if cls != "auc_hinge" else ("exact (d = 2)" if pb.d == 2 else "ascent (lower estimate)")
        out["rad_" + cls] = (("replicate", "t"), vals, {"long_name": f"MC estimate of R_t, class {cls}",
                                                        "description": f"mean of {rs['samples']} draws; {meth}"})
    out.attrs.update(problem=pb.name, kappa=float(pb.kappa), d=int(pb.d))
    return out


# ---- kind p0_hoeffding (Thm A.7) -----------------------------------------------------------------

HOEF_SECTION = {"m": Param("test sample size of the U-statistic for R(w)", 20000, integer(3), sweepable=False)}


@register_kind("p0_hoeffding", params={"data": dict(twin_params()["data"]), "hoeffding": HOEF_SECTION},
               validate=_validate_per_replicate_auc("p0_hoeffding"), description="R_S(w) - R(w) at a fixed w = e_1/(2 gamma) (P0 Thm A.7)")
def p0_hoeffding_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``p0_hoeffding`` study: per replicate (own data set) R_S(w) at w = e_1/(2 gamma), and
    R(w) by a U-statistic over ``[hoeffding] m`` fresh points (P0 Thm A.7)."""
    from stabsim.risk import empirical_risk, population_risk

    p = spec.cell_params(cell)
    d = p["data"]
    pb = twin_problem(d)
    reps = np.asarray(replicates, dtype=np.int64)
    X, y = per_replicate_data(spec, d, pb, reps)
    w = np.eye(pb.d)[0] / (2 * pb.params["gamma"])
    FS = np.array([float(empirical_risk(w, X[i], y[i], "auc_hinge")) for i in range(len(reps))])
    est = population_risk(w, pb, "auc_hinge", m=p["hoeffding"]["m"], seed=spec.seed)
    out = xr.Dataset(coords={"replicate": reps})
    out["FS_w"] = ("replicate", FS, {"long_name": "R_S(w)"})
    out["F_w"] = ((), float(est.value), {"long_name": "R(w), U-statistic"})
    out["F_w_se"] = ((), float(est.se), {"long_name": "SE of R(w)"})
    out["B"] = ((), float(np.linalg.norm(w)))
    return out
