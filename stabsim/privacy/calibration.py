"""Noise calibrations prescribed by the five papers (the ``CONDITION`` entries of the theory registry).

Every function cites the paper and equation it implements; where the printed formula has
a typo, the reading is selectable and the errata entry (e.g. "P0-E2" of docs/errata.md) is named.  All
logs are natural except ``log2`` in P1's K = ceil(log2 n).  Arguments are scalars; invalid
ones raise ``ValueError`` naming the argument, its value and the allowed range.  When a
paper's calibration cannot be applied (P3 burn-in, P4 beta search, P1 eta <= 2/L) the
functions raise :class:`~stabsim.privacy.errors.InfeasiblePrivacyParameters` instead of
silently returning a meaningless value.

Paper keys: P0 Yang-Lei-Lyu-Ying (AISTATS 2021), P1 Yang-Lei-Wang-Yang-Ying (NeurIPS 2021),
P2 Kang-Liu-Li-Wang, P3 Huai-Wang-Miao-Xu-Zhang (AAAI 2020), P4 Wang-Lei-Ying-Zhou.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from stabsim.privacy import _checks as chk
from stabsim.privacy.errors import InfeasiblePrivacyParameters

__all__ = [
    "InfeasiblePrivacyParameters",
    "gaussian_mechanism_sigma",
    "p0_sensitivity_eq9", "p0_delta_T", "P0_DELTA_T_READINGS", "p0_sigma2",
    "P1Phase", "P1Alg3Schedule", "p1_alg3_schedule", "p1_thm10_eta",
    "p2_sensitivity", "p2_sigma",
    "p3_rho", "p3_T1", "p3_eta", "p3_sensitivity", "p3_sigma2_online", "p3_sigma2_offline",
    "p3_convex_surrogate", "P3BurnIn", "p3_check_burnin",
    "p4_lambda", "p4_sigma2", "p4_condition_margins", "p4_feasible", "P4BetaSearch",
    "p4_beta_search",
]


def gaussian_mechanism_sigma(sensitivity, eps, delta):
    """Classical Gaussian mechanism (Dwork-Roth Thm A.1): sigma = sqrt(2 ln(1.25/delta)) Delta/eps.

    Used by P0 Lemma 2, P3 Def. 2 and P4 Lemma 1.  Only valid for eps <= 1 (P0-E11,
    P3-E7); this function does not refuse eps > 1 -- use the accountant to see what it buys.
    """
    sensitivity = chk.positive("sensitivity", sensitivity)
    eps, delta = chk.eps(eps), chk.delta(delta)
    return math.sqrt(2.0 * math.log(1.25 / delta)) * sensitivity / eps


# --------------------------------------------------------------------------- P0
def p0_sensitivity_eq9(T, n, eta, G, gamma, c=3.0):
    """P0 Eq. (9): high-probability bound on ||wbar_T - wbar'_T||_2 (probability >= 1-gamma).

    Delta_T = sqrt(4 e eta^2 G^2 (T + c T^2 ln^2(eT) ln^2(1/gamma)/n^2)), c = 3 as printed;
    c = 9 is the always-valid constant of errata P0-E4.  Eq. (9) assumes T >= n.
    Alg. 2 uses gamma = delta/2.
    """
    T, n, eta, G = chk.T(T), chk.n(n), chk.eta(eta), chk.G(G)
    gamma, c = chk.open_unit("gamma", gamma), chk.positive("c", c)
    lT, lg = math.log(math.e * T), math.log(1.0 / gamma)
    return math.sqrt(4.0 * math.e * eta**2 * G**2 * (T + c * T**2 * lT**2 * lg**2 / n**2))


#: readings of P0's output sensitivity Delta_T (see :func:`p0_delta_T`)
P0_DELTA_T_READINGS = ("eq9", "proof")


def p0_delta_T(T, n, eta, G, gamma, reading="eq9"):
    """P0 Alg. 2's sensitivity Delta_T: bound on ||wbar_T - wbar'_T||_2 w.p. >= 1 - gamma (Thm 1, Eq. (9)).

    The ONE place the ledger, the accountant and the checks take Delta_T from; two labelled
    readings (the paper is ambiguous: the proof of Thm 4 uses Eq. (9), whose printed constant
    is a simplification of its own proof):

    ``"eq9"`` (default)  Eq. (9) as printed, c = 3:
        Delta_T = sqrt(4 e eta^2 G^2 (T + 3 T^2 ln^2(eT) ln^2(1/gamma)/n^2)).
        This is the Delta_T that Eq. (5) is calibrated to (sigma = sqrt(2 ln(2.5/delta))
        Delta_T/eps at gamma = delta/2 is exactly the corrected, 8e reading of Eq. (5)), so
        sigma/Delta_T and every privacy verdict built on it do not depend on n, T, eta, G.
    ``"proof"``  the un-simplified proof form of Eq. (9) with the corrected Chernoff step
        (errata P0-E4; ``P0.Eq9.avg.proof`` of the theory registry): valid for every T, gamma,
        smaller than "eq9" when T/n and ln(1/gamma) are large, larger near T = n.

    Alg. 2 uses gamma = delta/2 (the failure probability delta/2 of the privacy proof).
    """
    reading = chk.choice("reading", reading, P0_DELTA_T_READINGS)
    if reading == "eq9":
        return p0_sensitivity_eq9(T, n, eta, G, gamma, c=3.0)
    from stabsim.theory.p0 import eq9_avg_proof

    T, n, eta, G = chk.T(T), chk.n(n), chk.eta(eta), chk.G(G)
    gamma = chk.open_unit("gamma", gamma)
    return float(eq9_avg_proof(T=T, n=n, eta=eta, G=G, gamma=gamma))


def p0_sigma2(T, n, eta, G, eps, delta, reading="corrected"):
    """P0 Alg. 2, Eq. (5): variance of the output-perturbation noise u ~ N(0, sigma^2 I).

    printed:   sigma^2 = 8 eta^2 G^2 ln(2.5/delta)/eps^2 * (T + 3T^2 ln^2(eT) ln^2(2/delta)/n^2)
    corrected: the same with 8e instead of 8 (errata P0-E2): the proof sets
               sigma = sqrt(2 ln(2.5/delta)) Delta_T/eps with Delta_T^2 from Eq. (9) at
               gamma = delta/2, and Delta_T^2 carries the factor 4e.
    """
    T, n, eta, G = chk.T(T), chk.n(n), chk.eta(eta), chk.G(G)
    eps, delta = chk.eps(eps), chk.delta(delta)
    reading = chk.choice("reading", reading, ("corrected", "printed"))
    const = 8.0 * math.e if reading == "corrected" else 8.0
    lT, l2 = math.log(math.e * T), math.log(2.0 / delta)
    bracket = T + 3.0 * T**2 * lT**2 * l2**2 / n**2
    return const * eta**2 * G**2 * math.log(2.5 / delta) / eps**2 * bracket


# --------------------------------------------------------------------------- P1
@dataclass(frozen=True)
class P1Phase:
    """One phase k of P1 Alg. 3 (see :func:`p1_alg3_schedule`)."""

    k: int
    n_k: float          # phase data size (int for "floor", the paper's real n/2^k for "paper")
    eta_k: float        # 4^-k eta
    steps: int          # ceil(n_k log(4/delta))
    sigma: float        # sigma_k = 12 G eta_k log(4/delta) sqrt(2 log(2.5/delta))/eps
    sensitivity: float  # implied Delta_k = 12 G eta_k log(4/delta) (sigma_k = Delta_k sqrt(2 log(2.5/delta))/eps)
    degenerate: bool    # n_k < 2: no pair of distinct points
    skipped: bool       # policy: degenerate phases are skipped (no steps, no noise, w_k = w_{k-1})


@dataclass(frozen=True)
class P1Alg3Schedule:
    """The schedule of P1 Alg. 3 (DP localized SGD); ``phases`` lists all K phases."""

    n: int
    eta: float
    G: float
    eps: float
    delta: float
    phase_sizes: str
    K: int
    phases: tuple
    policy: str = ("phases with n_k < 2 are skipped: no SGD steps and no noise, w_k = w_{k-1} "
                   "(errata P1-A, point 1); their points are not used")

    @property
    def n_k(self):
        return tuple(p.n_k for p in self.phases)

    @property
    def eta_k(self):
        return tuple(p.eta_k for p in self.phases)

    @property
    def steps_k(self):
        return tuple(p.steps for p in self.phases)

    @property
    def sigma_k(self):
        return tuple(p.sigma for p in self.phases)

    @property
    def degenerate(self):
        """Indices k (1-based) of the degenerate phases (n_k < 2)."""
        return tuple(p.k for p in self.phases if p.degenerate)

    @property
    def active(self):
        """The phases actually run (not skipped)."""
        return tuple(p for p in self.phases if not p.skipped)

    @property
    def total_steps(self):
        """Gradient complexity of the active phases."""
        return sum(p.steps for p in self.active)


def p1_alg3_schedule(n, eta, G, eps, delta, phase_sizes="floor"):
    """P1 Alg. 3 (DP localized SGD), steps 2-6: phases, step sizes, lengths and noise.

    K = ceil(log2 n); phase k = 1..K uses n_k points, eta_k = 4^-k eta,
    ceil(n_k log(4/delta)) steps of Alg. 1 and adds u_k ~ N(0, sigma_k^2 I) with
    sigma_k = 12 G eta_k log(4/delta) sqrt(2 log(2.5/delta))/eps.

    phase_sizes="floor" (default) uses n_k = floor(n/2^k) (integer, implementable);
    "paper" uses the printed real n_k = 2^-k n (only meaningful as a reference).
    Either way n_K <= 1: phases with n_k < 2 are marked ``degenerate`` and, by the
    documented policy, ``skipped`` (errata P1-A, point 1).
    """
    n, eta, G = chk.n(n), chk.eta(eta), chk.G(G)
    eps, delta = chk.eps(eps), chk.delta(delta)
    phase_sizes = chk.choice("phase_sizes", phase_sizes, ("floor", "paper"))
    K = (n - 1).bit_length()  # == ceil(log2 n) exactly, for n >= 2
    l4 = math.log(4.0 / delta)
    gm = math.sqrt(2.0 * math.log(2.5 / delta)) / eps
    phases = []
    for k in range(1, K + 1):
        n_k = (n >> k) if phase_sizes == "floor" else n / 2.0**k
        eta_k = eta / 4.0**k
        sens = 12.0 * G * eta_k * l4
        degenerate = n_k < 2
        phases.append(P1Phase(k=k, n_k=n_k, eta_k=eta_k, steps=math.ceil(n_k * l4),
                              sigma=sens * gm, sensitivity=sens,
                              degenerate=degenerate, skipped=degenerate))
    return P1Alg3Schedule(n=n, eta=eta, G=G, eps=eps, delta=delta, phase_sizes=phase_sizes,
                          K=K, phases=tuple(phases))


def p1_thm10_eta(n, G, D, d, eps, delta, reading="printed", L=None):
    """P1 Thm 10: base step size of Alg. 3.

    printed:   eta = (D/G) min{ log(4/delta)/sqrt(n), eps/(12 log(4/delta) sqrt(2 d log(2.5/delta))) }
    corrected: first argument 1/(sqrt(n) log(4/delta)) instead (errata P1-E7: with Thm 5/6(a)
               the printed choice gives GD log^2(4/delta)/sqrt(n), not GD/sqrt(n)).
    Thm 10 requires eta <= 2/L (the smooth UAS of Thm 5 behind sigma_k needs it); if ``L`` is
    given and eta > 2/L this raises InfeasiblePrivacyParameters.
    """
    n, G = chk.n(n), chk.G(G)
    D, d = chk.positive("D", D), chk.integer_at_least("d", d, 1)
    eps, delta = chk.eps(eps), chk.delta(delta)
    reading = chk.choice("reading", reading, ("printed", "corrected"))
    l4 = math.log(4.0 / delta)
    first = l4 / math.sqrt(n) if reading == "printed" else 1.0 / (math.sqrt(n) * l4)
    second = eps / (12.0 * l4 * math.sqrt(2.0 * d * math.log(2.5 / delta)))
    eta = D / G * min(first, second)
    if L is not None:
        L = chk.positive("L", L)
        if eta > 2.0 / L:
            raise InfeasiblePrivacyParameters(
                f"P1 Thm 10 ({reading}): eta={eta:.4g} > 2/L={2.0 / L:.4g} for n={n}, G={G}, "
                f"D={D}, d={d}, eps={eps}, delta={delta:.3g}; the UAS bound (Thm 5) behind "
                f"sigma_k needs eta <= 2/L. Use a smaller D/G ratio or the 'corrected' reading.")
    return eta


# --------------------------------------------------------------------------- P2
def p2_sensitivity(n, G):
    """Replace-one l2-sensitivity 4G/n of P2's all-pairs averaged gradient (errata P2-A, cross-check).

    Replacing z_i changes 2(n-1) of the n(n-1) pair gradients, each by at most 2G.
    """
    return 4.0 * chk.G(G) / chk.n(n)


def p2_sigma(T, n, G, eps, delta):
    """P2 Thm 1 / Alg. 1: sigma = 8 G sqrt(T log(1/delta)) / (n eps) (equality used)."""
    T, n, G = chk.T(T), chk.n(n), chk.G(G)
    eps, delta = chk.eps(eps), chk.delta(delta)
    return 8.0 * G * math.sqrt(T * math.log(1.0 / delta)) / (n * eps)


# --------------------------------------------------------------------------- P3
def p3_rho(eps, delta, exact=True):
    """P3 Alg. 1 step 2: zCDP budget rho solving rho + 2 sqrt(rho log(1/delta)) = eps (Lemma 3).

    exact=True:  rho = (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))^2  (errata P3-E1);
    exact=False: the paper's approximation eps^2/(4 log(1/delta)), which over-states rho and
                 under-noises by up to ~24% in the paper's settings (P3-E2).
    """
    eps, delta = chk.eps(eps), chk.delta(delta)
    ld = math.log(1.0 / delta)
    if exact:
        return (math.sqrt(ld + eps) - math.sqrt(ld)) ** 2
    return eps**2 / (4.0 * ld)


def p3_T1(L, alpha):
    """P3 Alg. 1/3 burn-in: T_1 = max{ceil(16 L^2/alpha^2), 7}."""
    L, alpha = chk.positive("L", L), chk.positive("alpha", alpha)
    return max(math.ceil(16.0 * L**2 / alpha**2), 7)


def p3_eta(t, alpha):
    """P3 Alg. 1 step 10 / Alg. 3: eta_t = ((t-1)/(t-2)) * 2/(alpha t), defined for t >= 3."""
    t = chk.integer_at_least("t", t, 3)
    alpha = chk.positive("alpha", alpha)
    return (t - 1.0) / (t - 2.0) * 2.0 / (alpha * t)


def p3_sensitivity(t, G, alpha):
    """P3 Lemma 4: sensitivity of Pairwise GIGA at step t, 8G/(alpha t) (use G~ for convex variants)."""
    t = chk.integer_at_least("t", t, 1)
    return 8.0 * chk.G(G) / (chk.positive("alpha", alpha) * t)


def p3_sigma2_online(t, n, T1, G, alpha, rho):
    """P3 Alg. 1 step 12: sigma_t^2 = 32 G^2 (n - T_1) / (alpha^2 t^2 rho), for T_1 < t <= n.

    = Delta_t^2 (n - T_1)/(2 rho) with Delta_t = 8G/(alpha t) (Lemma 4): each of the n - T_1
    releases is rho/(n - T_1)-zCDP (Lemma 2) and they compose to rho (Lemma 1).
    """
    n = chk.n(n)
    T1 = chk.integer_at_least("T1", T1, 1)
    t = chk.integer_at_least("t", t, 1)
    if not T1 < t <= n:
        raise ValueError(f"t={t!r} is not allowed: t must satisfy T1 < t <= n (T1={T1}, n={n})")
    G, alpha, rho = chk.G(G), chk.positive("alpha", alpha), chk.positive("rho", rho)
    return 32.0 * G**2 * (n - T1) / (alpha**2 * t**2 * rho)


def p3_sigma2_offline(n, G, alpha, eps, delta):
    """P3 Alg. 3 step 9: sigma^2 = 128 G^2 log^2(n) log(1.25/delta) / (alpha^2 n^2 eps^2).

    Classical Gaussian mechanism (Def. 2) on the average iterate, sensitivity 8G log(n)/(alpha n).
    """
    n, G, alpha = chk.n(n), chk.G(G), chk.positive("alpha", alpha)
    eps, delta = chk.eps(eps), chk.delta(delta)
    return 128.0 * G**2 * math.log(n) ** 2 * math.log(1.25 / delta) / (alpha**2 * n**2 * eps**2)


def p3_convex_surrogate(G, L, alpha, diam):
    """P3 Alg. 2/4: constants of l~ = l + (alpha/2)||w - w_0||^2: (G~, L~) = (G + alpha*diam, L + alpha)."""
    G, L = chk.G(G), chk.positive("L", L)
    alpha, diam = chk.positive("alpha", alpha), chk.positive("diam", diam)
    return G + alpha * diam, L + alpha


@dataclass(frozen=True)
class P3BurnIn:
    """Burn-in actually used by a P3 run, and whether it is the paper's."""

    n: int
    T1: int
    T1_paper: int
    as_in_paper: bool
    note: str


