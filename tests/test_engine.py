"""The twin kernel against the slow references in tests/naive.py, on identical randomness."""

import math

import numpy as np
import pytest

import stabsim
from stabsim.engine import rng

import naive

SEED = 7


def _data(n=12, d=3, seed=0, labels="pm"):
    g = np.random.default_rng(seed)
    X = g.normal(size=(n, d)) / math.sqrt(d)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0) if labels == "pm" else g.uniform(-1, 1, n)
    return X, y


def _replacement(d, seed=1):
    g = np.random.default_rng(seed)
    return g.normal(size=d), -1.0


def _twin(X, y, k, xk, yk, **kw):
    kw.setdefault("checkpoints", [kw["T"]])
    return stabsim.run_twin(X, y, neighbour=(k, xk, yk), seed=SEED, record_outputs=True, **kw)


def _index_stream(rep, count, n):
    key = naive.stream(SEED, rep, rng.STREAM_INDEX)
    return [naive.index(key, c, n) for c in range(count)]


@pytest.mark.parametrize("loss,constraint,s", [
    ("auc_hinge", "none", 1), ("auc_hinge", ("l2", 0.3), 1), ("auc_squared", "none", 1),
    ("auc_logistic", ("l2", 0.5), 1), ("auc_ordered_hinge", "none", 1),
    ("ranking_logistic", "none", 1), ("auc_hinge", ("l2", 0.5), 3), ("auc_squared", "none", 2),
    ("ranking_logistic", "none", 4), ("auc_ordered_hinge", ("l2", 0.5), 16),
])
def test_p1_alg1_and_buffer_match_reference(loss, constraint, s):
    X, y = _data(labels="real" if loss.startswith("ranking") else "pm")
    xk, yk = _replacement(X.shape[1])
    T, k, R = 40, 4, 3
    alg = "p1_alg1" if s == 1 else "p1_buffer"
    kw = dict(algorithm=alg, loss=loss, constraint=constraint, eta=0.07, T=T, replicates=R,
              buffer=None if s == 1 else s)
    avg = _twin(X, y, k, xk, yk, **kw)
    last = _twin(X, y, k, xk, yk, output="last", **kw)
    Xp, yp = naive.replaced(X, y, k, xk, yk)
    etas = np.r_[np.nan, np.full(T, 0.07)]
    for r in range(R):
        idx = _index_stream(r, T + s, len(y))
        wT, out, _ = naive.p1_alg1(X, y, loss, constraint, etas, idx, np.zeros(3), s=s)
        wTp, outp, _ = naive.p1_alg1(Xp, yp, loss, constraint, etas, idx, np.zeros(3), s=s)
        np.testing.assert_allclose(avg.output[r, -1, 0], out, rtol=0, atol=1e-12)
        np.testing.assert_allclose(avg.output[r, -1, 1], outp, rtol=0, atol=1e-12)
        np.testing.assert_allclose(last.output[r, -1, 0], wT, rtol=0, atol=1e-12)
        np.testing.assert_allclose(last.output[r, -1, 1], wTp, rtol=0, atol=1e-12)
        assert abs(float(avg.dist_iterate[r, -1]) - np.linalg.norm(wT - wTp)) < 1e-12
        assert abs(float(avg.dist_output[r, -1]) - np.linalg.norm(out - outp)) < 1e-12


def test_p1_alg1_output_convention_by_hand():
    """T = 3, d = 1: x = +1 (y = +1) and x = -1 (y = -1), eta = 0.1, w_0 = 0.

    While 2w < 1 the hinge is active, so a step on a +/- pair (either order) adds
    eta * |x - x'| = 0.2 and a step on a same-index pair adds 0.  P1's output after T = 3
    is (eta w_{-1} + eta w_0 + eta w_1) / (3 eta) = (0 + 0 + w_1) / 3.
    """
    X = np.array([[1.0], [-1.0]])
    y = np.array([1.0, -1.0])
    ds = stabsim.run_twin(X, y, algorithm="p1_alg1", loss="auc_hinge", eta=0.1, T=3, replicates=4,
                          seed=SEED, neighbour="same", checkpoints=[1, 2, 3], record_outputs=True)
    for r in range(4):
        i = _index_stream(r, 4, 2)  # i_0, i_1, i_2, i_3
        w1 = 0.2 * (i[1] != i[0])
        assert float(ds.output[r, 2, 0, 0]) == pytest.approx((0 + 0 + w1) / 3, abs=1e-15)
        # after 1 step the output is w_{-1} = w_0 = 0, after 2 steps mean(w_{-1}, w_0) = 0
        assert float(ds.output[r, 0, 0, 0]) == 0.0 and float(ds.output[r, 1, 0, 0]) == 0.0
    # P0's convention on the same data: (1/T) sum_{t=1}^T w_t (P0 numbering) = mean(w_0, w_1, w_2)
    ds0 = stabsim.run_twin(X, y, algorithm="p0_alg1", loss="auc_hinge", eta=0.1, T=3, replicates=2,
                           seed=SEED, neighbour="same", checkpoints=[3], record_outputs=True)
    for r in range(2):
        i = _index_stream(r, 4, 2)  # P0: i_1, i_2, i_3, i_4
        # step t pairs i_{t+1} with i_1..i_t and uses the average gradient (times eta)
        w = [0.0]
        for t in range(1, 3):
            active = sum(i[t] != i[kk] for kk in range(t)) / t
            w.append(w[-1] + 0.1 * 2 * active)
        assert float(ds0.output[r, 0, 0, 0]) == pytest.approx(sum(w) / 3, abs=1e-15)


