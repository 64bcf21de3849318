"""P4 (Wang, Lei, Ying, Zhou: DP-SGD with low noise): notation helpers and constants shared by
``theory.p4_stability`` and ``theory.p4``: checks of alpha and of step-size schedules, the kappa
form a/kappa + kappa b of Lemmas 13/17, eta^2-weighted sums, and the constants M_{alpha,1},
M_{alpha,2}, M_{alpha,3} (Eq. (4), (5), Lemma 14) and Mbar_{alpha,3} (Lemma 19, P4-E2).
Registers no bound.  Conventions: the docstring of ``stabsim.theory.p4``.
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.theory import _check


PAPER = "P4"
E = math.e


# --------------------------------------------------------------------------- input helpers


def _alpha(alpha, *, allow_one):
    """alpha in [0, 1] (allow_one) or [0, 1)."""
    a = _check.nonnegative("alpha", alpha)
    if not np.all(a <= 1 if allow_one else a < 1):
        raise ValueError(f"alpha={alpha!r} is not allowed: alpha must be in "
                         f"{'[0, 1] (1 = L-smooth)' if allow_one else '[0, 1) (Hoelder exponent; use the smooth result for 1)'}")
    return a


def _schedule(horizon_name, horizon, eta, etas):
    """Validate the step-size convention.

    Returns (horizon, eta_1, eta_max, power_sum, etas_array_or_None) where
    power_sum(k) = sum_{j=1}^{horizon} eta_j^k (k may be an array).
    """
    if etas is not None:
        if eta is not None:
            raise ValueError(f"eta={eta!r} and etas given: pass a constant eta with {horizon_name}, "
                             "or an array etas, not both")
        e = _check.positive("etas", etas)
        if e.ndim != 1 or e.size == 0:
            raise ValueError(f"etas={etas!r} is not allowed: etas must be a non-empty 1-D array (eta_1..eta_T)")
        if horizon is not None and np.any(np.asarray(horizon) != e.size):
            raise ValueError(f"{horizon_name}={horizon!r} is not allowed: it must equal len(etas)={e.size}")

        def power_sum(k):
            k = np.asarray(k, dtype=float)
            return np.sum(e.reshape((-1,) + (1,) * k.ndim) ** k, axis=0)

        return np.asarray(float(e.size)), e[0], e.max(), power_sum, e
    if eta is None or horizon is None:
        raise ValueError(f"eta={eta!r}, {horizon_name}={horizon!r}: give a constant eta together with "
                         f"{horizon_name}, or an explicit array etas")
    eta = _check.positive("eta", eta)
    horizon = _check.at_least(horizon_name, horizon, 1)
    return horizon, eta, eta, (lambda k: horizon * eta ** np.asarray(k, dtype=float)), None


def _smooth_steps(eta_max, L):
    """Lemma 14(a)/19(a) need eta_j <= 2/L."""
    if not np.all(eta_max <= 2 / L):
        raise ValueError(f"eta={eta_max!r} is not allowed: the smooth stability bounds need every "
                         f"eta_j <= 2/L = {2 / L!r}")


def _nonincreasing(etas):
    if etas is not None and np.any(np.diff(etas) > 0):
        raise ValueError(f"etas={etas!r} is not allowed: Theorem 16 needs non-increasing step sizes")


def _kappa_form(a, b, kappa):
    """a/kappa + kappa b, or its minimum 2 sqrt(a b) over kappa > 0 when kappa == 'opt'."""
    if isinstance(kappa, str):
        if kappa != "opt":
            raise ValueError(f"kappa={kappa!r} is not allowed: kappa must be > 0 or 'opt'")
        return 2 * np.sqrt(a * b)
    kappa = _check.positive("kappa", kappa)
    return a / kappa + kappa * b


def kappa_opt(a, b):
    """Minimiser sqrt(a/b) of a/kappa + kappa b (see the module docstring for a, b)."""
    return np.sqrt(np.asarray(a, dtype=float) / np.asarray(b, dtype=float))


def eta2_weighted_sum(values, *, eta=None, etas=None):
    """sum_j eta_j^2 values_j over the last axis of ``values`` (per-step measurements
    E[F_S(w_j)] or E[F_S(w_j)^{2alpha/(1+alpha)}], j = 1..T): the ``sum_eta2_*`` arguments."""
    v = np.asarray(values, dtype=float)
    _, _, _, _, e = _schedule("T", v.shape[-1], eta, etas)
    w = e**2 if e is not None else _check.positive("eta", eta) ** 2
    return np.asarray(np.sum(v * w, axis=-1), dtype=float)


# --------------------------------------------------------------------------- constants


def M_alpha_1(*, alpha, L, M=None):
    """Eq. (4): M_{alpha,1} = (1 + 1/alpha)^{alpha/(1+alpha)} L^{1/(1+alpha)} for alpha > 0,
    M + L for alpha = 0 (M = sup_z ||df(0; z)||_2, P4-E1).  alpha = 1 gives M_{1,1}^2 = 2L."""
    a = _alpha(alpha, allow_one=True)
    L = _check.positive("L", L)
    if np.any(a == 0):
        if M is None:
            raise ValueError("M=None is not allowed for alpha = 0: M_{0,1} = M + L needs "
                             "M = sup_z ||df(0; z)||_2 >= 0")
        M = _check.nonnegative("M", M)
    safe = np.where(a > 0, a, 1.0)
    holder = (1 + 1 / safe) ** (safe / (1 + safe)) * L ** (1 / (1 + safe))
    return np.asarray(np.where(a > 0, holder, (M if M is not None else 0.0) + L), dtype=float)


def M_alpha_2(*, alpha, L, M=None):
    """Eq. (5): M_{alpha,2} = ((1-alpha)/(1+alpha)) (2alpha/(1+alpha))^{2alpha/(1-alpha)}
    M_{alpha,1}^{(2+2alpha)/(1-alpha)} for alpha in (0, 1), and M_{0,1}^2 for alpha = 0 (the
    general expression reduces to it, with 0^0 = 1)."""
    a = _alpha(alpha, allow_one=False)
    m1 = M_alpha_1(alpha=a, L=L, M=M)
    return np.asarray((1 - a) / (1 + a) * (2 * a / (1 + a)) ** (2 * a / (1 - a))
                      * m1 ** ((2 + 2 * a) / (1 - a)), dtype=float)


def M_alpha_3(*, alpha, L):
    """Lemma 14(b): M_{alpha,3} = sqrt((1-alpha)/(1+alpha)) (2^{-alpha} L)^{1/(1-alpha)}."""
    a = _alpha(alpha, allow_one=False)
    L = _check.positive("L", L)
    return np.asarray(np.sqrt((1 - a) / (1 + a)) * (2.0 ** (-a) * L) ** (1 / (1 - a)), dtype=float)


def Mbar_alpha_3(*, alpha, L, variant="corrected"):
    """Lemma 19(b): Mbar_{alpha,3}.

    ``variant="printed"``:   sqrt(e (1-alpha)/(1+alpha)) (2 - alpha) L^{1/(1-alpha)}.
    ``variant="corrected"``: M_{alpha,3} = sqrt((1-alpha)/(1+alpha)) (2^{-alpha} L)^{1/(1-alpha)},
    the constant of Lei & Ying 2020 that Lemma 18 cites; "(2-alpha)L" reads as OCR of
    "(2^{-alpha}L)" and the extra e would double-count the explicit e of Lemma 19(b) (P4-E2).
    """
    if variant == "corrected":
        return M_alpha_3(alpha=alpha, L=L)
    if variant != "printed":
        raise ValueError(f"variant={variant!r} is not allowed: variant must be 'printed' or 'corrected'")
    a = _alpha(alpha, allow_one=False)
    L = _check.positive("L", L)
    return np.asarray(np.sqrt(E * (1 - a) / (1 + a)) * (2 - a) * L ** (1 / (1 - a)), dtype=float)


_VARIANT_READING = {
    "printed": "Mbar_{alpha,3} as printed: sqrt(e(1-alpha)/(1+alpha)) (2-alpha) L^{1/(1-alpha)}",
    "corrected": "Mbar_{alpha,3} read as M_{alpha,3} = sqrt((1-alpha)/(1+alpha)) (2^{-alpha}L)^{1/(1-alpha)} (P4-E2)",
}
