"""P3 -- Huai, Wang, Miao, Xu, Zhang (AAAI 2020): pairwise learning with DP guarantees.

Algorithms: OnPairStrC (Alg. 1, online, alpha-strongly convex, noise on every release),
OnPairC (Alg. 2 = Alg. 1 on l + (alpha/2)||w - w_0||^2), OffPairStrC (Alg. 3, output
perturbation of the average iterate) and OffPairC (Alg. 4).  Notation as in the paper:
alpha is the **strong-convexity** modulus (not a Hoelder exponent), d the dimension,
``diam`` = ||C||_2 the diameter of the constraint set, t the step index, T1 the burn-in
length, zeta the failure probability.  All logs are natural.

Registered here:

* ``P3.Lemma4.sensitivity[.convex]``      EXPLICIT   8 G/(alpha t)   (G -> G + alpha diam)
* ``P3.rho.exact`` / ``P3.rho.approx``    CONDITION  solve rho + 2 sqrt(rho log(1/delta)) = eps
* ``P3.Alg1.sigma2_t.{exact,printed,approx}``  CONDITION  per-release noise of Alg. 1
* ``P3.Alg3.sigma2``                      CONDITION  output-perturbation noise of Alg. 3
* ``P3.Thm2/3.{regret,avg_regret}``, ``P3.Thm4.eq10/eq11``, ``P3.Thm5.eq12/eq13``  RATE

Plain helpers: ``T1`` (burn-in), ``eta_t`` (step size), ``convex_G`` / ``convex_L``.

RATE functions return the printed O(.) expression with every hidden constant set to 1
(times ``c``).  Where an expression contains the Rademacher average R_t(l o C) it is
replaced by its Remark-2 order sqrt(d/t) unless ``rademacher`` (a callable t -> R_t) is
given.  ``rate`` holds the exponents of the leading term, log factors ignored.
"""

from __future__ import annotations

import numpy as np

from stabsim.theory import _check
from stabsim.theory.registry import register

PAPER = "P3"
_ASSUME_STRC = ("G-Lipschitz", "L-smooth", "alpha-strongly convex", "bounded convex C")
_ASSUME_C = ("G-Lipschitz", "L-smooth", "convex", "bounded convex C", "alpha = O(1/sqrt(n))")


# --------------------------------------------------------------------------- helpers


def T1(*, L, alpha):
    """Burn-in length of Alg. 1/3: T_1 = max{ceil(16 L^2 / alpha^2), 7} (int array).

    errata P3-D/E6: with alpha = 1e-3 (the paper's lambda) T_1 >> n, so the GIGA loop of
    the paper's experiments never runs as printed; callers usually override T1.
    """
    L = _check.positive("L", L)
    alpha = _check.positive("alpha", alpha)
    return np.maximum(np.ceil(16 * L**2 / alpha**2), 7).astype(int)


def eta_t(*, t, alpha):
    """Step size of Alg. 1/3 (step 10): eta_t = ((t - 1)/(t - 2)) * 2/(alpha t), t >= 3."""
    t = _check.at_least("t", t, 3)
    alpha = _check.positive("alpha", alpha)
    return np.asarray((t - 1) / (t - 2) * 2 / (alpha * t), dtype=float)


def convex_G(*, G, alpha, diam):
    """Lipschitz constant of the regularised loss of Alg. 2/4: G~ = G + alpha ||C||_2."""
    return np.asarray(_check.positive("G", G) + _check.positive("alpha", alpha)
                      * _check.nonnegative("diam", diam), dtype=float)


def convex_L(*, L, alpha):
    """Smoothness constant of the regularised loss of Alg. 2/4: L~ = L + alpha."""
    return np.asarray(_check.positive("L", L) + _check.positive("alpha", alpha), dtype=float)


def _log_inv_delta(delta):
    return np.log(1.0 / _check.in_open_unit("delta", delta))


# --------------------------------------------------------------------------- Lemma 4


@register(key="P3.Lemma4.sensitivity", paper=PAPER, ref="Lemma 4", quantity="sensitivity",
          tag="EXPLICIT", assumptions=_ASSUME_STRC + ("Pairwise GIGA (Alg. 1 without noise)",),
          rate={"t": -1.0}, sweep="t",
          description="l2 sensitivity of the t-th Pairwise-GIGA iterate: 8 G / (alpha t)")
