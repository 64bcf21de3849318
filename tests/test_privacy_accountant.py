"""Accountant cross-check (stabsim.privacy.accountant) against the analytic Gaussian mechanism."""

import math

import dp_accounting as dpa
import pytest
from scipy.stats import norm

from stabsim.privacy import accountant as acc
from stabsim.privacy import calibration as cal
from stabsim.privacy.analytic import (analytic_gaussian_delta, analytic_gaussian_epsilon,
                                      analytic_gaussian_sigma)

NR = dpa.NeighboringRelation


def test_analytic_gaussian_formula_by_hand():
    eps, sigma, d = 0.7, 2.0, 1.5
    a, b = d / (2 * sigma), eps * sigma / d
    by_hand = norm.cdf(a - b) - math.exp(eps) * norm.cdf(-a - b)
    assert analytic_gaussian_delta(eps, sigma, d) == pytest.approx(by_hand, rel=1e-10)
    e = analytic_gaussian_epsilon(1e-5, 3.0, 1.0)
    assert analytic_gaussian_delta(e, 3.0, 1.0) == pytest.approx(1e-5, rel=1e-8)
    s = analytic_gaussian_sigma(1.0, 1e-5, 2.0)
    assert analytic_gaussian_delta(1.0, s, 2.0) == pytest.approx(1e-5, rel=1e-8)
    # the classical sigma sqrt(2 ln(1.25/delta)) Delta/eps is sufficient (and loose) at eps <= 1
    assert s < math.sqrt(2 * math.log(1.25 / 1e-5)) * 2.0 / 1.0


@pytest.mark.parametrize("z, delta", [(0.8, 1e-3), (3.0, 1e-5), (10.0, 1e-6)])
def test_single_gaussian_pld_tight_rdp_upper(z, delta):
    exact = analytic_gaussian_epsilon(delta, z, 1.0)
    mech = acc.single_gaussian(sigma=2.0 * z, sensitivity=2.0, eps_claimed=1.0, delta=delta)
    e_pld, e_rdp = acc.epsilon(mech, "pld"), acc.epsilon(mech, "rdp")
    assert e_pld == pytest.approx(exact, abs=1e-3)      # PLD discretisation 1e-4, pessimistic
    assert e_pld >= exact - 1e-6
    assert exact <= e_rdp <= 1.5 * exact + 0.05          # RDP is a valid but looser upper bound


def test_library_replace_one_conventions_are_pinned():
    """dp_accounting 0.6: PLD REPLACE_ONE doubles the sensitivity; RDP ignores the relation."""
    z, delta = 3.0, 1e-5

    def eps(kind, rel):
        return acc.accountant_epsilon(dpa.GaussianDpEvent(z), delta, kind, rel)

    assert eps("pld", NR.ADD_OR_REMOVE_ONE) == pytest.approx(analytic_gaussian_epsilon(delta, z, 1.0), abs=1e-3)
    assert eps("pld", NR.REPLACE_ONE) == pytest.approx(analytic_gaussian_epsilon(delta, z, 2.0), abs=1e-3)
    assert eps("rdp", NR.REPLACE_ONE) == pytest.approx(eps("rdp", NR.ADD_OR_REMOVE_ONE), rel=1e-12)


def test_sigma_needed_matches_analytic_sigma():
    mech = acc.single_gaussian(sigma=5.0, sensitivity=1.0, eps_claimed=1.0, delta=1e-5)
    s = acc.sigma_needed(mech, accountant="pld")
    assert s == pytest.approx(analytic_gaussian_sigma(1.0, 1e-5, 1.0), rel=2e-3)
    assert acc.epsilon(mech, "pld", scale=s / 5.0) <= 1.0 + 1e-4


