"""The rules that decide what a verdict claims (issue: findings a referee would sign).

Each rule is shown with a case that must come out one way and a case that must come out the other:
a rate judged against the band between the nominal exponent and the bound's own slope, a row too
wide to discriminate, a pre-asymptotic shape below the bound's curve, a planted violation that the
power check must catch, a squared bound, a measured value <= 0, a bound above the quantity's trivial
bound, a literal typesetting reading, and repeated results.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import xarray as xr

from stabsim.analyses.base import LITERAL_READINGS, CheckResult
from stabsim.judging.rates import RATE_RESOLUTION, SHAPE_PRE_ASYMPTOTIC, rate_power, shape_band
from stabsim.judging.verdict import LITERAL_READING, PROOF_GAP, is_headline, mark_repeats
from stabsim.judging.rules import bound_slope, check_bound, check_rate, fit_slope


def _reps(x, mean, sd=0.03, R=400, seed=0):
    """R replicates of ``mean`` (on x) with multiplicative lognormal noise of log-sd ``sd``."""
    return mean[None, :] * np.random.default_rng(seed).lognormal(0.0, sd, size=(R, x.size))


def _measure(est, lo, hi, n=100):
    d = ("t",)
    return xr.Dataset({"estimate": (d, np.asarray(est, float)), "lower": (d, np.asarray(lo, float)),
                       "upper": (d, np.asarray(hi, float))}, coords={"t": np.arange(1, len(est) + 1)},
                      attrs={"quantity": "uas_mean", "n_replicates": n, "level": 0.95})


# ---- rates: the band of the bound's own shape --------------------------------------------------

def test_log_factors_move_the_band_and_decide_the_verdict():
    """P3 Thm 2's regret: nominal n^{1/2}, expression sqrt(n) log^1.5(n/zeta), whose own slope over
    n = 200..3200 is ~0.67.  A measured slope of 0.62 is consistent with the theorem's expression;
    judged against the nominal exponent alone it would be called inconsistent."""
    n = np.geomspace(200, 3200, 5)
    expr = np.sqrt(n) * np.log(n / 0.1) ** 1.5
    s = bound_slope(n, expr)
    assert 0.6 < s < 0.75
    y = _reps(n, n ** 0.62)
    with_shape = check_rate(n, y, 0.5, bound_values=expr, log_factors="log^1.5(n/zeta)")
    nominal_only = check_rate(n, y, 0.5)
    assert with_shape.verdict == "matches" and with_shape.can_fail is True
    assert with_shape.shape_slope == pytest.approx(s)
    assert nominal_only.verdict == "inconsistent"
    # and a slope beyond the band on the slow side is still inconsistent with the expression
    steep = check_rate(n, _reps(n, n ** 1.0), 0.5, bound_values=expr)
    assert steep.verdict == "inconsistent" and steep.can_fail is True


def test_a_band_too_wide_for_the_range_cannot_discriminate():
    """P0 Thm 2 over n = 16..48: ln^2 n turns n^-1/2 into a slope of +0.1, so the band spans 0.6 and
    any decaying curve would "match": the row is inconclusive (cannot discriminate) and cannot fail.
    Over n = 1e4..1e8 the band is narrow and the same claim can be tested."""
    n = np.array([16.0, 24, 32, 40, 48])
    y = _reps(n, 3.0 * n ** -0.2)
    v = check_rate(n, y, -0.5, bound_values=n ** -0.5 * np.log(n) ** 2, paired=False)
    assert (v.verdict, v.qualifier, v.can_fail) == ("inconclusive", "cannot discriminate", False)
    assert "log factors dominate" in v.power_note and not v.failed
    wide = np.geomspace(1e4, 1e8, 5)
    w = check_rate(wide, _reps(wide, wide ** -0.5 * np.log(wide) ** 2), -0.5,
                   bound_values=wide ** -0.5 * np.log(wide) ** 2)
    assert w.verdict == "matches" and w.can_fail is True


def test_a_wide_slope_ci_cannot_discriminate_and_says_what_range_would():
    x = np.array([10.0, 14, 20])
    noisy = _reps(x, x ** -0.5, sd=0.8, R=30, seed=2)
    v = check_rate(x, noisy, -0.5, paired=False)
    fit = v.details
    assert max(fit.upper - fit.slope, fit.slope - fit.lower) > RATE_RESOLUTION
    assert (v.verdict, v.qualifier, v.can_fail) == ("inconclusive", "cannot discriminate", False)
    assert "would be needed" in v.power_note
    tight = check_rate(x, _reps(x, x ** -0.5, sd=0.01), -0.5)
    assert tight.verdict == "matches" and tight.can_fail is True


def test_rate_power_of_the_band():
    x = np.geomspace(10, 1e4, 6)
    fit = fit_slope(x, _reps(x, x ** -0.5, sd=0.01))
    assert shape_band(-0.5, None) == (-0.5, -0.5) and shape_band(-0.5, 0.1) == (-0.5, 0.1)
    assert rate_power(fit, (-0.5, -0.4))[0] is True
    assert rate_power(fit, (-0.5, 0.1))[0] is False


def test_slow_decay_below_the_bound_is_pre_asymptotic_unless_a_finding_argues_otherwise():
    """A curve flat at 0.01 while the explicit bound 1/sqrt(n) stays above it everywhere: slower than
    claimed, but below the bound on the whole range -- pre-asymptotic, no claim.  The same curve
    above the bound is inconsistent; and a row whose finding argues an asymptotic contradiction keeps
    "inconsistent"."""
    n = np.geomspace(100, 1600, 5)
    flat = _reps(n, 0.01 * n ** -0.02)
    above = check_rate(n, flat, -0.5, explicit_bound=0.001 * n ** -0.5)
    below = check_rate(n, flat, -0.5, explicit_bound=n ** -0.5)
    argued = check_rate(n, flat, -0.5, explicit_bound=n ** -0.5, finding="P9-F1")
    assert above.verdict == "inconsistent" and above.failed
    assert (below.verdict, below.qualifier) == ("inconclusive", SHAPE_PRE_ASYMPTOTIC) and not below.failed
    assert any("rule verdict: inconsistent" in s for s in below.notes)
    assert argued.verdict == "inconsistent" and any("P9-F1" in s for s in argued.notes)


# ---- bounds: power, vacuity ----------------------------------------------------------------------

def test_planted_violation_decides_whether_a_bound_row_can_fail():
    tight = check_bound(_measure([1.0, 2.0], [0.9, 1.8], [1.1, 2.2]), [50.0, 50.0], "EXPLICIT")
    vague = check_bound(_measure([1.0, 2.0], [0.0, 0.0], [5.0, 9.0]), [50.0, 50.0], "EXPLICIT")
    assert tight.verdict == "holds" and tight.can_fail is True
    assert vague.verdict == "holds" and vague.can_fail is False and "twice the bound" in vague.power_note


def test_a_measured_value_at_or_below_zero_is_neither_vacuous_nor_able_to_fail():
    neg = check_bound(_measure([-0.2, -0.1], [-0.3, -0.2], [-0.1, 0.0]), [1.0, 1.0], "EXPLICIT")
    assert neg.verdict == "holds" and neg.vacuous is None and neg.can_fail is False
    assert any("<= 0" in s for s in neg.notes)
    pos = check_bound(_measure([0.001, 0.002], [0.0009, 0.0018], [0.0011, 0.0022]), [1.0, 1.0], "EXPLICIT")
    assert pos.vacuous is True  # measured/bound 0.002 < 0.01: the other way


def test_vacuity_is_the_same_for_a_bound_and_its_square():
    """q/B = 0.05: not vacuous.  The same run checked as q^2 <= B^2 has ratio 0.0025 < 0.01, which
    must not flip the flag; a distance with ratio 0.0025 is vacuous."""
    m = _measure([0.05], [0.049], [0.051])
    sq = _measure([0.0025], [0.00245], [0.00255])
    assert check_bound(m, [1.0], "EXPLICIT").vacuous is False
    assert check_bound(sq, [1.0], "EXPLICIT", quantity="uas_sq_quantile").vacuous is False
    assert check_bound(sq, [1.0], "EXPLICIT", quantity="uas_mean").vacuous is True


def test_a_bound_above_the_trivial_bound_cannot_fail_and_only_a_holding_bound_is_vacuous():
    m = _measure([1.0, 2.0], [0.9, 1.8], [1.1, 2.2])
    over = check_bound(m, [8.0, 16.0], "EXPLICIT", trivial_bound=7.0)
    under = check_bound(m, [8.0, 16.0], "EXPLICIT", trivial_bound=100.0)
    assert over.vacuous is True and over.can_fail is False and "trivial bound" in over.power_note
    assert under.vacuous is False and under.can_fail is True
    straddle = check_bound(_measure([1.0], [0.001], [3.0]), [2.0], "EXPLICIT")
    assert straddle.verdict == "inconclusive" and straddle.vacuous is None
    assert straddle.relabel("inconclusive", "x").vacuous is None


# ---- literal readings, headline findings, repeats ------------------------------------------------

def test_a_literal_typesetting_reading_is_reported_but_not_a_headline():
    key = next(iter(LITERAL_READINGS))
    m = _measure([2.0], [1.9], [2.1])
    v = CheckResult().add(check_bound(m, [1.0], "EXPLICIT"))
    lit = CheckResult().add(replace(check_bound(m, [1.0], "EXPLICIT"), key=key))
    assert v.verdict == "violated" and v.qualifier == ""
    assert lit.verdict == "violated" and lit.qualifier == LITERAL_READING
    row = {"verdict": "violated", "qualifier": LITERAL_READING, "data": "synthetic", "can_fail": True}
    assert not is_headline(row) and is_headline({**row, "qualifier": ""})
    assert not is_headline({**row, "qualifier": "outside the theorem's assumptions"})


def test_headline_rule_and_repeats():
    base = {"study": "s", "check_kind": "rate", "verdict": "inconsistent", "qualifier": "", "data": "synthetic",
            "slope": 0.9, "slope_lower": 0.8, "slope_upper": 1.0, "exponent": 0.5, "can_fail": True}
    rows = mark_repeats([dict(base, key="A", case="c"), dict(base, key="B"), dict(base, key="C", slope=0.7),
                         dict(base, study="t", key="A")])
    assert [r["repeat_of"] for r in rows] == ["", "s/A/c", "", ""]
    assert all(is_headline(r) for r in rows)   # a repeat is a headline row of the same finding
    assert not is_headline(dict(base, can_fail=False)) and not is_headline(dict(base, can_fail="False"))
    assert not is_headline(dict(base, verdict="matches")) and not is_headline(dict(base, data="stand-in"))
    ledger = {"study": "p", "check_kind": "privacy ledger", "key": "L", "verdict": "not certified by the paper's argument"}
    led = mark_repeats([dict(ledger, case="alg, n=16, T=256, delta=0.001, eps=1"),
                        dict(ledger, case="alg, n=24, T=576, delta=0.001, eps=1"),
                        dict(ledger, case="alg, n=24, T=576, delta=0.001, eps=3")])
    assert [r["repeat_of"] for r in led] == ["", "p/L/alg, n=16, T=256, delta=0.001, eps=1", ""]


def test_an_audit_without_a_detected_sanity_run_has_no_power():
    from stabsim.analyses.privacy_audit import NO_POWER, _with_power
    from stabsim.judging.rules import Verdict

    audit = Verdict(key="a.audit", quantity="eps_lower", tag="AUDIT", verdict="consistent", n_replicates=10, level=0.95)
    seen = Verdict(key="a.audit", quantity="eps_lower", tag="SANITY", verdict="holds", n_replicates=10, level=0.95)
    missed = replace(seen, verdict="inconclusive", qualifier="not detected")
    powered = _with_power([(audit, None, "x1"), (seen, None, "x0.1")])
    blind = _with_power([(audit, None, "x1"), (missed, None, "x0.1")])
    assert powered[0][0].verdict == "consistent" and powered[0][0].can_fail is True
    assert (blind[0][0].verdict, blind[0][0].qualifier, blind[0][0].can_fail) == ("inconclusive", NO_POWER, False)
    assert all(r[0].can_fail is False for r in powered[1:] + blind[1:])   # the SANITY rows are power checks


def test_the_overlay_trivial_bound_of_a_twin_distance():
    """2 G eta t along the steps at a constant step, capped by the diameter D of W; none for a
    quantity that is not a distance or where neither is finite."""
    from stabsim.analyses.overlay import _trivial_distance

    m = xr.Dataset({"estimate": ("t", np.ones(3))}, coords={"t": [1.0, 10.0, 100.0]}, attrs={"quantity": "uas_mean"})
    np.testing.assert_allclose(_trivial_distance({}, {"G": 2.0}, {"eta": 0.5}, m, "t"), [2.0, 20.0, 200.0])
    np.testing.assert_allclose(_trivial_distance({}, {"G": 2.0, "D": 50.0}, {"eta": 0.5}, m, "t"), [2.0, 20.0, 50.0])
    assert _trivial_distance({}, {"G": 2.0}, {}, m, "t") is None
    assert _trivial_distance({"trivial": False}, {"G": 2.0}, {"eta": 0.5}, m, "t") is None
    assert _trivial_distance({}, {"G": 2.0}, {"eta": 0.5}, m.assign_attrs(quantity="gen_gap"), "t") is None


def test_toward_zero_swaps_the_sides_of_the_band():
    """x = 1/eps over eps >> 1 runs toward 0: a measure ~ x^1 under a claim O(x^{1/2}) decays faster
    there (faster than claimed), while toward infinity it grows faster than claimed (inconsistent)."""
    x = np.geomspace(3e-6, 3e-4, 5)
    y = _reps(x, 50.0 * x)
    assert check_rate(x, y, 0.5, toward="zero").verdict == "faster than claimed"
    assert check_rate(x, y, 0.5).verdict == "inconsistent"
    assert check_rate(x, y, 1.0, toward="zero").verdict == "matches"
    with pytest.raises(ValueError, match="toward"):
        check_rate(x, y, 0.5, toward="sideways")


# ---- a match must be able to tell the claim from no learning -----------------------------------

def test_a_match_that_a_flat_curve_would_get_too_is_not_support():
    """P3 Thm 3 with alpha ~ 1/sqrt(n): the claimed n^-1/4 average regret, but the bound's own
    expression is nearly flat (slope ~ -0.01) over the range, so the band reaches slope 0 and a
    curve without any decay "matches".  Such a row cannot discriminate; the same measured curve
    against an expression that really decays (band -0.5..-0.4) is a test that can fail."""
    n = np.geomspace(100, 6400, 6)
    flat_expr = n ** -0.008                                    # the expression's own slope here
    y = _reps(n, n ** -0.012, sd=0.1, R=100)
    v = check_rate(n, y, -0.25, bound_values=flat_expr)
    half = max(v.slope_upper - v.slope, v.slope - v.slope_lower)
    assert half > 0.008                 # precondition: a flat curve's CI would reach the band
    assert (v.verdict, v.qualifier, v.can_fail) == ("inconclusive", "cannot discriminate", False)
    assert "trivial slope 0" in v.power_note
    decaying = check_rate(n, _reps(n, n ** -0.45, sd=0.01), -0.5, bound_values=n ** -0.4)
    assert decaying.verdict == "matches" and decaying.can_fail is True


def test_a_cumulative_regret_match_at_slope_one_is_not_support():
    """A regret claimed O(n^3/4) whose expression grows like n^0.99 over the range: linear regret
    (the trivial rate of a bounded loss) matches too, with trivial_slope = 1; a regret growing
    like n^0.6 against an expression of slope 0.7 can be told from linear growth."""
    n = np.geomspace(100, 6400, 6)
    y = _reps(n, n ** 0.97, sd=0.1, R=100)
    v = check_rate(n, y, 0.75, bound_values=n ** 0.99, trivial_slope=1.0)
    assert max(v.slope_upper - v.slope, v.slope - v.slope_lower) > 0.01
    assert (v.verdict, v.can_fail) == ("inconclusive", False) and "trivial slope 1" in v.power_note
    ok = check_rate(n, _reps(n, n ** 0.65, sd=0.01), 0.6, bound_values=n ** 0.7, trivial_slope=1.0)
    assert ok.verdict == "matches" and ok.can_fail is True


def test_below_a_bound_that_does_not_decay_is_not_pre_asymptotic():
    """P4 Thm 3(a) at eps = 4: the explicit term 3 eta sigma^2 d grows with n (eta grows, sigma^2
    is bounded below), so a flat measure below it is no sign of a pre-asymptotic shape: the row stays
    "inconsistent".  Below an explicit bound that decays faster than the claim (Thm 6(a)'s eta ~
    n^-1/2), the same flat curve is "inconclusive (shape: pre-asymptotic)", and the note says where
    the two curves would meet."""
    n = np.geomspace(200, 3200, 5)
    y = _reps(n, 0.05 * n ** -0.04, sd=0.01)
    growing = 10.0 * n ** 0.25
    v = check_rate(n, y, -0.5, explicit_bound=growing)
    assert v.verdict == "inconsistent" and "says nothing about the claimed rate" in " ".join(v.notes)
    decaying = 30.0 * n ** -0.6
    w = check_rate(n, y, -0.5, explicit_bound=decaying)
    assert (w.verdict, w.qualifier) == ("inconclusive", SHAPE_PRE_ASYMPTOTIC)
    note = " ".join(w.notes)
    assert "would reach the curve near x = " in note
    x_meet = float(note.split("near x = ")[1].split(":")[0])
    # independent check: 0.05 x^-0.04 = 30 x^-0.6  <=>  x = (600)^(1/0.56)
    assert x_meet == pytest.approx(600 ** (1 / 0.56), rel=0.25)


# ---- the same finding once: a calibration checked in a study and priced by the ledger ----------

def test_ledger_rows_repeat_the_calibration_row_they_price_across_studies():
    calib = {"study": "p0_thm4_sigma", "key": "P0.Thm4.sigma2.printed", "case": "printed", "paper": "P0",
             "check_kind": "privacy", "verdict": PROOF_GAP, "errata_ids": "P0-E2"}
    led1 = {"study": "p0_thm4_sigma", "key": "P0.ledger.p0_alg2", "paper": "P0", "check_kind": "privacy ledger",
            "case": "p0_alg2, Eq.(5) printed, n=24, T=576, delta=0.001, eps=3",
            "verdict": "not certified by the paper's argument", "errata_ids": "P0-E11 P0-E2"}
    led2 = dict(led1, study="p0_thm5_private", case="p0_alg2, Eq.(5) printed, n=16, T=256, delta=0.001, eps=3")
    other = dict(led1, case="p0_alg2, Eq.(5) corrected, n=24, T=576, delta=0.001, eps=3")   # another reading
    rows = mark_repeats([calib, led1, led2, other])
    assert led1["repeat_of"] == "p0_thm4_sigma/P0.Thm4.sigma2.printed/printed"
    assert led2["repeat_of"] == "p0_thm4_sigma/P0.ledger.p0_alg2/" + led1["case"]
    assert other["repeat_of"] == "" and calib["repeat_of"] == ""
    from stabsim.reporting.findings import finding_groups, is_argument_erratum

    rows = [dict(r, can_fail=True) for r in rows]
    assert not any(is_headline(r) for r in rows)          # a proof gap is never a measured finding
    groups = finding_groups(rows, is_argument_erratum)
    printed = [g for g in groups if g["key"] == "P0.Thm4.sigma2.printed"]
    assert len(printed) == 1 and len(printed[0]["rows"]) == 3
    assert printed[0]["errata_ids"] == "P0-E11 P0-E2"       # the union over the finding's rows


def test_finding_line_leads_with_the_first_failing_eps():
    from stabsim.reporting.findings import eps_span

    rows = [{"case": f"p0_alg2, corrected, eps={e}"} for e in (1000, 10, 30)]
    assert eps_span(rows) == "fails from eps = 10 (3 values up to 1000)"
    assert eps_span([{"case": "eps=4.0"}]) == ""
    # an inconclusive line does not "fail": it only says where it was measured
    assert eps_span([{"case": "eps=1.0"}, {"case": "eps=16.0"}], failing=False) == "at eps = 1 .. 16 (2 values)"


def test_rows_outside_the_assumptions_are_neither_support_nor_findings():
    from stabsim.analyses.p3_rates import outside_eps_range
    from stabsim.judging.applicability import OUTSIDE
    from stabsim.reporting.findings import headline_counts, ok_count_line

    n = np.geomspace(200, 3200, 5)
    v = check_rate(n, _reps(n, n ** -1.0, sd=0.01), -0.5)
    assert v.verdict == "faster than claimed"
    out = outside_eps_range(v, 16.0)
    assert out.qualifier == OUTSIDE and out.verdict == v.verdict
    assert outside_eps_range(v, 1.0) is v
    rows = [{"check_kind": "rate", "verdict": "faster than claimed", "qualifier": OUTSIDE, "can_fail": True},
            {"check_kind": "rate", "verdict": "matches", "qualifier": "", "can_fail": True},
            {"check_kind": "rate", "verdict": "inconsistent", "qualifier": OUTSIDE, "can_fail": True}]
    assert ok_count_line(rows, {"rate": "rate claims"}, ["rate"]) == "rate claims 1/1"
    c = headline_counts(rows)
    assert c["findings"] == 0 and c["held_apart"] == 1 and c["other_failed"] == 1


def test_a_calibration_priced_at_the_papers_sensitivity_is_a_proof_gap_not_a_finding():
    """A privacy-calibration check that fails at the paper's own sensitivity bound shows that the
    argument does not certify the claim; the algorithm may still be private (its true sensitivity
    can be smaller).  CheckResult turns its "violated" into PROOF_GAP; a bound row stays violated."""
    from stabsim.judging.verdict import Verdict

    res = CheckResult()
    from stabsim.analyses.base import check_kind

    calib = Verdict(key="P0.Thm4.sigma2.printed", quantity="noise_sigma2", tag="CONDITION", verdict="violated",
                    n_replicates=1, level=0.95)
    assert check_kind(calib) == "privacy"
    out = res.add(calib)
    assert out.verdict == PROOF_GAP and not out.failed
    assert "rule verdict: violated" in out.notes          # nothing hidden
    assert not is_headline({"verdict": out.verdict, "can_fail": True})
    bound = Verdict(key="P1.Thm4.uas", quantity="uas_mean", tag="EXPLICIT", verdict="violated",
                    n_replicates=10, level=0.95)
    assert res.add(bound).verdict == "violated"


def test_argument_errata_are_listed_apart_from_findings():
    """Errata of the papers' arguments: a proof gap, an inconclusive row whose explanation cites an
    argued erratum (P4-F1's saturated curves, P3-F1's undiscriminating range); not a literal reading
    (counted once, apart), not a row outside the assumptions, not a measured finding."""
    from stabsim.reporting.findings import is_argument_erratum

    gap = {"verdict": PROOF_GAP, "qualifier": "", "errata_ids": "P0-E2", "can_fail": True}
    sat = {"verdict": "inconclusive", "qualifier": "shape: saturated", "errata_ids": "P4-F1", "can_fail": True}
    short = {"verdict": "inconclusive", "qualifier": "cannot discriminate", "errata_ids": "P3-F1", "can_fail": False}
    lit_f = {"verdict": "inconsistent", "qualifier": LITERAL_READING, "errata_ids": "P1-F1", "can_fail": True}
    outside = dict(gap, qualifier="outside the theorem's assumptions")
    finding = {"verdict": "violated", "qualifier": "", "errata_ids": "P0-E14", "can_fail": True}
    plain = {"verdict": "inconclusive", "qualifier": "curvature", "errata_ids": "P1-E3", "can_fail": True}
    assert [is_argument_erratum(r) for r in (gap, sat, short)] == [True, True, True]
    # a literal reading is counted once, among the failed verdicts that are not findings
    assert [is_argument_erratum(r) for r in (lit_f, outside, finding, plain)] == [False] * 4
    assert is_headline(finding) and not any(is_headline(r) for r in (gap, sat, short, lit_f))


def test_p0_calibration_rows_name_the_routes_that_do_certify_the_noise():
    """A P0 Thm 4 calibration not certified at the paper's Delta_T can still be private at another valid
    sensitivity bound: the diameter of W (w_bar_T lies in W).  With sigma = 156 and diam W = 2 the
    Gaussian mechanism has mu = 2/156 ~ 0.013, far below the mu ~ 0.36 that eps = 1 at delta = 1e-3 allows
    (GDP: delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)); with sigma = 0.5 it is not."""
    from stabsim.analyses.p0_privacy import _other_routes
    from stabsim.privacy.exact import gdp_mu

    assert gdp_mu(1.0, 1e-3) > 10 * 2 / 156
    text = _other_routes(np.array([156.0 ** 2]), np.array([1.0]), 1e-3, 1e9, 2.0)
    assert "at the diameter of W = 2 the same sigma is certified at every eps of the sweep" in text
    assert "at the proof-form Delta_T (P0-E4) = 1e+09 the same sigma is certified at eps < 1 only" in text
    small = _other_routes(np.array([0.5 ** 2]), np.array([1.0]), 1e-3, 1e9, 2.0)
    assert "at the diameter of W = 2 the same sigma is certified at eps < 1 only" in small


def test_the_report_shows_each_audit_with_its_power_and_what_it_measured():
    from stabsim.reporting.report import _audit_section

    rows = [{"check_kind": "audit", "tag": "AUDIT", "study": "p0_alg2_audit", "quantity": "sensitivity_ratio",
             "case": "noise_scale=1.0, threat_model=known_randomness", "verdict": "consistent", "qualifier": "",
             "tightness_max": 0.0014, "lower_tightness_max": 0.0013},
            {"check_kind": "audit", "tag": "SANITY", "study": "p0_alg2_audit", "case": "noise_scale=0.1, "
             "threat_model=known_randomness", "verdict": "holds"},
            {"check_kind": "audit", "tag": "AUDIT", "study": "p0_alg2_audit", "quantity": "eps_lower",
             "case": "noise_scale=1.0, threat_model=final_output", "verdict": "inconclusive",
             "qualifier": "no power at this design", "tightness_max": 0.0, "lower_tightness_max": 0.0},
            {"check_kind": "audit", "tag": "SANITY", "study": "p0_alg2_audit", "case": "noise_scale=0.1, "
             "threat_model=final_output", "verdict": "inconclusive", "qualifier": "not detected"}]
    lines = _audit_section(rows)
    known = [ln for ln in lines if "known_randomness" in ln][0]
    final = [ln for ln in lines if "final_output" in ln][0]
    assert "0.0014 [0.0013] (worst-case sensitivity measured / Delta" in known and known.endswith("| yes |")
    assert "no power at this design" in final and final.endswith("| no |")
    assert _audit_section([r for r in rows if r["tag"] == "SANITY"]) == []