def lemma4_sensitivity(*, t, G, alpha):
    """P3 Lemma 4: for any t >= 1 and neighbouring D_t ~ D'_t (replacement),

        ||A_t(D_t) - A_t(D'_t)||_2 <= 8 G / (alpha t),

    A_t = the t-th iterate of the noise-free Pairwise GIGA.  Overlay: ||w_t - w'_t|| of
    coupled runs (same order, same burn-in points) against t.
    """
    t = _check.at_least("t", t, 1)
    G = _check.positive("G", G)
    alpha = _check.positive("alpha", alpha)
    return np.asarray(8 * G / (alpha * t), dtype=float)


@register(key="P3.Lemma4.sensitivity.convex", paper=PAPER, ref="Lemma 4 with Alg. 2/4", quantity="sensitivity",
          tag="EXPLICIT", assumptions=_ASSUME_C + ("regularised loss l + (alpha/2)||w - w_0||^2",),
          rate={"t": -1.0}, sweep="t",
          description="Lemma 4 for the regularised convex variants: 8 (G + alpha diam) / (alpha t)")
def lemma4_sensitivity_convex(*, t, G, alpha, diam):
    """P3 Lemma 4 applied to Alg. 2/4 (loss l + (alpha/2)||w - w_0||^2, G~ = G + alpha ||C||_2):

        ||A_t(D_t) - A_t(D'_t)||_2 <= 8 (G + alpha ||C||_2) / (alpha t).
    """
    return lemma4_sensitivity(t=t, G=convex_G(G=G, alpha=alpha, diam=diam), alpha=alpha)


# --------------------------------------------------------------------------- rho


@register(key="P3.rho.exact", paper=PAPER, ref="Alg. 1 step 3 (Lemma 3)", quantity="privacy_rho",
          tag="CONDITION", sweep="eps", variant="",
          reading="exact root of rho + 2 sqrt(rho log(1/delta)) = eps (use this one, P3-E2)",
          description="zCDP budget rho solving rho + 2 sqrt(rho log(1/delta)) = eps")
def rho_exact(*, eps, delta):
    """P3 Alg. 1 step 3: the rho with rho + 2 sqrt(rho log(1/delta)) = eps (Lemma 3,
    rho-zCDP => (rho + 2 sqrt(rho log(1/delta)), delta)-DP).  Completing the square
    (sqrt(rho) + sqrt(log(1/delta)))^2 = eps + log(1/delta) gives

        rho = (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))^2.
    """
    eps = _check.positive("eps", eps)
    lg = _log_inv_delta(delta)
    return np.asarray((np.sqrt(lg + eps) - np.sqrt(lg)) ** 2, dtype=float)


@register(key="P3.rho.approx", paper=PAPER, ref="discussion after Thm 1", quantity="privacy_rho",
          tag="CONDITION", sweep="eps", variant="",
          reading="paper's Taylor approximation eps^2/(4 log(1/delta)); valid only for eps << log(1/delta) (P3-E2)",
          description="approximate zCDP budget eps^2 / (4 log(1/delta)) (overestimates rho)")
def rho_approx(*, eps, delta):
    """P3, after Thm 1: for eps << log(1/delta), rho ~= eps^2 / (4 log(1/delta)).

    It overestimates the exact rho (so under-noises): at n = 40, delta = 1/n, eps = 2.5 the
    exact rho is 0.76 x this value (P3-E2).
    """
    eps = _check.positive("eps", eps)
    return np.asarray(eps**2 / (4 * _log_inv_delta(delta)), dtype=float)


# --------------------------------------------------------------------------- noise levels


