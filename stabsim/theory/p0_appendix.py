"""P0 (Yang, Lei, Lyu, Ying, AISTATS 2021): the supporting results of the appendix: regret
(Lemma A.9), iterate norm (Lemma A.10), generalization from stability (Theorem A.6, Corollary
A.6), the Hoeffding term (Theorem A.7), optimization error (Theorem A.8) and the utility loss of
the output noise (Lemma A.12).  Registers ``P0.LemA9.*`` ... ``P0.LemA12.*``.  Conventions: the
docstring of ``stabsim.theory.p0``, which re-exports every name of this module.
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.theory._check import named, nonnegative
from stabsim.theory.p0_common import _E, _ln_ceil, _p0


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
