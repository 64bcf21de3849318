"""P2 -- Kang, Liu, Li, Wang: towards sharper utility bounds for DP pairwise learning.

Algorithm (P2 Alg. 1): full-batch gradient descent over all ordered pairs i != j, step
eta = 1/L, Gaussian noise b_t ~ N(0, sigma^2 I_p) added to every gradient, output theta_T
(no projection).  Notation follows the paper: **p** is the parameter dimension (d is the
input dimension), T the number of GD steps, G/L the Lipschitz/smoothness constants, mu the
PL constant of the empirical risk (0 < mu < L), M_ell the loss bound, xi the failure
probability of the high-probability bound.  All logs are natural.

Registered here:

* ``P2.Thm1.sigma``           CONDITION    sigma = 8 G sqrt(T log(1/delta)) / (n eps)
* ``P2.Thm2.excess``          EXPLICIT-DD  closed-form infimum over tau of Thm 2
* ``P2.Remark2.excess``       RATE         O(sqrt(p)/(n eps))
* ``P2.Thm3.excess.explicit`` EXPLICIT-DD  the constant-free terms of Eq. (5)
* ``P2.Thm3.excess``          RATE         O(sqrt(p)/(sqrt(n) eps))  (Remark 3)
* ``P2.Lemma1.beta``          RATE         beta_n = O(1/n)
* ``P2.Lemma2.excess.{exp,hp}``, ``P2.Lemma3.excess.{exp,hp}``  RATE  (examples)

RATE functions return the last O(.) expression printed in the statement with every hidden
constant set to 1, times an optional factor ``c``; ``rate`` holds the exponents of that
expression (log factors ignored).

``LEMMA_CONSTANTS`` records the (G, L) printed for the two examples of Sec. 7 next to the
exact value of the printed L-expression and crude bounds (errata P2-E3).
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.theory import _check
from stabsim.theory.registry import register

PAPER = "P2"
_SMOOTH_PL = ("G-Lipschitz", "L-smooth", "PL(mu) on the empirical risk, 0 < mu < L", "eta = 1/L")


def _mu_below_L(mu, L):
    mu = _check.positive("mu", mu)
    L = _check.positive("L", L)
    if not np.all(mu < L):
        raise ValueError(f"mu={mu!r} is not allowed: the PL constant mu must be < L={L!r} "
                         "(0 < mu < L, P2 Remark 2)")
    return mu, L


# --------------------------------------------------------------------------- privacy


@register(key="P2.Thm1.sigma", paper=PAPER, ref="Theorem 1", quantity="noise_sigma",
          tag="CONDITION", assumptions=("G-Lipschitz",), sweep="T",
          description="noise std of Alg. 1 for (eps, delta)-DP: 8 G sqrt(T log(1/delta)) / (n eps)")
def thm1_sigma(*, T, n, G, eps, delta):
    """P2 Theorem 1: Alg. 1 is (eps, delta)-DP if

        sigma_t >= 8 G sqrt(T log(1/delta)) / (n eps)      (the same for every t).

    Returns the right-hand side (use equality in simulations).  Errata P2-A: a zCDP
    cross-check supports this sigma for eps <= 2.34 log(1/delta) (P2-E4).
    """
    T = _check.positive("T", T)
    n = _check.at_least("n", n, 1)
    G = _check.positive("G", G)
    eps = _check.positive("eps", eps)
    delta = _check.in_open_unit("delta", delta)
    return np.asarray(8.0 * G * np.sqrt(T * np.log(1.0 / delta)) / (n * eps), dtype=float)


# --------------------------------------------------------------------------- Theorem 2


def thm2_A(*, T, n, p, G, L, sigma):
    """The bracket of P2 Thm 2 multiplying 2(tau + L):

        A = 16 G^2 T^2 / (L^2 n^2) + p T^2 sigma^2 / (2 L^2) + 4 sqrt(2) sqrt(p) G T^2 sigma / (L^2 n).
    """
    T = _check.positive("T", T)
    n = _check.at_least("n", n, 1)
    p = _check.at_least("p", p, 1)
    G = _check.positive("G", G)
    L = _check.positive("L", L)
    sigma = _check.nonnegative("sigma", sigma)
    return np.asarray(16 * G**2 * T**2 / (L**2 * n**2) + p * T**2 * sigma**2 / (2 * L**2)
                      + 4 * math.sqrt(2) * np.sqrt(p) * G * T**2 * sigma / (L**2 * n), dtype=float)


def _thm2_tail(*, T, p, L, mu, sigma, gap0):
    """(1 - mu/L)^T gap0 + p sigma^2 / (2 mu): the tau-free terms of Thm 2."""
    mu, L = _mu_below_L(mu, L)
    gap0 = _check.nonnegative("gap0", gap0)
    return (1 - mu / L) ** np.asarray(T, dtype=float) * gap0 + np.asarray(p, dtype=float) * sigma**2 / (2 * mu)


def thm2_objective(*, tau, T, n, p, G, L, mu, sigma, gap0):
    """The expression inside inf_{tau > 0} of P2 Thm 2 at a given tau (printed form):

        2 (tau + L) A + G^2 / (2 tau) + (1 - mu/L)^T gap0 + p sigma^2 / (2 mu).
    """
    tau = _check.positive("tau", tau)
    A = thm2_A(T=T, n=n, p=p, G=G, L=L, sigma=sigma)
    return np.asarray(2 * (tau + L) * A + G**2 / (2 * tau)
                      + _thm2_tail(T=T, p=p, L=L, mu=mu, sigma=sigma, gap0=gap0), dtype=float)


@register(key="P2.Thm2.excess", paper=PAPER, ref="Theorem 2", quantity="excess_risk",
          tag="EXPLICIT-DD", assumptions=_SMOOTH_PL, sweep="T", measured=("gap0",),
          reading="as printed; the infimum over tau evaluated in closed form (tau* = G/(2 sqrt(A)))",
          description="expected excess risk of Alg. 1: 2LA + 2G sqrt(A) + (1-mu/L)^T gap0 + p sigma^2/(2mu)")
def thm2_excess(*, T, n, p, G, L, mu, sigma, gap0):
    """P2 Theorem 2 (G-Lipschitz, L-smooth, PL(mu), eta_t = 1/L):

        E[L_P(theta_priv) - min_C L_P] <= inf_{tau>0} { 2(tau+L) A + G^2/(2 tau)
                                          + (1 - mu/L)^T (L(theta_0;D) - L(theta*;D)) + p sigma^2/(2 mu) }

    with A = 16G^2T^2/(L^2n^2) + pT^2 sigma^2/(2L^2) + 4 sqrt(2) sqrt(p) G T^2 sigma/(L^2 n).
    The infimum is attained at tau* = G / (2 sqrt(A)) (2 tau A + G^2/(2 tau) >= 2 G sqrt(A)), so

        bound = 2 L A + 2 G sqrt(A) + (1 - mu/L)^T gap0 + p sigma^2 / (2 mu).

    ``gap0`` = L(theta_0; D) - L(theta*; D) is measured (the realised initial gap, P2-E8).
    ``sigma`` is the noise std (e.g. from ``P2.Thm1.sigma``); A grows like T^3, so the
    curve is U-shaped in T.
    """
    A = thm2_A(T=T, n=n, p=p, G=G, L=L, sigma=sigma)
    G = np.asarray(G, dtype=float)
    L = np.asarray(L, dtype=float)
    return np.asarray(2 * L * A + 2 * G * np.sqrt(A)
                      + _thm2_tail(T=T, p=p, L=L, mu=mu, sigma=np.asarray(sigma, dtype=float), gap0=gap0),
                      dtype=float)


def thm2_tau_opt(*, T, n, p, G, L, sigma):
    """The minimising tau of Thm 2: tau* = G / (2 sqrt(A))."""
    return np.asarray(np.asarray(G, dtype=float) / (2 * np.sqrt(thm2_A(T=T, n=n, p=p, G=G, L=L, sigma=sigma))),
                      dtype=float)


# --------------------------------------------------------------------------- rates


def _rate_exp(*, n, p, eps, c=1.0):
    """sqrt(p) / (n eps), times c."""
    n = _check.at_least("n", n, 1)
    p = _check.at_least("p", p, 1)
    eps = _check.positive("eps", eps)
    return np.asarray(c * np.sqrt(p) / (n * eps), dtype=float)


def _rate_hp(*, n, p, eps, c=1.0):
    """sqrt(p) / (sqrt(n) eps), times c."""
    n = _check.at_least("n", n, 1)
    p = _check.at_least("p", p, 1)
    eps = _check.positive("eps", eps)
    return np.asarray(c * np.sqrt(p) / (np.sqrt(n) * eps), dtype=float)


_RATE_EXP = {"n": -1.0, "eps": -1.0, "p": 0.5}
_RATE_HP = {"n": -0.5, "eps": -1.0, "p": 0.5}


@register(key="P2.Remark2.excess", paper=PAPER, ref="Remark 2", quantity="excess_risk", tag="RATE",
          assumptions=_SMOOTH_PL + ("sigma from Thm 1", "T = O(log(n eps / sqrt(p)))"),
          rate=_RATE_EXP, sweep="n",
          description="expected excess risk O(sqrt(p)/(n eps)) (Thm 2 with tuned tau, T)")
def remark2_excess(*, n, p, eps, c=1.0):
    """P2 Remark 2: with tau = O(n eps/(sqrt(p) T^1.5)), sigma = O(sqrt(T)/(n eps)) and
    T = O(log(n eps / sqrt(p))), Thm 2 gives

        O(sqrt(p)/(n eps) + eps/(n sqrt(p)) + 1/n + p/(n^2 eps^2)) = O(sqrt(p)/(n eps)).

    Returns c * sqrt(p)/(n eps).  Slopes: -1 in n, -1 in eps, +1/2 in p (logs in T ignored).
    """
    return _rate_exp(n=n, p=p, eps=eps, c=c)


@register(key="P2.Thm3.excess", paper=PAPER, ref="Theorem 3 / Remark 3", quantity="excess_risk",
          tag="RATE", assumptions=_SMOOTH_PL + ("0 <= loss <= M_ell", "beta_n = beta/n",
                                                "T = O(log(sqrt(n) eps))"),
          rate=_RATE_HP, sweep="n",
          description="high-probability excess risk O(sqrt(p)/(sqrt(n) eps)) (Remark 3)")
def thm3_excess_rate(*, n, p, eps, c=1.0):
    """P2 Theorem 3 / Remark 3: with probability >= 1 - xi,

        O(1/n + 1/sqrt(n) + sqrt(p)/(sqrt(n) eps) + sqrt(p)/(n^2 eps) + p/(n^2 eps^2))
          = O(sqrt(p)/(sqrt(n) eps)).

    Returns c * sqrt(p)/(sqrt(n) eps).  Slopes: -1/2 in n, -1 in eps, +1/2 in p.  (The
    contribution list prints O(sqrt(p)/(n eps)); the theorem's rate is this one, P2-E1.)
    """
    return _rate_hp(n=n, p=p, eps=eps, c=c)


@register(key="P2.Thm3.excess.explicit", paper=PAPER, ref="Theorem 3, Eq. (5)", quantity="excess_risk",
          tag="EXPLICIT-DD", assumptions=_SMOOTH_PL + ("0 <= loss <= M_ell", "beta_n = beta/n"),
          sweep="n", measured=("sup_Ebeta",),
          reading="only the terms of Eq. (5) without the unspecified constants c_1, c_2, c_3 "
                  "(a lower envelope of the bound, not a bound by itself)",
          description="constant-free part of Eq. (5): stability terms + (M_ell + G^2/(2 mu)) sqrt(log(3/xi)/n)")
def thm3_explicit_part(*, n, sup_Ebeta, M_ell, G, mu, xi):
    """P2 Theorem 3, Eq. (5), the terms free of the unspecified c_1, c_2, c_3:

        2 sup_z E_{z',z''} beta(z; z', z'') / n
        + (4 sup_z E_{z',z''}[beta(z; z', z'')] + 4 M_ell) sqrt(2 log(12/xi) / n)
        + (M_ell + G^2/(2 mu)) sqrt(log(3/xi) / n).

    The omitted c-terms are c_1 (G^2/(L eps)) sqrt(p log(12/xi) log(1/delta)/n)
    + c_2 (G^2/(n^2 L eps)) sqrt(p log(1/delta)/xi) + c_3 G^2 p log(1/delta)/(n^2 eps^2 mu xi),
    so the full right-hand side is at least this value.  ``sup_Ebeta`` =
    sup_z E_{z',z''} beta(z; z', z'') with beta = n beta_n (removal stability, Def. 6) is
    measured, e.g. as max_i of n * mean over test pairs of |Delta loss|.
    """
    n = _check.at_least("n", n, 1)
    b = _check.nonnegative("sup_Ebeta", sup_Ebeta)
    M = _check.nonnegative("M_ell", M_ell)
    G = _check.positive("G", G)
    mu = _check.positive("mu", mu)
    xi = _check.in_open_unit("xi", xi)
    return np.asarray(2 * b / n + (4 * b + 4 * M) * np.sqrt(2 * np.log(12 / xi) / n)
                      + (M + G**2 / (2 * mu)) * np.sqrt(np.log(3 / xi) / n), dtype=float)


@register(key="P2.Lemma1.beta", paper=PAPER, ref="Lemma 1", quantity="locally_elastic_beta", tag="RATE",
          assumptions=("G-Lipschitz", "heuristic (influence-function Taylor argument), not a proof"),
          rate={"n": -1.0}, sweep="n",
          description="pairwise locally elastic stability beta_n(z_i; z_j, z_k) = O(1/n)")
def lemma1_beta(*, n, c=1.0):
    """P2 Lemma 1: beta_n(z_i; z_j, z_k) := |l(A*_D; z_j, z_k) - l(A*_{D^{-i}}; z_j, z_k)| = O(1/n).
    Returns c / n.  D^{-i} is D with z_i *removed* (P2-E7)."""
    n = _check.at_least("n", n, 1)
    return np.asarray(c / n, dtype=float)


# The two examples of Sec. 7 only restate the rates of Thms 2 and 3 for a specific loss.
_EXAMPLES = {"Lemma2": "bipartite ranking, logistic phi((y-y') theta.(x-x')), ||theta|| <= 1",
             "Lemma3": "metric learning, logistic phi(y y'(1 - (x-x')^T theta (x-x'))), ||theta||_2 <= 1"}
_EXAMPLE_MODES = {  # mode -> (helper, rate, T choice, O(.) form, kind)
    "exp": (_rate_exp, _RATE_EXP, "T = O(log(n eps/sqrt(p)))", "sqrt(p)/(n eps)", "in expectation"),
    "hp": (_rate_hp, _RATE_HP, "T = O(log(sqrt(n) eps))", "sqrt(p)/(sqrt(n) eps)", "with high probability"),
}


def _example_rate(lemma, mode):
    helper, _, T_choice, form, kind = _EXAMPLE_MODES[mode]

    def example_rate(*, n, p, eps, c=1.0):
        return helper(n=n, p=p, eps=eps, c=c)

    example_rate.__doc__ = f"""P2 {lemma[:-1]} {lemma[-1]} ({_EXAMPLES[lemma]}, ||x|| <= 1):
    running Alg. 1 with {T_choice} and eta = 1/L gives, {kind},

        L_P(theta_priv) - L_P(theta*_P) = O({form})     (Thm {2 if mode == "exp" else 3} applied).

    Returns c * {form}."""
    return example_rate


for _lemma, _example in _EXAMPLES.items():
    for _mode, (_, _rate, _T_choice, _form, _kind) in _EXAMPLE_MODES.items():
        register(key=f"P2.{_lemma}.excess.{_mode}", paper=PAPER, ref=f"{_lemma[:-1]} {_lemma[-1]}",
                 quantity="excess_risk", tag="RATE", rate=_rate, sweep="n",
                 assumptions=(_example, "||x|| <= 1", _T_choice, "eta = 1/L"),
                 description=f"{_example}: excess risk {_kind} O({_form})")(_example_rate(_lemma, _mode))


#: Constants of the Sec. 7 examples (P2 Lemmas 2 and 3; errata P2-E3).
#: ``L_printed_expr`` is the printed closed form, ``L_printed_approx`` the printed decimal,
#: ``L_exact`` the exact value of the printed closed form; ``G_crude``/``L_crude`` are the
#: elementary bounds |phi'| <= 1, phi'' <= 1/4 with ||x|| <= 1, |y| <= 1.  The printed G and
#: L could not be reproduced (P2-E3): compute G, L from your data instead.
LEMMA_CONSTANTS = {
    "bipartite_ranking": {  # Lemma 2: (2 + 2 sqrt 2)/(3 + 2 sqrt 2) = 2/(1 + sqrt 2) = 2(sqrt 2 - 1)
        "G_printed": 2.0,
        "L_printed_expr": (2 + 2 * math.sqrt(2)) / (3 + 2 * math.sqrt(2)),
        "L_printed_approx": 0.84,
        "L_exact": 2 * (math.sqrt(2) - 1),
        "G_crude": 4.0,
        "L_crude": 4.0,
    },
    "metric_learning": {  # Lemma 3: (1 + sqrt 2)/(6 + 4 sqrt 2) = (sqrt 2 - 1)/2
        "G_printed": 1.0,
        "L_printed_expr": (1 + math.sqrt(2)) / (6 + 4 * math.sqrt(2)),
        "L_printed_approx": 0.21,
        "L_exact": (math.sqrt(2) - 1) / 2,
        "G_crude": 4.0,
        "L_crude": 4.0,
    },
}
