"""Gaussian-DP audit estimator: a lower confidence bound on mu, converted to eps(delta).

A mechanism is mu-GDP (Dong, Roth, Su 2022) iff every test of S against S' with false-positive
rate alpha has false-negative rate beta >= G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu).  So any
one test gives

    mu >= Phi^{-1}(1 - alpha) - Phi^{-1}(beta),

and with one-sided Clopper-Pearson upper bounds on alpha and beta (each at level
(1 - confidence)/2, union bound) in place of the rates, ``mu_lower`` is a lower confidence bound
on the mechanism's smallest GDP parameter mu* -- valid for *any* mechanism (no shape
assumption), provided the test was fixed before its counts were seen.  The estimator is far less
noisy than the Clopper-Pearson eps bound of :mod:`stabsim.privacy.audit` because it reads the
trade-off curve where it is best estimated (error rates near 1/2) instead of in its tail.

Converting mu to eps(delta) is where an assumption enters: eps_mu(delta) of mu-GDP is a lower
bound on the mechanism's eps(delta) only if the mechanism's trade-off curve *is* Gaussian
(G_{mu*}).  That holds exactly for a composition of Gaussian mechanisms seen in full (P2 Alg. 1
under the every-iterate threat model: ``exact=True`` in the result), approximately (central
limit theorem of Dong, Roth, Su) for many subsampled Gaussian steps (P4), and not in general
(output perturbation with a data-dependent output).  Both numbers are therefore reported: the
Clopper-Pearson bound (assumption-free) and this one (named "GDP fit" with its premise).

Threshold: with the likelihood-ratio statistic of :mod:`stabsim.privacy.audit_whitebox` the test
"log LR >= 0" is fixed in advance and is the most informative single threshold for a Gaussian
trade-off (both error rates are Phi(-mu/2)), so all samples are counted (``threshold=0``).
For any other statistic the threshold and direction are chosen on one half of the samples and
counted on the other (``threshold=None``), as in ``eps_lower_from_scores(method="split")``.

Conversion: ``dp_accounting``'s privacy-loss distribution of the Gaussian mechanism with
standard deviation 1/mu (which is exactly mu-GDP) with ``pessimistic_estimate=False``: its
discretisation can only *under*-state eps, so the converted value stays a lower bound (built by
:func:`stabsim.privacy.pld_gaussian.gaussian_pld`, the same pmf on arrays); the
exact analytic value (Balle and Wang 2018, :func:`stabsim.privacy.exact.gdp_epsilon`) is
reported beside it (they differ by the discretisation, about 1e-4 in eps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.stats import norm

from stabsim.privacy import _checks as chk
from stabsim.privacy.audit import _counts, clopper_pearson_upper
from stabsim.privacy.exact import gdp_epsilon

__all__ = ["GdpAudit", "gdp_audit", "mu_from_rates", "gdp_epsilon_lower"]

#: beyond this mu the PLD of the Gaussian needs a very large support; the analytic value is used.
MU_PLD_MAX = 20.0


@dataclass(frozen=True)
class GdpAudit:
    """Result of :func:`gdp_audit`.

    mu_lower   lower confidence bound on the mechanism's GDP parameter mu* (no shape assumption).
    mu_hat     the point estimate Phi^{-1}(1 - FPR) - Phi^{-1}(FNR) at the same test.
    eps_lower  eps(delta) of mu_lower-GDP (dp_accounting, optimistic discretisation): a lower
               bound on the mechanism's eps(delta) if its trade-off curve is Gaussian.
    eps_hat    eps(delta) of mu_hat-GDP (analytic).
    tau, direction, fp, n0, fn, n1   the test and its counts; ``method``: "fixed" or "split".
    """

    mu_lower: float
    mu_hat: float
    eps_lower: float
    eps_hat: float
    delta: float
    confidence: float
    tau: float
    direction: str
    fp: int
    n0: int
    fn: int
    n1: int
    method: str

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def mu_from_rates(fpr, fnr):
    """Phi^{-1}(1 - fpr) - Phi^{-1}(fnr), clipped at 0 (rates of 0 or 1 give +-inf before clipping)."""
    with np.errstate(divide="ignore"):
        m = norm.isf(np.asarray(fpr, float)) - norm.ppf(np.asarray(fnr, float))
    return np.maximum(np.nan_to_num(m, nan=0.0, posinf=np.inf, neginf=0.0), 0.0)


def gdp_epsilon_lower(mu, delta):
    """eps(delta) of mu-GDP, never above the exact value (see the module docstring)."""
    delta = chk.delta(delta)
    mu = float(mu)
    if not mu > 0:
        return 0.0
    if not math.isfinite(mu) or mu > MU_PLD_MAX:
        return gdp_epsilon(delta, min(mu, 1e6))
    return _pld_epsilon_lower(mu, delta)


@lru_cache(maxsize=256)
def _pld_epsilon_lower(mu, delta):
    """The optimistic PLD's eps(delta) of mu-GDP (seconds each: remembered in this process, since
    audits that separate perfectly share their mu bound, which depends on the counts alone)."""
    from stabsim.privacy.pld_gaussian import gaussian_pld   # = from_gaussian_mechanism, its buckets on arrays

    dist = gaussian_pld(1.0 / mu, 1.0, 1e-4, pessimistic=False, connect_dots=False)
    return max(0.0, float(dist.get_epsilon_for_delta(delta)))


def _choose(sel0, sel1, a):
    """(tau, direction) maximising the Clopper-Pearson mu bound on the selection samples (the
    midpoints between consecutive distinct pooled values, so no sample sits on a threshold)."""
    sel0, sel1 = np.sort(sel0), np.sort(sel1)
    pooled = np.unique(np.concatenate([sel0, sel1]))
    taus = (pooled[:-1] + pooled[1:]) / 2.0 if len(pooled) > 1 else pooled
    best = (-1.0, 0.0, "greater")
    for d in ("greater", "less"):
        fp, fn = _counts(sel0, sel1, taus, d)
        m = mu_from_rates(clopper_pearson_upper(fp, len(sel0), a), clopper_pearson_upper(fn, len(sel1), a))
        i = int(np.argmax(m))
        if m[i] > best[0]:
            best = (float(m[i]), float(taus[i]), d)
    return best[1], best[2]


def gdp_audit(scores0, scores1, *, delta, confidence=0.95, threshold=None, direction="greater",
              seed=0, split=0.5) -> GdpAudit:
    """GDP audit of a statistic on outputs of S (``scores0``) and S' (``scores1``).

    ``threshold``: a number fixed before the run (all samples counted, one test, ``direction``
    as given: predict S' iff statistic >= tau, or <= tau, as in :mod:`stabsim.privacy.audit`) or None (threshold and direction chosen on the first ``split`` of each shuffled
    sample, counted on the rest).  Returns a :class:`GdpAudit`.
    """
    delta = chk.delta(delta)
    confidence = chk.open_unit("confidence", confidence)
    s0, s1 = chk.scores("scores0", scores0, 4), chk.scores("scores1", scores1, 4)
    a = (1.0 - confidence) / 2.0
    if threshold is not None:
        direction = chk.choice("direction", direction, ("greater", "less"))
        tau, e0, e1, method = float(threshold), s0, s1, "fixed"
    else:
        split = chk.open_unit("split", split)
        rng = np.random.default_rng(seed)
        p0, p1 = rng.permutation(s0), rng.permutation(s1)
        k0, k1 = int(split * len(p0)), int(split * len(p1))
        if min(k0, k1) < 2 or k0 >= len(p0) - 1 or k1 >= len(p1) - 1:
            raise ValueError(f"split={split!r} leaves too few samples to select or to count")
        tau, direction = _choose(p0[:k0], p1[:k1], a)
        e0, e1, method = p0[k0:], p1[k1:], "split"
    fpv, fnv = _counts(np.sort(e0), np.sort(e1), np.array([tau]), direction)
    fp, fn = int(fpv[0]), int(fnv[0])
    mu_lo = float(mu_from_rates(clopper_pearson_upper(fp, len(e0), a), clopper_pearson_upper(fn, len(e1), a)))
    # point estimate: rates kept inside (0, 1) by half a count, so a perfect separation is finite
    mu_hat = float(mu_from_rates((fp + 0.5) / (len(e0) + 1.0), (fn + 0.5) / (len(e1) + 1.0)))
    return GdpAudit(mu_lo, mu_hat, gdp_epsilon_lower(mu_lo, delta),
                    gdp_epsilon(delta, mu_hat) if mu_hat > 0 else 0.0, delta, confidence, tau,
                    direction, fp, len(e0), fn, len(e1), method)
