"""Family fit of a subsampled-Gaussian audit: an eps lower bound *under a stated model assumption*.

Why
---
For P4 Alg. 1 (DP-SGD with one uniform point per step, rate q = 1/n, T steps) the
Clopper-Pearson bound of :mod:`stabsim.privacy.audit` needs the tail of the privacy-loss
distribution at delta ~ 1e-3, which a few thousand runs cannot resolve, and the GDP fit of
:mod:`stabsim.privacy.audit_gdp` reads the middle of a trade-off curve that is far from Gaussian
(at q T ~ 1 the loss is dominated by the few steps that hit the canary).  Both stay well below
the accountant even at a planted under-noising.  A *parametric* audit (the approach of
"tight auditing" of DP-SGD in Nasr et al. 2023 and of the one-parameter fits of Steinke, Nasr,
Jagielski 2023) instead assumes the mechanism belongs to a known family and bounds its one free
parameter with confidence; the family's own accountant converts that bound into eps(delta).

Family (the assumption; ``FAMILY_ASSUMPTION``)
----------------------------------------------
Every step is a Gaussian mechanism around the gradient of the step's secret sample, with the
sample distribution and the per-sample gradients of the audit design (evaluated at w_0; the
worst-case design of :mod:`stabsim.privacy.audit_designs` keeps them constant along the path)
and an *unknown* noise standard deviation rho * sigma_rec, where sigma_rec is the noise the run
records.  rho = 1 is an honest record; rho < 1 is a mechanism that adds less noise than it
claims.  All step gradients of the design lie on one line e, so the path enters only through
the residuals u_t = (w_{t-1} - w_t) . e / (eta sigma_rec), and under the family

    u_t = a_J + rho xi_t,   xi_t ~ N(0, 1),   J ~ (p_j) on S,  J ~ (p'_j) on S',

with a_j = g_j . e / sigma_rec (the components the whitebox statistic uses).  The audit's
statistic Lambda (:mod:`stabsim.privacy.audit_whitebox`) is computed with sigma_rec, i.e. it is
the fixed function Lambda = sum_t lambda(u_t), lambda(u) = log sum p'_j e^{-(u - a'_j)^2/2}
- log sum p_j e^{-(u - a_j)^2/2}, whatever rho is.  Its means on S and S' under rho are

    m0(rho) = T sum_j p_j E lambda(a_j + rho xi),   m1(rho) = T sum_j p'_j E lambda(a'_j + rho xi)

(Gauss-Hermite quadrature, 120 nodes).

Estimator
---------
The confidence set is every rho in ``rho_range`` (default [0.02, 50]) where *both* observed means are within
c = Phi^{-1}(1 - (1 - confidence)/4) standard errors of m0(rho), m1(rho) (two two-sided
normal (CLT) intervals, Bonferroni: coverage >= confidence asymptotically in the number of
runs; m0 and m1 increase with rho -- lambda is convex for Alg. 1's design -- so the set is an
interval, found by root finding).  An empty set rejects the family (reported, no bound).  Otherwise rho_max = the largest
rho in the set, and ``eps_lower`` = eps(delta) of the family at noise rho_max sigma_rec, which
is <= the true eps(delta) with probability >= confidence *if the mechanism is in the family*.
For P4 Alg. 1's design the family's path is exactly the T-fold Poisson(q)-subsampled Gaussian
pair (N(g, s^2) against (1 - q) N(g, s^2) + q N(g + 2G e, s^2)) composed by the PLD accountant
(both orders of the pair = dp_accounting's ADD_OR_REMOVE_ONE), here with the *optimistic*
discretisation (``pessimistic_estimate=False``) so the conversion never overstates eps.
P4 Alg. 2's design pair (two mixtures) is not the accountant's Poisson pair, so no exact
conversion is available here and the fit is not offered for it (``family_fit_available``).

Where the evidence comes from: mostly m0 (the runs on S pin down the noise actually added),
with m1 checking that the canary acts as the family says (a canary that changes the gradients
less than the design says makes the set empty instead of fitting a wrong rho).  This is a model
fit, not an assumption-free audit: the Clopper-Pearson ``eps_lower`` stays beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.stats import norm

from stabsim.privacy import _checks as chk

__all__ = ["FAMILY_ASSUMPTION", "FamilyFit", "StepMixture", "step_mixture", "family_fit",
           "family_means", "family_fit_available", "poisson_gaussian_epsilon"]

FAMILY_ASSUMPTION = (
    "subsampled-Gaussian family: every step is N(gradient of the step's secret sample, (rho sigma_rec)^2 I) "
    "with the design's sample distribution and gradients (constant along the path), only the noise factor "
    "rho unknown; eps from the exact T-fold Poisson-subsampled Gaussian PLD (optimistic discretisation); "
    "rho bounded by normal (CLT) intervals on the mean path log-likelihood ratio on S and on S'")

#: noise multipliers below this are converted at this value (a smaller eps: still a lower bound; the
#: PLD of a nearly noiseless step needs a huge support)
Z_FLOOR = 0.3

#: the algorithms whose design has an exact conversion rho -> eps(delta) here
FAMILY_ALGORITHMS = ("p4_alg1",)


def family_fit_available(algorithm) -> str | None:
    """None if the family fit applies to ``algorithm``'s every-iterate audit, else the reason."""
    if algorithm in FAMILY_ALGORITHMS:
        return None
    if algorithm == "p4_alg2":
        return ("P4 Alg. 2's design pair (two Gaussian mixtures, a step touches z_k w.p. 2/n) is not the "
                "accountant's Poisson pair, so rho has no exact conversion to eps here")
    return f"the family fit is defined for {', '.join(FAMILY_ALGORITHMS)} only (got {algorithm!r})"


