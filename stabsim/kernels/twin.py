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
``ALL_PREV``    P0 Alg. 1: draw i_{t+1}, pair it with all previous i_1..i_t.
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

How the kernel is made fast
---------------------------
``twin_kernel`` (the entry point, same arguments for every configuration) runs one of four
compiled kernels (``kernel_kind``): ``FAST_PREVIOUS`` (P1 Alg. 1/2: PREVIOUS with s = 1),
``FAST_PAIR`` (UNIFORM_PAIR: SGD_pair, P4 Alg. 2) and ``FAST_POINT`` (P4 Alg. 1), each with a
linear margin, and ``GENERAL`` for everything else (buffers s > 1, ALL_PREV, FULL_BATCH,
metric learning).  The kind is a closure constant of ``_build``, so numba drops the other
kinds' code before typing; loss, constraint, output and noise stay run-time codes (a
well-predicted branch costs far less than a compilation for each of their combinations
would: four kernels compile in about 75 s once, then load from the on-disk cache).

* Iterates live in a (2, 2, p) array W[run, slot]: slot 1 holds w_{t-1} and is updated in
  place into w_t; slot 0 holds w_{t-2}, kept only for the lag-2 output.  Slot 0 is copied from
  slot 1 before each step, unless the previous step left w unchanged: then the two slots
  already hold the same vector and the copy is skipped (exact).  Fixed slots keep the step's
  loads at fixed addresses.  An earlier design rotated three slots and let an unmoved iterate
  share its predecessor's slot (no copies), but then the next step's loads depended on the
  previous step's margin test, which chained the steps together; it ran 10-15% slower at
  d = 10 (benchmarks/README.md, "Compile time").
* A single-term step (``_single_step``) computes the scalar f with grad = f (x_a - x_b) and
  updates w in one pass that also sums ||w_t||^2 for the l2 projection; when the step leaves
  w exactly where it was (zero gradient, no noise, no active projection: most hinge steps)
  nothing is written and the cached squared norm is reused.  These give exactly the numbers
  of the general path (gradient accumulated into a zeroed buffer, then
  ``constraints.project``), which the tests check.
* FULL_BATCH with a linear margin uses ``allpairs.allpairs_grad`` (O(n d) for the squared
  loss, O(n log n + n d) for the hinge, O(n_+ n_- + n d) for the logistic loss, instead of the
  O(n^2 d) double loop); ALL_PREV with a linear margin uses the tight loop
  ``allpairs.allprev_pairs`` (O(t d)), and for the squared loss, once t > d, the running class
  statistics of ``allpairs.allprev_squared`` (O(d^2) per step).  These agree with the double
  loops up to rounding (see allpairs.py; the tests compare them with tests/naive.py to 1e-12).
* Helpers on the hot path are numba-inlined (``inline="always"``) at few call sites; numba
  deep-copies an inlined callee's IR at each site, so deep chains of them would make the
  compilation slow (benchmarks/README.md, "Compile time").
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numba import njit, prange

from ..constraints import FROBENIUS, L2, project
from ..losses import (AUC, AUC_ORDERED, POINT, POINT_LSQ, RANKING, SQUARED, _linear_coef, linear_pair_coef,
                      pair_loss_grad, point_coef, point_coef_from_dot)
from ..rng import STREAM_INDEX, STREAM_NOISE, STREAM_NOISE_PRIME, normal, pair_ij, randint, stream_key
from .allpairs import allpairs_grad, allprev_pairs, allprev_squared, stats_add

PREVIOUS, ALL_PREV, UNIFORM_PAIR, POINTWISE, FULL_BATCH = range(5)
N_REC = 5
LAST_ITERATE = -1
NOISE_NONE, NOISE_SHARED, NOISE_INDEPENDENT = range(3)

_LINEAR_PAIR_FORMS = (AUC, AUC_ORDERED, RANKING)


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


@njit(cache=True)
def _first_draws(schedule, key, s, seq, n, hist):
    """The indices drawn before step 1 (i_{1-s}..i_0 for PREVIOUS, i_1 for ALL_PREV)."""
    if schedule == PREVIOUS:
        for c0 in range(s):
            hist[c0] = c0 if seq else randint(key, c0, n)
        hist[s + 1] = s - 1  # head: slot of the newest index
    elif schedule == ALL_PREV:
        hist[0] = 0 if seq else randint(key, 0, n)


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


