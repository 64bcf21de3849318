"""Input checks shared by every public entry point.  Each error names the offending
field, its value and what is allowed."""

from __future__ import annotations

import numbers

import numpy as np


def check_Xy(X, y, *, pairwise_auc: bool = False, name: str = "X", copy: bool = True):
    """Validate a data set; return float64 C-contiguous copies.

    X: (n, d) or (nS, n, d) for one data set per replicate; y: (n,) or (nS, n).
    ``pairwise_auc``: labels must be in {-1, +1} with both classes present.
    ``copy=False``: hand back the caller's own arrays when they already are float64 and
    C-contiguous (for callers that only read them and copy what they keep, e.g. ``run_twin``,
    whose kernel layout is a new array: one copy less of a data set per replicate).
    """
    X = np.asarray(X)
    y = np.asarray(y)
    if X.ndim not in (2, 3):
        raise ValueError(f"{name} must be a 2-D array (n, d) (or 3-D (replicates, n, d)), got shape {X.shape}")
    if y.ndim != X.ndim - 1:
        raise ValueError(f"y must have shape {X.shape[:-1]} to match {name} of shape {X.shape}, got {y.shape}")
    if y.shape != X.shape[:-1]:
        raise ValueError(f"{name} has {X.shape[-2]} rows but y has {y.shape[-1]} entries; they must match")
    if not (np.issubdtype(X.dtype, np.number) and np.issubdtype(y.dtype, np.number)):
        raise ValueError(f"{name} and y must be numeric, got dtypes {X.dtype} and {y.dtype}")
    if X.shape[-2] < 2:
        raise ValueError(f"need n >= 2 examples, got n = {X.shape[-2]}")
    if X.shape[-1] < 1:
        raise ValueError(f"need at least one feature, got d = {X.shape[-1]}")
    if np.iscomplexobj(X) or np.iscomplexobj(y):
        raise ValueError(f"{name} and y must be real-valued, got dtypes {X.dtype} and {y.dtype}")
    # copy=True always copies (ascontiguousarray would hand back the caller's own float64 array)
    X = np.array(X, dtype=np.float64, order="C", copy=True if copy else None)
    y = np.array(y, dtype=np.float64, order="C", copy=True if copy else None)
    for arr, nm in ((X, name), (y, "y")):
        bad = ~np.isfinite(arr)
        if bad.any():
            pos = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"{nm} contains NaN or inf (first at index {pos}); all values must be finite")
    if pairwise_auc:
        labels = np.unique(y)
        if not np.all(np.isin(labels, (-1.0, 1.0))):
            raise ValueError(f"AUC losses need labels in {{-1, +1}}, got labels {labels[:5].tolist()}")
        ys = y.reshape(-1, y.shape[-1])
        for r, row in enumerate(ys):
            if not ((row == 1).any() and (row == -1).any()):
                which = f" (data set {r})" if len(ys) > 1 else ""
                raise ValueError(f"an AUC loss needs both classes{which}: y has only label "
                                 f"{row[0]:+.0f}; at least one +1 and one -1 example are required")
    return X, y


def positive(name: str, value, *, allow_inf: bool = False) -> float:
    """value > 0 (finite unless allow_inf)."""
    if not isinstance(value, numbers.Real) or not (value > 0) or (not allow_inf and not np.isfinite(value)):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def positive_int(name: str, value, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def open_unit(name: str, value) -> float:
    """value in the open interval (0, 1)."""
    if not isinstance(value, numbers.Real) or not (0.0 < value < 1.0):
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {value!r}")
    return float(value)