def test_p1_alg2_online_stream_matches_reference():
    X, y = _data(n=31)
    xk, yk = _replacement(3)
    T = 30
    ds = _twin(X, y, 5, xk, yk, algorithm="p1_alg2", loss="auc_logistic", eta=("sqrt", 0.3), T=T,
               replicates=1)
    etas = np.r_[np.nan, 0.3 / np.sqrt(np.arange(1, T + 1))]
    Xp, yp = naive.replaced(X, y, 5, xk, yk)
    idx = list(range(T + 1))  # the stream z_0, z_1, ..., z_T is the rows in order
    _, out, _ = naive.p1_alg1(X, y, "auc_logistic", "none", etas, idx, np.zeros(3))
    _, outp, _ = naive.p1_alg1(Xp, yp, "auc_logistic", "none", etas, idx, np.zeros(3))
    np.testing.assert_allclose(ds.output[0, -1, 0], out, atol=1e-12, rtol=0)
    np.testing.assert_allclose(ds.output[0, -1, 1], outp, atol=1e-12, rtol=0)


@pytest.mark.parametrize("loss,constraint", [("auc_hinge", ("l2", 0.4)), ("auc_squared", "none")])
def test_p0_alg1_matches_reference(loss, constraint):
    X, y = _data(n=10)
    xk, yk = _replacement(3)
    T = 25
    ds = _twin(X, y, 2, xk, yk, algorithm="p0_alg1", loss=loss, constraint=constraint, eta=0.2, T=T,
               replicates=2)
    last = _twin(X, y, 2, xk, yk, algorithm="p0_alg1", loss=loss, constraint=constraint, eta=0.2, T=T,
                 replicates=2, output="mean_lag0")
    Xp, yp = naive.replaced(X, y, 2, xk, yk)
    for r in range(2):
        idx = _index_stream(r, T + 1, 10)
        wlast, out = naive.p0_alg1(X, y, loss, constraint, 0.2, T, idx, np.zeros(3))
        wlastp, outp = naive.p0_alg1(Xp, yp, loss, constraint, 0.2, T, idx, np.zeros(3))
        np.testing.assert_allclose(ds.output[r, -1, 0], out, atol=1e-12, rtol=0)
        np.testing.assert_allclose(ds.output[r, -1, 1], outp, atol=1e-12, rtol=0)
        assert abs(float(ds.dist_iterate[r, -1]) - np.linalg.norm(wlast - wlastp)) < 1e-12
        # output "mean_lag0" averages the post-step iterates: out + (w_T - w_0) / T, with w_0 = 0
        np.testing.assert_allclose(last.output[r, -1, 0], out + wlast / T, atol=1e-12, rtol=0)
        np.testing.assert_allclose(last.output[r, -1, 1], outp + wlastp / T, atol=1e-12, rtol=0)