def test_p0_maps_to_gaussian_at_half_delta():
    n = 100
    args = (n**2, n, n**-1.5, 1.0, 1.0, 1e-5)
    sens = cal.p0_sensitivity_eq9(n**2, n, n**-1.5, 1.0, 0.5e-5)
    for reading in ("printed", "corrected"):
        mech = acc.p0_output_perturbation(*args, reading=reading)
        z = math.sqrt(cal.p0_sigma2(*args, reading=reading)) / sens
        assert mech.noise_multiplier == pytest.approx(z, rel=1e-12)
        assert mech.delta_accountant == pytest.approx(0.5e-5, rel=1e-12)
        assert acc.epsilon(mech, "pld") == pytest.approx(analytic_gaussian_epsilon(0.5e-5, z, 1.0), abs=1e-3)
    # the corrected z does not depend on n, T, eta: sqrt(2 ln(2.5/delta))/eps; the printed one is sqrt(e) smaller
    corrected = acc.p0_output_perturbation(*args)
    assert corrected.noise_multiplier == pytest.approx(math.sqrt(2 * math.log(2.5e5)), rel=1e-12)
    assert acc.epsilon(acc.p0_output_perturbation(*args, reading="printed"), "pld") > 1.0   # E2 bites
    assert acc.epsilon(corrected, "pld") < 1.0


def test_p1_parallel_is_one_gaussian_and_sequential_costs_more():
    delta = 1e-5
    par = acc.p1_alg3(1000, 1.0, 1.0, 1.0, delta)
    z = math.sqrt(2 * math.log(2.5 / delta))
    assert par.noise_multiplier == pytest.approx(z, rel=1e-12)
    assert acc.epsilon(par, "pld") == pytest.approx(analytic_gaussian_epsilon(delta / 2, z, 1.0), abs=1e-3)
    seq = acc.p1_alg3(1000, 1.0, 1.0, 1.0, delta, composition="sequential")
    assert acc.epsilon(seq, "pld") > acc.epsilon(par, "pld")


def test_p2_zcdp_cross_check():
    T, n, G, eps, delta = 10, 1000, 1.0, 1.0, 1e-5
    mech = acc.p2_gradient_perturbation(T, n, G, eps, delta)
    assert mech.noise_multiplier == pytest.approx(2 * math.sqrt(T * math.log(1 / delta)) / eps, rel=1e-12)
    # errata P2-A: eps' = eps/sqrt(2) + eps^2/(8 log(1/delta))
    row = acc.evaluate(mech)
    assert row.eps_paper_conversion == pytest.approx(1 / math.sqrt(2) + 1 / (8 * math.log(1e5)), rel=1e-12)
    # T-fold composition of identical Gaussians == one Gaussian with z/sqrt(T)
    exact = analytic_gaussian_epsilon(delta, mech.noise_multiplier / math.sqrt(T), 1.0)
    assert row.eps_pld == pytest.approx(exact, abs=2e-3)
    assert exact <= row.eps_rdp <= row.eps_paper_conversion <= eps


def test_p3_online_exact_rho_converts_back_to_eps():
    mech = acc.p3_online(100, 1.0, 1.0, 1.0, 0.01, T1=7)
    rho = mech.rho(1.0)
    assert rho == pytest.approx(cal.p3_rho(1.0, 0.01), rel=1e-12)
    assert acc.zcdp_to_dp(rho, 0.01) == pytest.approx(1.0, rel=1e-12)
    assert acc.epsilon(mech, "rdp") <= 1.0
    approx = acc.p3_online(100, 1.0, 1.0, 1.0, 0.01, T1=7, exact_rho=False)
    assert acc.zcdp_to_dp(approx.rho(1.0), 0.01) > 1.0          # the approximation under-noises


def test_p4_subsampled_events():
    mech = acc.p4_dpsgd(5000, 1000, 1.0, 1.0, 1 / 5000**2, pairwise=False)
    assert mech.sigma_paper**2 == pytest.approx(33.67, rel=1e-3)    # grid beta = 3e-4
    e_rdp, e_pld = acc.epsilon(mech, "rdp"), acc.epsilon(mech, "pld")
    assert 0 < e_pld <= e_rdp < 1.0     # PLD value of an explicit pair <= rigorous RDP bound < claim


def test_report_rows_fields():
    mechs = [acc.single_gaussian(4.0, 1.0, 1.0, 1e-5, name="g"),
             acc.p3_offline(100, 1.0, 0.1, 1.0, 0.01)]
    rows = acc.report(mechs)
    assert [r.algorithm for r in rows] == ["g", "P3 Alg.3 offline"]
    for r in rows:
        assert r.ratio == pytest.approx(r.eps_claimed / r.eps_pld, rel=1e-12)
        assert r.sigma_needed < r.sigma_paper          # both calibrations are conservative here
    assert "eps_pld" in acc.format_rows(rows)
