"""The P1 Sec. 6 comparison kernels (stabsim.kernels.baselines) against the slow references in
tests/naive_baselines.py on identical randomness, properties of the buffer rules and of
SPAUC's gradient, and a tiny end-to-end ``p1_table1`` study."""

import math

import numpy as np
import pytest
import scipy.stats

import naive_baselines as nb
from stabsim.engine import rng
from stabsim.engine.p1_baselines import METHODS, run_method
from stabsim.kernels.baselines import STREAM_RESERVOIR

SEED = 5


def _data(n=14, d=3, seed=0):
    g = np.random.default_rng(seed)
    X = g.uniform(-1, 1, size=(n, d))
    y = np.where(np.arange(n) % 3 == 0, 1.0, -1.0)   # 5 positives, 9 negatives
    X[y == 1] += 0.3
    return X, y


def _output_at(method, ws, t):
    """The method's output after t steps from the reference's iterate list ws = [w_0..w_T]."""
    if method == "p1_alg1":
        return sum(ws[max(j - 2, 0)] for j in range(1, t + 1)) / t
    if method == "sgd_pair":
        return sum(ws[:t]) / t
    return sum(ws[1:t + 1]) / t


def test_reservoir_stream_differs_from_engine_streams():
    engine = {rng.STREAM_INDEX, rng.STREAM_NOISE, rng.STREAM_NOISE_PRIME, rng.STREAM_INIT, rng.STREAM_NEIGHBOUR,
              rng.STREAM_DATA, rng.STREAM_SPLIT}
    assert STREAM_RESERVOIR not in engine
    assert nb.STREAM_RESERVOIR == STREAM_RESERVOIR


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("radius", [0.4, math.inf])
def test_kernel_matches_reference(method, radius):
    """Same data, same stabsim.engine.rng draws: iterates and outputs agree to 1e-12 at every checkpoint
    (the kernel is resumed between checkpoints)."""
    X, y = _data()
    T = 40
    kw = {}
    ref_kw = {}
    if method == "olp":
        kw["buffer"], ref_kw["s"] = 4, 4          # fill (t <= 4), repopulation (t = 5), RS-x (t > 5)
    if method == "oam_gra":
        kw["buffer"], ref_kw["N"] = 3, 3          # both reservoirs overflow within T
    eta = 0.3
    ck = [1, 2, 5, 6, 17, T]
    tr = run_method(method, X, y, eta=eta, T=T, radius=radius, seed=SEED, replicate=2, checkpoints=ck, **kw)
    ws, out = nb.REFERENCES[method](X, y, eta, T, radius, SEED, 2, **ref_kw)
    assert len(ws) == T + 1
    assert np.abs(ws[-1]).max() > 1e-3                    # the run moved
    for c, t in enumerate(ck):
        np.testing.assert_allclose(tr.last[c], ws[t], rtol=0, atol=1e-12)
        np.testing.assert_allclose(tr.outputs[c], _output_at(method, ws, t), rtol=0, atol=1e-12)
    np.testing.assert_allclose(tr.outputs[-1], out, rtol=0, atol=1e-12)
    if math.isfinite(radius):
        assert max(np.linalg.norm(w) for w in ws) <= radius * (1 + 1e-12)
    assert np.all(np.diff(tr.cpu) >= 0) and tr.cpu[0] >= 0



@pytest.mark.parametrize("d", [1, 5, 40])
def test_partner_sweep_is_the_pairwise_loop_bit_for_bit(d):
    """OLP's and OAM_gra's sweep over the buffer (``_hinge_partners``: four margins summed at once)
    leaves the gradient of one ``_hinge_pair`` call per partner, in order, bit for bit: for 0..11
    partners (the four-at-a-time part, the remainder, both), active and inactive hinges mixed."""
    from stabsim.kernels.baselines import _hinge_pair, _hinge_partners

    g0 = np.random.default_rng(d)
    X = g0.normal(size=(30, d))
    y = np.where(np.arange(30) < 10, 1.0, -1.0)
    partners = np.arange(10, 30, dtype=np.int64)
    w = g0.normal(size=d) * 2.0 / math.sqrt(d)     # margins of either sign: some hinges inactive
    active = 0
    for i, v in ((0, w), (3, -w)):
        for m in range(12):
            want = g0.normal(size=d)
            got = want.copy()
            for b in partners[:m]:
                active += _hinge_pair(v, X, i, y[i], b, y[b], 0.25, want) > 0
            _hinge_partners(v, X, y, i, partners, m, 0.25, got)
            assert np.array_equal(got, want)
    assert 0 < active < 2 * sum(range(12))