def p3_check_burnin(n, L, alpha, T1=None):
    """Check P3's burn-in T_1 = max{ceil(16L^2/alpha^2), 7} against n (errata P3-E6).

    With T1=None the paper's T_1 is used; if T_1 >= n the GIGA loop (t = T_1+1..n) never runs
    and every output is a random point, so this raises InfeasiblePrivacyParameters saying how
    large alpha must be.  An explicit integer ``T1`` (2 <= T1 < n) overrides it; the returned
    record then has ``as_in_paper=False`` and a note to carry into reports.
    """
    n = chk.n(n)
    T1_paper = p3_T1(L, alpha)
    if T1 is None:
        if T1_paper >= n:
            if n <= 7:
                fix = "n must exceed 7 for any alpha (T_1 >= 7)"
            else:
                fix = (f"T_1 < n needs alpha >= 4L/sqrt(n-1) = {4.0 * L / math.sqrt(n - 1):.4g} "
                       f"(for the convex variants alpha = c/sqrt(n) needs c > 4 L~)")
            raise InfeasiblePrivacyParameters(
                f"P3 burn-in T_1 = max(ceil(16 L^2/alpha^2), 7) = {T1_paper} >= n = {n} "
                f"(L={L}, alpha={alpha}): the private GIGA loop t = T_1+1..n is empty and every "
                f"released point is random. Either use a larger alpha ({fix}) or pass an explicit "
                f"T1= override, which is then recorded as 'not as in paper'.")
        return P3BurnIn(n, T1_paper, T1_paper, True, "T_1 as in paper")
    T1 = chk.integer_at_least("T1", T1, 2)
    if T1 >= n:
        raise ValueError(f"T1={T1!r} is not allowed: T1 must be < n={n}")
    same = T1 == T1_paper
    note = "T_1 as in paper" if same else (
        f"T_1 = {T1} not as in paper (paper: max(ceil(16L^2/alpha^2), 7) = {T1_paper})")
    return P3BurnIn(n, T1, T1_paper, same, note)


