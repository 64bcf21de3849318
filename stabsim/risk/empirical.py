"""Empirical risk F_S(w) = 1/(n(n-1)) sum_{i != j} f(w; z_i, z_j) (pairwise; the mean loss
pointwise) at many parameter vectors at once, its gradient, and ``_Objective``: the value /
gradient / Hessian oracles of Phi = F_S + reg/2 ||w||^2 used by the certified ERM solver
(``stabsim.risk.solvers``, ``stabsim.risk.certified_erm``).
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.kernels.risk_kernels import (KIND_PN, KIND_POINT, KIND_RANK, metric_value_grad, point_rows, rank_hess,
                                    rank_rows, rank_sum, risk_batch)
from stabsim.kernels.risk_pn import pn_hess, pn_rows, pn_sum, sh_hess, sh_rows, sh_sum
from stabsim.engine.losses import HINGE, LOGISTIC, POINT_LSQ, SQUARED
from stabsim.risk.plan import _METHODS, _Plan, _finish, _param_array, _plan


def empirical_risk(W, X, y, loss, *, q=None, method="auto"):
    """F_S(w) for every parameter vector in W (shape (..., p)) on S = (X, y).

    Pairwise: F_S(w) = 1/(n(n-1)) sum_{i != j} f(w; z_i, z_j) over all ordered pairs (exactly the
    papers' definition; ``auc`` pairs in either order count, ``auc_ordered`` only (+1, -1),
    ``ranking`` same-label pairs give phi(0)).  Pointwise: the mean loss.

    method : ``"auto"`` uses, for the linear pairwise forms with two label values, the
        scores a = X w and O(n log n + n d) algebra per w: the squared loss from centred class
        moments of a, the hinge by sorting the scores of one class and prefix sums; other phi
        (logistic, q-hinge) loop over the nP*nN score differences (O(n^2) scalar work, not
        O(n^2 d)).  Ranking with more than two label values: O(n) for squared, else the score
        loop.  Metric forms (p = d*d): the plain pair loop over i < j (f is symmetric), O(n^2 d^2).
        ``"scores"``: the O(n^2) score loop everywhere (no algebraic shortcut).  ``"loop"``: the
        plain double loop over all ordered pairs through ``losses.pair_loss_grad`` (reference).
    Parallel over the parameter vectors (numba prange); each value is computed by one thread,
    so results do not depend on the thread count.

    Returns a float for a single w, else an array of shape W.shape[:-1] (a DataArray named
    ``F_S`` for DataArray input).
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {sorted(_METHODS)}, got {method!r}")
    pl = _plan(X, y, loss, q)
    W2, lead, wrap = _param_array(W, pl.p)
    out = np.empty(W2.shape[0])
    lf = pl.loss
    risk_batch(_METHODS[method], pl.kind, lf.form, lf.phi, float(lf.q), W2, pl.X, pl.y,
               pl.idxP, pl.idxN, pl.s, pl.mult, pl.kconst, out)
    return _finish(out, lead, wrap, "F_S(w)")


