"""Invariants of the engine, property-tested with hypothesis."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import stabsim
from stabsim.engine.constraints import get_constraint
from stabsim.engine.losses import get_loss

finite = st.floats(-3, 3, allow_nan=False, allow_infinity=False)

PAIRWISE_ALGS = ["p1_alg1", "p1_buffer", "sgd_pair", "p0_alg1", "p4_alg2", "p2_alg1"]


@settings(max_examples=25)
@given(alg=st.sampled_from(PAIRWISE_ALGS + ["p4_alg1"]),
       lossname=st.sampled_from(["hinge", "squared", "logistic"]),
       n=st.integers(3, 9), T=st.integers(1, 20), seed=st.integers(0, 2 ** 31),
       sigma=st.sampled_from([0.0, 0.5]), radius=st.sampled_from([None, 0.3]))
def test_identical_neighbour_gives_zero_distance_everywhere(alg, lossname, n, T, seed, sigma, radius):
    """S' = S (neighbour 'same'): both runs see the same data and randomness -> distance exactly 0.
    ``mirror_identical=False``: the S' run is computed (the default reports the S run for both)."""
    loss = ("point_" if alg == "p4_alg1" else "auc_") + ("lsq" if alg == "p4_alg1" and lossname == "squared" else lossname)
    X = np.random.default_rng(seed % 1000).normal(size=(n, 2))
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    ds = stabsim.run_twin(X, y, algorithm=alg, loss=loss, eta=0.3, T=T, replicates=3, seed=seed,
                          neighbour="same", sigma=sigma, constraint="none" if radius is None else ("l2", radius),
                          checkpoints=np.arange(1, T + 1), mirror_identical=False)
    assert np.all(ds.dist_iterate.values == 0.0)
    assert np.all(ds.dist_output.values == 0.0)


vec = arrays(np.float64, 9, elements=finite)


@settings(max_examples=60)
@given(a=vec, b=vec, which=st.sampled_from([("l2", 1.0), ("frobenius", 0.7), ("nuclear", 1.5), "psd", "none"]))
def test_projections_are_nonexpansive_and_idempotent(a, b, which):
    c = get_constraint(which)
    pa, pb = c.project(a, 3), c.project(b, 3)
    if c.matrix:  # the matrix sets hold symmetric matrices; their projection symmetrises first
        sym = lambda v: ((v.reshape(3, 3) + v.reshape(3, 3).T) / 2).ravel()
        a_, b_ = sym(a), sym(b)
    else:
        a_, b_ = a, b
    assert np.linalg.norm(pa - pb) <= np.linalg.norm(a_ - b_) + 1e-9
    np.testing.assert_allclose(c.project(pa, 3), pa, atol=1e-9)
    if c.name == "nuclear":
        assert np.abs(np.linalg.eigvalsh(pa.reshape(3, 3))).sum() <= 1.5 + 1e-9
    if c.name == "psd":
        assert np.linalg.eigvalsh(pa.reshape(3, 3)).min() >= -1e-9
    if c.name in ("l2", "frobenius"):
        assert np.linalg.norm(pa) <= c.radius + 1e-12


@settings(max_examples=80)
@given(name=st.sampled_from(["auc_hinge", "auc_squared", "auc_logistic", "auc_qhinge", "ranking_logistic",
                             "ranking_hinge", "metric_logistic", "metric_hinge", "point_lsq",
                             "point_logistic", "point_hinge"]),
       w=arrays(np.float64, 4, elements=finite), xa=arrays(np.float64, 2, elements=finite),
       xb=arrays(np.float64, 2, elements=finite), ya=st.sampled_from([-1.0, 1.0]),
       yb=st.sampled_from([-1.0, 1.0]))
