"""P1 -- Yang, Lei, Wang, Yang, Ying (NeurIPS 2021): simple stochastic and online gradient
descent for pairwise learning (Alg. 1 pairs z_{i_t} with the previous draw z_{i_{t-1}}).
Errata: docs/errata.md (ids P1-E1 ... P1-E9).

Assumptions named as in the paper: (A1) f G-Lipschitz, (A2) f L-smooth, (A3) f alpha-strongly
convex (alpha = 0: convex), (A4) F_S satisfies PL with mu.  alpha_0^2 bounds the gradient second
moment (Thm 3, 8, 9; ``alpha0`` is alpha_0, not the strong-convexity alpha); B bounds the loss.

Conventions of this module
--------------------------
* **Step sizes.**  A bound that sums step sizes takes EITHER a constant step ``eta`` together
  with the number of iterations ``t`` (both may be arrays and broadcast: sweep ``t`` to get the
  curve over time), OR an explicit array ``etas`` = (eta_1, ..., eta_t) whose LAST axis is j
  (the bound is for t = etas.shape[-1]; pass ``etas[:t]`` for an earlier t).  Giving both, or
  neither, raises ValueError.  eta_0 does not exist in the paper (P1-E3); the bounds that use it
  (Thm 6(a), 7(a)) are registered twice: eta_0 = 0 ("eta0_zero") and eta_0 = eta_1 ("eta0_eta1").
* The output is w_bar_t = sum_j eta_j w_{j-2} / sum_j eta_j with w_{-1} = w_0.
* All logs are natural (the paper's log); ``eps`` is the privacy budget and ``eps_stab`` a
  stability parameter.
* RATE entries return the O(.) expression with constant 1.  Thm 1-3 build in the theorem's
  schedule (T, eta as functions of n) unless ``T``/``eta`` are passed.  The n-exponent of Thm 3
  depends on L and mu: its ``rate`` values are CALLABLES ``f(L=..., mu=...) -> float`` (see
  ``thm3_exponents``), not floats.
* Every function broadcasts over numpy arrays and returns a float array.
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.theory._check import at_least, named, nonnegative, positive, returns_float_array
from stabsim.theory.registry import register

_E = math.e
_A1_A3_CONVEX = ("(A1) G-Lipschitz", "(A3) with alpha = 0 (convex)")
_COUPLED = "S, S' differ in one example; both runs share i_0, i_1, ... (coupled)"


def _p1(**kw):
    """``register`` with paper="P1" and float-array output."""
    deco = register(paper="P1", **kw)
    return lambda func: deco(returns_float_array(func))


def _step_sums(eta=None, t=None, etas=None, eta0="zero"):
    """(sum_j eta_j, sum_j eta_j^2, sum_j eta_{j-1} eta_j) over j = 1..t (module conventions).

    ``eta0`` is "zero" (eta_0 = 0) or "eta1" (eta_0 = eta_1); it only affects the last sum.
    """
    if etas is not None:
        if eta is not None or t is not None:
            raise ValueError("give either etas=(eta_1..eta_t) or eta and t, not both")
        e = positive("etas", etas)
        if e.ndim == 0 or e.shape[-1] == 0:
            raise ValueError(f"etas={etas!r} is not allowed: etas must be a non-empty array (eta_1, ..., eta_t)")
        first = e[..., :1] if eta0 == "eta1" else np.zeros_like(e[..., :1])
        prev = np.concatenate([first, e[..., :-1]], axis=-1)
        return e.sum(-1), (e ** 2).sum(-1), (prev * e).sum(-1)
    if eta is None or t is None:
        raise ValueError("give a constant step eta together with t, or an array etas=(eta_1..eta_t)")
    eta, t = named(eta=eta, t=t)
    cross = (t - 1) * eta ** 2 + (eta ** 2 if eta0 == "eta1" else 0.0)
    return t * eta, t * eta ** 2, cross


# ---------------------------------------------------------------------------------------------
# Lemma 1, Theorems 4 and 5: stability and generalization
# ---------------------------------------------------------------------------------------------

@_p1(key="P1.Lem1.gen", ref="Lemma 1", quantity="gen_gap", tag="EXPLICIT", sweep="n",
     assumptions=("A is eps_stab-uniformly stable (G x UAS for G-Lipschitz f)",))
def lem1_gen(*, eps_stab):
    """P1 Lemma 1: an eps-uniformly stable A has |E_{S,A}[F_S(A(S)) - F(A(S))]| <= 2 eps (eps = eps_stab)."""
    return 2 * nonnegative("eps_stab", eps_stab)


def _nonsmooth_uas(t, n, eta, G):
    """2 sqrt(e) G eta (sqrt(5t) + 2t/n)   (Thm 4)."""
    t, n, eta, G = named(t=t, n=n, eta=eta, G=G)
    return 2 * math.sqrt(_E) * G * eta * (np.sqrt(5 * t) + 2 * t / n)


_THM4 = dict(ref="Theorem 4", tag="EXPLICIT", sweep="t", assumptions=_A1_A3_CONVEX + ("eta_j = eta", _COUPLED))


@_p1(key="P1.Thm4.uas", quantity="uas_mean", **_THM4)
def thm4_uas(*, t, n, eta, G):
    """P1 Thm 4: Alg. 1 after t steps is eps-UAS (in expectation) with eps = 2 sqrt(e) G eta (sqrt(5t) + 2t/n)."""
    return _nonsmooth_uas(t, n, eta, G)


@_p1(key="P1.Thm4.gen", quantity="gen_gap", **_THM4)
def thm4_gen(*, t, n, eta, G):
    """P1 Thm 4: E_{S,A}[F(w_bar_t) - F_S(w_bar_t)] <= 4 sqrt(e) G^2 eta (sqrt(5t) + 2t/n).

    (= Lemma 1 applied to G times the UAS.)
    """
    return 2 * np.asarray(G, dtype=float) * _nonsmooth_uas(t, n, eta, G)


def _smooth_uas(n, G, eta, t, etas):
    """(4G/n) sum_{j=1}^t eta_j   (Thm 5)."""
    n, G = named(n=n, G=G)
    s1, _, _ = _step_sums(eta=eta, t=t, etas=etas)
    return 4 * G / n * s1


_THM5 = dict(ref="Theorem 5", tag="EXPLICIT", sweep="t",
             assumptions=("(A1) G-Lipschitz", "(A2) L-smooth", "(A3) with alpha = 0 (convex)", "eta_j <= 2/L",
                          _COUPLED))


@_p1(key="P1.Thm5.uas", quantity="uas_mean", **_THM5)
def thm5_uas(*, n, G, eta=None, t=None, etas=None):
    """P1 Thm 5: Alg. 1 is eps-UAS with eps = (4G/n) sum_{j=1}^t eta_j  (= 4 G eta t / n for constant eta)."""
    return _smooth_uas(n, G, eta, t, etas)


@_p1(key="P1.Thm5.gen", quantity="gen_gap", **_THM5)
def thm5_gen(*, n, G, eta=None, t=None, etas=None):
    """P1 Thm 5: E_{S,A}[F(w_bar_t) - F_S(w_bar_t)] <= (8 G^2/n) sum_{j=1}^t eta_j."""
    return 2 * np.asarray(G, dtype=float) * _smooth_uas(n, G, eta, t, etas)


# ---------------------------------------------------------------------------------------------
# Theorems 6 and 7: optimization error (convex)
# ---------------------------------------------------------------------------------------------

def _thm6a(dist_sq, G, eta, t, etas, eta0):
    dist_sq, G = nonnegative("dist_sq", dist_sq), named(G=G)
    s1, s2, cross = _step_sums(eta=eta, t=t, etas=etas, eta0=eta0)
    return (dist_sq + G ** 2 * (2 * cross + s2)) / (2 * s1), s1, s2


_THM6A = dict(ref="Theorem 6(a), Eq. (5)", quantity="opt_error", tag="EXPLICIT", sweep="t",
              assumptions=_A1_A3_CONVEX + ("w independent of A (use w = w_S)", "dist_sq = ||w_0 - w||^2",
                                           "also for Alg. 2 with F in place of F_S"))


@_p1(key="P1.Thm6a.eta0_zero", variant="corrected",
     reading="eta_0 = 0: natural reading of the undefined eta_0 (errata P1-E3; w_{-1} = w_0 makes the "
             "j = 1 coupling term vanish)", **_THM6A)
def thm6a_eta0_zero(*, dist_sq, G, eta=None, t=None, etas=None):
    """P1 Thm 6(a), Eq. (5) with eta_0 = 0: expected optimization error of Alg. 1, convex f.

    E_A[F_S(w_bar_t)] - F_S(w) <= (||w_0 - w||^2 + G^2 sum_{j=1}^t (2 eta_j eta_{j-1} + eta_j^2)) / (2 sum_j eta_j).
    """
    return _thm6a(dist_sq, G, eta, t, etas, "zero")[0]


@_p1(key="P1.Thm6a.eta0_eta1", variant="corrected",
     reading="eta_0 = eta_1: conservative reading of the undefined eta_0 (errata P1-E3); constant eta gives "
             "||w_0 - w||^2/(2 t eta) + 3 G^2 eta/2", **_THM6A)
def thm6a_eta0_eta1(*, dist_sq, G, eta=None, t=None, etas=None):
    """P1 Thm 6(a), Eq. (5) with eta_0 = eta_1 (same formula as ``thm6a_eta0_zero`` otherwise)."""
    return _thm6a(dist_sq, G, eta, t, etas, "eta1")[0]


def _thm7a(dist_sq, G, B, delta, eta, t, etas, eta0):
    B, delta = named(B=B, delta=delta)
    # Thm 7(a) = Thm 6(a) + 2B sqrt(2 sum eta_j^2 log(2/delta)) / sum eta_j  (rearranged exactly).
    opt, s1, s2 = _thm6a(dist_sq, G, eta, t, etas, eta0)
    return opt + 2 * B * np.sqrt(2 * s2 * np.log(2 / delta)) / s1


_THM7A = dict(ref="Theorem 7(a)", quantity="opt_error_quantile", tag="EXPLICIT", sweep="t",
              assumptions=_A1_A3_CONVEX + ("sup_w f(w; z, z') <= B", "prob. >= 1-delta over A",
                                           "dist_sq = ||w_1 - w||^2 as printed; pass ||w_0 - w||^2 per P1-E4"))


@_p1(key="P1.Thm7a.eta0_zero", variant="corrected",
     reading="eta_0 = 0 (errata P1-E3); the distance argument is ||w_1 - w||^2 as printed or ||w_0 - w||^2 "
             "per P1-E4 (caller's choice)", **_THM7A)
def thm7a_eta0_zero(*, dist_sq, G, B, delta, eta=None, t=None, etas=None):
    """P1 Thm 7(a) with eta_0 = 0: high-probability optimization error of Alg. 1, convex f.

    W.p. >= 1-delta, F_S(w_bar_t) - F_S(w) <= (1/sum_j eta_j)
    (2B (2 sum_j eta_j^2 log(2/delta))^{1/2} + ||w_1 - w||^2/2 + G^2 sum_j (eta_{j-1} eta_j + eta_j^2/2)).
    """
    return _thm7a(dist_sq, G, B, delta, eta, t, etas, "zero")


@_p1(key="P1.Thm7a.eta0_eta1", variant="corrected",
     reading="eta_0 = eta_1, conservative (errata P1-E3); distance argument as in P1.Thm7a.eta0_zero",
     **_THM7A)
def thm7a_eta0_eta1(*, dist_sq, G, B, delta, eta=None, t=None, etas=None):
    """P1 Thm 7(a) with eta_0 = eta_1 (same formula as ``thm7a_eta0_zero`` otherwise)."""
    return _thm7a(dist_sq, G, B, delta, eta, t, etas, "eta1")


def _alpha(alpha):
    return positive("alpha", alpha)


@_p1(key="P1.Thm6b.rate", ref="Theorem 6(b)", quantity="opt_error", tag="RATE", sweep="t",
     rate={"t": -1.0, "alpha": -1.0}, schedule="eta_j = 2/(alpha (j+1))",
     assumptions=("(A1) G-Lipschitz", "(A3) alpha > 0"))
def thm6b_rate(*, t, G, alpha):
    """P1 Thm 6(b): E_A[F_S(w_bar_t)] - F_S(w) = O(G^2/(alpha t)) with eta_j = 2/(alpha(j+1))."""
    t, G = named(t=t, G=G)
    return G ** 2 / (_alpha(alpha) * t)


@_p1(key="P1.Thm7b.rate", ref="Theorem 7(b)", quantity="opt_error_quantile", tag="RATE", sweep="t",
     rate={"t": -1.0, "alpha": -1.0}, schedule="eta_j = 2/(alpha (j+1)), w_bar_t = sum_j j w_{j-2} / sum_j j",
     assumptions=("(A1) G-Lipschitz", "(A3) alpha > 0", "sup f <= B", "prob. >= 1-delta"))
def thm7b_rate(*, t, G, alpha, delta):
    """P1 Thm 7(b): w.p. >= 1-delta, F_S(w_bar_t) - F_S(w) = O(G^2 log(1/delta)/(alpha t))."""
    t, G, delta = named(t=t, G=G, delta=delta)
    return G ** 2 * np.log(1 / delta) / (_alpha(alpha) * t)


# ---------------------------------------------------------------------------------------------
# Theorems 8 and 9: non-convex (EXPLICIT-DD)
# ---------------------------------------------------------------------------------------------

@_p1(key="P1.Thm8.grad", ref="Theorem 8", quantity="grad_norm_sq", tag="EXPLICIT-DD", sweep="t",
     measured=("FS_w0", "alpha0"),
     assumptions=("(A2) L-smooth", "eta_j = eta <= 1/(2 sqrt(L)) as printed (likely 1/(2L), P1-E5)",
                  "E||grad f(w_j; z_{i_{j+1}}, z_{i_{j+2}})||^2 <= alpha0^2"))
def thm8_grad(*, t, eta, L, FS_w0, alpha0):
    """P1 Thm 8: (1/t) sum_{j=1}^t E_A||grad F_S(w_{j-2})||^2 <= F_S(w_0)/(t eta) + 8 L eta alpha_0^2."""
    t, eta, L = named(t=t, eta=eta, L=L)
    return nonnegative("FS_w0", FS_w0) / (t * eta) + 8 * L * eta * np.asarray(alpha0, dtype=float) ** 2


@_p1(key="P1.Thm9.pl", ref="Theorem 9", quantity="pl_gap", tag="EXPLICIT-DD", sweep="t", rate={"t": -1.0},
     measured=("alpha0",), schedule="eta_j = 2/(mu (j+1)), last iterate w_t",
     assumptions=("(A2) L-smooth", "(A4) PL with mu", "E||grad f(w_j; z_{i_{j+1}}, z_{i_{j+2}})||^2 <= alpha0^2"))
def thm9_pl(*, t, L, mu, alpha0):
    """P1 Thm 9: E_A[F_S(w_t) - F_S(w_S)] <= (32 L alpha_0^2 / mu^2) (1/(t+1) + log(et)/(mu t (t+1)))."""
    t, L, mu = named(t=t, L=L, mu=mu)
    return 32 * L * np.asarray(alpha0, dtype=float) ** 2 / mu ** 2 * (1 / (t + 1) + np.log(_E * t) / (mu * t * (t + 1)))


# ---------------------------------------------------------------------------------------------
# Theorems 1-3: excess risk rates
# ---------------------------------------------------------------------------------------------

def _schedule(n, T, eta, T_of_n, eta_of_T):
    n = named(n=n)
    T = T_of_n(n) if T is None else named(T=T)
    eta = eta_of_T(T) if eta is None else named(eta=eta)
    return n, T, eta


@_p1(key="P1.Thm1.rate", ref="Theorem 1, Eq. (3)", quantity="excess_risk", tag="RATE", sweep="n",
     rate={"n": -0.5}, schedule="T = n^2, eta = T^{-3/4} (defaults when T, eta are not given)",
     assumptions=_A1_A3_CONVEX + ("eta_t = eta",))
def thm1_rate(*, n, T=None, eta=None):
    """P1 Thm 1: E[F(w_bar_T)] - F(w*) = O(sqrt(T) eta + T eta/n + (1 + T eta^2)/(T eta)).

    With T = n^2, eta = T^{-3/4}: O(1/sqrt(n)).
    """
    n, T, eta = _schedule(n, T, eta, lambda n: n ** 2, lambda T: T ** -0.75)
    return np.sqrt(T) * eta + T * eta / n + (1 + T * eta ** 2) / (T * eta)


@_p1(key="P1.Thm2.rate", ref="Theorem 2, Eq. (4)", quantity="excess_risk", tag="RATE", sweep="n",
     rate={"n": -0.5}, schedule="T = n, eta = T^{-1/2} (defaults when T, eta are not given)",
     assumptions=("(A1) G-Lipschitz", "(A2) L-smooth", "(A3) with alpha = 0 (convex)", "eta <= 2/L"))
def thm2_rate(*, n, T=None, eta=None):
    """P1 Thm 2: E[F(w_bar_T)] - F(w*) = O(T eta/n + (1 + T eta^2)/(T eta)); with T = n, eta = T^{-1/2}: O(1/sqrt(n))."""
    n, T, eta = _schedule(n, T, eta, lambda n: n, lambda T: T ** -0.5)
    return T * eta / n + (1 + T * eta ** 2) / (T * eta)


def thm3_exponents(*, L, mu):
    """Exponents of P1 Thm 3's tuned rate n^{-(2L+mu)/(4L+mu)} mu^{-4L/(4L+mu)}: {"n": ..., "mu": ...}."""
    L, mu = named(L=L, mu=mu)
    return {"n": -(2 * L + mu) / (4 * L + mu), "mu": -4 * L / (4 * L + mu)}


