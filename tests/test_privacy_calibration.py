"""Calibration formulas of the five papers at hand-computed points (stabsim.privacy.calibration)."""

import math

import pytest

from stabsim.privacy import InfeasiblePrivacyParameters
from stabsim.privacy import calibration as cal

REL = 1e-12


# ----------------------------------------------------------------------------- P0
def test_p0_sigma2_printed_and_corrected():
    T, n, eta, G, eps, delta = 100, 10, 0.1, 2.0, 0.5, 1e-3
    printed = (8 * 0.1**2 * 2.0**2 * math.log(2.5 / 1e-3) / 0.5**2
               * (100 + 3 * 100**2 * math.log(math.e * 100) ** 2 * math.log(2 / 1e-3) ** 2 / 10**2))
    assert cal.p0_sigma2(T, n, eta, G, eps, delta, reading="printed") == pytest.approx(printed, rel=REL)
    assert cal.p0_sigma2(T, n, eta, G, eps, delta) == pytest.approx(math.e * printed, rel=REL)


def test_p0_errata_practical_warning():
    # errata P0-E2 example: n=1000, delta=1e-5, eps=1, G=1, T=n^2, eta=n^-1.5 -> sigma ~ 99 / ~163
    args = (1000**2, 1000, 1000**-1.5, 1.0, 1.0, 1e-5)
    assert math.sqrt(cal.p0_sigma2(*args, reading="printed")) == pytest.approx(99, rel=0.01)
    assert math.sqrt(cal.p0_sigma2(*args)) == pytest.approx(163, rel=0.01)


def test_p0_sensitivity_eq9_is_what_eq5_calibrates_to():
    T, n, eta, G, eps, delta = 5000, 1000, 0.01, 1.5, 0.7, 1e-4
    sens = cal.p0_sensitivity_eq9(T, n, eta, G, delta / 2)
    by_hand = math.sqrt(4 * math.e * 0.01**2 * 1.5**2 * (5000 + 3 * 5000**2 * math.log(math.e * 5000) ** 2
                                                          * math.log(2 / 1e-4) ** 2 / 1000**2))
    assert sens == pytest.approx(by_hand, rel=REL)
    # corrected Eq. (5) == Gaussian mechanism at delta/2: 2 ln(2.5/delta) Delta_T^2 / eps^2
    assert cal.p0_sigma2(T, n, eta, G, eps, delta) == pytest.approx(
        2 * math.log(2.5 / delta) * sens**2 / eps**2, rel=1e-12)


# ----------------------------------------------------------------------------- P1
def test_p1_alg3_schedule_floor():
    s = cal.p1_alg3_schedule(10, 1.0, 2.0, 0.5, 0.01)
    l4 = math.log(400.0)
    assert s.K == 4                                       # ceil(log2 10)
    assert s.n_k == (5, 2, 1, 0)
    assert s.eta_k == (1 / 4, 1 / 16, 1 / 64, 1 / 256)
    assert s.steps_k == (30, 12, 6, 0)                    # ceil(5*5.991), ceil(2*5.991), ...
    for k, sig in enumerate(s.sigma_k, start=1):
        assert sig == pytest.approx(12 * 2.0 * 4.0**-k * l4 * math.sqrt(2 * math.log(250.0)) / 0.5, rel=REL)
    assert s.degenerate == (3, 4)
    assert [p.k for p in s.active] == [1, 2]
    assert s.total_steps == 42
    assert "skipped" in s.policy


def test_p1_alg3_schedule_paper_sizes_and_K():
    s = cal.p1_alg3_schedule(10, 1.0, 1.0, 1.0, 0.01, phase_sizes="paper")
    assert s.n_k == (5.0, 2.5, 1.25, 0.625)
    assert s.steps_k == (30, 15, 8, 4)                    # ceil(2.5*5.991)=15, ceil(1.25*5.991)=8
    assert s.degenerate == (3, 4)
    assert cal.p1_alg3_schedule(1024, 1.0, 1.0, 1.0, 0.01).K == 10
    assert cal.p1_alg3_schedule(1025, 1.0, 1.0, 1.0, 0.01).K == 11
    assert cal.p1_alg3_schedule(5000, 1.0, 1.0, 1.0, 0.01).K == 13


