"""numba kernels behind ``stabsim.risk``: empirical risks F_S, U-statistic rows, gradients and
Hessians of the pairwise and pointwise losses of ``stabsim.losses``.

Notation.  a = X w are the scores.  For the linear pairwise forms with two label values
("binary", class P = the larger label, class N = the smaller one) every ordered pair sum is
written through the P x N block of margins m_ij = s (a_i - b_j), i in P, j in N:

    sum_{i != j} f(w; z_i, z_j) = mult * sum_{i in P, j in N} phi(s (a_i - b_j)) + kconst

``auc``: s = 1, mult = 2, kconst = 0;  ``auc_ordered``: s = 1, mult = 1, kconst = 0;
``ranking`` with labels {lo, hi}: s = hi - lo, mult = 2, kconst = phi(0) (nP(nP-1) + nN(nN-1))
(same-label pairs have margin 0).  The callers pass ``ap = s * a_P`` and ``an = s * a_N``.

Kernels named ``pn_*`` work on that block; ``rank_*`` on all pairs of a ranking problem with
more than two label values; ``metric_*`` on the metric-learning forms; ``point_*`` pointwise.

Shortcuts (``fast``), O(n log n) instead of O(nP nN):

* squared phi: sum_{i,j} (c_i + b_j)^2 with c = 1 - a_P is, with centred c and b,
  nN sum (c - cbar)^2 + nP sum (b - bbar)^2 + nP nN (cbar + bbar)^2 (no cancellation).
* hinge phi: sort b; for each i the pairs with a_i - b_j < 1 form a suffix of the sorted b
  (found by bisection with exactly that floating-point predicate, so the pair sets seen from
  the P side and from the N side agree and the subgradient is a consistent one), and the
  sum is k (1 - a_i) + (suffix sum of b).

``tau > 0`` replaces the hinge by its softplus smoothing tau log(1 + exp((1 - m)/tau)), which
lies between (1 - m)_+ and (1 - m)_+ + tau log 2 (used by the ERM solver; for |1 - m| > 36 tau
it is taken equal to the hinge, an error below 2.4e-16 tau).  No kernel
allocates inside its pair loops; per-parameter-vector work arrays are allocated once per vector.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange
from ..jit import njit

from ..losses import (HINGE, LOGISTIC, METRIC_TAU, POINT_LSQ, QHINGE, SQUARED,
                      pair_loss_grad, phi_value_deriv, point_loss_grad)

KIND_POINT, KIND_PN, KIND_RANK, KIND_METRIC = range(4)
MODE_LOOP, MODE_SCORES, MODE_FAST = range(3)
# smoothed hinge: beyond |1 - m| > 36 tau the softplus equals the hinge to below 2.4e-16 tau,
# and is evaluated as the hinge (no exp): most pairs are far from the kink once tau is small
_TCUT = 36.0


# ---- scalar functions ----------------------------------------------------------------------

@njit(cache=True, inline="always")
def phi_all(phi, q, tau, m):
    """phi(m), phi'(m), phi''(m).  ``tau > 0`` smooths the hinge (softplus, see module doc)."""
    if phi == HINGE and tau > 0.0:
        t = (1.0 - m) / tau
        if t > _TCUT:
            return tau * t, -1.0, 0.0
        if t < -_TCUT:
            return 0.0, 0.0, 0.0
        e = math.exp(-abs(t))
        if t >= 0.0:
            sp = t + math.log1p(e)
            sg = 1.0 / (1.0 + e)
        else:
            sp = math.log1p(e)
            sg = e / (1.0 + e)
        return tau * sp, -sg, e / ((1.0 + e) * (1.0 + e)) / tau
    v, d1 = phi_value_deriv(phi, m, q)
    return v, d1, phi_second(phi, q, tau, m)


@njit(cache=True, inline="always")
def phi_second(phi, q, tau, m):
    """phi''(m) alone, the third number of ``phi_all`` bit for bit (the Hessian loops need no
    value: this skips phi's exp and log1p)."""
    if phi == HINGE and tau > 0.0:
        t = (1.0 - m) / tau
        if t > _TCUT or t < -_TCUT:
            return 0.0
        e = math.exp(-abs(t))
        return e / ((1.0 + e) * (1.0 + e)) / tau
    if phi == SQUARED:
        return 2.0
    if phi == LOGISTIC:
        e = math.exp(-abs(m))
        return e / ((1.0 + e) * (1.0 + e))
    if phi == QHINGE:
        return q * (q - 1.0) * (1.0 - m) ** (q - 2.0) if m < 1.0 else 0.0
    return 0.0