# --------------------------------------------------------------------------- P4
_P4_K = {False: 14.0, True: 56.0}   # sigma^2 constant: 3.5*4 (pointwise), 3.5*4*4 (pairwise)
_P4_SUB = {False: 1.0, True: 2.0}   # k in the subsampling rate k/n (Lemma 8)


def p4_lambda(beta, eps, delta):
    """P4 Thm 2/5: RDP order lambda = log(1/delta)/((1-beta) eps) + 1."""
    beta, eps, delta = chk.open_unit("beta", beta), chk.eps(eps), chk.delta(delta)
    return math.log(1.0 / delta) / ((1.0 - beta) * eps) + 1.0


def p4_sigma2(beta, eps, delta, n, T, G, pairwise):
    """P4 Alg. 1 / Alg. 2: sigma^2 = c G^2 T lambda/(beta n^2 eps), c = 14 (pointwise) or 56 (pairwise)."""
    lam = p4_lambda(beta, eps, delta)
    n, T, G = chk.n(n), chk.T(T), chk.G(G)
    return _P4_K[bool(pairwise)] * G**2 * T * lam / (beta * n**2 * eps)


def _p4_s_lam(beta, eps, delta, n, T, pairwise):
    """Vectorised s = sigma^2/G^2 and lambda over an array of beta (no checks)."""
    beta = np.asarray(beta, dtype=float)
    lam = math.log(1.0 / delta) / ((1.0 - beta) * eps) + 1.0
    return _P4_K[bool(pairwise)] * T * lam / (beta * n**2 * eps), lam


