"""Fast all-pairs pair gradients for the linear pairwise losses.

P2 Algorithm 1 (Kang, Liu, Li, Wang; full-batch gradient perturbation) steps along the
gradient of the empirical pairwise risk over all ordered pairs i != j,

    F_S(w) = 1/(n(n-1)) sum_{i != j} f(w; z_i, z_j)     (P2's L(theta; D), Alg. 1; errata P2-A)

which the twin kernel's FULL_BATCH branch (``stabsim.kernels.twin_steps._grad``) evaluates as a
double loop: O(n^2 d) per step.  For the linear forms of ``stabsim.engine.losses`` the margin of a
pair depends on w only through the *scores* s_i = w.x_i, m_ij = c(y_i, y_j) (s_i - s_j), so

    grad F_S(w) = 1/(n(n-1)) sum_i a_i x_i,   a_i = sum_{j != i} [c_ij phi'(m_ij) - c_ji phi'(m_ji)]

needs the scores (O(n d)), the scalar coefficients a_i, and one weighted row sum (O(n d)).
What remains is the cost of the a_i:

=========  ======================================================  =================
phi        a_i and the loss                                        cost per step
=========  ======================================================  =================
squared    closed form from class means / centred sums of squares  O(n d)
           of the scores (exact algebra, below)
hinge      (1-m)_+ is active iff fl(gamma (s_P - s_N)) < 1: sort    O(n log n + n d)
           the class scores, count by binary search, suffix sums
logistic   no closed form: e^{-m_PN} = e^{-gamma s_P} e^{gamma s_N}   O(n_+ n_- + n d)
           (2n exps), one division per pair, the loss as the log
           of block products of (1 + e^{-m}) (one log per <= 256
           pairs); scalar work only (the naive loop is O(n^2 d))
q-hinge    one phi' per positive/negative pair of scores            O(n_+ n_- + n d)
=========  ======================================================  =================

Logistic accuracy: the gradient is as accurate as the double loop's; the loss uses
log(1 + e) instead of log1p(e), an absolute error of ~1e-16 per pair, so the *average* loss
is accurate to ~1e-16 absolute (1e-10 relative while it is above ~1e-6).  If the score range
exceeds 600/gamma (e^{600} would overflow in the products) the per-pair stable formula of
``losses.phi_value_deriv`` is used instead.

Labels in {-1, +1} (as ``stabsim.engine.validation.check_Xy`` enforces for the AUC losses; for
``ranking`` any real labels are accepted and then take the generic O(n^2 + n d) path).
With P = {i : y_i = +1}, N = {i : y_i = -1}, n_+ = |P|, n_- = |N|, and
gamma = 1 (``auc``, ``auc_ordered``) or 2 (``ranking``: c = y - y' = +-2), every
positive/negative unordered pair has margin m_PN = gamma (s_P - s_N) in both orders
(``auc``: c = (y - y')/2 = +-1 with the difference taken in the same order), so

    sum_{i != j} f = fac * sum_{P, N} phi(m_PN) + [ranking] (n_+(n_+-1) + n_-(n_--1)) phi(0),
    sum_{i != j} grad f = fac * gamma * sum_{P, N} phi'(m_PN) (x_P - x_N),

fac = 2 for the symmetric forms (``auc``, ``ranking``: both orders count) and 1 for
``auc_ordered`` (only (y, y') = (1, -1), P1 Sec. 5 as printed).  Same-label pairs have zero
gradient (c = 0); for ``ranking`` their value phi(0) still enters the average loss, exactly
as ``stabsim.engine.losses.pair_loss_grad`` evaluates it.

Squared loss (phi(m) = (1 - m)^2): with u_P = 1/gamma - s_P, ubar = mean_P u_P,
sbar = mean_N s_N,

    sum_{P,N} (1 - m_PN)^2 = gamma^2 [ n_- sum_P (u_P - ubar)^2 + n_+ sum_N (s_N - sbar)^2
                                       + n_+ n_- (ubar + sbar)^2 ]        (centred: no cancellation)
    sum_{P,N} -2 (1 - m_PN) gamma (x_P - x_N) = -2 gamma^2 sum_i a_i x_i,
        a_P = n_- (u_P + sbar),  a_N = -n_+ (ubar + s_N).

Hinge (phi(m) = (1 - m)_+, phi'(m) = -1 iff m < 1, as in ``losses.phi_value_deriv``): with
cnt_P = #{N : fl(gamma (s_P - s_N)) < 1} and cnt_N = #{P : same}, both found by binary search in
the sorted class scores (the predicate is monotone in each score because rounded subtraction is),

    sum_{P,N} (1 - m_PN)_+ = gamma sum_P [ cnt_P (1/gamma - s_P) + sum_{N active for P} s_N ],
    gradient sum = -gamma [ sum_P cnt_P x_P - sum_N cnt_N x_N ].

The only difference from the double loop is the rounding of the margin: the loop computes
w.(x_P - x_N), this module s_P - s_N.  They agree to a few ulps; a hinge decision can differ
only for a pair whose margin is within rounding of the kink 1 (never for data and w whose
scores are exact, e.g. small integers, where both are exact).

Sufficient statistics (the squared loss is a quadratic in w): per class the count m, mean mu
Sufficient statistics (the squared loss is a quadratic in w) give the same sums in O(d^2) per
step after an O(n d^2) set-up per run, and running class statistics the all-previous average of
P0 Alg. 1 and P3's pairwise GIGA: ``stabsim.kernels.pair_stats``.  The tight all-previous loops
of the other losses are ``stabsim.kernels.allprev``.

The twin kernel (``stabsim.kernels.twin_steps._grad``) calls ``allpairs_grad`` in its FULL_BATCH
branch for the linear forms; the metric forms keep the double loop there.

Every function is ``@njit(cache=True)``, allocates nothing, and takes a caller-owned float64
workspace.  S' is handled as in the twin kernel: the run on S' reads row ``krow`` of Xs/Ys
instead of row ``k`` (``prime`` True); ``k = -1`` makes S' = S.
"""

