"""The audits' and the ledger's accounting remembered within a process: the same numbers
as computing afresh, each mechanism (or search point) computed once, the record -> mechanism mapping
unchanged."""

import math

import pytest

from stabsim.privacy import accountant as acc
from stabsim.privacy import audit_gdp
from stabsim.privacy import audit_runner as ar

RECORDS = {
    "p0_alg2": dict(algorithm="p0_alg2", eps=1.0, delta=1e-3, T=400, n=20, eta=20 ** -1.5, G=1.0,
                    reading="corrected"),
    "p1_alg3": dict(algorithm="p1_alg3", eps=1.0, delta=1e-3, n=40, eta=0.05, G=1.0),
    "p2_alg1": dict(algorithm="p2_alg1", eps=4.0, delta=1e-5, T=10, n=20, G=1.0),
    "p3_online": dict(algorithm="p3_onpairc", eps=1.0, delta=1e-2, online=True, n=50, G_tilde=2.0, alpha=0.1,
                      T1=5, exact_rho=True),
    "p3_offline": dict(algorithm="p3_offpairc", eps=1.0, delta=1e-2, online=False, n=50, G_tilde=2.0, alpha=0.1),
    "p4_alg1": dict(algorithm="p4_alg1", eps=8.0, delta=1e-5, n=20, T=40, G=1.0, pairwise=False,
                    sigma_paper=3.0),
}


def _direct(record):
    """The mapping as documented (mechanism_for's docstring and the accountant's constructors)."""
    a, eps, delta = record["algorithm"], record["eps"], record["delta"]
    if a == "p0_alg2":
        return acc.p0_output_perturbation(record["T"], record["n"], record["eta"], record["G"], eps, delta,
                                          record["reading"])
    if a == "p1_alg3":
        return acc.p1_alg3(record["n"], record["eta"], record["G"], eps, delta)
    if a == "p2_alg1":
        return acc.p2_gradient_perturbation(record["T"], record["n"], record["G"], eps, delta)
    if record.get("online"):
        return acc.p3_online(record["n"], record["G_tilde"], record["alpha"], eps, delta, record["T1"],
                             record["exact_rho"])
    if a.startswith("p3_"):
        return acc.p3_offline(record["n"], record["G_tilde"], record["alpha"], eps, delta)
    return acc.p4_dpsgd(record["n"], record["T"], record["G"], eps, delta, pairwise=record["pairwise"],
                        sigma2=record["sigma_paper"] ** 2)


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_mechanism_for_builds_the_documented_mechanism(name):
    rec = RECORDS[name]
    got, want = ar.mechanism_for(rec), _direct(rec)
    assert repr(got) == repr(want)
    for scale in (1.0, 0.5):
        for which in ("rdp", "pld"):
            assert acc.epsilon(got, which, scale) == acc.epsilon(want, which, scale)


def test_accountant_epsilon_is_computed_once_per_mechanism_and_noise(monkeypatch):
    rec = RECORDS["p2_alg1"]
    monkeypatch.setattr(ar, "_EPSILON_MEMO", {})
    fresh = ar._accountant_epsilon(_direct(rec), 1.0, 50.0)
    calls = []
    real = acc.epsilon
    monkeypatch.setattr(acc, "epsilon", lambda *a, **k: calls.append(a) or real(*a, **k))
    first = ar.accountant_epsilon_for(dict(rec))
    assert first == fresh and len(calls) == 2          # rdp and pld, once
    assert ar.accountant_epsilon_for(dict(rec), 1.0) == fresh and len(calls) == 2
    other = ar.accountant_epsilon_for(dict(rec), 0.5)  # another noise scale is another mechanism
    assert len(calls) == 4 and other[0] > fresh[0]
    assert ar.accountant_epsilon_for(dict(rec, eps=2.0)) != fresh and len(calls) == 6   # another calibration


def test_gdp_epsilon_lower_remembers_the_pld_value():
    from dp_accounting.pld import privacy_loss_distribution as pld

    audit_gdp._pld_epsilon_lower.cache_clear()
    for mu in (0.7, 1.9):
        dist = pld.from_gaussian_mechanism(standard_deviation=1.0 / mu, sensitivity=1.0, pessimistic_estimate=False,
                                           use_connect_dots=False, value_discretization_interval=1e-4)
        want = max(0.0, float(dist.get_epsilon_for_delta(1e-5)))
        assert audit_gdp.gdp_epsilon_lower(mu, 1e-5) == want == audit_gdp.gdp_epsilon_lower(mu, 1e-5)
    info = audit_gdp._pld_epsilon_lower.cache_info()
    assert (info.misses, info.hits) == (2, 2)
    assert audit_gdp.gdp_epsilon_lower(0.0, 1e-5) == 0.0 and math.isfinite(audit_gdp.gdp_epsilon_lower(1e9, 1e-5))


def test_sigma_needed_evaluates_each_coarse_point_once(monkeypatch):
    """brentq starts by evaluating the bracket's ends, which the bracketing loops have just evaluated:
    remembered, so each (scale, discretisation) is accounted once, and the sigma found has eps <= target."""
    from stabsim.privacy import ledger

    mech = ledger.p4_dpsgd(500, 100, 4.0)
    assert mech.subsampled
    seen = []
    real = ledger.account
    monkeypatch.setattr(ledger, "account", lambda m, scale=1.0, **kw: seen.append((scale, kw.get("coarsen")))
                        or real(m, scale, **kw))
    need = ledger.sigma_needed(mech)
    assert len(seen) == len(set(seen)) >= 5
    monkeypatch.setattr(ledger, "account", real)
    eps = ledger.account(mech, need / mech.sigma, rdp=False, refine=False).eps
    assert eps == pytest.approx(mech.eps_target, rel=1e-3)