def test_p1_thm10_eta_readings():
    n, G, D, d, eps, delta = 10**8, 2.0, 3.0, 5, 1.0, 1e-3
    l4 = math.log(4000.0)
    second = 1.0 / (12 * l4 * math.sqrt(2 * 5 * math.log(2500.0)))
    assert cal.p1_thm10_eta(n, G, D, d, eps, delta) == pytest.approx(1.5 * min(l4 / 1e4, second), rel=REL)
    assert cal.p1_thm10_eta(n, G, D, d, eps, delta, reading="corrected") == pytest.approx(
        1.5 / (1e4 * l4), rel=REL)
    with pytest.raises(InfeasiblePrivacyParameters, match="2/L"):
        cal.p1_thm10_eta(100, G, D, d, eps, delta, reading="corrected", L=2000.0)


# ----------------------------------------------------------------------------- P2
def test_p2_sigma():
    assert cal.p2_sigma(10, 1000, 1.0, 1.0, 1e-5) == pytest.approx(8 * math.sqrt(10 * math.log(1e5)) / 1000, rel=REL)
    assert cal.p2_sigma(4, 50, 3.0, 0.5, 0.01) == pytest.approx(8 * 3 * math.sqrt(4 * math.log(100)) / (50 * 0.5), rel=REL)
    assert cal.p2_sensitivity(50, 3.0) == pytest.approx(12 / 50, rel=REL)


# ----------------------------------------------------------------------------- P3
def test_p3_rho():
    exact = (math.sqrt(math.log(100) + 1) - math.sqrt(math.log(100))) ** 2
    assert cal.p3_rho(1.0, 0.01) == pytest.approx(exact, rel=REL)
    assert cal.p3_rho(1.0, 0.01, exact=False) == pytest.approx(1 / (4 * math.log(100)), rel=REL)
    rho = cal.p3_rho(2.5, 1 / 40)   # solves rho + 2 sqrt(rho log(1/delta)) = eps
    assert rho + 2 * math.sqrt(rho * math.log(40)) == pytest.approx(2.5, rel=1e-12)
    # errata P3-E2: at n=40, delta=1/n, eps=2.5 exact rho is ~0.76x the approximation
    assert rho / cal.p3_rho(2.5, 1 / 40, exact=False) == pytest.approx(0.76, abs=0.01)


def test_p3_T1_eta_sigma2():
    assert cal.p3_T1(1.0, 0.5) == 64
    assert cal.p3_T1(1.0, 0.3) == 178          # ceil(177.78)
    assert cal.p3_T1(1.0, 3.0) == 7            # max(ceil(1.78), 7)
    assert cal.p3_eta(5, 0.5) == pytest.approx((4 / 3) * 2 / (0.5 * 5), rel=REL)
    with pytest.raises(ValueError, match="t=2"):
        cal.p3_eta(2, 0.5)
    assert cal.p3_sigma2_online(10, 100, 7, 2.0, 0.5, 0.05) == pytest.approx(32 * 4 * 93 / (0.25 * 100 * 0.05), rel=REL)
    with pytest.raises(ValueError, match="T1 < t <= n"):
        cal.p3_sigma2_online(7, 100, 7, 2.0, 0.5, 0.05)
    assert cal.p3_sigma2_offline(100, 2.0, 0.5, 1.0, 0.01) == pytest.approx(
        128 * 4 * math.log(100) ** 2 * math.log(125) / (0.25 * 100**2), rel=REL)
    assert cal.p3_sensitivity(10, 2.0, 0.5) == pytest.approx(8 * 2 / 5, rel=REL)
    assert cal.p3_convex_surrogate(1.0, 2.0, 0.1, 2.0) == pytest.approx((1.2, 2.1), rel=REL)


def test_p3_burnin_infeasible_and_override():
    with pytest.raises(InfeasiblePrivacyParameters) as ei:
        cal.p3_check_burnin(100, 4.0, 1e-3)     # the paper's lambda = alpha = 1e-3: T_1 = 2.56e8
    msg = str(ei.value)
    assert "256000000" in msg and "n = 100" in msg and "alpha" in msg and "T1=" in msg
    ok = cal.p3_check_burnin(100, 1.0, 2.0)
    assert ok.T1 == 7 and ok.as_in_paper
    ov = cal.p3_check_burnin(100, 4.0, 1e-3, T1=7)
    assert ov.T1 == 7 and not ov.as_in_paper and "not as in paper" in ov.note
    with pytest.raises(ValueError):
        cal.p3_check_burnin(100, 4.0, 1e-3, T1=100)


