"""P0 (Yang, Lei, Lyu, Ying, AISTATS 2021: stability and DP of SGD for pairwise learning with a
non-smooth loss): the setting that the P0 experiments and their analyses share.

The paper has no experiments; errata P0-D suggests Cor 1/2: the AUC hinge loss
l(w, z, z') = I[y != y'] (1 - s w.(x - x'))_+ (``auc_hinge``, G = 2 kappa, M = l(0, z, z') <= 1) on
``auc_separable``, whose w* = e_1/(2 gamma) has zero hinge risk (``problem.w_star_hinge``).

``M_AUC_HINGE``       M = sup l(0, z, z') of the AUC hinge loss.
``reference_point``   the reference point w_ref of Lemma A.9's regret path (w* or the origin).
``risk_constants``    G, M, kappa, the radius of W, w*, B = ||w*||, d of a ``p0_risk`` / ``p0_calib`` cell.
``per_replicate_data`` one data set S per replicate (the probability of P0's bounds is over S too).
"""

from __future__ import annotations

import numpy as np

from stabsim.registry import twin_problem

M_AUC_HINGE = 1.0  # M = sup l(0, z, z') = phi(0) = 1 for the AUC hinge loss


def reference_point(pb, name: str, p: int) -> np.ndarray:
    """w_ref of the regret path (P0 Lemma A.9): ``"zeros"`` the origin of R^p, ``"w_star_hinge"``
    the problem's known hinge minimiser w* (auc_separable: e_1/(2 gamma), zero hinge risk)."""
    if name == "zeros":
        return np.zeros(p)
    w = getattr(pb, "w_star_hinge", None)
    if w is None:
        raise ValueError(f"problem {pb.name!r} has no known hinge minimiser w_star_hinge (use auc_separable)")
    return np.asarray(w, dtype=float)


def risk_constants(p) -> dict:
    """The constants of a P0 excess-risk cell (AUC hinge loss on auc_separable): G (Lipschitz
    constant on the ball of W's radius), M = ``M_AUC_HINGE``, kappa = sup ||x||, ``radius`` of W,
    ``wstar`` = w* = e_1/(2 gamma), B = ||w*||, the dimension d and the problem ``pb``."""
    from stabsim.engine.constraints import get_constraint
    from stabsim.engine.losses import get_loss

    pb = twin_problem(p["data"])
    R = get_constraint(p["algorithm"]["constraint"]).radius
    G = get_loss(p["algorithm"]["loss"]).G(pb.kappa, R)
    return dict(G=G, M=M_AUC_HINGE, kappa=pb.kappa, radius=R, wstar=np.asarray(pb.w_star_hinge, float),
                B=float(np.linalg.norm(pb.w_star_hinge)), d=pb.d, pb=pb)


def per_replicate_data(spec, d, pb, replicates):
    """(X, y) stacked over replicates: replicate r's own data set of size ``[data] n``, drawn from
    the data seed (``[data] seed``, else the study seed) and r."""
    seed = spec.seed if d["seed"] is None else d["seed"]
    return pb.sample_replicates(d["n"], seed, replicates)
