"""P4 -- Wang, Lei, Ying, Zhou: differentially private SGD with low-noise.

Algorithms: DP-SGD pointwise (Alg. 1: one uniform index per step) and pairwise (Alg. 2: one
uniform ordered pair i != j per step), gradient noise b_t ~ N(0, sigma^2 I_d), w_1 = 0,
output w_priv = (1/T) sum_{t=1}^T w_t.  Notation as in the paper: alpha in [0, 1] is the
**Hoelder exponent** of the gradient (alpha = 1: L-smooth), L its parameter, M = sup_z
||df(0; z)|| (the gradient reading of P4-E1, needed only for alpha = 0), d the dimension,
kappa the free parameter of Lemmas 13/17, w* the population minimiser, F_star = F(w*)
(0 under low noise), ``w_star_norm2`` = ||w*||_2^2, ``sigma2`` = sigma^2.  For the
pairwise algorithm read F, F_S as F-bar, F-bar_S.  All logs are natural.

Conventions
-----------
* **Step sizes.** Pass a constant ``eta`` together with the horizon (``T`` for the
  stability/generalization results, ``t`` for the optimization results, as in the paper)
  or an explicit 1-D array ``etas`` = (eta_1, ..., eta_T); the horizon is then len(etas).
* **Measured trajectory quantities** are passed as eta^2-weighted sums (use
  ``eta2_weighted_sum`` to form them from per-step measurements):

  - ``sum_eta2_EFS``     = sum_{j=1}^T eta_j^2 E[F_S(w_j)]
  - ``sum_eta2_EFS_pow`` = sum_{j=1}^T eta_j^2 E[F_S(w_j)^{2 alpha/(1+alpha)}]

  and quantities of the output as ``EFS`` = E[F_S(M(S))], ``EFS_pow`` =
  E[F_S(M(S))^{2 alpha/(1+alpha)}], ``EF_pow`` = E[F(M(S))^{2 alpha/(1+alpha)}],
  ``nu`` = on-average argument stability (Def. 6, measured with shared indices and noise).
* **kappa.** Lemma 13/17 and Thm 15 accept ``kappa > 0`` or ``kappa="opt"``: every such
  bound has the form a/kappa + kappa b (+ const), minimised in closed form at
  kappa* = sqrt(a/b) with value 2 sqrt(a b) (+ const).
* **Optimization bounds** (Thm 16, Lemma 20) are returned divided by sum_j eta_j, i.e. as a
  bound on the eta-weighted average of E[F_S(w_j) - F_S(w*)]; for constant eta this bounds
  E[F_S(w_priv)] - F(w*) (Jensen).  ``thm16_rhs`` gives the undivided right-hand side.
* RATE functions return the theorem's O(.) expression with constants 1 (times ``c``).

Constants (Eq. (4), (5), Lemma 14, Lemma 19): ``M_alpha_1``, ``M_alpha_2``, ``M_alpha_3``,
``Mbar_alpha_3`` (variant "printed" or "corrected" = M_alpha_3, P4-E2).  Step sizes and T of
the rate theorems: ``recommended_schedule``.

Modules
-------
This module re-exports every name of the others.

``p4_common``     input checks, the kappa form, eta^2-weighted sums, the constants M_alpha_*.
``p4_stability``  Theorems 2 / 5 (noise), Lemmas 13, 14, 17, 18, 19 and Theorem 15 (generalization).
this module       Theorem 16 / Lemma 20 (optimization), the proof-derived explicit excess risk of
                  Theorems 3 / 6, the RATE Theorems 3, 4, 6, 7 and their step sizes.
"""

from __future__ import annotations

import numpy as np

from stabsim.theory import _check
from stabsim.theory.p4_common import (  # noqa: F401  (re-exported)
    _alpha, _kappa_form, _nonincreasing, _schedule, _smooth_steps, _VARIANT_READING, E,
    eta2_weighted_sum, kappa_opt, M_alpha_1, M_alpha_2, M_alpha_3, Mbar_alpha_3, PAPER)
from stabsim.theory.p4_stability import (  # noqa: F401  (re-exported)
    _holder_onavg, _lemma18, _lemma19b, _nu, _sigma2, _smooth_onavg, lemma13a_gen, lemma13b_gen,
    lemma14a_onavg, lemma14b_onavg, lemma17a_gen, lemma17b_gen, lemma19a_onavg, thm15a_gen, thm15b_gen,
    thm2_sigma2, thm5_sigma2)
