"""stabsim.kernels.allpairs against the naive double sum over pairs (tests/naive.py).

The reference is the definition: F_S(w) = 1/(n(n-1)) sum_{i != j} f(w; z_i, z_j) (P2 Alg. 1)
with f evaluated pair by pair by ``naive.pair_loss`` (written from the losses' definitions,
independently of stabsim.engine.losses), on S and on S' built by copying the data and replacing
one row (``naive.replaced``).  Tolerance 1e-10 relative (the issue's requirement): the fast
paths reorder sums of O(n^2) terms of size O(1), so double rounding gives ~1e-13.
"""

from __future__ import annotations

import numpy as np
import pytest

import naive as nv
from stabsim.kernels import allpairs as ap
from stabsim.kernels import allprev as apv
from stabsim.kernels import pair_stats as ps
from stabsim.engine.losses import get_loss

TOL = 1e-10

LOSSES = ["auc_squared", "auc_hinge", "auc_logistic",
          "auc_ordered_squared", "auc_ordered_hinge", "auc_ordered_logistic",
          "ranking_squared", "ranking_hinge", "ranking_logistic"]


def naive_allpairs(loss, w, X, y, q=2.0):
    n = len(y)
    tot, g = 0.0, np.zeros_like(w)
    for i in range(n):
        for j in range(n):
            if i != j:
                v, gr = nv.pair_loss(loss, w, X[i], y[i], X[j], y[j], q)
                tot += v
                g += gr
    return tot / (n * (n - 1)), g / (n * (n - 1))


def fast_allpairs(loss, w, Xext, yext, n, prime, k, krow, scale=1.0, q=None):
    L = get_loss(loss, q)
    g = np.zeros(Xext.shape[1])
    work = np.full(ap.allpairs_work_size(n), np.nan)  # scratch must not need initialising
    v = ap.allpairs_grad(L.form, L.phi, L.q, n, Xext, yext, prime, k, krow, w, scale, g, work)
    return v, g


def assert_close(fast, ref, what):
    (vf, gf), (vr, gr) = fast, ref
    scale = max(1.0, abs(vr))
    assert abs(vf - vr) <= TOL * scale, f"{what}: loss {vf!r} vs naive {vr!r}"
    gs = max(1.0, float(np.max(np.abs(gr))))
    assert np.max(np.abs(gf - gr)) <= TOL * gs, f"{what}: gradient differs by {np.max(np.abs(gf - gr)):.3e}"


def extended(X, y, xrep, yrep):
    """The kernel's layout: S's n rows, then the replacement row (krow = n)."""
    return np.ascontiguousarray(np.vstack([X, xrep[None]])), np.ascontiguousarray(np.r_[y, yrep])


def random_case(rng, n, d, pos_share=0.4):
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < pos_share, 1.0, -1.0)
    y[0], y[1] = 1.0, -1.0  # both classes present
    w = rng.normal(size=d) * 0.7
    return X, y, w


@pytest.mark.parametrize("loss", LOSSES)
def test_random_data_S_and_Sprime(loss):
    rng = np.random.default_rng(11)
    for n, d in ((2, 1), (3, 2), (17, 3), (40, 5)):
        X, y, w = random_case(rng, n, d)
        k = int(rng.integers(n))
        xrep, yrep = rng.normal(size=d), -y[k]  # replacement flips the label (class sizes change)
        Xe, ye = extended(X, y, xrep, yrep)
        assert_close(fast_allpairs(loss, w, Xe, ye, n, False, k, n), naive_allpairs(loss, w, X, y),
                     f"{loss} S n={n}")
        Xp, yp = nv.replaced(X, y, k, xrep, yrep)
        assert_close(fast_allpairs(loss, w, Xe, ye, n, True, k, n), naive_allpairs(loss, w, Xp, yp),
                     f"{loss} S' n={n}")
        # k = -1: S' = S
        assert_close(fast_allpairs(loss, w, Xe, ye, n, True, -1, n), naive_allpairs(loss, w, X, y),
                     f"{loss} k=-1 n={n}")