# ----------------------------------------------------------------------------- P4
def test_p4_lambda_sigma2_margins():
    lam = math.log(1e4) / (0.9 * 2) + 1
    assert cal.p4_lambda(0.1, 2.0, 1e-4) == pytest.approx(lam, rel=REL)
    assert cal.p4_sigma2(0.1, 2.0, 1e-4, 100, 50, 3.0, False) == pytest.approx(14 * 9 * 50 * lam / (0.1 * 100**2 * 2), rel=REL)
    assert cal.p4_sigma2(0.1, 2.0, 1e-4, 100, 50, 3.0, True) == pytest.approx(56 * 9 * 50 * lam / (0.1 * 100**2 * 2), rel=REL)
    # margins at the table's setting, by hand
    n, T, d, eps, beta = 5000, 1000, 1 / 5000**2, 0.5, 2e-4
    lam = math.log(5000**2) / ((1 - beta) * eps) + 1
    s = 14 * T * lam / (beta * n**2 * eps)
    m1, m2 = cal.p4_condition_margins(beta, eps, d, n, T, False)
    assert m1 == pytest.approx(s - 2.68, rel=1e-12)
    assert m2 == pytest.approx(s / 6 * math.log(n / (lam * (1 + s / 4))) - (lam - 1), rel=1e-12)
    assert cal.p4_feasible(2e-4, eps, d, n, T, False)
    assert not cal.p4_feasible(1e-4, eps, d, n, T, False)      # below the interval [1.68e-4, 2.11e-4]
    assert not cal.p4_feasible(2e-4, eps, d, n, T, True)       # pairwise eps=0.5 is infeasible


# errata P4-A feasibility table (n=5000, T=1000, delta=1/n^2, pointwise, continuous beta).
# The table gives 3 significant digits: rounding error <= 0.5 unit of the 3rd digit, i.e. a
# relative error <= 0.005/1.00 = 0.5%; we test with rel=5e-3.
TABLE = [(0.5, 186), (1, 29.1), (2, 10.2), (3, 5.97), (4, 4.16), (5, 3.17), (5.5, 2.83)]
N, TT, DELTA = 5000, 1000, 1 / 5000**2


@pytest.mark.parametrize("eps, s_min", TABLE)
def test_p4_beta_search_continuous_reproduces_table(eps, s_min):
    r = cal.p4_beta_search(eps, DELTA, N, TT, 1.0, False, continuous=True)
    assert r.sigma2_over_G2 == pytest.approx(s_min, rel=5e-3)
    assert r.method == "continuous" and r.grid_step is None
    assert cal.p4_feasible(r.beta * (1 - 1e-9), eps, DELTA, N, TT, False)


def test_p4_beta_search_continuous_intervals():
    r = cal.p4_beta_search(0.5, DELTA, N, TT, 1.0, False, continuous=True)
    (a, b), = r.feasible_intervals
    assert a == pytest.approx(1.68e-4, rel=5e-3) and b == pytest.approx(2.11e-4, rel=5e-3)
    r = cal.p4_beta_search(1.0, DELTA, N, TT, 1.0, False, continuous=True, lo=1e-9)
    (a, b), = r.feasible_intervals
    assert a == pytest.approx(1.0e-5, rel=2e-2) and b == pytest.approx(3.5e-4, rel=2e-2)


def test_p4_beta_search_grid_examples():
    r = cal.p4_beta_search(0.5, DELTA, N, TT, 1.0, False)
    assert r.beta == pytest.approx(2e-4, rel=1e-9) and r.sigma2_over_G2 == pytest.approx(196, rel=5e-3)
    assert r.grid_step == 1e-4 and r.n_feasible == 1 and r.method == "grid"
    r = cal.p4_beta_search(1.0, DELTA, N, TT, 2.0, False)
    assert r.beta == pytest.approx(3e-4, rel=1e-9) and r.sigma2_over_G2 == pytest.approx(33.7, rel=5e-3)
    assert r.sigma2 == pytest.approx(4 * r.sigma2_over_G2, rel=1e-12)   # sigma^2 scales with G^2
    assert r.n_feasible == 3


