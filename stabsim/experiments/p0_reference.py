"""P0 (Yang, Lei, Lyu, Ying, AISTATS 2021), Lemma A.9: the ``twin_ref`` study kind
(``studies/p0_lemA9.toml``; analysed by the overlay check, ``[check]`` in the study file).

Kind ``twin_ref``
    the ``twin`` kind with a reference point ``w_ref`` for the regret path
    (``loss_ref_path`` = sum_j fhat_j(w_ref)): ``[reference] point = "w_star_hinge"`` takes
    ``problem.w_star_hinge`` (auc_separable: e_1/(2 gamma), zero hinge risk); ``"zeros"`` the
    origin.  The chosen point's norm is stored as ``w_ref_norm`` (the B of Lemma A.9).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from stabsim.setups.p0 import reference_point
from stabsim.registry import Param, StudySpec, choice, register_kind, twin_kwargs, twin_params, twin_problem, validate_twin

REFERENCE = {
    "point": Param("reference point w_ref of the regret path: 'w_star_hinge' (auc_separable) or 'zeros'",
                   "w_star_hinge", choice(("w_star_hinge", "zeros")), sweepable=False),
}


def _validate_twin_ref(spec):
    validate_twin(spec)
    from stabsim.registry import StudyError

    for cell in spec.cells():
        p = spec.cell_params(cell)
        if p["reference"]["point"] == "w_star_hinge" and p["data"]["problem"] != "auc_separable":
            raise StudyError("twin_ref: [reference] point = 'w_star_hinge' needs [data] problem = 'auc_separable'")


@register_kind("twin_ref", params=twin_params(reference=REFERENCE), validate=_validate_twin_ref,
               description="twin runs with the regret path at a known reference point w_ref (P0 Lemma A.9)")
def twin_ref_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``twin_ref`` study: as ``twin``, plus ``w_ref`` = the chosen reference point."""
    from stabsim.engine.twin_runs import run_twin

    p = spec.cell_params(cell)
    d = p["data"]
    pb = twin_problem(d)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    if d["per_replicate"]:
        X, y = pb.sample_replicates(d["n"], data_seed, replicates)
    else:
        X, y = pb.sample(d["n"], data_seed, 0)
    wref = reference_point(pb, p["reference"]["point"], X.shape[-1])
    ds = run_twin(X, y, replicates=np.asarray(replicates, dtype=np.int64), problem=pb, w_ref=wref,
                  **twin_kwargs(spec, p))
    ds.attrs.update(problem=pb.name, data_seed=data_seed, w_ref=p["reference"]["point"],
                    w_ref_norm=float(np.linalg.norm(wref)),
                    data_sets="per-replicate" if d["per_replicate"] else "shared")
    return ds
