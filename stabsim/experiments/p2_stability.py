"""P2 (Kang, Liu, Li, Wang: sharper utility bounds for DP pairwise learning), Lemma 1: the ``p2_elastic``
study kind, pairwise locally elastic stability of the ERM (``studies/p2_lemma1_elastic.toml``; analysed
by ``p2_lemma1`` in ``stabsim.analyses.p2_stability``).

Kind ``p2_elastic``  (P2 Lemma 1 for A*_D = argmin L(.; D), via ``stabsim.engine.elastic``): per
    replicate (own D) and removed index i = 0..K-1, beta_n(z_i; z', z'') averaged over the
    ordered pairs of a fresh test sample, by exact leave-one-out (REMOVAL, P2 Def. 6: the ERM
    re-solved on D^{-i}) and by the pairwise influence function (Eq. 4).  The check takes the max
    over i (a lower bound on the sup over z_i).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from stabsim.engine.measures import REPLICATE
from stabsim.setups.p2 import DATA_SECTION, LINEAR_LOSSES
from stabsim.registry import Param, StudySpec, choice, integer, number, register_kind, twin_problem

_EL = {
    "loss": Param("a smooth linear pairwise loss", "ranking_logistic", choice(LINEAR_LOSSES)),
    "reg": Param("lambda of (lambda/2)||w||^2 (0 = Lemma 1 as printed)", 0.0, number(ge=0), sweepable=False),
    "removals": Param("K: removed indices i = 0..K-1 per data set", 8, integer(1), sweepable=False),
    "m_test": Param("fresh test points whose ordered pairs estimate E_{z',z''} beta", 150, integer(3),
                    sweepable=False),
}


@register_kind("p2_elastic", params={"data": DATA_SECTION, "elastic": _EL},
               description="P2 Lemma 1: locally elastic stability of ERM, exact leave-one-out vs influence function")
def p2_elastic_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``p2_elastic`` study (see the module docstring)."""
    from stabsim.engine import rng
    from stabsim.engine.elastic import locally_elastic_stability

    p = spec.cell_params(cell)
    d, e = p["data"], p["elastic"]
    pb = twin_problem(d)
    n = d["n"]
    K = min(int(e["removals"]), n)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    reps = np.asarray(replicates, dtype=np.int64)
    R = reps.size
    bm = np.full((R, K, 2), np.nan)
    rel = np.full((R, K), np.nan)
    cert = np.full(R, np.nan)
    for r in range(R):
        X, y = pb.sample(n, data_seed, int(reps[r]))
        Xt, yt = pb.sample(e["m_test"], data_seed, int(reps[r]), stream=rng.STREAM_SPLIT)
        a_, b_ = np.nonzero(~np.eye(len(yt), dtype=bool))
        res = locally_elastic_stability(X, y, e["loss"], reg=e["reg"], indices=np.arange(K),
                                        test_pairs=(Xt[a_], yt[a_], Xt[b_], yt[b_]), tol=1e-11)
        bm[r] = res["beta_mean"].transpose("i", "estimator").sel(estimator=["exact", "influence"]).values
        rel[r] = res["rel_err"].values
        cert[r] = max(float(res.attrs["cert_full"]), float(np.nanmax(res["cert_loo"].values)))
    ds = xr.Dataset(coords={REPLICATE: reps, "k": np.arange(K), "estimator": ["exact", "influence"]})
    ds["beta_n"] = ((REPLICATE, "k", "estimator"), bm,
                    {"long_name": "mean over test pairs of |l(A*_D; z', z'') - l(A*_{D^{-i}}; z', z'')|", "units": "1",
                     "neighbour_relation": "remove-one"})
    ds["rel_err"] = ((REPLICATE, "k"), rel, {"long_name": "||delta_influence - delta_exact|| / ||delta_exact||"})
    ds["erm_cert"] = (REPLICATE, cert, {"long_name": "max ERM certificate (D and every D^{-i})"})
    ds.attrs.update(problem=pb.name, data_seed=int(data_seed), neighbour_relation="remove-one",
                    neighbour="D^{-i} = D without z_i, i = 0..K-1, exact leave-one-out ERM", loss=e["loss"],
                    reg=float(e["reg"]))
    return ds
