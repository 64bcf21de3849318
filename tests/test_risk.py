"""Tests of stabsim.risk: empirical risks (shortcuts vs plain loops), gradients, population
risks (closed form vs U-statistic, standard errors), certified ERM, and the metrics."""

import math

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st

from stabsim import make_problem
from stabsim.engine.losses import get_loss
from stabsim.risk import (auc, auc_from_scores, empirical_grad, empirical_risk, erm,
                          misclassification, mse, population_risk)

PAIR_LINEAR = ["auc_hinge", "auc_squared", "auc_logistic", "auc_ordered_hinge",
               "auc_ordered_squared", "auc_ordered_logistic", "ranking_hinge", "ranking_squared",
               "ranking_logistic", "auc_qhinge"]
POINT = ["point_hinge", "point_logistic", "point_lsq"]
METRIC = ["metric_logistic", "metric_hinge"]


def _loss(name):
    return get_loss(name, q=1.5) if "qhinge" in name else get_loss(name)


# ---- naive oracles (pure Python, through Loss.value_grad) -------------------------------------

def naive_risk(w, X, y, lf):
    n = len(X)
    if lf.pairwise:
        return sum(lf.value_grad(w, (X[i], y[i]), (X[j], y[j]))[0]
                   for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
    return float(np.mean([lf.value_grad(w, (X[i], y[i]))[0] for i in range(n)]))


def naive_grad(w, X, y, lf):
    n = len(X)
    if lf.pairwise:
        return sum(lf.value_grad(w, (X[i], y[i]), (X[j], y[j]))[1]
                   for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
    return np.mean([lf.value_grad(w, (X[i], y[i]))[1] for i in range(n)], axis=0)


def _data(seed, n, d, kind="pm1", integer=False):
    rs = np.random.default_rng(seed)
    X = rs.integers(-2, 3, size=(n, d)).astype(float) if integer else rs.normal(size=(n, d))
    if kind == "pm1":
        y = np.where(rs.random(n) < 0.5, 1.0, -1.0)
    else:  # several real-valued ranking labels
        y = rs.integers(0, 4, n).astype(float)
    return X, y


def _close(a, b, tol=1e-10):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert np.all(np.abs(a - b) <= tol * np.maximum(1.0, np.abs(b))), (a, b)


# ---- empirical risk: shortcuts against the plain double loop -----------------------------------

@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 12), d=st.integers(1, 3),
       loss=st.sampled_from(PAIR_LINEAR + POINT + METRIC), integer=st.booleans(),
       scale=st.sampled_from([0.1, 1.0, 5.0]))
def test_shortcuts_match_plain_loop(seed, n, d, loss, integer, scale):
    lf = _loss(loss)
    X, y = _data(seed, n, d, integer=integer)
    p = d * d if lf.matrix else d
    rs = np.random.default_rng(seed + 1)
    W = rs.integers(-2, 3, size=(5, p)).astype(float) if integer else scale * rs.normal(size=(5, p))
    ref = empirical_risk(W, X, y, lf, method="loop")
    _close(empirical_risk(W, X, y, lf), ref)
    _close(empirical_risk(W, X, y, lf, method="scores"), ref)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 12), d=st.integers(1, 3),
       loss=st.sampled_from(["ranking_hinge", "ranking_squared", "ranking_logistic", "point_lsq"]))
def test_shortcuts_many_label_values(seed, n, d, loss):
    X, y = _data(seed, n, d, kind="real")
    W = np.random.default_rng(seed).normal(size=(4, d))
    ref = empirical_risk(W, X, y, loss, method="loop")
    _close(empirical_risk(W, X, y, loss), ref)
    _close(empirical_risk(W, X, y, loss, method="scores"), ref)


@pytest.mark.parametrize("loss", PAIR_LINEAR + POINT + METRIC)
def test_loop_matches_python_oracle_and_grad(loss):
    lf = _loss(loss)
    X, y = _data(3, 9, 2)
    p = 4 if lf.matrix else 2
    W = np.random.default_rng(4).normal(size=(3, p))
    _close(empirical_risk(W, X, y, lf, method="loop"), [naive_risk(w, X, y, lf) for w in W], 1e-12)
    for w in W:
        _close(empirical_grad(w, X, y, lf), naive_grad(w, X, y, lf), 1e-10)
    assert isinstance(empirical_risk(W[0], X, y, lf), float)