class _Objective:
    """Phi(w) = F_S(w) + reg/2 ||w||^2 with value / gradient / Hessian oracles.

    ``tau > 0`` replaces the hinge by its softplus smoothing (F <= F_tau <= F + tau log 2 * w_tot)
    for the ERM solver.  The gradient of the exact hinge is the subgradient with phi'(1) = 0.
    """

    def __init__(self, pl: _Plan, reg: float = 0.0):
        self.pl = pl
        self.reg = float(reg)
        lf = pl.loss
        self.phi, self.q, self.form = lf.phi, float(lf.q), lf.form
        if pl.kind == KIND_PN:
            self.XP = np.ascontiguousarray(pl.X[pl.idxP])
            self.XN = np.ascontiguousarray(pl.X[pl.idxN])
            self.c = pl.mult / pl.norm          # weight of one P x N term
            self.K0 = pl.kconst / pl.norm       # same-label ranking pairs (constant)
        else:
            self.K0 = 0.0
        self.nfev = 0

    # -- helpers
    def _block(self, w):
        a = self.pl.X @ w
        shift = a.mean()
        s = self.pl.s
        ap = np.ascontiguousarray(s * (a[self.pl.idxP] - shift))
        an = np.ascontiguousarray(s * (a[self.pl.idxN] - shift))
        return ap, an

    def _reg(self, w):
        return 0.5 * self.reg * float(w @ w)

    # -- oracles (F part only: no reg) --
    def f(self, w, tau=0.0):
        """F_S(w) (smoothed when tau > 0)."""
        self.nfev += 1
        pl = self.pl
        if pl.kind == KIND_PN:
            ap, an = self._block(w)
            if self.phi == HINGE and tau > 0:
                return self.K0 + self.c * sh_sum(tau, ap, an)
            return self.K0 + self.c * pn_sum(self.phi, self.q, tau, ap, an, True)
        if pl.kind == KIND_POINT:
            a = pl.X @ w
            v = np.empty(pl.n); d1 = np.empty(pl.n); d2 = np.empty(pl.n)
            point_rows(self.form, self.phi, self.q, tau, a, pl.y, v, d1, d2)
            return float(v.mean())
        if pl.kind == KIND_RANK and tau == 0.0:
            return rank_sum(self.phi, self.q, pl.X @ w, pl.y, True) / pl.norm
        return self.fg(w, tau)[0]

    def fg(self, w, tau=0.0):
        """(F, grad F, s1) with s1 = (normalised) sum of phi' over the terms (for dual bounds)."""
        self.nfev += 1
        pl = self.pl
        if pl.kind == KIND_PN:
            ap, an = self._block(w)
            nP, nN = ap.size, an.size
            rowP = np.empty(nP); rowN = np.empty(nN); dP = np.empty(nP); dN = np.empty(nN)
            if self.phi == HINGE and tau > 0:
                tot = sh_rows(tau, ap, an, rowP, rowN, dP, dN)
            else:
                tot, _ = pn_rows(self.phi, self.q, tau, ap, an, True, rowP, rowN, dP, dN, True)
            g = self.c * pl.s * (self.XP.T @ dP - self.XN.T @ dN)
            return self.K0 + self.c * tot, g, self.c * float(dP.sum())
        if pl.kind == KIND_POINT:
            a = pl.X @ w
            v = np.empty(pl.n); d1 = np.empty(pl.n); d2 = np.empty(pl.n)
            point_rows(self.form, self.phi, self.q, tau, a, pl.y, v, d1, d2)
            ok = self.form != POINT_LSQ and np.all(np.abs(pl.y) == 1.0)
            s1 = float((d1 * pl.y).sum()) / pl.n if ok else math.nan  # sum phi'(y a) for y = +-1
            return float(v.mean()), pl.X.T @ d1 / pl.n, s1
        if pl.kind == KIND_RANK:
            a = pl.X @ w
            rows = np.empty(pl.n); drows = np.empty(pl.n)
            tot, _, sd1 = rank_rows(self.phi, self.q, tau, a, pl.y, rows, drows)
            return tot / pl.norm, pl.X.T @ drows / pl.norm, sd1 / pl.norm
        nch = 32
        G = np.empty((nch, pl.p))
        out = np.empty(2)
        metric_value_grad(self.form, self.phi, self.q, tau, np.ascontiguousarray(w, dtype=np.float64),
                          pl.X, pl.y, nch, G, out)
        return out[0] / pl.norm, G[0] / pl.norm, out[1] / pl.norm

    def hess(self, w, tau=0.0, rad=0.0):
        """Hessian of F (pn and point kinds).  ``rad > 0``: a matrix below every Hessian of F on
        the ball of radius rad around w (lower bounds of phi'' over the reachable margins)."""
        pl = self.pl
        if pl.kind == KIND_PN:
            if self.phi == SQUARED:
                return self._hess_squared()
            ap, an = self._block(w)
            nP, nN, d = ap.size, an.size, pl.d
            hP = np.empty(nP); hN = np.empty(nN); T = np.empty((nP, d))
            if rad > 0:
                normP = abs(pl.s) * np.linalg.norm(self.XP, axis=1)
                normN = abs(pl.s) * np.linalg.norm(self.XN, axis=1)
            else:
                normP = normN = np.zeros(0)
            if self.phi == HINGE and tau > 0 and rad == 0:
                sh_hess(tau, ap, an, self.XN, hP, hN, T)
            else:
                pn_hess(self.phi, self.q, tau, ap, an, self.XN, float(rad), normP, normN, hP, hN, T)
            H = (self.XP.T * hP) @ self.XP + (self.XN.T * hN) @ self.XN
            C = self.XP.T @ T
            H = H - C - C.T
            return self.c * pl.s ** 2 * 0.5 * (H + H.T)
        if pl.kind == KIND_POINT:
            a = pl.X @ w
            if self.form == POINT_LSQ:
                d2 = np.ones(pl.n)
            elif rad > 0:
                m = pl.y * a
                r = rad * np.abs(pl.y) * np.linalg.norm(pl.X, axis=1)
                d2 = _phi2_lower_np(self.phi, tau, m, r) * pl.y ** 2
            else:
                v = np.empty(pl.n); d1 = np.empty(pl.n); d2 = np.empty(pl.n)
                point_rows(self.form, self.phi, self.q, tau, a, pl.y, v, d1, d2)
            H = (pl.X.T * d2) @ pl.X / pl.n
            return 0.5 * (H + H.T)
        if pl.kind == KIND_RANK:
            a = pl.X @ w
            Hm = np.empty((pl.n, pl.n)); r = np.empty(pl.n)
            norms = np.linalg.norm(pl.X, axis=1) if rad > 0 else np.zeros(pl.n)
            rank_hess(self.phi, self.q, tau, a, pl.y, float(rad), norms, Hm, r)
            H = 2.0 * ((pl.X.T * r) @ pl.X - pl.X.T @ (Hm @ pl.X)) / pl.norm
            return 0.5 * (H + H.T)
        raise NotImplementedError("Hessians only for the linear forms (not metric learning)")

    def _hess_squared(self):
        """Constant Hessian of the squared pairwise loss from centred class moments (O(n d^2))."""
        XP, XN = self.XP, self.XN
        nP, nN = len(XP), len(XN)
        d = self.pl.d
        if nP == 0 or nN == 0:
            return np.zeros((d, d))
        mP, mN = XP.mean(0), XN.mean(0)
        CP = (XP - mP).T @ (XP - mP)
        CN = (XN - mN).T @ (XN - mN)
        dm = mP - mN
        S = nN * CP + nP * CN + nP * nN * np.outer(dm, dm)  # sum_{ij} (x_i - x_j)(x_i - x_j)^T
        return self.c * self.pl.s ** 2 * 2.0 * 0.5 * (S + S.T)

    # -- with the regulariser
    def Phi(self, w, tau=0.0):
        return self.f(w, tau) + self._reg(w)

    def Phig(self, w, tau=0.0):
        F, g, s1 = self.fg(w, tau)
        return F + self._reg(w), g + self.reg * w, s1, g

    def PhiH(self, w, tau=0.0, rad=0.0):
        return self.hess(w, tau, rad) + self.reg * np.eye(len(w))


def _phi2_lower_np(phi, tau, m, r):
    if phi == SQUARED:
        return np.full_like(m, 2.0)
    if phi == LOGISTIC:
        e = np.exp(-(np.abs(m) + r))
        return e / (1 + e) ** 2
    if phi == HINGE and tau > 0:
        e = np.exp(-(np.abs(1 - m) + r) / tau)
        return e / (1 + e) ** 2 / tau
    return np.zeros_like(m)


def empirical_grad(w, X, y, loss, *, q=None, reg=0.0):
    """grad F_S(w) (plus reg * w), the full gradient of the empirical risk (P1 Thm 8 uses
    ||grad F_S||^2).  For the hinge losses it is a subgradient: phi'(m) = -1 for margins
    m < 1 and 0 otherwise, decided once per pair from the computed scores (so at a margin
    within rounding of 1 either side may be taken, consistently for the whole pair).
    Linear forms cost O(n log n + n d) for hinge and squared phi, O(nP nN) scalar work
    otherwise; metric forms O(n^2 d^2).
    """
    pl = _plan(X, y, loss, q)
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (pl.p,):
        raise ValueError(f"w must have shape ({pl.p},), got {w.shape}")
    return _Objective(pl, reg).Phig(w)[1]
