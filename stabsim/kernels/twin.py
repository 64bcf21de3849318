"""The twin-trajectory kernel: one algorithm run on S and on its neighbour S' in lockstep.

Both runs consume the same random stream (same indices, same initial point, same
Gaussian noise unless ``indep_noise``), which is the coupling every stability bound
assumes (CATALOGUE section 0, "Coupling").  Replicates run in parallel with ``prange``;
each is a pure function of ``(seed, reps[r])`` through the counter-based generator in
``stabsim.rng``, so results do not depend on the thread count or on chunking.

Iterate indexing follows P1: the state before step t is w_{t-1} (w_0 the initial point)
and step t produces w_t, t = 1..T.  P0/P4 number their iterates from w_1 = initial point;
their w_t is our w_{t-1}, which the output conventions below account for.

Pair schedules (the step direction is the *average* gradient over the step's pairs):

``PREVIOUS``    FIFO buffer of size s: pairs (i_t, i_{t-j}), j = 1..s.  s = 1 is P1 Alg. 1
                (pair i_t with i_{t-1}); the s initial indices i_{1-s}..i_0 are drawn first.
                Sequential mode (``seq=1``): i_t = t + s - 1, the online stream of P1 Alg. 2.
``ALL_PREV``    P0 Alg. 1: draw i_{t+1}, pair it with all previous i_1..i_t (O(t) per step).
                Sequential mode: z_1, z_2, ... in order (P3's pairwise GIGA).
``UNIFORM_PAIR``  an ordered pair i != j uniform over the n(n-1) pairs (SGD_pair, P4 Alg. 2).
``POINTWISE``   one uniform index (P4 Alg. 1).
``FULL_BATCH``  all n(n-1) ordered pairs (P2 Alg. 1).

Output conventions (``avg_lag``; weights ``omegas[t]``):  the output after t steps is
sum_j omegas[j] w_{j - lag} / sum_j omegas[j], with w_{-1} := w_0.  P1: lag 2, omegas =
etas.  P0/P4 ((1/T) sum_{t=1}^T w_t in their numbering): lag 1, omegas = 1.  ``lag = -1``:
the last iterate (P2, P1 Thm 3/9).

Recorded at each checkpoint t (``rec[r, c, :]``):
0  ||w_t - w'_t||                       1  ||out_t - out'_t||
2  sum_{j<=t} fhat_j(w_{j-1})           3  sum_{j<=t} fhat_j(wref)
4  sum_{j<=t} eta_j^2 fhat_j(w_{j-1})
where fhat_j is the loss averaged over the pairs (points) used at step j, on S.  For
schedules whose step-j pair is drawn independently of w_{j-1} (UNIFORM_PAIR, POINTWISE,
and ALL_PREV's new draw), fhat_j(w_{j-1}) is an unbiased estimate of F_S(w_{j-1}).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..constraints import project
from ..losses import pair_loss_grad, point_loss_grad
from ..rng import STREAM_INDEX, STREAM_NOISE, STREAM_NOISE_PRIME, normal, pair_ij, randint, stream_key

PREVIOUS, ALL_PREV, UNIFORM_PAIR, POINTWISE, FULL_BATCH = range(5)
N_REC = 5
LAST_ITERATE = -1


@njit(cache=True, inline="always")
def _rowid(i, prime, k, krow):
    """Row of example i in the extended data array: S' reads the replacement row for i == k."""
    if prime and i == k:
        return krow
    return i


@njit(cache=True, inline="always")
def _ring(hist, s, back):
    """PREVIOUS schedule: the index drawn ``back`` steps ago (ring of s + 1 slots, head in hist[s+1])."""
    pos = hist[s + 1] - back
    if pos < 0:
        pos += s + 1
    return hist[pos]


@njit(cache=True, inline="always")
def _draw(schedule, key, t, s, seq, n, hist):
    """Draw (and remember in ``hist``) the indices that step t uses."""
    if schedule == PREVIOUS:
        c = t + s - 1
        head = hist[s + 1] + 1
        if head == s + 1:
            head = 0
        hist[head] = c if seq else randint(key, c, n)
        hist[s + 1] = head
    elif schedule == ALL_PREV:
        hist[t] = t if seq else randint(key, t, n)  # i_{t+1} (0-based position t)
    elif schedule == UNIFORM_PAIR:
        i, j = pair_ij(key, t, n)
        hist[0] = i
        hist[1] = j
    elif schedule == POINTWISE:
        hist[0] = randint(key, t, n)