def _sigma2_t_from_rho(rho, *, t, n, G, alpha, L=None, T1_=None):
    """32 G^2 (n - T_1) / (alpha^2 t^2 rho), validating t in (T_1, n]."""
    if (L is None) == (T1_ is None):
        raise ValueError(f"give exactly one of L={L!r} (T_1 = max(ceil(16L^2/alpha^2), 7)) "
                         f"or T1={T1_!r} (an explicit burn-in)")
    burn = T1(L=L, alpha=alpha) if T1_ is None else _check.at_least("T1", T1_, 1)
    n = _check.at_least("n", n, 1)
    t = _check.positive("t", t)
    if not np.all(n > burn):
        raise ValueError(f"n={n!r} is not allowed with T1={burn!r}: n must be > T1 "
                         "(otherwise Alg. 1 releases only random points)")
    if not np.all((t > burn) & (t <= n)):
        raise ValueError(f"t={t!r} is not allowed: noisy releases happen for T1 < t <= n (T1={burn!r}, n={n!r})")
    G = _check.positive("G", G)
    alpha = _check.positive("alpha", alpha)
    return np.asarray(32 * G**2 * (n - burn) / (alpha**2 * t**2 * rho), dtype=float)


_SIGMA_DOC_ARGS = """
    Give the burn-in either through ``L`` (T_1 = max{ceil(16 L^2/alpha^2), 7}) or directly as
    ``T1``; t must satisfy T_1 < t <= n.  For Alg. 2 pass G~ = G + alpha ||C||_2 (``convex_G``)."""


@register(key="P3.Alg1.sigma2_t.exact", paper=PAPER, ref="Alg. 1 step 12 / Thm 1", quantity="noise_sigma2",
          tag="CONDITION", assumptions=_ASSUME_STRC, sweep="t", variant="corrected",
          reading="Alg. 1 step 12 with the exact rho of step 3 (= the substituted form with the "
                  "parenthesis corrected, P3-E1)",
          description="per-release noise variance of Alg. 1: 32 G^2 (n - T1) / (alpha^2 t^2 rho), exact rho")
def alg1_sigma2_t_exact(*, t, n, G, alpha, eps, delta, L=None, T1=None):
    """P3 Alg. 1 step 12 with the exact rho:

        sigma_t^2 = 32 G^2 (n - T_1) / (alpha^2 t^2 rho),
        rho = (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))^2.

    Derivation: sensitivity 8G/(alpha t) (Lemma 4), each of the n - T_1 releases gets
    rho/(n - T_1) zCDP, Delta^2/(2 sigma^2) = rho/(n - T_1).
    """
    return _sigma2_t_from_rho(rho_exact(eps=eps, delta=delta), t=t, n=n, G=G, alpha=alpha, L=L, T1_=T1)


alg1_sigma2_t_exact.__doc__ += _SIGMA_DOC_ARGS


@register(key="P3.Alg1.sigma2_t.printed", paper=PAPER, ref="discussion after Thm 1", quantity="noise_sigma2",
          tag="CONDITION", assumptions=_ASSUME_STRC, sweep="t", variant="printed",
          reading="as printed: (sqrt(log(1/delta)) + eps - sqrt(log(1/delta)))^2 = eps^2 (garbled, P3-E1)",
          description="Alg. 1 noise variance with the garbled printed rho-substitution (= 32 G^2 (n-T1)/(alpha^2 t^2 eps^2))")
def alg1_sigma2_t_printed(*, t, n, G, alpha, eps, delta, L=None, T1=None):
    """P3, after Thm 1, as printed:

        sigma_t^2 = 32 G^2 (n - T_1) / (alpha^2 t^2 (sqrt(log(1/delta)) + eps - sqrt(log(1/delta)))^2),

    whose denominator parenthesis is literally eps^2 (P3-E1: the intended form is the exact
    rho).  ``delta`` is accepted (and checked) for a uniform signature but cancels.
    """
    _log_inv_delta(delta)
    eps = _check.positive("eps", eps)
    return _sigma2_t_from_rho(eps**2, t=t, n=n, G=G, alpha=alpha, L=L, T1_=T1)


alg1_sigma2_t_printed.__doc__ += _SIGMA_DOC_ARGS


@register(key="P3.Alg1.sigma2_t.approx", paper=PAPER, ref="discussion after Thm 1", quantity="noise_sigma2",
          tag="CONDITION", assumptions=_ASSUME_STRC + ("eps << log(1/delta)",), sweep="t", variant="",
          reading="paper's approximation with rho ~= eps^2/(4 log(1/delta)); under-noises by 4-24% in the paper's settings (P3-E2)",
          description="Alg. 1 noise variance, approximation 128 G^2 (n - T1) log(1/delta) / (alpha^2 t^2 eps^2)")