@pytest.mark.parametrize("alg,loss,sigma", [
    ("sgd_pair", "auc_hinge", 0.0), ("p4_alg2", "auc_logistic", 0.3),
    ("p4_alg1", "point_lsq", 0.5), ("p4_alg1", "point_logistic", 0.0), ("p4_alg1", "point_hinge", 0.2),
])
def test_uniform_pair_and_pointwise_dp_sgd_match_reference(alg, loss, sigma):
    X, y = _data(n=9)
    xk, yk = _replacement(3)
    T, R = 30, 2
    cons = ("l2", 1.0)
    ds = _twin(X, y, 3, xk, yk, algorithm=alg, loss=loss, constraint=cons, eta=0.1, T=T,
               replicates=R, sigma=sigma)
    Xp, yp = naive.replaced(X, y, 3, xk, yk)
    etas = np.r_[np.nan, np.full(T, 0.1)]
    pairwise = alg != "p4_alg1"
    for r in range(R):
        key = naive.stream(SEED, r, rng.STREAM_INDEX)
        draws = [tuple(int(v) for v in rng.pair_ij(key, t, 9)) if pairwise else naive.index(key, t, 9)
                 for t in range(1, T + 1)]
        if pairwise:
            assert all(i != j for i, j in draws)
        knoise = naive.stream(SEED, r, rng.STREAM_NOISE)
        noises = [naive.noise_vector(knoise, t, 3, sigma) for t in range(1, T + 1)]
        _, out = naive.dp_sgd(X, y, loss, cons, etas, draws, np.zeros(3), noises, pairwise)
        _, outp = naive.dp_sgd(Xp, yp, loss, cons, etas, draws, np.zeros(3), noises, pairwise)
        np.testing.assert_allclose(ds.output[r, -1, 0], out, atol=1e-12, rtol=0)
        np.testing.assert_allclose(ds.output[r, -1, 1], outp, atol=1e-12, rtol=0)


def test_full_batch_gradient_perturbation_matches_reference():
    X, y = _data(n=7, labels="real")
    xk, yk = _replacement(3)
    T = 6
    w0 = np.array([0.1, -0.2, 0.05])
    for cons in ("none", ("l2", 0.2)):
        ds = _twin(X, y, 1, xk, yk, algorithm="p2_alg1", loss="ranking_logistic", eta=0.5, T=T,
                   replicates=1, sigma=0.05, w0=w0, constraint=cons)
        knoise = naive.stream(SEED, 0, rng.STREAM_NOISE)
        noises = [naive.noise_vector(knoise, t, 3, 0.05) for t in range(1, T + 1)]
        etas = np.r_[np.nan, np.full(T, 0.5)]
        th = naive.full_batch_gd(X, y, "ranking_logistic", etas, w0, noises, cons)
        Xp, yp = naive.replaced(X, y, 1, xk, yk)
        thp = naive.full_batch_gd(Xp, yp, "ranking_logistic", etas, w0, noises, cons)
        np.testing.assert_allclose(ds.output[0, -1, 0], th, atol=1e-12, rtol=0)
        np.testing.assert_allclose(ds.output[0, -1, 1], thp, atol=1e-12, rtol=0)


@pytest.mark.parametrize("loss,constraint", [
    ("metric_logistic", ("nuclear", 0.5)), ("metric_hinge", ("frobenius", 0.8)), ("metric_logistic", "psd"),
])
def test_metric_learning_matches_reference(loss, constraint):
    X, y = _data(n=8, d=3)
    xk, yk = _replacement(3)
    T = 20
    w0 = (0.1 * np.eye(3)).ravel()
    ds = _twin(X, y, 0, xk, yk, algorithm="p1_alg1", loss=loss, constraint=constraint, eta=0.3, T=T,
               replicates=2, w0=w0)
    Xp, yp = naive.replaced(X, y, 0, xk, yk)
    etas = np.r_[np.nan, np.full(T, 0.3)]
    for r in range(2):
        idx = _index_stream(r, T + 1, 8)
        _, out, _ = naive.p1_alg1(X, y, loss, constraint, etas, idx, w0)
        _, outp, _ = naive.p1_alg1(Xp, yp, loss, constraint, etas, idx, w0)
        np.testing.assert_allclose(ds.output[r, -1, 0], out, atol=1e-12, rtol=0)
        np.testing.assert_allclose(ds.output[r, -1, 1], outp, atol=1e-12, rtol=0)


def test_per_replicate_data_sets_for_on_average_stability():
    """X of shape (R, n, d): replicate r runs on its own data set (P4 Def. 6)."""
    pb = stabsim.make_problem("auc_separable", d=3)
    R, n, T = 3, 10, 15
    Xs, ys = zip(*(pb.sample(n, seed=3, replicate=r) for r in range(R)))
    X, y = np.stack(Xs), np.stack(ys)
    ds = stabsim.run_twin(X, y, algorithm="sgd_pair", loss="auc_hinge", eta=0.2, T=T, replicates=R,
                          seed=SEED, neighbour="fresh", problem=pb, checkpoints=[T], record_outputs=True)
    etas = np.r_[np.nan, np.full(T, 0.2)]
    for r in range(R):
        k = int(ds.k[r])
        xz, yz = pb.sample(1, SEED, r, stream=rng.STREAM_NEIGHBOUR)
        key = naive.stream(SEED, r, rng.STREAM_INDEX)
        draws = [tuple(int(v) for v in rng.pair_ij(key, t, n)) for t in range(1, T + 1)]
        zero = [np.zeros(3)] * T
        _, out = naive.dp_sgd(X[r], y[r], "auc_hinge", "none", etas, draws, np.zeros(3), zero, True)
        Xp, yp = naive.replaced(X[r], y[r], k, xz[0], yz[0])
        _, outp = naive.dp_sgd(Xp, yp, "auc_hinge", "none", etas, draws, np.zeros(3), zero, True)
        np.testing.assert_allclose(ds.output[r, -1, 0], out, atol=1e-12, rtol=0)
        np.testing.assert_allclose(ds.output[r, -1, 1], outp, atol=1e-12, rtol=0)