@pytest.mark.parametrize("loss", LOSSES)
def test_ties_and_exact_kinks(loss):
    """Small-integer data and w: scores are exact integers, many margins tie and many sit
    exactly on the hinge's kink m = 1 (where phi' = 0 by the convention m < 1 <=> active),
    and duplicate rows give identical scores."""
    rng = np.random.default_rng(5)
    n, d = 60, 3
    X = rng.integers(-2, 3, size=(n, d)).astype(float)
    X[10:20] = X[0]          # duplicated rows: tied scores across and within classes
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[0], y[1] = 1.0, -1.0
    for w in (np.array([1.0, 0.0, 0.0]), np.array([1.0, -1.0, 0.0]), np.array([0.5, 0.5, 0.0]),
              np.zeros(d)):
        Xe, ye = extended(X, y, X[3] + 1.0, -y[3])
        assert_close(fast_allpairs(loss, w, Xe, ye, n, False, 3, n), naive_allpairs(loss, w, X, y),
                     f"{loss} integer data w={w}")
        Xp, yp = nv.replaced(X, y, 3, X[3] + 1.0, -y[3])
        assert_close(fast_allpairs(loss, w, Xe, ye, n, True, 3, n), naive_allpairs(loss, w, Xp, yp),
                     f"{loss} integer data S' w={w}")
    if loss.endswith("hinge"):  # the kink is really exercised
        gam = 2.0 if loss.startswith("ranking") else 1.0
        w = np.array([1.0 / gam, 0.0, 0.0])  # in the list above for both gam
        s = X @ w
        m = gam * (s[y == 1][:, None] - s[y == -1][None, :])
        assert (m == 1.0).any() and (m < 1.0).any() and (m > 1.0).any()


@pytest.mark.parametrize("loss", LOSSES)
def test_one_class_data(loss):
    """All labels equal: every pair has c = 0: zero gradient; value 0 (AUC) or phi(0) (ranking)."""
    rng = np.random.default_rng(2)
    n, d = 12, 4
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    for lab in (1.0, -1.0):
        y = np.full(n, lab)
        Xe, ye = extended(X, y, X[0], lab)
        v, g = fast_allpairs(loss, w, Xe, ye, n, False, 0, n)
        assert_close((v, g), naive_allpairs(loss, w, X, y), f"{loss} one class {lab}")
        assert np.all(g == 0.0)
        # S' creates the other class by flipping one label
        Xp, yp = nv.replaced(X, y, 4, X[4], -lab)
        assert_close(fast_allpairs(loss, w, *extended(X, y, X[4], -lab), n, True, 4, n),
                     naive_allpairs(loss, w, Xp, yp), f"{loss} one class -> S' two classes")


def test_hand_computed_value():
    """x_P = (1, 0), x_N = (0, 1), w = (0.5, 0): margin w.(x_P - x_N) = 0.5 in both orders.
    auc_squared: each ordered pair (1 - 0.5)^2 = 0.25, average over n(n-1) = 2 pairs 0.25;
    gradient of each ordered pair -2 (0.5) (1, -1) = (-1, 1), average (-1, 1).
    auc_ordered: one pair carries it: 0.125 and (-0.5, 0.5).  auc_hinge: 0.5 and (-1, 1)."""
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    y = np.array([1.0, -1.0])
    Xe, ye = extended(X, y, X[0], 1.0)
    w = np.array([0.5, 0.0])
    for loss, v_ref, g_ref in (("auc_squared", 0.25, [-1.0, 1.0]), ("auc_ordered_squared", 0.125, [-0.5, 0.5]),
                               ("auc_hinge", 0.5, [-1.0, 1.0])):
        v, g = fast_allpairs(loss, w, Xe, ye, 2, False, -1, 2)
        assert v == pytest.approx(v_ref, abs=1e-15)
        np.testing.assert_allclose(g, g_ref, atol=1e-15)


def test_scale_and_accumulation():
    """g is accumulated (not overwritten), scaled by ``scale``; scale 0 leaves g unchanged."""
    rng = np.random.default_rng(8)
    X, y, w = random_case(rng, 25, 4)
    Xe, ye = extended(X, y, X[0], y[0])
    for loss in ("auc_squared", "auc_hinge", "auc_logistic"):
        L = get_loss(loss)
        v1, g1 = fast_allpairs(loss, w, Xe, ye, 25, False, -1, 25)
        g = np.full(4, 3.0)
        work = np.empty(ap.allpairs_work_size(25))
        v = ap.allpairs_grad(L.form, L.phi, L.q, 25, Xe, ye, False, -1, 25, w, -0.5, g, work)
        assert v == pytest.approx(v1, rel=1e-14)
        np.testing.assert_allclose(g, 3.0 - 0.5 * g1, rtol=1e-13, atol=1e-15)
        g0 = np.full(4, 3.0)
        v0 = ap.allpairs_grad(L.form, L.phi, L.q, 25, Xe, ye, False, -1, 25, w, 0.0, g0, work)
        assert v0 == pytest.approx(v1, rel=1e-14) and np.all(g0 == 3.0)


