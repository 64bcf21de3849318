"""The twin-trajectory kernel: one algorithm run on S and on its neighbour S' in lockstep.

Both runs consume the same random stream (same indices, same initial point, same
Gaussian noise unless ``indep_noise``), which is the coupling every stability bound
assumes (docs/errata.md, Conventions, "Coupling").  Replicates run in parallel with ``prange``;
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
compiled replicates (``kernel_kind``): ``FAST_PREVIOUS`` (P1 Alg. 1/2: PREVIOUS with s = 1),
``FAST_PAIR`` (UNIFORM_PAIR: SGD_pair, P4 Alg. 2) and ``FAST_POINT`` (P4 Alg. 1), each with a
linear margin, and ``GENERAL`` for everything else (buffers s > 1, ALL_PREV, FULL_BATCH,
metric learning).  The kind is a closure constant of ``build_replicate``, so numba drops the
other kinds' code before typing; loss, constraint, output and noise stay run-time codes (a
well-predicted branch costs far less than a compilation for each of their combinations
would).  One replicate is ``build_replicate(KIND, ...)``, a function of its scratch arrays: the
CPU kernel (``_twin_kernel``, one for all kinds) allocates them in its ``prange`` loop and calls
the kind's replicate through its address (``native_call``: compiled once, not once per kind);
the CUDA kernel (``twin_cuda``) calls the same function on each thread's slices of device
arrays, so the step is written once for both backends.

* Iterates live in a (2, 2, p) array W[run, slot]: slot 1 holds w_{t-1} and is updated in
  place into w_t; slot 0 holds the iterate the output sum is waiting for (w_{t-2} for the
  lag-2 output, w_{t-1} for lag 1).  Slot 0 is copied from slot 1 before each step, unless
  the previous step left w unchanged: then the two slots already hold the same vector and the
  copy is skipped (exact).  Fixed slots keep the step's
  loads at fixed addresses.  An earlier design rotated three slots and let an unmoved iterate
  share its predecessor's slot (no copies), but then the next step's loads depended on the
  previous step's margin test, which chained the steps together; it ran 10-15% slower at
  d = 10 (benchmarks/README.md, "Compile time").
* A single-term step (``_twin_single_step``) computes the scalar f with grad = f (x_a - x_b)
  for both runs, their two margins in one loop (two sums, each in its own order, whose
  dependency chains the CPU overlaps: at d = 100 the kernel went from 106 to 82 ns per twin
  step), and updates each w in one pass that also sums ||w_t||^2 for the l2 projection; when
  the step leaves w exactly where it was (zero gradient, no noise, no active projection:
  most hinge steps) nothing is written and the cached squared norm is reused.  These give
  exactly the numbers of the general path (gradient accumulated into a zeroed buffer, then
  ``constraints.project``), which the tests check.
* The fast kinds draw step t+1's indices (and read their labels) during step t.  The draws
  do not depend on w, so no number changes, but the often mispredicted same-label and margin
  branches then resolve without waiting for the hash and the loads: about 3 ns of 35 per twin
  step at d = 10.
* The lag-2 and lag-1 outputs are summed with deferred weights: while the averaged iterate
  stays the same, its weights omega_j are summed, and added to the output sum as one product
  (sum_j omega_j) w when it changes (or read at a checkpoint).  Exact in real arithmetic; in
  floating point it rounds differently from adding omega_j w step by step (each within T
  roundings of the exact sum), so the fast kinds' outputs agree with the general path, which
  adds every step, to rounding, not bit for bit.  The P1 C loop in benchmarks/ sums the same
  way.  (Lag 0, the mean of w_1..w_T, still adds every step.)
* FULL_BATCH with a linear margin uses ``allpairs.allpairs_grad`` (O(n d) for the squared
  loss, O(n log n + n d) for the hinge, O(n_+ n_- + n d) for the logistic loss, instead of the
  O(n^2 d) double loop); ALL_PREV with a linear margin uses the tight loop
  ``allpairs.allprev_pairs`` (O(t d)) or, once t > n, the same sum over the n examples weighted
  by their counts among the previous draws (``allpairs.allprev_counts``, O(n d)), and for the
  squared loss, once t > d, the running class statistics of ``allpairs.allprev_squared``
  (O(d^2) per step).  These agree with the double
  loops up to rounding (see allpairs.py; the tests compare them with tests/naive.py to 1e-12).
* Helpers on the hot path are numba-inlined (``inline="always"``) at few call sites; numba
  builds and copies an inlined callee's IR at each site, so deep chains of them would make the
  compilation slow (benchmarks/README.md, "Compile time"; ``stabsim.jit`` makes the copy
  linear in the callee's size).
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
from numba import prange, typeof, types
from numba._dispatcher import compute_fingerprint
from ..jit import njit
from numba.core.errors import NumbaPerformanceWarning
from numba.extending import intrinsic

from ..constraints import FROBENIUS, L2, project
from ..losses import (AUC, AUC_ORDERED, POINT, POINT_LSQ, RANKING, SQUARED, _linear_coef, linear_pair_coef,
                      linear_pair_value, pair_loss_grad, point_coef, point_coef_from_dot)
from ..rng import STREAM_INDEX, STREAM_NOISE, STREAM_NOISE_PRIME, normal, pair_ij, randint, stream_key
from .. import compile_beside
from .._signals import call_interruptible, new_stop_flag
from .allpairs import add_row, allpairs_grad, allprev_counts, allprev_pairs, allprev_squared, row_score, stats_add
from .native_call import address_for, caller_beside, make_native_caller
from .nrt_free import NRT_FREE
from .pipeline import LeanCompiler, SimplifiedCompiler

PREVIOUS, ALL_PREV, UNIFORM_PAIR, POINTWISE, FULL_BATCH = range(5)
N_REC = 5
#: The fast kernels poll their ``stop`` flag every STOP_POLL + 1 steps (about 0.15 ms at d = 10).
STOP_POLL = 4095
LAST_ITERATE = -1
NOISE_NONE, NOISE_SHARED, NOISE_INDEPENDENT = range(3)

_LINEAR_PAIR_FORMS = (AUC, AUC_ORDERED, RANKING)


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
    ``allpairs.allprev_pairs``: the score w.x_a once, one score w.x_b per buffered draw, the
    gradient as one weighted sum of rows.  The pairs' sum of ``pair_loss_grad`` calls in real
    arithmetic; in floating point w.(x_a - x_b) is sa - sb and the gradient (sum_j e_j) x_a -
    sum_j e_j x_b, so the numbers agree with the per-pair loop to rounding (tests/naive.py to
    1e-12); for s = 16, d = 10 a step takes about 0.63 of the per-pair loop's time
    (benchmarks/README.md, "Where the CPU goes")."""
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
    (at d = 100, 98 -> 77 ns per twin step in a stand-alone loop).  The updates are
    ``_apply_step``.

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


