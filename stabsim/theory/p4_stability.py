"""P4 (Wang, Lei, Ying, Zhou: DP-SGD with low noise): privacy noise and stability -> generalization.

Registers the noise conditions of Theorems 2 and 5 (``P4.Thm2.sigma2``, ``P4.Thm5.sigma2``), the
generalization lemmas 13 and 17, the on-average stability lemmas 14 and 19, Lemma 18's step
expansion and Theorem 15 (generalization gap of w_priv).  Conventions: the docstring of
``stabsim.theory.p4``, which re-exports every name of this module.
"""

from __future__ import annotations

import numpy as np

from stabsim.theory import _check
from stabsim.theory.p4_common import (_alpha, _kappa_form, _schedule, _smooth_steps, _VARIANT_READING, E, M_alpha_1,
                        M_alpha_3, Mbar_alpha_3, PAPER)
from stabsim.theory.registry import register


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