@njit(cache=True)
def _pair(form, phi, q, w, Xs, Ys, i, j, prime, k, krow, scale, g, dx):
    a = _rowid(i, prime, k, krow)
    b = _rowid(j, prime, k, krow)
    return pair_loss_grad(form, phi, q, w, Xs, a, Ys[a], b, Ys[b], scale, g, dx)


@njit(cache=True)
def _grad(schedule, t, s, n, hist, Xs, Ys, prime, k, krow, form, phi, q, w, mult, g, dx, work, stats):
    """Add mult * (average gradient of the step-t pairs at w) to g; return the average loss.

    The general path (any schedule, any form).  ``work`` is the allpairs workspace
    (FULL_BATCH); ``stats`` the running class statistics of the previous draws of this run
    (ALL_PREV with the squared loss; a size-0 array otherwise).
    """
    linear = form == AUC or form == AUC_ORDERED or form == RANKING
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
        a = _rowid(hist[t], prime, k, krow)
        if linear:
            if stats.shape[1] > 0 and t > Xs.shape[1]:
                return allprev_squared(form, w, Xs, Ys, a, t, stats, mult, g, dx)
            return allprev_pairs(form, phi, q, w, Xs, Ys, a, hist, t, prime, k, krow, mult, g)
        sc = mult / t
        for kk in range(t):
            tot += _pair(form, phi, q, w, Xs, Ys, hist[t], hist[kk], prime, k, krow, sc, g, dx)
        return tot / t
    if schedule == UNIFORM_PAIR:
        return _pair(form, phi, q, w, Xs, Ys, hist[0], hist[1], prime, k, krow, mult, g, dx)
    if schedule == POINTWISE:
        a = _rowid(hist[0], prime, k, krow)
        val, f = point_coef(form, phi, q, w, Xs, a, Ys[a])
        f = mult * f
        if f != 0.0:
            for c in range(Xs.shape[1]):
                g[c] += f * Xs[a, c]
        return val
    # FULL_BATCH
    if linear:
        return allpairs_grad(form, phi, q, n, Xs, Ys, prime, k, krow, w, mult, g, work)
    sc = mult / (n * (n - 1.0))
    for i in range(n):
        for j in range(n):
            if j != i:
                tot += _pair(form, phi, q, w, Xs, Ys, i, j, prime, k, krow, sc, g, dx)
    return tot / (n * (n - 1.0))


@njit(cache=True, inline="always")
def _single_step(form, phi, q, ckind, radius, noisy, pair, W, run, Xs, Ys, a, b, eta, nz, nr, nrm2):
    """One step with a single pair (rows a, b) or point (row a, b = -1) and a linear margin, in
    place: w = W[run, 1] <- Pi(w - eta (f (x_a - x_b) + noise)) with grad f(w) = f (x_a - x_b)
    (f x_a for points).  The same floating-point operations as accumulating the gradient into a
    zeroed buffer and projecting with ``constraints.project``; the squared norm that the l2
    projection needs is summed in the update pass, and reused when the iterate did not move
    (``nrm2[run]``: the squared norm of W[run, 1], or -1 if unknown).  When the step leaves w
    exactly as it was (no noise, zero gradient, no active projection) nothing is written.

    Returns (loss at the iterate before the step, whether w changed)."""
    d = Xs.shape[1]
    if pair:
        ya = Ys[a]
        yb = Ys[b]
        if form != RANKING and _linear_coef(form, ya, yb) == 0.0:
            val = 0.0  # same-label AUC pair: zero loss and gradient
            f = 0.0
        else:
            dot = 0.0
            for c in range(d):
                dot += W[run, 1, c] * (Xs[a, c] - Xs[b, c])
            val, f = linear_pair_coef(form, phi, q, dot, ya, yb)
    else:
        dot = 0.0
        for c in range(d):
            dot += W[run, 1, c] * Xs[a, c]
        val, f = point_coef_from_dot(form, phi, q, dot, Ys[a])
    l2 = ckind == L2 or ckind == FROBENIUS
    s = 0.0
    moved = noisy or f != 0.0
    if moved:
        for c in range(d):
            gc = f * (Xs[a, c] - Xs[b, c]) if pair else f * Xs[a, c]
            if noisy:
                gc += nz[nr, c]
            v = W[run, 1, c] - eta * gc
            W[run, 1, c] = v
            s += v * v
    elif l2:
        s = nrm2[run]
        if s < 0.0:
            s = 0.0
            for c in range(d):
                s += W[run, 1, c] * W[run, 1, c]
        moved = s > radius * radius  # w did not move but lies outside the ball (e.g. w_0)
    if l2:
        if moved and s > radius * radius:
            sc = radius / math.sqrt(s)
            for c in range(d):
                W[run, 1, c] *= sc
            nrm2[run] = -1.0
        else:
            nrm2[run] = s
    return val, moved