from stabsim.theory.registry import register


# --------------------------------------------------------------------------- Theorem 16 / Lemma 20


def _noise_terms(sigma2, d):
    return _check.nonnegative("sigma2", sigma2) * _check.at_least("d", d, 1)


def _m2_sum(a, L, M, power_sum):
    """3 M_{alpha,2} sum_j eta_j^{(3-alpha)/(1-alpha)}, and 0 where alpha = 1 (smooth case)."""
    hold = a < 1
    if not np.any(hold):
        return np.zeros_like(a)
    safe = np.where(hold, a, 0.5)
    m2 = M_alpha_2(alpha=safe, L=L, M=M)
    return np.where(hold, 3 * m2 * power_sum((3 - safe) / (1 - safe)), 0.0)


def _eta2_FS_bound(a, *, L, M, sd, w_star_norm2, F_star, eta1, power_sum):
    """2 eta_1 ||w*||^2 + sum_j (6 eta_j^3 sigma^2 d + 4 eta_j^2 F(w*) + 3 M_{alpha,2} eta_j^{(3-alpha)/(1-alpha)})."""
    return (2 * eta1 * w_star_norm2 + 6 * power_sum(3) * sd + 4 * power_sum(2) * F_star
            + _m2_sum(a, L, M, power_sum))


def thm16_rhs(*, t=None, eta=None, etas=None, alpha, L, sigma2, d, w_star_norm2, F_star=0.0, M=None):
    """Right-hand side of P4 Thm 16(b) / Lemma 20 (first inequality), alpha in [0, 1]:

        (1/2)||w*||^2 + (3 M_{alpha,1}^2/4) (sum_j eta_j^2)^{(1-alpha)/(1+alpha)}
            [2 eta_1 ||w*||^2 + sum_j (6 eta_j^3 sigma^2 d + 4 eta_j^2 F(w*) + 3 M_{alpha,2} eta_j^{(3-alpha)/(1-alpha)})]^{2alpha/(1+alpha)}
        + sum_j 3 eta_j^2 sigma^2 d,

    a bound on sum_{j=1}^t eta_j E[F_S(w_j) - F_S(w*)].  At alpha = 1 the M_{alpha,2} term is
    dropped (smooth self-bounding used directly), M_{1,1}^2 = 2L, and this is Thm 16(a):
    (1/2 + 3 L eta_1)||w*||^2 + 3L sum_j (3 eta_j^3 sigma^2 d + 2 eta_j^2 F(w*)) + sum_j 3 eta_j^2 sigma^2 d.
    """
    a = _alpha(alpha, allow_one=True)
    _, eta1, _, power_sum, e = _schedule("t", t, eta, etas)
    _nonincreasing(e)
    w2 = _check.nonnegative("w_star_norm2", w_star_norm2)
    F_star = _check.nonnegative("F_star", F_star)
    sd = _noise_terms(sigma2, d)
    m1 = M_alpha_1(alpha=a, L=L, M=M)
    bracket = _eta2_FS_bound(a, L=L, M=M, sd=sd, w_star_norm2=w2, F_star=F_star, eta1=eta1, power_sum=power_sum)
    return np.asarray(w2 / 2 + 0.75 * m1**2 * power_sum(2) ** ((1 - a) / (1 + a)) * bracket ** (2 * a / (1 + a))
                      + 3 * power_sum(2) * sd, dtype=float)


def _opt_avg(**kw):
    """thm16_rhs divided by sum_j eta_j."""
    _, _, _, power_sum, _ = _schedule("t", kw.get("t"), kw.get("eta"), kw.get("etas"))
    return np.asarray(thm16_rhs(**kw) / power_sum(1), dtype=float)


_OPT_DESC = ("bound on (sum_j eta_j)^{-1} sum_j eta_j E[F_S(w_j) - F_S(w*)] "
             "(Thm RHS / sum eta_j; = opt. error of w_priv for constant eta)")


@register(key="P4.Thm16a.opt", paper=PAPER, ref="Theorem 16(a)", quantity="opt_error", tag="EXPLICIT",
          assumptions=("pointwise Alg. 1", "f >= 0 convex", "L-smooth", "eta_j non-increasing"), sweep="t",
          description="smooth optimization error: [(1/2 + 3L eta_1)||w*||^2 + 3L sum(3eta^3 sigma^2 d + 2eta^2 F*) + sum 3eta^2 sigma^2 d] / sum eta")
