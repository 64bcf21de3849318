"""Tests for stabsim.engine.elastic: P2 Def. 6 / Eq. 4 / Lemma 1 and P1 Thm 8/9 helpers."""

import numpy as np
import pytest
import xarray as xr

from stabsim import risk
from stabsim.engine import elastic
from stabsim.engine.losses import get_loss
from stabsim.engine.synthetic import make_problem

PB = make_problem("auc_noisy", d=3, flip=0.0, rho=1.0)  # separable along e_1: needs reg > 0
PB_NOISY = make_problem("auc_noisy", d=3)  # 10% label flips: ERM exists with reg = 0
REG = 0.1


def _data(n, seed=0):
    return PB.sample(n, seed=seed)


@pytest.fixture(scope="module")
def runs():
    return {n: elastic.locally_elastic_stability(*_data(n), "ranking_logistic", reg=REG) for n in (20, 40, 80)}


@pytest.mark.parametrize("name", ["ranking_logistic", "auc_logistic", "auc_squared", "auc_ordered_logistic",
                                  "ranking_squared"])
def test_pair_matrices_match_empirical_risk_grad_and_hessian(name):
    X, y = _data(12, seed=5)
    w = np.array([0.3, -0.7, 0.4])
    V, D1, D2, _ = elastic.pair_matrices(w, X, y, name)
    N = 12 * 11
    assert V.sum() / N == pytest.approx(risk.empirical_risk(w, X, y, name), rel=1e-12, abs=1e-14)
    g = (D1.sum(1) - D1.sum(0)) @ X / N
    np.testing.assert_allclose(g, risk.empirical_grad(w, X, y, name), rtol=1e-10, atol=1e-13)
    H = elastic._hessian(D2, X) / N
    h = 1e-5
    Hfd = np.array([(risk.empirical_grad(w + h * e, X, y, name) - risk.empirical_grad(w - h * e, X, y, name)) / (2 * h)
                    for e in np.eye(3)])
    np.testing.assert_allclose(H, Hfd, rtol=1e-6, atol=1e-8)


def test_influence_gradient_term_matches_pair_loop():
    """Eq. 4's sum_{z' != z_i} grad l(z_i, z') + grad l(z', z_i), checked pair by pair (reg = 0)."""
    X, y = PB_NOISY.sample(30, seed=2)
    lf = get_loss("ranking_logistic")
    ds = elastic.locally_elastic_stability(X, y, lf, reg=0.0, indices=[3], estimators=("influence",))
    w = risk.erm(X, y, lf, tol=1e-11).w
    i = 3
    g = sum(lf.value_grad(w, (X[i], y[i]), (X[j], y[j]))[1] + lf.value_grad(w, (X[j], y[j]), (X[i], y[i]))[1]
            for j in range(30) if j != i)
    H = elastic._hessian(elastic.pair_matrices(w, X, y, lf)[2], X) / 870
    np.testing.assert_allclose(ds.delta.sel(i=3, estimator="influence").values, np.linalg.solve(H, g / 870),
                               rtol=1e-7, atol=1e-10)


def test_dataset_layout_and_attrs(runs):
    ds = runs[20]
    assert ds.attrs["neighbour_relation"] == "remove-one"
    assert set(ds.estimator.values) == {"exact", "influence"}
    assert ds.delta.dims == ("i", "estimator", "param") and ds.sizes["i"] == 20
    for v in ("estimate", "lower", "upper", "rel_err", "beta_mean", "beta_max", "cert_loo", "mean_n_beta"):
        assert v in ds
    # certified ERM: tight certificates on D and every D^{-i}
    assert ds.attrs["cert_full"] <= 1e-10 and float(ds.cert_loo.max()) <= 1e-10
    assert bool(ds.converged_loo.all())
    # all i: the sup is exact for this D
    np.testing.assert_allclose(ds.lower, ds.estimate)
    np.testing.assert_allclose(ds.upper, ds.estimate)
    assert (ds.beta_max >= ds.beta_mean).all()


def test_exact_loo_matches_independent_erm(runs):
    X, y = _data(20)
    w = risk.erm(X, y, "ranking_logistic", tol=1e-11, reg=REG).w
    keep = np.arange(20) != 7
    w7 = risk.erm(X[keep], y[keep], "ranking_logistic", tol=1e-11, reg=REG).w
    np.testing.assert_allclose(runs[20].delta.sel(i=7, estimator="exact").values, w7 - w, atol=1e-7)


def test_influence_close_to_exact_and_error_shrinks(runs):
    errs = [float(runs[n].rel_err.mean()) for n in (20, 40, 80)]
    maxerrs = [float(runs[n].rel_err.max()) for n in (20, 40, 80)]
    assert maxerrs[0] < 0.3 and maxerrs[-1] < 0.1
    assert errs[0] > errs[1] > errs[2]
    # second-order error: relative error ~ 1/n
    assert errs[0] / errs[2] > 2.5
    # the two estimators give nearly the same beta
    for n in (20, 40, 80):
        e = runs[n].estimate
        assert float(e.sel(estimator="influence")) == pytest.approx(float(e.sel(estimator="exact")), rel=0.3)


