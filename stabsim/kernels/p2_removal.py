"""P2 Alg. 1 (full-batch all-pairs gradient descent with gradient perturbation) on D and on
removal neighbours D^{-i}, with shared noise.

P2's pairwise locally elastic stability (Def. 6) compares A_D with A_{D^{-i}}, where
D^{-i} = D with z_i REMOVED (n - 1 points).  The twin kernel (``kernels/twin.py``) only
couples D with a replace-one neighbour, so this small kernel runs, per replicate,

    theta_t = theta_{t-1} - eta ( 1/(m(m-1)) sum_{a != b, a, b in D'} grad l(theta_{t-1}; z_a, z_b) + b_t ),
    b_t ~ N(0, sigma^2 I_p),  theta_0 = 0,  output theta_T (last iterate, no projection; P2-E2)

for D' = D (m = n) and for D' = D^{-i} (m = n - 1) for each i in ``removes[r]``, every run
with the SAME noise sequence b_1..b_T (coupling, docs/errata.md, Conventions).  The noise of step t
(1-based) is ``sigma * normal(stream_key(seed, rep, STREAM_NOISE), t * p + c)``, exactly the
numbers ``run_twin(algorithm="p2_alg1", sigma=...)`` uses, so the run on D reproduces
``run_twin``'s run on S bit for bit up to the summation order of the pair gradients.

Recorded: theta_t on D at the checkpoints, theta_T on every D^{-i}, and at every step
t = 0..T-1 the empirical risk L(theta_t; D) and ||grad L(theta_t; D)||^2 (the PL ratio of
P2 Def. 5 along the path); L(theta_T; D) is evaluated once more at the end.
"""

from __future__ import annotations

import numpy as np
from numba import prange, types
from stabsim.compile.jit import njit

from stabsim.engine.losses import AUC, AUC_ORDERED, RANKING, _linear_coef, pair_loss_grad, phi_value_deriv
from stabsim.engine.rng import STREAM_NOISE, normal, stream_key
from stabsim.compile.native_call import address_for, caller_beside, make_native_caller
from stabsim.kernels.nrt_free import NRT_FREE

#: largest n for which P2 Alg. 1 keeps phi of each unordered pair (two n x n workspaces per thread,
#: 16 MiB at n = 1024); larger data sets evaluate both orders of each pair (same numbers)
PAIR_BUFFER_MAX_N = 1024


@njit(cache=True, **NRT_FREE)
def full_grad(form, phi, q, w, X, Y, skip, g, dx, sc_buf, co_buf, pv_buf, pf_buf):
    """g <- grad of L(w; D') = 1/(m(m-1)) sum over ordered pairs a != b of D' = D minus row
    ``skip`` (skip < 0: none); returns L(w; D').

    Linear forms (auc, auc_ordered, ranking): scores s_a = w.x_a first, then per pair only the
    scalar phi'(c (s_a - s_b)), accumulated into per-point coefficients (grad = sum_a coef_a x_a),
    O(n^2 + n d) instead of O(n^2 d).  Metric forms: ``losses.pair_loss_grad`` per pair.
    Workspaces: dx (d,), sc_buf (n,), co_buf (n,), pv_buf and pf_buf (n * n, or shorter: unused).

    The symmetric linear forms (auc, ranking) have c(b, a) = -c(a, b) exactly, hence the same
    margin c (s_a - s_b) for the pairs (a, b) and (b, a) and coefficients f and -f.  With
    n * n workspaces, phi is evaluated once per unordered pair: the visit of (a, b), a < b, keeps
    phi and f for the later visit of (b, a).  A pair with c = 0 (ranking, equal labels) adds
    phi(0) and a zero coefficient.  Every sum is still taken in the ordered-pair order, so the
    numbers are those of evaluating each ordered pair (tests/test_p2_removal.py).
    """
    n = X.shape[0]
    d = X.shape[1]
    m = n - 1 if skip >= 0 else n
    sc = 1.0 / (m * (m - 1.0))
    for c in range(g.shape[0]):
        g[c] = 0.0
    tot = 0.0
    if form == AUC or form == AUC_ORDERED or form == RANKING:
        for a in range(n):
            s = 0.0
            for c in range(d):
                s += w[c] * X[a, c]
            sc_buf[a] = s
            co_buf[a] = 0.0
        tot = _linear_pairs(form, phi, q, Y, skip, sc_buf, co_buf, pv_buf, pf_buf)
        for a in range(n):
            f = sc * co_buf[a]
            if f != 0.0:
                for c in range(d):
                    g[c] += f * X[a, c]
        return tot * sc
    for a in range(n):
        if a == skip:
            continue
        for b in range(n):
            if b == a or b == skip:
                continue
            tot += pair_loss_grad(form, phi, q, w, X, a, Y[a], b, Y[b], sc, g, dx)
    return tot * sc


@njit(cache=True, inline="always")
def _linear_pairs(form, phi, q, Y, skip, sc_buf, co_buf, pv_buf, pf_buf):
    """The ordered-pair loop of ``full_grad`` for the linear forms: returns the sum of phi over
    the pairs and adds each pair's coefficient f into co_buf (+f at a, -f at b).  For auc and
    ranking with n * n workspaces, phi is evaluated once per unordered pair (see ``full_grad``).

    Exactness: fl(-c) = -fl(c) and fl(s_b - s_a) = -fl(s_a - s_b), so (b, a) has the margin of
    (a, b) bit for bit.  A pair with c = 0 has margin +-0, for which every phi gives phi(0) (auc
    skips it, ranking adds phi(0)); its coefficient +-0 is not added, which changes nothing as
    co_buf (starting at +0) never holds -0.
    """
    n = sc_buf.shape[0]
    sym = form != AUC_ORDERED and pv_buf.shape[0] >= n * n
    v0 = phi_value_deriv(phi, 0.0, q)[0]
    tot = 0.0
    for a in range(n):
        if a == skip:
            continue
        for b in range(n):
            if b == a or b == skip:
                continue
            cf = _linear_coef(form, Y[a], Y[b])
            if cf == 0.0:
                if form == RANKING:
                    tot += v0
                continue
            if sym and b < a:
                val = pv_buf[a * n + b]
                f = -pf_buf[a * n + b]
            else:
                val, dphi = phi_value_deriv(phi, cf * (sc_buf[a] - sc_buf[b]), q)
                f = dphi * cf
                if sym:
                    pv_buf[b * n + a] = val   # read back on the visit of (b, a), row b
                    pf_buf[b * n + a] = f
            tot += val
            co_buf[a] += f
            co_buf[b] -= f
    return tot