@njit(cache=True, inline="always")
def phi_value(phi, q, tau, m):
    """phi(m) only (the cheapest form, for value loops)."""
    if phi == LOGISTIC:
        return math.log1p(math.exp(-abs(m))) + max(-m, 0.0)
    if phi == HINGE:
        if tau > 0.0:
            t = (1.0 - m) / tau
            if t > _TCUT:
                return tau * t
            if t < -_TCUT:
                return 0.0
            return tau * (math.log1p(math.exp(-abs(t))) + max(t, 0.0))
        return 1.0 - m if m < 1.0 else 0.0
    if phi == SQUARED:
        r = 1.0 - m
        return r * r
    if m < 1.0:  # QHINGE
        return (1.0 - m) ** q
    return 0.0


@njit(cache=True, inline="always")
def phi_vd(phi, q, tau, m):
    """phi(m) and phi'(m)."""
    if phi == HINGE and tau > 0.0:
        t = (1.0 - m) / tau
        if t > _TCUT:
            return tau * t, -1.0
        if t < -_TCUT:
            return 0.0, 0.0
        e = math.exp(-abs(t))
        if t >= 0.0:
            return tau * (t + math.log1p(e)), -1.0 / (1.0 + e)
        return tau * math.log1p(e), -e / (1.0 + e)
    return phi_value_deriv(phi, m, q)


@njit(cache=True, inline="always")
def phi2_lower(phi, q, tau, m, r):
    """A lower bound of phi'' on the interval [m - r, m + r] (logistic: phi'' decreases in
    |m|; smoothed hinge: in |1 - m|; squared: constant; others: 0)."""
    if phi == SQUARED:
        return 2.0
    if phi == LOGISTIC:
        e = math.exp(-(abs(m) + r))
        return e / ((1.0 + e) * (1.0 + e))
    if phi == HINGE and tau > 0.0:
        e = math.exp(-(abs(1.0 - m) + r) / tau)
        return e / ((1.0 + e) * (1.0 + e)) / tau
    return 0.0


@njit(cache=True, nogil=True)
def _sorted(x):
    """Ascending copy of x: bottom-up merge sort (compiles much faster than numba's np.sort)."""
    n = x.shape[0]
    a = x.copy()
    b = np.empty(n)
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                if a[j] < a[i]:
                    b[k] = a[j]
                    j += 1
                else:
                    b[k] = a[i]
                    i += 1
                k += 1
            while i < mid:
                b[k] = a[i]
                i += 1
                k += 1
            while j < hi:
                b[k] = a[j]
                j += 1
                k += 1
            lo = hi
        a, b = b, a
        width *= 2
    return a


@njit(cache=True, inline="always")
def _first_below_one(a, bs):
    """Smallest l with fl(a - bs[l]) < 1 for ascending bs (len(bs) if none)."""
    lo = 0
    hi = bs.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if a - bs[mid] < 1.0:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, inline="always")
def _count_below_one(as_, b):
    """Number of l with fl(as_[l] - b) < 1 for ascending as_ (they form a prefix)."""
    lo = 0
    hi = as_.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if as_[mid] - b < 1.0:
            lo = mid + 1
        else:
            hi = mid
    return lo


# ---- the P x N block -----------------------------------------------------------------------

@njit(cache=True, nogil=True)
def pn_sum(phi, q, tau, ap, an, fast):
    """sum_{i in P, j in N} phi(ap_i - an_j): the value only."""
    nP = ap.shape[0]
    nN = an.shape[0]
    if nP == 0 or nN == 0:
        return 0.0
    if fast and phi == SQUARED:
        cbar = 0.0
        for i in range(nP):
            cbar += 1.0 - ap[i]
        cbar /= nP
        bbar = 0.0
        for j in range(nN):
            bbar += an[j]
        bbar /= nN
        vc = 0.0
        for i in range(nP):
            e = 1.0 - ap[i] - cbar
            vc += e * e
        vb = 0.0
        for j in range(nN):
            e = an[j] - bbar
            vb += e * e
        u = cbar + bbar
        return nN * vc + nP * vb + nP * nN * u * u
    if fast and phi == HINGE and tau == 0.0:
        bs = _sorted(an)
        suf = np.empty(nN + 1)
        suf[nN] = 0.0
        for l in range(nN - 1, -1, -1):
            suf[l] = suf[l + 1] + bs[l]
        tot = 0.0
        for i in range(nP):
            idx = _first_below_one(ap[i], bs)
            k = nN - idx
            if k > 0:
                tot += k * (1.0 - ap[i]) + suf[idx]
        return tot
    if fast and phi == LOGISTIC and _exp_ok(ap, an):
        # log(1 + e^{-(a - b)}) = log1p(E_i F_j), E = e^{-a}, F = e^{b}: one log1p per pair
        E = np.empty(nP)
        F = np.empty(nN)
        for i in range(nP):
            E[i] = math.exp(-ap[i])
        for j in range(nN):
            F[j] = math.exp(an[j])
        tot = 0.0
        for i in range(nP):
            ai = ap[i]
            Ei = E[i]
            for j in range(nN):
                x = Ei * F[j]
                if x <= 1.0:
                    tot += math.log1p(x)
                else:
                    tot += (an[j] - ai) + math.log1p(1.0 / x)
        return tot
    tot = 0.0
    for i in range(nP):
        ai = ap[i]
        for j in range(nN):
            tot += phi_value(phi, q, tau, ai - an[j])
    return tot


