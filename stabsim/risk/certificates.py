"""Proven lower bounds on min_W Phi (Phi = F_S + reg/2 ||w||^2) behind the certificates of
``stabsim.risk.erm``: first order (Frank–Wolfe gap / strong convexity over the constraint set),
local strong convexity (unconstrained), the exact gap of a quadratic, weak duality for the hinge
with the smoothed dual weights, and nonnegativity.  The exact rational repair of the hinge dual
is in ``stabsim.risk.exact_dual``.
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.engine.constraints import FROBENIUS, L2, NONE, NUCLEAR, Constraint
from stabsim.kernels.risk_kernels import KIND_PN, KIND_POINT, KIND_RANK
from stabsim.engine.losses import METRIC

def _lmo_min(c, mu, center, cons: Constraint, md):
    """min_{v in W} c.v + mu/2 ||v - center||^2 (exact; -inf when unbounded below)."""
    if mu > 0:
        v = cons.project(center - c / mu, md or None)
        return float(c @ v + 0.5 * mu * np.sum((v - center) ** 2))
    if cons.kind == NONE:
        return 0.0 if not np.any(c) else -math.inf
    if cons.kind in (L2, FROBENIUS):
        return -cons.radius * float(np.linalg.norm(c))
    C = c.reshape(md, md)
    lam = np.linalg.eigvalsh(0.5 * (C + C.T))
    if cons.kind == NUCLEAR:
        return -cons.radius * float(np.max(np.abs(lam)))
    return 0.0 if lam[0] >= 0 else -math.inf  # PSD cone


def _lb_first_order(Phi, w, g, mu, cons, md):
    """Lower bound on min_W Phi from convexity (and mu-strong convexity) at w with (sub)gradient g:
    Phi(v) >= Phi(w) + g.(v - w) + mu/2 ||v - w||^2."""
    return Phi - float(g @ w) + _lmo_min(g, mu, w, cons, md)


def _lb_local_curvature(obj, w, Phi, g, tau=0.0):
    """Unconstrained lower bound from local strong convexity: if mu_r = lambda_min of a matrix
    below every Hessian on the ball B(w, r) satisfies ||g|| <= mu_r r / 2, then the minimum lies
    in B(w, r) (F >= F(w) on its boundary) and min Phi >= Phi - ||g||^2 / (2 mu_r)."""
    gn = float(np.linalg.norm(g))
    if gn == 0.0:
        return Phi
    try:
        H0 = obj.PhiH(w, tau)
    except NotImplementedError:
        return -math.inf
    lam0 = np.linalg.eigvalsh(H0)
    mu0 = lam0[0] - 1e-12 * abs(lam0[-1])
    if not mu0 > 0:
        return -math.inf
    for c in (3.0, 6.0, 20.0, 100.0):
        r = c * gn / mu0
        lam = np.linalg.eigvalsh(obj.PhiH(w, tau, rad=r))
        mu_r = lam[0] - 1e-12 * abs(lam[-1])
        if mu_r > 0 and gn <= 0.5 * mu_r * r:
            return Phi - gn * gn / (2.0 * mu_r)
    return -math.inf


def _certify_smooth(obj, w, cons, md, tau=0.0):
    """Best proven lower bound on min_W Phi at w for a smooth convex Phi: first-order (with the
    strong convexity reg) over W, local curvature when unconstrained, and 0 (losses >= 0)."""
    Phi, g, _, _ = obj.Phig(w, tau)
    lbs = {"nonnegativity": 0.0}
    lbs["first-order (Frank-Wolfe gap / strong convexity reg)"] = _lb_first_order(Phi, w, g, obj.reg, cons, md)
    if cons.kind == NONE and obj.pl.kind in (KIND_PN, KIND_POINT, KIND_RANK):
        lbs["local strong convexity"] = _lb_local_curvature(obj, w, Phi, g, tau)
    name = max(lbs, key=lbs.get)
    return Phi, lbs[name], name


def _slack(v):
    return 1e-12 * max(1.0, abs(v))


def _erm_quadratic_cert(obj, w, H, cons, md):
    Phi, lb, name = _certify_smooth(obj, w, cons, md)
    if cons.kind == NONE:
        # exact gap of a quadratic bounded below: 1/2 g' H^+ g (g lies in range(H))
        g = obj.Phig(w)[1]
        lam, Q = np.linalg.eigh(H)
        thr = 1e-12 * max(abs(lam).max(), 1e-300)
        gb = Q.T @ g
        rng_ = lam > thr
        if np.linalg.norm(gb[~rng_]) <= 1e-9 * max(1.0, np.linalg.norm(g)):
            lbq = Phi - 0.5 * float(np.sum(gb[rng_] ** 2 / lam[rng_]))
            if lbq > lb:
                lb, name = lbq, "exact quadratic gap 1/2 g'H^+g"
    return Phi, lb, name


def _dual_lb_hinge(obj, w, tau, cons, md):
    """Weak-duality lower bound for the hinge: with alpha = -phi_tau'(margins) in [0, 1],
    F(v) >= K0 + c sum alpha (1 - m(v)) = K0 - s1 - v.z (z = -grad F_tau(w)), so
    min_W Phi >= K0 - s1 + min_{v in W} (-v.z + reg/2 ||v||^2)."""
    _, _, s1, gF = obj.Phig(w, tau)
    if not math.isfinite(s1) or obj.form == METRIC:  # needs margins linear in w
        return -math.inf
    return obj.K0 - s1 + _lmo_min(gF, obj.reg, np.zeros_like(w), cons, md)
