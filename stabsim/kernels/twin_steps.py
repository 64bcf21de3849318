"""The step maths of the twin kernel: draws, pair gradients, one step of both runs, records.

The replicate (``twin_replicate.build_replicate``) runs these in its step loop; the entry point
is ``twin.twin_kernel``.  Both runs (S and its neighbour S') consume the same random stream
(same indices, same initial point, same Gaussian noise unless the noise is independent), which
is the coupling every stability bound assumes (docs/errata.md, Conventions, "Coupling").

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

Output conventions (``lag``; weights ``omegas[t]``):  the output after t steps is
sum_j omegas[j] w_{j - lag} / sum_j omegas[j], with w_{-1} := w_0.  P1: lag 2, omegas =
etas.  P0/P4 ((1/T) sum_{t=1}^T w_t in their numbering): lag 1, omegas = 1.  ``lag = -1``
(``LAST_ITERATE``): the last iterate (P2, P1 Thm 3/9).

Recorded at each checkpoint t (``rec[r, c, :]``, ``_record``):
0  ||w_t - w'_t||                       1  ||out_t - out'_t||
2  sum_{j<=t} fhat_j(w_{j-1})           3  sum_{j<=t} fhat_j(wref)
4  sum_{j<=t} eta_j^2 fhat_j(w_{j-1})
where fhat_j is the loss averaged over the pairs (points) used at step j, on S.  For
schedules whose step-j pair is drawn independently of w_{j-1} (UNIFORM_PAIR, POINTWISE,
and ALL_PREV's new draw), fhat_j(w_{j-1}) is an unbiased estimate of F_S(w_{j-1}).

Two paths:

* The fast kinds (``FAST_PREVIOUS``, ``FAST_PAIR``, ``FAST_POINT``: one pair or point per step
  and a linear margin) step both runs at once (``_twin_single_step``): the scalar f with
  grad = f (x_a - x_b), both runs' margins in one loop (two sums, each in its own order, whose
  dependency chains the CPU overlaps), and each w updated in one pass that also sums
  ||w_t||^2 for the l2 projection (``_apply_step``); when the step leaves w exactly where it
  was (zero gradient, no noise, no active projection: most hinge steps) nothing is written and
  the cached squared norm is reused.  These give exactly the numbers of the general path
  (gradient accumulated into a zeroed buffer, then ``constraints.project``), which the tests
  check.
* The general path (``_general_step``, ``_grad``: any schedule, any form).  FULL_BATCH with a
  linear margin uses ``allpairs.allpairs_grad`` (O(n d) for the squared loss, O(n log n + n d)
  for the hinge, O(n_+ n_- + n d) for the logistic loss, instead of the O(n^2 d) double loop);
  ALL_PREV with a linear margin uses the tight loop ``allprev.allprev_pairs`` (O(t d)) or, once
  t > n, the same sum over the n examples weighted by their counts among the previous draws
  (``allprev.allprev_counts``, O(n d)), and for the squared loss, once t > d, the running class
  statistics of ``pair_stats.allprev_squared`` (O(d^2) per step).  These agree with the double
  loops up to rounding (the tests compare them with tests/naive.py to 1e-12).

Helpers on the hot path are numba-inlined (``inline="always"``) at few call sites; numba
builds and copies an inlined callee's IR at each site, so deep chains of them would make the
compilation slow (``stabsim.compile.jit`` makes the copy linear in the callee's size; benchmarks/README.md,
"Compile time").
"""

from __future__ import annotations

import math

from numba import types
from numba.extending import intrinsic

from stabsim.engine.constraints import FROBENIUS, L2, project
from stabsim.compile.jit import njit
from stabsim.engine.losses import (AUC, AUC_ORDERED, RANKING, _linear_coef, linear_pair_coef, pair_loss_grad, point_coef,
                      point_coef_from_dot)
from stabsim.engine.rng import pair_ij, randint
from stabsim.kernels.allpairs import allpairs_grad
from stabsim.kernels.allprev import add_row, allprev_counts, allprev_pairs, row_score
from stabsim.kernels.pair_stats import allprev_squared