@njit(cache=True, inline="always")
def _exp_ok(ap, an):
    """Scores small enough for the factorised logistic (no overflow of e^{+-a})."""
    for i in range(ap.shape[0]):
        if abs(ap[i]) > 300.0:
            return False
    for j in range(an.shape[0]):
        if abs(an[j]) > 300.0:
            return False
    return True


@njit(cache=True, nogil=True)
def pn_rows(phi, q, tau, ap, an, fast, rowP, rowN, dP, dN, derivs=True):
    """Row sums of the P x N block: rowP_i = sum_j phi(ap_i - an_j), rowN_j = sum_i phi(.),
    dP_i = sum_j phi'(.), dN_j = sum_i phi'(.) (overwritten).  Returns (sum, sum of squares).
    ``derivs=False``: dP and dN are not wanted (the factorised logistic then skips phi' and its
    division; the other sums are the same numbers)."""
    nP = ap.shape[0]
    nN = an.shape[0]
    rowP[:] = 0.0
    rowN[:] = 0.0
    dP[:] = 0.0
    dN[:] = 0.0
    if nP == 0 or nN == 0:
        return 0.0, 0.0
    tot = 0.0
    totsq = 0.0
    if fast and phi == SQUARED:
        cbar = 0.0
        for i in range(nP):
            cbar += 1.0 - ap[i]
        cbar /= nP
        bbar = 0.0
        for j in range(nN):
            bbar += an[j]
        bbar /= nN
        vc = 0.0
        for i in range(nP):
            e = 1.0 - ap[i] - cbar
            vc += e * e
        V2 = 0.0
        V3 = 0.0
        V4 = 0.0
        for j in range(nN):
            e = an[j] - bbar
            e2 = e * e
            V2 += e2
            V3 += e2 * e
            V4 += e2 * e2
        for i in range(nP):
            u = 1.0 - ap[i] + bbar
            rowP[i] = nN * u * u + V2
            dP[i] = -2.0 * nN * u
            tot += rowP[i]
            u2 = u * u
            totsq += nN * u2 * u2 + 6.0 * u2 * V2 + 4.0 * u * V3 + V4
        for j in range(nN):
            u = cbar + an[j]
            rowN[j] = nP * u * u + vc
            dN[j] = -2.0 * nP * u
        return tot, totsq
    if fast and phi == HINGE and tau == 0.0:
        bs = _sorted(an)
        as_ = _sorted(ap)
        S1 = np.empty(nN + 1)
        S2 = np.empty(nN + 1)
        S1[nN] = 0.0
        S2[nN] = 0.0
        for l in range(nN - 1, -1, -1):
            S1[l] = S1[l + 1] + bs[l]
            S2[l] = S2[l + 1] + bs[l] * bs[l]
        P1 = np.empty(nP + 1)
        P1[0] = 0.0
        for l in range(nP):
            P1[l + 1] = P1[l] + as_[l]
        for i in range(nP):
            idx = _first_below_one(ap[i], bs)
            k = nN - idx
            c = 1.0 - ap[i]
            if k > 0:
                rowP[i] = k * c + S1[idx]
                totsq += k * c * c + 2.0 * c * S1[idx] + S2[idx]
            dP[i] = -1.0 * k
            tot += rowP[i]
        for j in range(nN):
            k = _count_below_one(as_, an[j])
            if k > 0:
                rowN[j] = k * (1.0 + an[j]) - P1[k]
            dN[j] = -1.0 * k
        return tot, totsq
    if fast and phi == LOGISTIC and _exp_ok(ap, an):
        # factorised as in pn_sum: x = e^{-(a_i - b_j)}, phi = log1p(x), phi' = -x / (1 + x)
        E = np.empty(nP)
        F = np.empty(nN)
        for i in range(nP):
            E[i] = math.exp(-ap[i])
        for j in range(nN):
            F[j] = math.exp(an[j])
        for i in range(nP):
            ai = ap[i]
            Ei = E[i]
            for j in range(nN):
                x = Ei * F[j]
                if x <= 1.0:
                    v = math.log1p(x)
                else:
                    v = (an[j] - ai) + math.log1p(1.0 / x)
                rowP[i] += v
                rowN[j] += v
                if derivs:
                    d1 = -x / (1.0 + x) if x <= 1.0 else -1.0 / (1.0 + 1.0 / x)
                    dP[i] += d1
                    dN[j] += d1
                totsq += v * v
            tot += rowP[i]
        return tot, totsq
    # Without derivatives (the U-statistic): phi' is never formed (the compiler drops it), the row
    # sum of i is kept in a local (the same additions in the same order as into rowP[i]) and a zero
    # term (phi = 0 beyond the kink) is not added: adding +0.0 to these sums of terms >= 0 changes
    # no bit.  The q-hinge's U-statistic (one pow per active pair) is about 10-15 % faster.
    if not derivs:
        for i in range(nP):
            ai = ap[i]
            acc = 0.0
            for j in range(nN):
                v, _ = phi_vd(phi, q, tau, ai - an[j])
                if v != 0.0:
                    acc += v
                    rowN[j] += v
                    totsq += v * v
            rowP[i] = acc
            tot += acc
        return tot, totsq
    for i in range(nP):
        ai = ap[i]
        for j in range(nN):
            v, d1 = phi_vd(phi, q, tau, ai - an[j])
            rowP[i] += v
            rowN[j] += v
            dP[i] += d1
            dN[j] += d1
            totsq += v * v
        tot += rowP[i]
    return tot, totsq