from __future__ import annotations

import math

import numpy as np
from stabsim.compile.jit import njit

from stabsim.engine.losses import AUC, AUC_ORDERED, HINGE, LOGISTIC, RANKING, SQUARED, phi_value_deriv

#: extra workspace slots beyond 4 n: the explicit stack of the in-place quicksort
_STACK = 160
_SMALL = 16   # segments shorter than this are insertion-sorted


def allpairs_work_size(n: int) -> int:
    """Length of the float64 workspace ``allpairs_grad`` needs for n examples."""
    return 4 * int(n) + _STACK


# ---- helpers ---------------------------------------------------------------------------------

@njit(cache=True, inline="always")
def _row(i, prime, k, krow):
    """Row of example i: the run on S' reads the replacement row for i == k."""
    if prime and i == k:
        return krow
    return i


@njit(cache=True, inline="always")
def _gamma(form):
    """Margin factor for labels +-1: |c(y, y')| on a positive/negative pair."""
    return 2.0 if form == RANKING else 1.0


@njit(cache=True, inline="always")
def _fac(form):
    """Ordered pairs per positive/negative unordered pair that carry the loss."""
    return 1.0 if form == AUC_ORDERED else 2.0


@njit(cache=True, inline="always")
def _coef(form, ya, yb):
    """c with m = c w.(x_a - x_b), exactly as ``stabsim.engine.losses._linear_coef``."""
    if form == AUC:
        return 0.5 * (ya - yb)
    if form == AUC_ORDERED:
        return 1.0 if (ya == 1.0 and yb == -1.0) else 0.0
    return ya - yb


@njit(cache=True)
def _insertion(a, lo, hi):
    for i in range(lo + 1, hi):
        v = a[i]
        j = i - 1
        while j >= lo and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@njit(cache=True)
def _qsort(a, lo, hi, stk, s0):
    """Sort a[lo:hi] ascending in place: quicksort (median of three, Hoare partition), the
    larger part deferred on an explicit stack kept in stk[s0:] (bounds stored as floats; depth
    <= log2(n) < 64, so 128 slots suffice), small parts insertion-sorted.  No allocation."""
    sp = s0
    while True:
        while hi - lo > _SMALL:
            mid = (lo + hi - 1) >> 1
            last = hi - 1
            if a[mid] < a[lo]:
                a[mid], a[lo] = a[lo], a[mid]
            if a[last] < a[mid]:
                a[last], a[mid] = a[mid], a[last]
                if a[mid] < a[lo]:
                    a[mid], a[lo] = a[lo], a[mid]
            pivot = a[mid]
            i = lo - 1
            j = hi
            while True:
                i += 1
                while a[i] < pivot:
                    i += 1
                j -= 1
                while a[j] > pivot:
                    j -= 1
                if i >= j:
                    break
                a[i], a[j] = a[j], a[i]
            # parts [lo, j] and [j + 1, hi)
            if j + 1 - lo > hi - j - 1:
                stk[sp] = lo
                stk[sp + 1] = j + 1
                lo = j + 1
            else:
                stk[sp] = j + 1
                stk[sp + 1] = hi
                hi = j + 1
            sp += 2
        _insertion(a, lo, hi)
        if sp == s0:
            return
        sp -= 2
        lo = np.int64(stk[sp])
        hi = np.int64(stk[sp + 1])


