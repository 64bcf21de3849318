"""The all-previous pair loops for the linear pairwise losses, written tight.

P0 Algorithm 1 pairs the new draw z_{i_{t+1}} with all previous draws z_{i_1..i_t}; P3's
pairwise GIGA pairs z_t with z_1..z_{t-1}.  The hinge and logistic losses have no shortcut like
the squared loss's class statistics (``stabsim.kernels.pair_stats``): the iterate moves every
step, so every previous score w.x_b changes and the sorted order cannot be carried over.  Their
O(t) loop stays, written tight (``allprev_pairs``, O(t d) with no per-pair function call: one
score per previous draw, the gradient as one weighted row sum), or, once there are more previous
draws than examples (t > n), run over the examples weighted by how often each was drawn
(``allprev_counts``, O(n d)).  Notation and the handling of S' as in ``stabsim.kernels.allpairs``.
"""

from __future__ import annotations

from stabsim.compile.jit import njit

from stabsim.engine.losses import RANKING, phi_deriv, phi_value_deriv
from stabsim.kernels.allpairs import _coef, _row


@njit(cache=True, inline="always")
def row_score(w, Xs, b):
    """w.x_b for row b (the all-previous and buffer loops' score)."""
    s = 0.0
    for c in range(Xs.shape[1]):
        s += w[c] * Xs[b, c]
    return s


@njit(cache=True, inline="always")
def add_row(g, e, Xs, b):
    """g += e x_b (with e = -e', the same numbers as g -= e' x_b: negation is exact)."""
    for c in range(Xs.shape[1]):
        g[c] += e * Xs[b, c]


@njit(cache=True)
def allprev_pairs(form, phi, q, w, Xs, Ys, a, prev, t, prime, k, krow, scale, g):
    """The O(t d) all-previous loop written tight (one score per previous draw, gradient as
    one weighted row sum): (1/t) sum_{j<t} f(w; z_a, z_{prev[j]}) with row substitution for
    S' applied to prev (a is already a row).  For any phi; the reference for
    ``allprev_squared``.  Allocates nothing."""
    ya = Ys[a]
    sa = row_score(w, Xs, a)
    tot = 0.0
    ca = 0.0
    f = scale / t
    for j in range(t):
        b = _row(prev[j], prime, k, krow)
        cc = _coef(form, ya, Ys[b])
        if cc == 0.0 and form != RANKING:
            continue
        sb = row_score(w, Xs, b)
        v, dv = phi_value_deriv(phi, cc * (sa - sb), q)
        tot += v
        e = f * dv * cc
        if e != 0.0:
            ca += e
            add_row(g, -e, Xs, b)
    if ca != 0.0:
        add_row(g, ca, Xs, a)
    return tot / t


@njit(cache=True)
def allprev_pairs_grad(form, phi, q, w, Xs, Ys, a, prev, t, prime, k, krow, scale, g):
    """``allprev_pairs``'s gradient alone (g += scale * the average gradient), by the same
    operations in the same order (the same g, bit for bit), for callers that discard the average
    loss: the logistic loss's log1p per pair, the costliest part of that loop, is not
    evaluated (``losses.phi_deriv``).  Allocates nothing."""
    ya = Ys[a]
    sa = row_score(w, Xs, a)
    ca = 0.0
    f = scale / t
    for j in range(t):
        b = _row(prev[j], prime, k, krow)
        cc = _coef(form, ya, Ys[b])
        if cc == 0.0 and form != RANKING:
            continue
        sb = row_score(w, Xs, b)
        e = f * phi_deriv(phi, cc * (sa - sb), q) * cc
        if e != 0.0:
            ca += e
            add_row(g, -e, Xs, b)
    if ca != 0.0:
        add_row(g, ca, Xs, a)


@njit(cache=True)
def allprev_counts(form, phi, q, w, Xs, Ys, a, counts, n, t, prime, k, krow, scale, g):
    """``allprev_pairs`` from the multiplicities of the previous draws: counts[i] is how often
    example i is among the t previous draws, and (1/t) sum_{j<t} f(w; z_a, z_{i_j})
    = (1/t) sum_i counts[i] f(w; z_a, z_i), so a step costs O(n d) instead of O(t d): P0 Alg. 1
    with T = n^2 draws about 25 times fewer pairs on average.  For any phi.  Exact in real
    arithmetic; in floating point each repeated term is multiplied by its count instead of
    added count times, so the sums agree with the loop to rounding, not bit for bit (the tests
    compare both with tests/naive.py to 1e-12).  S' reads row krow for example k.  Allocates
    nothing."""
    ya = Ys[a]
    sa = row_score(w, Xs, a)
    tot = 0.0
    ca = 0.0
    f = scale / t
    for i in range(n):
        m = counts[i]
        if m == 0.0:
            continue
        b = _row(i, prime, k, krow)
        cc = _coef(form, ya, Ys[b])
        if cc == 0.0 and form != RANKING:
            continue
        sb = row_score(w, Xs, b)
        v, dv = phi_value_deriv(phi, cc * (sa - sb), q)
        tot += m * v
        e = f * m * dv * cc
        if e != 0.0:
            ca += e
            add_row(g, -e, Xs, b)
    if ca != 0.0:
        add_row(g, ca, Xs, a)
    return tot / t
