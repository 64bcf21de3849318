"""Subsampled-Gaussian family fit (stabsim.privacy.audit_family) and the audit CLI defaults."""

import json

import numpy as np
import pytest

from stabsim.engine.losses import get_loss
from stabsim.privacy.audit_designs import worst_case_design
from stabsim.privacy.audit_family import (StepMixture, _lam, family_fit, family_means,
                                          poisson_gaussian_epsilon, step_mixture)

Q, T, Z_REC = 0.005, 200, 0.56          # P4 Alg. 1's worst-case design at n = T = 200, noise scale 0.4
A = 1.0 / (2 * Z_REC)                   # gradient -e1 over sigma_rec = 2 G z_rec, G = 1


def _mixture():
    return StepMixture(np.array([A]), np.array([1.0]), np.array([-A, A]), np.array([Q, 1 - Q]), T, Q, Z_REC)


def _simulate(m, rho, R, seed):
    """Path log-likelihood ratios (computed with the *recorded* sigma) of R runs on S and on S' whose
    steps actually carry noise rho * sigma_rec: the family of the module docstring, sampled directly."""
    rng = np.random.default_rng(seed)
    u0 = m.a[0] + rho * rng.standard_normal((R, m.T))
    hit = rng.random((R, m.T)) < m.p1[0]
    u1 = np.where(hit, m.a1[0], m.a1[1]) + rho * rng.standard_normal((R, m.T))
    lam = lambda u: _lam(u.ravel(), m).reshape(u.shape).sum(axis=1)  # noqa: E731
    return lam(u0), lam(u1)


def test_family_means_match_simulation():
    m = _mixture()
    s0, s1 = _simulate(m, 1.0, 4000, seed=1)
    p0, p1 = family_means(m, 1.0)
    se0, se1 = s0.std() / np.sqrt(len(s0)), s1.std() / np.sqrt(len(s1))
    assert abs(s0.mean() - p0[0]) < 4 * se0
    assert abs(s1.mean() - p1[0]) < 4 * se1


def test_honest_mechanism_bound_stays_below_truth():
    """rho = 1 (the record is honest): the bound exceeds the family's true eps only with probability
    <= 1 - confidence = 0.05 per seed; over 6 fixed seeds allow one miss (P(>= 2 misses) ~ 3 %)."""
    m = _mixture()
    truth = poisson_gaussian_epsilon(Z_REC, Q, T, 1e-3)
    fits = [family_fit(*_simulate(m, 1.0, 3000, seed), m, delta=1e-3) for seed in range(6)]
    misses = sum(f.eps_lower is not None and f.eps_lower > truth for f in fits)
    assert misses <= 1
    assert all(f.eps_lower is not None for f in fits[1:]) or misses == 0   # the family is not rejected wholesale
    assert sum(f.rho_min <= 1.0 <= f.rho_max for f in fits if f.rho_max is not None) >= 5


def test_planted_under_noised_mechanism_is_flagged():
    """Noise x 0.5 while the record claims the calibrated sigma: the fit's bound exceeds the eps the
    record claims (the family's eps at rho = 1), i.e. the under-noising is detected."""
    m = _mixture()
    claimed = poisson_gaussian_epsilon(Z_REC, Q, T, 1e-3)
    f = family_fit(*_simulate(m, 0.5, 3000, seed=7), m, delta=1e-3)
    assert f.rho_max is not None and f.rho_max < 1.0
    assert f.eps_lower > claimed


def test_family_fit_rejects_inconsistent_canary():
    """A canary that acts less than the family says (S' sampled as S): the joint set is empty."""
    m = _mixture()
    s0, _ = _simulate(m, 1.0, 3000, seed=3)
    s0b, _ = _simulate(m, 1.0, 3000, seed=4)
    f = family_fit(s0, s0b, m, delta=1e-3)
    assert f.eps_lower is None and f.rho_max is None


def test_family_fit_bad_input():
    m = _mixture()
    with pytest.raises(ValueError, match="at least 30 finite"):
        family_fit(np.zeros(5), np.zeros(5), m, delta=1e-3)
    with pytest.raises(ValueError, match="rho_range"):
        family_fit(np.zeros(40), np.ones(40), m, delta=1e-3, rho_range=(2.0, 1.0))


def test_step_mixture_of_worst_case_design():
    d = worst_case_design("p4_alg1", n=200)
    k, xk, yk = d.canary
    X1, y1 = d.X.copy(), d.y.copy()
    X1[k], y1[k] = xk, yk
    m = step_mixture(d.X, d.y, X1, y1, get_loss("point_hinge"), np.zeros(2), sigma=2.0, T=200, G=1.0)
    assert m.q == pytest.approx(1 / 200) and m.z_rec == pytest.approx(1.0)
    np.testing.assert_allclose(sorted(m.a1), [-0.5, 0.5])      # gradients -+e1 over sigma = 2
    with pytest.raises(ValueError, match="pointwise"):
        step_mixture(d.X, d.y, X1, y1, get_loss("auc_hinge"), np.zeros(2), 2.0, 200, 1.0)


def test_runner_p4_alg1_family_fit_and_planted_noise():
    """Through run_audit on the worst-case design: at noise scale 1 the fit stays below the accountant,
    at a planted noise scale 0.5 it exceeds the accountant's eps of the calibrated (claimed) noise."""
    from stabsim.privacy.audit_runner import accountant_epsilon_for, run_audit

    d = worst_case_design("p4_alg1", n=100)
    reps = {}
    for ns in (1.0, 0.5):
        reps[ns] = run_audit("p4_alg1", d.X, d.y, eps=2.0, delta=1e-3, replicates=2000, seed=11, canary=d.canary,
                             noise_scale=ns, verbose=False, **d.kwargs)
    honest, planted = reps[1.0], reps[0.5]
    assert honest.family is not None and "subsampled-Gaussian" in honest.family["assumption"]
    assert honest.eps_lower_family is not None and honest.eps_lower_family <= honest.eps_accountant
    claimed_pld, _, _ = accountant_epsilon_for(planted.calibration, 1.0)
    assert planted.eps_lower_family > claimed_pld
    assert planted.eps_lower <= planted.eps_lower_family + 1.0   # Clopper-Pearson is still reported beside it
    assert "eps_lower" in planted.summary() and "family fit" in planted.summary()


def test_cli_defaults_to_worst_case_and_reports_family(tmp_path):
    from stabsim.privacy.audit_cli import build_parser, main

    assert build_parser().parse_args(["p4_alg1", "--eps", "2"]).data == "worst-case"
    out = tmp_path / "r.json"
    rc = main(["p4_alg1", "--eps", "2", "--noise-scale", "0.4", "--replicates", "1000", "--n", "100",
               "--json", str(out)])
    assert rc == 0
    d = json.loads(out.read_text())
    assert d["eps_lower_family"] is not None and d["family_assumption"].startswith("subsampled-Gaussian")
    assert d["eps_lower_family"] >= 0.5 * d["eps_accountant_pld"]
    assert d["eps_lower_family"] <= d["eps_accountant_pld"]


def test_canary_copies_refused_where_the_canary_changes_nothing(capsys):
    from stabsim.privacy.audit_cli import _check_canary_copies

    X = np.tile([1.0, 0.0], (20, 1))
    with pytest.raises(ValueError, match="no pair of opposite labels"):
        _check_canary_copies("p4_alg2", X, np.ones(20), "auc_hinge")
    _check_canary_copies("p4_alg1", X, np.ones(20), "point_hinge")   # pointwise flip changes the gradient