# Kernel kinds: the three single-term schedules with a linear margin get a kernel each (their
# step is the whole cost, so it is written out in one pass); everything else shares GENERAL.
FAST_PREVIOUS, FAST_PAIR, FAST_POINT, GENERAL = range(4)


def kernel_kind(schedule: int, s: int, form: int) -> int:
    """Which compiled replicate runs a configuration (see ``_twin_kernel``)."""
    if schedule == PREVIOUS and s == 1 and form in _LINEAR_PAIR_FORMS:
        return FAST_PREVIOUS
    if schedule == UNIFORM_PAIR and form in _LINEAR_PAIR_FORMS:
        return FAST_PAIR
    if schedule == POINTWISE and form in (POINT, POINT_LSQ):
        return FAST_POINT
    return GENERAL


@njit(cache=True)
def twin_layout(X, Y, R, schedule, s, form, phi, T):
    """(n, hlen, nwork, use_stats, slen): the number of examples and the sizes of one replicate's
    scratch (``hist``: index history, ``work``: allpairs workspace of FULL_BATCH, or the counts
    of the previous draws of ALL_PREV when T > n and no class statistics are kept, ``stats``:
    class statistics of ALL_PREV with the squared loss, which needs labels in {-1, +1};
    ``ranking`` allows any)."""
    n = X.shape[1] - (R if X.shape[0] == 1 else 1)
    d = X.shape[2]
    linear = form == AUC or form == AUC_ORDERED or form == RANKING
    hlen = T + 1 if schedule == ALL_PREV else s + 2
    nwork = 4 * n + 160 if (schedule == FULL_BATCH and linear) else 0
    use_stats = schedule == ALL_PREV and phi == SQUARED and linear
    if use_stats:
        for i in range(Y.shape[0]):
            for j in range(Y.shape[1]):
                if Y[i, j] != 1.0 and Y[i, j] != -1.0:
                    use_stats = False
    slen = 1 + d + d * d if use_stats else 0
    if schedule == ALL_PREV and linear and not use_stats and T > n:
        nwork = n
    return n, hlen, nwork, use_stats, slen


# ``replicate`` is compiled with parallel=True for speed, not for a prange (see there)
warnings.filterwarnings("ignore", message=r"(?s).*no transformation for parallel execution.*def replicate\(",
                        category=NumbaPerformanceWarning)