@_p1(key="P1.Thm3.rate", ref="Theorem 3", quantity="excess_risk", tag="RATE", sweep="n",
     rate={"n": lambda *, L, mu: float(thm3_exponents(L=L, mu=mu)["n"]),
           "mu": lambda *, L, mu: float(thm3_exponents(L=L, mu=mu)["mu"])},
     schedule="eta_j = 2/(mu(j+1)); T = n^{(2L+mu)/(4L+mu)} mu^{-(4L+2mu)/(4L+mu)} (default when T is not given)",
     reading="as printed (the final rate is printed without O(.), P1-E6); the n-exponent lies in [-3/5, -1/2) "
             "and the rate values are callables f(L=..., mu=...)",
     assumptions=("(A1) G-Lipschitz", "(A2) L-smooth", "(A4) PL with mu", "gradient moment <= alpha0^2",
                  "sup f(w_j; z, z') <= B"))
def thm3_rate(*, n, L, mu, T=None):
    """P1 Thm 3: E[F(w_T)] - F(w*) = O(T^{2L/(2L+mu)}/n) + O(1/(T mu^2)).

    With the tuned T this is n^{-(2L+mu)/(4L+mu)} mu^{-4L/(4L+mu)}.
    """
    n, L, mu = named(n=n, L=L, mu=mu)
    if T is None:
        T = n ** ((2 * L + mu) / (4 * L + mu)) * mu ** (-(4 * L + 2 * mu) / (4 * L + mu))
    T = positive("T", T)
    return T ** (2 * L / (2 * L + mu)) / n + 1 / (T * mu ** 2)