@pytest.mark.parametrize("continuous", [False, True])
def test_p4_pairwise_eps_half_infeasible(continuous):
    with pytest.raises(InfeasiblePrivacyParameters) as ei:
        cal.p4_beta_search(0.5, DELTA, N, TT, 1.0, True, continuous=continuous)
    msg = str(ei.value)
    for part in ("eps=0.5", "n=5000", "T=1000", "delta=4e-08", "smallest feasible eps"):
        assert part in msg


# ----------------------------------------------------------------------------- validation
BAD = [
    (cal.p0_sigma2, dict(T=10, n=5, eta=0.1, G=1, eps=0.0, delta=0.1), "eps"),
    (cal.p0_sigma2, dict(T=10, n=5, eta=0.1, G=1, eps=1, delta=1.0), "delta"),
    (cal.p0_sigma2, dict(T=10, n=1, eta=0.1, G=1, eps=1, delta=0.1), "n"),
    (cal.p0_sigma2, dict(T=0, n=5, eta=0.1, G=1, eps=1, delta=0.1), "T"),
    (cal.p0_sigma2, dict(T=10, n=5, eta=0.1, G=0, eps=1, delta=0.1), "G"),
    (cal.p0_sigma2, dict(T=10, n=5, eta=-1, G=1, eps=1, delta=0.1), "eta"),
    (cal.p1_alg3_schedule, dict(n=10, eta=0, G=1, eps=1, delta=0.1), "eta"),
    (cal.p1_alg3_schedule, dict(n=10, eta=1, G=1, eps=1, delta=0.0), "delta"),
    (cal.p2_sigma, dict(T=10, n=5, G=-2, eps=1, delta=0.1), "G"),
    (cal.p2_sigma, dict(T=10, n=2.5, G=1, eps=1, delta=0.1), "n"),
    (cal.p3_rho, dict(eps=-1, delta=0.1), "eps"),
    (cal.p3_sigma2_offline, dict(n=1, G=1, alpha=1, eps=1, delta=0.1), "n"),
    (cal.p4_sigma2, dict(beta=0.1, eps=1, delta=0.1, n=100, T=0, G=1, pairwise=False), "T"),
    (cal.p4_beta_search, dict(eps=1, delta=1.5, n=100, T=10, G=1, pairwise=False), "delta"),
]


@pytest.mark.parametrize("fn, kwargs, arg", BAD)
def test_invalid_arguments_raise_naming_argument(fn, kwargs, arg):
    with pytest.raises(ValueError) as ei:
        fn(**kwargs)
    assert not isinstance(ei.value, InfeasiblePrivacyParameters)
    msg = str(ei.value)
    assert msg.startswith(f"{arg}={kwargs[arg]!r}") and "must be" in msg


def test_infeasible_is_a_value_error():
    assert issubclass(InfeasiblePrivacyParameters, ValueError)


# ----------------------------------------------------------------------------- properties
from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(beta=st.floats(1e-5, 0.99), eps=st.floats(0.05, 10), G=st.floats(0.01, 100),
       pairwise=st.booleans())
def test_p4_feasibility_depends_on_sigma2_over_G2_only(beta, eps, G, pairwise):
    s = cal.p4_sigma2(beta, eps, 1e-6, 2000, 500, G, pairwise) / G**2
    assert s == pytest.approx(cal.p4_sigma2(beta, eps, 1e-6, 2000, 500, 1.0, pairwise), rel=1e-12)
    assert cal.p4_sigma2(beta, eps, 1e-6, 2000, 500, 1.0, True) == pytest.approx(
        4 * cal.p4_sigma2(beta, eps, 1e-6, 2000, 500, 1.0, False), rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(eps=st.floats(1e-3, 20), delta=st.floats(1e-12, 0.5))
def test_p3_exact_rho_inverts_lemma3(eps, delta):
    rho = cal.p3_rho(eps, delta)
    assert rho + 2 * math.sqrt(rho * math.log(1 / delta)) == pytest.approx(eps, rel=1e-9)
    assert rho <= cal.p3_rho(eps, delta, exact=False)
