"""Monte-Carlo estimates of P0's Rademacher averages R_t (P0 Eq. (4), Lemmas 4 / 5).

P0 Eq. (4) (errata P0-B):

    R_t(l o W) = (1/n) sum_{i=1}^n E[ sup_{w in W} (1/t) sum_{k=1}^t sigma_k l(w, z_i, z_{i_k}) ],

the expectation over the indices i_1..i_t (uniform on [n], with replacement, as drawn by P0
Alg. 1) and the Rademacher signs sigma_k.  One Monte-Carlo *sample* draws the anchor i
(uniform, which gives the (1/n) sum_i), the t indices and the t signs, and computes the
supremum; the estimate is the mean of the samples and its standard error sd/sqrt(B).  The
sample is conditional on S (the empirical Rademacher average); averaging over data sets
drawn from the problem gives the expectation over S as well.

Classes (``cls``), with W a ball of radius ``radius`` (a *radius*, not P0 Thm 2's diameter):

``linear``     H of Lemma 4: h_w(x, x') = w^T (x - x'), ||w||_2 <= r.  Closed form
               sup = (r/t) ||sum_k sigma_k (x_i - x_{i_k})||_2 (Cauchy-Schwarz, attained).
``nuclear``    H of Lemma 5: h_W(x, x') = (x - x')^T W (x - x'), ||W||_{S_1} <= r.  Closed form
               sup = (r/t) ||sum_k sigma_k D_k D_k^T||_{S_inf}, D_k = x_i - x_{i_k} (the
               spectral norm is the dual of the nuclear norm; attained at a rank-one W).
``auc_hinge``  l o H for the AUC hinge loss as stabsim implements it (``losses.auc_hinge``):
               l(w, z, z') = I[y != y'] (1 - s w^T (x - x'))_+, s = (y - y')/2.  No closed form:
               ``method="exact2d"`` (d = 2 only) enumerates every candidate maximiser of the
               piecewise-linear objective over the disc (vertices of the line arrangement,
               line/circle intersections, stationary points on circle arcs), O(t^3);
               ``method="ascent"`` (any d) takes the best of projected subgradient ascents
               from 7 starts: a LOWER estimate of the supremum (so of R_t).  Plugged into an
               upper bound a lower estimate makes the bound smaller, which keeps a "holds"
               verdict valid for the true R_t.

Averages over t (P0 Thm 2, 3, 5, A.8 use rad_avg = (1/T) sum_{t=1}^T R_t): ``rademacher_avg``
draws t uniform on {1..T} in every sample, an unbiased estimate of the average, with a
t-dependent radius r_t = r0 * t^power allowed (Thm 3's W_t = {||w||^2 <= (G^2 + 2M) eta t}).

Random numbers: stream ``STREAM_RADEMACHER`` of ``stabsim.engine.rng`` keyed by (seed, replicate);
sample s uses its own sub-key, so results do not depend on the thread count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import prange
from stabsim.compile.jit import njit

from stabsim.engine import rng

__all__ = ["CLASSES", "STREAM_RADEMACHER", "RademacherEstimate", "rademacher", "rademacher_avg",
           "sup_value", "exact_sup_auc_hinge_2d"]

#: random stream of this module (rng.py uses 1..7, kernels/giga 8, privacy/algorithms 10)
STREAM_RADEMACHER = 11
CLASSES = {"linear": 0, "auc_hinge": 1, "nuclear": 2}
_METHODS = {"closed_form": 0, "exact2d": 1, "ascent": 2}
_SUB = np.uint64(0xD1B54A32D192ED03)


# ---------------------------------------------------------------------------------------------
# suprema for one draw
# ---------------------------------------------------------------------------------------------

@njit(cache=True)
def _hinge_value(w, U, a, t):
    """(1/t) sum_k a_k (1 - w.U_k)_+  (a_k = sigma_k c_k)."""
    s = 0.0
    for k in range(U.shape[0]):
        if a[k] != 0.0:
            m = 1.0
            for j in range(U.shape[1]):
                m -= w[j] * U[k, j]
            if m > 0.0:
                s += a[k] * m
    return s / t


@njit(cache=True)
def _hinge_exact_2d(U, a, t, r):
    """Exact sup over ||w|| <= r of (1/t) sum_k a_k (1 - w.U_k)_+ in d = 2 (see module doc)."""
    K = U.shape[0]
    best = _hinge_value(np.zeros(2), U, a, t)
    w = np.zeros(2)
    lines = np.empty(K, dtype=np.int64)
    nl = 0
    for k in range(K):
        if a[k] != 0.0 and (U[k, 0] != 0.0 or U[k, 1] != 0.0):
            lines[nl] = k
            nl += 1
    # (a) vertices of the arrangement inside the disc
    for p in range(nl):
        k = lines[p]
        for q in range(p + 1, nl):
            l = lines[q]
            det = U[k, 0] * U[l, 1] - U[k, 1] * U[l, 0]
            if abs(det) < 1e-14:
                continue
            w[0] = (U[l, 1] - U[k, 1]) / det
            w[1] = (U[k, 0] - U[l, 0]) / det
            if w[0] * w[0] + w[1] * w[1] <= r * r:
                v = _hinge_value(w, U, a, t)
                if v > best:
                    best = v
    # (b) line / circle intersections, their angles
    angles = np.empty(2 * nl + 1)
    na = 0
    for p in range(nl):
        k = lines[p]
        nu = math.sqrt(U[k, 0] ** 2 + U[k, 1] ** 2)
        h = 1.0 / nu
        if h > r:
            continue
        c = math.sqrt(max(r * r - h * h, 0.0))
        ux, uy = U[k, 0] / nu, U[k, 1] / nu
        for sgn in (-1.0, 1.0):
            w[0] = h * ux - sgn * c * uy
            w[1] = h * uy + sgn * c * ux
            v = _hinge_value(w, U, a, t)
            if v > best:
                best = v
            angles[na] = math.atan2(w[1], w[0])
            na += 1
    # (c) stationary points of the linear piece on each arc between consecutive angles
    if na == 0:
        angles[0] = -math.pi
        na = 1
    srt = np.sort(angles[:na])
    for p in range(na):
        lo = srt[p]
        hi = srt[p + 1] if p + 1 < na else srt[0] + 2.0 * math.pi
        mid = 0.5 * (lo + hi)
        wx, wy = r * math.cos(mid), r * math.sin(mid)
        gx, gy = 0.0, 0.0
        for k in range(K):
            if a[k] != 0.0 and wx * U[k, 0] + wy * U[k, 1] < 1.0:
                gx -= a[k] * U[k, 0]
                gy -= a[k] * U[k, 1]
        if gx == 0.0 and gy == 0.0:
            continue
        th = math.atan2(gy, gx)
        while th < lo:
            th += 2.0 * math.pi
        while th > lo + 2.0 * math.pi:
            th -= 2.0 * math.pi
        if th <= hi:
            w[0], w[1] = r * math.cos(th), r * math.sin(th)
            v = _hinge_value(w, U, a, t)
            if v > best:
                best = v
    return best


@njit(cache=True)
def _project_ball(w, r):
    s = 0.0
    for j in range(w.shape[0]):
        s += w[j] * w[j]
    s = math.sqrt(s)
    if s > r:
        for j in range(w.shape[0]):
            w[j] *= r / s


@njit(cache=True)
def _hinge_ascent(U, a, t, r, key, iters):
    """Best value of projected subgradient ascents from 7 starts: a lower estimate of the sup."""
    K, d = U.shape
    g = np.zeros(d)
    glin = np.zeros(d)
    for k in range(K):
        for j in range(d):
            glin[j] -= a[k] * U[k, j]
    nrm = 0.0
    for j in range(d):
        nrm += glin[j] * glin[j]
    nrm = math.sqrt(nrm)
    w = np.zeros(d)
    best = _hinge_value(w, U, a, t)
    cnt = 0
    for start in range(7):
        if start == 0:
            w[:] = 0.0
        elif start <= 2:
            if nrm == 0.0:
                continue
            sgn = 1.0 if start == 1 else -1.0
            for j in range(d):
                w[j] = sgn * r * glin[j] / nrm
        else:
            s = 0.0
            for j in range(d):
                w[j] = rng.normal(key, cnt)
                cnt += 1
                s += w[j] * w[j]
            s = math.sqrt(s)
            for j in range(d):
                w[j] *= r / s
        for it in range(iters):
            v = 0.0
            g[:] = 0.0
            for k in range(K):
                if a[k] == 0.0:
                    continue
                m = 1.0
                for j in range(d):
                    m -= w[j] * U[k, j]
                if m > 0.0:
                    v += a[k] * m
                    for j in range(d):
                        g[j] -= a[k] * U[k, j]
            v /= t
            if v > best:
                best = v
            gn = 0.0
            for j in range(d):
                gn += g[j] * g[j]
            gn = math.sqrt(gn)
            if gn == 0.0:
                break
            step = r / math.sqrt(it + 1.0)
            for j in range(d):
                w[j] += step * g[j] / gn
            _project_ball(w, r)
        v = _hinge_value(w, U, a, t)
        if v > best:
            best = v
    return best


@njit(cache=True)
def _sup_one(cls, method, X, y, i, idx, sig, r, key, iters):
    """The supremum for one draw (anchor i, indices idx[:t], signs sig[:t])."""
    t = idx.shape[0]
    d = X.shape[1]
    if cls == 0:  # linear: (r/t) ||sum sigma_k (x_i - x_k)||
        v = np.zeros(d)
        for k in range(t):
            for j in range(d):
                v[j] += sig[k] * (X[i, j] - X[idx[k], j])
        nv = 0.0
        for j in range(d):
            nv += v[j] * v[j]
        return r * math.sqrt(nv) / t
    if cls == 2:  # nuclear: (r/t) ||sum sigma_k D_k D_k^T||_op
        A = np.zeros((d, d))
        for k in range(t):
            for p in range(d):
                dp = X[i, p] - X[idx[k], p]
                for q in range(d):
                    A[p, q] += sig[k] * dp * (X[i, q] - X[idx[k], q])
        ev = np.linalg.eigvalsh(A)
        return r * max(abs(ev[0]), abs(ev[-1])) / t
    # auc hinge: a_k = sigma_k I[y_i != y_k], U_k = s_k (x_i - x_k), s_k = (y_i - y_k)/2
    U = np.zeros((t, d))
    a = np.zeros(t)
    for k in range(t):
        s = 0.5 * (y[i] - y[idx[k]])
        if s != 0.0:
            a[k] = sig[k]
            for j in range(d):
                U[k, j] = s * (X[i, j] - X[idx[k], j])
    if method == 1:
        return _hinge_exact_2d(U, a, t, r)
    return _hinge_ascent(U, a, t, r, key, iters)


@njit(cache=True)
def _sample_key(key, s):
    return rng.mix64(key + (np.uint64(s) + np.uint64(1)) * _SUB)


@njit(cache=True, parallel=True)
def _mc_kernel(cls, method, X, y, key, ts, radii, iters, out):
    """out[s] = sup for sample s with t = ts[s], radius radii[s] (one sub-key per sample)."""
    n = X.shape[0]
    for s in prange(ts.shape[0]):
        ks = _sample_key(key, s)
        t = ts[s]
        i = rng.randint(ks, 0, n)
        idx = np.empty(t, dtype=np.int64)
        sig = np.empty(t)
        for k in range(t):
            idx[k] = rng.randint(ks, 1 + k, n)
            sig[k] = 1.0 if rng.uniform(ks, 1 + t + k) < 0.5 else -1.0
        out[s] = _sup_one(cls, method, X, y, i, idx, sig, radii[s], rng.mix64(ks ^ _SUB), iters)


# ---------------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------------

@dataclass
class RademacherEstimate:
    """Monte-Carlo estimate: ``value`` (mean of the sample suprema), ``se`` (sd/sqrt(B)),
    ``samples`` (the B suprema), ``cls``, ``method``, ``lower_estimate`` (True for the
    ascent method: the suprema are lower estimates)."""

    value: float
    se: float
    samples: np.ndarray
    cls: str
    method: str
    lower_estimate: bool


def _check(X, y, cls, method, radius):
    if cls not in CLASSES:
        raise ValueError(f"cls={cls!r} is not a Rademacher class; allowed: {', '.join(CLASSES)}")
    X = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
    if X.ndim != 2 or X.shape[0] < 1:
        raise ValueError(f"X must be a 2-D array (n, d) with n >= 1, got shape {X.shape}")
    y = np.ascontiguousarray(np.asarray(y, dtype=np.float64).ravel())
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y has {y.shape[0]} entries, X has {X.shape[0]} rows")
    if method is None:
        method = "closed_form" if cls != "auc_hinge" else ("exact2d" if X.shape[1] == 2 else "ascent")
    if method not in _METHODS:
        raise ValueError(f"method={method!r} is not allowed; use one of {', '.join(_METHODS)}")
    if cls == "auc_hinge":
        if method == "closed_form":
            raise ValueError("the auc_hinge class has no closed form: use method 'exact2d' (d = 2) or 'ascent'")
        if method == "exact2d" and X.shape[1] != 2:
            raise ValueError(f"method 'exact2d' needs d = 2, got d = {X.shape[1]}; use 'ascent'")
        if not np.all(np.isin(y, (-1.0, 1.0))):
            raise ValueError("the auc_hinge class needs labels in {-1, +1}")
    elif method != "closed_form":
        raise ValueError(f"class {cls!r} has a closed form: method must be 'closed_form', got {method!r}")
    if not (np.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be a finite number > 0, got {radius!r}")
    return X, y, method


def _estimate(X, y, cls, method, ts, radii, seed, replicate, iters):
    key = rng.key(seed, replicate, STREAM_RADEMACHER)
    out = np.empty(ts.shape[0])
    _mc_kernel(CLASSES[cls], _METHODS[method], X, y, key, ts, radii, int(iters), out)
    B = out.shape[0]
    se = float(out.std(ddof=1) / math.sqrt(B)) if B > 1 else math.inf
    return RademacherEstimate(float(out.mean()), se, out, cls, method, method == "ascent")


def sup_value(X, y, cls, i, idx, sig, radius, method=None, iters=60, seed=0):
    """The supremum for one given draw (anchor ``i``, indices ``idx``, signs ``sig``): for tests
    and for reading a single term of Eq. (4)."""
    X, y, method = _check(X, y, cls, method, float(radius))
    idx = np.ascontiguousarray(np.asarray(idx, dtype=np.int64))
    sig = np.ascontiguousarray(np.asarray(sig, dtype=np.float64))
    if idx.shape != sig.shape or idx.ndim != 1 or idx.size < 1:
        raise ValueError("idx and sig must be 1-D arrays of the same length t >= 1")
    if np.any((idx < 0) | (idx >= X.shape[0])) or not (0 <= int(i) < X.shape[0]):
        raise ValueError(f"indices must lie in [0, n) = [0, {X.shape[0]})")
    return float(_sup_one(CLASSES[cls], _METHODS[method], X, y, int(i), idx, sig, float(radius),
                          rng.key(seed, 0, STREAM_RADEMACHER), int(iters)))


def exact_sup_auc_hinge_2d(U, a, t, radius):
    """sup_{||w|| <= radius} (1/t) sum_k a_k (1 - w.U_k)_+ for U of shape (K, 2) (exact)."""
    U = np.ascontiguousarray(np.asarray(U, dtype=np.float64))
    a = np.ascontiguousarray(np.asarray(a, dtype=np.float64))
    if U.ndim != 2 or U.shape[1] != 2 or a.shape != (U.shape[0],):
        raise ValueError("U must have shape (K, 2) and a shape (K,)")
    return float(_hinge_exact_2d(U, a, float(t), float(radius)))


def rademacher(X, y, cls, t, radius, *, samples=200, seed=0, replicate=0, method=None, iters=60):
    """Monte-Carlo estimate of R_t (P0 Eq. (4)) for the class ``cls`` on S = (X, y), W = ball of
    ``radius``: ``samples`` draws of (anchor, t indices, t signs).  Returns a RademacherEstimate."""
    X, y, method = _check(X, y, cls, method, float(radius))
    t, samples = int(t), int(samples)
    if t < 1 or samples < 2:
        raise ValueError(f"need t >= 1 and samples >= 2, got t={t}, samples={samples}")
    ts = np.full(samples, t, dtype=np.int64)
    radii = np.full(samples, float(radius))
    return _estimate(X, y, cls, method, ts, radii, seed, replicate, iters)


def rademacher_avg(X, y, cls, T, radius, *, power=0.0, samples=200, seed=0, replicate=0, method=None,
                   iters=60):
    """Monte-Carlo estimate of (1/T) sum_{t=1}^T R_t(l o W_t), W_t = ball of radius
    ``radius * t**power`` (power = 0: a fixed ball; 0.5: P0 Thm 3's W_t).  Each sample draws
    t uniformly from {1..T} (counter 2T+2 of the sample's stream), so the mean is unbiased."""
    X, y, method = _check(X, y, cls, method, float(radius))
    T, samples = int(T), int(samples)
    if T < 1 or samples < 2:
        raise ValueError(f"need T >= 1 and samples >= 2, got T={T}, samples={samples}")
    key = rng.key(seed, replicate, STREAM_RADEMACHER + 100)
    u = np.empty(samples)
    rng.fill_uniform(key, np.int64(0), u)
    ts = np.minimum((u * T).astype(np.int64) + 1, T)
    radii = float(radius) * ts.astype(float) ** float(power)
    return _estimate(X, y, cls, method, ts, radii, seed, replicate, iters)
