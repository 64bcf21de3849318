"""Known-randomness audits (stabsim.privacy.audit_output) and a planted under-noised
mechanism for each of the three threat models (every iterate, final output, known internal randomness)."""

import math
import warnings

import numpy as np
import pytest

from stabsim.privacy import audit_output as ao
from stabsim.privacy.audit_designs import worst_case_design
from stabsim.privacy.audit_runner import accountant_epsilon_for, audit_report, audit_scores
from stabsim.privacy.exact import gdp_epsilon


def _design(alg):
    d = worst_case_design(alg, n=100 if alg.startswith("p3") else 50)
    return d, (0.01 if alg.startswith("p3") else 1e-5)


def _synthetic_scores(R, mu_true, s_true, Delta_claimed, Delta_true, seed):
    """A planted one-release Gaussian mechanism: shift Delta_true on every sequence, noise s_true times the
    calibrated sigma = Delta_claimed / mu_cal with mu_cal = 0.2 (units: the calibrated sigma)."""
    rng = np.random.default_rng(seed)
    mu_cal = 0.2
    shift = np.full(R, mu_cal * Delta_true / Delta_claimed)
    z0 = s_true * rng.standard_normal(R)
    z1 = shift + s_true * rng.standard_normal(R)
    return ao.KnownRandomnessScores(z0, z1, shift, np.full(R, Delta_true / Delta_claimed), mu_cal, Delta_claimed,
                                    1.0, {}, None)


# ---------------------------------------------------------------------------- the estimator
def test_gdp_profile_and_mixture_agree_with_the_analytic_conversion():
    for mu in (0.3, 1.0, 2.5):
        e = gdp_epsilon(1e-5, mu)
        assert ao.gdp_delta(e, np.array([mu]))[0] == pytest.approx(1e-5, rel=1e-6)
        assert ao.mixture_epsilon(np.full(7, mu), 1e-5) == pytest.approx(e, rel=1e-6)
    # a mixture is less private than its mildest part and more than its worst
    m = ao.mixture_epsilon(np.array([0.5, 2.0]), 1e-5)
    assert gdp_epsilon(1e-5, 0.5) < m < gdp_epsilon(1e-5, 2.0)
    assert ao.mixture_epsilon(np.zeros(3), 1e-5) == 0.0


def test_planted_delta_half_the_true_sensitivity_is_flagged():
    """Known randomness, planted: the calibration's Delta is half the sensitivity the mechanism attains."""
    sc = _synthetic_scores(2000, None, 1.0, Delta_claimed=1.0, Delta_true=2.0, seed=0)
    rep = ao.known_randomness_report("p3_offpairc", sc, eps=1.0, delta=1e-5)
    assert rep.ratio_max == pytest.approx(2.0) and rep.violated
    ok = ao.known_randomness_report("p3_offpairc", _synthetic_scores(2000, None, 1.0, 1.0, 0.9, seed=0),
                                    eps=1.0, delta=1e-5)
    assert not ok.violated and ok.ratio_max == pytest.approx(0.9)


def test_noise_estimate_is_a_confidence_bound():
    """s_hat within 4 standard errors (sd of s_hat ~ s/sqrt(4R)) of the planted noise ratio; s_upper above it."""
    R = 3000
    for s in (1.0, 0.5, 0.1):
        rep = ao.known_randomness_report("p0_alg2", _synthetic_scores(R, None, s, 1.0, 0.5, seed=3), eps=1.0,
                                         delta=1e-5, noise_scale=s)
        assert abs(rep.s_hat - s) < 4 * s / math.sqrt(4 * R)
        assert rep.s_upper > rep.s_hat
        assert rep.mu_lower == pytest.approx(rep.mu_max / rep.s_upper)
        assert rep.eps_lower == pytest.approx(gdp_epsilon(1e-5, rep.mu_lower), rel=1e-9)
        assert rep.detected == (s < 1.0)


def test_report_argument_checks():
    sc = _synthetic_scores(10, None, 1.0, 1.0, 0.5, seed=0)
    sc.z0 = sc.z0[:5]
    with pytest.raises(ValueError, match="at least 2 finite"):
        ao.known_randomness_report("p0_alg2", sc, eps=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="confidence"):
        ao.known_randomness_report("p0_alg2", _synthetic_scores(10, None, 1, 1, 0.5, 0), eps=1.0, delta=1e-5,
                                   confidence=1.5)
    d, _ = _design("p4_alg1")
    with pytest.raises(ValueError, match="output-perturbation"):
        ao.known_randomness_scores("p4_alg1", d.X, d.y, eps=1.0, delta=1e-5, replicates=4)
    d, delta = _design("p1_alg3")
    with pytest.raises(ValueError, match="block S_1"):
        ao.known_randomness_scores("p1_alg3", d.X, d.y, eps=1.0, delta=delta, replicates=4,
                                   canary=(40, d.X[40], -d.y[40]), **d.kwargs)
    with pytest.raises(ValueError, match="independent_noise"):
        ao.known_randomness_scores("p0_alg2", d.X, d.y, eps=1.0, delta=delta, replicates=4, independent_noise=False)