def test_loss_path_is_the_sum_of_step_losses():
    """loss_path(t) = sum_{j<=t} f(w_{j-1}; z_{i_j}, z_{i_{j-1}}) on S (P1 Alg. 1)."""
    X, y = _data()
    T = 12
    ds = stabsim.run_twin(X, y, algorithm="p1_alg1", loss="auc_logistic", eta=0.1, T=T, replicates=1,
                          seed=SEED, neighbour="same", checkpoints=[T], w_ref=np.array([0.3, 0, 0]))
    idx = _index_stream(0, T + 1, len(y))
    etas = np.r_[np.nan, np.full(T, 0.1)]
    _, _, ws = naive.p1_alg1(X, y, "auc_logistic", "none", etas, idx, np.zeros(3))
    vals = [naive.pair_loss("auc_logistic", ws[t - 1], X[idx[t]], y[idx[t]], X[idx[t - 1]], y[idx[t - 1]])[0]
            for t in range(1, T + 1)]
    ref = [naive.pair_loss("auc_logistic", np.array([0.3, 0, 0]), X[idx[t]], y[idx[t]], X[idx[t - 1]],
                           y[idx[t - 1]])[0] for t in range(1, T + 1)]
    assert float(ds.loss_path[0, 0]) == pytest.approx(sum(vals), abs=1e-12)
    assert float(ds.loss_ref_path[0, 0]) == pytest.approx(sum(ref), abs=1e-12)
    assert float(ds.eta2_loss_path[0, 0]) == pytest.approx(0.01 * sum(vals), abs=1e-12)


@pytest.mark.parametrize("loss", ["auc_hinge", "auc_squared", "auc_logistic", "auc_ordered_hinge"])
def test_full_batch_auc_losses_match_reference(loss):
    """P2 Alg. 1 on +-1 labels runs through stabsim.kernels.allpairs (sorted scores for the hinge,
    closed form for the squared loss, factorised exponentials for the logistic loss); the
    naive reference is the plain double sum over ordered pairs."""
    X, y = _data(n=9)
    xk, yk = _replacement(3)
    T = 8
    w0 = np.array([0.3, -0.2, 0.1])
    ds = _twin(X, y, 2, xk, yk, algorithm="p2_alg1", loss=loss, eta=0.4, T=T, replicates=1, sigma=0.1,
               w0=w0, constraint=("l2", 0.6))
    knoise = naive.stream(SEED, 0, rng.STREAM_NOISE)
    noises = [naive.noise_vector(knoise, t, 3, 0.1) for t in range(1, T + 1)]
    etas = np.r_[np.nan, np.full(T, 0.4)]
    Xp, yp = naive.replaced(X, y, 2, xk, yk)
    for run, (Xr, yr) in enumerate(((X, y), (Xp, yp))):
        th = naive.full_batch_gd(Xr, yr, loss, etas, w0, noises, ("l2", 0.6))
        np.testing.assert_allclose(ds.output[0, -1, run], th, atol=1e-12, rtol=0)


@pytest.mark.parametrize("loss", ["auc_logistic", "auc_squared", "ranking_hinge", "ranking_squared"])
def test_p0_alg1_long_run_matches_reference(loss):
    """T well above d, so the squared loss switches to running class statistics (O(d^2) per
    step) and the other losses use the tight all-previous loop; ``ranking_squared`` on real
    labels must fall back to the loop (class statistics need labels +-1)."""
    X, y = _data(n=15, labels="real" if loss.startswith("ranking") else "pm")
    xk, yk = _replacement(3)
    T = 60
    ds = _twin(X, y, 4, xk, yk, algorithm="p0_alg1", loss=loss, eta=0.1, T=T, replicates=2)
    Xp, yp = naive.replaced(X, y, 4, xk, yk)
    for r in range(2):
        idx = _index_stream(r, T + 1, 15)
        for run, (Xr, yr) in enumerate(((X, y), (Xp, yp))):
            _, out = naive.p0_alg1(Xr, yr, loss, "none", 0.1, T, idx, np.zeros(3))
            np.testing.assert_allclose(ds.output[r, -1, run], out, atol=1e-12, rtol=0)