@_p1(key="P1.Rem7.buffer_rate", ref="Remark 7", quantity="opt_error", tag="RATE", sweep="t",
     rate={"t": -0.5, "s": 0.5}, schedule="buffer of the s previous draws, eta ~ 1/sqrt(t)",
     assumptions=_A1_A3_CONVEX)
def rem7_buffer_rate(*, t, s):
    """P1 Remark 7: the buffer-s update has optimization error O(sqrt(s)/sqrt(t))."""
    t, s = named(t=t), at_least("s", s, 1)
    return np.sqrt(s / t)


# ---------------------------------------------------------------------------------------------
# Theorem 10 (Alg. 3, DP localized SGD) and the comparison rates of Remarks 8/9
# ---------------------------------------------------------------------------------------------

_DP_RATE = dict(quantity="excess_risk", tag="RATE", sweep="n")
_DP_NOTE = ("exponents are the asymptotic slopes: 1/sqrt(n) dominates as n -> infinity, the private term "
            "as eps -> 0 or d -> infinity (slope -1 in n only in the pre-asymptotic private regime)")


def _rate_optimal(n, d, eps, delta, log_power):
    """1/sqrt(n) + sqrt(d) log^{log_power}(1/delta) / (eps n)."""
    n, d, eps, delta = named(n=n, d=d, eps=eps, delta=delta)
    return 1 / np.sqrt(n) + np.sqrt(d) * np.log(1 / delta) ** log_power / (eps * n)


