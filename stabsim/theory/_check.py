"""Tiny input checks shared by the paper modules (p0 ... p4).

Each check accepts a scalar or an array (every entry is checked), raises ``ValueError``
naming the argument, the offending value and what is allowed, and returns the value as a
float numpy array so the caller can use it directly::

    eta = positive("eta", eta)
    n, T, gamma = named(n=n, T=T, gamma=gamma)      # rules looked up by symbol name
"""

from __future__ import annotations

import numpy as np


def _arr(name, value):
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} is not a number or an array of numbers") from None


def _fail(name, value, allowed):
    raise ValueError(f"{name}={value!r} is not allowed: {name} must be {allowed}")


def positive(name, value):
    """``value > 0`` everywhere."""
    a = _arr(name, value)
    if not np.all(a > 0):
        _fail(name, value, "> 0")
    return a


def nonnegative(name, value):
    """``value >= 0`` everywhere."""
    a = _arr(name, value)
    if not np.all(a >= 0):
        _fail(name, value, ">= 0")
    return a


def at_least(name, value, lo):
    """``value >= lo`` everywhere."""
    a = _arr(name, value)
    if not np.all(a >= lo):
        _fail(name, value, f">= {lo}")
    return a


def in_open_unit(name, value):
    """``0 < value < 1`` everywhere (probabilities gamma, delta)."""
    a = _arr(name, value)
    if not np.all((a > 0) & (a < 1)):
        _fail(name, value, "in the open interval (0, 1)")
    return a


#: The rule for each symbol whose meaning is the same in all five papers.
RULES = {
    "n": lambda v: at_least("n", v, 1),
    "t": lambda v: at_least("t", v, 1),
    "T": lambda v: at_least("T", v, 1),
    "d": lambda v: at_least("d", v, 1),
    "eta": lambda v: positive("eta", v),
    "eps": lambda v: positive("eps", v),
    "L": lambda v: positive("L", v),
    "mu": lambda v: positive("mu", v),
    "gamma": lambda v: in_open_unit("gamma", v),
    "delta": lambda v: in_open_unit("delta", v),
    **{s: (lambda v, s=s: nonnegative(s, v)) for s in ("G", "M", "D", "B", "kappa", "sigma")},
}


def named(**values):
    """Check each keyword by the rule for its symbol (see ``RULES``); return the arrays in order.

    A single keyword returns the array itself, several return a tuple.
    """
    out = []
    for name, value in values.items():
        if name not in RULES:
            raise KeyError(f"_check.named has no rule for {name!r}; use positive/at_least/... directly")
        out.append(RULES[name](value))
    return out[0] if len(out) == 1 else tuple(out)


def returns_float_array(func):
    """Decorator: the wrapped bound always returns ``np.asarray(result, dtype=float)`` (0-d for scalars)."""
    import functools

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return np.asarray(func(*args, **kwargs), dtype=float)

    return wrapper