@njit(cache=True, inline="always")
def _pair(form, phi, q, w, Xs, Ys, i, j, prime, k, krow, scale, g, dx):
    a = _rowid(i, prime, k, krow)
    b = _rowid(j, prime, k, krow)
    return pair_loss_grad(form, phi, q, w, Xs, a, Ys[a], b, Ys[b], scale, g, dx)


@njit(cache=True)
def _grad(schedule, t, s, n, hist, Xs, Ys, prime, k, krow, form, phi, q, w, mult, g, dx):
    """Add mult * (average gradient of the step-t pairs at w) to g; return the average loss."""
    tot = 0.0
    if schedule == PREVIOUS:
        ia = _ring(hist, s, 0)
        if s == 1:
            return _pair(form, phi, q, w, Xs, Ys, ia, _ring(hist, s, 1), prime, k, krow, mult, g, dx)
        sc = mult / s
        for jj in range(1, s + 1):
            tot += _pair(form, phi, q, w, Xs, Ys, ia, _ring(hist, s, jj), prime, k, krow, sc, g, dx)
        return tot / s
    if schedule == ALL_PREV:
        ia = hist[t]
        sc = mult / t
        for kk in range(t):
            tot += _pair(form, phi, q, w, Xs, Ys, ia, hist[kk], prime, k, krow, sc, g, dx)
        return tot / t
    if schedule == UNIFORM_PAIR:
        return _pair(form, phi, q, w, Xs, Ys, hist[0], hist[1], prime, k, krow, mult, g, dx)
    if schedule == POINTWISE:
        a = _rowid(hist[0], prime, k, krow)
        return point_loss_grad(form, phi, q, w, Xs, a, Ys[a], mult, g)
    # FULL_BATCH
    sc = mult / (n * (n - 1.0))
    for i in range(n):
        for j in range(n):
            if j != i:
                tot += _pair(form, phi, q, w, Xs, Ys, i, j, prime, k, krow, sc, g, dx)
    return tot / (n * (n - 1.0))


@njit(cache=True)
def _dist(a, b):
    s = 0.0
    for c in range(a.shape[0]):
        e = a[c] - b[c]
        s += e * e
    return math.sqrt(s)


@njit(cache=True)
def _copy(dst, src):
    for c in range(src.shape[0]):
        dst[c] = src[c]