def build_replicate(KIND, POLL, SPEC=None):
    """One replicate of the twin kernel of kind ``KIND``, as a function of its scratch arrays,
    which the caller provides (nothing is allocated here, so the same code is the body of the
    CPU kernel's ``prange`` loop and a CUDA device function: ``stabsim.kernels.twin_cuda``).
    ``POLL``: poll the ``stop`` flag (the CPU kernel; a CUDA launch is stopped between chunks).
    ``SPEC``: None, or (form, ckind, noise, lag, has_ref, rec_out[, p]) as compile-time constants,
    which replace those arguments (the caller passes equal ones) so that the compiler drops the
    branches of the other losses, constraints, noise modes and output rules (the GPU's
    ``twin_cuda.SPECIALIZE``: fewer registers per thread); the numbers are those of the call
    with the same arguments.  ``p`` (> 0; fast kinds, where p = d): the dimension as a constant,
    so that the loops over coordinates have a known length (the GPU's per-thread iterates).

    Scratch: W (2, 2, p) [run, slot, :] (runs 0 = S, 1 = S'; slots 0 = w_{t-2}, 1 = w_{t-1}),
    g (2, p) (the general path's gradients; the fast kinds' row differences), acc, nz (2, p),
    dx (max(d, p),), hist (hlen,) int64, A, V (md, md), lam, tmp (md,), work (nwork,),
    stats (2, 2, slen) [run, class, :], nrm2 (2,); sizes from ``twin_layout``.
    Every entry is initialised here, so scratch can be reused from replicate to replicate."""
    FAST = KIND != GENERAL
    PAIR = KIND != FAST_POINT
    SPECIALISED = SPEC is not None
    S_FORM, S_CKIND, S_NOISE, S_LAG, S_REF, S_RECOUT, S_P = \
        (0,) * 7 if SPEC is None else tuple(int(v) for v in SPEC) + (0,) * (7 - len(SPEC))
    # The codes the callees compiled apart (not inlined: _record, linear_pair_value, point_coef,
    # _general_step, _grad) see.  A specialised CPU build hands them the run-time codes, so that
    # they keep the general build's signatures and are loaded from the cache (or from the helper
    # compiling beside a cold call, ``_late_callees``) instead of compiled again for literal
    # constants (about 0.55 s for _record alone); their numbers are the same either way.  The
    # device build hands them the constants (its callees are compiled with it, pruned too).
    APART_CONSTANTS = SPEC is not None and not POLL

    # Compiled (at the end) under its own name (see _own_name), on the CPU with parallel=True
    # and no prange: the parallel pipeline's IR clean-up makes faster code (pipeline.py: P1 Alg. 1
    # with an l2 ball, d = 10: 56 against 73 ns per twin step), with a faster copy propagation.
    def replicate(r, X, Y, kidx, krows, reps, seed, schedule, s, seq, form, phi, q, ckind, radius, md,
                  T, etas, es, omegas, os_, lag, noise, sigma, has_ref, wref, W0, ckpts, rec, rec_out, outs,
                  stop, n, use_stats, W, g, acc, nz, dx, hist, A, V, lam, tmp, work, stats, nrm2):
        if APART_CONSTANTS:   # (pruned otherwise; see above)
            form_a, ckind_a, lag_a = S_FORM, S_CKIND, S_LAG
        else:
            form_a, ckind_a, lag_a = form, ckind, lag
        if SPECIALISED:   # the constants of a specialised build (pruned otherwise)
            form = S_FORM
            ckind = S_CKIND
            noise = S_NOISE
            lag = S_LAG
            has_ref = S_REF == 1
            rec_out = S_RECOUT == 1
        p = W0.shape[1] if S_P == 0 else S_P
        C = ckpts.shape[0]
        noisy = noise != NOISE_NONE
        nr1 = 1 if noise == NOISE_INDEPENDENT else 0   # row of nz holding the noise of S'
        run_s, run_s1 = np.int64(0), np.int64(1)   # the runs S and S' (see _general_step below)
        sidx = np.int64(r) if X.shape[0] > 1 else np.int64(0)
        Xs = X[sidx]
        Ys = Y[sidx]
        k = kidx[r]
        krow = krows[r]
        # S' = S (k = -1) with shared noise: run S' is run S, computed once (``_record`` reads run S
        # for both; bit-identical to computing it, tests/test_mirror.py)
        mirror = k < 0 and noise != NOISE_INDEPENDENT
        key_i = stream_key(seed, reps[r], np.int64(STREAM_INDEX))
        key_n = stream_key(seed, reps[r], np.int64(STREAM_NOISE))
        key_np = stream_key(seed, reps[r], np.int64(STREAM_NOISE_PRIME))
        for run in range(2):
            for sl in range(2):
                for c in range(p):
                    W[run, sl, c] = W0[r, c]
            for c in range(p):
                g[run, c] = 0.0
                acc[run, c] = 0.0
                nz[run, c] = 0.0
            for cl in range(2):
                for c in range(stats.shape[2]):
                    stats[run, cl, c] = 0.0
            nrm2[run] = -1.0          # squared norms of the runs' w_{t-1} (-1: unknown)
        for c in range(hist.shape[0]):
            hist[c] = 0
        counting = not FAST and schedule == ALL_PREV and work.shape[0] > 0   # (see _grad)
        if counting:
            for c in range(work.shape[0]):
                work[c] = 0.0
        # slot 0 already equals slot 1 (the last step left w unchanged: its copy can be skipped)
        same0 = True
        same1 = True
        pend0 = 0.0     # lags 1, 2: weight not yet added to acc (see below)
        pend1 = 0.0
        _first_draws(schedule, key_i, s, seq, n, hist)
        if counting:
            work[hist[0]] += 1.0
        if not FAST and use_stats:   # only ALL_PREV (a GENERAL schedule) keeps class statistics
            for run in range(2):
                stats_add(stats[run], Xs, Ys, _rowid(hist[0], run == 1, k, krow))
        wsum = 0.0
        lsum = 0.0
        lrsum = 0.0
        l2sum = 0.0
        ci = np.int64(0)   # not a literal: one compilation of _record, not two
        ia = hist[0]   # fast kinds: the step's indices (ib = -1 for a point)
        ib = -1
        ya = Ys[ia]    # and their labels on S
        yb = 0.0
        ykrow = Ys[krow]
        # Fast kinds draw one step ahead (na, nb: step t+1's indices; nya, nyb: their labels).
        # The draws do not depend on w, so this changes no number; but the same-label and
        # margin branches, often mispredicted, then resolve without waiting on the hash and
        # the label loads (about 3 ns per twin step at d = 10).
        na, nb = _fast_draw(KIND, key_i, 1, seq, n)
        nya, nyb = _fast_labels(KIND, Ys, na, nb)
        for t in range(1, T + 1):
            # interrupted (``stop`` set by the caller's thread; rec is then discarded): polled
            # every STOP_POLL + 1 steps on the fast kinds, every step on the general path
            if POLL and (not FAST or (t & STOP_POLL) == 0) and _stop_requested(stop):
                break
            if FAST:
                if KIND == FAST_PREVIOUS:
                    ib = ia
                    yb = ya
                else:
                    ib = nb
                    yb = nyb
                ia = na
                ya = nya
                na, nb = _fast_draw(KIND, key_i, t + 1, seq, n)
                nya, nyb = _fast_labels(KIND, Ys, na, nb)
            else:
                _draw(schedule, key_i, t, s, seq, n, hist)
            if noisy:
                for c in range(p):
                    nz[0, c] = sigma * normal(key_n, t * p + c)
                if noise == NOISE_INDEPENDENT:
                    for c in range(p):
                        nz[1, c] = sigma * normal(key_np, t * p + c)
            eta = etas[t * es]     # stride 0: a constant, one number
            om = omegas[t * os_]
            if lag == 2 or lag == 1:
                # The output averages w_{t-2} (lag 2; w_{-1} = w_0) or w_{t-1} (lag 1), the
                # vector in slot 0 once it is brought up to date below.  Deferred sum:
                # pend0/pend1 sum the weights of the steps since slot 0 last changed, added
                # to acc as one product when it changes (or read at a checkpoint).  When
                # the iterate moves every step (the general path, noise) that is om * w.
                if lag == 2:
                    pend0 += om
                    pend1 += om
                if not same0:   # slot 0 <- w_{t-1}, after adding its pending weight
                    for c in range(p):
                        acc[0, c] += pend0 * W[0, 0, c]
                        W[0, 0, c] = W[0, 1, c]
                    pend0 = 0.0
                if not same1:
                    for c in range(p):
                        acc[1, c] += pend1 * W[1, 0, c]
                        W[1, 0, c] = W[1, 1, c]
                    pend1 = 0.0
                if lag == 1:
                    pend0 += om
                    pend1 += om
            if FAST:
                ap = _rowid(ia, True, k, krow)
                bp = _rowid(ib, True, k, krow) if PAIR else -1
                fval, moved0, moved1 = _twin_single_step(
                    form, phi, q, ckind, radius, noisy, PAIR, W, Xs, ia, ib, ya, yb, ap, bp,
                    ykrow if ia == k else ya, ykrow if ib == k else yb, eta, nz, nr1, nrm2, mirror, p, g)
                same0 = not moved0
                same1 = not moved1
            else:
                # the run numbers as int64 variables, not constants: literal arguments would make
                # numba compile _general_step once per call site
                fval = _general_step(schedule, t, s, n, hist, Xs, Ys, k, krow, form_a, phi, q, ckind_a,
                                     radius, md, eta, noisy, nz, run_s, W, run_s, g, dx, work, stats, A, V, lam, tmp)
                if not mirror:
                    _general_step(schedule, t, s, n, hist, Xs, Ys, k, krow, form_a, phi, q, ckind_a,
                                  radius, md, eta, noisy, nz, nr1, W, run_s1, g, dx, work, stats, A, V, lam, tmp)
                same0 = False
                same1 = mirror
            if lag == 0:   # (the runs written out: constant indices, see _run)
                for c in range(p):
                    acc[0, c] += om * W[0, 1, c]
                if not mirror:
                    for c in range(p):
                        acc[1, c] += om * W[1, 1, c]
            if has_ref and not FAST:   # (the fast kinds sum the reference losses after the loop)
                on_s = np.bool_(False)   # typed, not a literal False: that would compile a second _grad (and its callees)
                lrsum += _grad(schedule, t, s, n, hist, Xs, Ys, on_s, k, krow, form_a, phi, q,
                               wref, 0.0, g[0], dx, work, stats[0])
            if not FAST and use_stats:   # (only ALL_PREV uses statistics: a GENERAL schedule)
                for run in range(1 if mirror else 2):
                    stats_add(stats[run], Xs, Ys, _rowid(hist[t], run == 1, k, krow))
            if counting:   # (the same indices on S and S': one count for both runs)
                work[hist[t]] += 1.0
            lsum += fval
            l2sum += eta * eta * fval
            if lag >= 0:
                wsum += om
            if ci < C and ckpts[ci] == t:
                _record(rec, outs, rec_out, r, ci, W, acc, pend0, pend0 if mirror else pend1, wsum, lag_a, lsum,
                        lrsum, l2sum, 0 if mirror else 1)
                ci += 1
        if FAST and has_ref and not (POLL and _stop_requested(stop)):
            # The losses of the reference point on S at the steps' pairs (points), summed in a
            # second pass over the same draws, so that the step loop above stays as small as it
            # is without a reference point (the loss code inlined there made every step about 1 %
            # slower); the same sums in the same order, written to rec's column 3 at the checkpoints.
            lrsum = 0.0
            ci = np.int64(0)
            ia = hist[0]
            for t in range(1, T + 1):
                if KIND == FAST_PREVIOUS:
                    ib = ia
                ia, nb = _fast_draw(KIND, key_i, t, seq, n)
                if KIND == FAST_PAIR:
                    ib = nb
                if PAIR:   # (a linear form: _pair's value by the same operations)
                    lrsum += linear_pair_value(form_a, phi, q, wref, Xs, ia, Ys[ia], ib, Ys[ib])
                else:
                    lrsum += point_coef(form_a, phi, q, wref, Xs, ia, Ys[ia])[0]
                if ci < C and ckpts[ci] == t:
                    rec[r, ci, 3] = lrsum
                    ci += 1

    name = f"replicate_kind{KIND}" + ("" if POLL else "_device")
    if SPEC is not None:
        name += "_" + "_".join(str(int(v)).replace("-", "m") for v in SPEC)
    # the CPU replicate: without reference counting (nrt_free.py: 3-4x faster on the general path),
    # the IR simplified before lowering as numba's parfor fusion pass does, only faster
    # (pipeline.py); a specialised build, which a cold call waits for, also without numba's parfor
    # conversion (LeanCompiler: as fast, compiled about 0.45 s sooner); the CUDA device function is
    # compiled by numba-cuda, which has its own options
    if POLL:
        pipeline = SimplifiedCompiler if SPEC is None else LeanCompiler
        return njit(cache=True, parallel=True, pipeline_class=pipeline, **NRT_FREE)(_own_name(replicate, name))
    return njit(cache=True, parallel=True)(_own_name(replicate, name))


