"""Verdicts: bound checks on hand-made measures and on real P1 twin studies; slope fits and rate rules.

The P1 studies (Alg. 1, AUC data, n = 100, T = 2000, 200 coupled replicates, adversarial
neighbours) must give "holds" for the true bounds of Theorems 4 and 5 and "violated" for the same
bounds divided by 1000, so the check can fail.
"""

import math

import numpy as np
import pytest
import xarray as xr

from stabsim import get_loss, make_problem, run_twin
from stabsim.engine.measures import uas_mean, uas_quantile
from stabsim.theory import get
from stabsim.judging.rules import (Verdict, bound_slope, check_bound, check_rate, fit_slope, rate_exponent,
                              rate_rule)

N, T, R, ETA = 100, 2000, 200, 0.05


# ----------------------------------------------------------------------------- real P1 studies

@pytest.fixture(scope="module")
def problem():
    pb = make_problem("auc_separable", d=5)
    return pb, pb.sample(N, seed=0)


def _study(problem, loss):
    pb, (X, y) = problem
    runs = [run_twin(X, y, algorithm="p1_alg1", loss=loss, eta=ETA, T=T, replicates=R, seed=1, neighbour=nb)
            for nb in ("flip", "farthest")]
    return uas_mean(runs), runs, get_loss(loss).G(pb.kappa)


@pytest.fixture(scope="module")
def thm4(problem):
    """P1 Thm 4: non-smooth convex (AUC hinge), G = 2 kappa."""
    m, runs, G = _study(problem, "auc_hinge")
    return m, runs, get("P1.Thm4.uas")(t=m.t.values, n=N, eta=ETA, G=G)


@pytest.fixture(scope="module")
def thm5(problem):
    """P1 Thm 5: smooth convex (AUC logistic, L = kappa^2), eta <= 2/L."""
    pb, _ = problem
    assert ETA <= 2 / get_loss("auc_logistic").L(pb.kappa)
    m, runs, G = _study(problem, "auc_logistic")
    return m, runs, get("P1.Thm5.uas")(t=m.t.values, n=N, eta=ETA, G=G)


@pytest.mark.parametrize("case,key", [("thm4", "P1.Thm4.uas"), ("thm5", "P1.Thm5.uas")])
def test_p1_uas_bound_holds(case, key, request):
    m, _, bound = request.getfixturevalue(case)
    v = check_bound(m, bound, "EXPLICIT", key=key)
    assert v.verdict == "holds" and v.ok
    assert v.worst_margin > 0 and v.tightness_max < 1
    assert v.n_replicates == R and v.level == 0.95
    assert np.all(v.details["upper"].values < bound)


@pytest.mark.parametrize("case,key", [("thm4", "P1.Thm4.uas"), ("thm5", "P1.Thm5.uas")])
def test_p1_uas_bound_too_small_is_violated(case, key, request):
    m, _, bound = request.getfixturevalue(case)
    v = check_bound(m, bound / 1000, "EXPLICIT", key=key)
    assert v.verdict == "violated" and not v.ok
    assert v.worst_margin < 0 and v.worst_at["t"] in m.t.values
    assert v.n_significant >= 1 and any("significantly above" in n for n in v.notes)
    assert v.tightness_max > 1


def test_thm5_smooth_uas_grows_no_faster_than_the_bound(thm5):
    """Thm 5's bound 4 G eta t / n has slope 1 in t; the measured UAS must not grow faster."""
    _, runs, bound = thm5
    ds = runs[0]
    keep = ds.t.values >= 10                      # the first steps have many exact zeros
    x, y = ds.t.values[keep], ds.dist_output.values[:, keep]
    slope_b = bound_slope(x, bound[keep])
    assert slope_b == pytest.approx(1.0)
    v = check_rate(x, y, slope_b, kind="upper", key="P1.Thm5.uas", quantity="uas_mean",
                   tag="EXPLICIT", bound_values=bound[keep])
    assert v.verdict in ("matches", "faster than claimed") and v.ok
    assert 0 < v.tightness_min <= v.tightness_max < 1


# ----------------------------------------------------------------------------- check_bound by hand

def _measure(est, lo, hi, t=(1, 10, 100)):
    ds = xr.Dataset({"estimate": ("t", est), "lower": ("t", lo), "upper": ("t", hi)}, coords={"t": list(t)})
    ds.attrs.update(quantity="uas_mean", n_replicates=50, level=0.95)
    return ds


