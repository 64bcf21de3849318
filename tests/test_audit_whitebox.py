"""Audits that come close to the accountant: the every-iterate likelihood ratio, the GDP
estimator, the worst-case designs, the tightness targets and the sanity (noise x0.1) detection."""

import math
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from naive_private import loss_grad
from stabsim.engine.losses import get_loss
from stabsim.privacy.audit_designs import worst_case_design
from stabsim.privacy.audit_gdp import gdp_audit, gdp_epsilon_lower, mu_from_rates
from stabsim.privacy.audit_runner import accountant_epsilon_for, run_audit
from stabsim.privacy.audit_whitebox import path_log_lr
from stabsim.privacy.exact import gdp_epsilon


def _naive_lr(W, w0, eta, sigma, loss, X, y, X1, y1, full_batch):
    """Readable reference: sum over steps of log p_S'(r_t | w_{t-1}) - log p_S(r_t | w_{t-1}), each a
    mixture over every sample (point, or ordered pair i != j) of the data set, no grouping."""
    pairwise = not loss.startswith("point")

    def comps(Xd, yd, w):
        n = len(yd)
        if not pairwise:
            return [loss_grad(loss, w, (Xd[i], yd[i]))[1] for i in range(n)]
        return [loss_grad(loss, w, (Xd[i], yd[i]), (Xd[j], yd[j]))[1] for i in range(n) for j in range(n) if i != j]

    out = []
    for path in W:
        prev, tot = np.asarray(w0, float), 0.0
        for wt in path:
            r = (prev - wt) / eta
            ll = []
            for Xd, yd in ((X1, y1), (X, y)):
                gs = comps(Xd, yd, prev)
                if full_batch:
                    g = np.mean(gs, axis=0)
                    ll.append(-np.sum((r - g) ** 2) / (2 * sigma ** 2))
                else:
                    ll.append(logsumexp([-np.sum((r - g) ** 2) / (2 * sigma ** 2) for g in gs]) - math.log(len(gs)))
            tot += ll[0] - ll[1]
            prev = wt
        out.append(tot)
    return np.array(out)


@pytest.mark.parametrize("alg,loss,full", [("p4_alg1", "point_hinge", False), ("p4_alg2", "auc_hinge", False),
                                           ("p2_alg1", "auc_hinge", True)])
def test_path_lr_matches_naive_mixture(alg, loss, full):
    d = worst_case_design(alg, n=5)
    rng = np.random.default_rng(0)
    X1, y1 = d.X.copy(), d.y.copy()
    k, xk, yk = d.canary
    X1[k], y1[k] = xk, yk
    W = np.cumsum(rng.normal(scale=0.05, size=(3, 6, 2)), axis=1)      # arbitrary paths
    args = dict(eta=0.1, sigma=0.7)
    got = path_log_lr(W, np.zeros(2), lossf=get_loss(loss), X=d.X, y=d.y, X1=X1, y1=y1, full_batch=full, **args)
    ref = _naive_lr(W, np.zeros(2), 0.1, 0.7, loss, d.X, d.y, X1, y1, full)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


