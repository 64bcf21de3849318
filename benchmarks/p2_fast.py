"""P2 Algorithm 1 twin loop with the naive double loop over pairs (the kernel before issue #7).

``p2_twin_double_loop`` is the twin kernel's FULL_BATCH path (``stabsim.kernels.twin``: same
index-free schedule, same noise stream ``normal(key_n, t p + c)`` shared by S and S', no
projection, last iterate) with the O(n^2 d) double loop over ordered pairs that the kernel used
before it called ``stabsim.kernels.allpairs.allpairs_grad``.  Used by ``run_all.py`` to time the
double loop next to ``run_twin`` (which now uses the all-pairs gradient) and to check that both
give the same trajectories.

``naive_allpairs`` is the double loop of the FULL_BATCH branch of ``twin._grad`` (copied, so
that this benchmark does not depend on the kernel's private helpers), restricted to the
first ``rows`` values of i so that it can be timed on a subset and extrapolated.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from stabsim.engine.losses import pair_loss_grad
from stabsim.engine.rng import STREAM_NOISE, normal, stream_key


@njit(cache=True)
def naive_allpairs(form, phi, q, n, Xs, Ys, prime, k, krow, w, mult, g, dx, rows):
    """sum over i < rows, j != i of f(w; z_i, z_j) / (n(n-1)); g += mult * gradient of that."""
    tot = 0.0
    sc = mult / (n * (n - 1.0))
    for i in range(rows):
        a = krow if (prime and i == k) else i
        for j in range(n):
            if j != i:
                b = krow if (prime and j == k) else j
                tot += pair_loss_grad(form, phi, q, w, Xs, a, Ys[a], b, Ys[b], sc, g, dx)
    return tot / (n * (n - 1.0))


@njit(cache=True, parallel=True)
def p2_twin_double_loop(X, Y, n, kidx, krows, reps, seed, form, phi, q, etas, sigma, out):
    """R replicates of P2 Alg. 1 on S and S' (one shared data set X (n + m, d)); out (R, 3):
    ||w_T - w'_T||, sum_t F_S(w_{t-1}), and ||w_T||."""
    R = reps.shape[0]
    d = X.shape[1]
    T = etas.shape[0] - 1
    for r in prange(R):
        k = kidx[r]
        krow = krows[r]
        key_n = stream_key(seed, reps[r], STREAM_NOISE)
        w = np.zeros(d)
        wp = np.zeros(d)
        g = np.empty(d)
        gp = np.empty(d)
        dx = np.empty(d)
        lsum = 0.0
        for t in range(1, T + 1):
            for c in range(d):
                g[c] = 0.0
                gp[c] = 0.0
            lsum += naive_allpairs(form, phi, q, n, X, Y, False, k, krow, w, 1.0, g, dx, n)
            naive_allpairs(form, phi, q, n, X, Y, True, k, krow, wp, 1.0, gp, dx, n)
            eta = etas[t]
            if sigma > 0.0:
                for c in range(d):
                    z = sigma * normal(key_n, t * d + c)
                    g[c] += z
                    gp[c] += z
            for c in range(d):
                w[c] -= eta * g[c]
                wp[c] -= eta * gp[c]
        s = 0.0
        s2 = 0.0
        for c in range(d):
            e = w[c] - wp[c]
            s += e * e
            s2 += w[c] * w[c]
        out[r, 0] = math.sqrt(s)
        out[r, 1] = lsum
        out[r, 2] = math.sqrt(s2)
