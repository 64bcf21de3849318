"""The loss constants of a twin cell: G, L, kappa and the radius R of W, in the papers' symbols.

``margin_range`` is sup |m| of the pair margin over the data and W (so the hinge loss is bounded
by 1 + margin_range on W).  ``G`` is the Lipschitz constant and ``L`` the smoothness constant of the pair loss on
{||x|| <= kappa} x W (``stabsim.engine.losses``), ``kappa`` = sup ||x|| of the cell's data and ``R``
the radius of the constraint set (inf when unconstrained).
"""

from __future__ import annotations

import numpy as np


def cell_constants(params) -> dict:
    """G, L, kappa and the constraint radius for the cell's ``[algorithm] loss`` on its
    ``[data] problem`` (kappa is the problem's sup ||x||)."""
    from stabsim.engine.constraints import get_constraint
    from stabsim.engine.losses import get_loss
    from stabsim.registry import twin_problem

    a = params["algorithm"]
    pb = twin_problem(params["data"])
    loss = get_loss(a["loss"], a.get("q"))  # kinds without [algorithm] q / constraint: the defaults
    R = get_constraint(a.get("constraint", "none")).radius
    return {"G": loss.G(pb.kappa, R), "L": loss.L(pb.kappa, R), "kappa": pb.kappa, "radius": R,
            "margin_range": loss._margin_range(pb.kappa, R), "loss": loss.name}


def source_constants(spec, params) -> dict:
    """As ``cell_constants`` for a study on a user's data (``[data] dataset`` / ``file``):
    kappa is the largest row norm of the cell's rows, training and held-out (a bound in G must
    hold on every point the study evaluates a loss at)."""
    from stabsim.engine.constraints import get_constraint
    from stabsim.engine.losses import get_loss
    from stabsim.registry import source_arrays

    a, d = params["algorithm"], params["data"]
    X, _, X_test, _ = source_arrays(spec, d, spec.seed if d.get("seed") is None else d["seed"])
    kappa = float(max(np.max(np.linalg.norm(X, axis=-1)),
                      np.max(np.linalg.norm(X_test, axis=-1)) if len(X_test) else 0.0))
    loss = get_loss(a["loss"], a.get("q"))
    R = get_constraint(a.get("constraint", "none")).radius
    return {"G": loss.G(kappa, R), "L": loss.L(kappa, R), "kappa": kappa, "radius": R,
            "margin_range": loss._margin_range(kappa, R), "loss": loss.name}