def alg1_sigma2_t_approx(*, t, n, G, alpha, eps, delta, L=None, T1=None):
    """P3, after Thm 1: sigma_t^2 ~= 128 G^2 (n - T_1) log(1/delta) / (alpha^2 t^2 eps^2)."""
    return _sigma2_t_from_rho(rho_approx(eps=eps, delta=delta), t=t, n=n, G=G, alpha=alpha, L=L, T1_=T1)


alg1_sigma2_t_approx.__doc__ += _SIGMA_DOC_ARGS


@register(key="P3.Alg3.sigma2", paper=PAPER, ref="Alg. 3 step 9 / Thm 5", quantity="noise_sigma2",
          tag="CONDITION", assumptions=_ASSUME_STRC + ("classical Gaussian mechanism: 0 < eps <= 1 (P3-E7)",),
          sweep="n",
          description="output-perturbation variance of Alg. 3: 128 G^2 log^2 n log(1.25/delta) / (alpha^2 n^2 eps^2)")
def alg3_sigma2(*, n, G, alpha, eps, delta):
    """P3 Alg. 3 step 9: w_bar = w_tilde + N(0, sigma^2 I_d) with

        sigma^2 = 128 G^2 log^2(n) log(1.25/delta) / (alpha^2 n^2 eps^2).

    (Gaussian mechanism, Def. 2, with sensitivity 8 G log(n)/(alpha n) of the average iterate.)
    For Alg. 4 pass G~ = G + alpha ||C||_2.
    """
    n = _check.at_least("n", n, 2)
    G = _check.positive("G", G)
    alpha = _check.positive("alpha", alpha)
    eps = _check.positive("eps", eps)
    delta = _check.in_open_unit("delta", delta)
    return np.asarray(128 * G**2 * np.log(n) ** 2 * np.log(1.25 / delta) / (alpha**2 * n**2 * eps**2),
                      dtype=float)


# --------------------------------------------------------------------------- rates


def _rate_common(n, d, eps, delta, zeta):
    """Validated arrays and the factor sqrt(d) log^{1.5}(n/zeta) sqrt(log(1/delta)) / eps."""
    n = _check.at_least("n", n, 2)
    d = _check.at_least("d", d, 1)
    eps = _check.positive("eps", eps)
    zeta = _check.in_open_unit("zeta", zeta)
    return n, d, np.sqrt(d) * np.log(n / zeta) ** 1.5 * np.sqrt(_log_inv_delta(delta)) / eps


def _rademacher_sum(n, d, rademacher, offset):
    """sum_{t=1}^{n - offset} R_t(l o C), R_t = rademacher(t) or sqrt(d/t) (Remark 2 order)."""
    def one(nn, dd):
        ts = np.arange(1, int(nn) - offset + 1, dtype=float)
        return float(np.sum(rademacher(ts) if rademacher else np.sqrt(dd / ts)))

    return np.vectorize(one, otypes=[float])(n, d)


def thm2_regret(*, n, d, G, L, alpha, diam, eps, delta, zeta, c=1.0):
    """P3 Theorem 2 (Alg. 1, eps/log(1/delta) << 1), with probability >= 1 - zeta:

        R_A(n, D) <= O( G^2 sqrt(d) log^{1.5}(n/zeta) sqrt(n) sqrt(log(1/delta)) / (alpha eps)
                        + (G L^2/alpha^2) ||C||_2 + G^2 log(n) / alpha ).

    Returns c times the bracket.  Slope +1/2 in n (average regret -1/2), -1 in eps.
    """
    n, d, f = _rate_common(n, d, eps, delta, zeta)
    G = _check.positive("G", G)
    L = _check.positive("L", L)
    alpha = _check.positive("alpha", alpha)
    diam = _check.nonnegative("diam", diam)
    return np.asarray(c * (G**2 * f * np.sqrt(n) / alpha + G * L**2 * diam / alpha**2
                           + G**2 * np.log(n) / alpha), dtype=float)