def p2_removal_kernel(X, Y, form, phi, q, eta, sigma, T, seed, reps, removes, ckpts, p):
    """Run P2 Alg. 1 on D and on D^{-i} (i in removes[r]) for every replicate r.

    X (R, n, d), Y (R, n): one data set per replicate.  removes (R, K) int64 (K may be 0).
    ckpts (C,) increasing steps in [1, T].  Returns (W (R, C, p) theta_t on D at the
    checkpoints, WR (R, K, p) theta_T on D^{-i}, FS (R, T + 1) L(theta_t; D) for t = 0..T,
    GN (R, T) ||grad L(theta_t; D)||^2 for t = 0..T-1).  The replicates run in parallel
    (``_p2_parallel``), each through the address of ``_p2_replicate`` (``native_call``: compiled
    once, not linked and optimised again).
    """
    R = X.shape[0]
    W = np.zeros((R, ckpts.shape[0], p))
    WR = np.zeros((R, removes.shape[1], p))
    FS = np.zeros((R, T + 1))
    GN = np.zeros((R, T))
    args = (X, Y, form, phi, q, eta, sigma, T, seed, reps, removes, ckpts, p, W, WR, FS, GN)
    _p2_parallel(address_for(_p2_replicate, args, _replicate_types, _BESIDE), *args)
    return W, WR, FS, GN


def _replicate_types(kernel_types) -> tuple:
    """The argument types of ``_p2_replicate`` from those of ``_p2_parallel`` (X .. GN)."""
    f1 = types.Array(types.float64, 1, "C")
    return (types.int64,) + tuple(kernel_types)[:17] + (f1,) * 7


_call_replicate = make_native_caller(lambda tys: _replicate_types(tys[1:]), "P2 Alg. 1's replicate")


@njit(cache=True, parallel=True)
def _p2_parallel(replicate, X, Y, form, phi, q, eta, sigma, T, seed, reps, removes, ckpts, p, W, WR, FS, GN):
    R = X.shape[0]
    n = X.shape[1]
    d = X.shape[2]
    # full_grad's per-pair workspaces (n * n each): up to n = PAIR_BUFFER_MAX_N, else not used
    npair = n * n if n <= PAIR_BUFFER_MAX_N else 0
    for r in prange(R):
        w = np.empty(p)
        g = np.empty(p)
        dx = np.empty(d)
        sb = np.empty(n)
        cb = np.empty(n)
        pv = np.empty(npair)
        pf = np.empty(npair)
        _call_replicate(replicate, (np.int64(r), X, Y, form, phi, q, eta, sigma, T, seed, reps, removes, ckpts, p,
                                    W, WR, FS, GN, w, g, dx, sb, cb, pv, pf))


#: compiled in a helper process while the callee compiles, on a cold cache (``native_call.address_for``)
_BESIDE = caller_beside(__name__, "_p2_parallel")


@njit(cache=True, **NRT_FREE)
def _p2_replicate(r, X, Y, form, phi, q, eta, sigma, T, seed, reps, removes, ckpts, p, W, WR, FS, GN,
                  w, g, dx, sb, cb, pv, pf):
    """Replicate ``r`` of ``p2_removal_kernel`` into W, WR, FS, GN, with the scratch w, g (p,),
    dx (d,), sb, cb (n,), pv, pf (n * n or empty); allocates nothing."""
    K = removes.shape[1]
    C = ckpts.shape[0]
    Xs = X[r]
    Ys = Y[r]
    key_n = stream_key(seed, reps[r], np.int64(STREAM_NOISE))
    for c in range(p):
        w[c] = 0.0
    ci = 0
    none = np.int64(-1)   # typed, not a literal -1: that would compile full_grad a second time
    for t in range(1, T + 1):
        FS[r, t - 1] = full_grad(form, phi, q, w, Xs, Ys, none, g, dx, sb, cb, pv, pf)
        s = 0.0
        for c in range(p):
            s += g[c] * g[c]
        GN[r, t - 1] = s
        for c in range(p):
            b = sigma * normal(key_n, t * p + c) if sigma > 0.0 else 0.0
            w[c] -= eta * (g[c] + b)
        while ci < C and ckpts[ci] == t:
            for c in range(p):
                W[r, ci, c] = w[c]
            ci += 1
    FS[r, T] = full_grad(form, phi, q, w, Xs, Ys, none, g, dx, sb, cb, pv, pf)
    for kk in range(K):
        i = removes[r, kk]
        for c in range(p):
            w[c] = 0.0
        for t in range(1, T + 1):
            full_grad(form, phi, q, w, Xs, Ys, i, g, dx, sb, cb, pv, pf)
            for c in range(p):
                b = sigma * normal(key_n, t * p + c) if sigma > 0.0 else 0.0
                w[c] -= eta * (g[c] + b)
        for c in range(p):
            WR[r, kk, c] = w[c]