def _p4_margins(beta, eps, delta, n, T, pairwise):
    """Both condition margins (>= 0 means satisfied), vectorised over beta."""
    s, lam = _p4_s_lam(beta, eps, delta, n, T, pairwise)
    m1 = s - 2.68
    m2 = s / 6.0 * np.log(n / (_P4_SUB[bool(pairwise)] * lam * (1.0 + s / 4.0))) - (lam - 1.0)
    return m1, m2


def p4_condition_margins(beta, eps, delta, n, T, pairwise):
    """P4 Thm 2 (pointwise) / Thm 5 (pairwise): the two conditions as margins (>= 0 = holds).

    m1 = sigma^2/G^2 - 2.68
    m2 = (sigma^2/(6G^2)) log(n/(c lambda (1 + sigma^2/(4G^2)))) - (lambda - 1),  c = 1 or 2.
    They come from Lemma 8 (Liang et al.) with Delta = 2G and rate 1/n or 2/n and depend on
    sigma only through s = sigma^2/G^2, so not on G.
    """
    beta, eps, delta = chk.open_unit("beta", beta), chk.eps(eps), chk.delta(delta)
    n, T = chk.n(n), chk.T(T)
    m1, m2 = _p4_margins(beta, eps, delta, n, T, pairwise)
    return float(m1), float(m2)