def thm3_regret(*, n, d, G, L, diam, eps, delta, zeta, c=1.0):
    """P3 Theorem 3 (Alg. 2, alpha = O(1/sqrt(n)), eps/log(1/delta) << 1), w.p. >= 1 - zeta:

        R_A(n, D) <= O( L^2 G^2 ||C||_2^2 sqrt(d) log^{1.5}(n/zeta) n^{3/4} sqrt(log(1/delta)) / eps ).

    Returns c times the bracket.  Slope +3/4 in n (average regret -1/4), -1 in eps.
    """
    n, d, f = _rate_common(n, d, eps, delta, zeta)
    G = _check.positive("G", G)
    L = _check.positive("L", L)
    diam = _check.positive("diam", diam)
    return np.asarray(c * L**2 * G**2 * diam**2 * f * n**0.75, dtype=float)


def _average(regret_fn):
    def avg(**kw):
        return np.asarray(regret_fn(**kw) / (np.asarray(kw["n"], dtype=float) - 1), dtype=float)

    avg.__doc__ = f"P3 average regret R_A(n, D)/(n - 1) for:\n\n    {regret_fn.__doc__}"
    return avg


for _ref, _fn, _assume, _slope in (("Thm2", thm2_regret, _ASSUME_STRC, 0.5), ("Thm3", thm3_regret, _ASSUME_C, 0.75)):
    _common = dict(paper=PAPER, ref=f"Theorem {_ref[-1]}", quantity="regret", tag="RATE", sweep="n",
                   assumptions=_assume + ("eps/log(1/delta) << 1", "probability >= 1 - zeta"))
    register(key=f"P3.{_ref}.regret", rate={"n": _slope, "eps": -1.0},
             description=f"regret of Alg. {_ref[-1]} (O(.) form, constants 1): slope +{_slope} in n",
             **_common)(_fn)
    register(key=f"P3.{_ref}.avg_regret", rate={"n": _slope - 1, "eps": -1.0},
             description=f"average regret R/(n-1) of Alg. {_ref[-1]}: slope {_slope - 1} in n",
             **_common)(_average(_fn))


@register(key="P3.Thm4.eq10", paper=PAPER, ref="Theorem 4, Eq. (10)", quantity="excess_risk", tag="RATE",
          assumptions=_ASSUME_C + ("eps/log(1/delta) << 1", "w_bar = mean of w_1..w_{n-1}"),
          rate={"n": -0.25, "eps": -1.0}, sweep="n",
          description="Err_P(w_bar) of Alg. 2: Rademacher average + privacy term ~ n^{-1/4}/eps")
def thm4_eq10(*, n, d, G, L, diam, eps, delta, zeta, c=1.0, rademacher=None):
    """P3 Theorem 4, Eq. (10) (Alg. 2, w.p. >= 1 - 2 zeta):

        Err_P(w_bar) <= O( sum_{t=2}^n R_{t-1}(l o C)/(n-1)
                           + L^2 G^2 ||C||_2^2 sqrt(d) log^{1.5}(n/zeta) sqrt(log(1/delta)) / (eps n^{1/4}) ).

    R_t defaults to sqrt(d/t) (Remark 2).  Slope -1/4 in n (privacy term), -1 in eps.
    """
    n, d, f = _rate_common(n, d, eps, delta, zeta)
    G = _check.positive("G", G)
    L = _check.positive("L", L)
    diam = _check.positive("diam", diam)
    rad = _rademacher_sum(n, d, rademacher, 1) / (n - 1)
    return np.asarray(c * (rad + L**2 * G**2 * diam**2 * f / n**0.25), dtype=float)


@register(key="P3.Thm4.eq11", paper=PAPER, ref="Theorem 4, Eq. (11)", quantity="excess_risk", tag="RATE",
          assumptions=_ASSUME_STRC + ("eps/log(1/delta) << 1", "w_bar = mean of w_1..w_{n-1}"),
          rate={"n": -0.5, "eps": -1.0}, sweep="n",
          description="Err_P(w_bar) of Alg. 1: Rademacher average + privacy term ~ n^{-1/2}/(alpha^2 eps)")
