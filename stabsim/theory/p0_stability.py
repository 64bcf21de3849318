"""P0 (Yang, Lei, Lyu, Ying, AISTATS 2021): high-probability uniform argument stability of
Algorithm 1 (Theorem 1, Eq. (9)) and the noise level of Algorithm 2 it calibrates (Theorem 4 /
Eq. (5)).  Registers ``P0.Thm1.*``, ``P0.Eq9.*`` and ``P0.Thm4.sigma2.*``.  Conventions: the
docstring of ``stabsim.theory.p0``, which re-exports every name of this module.
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.theory._check import named
from stabsim.theory.p0_common import _COUPLED, _E, _p0


# ---------------------------------------------------------------------------------------------
# Theorem 1 and Eq. (9): high-probability uniform argument stability
# ---------------------------------------------------------------------------------------------

def _hp_sq(eta, G, steps, log_factor, mean, y, k):
    """4 e eta^2 G^2 [steps + (log_factor (mean + y + sqrt(k mean y)))^2], the shape of (3)/(9)."""
    c = log_factor * (mean + y + np.sqrt(k * mean * y))
    return 4 * _E * eta ** 2 * G ** 2 * (steps + c ** 2)


def _thm1_sq(t, n, eta, G, gamma, corrected):
    t, n, eta, G, gamma = named(t=t, n=n, eta=eta, G=G, gamma=gamma)
    mean = (t + 1) / n if corrected else t / n
    return _hp_sq(eta, G, t, np.log(_E * t), mean, np.log(1 / gamma), 2 if corrected else 1)


_THM1 = dict(ref="Theorem 1, Eq. (3)", tag="EXPLICIT", sweep="t",
             assumptions=(_COUPLED, "constant step eta", "holds with prob. >= 1-gamma over the indices"))
_THM1_PRINTED = "as printed: t/n and sqrt(t ln(1/gamma)/n) in c_{gamma,t}"
_THM1_CORRECTED = ("corrected per errata P0-E4 (Thm 1 note): the proof's c_{gamma,t} uses t+1, and "
                   "Lemma 1 (Chernoff) gives mu + a + sqrt(2 mu a), i.e. sqrt(2(t+1) ln(1/gamma)/n)")


@_p0(key="P0.Thm1.iterate_sq.printed", quantity="iterate_dist_sq_quantile", variant="printed",
     reading=_THM1_PRINTED, **_THM1)
def thm1_iterate_sq_printed(*, t, n, eta, G, gamma):
    """P0 Thm 1, Eq. (3) as printed: (1-gamma)-bound on the squared per-iterate distance.

    W.p. >= 1-gamma, ||w_{t+1} - w'_{t+1}||^2 <= 4 e eta^2 G^2 [t + ln^2(et) (t/n + ln(1/gamma) + sqrt(t ln(1/gamma)/n))^2].
    """
    return _thm1_sq(t, n, eta, G, gamma, corrected=False)


@_p0(key="P0.Thm1.iterate_sq.corrected", quantity="iterate_dist_sq_quantile", variant="corrected",
     reading=_THM1_CORRECTED, **_THM1)
def thm1_iterate_sq_corrected(*, t, n, eta, G, gamma):
    """P0 Thm 1, Eq. (3), proof form (t+1, corrected Chernoff): squared per-iterate distance.

    W.p. >= 1-gamma, ||w_{t+1} - w'_{t+1}||^2 <= 4 e eta^2 G^2 [t + ln^2(et) ((t+1)/n + ln(1/gamma) + sqrt(2(t+1) ln(1/gamma)/n))^2].
    """
    return _thm1_sq(t, n, eta, G, gamma, corrected=True)


@_p0(key="P0.Thm1.iterate.printed", quantity="iterate_dist_quantile", variant="printed",
     reading=_THM1_PRINTED, **_THM1)
def thm1_iterate_printed(*, t, n, eta, G, gamma):
    """P0 Thm 1, square root of Eq. (3) as printed: bounds the (1-gamma)-quantile of ||w_{t+1} - w'_{t+1}||."""
    return np.sqrt(_thm1_sq(t, n, eta, G, gamma, corrected=False))


@_p0(key="P0.Thm1.iterate.corrected", quantity="iterate_dist_quantile", variant="corrected",
     reading=_THM1_CORRECTED, **_THM1)