def test_qhinge_and_real_labels_ranking():
    rng = np.random.default_rng(9)
    X, y, w = random_case(rng, 20, 3)
    Xe, ye = extended(X, y, X[2] * 2, -y[2])
    for loss in ("auc_qhinge", "ranking_qhinge"):
        Xp, yp = nv.replaced(X, y, 2, X[2] * 2, -y[2])
        assert_close(fast_allpairs(loss, w, Xe, ye, 20, True, 2, 20, q=1.5),
                     naive_allpairs(loss.replace("qhinge", "qhinge"), w, Xp, yp, q=1.5), loss)
    # ranking with real-valued labels takes the general O(n^2 + n d) path
    yr = rng.normal(size=20)
    Xe, ye = extended(X, yr, X[5], 0.3)
    Xp, yp = nv.replaced(X, yr, 5, X[5], 0.3)
    for loss in ("ranking_squared", "ranking_hinge", "ranking_logistic"):
        assert_close(fast_allpairs(loss, w, Xe, ye, 20, False, 5, 20), naive_allpairs(loss, w, X, yr), loss)
        assert_close(fast_allpairs(loss, w, Xe, ye, 20, True, 5, 20), naive_allpairs(loss, w, Xp, yp), loss)


def test_bad_input_raises():
    rng = np.random.default_rng(1)
    X, y, w = random_case(rng, 10, 3)
    Xe, ye = extended(X, y, X[0], y[0])
    L = get_loss("auc_squared")
    g = np.zeros(3)
    with pytest.raises(ValueError, match="work must have length"):
        ap.allpairs_grad(L.form, L.phi, L.q, 10, Xe, ye, False, -1, 10, w, 1.0, g, np.empty(10))
    M = get_loss("metric_logistic")
    with pytest.raises(ValueError, match="form must be"):
        ap.allpairs_grad(M.form, M.phi, M.q, 10, Xe, ye, False, -1, 10, w, 1.0, g,
                         np.empty(ap.allpairs_work_size(10)))
    ye2 = ye.copy()
    ye2[3] = 0.0
    with pytest.raises(ValueError, match="labels"):
        ap.allpairs_grad(L.form, L.phi, L.q, 10, Xe, ye2, False, -1, 10, w, 1.0, g,
                         np.empty(ap.allpairs_work_size(10)))


def test_sort_helper_sorts():
    rng = np.random.default_rng(4)
    for n in (0, 1, 2, 15, 16, 17, 100, 5000):
        for a in (rng.normal(size=n), rng.integers(0, 3, size=n).astype(float), np.sort(rng.normal(size=n))[::-1].copy()):
            buf = np.concatenate([[7.0], a, np.zeros(200)])
            ap._qsort(buf, 1, 1 + n, buf, 1 + n + 10)
            np.testing.assert_array_equal(buf[1:1 + n], np.sort(a))
            assert buf[0] == 7.0


# ---- sufficient statistics ---------------------------------------------------------------------

@pytest.mark.parametrize("loss", ["auc_squared", "auc_ordered_squared", "ranking_squared"])
def test_allpairs_squared_stats(loss):
    rng = np.random.default_rng(3)
    L = get_loss(loss)
    for n, d in ((2, 1), (30, 4)):
        X, y, w = random_case(rng, n, d)
        xrep, yrep = rng.normal(size=d), -y[1]
        Xe, ye = extended(X, y, xrep, yrep)
        Xp, yp = nv.replaced(X, y, 1, xrep, yrep)
        for prime, ref in ((False, (X, y)), (True, (Xp, yp))):
            st = np.zeros(ps.stats_shape(d))
            ps.class_stats(n, Xe, ye, prime, 1, n, st)
            g = np.zeros(d)
            v = ps.allpairs_squared_stats(L.form, n, st, w, 1.0, g, np.empty(d))
            assert_close((v, g), naive_allpairs(loss, w, *ref), f"{loss} stats prime={prime}")