def p4_feasible(beta, eps, delta, n, T, pairwise):
    """True iff beta satisfies both privacy conditions of P4 Thm 2 (pointwise) / Thm 5 (pairwise)."""
    m1, m2 = p4_condition_margins(beta, eps, delta, n, T, pairwise)
    return m1 >= 0 and m2 >= 0


@dataclass(frozen=True)
class P4BetaSearch:
    """Result of :func:`p4_beta_search`."""

    beta: float
    sigma2: float             # sigma^2 (with the given G)
    sigma2_over_G2: float
    grid_step: float | None   # None in continuous mode
    n_feasible: int | None    # feasible grid points (None in continuous mode)
    feasible_intervals: tuple  # ((a, b), ...) of feasible beta in [lo, hi]
    lo: float
    hi: float
    pairwise: bool
    method: str               # "grid" or "continuous"


def _beta_grid(lo, hi, step):
    m = int(math.floor((hi - lo) / step + 1e-9)) + 1
    return np.round(lo + step * np.arange(m), 12)


def _scan_betas(lo, hi, num=20001):
    return np.geomspace(lo, hi, num)


def _intervals(mask, betas):
    """Maximal runs of True in mask as (first_beta, last_beta) pairs."""
    out, start = [], None
    for i, ok in enumerate(mask):
        if ok and start is None:
            start = i
        if not ok and start is not None:
            out.append((start, i - 1))
            start = None
    if start is not None:
        out.append((start, len(mask) - 1))
    return out


