"""Deterministic solvers behind ``stabsim.risk.erm``: the ball-constrained quadratic model
(eigen-decomposition and secular equation), Newton with exact Hessians, the closed form of the
squared losses, the softplus-smoothing continuation for the hinge, and L-BFGS-B / FISTA for the
metric forms, ranking with many labels and the q-hinge.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.optimize

from stabsim.engine.constraints import FROBENIUS, L2, NONE
from stabsim.kernels.risk_kernels import KIND_RANK
from stabsim.risk.certificates import _certify_smooth, _dual_lb_hinge, _lb_first_order
from stabsim.risk.exact_dual import _exact_hinge_lb
from stabsim.risk.plan import _RANK_NEWTON_MAX

def _ball_qp(H, b, R):
    """argmin_{||v|| <= R} 1/2 v'Hv - b'v for symmetric PSD H (R = inf: the min-norm minimiser)."""
    lam, Q = np.linalg.eigh(H)
    lam = np.maximum(lam, 0.0)
    beta = Q.T @ b
    thr = 1e-13 * max(lam.max(), 1e-300)
    rng_ = lam > thr
    v0 = np.where(rng_, beta / np.where(rng_, lam, 1.0), 0.0)
    nb = np.linalg.norm(beta)
    null_ok = np.linalg.norm(beta[~rng_]) <= 1e-12 * max(nb, 1e-300)
    if not math.isfinite(R):
        return Q @ v0
    if null_ok and np.linalg.norm(v0) <= R:
        return Q @ v0
    if nb == 0:
        return np.zeros_like(b)

    def inv_norm(mu):
        with np.errstate(divide="ignore", invalid="ignore"):
            den = lam + mu
            comp = np.where(den > 0, beta / np.where(den > 0, den, 1.0), np.where(beta != 0, np.inf, 0.0))
            nrm = np.linalg.norm(comp)
        return (1.0 / nrm if nrm > 0 else np.inf) - 1.0 / R

    hi = nb / R
    lo = 0.0
    if inv_norm(lo) >= 0:  # cannot happen unless rounding: fall back to the scaled solution
        v = Q @ v0
        return v * min(1.0, R / max(np.linalg.norm(v), 1e-300))
    mu = scipy.optimize.brentq(inv_norm, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    v = Q @ (beta / (lam + mu))
    nv = np.linalg.norm(v)
    return v * (R / nv) if nv > R else v


def _newton(obj, w, tau, cons, max_iter, ftol=1e-15):
    """Minimise Phi_tau over {none, l2 ball} by (projected) Newton steps with exact Hessians:
    each step minimises the quadratic model over the ball exactly (eigen-decomposition and a
    secular equation), is capped to a trust radius (flat, piecewise-linear regions of the
    smoothed hinge have a zero Hessian), then backtracks (Armijo) along the feasible segment."""
    R = cons.radius if cons.kind in (L2, FROBENIUS) else math.inf
    it = 0
    f = obj.Phi(w, tau)
    Delta = max(1.0, float(np.linalg.norm(w)))
    for it in range(1, max_iter + 1):
        _, g, _, _ = obj.Phig(w, tau)
        H = obj.PhiH(w, tau)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            if math.isfinite(R):
                p = _ball_qp(H, H @ w - g, R) - w
            else:
                lam, Q = np.linalg.eigh(H)
                lam = np.maximum(lam, 0.0)
                delta = 1e-12 * max(lam.max(), 1e-300)
                p = -(Q @ ((Q.T @ g) / (lam + delta)))
        if not np.all(np.isfinite(p)):
            p = -g
        pn = float(np.linalg.norm(p))
        if pn > Delta:
            p = p * (Delta / pn)
            pn = Delta
        dec = -float(g @ p)
        if not (dec > ftol * max(1.0, abs(f))):
            break
        t = 1.0
        accepted = False
        while t >= 1e-12:
            wn = w + t * p
            if math.isfinite(R):
                nn = np.linalg.norm(wn)
                if nn > R:
                    wn *= R / nn
            fn = obj.Phi(wn, tau)
            if math.isfinite(fn) and fn <= f - 0.25 * t * dec:
                accepted = True
                break
            t *= 0.5
        if not accepted:
            break
        Delta = max(Delta, 2.0 * pn) if t == 1.0 else max(t * pn, 1e-12)
        done = f - fn <= ftol * max(1.0, abs(f))
        w, f = wn, fn
        if done:
            break
    return w, it


def _erm_quadratic(obj, cons, w0, md):
    """Squared losses: Phi is quadratic, 1/2 w'Hw - b'w + Phi(0); solved in closed form (ball:
    secular equation), then two Newton refinements with the exact gradient."""
    pl = obj.pl
    p = pl.p
    if pl.kind == KIND_RANK and pl.n > _RANK_NEWTON_MAX:  # gradient differences: exact for a quadratic
        g0 = obj.Phig(np.zeros(p))[1]
        H = np.column_stack([obj.Phig(np.eye(p)[k])[1] - g0 for k in range(p)])
        H = 0.5 * (H + H.T)
    else:
        H = obj.PhiH(np.zeros(p))
    R = cons.radius if cons.kind in (L2, FROBENIUS) else math.inf
    b = -obj.Phig(np.zeros(p))[1]
    w = _ball_qp(H, b, R)
    for _ in range(3):
        g = obj.Phig(w)[1]
        w_new = _ball_qp(H, H @ w - g, R)
        if obj.Phi(w_new) <= obj.Phi(w):
            w = w_new
    return w, H


def _erm_hinge(obj, cons, w, md, tol, max_iter):
    """Hinge losses: Newton on the softplus smoothing with tau = 0.3 / sqrt(10)^k (warm starts)
    down to 1e-9; after each tau the best lower bound of: weak duality with the smoothed dual
    weights, the subgradient first-order bound at the best point, and (unconstrained, reg = 0)
    the exact rational repair.  Stops when the certificate is below tol / 10."""
    best_w, best_val = w.copy(), obj.Phi(w)
    lb, lb_name = 0.0, "nonnegativity"
    n_it = 0
    tau = 0.3
    exact = cons.kind == NONE and obj.reg == 0.0
    while tau > 1e-9:
        w, it = _newton(obj, w, tau, cons, max_iter)
        n_it += it
        val = obj.Phi(w)
        if val < best_val:
            best_w, best_val = w.copy(), val
        dl = _dual_lb_hinge(obj, w, tau, cons, md)
        if dl > lb:
            lb, lb_name = dl, f"weak duality (smoothed dual weights, tau={tau:.0e})"
        Phi_b, g_b = obj.Phig(best_w)[:2]
        fo = _lb_first_order(Phi_b, best_w, g_b, obj.reg, cons, md)
        if fo > lb:
            lb, lb_name = fo, "first-order (subgradient Frank-Wolfe gap)"
        if exact and best_val - lb > 0.1 * tol and tau < 0.02:
            ex = _exact_hinge_lb(obj, w, tau)
            if ex > lb:
                lb, lb_name = ex, f"weak duality, dual-feasible alpha in exact arithmetic (tau={tau:.0e})"
        if best_val - lb <= 0.1 * tol:
            break
        tau /= 10.0 ** 0.5
    return best_w, best_val, lb, lb_name, n_it, tau


def _erm_generic(obj, cons, w, md, tol, max_iter, tau=0.0):
    """Metric forms, ranking with > 2 labels, q-hinge: L-BFGS-B (unconstrained) or accelerated
    projected gradient (FISTA with backtracking and restarts) over W."""
    if cons.kind == NONE:
        n_it = 0
        f = obj.Phi(w, tau)
        for _ in range(5):  # restarts while they still improve
            res = scipy.optimize.minimize(lambda v: obj.Phig(v, tau)[:2], w, jac=True, method="L-BFGS-B",
                                          options=dict(maxiter=50 * max_iter, maxcor=30, ftol=0.0,
                                                       gtol=1e-14, maxfun=100 * max_iter))
            n_it += int(res.nit)
            fn = obj.Phi(res.x, tau)
            if not fn < f - 1e-15 * max(1.0, abs(f)):
                if fn <= f:
                    w = res.x
                break
            w, f = res.x, fn
        return w, n_it
    w = cons.project(w, md or None)
    y_, wp, t = w.copy(), w.copy(), 1.0
    f_y, g_y = obj.Phig(y_, tau)[:2]
    Lc = 1.0
    it = 0
    for it in range(1, 30 * max_iter + 1):
        while True:
            wn = cons.project(y_ - g_y / Lc, md or None)
            dlt = wn - y_
            fn = obj.Phi(wn, tau)
            if fn <= f_y + g_y @ dlt + 0.5 * Lc * (dlt @ dlt) + 1e-15 * abs(f_y) or Lc > 1e16:
                break
            Lc *= 2.0
        if obj.Phi(wp, tau) < fn:  # restart (no momentum)
            t = 1.0
            y_ = wp.copy()
            f_y, g_y = obj.Phig(y_, tau)[:2]
            Lc *= 0.9
        else:
            tn = 0.5 * (1 + math.sqrt(1 + 4 * t * t))
            y_ = wn + (t - 1) / tn * (wn - wp)
            wp, t = wn, tn
            f_y, g_y = obj.Phig(y_, tau)[:2]
            Lc *= 0.95
        if it % 25 == 0:
            Phi, lb, _ = _certify_smooth(obj, wp, cons, md, tau)
            if Phi - lb <= 0.05 * tol:
                break
    return wp, it
