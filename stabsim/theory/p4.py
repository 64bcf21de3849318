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
"""

from __future__ import annotations

import math

import numpy as np

from . import _check
from .registry import register

PAPER = "P4"
E = math.e


# --------------------------------------------------------------------------- input helpers


def _alpha(alpha, *, allow_one):
    """alpha in [0, 1] (allow_one) or [0, 1)."""
    a = _check.nonnegative("alpha", alpha)
    if not np.all(a <= 1 if allow_one else a < 1):
        raise ValueError(f"alpha={alpha!r} is not allowed: alpha must be in "
                         f"{'[0, 1] (1 = L-smooth)' if allow_one else '[0, 1) (Hoelder exponent; use the smooth result for 1)'}")
    return a


def _schedule(horizon_name, horizon, eta, etas):
    """Validate the step-size convention.

    Returns (horizon, eta_1, eta_max, power_sum, etas_array_or_None) where
    power_sum(k) = sum_{j=1}^{horizon} eta_j^k (k may be an array).
    """
    if etas is not None:
        if eta is not None:
            raise ValueError(f"eta={eta!r} and etas given: pass a constant eta with {horizon_name}, "
                             "or an array etas, not both")
        e = _check.positive("etas", etas)
        if e.ndim != 1 or e.size == 0:
            raise ValueError(f"etas={etas!r} is not allowed: etas must be a non-empty 1-D array (eta_1..eta_T)")
        if horizon is not None and np.any(np.asarray(horizon) != e.size):
            raise ValueError(f"{horizon_name}={horizon!r} is not allowed: it must equal len(etas)={e.size}")

        def power_sum(k):
            k = np.asarray(k, dtype=float)
            return np.sum(e.reshape((-1,) + (1,) * k.ndim) ** k, axis=0)

        return np.asarray(float(e.size)), e[0], e.max(), power_sum, e
    if eta is None or horizon is None:
        raise ValueError(f"eta={eta!r}, {horizon_name}={horizon!r}: give a constant eta together with "
                         f"{horizon_name}, or an explicit array etas")
    eta = _check.positive("eta", eta)
    horizon = _check.at_least(horizon_name, horizon, 1)
    return horizon, eta, eta, (lambda k: horizon * eta ** np.asarray(k, dtype=float)), None


def _smooth_steps(eta_max, L):
    """Lemma 14(a)/19(a) need eta_j <= 2/L."""
    if not np.all(eta_max <= 2 / L):
        raise ValueError(f"eta={eta_max!r} is not allowed: the smooth stability bounds need every "
                         f"eta_j <= 2/L = {2 / L!r}")


def _nonincreasing(etas):
    if etas is not None and np.any(np.diff(etas) > 0):
        raise ValueError(f"etas={etas!r} is not allowed: Theorem 16 needs non-increasing step sizes")


def _kappa_form(a, b, kappa):
    """a/kappa + kappa b, or its minimum 2 sqrt(a b) over kappa > 0 when kappa == 'opt'."""
    if isinstance(kappa, str):
        if kappa != "opt":
            raise ValueError(f"kappa={kappa!r} is not allowed: kappa must be > 0 or 'opt'")
        return 2 * np.sqrt(a * b)
    kappa = _check.positive("kappa", kappa)
    return a / kappa + kappa * b


def kappa_opt(a, b):
    """Minimiser sqrt(a/b) of a/kappa + kappa b (see the module docstring for a, b)."""
    return np.sqrt(np.asarray(a, dtype=float) / np.asarray(b, dtype=float))


def eta2_weighted_sum(values, *, eta=None, etas=None):
    """sum_j eta_j^2 values_j over the last axis of ``values`` (per-step measurements
    E[F_S(w_j)] or E[F_S(w_j)^{2alpha/(1+alpha)}], j = 1..T): the ``sum_eta2_*`` arguments."""
    v = np.asarray(values, dtype=float)
    _, _, _, _, e = _schedule("T", v.shape[-1], eta, etas)
    w = e**2 if e is not None else _check.positive("eta", eta) ** 2
    return np.asarray(np.sum(v * w, axis=-1), dtype=float)


# --------------------------------------------------------------------------- constants


def M_alpha_1(*, alpha, L, M=None):
    """Eq. (4): M_{alpha,1} = (1 + 1/alpha)^{alpha/(1+alpha)} L^{1/(1+alpha)} for alpha > 0,
    M + L for alpha = 0 (M = sup_z ||df(0; z)||_2, P4-E1).  alpha = 1 gives M_{1,1}^2 = 2L."""
    a = _alpha(alpha, allow_one=True)
    L = _check.positive("L", L)
    if np.any(a == 0):
        if M is None:
            raise ValueError("M=None is not allowed for alpha = 0: M_{0,1} = M + L needs "
                             "M = sup_z ||df(0; z)||_2 >= 0")
        M = _check.nonnegative("M", M)
    safe = np.where(a > 0, a, 1.0)
    holder = (1 + 1 / safe) ** (safe / (1 + safe)) * L ** (1 / (1 + safe))
    return np.asarray(np.where(a > 0, holder, (M if M is not None else 0.0) + L), dtype=float)


def M_alpha_2(*, alpha, L, M=None):
    """Eq. (5): M_{alpha,2} = ((1-alpha)/(1+alpha)) (2alpha/(1+alpha))^{2alpha/(1-alpha)}
    M_{alpha,1}^{(2+2alpha)/(1-alpha)} for alpha in (0, 1), and M_{0,1}^2 for alpha = 0 (the
    general expression reduces to it, with 0^0 = 1)."""
    a = _alpha(alpha, allow_one=False)
    m1 = M_alpha_1(alpha=a, L=L, M=M)
    return np.asarray((1 - a) / (1 + a) * (2 * a / (1 + a)) ** (2 * a / (1 - a))
                      * m1 ** ((2 + 2 * a) / (1 - a)), dtype=float)


def M_alpha_3(*, alpha, L):
    """Lemma 14(b): M_{alpha,3} = sqrt((1-alpha)/(1+alpha)) (2^{-alpha} L)^{1/(1-alpha)}."""
    a = _alpha(alpha, allow_one=False)
    L = _check.positive("L", L)
    return np.asarray(np.sqrt((1 - a) / (1 + a)) * (2.0 ** (-a) * L) ** (1 / (1 - a)), dtype=float)


def Mbar_alpha_3(*, alpha, L, variant="corrected"):
    """Lemma 19(b): Mbar_{alpha,3}.

    ``variant="printed"``:   sqrt(e (1-alpha)/(1+alpha)) (2 - alpha) L^{1/(1-alpha)}.
    ``variant="corrected"``: M_{alpha,3} = sqrt((1-alpha)/(1+alpha)) (2^{-alpha} L)^{1/(1-alpha)},
    the constant of Lei & Ying 2020 that Lemma 18 cites; "(2-alpha)L" reads as OCR of
    "(2^{-alpha}L)" and the extra e would double-count the explicit e of Lemma 19(b) (P4-E2).
    """
    if variant == "corrected":
        return M_alpha_3(alpha=alpha, L=L)
    if variant != "printed":
        raise ValueError(f"variant={variant!r} is not allowed: variant must be 'printed' or 'corrected'")
    a = _alpha(alpha, allow_one=False)
    L = _check.positive("L", L)
    return np.asarray(np.sqrt(E * (1 - a) / (1 + a)) * (2 - a) * L ** (1 / (1 - a)), dtype=float)


_VARIANT_READING = {
    "printed": "Mbar_{alpha,3} as printed: sqrt(e(1-alpha)/(1+alpha)) (2-alpha) L^{1/(1-alpha)}",
    "corrected": "Mbar_{alpha,3} read as M_{alpha,3} = sqrt((1-alpha)/(1+alpha)) (2^{-alpha}L)^{1/(1-alpha)} (P4-E2)",
}


# --------------------------------------------------------------------------- privacy (thin)


def _sigma2(coef, beta, eps, delta, n, T, G):
    beta = _check.in_open_unit("beta", beta)
    eps = _check.positive("eps", eps)
    delta = _check.in_open_unit("delta", delta)
    n = _check.at_least("n", n, 1)
    T = _check.at_least("T", T, 1)
    G = _check.positive("G", G)
    lam = np.log(1 / delta) / ((1 - beta) * eps) + 1
    return np.asarray(coef * G**2 * T * lam / (beta * n**2 * eps), dtype=float)


@register(key="P4.Thm2.sigma2", paper=PAPER, ref="Theorem 2 / Alg. 1", quantity="noise_sigma2", tag="CONDITION",
          assumptions=("G-Lipschitz", "valid only if sigma^2 >= 2.68 G^2 and the lambda condition hold "
                                      "(feasibility: stabsim.privacy)"), sweep="eps",
          description="DP-SGD pointwise noise: 14 G^2 T lambda / (beta n^2 eps), lambda = log(1/delta)/((1-beta)eps) + 1")
def thm2_sigma2(*, beta, eps, delta, n, T, G):
    """P4 Alg. 1 / Theorem 2: sigma^2 = (14 G^2 T / (beta n^2 eps)) (log(1/delta)/((1-beta) eps) + 1).

    (eps, delta)-DP only if sigma^2 >= 2.68 G^2 and lambda - 1 <= (sigma^2/(6G^2))
    log(n / (lambda (1 + sigma^2/(4G^2)))) with lambda = log(1/delta)/((1-beta)eps) + 1; the
    beta search and the feasibility check live in the privacy module.
    """
    return _sigma2(14.0, beta, eps, delta, n, T, G)


@register(key="P4.Thm5.sigma2", paper=PAPER, ref="Theorem 5 / Alg. 2", quantity="noise_sigma2", tag="CONDITION",
          assumptions=("G-Lipschitz", "valid only if sigma^2 >= 2.68 G^2 and the lambda condition (with 2 lambda) "
                                      "hold (feasibility: stabsim.privacy)"), sweep="eps",
          description="DP-SGD pairwise noise: 56 G^2 T lambda / (beta n^2 eps)")
def thm5_sigma2(*, beta, eps, delta, n, T, G):
    """P4 Alg. 2 / Theorem 5: sigma^2 = (56 G^2 T / (beta n^2 eps)) (log(1/delta)/((1-beta) eps) + 1).

    Conditions as Thm 2 with log(n / (2 lambda (1 + sigma^2/(4G^2)))) (the statement; the
    proof's last line drops the 2, P4-E5).
    """
    return _sigma2(56.0, beta, eps, delta, n, T, G)


# --------------------------------------------------------------------------- Lemma 13 / 17


def _nu(nu):
    return _check.nonnegative("nu", nu)


@register(key="P4.Lemma13a.gen", paper=PAPER, ref="Lemma 13(a)", quantity="gen_gap", tag="EXPLICIT-DD",
          assumptions=("pointwise", "L-smooth", "on-average nu-argument-stable"), sweep="n",
          measured=("EFS", "nu"),
          description="pointwise gen. gap <= (L/kappa) E[F_S(M(S))] + (L + kappa) nu / 2")
def lemma13a_gen(*, L, EFS, nu, kappa="opt"):
    """P4 Lemma 13(a): E[F(M(S)) - F_S(M(S))] <= (L/kappa) E[F_S(M(S))] + (L + kappa) nu / 2.
    kappa="opt": sqrt(2 L E[F_S] nu) + L nu / 2."""
    L = _check.positive("L", L)
    EFS = _check.nonnegative("EFS", EFS)
    nu = _nu(nu)
    return np.asarray(_kappa_form(L * EFS, nu / 2, kappa) + L * nu / 2, dtype=float)


@register(key="P4.Lemma13b.gen", paper=PAPER, ref="Lemma 13(b)", quantity="gen_gap", tag="EXPLICIT-DD",
          assumptions=("pointwise", "f >= 0 convex", "alpha-Hoelder gradient, alpha in [0,1)",
                       "on-average nu-argument-stable"), sweep="n", measured=("EFS_pow", "nu"),
          description="pointwise gen. gap <= (M_{a,1}^2/(2kappa)) E[F_S^{2a/(1+a)}] + kappa nu / 2")
def lemma13b_gen(*, alpha, L, EFS_pow, nu, kappa="opt", M=None):
    """P4 Lemma 13(b): E[F(M(S)) - F_S(M(S))] <= (M_{alpha,1}^2/(2 kappa)) E[F_S^{2alpha/(1+alpha)}(M(S))]
    + kappa nu / 2.  kappa="opt": M_{alpha,1} sqrt(E[F_S^{2alpha/(1+alpha)}] nu)."""
    m1 = M_alpha_1(alpha=_alpha(alpha, allow_one=False), L=L, M=M)
    EFS_pow = _check.nonnegative("EFS_pow", EFS_pow)
    return np.asarray(_kappa_form(m1**2 * EFS_pow / 2, _nu(nu) / 2, kappa), dtype=float)


@register(key="P4.Lemma17a.gen", paper=PAPER, ref="Lemma 17(a)", quantity="gen_gap", tag="EXPLICIT-DD",
          assumptions=("pairwise", "f >= 0", "L-smooth", "on-average nu-argument-stable"), sweep="n",
          measured=("EFS", "nu"),
          description="pairwise gen. gap <= (L/kappa) E[Fbar_S(M(S))] + 2 (L + kappa) nu")
def lemma17a_gen(*, L, EFS, nu, kappa="opt"):
    """P4 Lemma 17(a): E[Fbar(M(S)) - Fbar_S(M(S))] <= (L/kappa) E[Fbar_S(M(S))] + 2 (L + kappa) nu.
    kappa="opt": 2 sqrt(2 L E[Fbar_S] nu) + 2 L nu."""
    L = _check.positive("L", L)
    EFS = _check.nonnegative("EFS", EFS)
    nu = _nu(nu)
    return np.asarray(_kappa_form(L * EFS, 2 * nu, kappa) + 2 * L * nu, dtype=float)


@register(key="P4.Lemma17b.gen", paper=PAPER, ref="Lemma 17(b)", quantity="gen_gap", tag="EXPLICIT-DD",
          assumptions=("pairwise", "f >= 0 convex", "alpha-Hoelder gradient, alpha in [0,1)",
                       "on-average nu-argument-stable"), sweep="n", measured=("EF_pow", "nu"),
          reading="as printed: the first term uses the *population* Fbar^{2a/(1+a)}",
          description="pairwise gen. gap <= (M_{a,1}^2/(2kappa)) E[Fbar^{2a/(1+a)}] + 2 kappa nu")
def lemma17b_gen(*, alpha, L, EF_pow, nu, kappa="opt", M=None):
    """P4 Lemma 17(b): E[Fbar(M(S)) - Fbar_S(M(S))] <= (M_{alpha,1}^2/(2 kappa)) E[Fbar^{2alpha/(1+alpha)}(M(S))]
    + 2 kappa nu  (population Fbar, as printed and as proved).
    kappa="opt": 2 M_{alpha,1} sqrt(E[Fbar^{2alpha/(1+alpha)}] nu)."""
    m1 = M_alpha_1(alpha=_alpha(alpha, allow_one=False), L=L, M=M)
    EF_pow = _check.nonnegative("EF_pow", EF_pow)
    return np.asarray(_kappa_form(m1**2 * EF_pow / 2, 2 * _nu(nu), kappa), dtype=float)


# --------------------------------------------------------------------------- Lemma 14 / 18 / 19


def _smooth_onavg(coef, pair_factor, *, n, L, sum_eta2_EFS, T, eta, etas):
    """coef e L (1 + pair_factor T/n) / n * sum_eta2_EFS, with eta_j <= 2/L checked."""
    n = _check.at_least("n", n, 1)
    L = _check.positive("L", L)
    T, _, eta_max, _, _ = _schedule("T", T, eta, etas)
    _smooth_steps(eta_max, L)
    s = _check.nonnegative("sum_eta2_EFS", sum_eta2_EFS)
    return np.asarray(coef * E * L * (1 + pair_factor * T / n) / n * s, dtype=float)


def _holder_onavg(coef, pair_factor, m3, *, n, alpha, L, M, sum_eta2_EFS_pow, T, eta, etas):
    """m3^2 e sum eta_j^{2/(1-alpha)} + coef e M_{alpha,1}^2 (1 + pair_factor T/n)/n * sum_eta2_EFS_pow."""
    n = _check.at_least("n", n, 1)
    a = _alpha(alpha, allow_one=False)
    T, _, _, power_sum, _ = _schedule("T", T, eta, etas)
    m1 = M_alpha_1(alpha=a, L=L, M=M)
    s = _check.nonnegative("sum_eta2_EFS_pow", sum_eta2_EFS_pow)
    return np.asarray(m3**2 * E * power_sum(2 / (1 - a))
                      + coef * E * m1**2 * (1 + pair_factor * T / n) / n * s, dtype=float)


@register(key="P4.Lemma14a.onavg", paper=PAPER, ref="Lemma 14(a)", quantity="onavg_stability", tag="EXPLICIT-DD",
          assumptions=("pointwise Alg. 1", "f >= 0 convex", "L-smooth", "eta_j <= 2/L",
                       "coupled runs: same indices and same noise"), sweep="T", measured=("sum_eta2_EFS",),
          description="on-average stability of Alg. 1: (8 e (1 + T/n) L / n) sum_j eta_j^2 E[F_S(w_j)]")
def lemma14a_onavg(*, n, L, sum_eta2_EFS, T=None, eta=None, etas=None):
    """P4 Lemma 14(a): nu <= (8 e (1 + T/n) L / n) sum_{j=1}^T eta_j^2 E[F_S(w_j)]  (eta_j <= 2/L).

    With T -> t it is the per-iterate bound on (1/n) sum_i E||w_{t+1} - w_{t+1}^(i)||^2.
    """
    return _smooth_onavg(8.0, 1.0, n=n, L=L, sum_eta2_EFS=sum_eta2_EFS, T=T, eta=eta, etas=etas)


@register(key="P4.Lemma14b.onavg", paper=PAPER, ref="Lemma 14(b)", quantity="onavg_stability", tag="EXPLICIT-DD",
          assumptions=("pointwise Alg. 1", "f >= 0 convex", "alpha-Hoelder gradient, alpha in [0,1)",
                       "coupled runs: same indices and same noise"), sweep="T", measured=("sum_eta2_EFS_pow",),
          description="on-average stability of Alg. 1, Hoelder: M_{a,3}^2 e sum eta^{2/(1-a)} + (4e M_{a,1}^2 (1+T/n)/n) sum eta^2 E[F_S^{2a/(1+a)}]")
def lemma14b_onavg(*, n, alpha, L, sum_eta2_EFS_pow, T=None, eta=None, etas=None, M=None):
    """P4 Lemma 14(b):

        nu <= M_{alpha,3}^2 e sum_{j=1}^T eta_j^{2/(1-alpha)}
              + (4 e M_{alpha,1}^2 (1 + T/n) / n) sum_{j=1}^T eta_j^2 E[F_S^{2alpha/(1+alpha)}(w_j)],
        M_{alpha,3} = sqrt((1-alpha)/(1+alpha)) (2^{-alpha} L)^{1/(1-alpha)}.
    """
    m3 = M_alpha_3(alpha=alpha, L=L)
    return _holder_onavg(4.0, 1.0, m3, n=n, alpha=alpha, L=L, M=M, sum_eta2_EFS_pow=sum_eta2_EFS_pow,
                         T=T, eta=eta, etas=etas)


@register(key="P4.Lemma19a.onavg", paper=PAPER, ref="Lemma 19(a)", quantity="onavg_stability", tag="EXPLICIT-DD",
          assumptions=("pairwise Alg. 2", "G-Lipschitz", "L-smooth", "eta_t <= 2/L",
                       "coupled runs: same pairs and same noise"), sweep="T", measured=("sum_eta2_EFS",),
          description="on-average stability of Alg. 2: (16 L (1 + 2T/n) e / n) sum_j eta_j^2 E[Fbar_S(w_j)]")
def lemma19a_onavg(*, n, L, sum_eta2_EFS, T=None, eta=None, etas=None):
    """P4 Lemma 19(a): nu <= (16 L (1 + 2T/n) e / n) sum_{j=1}^T eta_j^2 E[Fbar_S(w_j)]  (eta_t <= 2/L)."""
    return _smooth_onavg(16.0, 2.0, n=n, L=L, sum_eta2_EFS=sum_eta2_EFS, T=T, eta=eta, etas=etas)


def _lemma19b(variant):
    def lemma19b_onavg(*, n, alpha, L, sum_eta2_EFS_pow, T=None, eta=None, etas=None, M=None):
        mbar = Mbar_alpha_3(alpha=alpha, L=L, variant=variant)
        return _holder_onavg(8.0, 2.0, mbar, n=n, alpha=alpha, L=L, M=M, sum_eta2_EFS_pow=sum_eta2_EFS_pow,
                             T=T, eta=eta, etas=etas)

    lemma19b_onavg.__doc__ = f"""P4 Lemma 19(b) ({variant} Mbar_{{alpha,3}}):

        nu <= (8 e M_{{alpha,1}}^2 (1 + 2T/n) / n) sum_{{j=1}}^T eta_j^2 E[Fbar_S^{{2alpha/(1+alpha)}}(w_j)]
              + Mbar_{{alpha,3}}^2 e sum_{{j=1}}^T eta_j^{{2/(1-alpha)}},

    with {_VARIANT_READING[variant]}.  The exponent is the statement's 2/(1-alpha) (the proof
    prints 2/(alpha-1), P4-E8).
    """
    return lemma19b_onavg


for _v in ("printed", "corrected"):
    register(key=f"P4.Lemma19b.onavg.{_v}", paper=PAPER, ref="Lemma 19(b)", quantity="onavg_stability",
             tag="EXPLICIT-DD", variant=_v, reading=_VARIANT_READING[_v], sweep="T",
             assumptions=("pairwise Alg. 2", "f >= 0 convex", "alpha-Hoelder gradient, alpha in [0,1)",
                          "coupled runs: same pairs and same noise"), measured=("sum_eta2_EFS_pow",),
             description=f"on-average stability of Alg. 2, Hoelder ({_v} Mbar_{{a,3}})")(_lemma19b(_v))


def _lemma18(variant):
    def lemma18_expansion(*, alpha, L, eta):
        eta = _check.positive("eta", eta)
        a = _alpha(alpha, allow_one=False)
        return np.asarray(Mbar_alpha_3(alpha=a, L=L, variant=variant) ** 2 * eta ** (2 / (1 - a)), dtype=float)

    lemma18_expansion.__doc__ = f"""P4 Lemma 18 (Lei & Ying 2020), {variant} constant: for convex f with
    alpha-Hoelder gradient, ||w - eta df(w) - w' + eta df(w')||^2 <= ||w - w'||^2 + Mbar_{{alpha,3}}^2 eta^{{2/(1-alpha)}}.
    Returns Mbar_{{alpha,3}}^2 eta^{{2/(1-alpha)}} with {_VARIANT_READING[variant]}."""
    return lemma18_expansion


for _v in ("printed", "corrected"):
    register(key=f"P4.Lemma18.expansion.{_v}", paper=PAPER, ref="Lemma 18", quantity="step_expansion",
             tag="EXPLICIT", variant=_v, reading=_VARIANT_READING[_v], sweep="eta",
             assumptions=("f convex", "alpha-Hoelder gradient, alpha in [0,1)"),
             description=f"expansion of one gradient step: Mbar_{{a,3}}^2 eta^{{2/(1-a)}} ({_v})")(_lemma18(_v))


# --------------------------------------------------------------------------- Theorem 15


@register(key="P4.Thm15a.gen", paper=PAPER, ref="Theorem 15(a)", quantity="gen_gap", tag="EXPLICIT-DD",
          assumptions=("pointwise Alg. 1", "f >= 0 convex", "L-smooth", "eta_t <= 2/L"), sweep="T",
          measured=("EFS", "sum_eta2_EFS"),
          description="gen. gap of w_priv: (L/kappa) E[F_S(w_priv)] + (4e(L+kappa)(1+T/n)L/n) sum eta^2 E[F_S(w_t)]")
def thm15a_gen(*, n, L, EFS, sum_eta2_EFS, T=None, eta=None, etas=None, kappa="opt"):
    """P4 Theorem 15(a) (= Lemma 13(a) with nu from Lemma 14(a)):

        E[F(w_priv) - F_S(w_priv)] <= (L/kappa) E[F_S(w_priv)]
                                      + (4 e (L + kappa)(1 + T/n) L / n) sum_{t=1}^T eta_t^2 E[F_S(w_t)].

    kappa="opt": with a = L E[F_S(w_priv)], b = (4e(1+T/n)L/n) sum eta_t^2 E[F_S(w_t)], the
    bound a/kappa + (L + kappa) b is minimal at kappa = sqrt(a/b): 2 sqrt(a b) + L b.
    """
    nu = lemma14a_onavg(n=n, L=L, sum_eta2_EFS=sum_eta2_EFS, T=T, eta=eta, etas=etas)
    return lemma13a_gen(L=L, EFS=EFS, nu=nu, kappa=kappa)


@register(key="P4.Thm15b.gen", paper=PAPER, ref="Theorem 15(b)", quantity="gen_gap", tag="EXPLICIT-DD",
          assumptions=("pointwise Alg. 1", "f >= 0 convex", "alpha-Hoelder gradient, alpha in [0,1)"), sweep="T",
          measured=("EFS_pow", "sum_eta2_EFS_pow"),
          description="gen. gap of w_priv, Hoelder: (M_{a,1}^2/(2kappa)) E[F_S^{2a/(1+a)}(w_priv)] + (kappa/2) nu_{Lemma 14(b)}")
def thm15b_gen(*, n, alpha, L, EFS_pow, sum_eta2_EFS_pow, T=None, eta=None, etas=None, kappa="opt", M=None):
    """P4 Theorem 15(b) (= Lemma 13(b) with nu from Lemma 14(b)):

        E[F(w_priv) - F_S(w_priv)] <= (M_{alpha,1}^2/(2 kappa)) E[F_S^{2alpha/(1+alpha)}(w_priv)]
            + (kappa/2) ( M_{alpha,3}^2 e sum_t eta_t^{2/(1-alpha)}
                          + (4 e M_{alpha,1}^2 (1 + T/n)/n) sum_t eta_t^2 E[F_S^{2alpha/(1+alpha)}(w_t)] ).

    kappa="opt": a'/kappa + kappa b' is minimal at sqrt(a'/b'), value 2 sqrt(a' b').
    """
    nu = lemma14b_onavg(n=n, alpha=alpha, L=L, sum_eta2_EFS_pow=sum_eta2_EFS_pow, T=T, eta=eta, etas=etas, M=M)
    return lemma13b_gen(alpha=alpha, L=L, EFS_pow=EFS_pow, nu=nu, kappa=kappa, M=M)


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