@pytest.mark.parametrize("alg", ["p1_alg1", "sgd_pair"])
def test_single_trajectory_equals_engine(alg):
    """Table 1's Alg. 1 and SGD_pair are the engine's algorithms: the single-trajectory kernels
    reproduce run_twin's output on S (neighbour "same", same seed and replicate id)."""
    from stabsim import run_twin

    X, y = _data(n=20)
    ds = run_twin(X, y, algorithm=alg, loss="auc_hinge", constraint=("l2", 0.5), eta=0.2, T=120, replicates=[3],
                  seed=SEED, neighbour="same", checkpoints=[7, 120], record_outputs=True)
    tr = run_method(alg, X, y, eta=0.2, T=120, radius=0.5, seed=SEED, replicate=3, checkpoints=[7, 120])
    np.testing.assert_allclose(tr.outputs, ds["output"].sel(run="S").values[0], rtol=0, atol=1e-12)


def test_replicates_use_different_streams():
    X, y = _data()
    a = run_method("olp", X, y, eta=0.3, T=30, seed=SEED, replicate=0, buffer=4).outputs
    b = run_method("olp", X, y, eta=0.3, T=30, seed=SEED, replicate=1, buffer=4).outputs
    c = run_method("olp", X, y, eta=0.3, T=30, seed=SEED, replicate=0, buffer=4).outputs
    assert not np.allclose(a, b)
    np.testing.assert_array_equal(a, c)


def _chi2_uniform(counts):
    """p-value of a chi-square goodness-of-fit test against the uniform distribution."""
    counts = np.asarray(counts, dtype=float)
    exp = counts.sum() / counts.size
    stat = float(((counts - exp) ** 2 / exp).sum())
    return scipy.stats.chi2.sf(stat, counts.size - 1)


def test_rs_x_slots_are_uniform_over_the_stream():
    """Kar et al. 2013, RS-x: after t points every buffer slot is marginally uniform on z_1..z_t
    (the property OLP's analysis needs).  Positions 1..t are fed as the points; 3000 replicates."""
    s, t_end, reps = 4, 24, 3000
    counts = np.zeros((s, t_end))
    for r in range(reps):
        kr = rng.key(SEED, r, STREAM_RESERVOIR)
        buf = []
        for t in range(1, t_end + 1):
            buf = nb.rs_x(buf, t, s, t, kr)
        for c, v in enumerate(buf):
            counts[c, v - 1] += 1
    for c in range(s):
        assert _chi2_uniform(counts[c]) > 1e-3, counts[c]


def test_algorithm_r_inclusion_probability():
    """OAM's reservoir (Algorithm R): after k points each one is in the buffer with probability N/k."""
    N, k_end, reps = 3, 15, 3000
    inc = np.zeros(k_end)
    for r in range(reps):
        kr = rng.key(SEED, r, STREAM_RESERVOIR)
        buf = []
        for k in range(1, k_end + 1):
            buf = nb.reservoir(buf, k, N, k, k, kr)
        for v in set(buf):
            inc[v - 1] += 1
    p = N / k_end
    se = math.sqrt(p * (1 - p) / reps)
    assert np.all(np.abs(inc / reps - p) < 4.5 * se), inc / reps   # 15 tests, 4.5 SE each
    # and the buffer never holds a point twice (Algorithm R samples without replacement)
    assert inc.sum() == N * reps


def test_spauc_gradient_is_unbiased_for_the_pairwise_square_risk():
    """E_{z ~ Unif(S)} g(w; z) = p(1-p) grad (1/(n+ n-)) sum_{+,-} (1 - w.(x_i - x_j))^2, at random w."""
    X, y = _data(n=11, d=4, seed=3)
    p = np.mean(y == 1)
    mp, mn = X[y == 1].mean(0), X[y == -1].mean(0)
    for s in range(3):
        w = np.random.default_rng(s).normal(size=4)
        mean_g = sum(nb.spauc_grad(w, X[i], y[i], p, mp, mn) for i in range(len(y))) / len(y)
        np.testing.assert_allclose(mean_g, nb.spauc_objective_grad(w, X, y), rtol=1e-12, atol=1e-12)


def test_methods_learn_a_separable_problem():
    """On a linearly separable AUC problem every method's output ranks the test set well."""
    from stabsim.risk import auc

    g = np.random.default_rng(7)
    X = g.uniform(-1, 1, size=(400, 5))
    y = np.where(X @ np.array([1.0, -1.0, 0.5, 0.0, 0.0]) > 0, 1.0, -1.0)
    for m in METHODS:
        tr = run_method(m, X[:300], y[:300], eta=0.05, T=3000, radius=10.0, seed=SEED)
        assert auc(tr.outputs[-1], X[300:], y[300:]) > 0.95, m


@pytest.mark.parametrize("kw, msg", [
    (dict(method="adam"), "unknown method"),
    (dict(method="p1_alg1", buffer=3), "buffer applies to olp and oam_gra"),
    (dict(method="olp", checkpoints=[5, 3]), "checkpoints must be increasing"),
    (dict(method="olp", eta=-1.0), "eta must be"),
    (dict(method="spauc", T=0), "T must be"),
])
def test_bad_input(kw, msg):
    X, y = _data()
    args = dict(eta=0.1, T=10) | {k: v for k, v in kw.items() if k != "method"}
    with pytest.raises(ValueError, match=msg):
        run_method(kw["method"], X, y, **args)


