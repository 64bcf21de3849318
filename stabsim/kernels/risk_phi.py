"""Scalar loss functions phi of the risk kernels: values and derivatives, with the smoothed hinge.

``tau > 0`` replaces the hinge by its softplus smoothing tau log(1 + exp((1 - m)/tau)), which
lies between (1 - m)_+ and (1 - m)_+ + tau log 2 (used by the ERM solver; for |1 - m| > 36 tau
it is taken equal to the hinge, an error below 2.4e-16 tau).  The other phi are those of
``stabsim.engine.losses`` (``phi_value_deriv``).
"""

from __future__ import annotations

import math

from stabsim.compile.jit import njit

from stabsim.engine.losses import HINGE, LOGISTIC, QHINGE, SQUARED, phi_value_deriv

# smoothed hinge: beyond |1 - m| > 36 tau the softplus equals the hinge to below 2.4e-16 tau,
# and is evaluated as the hinge (no exp): most pairs are far from the kink once tau is small
_TCUT = 36.0


@njit(cache=True, inline="always")
def phi_all(phi, q, tau, m):
    """phi(m), phi'(m), phi''(m).  ``tau > 0`` smooths the hinge (softplus, see module doc)."""
    if phi == HINGE and tau > 0.0:
        t = (1.0 - m) / tau
        if t > _TCUT:
            return tau * t, -1.0, 0.0
        if t < -_TCUT:
            return 0.0, 0.0, 0.0
        e = math.exp(-abs(t))
        if t >= 0.0:
            sp = t + math.log1p(e)
            sg = 1.0 / (1.0 + e)
        else:
            sp = math.log1p(e)
            sg = e / (1.0 + e)
        return tau * sp, -sg, e / ((1.0 + e) * (1.0 + e)) / tau
    v, d1 = phi_value_deriv(phi, m, q)
    return v, d1, phi_second(phi, q, tau, m)


@njit(cache=True, inline="always")
def phi_second(phi, q, tau, m):
    """phi''(m) alone, the third number of ``phi_all`` bit for bit (the Hessian loops need no
    value: this skips phi's exp and log1p)."""
    if phi == HINGE and tau > 0.0:
        t = (1.0 - m) / tau
        if t > _TCUT or t < -_TCUT:
            return 0.0
        e = math.exp(-abs(t))
        return e / ((1.0 + e) * (1.0 + e)) / tau
    if phi == SQUARED:
        return 2.0
    if phi == LOGISTIC:
        e = math.exp(-abs(m))
        return e / ((1.0 + e) * (1.0 + e))
    if phi == QHINGE:
        return q * (q - 1.0) * (1.0 - m) ** (q - 2.0) if m < 1.0 else 0.0
    return 0.0


@njit(cache=True, inline="always")
def phi_value(phi, q, tau, m):
    """phi(m) only (the cheapest form, for value loops)."""
    if phi == LOGISTIC:
        return math.log1p(math.exp(-abs(m))) + max(-m, 0.0)
    if phi == HINGE:
        if tau > 0.0:
            t = (1.0 - m) / tau
            if t > _TCUT:
                return tau * t
            if t < -_TCUT:
                return 0.0
            return tau * (math.log1p(math.exp(-abs(t))) + max(t, 0.0))
        return 1.0 - m if m < 1.0 else 0.0
    if phi == SQUARED:
        r = 1.0 - m
        return r * r
    if m < 1.0:  # QHINGE
        return (1.0 - m) ** q
    return 0.0


@njit(cache=True, inline="always")
def phi_vd(phi, q, tau, m):
    """phi(m) and phi'(m)."""
    if phi == HINGE and tau > 0.0:
        t = (1.0 - m) / tau
        if t > _TCUT:
            return tau * t, -1.0
        if t < -_TCUT:
            return 0.0, 0.0
        e = math.exp(-abs(t))
        if t >= 0.0:
            return tau * (t + math.log1p(e)), -1.0 / (1.0 + e)
        return tau * math.log1p(e), -e / (1.0 + e)
    return phi_value_deriv(phi, m, q)


@njit(cache=True, inline="always")
def phi2_lower(phi, q, tau, m, r):
    """A lower bound of phi'' on the interval [m - r, m + r] (logistic: phi'' decreases in
    |m|; smoothed hinge: in |1 - m|; squared: constant; others: 0)."""
    if phi == SQUARED:
        return 2.0
    if phi == LOGISTIC:
        e = math.exp(-(abs(m) + r))
        return e / ((1.0 + e) * (1.0 + e))
    if phi == HINGE and tau > 0.0:
        e = math.exp(-(abs(1.0 - m) + r) / tau)
        return e / ((1.0 + e) * (1.0 + e)) / tau
    return 0.0