def test_ranking_same_label_pairs_and_single_class():
    X, y = _data(5, 8, 2)
    w = np.array([0.3, -0.2])
    # ranking: same-label pairs give phi(0) = 1 for the hinge; with one label value F_S = phi(0)
    _close(empirical_risk(w, X, np.ones(8), "ranking_hinge"), 1.0, 1e-14)
    _close(empirical_risk(w, X, np.ones(8), "ranking_logistic"), math.log(2.0), 1e-14)
    # AUC with one class only: no +/- pair, F_S = 0
    assert empirical_risk(w, X, -np.ones(8), "auc_hinge") == 0.0
    with pytest.raises(ValueError, match="labels"):
        empirical_risk(w, X, np.arange(8.0), "auc_hinge")
    with pytest.raises(ValueError, match="method"):
        empirical_risk(w, X, y, "auc_hinge", method="magic")
    with pytest.raises(ValueError, match="shape"):
        empirical_risk(np.ones(3), X, y, "auc_hinge")


def test_auc_ordered_is_half_auc():
    X, y = _data(6, 30, 3)
    W = np.random.default_rng(0).normal(size=(4, 3))
    for phi in ("hinge", "squared", "logistic"):
        _close(empirical_risk(W, X, y, f"auc_ordered_{phi}"), 0.5 * empirical_risk(W, X, y, f"auc_{phi}"), 1e-12)


def test_larger_n_fast_vs_loop():
    X, y = _data(7, 150, 4)
    W = np.random.default_rng(1).normal(size=(3, 4))
    for loss in ("auc_hinge", "auc_squared", "ranking_hinge", "auc_logistic"):
        _close(empirical_risk(W, X, y, loss), empirical_risk(W, X, y, loss, method="loop"))


# ---- population risk -------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["auc_noisy", "auc_separable"])
def test_closed_form_vs_u_statistic(name):
    pb = make_problem(name, d=4, rho=0.8)
    W = np.random.default_rng(2).normal(size=(5, 4)) * 0.7
    for loss in ("auc_squared", "auc_ordered_squared"):
        cf = population_risk(W, pb, loss)
        assert cf.method == "closed_form" and np.all(cf.se == 0)
        mc = population_risk(W, pb, loss, method="monte_carlo", m=3000, seed=11)
        assert mc.method == "u_statistic" and mc.m == 3000
        assert np.all(np.abs(mc.value - cf.value) <= 4 * mc.se), (mc.value, cf.value, mc.se)
    with pytest.raises(ValueError, match="closed-form"):
        population_risk(W, pb, "auc_hinge", method="closed_form")


def test_u_statistic_equals_empirical_risk_and_naive_se():
    Xt, yt = _data(8, 25, 2)
    W = np.random.default_rng(3).normal(size=(3, 2))
    yr = np.round(Xt[:, 0] * 2)  # several label values: the all-pairs ranking path
    for loss, yy in (("auc_hinge", yt), ("auc_squared", yt), ("auc_logistic", yt),
                     ("ranking_logistic", yt), ("auc_ordered_hinge", yt), ("metric_logistic", yt),
                     ("ranking_hinge", yr), ("ranking_squared", yr)):
        lf = get_loss(loss)
        Wl = np.random.default_rng(3).normal(size=(3, 4)) if lf.matrix else W
        est = population_risk(Wl, (Xt, yy), loss)
        _close(est.value, empirical_risk(Wl, Xt, yy, loss), 1e-12)
        yt_ = yy
        m = len(Xt)
        for w, se in zip(Wl, est.se):  # Hoeffding SE from the explicit kernel matrix
            F = np.array([[lf.value_grad(w, (Xt[i], yt_[i]), (Xt[j], yt_[j]))[0] if i != j else 0.0
                           for j in range(m)] for i in range(m)])
            h = 0.5 * (F + F.T)
            U = h.sum() / (m * (m - 1))
            hbar = h.sum(1) / (m - 1)
            z1 = np.var(hbar, ddof=1)
            z2 = (h ** 2).sum() / (m * (m - 1)) - U ** 2
            ref = math.sqrt(4 * (m - 2) / (m * (m - 1)) * z1 + 2 / (m * (m - 1)) * z2)
            _close(se, ref, 1e-9)


