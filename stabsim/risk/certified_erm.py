"""Certified empirical risk minimisation ``erm``: w_S = argmin_W F_S + reg/2 ||w||^2 with a proven
upper bound on its optimisation error (``ErmResult``).  Solvers are in ``stabsim.risk.solvers``,
the lower bounds in ``stabsim.risk.certificates`` and ``stabsim.risk.exact_dual``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from stabsim.engine.constraints import FROBENIUS, L2, NONE, get_constraint
from stabsim.kernels.risk_kernels import KIND_PN, KIND_POINT, KIND_RANK
from stabsim.engine.losses import HINGE, POINT_LSQ, QHINGE, SQUARED
from stabsim.risk.certificates import _certify_smooth, _dual_lb_hinge, _erm_quadratic_cert, _lb_first_order, _slack
from stabsim.risk.empirical import _Objective
from stabsim.risk.plan import _RANK_NEWTON_MAX, _plan
from stabsim.risk.solvers import _erm_generic, _erm_hinge, _erm_quadratic, _newton


@dataclass
class ErmResult:
    """Result of ``erm``.  Unpacks as ``w_S, value, certificate``.

    w : the solution w_S.  value : Phi(w_S) = F_S(w_S) + reg/2 ||w_S||^2 (= F_S(w_S) for reg = 0).
    certificate : a proven upper bound on value - min_W Phi (up to floating-point rounding in
    evaluating F_S, covered by a relative slack of 1e-12).  lower_bound = value - certificate
    is a proven lower bound on min_W Phi.  certificate_method says where it comes from.
    converged : certificate <= tol.
    """

    w: np.ndarray
    value: float
    certificate: float
    lower_bound: float
    method: str
    certificate_method: str
    converged: bool
    n_iter: int
    loss: str
    constraint: str
    reg: float
    risk: float
    info: dict = field(default_factory=dict)

    def __iter__(self):
        yield self.w
        yield self.value
        yield self.certificate


def _erm_setup(X, y, loss, constraint, reg, q, w0):
    """Validated inputs of ``erm``: the plan, the constraint, reg as a float, the matrix side md
    (0 for vector parameters), the objective Phi = F_S + reg/2 ||w||^2 and the feasible start."""
    pl = _plan(X, y, loss, q)
    lf = pl.loss
    cons = get_constraint(constraint)
    if cons.matrix and not lf.matrix:
        raise ValueError(f"constraint {cons.name!r} is for matrix parameters (metric losses)")
    reg = float(reg)
    if not (reg >= 0 and math.isfinite(reg)):
        raise ValueError(f"reg must be finite and >= 0, got {reg!r}")
    md = pl.d if lf.matrix else 0
    obj = _Objective(pl, reg)
    w = np.zeros(pl.p) if w0 is None else np.array(w0, dtype=np.float64).ravel()
    if w.shape != (pl.p,):
        raise ValueError(f"w0 must have {pl.p} entries, got {w.shape}")
    if cons.kind != NONE:
        w = cons.project(w, md or None)
    return pl, cons, reg, md, obj, w


def _erm_hinge_smoothed(obj, cons, w, md, tol, max_iter, reg):
    """Hinge losses outside the Newton path (metric forms, ranking with many labels, nuclear /
    PSD constraints): ``_erm_generic`` on the softplus smoothing with tau = 0.1 / 10^k down to
    1e-7 (warm starts), the best point kept; lower bound: weak duality with the smoothed dual
    weights after each tau, then the subgradient first-order bound at the best point."""
    best = (obj.Phi(w), w.copy())
    lb, lb_name = 0.0, "nonnegativity"
    n_it = 0
    tau = 0.1
    while tau >= 1e-7:
        w, it = _erm_generic(obj, cons, w, md, tol, max_iter, tau)
        n_it += it
        if obj.Phi(w) < best[0]:
            best = (obj.Phi(w), w.copy())
        dl = _dual_lb_hinge(obj, w, tau, cons, md)
        if dl > lb:
            lb, lb_name = dl, f"weak duality (smoothed dual weights, tau={tau:.0e})"
        if best[0] - lb <= 0.1 * tol:
            break
        tau /= 10.0
    Phi, w = best
    PhiW, g = obj.Phig(w)[:2]
    fo = _lb_first_order(PhiW, w, g, reg, cons, md)
    if fo > lb:
        lb, lb_name = fo, "first-order (subgradient)"
    return w, Phi, lb, lb_name, n_it


def erm(X, y, loss, constraint="none", *, tol=1e-8, reg=0.0, q=None, w0=None,
        max_iter=100) -> ErmResult:
    """w_S = argmin_{w in W} Phi(w), Phi = F_S + reg/2 ||w||^2, with a proven accuracy.

    Returns an ``ErmResult`` that unpacks as ``(w_S, Phi(w_S), certificate)``, where
    ``certificate`` is a proven upper bound on Phi(w_S) - min_W Phi (any lower bound below is
    valid for every convex Phi; the best one is used and named in ``certificate_method``):

    * first order: Phi(v) >= Phi(w) + g.(v - w) + reg/2 ||v - w||^2 for a (sub)gradient g, so
      min_W Phi >= Phi(w) + min_{v in W} [g.(v - w) + reg/2 ||v - w||^2]; over an l2 ball of
      radius R with reg = 0 this is the Frank–Wolfe gap <g, w> + R ||g||.
    * squared losses, unconstrained: Phi is quadratic, gap = 1/2 g' H^+ g exactly.
    * logistic, unconstrained: local strong convexity.  A matrix below every Hessian on the
      ball B(w, r) is built from lower bounds of phi'' over the margins reachable in B(w, r);
      if its smallest eigenvalue mu_r has ||g|| <= mu_r r/2, the minimum lies in B(w, r) and
      gap <= ||g||^2 / (2 mu_r).  (No finite bound exists when the infimum is not attained,
      e.g. separable data: then only the nonnegativity bound 0 applies.)
    * hinge: weak duality.  (1 - m)_+ >= alpha (1 - m) for alpha in [0, 1], so for every alpha
      min_W F_S >= K0 + c sum alpha - max_{v in W} v.z(alpha) (z = c sum alpha u, the margins
      being m = w.u; over the l2 ball the max is R ||z||); alpha are the dual weights of the
      softplus-smoothed problem at its solution.  Unconstrained (reg = 0) the bound needs
      z(alpha) = 0 exactly: alpha is rounded to a 2^-40 grid and corrected (least-norm, then
      on d pairs in exact rational arithmetic), the bound evaluated exactly and rounded down.
    * always: min Phi >= 0 (every loss is nonnegative).

    Solvers (deterministic; never the SGD run): squared losses in closed form (eigen-
    decomposition; ball: secular equation) plus Newton refinements; logistic by Newton with
    exact Hessians, each step minimising the quadratic model over the ball exactly, with a
    trust radius and Armijo backtracking; hinge by the same Newton method on the softplus
    smoothing tau log(1 + e^{(1-m)/tau}), tau = 0.3 / sqrt(10)^k down to 1e-9 with warm starts,
    stopping as soon as the certificate is below tol/10; metric forms and the q-hinge by
    L-BFGS-B (unconstrained) or FISTA with restarts (constrained), hinge ones on the smoothing.
    Constraints: ``none``, ``l2`` / ``frobenius`` balls; ``nuclear`` and ``psd`` (metric
    forms) via FISTA with the matching first-order bound.

    Known limits (the certificate then stays honest but large, ``converged=False``): an
    unattained infimum (separable data, logistic, unconstrained) unless F_S(w) itself gets
    below tol; the q-hinge and metric losses unconstrained with reg = 0 (no curvature bound
    implemented); the PSD cone with reg = 0 (needs sym(grad) >= 0 exactly).

    Accuracy: ``converged`` is True when certificate <= tol.  Rounding in evaluating F_S is
    covered by adding 1e-12 max(1, Phi) to the certificate, so tol below ~1e-12 is not reachable.
    """
    pl, cons, reg, md, obj, w = _erm_setup(X, y, loss, constraint, reg, q, w0)
    lf = pl.loss
    linear = (pl.kind in (KIND_PN, KIND_POINT) or (pl.kind == KIND_RANK and pl.n <= _RANK_NEWTON_MAX)) \
        and cons.kind in (NONE, L2, FROBENIUS)
    quadratic = lf.form == POINT_LSQ or (lf.phi == SQUARED and not lf.matrix)
    info = {}
    if quadratic and cons.kind in (NONE, L2, FROBENIUS) and not lf.matrix:
        w, H = _erm_quadratic(obj, cons, w, md)
        Phi, lb, lb_name = _erm_quadratic_cert(obj, w, H, cons, md)
        method, n_it = "closed form (eigen-decomposition" + (", secular equation)" if cons.kind != NONE else ")"), 1
    elif lf.phi == HINGE and lf.form != POINT_LSQ:
        if linear:
            w, Phi, lb, lb_name, n_it, tau_end = _erm_hinge(obj, cons, w, md, tol, max_iter)
            method = "Newton on softplus smoothing, tau -> 0"
            info["tau_last"] = tau_end
        else:
            w, Phi, lb, lb_name, n_it = _erm_hinge_smoothed(obj, cons, w, md, tol, max_iter, reg)
            method = "L-BFGS-B / FISTA on softplus smoothing"
    else:
        if linear and lf.phi != QHINGE:
            w, n_it = _newton(obj, w, 0.0, cons, max_iter)
            method = "Newton with exact Hessians" + (" (ball model solved exactly)" if cons.kind != NONE else "")
        else:
            w, n_it = _erm_generic(obj, cons, w, md, tol, max_iter)
            method = "L-BFGS-B" if cons.kind == NONE else "FISTA (projected)"
        Phi, lb, lb_name = _certify_smooth(obj, w, cons, md)
    Phi = obj.Phi(w)
    lb = min(lb, Phi)
    info["oracle_calls"] = obj.nfev
    cert = Phi - lb + _slack(Phi)
    return ErmResult(w=w, value=float(Phi), certificate=float(cert), lower_bound=float(Phi - cert),
                     method=method, certificate_method=lb_name, converged=bool(cert <= tol),
                     n_iter=int(n_it), loss=lf.name, constraint=cons.name, reg=reg,
                     risk=float(obj.f(w)), info=info)
