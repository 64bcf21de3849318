"""P2 Alg. 1's full all-pairs gradient (``kernels/p2_removal.full_grad``): evaluating phi once per
unordered pair (n x n workspaces) gives the numbers of evaluating every ordered pair, bit for bit.

The references are the same function without workspaces and a plain Python loop that evaluates
every ordered pair (the kernel's loop before the change, written out with the same operations in
the same order), so this test states an exact identity of summation schemes, not a tolerance."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stabsim.kernels.p2_removal import full_grad
from stabsim.engine.losses import (AUC, AUC_ORDERED, HINGE, LOGISTIC, QHINGE, RANKING, SQUARED, _linear_coef,
                            phi_value_deriv)


def _python_grad(form, phi, q, w, X, Y, skip):
    """Every ordered pair a != b (neither removed), phi and its coefficient each time."""
    n, d = X.shape
    m = n - 1 if skip >= 0 else n
    sc = 1.0 / (m * (m - 1.0))
    s = [0.0] * n
    for a in range(n):
        for c in range(d):
            s[a] += w[c] * X[a, c]
    co = [0.0] * n
    tot = 0.0
    for a in range(n):
        for b in range(n):
            if a == skip or b == a or b == skip:
                continue
            cf = _linear_coef.py_func(form, Y[a], Y[b])
            if cf == 0.0 and form != RANKING:
                continue
            val, dphi = phi_value_deriv.py_func(phi, cf * (s[a] - s[b]), q)
            tot += val
            co[a] += dphi * cf
            co[b] -= dphi * cf
    g = np.zeros(d)
    for a in range(n):
        f = sc * co[a]
        if f != 0.0:
            for c in range(d):
                g[c] += f * X[a, c]
    return tot * sc, g


def _grad(form, phi, q, w, X, Y, skip, buffered):
    n, d = X.shape
    g = np.full(d, np.nan)
    work = n * n if buffered else 0
    tot = full_grad(form, phi, q, w, X, Y, skip, g, np.empty(d), np.empty(n), np.empty(n),
                    np.full(work, np.nan), np.full(work, np.nan))
    return tot, g


@settings(max_examples=80, deadline=None)
@given(n=st.integers(3, 9), d=st.integers(1, 4), form=st.sampled_from([AUC, RANKING, AUC_ORDERED]),
       phi=st.sampled_from([HINGE, SQUARED, LOGISTIC, QHINGE]), labels=st.sampled_from(["pm1", "real"]),
       seed=st.integers(0, 2**31 - 1), data=st.data())
def test_once_per_unordered_pair_is_bit_identical(n, d, form, phi, labels, seed, data):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.choice([0.1, 1.0, 30.0])
    if labels == "pm1" or form != RANKING:
        Y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    else:   # real-valued relevance with ties (ranking)
        Y = rng.integers(0, 3, n) * 0.37
    w = rng.standard_normal(d) * rng.choice([0.0, 0.5, 3.0])
    skip = data.draw(st.integers(-1, n - 1))
    q = 2.5 if phi == QHINGE else 1.0
    t1, g1 = _grad(form, phi, q, w, X, Y, skip, True)
    t0, g0 = _grad(form, phi, q, w, X, Y, skip, False)
    tp, gp = _python_grad(form, phi, q, w, X, Y, skip)
    for t, g in ((t0, g0), (tp, gp)):
        assert np.float64(t1).tobytes() == np.float64(t).tobytes()
        assert g1.tobytes() == g.tobytes()


def test_workspace_is_refreshed_between_calls():
    """A second call (other w, other removed row) reads only pairs it wrote itself."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((7, 3))
    Y = np.where(rng.random(7) < 0.5, 1.0, -1.0)
    n, d = X.shape
    pv, pf = np.zeros(n * n), np.zeros(n * n)
    for skip, scale in ((-1, 1.0), (2, -0.7), (5, 2.0)):
        w = rng.standard_normal(d) * scale
        g = np.empty(d)
        tot = full_grad(RANKING, LOGISTIC, 1.0, w, X, Y, skip, g, np.empty(d), np.empty(n), np.empty(n), pv, pf)
        t0, g0 = _grad(RANKING, LOGISTIC, 1.0, w, X, Y, skip, False)
        assert tot == t0 and np.array_equal(g, g0)

