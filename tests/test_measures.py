"""Stability estimators: CI coverage, order-statistic indices by hand, estimators on real twin runs.

Statistical checks use fixed seeds; tolerances are 3 standard errors of a binomial proportion.
"""

import math

import numpy as np
import pytest
import xarray as xr

from stabsim import Neighbour, make_problem, run_twin
from stabsim.engine.measures import (SUP_NOTE, empirical_quantile_index, mean_ci, onavg_stability,
                              order_statistic_ci_indices, standard_error, uas_mean, uas_quantile)

N, T, R, ETA = 60, 300, 100, 0.05


def _binom_tol(p, reps, k=3.0):
    """k standard errors of an empirical proportion with success probability p over reps trials."""
    return k * math.sqrt(p * (1 - p) / reps)


def _fake_run(values):
    """A twin-like Dataset whose ``dist_output`` is ``values`` (replicate, t)."""
    values = np.asarray(values, dtype=float)
    return xr.Dataset({"dist_output": (("replicate", "t"), values)},
                      coords={"replicate": np.arange(values.shape[0]), "t": np.arange(1, values.shape[1] + 1)},
                      attrs={"noise": "shared", "neighbour": "replace-one: example k=0 replaced by a 'flip' point"})


@pytest.fixture(scope="module")
def data():
    return make_problem("auc_separable", d=5).sample(N, seed=0)


@pytest.fixture(scope="module")
def runs(data):
    X, y = data
    kw = dict(algorithm="p1_alg1", loss="auc_hinge", eta=ETA, T=T, replicates=R, seed=1)
    return {nb: run_twin(X, y, neighbour=nb, **kw) for nb in ("flip", "farthest", "same")}


# ----------------------------------------------------------------------------- shared CI helper

def test_t_interval_coverage_normal():
    """400 independent samples of size 20 from N(1.3, 2^2): the 95% t-interval covers 1.3 about 95% of the time."""
    reps, size, mu = 400, 20, 1.3
    x = np.random.default_rng(12345).normal(mu, 2.0, size=(size, reps))   # column j = repetition j
    ci = mean_ci(x, level=0.95)
    covered = float(((ci.lower <= mu) & (mu <= ci.upper)).mean())
    assert abs(covered - 0.95) <= _binom_tol(0.95, reps)
    assert ci.attrs["n_replicates"] == size and ci.attrs["level"] == 0.95


def test_t_interval_by_hand():
    v = np.array([1.0, 2.0, 3.0, 4.0])
    ci = mean_ci(v, level=0.9)
    se = math.sqrt(5 / 3) / 2                  # s^2 = (2.25 + .25 + .25 + 2.25)/3
    t95 = 2.3533634348018264                   # t_{3, 0.95} from tables
    assert float(standard_error(v)) == pytest.approx(se)
    assert float(ci.estimate) == 2.5
    assert float(ci.lower) == pytest.approx(2.5 - t95 * se, rel=1e-9)
    assert float(ci.upper) == pytest.approx(2.5 + t95 * se, rel=1e-9)


def test_bootstrap_agrees_with_t_for_many_replicates_and_is_deterministic():
    x = np.random.default_rng(7).exponential(1.0, size=2000)
    t_ci = mean_ci(x, method="t")
    b1 = mean_ci(x, method="bootstrap", n_boot=2000, seed=3)
    b2 = mean_ci(x, method="bootstrap", n_boot=2000, seed=3)
    se = float(t_ci.se)
    # Monte Carlo error of a 2.5% bootstrap quantile with 2000 resamples is ~0.06 se; allow 0.25 se.
    assert abs(float(b1.lower - t_ci.lower)) < 0.25 * se
    assert abs(float(b1.upper - t_ci.upper)) < 0.25 * se
    assert float(b1.lower) == float(b2.lower) and "bootstrap" in b1.attrs["ci_method"]


