"""Analytic Gaussian mechanism (Balle & Wang, ICML 2018, Thm 8) -- the known answer.

For a query with l2-sensitivity Delta released with N(0, sigma^2 I) noise, the exact privacy
profile is

    delta(eps) = Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta).

It depends on (sigma, Delta) only through mu = Delta/sigma, and it is the same for replace-one
and add/remove neighbours once Delta is the sensitivity under that relation.  Implemented
independently of ``dp_accounting`` (scipy.stats.norm only) so it can check the accountants.
A T-fold composition of Gaussian mechanisms with ratios mu_i is exactly a single Gaussian
mechanism with mu = sqrt(sum mu_i^2) (Dong, Roth, Su 2022, GDP composition).
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.special import log_ndtr
from scipy.stats import norm

from stabsim.privacy import _checks as chk

__all__ = ["analytic_gaussian_delta", "analytic_gaussian_epsilon", "analytic_gaussian_sigma"]


def analytic_gaussian_delta(eps, sigma, sensitivity=1.0):
    """delta(eps) of the Gaussian mechanism, exact (Balle & Wang 2018, Thm 8); eps >= 0."""
    eps = chk.nonnegative("eps", eps)
    sigma = chk.positive("sigma", sigma)
    sensitivity = chk.positive("sensitivity", sensitivity)
    a, b = sensitivity / (2.0 * sigma), eps * sigma / sensitivity
    second = math.exp(eps + float(log_ndtr(-a - b)))
    return max(float(norm.cdf(a - b)) - second, 0.0)


def analytic_gaussian_epsilon(delta, sigma, sensitivity=1.0):
    """Smallest eps >= 0 with delta(eps) <= delta for the Gaussian mechanism (exact)."""
    delta = chk.delta(delta)
    sigma = chk.positive("sigma", sigma)
    sensitivity = chk.positive("sensitivity", sensitivity)
    f = lambda e: analytic_gaussian_delta(e, sigma, sensitivity) - delta  # noqa: E731
    if f(0.0) <= 0:
        return 0.0
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
    return brentq(f, 0.0, hi, xtol=1e-13, rtol=1e-12)


def analytic_gaussian_sigma(eps, delta, sensitivity=1.0):
    """Smallest sigma such that the Gaussian mechanism is (eps, delta)-DP (exact)."""
    eps, delta = chk.eps(eps), chk.delta(delta)
    sensitivity = chk.positive("sensitivity", sensitivity)
    f = lambda ls: analytic_gaussian_delta(eps, math.exp(ls), sensitivity) - delta  # noqa: E731
    lo, hi = math.log(sensitivity) - 1.0, math.log(sensitivity) + 1.0
    while f(lo) <= 0:
        lo -= 1.0
    while f(hi) > 0:
        hi += 1.0
    return math.exp(brentq(f, lo, hi, xtol=1e-13, rtol=1e-12))
