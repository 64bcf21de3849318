"""P3's pairwise GIGA (Huai et al., AAAI 2020, Algs 1-4) as a twin-trajectory kernel.

One pass over the data stream z_1, ..., z_n (``perms[r]`` gives the order of replicate r:
position t-1 holds the data index of z_t), run on S and on its neighbour S' in lockstep:

* t = 1..T_1 (burn-in): w_t is a random, data-independent point of C (the same point on S
  and S'; uniform in the ball, see ``_ball_point``).
* t = T_1+1..n (Pairwise GIGA, Alg. 1 steps 9-11):
      eta_t = ((t-1)/(t-2)) 2/(alpha t)
      w_t   = Pi_C[ w_{t-1} - eta_t grad Lhat_t(w_{t-1}) ],
      Lhat_t(w) = (1/(t-1)) sum_{i<t} l~(w; z_t, z_i),  l~ = l + (alpha/2)||w - c||^2
  (c = ``centers[r]``; the regulariser makes the loss alpha-strongly convex: the
  experiments' (lambda/2)||w||^2 for the StrC variants, Alg. 2/4's (alpha/2)||w - w_0||^2 for
  the convex ones; its gradient alpha (w - c) is the same for every pair).
* ``online`` (Algs 1/2): every t > T_1 releases Pi_C(w_t + n_t), n_t ~ N(0, sigma_t^2 I),
  sigma_t = ``sig_coef`` / t; releases t <= T_1 are the random points themselves.  The
  internal state stays the noise-free w_t (errata P3-A, "state ambiguity").  Final
  output: the online-to-batch average of the released w_1..w_{n-1} (P3 Thm 4).
* offline (Algs 3/4): w~ = (w_1 + ... + w_n)/n (burn-in points included), final output
  Pi_C(w~ + sigma_off u), u ~ N(0, I).

Random streams (counter-based, ``stabsim.engine.rng``), per replicate:
``STREAM_BURNIN`` (8) random points of C: point j (j = 1..T_1 burn-in; j = 0 the random
regulariser centre of OnPairC, drawn on the Python side with the same function) uses the
normal counters j(p+1) .. j(p+1)+p-1 for its direction and the uniform counter
2(j(p+1)+p) for its radius.  ``STREAM_NOISE``: release noise of the run on S, normal counters
t p + c (online, release t) and (n+1) p + c (offline output); the run on S' uses the same
numbers unless ``indep_noise`` (then ``STREAM_NOISE_PRIME``, same counters).  The burn-in
points are data independent and always shared.

Recorded at each checkpoint t (``rec[r, c, :]``, t in 1..n):
0  ||w_t - w'_t||  (noise-free GIGA iterates; compare with Lemma 4's 8G/(alpha t))
1  ||released_t - released'_t||  (online; offline: = column 0)
2  sum_{s=2}^t Lhat_s(v_{s-1}) with the loss l, run on S, where v is the point "played":
   the released point (online) or the internal iterate (offline)  -- the regret path (4)
3  the same with the surrogate l~ (l + (alpha/2)||w - c||^2)
``outs[r, c, run, :]``: the released point (online) / internal iterate (offline) at t;
``final[r, 0, run, :]``: the non-private average (w_1..w_{n-1} online, w_1..w_n offline);
``final[r, 1, run, :]``: the private output.  Nothing is allocated inside the step loop.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange, types
from stabsim.compile.jit import njit

from stabsim.engine.constraints import project
from stabsim.engine.losses import AUC, AUC_ORDERED, RANKING, pair_loss_grad
from stabsim.engine.rng import STREAM_NOISE, STREAM_NOISE_PRIME, normal, stream_key, uniform
from stabsim.kernels.allprev import allprev_pairs, allprev_pairs_grad
from stabsim.compile.native_call import address_for, caller_beside, make_native_caller
from stabsim.kernels.nrt_free import NRT_FREE

#: stream of P3's random points of C (burn-in points, OnPairC's random w_0); not in rng.py's list
STREAM_BURNIN = 8
N_REC_GIGA = 4


@njit(cache=True, **NRT_FREE)
def ball_point(key, j, p, md, radius, out):
    """Random point number ``j`` of the ball {||w|| <= radius} (uniform), written into ``out``.

    Vector parameters: uniform in the l2 ball of R^p.  Matrix parameters (md > 0, p = md^2):
    uniform in the Frobenius ball of the *symmetric* matrices (the symmetrised Gaussian
    (A + A^T)/2 is isotropic there; dimension md(md+1)/2 for the radius law).
    """
    base = j * (p + 1)
    for c in range(p):
        out[c] = normal(key, base + c)
    m = p
    if md > 0:
        m = md * (md + 1) // 2
        for a in range(md):
            for b in range(a + 1, md):
                v = 0.5 * (out[a * md + b] + out[b * md + a])
                out[a * md + b] = v
                out[b * md + a] = v
    s = 0.0
    for c in range(p):
        s += out[c] * out[c]
    u = uniform(key, 2 * (base + p))
    f = radius * u ** (1.0 / m) / math.sqrt(s) if s > 0.0 else 0.0
    for c in range(p):
        out[c] *= f


@njit(cache=True, inline="always")
def _row(i, prime, k, krow):
    if prime and i == k:
        return krow
    return i


@njit(cache=True, **NRT_FREE)
def _lhat(form, phi, q, w, Xs, Ys, order, t, prime, k, krow, scale, g, dx):
    """(1/(t-1)) sum_{s<t} l(w; z_t, z_s) over the stream order (t is 1-based); adds
    scale * its gradient into g.  Returns the average loss (without the regulariser)."""
    a = _row(order[t - 1], prime, k, krow)
    if form == AUC or form == AUC_ORDERED or form == RANKING:
        # linear margins: the tight all-previous loop (one score per previous point)
        return allprev_pairs(form, phi, q, w, Xs, Ys, a, order, t - 1, prime, k, krow, scale, g)
    tot = 0.0
    sc = scale / (t - 1.0)
    for s in range(t - 1):
        b = _row(order[s], prime, k, krow)
        tot += pair_loss_grad(form, phi, q, w, Xs, a, Ys[a], b, Ys[b], sc, g, dx)
    return tot / (t - 1.0)


@njit(cache=True, **NRT_FREE)
def _lhat_grad(form, phi, q, w, Xs, Ys, order, t, prime, k, krow, g, dx):
    """``_lhat``'s gradient alone (scale 1), the same g bit for bit, where the average loss is
    not used: the linear forms skip the loss values (for the logistic loss, a log1p per pair;
    benchmarks/README.md, "Other kernels"); the metric forms call ``_lhat``."""
    a = _row(order[t - 1], prime, k, krow)
    if form == AUC or form == AUC_ORDERED or form == RANKING:
        allprev_pairs_grad(form, phi, q, w, Xs, Ys, a, order, t - 1, prime, k, krow, 1.0, g)
        return
    _lhat(form, phi, q, w, Xs, Ys, order, t, prime, k, krow, 1.0, g, dx)


@njit(cache=True, inline="always")
def _reg(w, cen, alpha):
    s = 0.0
    for c in range(w.shape[0]):
        e = w[c] - cen[c]
        s += e * e
    return 0.5 * alpha * s


@njit(cache=True, inline="always")
def _dist(a, b):
    s = 0.0
    for c in range(a.shape[0]):
        e = a[c] - b[c]
        s += e * e
    return math.sqrt(s)


@njit(cache=True, **NRT_FREE)
def _giga_replicate(r, X, Y, kidx, krows, reps, seed, perms, form, phi, q, ckind, radius, md,
                    alpha, T1, online, sig_coef, sigma_off, indep_noise, centers,
                    ckpts, rec, rec_out, outs, final, w, wp, v, vp, rel, relp, g, gp, gdummy, acc, accp,
                    racc, raccp, dx, A, V, lam, tmp):
    """Replicate ``r`` of ``giga_kernel`` (same arguments), in the scratch arrays that follow
    ``final`` (p-vectors w .. raccp, dx (d,), A, V (md, md), lam, tmp (md,)), which it
    initialises: it allocates nothing, so it is compiled without reference counting."""
    p = centers.shape[1]
    n = perms.shape[1]
    C = ckpts.shape[0]
    Xs = X[0]
    Ys = Y[0]
    k = kidx[r]
    krow = krows[r]
    order = perms[r]
    cen = centers[r]
    key_b = stream_key(seed, reps[r], np.int64(STREAM_BURNIN))
    key_n = stream_key(seed, reps[r], np.int64(STREAM_NOISE))
    key_np = stream_key(seed, reps[r], np.int64(STREAM_NOISE_PRIME)) if indep_noise else key_n
    # S' = S (k = -1) with shared noise: w' = w at every step, so the gradient on S' is the
    # one on S, copied instead of summed again (the same numbers: tests/test_mirror.py)
    mirror = k < 0 and not indep_noise
    # w: w_{t-1}, then w_t (noise-free state) on S; v: the point played at t-1 (released online,
    # internal offline); rel: the release at t (online); acc / racc: the non-private average and
    # the average of releases (online); the primed names: the same on S'
    for c in range(p):
        w[c] = 0.0
        wp[c] = 0.0
        v[c] = 0.0
        vp[c] = 0.0
        rel[c] = 0.0
        relp[c] = 0.0
        gdummy[c] = 0.0
        acc[c] = 0.0
        accp[c] = 0.0
        racc[c] = 0.0
        raccp[c] = 0.0
    lsum = 0.0
    lsum_reg = 0.0
    ci = 0
    # which data set _lhat reads, typed bools: literal flags would compile _lhat (and the
    # all-previous loop it calls) once per value, besides the twin kernel's own (bool) one
    on_s, on_s_prime = np.bool_(False), np.bool_(True)
    for t in range(1, n + 1):
        # penalty Lhat_t(v_{t-1}, D_t), incurred for t >= 2 (run on S).  Offline after the
        # burn-in v_{t-1} = w_{t-1}, and the gradient pass below returns this very value (the
        # value does not depend on the gradient's scale): taken from there, not summed twice
        reuse = not online and t > T1 and t >= 2
        if t >= 2 and not reuse:
            fv = _lhat(form, phi, q, v, Xs, Ys, order, t, on_s, k, krow, 0.0, gdummy, dx)
            lsum += fv
            lsum_reg += fv + _reg(v, cen, alpha)
        if t <= T1:
            ball_point(key_b, t, p, md, radius, w)
            for c in range(p):
                wp[c] = w[c]
                rel[c] = w[c]
                relp[c] = w[c]
        else:
            eta = (t - 1.0) / (t - 2.0) * 2.0 / (alpha * t)
            for c in range(p):
                g[c] = alpha * (w[c] - cen[c])
                gp[c] = alpha * (wp[c] - cen[c])
            if reuse:   # a penalty step; v = w here (offline)
                fw = _lhat(form, phi, q, w, Xs, Ys, order, t, on_s, k, krow, 1.0, g, dx)
                lsum += fw
                lsum_reg += fw + _reg(v, cen, alpha)
            else:
                _lhat_grad(form, phi, q, w, Xs, Ys, order, t, on_s, k, krow, g, dx)
            if mirror:
                for c in range(p):
                    gp[c] = g[c]
            else:
                _lhat_grad(form, phi, q, wp, Xs, Ys, order, t, on_s_prime, k, krow, gp, dx)
            for c in range(p):
                w[c] -= eta * g[c]
                wp[c] -= eta * gp[c]
            project(ckind, radius, w, md, A, V, lam, tmp)
            project(ckind, radius, wp, md, A, V, lam, tmp)
            if online:
                sig = sig_coef / t
                for c in range(p):
                    z = normal(key_n, t * p + c)
                    rel[c] = w[c] + sig * z
                    if indep_noise:
                        z = normal(key_np, t * p + c)
                    relp[c] = wp[c] + sig * z
                project(ckind, radius, rel, md, A, V, lam, tmp)
                project(ckind, radius, relp, md, A, V, lam, tmp)
        # averages
        if online:
            if t <= n - 1:
                for c in range(p):
                    acc[c] += w[c]
                    accp[c] += wp[c]
                    racc[c] += rel[c]
                    raccp[c] += relp[c]
        else:
            for c in range(p):
                acc[c] += w[c]
                accp[c] += wp[c]
        # the point played next
        for c in range(p):
            if online:
                v[c] = rel[c]
                vp[c] = relp[c]
            else:
                v[c] = w[c]
                vp[c] = wp[c]
        if ci < C and ckpts[ci] == t:
            _checkpoint(rec, outs, rec_out, r, ci, w, wp, rel, relp, v, vp, online, lsum, lsum_reg)
            ci += 1
    _final_outputs(final, r, online, n, acc, accp, racc, raccp, rel, relp, key_n, key_np, indep_noise, sigma_off,
                   ckind, radius, md, A, V, lam, tmp)


@njit(cache=True, inline="always")
def _checkpoint(rec, outs, rec_out, r, ci, w, wp, rel, relp, v, vp, online, lsum, lsum_reg):
    """Checkpoint ci of replicate r (``giga_kernel``'s recorded columns and outputs)."""
    rec[r, ci, 0] = _dist(w, wp)
    rec[r, ci, 1] = _dist(rel, relp) if online else rec[r, ci, 0]
    rec[r, ci, 2] = lsum
    rec[r, ci, 3] = lsum_reg
    if rec_out:
        for c in range(w.shape[0]):
            outs[r, ci, 0, c] = v[c]
            outs[r, ci, 1, c] = vp[c]


@njit(cache=True, inline="always")
def _final_outputs(final, r, online, n, acc, accp, racc, raccp, rel, relp, key_n, key_np, indep_noise, sigma_off,
                   ckind, radius, md, A, V, lam, tmp):
    """The final outputs of replicate r on S and S': the averages (online: and the averages of
    the releases), or (offline) the average and its output perturbation, projected."""
    p = acc.shape[0]
    if online:
        m = n - 1.0
        for c in range(p):
            final[r, 0, 0, c] = acc[c] / m
            final[r, 0, 1, c] = accp[c] / m
            final[r, 1, 0, c] = racc[c] / m
            final[r, 1, 1, c] = raccp[c] / m
    else:
        for c in range(p):
            final[r, 0, 0, c] = acc[c] / n
            final[r, 0, 1, c] = accp[c] / n
            z = normal(key_n, (n + 1) * p + c)
            rel[c] = acc[c] / n + sigma_off * z
            if indep_noise:
                z = normal(key_np, (n + 1) * p + c)
            relp[c] = accp[c] / n + sigma_off * z
        project(ckind, radius, rel, md, A, V, lam, tmp)
        project(ckind, radius, relp, md, A, V, lam, tmp)
        for c in range(p):
            final[r, 1, 0, c] = rel[c]
            final[r, 1, 1, c] = relp[c]


def _replicate_types(kernel_types) -> tuple:
    """The argument types of ``_giga_replicate`` from those of ``giga_kernel`` (X .. final)."""
    f1 = types.Array(types.float64, 1, "C")
    f2 = types.Array(types.float64, 2, "C")
    return (types.int64,) + tuple(kernel_types)[:25] + (f1,) * 14 + (f2, f2, f1, f1)


_call_replicate = make_native_caller(lambda tys: _replicate_types(tys[1:]), "GIGA's replicate")


@njit(cache=True, parallel=True, nogil=True)
def _giga_parallel(replicate, X, Y, kidx, krows, reps, seed, perms, form, phi, q, ckind, radius, md,
                   alpha, T1, online, sig_coef, sigma_off, indep_noise, centers, ckpts, rec, rec_out, outs, final):
    """The replicates in parallel, each with its own scratch, through ``_giga_replicate``'s
    address (``native_call``: the replicate is compiled once, not linked and optimised again)."""
    R = centers.shape[0]
    p = centers.shape[1]
    d = X.shape[2]
    for r in prange(R):
        w = np.empty(p)
        wp = np.empty(p)
        v = np.empty(p)
        vp = np.empty(p)
        rel = np.empty(p)
        relp = np.empty(p)
        g = np.empty(p)
        gp = np.empty(p)
        gdummy = np.empty(p)
        acc = np.empty(p)
        accp = np.empty(p)
        racc = np.empty(p)
        raccp = np.empty(p)
        dx = np.empty(d)
        A = np.empty((md, md))
        V = np.empty((md, md))
        lam = np.empty(md)
        tmp = np.empty(md)
        _call_replicate(replicate, (np.int64(r), X, Y, kidx, krows, reps, seed, perms, form, phi, q, ckind,
                                    radius, md, alpha, T1, online, sig_coef, sigma_off, indep_noise, centers,
                                    ckpts, rec, rec_out, outs, final, w, wp, v, vp, rel, relp, g, gp, gdummy,
                                    acc, accp, racc, raccp, dx, A, V, lam, tmp))


#: compiled in a helper process while the callee compiles, on a cold cache (``native_call.address_for``)
_BESIDE = caller_beside(__name__, "_giga_parallel")


def giga_kernel(X, Y, kidx, krows, reps, seed, perms, form, phi, q, ckind, radius, md,
                alpha, T1, online, sig_coef, sigma_off, indep_noise, centers,
                ckpts, rec, rec_out, outs, final):
    """Run R coupled replicates of P3's (private) pairwise GIGA; see the module docstring.

    X (1, n + m, d), Y (1, n + m): the n rows of S then m replacement rows; S' replaces data
    index kidx[r] by row krows[r] (kidx[r] = -1: S' = S, whose gradients are computed once
    with shared noise).  perms (R, n): stream order.
    centers (R, p): regulariser centres.  ckpts (C,): increasing steps in 1..n.
    rec (R, C, N_REC_GIGA); outs (R, C, 2, p) when rec_out; final (R, 2, 2, p).
    """
    args = (X, Y, kidx, krows, reps, seed, perms, form, phi, q, ckind, radius, md, alpha, T1, online,
            sig_coef, sigma_off, indep_noise, centers, ckpts, rec, rec_out, outs, final)
    addr = address_for(_giga_replicate, args, _replicate_types, _BESIDE)
    _giga_parallel(addr, *args)