def test_beta_is_order_one_over_n(runs):
    """P2 Lemma 1: n * beta_n roughly constant (within a factor 2) over n = 20, 40, 80."""
    for est in ("exact", "influence"):
        sup = np.array([float(runs[n].estimate.sel(estimator=est)) for n in (20, 40, 80)])
        mean = np.array([float(runs[n].mean_n_beta.sel(estimator=est)) for n in (20, 40, 80)])
        assert sup.max() / sup.min() < 2.0, sup
        assert mean.max() / mean.min() < 2.0, mean
    # ... while beta itself (without the factor n) drops by about 4 from n = 20 to 80
    b = [float(runs[n].beta_mean.sel(estimator="exact").mean()) for n in (20, 80)]
    assert b[0] / b[1] > 2.5
    # Lemma 1's linearisation agrees with the plug-in influence beta
    ds = runs[80]
    np.testing.assert_allclose(ds.beta_mean_lemma1, ds.beta_mean.sel(estimator="influence"), rtol=0.1)


def test_subset_indices_and_test_pairs():
    X, y = _data(15, seed=1)
    ds = elastic.locally_elastic_stability(X, y, "auc_squared", reg=REG, indices=[0, 4, 9],
                                           test_pairs=np.array([[0, 1], [2, 3], [5, 4]]))
    assert list(ds.i.values) == [0, 4, 9]
    assert np.isnan(ds.upper).all() and (ds.lower == ds.estimate).all()
    # squared loss: F is quadratic, so the only error is from dropping the Hessian change
    assert float(ds.rel_err.max()) < 0.5
    Xt, yt = _data(5, seed=9)
    ds2 = elastic.locally_elastic_stability(X, y, "auc_squared", reg=REG, indices=[0],
                                            test_pairs=(Xt[:3], yt[:3], Xt[2:], yt[2:]))
    assert "external" in ds2.attrs["test_pairs"]


def test_non_smooth_and_unsupported_raise():
    X, y = _data(12)
    with pytest.raises(ValueError, match="not smooth"):
        elastic.locally_elastic_stability(X, y, "ranking_hinge", reg=REG)
    with pytest.raises(ValueError, match="not smooth"):
        elastic.locally_elastic_stability(X, y, get_loss("auc_qhinge", 1.5), reg=REG)
    with pytest.raises(ValueError, match="linear pairwise"):
        elastic.locally_elastic_stability(X, y, "point_logistic", reg=REG)
    with pytest.raises(ValueError, match="not certified"):  # separable data, reg = 0: no minimiser
        elastic.locally_elastic_stability(X, y, "ranking_logistic", reg=0.0)
    with pytest.raises(ValueError, match="constraint"):
        elastic.locally_elastic_stability(X, y, "ranking_logistic", constraint="l2", reg=REG)
    # the exact estimator alone works for the hinge
    ds = elastic.locally_elastic_stability(X, y, "ranking_hinge", reg=REG, indices=[0, 1], estimators=("exact",))
    assert np.isfinite(ds.beta_mean).all()


@pytest.mark.parametrize("name", ["ranking_logistic", "auc_squared"])
def test_grad_norm_sq_matches_finite_differences(name):
    X, y = _data(25, seed=4)
    W = np.random.default_rng(0).normal(size=(2, 3, 3))
    got = elastic.grad_norm_sq_path(W, X, y, name)
    assert got.shape == (2, 3)
    h = 1e-6
    for idx in np.ndindex(2, 3):
        w = W[idx]
        g = np.array([(risk.empirical_risk(w + h * e, X, y, name) - risk.empirical_risk(w - h * e, X, y, name)) / (2 * h)
                      for e in np.eye(3)])
        assert got[idx] == pytest.approx(float(g @ g), rel=1e-6)
    da = xr.DataArray(W, dims=("replicate", "t", "param"))
    out = elastic.grad_norm_sq_path(da, X, y, name)
    assert out.dims == ("replicate", "t")
    np.testing.assert_allclose(out.values, got)


def test_pl_gap():
    X, y = PB_NOISY.sample(25, seed=4)
    res = risk.erm(X, y, "ranking_logistic", tol=1e-11)
    assert abs(elastic.pl_gap(res.w, X, y, "ranking_logistic", res)) < 1e-10
    W = res.w + np.random.default_rng(1).normal(size=(4, 3))
    gaps = elastic.pl_gap(W, X, y, "ranking_logistic", res.value)
    assert gaps.shape == (4,) and (gaps > 0).all()
    with pytest.raises(ValueError):
        elastic.pl_gap(W, X, y, "ranking_logistic", risk.erm(X, y, "ranking_logistic", reg=0.1))
