"""The audit's neighbouring pair (the canary) and its final-output statistics.

Design and statistics: the docstring of :mod:`stabsim.privacy.audit_runner` ("Canary design",
"Statistics"); the every-iterate statistic is in :mod:`stabsim.privacy.audit_whitebox`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stabsim.engine.losses import AUC, AUC_ORDERED, POINT, POINT_LSQ, RANKING, get_loss

__all__ = ["Canary", "make_canary", "statistic_scores"]


@dataclass(frozen=True)
class Canary:
    """The neighbouring pair of an audit: S' = S with example k replaced by (x, y)."""

    k: int
    x: np.ndarray
    y: float
    description: str

    @property
    def neighbour(self):
        return (int(self.k), np.asarray(self.x, float), float(self.y))

    def as_dict(self):
        return {"k": int(self.k), "x": [float(v) for v in np.ravel(self.x)], "y": float(self.y),
                "description": self.description}


# ---------------------------------------------------------------------------- canary
def _unit(v):
    nv = float(np.linalg.norm(v))
    return v / nv if nv > 0 else np.eye(len(v))[0]


def make_canary(X, y, loss, *, kind="auto", allowed=None) -> Canary:
    """The neighbouring pair of an audit (see the module docstring for the design).

    ``allowed``: the indices k may take (default all).  ``kind``: "auto", "flip" or a tuple
    (k, x, y).
    """
    lossf = get_loss(loss) if isinstance(loss, str) else loss
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n = len(y)
    idx = np.arange(n) if allowed is None else np.asarray(allowed, dtype=np.int64)
    if idx.size == 0 or idx.min() < 0 or idx.max() >= n:
        raise ValueError(f"allowed canary indices must lie in [0, {n})")
    if isinstance(kind, (tuple, list)):
        k, x, yy = kind
        return Canary(int(k), np.asarray(x, float).ravel(), float(yy), "given by the caller")
    if kind == "flip":
        k = int(idx[0])
        return Canary(k, X[k].copy(), -float(y[k]), f"z_{k} with its label flipped")
    if kind != "auto":
        raise ValueError(f"canary must be 'auto', 'flip' or a tuple (k, x, y), got {kind!r}")
    kappa = float(np.linalg.norm(X, axis=1).max())
    if lossf.form in (AUC, AUC_ORDERED, RANKING) and set(np.unique(y)) <= {-1.0, 1.0}:
        pos, neg = y == 1, y == -1
        m = _unit(X[pos].mean(axis=0) - X[neg].mean(axis=0))
        cand = idx[y[idx] == 1]
        if cand.size == 0:
            cand = idx
        k = int(cand[np.argmax(X[cand] @ m)])
        return Canary(k, -kappa * m, 1.0,
                      "pairwise AUC canary: x' = -kappa m/||m|| (m = mean difference of the "
                      f"classes), label +1, replacing the positive example most aligned with m "
                      f"(k={k})")
    if lossf.form in (POINT, POINT_LSQ):
        m = _unit((y[:, None] * X).mean(axis=0))
        k = int(idx[np.argmax((y[idx, None] * X[idx]) @ m)])
        ymax = float(np.abs(y).max()) or 1.0
        return Canary(k, kappa * m, -ymax,
                      "pointwise canary: far point x' = kappa m/||m|| (m = mean y_i x_i) with "
                      f"the flipped label -{ymax:g}, replacing the example with the largest "
                      f"y_i x_i.m (k={k})")
    # metric or labels not +-1: the engine's "farthest" neighbour
    k = int(idx[0])
    dist = np.linalg.norm(X - X[k], axis=1)
    opposite = y != y[k]
    if opposite.any():
        dist = np.where(opposite, dist, -1.0)
    j = int(np.argmax(dist))
    return Canary(k, X[j].copy(), float(y[j]),
                  f"farthest point of S from x_k with the opposite label (k={k}, j={j})")


def _direction(lossf, X, y, canary):
    """Unit direction v = grad terms of z_k minus those of z' at w = 0 (see module docstring)."""
    d = X.shape[1]
    p = d * d if lossf.matrix else d
    w = np.zeros(p)
    k = canary.k
    zk, zc = (X[k], y[k]), (canary.x, canary.y)
    if lossf.pairwise:
        gk, gc = np.zeros(p), np.zeros(p)
        for j in range(len(y)):
            if j == k:
                continue
            zj = (X[j], y[j])
            gk += lossf.value_grad(w, zk, zj)[1] + lossf.value_grad(w, zj, zk)[1]
            gc += lossf.value_grad(w, zc, zj)[1] + lossf.value_grad(w, zj, zc)[1]
    else:
        gk = lossf.value_grad(w, zk)[1]
        gc = lossf.value_grad(w, zc)[1]
    v = gk - gc
    nv = float(np.linalg.norm(v))
    if nv == 0.0:
        return np.eye(p)[0], "gradient difference at w=0 vanishes: e_1"
    return v / nv, "a-priori direction: gradient terms of z_k minus those of z' at w=0"


def _canary_loss(lossf, X, y, canary, W):
    """Loss of the canary's terms at each row of W (pairwise: mean over its pairs)."""
    out = np.empty(W.shape[0])
    zc = (canary.x, canary.y)
    for r in range(W.shape[0]):
        if lossf.pairwise:
            tot, cnt = 0.0, 0
            for j in range(len(y)):
                if j == canary.k:
                    continue
                zj = (X[j], y[j])
                tot += lossf.value_grad(W[r], zc, zj)[0] + lossf.value_grad(W[r], zj, zc)[0]
                cnt += 2
            out[r] = tot / cnt
        else:
            out[r] = lossf.value_grad(W[r], zc)[0]
    return out


def statistic_scores(statistic, lossf, X, y, canary, W0, W1):
    """(scores on S, scores on S', description) for the statistic spec (see module docstring)."""
    if callable(statistic):
        return (np.asarray(statistic(W0), float).ravel(), np.asarray(statistic(W1), float).ravel(),
                getattr(statistic, "__name__", "callable"))
    if statistic in ("auto", "projection"):
        v, how = _direction(lossf, X, y, canary)
        return W0 @ v, W1 @ v, f"projection <w_priv, v>, {how}"
    if statistic == "loss":
        return (_canary_loss(lossf, X, y, canary, W0), _canary_loss(lossf, X, y, canary, W1),
                "loss of the canary's terms at w_priv")
    raise ValueError(f"statistic must be 'auto', 'projection', 'loss' or a callable, got {statistic!r}")