def _own_name(fn, name: str):
    """``fn`` renamed, before numba compiles it.  numba names a compiled function by its
    qualified name and a per-process counter, and the four kinds' closures share one qualified
    name and one signature: two processes that compile two kinds under the same count write
    cache entries with the same symbol, and a process that loads both ran one kind's code for
    the other (measured: P4 Alg. 2's numbers changed in a suite whose kernels the warm-up
    compiled).  A name per kind keeps the symbols apart (``stabsim._cache`` also spreads the
    counter; tests/test_cache_symbols.py)."""
    fn.__name__ = fn.__qualname__ = name
    return fn


def replicate_types(kernel_types) -> tuple:
    """The argument types of the replicate that ``_twin_kernel`` calls, from the types of the
    kernel's arguments after ``replicate`` (X .. stop): the replicate index, those arguments, the
    layout's n and use_stats, then the scratch arrays the kernel allocates.  Both the kernel's
    call (checked when it compiles) and ``replicate_address`` use this one rule."""
    kernel_types = tuple(kernel_types)[:31]
    f8 = [types.Array(types.float64, nd, "C") for nd in (1, 2, 3)]
    scratch = (f8[2], f8[1], f8[1], f8[1], f8[0], types.Array(types.int64, 1, "C"), f8[1], f8[1], f8[0],
               f8[0], f8[0], f8[2], f8[0])   # W, g, acc, nz, dx, hist, A, V, lam, tmp, work, stats, nrm2
    return (types.int64,) + kernel_types + (types.int64, types.boolean) + scratch


