"""Sufficient statistics of the squared pairwise loss: all pairs, and all previous draws.

The squared loss phi(m) = (1 - m)^2 is a quadratic in w, so for the linear pairwise forms of
``stabsim.engine.losses`` (labels in {-1, +1}; notation of ``stabsim.kernels.allpairs``: gamma = 1 for
``auc`` / ``auc_ordered``, 2 for ``ranking``; fac = 2 for the symmetric forms, 1 for
``auc_ordered``) per class the count m, mean mu and centred scatter C = sum (x - mu)(x - mu)^T
give

    sum_{P,N} (1 - m_PN)^2 = gamma^2 [ n_+ n_- rho^2 + n_- w'C_P w + n_+ w'C_N w ],
        rho = 1/gamma - w.(mu_P - mu_N),
    gradient sum = -2 gamma^2 [ n_+ n_- rho (mu_P - mu_N) - n_- C_P w - n_+ C_N w ],

O(d^2) per step after an O(n d^2) set-up per run (``class_stats`` + ``allpairs_squared_stats``),
and, for P0 Algorithm 1 (Yang, Lei, Lyu, Ying 2021: step t pairs the new draw z_{i_{t+1}} with
all previous draws z_{i_1..i_t}, average gradient (1/t) sum_k) and P3's pairwise GIGA (Huai et
al. 2020, Alg. 1: Lhat_t(w) = 1/(t-1) sum_{i<t} l(w; z_t, z_i)), running class statistics of the
previous draws (Welford updates, O(d^2) per added point, ``stats_add``) give the all-previous
average in O(d^2) instead of O(t d): with the new point a (label y_a), the other class's
statistics (m, mu, C) and dx = y_a (x_a - mu) (the class difference in the P - N direction),

    sum_{b previous, y_b != y_a} (1 - gamma w.(x_P - x_N))^2 = gamma^2 [ m rho^2 + w'C w ],
        rho = 1/gamma - w.dx,
    gradient sum = -2 gamma^2 [ m rho dx - C w ]               (``allprev_squared``).

Complexity: O(min(t d, d^2)) per step instead of O(t d), i.e. O(T d^2) instead of O(T^2 d)
for T steps.  The twin kernel's ALL_PREV branch (``stabsim.kernels.twin_steps._grad``) keeps
per-run class statistics with ``stats_add`` and calls ``allprev_squared`` for the squared loss.
"""

from __future__ import annotations

from stabsim.compile.jit import njit

from stabsim.engine.losses import AUC, AUC_ORDERED, RANKING
from stabsim.kernels.allpairs import _fac, _gamma, _row


def stats_shape(d: int) -> tuple[int, int]:
    """Shape of the class-statistics array: (2, 1 + d + d*d); row 0 the +1 class, row 1 the -1
    class; columns [count, mean (d), centred scatter sum (x - mu)(x - mu)^T (d x d, row-major)]."""
    return (2, 1 + int(d) + int(d) * int(d))


@njit(cache=True)
def class_stats(n, Xs, Ys, prime, k, krow, stats):
    """Per-class count, mean and centred scatter of the n examples of S (or S'), two-pass
    (mean first), into stats (``stats_shape(d)``).  O(n d^2); once per run for P2 Alg. 1."""
    d = Xs.shape[1]
    for c in range(2):
        for a in range(stats.shape[1]):
            stats[c, a] = 0.0
    for i in range(n):
        r = _row(i, prime, k, krow)
        y = Ys[r]
        if y == 1.0:
            c = 0
        elif y == -1.0:
            c = 1
        else:
            raise ValueError("class_stats: labels must be in {-1, +1}")
        stats[c, 0] += 1.0
        for a in range(d):
            stats[c, 1 + a] += Xs[r, a]
    for c in range(2):
        if stats[c, 0] > 0:
            for a in range(d):
                stats[c, 1 + a] /= stats[c, 0]
    o = 1 + d
    for i in range(n):
        r = _row(i, prime, k, krow)
        c = 0 if Ys[r] == 1.0 else 1
        for a in range(d):
            ea = Xs[r, a] - stats[c, 1 + a]
            for b in range(d):
                stats[c, o + a * d + b] += ea * (Xs[r, b] - stats[c, 1 + b])


@njit(cache=True)
def _quad_cw(stats, c, w, d, cw):
    """cw = C_c w; returns w' C_c w."""
    o = 1 + d
    q = 0.0
    for a in range(d):
        s = 0.0
        for b in range(d):
            s += stats[c, o + a * d + b] * w[b]
        cw[a] = s
        q += w[a] * s
    return q