@njit(cache=True)
def _first_active_neg(sp, sn, off, nn, gamma):
    """First index j in the sorted negatives sn[off:off+nn] with fl(gamma (sp - sn[j])) < 1
    (true for all larger scores); nn if none."""
    lo = 0
    hi = nn
    while lo < hi:
        mid = (lo + hi) >> 1
        if gamma * (sp - sn[off + mid]) < 1.0:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def _count_active_pos(snv, spos, off, npos, gamma):
    """#{P : fl(gamma (s_P - snv)) < 1} in the sorted positives spos[off:off+npos]."""
    lo = 0
    hi = npos
    while lo < hi:
        mid = (lo + hi) >> 1
        if gamma * (spos[off + mid] - snv) < 1.0:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _scores(n, Xs, Ys, prime, k, krow, w, work):
    """work[i] = w.x_i for the n examples of S (or S'); the positive scores are copied to
    work[n : n + npos] and the negative ones to work[n + npos : 2n], in example order.
    Returns (npos, nneg, pm, finite): pm False if some label is not +-1 (then only work[:n] is
    filled); finite False if a score is not finite."""
    d = Xs.shape[1]
    npos = 0
    pm = True
    finite = True
    for i in range(n):
        r = _row(i, prime, k, krow)
        s = 0.0
        for a in range(d):
            s += w[a] * Xs[r, a]
        work[i] = s
        if not math.isfinite(s):
            finite = False
        y = Ys[r]
        if y == 1.0:
            npos += 1
        elif y != -1.0:
            pm = False
    if pm:
        ip = n
        ineg = n + npos
        for i in range(n):
            if Ys[_row(i, prime, k, krow)] == 1.0:
                work[ip] = work[i]
                ip += 1
            else:
                work[ineg] = work[i]
                ineg += 1
    return npos, n - npos, pm, finite


@njit(cache=True)
def _accumulate(n, Xs, prime, k, krow, coef, off, f, g):
    """g += f * sum_i coef[off + i] x_i."""
    d = Xs.shape[1]
    for i in range(n):
        c = f * coef[off + i]
        if c != 0.0:
            r = _row(i, prime, k, krow)
            for a in range(d):
                g[a] += c * Xs[r, a]


# ---- all pairs (P2 Algorithm 1, FULL_BATCH) -------------------------------------------------------