_call_replicate = make_native_caller(lambda tys: replicate_types(tys[1:]), "the twin kernel's replicate")


@njit(cache=True, parallel=True, nogil=True)
def _twin_kernel(replicate, X, Y, kidx, krows, reps, seed, schedule, s, seq, form, phi, q, ckind, radius, md,
                 T, etas, es, omegas, os_, lag, noise, sigma, has_ref, wref, W0, ckpts, rec, rec_out, outs, stop):
    """The parallel (CPU) twin kernel: a ``prange`` over the R replicates, each with its own
    scratch, running the compiled replicate at address ``replicate`` (one kind's
    ``_CPU_REPLICATES`` entry, ``replicate_address``).  Called through its address, the replicate
    is not linked into this kernel: one compilation of the kernel serves every kind
    (``native_call``).  The kind is a closure constant of each replicate, so numba drops the code of
    the other kinds before typing; the loss, constraint, output and noise codes stay run-time
    arguments (well-predicted branches cost far less than a compilation for every combination)."""
    R = W0.shape[0]
    p = W0.shape[1]
    d = X.shape[2]
    n, hlen, nwork, use_stats, slen = twin_layout(X, Y, R, schedule, s, form, phi, T)
    for r in prange(R):
        W = np.empty((2, 2, p))
        g = np.empty((2, p))
        acc = np.empty((2, p))
        nz = np.empty((2, p))
        dx = np.empty(max(d, p))
        hist = np.empty(hlen, dtype=np.int64)
        A = np.empty((md, md))
        V = np.empty((md, md))
        lam = np.empty(md)
        tmp = np.empty(md)
        work = np.empty(nwork)
        stats = np.empty((2, 2, slen))
        nrm2 = np.empty(2)
        # np.int64: the parfor's index is uint64 in its body
        _call_replicate(replicate, (np.int64(r), X, Y, kidx, krows, reps, seed, schedule, s, seq, form, phi, q,
                                    ckind, radius, md, T, etas, es, omegas, os_, lag, noise, sigma, has_ref, wref,
                                    W0, ckpts, rec, rec_out, outs, stop, n, use_stats, W, g, acc, nz, dx, hist,
                                    A, V, lam, tmp, work, stats, nrm2))


#: The CPU replicates, one per kind (compiled on their first use, each under its own name).
_CPU_REPLICATES = tuple(build_replicate(kind, True) for kind in range(GENERAL + 1))


