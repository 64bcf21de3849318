"""Exact privacy accounting where exact exists, and guarded PLD / RDP where it does not.

Non-subsampled Gaussian compositions (P0 Alg. 2, P1 Alg. 3, P2 Alg. 1, P3 Alg. 1 and 3).
A release of a query with l2-sensitivity Delta_i under N(0, sigma_i^2 I) noise is
mu_i-GDP with mu_i = Delta_i/sigma_i, and any (adaptive) composition of such releases is
exactly mu-GDP with mu = sqrt(sum_i mu_i^2) (Dong, Roth & Su, JRSS-B 2022, Cor. 3.3).  A
rho-zCDP Gaussian release has rho = Delta^2/(2 sigma^2), so zCDP Gaussian compositions with
total rho are mu-GDP with mu = sqrt(2 rho).  The (eps, delta) profile of mu-GDP is the analytic
Gaussian mechanism of Balle & Wang (ICML 2018, Thm 8):

    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2),

and eps(delta) is its (unique) root; both are exact, cost microseconds and never allocate.
dp_accounting's PLD is only a cross-check there, and only when its support fits the budget.

Subsampled steps (P4 Alg. 1/2).  No closed form: the PLD accountant (Poisson pair, see
:mod:`.accountant`) with a discretisation chosen relative to eps (:func:`pld_interval`) and the
RDP accountant (sampling without replacement, replace-one; a rigorous upper bound) beside it.

Memory guard.  dp_accounting's PLD of a Gaussian with mu = Delta/sigma holds about
(mu^2 + 20 mu)/interval points (measured on dp_accounting 0.6: 2.0e4 points at mu = 1,
interval 1e-3; 1.2e6 at mu = 100, interval 1e-2; the mu^2 term is the loss mean mu^2/2 on both
sides, the 20 mu term its +-10 sd tails), and composing T such events multiplies the
per-step spread; building it peaks at ~160 bytes/point.  :func:`pld_points` estimates it
before anything is built; beyond :data:`PLD_POINT_BUDGET` (5e6) points the callers switch to the analytic route (non-subsampled) or
to RDP (subsampled) and say so.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

from stabsim.privacy import _checks as chk

__all__ = [
    "PLD_POINT_BUDGET", "gdp_delta", "gdp_epsilon", "gdp_mu", "compose_mu", "pld_interval",
    "pld_points", "pld_gaussian_epsilon", "pld_subsampled_epsilon", "rdp_subsampled_epsilon",
]

#: largest PLD support (points) built before switching to the analytic route / RDP.  Building a
#: Gaussian PLD and reading eps off it peaks at ~160 bytes/point (measured: +188 MB of max RSS for
#: 1.2e6 points, dp_accounting 0.6), so 5e6 points is ~0.8 GB.
PLD_POINT_BUDGET = 5e6


# ----------------------------------------------------------------------------- GDP (exact)
def gdp_delta(eps, mu):
    """delta(eps) of mu-GDP (Balle & Wang 2018 Thm 8; Dong-Roth-Su 2022 Cor. 2.13), eps >= 0."""
    eps, mu = chk.nonnegative("eps", eps), chk.positive("mu", mu)
    first = float(ndtr(-eps / mu + mu / 2.0))
    second = math.exp(eps + float(log_ndtr(-eps / mu - mu / 2.0)))
    return max(first - second, 0.0)


def gdp_epsilon(delta, mu):
    """Smallest eps >= 0 with delta(eps) <= delta for mu-GDP (exact; brentq to ~1e-12 relative)."""
    delta, mu = chk.delta(delta), chk.positive("mu", mu)
    f = lambda e: gdp_delta(e, mu) - delta  # noqa: E731
    if f(0.0) <= 0:
        return 0.0
    hi = max(1.0, mu * mu / 2.0 + 10.0 * mu)   # delta(mu^2/2 + 10 mu) ~ Phi(-10): a bracket
    while f(hi) > 0:
        hi *= 2.0
    return brentq(f, 0.0, hi, xtol=1e-13, rtol=1e-12)


def gdp_mu(eps, delta):
    """Largest mu such that mu-GDP is (eps, delta)-DP (delta(eps) is increasing in mu)."""
    eps, delta = chk.eps(eps), chk.delta(delta)
    f = lambda lm: gdp_delta(eps, math.exp(lm)) - delta  # noqa: E731
    lo, hi = -1.0, 1.0
    while f(lo) > 0:
        lo -= 1.0
    while f(hi) <= 0:
        hi += 1.0
    return math.exp(brentq(f, lo, hi, xtol=1e-14, rtol=1e-13))


def compose_mu(ratios):
    """mu of the composition of Gaussian releases with ratios Delta_i/sigma_i: sqrt(sum ratio_i^2)."""
    return math.sqrt(math.fsum(float(r) ** 2 for r in ratios))


# ----------------------------------------------------------------------------- PLD / RDP
def pld_interval(eps, steps=1, lo=1e-6, hi=1e-2):
    """PLD value_discretization_interval chosen relative to eps: eps/(1000 sqrt(steps)), in [lo, hi].

    The pessimistic rounding moves each step's loss up by < interval; over ``steps``
    self-compositions the rounding errors add up to ~ sqrt(steps) x interval in the bulk of
    the loss distribution (not steps x interval: the roundings are spread over the support),
    so eps/(1000 sqrt(steps)) keeps the PLD eps within ~0.1-1 % of the tight value
    (``tests/test_privacy_ledger.py`` brackets it with the optimistic PLD).
    """
    eps = chk.eps(eps)
    return min(max(eps / (1000.0 * math.sqrt(max(int(steps), 1))), lo), hi)


def pld_points(mu, interval, sampling_prob=1.0, steps=1):
    """Estimated size of dp_accounting's PLD support for ``steps`` x a (subsampled) Gaussian.

    One Gaussian event with mu = Delta/sigma: (mu^2 + 20 mu)/interval points (module docstring).
    Poisson subsampling with rate q does not shrink the support of one event (its loss still
    reaches ~ 10 mu); the composition of ``steps`` events adds each step's mean (<= the KL
    divergence q^2 (e^{mu^2} - 1), chi^2 bound) and spreads as 10 sqrt(steps) standard deviations.
    """
    mu, interval = chk.positive("mu", mu), chk.positive("interval", interval)
    one = (mu * mu + 20.0 * mu) / interval
    if steps <= 1:
        return one
    q = float(sampling_prob)
    chi2 = q * q * math.expm1(min(mu * mu, 700.0))
    spread = steps * chi2 + 10.0 * math.sqrt(steps * chi2) + 20.0 * mu
    return max(one, spread / interval)


def pld_gaussian_epsilon(mu, delta, interval):
    """eps of one Gaussian mechanism (ratio mu) by dp_accounting's PLD (pessimistic), ADD_OR_REMOVE_ONE.

    Callers check :func:`pld_points` first; this function refuses beyond the budget.
    """
    n_pts = pld_points(mu, interval)
    if n_pts > PLD_POINT_BUDGET:
        raise MemoryError(f"PLD support of ~{n_pts:.3g} points exceeds the budget {PLD_POINT_BUDGET:.3g} "
                          f"(mu = {mu:.4g}, interval = {interval:.3g}); use gdp_epsilon (exact)")
    from stabsim.privacy.pld_gaussian import epsilon_for_delta, gaussian_pld   # dp_accounting's, on arrays

    return float(epsilon_for_delta(gaussian_pld(1.0 / mu, 1.0, interval), delta))


def pld_subsampled_epsilon(z, q, steps, delta, interval, pessimistic=True):
    """eps of ``steps`` x PoissonSampled(q, Gaussian(z)) by dp_accounting's PLD, ADD_OR_REMOVE_ONE.

    ``pessimistic=False`` gives the optimistic (lower) discretisation: the two bracket the
    tight value of this pair.  Refuses (MemoryError) beyond the point budget.
    """
    mu = 1.0 / chk.positive("z", z)
    n_pts = pld_points(mu, interval, q, steps)
    if n_pts > PLD_POINT_BUDGET:
        raise MemoryError(f"PLD support of ~{n_pts:.3g} points exceeds the budget {PLD_POINT_BUDGET:.3g}")
    from stabsim.privacy.pld_gaussian import epsilon_for_delta, gaussian_pld   # dp_accounting's, on arrays

    pld = gaussian_pld(z, q, interval, pessimistic)
    if steps > 1:
        pld = pld.self_compose(int(steps))
    return float(epsilon_for_delta(pld, delta))


def rdp_subsampled_epsilon(z, n, k, steps, delta):
    """eps of ``steps`` x SampledWithoutReplacement(n, k, Gaussian(z)), REPLACE_ONE, RDP accountant (upper bound)."""
    import dp_accounting as dpa
    from dp_accounting import rdp as dpa_rdp

    acc = dpa_rdp.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    ev = dpa.SampledWithoutReplacementDpEvent(int(n), int(k), dpa.GaussianDpEvent(z))
    acc.compose(dpa.SelfComposedDpEvent(ev, int(steps)))
    return float(acc.get_epsilon(delta))