@pytest.mark.parametrize("loss", ["auc_squared", "auc_ordered_squared", "ranking_squared"])
def test_allprev_squared_matches_loop(loss):
    """P0 Alg. 1 / P3 GIGA all-previous average: O(d^2) statistics vs the O(t) loop (naive
    pair_loss over the previous draws, repeats included), on S and on S' (row k replaced)."""
    rng = np.random.default_rng(6)
    L = get_loss(loss)
    n, d, T = 15, 3, 40
    X, y, _ = random_case(rng, n, d)
    k, xrep, yrep = 4, rng.normal(size=d), -y[4]
    Xe, ye = extended(X, y, xrep, yrep)
    Xp, yp = nv.replaced(X, y, k, xrep, yrep)
    idx = rng.integers(n, size=T + 1)
    idx[:3] = k  # the replaced example is drawn (repeatedly) early
    for prime, (XR, yR) in ((False, (X, y)), (True, (Xp, yp))):
        row = lambda i: n if (prime and i == k) else int(i)  # noqa: E731
        st = np.zeros(ps.stats_shape(d))
        ps.stats_add(st, Xe, ye, row(idx[0]))
        for t in range(1, T + 1):
            w = rng.normal(size=d)
            a = idx[t]
            g = np.zeros(d)
            v = ps.allprev_squared(L.form, w, Xe, ye, row(a), t, st, 1.0, g, np.empty(d))
            vr, gr = 0.0, np.zeros(d)
            for b in idx[:t]:
                vb, gb = nv.pair_loss(loss, w, XR[a], yR[a], XR[b], yR[b])
                vr += vb / t
                gr += gb / t
            assert_close((v, g), (vr, gr), f"{loss} t={t} prime={prime}")
            # the tight O(t d) loop agrees too
            g2 = np.zeros(d)
            v2 = apv.allprev_pairs(L.form, L.phi, L.q, w, Xe, ye, row(a), idx[:t].astype(np.int64), t,
                                  prime, k, n, 1.0, g2)
            assert_close((v2, g2), (vr, gr), f"{loss} loop t={t}")
            ps.stats_add(st, Xe, ye, row(a))


@pytest.mark.parametrize("loss", ["auc_hinge", "auc_logistic", "ranking_logistic"])
def test_allprev_pairs_other_losses(loss):
    rng = np.random.default_rng(7)
    L = get_loss(loss)
    n, d = 12, 3
    X, y, w = random_case(rng, n, d)
    idx = rng.integers(n, size=30).astype(np.int64)
    for t in (1, 5, 29):
        a = int(idx[t])
        g = np.zeros(d)
        v = apv.allprev_pairs(L.form, L.phi, L.q, w, X, y, a, idx[:t], t, False, -1, n, 1.0, g)
        vr, gr = 0.0, np.zeros(d)
        for b in idx[:t]:
            vb, gb = nv.pair_loss(loss, w, X[a], y[a], X[b], y[b])
            vr += vb / t
            gr += gb / t
        assert_close((v, g), (vr, gr), f"{loss} t={t}")


@pytest.mark.parametrize("loss", LOSSES + ["auc_qhinge"])
def test_allprev_gradient_alone_is_the_same_gradient(loss):
    """P3 GIGA's gradient passes discard the average loss: ``allprev_pairs_grad`` (no loss values,
    so no log1p for the logistic loss) must give allprev_pairs's gradient bit for bit, on S and S',
    at margins on both sides of the kinks and at large |m| (the logistic loss's two branches)."""
    rng = np.random.default_rng(9)
    L = get_loss(loss, q=1.5) if loss == "auc_qhinge" else get_loss(loss)
    n, d, t = 14, 3, 40
    X, y, _ = random_case(rng, n, d)
    if loss.startswith("ranking"):
        y = np.round(rng.normal(size=n), 1)
    Xe, ye = extended(X, y, rng.normal(size=d), -y[3])
    idx = rng.integers(n, size=t + 1).astype(np.int64)
    for scale_w in (0.05, 1.0, 40.0):
        for prime in (False, True):
            w = rng.normal(size=d) * scale_w
            a = n if (prime and idx[t] == 3) else int(idx[t])
            g1, g2 = np.full(d, 0.25), np.full(d, 0.25)
            apv.allprev_pairs(L.form, L.phi, L.q, w, Xe, ye, a, idx, t, prime, 3, n, 0.7, g1)
            apv.allprev_pairs_grad(L.form, L.phi, L.q, w, Xe, ye, a, idx, t, prime, 3, n, 0.7, g2)
            np.testing.assert_array_equal(g2, g1)