def _feasible_mask(betas, eps, delta, n, T, pairwise):
    m1, m2 = _p4_margins(betas, eps, delta, n, T, pairwise)
    return (m1 >= 0) & (m2 >= 0)


def _eps_window(betas, delta, n, T, pairwise):
    """Approximate range of eps for which some beta in ``betas`` is feasible (None if none)."""
    eps_grid = np.geomspace(1e-3, 1e3, 601)
    ok = np.array([_feasible_mask(betas, e, delta, n, T, pairwise).any() for e in eps_grid])
    if not ok.any():
        return None
    i, j = int(np.argmax(ok)), len(ok) - 1 - int(np.argmax(ok[::-1]))
    lo_e = eps_grid[i]
    if i > 0:  # refine the lower end by bisection between an infeasible and a feasible eps
        a, b = eps_grid[i - 1], eps_grid[i]
        for _ in range(40):
            mid = math.sqrt(a * b)
            a, b = (a, mid) if _feasible_mask(betas, mid, delta, n, T, pairwise).any() else (mid, b)
        lo_e = b
    return lo_e, eps_grid[j]


def _infeasible(eps, delta, n, T, pairwise, lo, hi, desc, betas):
    kind = "pairwise Alg. 2 (Thm 5)" if pairwise else "pointwise Alg. 1 (Thm 2)"
    c = "2" if pairwise else ""
    window = _eps_window(betas, delta, n, T, pairwise)
    if window is None:
        hint = "no eps in [1e-3, 1e3] is feasible with these betas"
    else:
        hint = (f"the conditions hold on these betas only for eps in about [{window[0]:.4g}, "
                f"{window[1]:.3g}]: the smallest feasible eps is about {window[0]:.4g}")
    return InfeasiblePrivacyParameters(
        f"P4 {kind}: no beta in [{lo:g}, {hi:g}] ({desc}) satisfies sigma^2 >= 2.68 G^2 and "
        f"lambda-1 <= (sigma^2/(6G^2)) log(n/({c}lambda(1+sigma^2/(4G^2)))) for eps={eps}, "
        f"n={n}, T={T}, delta={delta:.4g}; {hint}.")