@dataclass(frozen=True)
class StepMixture:
    """One step's residual u = r . e / sigma_rec: components a (S), a1 (S') with weights p, p1."""

    a: np.ndarray
    p: np.ndarray
    a1: np.ndarray
    p1: np.ndarray
    T: int
    q: float            # the sampling rate of the family's Poisson pair (P4 Alg. 1: 1/n)
    z_rec: float        # sigma_rec / (replace-one sensitivity 2G): the recorded noise multiplier


def step_mixture(X, y, X1, y1, lossf, w0, sigma, T, G) -> StepMixture:
    """The :class:`StepMixture` of a pointwise design (S = (X, y), S' = (X1, y1)): uniform point,
    gradients at ``w0``, all on one line (else ValueError: the family fit needs collinear gradients)."""
    from stabsim.privacy.audit_whitebox import terms
    from stabsim.engine.losses import point_loss_grad

    if lossf.pairwise:
        raise ValueError("step_mixture handles pointwise losses only (P4 Alg. 1)")
    w0 = np.ascontiguousarray(w0, float)
    comps = []
    for XX, yy in ((X, y), (X1, y1)):
        P, Py, idx, prob = terms(XX, yy, False)
        G_ = np.zeros((len(prob), len(w0)))
        for j in range(len(prob)):
            point_loss_grad(lossf.form, lossf.phi, float(lossf.q), w0, P, int(idx[j, 0]), Py[idx[j, 0]], 1.0, G_[j])
        comps.append((G_, prob))
    allg = np.vstack([comps[0][0], comps[1][0]])
    big = np.argmax(np.linalg.norm(allg, axis=1))
    if not np.linalg.norm(allg[big]) > 0:
        raise ValueError("every step gradient vanishes at w_0: the canary changes nothing")
    e = allg[big] / np.linalg.norm(allg[big])
    resid = allg - np.outer(allg @ e, e)
    if np.abs(resid).max() > 1e-9 * max(1.0, np.abs(allg).max()):
        raise ValueError("the family fit needs step gradients on one line (the audit designs' are)")
    (g0, p0), (g1, p1) = comps
    n = len(y)
    return StepMixture(g0 @ e / sigma, p0, g1 @ e / sigma, p1, int(T), 1.0 / n, sigma / (2.0 * G))


_NODES, _W = hermegauss(120)
_W = _W / _W.sum()


def _lam(u, m):
    l1 = np.logaddexp.reduce(np.log(m.p1)[:, None] - 0.5 * (u[None, :] - m.a1[:, None]) ** 2, axis=0)
    l0 = np.logaddexp.reduce(np.log(m.p)[:, None] - 0.5 * (u[None, :] - m.a[:, None]) ** 2, axis=0)
    return l1 - l0


def family_means(m: StepMixture, rho):
    """(m0(rho), m1(rho)): the means of Lambda on S and on S' under noise factor ``rho`` (array)."""
    rho = np.atleast_1d(np.asarray(rho, float))
    out0, out1 = np.empty(len(rho)), np.empty(len(rho))
    for i, r in enumerate(rho):
        e0 = sum(pj * np.dot(_W, _lam(aj + r * _NODES, m)) for aj, pj in zip(m.a, m.p))
        e1 = sum(pj * np.dot(_W, _lam(aj + r * _NODES, m)) for aj, pj in zip(m.a1, m.p1))
        out0[i], out1[i] = m.T * e0, m.T * e1
    return out0, out1