def test_check_bound_rules_by_hand():
    m = _measure([1.0, 2.0, 3.0], [0.5, 1.5, 2.9], [1.5, 2.5, 3.1])
    v = check_bound(m, [2.0, 2.2, 2.4], "EXPLICIT")
    # margins bound - upper: 0.5, -0.3, -0.7; t=10 straddles (lower 1.5 < 2.2), t=100 far above:
    # z = (3 - 2.4) / (0.1 / 1.96) = 11.8, p ~ 2e-32 < 0.025 / 3 (Holm's first step)
    assert v.verdict == "violated" and v.failed and v.n_significant == 1
    assert v.worst_margin == pytest.approx(-0.7) and v.worst_at == {"t": 100}
    assert list(v.details["status"].values) == ["holds", "inconclusive", "violated"]
    assert v.tightness_min == pytest.approx(0.5) and v.tightness_max == pytest.approx(3 / 2.4)
    assert v.multiplicity == "Holm over 3 coordinates"
    assert any("not below the bound at 2 of 3 coordinates; 1 significantly above" in n for n in v.notes)
    ok = check_bound(m, [2.0, 3.0, 4.0], "EXPLICIT-DD")
    assert ok.verdict == "holds" and ok.worst_margin == pytest.approx(0.5)
    assert any("EXPLICIT-DD" in n for n in ok.notes)


def test_upper_equal_to_bound_does_not_hold():
    m = _measure([1.0, 1.0, 1.0], [0.9, 0.9, 0.9], [1.1, 1.1, 1.1])
    assert check_bound(m, 1.1, "EXPLICIT").verdict == "inconclusive"


def test_straddling_ci_is_inconclusive_not_violated():
    """The measured mean is above the bound but its CI reaches below it: no claim either way."""
    m = _measure([1.2, 1.2, 1.2], [0.9, 0.9, 0.9], [1.5, 1.5, 1.5])
    v = check_bound(m, 1.0, "EXPLICIT")
    assert v.verdict == "inconclusive" and not v.ok and not v.failed and v.n_significant == 0


def test_holm_multiplicity_over_coordinates():
    """One coordinate whose CI lies just above the bound is significant alone, not among 20.

    est 1.0, lower 0.9 (se = 0.1/1.96), bound 0.89: z = 0.11/0.051 = 2.16, one-sided p = 0.0155:
    below alpha = 0.025 (m = 1), above 0.025/20 (Holm's first step for m = 20)."""
    one = _measure([1.0], [0.9], [1.1], t=(1,))
    assert check_bound(one, 0.89, "EXPLICIT").verdict == "violated"
    t = tuple(range(1, 21))
    est, lo, hi = [1.0] * 20, [0.9] + [0.0] * 19, [1.1] + [0.5] * 19
    many = _measure(est, lo, hi, t=t)
    v = check_bound(many, [0.89] + [10.0] * 19, "EXPLICIT")
    assert v.verdict == "inconclusive" and v.n_significant == 0
    # Holm by hand: p = (0.001, 0.01, 0.04) at alpha 0.05 -> 0.001 <= 0.05/3, 0.01 <= 0.05/2, 0.04 <= 0.05
    from stabsim.judging.rules import holm_reject
    assert holm_reject([0.04, 0.001, 0.01], 0.05).tolist() == [True, True, True]
    assert holm_reject([0.04, 0.001, 0.03], 0.05).tolist() == [False, True, False]


def test_vacuous_bounds_are_flagged():
    m = _measure([1.0, 2.0, 3.0], [0.5, 1.5, 2.5], [1.5, 2.5, 3.5])
    v = check_bound(m, 1000.0, "EXPLICIT")               # tightness 0.001-0.003
    assert v.verdict == "holds" and v.vacuous and any("vacuous" in n for n in v.notes)
    tight = check_bound(m, 10.0, "EXPLICIT")               # tightness 0.1-0.3
    assert tight.vacuous is False
    # a distance between two points of a ball of radius 1 is at most 2: a bound of 5 says nothing
    triv = check_bound(m, 5.0, "EXPLICIT", trivial_bound=2.0)
    assert triv.vacuous and any("trivial bound" in n for n in triv.notes)


