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
from stabsim.measures import uas_mean, uas_quantile
from stabsim.theory import get
from stabsim.verdicts import (Verdict, bound_slope, check_bound, check_rate, fit_slope, rate_exponent,
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
    assert any("violated at" in n for n in v.notes)
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
    assert v.verdict == "consistent"
    assert 0 < v.tightness_min <= v.tightness_max < 1


# ----------------------------------------------------------------------------- check_bound by hand

def _measure(est, lo, hi, t=(1, 10, 100)):
    ds = xr.Dataset({"estimate": ("t", est), "lower": ("t", lo), "upper": ("t", hi)}, coords={"t": list(t)})
    ds.attrs.update(quantity="uas_mean", n_replicates=50, level=0.95)
    return ds


def test_check_bound_rules_by_hand():
    m = _measure([1.0, 2.0, 3.0], [0.5, 1.5, 2.5], [1.5, 2.5, 3.5])
    v = check_bound(m, [2.0, 2.2, 2.4], "EXPLICIT")
    # margins bound - upper: 0.5, -0.3, -1.1; t=10 straddles (lower 1.5 < 2.2), t=100 fully above
    assert v.verdict == "violated"
    assert v.worst_margin == pytest.approx(-1.1) and v.worst_at == {"t": 100}
    assert list(v.details["status"].values) == ["holds", "violated", "violated (significant)"]
    assert v.tightness_min == pytest.approx(0.5) and v.tightness_max == pytest.approx(3 / 2.4)
    assert "violated at 2 of 3 coordinates (1 with the whole CI above the bound)" in v.notes
    ok = check_bound(m, [2.0, 3.0, 4.0], "EXPLICIT-DD")
    assert ok.verdict == "holds" and ok.worst_margin == pytest.approx(0.5)
    assert any("EXPLICIT-DD" in n for n in ok.notes)


def test_upper_equal_to_bound_does_not_hold():
    m = _measure([1.0, 1.0, 1.0], [0.9, 0.9, 0.9], [1.1, 1.1, 1.1])
    assert check_bound(m, 1.1, "EXPLICIT").verdict == "violated"


def test_infinite_quantile_upper_end_cannot_certify():
    q = uas_quantile(xr.Dataset({"dist_output": (("replicate", "t"), np.ones((5, 1)))},
                                coords={"t": [1]}), gamma=0.05)
    v = check_bound(q, 1e9, "EXPLICIT")
    assert v.verdict == "violated" and any("+inf" in n for n in v.notes)


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
    assert matched.verdict == "consistent" and matched.rate_matched
    too_slow = check_rate(x, y, -1.0)                 # bound says O(x^-1); measure decays like x^-0.5
    assert too_slow.verdict == "inconsistent" and not too_slow.rate_matched
    faster = check_rate(x, y, 0.0)                    # bound O(1): holds, rate not attained
    assert faster.verdict == "consistent" and not faster.rate_matched
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