def _rate_output_perturbation(n, d, eps, delta):
    """sqrt(d log(1/delta)) log(n/delta) / (sqrt(n) eps)."""
    n, d, eps, delta = named(n=n, d=d, eps=eps, delta=delta)
    return np.sqrt(d * np.log(1 / delta)) * np.log(n / delta) / (np.sqrt(n) * eps)


@_p1(key="P1.Thm10.rate", ref="Theorem 10", rate={"n": -0.5, "eps": -1.0, "d": 0.5}, note=_DP_NOTE,
     assumptions=("(A1) G-Lipschitz", "(A2) L-smooth", "(A3) with alpha = 0 (printed 'sigma = 0', P1-E1)",
                  "Alg. 3 with the Thm 10 step size <= 2/L", "W of diameter D"), **_DP_RATE)
def thm10_rate(*, n, d, eps, delta, G, D):
    """P1 Thm 10: Alg. 3 is (eps, delta)-DP and E[F(w_K) - F(w*)] = O(G D (1/sqrt(n) + sqrt(d) log^{3/2}(1/delta)/(eps n)))."""
    G, D = named(G=G, D=D)
    return G * D * _rate_optimal(n, d, eps, delta, 1.5)


def _alg3_eta(n, d, G, D, eps, delta, first):
    n, d, D, eps, delta = named(n=n, d=d, D=D, eps=eps, delta=delta)
    G = positive("G", G)
    lg = np.log(4 / delta)
    private = eps / (12 * lg * np.sqrt(2 * d * np.log(2.5 / delta)))
    return D / G * np.minimum(first(n, lg), private)


