"""Empirical privacy audits (stabsim.privacy.audit_runner)."""

import numpy as np
import pytest

from stabsim import make_problem
from stabsim.engine.losses import get_loss
from stabsim.privacy import audit_runner as ar
from stabsim.privacy import algorithms as pa


def _worst_case_pointwise(n=200):
    """All examples identical: the other examples' gradients are the same in every run, so only
    the canary separates the output distributions (the tight case for an audit)."""
    return np.tile([1.0, 0.0], (n, 1)), np.ones(n)


P4_AUDIT = dict(loss="point_logistic", T=200, eta=0.05, eps=2.0, delta=1e-3, replicates=3000,
                seed=1)


def test_broken_privacy_is_detected(capsys):
    X, y = _worst_case_pointwise()
    with pytest.warns(ar.PrivacyViolationWarning, match="PRIVACY VIOLATION FOUND"):
        rep = ar.run_audit("p4_alg1", X, y, noise_scale=0.01, **P4_AUDIT)
    assert rep.violation and rep.eps_lower > rep.eps_claimed == 2.0
    assert "PRIVACY VIOLATION FOUND" in capsys.readouterr().out
    assert rep.calibration["independent_noise"] is True
    assert rep.calibration["noise_scale"] == 0.01 and rep.calibration["as_in_paper"] is False
    # the accountant agrees that sigma/100 is far from (2, 1e-3)-DP
    assert rep.eps_accountant_rdp > 100
    assert rep.eps_lower <= rep.eps_accountant_rdp


def test_correct_noise_passes():
    X, y = _worst_case_pointwise()
    rep = ar.run_audit("p4_alg1", X, y, **P4_AUDIT)
    assert not rep.violation and rep.eps_lower <= rep.eps_claimed
    assert not rep.accountant_exceeded
    assert rep.eps_accountant is not None and rep.eps_accountant <= rep.eps_claimed
    assert rep.eps_lower <= rep.eps_accountant_rdp
    assert rep.calibration["as_in_paper"] is True
    assert "eps_lower" in rep.summary()


def test_auc_canary_design():
    X, y = make_problem("auc_separable", d=4).sample(60, 0)
    can = ar.make_canary(X, y, "auc_hinge")
    m = X[y == 1].mean(0) - X[y == -1].mean(0)
    kappa = np.linalg.norm(X, axis=1).max()
    np.testing.assert_allclose(can.x, -kappa * m / np.linalg.norm(m))
    assert can.y == 1.0 and y[can.k] == 1.0
    assert can.k == np.flatnonzero(y == 1)[np.argmax(X[y == 1] @ m)]
    # restricted positions (P1 Alg. 3 block S_1, P3's first GIGA step)
    can2 = ar.make_canary(X, y, "auc_hinge", allowed=np.arange(10))
    assert can2.k < 10
    # the a-priori direction (one SGD step from 0: output(S') - output(S)) points against m
    from stabsim.privacy.audit_canary import _direction
    v, _ = _direction(get_loss("auc_hinge"), X, y, can)
    assert v @ m < 0


def test_pointwise_canary_flips_label():
    X, y = make_problem("p4_logistic").sample(100, 0)
    can = ar.make_canary(X, y, "point_logistic")
    m = (y[:, None] * X).mean(0)
    assert can.y == -1.0 and np.linalg.norm(can.x) == pytest.approx(np.linalg.norm(X, axis=1).max())
    assert can.x @ m > 0
    flip = ar.make_canary(X, y, "point_logistic", kind="flip")
    assert flip.y == -y[flip.k] and np.all(flip.x == X[flip.k])


def test_audit_with_identical_datasets_finds_nothing():
    # S' = S (the "canary" is z_k itself): independent noise, identical output distributions
    X, y = make_problem("auc_separable", d=3).sample(30, 0)
    rep = ar.run_audit("p3_offpairstrc", X, y, canary=(5, X[5], y[5]), eps=1.0, delta=1 / 30,
                       replicates=400, seed=3, alpha=1.0, T1=8, verbose=False)
    assert rep.eps_lower <= 1.0 and not rep.violation
    assert rep.calibration["T1"] == 8 and rep.calibration["T1_as_in_paper"] is False


def test_p0_audit_small(capsys):
    X, y = make_problem("auc_separable", d=3).sample(20, 0)
    rep = ar.run_audit("p0_alg2", X, y, eps=1.0, delta=1e-3, replicates=400, seed=0, T=10,
                       eta=0.1)
    assert not rep.violation and rep.eps_accountant is not None
    assert "audit p0_alg2" in capsys.readouterr().out


def test_run_audit_argument_checks():
    X, y = _worst_case_pointwise(50)
    with pytest.raises(ValueError, match="independent_noise"):
        ar.run_audit("p4_alg1", X, y, eps=1.0, delta=1e-3, independent_noise=False)
    with pytest.raises(ValueError, match="eps"):
        ar.run_audit("p4_alg1", X, y, eps=0.0, delta=1e-3)
    with pytest.raises(ValueError, match="delta"):
        ar.run_audit("p4_alg1", X, y, eps=1.0, delta=2.0)
    with pytest.raises(ValueError, match="unknown private algorithm"):
        ar.run_audit("p9", X, y, eps=1.0, delta=1e-3)
    with pytest.raises(ValueError, match="statistic"):
        ar.statistic_scores("median", get_loss("point_logistic"), X, y,
                            ar.make_canary(X, y, "point_logistic"), X[:3], X[:3])


def test_p3_canary_sits_at_first_giga_step():
    X, y = make_problem("auc_separable", d=3).sample(40, 0)
    rep = ar.run_audit("p3_onpairstrc", X, y, eps=1.0, delta=1 / 40, replicates=100, seed=0,
                       alpha=1.0, T1=10, verbose=False, accountant=False)
    assert rep.canary["k"] == 10          # data index T_1 = position T_1 + 1
    assert rep.eps_accountant is None


def test_cli_audit_flags_broken_privacy_and_passes_correct_noise(tmp_path):
    """`stabsim audit` front end: exit 3 (violation) with noise 100x too small, 0 with the calibrated noise."""
    import json

    from stabsim.privacy.audit_cli import main

    common = ["p4_alg1", "--eps", "2", "--loss", "point_logistic", "--T", "200", "--eta", "0.05",
              "--replicates", "1000", "--n", "200", "--seed", "3"]
    out = tmp_path / "broken.json"
    assert main(common + ["--noise-scale", "0.01", "--json", str(out)]) == 3
    assert json.loads(out.read_text())["eps_lower"] > 2
    assert main(common) == 0
    assert main(["p9_alg", "--eps", "1"]) == 2
