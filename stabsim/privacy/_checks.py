"""Scalar argument checks shared by the privacy modules.

Every check raises ``ValueError`` naming the argument, the offending value and the
allowed range, and returns the value as a float (or int for the integer checks).
"""

from __future__ import annotations

import numpy as np

import math
import numbers


def _num(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}={value!r} is not a real number")
    v = float(value)
    if math.isnan(v):
        raise ValueError(f"{name}={value!r} is not allowed: {name} must be a number, not NaN")
    return v


def _fail(name, value, allowed):
    raise ValueError(f"{name}={value!r} is not allowed: {name} must be {allowed}")


def positive(name, value):
    """``0 < value < inf``."""
    v = _num(name, value)
    if not (0 < v < math.inf):
        _fail(name, value, "> 0 (and finite)")
    return v


def nonnegative(name, value):
    """``0 <= value < inf``."""
    v = _num(name, value)
    if not (0 <= v < math.inf):
        _fail(name, value, ">= 0 (and finite)")
    return v


def open_unit(name, value):
    """``0 < value < 1`` (delta, beta, probabilities)."""
    v = _num(name, value)
    if not (0 < v < 1):
        _fail(name, value, "in the open interval (0, 1)")
    return v


def integer_at_least(name, value, lo):
    """An integer-valued number ``>= lo`` (n, T, t)."""
    v = _num(name, value)
    if not (math.isfinite(v) and v == math.floor(v) and v >= lo):
        _fail(name, value, f"an integer >= {lo}")
    return int(v)


def eps(value):
    return positive("eps", value)


def delta(value):
    return open_unit("delta", value)


def n(value):
    return integer_at_least("n", value, 2)


def T(value):
    return integer_at_least("T", value, 1)


def G(value):
    return positive("G", value)


def eta(value):
    return positive("eta", value)


def choice(name, value, allowed):
    if value not in allowed:
        _fail(name, value, "one of " + ", ".join(repr(a) for a in allowed))
    return value


def scores(name, x, minimum=2, why=""):
    """``x`` as a flat float array of at least ``minimum`` finite numbers (an audit's statistics), else a
    ValueError naming ``name``; ``why`` says what needs that many."""
    x = np.asarray(x, dtype=float).ravel()
    if x.size < minimum or not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must hold at least {minimum} finite numbers{why} (got {x.size} values)")
    return x
