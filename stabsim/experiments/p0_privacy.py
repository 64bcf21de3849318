"""P0 (Yang, Lei, Lyu, Ying, AISTATS 2021), Thm 4: the ``p0_calib`` study kind, the noise
calibration of P0 Alg. 2 (``studies/p0_thm4_sigma.toml``; analysed by ``p0_sigma`` in
``stabsim.analyses.p0_privacy``).

Kind ``p0_calib``
    P0 Alg. 2 runs with both readings of Eq. (5) (sigma^2 recorded, errata P0-E2) and the coupled
    distance of the averaged outputs (the sensitivity the noise covers).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from stabsim.setups.p0 import risk_constants
from stabsim.registry import Param, StudyError, StudySpec, number, open_unit, register_kind, twin_params, validate_twin

CALIB_SECTION = {
    "eps": Param("privacy budget", 1.0, number(gt=0)),
    "delta": Param("privacy delta", 1e-3, open_unit(), sweepable=False),
    "c": Param("step-size constant: eta = c n^-1.5, T = n^2", 1.0, number(gt=0), sweepable=False),
}


def _validate_calib(spec):
    validate_twin(spec)
    for cell in spec.cells():
        p = spec.cell_params(cell)
        if p["algorithm"]["loss"] != "auc_hinge" or p["data"]["per_replicate"]:
            raise StudyError("p0_calib: needs loss 'auc_hinge' and one data set (per_replicate = false)")


@register_kind("p0_calib", params=twin_params(privacy=CALIB_SECTION), validate=_validate_calib,
               description="P0 Alg. 2 with both readings of Eq. (5): sigma^2 and the coupled sensitivity")
def p0_calib_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``p0_calib`` study: sigma^2 of P0 Alg. 2 with the printed and the corrected Eq. (5)
    (T = n^2, eta = c n^{-3/2}) and, per replicate, the coupled ||w_bar_T - w_bar'_T|| before the noise."""
    from stabsim.engine.neighbours import Neighbour
    from stabsim.privacy.algorithms import p0_alg2

    p = spec.cell_params(cell)
    d, a, pv = p["data"], p["algorithm"], p["privacy"]
    c = risk_constants(p)
    pb = c["pb"]
    X, y = pb.sample(d["n"], spec.seed if d["seed"] is None else d["seed"], 0)
    n = d["n"]
    T, eta = n * n, pv["c"] * n ** -1.5
    reps = np.asarray(replicates, dtype=np.int64)
    nb = a["neighbour"] if a["k"] == "random" else Neighbour(kind=a["neighbour"], k=a["k"])
    out = xr.Dataset(coords={"replicate": reps})
    for reading in ("printed", "corrected"):
        # sigma does not depend on the replicates: the printed reading runs one replicate only
        ds = p0_alg2(X, y, eps=pv["eps"], delta=pv["delta"], loss="auc_hinge", constraint=a["constraint"],
                     eta=eta, T=T, replicates=reps if reading == "corrected" else reps[:1], seed=spec.seed,
                     neighbour=nb, reading=reading,
                     G=c["G"], kappa=c["kappa"], problem=pb)
        out["sigma2_" + reading] = ((), float(ds.attrs["privacy_sigma"]) ** 2,
                                    {"long_name": f"sigma^2 used by p0_alg2, reading {reading}"})
        if reading == "corrected":
            out["dist_out"] = ("replicate", ds["dist_output_nonprivate"].values,
                               {"long_name": "||w_bar_T - w_bar'_T|| (coupled, before the noise)"})
    out["T"] = ((), T)
    out["eta"] = ((), eta)
    out["G"] = ((), c["G"])
    return out
