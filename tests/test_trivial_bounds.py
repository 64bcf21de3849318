"""Trivial bounds of excess-risk / optimization-error / generalization-gap rows, and the
uninformative P0 private-sweep rate rows."""

import math

import numpy as np
import pytest

from stabsim.analyses.p0_excess_risk import loss_range
from stabsim.analyses.p0_private_sweep import mark_uninformative
from stabsim.analyses.p4_generalization import _ci, trivial_bound
from stabsim.losses import get_loss
from stabsim.verdicts import check_bound, check_rate


def _cell(R=1.0, kappa=1.0, loss="point_logistic"):
    return {"R": R, "kappa": kappa, "lossf": get_loss(loss), "T": 10, "eta": 0.1}


def _measure():
    rng = np.random.default_rng(0)
    return _ci(0.5 + 0.01 * rng.standard_normal(50), "excess_risk")


def test_p0_loss_range():
    assert loss_range(2.0, 1.0, 1.5) == pytest.approx(1.0 + 2.0 * 1.5)
    assert np.allclose(loss_range(2.0, 1.0, math.inf, [1.0, 2.0]), [3.0, 5.0])
    assert loss_range(math.inf, 1.0, math.inf, [1.0]) is None
    assert loss_range(2.0, 1.0, math.inf) is None


def test_excess_bound_above_trivial_cannot_fail():
    triv, note = trivial_bound("excess_risk", _cell())
    assert triv is not None and triv >= 1.0 + 1.0  # sup f >= 1 + kappa R for the logistic loss
    v = check_bound(_measure(), np.atleast_1d(10 * triv), "EXPLICIT", key="P4.Thm3.excess_explicit.corrected",
                    trivial_bound=triv)
    assert v.verdict == "holds"
    assert v.can_fail is False
    assert v.vacuous is True


def test_excess_bound_below_trivial_can_fail():
    triv, _ = trivial_bound("excess_risk", _cell())
    v = check_bound(_measure(), np.atleast_1d(0.6), "EXPLICIT", key="P4.Thm3.excess_explicit.corrected",
                    trivial_bound=triv)
    assert 0.6 < triv
    assert v.verdict == "holds"
    assert v.can_fail is True
    assert not v.vacuous


def test_unbounded_W_has_no_trivial_bound():
    triv, note = trivial_bound("excess_risk", _cell(R=math.inf))
    assert triv is None and "unbounded" in note


def test_onavg_and_eta2_trivial_bounds():
    c = _cell(R=2.0)
    assert trivial_bound("onavg_stability", c)[0] == pytest.approx(16.0)
    S = trivial_bound("gen_gap", c)[0]
    assert trivial_bound("eta2_weighted_train_risk", c)[0] == pytest.approx(10 * 0.01 * S)


def test_p0_sweep_rate_rows_uninformative():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    rng = np.random.default_rng(1)
    y = x[None, :] * (1 + 0.05 * rng.standard_normal((20, 4)))
    v = check_rate(x, y, 1.0, "upper", key="P0.Thm5.rate.corrected", quantity="", paired=False)
    for axis in ("eps", "d"):
        u = mark_uninformative(v, axis)
        assert u.can_fail is False
        assert "cannot fail by construction" in u.power_note
        assert u.verdict == v.verdict
