"""P0 (Yang, Lei, Lyu, Ying, AISTATS 2021): what every P0 bound module shares: the registration
decorator ``_p0`` (paper "P0", the standing assumptions, float-array output), ceil(ln n) and the
constants c_1 (Thm 2, 3, 5) and c_2 (Thm 2, 5).  Registers no bound.  Conventions: the docstring
of ``stabsim.theory.p0``.
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.theory._check import returns_float_array
from stabsim.theory.registry import register


_E = math.e
_LIPSCHITZ_CONVEX = ("l nonnegative, convex, G-Lipschitz (possibly non-smooth)",)
_COUPLED = "S, S' differ in one example; both runs share the indices i_t (coupled)"


def _p0(**kw):
    """``register`` with paper="P0", the standing assumptions prepended and float-array output."""
    kw["assumptions"] = _LIPSCHITZ_CONVEX + tuple(kw.get("assumptions", ()))
    deco = register(paper="P0", **kw)
    return lambda func: deco(returns_float_array(func))


def _ln_ceil(n):
    return np.ceil(np.log(n))


def _c1(G, gamma):
    """c_1 = 100 sqrt(6) e^{3/2} G max{1, G} ln(6e/gamma)   (Thm 2, 3, 5)."""
    return 100 * math.sqrt(6) * _E ** 1.5 * G * np.maximum(1.0, G) * np.log(6 * _E / gamma)


def _c2(M, G, D):
    """c_2 = (6 + 19e)(M + G D)   (Thm 2, 5)."""
    return (6 + 19 * _E) * (M + G * D)