PREVIOUS, ALL_PREV, UNIFORM_PAIR, POINTWISE, FULL_BATCH = range(5)
N_REC = 5
#: The fast kinds poll their ``stop`` flag every STOP_POLL + 1 steps.
STOP_POLL = 4095
LAST_ITERATE = -1
NOISE_NONE, NOISE_SHARED, NOISE_INDEPENDENT = range(3)
# Kernel kinds: the three single-term schedules with a linear margin get a replicate each (their
# step is the whole cost, so it is written out in one pass); everything else shares GENERAL.
FAST_PREVIOUS, FAST_PAIR, FAST_POINT, GENERAL = range(4)


@intrinsic
def _stop_requested(typingctx, flag):
    """flag[0] != 0, read with an atomic (monotonic) load: another thread sets the flag, and a
    plain load of a loop-invariant address would be hoisted out of the step loop by LLVM."""
    if not (isinstance(flag, types.Array) and flag.dtype == types.int64):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        val = builder.load_atomic(ary.data, ordering="monotonic", align=8)
        return builder.icmp_signed("!=", val, context.get_constant(types.int64, 0))

    return types.boolean(flag), codegen


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
def _buffer_pairs(form, phi, q, w, Xs, Ys, hist, s, prime, k, krow, mult, g):
    """PREVIOUS with s > 1 and a linear margin (P1 Remark 7's buffer update): the average loss
    (1/s) sum_{j=1}^s f(w; z_{i_t}, z_{i_{t-j}}), and g += mult * its gradient, written as
    ``allprev.allprev_pairs``: the score w.x_a once, one score w.x_b per buffered draw, the
    gradient as one weighted sum of rows.  The pairs' sum of ``pair_loss_grad`` calls in real
    arithmetic; in floating point w.(x_a - x_b) is sa - sb and the gradient (sum_j e_j) x_a -
    sum_j e_j x_b, so the numbers agree with the per-pair loop to rounding (tests/naive.py to
    1e-12); a step is faster than the per-pair loop (benchmarks/README.md, "Where the CPU goes")."""
    a = _rowid(_ring(hist, s, 0), prime, k, krow)
    ya = Ys[a]
    sa = row_score(w, Xs, a)
    tot = 0.0
    ca = 0.0
    f = mult / s
    for jj in range(1, s + 1):
        b = _rowid(_ring(hist, s, jj), prime, k, krow)
        yb = Ys[b]
        if form != RANKING and _linear_coef(form, ya, yb) == 0.0:
            continue   # same-label AUC pair: zero loss and gradient
        sb = row_score(w, Xs, b)
        v, fc = linear_pair_coef(form, phi, q, sa - sb, ya, yb)
        tot += v
        e = f * fc
        if e != 0.0:
            ca += e
            add_row(g, -e, Xs, b)
    if ca != 0.0:
        add_row(g, ca, Xs, a)
    return tot / s