def p4_beta_search(eps, delta, n, T, G, pairwise, grid_step=1e-4, lo=1e-4, hi=0.9999,
                   continuous=False):
    """P4 section 5: choose beta in [lo, hi] giving the smallest feasible sigma^2 (Thm 2 / Thm 5).

    Grid mode (default, the paper's procedure "search beta from 0.0001 to 0.9999"): betas
    lo, lo+step, ..., <= hi; the paper gives no step, 1e-4 is ours (errata P4-A:
    the chosen sigma^2 is set by the grid, so report the step).  Continuous mode: scan a
    20001-point geometric grid on [lo, hi], refine every feasibility boundary with brentq and
    minimise sigma^2 over each feasible interval (sigma^2 is smallest at the largest feasible
    beta in practice); this reproduces the feasibility table of errata P4-A (pass lo=1e-9 to
    also reproduce its interval lower ends).  A feasible interval narrower than the scan
    spacing (~0.05% relative) could be missed.

    Raises InfeasiblePrivacyParameters (naming eps, n, T, delta and the smallest feasible eps
    on the same betas) if no beta is feasible.
    """
    eps, delta, n, T, G = chk.eps(eps), chk.delta(delta), chk.n(n), chk.T(T), chk.G(G)
    lo, hi = chk.open_unit("lo", lo), chk.open_unit("hi", hi)
    if lo >= hi:
        raise ValueError(f"lo={lo!r} is not allowed: lo must be < hi={hi!r}")
    pairwise = bool(pairwise)
    if not continuous:
        step = chk.positive("grid_step", grid_step)
        betas = _beta_grid(lo, hi, step)
        mask = _feasible_mask(betas, eps, delta, n, T, pairwise)
        if not mask.any():
            raise _infeasible(eps, delta, n, T, pairwise, lo, hi, f"grid step {step:g}", betas)
        s, _ = _p4_s_lam(betas, eps, delta, n, T, pairwise)
        s = np.where(mask, s, np.inf)
        i = int(np.argmin(s))
        runs = tuple((float(betas[a]), float(betas[b])) for a, b in _intervals(mask, betas))
        return P4BetaSearch(float(betas[i]), float(s[i]) * G**2, float(s[i]), step,
                            int(mask.sum()), runs, lo, hi, pairwise, "grid")

    betas = _scan_betas(lo, hi)
    mask = _feasible_mask(betas, eps, delta, n, T, pairwise)
    if not mask.any():
        raise _infeasible(eps, delta, n, T, pairwise, lo, hi, "continuous scan", betas)

    def margin(b):
        m1, m2 = _p4_margins(b, eps, delta, n, T, pairwise)
        return float(min(m1, m2))

    def s_of(b):
        return float(_p4_s_lam(b, eps, delta, n, T, pairwise)[0])

    intervals, best = [], (math.inf, None)
    for a, b in _intervals(mask, betas):
        left = lo if a == 0 else brentq(margin, betas[a - 1], betas[a], xtol=1e-15, rtol=1e-12)
        right = hi if b == len(betas) - 1 else brentq(margin, betas[b], betas[b + 1],
                                                      xtol=1e-15, rtol=1e-12)
        intervals.append((float(left), float(right)))
        cands = [left, right]
        if right > left:
            r = minimize_scalar(s_of, bounds=(left, right), method="bounded",
                                options={"xatol": 1e-14})
            cands.append(float(r.x))
        for c in cands:
            if s_of(c) < best[0]:
                best = (s_of(c), c)
    s_min, beta = best
    return P4BetaSearch(float(beta), s_min * G**2, s_min, None, None, tuple(intervals),
                        lo, hi, pairwise, "continuous")
