"""P1 (Yang et al. 2021, SGD for pairwise learning): the setting both the P1 experiments
(``stabsim.experiments.p1_*``) and their analyses (``stabsim.analyses.p1_*``) speak in.

* The data: one fresh data set S per replicate (the theorems' E_{S,A}), ``replicate_data_sets``.
* The reference points of Theorems 1-3 and 10: the population minimiser w* and F(w*) where they
  are known exactly (``population_minimiser``) and F of the outputs per replicate, in closed form
  or on a fresh test sample (``population_risk_per_replicate``).
* The PL constant mu of a data set's F_S (assumption (A4) of Thm 3 / Thm 9), ``pl_constant``.
* Table 1 / Figure 1 (Sec. 6): the five methods and the data sets with the paper's names for
  them (``METHOD_NAMES``, ``METHOD_LABELS``, ``DATASETS``, ``PAPER_NAME``).
* Thm 4/5 tightness: the neighbours compared with the searched worst case (``NEIGHBOURS``): the
  hand-picked flip / farthest (typical-neighbour UAS, k random) and fresh (on-average stability:
  k random, the replacement an i.i.d. draw from the population).

The loss constants G, L, kappa, R of a cell are ``stabsim.setups.constants.cell_constants``.
"""

from __future__ import annotations

import math

import numpy as np

# ---- Table 1 / Figure 1 (P1 Sec. 6) -----------------------------------------------------------

METHOD_NAMES = ("p1_alg1", "sgd_pair", "olp", "oam_gra", "spauc")
METHOD_LABELS = {"p1_alg1": "Ours (Alg. 1)", "sgd_pair": "SGD_pair", "olp": "OLP", "oam_gra": "OAM_gra",
                 "spauc": "SPAUC"}
DATASETS = ("diabetes", "german", "satimage", "letter", "mnist5k", "digits")
#: our data set -> the paper's column (stand-ins: satimage for ijcnn1, mnist5k for mnist, digits for usps)
PAPER_NAME = {"diabetes": "diabetes", "german": "german", "satimage": "ijcnn1", "letter": "letter",
              "mnist5k": "mnist", "digits": "usps"}


# ---- Thm 4 tightness: the neighbours of kind p1_tightness ---------------------------------------

NEIGHBOURS = ("searched", "flip", "farthest", "fresh")
#: the neighbours that stand for a notion other than the uniform one's sup: not "beaten" by the search
ON_AVERAGE = ("fresh",)


# ---- Theorems 1-3, 10: data sets, reference minimiser, population risk ---------------------------

def replicate_data_sets(pb, n, data_seed, reps):
    """One data set S per replicate: (X, y) stacked over the replicate ids (data stream of replicate r)."""
    return pb.sample_replicates(n, data_seed, reps)


def population_minimiser(pb, loss: str, radius: float):
    """(w*, F(w*)) of the population risk over W, where it is known exactly.

    ``auc_squared`` on the ``auc_*`` problems: the closed-form unconstrained minimiser (it is the
    minimiser over W when ||w*|| <= R).  ``auc_hinge`` on ``auc_separable``: w* = e_1/(2 gamma)
    has margin exactly 1 on every +/- pair, so F(w*) = 0 = min F.
    """
    if loss == pb.loss_name and pb.F_star is not None and pb.w_star is not None:
        w, F = np.asarray(pb.w_star, float), float(pb.F_star)
    elif loss == "auc_hinge" and getattr(pb, "w_star_hinge", None) is not None:
        w, F = np.asarray(pb.w_star_hinge, float), 0.0
    else:
        raise ValueError(f"F(w*) is not known exactly for loss {loss!r} on problem {pb.name!r}; allowed: "
                         f"{pb.loss_name!r} on the auc_* problems, or 'auc_hinge' on 'auc_separable'")
    if math.isfinite(radius) and float(np.linalg.norm(w)) > radius:
        raise ValueError(f"the population minimiser has ||w*|| = {np.linalg.norm(w):.4g} > R = {radius:g}: "
                         "the minimiser over W is then unknown; use a larger constraint radius")
    return w, F


def population_risk_per_replicate(W, pb, loss, m, seed, reps):
    """F(w) per replicate: closed form when available, else a fresh test sample per replicate."""
    from stabsim.risk import population_risk

    est = population_risk(W, pb, loss) if loss == pb.loss_name and pb.risk(np.zeros(pb.d)) is not None \
        else None
    if est is not None:
        return np.asarray(est.value, float), np.zeros(len(W)), est.method
    vals, ses = np.empty(len(W)), np.empty(len(W))
    for i, r in enumerate(reps):
        e = population_risk(W[i], pb, loss, m=m, seed=seed, replicate=int(r))
        vals[i], ses[i] = float(e.value), float(e.se)
    return vals, ses, "u_statistic (fresh test sample per replicate)"


# ---- (A4): the PL constant of F_S (Thm 3, Thm 9) -------------------------------------------------

def pl_constant(X, y, loss) -> float:
    """The PL constant of F_S for a quadratic loss: the smallest eigenvalue of its (constant)
    Hessian, obtained exactly from gradient differences H e_k = grad(e_k) - grad(0).
    (For a convex quadratic, 2 mu (F_S(w) - min F_S) <= ||grad F_S(w)||^2 holds with mu =
    lambda_min(H) when H is positive definite, P1's assumption (A4).)"""
    from stabsim.engine.losses import SQUARED, get_loss
    from stabsim.risk import empirical_grad

    lf = get_loss(loss)
    if lf.phi != SQUARED or lf.matrix:
        raise ValueError(f"pl_constant needs a linear pairwise squared loss, got {loss!r}")
    d = X.shape[1]
    g0 = empirical_grad(np.zeros(d), X, y, lf)
    H = np.stack([empirical_grad(np.eye(d)[k], X, y, lf) - g0 for k in range(d)], axis=1)
    return float(np.linalg.eigvalsh(0.5 * (H + H.T))[0])