def test_u_statistic_se_is_calibrated():
    pb = make_problem("auc_noisy", d=3)
    w = np.array([1.0, 0.3, -0.2])
    vals, ses = [], []
    for s in range(80):
        r = population_risk(w, pb, "auc_hinge", method="monte_carlo", m=200, seed=s)
        vals.append(r.value)
        ses.append(r.se)
    ratio = np.std(vals, ddof=1) / np.mean(ses)
    assert 0.7 < ratio < 1.35, ratio


def test_population_pointwise_and_test_stream():
    pb = make_problem("p4_lsq", d=10, kappa=0.0)
    est = population_risk(pb.w_star, pb, m=2000)
    assert est.method == "sample_mean" and est.value < 1e-25  # y = x.w* exactly: F(w*) = 0
    value, se = population_risk(np.zeros(10), pb, m=2000)
    assert value > 0 and 0 < se < value
    # the test sample comes from a stream distinct from the training data of the same seed
    Xtr, _ = pb.sample(50, 0)
    Xte, _ = pb.sample(50, 0, 0, stream=est.stream)
    assert not np.allclose(Xtr, Xte)


# ---- metrics ---------------------------------------------------------------------------------------

def test_auc_hand_example_and_definition():
    scores = np.array([0.1, 0.4, 0.35, 0.8])
    y = np.array([-1.0, -1, 1, 1])
    assert auc_from_scores(scores, y) == 0.75
    assert auc(np.array([1.0]), scores[:, None], y) == 0.75
    with pytest.raises(ValueError):
        auc_from_scores(scores, np.ones(4))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 30))
def test_auc_against_quadratic_definition(seed, n):
    rs = np.random.default_rng(seed)
    X = rs.integers(-2, 3, size=(n, 2)).astype(float)  # many ties
    y = np.where(rs.random(n) < 0.5, 1.0, -1.0)
    y[0], y[-1] = 1.0, -1.0
    W = rs.integers(-1, 2, size=(3, 2)).astype(float)
    got = auc(W, X, y)
    for w, g in zip(W, got):
        s = X @ w
        P, N = s[y == 1], s[y == -1]
        ref = np.mean((P[:, None] > N[None, :]) + 0.5 * (P[:, None] == N[None, :]))
        assert abs(g - ref) < 1e-12


def test_misclassification_and_mse():
    X = np.array([[1.0, 0], [0, 1], [-1, 0], [0, -2]])
    y = np.array([1.0, -1, -1, 1])
    w = np.array([1.0, 1.0])
    assert misclassification(w, X, y) == 0.5  # margins 1, -1, 1, -2
    assert misclassification(np.zeros(2), X, y) == 1.0  # zero scores are errors
    _close(mse(w, X, y), np.mean((X @ w - y) ** 2), 1e-15)
    _close(mse(w, X, y), 2 * empirical_risk(w, X, y, "point_lsq"), 1e-15)


# ---- ERM with certificates ---------------------------------------------------------------------

def _grid(R, center, k=121):
    """Points of a 2-D grid (inside the disc of radius R, or a box around center)."""
    if math.isfinite(R):
        t = np.linspace(-R, R, k)
        G = np.array([(a, b) for a in t for b in t])
        return G[np.linalg.norm(G, axis=1) <= R]
    h = 2.0 + 2.0 * np.linalg.norm(center)
    t = np.linspace(-h, h, k)
    return center + np.array([(a, b) for a in t for b in t])


