"""The vectorised subsampled-Gaussian PLD is dp_accounting's own, bit for bit.

The reference is dp_accounting's ``from_gaussian_mechanism`` (the scalar loop it replaces), not
numbers copied from our output: every grid value of delta(eps), every pmf entry and the composed
eps must be *equal* (same ufuncs in the same order), not merely close.
"""

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pldm
from dp_accounting.pld import privacy_loss_mechanism as plm

from stabsim.privacy import pld_gaussian
from stabsim.privacy.exact import pld_subsampled_epsilon
from stabsim.privacy.pld_gaussian import VectorGaussianPrivacyLoss, gaussian_pld

CASES = [(7.0, 2e-4, 1e-4), (1.0, 0.01, 1e-3), (0.9, 4e-4, 2e-4), (3.3, 0.3, 1e-3), (0.5, 0.999, 1e-3),
         (1.0, 1.0, 1e-3), (0.4, 1.0, 1e-4)]


def _pmf_state(pmf):
    state = dict(vars(pmf))
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in state.items()}


@pytest.mark.parametrize("sd, q, interval", CASES)
@pytest.mark.parametrize("pessimistic", [True, False])
def test_same_pld_as_dp_accounting(sd, q, interval, pessimistic):
    ref = pldm.from_gaussian_mechanism(sd, value_discretization_interval=interval, sampling_prob=q,
                                       pessimistic_estimate=pessimistic, use_connect_dots=pessimistic)
    ours = gaussian_pld(sd, q, interval, pessimistic)
    assert _pmf_state(ours._pmf_remove) == _pmf_state(ref._pmf_remove)
    assert _pmf_state(ours._pmf_add) == _pmf_state(ref._pmf_add)
    assert (ours._pmf_add is ours._pmf_remove) == (ref._pmf_add is ref._pmf_remove)   # symmetric when q = 1
    composed_ref, composed = ref.self_compose(50), ours.self_compose(50)
    for delta in (1e-3, 1e-6):
        assert composed.get_epsilon_for_delta(delta) == composed_ref.get_epsilon_for_delta(delta)


@pytest.mark.parametrize("adjacency", [plm.AdjacencyType.ADD, plm.AdjacencyType.REMOVE])
@pytest.mark.parametrize("sd, q", [(1.0, 0.01), (2.0, 0.5), (0.3, 1e-4), (0.7, 1.0)])
def test_every_grid_point_equal(adjacency, sd, q):
    """Including the grid points the vector path hands back to the scalar one (eps = 0 and the
    boundary log(1 - q)) and those outside the inverse region."""
    ref = plm.GaussianPrivacyLoss(sd, sampling_prob=q, adjacency_type=adjacency)
    ours = VectorGaussianPrivacyLoss(sd, sampling_prob=q, adjacency_type=adjacency)
    edge = math.log(1 - q) if q < 1 else -1.0
    eps = np.concatenate([np.linspace(-3, 3, 20001), [0.0, edge, -edge, edge * (1 + 1e-12)]])
    assert np.array_equal(ours.get_delta_for_epsilon(eps), ref.get_delta_for_epsilon(eps))
    assert ours.get_delta_for_epsilon(0.4) == ref.get_delta_for_epsilon(0.4)    # scalar: the parent's


def test_errors_stay_dp_accountings():
    with pytest.raises(ValueError, match="Standard deviation"):
        gaussian_pld(0.0, 0.1, 1e-3)


def test_ledger_epsilon_uses_it_and_agrees():
    z, q, T, delta, iv = 1.0, 0.01, 40, 1e-5, 1e-3
    ref = pldm.from_gaussian_mechanism(z, value_discretization_interval=iv, sampling_prob=q).self_compose(T)
    assert pld_subsampled_epsilon(z, q, T, delta, iv) == float(ref.get_epsilon_for_delta(delta))


def test_falls_back_where_the_private_constructor_is_gone(monkeypatch):
    """A dp_accounting without ``_create_pld_pmf_from_monotone_privacy_loss``: the public
    ``from_gaussian_mechanism`` is used, with the same numbers."""
    ref = gaussian_pld(1.0, 0.01, 1e-3)
    monkeypatch.setattr(pld_gaussian, "_BUILDER", "_a_name_no_version_has")
    calls = []
    real = pldm.from_gaussian_mechanism
    monkeypatch.setattr(pldm, "from_gaussian_mechanism", lambda *a, **k: calls.append(1) or real(*a, **k))
    fallback = gaussian_pld(1.0, 0.01, 1e-3)
    assert calls and _pmf_state(fallback._pmf_add) == _pmf_state(ref._pmf_add)


def _events():
    import dp_accounting as dpa

    g = dpa.GaussianDpEvent
    return [g(1.3), dpa.SelfComposedDpEvent(g(2.0), 5), dpa.PoissonSampledDpEvent(0.02, g(0.9)),
            dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, g(1.1)), 30),
            dpa.ComposedDpEvent([g(3.0), dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.05, g(1.5)), 4),
                                 dpa.LaplaceDpEvent(2.0)]),
            dpa.PoissonSampledDpEvent(0.0, g(1.0)), g(0.0)]


@pytest.mark.parametrize("i", range(7))
@pytest.mark.parametrize("relation", ["ADD_OR_REMOVE_ONE", "REPLACE_ONE"])
def test_accountant_equals_dp_accountings(i, relation):
    """The same eps, delta and composed PLD as ``PLDAccountant`` (the Laplace event, zero noise,
    q = 0 and REPLACE_ONE go to the parent)."""
    import dp_accounting as dpa
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

    from stabsim.privacy.pld_gaussian import VectorPLDAccountant

    rel = getattr(dpa.NeighboringRelation, relation)
    event = _events()[i]
    ref, ours = PLDAccountant(rel, value_discretization_interval=1e-3), VectorPLDAccountant(rel, 1e-3)
    if not ref.supports(event):
        assert not ours.supports(event)
        return
    ref.compose(event)
    ours.compose(event)
    for delta in (1e-3, 1e-6):
        assert ours.get_epsilon(delta) == ref.get_epsilon(delta)
    assert ours.get_delta(0.5) == ref.get_delta(0.5)
    assert _pmf_state(ours._pld._pmf_remove) == _pmf_state(ref._pld._pmf_remove)