# Kernel kinds: the three single-term schedules with a linear margin get a kernel each (their
# step is the whole cost, so it is written out in one pass); everything else shares GENERAL.
FAST_PREVIOUS, FAST_PAIR, FAST_POINT, GENERAL = range(4)


def kernel_kind(schedule: int, s: int, form: int) -> int:
    """Which compiled kernel runs a configuration (see ``_build``)."""
    if schedule == PREVIOUS and s == 1 and form in _LINEAR_PAIR_FORMS:
        return FAST_PREVIOUS
    if schedule == UNIFORM_PAIR and form in _LINEAR_PAIR_FORMS:
        return FAST_PAIR
    if schedule == POINTWISE and form in (POINT, POINT_LSQ):
        return FAST_POINT
    return GENERAL


def _build(KIND):
    """The parallel twin kernel of one kind.  ``KIND`` is a closure constant, so numba drops the
    code of the other kinds before typing; the loss, constraint, output and noise codes stay
    run-time arguments (well-predicted branches cost far less than a compilation for every
    combination would)."""
    FAST = KIND != GENERAL
    PAIR = KIND != FAST_POINT

    @njit(cache=True, parallel=True)
    def kernel(X, Y, kidx, krows, reps, seed, schedule, s, seq, form, phi, q, ckind, radius, md,
               etas, omegas, lag, noise, sigma, has_ref, wref, W0, ckpts, rec, rec_out, outs):
        R = W0.shape[0]
        p = W0.shape[1]
        n = X.shape[1] - (R if X.shape[0] == 1 else 1)
        d = X.shape[2]
        T = etas.shape[0] - 1
        C = ckpts.shape[0]
        linear = form == AUC or form == AUC_ORDERED or form == RANKING
        hlen = T + 1 if schedule == ALL_PREV else s + 2
        nwork = 4 * n + 160 if (schedule == FULL_BATCH and linear) else 0
        use_stats = schedule == ALL_PREV and phi == SQUARED and linear
        if use_stats:  # class statistics need labels in {-1, +1} (``ranking`` allows any)
            for i in range(Y.shape[0]):
                for j in range(Y.shape[1]):
                    if Y[i, j] != 1.0 and Y[i, j] != -1.0:
                        use_stats = False
        slen = 1 + d + d * d if use_stats else 0
        noisy = noise != NOISE_NONE
        nr1 = 1 if noise == NOISE_INDEPENDENT else 0   # row of nz holding the noise of S'
        for r in prange(R):
            sidx = np.int64(r) if X.shape[0] > 1 else np.int64(0)
            Xs = X[sidx]
            Ys = Y[sidx]
            k = kidx[r]
            krow = krows[r]
            key_i = stream_key(seed, reps[r], STREAM_INDEX)
            key_n = stream_key(seed, reps[r], STREAM_NOISE)
            key_np = stream_key(seed, reps[r], STREAM_NOISE_PRIME)
            W = np.empty((2, 2, p))       # [run, slot, :]: runs 0 = S, 1 = S'; slots 0 = w_{t-2}, 1 = w_{t-1}
            for run in range(2):
                for sl in range(2):
                    for c in range(p):
                        W[run, sl, c] = W0[r, c]
            g = np.zeros((2, p))
            acc = np.zeros((2, p))
            nz = np.zeros((2, p))
            dx = np.empty(max(d, p))
            hist = np.zeros(hlen, dtype=np.int64)
            A = np.empty((md, md))
            V = np.empty((md, md))
            lam = np.empty(md)
            tmp = np.empty(md)
            work = np.empty(nwork)
            stats = np.zeros((2, 2, slen))  # [run, class, :] class statistics of the previous draws
            nrm2 = np.full(2, -1.0)          # squared norms of the runs' w_{t-1} (-1: unknown)
            # slot 0 already equals slot 1 (the last step left w unchanged: its copy can be skipped)
            same0 = True
            same1 = True
            _first_draws(schedule, key_i, s, seq, n, hist)
            if use_stats:
                for run in range(2):
                    stats_add(stats[run], Xs, Ys, _rowid(hist[0], run == 1, k, krow))
            wsum = 0.0
            lsum = 0.0
            lrsum = 0.0
            l2sum = 0.0
            ci = 0
            ia = hist[0]   # fast kinds: the step's indices (ib = -1 for a point)
            ib = -1
            for t in range(1, T + 1):
                if KIND == FAST_PREVIOUS:
                    ib = ia
                    ia = t if seq else randint(key_i, t, n)
                elif KIND == FAST_PAIR:
                    ia, ib = pair_ij(key_i, t, n)
                elif KIND == FAST_POINT:
                    ia = randint(key_i, t, n)
                else:
                    _draw(schedule, key_i, t, s, seq, n, hist)
                if noisy:
                    for c in range(p):
                        nz[0, c] = sigma * normal(key_n, t * p + c)
                    if noise == NOISE_INDEPENDENT:
                        for c in range(p):
                            nz[1, c] = sigma * normal(key_np, t * p + c)
                eta = etas[t]
                om = omegas[t]
                if lag == 2:   # the output averages w_{t-2} (w_{-1} = w_0)
                    for run in range(2):
                        for c in range(p):
                            acc[run, c] += om * W[run, 0, c]
                    if not same0:   # w_{t-1} becomes the next step's w_{t-2}
                        for c in range(p):
                            W[0, 0, c] = W[0, 1, c]
                    if not same1:
                        for c in range(p):
                            W[1, 0, c] = W[1, 1, c]
                elif lag == 1:
                    for run in range(2):
                        for c in range(p):
                            acc[run, c] += om * W[run, 1, c]
                if FAST:  # both runs written out: each inlined copy sees a constant run
                    fval, moved = _single_step(form, phi, q, ckind, radius, noisy, PAIR, W, 0, Xs, Ys, ia, ib,
                                               eta, nz, 0, nrm2)
                    same0 = not moved
                    ap = _rowid(ia, True, k, krow)
                    bp = _rowid(ib, True, k, krow) if PAIR else -1
                    _, moved = _single_step(form, phi, q, ckind, radius, noisy, PAIR, W, 1, Xs, Ys, ap, bp, eta,
                                            nz, nr1, nrm2)
                    same1 = not moved
                else:
                    fval = _general_step(schedule, t, s, n, hist, Xs, Ys, k, krow, form, phi, q, ckind,
                                         radius, md, eta, noisy, nz, 0, W, 0, g, dx, work, stats, A, V, lam, tmp)
                    _general_step(schedule, t, s, n, hist, Xs, Ys, k, krow, form, phi, q, ckind,
                                  radius, md, eta, noisy, nz, nr1, W, 1, g, dx, work, stats, A, V, lam, tmp)
                    same0 = False
                    same1 = False
                if lag == 0:
                    for run in range(2):
                        for c in range(p):
                            acc[run, c] += om * W[run, 1, c]
                if has_ref:
                    if FAST and PAIR:
                        lrsum += _pair(form, phi, q, wref, Xs, Ys, ia, ib, False, k, krow, 0.0, g[0], dx)
                    elif FAST:
                        lrsum += point_coef(form, phi, q, wref, Xs, ia, Ys[ia])[0]
                    else:
                        lrsum += _grad(schedule, t, s, n, hist, Xs, Ys, False, k, krow, form, phi, q,
                                       wref, 0.0, g[0], dx, work, stats[0])
                if not FAST and use_stats:   # (only ALL_PREV uses statistics: a GENERAL schedule)
                    for run in range(2):
                        stats_add(stats[run], Xs, Ys, _rowid(hist[t], run == 1, k, krow))
                lsum += fval
                l2sum += eta * eta * fval
                if lag >= 0:
                    wsum += om
                if ci < C and ckpts[ci] == t:
                    _record(rec, outs, rec_out, r, ci, W, acc, wsum, lag, lsum, lrsum, l2sum)
                    ci += 1

    return kernel