def thm16a_opt(*, L, sigma2, d, w_star_norm2, F_star=0.0, t=None, eta=None, etas=None):
    """P4 Theorem 16(a), divided by sum_{j=1}^t eta_j:

        sum_{j=1}^t eta_j E[F_S(w_j) - F_S(w*)] <= (1/2 + 3 L eta_1)||w*||^2
            + 3L sum_j (3 eta_j^3 sigma^2 d + 2 eta_j^2 F(w*)) + sum_j 3 eta_j^2 sigma^2 d.
    """
    return _opt_avg(t=t, eta=eta, etas=etas, alpha=1.0, L=L, sigma2=sigma2, d=d,
                    w_star_norm2=w_star_norm2, F_star=F_star)


@register(key="P4.Thm16b.opt", paper=PAPER, ref="Theorem 16(b)", quantity="opt_error", tag="EXPLICIT",
          assumptions=("pointwise Alg. 1", "f >= 0 convex", "alpha-Hoelder gradient, alpha in [0,1)",
                       "eta_j non-increasing"), sweep="t", description="Hoelder optimization error, " + _OPT_DESC)
def thm16b_opt(*, alpha, L, sigma2, d, w_star_norm2, F_star=0.0, t=None, eta=None, etas=None, M=None):
    """P4 Theorem 16(b), divided by sum_{j=1}^t eta_j (alpha in [0, 1); see ``thm16_rhs``)."""
    return _opt_avg(t=t, eta=eta, etas=etas, alpha=_alpha(alpha, allow_one=False), L=L, sigma2=sigma2, d=d,
                    w_star_norm2=w_star_norm2, F_star=F_star, M=M)


@register(key="P4.Lemma20.opt", paper=PAPER, ref="Lemma 20 (first inequality)", quantity="opt_error",
          tag="EXPLICIT", assumptions=("pairwise Alg. 2", "f >= 0 convex",
                                       "alpha-Hoelder gradient, alpha in [0,1] (1 = L-smooth)",
                                       "eta_j non-increasing"), sweep="t",
          description="pairwise optimization error (Thm 16 for Alg. 2), " + _OPT_DESC)
def lemma20_opt(*, alpha, L, sigma2, d, w_star_norm2, F_star=0.0, t=None, eta=None, etas=None, M=None):
    """P4 Lemma 20, first inequality, divided by sum_{j=1}^t eta_j: the bound of ``thm16_rhs``
    for Fbar_S and Fbar(w*) (``F_star``), alpha in [0, 1]; alpha = 1 drops the M_{alpha,2} term."""
    return _opt_avg(t=t, eta=eta, etas=etas, alpha=alpha, L=L, sigma2=sigma2, d=d,
                    w_star_norm2=w_star_norm2, F_star=F_star, M=M)


@register(key="P4.Lemma20.sum_eta2_FS", paper=PAPER, ref="Lemma 20 (second inequality); Eq. (8)/(11)",
          quantity="eta2_weighted_train_risk", tag="EXPLICIT",
          assumptions=("Alg. 1 or 2", "f >= 0 convex", "alpha-Hoelder gradient, alpha in [0,1] (1 = L-smooth)",
                       "eta_j non-increasing"), sweep="t",
          reading="left-hand side read with w_j (the extraction prints w_t, P4-E7)",
          description="sum_j eta_j^2 E[F_S(w_j)] <= 2 eta_1 ||w*||^2 + sum_j (6eta^3 sigma^2 d + 4eta^2 F* + 3M_{a,2} eta^{(3-a)/(1-a)})")
def lemma20_sum_eta2_FS(*, alpha, L, sigma2, d, w_star_norm2, F_star=0.0, t=None, eta=None, etas=None, M=None):
    """P4 Lemma 20, second inequality (pairwise; the pointwise Eq. (8)/(11) is identical):

        sum_{j=1}^t eta_j^2 E[Fbar_S(w_j)] <= 2 eta_1 ||w*||^2
            + sum_{j=1}^t (6 eta_j^3 sigma^2 d + 4 eta_j^2 Fbar(w*) + 3 M_{alpha,2} eta_j^{(3-alpha)/(1-alpha)}),

    the M_{alpha,2} term dropped at alpha = 1 (Eq. (11)).  The extraction prints E[Fbar_S(w_t)]
    on the left (P4-E7); w_j is meant.
    """
    a = _alpha(alpha, allow_one=True)
    _check.positive("L", L)
    _, eta1, _, power_sum, e = _schedule("t", t, eta, etas)
    _nonincreasing(e)
    return np.asarray(_eta2_FS_bound(a, L=L, M=M, sd=_noise_terms(sigma2, d),
                                     w_star_norm2=_check.nonnegative("w_star_norm2", w_star_norm2),
                                     F_star=_check.nonnegative("F_star", F_star), eta1=eta1,
                                     power_sum=power_sum), dtype=float)


