"""numba kernels behind ``stabsim.risk``: empirical risks F_S, U-statistic rows, gradients and
Hessians of the pairwise and pointwise losses of ``stabsim.engine.losses``.

The scalar functions phi (with the smoothed hinge, ``tau > 0``) are ``risk_phi``; the kernels
named ``pn_*`` / ``sh_*``, on the P x N block of margins of a problem with two label values
(and its O(n log n) shortcuts, ``fast``), are ``risk_pn``.  Here: ``rank_*`` on all pairs of a
ranking problem with more than two label values, ``metric_*`` on the metric-learning forms,
``point_*`` pointwise, and the batches over many parameter vectors (``risk_batch``,
``ustat_batch``).  No kernel allocates inside its pair loops; per-parameter-vector work arrays
are allocated once per vector.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange
from stabsim.compile.jit import njit

from stabsim.engine.losses import METRIC_TAU, POINT_LSQ, SQUARED, pair_loss_grad, point_loss_grad
from stabsim.kernels.risk_phi import phi2_lower, phi_all, phi_second, phi_value, phi_vd
from stabsim.kernels.risk_pn import pn_rows, pn_sum

KIND_POINT, KIND_PN, KIND_RANK, KIND_METRIC = range(4)
MODE_LOOP, MODE_SCORES, MODE_FAST = range(3)


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
