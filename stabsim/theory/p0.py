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
"""

from __future__ import annotations

import math

import numpy as np

from ._check import named, nonnegative, returns_float_array
from .registry import register

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


# ---------------------------------------------------------------------------------------------
# Supporting results of the appendix
# ---------------------------------------------------------------------------------------------

@_p0(key="P0.LemA9.regret", ref="Lemma A.9", quantity="regret", tag="EXPLICIT", sweep="T",
     assumptions=("||w*|| <= B", "w_1 = 0", "deterministic (every run)"))
def lemA9_regret(*, T, eta, B, G):
    """P0 Lemma A.9: average online regret <= B^2/(2 T eta) + eta G^2/2.

    (1/T) sum_{t=1}^T [L_{t+1}(w_t) - L_{t+1}(w*)] <= B^2/(2 T eta) + eta G^2/2, where L_{t+1}(w) = (1/t) sum_{k<=t} l(w, z_{i_{t+1}}, z_{i_k}).
    """
    T, eta, B, G = named(T=T, eta=eta, B=B, G=G)
    return B ** 2 / (2 * T * eta) + eta * G ** 2 / 2


@_p0(key="P0.LemA10.iterate_norm_sq", ref="Lemma A.10", quantity="iterate_norm_sq", tag="EXPLICIT", sweep="t",
     assumptions=("eta <= 1", "no effective projection (W unbounded)"))
def lemA10_iterate_norm_sq(*, t, eta, G, M):
    """P0 Lemma A.10: ||w_{t+1}||^2 <= (G^2 + 2M) eta t  (the main text's W_t uses G^2 + M, P0-E7)."""
    t, eta, G, M = named(t=t, eta=eta, G=G, M=M)
    return (G ** 2 + 2 * M) * eta * t


def _gen_from_uas(eps_stab, n, G, M, B, gamma, lead):
    """Thm A.6: lead + 48 sqrt(6) e G eps ceil(ln n) ln(e/gamma) + 12 sqrt(2) e (M + G B) sqrt(ln(e/gamma)/n)."""
    eps_stab = nonnegative("eps_stab", eps_stab)
    n, G, M, B, gamma = named(n=n, G=G, M=M, B=B, gamma=gamma)
    return (lead * eps_stab + 48 * math.sqrt(6) * _E * G * eps_stab * _ln_ceil(n) * np.log(_E / gamma)
            + 12 * math.sqrt(2) * _E * (M + G * B) * np.sqrt(np.log(_E / gamma) / n))


_THMA6 = dict(ref="Theorem A.6", quantity="gen_gap_quantile", tag="EXPLICIT", sweep="n",
              assumptions=("A is eps_stab-UAS", "||A(S)|| <= B", "prob. >= 1-gamma over S and A"))


@_p0(key="P0.ThmA6.gen.printed", variant="printed", reading="as printed: leading term 4 eps", **_THMA6)
def thmA6_gen_printed(*, eps_stab, n, G, M, B, gamma):
    """P0 Thm A.6 as printed: high-probability generalization gap of an eps_stab-UAS algorithm.

    W.p. >= 1-gamma, R(A(S)) - R_S(A(S)) <=
    4 eps + 48 sqrt(6) e G eps ceil(ln n) ln(e/gamma) + 12 sqrt(2) e (M + G B) sqrt(ln(e/gamma)/n),
    eps = eps_stab the UAS parameter.
    """
    return _gen_from_uas(eps_stab, n, G, M, B, gamma, lead=4.0)


@_p0(key="P0.ThmA6.gen.corrected", variant="corrected",
     reading="corrected per errata P0-E5: leading term 4 G eps (uniform stability is G eps)", **_THMA6)
def thmA6_gen_corrected(*, eps_stab, n, G, M, B, gamma):
    """P0 Thm A.6 with 4 G eps in place of 4 eps (P0-E5); the other terms as printed."""
    return _gen_from_uas(eps_stab, n, G, M, B, gamma, lead=4.0 * np.asarray(G, dtype=float))


def _stab_tail(T, n, log_term, form):
    """Second term inside (sqrt(T) + ...) of the stability part of Thm 2, 5, Cor A.6.

    ``sqrt_all``: sqrt(3 T ln(eT) log_term)/n (Thm 2, Cor A.6 printed); ``sqrt_3T``: sqrt(3T) ln(eT)
    log_term/n (Thm 5 printed); ``linear``: sqrt(3) T ln(eT) log_term/n (from Eq. (9), P0-E3).
    """
    lnT = np.log(_E * T)
    if form == "sqrt_all":
        return np.sqrt(3 * T * lnT * log_term) / n
    if form == "sqrt_3T":
        return np.sqrt(3 * T) * lnT * log_term / n
    if form == "linear":
        return math.sqrt(3) * T * lnT * log_term / n
    raise ValueError(f"form={form!r} is not one of 'sqrt_all', 'sqrt_3T', 'linear'")


def _corA6(T, n, eta, G, M, B_T, gamma, form):
    B_T = nonnegative("B_T", B_T)
    T, n, eta, G, gamma = named(T=T, n=n, eta=eta, G=G, gamma=gamma)
    eps_stab = 2 * math.sqrt(_E) * eta * G * (np.sqrt(T) + _stab_tail(T, n, np.log(2 / gamma), form))
    return _gen_from_uas(eps_stab, n, G, M, B_T, gamma / 2, lead=4.0)


_CORA6 = dict(ref="Corollary A.6", quantity="gen_gap_quantile", tag="EXPLICIT-DD", sweep="T", measured=("B_T",),
              assumptions=("T >= n", "B_T = ||w_bar_T|| (measured)", "prob. >= 1-gamma over S and A"))


@_p0(key="P0.CorA6.gen.printed", variant="printed",
     reading="as printed: second stability term sqrt(3T ln(eT) ln(2/gamma))/n", **_CORA6)
def corA6_gen_printed(*, T, n, eta, G, M, B_T, gamma):
    """P0 Cor A.6 as printed: high-probability generalization gap of Alg. 1.

    W.p. >= 1-gamma, R(w_bar_T) - R_S(w_bar_T) <=
    2 sqrt(e) eta G (4 + 48 sqrt(6) e G ceil(ln n) ln(2e/gamma)) (sqrt(T) + sqrt(3T ln(eT) ln(2/gamma))/n)
    + 12 sqrt(2) e (M + G B_T) sqrt(ln(2e/gamma)/n).
    """
    return _corA6(T, n, eta, G, M, B_T, gamma, "sqrt_all")


@_p0(key="P0.CorA6.gen.corrected", variant="corrected",
     reading="corrected per errata P0-E3: second stability term sqrt(3) T ln(eT) ln(2/gamma)/n "
             "(square root of Eq. (9)); the leading 4 (P0-E5) is kept", **_CORA6)
def corA6_gen_corrected(*, T, n, eta, G, M, B_T, gamma):
    """P0 Cor A.6 with the T-linear stability term of Eq. (9) (P0-E3).

    As printed but with
    (sqrt(T) + sqrt(3) T ln(eT) ln(2/gamma)/n) in place of (sqrt(T) + sqrt(3T ln(eT) ln(2/gamma))/n).
    """
    return _corA6(T, n, eta, G, M, B_T, gamma, "linear")


@_p0(key="P0.ThmA7.hoeffding", ref="Theorem A.7", quantity="hoeffding_term", tag="EXPLICIT", sweep="n",
     assumptions=("B = ||w*||", "prob. >= 1-gamma over S: compare with the (1-gamma)-quantile"))
def thmA7_hoeffding(*, n, G, M, B, gamma):
    """P0 Thm A.7: w.p. >= 1-gamma, R_S(w*) - R(w*) <= (M + G B) sqrt(ln(1/gamma)/n), B = ||w*||."""
    n, G, M, B, gamma = named(n=n, G=G, M=M, B=B, gamma=gamma)
    return (M + G * B) * np.sqrt(np.log(1 / gamma) / n)


@_p0(key="P0.ThmA8.opt", ref="Theorem A.8", quantity="opt_error_quantile", tag="EXPLICIT-DD", sweep="T",
     measured=("rad_avg_Wt", "rad_avg_WB", "B_T"),
     assumptions=("||w_t|| <= B_t non-decreasing, B_T measured", "B = ||w*||", "prob. >= 1-gamma"))
def thmA8_opt(*, T, eta, G, M, B, B_T, gamma, rad_avg_Wt, rad_avg_WB):
    """P0 Thm A.8: high-probability optimization error of Alg. 1 (Rademacher terms measured).

    W.p. >= 1-gamma, R_S(w_bar_T) - R_S(w*) <= (2/T) sum_t R_t(l o W_t) + (2/T) sum_t R_t(l o W_B)
    + B^2/(2 T eta) + eta G^2/2 + (6M + 3GB) sqrt(ln(2T/gamma)/T) + 3 G B_T sqrt(ln(2T/gamma)/T).

    rad_avg_Wt = (1/T) sum_t R_t(l o W_t), rad_avg_WB = (1/T) sum_t R_t(l o W_B) (measured).
    """
    B_T = nonnegative("B_T", B_T)
    T, eta, G, M, B, gamma = named(T=T, eta=eta, G=G, M=M, B=B, gamma=gamma)
    tail = np.sqrt(np.log(2 * T / gamma) / T)
    return (2 * rad_avg_Wt + 2 * rad_avg_WB + lemA9_regret(T=T, eta=eta, B=B, G=G)
            + (6 * M + 3 * G * B) * tail + 3 * G * B_T * tail)


@_p0(key="P0.LemA12.utility_loss.printed", ref="Lemma A.12", quantity="dp_utility_loss", tag="EXPLICIT",
     sweep="sigma", variant="printed", reading="as printed: 2 G sigma sqrt(d) ln^{1/4}(1/gamma) "
     "(below the proof's bound when ln(1/gamma) < 1, P0-E10)",
     assumptions=("gamma in (exp(-d/8), 1)", "u ~ N(0, sigma^2 I_d)", "prob. >= 1-gamma over u"))
def lemA12_utility_loss_printed(*, G, sigma, d, gamma):
    """P0 Lemma A.12 as printed: w.p. >= 1-gamma, R(w_priv) - R(w_bar_T) <= 2 G sigma sqrt(d) ln^{1/4}(1/gamma)."""
    G, sigma, d, gamma = named(G=G, sigma=sigma, d=d, gamma=gamma)
    return 2 * G * sigma * np.sqrt(d) * np.log(1 / gamma) ** 0.25


@_p0(key="P0.LemA12.utility_loss.corrected", ref="Lemma A.12", quantity="dp_utility_loss", tag="EXPLICIT",
     sweep="sigma", variant="corrected", reading="proof form (errata P0-E10): "
     "G ||u|| <= G sigma sqrt(d) (1 + (8 ln(1/gamma)/d)^{1/4})",
     assumptions=("gamma in (exp(-d/8), 1)", "u ~ N(0, sigma^2 I_d)", "prob. >= 1-gamma over u"))
def lemA12_utility_loss_corrected(*, G, sigma, d, gamma):
    """P0 Lemma A.12, the bound its proof displays: R(w_priv) - R(w_bar_T) <= G sigma sqrt(d) (1 + (8 ln(1/gamma)/d)^{1/4})."""
    G, sigma, d, gamma = named(G=G, sigma=sigma, d=d, gamma=gamma)
    return G * sigma * np.sqrt(d) * (1 + (8 * np.log(1 / gamma) / d) ** 0.25)


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


@_p0(key="P0.Lem4.rademacher_auc_hinge.printed", variant="printed",
     reading="as printed: 4 G D kappa / sqrt(t)", **_LEM4)
def lem4_rademacher_auc_hinge_printed(*, t, D, kappa, G):
    """P0 Lemma 4 remark, as printed: for the AUC hinge loss (10), R_t(l o H) <= 4 G D kappa / sqrt(t)."""
    t, D, kappa, G = named(t=t, D=D, kappa=kappa, G=G)
    return 4 * G * D * kappa / np.sqrt(t)


@_p0(key="P0.Lem4.rademacher_auc_hinge.corrected", variant="corrected",
     reading="corrected per errata P0-E14: the contraction uses the scalar hinge's Lipschitz constant 1, "
             "4 D kappa / sqrt(t)", **_LEM4)
def lem4_rademacher_auc_hinge_corrected(*, t, D, kappa):
    """P0 Lemma 4 remark with contraction constant 1 (P0-E14): R_t(l o H) <= 4 D kappa / sqrt(t)."""
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
