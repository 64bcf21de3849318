"""The fast path of many small ``run_twin`` calls (the worst-neighbour search: 9120 calls in
P1's tightness sweep): the recorded arrays without the Dataset, the neighbours' keys in one
compiled loop, no memory query for small calls.  Same numbers as before."""

from __future__ import annotations

import re

import numpy as np
import pytest
import xarray as xr

from stabsim import run_twin
from stabsim.engine import rng
from stabsim.engine.neighbours import Neighbour, as_neighbour, make_neighbours
from stabsim.runtime.resources import CHECK_MEMORY_FROM, ResourceError, check_memory


def _data(n=30, d=3, seed=0):
    g = np.random.default_rng(seed)
    X = g.standard_normal((n, d))
    y = np.where(g.random(n) < .5, 1.0, -1.0)
    y[:2] = [1, -1]
    return X, y


def test_raw_record_is_the_dataset_before_it_is_built():
    X, y = _data()
    kw = dict(algorithm="p1_alg1", loss="auc_hinge", constraint="l2:1", eta=0.1, T=40, replicates=5, seed=3,
              neighbour="farthest", record_outputs=True, progress=False)
    ds = run_twin(X, y, **kw)
    rec = run_twin(X, y, raw=True, **kw)
    xr.testing.assert_identical(rec.dataset().drop_attrs(), ds.drop_attrs())
    np.testing.assert_array_equal(rec.var("dist_output"), ds["dist_output"].values)
    with pytest.raises(ValueError, match="unknown recorded variable 'dist'.*dist_iterate"):
        rec.var("dist")


def _neighbours_one_by_one(nb, X, Y, reps, seed):
    """make_neighbours as it was: one replicate at a time, scalar keys."""
    nS, n, d = X.shape
    kidx, xrep, yrep = np.empty(len(reps), np.int64), np.empty((len(reps), d)), np.empty(len(reps))
    for r, rep in enumerate(reps):
        Xs, Ys = X[r if nS > 1 else 0], Y[r if nS > 1 else 0]
        key = rng.key(seed, int(rep), rng.STREAM_NEIGHBOUR)
        k = int(rng.randint(key, 0, n)) if nb.k == "random" else int(nb.k)
        kidx[r] = k
        if nb.kind == "given":
            xrep[r], yrep[r] = nb.x, nb.y
        elif nb.kind == "flip":
            xrep[r], yrep[r] = Xs[k], -Ys[k]
        else:
            xrep[r], yrep[r] = Xs[k], Ys[k]
    return kidx, xrep, yrep


@pytest.mark.parametrize("neighbour", ["same", "flip", (4, np.array([0.5, -1.0, 2.0]), -1.0),
                                       Neighbour(kind="flip", k=0), Neighbour(kind="given", x=(1.0, 2.0, 3.0), y=1.0)])
@pytest.mark.parametrize("per_replicate", [False, True])
def test_neighbours_built_at_once_equal_one_by_one(neighbour, per_replicate):
    reps = np.array([0, 3, 9, 10, 250], dtype=np.int64)
    X, y = _data()
    if per_replicate:
        X = np.stack([_data(seed=s)[0] for s in range(len(reps))])
        y = np.stack([_data(seed=s)[1] for s in range(len(reps))])
    else:
        X, y = X[None], y[None]
    nb = as_neighbour(neighbour)
    got = make_neighbours(nb, X, y, reps, 11)
    want = _neighbours_one_by_one(nb, X, y, reps, 11)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_vector_keys_and_indices_are_the_scalar_ones():
    reps = np.array([0, 1, 7, 2**40 + 3], dtype=np.int64)
    ks = rng.keys(5, reps, rng.STREAM_NEIGHBOUR)
    assert ks.dtype == np.uint64
    assert [int(k) for k in ks] == [int(rng.key(5, int(r), rng.STREAM_NEIGHBOUR)) for r in reps]
    assert rng.randints(ks, 0, 13).tolist() == [int(rng.randint(k, 0, 13)) for k in ks]
    with pytest.raises(ValueError, match=re.escape("seed must be an integer in [0, 2**63 - 1]")):
        rng.keys(-1, reps, 1)


def test_only_requests_of_some_size_query_the_memory(monkeypatch):
    monkeypatch.setenv("STABSIM_MEMORY_LIMIT", "1M")
    check_memory(CHECK_MEMORY_FROM - 1, "a small call", "")        # not checked
    with pytest.raises(ResourceError, match="needs about 64.0 MiB.*only 1.0 MiB"):
        check_memory(CHECK_MEMORY_FROM, "a call", "shrink it")