def replicate_address(kind: int, kernel_args: tuple, specialise: bool = False) -> int:
    """The address of kind ``kind``'s replicate compiled for ``_twin_kernel(addr, *kernel_args)``
    (compiled or loaded from the on-disk cache on first use; when it is compiled, the kernel and
    the checkpoint sums are compiled meanwhile in a helper process, ``stabsim.compile_beside``).

    Cold start (``SPECIALISE_COLD``): when a fast kind's replicate is neither compiled in this
    process nor in numba's on-disk cache, the call runs the build specialised to its own
    configuration (``specialisation``), which compiles faster (about 4 against 8 s for P1
    Alg. 1 on a 2-vCPU AMD EPYC), and the helper compiles the general build after the kernel,
    in the background: a later call of another configuration of that kind loads it from the
    cache, or waits for the helper if it is still at it.  The specialised build only fixes
    run-time codes as constants, so its numbers are the general build's, bit for bit
    (tests/test_cold_start.py; LLVM keeps IEEE arithmetic without fast-math flags).

    ``specialise`` (a fast kind): run the build specialised to this configuration whatever is
    compiled (``wants_specialised``), compiled if it is in neither this process nor the on-disk
    cache, with nothing compiled after it."""
    general = _CPU_REPLICATES[kind]
    beside = functools.partial(_compiled_beside, kind)
    if kind == GENERAL or not (SPECIALISE_COLD or specialise):
        return address_for(general, kernel_args, replicate_types, beside=beside)
    spec = specialisation(kernel_args)
    try:
        key = (kind, spec, bool(specialise), tuple(map(compute_fingerprint, kernel_args)))
    except Exception:   # (as in address_for: no shortcut without fingerprints)
        key = None
    addr = _CHOSEN.get(key) if key is not None else None
    if addr is not None:
        return addr
    if specialise:
        addr = address_for(_specialised(kind, spec), kernel_args, replicate_types, beside=beside)
        if key is not None:
            _CHOSEN[key] = addr
        return addr
    want = replicate_types(tuple(typeof(a) for a in kernel_args))
    helper = compile_beside.pending(__name__, f"_CPU_REPLICATES[{kind}]", want)
    if helper is not None:   # the general build is being compiled beside: it serves every configuration
        compile_beside.wait_for(helper)
    if compile_beside.cached(general, want):
        addr = address_for(general, kernel_args, replicate_types, beside=beside)
    else:
        addr = address_for(_specialised(kind, spec), kernel_args, replicate_types, beside=beside,
                           later=lambda argtypes: [(__name__, f"_CPU_REPLICATES[{kind}]", [want])])
    if key is not None:
        _CHOSEN[key] = addr
    return addr


#: run a fast kind's specialised replicate when its general build is not compiled yet
#: (``replicate_address``); the warm-up's recording turns it off, to record the general builds
SPECIALISE_COLD = True
#: (kind, specialisation, forced, the arguments' fingerprints) -> the replicate's address
_CHOSEN: dict = {}
#: ``wants_specialised``'s automatic rule: a noise-free call of a fast kind with at least this many
#: twin steps (R T; about 12 s on one core at d = 10, where the specialised build is 30 % faster and
#: compiles in about 4 s once) and d at most ``SPECIALISE_MAX_D`` (at d = 100 it is 7-10 % faster)
#: runs its specialised build (benchmarks/README.md, "Builds specialised to a configuration")
SPECIALISE_MIN_STEPS = 4 * 10**8
SPECIALISE_MAX_D = 64


def wants_specialised(kind: int, noise: int, steps: int, d: int, specialise) -> bool:
    """Whether a ``twin_kernel`` call runs the replicate specialised to its configuration (its
    loss form, constraint, noise mode, output lag, reference point, recorded outputs and dimension
    compiled in as constants; the same numbers bit for bit).  ``specialise``: True (a fast kind
    always), False (never: the general build, but for the cold start's rule in
    ``replicate_address``) or None, automatic: a fast kind without noise, with at least
    ``SPECIALISE_MIN_STEPS`` twin steps (``steps`` = R T) at a dimension ``d`` of at most
    ``SPECIALISE_MAX_D``.  Without noise the specialised build saves 20-40 % of the kernel's time
    at d <= 20, 18 % at d = 50 and 7-10 % at d = 100 (P1 Alg. 1; uniform pairs 20 % at d = 10);
    with noise the normal draws take most of the time and it is 3-10 % slower
    (benchmarks/bench_specialised.py).  The general kind has no specialised build."""
    if specialise is not None and not isinstance(specialise, (bool, np.bool_)):
        raise ValueError(f"specialise must be None (automatic), True or False, got {specialise!r}")
    if kind == GENERAL:
        return False
    if specialise is None:
        return noise == NOISE_NONE and steps >= SPECIALISE_MIN_STEPS and d <= SPECIALISE_MAX_D
    return bool(specialise)


def call_specialises(specialise, schedule, s, form, sigma, steps: int, d: int) -> bool:
    """``wants_specialised`` for a whole ``run_twin`` call of ``steps`` = R T twin steps, decided
    once for all the replicate blocks it is run in (a progress bar splits it into about 20)."""
    kind = kernel_kind(int(schedule), int(s), int(form))
    return wants_specialised(kind, NOISE_NONE if sigma == 0 else NOISE_SHARED, steps, d, specialise)