@njit(cache=True)
def _grad(schedule, t, s, n, hist, Xs, Ys, prime, k, krow, form, phi, q, w, mult, g, dx, work, stats):
    """Add mult * (average gradient of the step-t pairs at w) to g; return the average loss.

    The general path (any schedule, any form).  ``work`` is the allpairs workspace
    (FULL_BATCH), or for ALL_PREV how often each example is among the previous draws (length n
    when ``twin_layout`` keeps counts, else 0); ``stats`` the running class statistics of the
    previous draws of this run (ALL_PREV with the squared loss; a size-0 array otherwise).
    """
    linear = form == AUC or form == AUC_ORDERED or form == RANKING
    tot = 0.0
    if schedule == PREVIOUS:
        ia = _ring(hist, s, 0)
        if s == 1:
            return _pair(form, phi, q, w, Xs, Ys, ia, _ring(hist, s, 1), prime, k, krow, mult, g, dx)
        if linear:
            return _buffer_pairs(form, phi, q, w, Xs, Ys, hist, s, prime, k, krow, mult, g)
        sc = mult / s
        for jj in range(1, s + 1):
            tot += _pair(form, phi, q, w, Xs, Ys, ia, _ring(hist, s, jj), prime, k, krow, sc, g, dx)
        return tot / s
    if schedule == ALL_PREV:
        a = _rowid(hist[t], prime, k, krow)
        if linear:
            if stats.shape[1] > 0 and t > Xs.shape[1]:
                return allprev_squared(form, w, Xs, Ys, a, t, stats, mult, g, dx)
            if work.shape[0] > 0 and t > n:
                return allprev_counts(form, phi, q, w, Xs, Ys, a, work, n, t, prime, k, krow, mult, g)
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
def _twin_single_step(form, phi, q, ckind, radius, noisy, pair, W, Xs, a0, b0, ya0, yb0, a1, b1, ya1, yb1,
                      eta, nz, nr1, nrm2, mirror, d, E):
    """One step of both runs with a single pair (rows a, b, labels ya, yb; run 0 = S, run 1 =
    S') or point (row a, label ya, b = -1) and a linear margin, in place:
    w = W[run, 1] <- Pi(w - eta (f (x_a - x_b) + noise)), grad f(w) = f (x_a - x_b) (f x_a for
    points).  The two margins are summed in one loop: two independent sums, each in the order
    of a loop on its own (so the same numbers), whose dependency chains the CPU overlaps
    (benchmarks/README.md, "The twin kernel's design").  The updates are ``_apply_step``.

    ``mirror``: S' = S with shared noise: run S' is run S, so its update is skipped (``_record``
    reads run S for both).

    ``d``: the dimension, Xs.shape[1] (an argument so that a specialised GPU build can make it a
    compile-time constant: its loops are then unrolled and the iterates kept in registers).

    ``E`` (2, d) scratch: the rows' difference x_a - x_b (x_a for a point) is read from the data
    once per step, into E[0] (E[1] for S' when its rows differ, i.e. the step touches the
    replaced example), and both the margins and the updates use it: the same numbers as reading
    the rows in each loop, with a quarter of the data reads (on a GPU each read is a gather of
    one row per thread, which bounded the kernel's speed).

    Returns (loss of run S at the iterate before the step, whether w changed in S, in S')."""
    live0 = True   # same-label AUC pairs have zero loss and gradient: no margin needed
    live1 = True
    if pair and form != RANKING:
        live0 = _linear_coef(form, ya0, yb0) != 0.0
        live1 = _linear_coef(form, ya1, yb1) != 0.0
    if mirror:
        live1 = False
    dot0 = 0.0
    dot1 = 0.0
    same = a1 == a0 and (b1 == b0 or not pair)   # S' reads the rows S reads
    if live0 or live1 or noisy:   # (noise moves w even with a zero coefficient: E is read then)
        for c in range(d):
            e0 = Xs[a0, c] - Xs[b0, c] if pair else Xs[a0, c]
            E[0, c] = e0
            dot0 += W[0, 1, c] * e0
            if same:
                dot1 += W[1, 1, c] * e0
            else:
                e1 = Xs[a1, c] - Xs[b1, c] if pair else Xs[a1, c]
                E[1, c] = e1
                dot1 += W[1, 1, c] * e1
    val0 = 0.0
    f0 = 0.0
    f1 = 0.0
    if live0:
        if pair:
            val0, f0 = linear_pair_coef(form, phi, q, dot0, ya0, yb0)
        else:
            val0, f0 = point_coef_from_dot(form, phi, q, dot0, ya0)
    if live1:
        if pair:
            f1 = linear_pair_coef(form, phi, q, dot1, ya1, yb1)[1]
        else:
            f1 = point_coef_from_dot(form, phi, q, dot1, ya1)[1]
    moved0 = _apply_step(ckind, radius, noisy, W, 0, E, 0, f0, eta, nz, 0, nrm2, d)
    moved1 = False if mirror else _apply_step(ckind, radius, noisy, W, 1, E, 0 if same else 1, f1, eta, nz, nr1,
                                              nrm2, d)
    return val0, moved0, moved1


