"""Trivial bounds of excess-risk / optimization-error / generalization-gap rows, and the
uninformative P0 private-sweep rate rows."""

import math

import numpy as np
import xarray as xr
import pytest

from stabsim.analyses.p0_excess_risk import loss_range
from stabsim.analyses.p0_private_sweep import mark_uninformative
from stabsim.analyses.p4_generalization import _ci, trivial_bound
from stabsim.engine.losses import get_loss
from stabsim.judging.rules import check_bound, check_rate


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


# ---- P1 Lemma 1, P1 Thm 8 / Thm 9, P3 Lemma 4, P1 lower-bound instance --------------------------------------

def test_p1_loss_sup():
    from stabsim.analyses.p1_common import loss_sup

    assert loss_sup("auc_hinge", 1.0, 2.0) == pytest.approx(1.0 + 2.0 * 1.0 * 2.0)   # 1 + G R, G = 2 kappa
    assert loss_sup("auc_squared", 1.0, 2.0) == pytest.approx(25.0)
    assert loss_sup("auc_hinge", 1.0, math.inf) is None


def test_p1_lem1_trivial_bound():
    from stabsim.analyses.p1_stability import lem1_trivial_bound

    params = {"algorithm": {"loss": "auc_hinge"}}
    triv, note = lem1_trivial_bound(params, {"kappa": 1.0, "radius": 1.0})
    assert triv == pytest.approx(3.0) and "B = 3" in note
    m = _ci(0.05 + 0.001 * np.random.default_rng(2).standard_normal(50), "gen_gap")
    above = check_bound(m, np.atleast_1d(3.5), "EXPLICIT", key="P1.Lem1.gen", trivial_bound=triv)
    assert above.verdict == "holds" and above.can_fail is False and above.vacuous is True
    below = check_bound(m, np.atleast_1d(1.0), "EXPLICIT", key="P1.Lem1.gen", trivial_bound=triv)
    assert below.verdict == "holds" and below.can_fail is True and not below.vacuous
    none, note = lem1_trivial_bound(params, {"kappa": 1.0, "radius": math.inf})
    assert none is None and "unbounded" in note


def test_p1_path_trivial_bounds():
    from stabsim.analyses.p1_nonconvex import grad_trivial_bound, pl_trivial_bound

    assert grad_trivial_bound({"G": 2.0})[0] == pytest.approx(4.0)
    assert grad_trivial_bound({"G": math.inf})[0] is None
    params = {"algorithm": {"loss": "auc_squared"}}
    assert pl_trivial_bound(params, {"kappa": 1.0, "radius": 2.0}, 0.1)[0] == pytest.approx(25.1)
    assert pl_trivial_bound(params, {"kappa": 1.0, "radius": math.inf}, 0.1)[0] is None


def test_p3_lemma4_trivial_bound():
    from stabsim.analyses.p3_stability import lemma4_trivial_bound
    from stabsim.engine.constraints import get_constraint

    triv, note = lemma4_trivial_bound(get_constraint("l2:1.0"))
    assert triv == pytest.approx(2.0) and "diam(C)" in note
    assert lemma4_trivial_bound(get_constraint("none"))[0] is None
    t = np.array([10.0, 20.0, 40.0])
    d = np.array([0.5, 0.3, 0.2])
    m = xr.Dataset({"estimate": ("t", d), "lower": ("t", d), "upper": ("t", d)}, coords={"t": t},
                   attrs={"quantity": "sensitivity", "n_replicates": 5, "level": 1.0})
    above = check_bound(m, 80.0 / t, "EXPLICIT", key="P3.Lemma4.sensitivity", trivial_bound=triv)  # 8, 4, 2 >= 2
    assert above.verdict == "holds" and above.can_fail is False and above.vacuous is True
    below = check_bound(m, 16.0 / t, "EXPLICIT", key="P3.Lemma4.sensitivity", trivial_bound=triv)  # < 2
    assert below.verdict == "holds" and below.can_fail is True and not below.vacuous