@njit(cache=True, parallel=True)
def twin_kernel(X, Y, kidx, krows, reps, seed,
                schedule, s, seq, form, phi, q, ckind, radius, md,
                etas, omegas, avg_lag, sigma, indep_noise, has_ref, wref,
                W0, ckpts, rec, rec_out, outs):
    """Run R coupled replicates; see the module docstring for the arguments' meaning.

    X (nS, n + m, d), Y (nS, n + m): nS = 1 (one data set) or R (one per replicate); the first
    n rows are S, the extra m rows hold the replacement points.  S' replaces example
    kidx[r] by row krows[r] (kidx[r] = -1 makes S' = S).  W0 (R, p): initial points.
    etas, omegas (T+1,), index 0 unused.  ckpts (C,): increasing steps in 1..T.
    rec (R, C, N_REC) is written; outs (R, C, 2, p) receives the outputs on S and S' when
    rec_out.  Nothing is allocated inside the step loop.
    """
    R = W0.shape[0]
    p = W0.shape[1]
    n = X.shape[1] - (R if X.shape[0] == 1 else 1)
    d = X.shape[2]
    T = etas.shape[0] - 1
    C = ckpts.shape[0]
    hlen = T + 1 if schedule == ALL_PREV else s + 2
    for r in prange(R):
        sidx = np.int64(r) if X.shape[0] > 1 else np.int64(0)
        Xs = X[sidx]
        Ys = Y[sidx]
        k = kidx[r]
        krow = krows[r]
        key_i = stream_key(seed, reps[r], STREAM_INDEX)
        key_n = stream_key(seed, reps[r], STREAM_NOISE)
        key_np = stream_key(seed, reps[r], STREAM_NOISE_PRIME) if indep_noise else key_n
        wm2 = W0[r].copy()     # w_{t-2}  (w_{-1} = w_0)
        wm1 = W0[r].copy()     # w_{t-1}
        wn = np.empty(p)       # w_t
        wm2p = W0[r].copy()
        wm1p = W0[r].copy()
        wnp = np.empty(p)
        g = np.empty(p)
        gp = np.empty(p)
        acc = np.zeros(p)
        accp = np.zeros(p)
        noise = np.empty(p)
        dx = np.empty(d)
        hist = np.zeros(hlen, dtype=np.int64)
        A = np.empty((md, md))
        V = np.empty((md, md))
        lam = np.empty(md)
        tmp = np.empty(md)
        # indices drawn before the first step
        if schedule == PREVIOUS:
            for c0 in range(s):
                hist[c0] = c0 if seq else randint(key_i, c0, n)
            hist[s + 1] = s - 1  # head: slot of the newest index
        elif schedule == ALL_PREV:
            hist[0] = 0 if seq else randint(key_i, 0, n)
        wsum = 0.0
        lsum = 0.0
        lrsum = 0.0
        l2sum = 0.0
        ci = 0
        for t in range(1, T + 1):
            _draw(schedule, key_i, t, s, seq, n, hist)
            for c in range(p):
                g[c] = 0.0
                gp[c] = 0.0
            fval = _grad(schedule, t, s, n, hist, Xs, Ys, False, k, krow, form, phi, q, wm1, 1.0, g, dx)
            _grad(schedule, t, s, n, hist, Xs, Ys, True, k, krow, form, phi, q, wm1p, 1.0, gp, dx)
            if has_ref:
                lrsum += _grad(schedule, t, s, n, hist, Xs, Ys, False, k, krow, form, phi, q, wref, 0.0, g, dx)
            eta = etas[t]
            lsum += fval
            l2sum += eta * eta * fval
            if sigma > 0.0:
                for c in range(p):
                    noise[c] = sigma * normal(key_n, t * p + c)
                    g[c] += noise[c]
                if indep_noise:
                    for c in range(p):
                        noise[c] = sigma * normal(key_np, t * p + c)
                for c in range(p):
                    gp[c] += noise[c]
            for c in range(p):
                wn[c] = wm1[c] - eta * g[c]
                wnp[c] = wm1p[c] - eta * gp[c]
            project(ckind, radius, wn, md, A, V, lam, tmp)
            project(ckind, radius, wnp, md, A, V, lam, tmp)
            if avg_lag >= 0:
                om = omegas[t]
                if avg_lag == 2:
                    for c in range(p):
                        acc[c] += om * wm2[c]
                        accp[c] += om * wm2p[c]
                elif avg_lag == 1:
                    for c in range(p):
                        acc[c] += om * wm1[c]
                        accp[c] += om * wm1p[c]
                else:
                    for c in range(p):
                        acc[c] += om * wn[c]
                        accp[c] += om * wnp[c]
                wsum += om
            if ci < C and ckpts[ci] == t:
                rec[r, ci, 0] = _dist(wn, wnp)
                if avg_lag >= 0:
                    dd = 0.0
                    for c in range(p):
                        e = (acc[c] - accp[c]) / wsum
                        dd += e * e
                    rec[r, ci, 1] = math.sqrt(dd)
                else:
                    rec[r, ci, 1] = rec[r, ci, 0]
                rec[r, ci, 2] = lsum
                rec[r, ci, 3] = lrsum
                rec[r, ci, 4] = l2sum
                if rec_out:
                    for c in range(p):
                        if avg_lag >= 0:
                            outs[r, ci, 0, c] = acc[c] / wsum
                            outs[r, ci, 1, c] = accp[c] / wsum
                        else:
                            outs[r, ci, 0, c] = wn[c]
                            outs[r, ci, 1, c] = wnp[c]
                ci += 1
            if avg_lag == 2:
                _copy(wm2, wm1)
                _copy(wm2p, wm1p)
            _copy(wm1, wn)
            _copy(wm1p, wnp)
