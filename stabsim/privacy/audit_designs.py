"""Worst-case audit designs: data, canary and settings under which an audit can reach the accountant.

The accountants of the gradient-perturbation algorithms charge every step the *replace-one
sensitivity* of the step's gradient: 2G for one point or pair (P4 Algs. 1/2: ||grad f(w; z) -
grad f(w; z')|| <= 2G), 4G/n for P2's average over the n(n-1) ordered pairs (2(n-1) of which
contain the replaced example).  An audit comes close to the accountant only if the canary
*attains* that sensitivity at every step and nothing else in the step hides it.  The designs
(``worst_case_design``):

``p4_alg1`` (pointwise DP-SGD, point hinge (1 - y w.x)_+, G = max||x|| = 1): S = n copies of
    z = (e_1, +1); S' replaces one by its label flip z' = (e_1, -1).  While |w_1| < 1 both hinges
    are active, the gradients are -e_1 and +e_1: a difference of 2 = 2G.  Every other sample of S
    has z's gradient, so a step on S is N(g, sigma^2 I) and on S' the mixture
    (1 - 1/n) N(g, .) + (1/n) N(g + 2G e_1, .): exactly the dominating pair the PLD accountant
    composes (Poisson rate 1/n, sensitivity 2G), so the every-iterate likelihood-ratio audit can
    attain the accountant's eps.
``p2_alg1`` (full batch) and ``p4_alg2`` (uniform pair), AUC hinge (1 - w.(x_i - x_j))_+ on
    positive/negative pairs: S = one positive z_k = (e_1, +1) and n - 1 negatives at 0; S'
    replaces z_k by (-e_1, +1).  Every pair with z_k (or the canary) is a positive/negative pair,
    its gradient is -(x_k - 0) = -e_1 (or +e_1) while |w_1| < 1, and ||x_i - x_j|| <= 1 for every
    such pair in S and S', so G = 1 is the loss's Lipschitz constant on this data (passed as
    ``G=1``; the default G = 2 max||x|| would double the noise).  P2: the averaged gradients
    differ by 2(n-1) * 2 / (n(n-1)) = 4G/n every step, the sensitivity Thm 1 charges, so the path
    is exactly sqrt(T) (4G/n)/sigma-GDP, which is what the accountant says.  P4 Alg. 2: a step
    touches z_k with probability 2/n as the accountant assumes, but the step on S is then
    (1 - 2/n) N(0, .) + (2/n) N(-e_1, .) against the same mixture with +e_1 on S' -- two
    mixtures, less distinguishable than the accountant's (Poisson, add-or-remove) pair, so its
    audit stays below the accountant by construction (reported, not a failure).

A small constant step (eta = 1e-3) keeps w_1 inside (-1, 1) over the run (the drift is at most
eta per step and the noise eta sigma per step); privacy does not depend on eta.  The initial
point is w_0 = 0 (public).

The output-perturbation algorithms (P0 Alg. 2, P1 Alg. 3, P3) release noisy outputs of a
*non-private* trajectory whose sensitivity bound (a high-probability uniform-stability bound)
is far above what any neighbouring pair attains; their designs are the canary of
:func:`stabsim.privacy.audit_runner.make_canary` on ``n`` copies of one point, and their audits
measure how loose that calibration is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stabsim.engine.validation import positive_int

__all__ = ["AuditDesign", "worst_case_design", "WHITEBOX_ALGORITHMS"]

#: the algorithms whose every iterate is a Gaussian mechanism (the every-iterate threat model).
WHITEBOX_ALGORITHMS = ("p2_alg1", "p4_alg1", "p4_alg2")


@dataclass(frozen=True)
class AuditDesign:
    """Data (X, y), the canary (k, x', y'), the algorithm's keyword arguments and a description."""

    algorithm: str
    X: np.ndarray
    y: np.ndarray
    canary: tuple
    kwargs: dict = field(default_factory=dict)
    description: str = ""


def _one_positive(n):
    X = np.zeros((n, 2))
    y = -np.ones(n)
    X[0, 0], y[0] = 1.0, 1.0
    return X, y, (0, np.array([-1.0, 0.0]), 1.0)


def worst_case_design(algorithm, n=50, T=None) -> AuditDesign:
    """The audit design of ``algorithm`` (module docstring) with ``n`` examples and ``T`` steps
    (default: the algorithm's own default)."""
    from stabsim.privacy.algorithms import PRIVATE_ALGORITHMS

    if algorithm not in PRIVATE_ALGORITHMS:
        raise ValueError(f"unknown private algorithm {algorithm!r}; allowed: {', '.join(PRIVATE_ALGORITHMS)}")
    n = positive_int("n", n, minimum=4)
    kw = {} if T is None else {"T": positive_int("T", T)}
    if algorithm == "p4_alg1":
        X = np.tile([1.0, 0.0], (n, 1))
        y = np.ones(n)
        kw.update(loss="point_hinge", eta=1e-3, w0=np.zeros(2))
        return AuditDesign(algorithm, X, y, (0, np.array([1.0, 0.0]), -1.0), kw,
                           "n copies of (e1, +1), canary: its label flip; point hinge, G = 1: gradient "
                           "difference 2G while |w_1| < 1")
    if algorithm in ("p2_alg1", "p4_alg2"):
        X, y, can = _one_positive(n)
        kw.update(loss="auc_hinge", G=1.0, eta=1e-3, w0=np.zeros(2))
        what = ("full-batch gradients differ by 4G/n (the Thm 1 sensitivity)" if algorithm == "p2_alg1"
                else "a step touches z_k w.p. 2/n; pair gradients differ by 2G")
        return AuditDesign(algorithm, X, y, can, kw,
                           "one positive (e1, +1) and n - 1 negatives at 0, canary (-e1, +1); AUC hinge, "
                           f"G = 1 (max pair distance): {what}")
    # output perturbation: n copies of one point with alternating labels, the auto canary
    X = np.tile([1.0, 0.0], (n, 1))
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    X = X * y[:, None]
    if algorithm.startswith("p3_"):
        # the burn-in T_1 = max(ceil(16 L^2/alpha^2), 7) exceeds any small n at the paper's alpha:
        # the typical setting of the privacy ledger (alpha = 1, T_1 = 7 given) keeps a private loop
        kw.setdefault("alpha", 1.0)
        kw.setdefault("T1", 7)
    return AuditDesign(algorithm, X, y, "auto", kw,
                       "n copies of one point with alternating labels (x_i = y_i e1), the auto canary: the "
                       "final release is audited (output perturbation)"
                       + ("; alpha = 1, T_1 = 7 (given)" if algorithm.startswith("p3_") else ""))
