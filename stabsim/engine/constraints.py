"""Constraint sets W and their Euclidean projections Pi_W as numba kernels.

=============  ==============================================  =========================
name           set                                             projection
=============  ==============================================  =========================
``none``       R^p                                             identity
``l2``         {||w||_2 <= R}                                  w * min(1, R/||w||)
``frobenius``  {||W||_F <= R}  (matrices, flattened)           same as ``l2``
``nuclear``    {W = W^T, ||W||_{S_1} <= R}                     eigenvalues onto l1 ball
``psd``        {W = W^T, W >= 0}                               negative eigenvalues -> 0
=============  ==============================================  =========================

The matrix sets are for metric learning, where W stays symmetric (every gradient
(x-x')(x-x')^T is symmetric).  Their projection first symmetrises W <- (W + W^T)/2 (the
projection onto the symmetric matrices, exact for symmetric input), then works on the
eigendecomposition computed in place by cyclic Jacobi rotations, so no memory is
allocated per step.  The l1-ball projection of the eigenvalues follows Duchi et al. (2008).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

import numpy as np
from stabsim.compile.jit import njit

NONE, L2, FROBENIUS, NUCLEAR, PSD = range(5)
_NAMES = {"none": NONE, "l2": L2, "frobenius": FROBENIUS, "nuclear": NUCLEAR, "psd": PSD}


@njit(cache=True)
def _jacobi_eigh(A, V, lam, d):
    """Eigen-decomposition of the symmetric d x d matrix A (destroyed) into V diag(lam) V^T."""
    for a in range(d):
        for b in range(d):
            V[a, b] = 1.0 if a == b else 0.0
    for _sweep in range(100):
        off = 0.0
        scale = 0.0
        for a in range(d):
            scale += A[a, a] * A[a, a]
            for b in range(a + 1, d):
                off += A[a, b] * A[a, b]
        if off <= 1e-30 * (scale + 1e-300) or off == 0.0:
            break
        for a in range(d - 1):
            for b in range(a + 1, d):
                if A[a, b] == 0.0:
                    continue
                theta = (A[b, b] - A[a, a]) / (2.0 * A[a, b])
                t = (1.0 if theta >= 0.0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for k in range(d):  # A <- A J  (columns a, b)
                    aka0 = A[k, a]
                    akb = A[k, b]
                    A[k, a] = c * aka0 - s * akb
                    A[k, b] = s * aka0 + c * akb
                for k in range(d):  # A <- J^T A  (rows a, b)
                    aak = A[a, k]
                    abk = A[b, k]
                    A[a, k] = c * aak - s * abk
                    A[b, k] = s * aak + c * abk
                for k in range(d):  # V <- V J
                    vka = V[k, a]
                    vkb = V[k, b]
                    V[k, a] = c * vka - s * vkb
                    V[k, b] = s * vka + c * vkb
    for a in range(d):
        lam[a] = A[a, a]


@njit(cache=True)
def _l1_ball(lam, R, tmp, d):
    """Project lam (length d) onto {||lam||_1 <= R} in place (Duchi et al. 2008)."""
    tot = 0.0
    for a in range(d):
        tot += abs(lam[a])
    if tot <= R:
        return
    for a in range(d):  # |lam| sorted decreasingly by insertion sort (d is small)
        v = abs(lam[a])
        b = a
        while b > 0 and tmp[b - 1] < v:
            tmp[b] = tmp[b - 1]
            b -= 1
        tmp[b] = v
    cum = 0.0
    theta = 0.0
    for a in range(d):
        cum += tmp[a]
        th = (cum - R) / (a + 1)
        if tmp[a] - th > 0.0:
            theta = th
    for a in range(d):
        v = abs(lam[a]) - theta
        lam[a] = (v if v > 0.0 else 0.0) * (1.0 if lam[a] >= 0.0 else -1.0)


@njit(cache=True)
def _project_matrix(kind, radius, w, d, A, V, lam, tmp):
    """Nuclear-ball / PSD projection of the symmetric part of the d x d matrix w (flattened)."""
    for a in range(d):
        for b in range(d):
            A[a, b] = 0.5 * (w[a * d + b] + w[b * d + a])
    _jacobi_eigh(A, V, lam, d)
    if kind == PSD:
        for a in range(d):
            if lam[a] < 0.0:
                lam[a] = 0.0
    else:
        _l1_ball(lam, radius, tmp, d)
    for a in range(d):
        for b in range(d):
            s = 0.0
            for k in range(d):
                s += V[a, k] * lam[k] * V[b, k]
            w[a * d + b] = s


@njit(cache=True, inline="always")
def project(kind, radius, w, d, A, V, lam, tmp):
    """Pi_W(w) in place.  ``d`` is the matrix side for matrix sets; A, V (d x d), lam, tmp (d)
    are workspaces (may be size-0 dummies for ``none``/``l2``/``frobenius``).

    Inlined into the kernels: the common cases (none, l2) cost no function call.
    """
    if kind == NONE:
        return
    if kind == L2 or kind == FROBENIUS:
        s = 0.0
        for a in range(w.shape[0]):
            s += w[a] * w[a]
        if s > radius * radius:
            f = radius / math.sqrt(s)
            for a in range(w.shape[0]):
                w[a] *= f
        return
    _project_matrix(kind, radius, w, d, A, V, lam, tmp)


@dataclass(frozen=True)
class Constraint:
    """A constraint set: ``kind`` (see module table) and ``radius`` (inf when unbounded)."""

    name: str
    kind: int
    radius: float = math.inf

    @property
    def bounded(self) -> bool:
        return self.kind in (L2, FROBENIUS, NUCLEAR)

    @property
    def diameter(self) -> float:
        return 2.0 * self.radius if self.bounded else math.inf

    @property
    def matrix(self) -> bool:
        return self.kind in (NUCLEAR, PSD)

    def project(self, w, d: int | None = None):
        """Python convenience: Pi_W(w) as a new array."""
        w = np.array(w, dtype=np.float64).ravel()
        if d is None:
            d = int(round(math.sqrt(w.size))) if self.matrix else w.size
        A = np.empty((d, d)); V = np.empty((d, d)); lam = np.empty(d); tmp = np.empty(d)
        project(self.kind, float(self.radius), w, d, A, V, lam, tmp)
        return w


def get_constraint(spec) -> Constraint:
    """A constraint from ``"none"``, ``"psd"``, ``("l2", R)``, ``"l2:R"`` or a Constraint."""
    if isinstance(spec, Constraint):
        return spec
    if spec is None:
        spec = "none"
    if isinstance(spec, str) and ":" in spec:
        name, r = spec.split(":", 1)
        spec = (name, float(r))
    name, radius = (spec, math.inf) if isinstance(spec, str) else (spec[0], float(spec[1]))
    if name not in _NAMES:
        close = difflib.get_close_matches(str(name), list(_NAMES), n=2)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown constraint {name!r}.{hint} Allowed: {', '.join(_NAMES)} "
                         f"(balls take a radius: ('l2', 1.0) or 'l2:1.0')")
    kind = _NAMES[name]
    if kind in (L2, FROBENIUS, NUCLEAR):
        if not (radius > 0 and math.isfinite(radius)):
            raise ValueError(f"constraint {name!r} needs a finite radius > 0, got {radius!r}")
    else:
        radius = math.inf
    return Constraint(name, kind, radius)
