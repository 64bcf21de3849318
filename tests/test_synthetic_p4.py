"""P4's data sets drawn lazily (``synthetic._p4_round``) are those of drawing every candidate.

The reference below is the sampler as it was before the lazy draw (every round draws its m x d
directions and m noise values in full), kept here verbatim as the definition of the data.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from stabsim.engine import synthetic
from stabsim.engine.synthetic import _Stream, make_problem


def _sphere(st, m, dim):
    g = st.normal((m, dim))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def _sample_p4_all_drawn(pb, n, stream):
    w, kap = pb.w_star_paper, pb.params["kappa"]
    Xs, ys = [], []
    while sum(len(a) for a in ys) < n:
        m = 2 * n + 16
        X = _sphere(stream, m, pb.d)
        noise = kap * stream.normal(m)
        if pb.params["kind"] == "lsq":
            y = X @ w + noise
            keep = np.abs(y) <= 0.5
        else:
            y = np.where(X @ w + noise > 0, 1.0, -1.0)
            keep = np.ones(m, dtype=bool)
        Xs.append(X[keep]); ys.append(y[keep])
    return np.concatenate(Xs)[:n], np.concatenate(ys)[:n]


def _both(pb, n, seed, rep):
    a, b = _Stream(seed, rep), _Stream(seed, rep)
    lazy = synthetic._sample_p4(pb, n, a)
    full = _sample_p4_all_drawn(pb, n, b)
    assert a.pos == b.pos      # the stream moves past the whole round either way
    return lazy, full


@pytest.mark.parametrize("name", ["p4_lsq", "p4_logistic"])
@pytest.mark.parametrize("kappa", [0.0, 0.15])
@pytest.mark.parametrize("n", [1, 7, 300, 5000, 20000])
def test_lazy_rounds_give_the_data_of_full_rounds(name, kappa, n):
    pb = make_problem(name, d=10, kappa=kappa)
    for rep in (0, 3):
        (X, y), (Xf, yf) = _both(pb, n, 20240709, rep)
        assert X.shape == (n, 10) and y.shape == (n,)
        np.testing.assert_array_equal(X, Xf)
        np.testing.assert_array_equal(y, yf)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 3000), scale=st.floats(0.1, 3.0), kappa=st.floats(0.0, 1.0), seed=st.integers(0, 2**31),
       d=st.integers(2, 12), lsq=st.booleans())
def test_lazy_rounds_match_for_any_keep_rate(n, scale, kappa, seed, d, lsq):
    """A large ||w*|| keeps few least-squares candidates (down to about 10 % at d = 2, ||w*|| = 3):
    several rounds, the last one partly drawn."""
    v = np.linspace(1.0, -0.5, d)
    w = scale * v / np.linalg.norm(v)
    pb = SimpleNamespace(w_star_paper=w, d=d, params={"kappa": kappa, "kind": "lsq" if lsq else "logistic"})
    (X, y), (Xf, yf) = _both(pb, n, seed, 1)
    np.testing.assert_array_equal(X, Xf)
    np.testing.assert_array_equal(y, yf)


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 200), d=st.integers(1, 12), block=st.integers(1, 64), seed=st.integers(0, 2**31))
def test_rows_normalised_block_by_block_equal_normalising_at_once(rows, d, block, seed):
    """``_normalise_rows`` divides each row by its own norm in blocks of rows: bit for bit
    ``G / np.linalg.norm(G, axis=1, keepdims=True)`` (the reduction is per row)."""
    G = np.random.default_rng(seed).normal(size=(rows, d))
    want = G / np.linalg.norm(G, axis=1, keepdims=True)
    synthetic._normalise_rows(G, block=block)
    assert G.tobytes() == want.tobytes()


def test_a_large_sample_holds_one_round_and_the_kept_rows():
    """F(w*)'s 400 000-point Monte Carlo sample (p4_lsq, kappa = 0.15, one round of m = 2n + 16
    candidates): the sampler's peak allocation is the round's m x d directions, the n x d kept rows
    and a few length-m vectors, not copies of the round (it was 177 MB; this bound is 134 MB)."""
    import tracemalloc

    n, d = 400_000, 10
    m = 2 * n + 16
    pb = make_problem("p4_lsq", d=d, kappa=0.15)
    tracemalloc.start()
    try:
        X, _ = pb.sample(n, 0, 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert X.shape == (n, d)
    assert peak <= 8 * (m * d + n * d + 6 * m)