def test_ci_input_errors():
    with pytest.raises(ValueError, match="NaN or infinite"):
        mean_ci(np.array([1.0, np.nan, 2.0]))
    with pytest.raises(ValueError, match="at least 2 replicates"):
        mean_ci(np.array([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="level"):
        mean_ci(np.ones(5), level=1.5)
    with pytest.raises(ValueError, match="method"):
        mean_ci(np.ones(5), method="wald")


# ----------------------------------------------------------------------------- order statistics

def _binom_pmf(k, n, p):
    return math.comb(n, k) * p ** k * (1 - p) ** (n - k)


def test_order_statistic_indices_median_n10():
    # Binom(10, 1/2): P(B <= 1) = 11/1024 <= 0.025 < P(B <= 2) = 56/1024, symmetric upper tail.
    l, u, cov = order_statistic_ci_indices(10, 0.5, 0.95)
    assert (l, u) == (2, 9)
    assert cov == pytest.approx(1 - 2 * 11 / 1024)


def test_order_statistic_indices_too_few_replicates():
    # Binom(5, 0.95): P(B = 5) = 0.774 > 0.025, so no finite upper end (u = R + 1);
    # P(B <= 3) = 1 - P(4) - P(5) = 0.0226 <= 0.025 < P(B <= 4), so l = 4.
    l, u, cov = order_statistic_ci_indices(5, 0.95, 0.95)
    assert (l, u) == (4, 6)
    assert cov == pytest.approx(_binom_pmf(4, 5, 0.95) + _binom_pmf(5, 5, 0.95))
    q = uas_quantile(_fake_run(np.arange(1.0, 6.0)[:, None]), gamma=0.05)
    assert q.upper.item() == np.inf and q.lower.item() == 4.0 and "+inf" in q.attrs["note"]


def test_empirical_quantile_index():
    assert empirical_quantile_index(10, 0.5) == 5
    assert empirical_quantile_index(200, 0.95) == 190
    assert empirical_quantile_index(200, 0.951) == 191
    assert empirical_quantile_index(3, 0.01) == 1


def test_quantile_ci_covers_uniform_quantile():
    """U(0,1) samples: the 0.9-quantile is 0.9; coverage over 400 repetitions matches the exact binomial one."""
    reps, size, gamma = 400, 200, 0.1
    u = np.random.default_rng(2024).uniform(size=(size, reps))
    q = uas_quantile(_fake_run(u), gamma=gamma, level=0.95)
    covered = float(((q.lower <= 0.9) & (0.9 <= q.upper)).mean())
    exact = q.attrs["coverage"]
    assert exact >= 0.95
    assert abs(covered - exact) <= _binom_tol(exact, reps)
    srt = np.sort(u, axis=0)
    np.testing.assert_array_equal(q.estimate.values, srt[empirical_quantile_index(size, 0.9) - 1])


def test_quantile_squared_is_square_of_quantile():
    v = np.random.default_rng(5).exponential(size=(300, 4))
    q, q2 = uas_quantile(_fake_run(v), 0.05), uas_quantile(_fake_run(v), 0.05, squared=True)
    for name in ("estimate", "lower", "upper"):
        np.testing.assert_allclose(q2[name].values, q[name].values ** 2)
    assert (q.attrs["quantity"], q2.attrs["quantity"]) == ("uas_quantile", "uas_sq_quantile")
    assert uas_quantile(_fake_run(v), 0.05, var="dist_output").attrs["gamma"] == 0.05


def test_quantile_rejects_bad_gamma_and_negative_values():
    with pytest.raises(ValueError, match="gamma"):
        uas_quantile(_fake_run(np.ones((5, 2))), gamma=1.0)
    with pytest.raises(ValueError, match="negative"):
        uas_quantile(_fake_run(-np.ones((5, 2))), gamma=0.1)


# ----------------------------------------------------------------------------- on real twin runs

def test_uas_mean_single_run(runs):
    ds = runs["flip"]
    m = uas_mean(ds)
    np.testing.assert_allclose(m.estimate.values, ds.dist_output.values.mean(axis=0))
    assert m.attrs["quantity"] == "uas_mean" and m.attrs["n_replicates"] == R
    assert m.attrs["note"] == SUP_NOTE and m.attrs["loss"] == "auc_hinge"
    assert np.all(m.lower.values <= m.estimate.values) and np.all(m.estimate.values <= m.upper.values)
    assert "sum_eta" in m.coords
    it = uas_mean(ds, var="dist_iterate")
    assert it.attrs["quantity"] == "iterate_dist"


def test_uas_mean_max_over_candidates(runs):
    a, b = uas_mean(runs["flip"]), uas_mean(runs["farthest"])
    m = uas_mean([runs["flip"], runs["farthest"]])
    best = np.where(a.estimate.values >= b.estimate.values, 0, 1)
    np.testing.assert_array_equal(m.candidate.values, best)
    np.testing.assert_allclose(m.estimate.values, np.maximum(a.estimate.values, b.estimate.values))
    np.testing.assert_allclose(m.upper.values, np.where(best == 0, a.upper.values, b.upper.values))
    assert "lower bound on the supremum over neighbouring pairs" in m.attrs["note"]
    assert "'flip'" in m.attrs["candidates"] and "'farthest'" in m.attrs["candidates"]


def test_same_neighbour_gives_zero_with_zero_width_ci(runs):
    m = uas_mean(runs["same"])
    assert np.all(m.estimate.values == 0) and np.all(m.upper.values == 0)


def test_independent_noise_is_rejected(runs):
    ds = runs["flip"].copy()
    ds.attrs["noise"] = "independent"
    with pytest.raises(ValueError, match="coupled"):
        uas_mean(ds)


def test_onavg_stability_design_and_value():
    pb = make_problem("auc_separable", d=5)
    reps, n = 60, 40
    XY = [pb.sample(n, seed=3, replicate=r) for r in range(reps)]
    X, y = np.stack([a for a, _ in XY]), np.stack([b for _, b in XY])
    ds = run_twin(X, y, algorithm="p1_alg1", loss="auc_logistic", eta=0.1, T=30, replicates=reps, seed=2,
                  neighbour=Neighbour(kind="fresh", k="random"), problem=pb)
    o = onavg_stability(ds)
    np.testing.assert_allclose(o.estimate.values, (ds.dist_output.values ** 2).mean(axis=0))
    assert o.attrs["quantity"] == "onavg_stability" and "WARNING" not in o.attrs["note"]


def test_onavg_stability_refuses_wrong_design(runs):
    with pytest.raises(ValueError, match="independent copy"):
        onavg_stability(runs["flip"])
    o = onavg_stability(runs["flip"], strict=False)
    assert "WARNING" in o.attrs["note"]