def test_p2_path_lr_is_exactly_gaussian_with_the_accountants_mu():
    """P2 on its design: Lambda ~ N(-+mu^2/2, mu^2) with mu = sqrt(T) (4G/n)/sigma (module docstring of
    audit_whitebox); checked against that formula with standard-error tolerances (4 SE)."""
    d = worst_case_design("p2_alg1", n=20, T=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = run_audit("p2_alg1", d.X, d.y, eps=4.0, delta=1e-5, replicates=1000, canary=d.canary,
                        verbose=False, **d.kwargs)
    sigma, n, T, G = rep.calibration["sigma"], 20, 10, 1.0
    mu = math.sqrt(T) * (4 * G / n) / sigma
    s0, s1 = rep.scores
    m = len(s0)
    for s, sign in ((s0, -1), (s1, 1)):
        assert abs(s.mean() - sign * mu ** 2 / 2) < 4 * mu / math.sqrt(m)
        assert abs(s.std() / mu - 1) < 4 / math.sqrt(2 * m)
    # the accountant's (PLD) eps is the exact GDP eps of this mu: the design attains the sensitivity
    assert rep.eps_accountant == pytest.approx(gdp_epsilon(1e-5, mu), rel=1e-3)


def test_gdp_estimator_coverage_and_conversion():
    mu, m = 0.8, 2000
    lows = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        s0, s1 = rng.normal(-mu * mu / 2, mu, m), rng.normal(mu * mu / 2, mu, m)
        g = gdp_audit(s0, s1, delta=1e-5, confidence=0.9, threshold=0.0)
        lows.append(g.mu_lower)
        assert g.eps_lower <= gdp_epsilon(1e-5, g.mu_lower) + 1e-12
    # one-sided 90% bound: misses <= 10% of the time; 40 draws -> allow up to 9 misses (P(Bin(40,.1) > 9) < 0.01)
    assert sum(lo > mu for lo in lows) <= 9
    assert np.mean(lows) > 0.8 * mu                          # and it is not vacuous
    # the optimistic PLD conversion never exceeds the exact value and is within 1e-3 of it
    for v in (0.1, 0.5, 1.0, 3.0):
        assert gdp_epsilon(1e-5, v) - 1e-3 <= gdp_epsilon_lower(v, 1e-5) <= gdp_epsilon(1e-5, v)
    assert mu_from_rates(0.5, 0.5) == 0.0
    with pytest.raises(ValueError, match="finite"):
        gdp_audit([0, 1, np.nan, 2], [1, 2, 3, 4], delta=1e-5)


@pytest.mark.parametrize("alg,n,T,eps,scale", [("p2_alg1", 20, 10, 4.0, 1.0), ("p4_alg1", 20, 400, 30.0, 2.0)])
def test_audit_reaches_half_the_accountant_with_5000_runs(alg, n, T, eps, scale):
    """The tightness target: at accountant eps in [1, 4], 2500 runs on S + 2500 on S' give a lower bound of at
    least half the accountant's eps (the GDP fit; exact for P2, the CLT approximation for P4, where sigma is
    twice the paper's so that the steps are in the CLT regime: at sigma/(2G) < 1 a sampled step is far from
    Gaussian and the fit reaches about 0.45)."""
    d = worst_case_design(alg, n=n, T=T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = run_audit(alg, d.X, d.y, eps=eps, delta=1e-5, replicates=2500, canary=d.canary,
                        noise_scale=scale, verbose=False, **d.kwargs)
    acc = rep.eps_accountant
    assert 1.0 <= acc <= 4.0
    assert rep.eps_lower_gdp >= 0.5 * acc
    assert rep.eps_lower <= acc and rep.eps_lower_gdp <= acc   # and never above it (no false alarm)
    assert not rep.accountant_exceeded


@pytest.mark.parametrize("alg,n,T,eps", [("p2_alg1", 20, 10, 4.0), ("p4_alg1", 100, 500, 10.0),
                                         ("p4_alg2", 100, 500, 10.0)])
def test_noise_scaled_down_is_detected(alg, n, T, eps):
    """noise x0.1 with the same number of runs: the Clopper-Pearson bound exceeds the guarantee of the
    calibrated algorithm (its accountant eps)."""
    d = worst_case_design(alg, n=n, T=T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = run_audit(alg, d.X, d.y, eps=eps, delta=1e-5, replicates=500, canary=d.canary, noise_scale=0.1,
                        verbose=False, **d.kwargs)
    calibrated = accountant_epsilon_for(rep.calibration, 1.0)[0]
    assert rep.eps_lower > calibrated


@pytest.mark.parametrize("alg", ["p0_alg2", "p1_alg3", "p3_onpairstrc", "p3_offpairc"])
def test_output_perturbation_audits_never_exceed_the_accountant(alg):
    """The output-perturbation calibrations rest on a sensitivity bound far above what the design's outputs
    differ by, so noise x0.1 is still not detectably broken (docs/privacy.md, 'Audits'); what must hold is
    that the audit never exceeds the accountant's eps at the noise used."""
    d = worst_case_design(alg, n=50 if not alg.startswith("p3") else 100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = run_audit(alg, d.X, d.y, eps=1.0, delta=1e-2, replicates=300, canary=d.canary, noise_scale=0.1,
                        verbose=False, **d.kwargs)
    assert rep.threat_model == "final_output"
    assert rep.eps_lower <= rep.eps_reference and not rep.accountant_exceeded


def test_every_iterate_refused_where_it_does_not_apply():
    d = worst_case_design("p0_alg2", n=20)
    with pytest.raises(ValueError, match="every_iterate.*not available"):
        run_audit("p0_alg2", d.X, d.y, eps=1.0, delta=1e-5, replicates=10, canary=d.canary,
                  threat_model="every_iterate", verbose=False)
    d = worst_case_design("p4_alg1", n=20)
    with pytest.raises(ValueError, match="constraint"):
        run_audit("p4_alg1", d.X, d.y, eps=10.0, delta=1e-5, replicates=10, canary=d.canary,
                  threat_model="every_iterate", verbose=False, **dict(d.kwargs, constraint="l2:1"))
    with pytest.raises(ValueError, match="unknown private algorithm"):
        worst_case_design("p9_alg1")


def test_cli_worst_case_design_and_exit_status_4_when_the_accountant_is_exceeded(monkeypatch, tmp_path, capsys):
    """`stabsim audit --data worst-case` runs the design; an audit above the accountant's eps at the
    calibrated noise (here: an accountant made to under-state eps) exits with status 4."""
    import json

    from stabsim.privacy import audit_runner as ar
    from stabsim.privacy.audit_cli import main

    args = ["p2_alg1", "--data", "worst-case", "--n", "20", "--T", "10", "--eps", "4", "--delta", "1e-5",
            "--replicates", "400", "--json", str(tmp_path / "a.json")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(args) == 0
        rec = json.loads((tmp_path / "a.json").read_text())
        assert rec["threat_model"] == "every_iterate" and rec["gdp_exact"] and rec["gdp"]["mu_lower"] > 0
        monkeypatch.setattr(ar, "accountant_epsilon_for", lambda record, noise_scale=1.0: (1e-3, 1e-3, "fake"))
        assert main(args) == 4


def test_every_iterate_scores_do_not_depend_on_the_chunking(monkeypatch):
    """The recorded paths are processed in chunks of replicates (memory); each replicate's ratio is its
    own computation, so one replicate per chunk and all of them in one chunk give the same numbers."""
    from stabsim.privacy import audit_runner

    d = worst_case_design("p4_alg1", n=20, T=50)
    args = dict(eps=10.0, delta=1e-5, replicates=np.arange(7), canary=d.canary, **d.kwargs)
    one_chunk = audit_runner.audit_scores("p4_alg1", d.X, d.y, **args)
    default = audit_runner._every_iterate_scores.__defaults__
    monkeypatch.setattr(audit_runner._every_iterate_scores, "__defaults__", (1,))   # chunk_bytes: 1 replicate
    per_replicate = audit_runner.audit_scores("p4_alg1", d.X, d.y, **args)
    assert default == (2 ** 25,) and one_chunk.threat_model == "every_iterate"
    assert np.array_equal(one_chunk.s0, per_replicate.s0) and np.array_equal(one_chunk.s1, per_replicate.s1)