_ALG3 = dict(ref="Theorem 10 (step size of Alg. 3)", quantity="step_size", tag="CONDITION", sweep="n",
             assumptions=("the result needs eta <= 2/L", "the Alg. 3 schedule itself is in the privacy module"))


@_p1(key="P1.Thm10.eta.printed", variant="printed",
     reading="as printed: first argument log(4/delta)/sqrt(n)", **_ALG3)
def thm10_eta_printed(*, n, d, G, D, eps, delta):
    """P1 Thm 10 base step eta of Alg. 3, as printed.

    eta = (D/G) min{log(4/delta)/sqrt(n), eps/(12 log(4/delta) sqrt(2 d log(2.5/delta)))}.
    """
    return _alg3_eta(n, d, G, D, eps, delta, lambda n, lg: lg / np.sqrt(n))


@_p1(key="P1.Thm10.eta.corrected", variant="corrected",
     reading="corrected per errata P1-E7: first argument 1/(sqrt(n) log(4/delta)), which balances the "
             "phase-1 generalization (~2 G^2 eta log(4/delta)) and optimization (~4 D^2/(eta n log(4/delta))) "
             "terms at G D/sqrt(n)", **_ALG3)
def thm10_eta_corrected(*, n, d, G, D, eps, delta):
    """P1 Thm 10 base step eta of Alg. 3, self-consistent first argument (P1-E7).

    eta = (D/G) min{1/(sqrt(n) log(4/delta)), eps/(12 log(4/delta) sqrt(2 d log(2.5/delta)))}.
    """
    return _alg3_eta(n, d, G, D, eps, delta, lambda n, lg: 1 / (np.sqrt(n) * lg))