@pytest.mark.parametrize("mu", [0.001, 0.05, 1.0, 4.0])
@pytest.mark.parametrize("pessimistic", [False, True])
def test_privacy_buckets_equal_dp_accountings(mu, pessimistic):
    """The privacy-buckets PLD (``use_connect_dots=False``, q = 1: the GDP fit's optimistic
    conversion) equals dp_accounting's, sparse (tiny mu) and dense alike."""
    ref = pldm.from_gaussian_mechanism(standard_deviation=1.0 / mu, pessimistic_estimate=pessimistic,
                                       use_connect_dots=False, value_discretization_interval=1e-4)
    ours = gaussian_pld(1.0 / mu, 1.0, 1e-4, pessimistic=pessimistic, connect_dots=False)
    assert type(ours._pmf_remove) is type(ref._pmf_remove)
    assert _pmf_state(ours._pmf_remove) == _pmf_state(ref._pmf_remove)
    assert ours.get_epsilon_for_delta(1e-5) == ref.get_epsilon_for_delta(1e-5)


def test_gdp_fit_conversion_unchanged():
    from stabsim.privacy.audit_gdp import _pld_epsilon_lower

    ref = pldm.from_gaussian_mechanism(standard_deviation=1.0 / 2.5, pessimistic_estimate=False,
                                       use_connect_dots=False, value_discretization_interval=1e-4)
    assert _pld_epsilon_lower(2.5, 1e-5) == max(0.0, float(ref.get_epsilon_for_delta(1e-5)))


def _dense_pld(probs, lower_loss, interval, infinity_mass):
    from dp_accounting.pld import pld_pmf

    return pldm.PrivacyLossDistribution(pld_pmf.DensePLDPmf(interval, lower_loss, np.asarray(probs, float),
                                                            infinity_mass, True))


def _plds():
    rng = np.random.default_rng(5)
    p = rng.random(9000)
    yield "subsampled, composed", gaussian_pld(1.0, 0.01, 1e-3).self_compose(40)
    yield "one Gaussian", gaussian_pld(0.8, 1.0, 1e-4)
    yield "one Gaussian, composed", gaussian_pld(2.0, 1.0, 1e-3).self_compose(7)
    yield "random, 3 blocks", _dense_pld(p / p.sum() * (1 - 1e-7), -4000, 1e-3, 1e-7)
    huge = np.zeros(5000)
    huge[-3:] = 0.25                               # losses of ~800: exp(-loss) is 0 in float64
    huge[:100] = 0.25 / 100
    yield "exp(-loss) underflows", _dense_pld(huge / huge.sum(), 795000, 1e-3, 0.0)
    yield "infinite mass", _dense_pld(p / p.sum() * 0.9, -100, 1e-2, 0.1)


@pytest.mark.parametrize("name, pld", list(_plds()))
def test_epsilon_for_delta_is_dp_accountings_scan(name, pld):
    """``epsilon_for_delta`` against the library's loop on the same PLD, for deltas where the loop
    exits in the first block, in a later one, never (eps 0), on an underflowed mass (its early
    return) and below the infinite mass (eps = inf): equal, not close."""
    from stabsim.privacy.pld_gaussian import epsilon_for_delta

    for delta in (0.5, 0.2, 0.05, 1e-2, 1e-3, 1e-5, 1e-8, 1e-12, 0.0):
        assert epsilon_for_delta(pld, delta) == pld.get_epsilon_for_delta(delta), (name, delta)


def test_epsilon_for_delta_covers_the_scans_exits():
    """The cases above reach each exit of the scan (so the equalities test them)."""
    from stabsim.privacy.pld_gaussian import _SCAN_BLOCK

    plds = dict(_plds())
    assert math.isinf(plds["infinite mass"].get_epsilon_for_delta(0.05))
    assert plds["one Gaussian"].get_epsilon_for_delta(0.5) == 0
    assert plds["exp(-loss) underflows"].get_epsilon_for_delta(1e-3) > 700   # the underflow's return
    pmf = plds["subsampled, composed"]._pmf_remove
    eps = pmf.get_epsilon_for_delta(1e-3)
    top = (pmf._lower_loss + pmf.size - 1) * pmf._discretization
    assert (top - eps) / pmf._discretization > _SCAN_BLOCK                  # exits in a later block


@pytest.mark.parametrize("sd, q", [(1.0, 1.0), (1.0, 0.01)])
def test_connect_dots_without_pessimism_is_the_librarys_privacy_buckets(sd, q):
    """dp_accounting answers ``use_connect_dots=True, pessimistic_estimate=False`` with its privacy
    buckets (and a warning): so does ``gaussian_pld`` (it built a pessimistic connect-the-dots pmf)."""
    ref = pldm.from_gaussian_mechanism(sd, value_discretization_interval=1e-3, sampling_prob=q,
                                       pessimistic_estimate=False, use_connect_dots=True)
    ours = gaussian_pld(sd, q, 1e-3, pessimistic=False, connect_dots=True)
    assert _pmf_state(ours._pmf_remove) == _pmf_state(ref._pmf_remove)
    assert _pmf_state(ours._pmf_add) == _pmf_state(ref._pmf_add)
