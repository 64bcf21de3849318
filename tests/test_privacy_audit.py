"""Audit statistics (stabsim.privacy.audit): Clopper-Pearson epsilon lower bounds."""

import math

import numpy as np
import pytest
from scipy.stats import binom

from stabsim.privacy import audit
from stabsim.privacy.analytic import analytic_gaussian_epsilon


def test_clopper_pearson_upper():
    assert audit.clopper_pearson_upper(0, 50, 0.025) == pytest.approx(1 - 0.025 ** (1 / 50), rel=1e-10)
    assert audit.clopper_pearson_upper(50, 50, 0.025) == 1.0
    # defining property: P(Bin(n, p_u) <= k) = alpha
    for k, n in [(3, 20), (17, 40), (0, 7)]:
        pu = audit.clopper_pearson_upper(k, n, 0.05)
        assert binom.cdf(k, n, pu) == pytest.approx(0.05, rel=1e-6)


def test_eps_from_rates_point_value():
    assert audit.eps_from_rates(0.1, 0.2) == pytest.approx(max(math.log(0.8 / 0.1), math.log(0.9 / 0.2)))
    assert audit.eps_from_rates(0.1, 0.2, delta=0.05, symmetric=False) == pytest.approx(math.log(0.75 / 0.1))
    assert audit.eps_from_rates(0.5, 0.5) == 0.0


def test_perfect_separation_counts_by_hand():
    m, conf = 200, 0.95
    u = 1 - (0.05 / 2) ** (1 / m)                 # one-sided CP upper for 0/m at level alpha/2
    r = audit.eps_lower_from_counts(0, 0, m, confidence=conf)
    assert r.eps_lower == pytest.approx(math.log((1 - u) / u), rel=1e-10)
    r = audit.eps_lower_from_counts(0, 0, m, confidence=conf, delta=1e-3)
    assert r.eps_lower == pytest.approx(math.log((1 - 1e-3 - u) / u), rel=1e-10)


def test_perfect_separation_scores_split_by_hand():
    rng = np.random.default_rng(1)
    m = 1000
    s0, s1 = rng.uniform(0, 1, m), rng.uniform(2, 3, m)
    r = audit.eps_lower_from_scores(s0, s1, confidence=0.95)
    me = m - m // 2                                # evaluation half
    u = 1 - 0.025 ** (1 / me)
    assert (r.fp, r.fn, r.n0, r.n1) == (0, 0, me, me)
    assert 1 < r.threshold < 2 and r.direction == "greater"
    assert r.eps_lower == pytest.approx(math.log((1 - u) / u), rel=1e-10)
    # reversed labels: the "less" direction finds it
    r2 = audit.eps_lower_from_scores(s1, s0, confidence=0.95)
    assert r2.direction == "less" and r2.eps_lower == pytest.approx(r.eps_lower, rel=1e-12)


def test_perfect_separation_bonferroni_by_hand():
    rng = np.random.default_rng(2)
    m = 500
    s0, s1 = rng.uniform(0, 1, m), rng.uniform(2, 3, m)
    r = audit.eps_lower_from_scores(s0, s1, method="bonferroni", thresholds=[0.5, 1.5, 2.5])
    assert r.n_tests == 6
    u = 1 - (0.05 / (2 * 6)) ** (1 / m)
    assert r.eps_lower == pytest.approx(math.log((1 - u) / u), rel=1e-10)
    with pytest.raises(ValueError, match="thresholds"):
        audit.eps_lower_from_scores(s0, s1, method="bonferroni")


@pytest.mark.parametrize("method", ["split", "bonferroni"])
def test_identical_distributions_give_no_privacy_loss(method):
    rng = np.random.default_rng(3)
    s0, s1 = rng.normal(size=4000), rng.normal(size=4000)
    r = audit.eps_lower_from_scores(s0, s1, method=method, thresholds=np.linspace(-3, 3, 61))
    assert r.eps_lower <= 0.05


def test_monotone_in_confidence():
    rng = np.random.default_rng(4)
    s0, s1 = rng.normal(0, 1, 3000), rng.normal(1.5, 1, 3000)
    confs = [0.5, 0.8, 0.9, 0.95, 0.99, 0.999]
    for f in (lambda c: audit.eps_lower_from_counts(30, 50, 1000, confidence=c).eps_lower,
              lambda c: audit.eps_lower_from_scores(s0, s1, confidence=c).eps_lower,
              lambda c: audit.eps_lower_from_scores(s0, s1, confidence=c, method="bonferroni",
                                                    thresholds=np.linspace(-2, 4, 25)).eps_lower):
        vals = [f(c) for c in confs]
        assert all(a >= b for a, b in zip(vals, vals[1:])) and vals[0] > vals[-1] > 0


def test_gaussian_audit_is_a_valid_lower_bound():
    # outputs of a Gaussian mechanism with Delta/sigma = 1: true eps at delta=1e-5 is ~4.4
    rng = np.random.default_rng(5)
    s0, s1 = rng.normal(0, 1, 20000), rng.normal(1, 1, 20000)
    r = audit.eps_lower_from_scores(s0, s1, delta=1e-5)
    assert 0.3 < r.eps_lower < analytic_gaussian_epsilon(1e-5, 1.0, 1.0)


def test_audit_argument_checks():
    with pytest.raises(ValueError, match="fp"):
        audit.eps_lower_from_counts(11, 0, 10)
    with pytest.raises(ValueError, match="confidence"):
        audit.eps_lower_from_counts(1, 1, 10, confidence=1.0)
    with pytest.raises(ValueError, match="scores0"):
        audit.eps_lower_from_scores([1.0], [2.0, 3.0])


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 500), data=st.data(), alpha=st.floats(1e-4, 0.5))
def test_clopper_pearson_upper_covers_the_point_estimate(n, data, alpha):
    k = data.draw(st.integers(0, n))
    pu = audit.clopper_pearson_upper(k, n, alpha)
    assert k / n <= pu <= 1.0
    assert audit.clopper_pearson_upper(k, n, alpha / 2) >= pu      # more confidence, wider


@settings(max_examples=50, deadline=None)
@given(m=st.integers(5, 2000), fp=st.integers(0, 5), fn=st.integers(0, 5))
def test_counts_bound_below_point_value(m, fp, fn):
    r = audit.eps_lower_from_counts(fp, fn, m)
    assert r.eps_lower <= audit.eps_from_rates(fp / m, fn / m) + 1e-12