@njit(cache=True)
def _general_step(schedule, t, s, n, hist, Xs, Ys, k, krow, form, phi, q, ckind, radius, md, eta,
                  noisy, nz, nr, W, run, g, dx, work, stats, A, V, lam, tmp):
    """One step of one run on the general path, in place: w = W[run, 1] <- Pi(w - eta (g + noise))
    with g the average gradient of the step's pairs at w (``_grad``, computed in full before w
    changes).  Returns the average loss."""
    p = W.shape[2]
    for c in range(p):
        g[run, c] = 0.0
    val = _grad(schedule, t, s, n, hist, Xs, Ys, run == 1, k, krow, form, phi, q, W[run, 1], 1.0,
                g[run], dx, work, stats[run])
    if noisy:
        for c in range(p):
            g[run, c] += nz[nr, c]
    for c in range(p):
        W[run, 1, c] = W[run, 1, c] - eta * g[run, c]
    project(ckind, radius, W[run, 1], md, A, V, lam, tmp)
    return val


@njit(cache=True)
def _record(rec, outs, rec_out, r, ci, W, acc, wsum, lag, lsum, lrsum, l2sum):
    """Write checkpoint ci of replicate r (see the module docstring for rec's columns); w_t is
    W[0, 1] (run S) and W[1, 1] (run S')."""
    p = W.shape[2]
    dd = 0.0
    for c in range(p):
        e = W[0, 1, c] - W[1, 1, c]
        dd += e * e
    rec[r, ci, 0] = math.sqrt(dd)
    if lag >= 0:
        dd = 0.0
        for c in range(p):
            e = (acc[0, c] - acc[1, c]) / wsum
            dd += e * e
        rec[r, ci, 1] = math.sqrt(dd)
    else:
        rec[r, ci, 1] = rec[r, ci, 0]
    rec[r, ci, 2] = lsum
    rec[r, ci, 3] = lrsum
    rec[r, ci, 4] = l2sum
    if rec_out:
        for c in range(p):
            outs[r, ci, 0, c] = acc[0, c] / wsum if lag >= 0 else W[0, 1, c]
            outs[r, ci, 1, c] = acc[1, c] / wsum if lag >= 0 else W[1, 1, c]