@njit(cache=True, nogil=True)
def pn_hess(phi, q, tau, ap, an, XN, rad, normP, normN, hP, hN, T):
    """Second-derivative sums of the P x N block: hP_i = sum_j h_ij, hN_j = sum_i h_ij and
    T = H XN (T_i = sum_j h_ij x_j), with h_ij = phi''(ap_i - an_j), or, when ``rad > 0``, the
    lower bound of phi'' over |margin change| <= rad (normP_i + normN_j)."""
    nP = ap.shape[0]
    nN = an.shape[0]
    d = XN.shape[1]
    hP[:] = 0.0
    hN[:] = 0.0
    T[:, :] = 0.0
    for i in range(nP):
        ai = ap[i]
        for j in range(nN):
            m = ai - an[j]
            if rad > 0.0:
                h = phi2_lower(phi, q, tau, m, rad * (normP[i] + normN[j]))
            else:
                h = phi_second(phi, q, tau, m)
            if h != 0.0:
                hP[i] += h
                hN[j] += h
                for c in range(d):
                    T[i, c] += h * XN[j, c]


# ---- the smoothed hinge on the P x N block, banded -------------------------------------------
# With b sorted, the pairs of a fixed i split into three runs: t = (1 - (a_i - b_j))/tau < -36
# (value 0), the band |t| <= 36 (softplus), and t > 36 (value 1 - a_i + b_j, phi' = -1, phi'' = 0,
# handled with prefix sums).  Cost O(n log n + pairs in the band), which shrinks with tau.

@njit(cache=True, nogil=True)
def _argsorted(x):
    """Indices that sort x ascending (bottom-up merge sort, stable)."""
    n = x.shape[0]
    a = np.arange(n)
    b = np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                if x[a[j]] < x[a[i]]:
                    b[k] = a[j]
                    j += 1
                else:
                    b[k] = a[i]
                    i += 1
                k += 1
            while i < mid:
                b[k] = a[i]
                i += 1
                k += 1
            while j < hi:
                b[k] = a[j]
                j += 1
                k += 1
            lo = hi
        a, b = b, a
        width *= 2
    return a


@njit(cache=True, inline="always")
def _tval(tau, ai, bj):
    return (1.0 - (ai - bj)) / tau


@njit(cache=True, inline="always")
def _first_t_above(tau, ai, bs, thr):
    """Smallest l with t(ai, bs[l]) > thr (t increases with l for ascending bs)."""
    lo = 0
    hi = bs.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if _tval(tau, ai, bs[mid]) > thr:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, inline="always")
def _first_t_not_above(tau, as_, bj, thr):
    """Smallest l with t(as_[l], bj) <= thr (t decreases with l for ascending as_)."""
    lo = 0
    hi = as_.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if _tval(tau, as_[mid], bj) <= thr:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, nogil=True)
def sh_sum(tau, ap, an):
    """sum_{i,j} of the smoothed hinge at ap_i - an_j (banded)."""
    nP = ap.shape[0]
    nN = an.shape[0]
    if nP == 0 or nN == 0:
        return 0.0
    bs = _sorted(an)
    suf = np.empty(nN + 1)
    suf[nN] = 0.0
    for l in range(nN - 1, -1, -1):
        suf[l] = suf[l + 1] + bs[l]
    tot = 0.0
    for i in range(nP):
        ai = ap[i]
        lo = _first_t_above(tau, ai, bs, -_TCUT)
        hi = _first_t_above(tau, ai, bs, _TCUT)
        k = nN - hi
        if k > 0:
            tot += k * (1.0 - ai) + suf[hi]
        for l in range(lo, hi):
            tot += phi_value(HINGE, 2.0, tau, ai - bs[l])
    return tot