def thm4_eq11(*, n, d, G, L, alpha, diam, eps, delta, zeta, c=1.0, rademacher=None):
    """P3 Theorem 4, Eq. (11) (Alg. 1, alpha-strongly convex, w.p. >= 1 - 2 zeta):

        Err_P(w_bar) <= O( (1/(n-1)) sum_{t=2}^n R_{t-1}(l o C)
                           + G^2 L^2 ||C||_2^2 sqrt(d) log^{1.5}(n/zeta) sqrt(log(1/delta)) / (alpha^2 eps sqrt(n)) ).

    R_t defaults to sqrt(d/t) (Remark 2).  Slope -1/2 in n, -1 in eps.
    """
    n, d, f = _rate_common(n, d, eps, delta, zeta)
    G = _check.positive("G", G)
    L = _check.positive("L", L)
    alpha = _check.positive("alpha", alpha)
    diam = _check.positive("diam", diam)
    rad = _rademacher_sum(n, d, rademacher, 1) / (n - 1)
    return np.asarray(c * (rad + G**2 * L**2 * diam**2 * f / (alpha**2 * np.sqrt(n))), dtype=float)


def _thm5_common(n, d, G, diam, eps, delta, zeta, rademacher):
    n = _check.at_least("n", n, 2)
    d = _check.at_least("d", d, 1)
    G = _check.positive("G", G)
    diam = _check.positive("diam", diam)
    eps = _check.positive("eps", eps)
    zeta = _check.in_open_unit("zeta", zeta)
    priv = np.sqrt(d) * G**2 * np.log(n / zeta) * np.sqrt(_log_inv_delta(delta)) / eps
    return n, diam, priv, _rademacher_sum(n, d, rademacher, 0) / n


@register(key="P3.Thm5.eq12", paper=PAPER, ref="Theorem 5, Eq. (12)", quantity="excess_risk", tag="RATE",
          assumptions=_ASSUME_STRC + ("0 < eps, delta <= 1", "eps/log(1/delta) << 1", "Alg. 3 output"),
          rate={"n": -0.5, "eps": -1.0}, sweep="n",
          description="Err_P of Alg. 3: privacy term ~ 1/(alpha n eps) + Rademacher average ~ n^{-1/2}")
def thm5_eq12(*, n, d, G, alpha, diam, eps, delta, zeta, c=1.0, rademacher=None):
    """P3 Theorem 5, Eq. (12) (Alg. 3, w.p. >= 1 - 2 zeta):

        Err_P(w_hat) <= O( sqrt(d) G^2 ||C||_2 log(n/zeta) sqrt(log(1/delta)) / (alpha n eps)
                           + (1/n) sum_{t=1}^n R_t(l o C) ).

    R_t defaults to sqrt(d/t) (Remark 2), which dominates: slope -1/2 in n; the privacy term
    has slope -1 in n and -1 in eps.
    """
    n, diam, priv, rad = _thm5_common(n, d, G, diam, eps, delta, zeta, rademacher)
    alpha = _check.positive("alpha", alpha)
    return np.asarray(c * (priv * diam / (alpha * n) + rad), dtype=float)


@register(key="P3.Thm5.eq13", paper=PAPER, ref="Theorem 5, Eq. (13)", quantity="excess_risk", tag="RATE",
          assumptions=_ASSUME_C + ("0 < eps, delta <= 1", "eps/log(1/delta) << 1", "Alg. 4 output"),
          rate={"n": -0.5, "eps": -1.0}, sweep="n",
          description="Err_P of Alg. 4: privacy term ~ log(n)/(sqrt(n) eps) + Rademacher average")
def thm5_eq13(*, n, d, G, diam, eps, delta, zeta, c=1.0, rademacher=None):
    """P3 Theorem 5, Eq. (13) (Alg. 4, alpha = O(1/sqrt(n)), w.p. >= 1 - 2 zeta):

        Err_P(w_hat) <= O( sqrt(d) G^2 ||C||_2^2 log(n/zeta) sqrt(log(1/delta)) log(n) / (sqrt(n) eps)
                           + (1/n) sum_{t=1}^n R_t(l o C) ).

    R_t defaults to sqrt(d/t) (Remark 2).  Slope -1/2 in n, -1 in eps.
    """
    n, diam, priv, rad = _thm5_common(n, d, G, diam, eps, delta, zeta, rademacher)
    return np.asarray(c * (priv * diam**2 * np.log(n) / np.sqrt(n) + rad), dtype=float)