@njit(cache=True, inline="always")
def _apply_step(ckind, radius, noisy, W, run, E, er, f, eta, nz, nr, nrm2, d):
    """The update of ``_twin_single_step`` for one run, given the gradient coefficient f: the
    same floating-point operations as accumulating the gradient into a zeroed buffer and
    projecting with ``constraints.project``.  The squared norm that the l2 projection needs is
    summed in the update pass, and reused when the iterate did not move (``nrm2[run]``: the
    squared norm of W[run, 1], or -1 if unknown).  When the step leaves w exactly as it was
    (no noise, zero gradient, no active projection) nothing is written.  Returns whether w
    changed.  ``E[er]``: the rows' difference (x_a - x_b, or x_a), ``d``: the dimension (see
    ``_twin_single_step``)."""
    l2 = ckind == L2 or ckind == FROBENIUS
    s = 0.0
    moved = noisy or f != 0.0
    if moved:
        for c in range(d):
            gc = f * _row(E, er, c)
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
    return moved


@njit(cache=True, inline="always")
def _fast_draw(KIND, key, t, seq, n):
    """The indices of step t on a fast kind: (i_t, -1) for PREVIOUS (the pair's second index is
    i_{t-1}) and POINTWISE, (i, j) for UNIFORM_PAIR."""
    if KIND == FAST_PAIR:
        return pair_ij(key, t, n)
    if KIND == FAST_PREVIOUS and seq:
        return t, -1
    return randint(key, t, n), -1


@njit(cache=True, inline="always")
def _fast_labels(KIND, Ys, a, b):
    """Labels on S of step t's indices from ``_fast_draw``; an index past the data (the
    look-ahead after the last step of a sequential pass) reads the last row, unused."""
    last = Ys.shape[0] - 1
    ya = Ys[min(a, last)]
    yb = Ys[min(b, last)] if KIND == FAST_PAIR else 0.0
    return ya, yb


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
def _record(rec, outs, rec_out, r, ci, W, acc, pend0, pend1, wsum, lag, lsum, lrsum, l2sum, r1):
    """Write checkpoint ci of replicate r (see the module docstring for rec's columns); w_t is
    W[0, 1] (run S) and W[r1, 1] (run S': r1 = 1, or 0 when the replicate mirrors S).  The
    weighted sums are acc plus, for lags 1 and 2, the deferred weights pend0/pend1 times slot 0
    (acc itself is not changed, so the numbers at a step do not depend on which other steps are
    checkpoints)."""
    p = W.shape[2]
    dd = 0.0
    for c in range(p):
        e = W[0, 1, c] - _run(W, r1, 1, c)
        dd += e * e
    rec[r, ci, 0] = math.sqrt(dd)
    if lag >= 0:
        dd = 0.0
        for c in range(p):
            e = (_pending_sum(acc[0, c], pend0, W[0, 0, c])
                 - _pending_sum(_row(acc, r1, c), pend1, _run(W, r1, 0, c))) / wsum
            dd += e * e
        rec[r, ci, 1] = math.sqrt(dd)
    else:
        rec[r, ci, 1] = rec[r, ci, 0]
    rec[r, ci, 2] = lsum
    rec[r, ci, 3] = lrsum
    rec[r, ci, 4] = l2sum
    if rec_out:
        for c in range(p):
            outs[r, ci, 0, c] = _pending_sum(acc[0, c], pend0, W[0, 0, c]) / wsum if lag >= 0 else W[0, 1, c]
            outs[r, ci, 1, c] = (_pending_sum(_row(acc, r1, c), pend1, _run(W, r1, 0, c)) / wsum if lag >= 0
                                 else _run(W, r1, 1, c))


@njit(cache=True, inline="always")
def _run(W, r1, slot, c):
    """W[r1, slot, c] with r1 in {0, 1}, read with constant indices: a GPU build keeps arrays in
    registers only when every index is known at compile time."""
    return W[1, slot, c] if r1 == 1 else W[0, slot, c]


@njit(cache=True, inline="always")
def _row(a, r1, c):
    """a[r1, c] with r1 in {0, 1}, read with constant indices (see _run)."""
    return a[1, c] if r1 == 1 else a[0, c]


@njit(cache=True, inline="always")
def _pending_sum(a, pend, w):
    """acc + pend * w, with no operation at all when nothing is pending (other lags, the
    general path): then the number is exactly the running sum."""
    return a + pend * w if pend != 0.0 else a