# --------------------------------------------------------------------------- proof-derived excess risk


_F_COEF = {  # coefficient of T eta^2 F(w*) inside the (1 + L/kappa)(...) bracket (P4-E8)
    ("pointwise", "corrected"): lambda L: 6 * L,
    ("pointwise", "printed"): lambda L: 6.0,
    ("pairwise", "corrected"): lambda L: 6 * L,
    ("pairwise", "printed"): lambda L: 4.0,
}


def _excess_explicit(setting, variant):
    pair = setting == "pairwise"

    def excess_explicit(*, n, T, eta, L, sigma2, d, w_star_norm2, F_star=0.0, kappa="opt"):
        n = _check.at_least("n", n, 1)
        T = _check.at_least("T", T, 1)
        eta = _check.positive("eta", eta)
        L = _check.positive("L", L)
        _smooth_steps(eta, L)
        sd = _noise_terms(sigma2, d)
        w2 = _check.nonnegative("w_star_norm2", w_star_norm2)
        Fs = _check.nonnegative("F_star", F_star)
        # sum_t eta E[F_S(w_t)] <= A  (Thm 16(a) / Lemma 20 with alpha = 1, constant eta)
        A = (T * eta * Fs + (0.5 + 3 * L * eta) * w2 + 9 * L * T * eta**3 * sd + 3 * T * eta**2 * sd
             + _F_COEF[(setting, variant)](L) * T * eta**2 * Fs)
        # stability part: (L + kappa) B with B = coef (1 + k T/n) L / n * eta sum_t [...]
        tri = T * (T + 1) / 2
        if pair:
            B = 32 * E * (1 + 2 * T / n) * L / n * eta * (2 * T * eta * w2 + tri * (6 * eta**3 * sd + 4 * eta**2 * Fs))
        else:
            B = 8 * E * (1 + T / n) * L / n * eta * (T * eta * w2 + tri * (3 * eta**3 * sd + 2 * eta**2 * Fs))
        # (1 + L/kappa) A + (L + kappa) B = A + L B + [L A / kappa + kappa B]
        total = A + L * B + _kappa_form(L * A, B, kappa)
        return np.asarray(total / (T * eta) - Fs, dtype=float)

    bar = "bar" if pair else ""
    excess_explicit.__doc__ = f"""P4, proof of Theorem {6 if pair else 3} (Eq. (12)/(20) with Thm 16(a)/Lemma 20, constant eta),
    {setting}, {variant} coefficient of the F{bar}(w*) term ({'6L' if variant == 'corrected' else ('4' if pair else '6')}):

        sum_t eta E[F{bar}(w_t)] <= (1 + L/kappa) A + (L + kappa) B,
        A = T eta F* + (1/2 + 3 L eta)||w*||^2 + 9 L T eta^3 sigma^2 d + 3 T eta^2 sigma^2 d + c_F T eta^2 F*,
        B = {'(32 e (1 + 2T/n) L / n) eta sum_t [2 eta ||w*||^2 + t (6 eta^3 sigma^2 d + 4 eta^2 F*)]' if pair
             else '(8 e (1 + T/n) L / n) eta sum_t [eta ||w*||^2 + t (3 eta^3 sigma^2 d + 2 eta^2 F*)]'},

    with sum_t t = T(T+1)/2, and returns E[F{bar}(w_priv)] - F* <= (that)/(T eta) - F* (Jensen).
    kappa="opt" uses kappa* = sqrt(L A / B): (1 + L/kappa*) A + (L + kappa*) B = A + L B + 2 sqrt(L A B).
    Needs eta <= 2/L (Lemma {19 if pair else 14}(a)).
    """
    return excess_explicit


