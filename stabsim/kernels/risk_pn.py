"""The P x N block of the risk kernels: sums, rows, Hessians of the linear pairwise forms.

Notation.  a = X w are the scores.  For the linear pairwise forms with two label values
("binary", class P = the larger label, class N = the smaller one) every ordered pair sum is
written through the P x N block of margins m_ij = s (a_i - b_j), i in P, j in N:

    sum_{i != j} f(w; z_i, z_j) = mult * sum_{i in P, j in N} phi(s (a_i - b_j)) + kconst

``auc``: s = 1, mult = 2, kconst = 0;  ``auc_ordered``: s = 1, mult = 1, kconst = 0;
``ranking`` with labels {lo, hi}: s = hi - lo, mult = 2, kconst = phi(0) (nP(nP-1) + nN(nN-1))
(same-label pairs have margin 0).  The callers pass ``ap = s * a_P`` and ``an = s * a_N``.

Shortcuts (``fast``), O(n log n) instead of O(nP nN):

* squared phi: sum_{i,j} (c_i + b_j)^2 with c = 1 - a_P is, with centred c and b,
  nN sum (c - cbar)^2 + nP sum (b - bbar)^2 + nP nN (cbar + bbar)^2 (no cancellation).
* hinge phi: sort b; for each i the pairs with a_i - b_j < 1 form a suffix of the sorted b
  (found by bisection with exactly that floating-point predicate, so the pair sets seen from
  the P side and from the N side agree and the subgradient is a consistent one), and the
  sum is k (1 - a_i) + (suffix sum of b).
* logistic phi, scores below 300 in size: log(1 + e^{-(a - b)}) = log1p(E_i F_j), E = e^{-a},
  F = e^{b}: one log1p per pair and no exp.
* the smoothed hinge (``risk_phi``, tau > 0): banded (``sh_*``), the pairs far from the kink
  by prefix sums.

No kernel allocates inside its pair loops; per-parameter-vector work arrays are allocated once
per vector.
"""

from __future__ import annotations

import math

import numpy as np
from stabsim.compile.jit import njit

from stabsim.engine.losses import HINGE, LOGISTIC, SQUARED
from stabsim.kernels.risk_phi import _TCUT, phi_all, phi_second, phi_value, phi_vd, phi2_lower


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
    if fast and phi == SQUARED:
        return _pn_rows_squared(ap, an, rowP, rowN, dP, dN)
    if fast and phi == HINGE and tau == 0.0:
        return _pn_rows_hinge(ap, an, rowP, rowN, dP, dN)
    if fast and phi == LOGISTIC and _exp_ok(ap, an):
        return _pn_rows_logistic(ap, an, rowP, rowN, dP, dN, derivs)
    tot = 0.0
    totsq = 0.0
    # Without derivatives (the U-statistic): phi' is never formed (the compiler drops it), the row
    # sum of i is kept in a local (the same additions in the same order as into rowP[i]) and a zero
    # term (phi = 0 beyond the kink) is not added: adding +0.0 to these sums of terms >= 0 changes
    # no bit (the q-hinge's U-statistic, one pow per active pair, is faster).
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


@njit(cache=True, inline="always")
def _pn_rows_squared(ap, an, rowP, rowN, dP, dN):
    """``pn_rows`` for the squared phi (``fast``): centred moments, O(nP + nN)."""
    nP = ap.shape[0]
    nN = an.shape[0]
    tot = 0.0
    totsq = 0.0
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


@njit(cache=True, inline="always")
def _pn_rows_hinge(ap, an, rowP, rowN, dP, dN):
    """``pn_rows`` for the hinge (``fast``, tau = 0): sorted scores and bisection, O(n log n)."""
    nP = ap.shape[0]
    nN = an.shape[0]
    tot = 0.0
    totsq = 0.0
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


@njit(cache=True, inline="always")
def _pn_rows_logistic(ap, an, rowP, rowN, dP, dN, derivs):
    """``pn_rows`` for the logistic phi (``fast``, scores below 300 in size): factorised
    as in ``pn_sum``."""
    nP = ap.shape[0]
    nN = an.shape[0]
    tot = 0.0
    totsq = 0.0
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