def test_gradients_match_finite_differences(name, w, xa, xb, ya, yb):
    loss = get_loss(name, q=1.5 if "qhinge" in name else None)
    w = w if loss.matrix else w[:2]
    za, zb = (xa, ya), (xb, yb)
    f = (lambda v: loss.value_grad(v, za, zb)[0]) if loss.pairwise else (lambda v: loss.value_grad(v, za)[0])
    _, g = loss.value_grad(w, za, zb) if loss.pairwise else loss.value_grad(w, za)
    h = 1e-6
    # stay away from the kink of the hinge-type losses, where no gradient exists
    if "hinge" in name:
        for e in np.eye(w.size):
            assume(abs(f(w + 1e-3 * e) - 2 * f(w) + f(w - 1e-3 * e)) < 1e-9)
    fd = np.array([(f(w + h * e) - f(w - h * e)) / (2 * h) for e in np.eye(w.size)])
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-5)


_THREAD_SCRIPT = r"""
import json, sys, numpy as np, numba, stabsim
pb = stabsim.make_problem("auc_noisy", d=4)
X, y = pb.sample(30, seed=2)
out = {}
for alg, loss, sigma in (("p1_alg1", "auc_hinge", 0.0), ("p4_alg2", "auc_logistic", 0.4), ("p0_alg1", "auc_squared", 0.0)):
    ds = stabsim.run_twin(X, y, algorithm=alg, loss=loss, eta=0.05, T=300, replicates=6, seed=11,
                          neighbour="flip", sigma=sigma, record_outputs=True)
    out[alg] = ds.output.values.tobytes().hex() + ds.dist_output.values.tobytes().hex()
out["threads"] = numba.get_num_threads()
print(json.dumps(out))
"""


def test_bit_identical_for_one_and_two_threads():
    res = []
    for threads in ("1", "2"):
        env = dict(os.environ, NUMBA_NUM_THREADS=threads)
        p = subprocess.run([sys.executable, "-c", _THREAD_SCRIPT], env=env, capture_output=True, text=True,
                           timeout=600)
        assert p.returncode == 0, p.stderr
        res.append(json.loads(p.stdout.strip().splitlines()[-1]))
    assert res[0].pop("threads") == 1 and res[1].pop("threads") == 2
    assert res[0] == res[1]


@pytest.mark.parametrize("alg,sigma", [("p1_alg1", 0.0), ("p4_alg2", 0.3)])
def test_bit_identical_across_chunkings(alg, sigma):
    pb = stabsim.make_problem("auc_noisy", d=3)
    X, y = pb.sample(20, seed=5)
    kw = dict(algorithm=alg, loss="auc_logistic", eta=0.1, T=200, seed=9, neighbour="fresh", problem=pb,
              sigma=sigma, record_outputs=True)
    whole = stabsim.run_twin(X, y, replicates=np.arange(7), **kw)
    parts = [stabsim.run_twin(X, y, replicates=ids, **kw) for ids in ([4, 5, 6], [0, 1], [2, 3])]
    import xarray as xr
    joined = xr.concat(parts, dim="replicate").sortby("replicate")
    for v in ("output", "dist_output", "dist_iterate", "loss_path", "k"):
        assert joined[v].values.tobytes() == whole[v].values.tobytes()


@pytest.mark.parametrize("kwargs,message", [
    (dict(eta=0.0), "eta must be a finite number > 0"), (dict(eta=-1.0), "> 0"), (dict(T=0), "T must be"),
    (dict(loss="auc_hinje"), "Did you mean 'auc_hinge'"), (dict(algorithm="p1_alg"), "Did you mean"),
    (dict(constraint=("l2", -1.0)), "radius > 0"), (dict(constraint="ball"), "unknown constraint"),
    (dict(sigma=-1.0), "sigma"), (dict(replicates=0), "replicates must be"),
    (dict(loss="point_lsq"), "pairwise"), (dict(seed=-3), "seed must be"),
])
def test_bad_arguments_raise_clear_errors(kwargs, message):
    X = np.random.default_rng(0).normal(size=(6, 2))
    y = np.array([1.0, -1, 1, -1, 1, -1])
    base = dict(algorithm="p1_alg1", loss="auc_hinge", eta=0.1, T=5, replicates=2, seed=0)
    base.update(kwargs)
    with pytest.raises(ValueError, match=message):
        stabsim.run_twin(X, y, **base)


