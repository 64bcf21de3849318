"""``run_twin(specialise=...)``: a fast kind's replicate compiled for the call's configuration
(``stabsim.kernels.twin.wants_specialised``) gives the general build's numbers bit for bit, is
chosen by the rule its docstring states, and a bad value is refused before anything runs."""

import numpy as np
import pytest

from stabsim import run_twin
from stabsim.kernels import twin
from stabsim.kernels.twin_steps import NOISE_INDEPENDENT, NOISE_NONE, NOISE_SHARED

RECORDED = ("dist_iterate", "dist_output", "loss_path", "loss_ref_path", "eta2_loss_path", "output")
#: two fast kinds, with the codes a specialisation fixes varied between them
CASES = {
    "p1_alg1-hinge-l2": (dict(algorithm="p1_alg1", loss="auc_hinge", constraint="l2:0.5"), twin.FAST_PREVIOUS),
    "sgd_pair-noise-ref-outputs": (dict(algorithm="sgd_pair", loss="auc_logistic", sigma=0.3, record_outputs=True,
                                        w_ref=np.array([0.1, -0.2, 0.3])), twin.FAST_PAIR),
}


@pytest.fixture(scope="module")
def data():
    r = np.random.default_rng(3)
    X = r.standard_normal((30, 3))
    y = np.where(r.random(30) < 0.5, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    return X, y


def run(data, specialise, progress=False, **kw):
    X, y = data
    return run_twin(X, y, replicates=4, T=300, seed=11, eta=0.05, neighbour="flip", progress=progress,
                    specialise=specialise, **kw)


def chosen(kind: int, forced: bool) -> int:
    """How many configurations of ``kind`` this process has run with (forced) a specialised build."""
    return sum(1 for key in twin._CHOSEN if key[0] == kind and key[2] == forced)


@pytest.mark.parametrize("case", sorted(CASES))
def test_specialised_build_gives_the_general_builds_numbers(data, case, monkeypatch):
    kw, kind = CASES[case]
    before = chosen(kind, True)
    special = run(data, True, **kw)
    assert chosen(kind, True) == before + 1   # this configuration ran its specialised build
    monkeypatch.setattr(twin, "SPECIALISE_COLD", False)   # the general build, even from an empty cache
    monkeypatch.setattr(twin, "_CHOSEN", {})
    general = run(data, False, **kw)
    assert chosen(kind, True) == 0
    names = [n for n in RECORDED if n in general]
    assert "dist_output" in names and "loss_path" in names
    for name in names:
        a, b = special[name].values, general[name].values
        assert a.shape == b.shape
        assert np.array_equal(a.view(np.int64), b.view(np.int64)), name   # bit for bit (NaN included)


def test_automatic_rule():
    steps, dmax = twin.SPECIALISE_MIN_STEPS, twin.SPECIALISE_MAX_D
    for kind in (twin.FAST_PREVIOUS, twin.FAST_PAIR, twin.FAST_POINT):
        assert twin.wants_specialised(kind, NOISE_NONE, steps, dmax, None)
        assert not twin.wants_specialised(kind, NOISE_NONE, steps - 1, 10, None)
        assert not twin.wants_specialised(kind, NOISE_NONE, 10 * steps, dmax + 1, None)
        assert not twin.wants_specialised(kind, NOISE_SHARED, 10 * steps, 10, None)   # noise: nothing to gain
        assert twin.wants_specialised(kind, NOISE_INDEPENDENT, 1, 1000, True)
        assert not twin.wants_specialised(kind, NOISE_NONE, 10 * steps, 10, False)
    for specialise in (None, True, False):   # the general path has no specialised build
        assert not twin.wants_specialised(twin.GENERAL, NOISE_NONE, 10 * steps, 10, specialise)


def test_automatic_rule_in_a_call(data, monkeypatch):
    """With the threshold lowered to the call's work, a noise-free call takes the specialised build
    and a noisy one does not; a call run in blocks (a progress bar) is decided as a whole."""
    kw, kind = CASES["p1_alg1-hinge-l2"]
    monkeypatch.setattr(twin, "SPECIALISE_MIN_STEPS", 4 * 300)   # R T of `run`
    monkeypatch.setattr(twin, "_CHOSEN", {})
    run(data, None, **kw)
    assert chosen(kind, True) == 1
    run(data, None, sigma=0.2, **kw)
    assert chosen(kind, True) == 1 and chosen(kind, False) == 1
    monkeypatch.setattr(twin, "_CHOSEN", {})
    run(data, None, progress=True, **kw)   # one block per replicate: decided for the whole call
    assert chosen(kind, True) == 1 and chosen(kind, False) == 0


@pytest.mark.parametrize("bad", ["yes", 1, 0.0, [True]])
def test_bad_value_is_refused(data, bad):
    with pytest.raises(ValueError, match="specialise must be None"):
        run(data, bad, algorithm="p1_alg1", loss="auc_hinge")