@pytest.mark.parametrize("loss", ["auc_hinge", "auc_logistic", "auc_squared", "ranking_logistic", "ranking_hinge"])
def test_allprev_counts_matches_naive(loss):
    """P0 Alg. 1's all-previous average from the multiplicities of the previous draws
    (``allprev_counts``, used once t > n) against the naive sum over the draws, repeats
    included, on S and on S' (row k replaced; the replaced example drawn early and often)."""
    rng = np.random.default_rng(8)
    L = get_loss(loss)
    n, d, T = 9, 3, 70
    X, y, _ = random_case(rng, n, d)
    if loss.startswith("ranking"):
        y = rng.normal(size=n)
    k, xrep, yrep = 2, rng.normal(size=d), -y[2]
    Xe, ye = extended(X, y, xrep, yrep)
    Xp, yp = nv.replaced(X, y, k, xrep, yrep)
    idx = rng.integers(n, size=T + 1)
    idx[:4] = k
    for prime, (XR, yR) in ((False, (X, y)), (True, (Xp, yp))):
        row = lambda i: n if (prime and i == k) else int(i)  # noqa: E731
        for t in (1, 8, 9, 10, 40, T):
            w = rng.normal(size=d)
            counts = np.bincount(idx[:t], minlength=n).astype(float)
            g = np.zeros(d)
            v = apv.allprev_counts(L.form, L.phi, L.q, w, Xe, ye, row(idx[t]), counts, n, t, prime, k, n,
                                  1.0, g)
            vr, gr = 0.0, np.zeros(d)
            a = idx[t]
            for b in idx[:t]:
                vb, gb = nv.pair_loss(loss, w, XR[a], yR[a], XR[b], yR[b])
                vr += vb / t
                gr += gb / t
            assert_close((v, g), (vr, gr), f"{loss} t={t} prime={prime}")


def test_logistic_separated_and_wide_range():
    """Logistic: nearly separated data (tiny losses: the block-product log path's absolute
    accuracy) and a score range beyond 600 (the per-pair fallback)."""
    rng = np.random.default_rng(12)
    n, d = 30, 2
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    y[0], y[1] = 1.0, -1.0
    X[0, 0], X[1, 0] = 1.0, -1.0   # score range 2 |w|: > 600 for |w| = 320 (margins < 709, where
    Xe, ye = extended(X, y, X[0], y[0])  # the reference's exp(m) still fits a double)
    for scale_w in (3.0, 15.0, 320.0):
        w = np.array([scale_w, 0.0])
        for loss in ("auc_logistic",) if scale_w > 100 else ("auc_logistic", "ranking_logistic"):
            assert_close(fast_allpairs(loss, w, Xe, ye, n, False, -1, n), naive_allpairs(loss, w, X, y),
                         f"{loss} |w|={scale_w}")


@pytest.mark.parametrize("loss", ["auc_squared", "auc_hinge", "ranking_logistic"])
def test_drop_in_for_full_batch_step(loss):
    """P2 Alg. 1 twin run with allpairs_grad in place of the FULL_BATCH double loop (the wiring
    the kernel will use) reproduces run_twin(algorithm="p2_alg1") step for step: same final
    ||w_T - w'_T|| and cumulative loss, with the kernel's shared noise sigma normal(key, t d + c)."""
    from stabsim import run_twin
    from stabsim.engine import rng
    from stabsim.engine.neighbours import as_neighbour, make_neighbours
    from stabsim.engine.twin_runs import extend_with_replacements

    r = np.random.default_rng(10)
    n, d, T, eta, sigma, R = 15, 3, 6, 0.3, 0.2, 3
    X, y, _ = random_case(r, n, d)
    L = get_loss(loss)
    reps = np.arange(R, dtype=np.int64)
    kidx, xrep, yrep = make_neighbours(as_neighbour("flip"), X[None], y[None], reps, 0)
    Xe, Ye, krows = extend_with_replacements(X[None], y[None], xrep, yrep)
    Xe, Ye = Xe[0], Ye[0]
    ds = run_twin(X, y, algorithm="p2_alg1", loss=loss, eta=eta, T=T, replicates=R, seed=0,
                  neighbour="flip", sigma=sigma, checkpoints=[T])
    work = np.empty(ap.allpairs_work_size(n))
    for rr in range(R):
        noise = rng.normals(0, rr, rng.STREAM_NOISE, (T + 1) * d).reshape(T + 1, d) * sigma
        w, wp, lsum = np.zeros(d), np.zeros(d), 0.0
        for t in range(1, T + 1):
            g, gp = np.zeros(d), np.zeros(d)
            lsum += ap.allpairs_grad(L.form, L.phi, L.q, n, Xe, Ye, False, kidx[rr], krows[rr], w, 1.0, g, work)
            ap.allpairs_grad(L.form, L.phi, L.q, n, Xe, Ye, True, kidx[rr], krows[rr], wp, 1.0, gp, work)
            w = w - eta * (g + noise[t])
            wp = wp - eta * (gp + noise[t])
        assert np.linalg.norm(w - wp) == pytest.approx(float(ds.dist_iterate[rr, -1]), rel=1e-9, abs=1e-13)
        assert lsum == pytest.approx(float(ds.loss_path[rr, -1]), rel=1e-10)