# ---------------------------------------------------------------------------- the six algorithms
@pytest.mark.parametrize("alg", ao.OUTPUT_PERTURBATION)
def test_known_randomness_statistic_is_the_stated_gaussian(alg):
    """Correct noise: the projection statistic is N(0, 1) on S and N(shift, 1) on S' in units of the
    calibrated sigma (mean within 4 SE = 4/sqrt(R), variance within 4 SE = 4 sqrt(2/R)); the sensitivity
    ratio is what the paper promises (<= 1) on the design, and nothing is flagged."""
    d, delta = _design(alg)
    R = 400
    sc = ao.known_randomness_scores(alg, d.X, d.y, eps=1.0, delta=delta, replicates=R, seed=5, canary=d.canary,
                                    **d.kwargs)
    e0, e1 = sc.z0, sc.z1 - sc.shift
    for e in (e0, e1):
        assert abs(e.mean()) < 4 / math.sqrt(R)
        assert abs(e.var() - 1.0) < 4 * math.sqrt(2.0 / R)
    assert np.all(sc.shift >= 0) and np.all(sc.ratio <= 1.0)
    assert sc.release_mismatch <= ao.MISMATCH_TOL
    rep = ao.known_randomness_report(alg, sc, eps=1.0, delta=delta)
    assert not rep.violated and rep.eps_promised <= 1.0


def test_p0_shift_matches_the_run_record():
    """P0: the shift is ||wbar_T - wbar'_T|| / sigma (the run's own dist_output_nonprivate, shared indices)."""
    from stabsim.privacy.algorithms import p0_alg2

    d, delta = _design("p0_alg2")
    sc = ao.known_randomness_scores("p0_alg2", d.X, d.y, eps=1.0, delta=delta, replicates=8, seed=2,
                                    canary=d.canary, **d.kwargs)
    ds = p0_alg2(d.X, d.y, eps=1.0, delta=delta, replicates=8, seed=2, independent_noise=True,
                 neighbour=sc.canary.neighbour, checkpoints=[1], **d.kwargs)
    np.testing.assert_allclose(sc.shift * sc.sigma_paper, ds["dist_output_nonprivate"].values, rtol=1e-9, atol=0)


# ---------------------------------------------------------------------------- planted under-noising
def test_planted_half_noise_known_randomness_p0(monkeypatch):
    """Known randomness, planted: P0 adds half the noise while its record states the calibrated sigma."""
    from stabsim.privacy.algorithms import p0_output_perturbation as p0

    d, delta = _design("p0_alg2")
    real = p0.gaussian_rows
    monkeypatch.setattr(p0, "gaussian_rows", lambda *a, **k: 0.5 * real(*a, **k))
    sc = ao.known_randomness_scores("p0_alg2", d.X, d.y, eps=1.0, delta=delta, replicates=300, seed=4,
                                    canary=d.canary, **d.kwargs)
    assert sc.record["noise_scale"] == 1.0
    rep = ao.known_randomness_report("p0_alg2", sc, eps=1.0, delta=delta)
    assert rep.violated and rep.s_upper < 1.0


def test_planted_noise_mismatch_of_a_rebuilt_release_is_flagged(monkeypatch):
    """P3 (projected release, rebuilt from the documented noise stream): noise other than the record's is seen."""
    d, delta = _design("p3_offpairc")
    from stabsim.privacy.algorithms import common

    g = common.gaussian_rows
    monkeypatch.setattr(common, "gaussian_rows", lambda *a, **k: 0.5 * g(*a, **k))
    sc = ao._p3("p3_offpairc", d.X, d.y, np.arange(50), dict(eps=1.0, delta=delta, seed=0,
              neighbour=(7, d.X[7] * -1, d.y[7]), independent_noise=True, noise_scale=1.0), dict(d.kwargs))
    assert sc[8] > ao.MISMATCH_TOL


@pytest.mark.parametrize("threat_model,scale", [("every_iterate", 0.5), ("final_output", 0.25)])
def test_planted_under_noised_p2_is_flagged(threat_model, scale):
    """Every iterate / final output, planted: P2 runs with its noise scaled down while the analysis takes the
    record to be the calibrated one (noise_scale=1): the audit exceeds the accountant's eps at that noise."""
    d = worst_case_design("p2_alg1", n=20, T=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc = audit_scores("p2_alg1", d.X, d.y, eps=4.0, delta=1e-5, replicates=2000, seed=7, canary=d.canary,
                          noise_scale=scale, threat_model=threat_model, **d.kwargs)
        rep = audit_report("p2_alg1", sc, eps=4.0, delta=1e-5, seed=7, noise_scale=1.0)
    assert rep.threat_model == threat_model
    assert rep.accountant_exceeded     # (every iterate: the exact GDP bound counts too, Bonferroni)
    best = max(rep.eps_lower, rep.eps_lower_gdp if rep.gdp_exact else 0.0)
    assert best > accountant_epsilon_for(sc.record, 1.0)[0]


# ---------------------------------------------------------------------------- the study rows
def test_study_rows_have_power_per_threat_model(tmp_path):
    """The P3 OffPairC audit study (quick profile): the known-randomness rows have power (the noise x0.1 row is
    detected, the AUDIT row can fail and carries the sensitivity ratio), the final-output rows stay beside
    them with their own power verdict."""
    from pathlib import Path

    from stabsim.reporting.analyse import analyse
    from stabsim.study import run_study
    from stabsim.study.spec import load_study

    spec = load_study(Path(__file__).parents[1] / "studies" / "p3_offpairc_audit.toml", profile="quick")
    res = run_study(spec, tmp_path, progress=False)
    rec = analyse(res.data_path.parent)
    assert rec["error"] is None
    rows = {(r["tag"], "known_randomness" in (r.get("label") or "")): r for r in rec["rows"]}
    assert len(rows) == 4
    kr_audit, kr_sanity = rows[("AUDIT", True)], rows[("SANITY", True)]
    assert kr_sanity["verdict"] == "holds"
    assert kr_audit["verdict"] == "consistent"
    assert "worst-case sensitivity / Delta used" in str(kr_audit["notes"])
    fo_audit, fo_sanity = rows[("AUDIT", False)], rows[("SANITY", False)]
    if fo_sanity["verdict"] != "holds":
        assert fo_audit["verdict"] == "inconclusive"