def thm1_iterate_corrected(*, t, n, eta, G, gamma):
    """P0 Thm 1, square root of the proof form of Eq. (3) (t+1, sqrt(2(t+1) ln(1/gamma)/n))."""
    return np.sqrt(_thm1_sq(t, n, eta, G, gamma, corrected=True))


def _eq9_sq(T, n, eta, G, gamma, c):
    T, n, eta, G, gamma = named(T=T, n=n, eta=eta, G=G, gamma=gamma)
    return 4 * _E * eta ** 2 * G ** 2 * (T + c * T ** 2 * np.log(_E * T) ** 2 * np.log(1 / gamma) ** 2 / n ** 2)


def _eq9_dist(T, n, eta, G, gamma, c):
    """2 sqrt(e) eta G (sqrt(T) + sqrt(c) T ln(eT) ln(1/gamma) / n): the paper's epsilon_stab form."""
    T, n, eta, G, gamma = named(T=T, n=n, eta=eta, G=G, gamma=gamma)
    return 2 * math.sqrt(_E) * eta * G * (np.sqrt(T) + math.sqrt(c) * T * np.log(_E * T) * np.log(1 / gamma) / n)


def _eq9_proof_sq(T, n, eta, G, gamma):
    """Eq. (9) before its simplification, with the corrected Chernoff step (valid for all T, gamma)."""
    T, n, eta, G, gamma = named(T=T, n=n, eta=eta, G=G, gamma=gamma)
    return _hp_sq(eta, G, T, np.log(_E * T), T / n, np.log(1 / gamma), 2)


_EQ9 = dict(ref="Theorem 1, Eq. (9)", tag="EXPLICIT", sweep="T")
_EQ9_BASE = (_COUPLED, "constant step eta", "holds with prob. >= 1-gamma over the indices")
_EQ9_PRINTED = "as printed: constant 3 (needs T/n and ln(1/gamma) large enough, see errata P0-E4)"
_EQ9_CORRECTED = ("corrected per errata P0-E4: constant 9, valid for all T >= n and gamma <= 1/e "
                  "given the paper's Chernoff step (x + y + sqrt(xy) <= 3xy for x, y >= 1)")
_EQ9_PROOF = ("proof form (errata P0-E4): the un-simplified bound 4 e eta^2 G^2 [T + ln^2(eT) "
              "(T/n + ln(1/gamma) + sqrt(2 T ln(1/gamma)/n))^2] with the corrected Chernoff step; "
              "valid for every T >= 1 and gamma in (0,1)")


@_p0(key="P0.Eq9.avg_sq.printed", quantity="uas_sq_quantile", variant="printed", reading=_EQ9_PRINTED,
     assumptions=_EQ9_BASE + ("T >= n",), **_EQ9)
def eq9_avg_sq_printed(*, T, n, eta, G, gamma):
    """P0 Eq. (9) as printed (constant 3): squared distance of the averaged outputs.

    W.p. >= 1-gamma, ||w_bar_T - w_bar'_T||^2 <= 4 e eta^2 G^2 (T + 3 T^2 ln^2(eT) ln^2(1/gamma) / n^2).
    """
    return _eq9_sq(T, n, eta, G, gamma, 3.0)


@_p0(key="P0.Eq9.avg_sq.corrected", quantity="uas_sq_quantile", variant="corrected", reading=_EQ9_CORRECTED,
     assumptions=_EQ9_BASE + ("T >= n", "gamma <= 1/e"), **_EQ9)
def eq9_avg_sq_corrected(*, T, n, eta, G, gamma):
    """P0 Eq. (9), constant 9 (P0-E4): ||w_bar_T - w_bar'_T||^2 <= 4 e eta^2 G^2 (T + 9 T^2 ln^2(eT) ln^2(1/gamma)/n^2).

    Valid for T >= n and gamma <= 1/e.
    """
    return _eq9_sq(T, n, eta, G, gamma, 9.0)


@_p0(key="P0.Eq9.avg_sq.proof", quantity="uas_sq_quantile", variant="corrected", reading=_EQ9_PROOF,
     assumptions=_EQ9_BASE, **_EQ9)