@pytest.mark.parametrize("X,y,message", [
    (np.ones((5,)), np.ones(5), "2-D"),
    (np.ones((5, 2)), np.ones(4), "rows but y has"),
    (np.array([[np.nan, 1.0], [0, 1], [1, 1]]), np.array([1.0, -1, 1]), "NaN or inf"),
    (np.ones((4, 2)), np.ones(4), "both classes"),
    (np.ones((4, 2)), np.array([1.0, 0.0, 1.0, -1.0]), r"labels in \{-1, \+1\}"),
    (np.ones((1, 2)), np.ones(1), "n >= 2"),
])
def test_bad_data_raise_clear_errors(X, y, message):
    with pytest.raises(ValueError, match=message):
        stabsim.run_twin(X, y, algorithm="p1_alg1", loss="auc_hinge", eta=0.1, T=3, replicates=1)


def test_online_algorithm_needs_one_row_per_step():
    X = np.random.default_rng(0).normal(size=(10, 2))
    y = np.where(np.arange(10) % 2 == 0, 1.0, -1.0)
    with pytest.raises(ValueError, match="n >= 21"):
        stabsim.run_twin(X, y, algorithm="p1_alg2", loss="auc_hinge", eta=0.1, T=20, replicates=1)


def test_log_checkpoints():
    ck = stabsim.log_checkpoints(10 ** 6)
    assert ck[0] == 1 and ck[-1] == 10 ** 6 and np.all(np.diff(ck) > 0) and 25 <= ck.size <= 31
    assert math.isclose(np.median(np.diff(np.log10(ck[5:]))), 6 / 29, rel_tol=0.2)


@given(etas=arrays(np.float64, st.integers(1, 300), elements=st.floats(1e-6, 10.0)),
       picks=st.lists(st.integers(0, 10 ** 6), min_size=1, max_size=12))
def test_checkpoint_sums_are_the_sums_to_rounding(etas, picks):
    """sum_eta and sum_eta2 at the checkpoints against math.fsum (correctly rounded).  Positive
    terms summed in any order: relative error at most (number of additions) * eps, and the
    code makes at most T/8 + 3 + C + 8 of them along any path."""
    from stabsim.kernels.twin import checkpoint_sums
    T = etas.size
    full = np.concatenate([[np.nan], etas])
    ck = np.unique(np.array([1 + p % T for p in picks], dtype=np.int64))
    got = checkpoint_sums(full, np.int64(1), ck)
    bound = (T / 8 + 3 + ck.size + 8) * np.finfo(float).eps
    for ci, t in enumerate(ck):
        want1 = math.fsum(etas[:t])
        want2 = math.fsum(etas[:t] ** 2)   # the squares are rounded the same way in both
        assert abs(got[0, ci] - want1) <= bound * want1
        assert abs(got[1, ci] - want2) <= bound * want2


@given(eta=st.floats(1e-6, 10.0), T=st.integers(1, 5000),
       picks=st.lists(st.integers(0, 10 ** 6), min_size=1, max_size=12))
def test_checkpoint_sums_of_a_constant_step_size_are_those_of_the_array(eta, T, picks):
    """A constant step size (stride 0, one number) takes a shortcut (one of the eight equal
    partial sums): bit for bit the numbers of the same constant written out as an array."""
    from stabsim.kernels.twin import checkpoint_sums
    ck = np.unique(np.array([1 + p % T for p in picks], dtype=np.int64))
    short = checkpoint_sums(np.array([eta]), np.int64(0), ck)
    full = checkpoint_sums(np.concatenate([[np.nan], np.full(T, eta)]), np.int64(1), ck)
    np.testing.assert_array_equal(short, full)
