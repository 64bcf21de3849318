"""Rules of individual verdict rows (nominal exponents, saturation, the P4-F1 floor, stand-ins, Remark 7).

Fast unit tests on hand-made inputs; the expected values come from the theorems / the stated rules,
not from the code's output."""

from __future__ import annotations

import math

import numpy as np
import pytest

from stabsim.analyses import CheckResult
from stabsim.analyses.base import STAND_IN
from stabsim.theory import get
from stabsim.judging.rules import bound_slope, check_rate, rate_exponent

# ---- task 1: nominal exponents, log factors beside them ---------------------------------------


@pytest.mark.parametrize("key,nominal", [("P0.Thm2.rate", -0.5), ("P0.Thm3.rate", -1 / 3)])
def test_p0_rate_exponent_is_nominal_and_logs_are_named(key, nominal):
    from stabsim.analyses.p0_excess_risk import rate_log_factors

    # Thm 2: O~(ln^2 n / sqrt n), Thm 3: O~(ln^2 n / n^{1/3}) -- the polynomial exponents are -1/2 and -1/3
    assert rate_exponent(key, "n") == pytest.approx(nominal)
    assert rate_log_factors(get(key)) == "ln^2 n"
    # the old rule (local slope of the expression) over the study's n = 16..48 is positive: d/dln n of
    # 2 ln ln n + a ln n = 2/ln n + a, and 2/ln 48 = 0.52 > 1/2
    ns = np.array([16, 24, 32, 40, 48.0])
    assert bound_slope(ns, get(key)(n=ns)) > 0


def test_log_factors_do_not_rescue_a_flat_curve():
    """A flat measured curve compared with n^-1/2 (log factors named beside it) is not a match."""
    ns = np.array([16, 24, 32, 40, 48.0])
    rng = np.random.default_rng(0)
    y = 0.3 * (1 + 0.01 * rng.standard_normal((40, ns.size)))
    v = check_rate(ns, y, rate_exponent("P0.Thm2.rate", "n"), "upper", paired=False, log_factors="ln^2 n")
    assert v.exponent == -0.5 and v.verdict == "inconsistent" and v.log_factors == "ln^2 n"


# ---- task 2: saturation of the private output --------------------------------------------------

def test_noise_saturation_rule():
    from stabsim.analyses.p0_excess_risk import SATURATION_FACTOR, noise_saturation

    # sigma sqrt(d) / R with d = 5, R = 1: 300 sqrt 5 = 670.8 > 10 at every n -> saturated
    sat, ratio = noise_saturation([397.0, 300.0], 5, 1.0)
    assert sat and ratio == pytest.approx(300 * math.sqrt(5))
    # eps = 1000: sigma ~ 0.4, sigma sqrt(5) = 0.89 < 10 R -> not saturated
    assert noise_saturation([0.4, 0.3], 5, 1.0)[0] is False
    # one n below the threshold: the sweep is not saturated everywhere
    assert noise_saturation([100.0, 4.0], 5, 1.0)[0] is False       # 4 sqrt 5 = 8.9 < 10
    assert noise_saturation([100.0], 5, math.inf)[0] is False       # unbounded W: nothing pins the output
    assert SATURATION_FACTOR == 10.0


def test_saturated_relabel_keeps_the_rule_verdict():
    # a synthetic saturated sweep: the loss is pinned (flat in n) -> the rule says "inconsistent" vs n^-1/2
    ns = np.array([12, 16, 20, 24.0])
    y = 0.5 + 0.001 * np.random.default_rng(1).standard_normal((30, ns.size))
    v = check_rate(ns, y, -0.5, "upper", paired=False)
    assert v.verdict == "inconsistent"
    r = v.relabel("inconclusive", "saturated", note="saturated: ...")
    assert (r.verdict, r.qualifier, r.ok, r.failed) == ("inconclusive", "saturated", False, False)
    assert "rule verdict: inconsistent" in r.notes


# ---- task 3: the P4-F1 floor ---------------------------------------------------------------------

N4 = np.array([100, 200, 400, 800.0])


def _flat_verdict(level=0.02, expo=-1.0, slope=0.0):
    y = level * (N4 / 100) ** slope * (1 + 0.01 * np.random.default_rng(2).standard_normal((24, N4.size)))
    return y.mean(0), check_rate(N4, y, expo, "upper")


def test_floor_values_and_relabel():
    from stabsim.analyses.p4_rates import FLOOR_QUALIFIER, constant_step_floor, floor_row

    mean, v = _flat_verdict()
    assert v.verdict == "inconsistent"
    eta, sig, d, G = 0.37, np.array([5.8, 4.8, 4.2, 3.9]), 10, 2.0
    fl = constant_step_floor(N4, mean, eta, sig, d, G, v)
    assert fl["floor"] == pytest.approx(eta * sig ** 2 * d)
    assert fl["floor_min"] == pytest.approx(2.68 * 0.37 * 4 * 10)       # 2.68 eta G^2 d = 39.664
    assert fl["flattens"]
    r, text, _ = floor_row(v, N4, mean, eta, sig, d, G, "P4.Thm3b.excess")
    # P4-F1 is an erratum of the proof: an upper-bound term is no lower bound, so a flat curve at it is a shape
    assert (r.verdict, r.qualifier) == ("inconclusive", FLOOR_QUALIFIER)
    assert any("P4-F1 floor" in n for n in r.notes) and any("rule verdict: inconsistent" in n for n in r.notes)
    from dataclasses import replace
    r2, _, _ = floor_row(replace(v, verdict="inconclusive", qualifier="curvature"), N4, mean, eta, sig, d, G,
                         "P4.Thm3b.excess")
    assert (r2.verdict, r2.qualifier) == ("inconclusive", FLOOR_QUALIFIER)   # no significant claim: the shape
    assert "P4-F1" in text and "not a lower bound on the excess risk" in text
    # Thm 3(a) rows are not P4-F1 rows
    assert floor_row(v, N4, mean, eta, sig, d, G, "P4.Thm3a.excess")[0] is v