@njit(cache=True)
def allpairs_grad(form, phi, q, n, Xs, Ys, prime, k, krow, w, scale, g, work):
    """Average loss over the n(n-1) ordered pairs i != j of S (or S'), adding
    ``scale`` * (its gradient) into g -- exactly what the FULL_BATCH branch of
    ``stabsim.kernels.twin_steps._grad`` computes with its double loop (``mult`` there = ``scale``).

    form: ``losses.AUC``, ``AUC_ORDERED`` or ``RANKING`` (the metric forms raise ValueError).
    phi, q: as in ``losses.phi_value_deriv``.  n: examples in S (rows 0..n-1 of Xs/Ys; the
    replacement rows follow).  prime, k, krow: the run on S' reads row krow for example k.
    w (d,), g (d,) accumulated.  work: float64, length >= ``allpairs_work_size(n)`` = 4n + 160,
    owned by the caller (one per thread; contents are scratch).  ``scale == 0`` skips the
    gradient (loss only, as the kernel's w_ref evaluation does).

    Cost per call: squared O(n d); hinge O(n log n + n d); logistic / q-hinge
    O(n_+ n_- + n d); labels outside {-1, +1} (``ranking`` only) O(n^2 + n d).
    A non-finite score (diverged w) gives a NaN loss and adds NaN to g.
    """
    if form != AUC and form != AUC_ORDERED and form != RANKING:
        raise ValueError("allpairs_grad: form must be AUC, AUC_ORDERED or RANKING (linear margins); "
                         "the metric-learning forms need the double loop")
    if work.shape[0] < 4 * n + _STACK:
        raise ValueError("allpairs_grad: work must have length >= 4 n + 160 (allpairs_work_size(n))")
    d = Xs.shape[1]
    npairs = n * (n - 1.0)
    npos, nneg, pm, finite = _scores(n, Xs, Ys, prime, k, krow, w, work)
    if not finite:
        if scale != 0.0:
            for a in range(d):
                g[a] += math.nan
        return math.nan
    if not pm:
        if form != RANKING:
            raise ValueError("allpairs_grad: the AUC forms need labels in {-1, +1}")
        return _general_pairs(form, phi, q, n, Xs, prime, k, krow, Ys, scale, g, work) / npairs
    gamma = _gamma(form)
    fac = _fac(form)
    same = 0.0
    if form == RANKING:
        # same-label ordered pairs: c = 0, value phi(0), zero gradient
        v0, _ = phi_value_deriv(phi, 0.0, q)
        same = (npos * (npos - 1.0) + nneg * (nneg - 1.0)) * v0
    if npos == 0 or nneg == 0:
        return same / npairs
    if phi == SQUARED:
        tot = _squared(n, Xs, Ys, prime, k, krow, npos, nneg, gamma, fac * scale / npairs, g, work)
        return (fac * tot + same) / npairs
    if phi == HINGE:
        tot = _hinge(n, Xs, Ys, prime, k, krow, npos, nneg, gamma, fac * scale / npairs, g, work)
        return (fac * tot + same) / npairs
    tot = _pn_pairs(phi, q, n, Xs, Ys, prime, k, krow, npos, nneg, gamma, fac * scale / npairs, g, work)
    return (fac * tot + same) / npairs


@njit(cache=True)
def _squared(n, Xs, Ys, prime, k, krow, npos, nneg, gamma, f, g, work):
    """sum_{P,N} (1 - gamma (s_P - s_N))^2; g += f * gamma * sum_{P,N} phi'(m)(x_P - x_N)."""
    ig = 1.0 / gamma
    su = 0.0
    for i in range(npos):
        su += ig - work[n + i]
    ss = 0.0
    for j in range(nneg):
        ss += work[n + npos + j]
    ubar = su / npos
    sbar = ss / nneg
    vu = 0.0
    for i in range(npos):
        e = ig - work[n + i] - ubar
        vu += e * e
    vs = 0.0
    for j in range(nneg):
        e = work[n + npos + j] - sbar
        vs += e * e
    m = ubar + sbar
    tot = gamma * gamma * (nneg * vu + npos * vs + npos * nneg * m * m)
    if f != 0.0:
        d = Xs.shape[1]
        c0 = -2.0 * gamma * gamma * f
        for i in range(n):
            r = _row(i, prime, k, krow)
            if Ys[r] == 1.0:
                c = c0 * nneg * (ig - work[i] + sbar)
            else:
                c = -c0 * npos * (ubar + work[i])
            if c != 0.0:
                for a in range(d):
                    g[a] += c * Xs[r, a]
    return tot


@njit(cache=True)
def _hinge(n, Xs, Ys, prime, k, krow, npos, nneg, gamma, f, g, work):
    """sum_{P,N} (1 - gamma (s_P - s_N))_+ by sorting; g += f * gamma * sum phi'(m)(x_P - x_N)."""
    offp = n
    offn = n + npos
    stk0 = 4 * n + 1
    _qsort(work, offp, offp + npos, work, stk0)
    _qsort(work, offn, offn + nneg, work, stk0)
    # suffix sums of the sorted negative scores: work[3n + j] = sum_{j' >= j} sn[j']
    suf = 3 * n
    work[suf + nneg] = 0.0
    acc = 0.0
    for j in range(nneg - 1, -1, -1):
        acc += work[offn + j]
        work[suf + j] = acc
    ig = 1.0 / gamma
    tot = 0.0
    d = Xs.shape[1]
    c0 = -gamma * f
    for i in range(n):
        r = _row(i, prime, k, krow)
        s = work[i]
        if Ys[r] == 1.0:
            j0 = _first_active_neg(s, work, offn, nneg, gamma)
            cnt = nneg - j0
            if cnt == 0:
                continue
            tot += cnt * (ig - s) + work[suf + j0]
            c = c0 * cnt
        else:
            cnt = _count_active_pos(s, work, offp, npos, gamma)
            if cnt == 0:
                continue
            c = -c0 * cnt
        if f != 0.0:
            for a in range(d):
                g[a] += c * Xs[r, a]
    return gamma * tot


