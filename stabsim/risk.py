"""Risk evaluation: empirical risks F_S, population risks F, certified ERM w_S, and metrics.

Notation (the papers'): S = {z_1..z_n}, z = (x, y).  For a pairwise loss f(w; z, z')

    F_S(w) = 1/(n(n-1)) sum_{i != j} f(w; z_i, z_j)      (all ordered pairs, P0 R_S, P1 F_S)
    F(w)   = E_{z, z'} f(w; z, z')                      (z, z' independent)

and for a pointwise loss F_S(w) = (1/n) sum_i f(w; z_i), F(w) = E_z f(w; z).  w_S is a
minimiser of F_S over the constraint set W, w* one of F.  The generalization error of an
output A(S) is F(A(S)) - F_S(A(S)), its optimization error F_S(A(S)) - min_W F_S, and its
excess risk F(A(S)) - F(w*) (docs/errata.md, Conventions).

Public functions
----------------
``empirical_risk(W, X, y, loss)``     F_S at many parameter vectors W (..., p) at once.
``empirical_grad(w, X, y, loss)``     grad F_S(w) (a subgradient for the hinge losses).
``population_risk(W, problem, loss)`` F(w): closed form when the problem has one for this loss,
                                      else a U-statistic over a fresh test sample, with its SE.
``erm(X, y, loss, constraint)``       w_S, F_S(w_S) and a proven bound on F_S(w_S) - min_W F_S.
``auc``, ``auc_from_scores``, ``misclassification``, ``mse``: test metrics.

Parameters W may be numpy arrays (..., p) or xarray DataArrays with a ``param`` dimension,
e.g. ``run_twin(..., record_outputs=True).output`` (replicate, t, run, param); the result
then keeps the other dimensions.  Metric-learning parameters are flattened d x d matrices
(p = d*d, row-major), as in ``stabsim.losses``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.stats

from . import rng
from .constraints import FROBENIUS, L2, NONE, NUCLEAR, Constraint, get_constraint
from .kernels.risk_kernels import (KIND_METRIC, KIND_PN, KIND_POINT, KIND_RANK, MODE_FAST,
                                   MODE_LOOP, MODE_SCORES, metric_value_grad, phi_all, pn_alpha,
                                   pn_hess, pn_rows, pn_sum, point_rows, rank_hess, rank_rows,
                                   rank_sum, risk_batch, sh_hess, sh_rows, sh_sum, ustat_batch)
from .losses import (AUC, AUC_ORDERED, HINGE, LOGISTIC, METRIC, POINT_LSQ, QHINGE, SQUARED, Loss,
                     get_loss)
from .validation import check_Xy

__all__ = ["ErmResult", "RiskEstimate", "auc", "auc_from_scores", "empirical_grad",
           "empirical_risk", "erm", "misclassification", "mse", "population_risk"]

_RANK_NEWTON_MAX = 3000  # ranking with > 2 labels: Newton needs n x n Hessian weights
_METHODS = {"auto": MODE_FAST, "fast": MODE_FAST, "scores": MODE_SCORES, "loop": MODE_LOOP}


# ---- data + loss "plan" ------------------------------------------------------------------------

@dataclass
class _Plan:
    """A validated data set with the bookkeeping of the kernels (see kernels/risk_kernels.py)."""

    loss: Loss
    X: np.ndarray
    y: np.ndarray
    kind: int
    idxP: np.ndarray
    idxN: np.ndarray
    s: float = 1.0
    mult: float = 1.0
    kconst: float = 0.0

    @property
    def n(self):
        return self.X.shape[0]

    @property
    def d(self):
        return self.X.shape[1]

    @property
    def p(self):
        return self.d * self.d if self.loss.matrix else self.d

    @property
    def norm(self):
        """The normaliser of F_S: n(n-1) ordered pairs, or n points."""
        return float(self.n) if self.kind == KIND_POINT else self.n * (self.n - 1.0)


def _as_loss(loss, q=None) -> Loss:
    return loss if isinstance(loss, Loss) else get_loss(loss, q)


def _plan(X, y, loss, q=None) -> _Plan:
    lossf = _as_loss(loss, q)
    X, y = check_Xy(X, y)
    if X.ndim != 2:
        raise ValueError(f"X must be one data set (n, d); got shape {X.shape}. For one data set per "
                         "replicate, call once per data set.")
    empty = np.zeros(0, dtype=np.int64)
    if not lossf.pairwise:
        return _Plan(lossf, X, y, KIND_POINT, empty, empty)
    if lossf.matrix:
        return _Plan(lossf, X, y, KIND_METRIC, empty, empty)
    labels = np.unique(y)
    if lossf.form in (AUC, AUC_ORDERED):
        if not np.all(np.isin(labels, (-1.0, 1.0))):
            raise ValueError(f"AUC losses need labels in {{-1, +1}}, got labels {labels[:5].tolist()}")
        idxP = np.flatnonzero(y == 1.0)
        idxN = np.flatnonzero(y == -1.0)
        return _Plan(lossf, X, y, KIND_PN, idxP, idxN, 1.0, 2.0 if lossf.form == AUC else 1.0, 0.0)
    # RANKING: margin (y - y') w.(x - x'); same-label pairs give phi(0)
    if labels.size > 2:
        return _Plan(lossf, X, y, KIND_RANK, empty, empty)
    hi, lo = labels[-1], labels[0]
    idxP = np.flatnonzero(y == hi)
    idxN = np.flatnonzero(y == lo) if labels.size == 2 else empty
    nP, nN = idxP.size, idxN.size
    phi0 = phi_all(lossf.phi, lossf.q, 0.0, 0.0)[0]
    return _Plan(lossf, X, y, KIND_PN, idxP, idxN, float(hi - lo), 2.0,
                 float(phi0 * (nP * (nP - 1.0) + nN * (nN - 1.0))))


def _param_array(W, p):
    """(..., p) float64 array from an ndarray / DataArray; returns (W2 (K, p), lead shape, wrap)."""
    wrap = None
    try:
        import xarray as xr
        if isinstance(W, xr.DataArray):
            dim = "param" if "param" in W.dims else W.dims[-1]
            W = W.transpose(..., dim)
            template = W.isel({dim: 0}, drop=True)

            def wrap(arr, long_name, units="1"):
                out = template.copy(data=arr)
                out.attrs = {"long_name": long_name, "units": units}
                return out.rename(long_name.split("(")[0].strip().replace(" ", "_") or None)
            W = W.values
    except ImportError:  # pragma: no cover
        pass
    W = np.asarray(W, dtype=np.float64)
    if W.ndim == 0 or W.shape[-1] != p:
        raise ValueError(f"parameters must have shape (..., {p}) (p = {'d*d' if p > 1 else 'd'}), "
                         f"got {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError("parameters contain NaN or inf")
    lead = W.shape[:-1]
    return np.ascontiguousarray(W.reshape(-1, p)), lead, wrap


def _finish(arr, lead, wrap, long_name):
    arr = arr.reshape(lead)
    if wrap is not None:
        return wrap(arr, long_name)
    return float(arr) if arr.ndim == 0 else arr


# ---- empirical risk ------------------------------------------------------------------------------

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
                tot, _ = pn_rows(self.phi, self.q, tau, ap, an, True, rowP, rowN, dP, dN)
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


# ---- population risk -----------------------------------------------------------------------------

@dataclass
class RiskEstimate:
    """A population risk F(w) estimate.

    ``value``, ``se``: arrays of shape W.shape[:-1] (floats for one w; DataArrays for DataArray
    input).  ``method``: ``"closed_form"`` (se = 0), ``"u_statistic"`` (pairwise Monte Carlo over
    all ordered pairs of an m-point test sample) or ``"sample_mean"`` (pointwise Monte Carlo).
    ``se_method`` says how the standard error was computed.
    """

    value: object
    se: object
    method: str
    m: int | None = None
    se_method: str = ""
    seed: int | None = None
    replicate: int | None = None
    stream: int | None = None
    note: str = ""

    def __iter__(self):  # value, se = population_risk(...)
        yield self.value
        yield self.se


_SE_U = ("Hoeffding decomposition: Var U = 4(m-2)/(m(m-1)) zeta_1 + 2/(m(m-1)) zeta_2, zeta_1 = "
         "sample variance of the per-point row means of the symmetrised kernel (slightly "
         "conservative), zeta_2 = variance of the kernel over the pairs")


def _closed_form(problem, lossf):
    if problem.risk(np.zeros(problem.d)) is None:
        return None, ""
    if lossf.name == problem.loss_name:
        return problem.risk, f"closed form of {problem.name!r} for {lossf.name}"
    if lossf.name == "auc_ordered_squared" and problem.loss_name == "auc_squared":
        # E I[y=1,y'=-1] phi(w.(x-x')) is half the symmetric AUC risk (exchangeability of z, z')
        return (lambda W: 0.5 * problem.risk(W)), \
            f"closed form of {problem.name!r}: half the symmetric auc_squared risk"
    return None, ""


def _default_m(lossf):
    if not lossf.pairwise:
        return 100_000
    return 1_000 if lossf.matrix else 5_000


def population_risk(W, problem, loss=None, *, m=None, seed=0, replicate=0, q=None,
                    method="auto", stream=rng.STREAM_SPLIT) -> RiskEstimate:
    """F(w) = E_{z,z'} f(w; z, z') (pairwise) or E_z f(w; z) for every w in W (..., p).

    problem : a ``stabsim.synthetic.Problem``, or a test sample ``(X_test, y_test)``.
    loss : the loss (default: ``problem.loss_name``).
    method : ``"auto"``: the closed form when the problem has one for this loss (``problem.risk``
        for ``problem.loss_name``; for ``auc_ordered_squared`` half the ``auc_squared`` form),
        otherwise Monte Carlo.  ``"closed_form"`` / ``"monte_carlo"`` force one.
    m, seed, replicate, stream : Monte Carlo test sample ``problem.sample(m, seed, replicate,
        stream=STREAM_SPLIT)``: a counter-based stream distinct from the training data
        (STREAM_DATA), so it is independent of any training set drawn from the same problem.
        Default m: 5000 (linear pairwise), 1000 (metric), 100000 (pointwise).

    Pairwise Monte Carlo is the U-statistic over all m(m-1) ordered test pairs, with the
    standard error from the Hoeffding decomposition (see ``RiskEstimate.se_method``);
    pointwise it is the sample mean with sd/sqrt(m).  Cost per w: O(m log m + m d) for the
    hinge and squared linear forms, O(m^2) scalar work for logistic / q-hinge, O(m^2 d^2) metric.

    Returns a ``RiskEstimate`` (unpacks as ``value, se``).
    """
    if method not in ("auto", "closed_form", "monte_carlo"):
        raise ValueError(f"method must be 'auto', 'closed_form' or 'monte_carlo', got {method!r}")
    is_sample = isinstance(problem, tuple)
    if loss is None:
        if is_sample:
            raise ValueError("give the loss when problem is a test sample (X, y)")
        loss = problem.loss_name
    lossf = _as_loss(loss, q)
    if not is_sample and method != "monte_carlo":
        fn, note = _closed_form(problem, lossf)
        if fn is not None:
            p = problem.d * problem.d if lossf.matrix else problem.d
            W2, lead, wrap = _param_array(W, p)
            val = np.asarray(fn(W2), dtype=float)
            return RiskEstimate(_finish(val, lead, wrap, "F(w)"),
                                _finish(np.zeros_like(val), lead, wrap, "se F(w)"),
                                "closed_form", None, "exact (closed form)", note=note)
        if method == "closed_form":
            raise ValueError(f"problem {problem.name!r} has no closed-form risk for loss "
                             f"{lossf.name!r} (it has one for {problem.loss_name!r})")
    if is_sample:
        Xt, yt = problem
        m_used, seed_used, rep_used, stream_used = len(Xt), None, None, None
    else:
        m_used = _default_m(lossf) if m is None else int(m)
        if m_used < 3:
            raise ValueError(f"test sample size m must be >= 3, got {m_used}")
        Xt, yt = problem.sample(m_used, seed, replicate, stream=stream)
        seed_used, rep_used, stream_used = int(seed), int(replicate), int(stream)
    pl = _plan(Xt, yt, lossf)
    if pl.n < 3:
        raise ValueError("the test sample needs at least 3 points")
    W2, lead, wrap = _param_array(W, pl.p)
    val = np.empty(W2.shape[0]); se = np.empty(W2.shape[0])
    lf = pl.loss
    ustat_batch(pl.kind, lf.form, lf.phi, float(lf.q), W2, pl.X, pl.y, pl.idxP, pl.idxN,
                pl.s, pl.mult, pl.kconst, val, se)
    pair = lossf.pairwise
    return RiskEstimate(_finish(val, lead, wrap, "F(w)"), _finish(se, lead, wrap, "se F(w)"),
                        "u_statistic" if pair else "sample_mean", m_used,
                        _SE_U if pair else "sample standard deviation / sqrt(m)",
                        seed_used, rep_used, stream_used,
                        note="test sample given by the caller" if is_sample else
                        f"fresh test sample: problem.sample(m={m_used}, seed={seed}, "
                        f"replicate={replicate}, stream={stream})")


# ---- metrics ----------------------------------------------------------------------------------

def _labels_pm1(y):
    y = np.asarray(y, dtype=float).ravel()
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError(f"labels must be in {{-1, +1}}, got {np.unique(y)[:5].tolist()}")
    return y


def auc_from_scores(scores, y):
    """Empirical AUC of scores (..., n) against labels y in {-1, +1}: the Mann–Whitney statistic
    P(score_+ > score_-) + P(tie)/2 over all positive/negative pairs, from average ranks
    (scipy.stats.rankdata), O(n log n)."""
    y = _labels_pm1(y)
    scores = np.asarray(scores, dtype=float)
    if scores.shape[-1] != y.size:
        raise ValueError(f"scores have {scores.shape[-1]} entries per row but y has {y.size}")
    pos = y == 1.0
    nP, nN = int(pos.sum()), int((~pos).sum())
    if nP == 0 or nN == 0:
        raise ValueError("AUC needs at least one positive and one negative example")
    ranks = scipy.stats.rankdata(scores, axis=-1)
    rs = ranks[..., pos].sum(axis=-1)
    out = (rs - nP * (nP + 1) / 2.0) / (nP * nN)
    return float(out) if np.ndim(out) == 0 else out


def auc(w, X, y):
    """Empirical AUC of the scores X w (w of shape (..., d)); ties count 1/2."""
    W2, lead, wrap = _param_array(w, np.asarray(X).shape[1])
    out = np.atleast_1d(auc_from_scores(W2 @ np.asarray(X, float).T, y))
    return _finish(out, lead, wrap, "AUC")


def misclassification(w, X, y):
    """Misclassification rate (1/n) sum_i I[y_i x_i.w <= 0] (a zero score counts as an error)."""
    y = _labels_pm1(y)
    W2, lead, wrap = _param_array(w, np.asarray(X).shape[1])
    out = ((W2 @ np.asarray(X, float).T) * y <= 0).mean(axis=-1)
    return _finish(out, lead, wrap, "misclassification rate")


def mse(w, X, y):
    """Mean squared error (1/n) sum_i (x_i.w - y_i)^2 (= 2 F_S for ``point_lsq``)."""
    y = np.asarray(y, dtype=float).ravel()
    W2, lead, wrap = _param_array(w, np.asarray(X).shape[1])
    out = ((W2 @ np.asarray(X, float).T - y) ** 2).mean(axis=-1)
    return _finish(out, lead, wrap, "mean squared error")


# ---- ERM with a certificate ------------------------------------------------------------------------

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


def _exact_dot(ints, xs):
    """sum_k ints_k * xs_k exactly (Python integers and the floats' dyadic values), as a Fraction."""
    terms = [(int(a),) + float(x).as_integer_ratio() for a, x in zip(ints, xs) if a and x]
    if not terms:
        return Fraction(0)
    L = max(den.bit_length() - 1 for _, _, den in terms)
    return Fraction(sum((a * num) << (L - den.bit_length() + 1) for a, num, den in terms), 1 << L)


def _exact_hinge_lb(obj, w, tau, bits=40, ncand=2000):
    """Unconstrained hinge (reg = 0): min F_S >= K0 + c sum_k alpha_k for every alpha in [0, 1]
    with sum_k alpha_k u_k = 0 exactly (weak duality; u_k = x_i - x_j, or y_i x_i pointwise).

    alpha = -phi_tau'(margins at w) (the smoothed dual weights) is rounded to multiples of
    2^-bits (integers A_k); the residual Z = sum_k A_k u_k is removed (1) in floating point by a
    room-weighted least-norm correction spread over the ``ncand`` most interior alphas, rounded
    back to integers, and (2) exactly, by solving for d of them in rational arithmetic.  If every
    corrected alpha stays in [0, 1] the bound is computed exactly and rounded down; else -inf.
    """
    pl = obj.pl
    one = 1 << bits
    if pl.kind == KIND_PN:
        ap, an = obj._block(w)
        if ap.size == 0 or an.size == 0:
            return math.nextafter(obj.K0, -math.inf)
        Af = np.empty((ap.size, an.size))
        pn_alpha(tau, ap, an, Af)
        A = np.rint(Af * float(one)).astype(np.int64)
        XP, XN = obj.XP, obj.XN
        room = np.minimum(A, one - A).ravel()
        cand = np.argsort(room)[::-1][:ncand]
        cand = cand[room[cand] > 0]
        ci, cj = cand // an.size, cand % an.size
        U = (XP[ci] - XN[cj]).T

        def resid(Acur):
            rP, rN = Acur.sum(axis=1), Acur.sum(axis=0)
            return [_exact_dot(rP, XP[:, c]) - _exact_dot(rN, XN[:, c]) for c in range(pl.d)]

        def col(k, c):
            return Fraction(float(XP[ci[k], c])) - Fraction(float(XN[cj[k], c]))
        cw = Fraction(pl.mult) / Fraction(pl.n * (pl.n - 1))
        K0 = Fraction(pl.kconst) / Fraction(pl.n * (pl.n - 1))
        flatA = A.reshape(-1)
    elif pl.kind == KIND_POINT and obj.form != POINT_LSQ and np.all(np.abs(pl.y) == 1.0):
        a = pl.X @ w
        v = np.empty(pl.n); d1 = np.empty(pl.n); d2 = np.empty(pl.n)
        point_rows(obj.form, obj.phi, obj.q, tau, a, pl.y, v, d1, d2)
        A = np.rint(np.clip(-d1 * pl.y, 0.0, 1.0) * float(one)).astype(np.int64)
        Yx = pl.X * pl.y[:, None]
        room = np.minimum(A, one - A)
        cand = np.argsort(room)[::-1][:ncand]
        cand = cand[room[cand] > 0]
        U = Yx[cand].T

        def resid(Acur):
            return [_exact_dot(Acur, Yx[:, c]) for c in range(pl.d)]

        def col(k, c):
            return Fraction(float(pl.y[cand[k]])) * Fraction(float(pl.X[cand[k], c]))
        cw = Fraction(1, pl.n)
        K0 = Fraction(0)
        flatA = A
    else:
        return -math.inf
    Z = resid(A)
    if any(Z):
        if cand.size == 0:
            return -math.inf
        # (1) floating-point least-norm correction weighted by the room of each alpha
        Zf = np.array([float(z) for z in Z])
        r = room[cand].astype(float)
        G = (U * r) @ U.T
        try:
            lam = np.linalg.lstsq(G, -Zf, rcond=None)[0]
        except np.linalg.LinAlgError:
            return -math.inf
        delta = np.rint(r * (U.T @ lam))
        over = np.max(np.abs(delta) / r)
        if over > 0.5:
            delta = np.rint(delta * (0.5 / over))
        flatA[cand] += delta.astype(np.int64)
        Z = resid(A)
    if any(Z):
        # (2) exact: d independent candidate columns absorb the rest
        top = np.argsort(np.minimum(flatA[cand], one - flatA[cand]))[::-1][: 20 * pl.d]
        _, Rq, piv = scipy.linalg.qr(np.ascontiguousarray(U[:, top]), pivoting=True, mode="economic")
        dg = np.abs(np.diag(Rq))
        rank = int(np.sum(dg > 1e-12 * max(dg.max(initial=0.0), 1e-300)))
        sel = [int(top[k]) for k in piv[:rank]]
        Mx = [[col(k, c) for k in sel] for c in range(pl.d)]
        sol = _exact_solve(Mx, [-z for z in Z])
        if sol is None:
            return -math.inf
        for k, dk in zip(sel, sol):
            newv = flatA[cand[k]] + dk
            if newv < 0 or newv > one:
                return -math.inf
        extra = sum(sol, Fraction(0))
    else:
        extra = Fraction(0)
    lb = K0 + cw * (Fraction(int(A.sum())) + extra) / one
    return math.nextafter(float(lb), -math.inf)


def _exact_solve(A, b):
    """A solution x of A x = b (lists of Fractions, A: rows x cols) by Gauss–Jordan elimination,
    free variables 0; None if inconsistent."""
    rows, ncols = len(A), len(A[0]) if A else 0
    M = [list(A[i]) + [b[i]] for i in range(rows)]
    piv_cols = []
    r = 0
    for c in range(ncols):
        pr = next((i for i in range(r, rows) if M[i][c] != 0), None)
        if pr is None:
            continue
        M[r], M[pr] = M[pr], M[r]
        inv = 1 / M[r][c]
        M[r] = [x * inv for x in M[r]]
        for i in range(rows):
            if i != r and M[i][c] != 0:
                f = M[i][c]
                M[i] = [xi - f * xr for xi, xr in zip(M[i], M[r])]
        piv_cols.append(c)
        r += 1
        if r == rows:
            break
    for i in range(r, rows):
        if M[i][ncols] != 0:
            return None
    x = [Fraction(0)] * ncols
    for i, c in enumerate(piv_cols):
        x[c] = M[i][ncols]
    return x


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