@njit(cache=True, nogil=True)
def sh_rows(tau, ap, an, rowP, rowN, dP, dN):
    """``pn_rows`` for the smoothed hinge (banded).  Returns the sum (no sum of squares)."""
    nP = ap.shape[0]
    nN = an.shape[0]
    rowP[:] = 0.0
    rowN[:] = 0.0
    dP[:] = 0.0
    dN[:] = 0.0
    if nP == 0 or nN == 0:
        return 0.0
    bs = _sorted(an)
    as_ = _sorted(ap)
    S1 = np.empty(nN + 1)
    S1[nN] = 0.0
    for l in range(nN - 1, -1, -1):
        S1[l] = S1[l + 1] + bs[l]
    P1 = np.empty(nP + 1)
    P1[0] = 0.0
    for l in range(nP):
        P1[l + 1] = P1[l] + as_[l]
    tot = 0.0
    for i in range(nP):
        ai = ap[i]
        lo = _first_t_above(tau, ai, bs, -_TCUT)
        hi = _first_t_above(tau, ai, bs, _TCUT)
        k = nN - hi
        v = 0.0
        d = -1.0 * k
        if k > 0:
            v = k * (1.0 - ai) + S1[hi]
        for l in range(lo, hi):
            vv, dd = phi_vd(HINGE, 2.0, tau, ai - bs[l])
            v += vv
            d += dd
        rowP[i] = v
        dP[i] = d
        tot += v
    for j in range(nN):
        bj = an[j]
        hE = _first_t_not_above(tau, as_, bj, _TCUT)   # t > TCUT for l < hE
        lS = _first_t_not_above(tau, as_, bj, -_TCUT)  # t <= -TCUT for l >= lS
        v = 0.0
        d = -1.0 * hE
        if hE > 0:
            v = hE * (1.0 + bj) - P1[hE]
        for l in range(hE, lS):
            vv, dd = phi_vd(HINGE, 2.0, tau, as_[l] - bj)
            v += vv
            d += dd
        rowN[j] = v
        dN[j] = d
    return tot


@njit(cache=True, nogil=True)
def sh_hess(tau, ap, an, XN, hP, hN, T):
    """``pn_hess`` for the smoothed hinge (banded; phi'' = 0 outside the band)."""
    nP = ap.shape[0]
    nN = an.shape[0]
    d = XN.shape[1]
    hP[:] = 0.0
    hN[:] = 0.0
    T[:, :] = 0.0
    if nP == 0 or nN == 0:
        return
    perm = _argsorted(an)
    bs = np.empty(nN)
    for l in range(nN):
        bs[l] = an[perm[l]]
    for i in range(nP):
        ai = ap[i]
        lo = _first_t_above(tau, ai, bs, -_TCUT)
        hi = _first_t_above(tau, ai, bs, _TCUT)
        for l in range(lo, hi):
            h = phi_second(HINGE, 2.0, tau, ai - bs[l])
            if h != 0.0:
                j = perm[l]
                hP[i] += h
                hN[j] += h
                for c in range(d):
                    T[i, c] += h * XN[j, c]


@njit(cache=True, nogil=True)
def pn_alpha(tau, ap, an, out):
    """Dual weights alpha_ij = -phi_tau'(ap_i - an_j) in [0, 1] of the (smoothed) hinge."""
    for i in range(ap.shape[0]):
        for j in range(an.shape[0]):
            v, d1, d2 = phi_all(HINGE, 2.0, tau, ap[i] - an[j])
            out[i, j] = -d1


# ---- ranking with more than two label values ---------------------------------------------

@njit(cache=True, nogil=True)
def rank_rows(phi, q, tau, a, y, rows, drows):
    """All ordered pairs of a ranking problem (margin (y_i - y_j)(a_i - a_j), symmetric in i, j):
    rows_i = sum_{j != i} f_ij, drows_i = coefficient of x_i in the gradient of sum_{i != j} f_ij.
    Returns (sum over ordered pairs, sum of squares over ordered pairs)."""
    n = a.shape[0]
    rows[:] = 0.0
    drows[:] = 0.0
    tot = 0.0
    totsq = 0.0
    sd1 = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            c = y[i] - y[j]
            v, d1 = phi_vd(phi, q, tau, c * (a[i] - a[j]))
            rows[i] += v
            rows[j] += v
            g = 2.0 * d1 * c
            drows[i] += g
            drows[j] -= g
            tot += 2.0 * v
            totsq += 2.0 * v * v
            sd1 += 2.0 * d1
    return tot, totsq, sd1


