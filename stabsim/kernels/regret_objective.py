"""P3's regret comparator objective, streamed over the pairs (no pair matrix).

    F(w) = sum_{t=2}^n Lhat_t(w, D_t) + (lam/2) ||w - c||^2,
    Lhat_t(w) = (1/(t-1)) sum_{i<t} phi(m_ti),  m_ti = k_ti w.(x_t - x_i)         (P3 Eqs. (3), (4))

for the linear-margin pairwise forms: ``ranking_*`` (k_ti = y_t - y_i; a same-label pair has
m = 0 and contributes phi(0)) and ``auc_*`` (k_ti = (y_t - y_i)/2; a same-label pair contributes
nothing).  With 0-based rows, row t (t = 1..n-1) has the t earlier points i < t, so its weight
1/(t-1) of the paper's 1-based t is 1/t here.

The margins are k_ti (p_t - p_i) with p = X w, computed once per call: O(n d + n^2) work and
O(n d) memory, where the earlier numpy form kept the (N, d) matrix of the N = n(n-1)/2 pair
differences (205 MB at n = 3200, d = 5, plus the temporaries that built it).  That is a change of
summation order: F and its gradient move in the last bits, the regret of P3's studies by about
1e-14 relative (benchmarks/README.md, "P3's regret minimum streamed").

Reproducible for any thread count: each row's sums are made by one thread in a fixed order into
its own slot, and the rows are added in order afterwards.
"""

from __future__ import annotations

import numpy as np
from numba import prange
from stabsim.compile.jit import njit

from stabsim.engine.losses import phi_value_deriv


@njit(cache=True)
def _row(t, X, y, p, scale, ranking, phi, phi0, row_val, row_grad):
    """Row t (0-based, t >= 1): (1/t) sum_{i<t} phi(m_ti) into row_val[t] and its gradient into row_grad[t]."""
    d = X.shape[1]
    val = 0.0
    coef = 0.0              # sum_i phi'(m_ti) k_ti, the factor of x_t in the row's gradient
    same = 0
    for k in range(d):
        row_grad[t, k] = 0.0
    for i in range(t):
        kt = scale * (y[t] - y[i])
        if kt == 0.0:
            same += 1
            continue
        v, der = phi_value_deriv(phi, kt * (p[t] - p[i]), 0.0)
        val += v
        q = der * kt
        coef += q
        for k in range(d):
            row_grad[t, k] -= q * X[i, k]
    if ranking:
        val += same * phi0
    row_val[t] = val / t
    for k in range(d):
        row_grad[t, k] = (row_grad[t, k] + coef * X[t, k]) / t


@njit(cache=True, parallel=True)
def regret_objective(X, y, w, center, lam, ranking, phi, row_val, row_grad):
    """(F(w), grad F(w)) of the module docstring.

    X (n, d), y (n,) in stream order; ``ranking`` True for k = y_t - y_i (same-label pairs give
    phi(0)), False for the AUC form k = (y_t - y_i)/2 (same-label pairs give 0); ``phi`` a smooth
    phi code of ``stabsim.engine.losses``; ``row_val`` (n,) and ``row_grad`` (n, d) are work space.
    """
    n, d = X.shape
    p = np.empty(n)
    for t in range(n):
        s = 0.0
        for k in range(d):
            s += X[t, k] * w[k]
        p[t] = s
    phi0 = phi_value_deriv(phi, 0.0, 0.0)[0]
    scale = 1.0 if ranking else 0.5
    # row t has t pairs: iteration j takes row j + 1 and row n - 1 - j, so every iteration has
    # about n pairs and the threads' shares are equal (plain rows: the last half has 3/4 of the work)
    for j in prange(n // 2):
        _row(j + 1, X, y, p, scale, ranking, phi, phi0, row_val, row_grad)
        if n - 1 - j > j + 1:
            _row(n - 1 - j, X, y, p, scale, ranking, phi, phi0, row_val, row_grad)
    total = 0.0
    grad = np.empty(d)
    sq = 0.0
    for k in range(d):
        e = w[k] - center[k]
        grad[k] = lam * e
        sq += e * e
    for t in range(1, n):
        total += row_val[t]
        for k in range(d):
            grad[k] += row_grad[t, k]
    return total + 0.5 * lam * sq, grad