def spec_of(form, ckind, noise, lag, has_ref, rec_out, p=None) -> tuple:
    """``build_replicate``'s ``SPEC``: (loss form, constraint kind, noise mode, output lag, has a
    reference point, records the outputs[, p])."""
    spec = (int(form), int(ckind), int(noise), int(lag), int(bool(has_ref)), int(bool(rec_out)))
    return spec if p is None else spec + (int(p),)


def specialisation(kernel_args: tuple) -> tuple:
    """``spec_of`` a call with these ``twin_kernel`` arguments (X .. stop), p included."""
    a = kernel_args
    return spec_of(a[9], a[12], a[21], a[20], a[23], a[28], a[25].shape[1])


@functools.lru_cache(maxsize=None)
def _specialised(kind: int, spec: tuple):
    """The CPU replicate of a fast kind specialised to ``spec`` (one dispatcher per configuration)."""
    return build_replicate(kind, True, spec)


def _compiled_beside(kind: int, argtypes: tuple) -> list:
    """What a ``twin_kernel`` call of this kind with these argument types compiles late in the
    replicate (``_late_callees``) and after it: ``_twin_kernel`` (the address typed as an int64)
    and ``run_twin``'s ``checkpoint_sums`` (etas, es, ckpts)."""
    sums = (argtypes[16], types.int64, argtypes[26])
    return _late_callees(kind) + _KERNEL_BESIDE(argtypes) + [(__name__, "checkpoint_sums", [sums])]


def _late_callees(kind: int) -> list:
    """The kind's replicate's callees a helper started with a cold call can have compiled before
    the replicate types them.  The general kind has none: its reference point's losses call
    ``_grad`` with a typed ``prime`` flag, the signature ``_general_step`` compiled (a literal False
    made it a second ``_grad``, about 6.6 s from an empty cache on a 2-vCPU Xeon, which the helper
    compiled beside until session 24).  The fast kinds type ``stream_key`` and ``_first_draws``
    (0.25 s together) about 1.2 s in, then ``_record`` and their loss's value (about 0.9 s) about
    1.8 s in (the specialised build of a cold call, which hands them the run-time codes: the same
    signatures); the helper (about 0.7 s to start) writes them, in that order, at about 0.9, 1.0,
    1.4-1.5 and 1.7-1.8 s (2-vCPU AMD EPYC): whichever it is done with is loaded, the others are
    compiled here as before.  The signatures are the warm-up's recorded ones (the
    kernel's arguments have fixed types); one the call does not use only costs the helper's time."""
    from ..kernel_signatures import load_signatures

    want = _LATE_CALLEES[kind]
    # by name: a callee imported from elsewhere (``stream_key``) is recorded under the module of
    # whichever kernel first compiled it; the dispatcher, and so its signature, is the same one
    found = {}
    for m, n, sigs in load_signatures():
        for sig in sigs:
            key = (n, any(isinstance(t, types.BooleanLiteral) for t in sig))
            if m == __name__ or key not in found:
                found[key] = sig
    return [(__name__, w[0], [found[w]]) for w in want if w in found]


#: per kind, (name, whether the signature has a literal flag) of the callees ``_late_callees`` hands to
#: the helper, in the order it compiles them
_FIRST_CALLEES = (("stream_key", False), ("_first_draws", False))
_LATE_CALLEES = {FAST_PREVIOUS: _FIRST_CALLEES + (("_record", False), ("linear_pair_value", False)),
                 FAST_PAIR: _FIRST_CALLEES + (("_record", False), ("linear_pair_value", False)),
                 FAST_POINT: _FIRST_CALLEES + (("_record", False), ("point_coef", False)),
                 GENERAL: ()}


_KERNEL_BESIDE = caller_beside(__name__, "_twin_kernel")


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


@njit(cache=True)
def checkpoint_sums(etas, es, ckpts):
    """(sum_{j<=t} eta_j, sum_{j<=t} eta_j^2) at the checkpoints t, with eta_j = etas[j * es]
    (es = 0: a constant step size stored as one number).

    Each stretch between checkpoints is summed in eight interleaved partial sums (combined
    pairwise), and the stretches are added in order.  A plain running sum is one chain of
    dependent additions: 0.8 ms at T = 10^6, a third of ``run_twin``'s own time for one
    replicate; this is 0.3 ms, and more accurate (relative error about 1e-16 against
    ``math.fsum`` where the running sum gives 1e-14 at T = 10^6).  The order is fixed, so
    the numbers are the same on every machine."""
    C = ckpts.shape[0]
    out = np.empty((2, C))
    s1 = 0.0
    s2 = 0.0
    j = 1
    for ci in range(C):
        end = ckpts[ci] + 1
        if es == 0:
            # one constant: the eight partial sums see the same additions, so they are equal and
            # one of them is summed (the same numbers, an eighth of the additions)
            e = etas[0]
            a = 0.0
            b = 0.0
            while j + 8 <= end:
                a += e
                b += e * e
                j += 8
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a
            b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = b
        else:
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
            b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = 0.0
        while j + 8 <= end:
            e0 = etas[j * es]
            e1 = etas[(j + 1) * es]
            e2 = etas[(j + 2) * es]
            e3 = etas[(j + 3) * es]
            e4 = etas[(j + 4) * es]
            e5 = etas[(j + 5) * es]
            e6 = etas[(j + 6) * es]
            e7 = etas[(j + 7) * es]
            a0 += e0
            a1 += e1
            a2 += e2
            a3 += e3
            a4 += e4
            a5 += e5
            a6 += e6
            a7 += e7
            b0 += e0 * e0
            b1 += e1 * e1
            b2 += e2 * e2
            b3 += e3 * e3
            b4 += e4 * e4
            b5 += e5 * e5
            b6 += e6 * e6
            b7 += e7 * e7
            j += 8
        p1 = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
        p2 = ((b0 + b1) + (b2 + b3)) + ((b4 + b5) + (b6 + b7))
        while j < end:
            e = etas[j * es]
            p1 += e
            p2 += e * e
            j += 1
        s1 += p1
        s2 += p2
        out[0, ci] = s1
        out[1, ci] = s2
    return out