for _thm, _setting in (("Thm3", "pointwise"), ("Thm6", "pairwise")):
    for _v in ("corrected", "printed"):
        register(key=f"P4.{_thm}.excess_explicit.{_v}", paper=PAPER, ref=f"proof of Theorem {_thm[-1]}",
                 quantity="excess_risk", tag="EXPLICIT", variant=_v, sweep="n",
                 reading=("F(w*) coefficient 6L, as Thm 16(a) gives (P4-E8)" if _v == "corrected" else
                          f"F(w*) coefficient as printed in the proof ({'4' if _setting == 'pairwise' else '6'}, "
                          "no L; P4-E8)"),
                 assumptions=(f"{_setting} Alg. {1 if _setting == 'pointwise' else 2}", "f >= 0 convex", "L-smooth",
                              "G-Lipschitz", "constant eta <= 2/L", "not stated as a theorem (proof-derived)"),
                 description=f"proof-derived explicit excess-risk bound of {_setting} DP-SGD, smooth ({_v})",
                 )(_excess_explicit(_setting, _v))


# --------------------------------------------------------------------------- rate theorems


def _priv_term(n, d, eps, delta):
    n = _check.at_least("n", n, 1)
    d = _check.at_least("d", d, 1)
    eps = _check.positive("eps", eps)
    delta = _check.in_open_unit("delta", delta)
    return n, np.sqrt(d * np.log(1 / delta)) / (n * eps)


def rate_general(*, n, d, eps, delta, c=1.0):
    """P4 Theorems 3(a), 4(a) (pointwise) and 6(a), 7(a) (pairwise):

        E[F(w_priv)] - F(w*) = O( 1/sqrt(n) + sqrt(d log(1/delta)) / (n eps) ),

    with eta, T from ``recommended_schedule``.  Returns c times the bracket; slope -1/2 in n,
    -1 in eps for the privacy term.
    """
    n, priv = _priv_term(n, d, eps, delta)
    return np.asarray(c * (1 / np.sqrt(n) + priv), dtype=float)


def rate_lownoise_smooth(*, n, d, eps, delta, c=1.0):
    """P4 Theorems 3(b) (pointwise) and 6(b) (pairwise), low noise F(w*) = 0, L-smooth:

        E[F(w_priv)] - F(w*) = O( sqrt(d log(1/delta)) / (n eps) ).

    Returns c times the bracket; slope -1 in n and -1 in eps.
    """
    _, priv = _priv_term(n, d, eps, delta)
    return np.asarray(c * priv, dtype=float)


def rate_lownoise_holder(*, n, d, eps, delta, alpha, c=1.0):
    """P4 Theorems 4(b) (pointwise) and 7(b) (pairwise), low noise F(w*) = 0, alpha-Hoelder:

        E[F(w_priv)] - F(w*) = O( n^{-(1+alpha)/2} + sqrt(d log(1/delta)) / (n eps) ).

    Returns c times the bracket; slope -(1+alpha)/2 in n (the registered ``rate`` stores
    alpha = 0; ``extra['rate_of_alpha'](alpha)`` gives the exponent), -1 in eps for the
    privacy term.
    """
    a = _alpha(alpha, allow_one=False)
    n, priv = _priv_term(n, d, eps, delta)
    return np.asarray(c * (n ** (-(1 + a) / 2) + priv), dtype=float)


_RATES = {  # (theorem, part) -> (function, rate, assumptions, description)
    "a-smooth": (rate_general, {"n": -0.5, "eps": -1.0}, ("L-smooth",),
                 "O(1/sqrt(n) + sqrt(d log(1/delta))/(n eps))"),
    "b-smooth": (rate_lownoise_smooth, {"n": -1.0, "eps": -1.0}, ("L-smooth", "low noise F(w*) = 0"),
                 "low noise: O(sqrt(d log(1/delta))/(n eps))"),
    "a-holder": (rate_general, {"n": -0.5, "eps": -1.0}, ("alpha-Hoelder gradient, alpha in [0,1)",),
                 "O(1/sqrt(n) + sqrt(d log(1/delta))/(n eps))"),
    "b-holder": (rate_lownoise_holder, {"n": -0.5, "eps": -1.0},
                 ("alpha-Hoelder gradient, alpha in [0,1)", "low noise F(w*) = 0"),
                 "low noise: O(n^{-(1+alpha)/2} + sqrt(d log(1/delta))/(n eps)); n-slope -(1+alpha)/2 "
                 "(stored rate is alpha = 0, see extra['rate_of_alpha'])"),
}

