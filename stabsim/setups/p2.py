"""P2 (Kang, Liu, Li, Wang: sharper utility bounds for DP pairwise learning): the setting that the P2
experiments and their analyses share.

``DATA_SECTION``       the ``[data]`` section of the P2 kinds (a problem, n, no per-replicate switch:
                       every replicate has its own data set).
``P2_LOSSES``          the G-Lipschitz, L-smooth pairwise losses of P2's assumptions (Defs. 3, 4);
                       ``LINEAR_LOSSES`` those with a linear score (Lemma 1's ERM, ``stabsim.engine.elastic``).
``loss_constants``     (Loss, G, L, p) of a loss on a problem, unconstrained (Alg. 1 has no projection).
``number_of_steps``    T of Remark 2 / Thm 3, or a fixed T.
``gd_setting``         (T, sigma, eta = 1/L, G, L, p, Loss, problem) of a ``p2_gd`` cell (Thm 1's sigma).
``NEIGHBOUR_NOTE``     the neighbour relation of every P2 stability number (exact removal).
"""

from __future__ import annotations

import math

from stabsim.registry import TWIN_DATA, twin_problem

DATA_SECTION = {k: TWIN_DATA[k] for k in ("problem", "d", "n", "seed", "gamma", "rho", "pi", "flip", "kappa")}
P2_LOSSES = ("ranking_logistic", "auc_logistic", "auc_ordered_logistic", "metric_logistic")
LINEAR_LOSSES = ("ranking_logistic", "auc_logistic", "auc_ordered_logistic")

NEIGHBOUR_NOTE = ("neighbour relation: REMOVAL (D^{-i} = D without z_i, n - 1 points, P2 Def. 6), exact: "
                  "Alg. 1 re-run on D^{-i} with the same noise b_1..b_T (not the twin kernel's replace-one proxy)")


def loss_constants(loss_name, pb):
    """(Loss, G, L, p) for P2's assumptions: G-Lipschitz and L-smooth per pair (Defs. 3, 4) over
    data with ||x|| <= kappa = pb.kappa, labels in {-1, +1}; unconstrained (Alg. 1 has no
    projection).  Logistic phi: |phi'| <= 1, phi'' <= 1/4."""
    from stabsim.engine.losses import get_loss

    lf = get_loss(loss_name)
    G, L = lf.G(pb.kappa), lf.L(pb.kappa)
    if not (math.isfinite(G) and math.isfinite(L)):
        raise ValueError(f"P2 needs a G-Lipschitz, L-smooth loss; {loss_name!r} has G = {G}, L = {L} unconstrained")
    p = pb.d * pb.d if lf.matrix else pb.d
    return lf, float(G), float(L), int(p)


def number_of_steps(rule, c_T, n, eps, p, T_fixed):
    """T of P2 Remark 2 ('remark2': T = O(log(n eps / sqrt(p)))) or Thm 3 ('thm3': T = O(log(sqrt(n) eps))),
    with the O(.) constant c_T chosen in the study file; 'fixed': T_fixed.  At least 1."""
    if rule == "fixed":
        return int(T_fixed)
    arg = n * eps / math.sqrt(p) if rule == "remark2" else math.sqrt(n) * eps
    return max(1, int(math.ceil(c_T * math.log(max(arg, 1.0 + 1e-12)))))


def gd_setting(params):
    """(T, sigma, eta, G, L, p, Loss, problem) of a p2_gd cell: T by ``[p2] T_rule``, sigma of P2
    Thm 1 (equality; 0 with ``[p2] private = false``), eta = 1/L."""
    from stabsim.privacy.calibration import p2_sigma

    d, a, s = params["data"], params["algorithm"], params["p2"]
    pb = twin_problem(d)
    lf, G, L, p = loss_constants(a["loss"], pb)
    T = number_of_steps(s["T_rule"], s["c_T"], d["n"], s["eps"], p, a["T"])
    sigma = p2_sigma(T, d["n"], G, s["eps"], s["delta"]) if s["private"] else 0.0
    return T, float(sigma), 1.0 / L, G, L, p, lf, pb