@pytest.mark.parametrize("alg,loss,constraint,sigma,indep,output", [
    ("p1_alg1", "auc_hinge", ("l2", 0.25), 0.0, False, None),
    ("p1_alg1", "auc_logistic", "none", 0.0, False, "t_weighted_lag2"),
    ("p1_alg2", "auc_ordered_squared", ("l2", 0.5), 0.0, False, "last"),
    ("sgd_pair", "auc_hinge", ("l2", 0.3), 0.0, False, "mean_lag0"),
    ("sgd_pair", "auc_hinge", "none", 0.0, False, None),
    ("p4_alg2", "ranking_logistic", ("l2", 0.4), 0.3, True, None),
    ("p4_alg1", "point_lsq", ("l2", 0.5), 0.2, False, None),
    ("p4_alg1", "point_hinge", "none", 0.0, False, "last"),
])
def test_fast_kernels_give_the_same_numbers_as_the_general_path(monkeypatch, alg, loss, constraint,
                                                               sigma, indep, output):
    """The single-pair kinds fuse the update with the norm, reuse cached norms and let an
    unmoved iterate share its slot; the general path accumulates the gradient into a buffer
    and projects with constraints.project.  Both must give the same numbers exactly, except the
    lag-1 and lag-2 outputs, which the fast kinds sum with deferred weights (to rounding)."""
    import functools

    from stabsim.kernels import twin as kt
    X, y = _data(n=40 if alg == "p1_alg2" else 12, labels="real" if loss.startswith("ranking") else "pm")
    kw = dict(algorithm=alg, loss=loss, constraint=constraint, eta=0.3, T=35, replicates=3, seed=SEED,
              neighbour="flip", sigma=sigma, independent_noise=indep, output=output, record_outputs=True,
              w_ref=np.array([0.1, -0.2, 0.3]), checkpoints=[1, 2, 7, 20, 35])
    fast = stabsim.run_twin(X, y, **kw)
    monkeypatch.setattr(stabsim.engine.twin_runs, "twin_kernel", functools.partial(kt.twin_kernel, kind=kt.GENERAL))
    general = stabsim.run_twin(X, y, **kw)
    assert kt.kernel_kind(kt.PREVIOUS if alg.startswith("p1") else
                          (kt.POINTWISE if alg == "p4_alg1" else kt.UNIFORM_PAIR), 1,
                          stabsim.get_loss(loss).form) != kt.GENERAL
    for v in ("dist_iterate", "loss_path", "loss_ref_path", "eta2_loss_path"):
        np.testing.assert_array_equal(fast[v].values, general[v].values, err_msg=v)
    lag = stabsim.get_algorithm(alg, output=output).avg_lag
    for v in ("output", "dist_output"):
        if lag not in (1, 2):
            np.testing.assert_array_equal(fast[v].values, general[v].values, err_msg=v)
        else:
            # lags 1, 2: the fast kind adds k unchanged iterates at once, (sum of k weights) * w,
            # where the general path adds them one by one; both are within T rounding errors
            # of the exact weighted sum (relative to its size, |weights| * max |w| / sum weights)
            scale = float(np.max(np.abs(fast.output.values)))
            bound = 4 * 35 * np.finfo(float).eps * scale
            np.testing.assert_allclose(fast[v].values, general[v].values, rtol=0, atol=bound, err_msg=v)


@pytest.mark.parametrize("alg,output", [("p1_alg1", None), ("sgd_pair", None), ("p1_alg1", "t_weighted_lag2")])
def test_constant_step_stored_as_one_number_gives_the_same_numbers(alg, output):
    """run_twin passes a constant step size as one number (stride 0, no T-long array); an
    explicit array of the same constant must give exactly the same results and coordinates."""
    X, y = _data(n=12, labels="pm")
    kw = dict(algorithm=alg, loss="auc_hinge", T=200, replicates=3, seed=SEED, neighbour="flip",
              output=output, record_outputs=True, checkpoints=[1, 9, 64, 200])
    from stabsim.engine.steps import kernel_step_sizes
    assert kernel_step_sizes(0.07, 200)[1] == 0 and kernel_step_sizes(np.full(200, 0.07), 200)[1] == 1
    a = stabsim.run_twin(X, y, eta=0.07, **kw)
    b = stabsim.run_twin(X, y, eta=np.full(200, 0.07), **kw)
    for v in list(a.data_vars) + ["sum_eta", "sum_eta2", "eta_t"]:
        np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)