@njit(cache=True, nogil=True)
def rank_hess(phi, q, tau, a, y, rad, norms, Hm, r):
    """Weights of the ranking Hessian: Hm_ij = phi''(m_ij) (y_i - y_j)^2 (or, when rad > 0, the
    lower bound of phi'' over |margin change| <= rad |y_i - y_j| (norms_i + norms_j)), r = row sums.
    sum_{i != j} Hessians = 2 X' (diag(r) - Hm) X."""
    n = a.shape[0]
    r[:] = 0.0
    for i in range(n):
        Hm[i, i] = 0.0
        for j in range(i + 1, n):
            c = y[i] - y[j]
            m = c * (a[i] - a[j])
            if rad > 0.0:
                h = phi2_lower(phi, q, tau, m, rad * abs(c) * (norms[i] + norms[j]))
            else:
                h = phi_second(phi, q, tau, m)
            h *= c * c
            Hm[i, j] = h
            Hm[j, i] = h
            r[i] += h
            r[j] += h


@njit(cache=True, nogil=True)
def rank_sum(phi, q, a, y, fast):
    """sum_{i != j} phi((y_i - y_j)(a_i - a_j)); O(n) for the squared phi (centred moments)."""
    n = a.shape[0]
    if fast and phi == SQUARED:
        ab = 0.0
        yb = 0.0
        for i in range(n):
            ab += a[i]
            yb += y[i]
        ab /= n
        yb /= n
        Sya = 0.0
        Syyaa = 0.0
        Syy = 0.0
        Saa = 0.0
        for i in range(n):
            ac = a[i] - ab
            yc = y[i] - yb
            Sya += yc * ac
            Syyaa += yc * yc * ac * ac
            Syy += yc * yc
            Saa += ac * ac
        # sum_{i,j} (1 - c m)^2 with c m = (y_i - y_j)(a_i - a_j), minus the n diagonal terms 1
        return (n * (n - 1.0) - 4.0 * n * Sya
                + 2.0 * n * Syyaa + 2.0 * Syy * Saa + 4.0 * Sya * Sya)
    tot = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            tot += 2.0 * phi_value(phi, q, 0.0, (y[i] - y[j]) * (a[i] - a[j]))
    return tot


# ---- pointwise ----------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def point_rows(form, phi, q, tau, a, y, vals, d1s, d2s):
    """Per-example value, d/da and d^2/da^2 of the pointwise loss at the scores a."""
    for i in range(a.shape[0]):
        if form == POINT_LSQ:
            r = a[i] - y[i]
            vals[i] = 0.5 * r * r
            d1s[i] = r
            d2s[i] = 1.0
        else:
            v, d1, d2 = phi_all(phi, q, tau, y[i] * a[i])
            vals[i] = v
            d1s[i] = d1 * y[i]
            d2s[i] = d2 * y[i] * y[i]


# ---- metric learning ----------------------------------------------------------------------

@njit(cache=True, inline="always")
def _metric_margin(form, w, X, i, j, ya, yb, dx):
    d = X.shape[1]
    for a in range(d):
        dx[a] = X[i, a] - X[j, a]
    quad = 0.0
    for a in range(d):
        row = 0.0
        for b in range(d):
            row += w[a * d + b] * dx[b]
        quad += dx[a] * row
    if form == METRIC_TAU:
        c = 1.0 if ya == yb else -1.0
        return -c * quad, -c
    c = ya * yb
    return c * (1.0 - quad), -c


@njit(cache=True, parallel=True, nogil=True)
def metric_value_grad(form, phi, q, tau, w, X, Y, nchunks, G, out):
    """sum over ordered pairs i != j of f(w; z_i, z_j) for the metric forms (f is symmetric in
    i, j, so pairs i < j are counted twice), its gradient (G[0]) and the sum of phi' (out[1]).
    Rows are split into ``nchunks`` fixed chunks with their own buffers (G[c]) and summed in a
    fixed order, so the result does not depend on the thread count."""
    n, d = X.shape
    p = d * d
    vals = np.zeros(nchunks)
    sd1 = np.zeros(nchunks)
    for c in prange(nchunks):
        dx = np.empty(d)
        g = G[c]
        g[:] = 0.0
        v_acc = 0.0
        d_acc = 0.0
        for i in range(c, n, nchunks):
            for j in range(i + 1, n):
                m, dm = _metric_margin(form, w, X, i, j, Y[i], Y[j], dx)
                v, d1 = phi_vd(phi, q, tau, m)
                v_acc += 2.0 * v
                d_acc += 2.0 * d1
                f = 2.0 * d1 * dm
                if f != 0.0:
                    for a in range(d):
                        fa = f * dx[a]
                        for b in range(d):
                            g[a * d + b] += fa * dx[b]
        vals[c] = v_acc
        sd1[c] = d_acc
    for c in range(1, nchunks):
        for k in range(p):
            G[0, k] += G[c, k]
    tot = 0.0
    s1 = 0.0
    for c in range(nchunks):
        tot += vals[c]
        s1 += sd1[c]
    out[0] = tot
    out[1] = s1