_CMP = dict(rate={"n": -0.5, "eps": -1.0, "d": 0.5}, **_DP_RATE)  # asymptotic slopes, see _DP_NOTE


@_p1(key="P1.Rem8.huai", ref="Remark 8 (Huai et al. [21])", reading="as quoted in Remark 8",
     assumptions=("Huai et al.: convex, G-Lipschitz and smooth loss", "output/gradient perturbation"), **_CMP)
def rem8_huai(*, n, d, eps, delta):
    """P1 Remark 8, Huai et al. [21]: O(sqrt(d log(1/delta)) log(n/delta) / (sqrt(n) eps))."""
    return _rate_output_perturbation(n, d, eps, delta)


@_p1(key="P1.Rem8.xue", ref="Remark 8 (Xue et al. [42])", reading="as quoted in Remark 8", note=_DP_NOTE,
     assumptions=("Xue et al.: convex, G-Lipschitz and smooth loss", "localization"),
     gradient_complexity="O(n^3 log(1/delta))", **_CMP)
def rem8_xue(*, n, d, eps, delta):
    """P1 Remark 8, Xue et al. [42]: O(1/sqrt(n) + sqrt(d log(1/delta))/(eps n)) at gradient cost O(n^3 log(1/delta))."""
    return _rate_optimal(n, d, eps, delta, 0.5)