@njit(cache=True)
def checkpoint_sums(etas, ckpts):
    """(sum_{j<=t} eta_j, sum_{j<=t} eta_j^2) at the checkpoints t, summed left to right (the
    same numbers as ``np.cumsum``, without an array of all T partial sums)."""
    out = np.empty((2, ckpts.shape[0]))
    s1 = 0.0
    s2 = 0.0
    ci = 0
    for t in range(1, ckpts[-1] + 1):
        e = etas[t]
        s1 += e
        s2 += e * e
        if ckpts[ci] == t:
            out[0, ci] = s1
            out[1, ci] = s2
            ci += 1
    return out


@lru_cache(maxsize=None)
def _kernel(kind):
    return _build(kind)


def twin_kernel(X, Y, kidx, krows, reps, seed, schedule, s, seq, form, phi, q, ckind, radius, md,
                etas, omegas, avg_lag, sigma, indep_noise, has_ref, wref, W0, ckpts, rec, rec_out, outs,
                kind=None):
    """Run R coupled replicates; see the module docstring for the arguments' meaning.

    X (nS, n + m, d), Y (nS, n + m): nS = 1 (one data set) or R (one per replicate); the first
    n rows are S, the extra m rows hold the replacement points.  S' replaces example
    kidx[r] by row krows[r] (kidx[r] = -1 makes S' = S).  W0 (R, p): initial points.
    etas, omegas (T+1,), index 0 unused.  ckpts (C,): increasing steps in 1..T.
    rec (R, C, N_REC) is written; outs (R, C, 2, p) receives the outputs on S and S' when
    rec_out.  Nothing is allocated inside the step loop.  ``kind`` overrides ``kernel_kind``
    (``GENERAL`` runs any configuration; the tests use it to check that the fast kinds give
    bit-identical results).
    """
    sigma = float(sigma)
    noise = NOISE_NONE if sigma == 0.0 else (NOISE_INDEPENDENT if indep_noise else NOISE_SHARED)
    i64 = np.int64
    _kernel(kernel_kind(int(schedule), int(s), int(form)) if kind is None else int(kind))(
        X, Y, kidx, krows, reps, i64(seed), i64(schedule), i64(s), i64(seq), i64(form), i64(phi),
        float(q), i64(ckind), float(radius), i64(md), etas, omegas, i64(avg_lag), i64(noise),
        sigma, bool(has_ref), wref, W0, ckpts, rec, bool(rec_out), outs)
