"""Cross-check of each paper's noise calibration with Google's ``dp_accounting`` (0.6).

For every mechanism we report the epsilon that the paper's sigma actually delivers at the
paper's delta (RDP accountant: a rigorous upper bound; PLD accountant: tight up to its
pessimistic discretisation), the smallest sigma reaching the paper's eps (bisection over a
common noise scale with the accountant), and the ratio eps_claimed / eps_pld.

How the mechanisms are mapped onto ``dp_accounting`` events (files read, all under
``site-packages/dp_accounting/``):

* ``rdp/rdp_privacy_accountant.py``: ``GaussianDpEvent(z)`` adds the RDP curve
  alpha/(2 z^2) **whatever the neighbouring relation** (``_maybe_compose`` calls
  ``_compute_rdp_poisson_subsampled_gaussian(q=1)``), i.e. it is the Gaussian mechanism
  whose two output distributions are N(0, z^2) and N(1, z^2).
  ``SampledWithoutReplacementDpEvent`` is accepted only with ``REPLACE_ONE`` and uses
  Wang-Balle-Kasiviswanathan (AISTATS 2019) Thm 27, with ``noise_multiplier`` = noise std /
  l2-sensitivity of the function applied to the subsample ("replace one data point",
  docstring of ``_compute_rdp_sample_wor_gaussian``).
* ``pld/pld_privacy_accountant.py``, ``pld/privacy_loss_distribution.py``
  (``from_gaussian_mechanism``) and ``pld/privacy_loss_mechanism.py``
  (``AdditiveNoisePrivacyLoss`` docstring): under ``ADD_OR_REMOVE_ONE`` a
  ``GaussianDpEvent(z)`` is the pair N(0,z^2) / N(1,z^2); under ``REPLACE_ONE`` it is
  N(-1,z^2) / N(+1,z^2), "the same privacy loss distribution with twice the sensitivity".
  So the library's sensitivity is an *add/remove* (per-example contribution) sensitivity,
  and with REPLACE_ONE the PLD and RDP accountants disagree for the same event
  (``tests/test_privacy_accountant.py`` pins this).  ``PoissonSampledDpEvent(q, Gaussian(z))``
  under ``ADD_OR_REMOVE_ONE`` is the pair (q N(1,z^2) + (1-q) N(0,z^2), N(0,z^2)) and its
  reverse.  The PLD accountant has no sampling-without-replacement event.

The PLD accountant used is ``PLDAccountant`` with its Gaussian and Poisson-subsampled Gaussian
PLDs built on arrays (:class:`~stabsim.privacy.pld_gaussian.VectorPLDAccountant`): the same
numbers, bit for bit (``tests/test_pld_gaussian.py``).

Our mapping.  All five papers use replace-one neighbours and state a replace-one
l2-sensitivity Delta.  For a (composition of) plain Gaussian mechanism(s) the privacy curve
depends only on Delta/sigma, so we use ``GaussianDpEvent(sigma/Delta)`` under
``ADD_OR_REMOVE_ONE`` in **both** accountants (never the PLD's REPLACE_ONE, which would
double Delta).  For P4's subsampled steps (sensitivity Delta = 2G under replace-one,
uniform subset of size k = 1 or 2 of n): RDP uses ``SampledWithoutReplacementDpEvent(n, k,
GaussianDpEvent(sigma/(2G)))`` under ``REPLACE_ONE`` (rigorous); PLD uses
``PoissonSampledDpEvent(k/n, GaussianDpEvent(sigma/(2G)))`` under ``ADD_OR_REMOVE_ONE``.  That
pair is realised exactly by an explicit neighbouring pair (a linear loss, shifted to be
nonnegative on a bounded W, whose gradient is -G e on every sample/pair except those touching
the replaced point, where it flips to +G e; a step touches it with probability exactly k/n).
So the PLD value is the exact privacy curve of that neighbouring pair when the T noisy
gradients are released (what P4's composition proof bounds) -- a *lower* bound on the true
worst-case epsilon of that release (up to the pessimistic discretisation), while the RDP value
is a rigorous upper bound.  It is also the tight value if the dominating-pair result for
sampling without replacement under substitution (Zhu, Dong & Wang, AISTATS 2022) applies,
which we did not re-derive.

Failure events.  P0 and P1 calibrate to a sensitivity bound that only holds with probability
1 - delta/2 over the algorithm's own indices.  No accountant event models that; we evaluate
the accountant at delta - delta/2 and add the failure probability back (total delta), as the
papers' proofs do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import dp_accounting as dpa
from dp_accounting import rdp as dpa_rdp
from scipy.optimize import brentq

from stabsim.privacy import _checks as chk
from stabsim.privacy import calibration as cal
from stabsim.privacy.exact import PLD_POINT_BUDGET, gdp_epsilon, pld_points
from stabsim.privacy.pld_gaussian import VectorPLDAccountant   # dp_accounting's PLDAccountant, its Gaussian grids on arrays

NR = dpa.NeighboringRelation

__all__ = [
    "Mechanism", "Row", "gaussian_event", "accountant_epsilon", "epsilon", "sigma_needed",
    "evaluate", "report", "format_rows", "zcdp_to_dp",
    "single_gaussian", "p0_output_perturbation", "p1_alg3", "p2_gradient_perturbation",
    "p3_online", "p3_offline", "p4_dpsgd", "typical_mechanisms",
]

ACCOUNTANTS = ("rdp", "pld")


# ----------------------------------------------------------------------------- primitives
def gaussian_event(sigma, sensitivity):
    """``GaussianDpEvent(sigma/Delta)`` for a Gaussian mechanism with replace-one sensitivity Delta.

    Use it under ``ADD_OR_REMOVE_ONE`` (or with the RDP accountant under any relation); see
    the module docstring for why not under the PLD accountant's REPLACE_ONE.
    """
    return dpa.GaussianDpEvent(chk.positive("sigma", sigma) / chk.positive("sensitivity", sensitivity))


def accountant_epsilon(event, delta, accountant="pld", relation=NR.ADD_OR_REMOVE_ONE,
                       pld_discretization=1e-4, orders=None):
    """epsilon of one ``DpEvent`` at ``delta`` with the RDP or PLD accountant of dp_accounting."""
    accountant = chk.choice("accountant", accountant, ACCOUNTANTS)
    delta = chk.delta(delta)
    if accountant == "rdp":
        acc = dpa_rdp.RdpAccountant(orders=orders, neighboring_relation=relation)
    else:
        acc = VectorPLDAccountant(relation, value_discretization_interval=pld_discretization)
    acc.compose(event)
    return float(acc.get_epsilon(delta))


def zcdp_to_dp(rho, delta):
    """Bun-Steinke conversion used by P3 Lemma 3: rho-zCDP => (rho + 2 sqrt(rho log(1/delta)), delta)-DP."""
    rho, delta = chk.positive("rho", rho), chk.delta(delta)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


# ----------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Mechanism:
    """A paper's private algorithm expressed as dp_accounting events.

    ``events(scale)`` returns ``{"rdp": (event, relation), "pld": (event, relation) | None}``
    with every noise std of the paper multiplied by ``scale`` (scale = 1 is the paper).
    The accountant is evaluated at ``delta - delta_fail``.  ``sigma_paper`` is the reference
    noise std reported in tables (which one is said in ``note``); ``noise_multiplier`` is
    sigma/Delta at the paper's sigma (per step / per phase).  ``rho(scale)`` is the zCDP
    budget where the paper argues via zCDP (P2 cross-check, P3), else None.
    """

    name: str
    sigma_paper: float
    eps_claimed: float
    delta: float
    delta_fail: float
    noise_multiplier: float
    events: Callable = field(repr=False)
    rho: Callable | None = field(default=None, repr=False)
    note: str = ""
    #: mu(scale) of the whole (non-subsampled) Gaussian composition in GDP units, or None
    gdp_mu: Callable | None = field(default=None, repr=False)
    #: (mu per step at scale 1, sampling rate q, steps) of a subsampled mechanism, or None
    pld_shape: tuple | None = None

    @property
    def delta_accountant(self):
        return self.delta - self.delta_fail


@dataclass(frozen=True)
class Row:
    """One line of :func:`report`; ``ratio`` = eps_claimed / eps_pld (eps_rdp if no PLD)."""

    algorithm: str
    sigma_paper: float
    eps_claimed: float
    eps_rdp: float
    eps_pld: float | None
    sigma_needed: float
    ratio: float
    delta: float
    noise_multiplier: float
    sigma_needed_rdp: float | None = None
    eps_paper_conversion: float | None = None   # rho + 2 sqrt(rho log(1/delta)) for zCDP arguments
    note: str = ""


# ----------------------------------------------------------------------------- evaluation
def epsilon_record(mech, accountant="pld", scale=1.0, pld_discretization=1e-4):
    """(eps, method, note): :func:`epsilon` plus which route computed it and why.

    Memory guard for the PLD: its support is estimated first (:func:`~stabsim.privacy.exact.pld_points`);
    beyond :data:`~stabsim.privacy.exact.PLD_POINT_BUDGET` points a non-subsampled Gaussian
    composition is computed exactly (analytic GDP, method "analytic GDP") and a subsampled one
    with the RDP accountant (method "rdp"); the note says so.  Without this guard P0 at eps = 1000
    (sigma/Delta ~ 0.004) would build a ~7e8-point PLD (about 24 GB).
    """
    accountant = chk.choice("accountant", accountant, ACCOUNTANTS)
    scale = chk.positive("scale", scale)
    spec = mech.events(scale)[accountant]
    if spec is None:
        return None, accountant, "accountant does not support this mechanism"
    if accountant == "pld":
        if mech.gdp_mu is not None:
            mu = mech.gdp_mu(scale)
            pts = pld_points(mu, pld_discretization)
            if pts > PLD_POINT_BUDGET:
                return (gdp_epsilon(mech.delta_accountant, mu), "analytic GDP",
                        f"PLD support ~{pts:.2g} points > budget {PLD_POINT_BUDGET:.2g}: exact analytic GDP used")
        elif mech.pld_shape is not None:
            mu1, q, steps = mech.pld_shape
            pts = pld_points(mu1 / scale, pld_discretization, q, steps)
            if pts > PLD_POINT_BUDGET:
                e = epsilon(mech, "rdp", scale)
                return e, "rdp", f"PLD support ~{pts:.2g} points > budget {PLD_POINT_BUDGET:.2g}: RDP used"
    event, relation = spec
    return (accountant_epsilon(event, mech.delta_accountant, accountant, relation, pld_discretization),
            accountant, "")


def epsilon(mech, accountant="pld", scale=1.0, pld_discretization=1e-4):
    """The epsilon (total delta = mech.delta) the mechanism delivers with noise scaled by ``scale``.

    Returns None if the accountant does not support the mechanism (no event given).  The PLD
    is guarded (see :func:`epsilon_record`): beyond the memory budget the exact analytic value
    (non-subsampled) or the RDP value (subsampled) is returned instead.
    """
    return epsilon_record(mech, accountant, scale, pld_discretization)[0]


def sigma_needed(mech, eps=None, accountant="pld", rtol=1e-5, pld_discretization=1e-4):
    """Smallest reference sigma (``mech.sigma_paper`` x scale) with accountant epsilon <= eps.

    eps defaults to the paper's claimed eps.  Bisection (brentq on log scale) on the common
    noise scale; epsilon is non-increasing in the scale.
    """
    target = mech.eps_claimed if eps is None else chk.eps(eps)
    if mech.events(1.0)[accountant] is None:
        return None

    def f(log_scale):
        return epsilon(mech, accountant, math.exp(log_scale), pld_discretization) - target

    step = math.log(2.0)
    lo = hi = 0.0
    if f(0.0) > 0:
        while f(hi) > 0:
            hi += step
        lo = hi - step
    else:
        while f(lo) <= 0:
            lo -= step
        hi = lo + step
    return mech.sigma_paper * math.exp(brentq(f, lo, hi, xtol=rtol))


def evaluate(mech, sigma_with=("pld",), pld_discretization=1e-4):
    """Row for one mechanism: claimed vs RDP/PLD epsilon, sigma needed (by ``sigma_with``), ratio."""
    eps_rdp = epsilon(mech, "rdp", 1.0, pld_discretization)
    eps_pld = epsilon(mech, "pld", 1.0, pld_discretization)
    main = "pld" if eps_pld is not None else "rdp"
    s_main = sigma_needed(mech, None, main, pld_discretization=pld_discretization)
    s_rdp = (s_main if main == "rdp" else
             sigma_needed(mech, None, "rdp") if "rdp" in sigma_with else None)
    actual = eps_pld if eps_pld is not None else eps_rdp
    conv = zcdp_to_dp(mech.rho(1.0), mech.delta) if mech.rho is not None else None
    guard = epsilon_record(mech, "pld", 1.0, pld_discretization)[2] if eps_pld is not None else ""
    return Row(mech.name, mech.sigma_paper, mech.eps_claimed, eps_rdp, eps_pld, s_main,
               mech.eps_claimed / actual if actual > 0 else math.inf, mech.delta,
               mech.noise_multiplier, s_rdp, conv, "; ".join(x for x in (mech.note, guard) if x))


def report(mechanisms=None, sigma_with=("pld",), pld_discretization=1e-4):
    """Rows (algorithm, sigma_paper, eps_claimed, eps_rdp, eps_pld, sigma_needed, ratio, ...).

    ``mechanisms`` defaults to :func:`typical_mechanisms`.  Add ``"rdp"`` to ``sigma_with``
    to also bisect sigma with the (slower, rigorous) RDP accountant.
    """
    mechanisms = typical_mechanisms() if mechanisms is None else mechanisms
    return [evaluate(m, sigma_with, pld_discretization) for m in mechanisms]


def format_rows(rows):
    """Plain-text table of :func:`report` rows."""
    head = (f"{'algorithm':<40} {'delta':>8} {'sigma_paper':>11} {'z_paper':>8} {'eps_claim':>9} "
            f"{'eps_rdp':>8} {'eps_pld':>8} {'sig_need':>9} {'sig_need_rdp':>12} {'ratio':>7}")
    lines = [head, "-" * len(head)]
    for r in rows:
        fmt = lambda v, w: f"{'-':>{w}}" if v is None else f"{v:>{w}.4g}"  # noqa: E731
        lines.append(f"{r.algorithm:<40} {r.delta:>8.2g} {r.sigma_paper:>11.4g} "
                     f"{r.noise_multiplier:>8.4g} {r.eps_claimed:>9.4g} {fmt(r.eps_rdp, 8)} "
                     f"{fmt(r.eps_pld, 8)} {fmt(r.sigma_needed, 9)} {fmt(r.sigma_needed_rdp, 12)} "
                     f"{r.ratio:>7.3g}")
    return "\n".join(lines)


def _mu_of(z_of_scale, count=1):
    """mu(scale) = sqrt(count)/z(scale) of ``count`` identical Gaussian steps (GDP composition)."""
    return lambda s: math.sqrt(count) / z_of_scale(s)


def _plain(z_of_scale, count=1):
    """Events for ``count`` identical Gaussian steps with noise multiplier z_of_scale(scale)."""
    def events(scale):
        ev = dpa.GaussianDpEvent(z_of_scale(scale))
        if count > 1:
            ev = dpa.SelfComposedDpEvent(ev, count)
        return {"rdp": (ev, NR.ADD_OR_REMOVE_ONE), "pld": (ev, NR.ADD_OR_REMOVE_ONE)}
    return events


# ----------------------------------------------------------------------------- mechanisms
def single_gaussian(sigma, sensitivity, eps_claimed, delta, name="Gaussian mechanism"):
    """One Gaussian mechanism N(0, sigma^2) on a query of replace-one l2-sensitivity Delta."""
    sigma, sensitivity = chk.positive("sigma", sigma), chk.positive("sensitivity", sensitivity)
    z = sigma / sensitivity
    return Mechanism(name, sigma, chk.eps(eps_claimed), chk.delta(delta), 0.0, z,
                     _plain(lambda s: s * z), note="GaussianDpEvent(sigma/Delta), ADD_OR_REMOVE_ONE",
                     gdp_mu=_mu_of(lambda s: s * z))


def p0_output_perturbation(T, n, eta, G, eps, delta, reading="corrected", delta_T="eq9"):
    """P0 Alg. 2 (Thm 4): output perturbation of wbar_T with sigma^2 from Eq. (5).

    Sensitivity: :func:`~stabsim.privacy.calibration.p0_delta_T` at gamma = delta/2 (``delta_T``
    = "eq9", default: Eq. (9) with c = 3 as printed,
    Delta_T = sqrt(4 e eta^2 G^2 (T + 3T^2 ln^2(eT) ln^2(2/delta)/n^2)); "proof": the
    un-simplified proof form, P0-E4), which holds with
    probability >= 1 - delta/2 over the indices.  No accountant event models this failure
    event: we compute the accountant's eps at delta/2 for GaussianDpEvent(sigma/Delta_T) and
    add the failure probability delta/2 (total delta), exactly as the proof of Thm 4 does.
    """
    sigma = math.sqrt(cal.p0_sigma2(T, n, eta, G, eps, delta, reading))
    sens = cal.p0_delta_T(T, n, eta, G, delta / 2.0, delta_T)
    z = sigma / sens
    return Mechanism(f"P0 Alg.2 Eq.(5) {reading}", sigma, eps, delta, delta / 2.0, z,
                     _plain(lambda s: s * z),
                     note=(f"Delta_T={sens:.4g} (Eq. 9 {delta_T} reading, gamma=delta/2); accountant at delta/2 "
                           "+ failure delta/2"), gdp_mu=_mu_of(lambda s: s * z))


def p1_alg3(n, eta, G, eps, delta, phase_sizes="floor", composition="parallel",
            sensitivity="implied"):
    """P1 Alg. 3 (Thm 10): K phases, each releasing wbar_k + N(0, sigma_k^2 I).

    Per-phase sensitivity: ``"implied"`` (default) Delta_k = 12 G eta_k log(4/delta), the
    high-probability UAS that sigma_k = Delta_k sqrt(2 log(2.5/delta))/eps calibrates to
    (Gaussian mechanism at delta/2; the bound is taken to fail with probability <= delta/2 --
    the proof is in the missing App. D, so this is the paper's implied claim, not verified).
    ``"thm5_steps"`` uses 3 x Thm 5's UAS with the actual step count,
    Delta_k = 12 G eta_k ceil(n_k log(4/delta))/n_k (slightly larger).  Degenerate phases
    (n_k < 2) are skipped (no noise, no data).

    Composition: the phases run on disjoint S_k and phase j only post-processes w_{k<j}, so a
    replaced point changes exactly one phase's mechanism: the K-fold composition has
    sensitivities (0, .., Delta_k, .., 0) and its epsilon is the worst single phase
    (``"parallel"``, default; all phases have the same sigma_k/Delta_k).  ``"sequential"``
    composes all active phases as if every phase saw the replaced point -- a conservative
    illustration only (it keeps a single delta/2 failure event).
    """
    sched = cal.p1_alg3_schedule(n, eta, G, eps, delta, phase_sizes)
    composition = chk.choice("composition", composition, ("parallel", "sequential"))
    sensitivity = chk.choice("sensitivity", sensitivity, ("implied", "thm5_steps"))
    zs = []
    for p in sched.active:
        sens = p.sensitivity if sensitivity == "implied" else (
            12.0 * G * p.eta_k * p.steps / p.n_k)
        zs.append(p.sigma / sens)

    def events(scale):
        if composition == "parallel":
            ev = dpa.GaussianDpEvent(scale * min(zs))
        else:
            ev = dpa.ComposedDpEvent([dpa.GaussianDpEvent(scale * z) for z in zs])
        return {"rdp": (ev, NR.ADD_OR_REMOVE_ONE), "pld": (ev, NR.ADD_OR_REMOVE_ONE)}

    gdp = ((lambda s: 1.0 / (s * min(zs))) if composition == "parallel" else
           (lambda s: math.sqrt(sum(1.0 / z ** 2 for z in zs)) / s))
    return Mechanism(f"P1 Alg.3 ({composition}, n_k {phase_sizes})", sched.phases[0].sigma, eps,
                     delta, delta / 2.0, min(zs), events, gdp_mu=gdp,
                     note=(f"sigma_paper = sigma_1; {len(zs)} active of K={sched.K} phases "
                           f"(skipped {sched.degenerate}); Delta_k {sensitivity}; "
                           "accountant at delta/2 + failure delta/2"))


def p2_gradient_perturbation(T, n, G, eps, delta):
    """P2 Alg. 1 (Thm 1): T full-batch all-pairs gradient steps + N(0, sigma^2 I), sigma = p2_sigma.

    Replace-one sensitivity of the averaged pair gradient is 4G/n, so this is the T-fold
    composition of GaussianDpEvent(sigma/(4G/n)) (no subsampling; the paper's moments
    accountant with q = 1 is outside Abadi et al.'s regime, errata P2-E4).  ``rho`` is the
    zCDP budget T (4G/n)^2/(2 sigma^2) of the cross-check in errata P2-A.
    """
    sigma = cal.p2_sigma(T, n, G, eps, delta)
    z = sigma / cal.p2_sensitivity(n, G)
    T = chk.T(T)
    return Mechanism(f"P2 Alg.1 T={T}", sigma, eps, delta, 0.0, z, _plain(lambda s: s * z, T),
                     rho=lambda s: T / (2.0 * (s * z) ** 2),
                     note="T x GaussianDpEvent(sigma n/(4G)); eps_conv = zCDP cross-check",
                     gdp_mu=_mu_of(lambda s: s * z, T))


def p3_online(n, G, alpha, eps, delta, T1, exact_rho=True):
    """P3 Alg. 1 OnPairStrC (Thm 1): releases t = T1+1..n, each Pi_C(w_t + N(0, sigma_t^2 I)).

    Sensitivity of release t: 8G/(alpha t) (Lemma 4; replace-one), sigma_t^2 from
    ``p3_sigma2_online``, so every release has the same noise multiplier
    sqrt((n - T1)/(2 rho)) and the n - T1 releases compose to rho-zCDP (Lemmas 1-2).  The
    paper converts with Lemma 3 (``eps_paper_conversion``; = eps for the exact rho); the
    accountants convert the same Gaussian composition (RDP curve = rho*alpha) optimally.
    Pass T1 from :func:`~stabsim.privacy.calibration.p3_check_burnin`.
    """
    n = chk.n(n)
    T1 = chk.integer_at_least("T1", T1, 2)
    if T1 >= n:
        raise ValueError(f"T1={T1!r} is not allowed: T1 must be < n={n}")
    rho = cal.p3_rho(eps, delta, exact_rho)
    m = n - T1
    t_ref = T1 + 1
    sigma = math.sqrt(cal.p3_sigma2_online(t_ref, n, T1, G, alpha, rho))
    z = sigma / cal.p3_sensitivity(t_ref, G, alpha)
    return Mechanism(f"P3 Alg.1 online ({'exact' if exact_rho else 'approx'} rho)", sigma, eps,
                     delta, 0.0, z, _plain(lambda s: s * z, m),
                     rho=lambda s: m / (2.0 * (s * z) ** 2),
                     note=f"sigma_paper = sigma_t at t=T1+1={t_ref}; {m} releases; T1={T1}",
                     gdp_mu=_mu_of(lambda s: s * z, m))


def p3_offline(n, G, alpha, eps, delta):
    """P3 Alg. 3 OffPairStrC (Thm 5): one Gaussian on the average iterate.

    Sensitivity 8G log(n)/(alpha n) (the paper's bound on (1/n) sum_t 8G/(alpha t)); the
    variance p3_sigma2_offline is the classical Gaussian mechanism, valid only for eps <= 1.
    """
    sigma = math.sqrt(cal.p3_sigma2_offline(n, G, alpha, eps, delta))
    sens = 8.0 * G * math.log(n) / (alpha * n)
    return single_gaussian(sigma, sens, eps, delta, name="P3 Alg.3 offline")


def p4_dpsgd(n, T, G, eps, delta, pairwise, grid_step=1e-4, continuous=False, sigma2=None):
    """P4 Alg. 1 (pointwise) / Alg. 2 (pairwise): T steps of a subsampled Gaussian.

    Each step adds N(0, sigma^2) to the gradient of 1 sampled point (pointwise, rate 1/n) or
    of one uniformly drawn pair i != j (pairwise; touches a given point with probability 2/n,
    as a uniform size-2 subset, errata P4-E10); replace-one sensitivity 2G.  sigma^2 is the
    beta search of the paper (grid step ``grid_step``, or ``continuous``) unless given.
    RDP: T x SampledWithoutReplacementDpEvent(n, k, GaussianDpEvent(sigma/(2G))), REPLACE_ONE.
    PLD: T x PoissonSampledDpEvent(k/n, GaussianDpEvent(sigma/(2G))), ADD_OR_REMOVE_ONE -- see
    the module docstring for what this pair is (exact for an explicit neighbouring pair).
    """
    n, T, G = chk.n(n), chk.T(T), chk.G(G)
    k = 2 if pairwise else 1
    if sigma2 is None:
        res = cal.p4_beta_search(eps, delta, n, T, G, pairwise, grid_step=grid_step,
                                 continuous=continuous)
        sigma2, how = res.sigma2, (f"beta={res.beta:.4g} ({res.method}"
                                   + (f", step {res.grid_step:g})" if res.grid_step else ")"))
    else:
        how = "sigma^2 given"
    sigma = math.sqrt(chk.positive("sigma2", sigma2))
    z = sigma / (2.0 * G)

    def events(scale):
        g = dpa.GaussianDpEvent(scale * z)
        wor = dpa.SelfComposedDpEvent(dpa.SampledWithoutReplacementDpEvent(n, k, g), T)
        poi = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(k / n, g), T)
        return {"rdp": (wor, NR.REPLACE_ONE), "pld": (poi, NR.ADD_OR_REMOVE_ONE)}

    return Mechanism(f"P4 Alg.{2 if pairwise else 1} {'pairwise' if pairwise else 'pointwise'}",
                     sigma, eps, delta, 0.0, z, events,
                     note=f"{how}; rdp: WOR k={k} REPLACE_ONE; pld: Poisson q={k}/n (lower bound)",
                     pld_shape=(1.0 / z, k / n, T))


def typical_mechanisms():
    """The settings of the hand-off report (one typical point per paper).

    P0 n=1000, T=n^2, eta=n^-1.5, G=1, eps=1, delta=1e-5 (both readings of Eq. (5));
    P1 Alg. 3 n=1000, eta=1, G=1, eps=1, delta=1e-5; P2 n=1000, T=10, G=1, eps=1, delta=1e-5;
    P3 n=100, delta=1/n, eps=1, G=1, alpha=1, T1=7 (override; online) and alpha=0.1 (offline);
    P4 n=5000, T=1000, delta=1/n^2, eps=1, grid step 1e-4 (pointwise and pairwise).
    """
    n0 = 1000
    return [
        p0_output_perturbation(n0**2, n0, n0**-1.5, 1.0, 1.0, 1e-5, "printed"),
        p0_output_perturbation(n0**2, n0, n0**-1.5, 1.0, 1.0, 1e-5, "corrected"),
        p1_alg3(1000, 1.0, 1.0, 1.0, 1e-5),
        p2_gradient_perturbation(10, 1000, 1.0, 1.0, 1e-5),
        p3_online(100, 1.0, 1.0, 1.0, 1e-2, T1=7, exact_rho=True),
        p3_online(100, 1.0, 1.0, 1.0, 1e-2, T1=7, exact_rho=False),
        p3_offline(100, 1.0, 0.1, 1.0, 1e-2),
        p4_dpsgd(5000, 1000, 1.0, 1.0, 1 / 5000**2, pairwise=False),
        p4_dpsgd(5000, 1000, 1.0, 1.0, 1 / 5000**2, pairwise=True),
    ]