@njit(cache=True)
def _pn_pairs(phi, q, n, Xs, Ys, prime, k, krow, npos, nneg, gamma, f, g, work):
    """sum_{P,N} phi(gamma (s_P - s_N)) pair by pair on the scores (no closed form: logistic,
    q-hinge); the coefficients go to work[2n:3n] (positives then negatives, example order)."""
    offp = n
    offn = n + npos
    cp = 2 * n
    cn = 2 * n + npos
    for j in range(nneg):
        work[cn + j] = 0.0
    tot = 0.0
    lo = math.inf
    hi = -math.inf
    for i in range(n):
        lo = min(lo, work[i])
        hi = max(hi, work[i])
    if phi == LOGISTIC and gamma * (hi - lo) < 600.0:
        # e^{-m} = e^{-gamma (s_P - c)} e^{gamma (s_N - c)}: 2n exps instead of one per pair;
        # the centre c and the range bound keep every factor and product finite (< e^600)
        cen = 0.5 * (lo + hi)
        ea = 3 * n
        eb = 3 * n + npos
        for i in range(npos):
            work[ea + i] = math.exp(-gamma * (work[offp + i] - cen))
        for j in range(nneg):
            work[eb + j] = math.exp(gamma * (work[offn + j] - cen))
        # sum_j log(1 + e_j) as log(prod_j (1 + e_j)) over blocks of K factors: one log per
        # block; every factor is < e^{gamma (hi - lo) + 0.7}, so a block stays below e^700
        K = min(256, max(1, int(700.0 / (gamma * (hi - lo) + 0.7))))
        for i in range(npos):
            api = work[ea + i]
            ai = 0.0
            for j0 in range(0, nneg, K):
                prod = 1.0
                for j in range(j0, min(j0 + K, nneg)):
                    e = api * work[eb + j]
                    ope = 1.0 + e
                    prod *= ope
                    dv = e / ope   # -phi'(m)
                    ai -= dv
                    work[cn + j] += dv
                tot += math.log(prod)
            work[cp + i] = ai
    else:
        for i in range(npos):
            sp = work[offp + i]
            ai = 0.0
            for j in range(nneg):
                v, dv = phi_value_deriv(phi, gamma * (sp - work[offn + j]), q)
                tot += v
                ai += dv
                work[cn + j] -= dv
            work[cp + i] = ai
    if f != 0.0:
        d = Xs.shape[1]
        c0 = gamma * f
        ip = 0
        ineg = 0
        for i in range(n):
            r = _row(i, prime, k, krow)
            if Ys[r] == 1.0:
                c = c0 * work[cp + ip]
                ip += 1
            else:
                c = c0 * work[cn + ineg]
                ineg += 1
            if c != 0.0:
                for a in range(d):
                    g[a] += c * Xs[r, a]
    return tot


@njit(cache=True)
def _general_pairs(form, phi, q, n, Xs, prime, k, krow, Ys, scale, g, work):
    """Any real labels: every unordered pair once on the scores, both orders evaluated as
    ``pair_loss_grad`` would (O(n^2 + n d)).  Returns the sum over the n(n-1) ordered pairs."""
    npairs = n * (n - 1.0)
    co = 2 * n
    for i in range(n):
        work[co + i] = 0.0
    tot = 0.0
    for i in range(n):
        yi = Ys[_row(i, prime, k, krow)]
        si = work[i]
        for j in range(i + 1, n):
            yj = Ys[_row(j, prime, k, krow)]
            diff = si - work[j]
            c1 = _coef(form, yi, yj)
            c2 = _coef(form, yj, yi)
            if c1 != 0.0 or form == RANKING:
                v, dv = phi_value_deriv(phi, c1 * diff, q)
                tot += v
                work[co + i] += c1 * dv
                work[co + j] -= c1 * dv
            if c2 != 0.0 or form == RANKING:
                v, dv = phi_value_deriv(phi, c2 * (-diff), q)
                tot += v
                work[co + j] += c2 * dv
                work[co + i] -= c2 * dv
    if scale != 0.0:
        _accumulate(n, Xs, prime, k, krow, work, co, scale / npairs, g)
    return tot