@njit(cache=True)
def allpairs_squared_stats(form, n, stats, w, scale, g, work):
    """``allpairs_grad`` for phi = squared from the class statistics of S (or S')
    (``class_stats``): average loss over the n(n-1) ordered pairs, g += scale * gradient.
    O(d^2) per call.  work: float64 of length >= d.  Labels must be +-1."""
    if form != AUC and form != AUC_ORDERED and form != RANKING:
        raise ValueError("allpairs_squared_stats: form must be AUC, AUC_ORDERED or RANKING")
    d = w.shape[0]
    npairs = n * (n - 1.0)
    npos = stats[0, 0]
    nneg = stats[1, 0]
    gamma = _gamma(form)
    fac = _fac(form)
    same = 0.0
    if form == RANKING:
        same = npos * (npos - 1.0) + nneg * (nneg - 1.0)  # phi(0) = 1
    if npos == 0 or nneg == 0:
        return same / npairs
    wdmu = 0.0
    for a in range(d):
        wdmu += w[a] * (stats[0, 1 + a] - stats[1, 1 + a])
    rho = 1.0 / gamma - wdmu
    qp = _quad_cw(stats, 0, w, d, work)
    tot = gamma * gamma * (npos * nneg * rho * rho + nneg * qp)
    f = fac * scale / npairs
    c0 = -2.0 * gamma * gamma * f
    if f != 0.0:
        for a in range(d):
            g[a] += c0 * (npos * nneg * rho * (stats[0, 1 + a] - stats[1, 1 + a]) - nneg * work[a])
    qn = _quad_cw(stats, 1, w, d, work)
    tot += gamma * gamma * npos * qn
    if f != 0.0:
        for a in range(d):
            g[a] -= c0 * npos * work[a]
    return (fac * tot + same) / npairs


# ---- all previous (P0 Algorithm 1, P3 pairwise GIGA) --------------------------------------------

@njit(cache=True)
def stats_reset(stats):
    for c in range(stats.shape[0]):
        for a in range(stats.shape[1]):
            stats[c, a] = 0.0


@njit(cache=True)
def stats_add(stats, Xs, Ys, row):
    """Add example ``row`` of Xs/Ys to its class statistics (Welford: count, mean, centred
    scatter), O(d^2).  Labels must be +-1."""
    d = Xs.shape[1]
    y = Ys[row]
    if y == 1.0:
        c = 0
    elif y == -1.0:
        c = 1
    else:
        raise ValueError("stats_add: labels must be in {-1, +1}")
    m = stats[c, 0] + 1.0
    stats[c, 0] = m
    o = 1 + d
    # delta = x - mu_old:  C += ((m-1)/m) delta delta^T  (= delta (x - mu_new)^T),  mu += delta/m
    f = (m - 1.0) / m
    if f != 0.0:
        for a in range(d):
            da = f * (Xs[row, a] - stats[c, 1 + a])
            for b in range(d):
                stats[c, o + a * d + b] += da * (Xs[row, b] - stats[c, 1 + b])
    for a in range(d):
        stats[c, 1 + a] += (Xs[row, a] - stats[c, 1 + a]) / m
    return c


@njit(cache=True)
def allprev_squared(form, w, Xs, Ys, a, t, stats, scale, g, work):
    """(1/t) sum over the t previous draws b of phi(m(w; z_a, z_b)), phi = squared, in O(d^2):
    the all-previous average of P0 Alg. 1 (a = the new draw i_{t+1}, previous i_1..i_t, the
    kernel's ALL_PREV step t) and of P3's Lhat (a = z_t, t - 1 previous: pass t - 1).
    Pairs are ordered (new, previous), as the kernel's ``_pair(ia=new, ib=previous)``.
    stats holds the class statistics of the previous draws (``stats_add`` after each step,
    rows resolved for S or S'); ``a`` is a row of Xs.  g += scale * gradient of the average.
    work: float64 of length >= d.  Returns the average loss.

    Call pattern in the ALL_PREV branch (per run, stats (2, 1+d+d^2) allocated once per
    replicate, ``stats_reset`` then ``stats_add`` of the row of i_1 before step 1):
        fval = allprev_squared(form, w, Xs, Ys, row(hist[t]), t, stats, mult, g, work)
        ... after both runs' gradients:  stats_add(stats, Xs, Ys, row(hist[t]))
    (with ``has_ref``, evaluate the w_ref loss with scale 0 before ``stats_add``).
    """
    if form != AUC and form != AUC_ORDERED and form != RANKING:
        raise ValueError("allprev_squared: form must be AUC, AUC_ORDERED or RANKING")
    d = Xs.shape[1]
    ya = Ys[a]
    if ya == 1.0:
        other = 1
    elif ya == -1.0:
        other = 0
    else:
        raise ValueError("allprev_squared: labels must be in {-1, +1}")
    gamma = _gamma(form)
    same = 0.0
    if form == RANKING:
        same = stats[1 - other, 0]  # same-label previous draws: value phi(0) = 1, no gradient
    m = stats[other, 0]
    if m == 0.0 or (form == AUC_ORDERED and ya != 1.0):
        return same / t
    # dx = y_a (x_a - mu_other): the P - N difference of means direction
    wdx = 0.0
    for c in range(d):
        wdx += w[c] * ya * (Xs[a, c] - stats[other, 1 + c])
    rho = 1.0 / gamma - wdx
    qf = _quad_cw(stats, other, w, d, work)
    tot = gamma * gamma * (m * rho * rho + qf)
    if scale != 0.0:
        c0 = -2.0 * gamma * gamma * scale / t
        for c in range(d):
            g[c] += c0 * (m * rho * ya * (Xs[a, c] - stats[other, 1 + c]) - work[c])
    return (tot + same) / t