def test_infinite_quantile_upper_end_cannot_certify():
    q = uas_quantile(xr.Dataset({"dist_output": (("replicate", "t"), np.ones((5, 1)))},
                                coords={"t": [1]}), gamma=0.05)
    v = check_bound(q, 1e9, "EXPLICIT")
    assert v.verdict == "inconclusive" and any("+inf" in n for n in v.notes)


def test_check_bound_guards():
    m = _measure([1.0, 2.0, 3.0], [0.5, 1.5, 2.5], [1.5, 2.5, 3.5])
    with pytest.raises(ValueError, match="check_rate"):
        check_bound(m, [5, 5, 5], "RATE")
    with pytest.raises(ValueError, match="shape"):
        check_bound(m, [5, 5], "EXPLICIT")
    with pytest.raises(ValueError, match="NaN"):
        check_bound(m, [5, np.nan, 5], "EXPLICIT")
    with pytest.raises(ValueError, match="different coordinates"):
        check_bound(m, xr.DataArray([5.0, 5, 5], dims="t", coords={"t": [1, 10, 99]}), "EXPLICIT")
    q = m.assign_attrs(quantity="uas_quantile")
    with pytest.raises(ValueError, match="bounds 'uas_mean'"):
        check_bound(q, [5, 5, 5], "EXPLICIT", key="P1.Thm4.uas")
    with pytest.raises(ValueError, match="tagged EXPLICIT"):
        check_bound(m, [5, 5, 5], "EXPLICIT-DD", key="P1.Thm4.uas")
    aligned = check_bound(m, xr.DataArray([5.0, 5, 5], dims="t", coords={"t": [1, 10, 100]}), "EXPLICIT")
    assert aligned.verdict == "holds"


def test_verdict_row_and_summary():
    m = _measure([1.0, 2.0, 3.0], [0.5, 1.5, 2.5], [1.5, 2.5, 3.5])
    v = check_bound(m, [2.0, 3.0, 4.0], "EXPLICIT", key="my.bound")
    row = v.to_row()
    assert row["verdict"] == "holds" and row["key"] == "my.bound" and row["n_replicates"] == 50
    assert row["worst_at"] == "t=1" and math.isnan(row["slope"])
    assert v.summary().startswith("holds; worst margin 0.5 at t=1")
    assert isinstance(v, Verdict)


# ----------------------------------------------------------------------------- slopes

def _power_law(a, seed, reps=200, c=2.0, sigma=0.5, x=np.geomspace(10, 1000, 12)):
    """y_rj = c x_j^a exp(sigma eps_rj): E y = c e^{sigma^2/2} x^a, so the slope of the mean is exactly a."""
    return x, c * x ** a * np.random.default_rng(seed).lognormal(0.0, sigma, size=(reps, x.size))


def test_slope_ci_covers_true_exponent():
    """Over 100 independent synthetic studies the 95% bootstrap CI contains a = -0.5 about 95% of the time."""
    reps, a = 100, -0.5
    fits = [fit_slope(*_power_law(a, 1000 + i), n_boot=1000, seed=i) for i in range(reps)]
    hits = sum(f.lower <= a <= f.upper for f in fits)
    assert hits / reps >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / reps)


def test_slope_fit_single_case_and_determinism():
    x, y = _power_law(0.75, seed=3)
    f1, f2 = fit_slope(x, y, seed=11), fit_slope(x, y, seed=11)
    assert f1.lower <= 0.75 <= f1.upper
    assert (f1.lower, f1.upper) == (f2.lower, f2.upper)
    np.testing.assert_allclose(f1.mean, y.mean(axis=0))
    unpaired = fit_slope(x, y, seed=11, paired=False)
    assert unpaired.lower <= 0.75 <= unpaired.upper
    da = xr.DataArray(y.T, dims=("t", "replicate"))
    assert fit_slope(x, da, seed=11).slope == pytest.approx(f1.slope)