@_p1(key="P1.Rem9.alg5", ref="Remark 9 (Alg. 5, App. F)", reading="as stated in Remark 9", note=_DP_NOTE,
     assumptions=("(A1) G-Lipschitz", "(A3) with alpha = 0 (convex), non-smooth", "Alg. 5 (not in the extraction)"),
     gradient_complexity="O(n^2 log(1/delta))", **_CMP)
def rem9_alg5(*, n, d, eps, delta):
    """P1 Remark 9, Alg. 5 (non-smooth, App. F): O(1/sqrt(n) + sqrt(d log(1/delta))/(eps n)) at cost O(n^2 log(1/delta))."""
    return _rate_optimal(n, d, eps, delta, 0.5)


@_p1(key="P1.Rem9.p0", ref="Remark 9 (P0 = Yang et al. [43])", reading="as quoted in Remark 9",
     assumptions=("P0: convex, G-Lipschitz, non-smooth loss", "output perturbation (P0 Alg. 2)"), **_CMP)
def rem9_p0(*, n, d, eps, delta):
    """P1 Remark 9, the non-smooth output-perturbation bound of P0 [43]: O(sqrt(d log(1/delta)) log(n/delta)/(sqrt(n) eps))."""
    return _rate_output_perturbation(n, d, eps, delta)