def test_p1_lower_bound_instance_trivial_bound():
    from stabsim.analyses.p1_worst_neighbour import lower_bound_trivial
    from stabsim.engine.lower_bounds import bfgt_instance

    inst = bfgt_instance(n=20, eta=0.1)
    t = np.array([1.0, 10.0, 100.0])
    triv, note = lower_bound_trivial(inst, t)
    assert np.allclose(triv, 2 * inst.eta * inst.G * t) and "2 eta G t" in note
    m = xr.Dataset({"estimate": ("t", 0.01 * t), "lower": ("t", 0.0099 * t), "upper": ("t", 0.0101 * t)},
                   coords={"t": t}, attrs={"quantity": "uas_mean", "n_replicates": 20, "level": 0.95})
    above = check_bound(m, 3 * triv, "EXPLICIT", key="P1.Thm4.uas", trivial_bound=triv)
    assert above.can_fail is False and above.vacuous is True
    below = check_bound(m, 0.5 * triv, "EXPLICIT", key="P1.Thm4.uas", trivial_bound=triv)
    assert below.can_fail is True and not below.vacuous


def test_p1_lower_bound_instance_within_trivial_bound():
    """The instance's coupled runs never leave 2 eta G t of each other (the trivial bound is an upper bound)."""
    from stabsim.analyses.p1_worst_neighbour import lower_bound_trivial
    from stabsim.engine.lower_bounds import bfgt_instance

    inst = bfgt_instance(n=20, eta=0.1)
    ds = inst.run(T=400, replicates=8, seed=0, checkpoints=[1, 2, 5, 10, 50, 100, 200, 400])
    triv, _ = lower_bound_trivial(inst, ds["t"].values)
    for var in ("dist_iterate", "dist_output"):
        assert np.all(ds[var].max("replicate").values <= triv * (1 + 1e-12))


def test_p1_tightness_trivial_bound():
    """Searched worst-case rows: min(2R, 2 eta G t), squared for E||.||^2; the path bound alone on R^d; none
    with gradient noise on R^d or an infinite G."""
    from stabsim.analyses.p1_worst_neighbour import tightness_trivial

    t = np.array([1.0, 10.0, 100.0])
    triv, note = tightness_trivial({"radius": 1.0, "G": 2.0}, 0.1, t, "mean")
    assert np.allclose(triv, [0.4, 2.0, 2.0]) and "min of" in note
    triv, _ = tightness_trivial({"radius": math.inf, "G": 2.0}, 0.1, t, "quantile")
    assert np.allclose(triv, 0.4 * t)
    triv, _ = tightness_trivial({"radius": 1.0, "G": math.inf}, 0.1, t, "mean_sq")
    assert np.allclose(triv, 4.0)
    assert tightness_trivial({"radius": math.inf, "G": math.inf}, 0.1, t, "mean")[0] is None
    assert tightness_trivial({"radius": math.inf, "G": 2.0}, 0.1, t, "mean", sigma=1.0)[0] is None
    d = np.array([0.1, 0.5, 0.6])
    m = xr.Dataset({"estimate": ("t", d), "lower": ("t", 0.99 * d), "upper": ("t", 1.01 * d)}, coords={"t": t},
                   attrs={"quantity": "uas_mean", "n_replicates": 20, "level": 0.95})
    triv, _ = tightness_trivial({"radius": 1.0, "G": 2.0}, 0.1, t, "mean")
    above = check_bound(m, np.array([0.5, 2.5, 3.0]), "EXPLICIT", key="P1.Thm4.uas", trivial_bound=triv)
    assert above.verdict == "holds" and above.can_fail is False and above.vacuous is True
    below = check_bound(m, np.array([0.5, 1.0, 1.0]), "EXPLICIT", key="P1.Thm4.uas", trivial_bound=triv)
    assert below.verdict == "holds" and below.can_fail is True and not below.vacuous


def test_p4_loss_sup_uses_each_loss_own_growth():
    """The hinge and logistic losses grow linearly in the margin: sup f = 1 + sup|m| (P4 point hinge with
    kappa = 0.707, R = 2.5: 1 + kappa R = 2.77), not (1 + sup|m|)^q with the q = 2 every loss carries."""
    from stabsim.analyses.p4_generalization import _loss_sup
    from stabsim.engine.losses import get_loss

    kappa, R = 0.707, 2.5
    hinge = get_loss("point_hinge")
    assert _loss_sup(hinge, kappa, R) == pytest.approx(1.0 + hinge._margin_range(kappa, R))
    assert _loss_sup(hinge, kappa, R) == pytest.approx(1.0 + kappa * R)
    sq = get_loss("auc_squared")
    assert _loss_sup(sq, kappa, R) == pytest.approx((1.0 + sq._margin_range(kappa, R)) ** 2)
    qh = get_loss("auc_qhinge", 1.5)
    assert _loss_sup(qh, kappa, R) == pytest.approx((1.0 + qh._margin_range(kappa, R)) ** 1.5)