def test_splits_partition_rows():
    from stabsim.experiments.p1_reproduction import inner_split, log_steps, split_indices

    n = 53
    tests = [split_indices(3, 1, f, n, 5)[1] for f in range(5)]
    allv = np.concatenate(tests)
    assert sorted(allv.tolist()) == list(range(n))
    tr, te = split_indices(3, 1, 2, n, 5)
    assert set(tr).isdisjoint(te) and len(tr) + len(te) == n
    np.testing.assert_array_equal(te, split_indices(3, 1, 2, n, 5)[1])
    assert not np.array_equal(te, split_indices(3, 2, 2, n, 5)[1])
    a, b = inner_split(3, 7, 40, n, 0.25)
    assert sorted(np.r_[a, b].tolist()) == list(range(40)) and len(b) == 10
    s = log_steps(1000, 12)
    assert s[-1] == 1000 and len(s) == 12 and np.all(np.diff(s) > 0)
    s = log_steps(13, 12)
    assert s[-1] == 13 and np.all(np.diff(s) > 0) and s[0] >= 1


def test_tiny_study_end_to_end(tmp_path):
    from stabsim.reporting.analyse import analyse
    from stabsim.study import parse_study, run_study

    text = """
[study]
kind = "p1_table1"
check = "p1_table1"
seed = 3
replicates = 5
[data]
dataset = "diabetes"
[algorithm]
passes = 1
cv_passes = 0.5
eta_grid = [1.0, 10.0]
checkpoints = 4
[sweep]
method = ["p1_alg1", "olp"]
"""
    spec = parse_study(text, path="tiny_p1t1.toml")
    res = run_study(spec, tmp_path, progress=False)
    rec = analyse(res.data_path.parent)
    assert rec["error"] is None, rec
    keys = [r["key"] for r in rec["rows"]]
    assert keys.count("P1.Table1") == 2 and "P1.Fig1.cpu" in keys and "P1.Sec6.competitive" in keys
    for r in rec["rows"]:
        assert r["verdict"] in ("consistent", "inconclusive", "inconsistent")
        if r["verdict"] == "inconsistent":
            assert r["explanation"]
    summary = (res.data_path.parent / "summary.md").read_text()
    assert "0.831 +- 0.030" in summary          # P1 Table 1, diabetes, Ours (the paper's number)
    import xarray as xr
    with xr.open_dataset(res.data_path) as ds:
        assert ds["auc"].shape[-2:] == (5, 4)
        assert np.all((ds["auc"] >= 0) & (ds["auc"] <= 1))
        assert np.all(ds["auc"].isel(ck=-1) > 0.7)     # diabetes is far from random after one pass
        assert set(np.unique(ds["c_chosen"])) <= {1.0, 10.0}


def test_bad_study_values():
    from stabsim.study import StudyError, parse_study

    base = '[study]\nkind = "p1_table1"\nreplicates = {r}\n[algorithm]\n{extra}\n'
    with pytest.raises(StudyError, match="multiple of"):
        parse_study(base.format(r=7, extra=""))
    with pytest.raises(StudyError, match="passes"):
        parse_study(base.format(r=5, extra="passes = {usps = 3}"))
    with pytest.raises(StudyError, match="eta_grid"):
        parse_study(base.format(r=5, extra="eta_grid = []"))


def test_tuning_on_several_threads_changes_no_number(tmp_path):
    """The tuning runs of a cell run on numba's threads at once (p1_table1_cell); every number but the
    measured CPU time is the same as with one thread."""
    import numba
    import xarray as xr

    from stabsim.study import parse_study, run_study

    text = ('[study]\nkind = "p1_table1"\ncheck = "p1_table1"\nseed = 4\nreplicates = 5\n[data]\ndataset = "diabetes"\n'
            '[algorithm]\nmethod = "olp"\npasses = 1\ncv_passes = 0.5\neta_grid = [0.1, 1.0, 10.0]\ncheckpoints = 3\n')
    before = numba.get_num_threads()
    out = {}
    try:
        for k in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(k)
            res = run_study(parse_study(text, path=f"t{k}.toml"), tmp_path / str(k), progress=False)
            with xr.open_dataset(res.data_path) as ds:
                out[k] = ds.drop_vars("cpu").load()
    finally:
        numba.set_num_threads(before)
    first = out[1]
    for ds in out.values():
        assert set(ds.data_vars) == set(first.data_vars)
        for v in first.data_vars:
            assert np.array_equal(ds[v].values, first[v].values, equal_nan=True), v
    assert np.unique(first["c_chosen"]).size >= 1 and np.all(np.isfinite(first["cv_auc"]))
