"""P1 Thm 8/9's path statistics (``experiments/p1_path.path_stats``): evaluating each unordered pair
once (auc, ranking) gives the numbers of evaluating every ordered pair, bit for bit.

The reference is the same kernel with ``reuse=False`` (the plain ordered-pair loop through
``losses.pair_loss_grad``): an exact identity of two evaluation schemes, not a tolerance."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stabsim.experiments.p1_path import path_stats
from stabsim.engine.losses import AUC, AUC_ORDERED, HINGE, LOGISTIC, QHINGE, RANKING, SQUARED


def _stats(form, phi, q, W, X3, y3, idx, reuse):
    K, p = W.shape
    out = [np.full(K, np.nan) for _ in range(3)]
    path_stats(form, phi, q, W, X3, y3, idx, *out, np.zeros((K, p)), np.zeros((K, p)),
               np.zeros((K, X3.shape[2])), reuse)
    return out


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 9), d=st.integers(1, 4), K=st.integers(1, 150), form=st.sampled_from([AUC, RANKING, AUC_ORDERED]),
       phi=st.sampled_from([HINGE, SQUARED, LOGISTIC, QHINGE]), seed=st.integers(0, 2**31 - 1))
def test_once_per_unordered_pair_is_bit_identical(n, d, K, form, phi, seed):
    rng = np.random.default_rng(seed)
    X3 = rng.standard_normal((2, n, d)) * rng.choice([0.1, 1.0, 20.0])
    if form == RANKING and rng.random() < 0.5:
        y3 = rng.integers(0, 3, (2, n)) * 0.37      # real-valued relevance with ties
    else:
        y3 = np.where(rng.random((2, n)) < 0.5, 1.0, -1.0)
    W = rng.standard_normal((K, d)) * rng.choice([0.0, 0.5, 3.0])
    idx = rng.integers(0, 2, K)
    q = 2.5 if phi == QHINGE else 1.0
    new = _stats(form, phi, q, W, X3, y3, idx, True)
    ref = _stats(form, phi, q, W, X3, y3, idx, False)
    for a, b in zip(new, ref):
        assert a.tobytes() == b.tobytes()
