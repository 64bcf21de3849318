"""P3's regret comparator objective, streamed over the pairs (stabsim.kernels.regret_objective),
against a readable double loop over the pairs, and the same for any thread count."""

import numba
import numpy as np
import pytest

from stabsim.experiments.p3_giga import regret_minimum
from stabsim.kernels.regret_objective import regret_objective
from stabsim.engine.losses import LOGISTIC, SQUARED


def naive(X, y, w, center, lam, ranking, phi):
    """F(w) = sum_{t>=2} (1/(t-1)) sum_{i<t} phi(k (x_t - x_i).w) + lam/2 ||w - c||^2 (1-based t), and its
    gradient, pair by pair (P3 Eqs. (3), (4))."""
    n, d = X.shape
    val, grad = 0.0, np.zeros(d)
    for t in range(1, n):            # 0-based row t has t earlier points: weight 1/t
        for i in range(t):
            k = (y[t] - y[i]) * (1.0 if ranking else 0.5)
            if k == 0.0 and not ranking:
                continue
            u = k * (X[t] - X[i])
            m = u @ w
            if phi == LOGISTIC:
                v, der = np.logaddexp(0.0, -m), -1.0 / (1.0 + np.exp(m))
            else:
                v, der = (1.0 - m) ** 2, -2.0 * (1.0 - m)
            val += v / t
            grad += der * u / t
    e = w - center
    return val + 0.5 * lam * (e @ e), grad + lam * e


def _data(n, d, seed):
    rs = np.random.default_rng(seed)
    X = rs.normal(size=(n, d))
    y = np.where(rs.random(n) < 0.4, 1.0, -1.0)
    return X, y, rs.normal(size=d) * 0.7, rs.normal(size=d) * 0.1


@pytest.mark.parametrize("ranking", [True, False])
@pytest.mark.parametrize("phi", [LOGISTIC, SQUARED])
def test_against_the_pair_loop(ranking, phi):
    X, y, w, c = _data(37, 3, 1)
    lam = 2.5
    v, g = regret_objective(X, y, w, c, lam, ranking, phi, np.zeros(37), np.zeros((37, 3)))
    v0, g0 = naive(X, y, w, c, lam, ranking, phi)
    # two summation orders of ~700 terms of size <= 10: a few hundred ulps of the total at most
    assert v == pytest.approx(v0, rel=1e-12)
    np.testing.assert_allclose(g, g0, rtol=1e-11, atol=1e-11 * np.abs(g0).max())


def test_same_numbers_for_any_thread_count():
    X, y, w, c = _data(400, 5, 2)
    ws = (np.zeros(400), np.zeros((400, 5)))
    before = numba.get_num_threads()
    try:
        out = []
        for k in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(k)
            out.append(regret_objective(X, y, w, c, 0.3, True, LOGISTIC, *ws))
    finally:
        numba.set_num_threads(before)
    for v, g in out[1:]:
        assert v == out[0][0]
        assert np.array_equal(g, out[0][1])


def test_regret_minimum_needs_a_smooth_phi():
    X, y, _, _ = _data(10, 2, 3)
    with pytest.raises(ValueError, match="smooth phi"):
        regret_minimum(X, y, "ranking_hinge", 1.0)