for _num, _setting, _kind in ((3, "pointwise", "smooth"), (4, "pointwise", "holder"),
                              (6, "pairwise", "smooth"), (7, "pairwise", "holder")):
    for _part in ("a", "b"):
        _fn, _rate, _assume, _desc = _RATES[f"{_part}-{_kind}"]
        _extra = {"rate_of_alpha": (lambda alpha: {"n": -(1 + alpha) / 2, "eps": -1.0})} if _fn is rate_lownoise_holder else {}
        register(key=f"P4.Thm{_num}{_part}.excess", paper=PAPER, ref=f"Theorem {_num}({_part})",
                 quantity="excess_risk", tag="RATE", rate=_rate, sweep="n",
                 assumptions=(f"{_setting} Alg. {1 if _setting == 'pointwise' else 2}", "f >= 0 convex", "G-Lipschitz")
                 + _assume + ("eta and T as in recommended_schedule",),
                 description=f"{_setting} DP-SGD excess risk {_desc}", **_extra)(_fn)


# --------------------------------------------------------------------------- step sizes


def _privacy_scale(eps, delta, d):
    return _check.positive("eps", eps) / np.sqrt(_check.at_least("d", d, 1)
                                                 * np.log(1 / _check.in_open_unit("delta", delta)))


def recommended_schedule(*, theorem, n, eps, delta, d, alpha=None, c=1.0, L=None):
    """Step size eta and iteration count T prescribed by P4 Thms 3, 4, 6, 7 (parts a, b).

    ``theorem`` is one of "3a", "3b", "4a", "4b", "6a", "6b", "7a", "7b" (6/7 = the pairwise
    twins of 3/4, same choices).  Returns (eta, T) with T = ceil(n^{exponent}) (the theorems
    state only T ~ n^{exponent}):

    * 3a/6a and 4a/7a with alpha >= 1/2: eta = c min{1/sqrt(n), eps/sqrt(d log(1/delta))}, T ~ n.
    * 3b/6b: eta = c eps / sqrt(d log(1/delta)), T ~ n.
    * 4a/7a, alpha < 1/2: eta = c min{n^{3(alpha-1)/(2(1+alpha))}, eps/sqrt(d log(1/delta))},
      T ~ n^{(2-alpha)/(1+alpha)}.
    * 4b/7b: eta = c min{n^{(alpha^2+2alpha-3)/(2(1+alpha))}, n eps/(T sqrt(d log(1/delta)))},
      T ~ n^{2/(1+alpha)}  (the theorem statement; the proof drops the square and the n, P4-E3).

    Every theorem also requires eta <= min{2/L, 1}; this is checked (2/L only when ``L`` is
    given) and a violation raises ValueError (choose a smaller c).
    """
    if theorem not in ("3a", "3b", "4a", "4b", "6a", "6b", "7a", "7b"):
        raise ValueError(f"theorem={theorem!r} is not allowed: theorem must be one of 3a, 3b, 4a, 4b, 6a, 6b, 7a, 7b")
    n = _check.at_least("n", n, 1)
    c = _check.positive("c", c)
    scale = _privacy_scale(eps, delta, d)
    holder = theorem[0] in "47"
    if holder and alpha is None:
        raise ValueError("alpha=None is not allowed for Theorems 4/7: give the Hoelder exponent in [0, 1)")
    a = _alpha(alpha, allow_one=False) if holder else None
    part = theorem[1]
    if part == "b" and holder:
        T = np.ceil(n ** (2 / (1 + a)))
        eta = c * np.minimum(n ** ((a**2 + 2 * a - 3) / (2 * (1 + a))), n * scale / T)
    elif part == "b":
        T = np.ceil(n)
        eta = c * scale
    elif holder and np.any(a < 0.5):
        T = np.where(a < 0.5, np.ceil(n ** ((2 - a) / (1 + a))), np.ceil(n))
        eta = c * np.minimum(np.where(a < 0.5, n ** (3 * (a - 1) / (2 * (1 + a))), 1 / np.sqrt(n)), scale)
    else:
        T = np.ceil(n)
        eta = c * np.minimum(1 / np.sqrt(n), scale)
    cap = np.minimum(1.0, 2 / _check.positive("L", L)) if L is not None else 1.0
    if not np.all(eta <= cap):
        raise ValueError(f"c={c!r} is not allowed here: it gives eta={eta!r} > min(2/L, 1)={cap!r}; choose a smaller c")
    return np.asarray(eta, dtype=float), np.asarray(T, dtype=int)