def test_check_rate_rules():
    x, y = _power_law(-0.5, seed=4)
    matched = check_rate(x, y, -0.5)
    assert matched.verdict == "matches" and matched.rate_matched and matched.ok
    too_slow = check_rate(x, y, -1.0)                 # bound says O(x^-1); measure decays like x^-0.5
    assert too_slow.verdict == "inconsistent" and not too_slow.rate_matched and too_slow.failed
    faster = check_rate(x, y, 0.0)                    # bound O(1): holds, rate not attained
    assert faster.verdict == "faster than claimed" and not faster.rate_matched and faster.ok
    assert any("not attained" in n for n in faster.notes)
    assert check_rate(x, y, 0.0, kind="exact").verdict == "inconsistent"
    assert check_rate(x, y, -1.0, kind="lower").verdict == "consistent"
    assert check_rate(x, y, 0.0, kind="lower").verdict == "inconsistent"
    # a tolerance widens the acceptance on the bound's side only by tol
    fit = too_slow.details
    assert rate_rule(fit, -1.0, "upper", tol=fit.lower + 1.0 + 1e-9) == (True, True)


def test_check_rate_guards_and_registry_exponents():
    x, y = _power_law(-0.5, seed=5)
    with pytest.raises(ValueError, match="tol"):
        check_rate(x, y, -0.5, tol=-1)
    with pytest.raises(ValueError, match="kind"):
        check_rate(x, y, -0.5, kind="sideways")
    with pytest.raises(ValueError, match="<= 0"):
        fit_slope(x, np.zeros_like(y))
    with pytest.raises(ValueError, match="shape"):
        fit_slope(x[:-1], y)
    assert rate_exponent("P1.Thm1.rate", "n") == -0.5
    assert rate_exponent("P1.Thm3.rate", "n", L=1.0, mu=1.0) == pytest.approx(-0.6)
    with pytest.raises(ValueError, match="no rate exponent"):
        rate_exponent("P1.Thm4.uas", "t")


def test_log_factor_rate_uses_the_nominal_exponent():
    """P0 Thm 2 is O~(n^-1/2) with ln^2 n: over n = 16..48 the local slope of n^-1/2 ln^2 n is
    positive (+0.11), which any decreasing curve would "pass".  The registry's nominal exponent is
    -1/2, and a measure decaying like n^-0.2 is inconsistent with it."""
    n = np.array([16.0, 24, 32, 40, 48])
    assert bound_slope(n, n ** -0.5 * np.log(n) ** 2) > 0.1
    a = rate_exponent("P0.Thm2.rate", "n")
    assert a == -0.5
    y = 3.0 * n ** -0.2 * np.random.default_rng(7).lognormal(0.0, 0.05, size=(200, n.size))
    v = check_rate(n, y, a, log_factors="ln^2 n", paired=False)
    assert v.verdict == "inconsistent" and v.log_factors == "ln^2 n"
    assert any("log factors ln^2 n" in s for s in v.notes)


def test_lack_of_fit_widens_the_slope_ci_and_curvature_is_inconclusive():
    """y = x^-0.7 up to x = 100, then flat: the bootstrap alone gives a narrow CI around a slope
    no part of the curve has; the lack-of-fit term widens it, and the last decade (slope ~ 0)
    disagrees with the global fit (slope -0.35, widened CI about [-0.47, -0.23]), so a claim
    O(x^-0.4), which the global fit alone would call matched, gets "inconclusive (curvature)"."""
    x = np.geomspace(1, 1e4, 13)
    mean = np.where(x <= 100, x ** -0.7, 100 ** -0.7)
    y = mean * np.random.default_rng(3).lognormal(0.0, 0.02, size=(300, x.size))
    fit = fit_slope(x, y, seed=1)
    assert fit.upper - fit.lower > 3 * (fit.boot_upper - fit.boot_lower)
    assert fit.local_slope == pytest.approx(0.0, abs=0.02) and fit.local_from == pytest.approx(1e3)
    assert fit.lower <= -0.4 <= fit.upper
    v = check_rate(x, y, -0.4)
    assert v.verdict == "inconclusive" and v.qualifier == "curvature" and v.label == "inconclusive (curvature)"
    # a straight power law: no widening to speak of, the last decade agrees
    xs, ys = _power_law(-0.5, seed=9)
    straight = fit_slope(xs, ys)
    assert straight.local_lower <= -0.5 <= straight.local_upper
    assert check_rate(xs, ys, -0.5).verdict == "matches"


def test_relabel_keeps_the_rule_verdict_in_the_notes():
    m = _measure([1.0, 2.0, 3.0], [0.5, 1.5, 2.9], [1.5, 2.5, 3.1])
    v = check_bound(m, [2.0, 2.2, 2.4], "EXPLICIT").relabel("inconclusive", "saturated")
    assert v.label == "inconclusive (saturated)" and "rule verdict: violated" in v.notes