#: Replicates x steps x max(d, 10) below which a fast kind's call is not run in a helper thread.
INTERRUPTIBLE_MIN_WORK = 2 * 10**7


def _direct(fn, *args, stop):
    return fn(*args)


def call_setup(schedule, s, form, etas, omegas, sigma, indep_noise, kind, T, strides):
    """What both backends' entry points derive from their arguments, checked:
    (sigma, noise code, T, eta stride, omega stride, kernel kind)."""
    sigma = float(sigma)
    noise = NOISE_NONE if sigma == 0.0 else (NOISE_INDEPENDENT if indep_noise else NOISE_SHARED)
    es, os_ = (int(v) for v in strides)
    T = int(etas.shape[0] - 1 if T is None else T)
    for name, arr, st in (("etas", etas, es), ("omegas", omegas, os_)):
        if st not in (0, 1) or arr.shape[0] < (1 if st == 0 else T + 1):
            raise ValueError(f"{name}: need stride 0 (one constant) or 1 with T + 1 = {T + 1} entries, "
                             f"got stride {st} and {arr.shape[0]} entries")
    kk = kernel_kind(int(schedule), int(s), int(form)) if kind is None else int(kind)
    if not 0 <= kk <= GENERAL:
        raise ValueError(f"unknown kernel kind {kk}; kinds are 0..{GENERAL}")
    return sigma, noise, T, es, os_, kk


def twin_kernel(X, Y, kidx, krows, reps, seed, schedule, s, seq, form, phi, q, ckind, radius, md,
                etas, omegas, avg_lag, sigma, indep_noise, has_ref, wref, W0, ckpts, rec, rec_out, outs,
                kind=None, T=None, strides=(1, 1), stop=None, specialise=None):
    """Run R coupled replicates; see the module docstring for the arguments' meaning.

    X (nS, n + m, d), Y (nS, n + m): nS = 1 (one data set) or R (one per replicate); the first
    n rows are S, the extra m rows hold the replacement points.  S' replaces example
    kidx[r] by row krows[r] (kidx[r] = -1 makes S' = S).  W0 (R, p): initial points.
    etas, omegas (T+1,), index 0 unused; or, with ``T`` given, ``strides`` (es, os) = 0 for an
    array holding one constant (eta_t = etas[t * es]: no T-long array for a constant step).
    ckpts (C,): increasing steps in 1..T.  rec (R, C, N_REC) is written; outs (R, C, 2, p) receives the outputs on S and S' when
    rec_out.  Nothing is allocated inside the step loop.  ``kind`` overrides ``kernel_kind``
    (``GENERAL`` runs any configuration; the tests use it to check that the fast kinds give
    bit-identical results).

    ``stop`` (int64 array of one element, default a fresh zero): the kernel returns early once
    ``stop[0]`` is non-zero.  Called from the main thread, the kernel runs in a helper thread
    and a signal (Ctrl-C, SIGTERM) sets the flag and is re-raised here within about a second
    (``stabsim._signals.call_interruptible``); the unfinished ``rec`` is then discarded.

    ``specialise``: None (automatic), True or False: whether a fast kind runs the replicate
    compiled for this configuration (``wants_specialised``); the numbers are the same.
    """
    sigma, noise, T, es, os_, kk = call_setup(schedule, s, form, etas, omegas, sigma, indep_noise, kind, T, strides)
    i64 = np.int64
    if stop is None:
        stop = new_stop_flag()
    # A short call on a fast kind (under about 0.1 s on one core) runs directly: a signal waits for
    # it, and it saves the helper thread's start (0.05-0.5 ms on a loaded machine).
    small = kk != GENERAL and W0.shape[0] * T * max(X.shape[2], 10) < INTERRUPTIBLE_MIN_WORK
    spec = wants_specialised(kk, noise, W0.shape[0] * T, X.shape[2], specialise)
    args = (X, Y, kidx, krows, reps, i64(seed), i64(schedule), i64(s), i64(seq), i64(form), i64(phi),
            float(q), i64(ckind), float(radius), i64(md), i64(T), etas, i64(es), omegas, i64(os_),
            i64(avg_lag), i64(noise), sigma, bool(has_ref), wref, W0, ckpts, rec, bool(rec_out), outs, stop)
    (_direct if small else call_interruptible)(_twin_kernel, replicate_address(kk, args, spec), *args, stop=stop)