def _reference_min(X, y, loss, R, start, reg=0.0, levels=14):
    """min of Phi over W (2-D) by a zooming grid search on the score-loop F_S (independent of the
    solver and of the algebraic shortcuts): each level a 41 x 41 grid around the best point."""
    best = np.asarray(start, float)

    def F(V):
        return empirical_risk(V, X, y, loss, method="scores") + 0.5 * reg * np.sum(V * V, axis=-1)
    fbest = float(F(best[None])[0])
    h = 1.0 + np.linalg.norm(best) if not math.isfinite(R) else R
    t = np.linspace(-1.0, 1.0, 41)
    base = np.array([(a, b) for a in t for b in t])
    for _ in range(levels):
        V = best + h * base
        if math.isfinite(R):
            nv = np.linalg.norm(V, axis=1)
            V = np.where((nv > R)[:, None], V * (R / np.maximum(nv, 1e-300))[:, None], V)
        FV = F(V)
        k = int(np.argmin(FV))
        if FV[k] < fbest:
            best, fbest = V[k], float(FV[k])
        h *= 0.2
    return fbest


CASES = [("auc_hinge", "l2:0.8"), ("auc_hinge", "none"), ("auc_logistic", "l2:1.0"),
         ("auc_logistic", "none"), ("auc_squared", "l2:0.5"), ("auc_squared", "none"),
         ("ranking_hinge", "l2:2.0"), ("point_hinge", "none"), ("point_hinge", "l2:0.5"),
         ("point_logistic", "none"), ("point_lsq", "l2:0.3")]


@pytest.mark.parametrize("loss,cons", CASES)
def test_erm_certificate_2d(loss, cons):
    pb = make_problem("auc_noisy", d=2, rho=0.6, flip=0.2)
    X, y = pb.sample(40, seed=1)
    r = erm(X, y, loss, cons, tol=1e-8)
    R = float(cons.split(":")[1]) if ":" in cons else math.inf
    assert r.converged and 0 < r.certificate <= 1e-8, (r.certificate, r.certificate_method)
    assert np.linalg.norm(r.w) <= R * (1 + 1e-12)
    _close(r.value, empirical_risk(r.w, X, y, loss, method="loop"), 1e-12)
    assert r.lower_bound == pytest.approx(r.value - r.certificate, abs=1e-15)
    # the proven lower bound is below F_S everywhere on a fine grid of W ...
    G = _grid(R, r.w)
    FG = empirical_risk(G, X, y, loss, method="loop")
    assert FG.min() >= r.lower_bound - 1e-13
    # ... and below a long independent solve; the certificate covers the true gap
    ref = _reference_min(X, y, loss, R, G[np.argmin(FG)])
    if loss.startswith("point_hinge") and R == math.inf:  # exact LP (HiGHS)
        ref = min(ref, _lp_point_hinge(X, y))
    assert ref >= r.lower_bound - 1e-13
    assert r.value - ref <= r.certificate + 1e-13


def _lp_point_hinge(X, y):
    n, d = X.shape
    A = scipy.sparse.hstack([scipy.sparse.csr_matrix(-(y[:, None] * X)), -scipy.sparse.eye(n)])
    res = scipy.optimize.linprog(np.r_[np.zeros(d), np.ones(n) / n], A_ub=A, b_ub=-np.ones(n),
                                 bounds=[(None, None)] * d + [(0, None)] * n, method="highs")
    return res.fun


def test_erm_hinge_unconstrained_matches_lp():
    pb = make_problem("auc_noisy", d=3, rho=0.7)
    X, y = pb.sample(60, seed=2)
    r = erm(X, y, "auc_hinge", "none")
    P, N = X[y == 1], X[y == -1]
    U = (P[:, None, :] - N[None, :, :]).reshape(-1, 3)
    M, n = len(U), len(X)
    A = scipy.sparse.hstack([scipy.sparse.csr_matrix(-U), -scipy.sparse.eye(M)])
    c = 2.0 / (n * (n - 1))
    lp = scipy.optimize.linprog(np.r_[np.zeros(3), c * np.ones(M)], A_ub=A, b_ub=-np.ones(M),
                                bounds=[(None, None)] * 3 + [(0, None)] * M, method="highs")
    assert "exact arithmetic" in r.certificate_method
    assert r.lower_bound <= lp.fun + 1e-12 and r.value - lp.fun <= r.certificate + 1e-12
    assert r.certificate <= 1e-8


