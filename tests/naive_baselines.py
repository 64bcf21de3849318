"""Slow, readable references of the P1 Sec. 6 comparison methods (stabsim.kernels.baselines).

Each function runs ONE method on ONE training set, written from its source paper in plain
Python/NumPy (lists for buffers, vector arithmetic, a fresh array per step).  The random
draws are made with the same ``stabsim.engine.rng`` calls (stream and counter) the kernels use, so
the test can demand agreement to 1e-12.  Losses and projections are re-implemented here from
their definitions (``naive.pair_loss`` and ``naive.project``), not taken from stabsim.

Every function returns (list of iterates w_0..w_T, output after T steps).
"""

from __future__ import annotations

import numpy as np

import naive
from stabsim.engine import rng

STREAM_RESERVOIR = 101   # the kernels' reservoir stream id (stabsim.kernels.baselines)


def _keys(seed, replicate):
    return rng.key(seed, replicate, rng.STREAM_INDEX), rng.key(seed, replicate, STREAM_RESERVOIR)


def _grad(w, X, y, a, b, loss="auc_hinge"):
    return naive.pair_loss(loss, w, X[a], y[a], X[b], y[b])[1]


def _proj(w, radius):
    return naive.project(w, ("l2", radius))


def p1_alg1(X, y, eta, T, radius, seed, replicate):
    """P1 Alg. 1 with i_t = randint(ki, t, n), t = 0..T; output mean_{j=1..T} w_{j-2}, w_{-1} = w_0."""
    ki, _ = _keys(seed, replicate)
    n = len(y)
    idx = [naive.index(ki, t, n) for t in range(T + 1)]
    etas = np.full(T + 1, float(eta))
    _, out, ws = naive.p1_alg1(X, y, "auc_hinge", ("l2", radius), etas, idx, np.zeros(X.shape[1]))
    return ws, out


def sgd_pair(X, y, eta, T, radius, seed, replicate):
    """SGD_pair: (i, j) = pair_ij(ki, t, n); output (1/T) sum of the pre-step iterates w_0..w_{T-1}."""
    ki, _ = _keys(seed, replicate)
    n = len(y)
    ws = [np.zeros(X.shape[1])]
    for t in range(1, T + 1):
        i, j = (int(v) for v in rng.pair_ij(ki, t, n))
        ws.append(_proj(ws[-1] - eta * _grad(ws[-1], X, y, i, j), radius))
    return ws, sum(ws[:T]) / T


def rs_x(buf, new, s, t, kr):
    """RS-x (Kar et al. 2013, Alg. 2): returns the buffer after seeing the t-th point ``new``."""
    if len(buf) < s:
        return buf + [new]
    if t == s + 1:   # repopulation: s draws with replacement from B u {z_t}
        pool = buf + [new]
        return [pool[naive.index(kr, t * s + c, s + 1)] for c in range(s)]
    return [new if rng.uniform(kr, t * s + c) < 1.0 / t else b for c, b in enumerate(buf)]


def reservoir(buf, new, N, k, t, kr):
    """Vitter's Algorithm R as OAM uses it: the k-th point of the class (seen at step t) is
    appended while k <= N, later it replaces a uniform slot with probability N / k."""
    if k <= N:
        return buf + [new]
    if rng.uniform(kr, 2 * t) < N / k:
        buf = list(buf)
        buf[naive.index(kr, 2 * t + 1, N)] = new
    return buf


def olp(X, y, eta, T, radius, seed, replicate, s=200):
    """OLP (Kar et al. 2013, Alg. 1): gradient of (1/|B|) sum_{b in B} f(w; z_t, z_b) over the
    buffer of past points, then B <- RS-x(B, z_t).  Output: mean of w_1..w_T."""
    ki, kr = _keys(seed, replicate)
    n = len(y)
    ws, buf = [np.zeros(X.shape[1])], []
    for t in range(1, T + 1):
        i = naive.index(ki, t, n)
        w = ws[-1]
        if buf:
            g = sum(_grad(w, X, y, i, b) for b in buf) / len(buf)
            w = _proj(w - eta * g, radius)
        ws.append(w)
        buf = rs_x(buf, i, s, t, kr)
    return ws, sum(ws[1:]) / T


def oam_gra(X, y, eta, T, radius, seed, replicate, N=100):
    """OAM_gra (Zhao et al. 2011): per-class reservoirs (Algorithm R) of size N; for a positive
    z_t: C_t = eta max(1, N-_t/N), B+ <- RS(B+, z_t), w <- Pi(w - C_t sum_{b in B-} grad f(w; z_t, z_b));
    symmetric for a negative.  Output: mean of w_1..w_T."""
    ki, kr = _keys(seed, replicate)
    n = len(y)
    ws = [np.zeros(X.shape[1])]
    bufs = {1.0: [], -1.0: []}
    seen = {1.0: 0, -1.0: 0}
    for t in range(1, T + 1):
        i = naive.index(ki, t, n)
        own, opp = float(y[i]), -float(y[i])
        seen[own] += 1
        C = eta * max(1.0, seen[opp] / N)
        bufs[own] = reservoir(bufs[own], i, N, seen[own], t, kr)
        w = ws[-1]
        if bufs[opp]:
            g = sum(_grad(w, X, y, i, b) for b in bufs[opp])
            w = _proj(w - C * g, radius)
        ws.append(w)
    return ws, sum(ws[1:]) / T


def spauc_objective_grad(w, X, y):
    """p(1-p) x gradient of the empirical pairwise square AUC risk (1/(n+ n-)) sum_{+,-} (1 - w.(x_i - x_j))^2,
    by brute force over all positive/negative pairs."""
    pos, neg = X[y == 1], X[y == -1]
    p = len(pos) / len(y)
    g = np.zeros_like(w)
    for xi in pos:
        for xj in neg:
            g += naive.pair_loss("auc_squared", w, xi, 1.0, xj, -1.0)[1]
    return p * (1 - p) * g / (len(pos) * len(neg))


def spauc_grad(w, x, yy, p, mu_pos, mu_neg):
    """SPAUC's stochastic gradient at one example (Lei & Ying 2019; saddle form of Ying et al. 2016
    with a = w.mu+, b = w.mu-, alpha = w.(mu- - mu+) plugged in)."""
    if yy == 1:
        g = 2 * (1 - p) * np.dot(w, x - mu_pos) * (x - mu_pos)
    else:
        g = 2 * p * np.dot(w, x - mu_neg) * (x - mu_neg)
    dm = mu_neg - mu_pos
    return g + 2 * p * (1 - p) * (1 + np.dot(w, dm)) * dm


def spauc(X, y, eta, T, radius, seed, replicate):
    """SPAUC: w <- Pi(w - eta g(w; z_t)), z_t = z_{randint(ki, t, n)}.  Output: mean of w_1..w_T."""
    ki, _ = _keys(seed, replicate)
    n = len(y)
    p = np.mean(y == 1)
    mu_pos, mu_neg = X[y == 1].mean(axis=0), X[y == -1].mean(axis=0)
    ws = [np.zeros(X.shape[1])]
    for t in range(1, T + 1):
        i = naive.index(ki, t, n)
        ws.append(_proj(ws[-1] - eta * spauc_grad(ws[-1], X[i], y[i], p, mu_pos, mu_neg), radius))
    return ws, sum(ws[1:]) / T


REFERENCES = {"p1_alg1": p1_alg1, "sgd_pair": sgd_pair, "olp": olp, "oam_gra": oam_gra, "spauc": spauc}
