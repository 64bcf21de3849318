"""``run_twin(mirror_identical=True)``: a replicate whose S' is S bit for bit, with shared noise,
computes the run on S once and reports it for both runs.  Checked against computing the S' run
(``mirror_identical=False``) on every kernel kind, output rule, noise setting and constraint:
the datasets must be equal bit for bit."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import stabsim
from stabsim.engine.twin_runs import mirrored_kidx

CASES = [("p1_alg1", {}), ("p1_alg1", {"output": "last"}), ("p1_buffer", {"buffer": 3}), ("sgd_pair", {}),
         ("p0_alg1", {}), ("p4_alg2", {}), ("p2_alg1", {}), ("p4_alg1", {}), ("p1_alg1", {"loss": "auc_squared"}),
         ("p0_alg1", {"loss": "auc_squared"}),   # all-previous pairs from running class statistics
         ("sgd_pair", {"w_ref": np.array([0.2, -0.1])}), ("p1_buffer", {"buffer": 2, "w_ref": np.array([0.0, 0.3])})]


def _run(X, y, alg, extra, mirror, **kw):
    loss = extra.get("loss", "point_logistic" if alg == "p4_alg1" else "auc_hinge")
    kw.update({k: v for k, v in extra.items() if k != "loss"})
    return stabsim.run_twin(X, y, algorithm=alg, loss=loss, eta=0.3, replicates=3, record_outputs=True,
                            mirror_identical=mirror, progress=False, **kw)


def _assert_same(a, b):
    assert set(a.data_vars) == set(b.data_vars)
    for v in a.data_vars:
        np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v, strict=True)
    differ = {k for k in set(a.attrs) | set(b.attrs) if str(a.attrs.get(k)) != str(b.attrs.get(k))}
    assert differ <= {"created"}, differ   # the creation time stamp


@settings(max_examples=30, deadline=None)
@given(case=st.sampled_from(CASES), n=st.integers(4, 9), T=st.integers(1, 25), seed=st.integers(0, 2 ** 31),
       sigma=st.sampled_from([0.0, 0.5]), radius=st.sampled_from([None, 0.3]))
def test_mirrored_run_equals_computed_run(case, n, T, seed, sigma, radius):
    alg, extra = case
    X = np.random.default_rng(seed % 1000).normal(size=(n, 2))
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    kw = dict(T=T, seed=seed, neighbour="same", sigma=sigma, constraint="none" if radius is None else ("l2", radius),
              checkpoints=np.arange(1, T + 1))
    _assert_same(_run(X, y, alg, extra, True, **kw), _run(X, y, alg, extra, False, **kw))


def test_mirror_with_per_replicate_data_and_a_given_identical_replacement():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3, 12, 4))
    y = np.where(rng.random((3, 12)) < 0.5, 1.0, -1.0)
    y[:, :2] = [1.0, -1.0]
    kw = dict(T=200, seed=5, neighbour="same", checkpoints=[1, 50, 200])
    _assert_same(_run(X, y, "p1_alg1", {}, True, **kw), _run(X, y, "p1_alg1", {}, False, **kw))
    Xs, ys = X[0], y[0]
    kw["neighbour"] = (4, Xs[4].copy(), float(ys[4]))   # a 'given' replacement equal to z_4
    _assert_same(_run(Xs, ys, "sgd_pair", {}, True, **kw), _run(Xs, ys, "sgd_pair", {}, False, **kw))


def test_mirrored_kidx_marks_exactly_the_identical_replacements():
    X = np.arange(12.0).reshape(1, 4, 3)
    y = np.array([[1.0, -1.0, 1.0, -1.0]])
    kidx = np.array([0, 1, 2, 3])
    xrep = X[0].copy()
    yrep = y[0].copy()
    xrep[1, 2] += 1e-12          # a different feature
    yrep[2] = -yrep[2]           # a flipped label
    np.testing.assert_array_equal(mirrored_kidx(X, y, kidx, xrep, yrep), [-1, 1, 2, -1])
    X[0, 3, 0] = 0.0
    xrep[3, 0] = -0.0            # equal as numbers, not bit for bit: computed, not mirrored
    assert mirrored_kidx(X, y, kidx, xrep, yrep)[3] == 3


def test_independent_noise_is_never_mirrored():
    """S' = S with independent noise: the two runs differ (the S' run is computed)."""
    X = np.random.default_rng(0).normal(size=(10, 3))
    y = np.where(np.arange(10) % 2 == 0, 1.0, -1.0)
    ds = _run(X, y, "p1_alg1", {}, True, T=30, seed=1, neighbour="same", sigma=0.5, independent_noise=True,
              checkpoints=[30])
    assert np.all(ds.dist_iterate.values > 0)


def test_p3_giga_mirror_equals_computed_run_on_every_variant():
    """P3's GIGA kernel: with S' = S and shared noise it copies the S gradient for S'; the
    datasets equal those that sum it on S' as well (``mirror_identical=False``)."""
    from stabsim import privacy

    pa = privacy.algorithms
    rng = np.random.default_rng(4)
    X = rng.normal(size=(24, 3))
    y = np.where(np.arange(24) % 3 == 0, 1.0, -1.0)
    for v in pa.P3_VARIANTS:
        cfg = pa.P3GigaConfig(variant=v, eps=1.0, delta=1 / 24, alpha=1.0, T1=6)
        kw = dict(replicates=3, seed=2, neighbour="same", record_outputs=True)
        a = pa.p3_giga(X, y, cfg, mirror_identical=True, **kw)
        b = pa.p3_giga(X, y, cfg, mirror_identical=False, **kw)
        assert a.attrs["privacy_sigma"] > 0, v
        _assert_same(a, b)