def eq9_avg_sq_proof(*, T, n, eta, G, gamma):
    """P0 Eq. (9), un-simplified proof form: squared distance of the averaged outputs, any T and gamma.

    W.p. >= 1-gamma, ||w_bar_T - w_bar'_T||^2 <= 4 e eta^2 G^2 [T + ln^2(eT) (T/n + ln(1/gamma) + sqrt(2 T ln(1/gamma)/n))^2].
    """
    return _eq9_proof_sq(T, n, eta, G, gamma)


@_p0(key="P0.Eq9.avg.printed", quantity="uas_quantile", variant="printed", reading=_EQ9_PRINTED,
     assumptions=_EQ9_BASE + ("T >= n",), **_EQ9)
def eq9_avg_printed(*, T, n, eta, G, gamma):
    """P0 Eq. (9) as printed (constant 3), the paper's distance form eps_stab of Thm 1 / (A.18).

    W.p. >= 1-gamma, ||w_bar_T - w_bar'_T|| <= 2 sqrt(e) eta G (sqrt(T) + sqrt(3) T ln(eT) ln(1/gamma) / n).
    """
    return _eq9_dist(T, n, eta, G, gamma, 3.0)


@_p0(key="P0.Eq9.avg.corrected", quantity="uas_quantile", variant="corrected", reading=_EQ9_CORRECTED,
     assumptions=_EQ9_BASE + ("T >= n", "gamma <= 1/e"), **_EQ9)
def eq9_avg_corrected(*, T, n, eta, G, gamma):
    """P0 Eq. (9), distance form with constant 9 (P0-E4).

    ||w_bar_T - w_bar'_T|| <= 2 sqrt(e) eta G (sqrt(T) + 3 T ln(eT) ln(1/gamma) / n).
    """
    return _eq9_dist(T, n, eta, G, gamma, 9.0)


@_p0(key="P0.Eq9.avg.proof", quantity="uas_quantile", variant="corrected", reading=_EQ9_PROOF,
     assumptions=_EQ9_BASE, **_EQ9)
def eq9_avg_proof(*, T, n, eta, G, gamma):
    """P0 Eq. (9), square root of the un-simplified proof form (see ``eq9_avg_sq_proof``)."""
    return np.sqrt(_eq9_proof_sq(T, n, eta, G, gamma))


# ---------------------------------------------------------------------------------------------
# Theorem 4 / Eq. (5): the noise level of Algorithm 2
# ---------------------------------------------------------------------------------------------

def _sigma2(T, n, eta, G, eps, delta, factor):
    T, n, eta, G, eps, delta = named(T=T, n=n, eta=eta, G=G, eps=eps, delta=delta)
    stab = T + 3 * T ** 2 * np.log(_E * T) ** 2 * np.log(2 / delta) ** 2 / n ** 2
    return factor * eta ** 2 * G ** 2 * np.log(2.5 / delta) / eps ** 2 * stab


_SIGMA2 = dict(ref="Theorem 4, Eq. (5)", tag="CONDITION", quantity="noise_sigma2", sweep="eps",
               assumptions=("Gaussian mechanism (Lemma 2) is only proven for eps <= 1 (P0-E11)",))


@_p0(key="P0.Thm4.sigma2.printed", variant="printed", reading="as printed: factor 8", **_SIGMA2)
def thm4_sigma2_printed(*, T, n, eta, G, eps, delta):
    """P0 Thm 4, Eq. (5) as printed: output-perturbation noise variance of Alg. 2.

    Alg. 2 is (eps, delta)-DP with sigma^2 = (8 eta^2 G^2 ln(2.5/delta) / eps^2) (T + 3 T^2 ln^2(eT) ln^2(2/delta) / n^2).
    """
    return _sigma2(T, n, eta, G, eps, delta, 8.0)


@_p0(key="P0.Thm4.sigma2.corrected", variant="corrected",
     reading="corrected per errata P0-E2: factor 8e (sigma = sqrt(2 ln(2.5/delta)) Delta_T/eps with "
             "Delta_T^2 <= 4 e eta^2 G^2 (...)); exactly e times the printed value", **_SIGMA2)
def thm4_sigma2_corrected(*, T, n, eta, G, eps, delta):
    """P0 Thm 4, Eq. (5) with the factor e of the proof (P0-E2): noise variance of Alg. 2.

    sigma^2 = (8 e eta^2 G^2 ln(2.5/delta) / eps^2) (T + 3 T^2 ln^2(eT) ln^2(2/delta) / n^2).
    """
    return _sigma2(T, n, eta, G, eps, delta, 8.0 * _E)
