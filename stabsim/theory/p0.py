"""P0 -- Yang, Lei, Lyu, Ying (AISTATS 2021): stability and DP of SGD for pairwise learning
with a non-smooth loss.  Errata: docs/errata.md (ids P0-E1 ... P0-E14).

Standing assumption of every result: the loss l(w, z, z') is nonnegative, convex and
G-Lipschitz in w (possibly non-smooth); M = sup_{z,z'} l(0, z, z').

Conventions of this module
--------------------------
* Algorithm 1 runs with a constant step ``eta`` and starts at w_1 = 0.  ``t`` is the number of
  iterations done (Thm 1 bounds the iterate w_{t+1}); ``T`` is the total number of iterations,
  the output is w_bar_T = (1/T) sum_{t=1}^T w_t.
* All logs are natural; ``ceil(ln n)`` is ``np.ceil(np.log(n))``.
* ``eps`` is always the privacy budget; a stability parameter is called ``eps_stab``.
* Data-dependent Rademacher terms (EXPLICIT-DD) are passed in as their average over t:
  ``rad_avg = (1/T) sum_{t=1}^T R_t(l o W)`` (the theorems print (4/T) sum_t R_t, i.e. 4 * rad_avg).
  Lemma 4 gives R_t <= a / sqrt(t), hence rad_avg <= 2 a / sqrt(T).
* High-probability statements ("with probability >= 1 - gamma") are compared with the
  (1-gamma)-quantile of the measured quantity (the ``*_quantile`` names of ``QUANTITIES``).
* RATE entries return the O(.) expression with constant 1 under the theorem's own schedule
  (T = n^2, eta = n^{-3/2} for Thm 2/5 and Cor 1-4; T = n^{4/3}, eta = 1/n for Thm 3).
* Every function broadcasts over numpy arrays and returns a float array.

Modules
-------
This module re-exports every name of the others and imports them in this order, so the
registry is filled in the paper's order.

``p0_common``     the ``_p0`` registration decorator and the constants c_1, c_2.
``p0_stability``  Theorem 1, Eq. (9) (uniform argument stability), Theorem 4 / Eq. (5) (noise).
``p0_appendix``   Lemmas A.9, A.10, A.12, Theorems A.6, A.7, A.8, Corollary A.6.
this module       Lemmas 4 / 5 (Rademacher complexities), the excess risk of Theorems 2, 3, 5 and
                  the RATE claims of Theorems 2, 3, 5 and Corollaries 1-4.
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.theory._check import named
from stabsim.theory.p0_common import (  # noqa: F401  (re-exported)
    _c1, _c2, _COUPLED, _E, _LIPSCHITZ_CONVEX, _ln_ceil, _p0)
from stabsim.theory.p0_stability import (  # noqa: F401  (re-exported)
    _EQ9, _EQ9_BASE, _EQ9_CORRECTED, _eq9_dist, _EQ9_PRINTED, _EQ9_PROOF, _eq9_proof_sq, _eq9_sq,
    _hp_sq, _SIGMA2, _sigma2, _THM1, _THM1_CORRECTED, _THM1_PRINTED, _thm1_sq, eq9_avg_corrected,
    eq9_avg_printed, eq9_avg_proof, eq9_avg_sq_corrected, eq9_avg_sq_printed, eq9_avg_sq_proof,
    thm1_iterate_corrected, thm1_iterate_printed, thm1_iterate_sq_corrected, thm1_iterate_sq_printed,
    thm4_sigma2_corrected, thm4_sigma2_printed)
from stabsim.theory.p0_appendix import (  # noqa: F401  (re-exported)
    _CORA6, _corA6, _gen_from_uas, _stab_tail, _THMA6, corA6_gen_corrected, corA6_gen_printed,
    lemA10_iterate_norm_sq, lemA12_utility_loss_corrected, lemA12_utility_loss_printed, lemA9_regret,
    thmA6_gen_corrected, thmA6_gen_printed, thmA7_hoeffding, thmA8_opt)


# ---------------------------------------------------------------------------------------------
# Lemma 4 / 5: Rademacher complexities for AUC and metric learning
# ---------------------------------------------------------------------------------------------

_LEM4 = dict(ref="Lemma 4 / A.13", quantity="rademacher", tag="EXPLICIT", sweep="t",
             assumptions=("W = {||w|| <= D}, D a RADIUS (Thm 2's D is a diameter = 2 radius)",
                          "kappa = sup ||x||"))


@_p0(key="P0.Lem4.rademacher_linear", **_LEM4)
def lem4_rademacher_linear(*, t, D, kappa):
    """P0 Lemma 4: for h_w(x, x') = w^T (x - x'), ||w|| <= D:  R_t(H) <= 2 D kappa / sqrt(t)."""
    t, D, kappa = named(t=t, D=D, kappa=kappa)
    return 2 * D * kappa / np.sqrt(t)


#: the AUC-hinge claim is not Lemma 4 itself but the note that follows it ("in the case of (10), it is
#: easy to check R_t(l o H) <= 4 G D kappa/sqrt(t) by Ledoux-Talagrand").
_LEM4_NOTE = dict(_LEM4, ref="note after Lemma 4, loss (10)")


@_p0(key="P0.Lem4.rademacher_auc_hinge.printed", variant="printed",
     reading="as printed: 4 G D kappa / sqrt(t)", **_LEM4_NOTE)
def lem4_rademacher_auc_hinge_printed(*, t, D, kappa, G):
    """P0, the note after Lemma 4, as printed: for the AUC hinge loss (10), R_t(l o H) <= 4 G D kappa / sqrt(t)."""
    t, D, kappa, G = named(t=t, D=D, kappa=kappa, G=G)
    return 4 * G * D * kappa / np.sqrt(t)


@_p0(key="P0.Lem4.rademacher_auc_hinge.corrected", variant="corrected",
     reading="corrected per errata P0-E14: the contraction uses the scalar hinge's Lipschitz constant 1, "
             "4 D kappa / sqrt(t)", **_LEM4_NOTE)
def lem4_rademacher_auc_hinge_corrected(*, t, D, kappa):
    """P0, the note after Lemma 4, with contraction constant 1 (P0-E14): R_t(l o H) <= 4 D kappa / sqrt(t)."""
    t, D, kappa = named(t=t, D=D, kappa=kappa)
    return 4 * D * kappa / np.sqrt(t)


@_p0(key="P0.Lem5.rademacher_nuclear", ref="Lemma 5 / A.14", quantity="rademacher", tag="RATE", sweep="t",
     rate={"t": -0.5}, assumptions=("W = {||w||_{S_1} <= D} (nuclear-norm ball)", "d >= 3"))
def lem5_rademacher_nuclear(*, t, D, chi, d):
    """P0 Lemma 5: R_t(H) = O(D chi^{1/2} sqrt(log d) / sqrt(t)), chi = ||E[||X||^2 X X^T]||_{S_inf}; constant 1."""
    t, D, d = named(t=t, D=D, d=d)
    return D * np.sqrt(chi) * np.sqrt(np.log(d)) / np.sqrt(t)


# ---------------------------------------------------------------------------------------------
# Theorems 2, 3, 5: excess risk of Algorithms 1 and 2
# ---------------------------------------------------------------------------------------------

def _bounded_core(T, n, eta, G, M, D, gamma, rad_avg, stab_log, form):
    """Common part of Thm 2 and Thm 5 (everything except Thm 5's noise term)."""
    T, n, eta, G, M, D, gamma = named(T=T, n=n, eta=eta, G=G, M=M, D=D, gamma=gamma)
    return (4 * rad_avg + lemA9_regret(T=T, eta=eta, B=D, G=G) + _c2(M, G, D) * np.sqrt(np.log(6 * T / gamma) / n)
            + _c1(G, gamma) * eta * _ln_ceil(n) * (np.sqrt(T) + _stab_tail(T, n, stab_log, form)))


_THM2 = dict(ref="Theorem 2", quantity="excess_risk_quantile", tag="EXPLICIT-DD", sweep="n", measured=("rad_avg",),
             assumptions=("W bounded with diameter D", "T >= n", "prob. >= 1-gamma over S and A"))
_THM2_CORR = ("corrected per errata P0-E3: second stability term sqrt(3) T ln(eT) ln(6/gamma)/n "
              "(square root of Eq. (9) at gamma/6) instead of sqrt(3T ln(eT) ln(6/gamma))/n")


@_p0(key="P0.Thm2.excess.printed", variant="printed", reading="as printed", **_THM2)
def thm2_excess_printed(*, T, n, eta, G, M, D, gamma, rad_avg):
    """P0 Thm 2 as printed: high-probability excess risk of Alg. 1, bounded W.

    W.p. >= 1-gamma, eps_risk(w_bar_T) <= (4/T) sum_t R_t(l o W) + D^2/(2 T eta)
    + eta G^2/2 + c_2 sqrt(ln(6T/gamma)/n) + c_1 eta ceil(ln n) (sqrt(T) + sqrt(3 T ln(eT) ln(6/gamma))/n),
    c_1 = 100 sqrt(6) e^{3/2} G max{1,G} ln(6e/gamma), c_2 = (6 + 19e)(M + G D);
    rad_avg = (1/T) sum_t R_t(l o W).
    """
    gamma = named(gamma=gamma)
    return _bounded_core(T, n, eta, G, M, D, gamma, rad_avg, np.log(6 / gamma), "sqrt_all")


@_p0(key="P0.Thm2.excess.corrected", variant="corrected", reading=_THM2_CORR, **_THM2)
def thm2_excess_corrected(*, T, n, eta, G, M, D, gamma, rad_avg):
    """P0 Thm 2 with the T-linear stability term (P0-E3): excess risk of Alg. 1, bounded W.

    ... + c_1 eta ceil(ln n) (sqrt(T) + sqrt(3) T ln(eT) ln(6/gamma)/n); other terms as printed.
    """
    gamma = named(gamma=gamma)
    return _bounded_core(T, n, eta, G, M, D, gamma, rad_avg, np.log(6 / gamma), "linear")


def _thm3(T, n, eta, G, M, D, gamma, rad_avg_Wt, rad_avg_WD, corrected):
    T, n, eta, G, M, D, gamma = named(T=T, n=n, eta=eta, G=G, M=M, D=D, gamma=gamma)
    c3 = (7 + 12 * math.sqrt(2) * _E) * M + 4 * G * D + 16 * _E * G
    root = np.sqrt(G ** 2 + 2 * M)
    c4, c5 = 3 * G * root, 12 * math.sqrt(2) * _E * G * root
    if corrected:
        tail = _stab_tail(T, n, np.log(6 / gamma), "linear")
    else:
        tail = 4 * T * np.log(_E * T) * np.sqrt(np.log(6 * n / gamma)) / n
    return (2 * (rad_avg_Wt + rad_avg_WD) + lemA9_regret(T=T, eta=eta, B=D, G=G)
            + c4 * np.sqrt(eta * np.log(6 * T / gamma)) + c5 * np.sqrt(eta * T * np.log(6 * _E / gamma) / n)
            + c3 * np.sqrt(np.log(6 * T / gamma) / n) + _c1(G, gamma) * eta * _ln_ceil(n) * (np.sqrt(T) + tail))


_THM3 = dict(ref="Theorem 3", quantity="excess_risk_quantile", tag="EXPLICIT-DD", sweep="n",
             measured=("rad_avg_Wt", "rad_avg_WD"),
             assumptions=("W unbounded, D = ||w*||", "T >= n", "eta <= 1 (Lemma A.10)",
                          "W_t = {||w||^2 <= (G^2 + 2M) eta t} (P0-E7)", "prob. >= 1-gamma over S and A"))


@_p0(key="P0.Thm3.excess.printed", variant="printed",
     reading="as printed (main text): stability term 4 T ln(eT) sqrt(ln(6n/gamma))/n", **_THM3)
def thm3_excess_printed(*, T, n, eta, G, M, D, gamma, rad_avg_Wt, rad_avg_WD):
    """P0 Thm 3 as printed: high-probability excess risk of Alg. 1, unbounded W.

    W.p. >= 1-gamma, eps_risk(w_bar_T) <= (2/T) sum_t (R_t(l o W_t) + R_t(l o W_D))
    + D^2/(2 T eta) + eta G^2/2 + c_4 sqrt(eta ln(6T/gamma)) + c_5 sqrt(eta T ln(6e/gamma)/n)
    + c_3 sqrt(ln(6T/gamma)/n) + c_1 eta ceil(ln n) (sqrt(T) + 4 T ln(eT) sqrt(ln(6n/gamma))/n),
    c_3 = (7 + 12 sqrt(2) e) M + 4 G D + 16 e G, c_4 = 3 G sqrt(G^2 + 2M), c_5 = 12 sqrt(2) e G sqrt(G^2 + 2M);
    rad_avg_Wt = (1/T) sum_t R_t(l o W_t), rad_avg_WD = (1/T) sum_t R_t(l o W_D).
    """
    return _thm3(T, n, eta, G, M, D, gamma, rad_avg_Wt, rad_avg_WD, corrected=False)


@_p0(key="P0.Thm3.excess.corrected", variant="corrected",
     reading="corrected per errata P0-E3/E7: stability term sqrt(3) T ln(eT) ln(6/gamma)/n "
             "(Eq. (9) at gamma/6, as in the proof via Cor A.6)", **_THM3)
def thm3_excess_corrected(*, T, n, eta, G, M, D, gamma, rad_avg_Wt, rad_avg_WD):
    """P0 Thm 3 with the stability term of Eq. (9) (P0-E3/E7): excess risk of Alg. 1, unbounded W.

    Last bracket
    (sqrt(T) + sqrt(3) T ln(eT) ln(6/gamma)/n); other terms as printed.
    """
    return _thm3(T, n, eta, G, M, D, gamma, rad_avg_Wt, rad_avg_WD, corrected=True)


def _thm5(T, n, eta, G, M, D, gamma, delta, sigma, d, rad_avg, form):
    gamma, delta = named(gamma=gamma, delta=delta)
    noise = lemA12_utility_loss_printed(G=G, sigma=sigma, d=d, gamma=gamma / 4)
    return _bounded_core(T, n, eta, G, M, D, gamma, rad_avg, np.log(2 / delta), form) + noise


_THM5 = dict(ref="Theorem 5", quantity="excess_risk_quantile", tag="EXPLICIT-DD", sweep="n", measured=("rad_avg",),
             assumptions=("W bounded with diameter D", "gamma in (max{4 delta, exp(-d/8)}, 1)",
                          "sigma from Eq. (5) (either variant)", "prob. >= 1-gamma over S, A and u"))


@_p0(key="P0.Thm5.excess.printed", variant="printed", reading="as printed", **_THM5)
def thm5_excess_printed(*, T, n, eta, G, M, D, gamma, delta, sigma, d, rad_avg):
    """P0 Thm 5 as printed: high-probability excess risk of the private output of Alg. 2.

    W.p. >= 1-gamma, eps_risk(w_priv) <= (4/T) sum_t R_t(l o W) + D^2/(2 T eta)
    + eta G^2/2 + c_2 sqrt(ln(6T/gamma)/n) + 2 G sigma sqrt(d) ln^{1/4}(4/gamma)
    + c_1 eta ceil(ln n) (sqrt(T) + sqrt(3T) ln(eT) ln(2/delta)/n), c_1, c_2 as in Thm 2.
    """
    return _thm5(T, n, eta, G, M, D, gamma, delta, sigma, d, rad_avg, "sqrt_3T")


@_p0(key="P0.Thm5.excess.corrected", variant="corrected",
     reading="corrected per errata P0-E3: stability term sqrt(3) T ln(eT) ln(2/delta)/n instead of "
             "sqrt(3T) ln(eT) ln(2/delta)/n; noise term as printed", **_THM5)
def thm5_excess_corrected(*, T, n, eta, G, M, D, gamma, delta, sigma, d, rad_avg):
    """P0 Thm 5 with the T-linear stability term (P0-E3): last bracket (sqrt(T) + sqrt(3) T ln(eT) ln(2/delta)/n)."""
    return _thm5(T, n, eta, G, M, D, gamma, delta, sigma, d, rad_avg, "linear")


# ---------------------------------------------------------------------------------------------
# RATE claims (Thm 2, 3, 5 and Corollaries 1-4); constant 1, the theorem's schedule built in
# ---------------------------------------------------------------------------------------------

_SCHED_BOUNDED = "T = n^2, eta = c n^{-3/2}"
_RATE = dict(quantity="excess_risk_quantile", tag="RATE", sweep="n")


@_p0(key="P0.Thm2.rate", ref="Theorem 2", rate={"n": -0.5}, log_factors="ln^2 n", schedule=_SCHED_BOUNDED,
     assumptions=("W bounded", "R_t(l o W) = O(1/sqrt(t))"), **_RATE)
def thm2_rate(*, n):
    """P0 Thm 2 rate: eps_risk(w_bar_T) = O~(ln^2(n)/sqrt(n)) with T = n^2, eta = O(n^{-3/2})."""
    n = named(n=n)
    return np.log(n) ** 2 / np.sqrt(n)


@_p0(key="P0.Thm3.rate", ref="Theorem 3", rate={"n": -1 / 3}, log_factors="ln^2 n",
     schedule="T = n^{4/3}, eta = c / n",
     assumptions=("W unbounded", "R_t(l o W_t) = O(eta sqrt(t)), R_t(l o W_D) = O(1/sqrt(t))"), **_RATE)
def thm3_rate(*, n):
    """P0 Thm 3 rate: eps_risk(w_bar_T) = O~(ln^2(n)/n^{1/3}) with T = n^{4/3}, eta = O(1/n)."""
    n = named(n=n)
    return np.log(n) ** 2 / np.cbrt(n)


def _private_rate(n, eps, numerator, eps_power):
    n, eps = named(n=n, eps=eps)
    return numerator / (np.sqrt(n) * eps ** eps_power)


_PRIV = ("sigma from Eq. (5)", "W bounded")


@_p0(key="P0.Thm5.rate.printed", ref="Theorem 5", variant="printed", rate={"n": -0.5, "eps": -0.5, "d": 0.5},
     reading="as printed: sqrt(d)/sqrt(n eps)", schedule=_SCHED_BOUNDED, assumptions=_PRIV, **_RATE)
def thm5_rate_printed(*, n, eps, d):
    """P0 Thm 5 rate as printed: eps_risk(w_priv) = O~(sqrt(d)/sqrt(n eps))."""
    return _private_rate(n, eps, np.sqrt(named(d=d)), 0.5)


@_p0(key="P0.Thm5.rate.corrected", ref="Theorem 5", variant="corrected", rate={"n": -0.5, "eps": -1.0, "d": 0.5},
     reading="corrected per errata P0-E8: sqrt(d)/(sqrt(n) eps) (sigma is proportional to 1/eps; "
             "the paper's conclusion writes this form)", schedule=_SCHED_BOUNDED, assumptions=_PRIV, **_RATE)
def thm5_rate_corrected(*, n, eps, d):
    """P0 Thm 5 rate, P0-E8: eps_risk(w_priv) = O~(sqrt(d)/(sqrt(n) eps))."""
    return _private_rate(n, eps, np.sqrt(named(d=d)), 1.0)


_AUC = ("AUC hinge loss (10)", "W = l2 ball", "kappa = sup ||x||")
_METRIC = ("metric-learning hinge loss (11)", "W = nuclear-norm ball", "chi = ||E[||X||^2 X X^T]||_{S_inf}")


@_p0(key="P0.Cor1.rate", ref="Corollary 1", rate={"n": -0.5}, schedule=_SCHED_BOUNDED, assumptions=_AUC,
     reading="as printed; by P0-E9 only the complexity factor, the overall rate is O~(1/sqrt(n))", **_RATE)
def cor1_rate(*, n, kappa):
    """P0 Cor 1 (AUC, Alg. 1): eps_risk(w_bar_T) = O~(sqrt(kappa/n))."""
    n, kappa = named(n=n, kappa=kappa)
    return np.sqrt(kappa / n)


@_p0(key="P0.Cor2.rate.printed", ref="Corollary 2", variant="printed", rate={"n": -0.5, "eps": -0.5, "d": 0.5},
     reading="as printed: sqrt(kappa d)/sqrt(n eps)", schedule=_SCHED_BOUNDED, assumptions=_AUC + _PRIV, **_RATE)
def cor2_rate_printed(*, n, eps, d, kappa):
    """P0 Cor 2 (AUC, Alg. 2) as printed: eps_risk(w_priv) = O~(sqrt(kappa d)/sqrt(n eps))."""
    return _private_rate(n, eps, np.sqrt(named(kappa=kappa) * named(d=d)), 0.5)


@_p0(key="P0.Cor2.rate.corrected", ref="Corollary 2", variant="corrected", rate={"n": -0.5, "eps": -1.0, "d": 0.5},
     reading="corrected as P0-E8 (Cor 2 follows from Thm 5): sqrt(kappa d)/(sqrt(n) eps)",
     schedule=_SCHED_BOUNDED, assumptions=_AUC + _PRIV, **_RATE)
def cor2_rate_corrected(*, n, eps, d, kappa):
    """P0 Cor 2, eps outside the root as in Thm 5 (P0-E8): O~(sqrt(kappa d)/(sqrt(n) eps))."""
    return _private_rate(n, eps, np.sqrt(named(kappa=kappa) * named(d=d)), 1.0)


@_p0(key="P0.Cor3.rate.printed", ref="Corollary 3", variant="printed", rate={"n": -1.0},
     reading="as printed: sqrt(chi log d)/n", schedule=_SCHED_BOUNDED, assumptions=_METRIC, **_RATE)
def cor3_rate_printed(*, n, chi, d):
    """P0 Cor 3 (metric learning, Alg. 1) as printed: eps_risk(w_bar_T) = O~(sqrt(chi log d)/n)."""
    n, d = named(n=n, d=d)
    return np.sqrt(chi * np.log(d)) / n


@_p0(key="P0.Cor3.rate.corrected", ref="Corollary 3", variant="corrected", rate={"n": -0.5},
     reading="corrected per errata P0-E9: Thm 2's c_2 sqrt(ln(6T/gamma)/n) term cannot be beaten, "
             "O~(1/sqrt(n) + sqrt(chi log d)/n)", schedule=_SCHED_BOUNDED, assumptions=_METRIC, **_RATE)
def cor3_rate_corrected(*, n, chi, d):
    """P0 Cor 3 with Thm 2's unavoidable 1/sqrt(n) term (P0-E9): O~(1/sqrt(n) + sqrt(chi log d)/n)."""
    n, d = named(n=n, d=d)
    return 1 / np.sqrt(n) + np.sqrt(chi * np.log(d)) / n


@_p0(key="P0.Cor4.rate.printed", ref="Corollary 4", variant="printed", rate={"n": -0.5, "eps": -0.5, "d": 0.5},
     reading="as printed: sqrt(chi d log d)/sqrt(n eps)", schedule=_SCHED_BOUNDED, assumptions=_METRIC + _PRIV,
     **_RATE)
def cor4_rate_printed(*, n, eps, chi, d):
    """P0 Cor 4 (metric learning, Alg. 2) as printed: eps_risk(w_priv) = O~(sqrt(chi d log d)/sqrt(n eps))."""
    d = named(d=d)
    return _private_rate(n, eps, np.sqrt(chi * d * np.log(d)), 0.5)


@_p0(key="P0.Cor4.rate.corrected", ref="Corollary 4", variant="corrected", rate={"n": -0.5, "eps": -1.0, "d": 0.5},
     reading="corrected as P0-E8 (Cor 4 follows from Thm 5): sqrt(chi d log d)/(sqrt(n) eps)",
     schedule=_SCHED_BOUNDED, assumptions=_METRIC + _PRIV, **_RATE)
def cor4_rate_corrected(*, n, eps, chi, d):
    """P0 Cor 4, eps outside the root as in Thm 5 (P0-E8): O~(sqrt(chi d log d)/(sqrt(n) eps))."""
    d = named(d=d)
    return _private_rate(n, eps, np.sqrt(chi * d * np.log(d)), 1.0)
