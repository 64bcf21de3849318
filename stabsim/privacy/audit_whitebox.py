"""White-box ("every iterate") audit statistic: the exact likelihood ratio of a noisy gradient path.

Threat model
------------
The gradient-perturbation algorithms (P2 Alg. 1, P4 Algs. 1/2) are DP because every step is a
Gaussian mechanism, and their accountants compose *all* T steps: the guarantee covers releasing
every iterate w_1..w_T, not only the final output.  The strongest adversary the accountant
allows therefore sees the whole unprojected path, knows S and S' (they differ in example k) and
the initial point w_0, but not the secret sampled indices nor the noise.  From consecutive
iterates it reads the noisy step direction

    r_t = (w_{t-1} - w_t) / eta = g_t(w_{t-1}) + b_t,      b_t ~ N(0, sigma^2 I),

where g_t is the gradient of the step's (secret) sample: one uniform point (P4 Alg. 1), one
uniform ordered pair i != j (P4 Alg. 2), or the average over all ordered pairs (P2 Alg. 1).
Given w_{t-1}, r_t is a Gaussian *mixture* over the possible samples, with known components, so
the path's log-likelihood ratio of S' against S is a sum over steps (the path is Markov):

    Lambda = sum_t [ log sum_j p'_j phi_sigma(r_t - g'_j(w_{t-1}))
                     - log sum_j p_j phi_sigma(r_t - g_j(w_{t-1})) ]

(p_j: the probability of sample j; full batch: one component, the mean gradient).  By
Neyman-Pearson this is the most powerful statistic for telling S from S' from the path: an audit
with it attains the mechanism's true trade-off curve, up to sampling error.  For P2 the path is
a composition of Gaussian mechanisms, so Lambda is exactly N(-mu^2/2, mu^2) on S and
N(+mu^2/2, mu^2) on S' with mu^2 = sum_t ||a_t||^2 / sigma^2, a_t = grad F_S'(w_{t-1}) -
grad F_S(w_{t-1}): the mechanism is exactly mu-GDP and the GDP estimator of
:mod:`stabsim.privacy.audit_gdp` is exact for it.

Samples are grouped by distinct examples (``_terms``): data sets made of a few repeated points
(the audit designs of :mod:`stabsim.privacy.audit_designs`) cost O(#distinct^2) per step, not
O(n^2).  A projection onto a constraint set makes the step non-Gaussian, so this statistic
refuses projected runs (constraint must be "none").
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange
from stabsim.compile.jit import njit

from stabsim.engine.losses import pair_loss_grad, point_loss_grad

__all__ = ["terms", "path_log_lr"]


def _distinct(X, y):
    """Distinct rows (x, y) of a data set: (points, labels, counts)."""
    Z = np.column_stack([X, y])
    uniq, counts = np.unique(Z, axis=0, return_counts=True)
    return uniq[:, :-1].copy(), uniq[:, -1].copy(), counts.astype(float)


def terms(X, y, pairwise):
    """The sample distribution of one step on data (X, y), grouped by distinct examples.

    Returns (P, Py, idx, prob): points P (m, d) with labels Py, the step's possible samples as
    rows of ``idx`` (pointwise: (a, -1); pairwise: the ordered pair (a, b) of distinct examples'
    types) and their probabilities ``prob`` (a uniform point, or a uniform ordered pair i != j).
    """
    P, Py, c = _distinct(np.asarray(X, float), np.asarray(y, float))
    n = c.sum()
    if not pairwise:
        idx = np.column_stack([np.arange(len(c)), -np.ones(len(c), dtype=np.int64)]).astype(np.int64)
        return P, Py, idx, c / n
    rows, prob = [], []
    for a in range(len(c)):
        for b in range(len(c)):
            mult = c[a] * (c[b] - (1.0 if a == b else 0.0))
            if mult > 0:
                rows.append((a, b))
                prob.append(mult / (n * (n - 1.0)))
    return P, Py, np.asarray(rows, dtype=np.int64), np.asarray(prob)


@njit(cache=True)
def _mixture_logpdf(form, phi, q, w, P, Py, idx, logp, full_batch, r, inv2s2, g, dx, gm):
    """log of sum_j p_j exp(-||r - g_j(w)||^2 / (2 sigma^2)) (full batch: the mean gradient's
    single component), up to the Gaussian normalising constant, which cancels in the ratio."""
    p = w.shape[0]
    m = idx.shape[0]
    if full_batch:
        for c in range(p):
            gm[c] = 0.0
    best = -np.inf
    for j in range(m):
        for c in range(p):
            g[c] = 0.0
        if idx[j, 1] < 0:
            point_loss_grad(form, phi, q, w, P, idx[j, 0], Py[idx[j, 0]], 1.0, g)
        else:
            pair_loss_grad(form, phi, q, w, P, idx[j, 0], Py[idx[j, 0]], idx[j, 1], Py[idx[j, 1]], 1.0, g, dx)
        if full_batch:
            pj = math.exp(logp[j])
            for c in range(p):
                gm[c] += pj * g[c]
        else:
            s = 0.0
            for c in range(p):
                e = r[c] - g[c]
                s += e * e
            gm[j] = logp[j] - s * inv2s2     # gm doubles as the component workspace
            if gm[j] > best:
                best = gm[j]
    if full_batch:
        s = 0.0
        for c in range(p):
            e = r[c] - gm[c]
            s += e * e
        return -s * inv2s2
    tot = 0.0
    for j in range(m):
        tot += math.exp(gm[j] - best)
    return best + math.log(tot)


@njit(cache=True, parallel=True)
def _path_log_lr(W, w0, eta, sigma, form, phi, q, P, Py, idx0, lp0, idx1, lp1, full_batch, out):
    R, T, p = W.shape
    inv2s2 = 1.0 / (2.0 * sigma * sigma)
    ws = max(idx0.shape[0], idx1.shape[0], p)
    for rr in prange(R):
        r = np.empty(p)
        g = np.empty(p)
        dx = np.empty(P.shape[1])
        gm = np.empty(ws)
        prev = np.empty(p)
        for c in range(p):
            prev[c] = w0[c]
        tot = 0.0
        for t in range(T):
            for c in range(p):
                r[c] = (prev[c] - W[rr, t, c]) / eta
            l1 = _mixture_logpdf(form, phi, q, prev, P, Py, idx1, lp1, full_batch, r, inv2s2, g, dx, gm)
            l0 = _mixture_logpdf(form, phi, q, prev, P, Py, idx0, lp0, full_batch, r, inv2s2, g, dx, gm)
            tot += l1 - l0
            for c in range(p):
                prev[c] = W[rr, t, c]
        out[rr] = tot


def path_log_lr(W, w0, *, eta, sigma, lossf, X, y, X1, y1, full_batch):
    """Lambda (module docstring) for each path W[r] = (w_1, .., w_T) (shape (R, T, p)).

    ``X, y``: S; ``X1, y1``: S'; ``w0`` the shared initial point; ``eta`` a constant step;
    ``sigma`` the gradient-noise standard deviation actually used; ``full_batch``: P2's step.
    """
    W = np.ascontiguousarray(W, dtype=float)
    if W.ndim != 3:
        raise ValueError(f"W must be (replicates, T, p), got shape {W.shape}")
    if not (eta > 0 and sigma > 0):
        raise ValueError(f"eta and sigma must be > 0 for a path likelihood ratio, got {eta!r}, {sigma!r}")
    pairwise = lossf.pairwise
    P0, Py0, i0, p0 = terms(X, y, pairwise)
    P1, Py1, i1, p1 = terms(X1, y1, pairwise)
    # one point table for both data sets: offset S' rows
    P = np.vstack([P0, P1])
    Py = np.concatenate([Py0, Py1])
    off = len(Py0)
    i1 = np.where(i1 >= 0, i1 + off, i1)
    out = np.empty(W.shape[0])
    _path_log_lr(W, np.ascontiguousarray(w0, dtype=float), float(eta), float(sigma), lossf.form,
                 lossf.phi, float(lossf.q), P, Py, i0, np.log(p0), i1.astype(np.int64), np.log(p1),
                 bool(full_batch), out)
    return out
