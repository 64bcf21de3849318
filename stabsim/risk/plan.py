"""Data + loss "plan" of ``stabsim.risk``: a validated data set with the kernels' bookkeeping
(which pair structure the loss has: P x N blocks for AUC / two-label ranking, general ranking,
metric learning or pointwise), and the conversion of parameter arrays / DataArrays (..., p) to the
(K, p) blocks the kernels take and back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stabsim.kernels.risk_kernels import KIND_METRIC, KIND_PN, KIND_POINT, KIND_RANK, MODE_FAST, MODE_LOOP, MODE_SCORES
from stabsim.kernels.risk_phi import phi_all
from stabsim.engine.losses import AUC, AUC_ORDERED, Loss, get_loss
from stabsim.engine.validation import check_Xy

_RANK_NEWTON_MAX = 3000  # ranking with > 2 labels: Newton needs n x n Hessian weights
_METHODS = {"auto": MODE_FAST, "fast": MODE_FAST, "scores": MODE_SCORES, "loop": MODE_LOOP}


@dataclass
class _Plan:
    """A validated data set with the bookkeeping of the kernels (see kernels/risk_kernels.py)."""

    loss: Loss
    X: np.ndarray
    y: np.ndarray
    kind: int
    idxP: np.ndarray
    idxN: np.ndarray
    s: float = 1.0
    mult: float = 1.0
    kconst: float = 0.0

    @property
    def n(self):
        return self.X.shape[0]

    @property
    def d(self):
        return self.X.shape[1]

    @property
    def p(self):
        return self.d * self.d if self.loss.matrix else self.d

    @property
    def norm(self):
        """The normaliser of F_S: n(n-1) ordered pairs, or n points."""
        return float(self.n) if self.kind == KIND_POINT else self.n * (self.n - 1.0)


def _as_loss(loss, q=None) -> Loss:
    return loss if isinstance(loss, Loss) else get_loss(loss, q)


def _plan(X, y, loss, q=None) -> _Plan:
    lossf = _as_loss(loss, q)
    X, y = check_Xy(X, y)
    if X.ndim != 2:
        raise ValueError(f"X must be one data set (n, d); got shape {X.shape}. For one data set per "
                         "replicate, call once per data set.")
    empty = np.zeros(0, dtype=np.int64)
    if not lossf.pairwise:
        return _Plan(lossf, X, y, KIND_POINT, empty, empty)
    if lossf.matrix:
        return _Plan(lossf, X, y, KIND_METRIC, empty, empty)
    labels = np.unique(y)
    if lossf.form in (AUC, AUC_ORDERED):
        if not np.all(np.isin(labels, (-1.0, 1.0))):
            raise ValueError(f"AUC losses need labels in {{-1, +1}}, got labels {labels[:5].tolist()}")
        idxP = np.flatnonzero(y == 1.0)
        idxN = np.flatnonzero(y == -1.0)
        return _Plan(lossf, X, y, KIND_PN, idxP, idxN, 1.0, 2.0 if lossf.form == AUC else 1.0, 0.0)
    # RANKING: margin (y - y') w.(x - x'); same-label pairs give phi(0)
    if labels.size > 2:
        return _Plan(lossf, X, y, KIND_RANK, empty, empty)
    hi, lo = labels[-1], labels[0]
    idxP = np.flatnonzero(y == hi)
    idxN = np.flatnonzero(y == lo) if labels.size == 2 else empty
    nP, nN = idxP.size, idxN.size
    phi0 = phi_all(lossf.phi, lossf.q, 0.0, 0.0)[0]
    return _Plan(lossf, X, y, KIND_PN, idxP, idxN, float(hi - lo), 2.0,
                 float(phi0 * (nP * (nP - 1.0) + nN * (nN - 1.0))))


def _param_array(W, p):
    """(..., p) float64 array from an ndarray / DataArray; returns (W2 (K, p), lead shape, wrap)."""
    wrap = None
    try:
        import xarray as xr
        if isinstance(W, xr.DataArray):
            dim = "param" if "param" in W.dims else W.dims[-1]
            W = W.transpose(..., dim)
            template = W.isel({dim: 0}, drop=True)

            def wrap(arr, long_name, units="1"):
                out = template.copy(data=arr)
                out.attrs = {"long_name": long_name, "units": units}
                return out.rename(long_name.split("(")[0].strip().replace(" ", "_") or None)
            W = W.values
    except ImportError:  # pragma: no cover
        pass
    W = np.asarray(W, dtype=np.float64)
    if W.ndim == 0 or W.shape[-1] != p:
        raise ValueError(f"parameters must have shape (..., {p}) (p = {'d*d' if p > 1 else 'd'}), "
                         f"got {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError("parameters contain NaN or inf")
    lead = W.shape[:-1]
    return np.ascontiguousarray(W.reshape(-1, p)), lead, wrap


def _finish(arr, lead, wrap, long_name):
    arr = arr.reshape(lead)
    if wrap is not None:
        return wrap(arr, long_name)
    return float(arr) if arr.ndim == 0 else arr