@pytest.mark.parametrize("cons", ["none", "l2:1.0"])
def test_erm_unconverged_certificate_still_valid(cons):
    X, y = make_problem("auc_noisy", d=2).sample(40, seed=3)
    r = erm(X, y, "auc_logistic", cons, max_iter=1)  # one Newton step from 0
    R = float(cons.split(":")[1]) if ":" in cons else math.inf
    ref = _reference_min(X, y, "auc_logistic", R, np.zeros(2))
    assert r.value - ref <= r.certificate + 1e-13
    assert ref >= r.lower_bound - 1e-13


def test_erm_regularised():
    X, y = make_problem("auc_noisy", d=2).sample(40, seed=4)
    for loss in ("auc_logistic", "auc_hinge"):
        r = erm(X, y, loss, "none", reg=0.05)
        assert r.converged and r.reg == 0.05
        _close(r.value, r.risk + 0.025 * r.w @ r.w, 1e-14)
        ref = _reference_min(X, y, loss, math.inf, r.w, reg=0.05)
        assert ref >= r.lower_bound - 1e-13


def test_erm_separable_squared_reaches_zero():
    pb = make_problem("auc_separable", d=5, gamma=0.5, rho=0.5)
    X, y = pb.sample(200, seed=5)
    w_an = pb.w_star  # e_1 / (2 gamma): margin exactly 1 on every +/- pair
    assert empirical_risk(w_an, X, y, "auc_squared") < 1e-28
    r = erm(X, y, "auc_squared")
    assert r.value < 1e-12 and r.converged
    np.testing.assert_allclose(r.w, w_an, atol=1e-6)
    # a ball that excludes w* (||w*|| = 1): F_S > 0, on the boundary
    r2 = erm(X, y, "auc_squared", "l2:0.5")
    assert r2.value > 0.1 and abs(np.linalg.norm(r2.w) - 0.5) < 1e-12 and r2.converged
    r3 = erm(X, y, "auc_hinge", "l2:1.0")  # hinge: F_S(w*) = 0 with ||w*|| = 1
    assert r3.value < 1e-8 and r3.converged


def test_erm_metric_learning():
    pb = make_problem("metric", d=2, rho=0.8)
    X, y = pb.sample(30, seed=6)
    rs = np.random.default_rng(0)
    for loss, cons in (("metric_logistic", "frobenius:1.0"), ("metric_hinge", "frobenius:1.0"),
                       ("metric_logistic", "nuclear:1.0")):
        r = erm(X, y, loss, cons)
        assert r.converged, (loss, cons, r.certificate)
        V = rs.normal(size=(3000, 4))
        V /= np.maximum(1.0, np.linalg.norm(V, axis=1))[:, None]  # points in the Frobenius ball
        if cons.startswith("nuclear"):  # symmetric, nuclear norm <= 1
            M = V.reshape(-1, 2, 2)
            M = 0.5 * (M + M.transpose(0, 2, 1))
            V = M[np.abs(np.linalg.eigvalsh(M)).sum(1) <= 1.0].reshape(-1, 4)
        assert empirical_risk(V, X, y, loss).min() >= r.lower_bound - 1e-13


def test_erm_input_checks():
    X, y = make_problem("auc_noisy", d=2).sample(20, seed=0)
    with pytest.raises(ValueError, match="matrix"):
        erm(X, y, "auc_hinge", "psd")
    with pytest.raises(ValueError, match="reg"):
        erm(X, y, "auc_hinge", reg=-1.0)
    w, value, cert = erm(X, y, "auc_squared")
    assert w.shape == (2,) and cert >= 0


@settings(max_examples=200, deadline=None)
@given(phi=st.integers(0, 3), tau=st.sampled_from([0.0, 0.01, 0.5]), q=st.sampled_from([1.5, 2.0, 3.0]),
       m=st.floats(-60.0, 60.0, allow_nan=False) | st.sampled_from([0.0, -0.0, 1.0, 1.0 - 36 * 0.01]))