# ---- plain loops through the losses module --------------------------------------------------
# ``pair_loss_grad`` / ``point_loss_grad`` are inline="always"; wrapping each once keeps the
# numba IR of the callers small (compile time) while LLVM still inlines the machine code.

@njit(cache=True, nogil=True)
def _pair_value(form, phi, q, w, X, i, yi, j, yj, dx):
    """f(w; z_i, z_j) through ``losses.pair_loss_grad`` with scale 0 (value only)."""
    return pair_loss_grad(form, phi, q, w, X, i, yi, j, yj, 0.0, dx[:0], dx)


@njit(cache=True, nogil=True)
def _point_value(form, phi, q, w, X, i, yi):
    """f(w; z_i) through ``losses.point_loss_grad`` with scale 0 (value only)."""
    return point_loss_grad(form, phi, q, w, X, i, yi, 0.0, w[:0])


# ---- many parameter vectors at once -----------------------------------------------------------

@njit(cache=True, inline="always")
def _scores(w, X, a):
    n, d = X.shape
    for i in range(n):
        s = 0.0
        for c in range(d):
            s += X[i, c] * w[c]
        a[i] = s


@njit(cache=True, nogil=True)
def _risk_one(mode, kind, form, phi, q, w, X, Y, idxP, idxN, s, mult, kconst):
    """F_S(w) at one w (see ``risk_batch``)."""
    n, d = X.shape
    npairs = n * (n - 1.0)
    if kind == KIND_POINT:
        tot = 0.0
        for i in range(n):
            tot += _point_value(form, phi, q, w, X, i, Y[i])
        return tot / n
    if mode == MODE_LOOP or kind == KIND_METRIC:
        dx = np.empty(d)
        tot = 0.0
        if mode == MODE_LOOP:
            for i in range(n):
                for j in range(n):
                    if j != i:
                        tot += _pair_value(form, phi, q, w, X, i, Y[i], j, Y[j], dx)
        else:
            for i in range(n):
                for j in range(i + 1, n):
                    tot += 2.0 * _pair_value(form, phi, q, w, X, i, Y[i], j, Y[j], dx)
        return tot / npairs
    a = np.empty(n)
    _scores(w, X, a)
    fast = mode == MODE_FAST
    if kind == KIND_PN:
        nP = idxP.shape[0]
        nN = idxN.shape[0]
        ap = np.empty(nP)
        an = np.empty(nN)
        shift = 0.0
        if fast:
            for i in range(n):
                shift += a[i]
            shift /= n
        for i in range(nP):
            ap[i] = s * (a[idxP[i]] - shift)
        for j in range(nN):
            an[j] = s * (a[idxN[j]] - shift)
        return (mult * pn_sum(phi, q, 0.0, ap, an, fast) + kconst) / npairs
    return rank_sum(phi, q, a, Y, fast) / npairs


@njit(cache=True, parallel=True, nogil=True)
def risk_batch(mode, kind, form, phi, q, Ws, X, Y, idxP, idxN, s, mult, kconst, out):
    """out[k] = F_S(Ws[k]) for every parameter vector (parallel over k).

    ``mode``: MODE_LOOP = the plain double loop over all ordered pairs i != j calling
    ``losses.pair_loss_grad`` with scale 0 (O(n^2 d), O(n^2 d^2) for metric forms);
    MODE_SCORES = O(n^2) scalar loop over the precomputed scores a = X w; MODE_FAST = the
    O(n log n) shortcuts where available (see module doc), else as MODE_SCORES.  Metric forms
    (no scores) use the plain loop, over pairs i < j counted twice unless MODE_LOOP.
    Each value is computed by one thread: results do not depend on the thread count.
    """
    for k in prange(Ws.shape[0]):
        out[k] = _risk_one(mode, kind, form, phi, q, Ws[k], X, Y, idxP, idxN, s, mult, kconst)