def test_floor_not_applied_when_the_curve_decays_or_the_step_decays():
    from stabsim.analyses.p4_rates import constant_step_floor

    sig = np.full(4, 4.0)
    # the measure decays like 1/n: the claim is seen, no floor relabel
    mean, v = _flat_verdict(slope=-1.0)
    assert v.ok and not constant_step_floor(N4, mean, 0.37, sig, 10, 2.0, v)["flattens"]
    # flat, but a step that decays with n: the premise of P4-F1 fails
    mean, v = _flat_verdict()
    assert not constant_step_floor(N4, mean, 0.37 / np.sqrt(N4 / 100), sig, 10, 2.0, v)["flattens"]
    # flat but above the floor term (eta sigma^2 d = 0.37 * 1e-4 * 10): flat for another reason
    assert not constant_step_floor(N4, mean, 0.37, np.full(4, 0.01), 10, 2.0, v)["flattens"]
    # non-private cell
    assert not constant_step_floor(N4, mean, 0.37, np.zeros(4), 10, 2.0, v)["flattens"]


# ---- task 4: Remark 7 local slopes ----------------------------------------------------------------

def test_local_slopes_and_profiles():
    from stabsim.analyses.p1_optimization import local_slopes
    from stabsim.study import load_study
    from pathlib import Path

    T = np.array([100, 1000, 10000, 100000.0])
    mean = np.array([1.0, 10 ** -0.5, 10 ** -0.6, 10 ** -1.1])      # -1/2, then a plateau (-0.1), then -1/2
    got = [x for _, _, x in local_slopes(T, mean)]
    assert got == pytest.approx([-0.5, -0.1, -0.5])
    studies = Path(__file__).resolve().parents[1] / "studies"
    full = load_study(studies / "p1_rem7_buffer.toml", profile="full")
    quick = load_study(studies / "p1_rem7_buffer.toml", profile="quick")
    assert max(full.sections["horizon"]["T"]) == 300000                  # the side run is in the study
    assert max(quick.sections["horizon"]["T"]) <= 30000                  # quick stays fast


# ---- task 5: stand-in rows -------------------------------------------------------------------------

def test_stand_in_row_verdict():
    from stabsim.judging.rules import Verdict

    v = Verdict(key="P1.Table1", quantity="test AUC", tag="REPRO", verdict="consistent", n_replicates=5,
                level=math.nan)
    res = CheckResult()
    res.add(v, data="stand-in", stand_in_for="usps")
    res.add(v, data="stand-in")                   # a qualitative row on a stand-in: judged, only marked
    assert res.verdicts[0].verdict == STAND_IN and res.data[0] == "stand-in"
    assert res.verdicts[1].verdict == "consistent" and res.data[1] == "stand-in"


def test_p1_table1_stand_in_rows(tmp_path):
    """digits stands in for usps: its Table 1 row shows the paper's 0.926 for context, verdict stand-in;
    diabetes is the paper's own data: judged."""
    from stabsim.engine import real_datasets as datasets
    from stabsim.reporting.analyse import analyse
    from stabsim.study import parse_study, run_study

    assert datasets._resolve("digits").stand_in and not datasets._resolve("diabetes").stand_in
    text = """
[study]
kind = "p1_table1"
check = "p1_table1"
seed = 3
replicates = 5
[data]
dataset = "diabetes"
[algorithm]
passes = 0.5
cv_passes = 0.25
eta_grid = [1.0]
checkpoints = 2
[sweep]
dataset = ["diabetes", "digits"]
method = ["p1_alg1", "olp"]
"""
    spec = parse_study(text, path="tiny_standin.toml")
    res = run_study(spec, tmp_path, progress=False)
    rec = analyse(res.data_path.parent)
    assert rec["error"] is None, rec
    rows = rec["rows"]
    t1 = [r for r in rows if r["key"] == "P1.Table1"]
    assert len(t1) == 4
    for r in t1:
        if r["label"].startswith("digits"):
            assert r["verdict"] == STAND_IN and r["data"] == "stand-in" and "rule verdict" in r["notes"]
        else:
            assert r["verdict"] in ("consistent", "inconclusive", "inconsistent") and r["data"] == "real"
    quali = [r for r in rows if r["key"] in ("P1.Sec6.competitive", "P1.Fig1.cpu") and r["label"] == "digits"]
    assert quali and all(r["verdict"] != STAND_IN and r["data"] == "stand-in" for r in quali)
