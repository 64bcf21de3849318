"""The replicate builder of the twin kernel: one replicate of one kernel kind as one function.

``build_replicate(KIND, POLL, SPEC)`` returns one replicate of the twin kernel (the twin runs on
S and S' of one replicate id, all T steps, the records at the checkpoints) as a numba function
of its scratch arrays.  The kind (``twin_steps.FAST_PREVIOUS``: P1 Alg. 1/2, PREVIOUS with s = 1;
``FAST_PAIR``: UNIFORM_PAIR, SGD_pair, P4 Alg. 2; ``FAST_POINT``: P4 Alg. 1; each with a linear
margin; ``GENERAL`` for everything else: buffers s > 1, ALL_PREV, FULL_BATCH, metric learning)
is a closure constant, so numba drops the other kinds' code before typing; loss, constraint,
output and noise stay run-time codes (a well-predicted branch costs far less than a compilation
for each of their combinations would), unless ``SPEC`` fixes them as constants.  The CPU kernel
(``twin._twin_kernel``) allocates the scratch in its ``prange`` loop and calls the kind's
replicate through its address (``native_call``: compiled once, not once per kind); the CUDA
kernel (``twin_cuda``) calls the same function on each thread's slices of device arrays, so the
step is written once for both backends.  The step maths is ``twin_steps``.

How the replicate's loop is arranged:

* Iterates live in a (2, 2, p) array W[run, slot]: slot 1 holds w_{t-1} and is updated in
  place into w_t; slot 0 holds the iterate the output sum is waiting for (w_{t-2} for the
  lag-2 output, w_{t-1} for lag 1).  Slot 0 is copied from slot 1 before each step, unless
  the previous step left w unchanged: then the two slots already hold the same vector and the
  copy is skipped (exact).  Fixed slots keep the step's loads at fixed addresses; rotating
  slots, with an unmoved iterate sharing its predecessor's slot, made the next step's loads
  depend on the previous step's margin test, which chained the steps together and ran slower
  (benchmarks/README.md, "Compile time").
* The fast kinds draw step t+1's indices (and read their labels) during step t.  The draws
  do not depend on w, so no number changes, but the often mispredicted same-label and margin
  branches then resolve without waiting for the hash and the loads.
* The lag-2 and lag-1 outputs are summed with deferred weights: while the averaged iterate
  stays the same, its weights omega_j are summed, and added to the output sum as one product
  (sum_j omega_j) w when it changes (or read at a checkpoint).  Exact in real arithmetic; in
  floating point it rounds differently from adding omega_j w step by step (each within T
  roundings of the exact sum), so the fast kinds' outputs agree with the general path, which
  adds every step, to rounding, not bit for bit.  The P1 C loop in benchmarks/ sums the same
  way.  (Lag 0, the mean of w_1..w_T, still adds every step.)
"""

from __future__ import annotations

import warnings

import numpy as np
from numba import types
from numba.core.errors import NumbaPerformanceWarning

from stabsim.compile.jit import njit
from stabsim.engine.losses import AUC, AUC_ORDERED, RANKING, SQUARED, linear_pair_value, point_coef
from stabsim.engine.rng import STREAM_INDEX, STREAM_NOISE, STREAM_NOISE_PRIME, normal, stream_key
from stabsim.kernels.nrt_free import NRT_FREE
from stabsim.kernels.pair_stats import stats_add
from stabsim.compile.pipeline import LeanCompiler, SimplifiedCompiler
from stabsim.kernels.twin_config import KERNEL_ARGS
from stabsim.kernels.twin_steps import (ALL_PREV, FAST_PAIR, FAST_POINT, FAST_PREVIOUS, FULL_BATCH, GENERAL, NOISE_INDEPENDENT,
                         NOISE_NONE, STOP_POLL, _draw, _fast_draw, _fast_labels, _first_draws, _general_step, _grad,
                         _record, _rowid, _stop_requested, _twin_single_step)

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
    # compiling beside a cold call, ``twin._late_callees``) instead of compiled again for literal
    # constants (a compilation each); their numbers are the same either way.  The
    # device build hands them the constants (its callees are compiled with it, pruned too).
    APART_CONSTANTS = SPEC is not None and not POLL

    # Compiled (at the end) under its own name (see _own_name), on the CPU with parallel=True
    # and no prange: the parallel pipeline's IR clean-up makes faster code (pipeline.py), with a
    # faster copy propagation.
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
        # S' = S (k = -1) with shared noise: run S' is run S, computed once (``twin_steps._record`` reads run S
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
        # the label loads.
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
            # is without a reference point (the loss code inlined there made every step
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
    # the CPU replicate: without reference counting (nrt_free.py: faster on the general path),
    # the IR simplified before lowering as numba's parfor fusion pass does, only faster
    # (pipeline.py); a specialised build, which a cold call waits for, also without numba's parfor
    # conversion (LeanCompiler: as fast, compiled sooner); the CUDA device function is
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
    compiled).  A name per kind keeps the symbols apart (``stabsim.compile.cache`` also spreads the
    counter; tests/test_cache_symbols.py)."""
    fn.__name__ = fn.__qualname__ = name
    return fn


def replicate_types(kernel_types) -> tuple:
    """The argument types of the replicate that ``twin._twin_kernel`` calls, from the types of the
    kernel's arguments after ``replicate`` (``twin_config.KERNEL_ARGS``: X .. stop): the replicate
    index, those arguments, the layout's n and use_stats, then the scratch arrays the kernel
    allocates.  Both the kernel's call (checked when it compiles) and ``twin.replicate_address`` use
    this one rule."""
    kernel_types = tuple(kernel_types)[:len(KERNEL_ARGS)]
    f8 = [types.Array(types.float64, nd, "C") for nd in (1, 2, 3)]
    scratch = (f8[2], f8[1], f8[1], f8[1], f8[0], types.Array(types.int64, 1, "C"), f8[1], f8[1], f8[0],
               f8[0], f8[0], f8[2], f8[0])   # W, g, acc, nz, dx, hist, A, V, lam, tmp, work, stats, nrm2
    return (types.int64,) + kernel_types + (types.int64, types.boolean) + scratch


def spec_of(form, ckind, noise, lag, has_ref, rec_out, p=None) -> tuple:
    """``build_replicate``'s ``SPEC``: (loss form, constraint kind, noise mode, output lag, has a
    reference point, records the outputs[, p])."""
    spec = (int(form), int(ckind), int(noise), int(lag), int(bool(has_ref)), int(bool(rec_out)))
    return spec if p is None else spec + (int(p),)
