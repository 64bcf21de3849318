"""Step-size schedules eta_1..eta_T (returned as an array of length T+1, index 0 = eta_0).

=====================  =========================  ==========================================
spec                   eta_t                      used by
=====================  =========================  ==========================================
``("constant", c)``    c                          P1 Thm 1/2/4/5/6(a)/8, P0, P4 experiments
``("sqrt", c)``        c / sqrt(t)                O(1/sqrt t) optimisation rates
``("strongly_convex", alpha)``  2 / (alpha (t+1))  P1 Thm 6(b), 7(b)
``("pl", mu)``         2 / (mu (t+1))             P1 Thm 3, 9
an array               as given (length T)        anything else
=====================  =========================  ==========================================

eta_0 (index 0 of the returned array) is not used by any algorithm; P1 Thm 6(a)/7(a)
mention an undefined eta_0, and the theory registry offers both readings (errata P1-E3).
"""

from __future__ import annotations

import numbers

import numpy as np

SCHEDULES = ("constant", "sqrt", "strongly_convex", "pl")


def step_sizes(spec, T: int) -> np.ndarray:
    """The array (eta_0 = nan, eta_1, ..., eta_T) for the schedule ``spec``."""
    T = int(T)
    if T < 1:
        raise ValueError(f"T (number of steps) must be >= 1, got {T}")
    if isinstance(spec, numbers.Real):
        spec = ("constant", float(spec))
    out = np.empty(T + 1)
    out[0] = np.nan
    if isinstance(spec, (list, tuple)) and len(spec) == 2 and isinstance(spec[0], str):
        kind, c = spec[0], float(spec[1])
        if kind not in SCHEDULES:
            raise ValueError(f"unknown step-size schedule {kind!r}; allowed: {', '.join(SCHEDULES)} "
                             "or an array of T positive step sizes")
        if not (c > 0 and np.isfinite(c)):
            name = {"constant": "eta", "sqrt": "c", "strongly_convex": "alpha", "pl": "mu"}[kind]
            raise ValueError(f"step-size schedule {kind!r}: {name} must be a finite number > 0, got {c!r}")
        eta = out[1:]
        if kind == "constant":
            eta[:] = c
        else:
            np.add(np.arange(1, T + 1, dtype=np.float64), 0.0 if kind == "sqrt" else 1.0, out=eta)
            if kind == "sqrt":
                np.divide(c, np.sqrt(eta, out=eta), out=eta)
            else:
                np.divide(2.0, np.multiply(c, eta, out=eta), out=eta)
        # the schedules are constant or decreasing: the first and last step bound them all
        check = eta[[0, -1]]
    else:
        eta = _as_step_array(spec)
        if eta.shape != (T,):
            raise ValueError(f"an explicit step-size array must have length T={T}, got shape {eta.shape}")
        out[1:] = eta
        check = eta
    if not np.all(np.isfinite(check)) or np.any(check <= 0):
        eta = out[1:]
        bad = int(np.flatnonzero(~(np.isfinite(eta) & (eta > 0)))[0]) + 1
        raise ValueError(f"step sizes must be finite and > 0 (eta <= 0 is not allowed); eta_{bad} = {eta[bad - 1]!r}")
    return out


def _as_step_array(spec) -> np.ndarray:
    """An explicit step-size array as float64, or TypeError saying what eta may be."""
    allowed = ("eta must be a positive number, a schedule (name, value) with name in "
               f"{', '.join(SCHEDULES)}, or an array of T positive numbers")
    if isinstance(spec, (str, bytes)):
        raise TypeError(f"{allowed}; got the string {spec!r}")
    arr = np.asarray(spec)
    if arr.dtype.kind not in "biuf" or arr.dtype.kind == "b":
        raise TypeError(f"{allowed}; got {spec!r}"[:300])
    return arr.astype(np.float64).ravel()


def kernel_step_sizes(spec, T: int) -> tuple[np.ndarray, int]:
    """The step sizes as the twin kernel reads them, eta_t = etas[t * stride]: a constant
    schedule is one number (stride 0), so a run of T steps needs no T-long array (8 MB at
    T = 10^6, and its page faults); any other schedule is ``step_sizes(spec, T)``
    (stride 1).  Validated exactly like ``step_sizes``."""
    if isinstance(spec, numbers.Real) or (isinstance(spec, (list, tuple)) and len(spec) == 2
                                          and isinstance(spec[0], str) and spec[0] == "constant"):
        T = int(T)
        if T < 1:
            raise ValueError(f"T (number of steps) must be >= 1, got {T}")
        return step_sizes(spec, 1)[1:].copy(), 0
    return step_sizes(spec, T), 1