@njit(cache=True, nogil=True)
def _rows_one(kind, form, phi, q, w, X, Y, idxP, idxN, s, mult, kconst, hrow, a, ap, an,
              rowP, rowN, dP, dN, dx, work):
    """Row sums hrow_i = sum_{j != i} h(z_i, z_j) of the symmetrised kernel
    h = (f(z_i, z_j) + f(z_j, z_i)) / 2 at one w; returns sum_{i != j} h^2."""
    n, d = X.shape
    if kind == KIND_METRIC:
        hrow[:] = 0.0
        sq = 0.0
        for i in range(n):
            for j in range(i + 1, n):
                v = _pair_value(form, phi, q, w, X, i, Y[i], j, Y[j], dx)
                hrow[i] += v
                hrow[j] += v
                sq += 2.0 * v * v
        return sq
    _scores(w, X, a)
    if kind == KIND_RANK:
        tot, sq, sd1 = rank_rows(phi, q, 0.0, a, Y, hrow, work)
        return sq
    nP = idxP.shape[0]
    nN = idxN.shape[0]
    shift = 0.0
    for i in range(n):
        shift += a[i]
    shift /= n
    for i in range(nP):
        ap[i] = s * (a[idxP[i]] - shift)
    for j in range(nN):
        an[j] = s * (a[idxN[j]] - shift)
    # typed flags, not literals: those would compile pn_rows a second time (Python passes bools)
    fast, derivs = np.bool_(True), np.bool_(False)
    tot, sq = pn_rows(phi, q, 0.0, ap, an, fast, rowP, rowN, dP, dN, derivs)
    half = 0.5 * mult
    k0 = kconst / (nP * (nP - 1.0) + nN * (nN - 1.0)) if kconst != 0.0 else 0.0  # phi(0)
    for i in range(nP):
        hrow[idxP[i]] = half * rowP[i] + k0 * (nP - 1.0)
    for j in range(nN):
        hrow[idxN[j]] = half * rowN[j] + k0 * (nN - 1.0)
    return 2.0 * half * half * sq + k0 * k0 * (nP * (nP - 1.0) + nN * (nN - 1.0))


@njit(cache=True, nogil=True)
def _ustat_one(kind, form, phi, q, w, X, Y, idxP, idxN, s, mult, kconst, res):
    """res[0] = U (or the mean), res[1] = its standard error, at one w (see ``ustat_batch``)."""
    m, d = X.shape
    nP = idxP.shape[0]
    nN = idxN.shape[0]
    mm = m * (m - 1.0)
    if kind == KIND_POINT:
        s1 = 0.0
        s2 = 0.0
        for i in range(m):
            v = _point_value(form, phi, q, w, X, i, Y[i])
            s1 += v
            s2 += v * v
        mu = s1 / m
        var = max(s2 / m - mu * mu, 0.0) * m / (m - 1.0)
        res[0] = mu
        res[1] = math.sqrt(var / m)
        return
    hrow = np.empty(m)
    a = np.empty(m)
    ap = np.empty(nP)
    an = np.empty(nN)
    rowP = np.empty(nP)
    rowN = np.empty(nN)
    dP = np.empty(nP)
    dN = np.empty(nN)
    dx = np.empty(d)
    work = np.empty(m)
    sq = _rows_one(kind, form, phi, q, w, X, Y, idxP, idxN, s, mult, kconst, hrow, a, ap, an,
                   rowP, rowN, dP, dN, dx, work)
    tot = 0.0
    for i in range(m):
        hrow[i] /= (m - 1.0)
        tot += hrow[i]
    U = tot / m
    z1 = 0.0
    for i in range(m):
        e = hrow[i] - U
        z1 += e * e
    z1 /= (m - 1.0)
    z2 = max(sq / mm - U * U, 0.0)
    res[0] = U
    res[1] = math.sqrt(max(4.0 * (m - 2.0) / mm * z1 + 2.0 / mm * z2, 0.0))


@njit(cache=True, parallel=True, nogil=True)
def ustat_batch(kind, form, phi, q, Ws, X, Y, idxP, idxN, s, mult, kconst, val, se):
    """U-statistic U = (1/(m(m-1))) sum_{i != j} f(w; z_i, z_j) over a test sample, and its
    standard error from the Hoeffding decomposition (pointwise: mean and sd/sqrt(m)).

    Var U = 4(m-2)/(m(m-1)) zeta_1 + 2/(m(m-1)) zeta_2, with zeta_1 estimated by the sample
    variance of the row means hbar_i = (1/(m-1)) sum_{j != i} h(z_i, z_j) of the symmetrised
    kernel h and zeta_2 by the variance of h over the pairs.  The row-mean variance carries an
    upward bias of about zeta_2/(m-1), so the SE is slightly conservative.
    """
    for k in prange(Ws.shape[0]):
        res = np.empty(2)
        _ustat_one(kind, form, phi, q, Ws[k], X, Y, idxP, idxN, s, mult, kconst, res)
        val[k] = res[0]
        se[k] = res[1]
