"""Test metrics of linear scores X w: empirical AUC (Mann–Whitney), misclassification rate and
mean squared error.
"""

from __future__ import annotations

import numpy as np
import scipy.stats

from stabsim.risk.plan import _finish, _param_array


def _labels_pm1(y):
    y = np.asarray(y, dtype=float).ravel()
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError(f"labels must be in {{-1, +1}}, got {np.unique(y)[:5].tolist()}")
    return y


def auc_from_scores(scores, y):
    """Empirical AUC of scores (..., n) against labels y in {-1, +1}: the Mann–Whitney statistic
    P(score_+ > score_-) + P(tie)/2 over all positive/negative pairs, from average ranks
    (scipy.stats.rankdata), O(n log n)."""
    y = _labels_pm1(y)
    scores = np.asarray(scores, dtype=float)
    if scores.shape[-1] != y.size:
        raise ValueError(f"scores have {scores.shape[-1]} entries per row but y has {y.size}")
    pos = y == 1.0
    nP, nN = int(pos.sum()), int((~pos).sum())
    if nP == 0 or nN == 0:
        raise ValueError("AUC needs at least one positive and one negative example")
    ranks = scipy.stats.rankdata(scores, axis=-1)
    rs = ranks[..., pos].sum(axis=-1)
    out = (rs - nP * (nP + 1) / 2.0) / (nP * nN)
    return float(out) if np.ndim(out) == 0 else out


def auc(w, X, y):
    """Empirical AUC of the scores X w (w of shape (..., d)); ties count 1/2."""
    W2, lead, wrap = _param_array(w, np.asarray(X).shape[1])
    out = np.atleast_1d(auc_from_scores(W2 @ np.asarray(X, float).T, y))
    return _finish(out, lead, wrap, "AUC")


def misclassification(w, X, y):
    """Misclassification rate (1/n) sum_i I[y_i x_i.w <= 0] (a zero score counts as an error)."""
    y = _labels_pm1(y)
    W2, lead, wrap = _param_array(w, np.asarray(X).shape[1])
    out = ((W2 @ np.asarray(X, float).T) * y <= 0).mean(axis=-1)
    return _finish(out, lead, wrap, "misclassification rate")


def mse(w, X, y):
    """Mean squared error (1/n) sum_i (x_i.w - y_i)^2 (= 2 F_S for ``point_lsq``)."""
    y = np.asarray(y, dtype=float).ravel()
    W2, lead, wrap = _param_array(w, np.asarray(X).shape[1])
    out = ((W2 @ np.asarray(X, float).T - y) ** 2).mean(axis=-1)
    return _finish(out, lead, wrap, "mean squared error")