def test_second_derivative_alone_is_phi_all_bit_for_bit(phi, tau, q, m):
    """The Hessian loops call phi_second instead of phi_all (skipping the value): same number."""
    from stabsim.kernels.risk_phi import phi_all, phi_second

    assert np.float64(phi_second(phi, q, tau, m)).tobytes() == np.float64(phi_all(phi, q, tau, m)[2]).tobytes()


@settings(max_examples=60, deadline=None)
@given(phi=st.integers(0, 3), nP=st.integers(1, 9), nN=st.integers(1, 9), scale=st.sampled_from([0.1, 1.0, 30.0]),
       seed=st.integers(0, 2**31 - 1))
def test_pn_rows_without_derivatives_gives_the_same_sums(phi, nP, nN, scale, seed):
    """The U-statistic asks pn_rows for its sums only (derivs=False): the same numbers."""
    from stabsim.kernels.risk_pn import pn_rows

    rng = np.random.default_rng(seed)
    ap, an = rng.standard_normal(nP) * scale, rng.standard_normal(nN) * scale
    res = []
    for derivs in (True, False):
        bufs = [np.full(nP, np.nan), np.full(nN, np.nan), np.full(nP, np.nan), np.full(nN, np.nan)]
        tot, sq = pn_rows(phi, 1.5, 0.0, ap, an, True, *bufs, derivs)
        res.append(np.concatenate([[tot, sq], bufs[0], bufs[1]]))
    assert res[0].tobytes() == res[1].tobytes()


def _pn_rows_reference(phi, q, tau, ap, an):
    """pn_rows's general branch as a plain loop: every term added in order (rowP_i over j, rowN_j
    over i, totsq over (i, j)), zero terms included."""
    from stabsim.kernels.risk_phi import phi_vd

    rowP, rowN = np.zeros(len(ap)), np.zeros(len(an))
    dP, dN = np.zeros(len(ap)), np.zeros(len(an))
    tot = totsq = 0.0
    for i in range(len(ap)):
        for j in range(len(an)):
            v, d1 = phi_vd(phi, q, tau, ap[i] - an[j])
            rowP[i] += v
            rowN[j] += v
            dP[i] += d1
            dN[j] += d1
            totsq += v * v
        tot += rowP[i]
    return tot, totsq, rowP, rowN, dP, dN


@settings(max_examples=80, deadline=None)
@given(phi=st.integers(0, 3), tau=st.sampled_from([0.0, 0.01, 0.5]), q=st.sampled_from([1.5, 2.5]),
       nP=st.integers(1, 9), nN=st.integers(1, 9), scale=st.sampled_from([0.1, 1.0, 30.0]),
       seed=st.integers(0, 2**31 - 1))
def test_pn_rows_general_branch_adds_every_term_in_order(phi, tau, q, nP, nN, scale, seed):
    """The general branch (fast=False, or a loss without a fast form), with derivatives and
    without them (where it keeps each row sum in a local and skips zero terms): the same bits as
    adding every term into the arrays in order (a plain loop here)."""
    from stabsim.kernels.risk_pn import pn_rows

    rng = np.random.default_rng(seed)
    ap, an = rng.standard_normal(nP) * scale, rng.standard_normal(nN) * scale
    tot, sq, rowP, rowN, dP, dN = _pn_rows_reference(phi, q, tau, ap, an)
    want = np.concatenate([[tot, sq], rowP, rowN])
    for derivs in (True, False):
        bufs = [np.full(nP, np.nan), np.full(nN, np.nan), np.full(nP, np.nan), np.full(nN, np.nan)]
        got = pn_rows(phi, q, tau, ap, an, np.bool_(False), *bufs, np.bool_(derivs))
        assert np.concatenate([got, bufs[0], bufs[1]]).tobytes() == want.tobytes()
        if derivs:
            assert np.concatenate([bufs[2], bufs[3]]).tobytes() == np.concatenate([dP, dN]).tobytes()