@lru_cache(maxsize=64)
def poisson_gaussian_epsilon(z, q, T, delta, discretization=1e-3):
    """eps(delta) of T compositions of the Poisson(q)-subsampled Gaussian with noise multiplier z
    (sigma / sensitivity), ADD_OR_REMOVE_ONE, dp_accounting PLD with the optimistic discretisation
    (never above the exact value up to the truncation of the tails, mass <= 1e-15)."""
    from dp_accounting.pld import privacy_loss_distribution as pldm

    pld = pldm.from_gaussian_mechanism(float(z), sensitivity=1.0, pessimistic_estimate=False,
                                       value_discretization_interval=discretization,
                                       sampling_prob=float(q), use_connect_dots=False)
    pld = pld.self_compose(int(T))
    return max(0.0, float(pld.get_epsilon_for_delta(float(delta))))


@dataclass(frozen=True)
class FamilyFit:
    """Result of :func:`family_fit` (see the module docstring).

    eps_lower  eps(delta) at noise rho_max sigma_rec (None: the family was rejected by the data)
    rho_max    the largest noise factor in the confidence set; rho_min its smallest
    mean0, se0, mean1, se1  the observed means of Lambda on S, S' and their standard errors
    pred0, pred1  the family's means at rho = 1 (the recorded noise)
    """

    eps_lower: float | None
    rho_max: float | None
    rho_min: float | None
    mean0: float
    se0: float
    mean1: float
    se1: float
    pred0: float
    pred1: float
    crit: float
    confidence: float
    delta: float
    z_rec: float
    q: float
    T: int
    assumption: str = FAMILY_ASSUMPTION

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _inverse(f, target, lo, hi):
    """The rho in [lo, hi] where the increasing f reaches ``target`` (lo / hi when outside)."""
    from scipy.optimize import brentq

    flo, fhi = f(lo), f(hi)
    if target <= flo:
        return lo
    if target >= fhi:
        return hi
    return float(brentq(lambda r: f(r) - target, lo, hi, xtol=1e-9, rtol=1e-10))


def family_fit(s0, s1, mixture: StepMixture, *, delta, confidence=0.95,
               rho_range=None) -> FamilyFit:
    """Lower confidence bound on eps(delta) within the family (module docstring) from the path
    log-likelihood ratios ``s0`` (runs on S) and ``s1`` (runs on S') of a P4 Alg. 1 audit."""
    delta = chk.delta(delta)
    confidence = chk.open_unit("confidence", confidence)
    s0 = chk.scores("s0", s0, 30, " for the normal intervals")
    s1 = chk.scores("s1", s1, 30, " for the normal intervals")
    lo_r, hi_r = (0.02, 50.0) if rho_range is None else (float(rho_range[0]), float(rho_range[1]))
    if not 0 < lo_r < hi_r:
        raise ValueError(f"rho_range must be (low, high) with 0 < low < high, got {rho_range!r}")
    c = float(norm.ppf(1.0 - (1.0 - confidence) / 4.0))
    mu0, mu1 = float(s0.mean()), float(s1.mean())
    se0, se1 = float(s0.std(ddof=1) / math.sqrt(s0.size)), float(s1.std(ddof=1) / math.sqrt(s1.size))
    grid = np.geomspace(lo_r, hi_r, 200)
    g0, g1 = family_means(mixture, grid)
    tol = 1e-9 * (1.0 + np.abs(np.concatenate([g0, g1])).max())   # rounding of the quadrature
    if np.any(np.diff(g0) < -tol) or np.any(np.diff(g1) < -tol):   # (convex lambda: never, for Alg. 1's design)
        raise ValueError("the family's means are not increasing in rho for this design; no interval fit")
    ints = []
    for k, (mu, se) in enumerate(((mu0, se0), (mu1, se1))):
        f = lambda r, k=k: family_means(mixture, r)[k][0]   # noqa: E731
        ints.append((_inverse(f, mu - c * se, lo_r, hi_r), _inverse(f, mu + c * se, lo_r, hi_r)))
    rmin, rmax = max(ints[0][0], ints[1][0]), min(ints[0][1], ints[1][1])
    p0, p1 = family_means(mixture, 1.0)
    if rmin > rmax:
        rmax = rmin = eps = None
    else:
        # eps decreases in z, so flooring z at Z_FLOOR keeps a lower bound (and the PLD's support small)
        eps = poisson_gaussian_epsilon(round(max(rmax * mixture.z_rec, Z_FLOOR), 10), mixture.q, mixture.T, delta)
    return FamilyFit(eps, rmax, rmin, mu0, se0, mu1, se1, float(p0[0]), float(p1[0]), c, confidence,
                     delta, mixture.z_rec, mixture.q, mixture.T)
