"""Neighbouring data sets S' = S with example k replaced by z' (the replace-one relation).

P0, P1, P3 and P4 define stability with *replacement*; P2's locally elastic stability
uses *removal* and is measured separately (``stabsim.engine.measures``).  Every run records
which relation and which replacement rule it used.

``Neighbour(kind, k)``:

``kind``
    ``"given"``     z' supplied by the user (``x``, ``y``)
    ``"fresh"``     a new draw from the problem's distribution (needs a ``Problem``)
    ``"heldout"``   a point of a held-out pool (``pool=(X_pool, y_pool)``), chosen at random
    ``"flip"``      z_k with its label flipped (adversarial for AUC losses)
    ``"farthest"``  the example of S farthest from x_k, with the label opposite to y_k when
                    such an example exists (adversarial: moves x_k as far as the data allow)
    ``"same"``      z' = z_k, so S' = S (a control: every distance must be exactly 0)
``k``
    an index in [0, n), or ``"random"`` (drawn per replicate from stream STREAM_NEIGHBOUR).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stabsim.engine import rng

KINDS = ("given", "fresh", "heldout", "flip", "farthest", "same")


@dataclass(frozen=True)
class Neighbour:
    kind: str = "fresh"
    k: int | str = "random"
    x: tuple | None = None
    y: float | None = None
    pool: tuple | None = None

    def describe(self) -> str:
        return f"replace-one: example k={self.k} replaced by a {self.kind!r} point"


def as_neighbour(spec) -> Neighbour:
    """Accept a Neighbour, a kind name, or a tuple (k, x', y')."""
    if isinstance(spec, Neighbour):
        nb = spec
    elif isinstance(spec, str):
        nb = Neighbour(kind=spec)
    elif isinstance(spec, (tuple, list)) and len(spec) == 3:
        k, x, y = spec
        nb = Neighbour(kind="given", k=int(k), x=tuple(np.asarray(x, float).ravel()), y=float(y))
    else:
        raise ValueError("neighbour must be a Neighbour, one of "
                         f"{KINDS}, or a tuple (k, x_new, y_new); got {spec!r}")
    if nb.kind not in KINDS:
        raise ValueError(f"unknown neighbour kind {nb.kind!r}; allowed: {', '.join(KINDS)}")
    if nb.kind == "given" and (nb.x is None or nb.y is None):
        raise ValueError("neighbour kind 'given' needs the replacement x and y")
    if nb.kind == "heldout" and nb.pool is None:
        raise ValueError("neighbour kind 'heldout' needs pool=(X_pool, y_pool)")
    return nb


def make_neighbours(nb: Neighbour, X: np.ndarray, Y: np.ndarray, reps: np.ndarray, seed: int,
                    problem=None):
    """Per-replicate (k, x', y') arrays for the kernel.

    X (nS, n, d), Y (nS, n) with nS = 1 or len(reps).  Returns kidx (R,), xrep (R, d), yrep (R,).
    """
    R = len(reps)
    nS, n, d = X.shape
    reps = np.asarray(reps, dtype=np.int64)
    keys = rng.keys(seed, reps, rng.STREAM_NEIGHBOUR) if nb.k == "random" or nb.kind == "heldout" else None
    if nb.k == "random":
        kidx = rng.randints(keys, 0, n)
    else:
        k = int(nb.k)
        if not 0 <= k < n:
            raise ValueError(f"neighbour index k must lie in [0, {n}), got {k}")
        kidx = np.full(R, k, dtype=np.int64)
    xrep = np.empty((R, d))
    yrep = np.empty(R)
    sets = np.arange(R) if nS > 1 else np.zeros(R, dtype=np.int64)   # the data set of each replicate
    if nb.kind == "given":
        x = np.asarray(nb.x, float)
        if x.shape != (d,):
            raise ValueError(f"replacement x must have shape ({d},), got {x.shape}")
        xrep[:], yrep[:] = x, nb.y
        return kidx, xrep, yrep
    if nb.kind in ("same", "flip"):
        xrep[:] = X[sets, kidx]
        yrep[:] = Y[sets, kidx] if nb.kind == "same" else -Y[sets, kidx]
        return kidx, xrep, yrep
    for r, rep in enumerate(reps):
        Xs, Ys, k = X[sets[r]], Y[sets[r]], kidx[r]
        if nb.kind == "farthest":
            dist = np.linalg.norm(Xs - Xs[k], axis=1)
            opposite = Ys != Ys[k]
            if opposite.any():
                dist = np.where(opposite, dist, -1.0)
            j = int(np.argmax(dist))
            xrep[r], yrep[r] = Xs[j], Ys[j]
        elif nb.kind == "heldout":
            Xp, Yp = nb.pool
            j = int(rng.randint(keys[r], 1, len(Yp)))
            xrep[r], yrep[r] = np.asarray(Xp[j], float), float(Yp[j])
        else:  # fresh
            if problem is None:
                raise ValueError("neighbour kind 'fresh' needs the data distribution: pass problem=... "
                                 "(or use 'heldout' with a pool of held-out points)")
            xz, yz = problem.sample(1, seed, int(rep), stream=rng.STREAM_NEIGHBOUR)
            xrep[r], yrep[r] = xz[0], yz[0]
    return kidx, xrep, yrep
