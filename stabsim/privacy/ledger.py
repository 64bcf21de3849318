"""The privacy ledger: one mechanism description per algorithm, its exact eps, the sigma it needs.

A :class:`PrivacyMechanism` says, for one paper's calibration at one setting, what is
released (sensitivity, sampling, composition, the failure probability split off delta) --
the single description the checks, the CLI (``stabsim privacy``) and the report use.
:func:`account` returns the eps the calibrated noise actually buys:

* non-subsampled Gaussian compositions (P0 Alg. 2, P1 Alg. 3, P2 Alg. 1, P3 Alg. 1/3) are ONE
  Gaussian mechanism with mu = sqrt(sum_i (Delta_i/sigma_i)^2) (GDP composition); its eps(delta)
  is exact (analytic Gaussian mechanism, :mod:`.exact`), method "analytic GDP", with
  dp_accounting's PLD as a cross-check when its support fits the memory budget;
* the subsampled P4 Alg. 1/2 use dp_accounting's PLD (Poisson pair, discretisation relative to
  eps), method "PLD", with the RDP accountant (sampling without replacement, replace-one) beside
  it; beyond the PLD memory budget the RDP value is used (method "RDP") and the row says so.

Failure events (P0, P1): the sensitivity bound holds with probability >= 1 - delta/2 over the
algorithm's indices, so the Gaussian part is accounted at delta/2 and the failure probability
delta/2 is added back (total delta), as the papers' proofs do.

Verdict of a row: "private" iff the exact eps bought <= the target eps, else ``verdict_core.PROOF_GAP``
with the reason (priced at the paper's sensitivity bound: a gap in the argument, not a measured leak).  ``sigma_ratio`` = sigma used / sigma needed (> 1: more noise
than needed).
"""

from __future__ import annotations

import math
import tomllib
from functools import lru_cache
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Mapping

from scipy.optimize import brentq

from stabsim.judging.verdict import PROOF_GAP
from stabsim.privacy import _checks as chk
from stabsim.privacy import calibration as cal
from stabsim.privacy.memo import NO_MEMO_ENV, memo_path, read_memo, write_memo  # noqa: F401 (re-exported)
from stabsim.privacy.exact import (PLD_POINT_BUDGET, compose_mu, gdp_epsilon, gdp_mu, pld_gaussian_epsilon,
                    pld_interval, pld_points, pld_subsampled_epsilon, rdp_subsampled_epsilon)

__all__ = [
    "PrivacyMechanism", "Accounting", "LedgerRow", "account", "sigma_needed", "ledger",
    "p0_alg2", "p1_alg3", "p2_alg1", "p3_online", "p3_offline", "p4_dpsgd", "ALGORITHMS",
    "ledger_rows_for_suite", "suite_settings", "ledger_markdown", "ledger_figure", "format_ledger",
    "not_private_reason",
]

PRIVATE, NOT_PRIVATE = "private", PROOF_GAP
_REL = 1e-9   # tolerance of "bought <= target" (root-finding noise only)


@dataclass(frozen=True)
class PrivacyMechanism:
    """One paper's calibration at one setting, as released.

    Gaussian compositions: ``mu`` (the whole composition's Delta/sigma in GDP units) and
    ``ratios`` ((Delta_i/sigma_i, count_i) pairs it was composed from).  Subsampled steps:
    ``z`` = sigma/Delta per step, ``q`` = Poisson rate (PLD), ``k`` = subset size out of ``n``
    (RDP, without replacement) and ``steps``.  ``sigma`` is the reference noise std (which one:
    ``sigma_note``); scaling all noise by s scales mu by 1/s and z by s.
    """

    paper: str
    algorithm: str
    reading: str
    n: int
    T: int
    delta: float
    eps_target: float
    sigma: float
    sensitivity: str            # how Delta was derived (paper, equation)
    composition: str            # "single", "GDP (n releases)", "parallel (disjoint phases)", "subsampled"
    calibration: str            # "classical" | "zcdp-exact" | "zcdp-approx" | "zcdp-printed" | "moments" | "rdp"
    delta_fail: float = 0.0
    mu: float | None = None
    ratios: tuple = ()
    z: float | None = None
    q: float | None = None
    k: int | None = None
    steps: int | None = None
    sigma_note: str = ""
    note: str = ""

    @property
    def subsampled(self):
        return self.mu is None

    @property
    def delta_gaussian(self):
        """delta left for the Gaussian part: delta - failure probability."""
        return self.delta - self.delta_fail


@dataclass(frozen=True)
class Accounting:
    """eps of a mechanism at its delta: ``eps`` by ``method``, the PLD cross-check and RDP beside it."""

    eps: float
    method: str                 # "analytic GDP" | "PLD" | "RDP"
    eps_pld: float | None
    eps_rdp: float | None
    pld_interval: float | None
    pld_points: float | None
    note: str = ""


@dataclass(frozen=True)
class LedgerRow:
    """One ledger line (see :func:`ledger`)."""

    paper: str
    algorithm: str
    reading: str
    n: int
    T: int
    delta: float
    eps_target: float
    sigma: float
    eps_bought: float
    method: str
    eps_pld: float | None
    eps_rdp: float | None
    sigma_needed: float
    sigma_ratio: float
    verdict: str
    reason: str
    study: str = ""
    note: str = ""

    @property
    def private(self):
        return self.verdict == PRIVATE

    @property
    def tightness(self):
        """eps bought / eps claimed (<= 1: private)."""
        return self.eps_bought / self.eps_target

    def as_dict(self):
        return asdict(self)


# ----------------------------------------------------------------------------- accounting
def account(mech, scale=1.0, cross_check=True, rdp=None, refine=True, coarsen=1.0):
    """eps (total delta = ``mech.delta``) of ``mech`` with every noise std multiplied by ``scale``.

    Gaussian compositions: exact analytic GDP; PLD cross-check (interval eps/1000) only when
    :func:`~stabsim.privacy.exact.pld_points` <= the budget, else the note says it was skipped.
    Subsampled: PLD at :func:`~stabsim.privacy.exact.pld_interval` (refined relative to the eps
    found when that is much smaller than the target), RDP beside it (``rdp``: default True);
    RDP alone (method "RDP") when the PLD support would exceed the budget.  ``refine``: when the
    PLD eps is below target/10, recompute it at an interval relative to that eps (>= 5e-6).
    """
    scale = chk.positive("scale", scale)
    d = mech.delta_gaussian
    if not mech.subsampled:
        mu = mech.mu / scale
        eps = gdp_epsilon(d, mu)
        e_pld = iv = pts = None
        note = ""
        if cross_check:
            iv = pld_interval(max(eps, 1e-3))
            pts = pld_points(mu, iv)
            if pts <= PLD_POINT_BUDGET:
                e_pld = pld_gaussian_epsilon(mu, d, iv)
            else:
                note = (f"PLD cross-check skipped: ~{pts:.2g} points > budget {PLD_POINT_BUDGET:.2g} "
                        f"(mu = {mu:.3g}); exact analytic value used")
        return Accounting(eps, "analytic GDP", e_pld, None, iv, pts, note)
    z = mech.z * scale
    e_rdp = rdp_subsampled_epsilon(z, mech.n, mech.k, mech.steps, d) if rdp in (None, True) else None
    iv = pld_interval(mech.eps_target, mech.steps) * coarsen
    pts = pld_points(1.0 / z, iv, mech.q, mech.steps)
    if pts > PLD_POINT_BUDGET:
        if e_rdp is None:
            e_rdp = rdp_subsampled_epsilon(z, mech.n, mech.k, mech.steps, d)
        return Accounting(e_rdp, "RDP", None, e_rdp, iv, pts,
                          f"PLD skipped: ~{pts:.2g} points > budget {PLD_POINT_BUDGET:.2g}; RDP (upper bound) used")
    e_pld = pld_subsampled_epsilon(z, mech.q, mech.steps, d, iv)
    if refine and 0.0 < e_pld < mech.eps_target / 10.0:   # refine relative to the eps actually found
        iv2 = pld_interval(max(e_pld, 0.01), mech.steps, lo=5e-6)
        pts2 = pld_points(1.0 / z, iv2, mech.q, mech.steps)
        if iv2 < iv and pts2 <= PLD_POINT_BUDGET:
            iv, pts = iv2, pts2
            e_pld = pld_subsampled_epsilon(z, mech.q, mech.steps, d, iv)
    return Accounting(e_pld, "PLD", e_pld, e_rdp, iv, pts,
                      "PLD of the Poisson pair (exact for an explicit neighbouring pair; see accountant)")


def sigma_needed(mech, eps=None):
    """Smallest reference sigma (``mech.sigma`` x scale) whose eps <= ``eps`` (default: the target).

    Gaussian compositions: closed form via the largest admissible mu (exact).  Subsampled:
    root of log(eps(scale)/target) with the PLD (RDP when beyond the budget): bracketed with a
    10x coarser discretisation, then polished at the accounting one (~0.1 % in sigma).
    """
    target = mech.eps_target if eps is None else chk.eps(eps)
    if not mech.subsampled:
        return mech.sigma * mech.mu / gdp_mu(target, mech.delta_gaussian)

    def f(log_s, coarsen=1.0):
        e = account(mech, math.exp(log_s), rdp=False, refine=False, coarsen=coarsen).eps
        return math.log(max(e, 1e-300) / target)

    # locate the root with a 10x coarser PLD (cheap), then polish at the accounting interval
    # with a Newton step (slope from the coarse curve) and a secant step: ~3 fine evaluations.
    # brentq evaluates the bracket's ends again, which the bracketing loops just did: remembered
    fc = lru_cache(maxsize=None)(lambda x: f(x, 10.0))
    lo, hi = -0.35, 0.35
    while fc(lo) <= 0:
        lo -= 0.7
    while fc(hi) > 0:
        hi += 0.7
    x0 = brentq(fc, lo, hi, xtol=1e-3)
    h = 0.02
    slope = (fc(x0 + h) - fc(x0 - h)) / (2 * h)
    g0 = f(x0)
    x1 = x0 - g0 / slope if slope < 0 else x0
    g1 = f(x1)
    x2 = x1 - g1 * (x1 - x0) / (g1 - g0) if g1 != g0 else x1
    return mech.sigma * math.exp(x2)


# ----------------------------------------------------------------------------- reasons
#: per paper, the docs/errata.md entry on its use of the classical Gaussian mechanism beyond eps <= 1.
GAUSSIAN_RANGE_ERRATA = {"P0": "P0-E11", "P1": "P1-E10", "P3": "P3-E7"}


def not_private_reason(mech, eps_bought):
    """Why a calibration buys less privacy than claimed (calibration kind and setting)."""
    e, d = mech.eps_target, mech.delta
    if mech.calibration == "classical":
        dd = mech.delta_gaussian
        const = "1.25/delta" if mech.delta_fail == 0 else "1.25/(delta/2)"
        printed_p0 = "printed" in mech.reading and mech.paper == "P0"
        if e > 1:
            why = (f"classical Gaussian formula sigma = Delta sqrt(2 ln({const}))/eps used at eps = {e:g}, "
                   "outside its proven range eps <= 1 (Dwork-Roth Thm A.1"
                   + (f"; {GAUSSIAN_RANGE_ERRATA[mech.paper]}" if mech.paper in GAUSSIAN_RANGE_ERRATA else "") + "); ")
        else:
            why = f"classical Gaussian formula sigma = Delta sqrt(2 ln({const}))/eps at eps = {e:g}; "
        why += (f"exact eps (Gaussian part at delta = {dd:.3g}" + (" + failure delta/2" if mech.delta_fail else "")
                + f") is {eps_bought:.4g}")
        if printed_p0:
            why += "; the printed Eq. (5) drops the factor e of Delta_T^2 (P0-E2)"
        return why
    if mech.calibration == "zcdp-printed":
        return (f"the printed rho substitution (sqrt(log 1/delta) + eps - sqrt(log 1/delta))^2 equals eps^2 "
                f"(P3-E1): noise {math.sqrt(cal.p3_rho(e, d) / e ** 2):.3g} x the exact one; exact eps {eps_bought:.4g}")
    if mech.calibration == "zcdp-approx":
        return (f"rho ~ eps^2/(4 log 1/delta) over-states the exact root when eps/log(1/delta) = "
                f"{e / math.log(1 / d):.2g} is not << 1 (P3-E2); exact eps {eps_bought:.4g}")
    return f"exact eps {eps_bought:.4g} > target {e:g}"


# ----------------------------------------------------------------------------- on-disk memo
def _accounted(mech) -> tuple[Accounting, float]:
    """(``account(mech)``, ``sigma_needed(mech)``), from the on-disk memo when this source has
    computed them before (the PLD work of a ledger row: seconds each)."""
    path = memo_path()
    memo = read_memo(path)
    key = repr(mech)
    if key in memo:
        acc, need = memo[key]
        return Accounting(**acc), float(need)
    acc, need = account(mech), sigma_needed(mech)
    memo = read_memo(path)  # another process may have added rows meanwhile
    memo[key] = [asdict(acc), need]
    write_memo(path, memo)
    return acc, need


@lru_cache(maxsize=4096)
def _row(mech, study=""):
    acc, need = _accounted(mech)
    ok = acc.eps <= mech.eps_target * (1 + _REL)
    reason = (f"exact eps {acc.eps:.4g} <= {mech.eps_target:g}; sigma is {mech.sigma / need:.3g} x the needed"
              if ok else not_private_reason(mech, acc.eps))
    note = "; ".join(x for x in (mech.note, acc.note) if x)
    return LedgerRow(mech.paper, mech.algorithm, mech.reading, mech.n, mech.T, mech.delta, mech.eps_target,
                     mech.sigma, acc.eps, acc.method, acc.eps_pld, acc.eps_rdp, need, mech.sigma / need,
                     PRIVATE if ok else NOT_PRIVATE, reason, study, note)


def ledger(settings):
    """Ledger rows for ``settings``: PrivacyMechanism objects, or (study, PrivacyMechanism) pairs."""
    rows = []
    for s in settings:
        study, mech = (s if isinstance(s, tuple) else ("", s))
        rows.append(_row(mech, study))
    return rows


# ----------------------------------------------------------------------------- mechanisms
def p0_alg2(n, eps, delta, reading="corrected", delta_T="eq9", T=None, eta=None, G=1.0):
    """P0 Alg. 2 (Thm 4): output perturbation wbar_T + N(0, sigma^2 I), sigma^2 from Eq. (5).

    Sensitivity Delta_T = :func:`~stabsim.privacy.calibration.p0_delta_T` at gamma = delta/2
    (``delta_T`` = "eq9": Eq. (9) with c = 3 as printed, the default and the Delta_T Eq. (5)
    is calibrated to; "proof": the un-simplified proof form, P0-E4), failure probability delta/2.
    ``reading``: Eq. (5) "printed" (factor 8) or "corrected" (8e, P0-E2).  T = n^2 and
    eta = n^-1.5 by default (Cor. 2); with delta_T = "eq9" the ratio sigma/Delta_T, hence eps,
    does not depend on n, T, eta or G.
    """
    n = chk.n(n)
    T = n * n if T is None else chk.T(T)
    eta = n ** -1.5 if eta is None else chk.eta(eta)
    sigma = math.sqrt(cal.p0_sigma2(T, n, eta, G, eps, delta, reading))
    sens = cal.p0_delta_T(T, n, eta, G, delta / 2.0, delta_T)
    return PrivacyMechanism("P0", "p0_alg2", f"Eq.(5) {reading}, Delta_T {delta_T}", n, T, delta, eps, sigma,
                            f"Delta_T = Eq. (9) {delta_T} reading at gamma = delta/2 = {sens:.4g}",
                            "single", "classical", delta_fail=delta / 2.0, mu=sens / sigma,
                            ratios=((sens / sigma, 1),), sigma_note="output noise std")


def p1_alg3(n, eps, delta, eta=1.0, G=1.0, phase_sizes="floor"):
    """P1 Alg. 3 (Thm 10): K phases on disjoint halves, phase k releases wbar_k + N(0, sigma_k^2 I).

    sigma_k = Delta_k sqrt(2 log(2.5/delta))/eps with Delta_k = 12 G eta_k log(4/delta) (the
    high-probability UAS it is calibrated to; failure delta/2 -- implied by the paper, proof in the
    missing App. D).  A replaced point lies in exactly one phase and later phases only
    post-process earlier outputs: parallel composition, eps = the worst single phase (all phases
    have the same ratio).  Degenerate phases (n_k < 2) are skipped (no noise, no data).
    """
    sched = cal.p1_alg3_schedule(n, eta, G, eps, delta, phase_sizes)
    ratios = [p.sensitivity / p.sigma for p in sched.active]
    return PrivacyMechanism("P1", "p1_alg3", "Thm 10 (implied Delta_k)", sched.n, len(ratios), delta, eps,
                            sched.phases[0].sigma, "Delta_k = 12 G eta_k log(4/delta) (Thm 5 UAS x 3, App. D)",
                            "parallel (disjoint phases)", "classical", delta_fail=delta / 2.0, mu=max(ratios),
                            ratios=tuple((r, 1) for r in ratios), sigma_note="sigma_1 (phase 1)")


def p2_alg1(n, T, eps, delta, G=1.0):
    """P2 Alg. 1 (Thm 1): T full-batch all-pairs gradient steps + N(0, sigma^2 I), sigma = 8G sqrt(T log 1/delta)/(n eps).

    Replace-one sensitivity of the averaged pair gradient 4G/n (replacing z_i changes 2(n-1) of
    the n(n-1) pair gradients by <= 2G each); no subsampling (q = 1, P2-E4), so the T releases
    compose to one Gaussian with mu = sqrt(T) 4G/(n sigma) = eps/(2 sqrt(log 1/delta)).
    """
    sigma = cal.p2_sigma(T, n, G, eps, delta)
    r = cal.p2_sensitivity(n, G) / sigma
    return PrivacyMechanism("P2", "p2_alg1", "Thm 1", chk.n(n), chk.T(T), delta, eps, sigma,
                            "4G/n per step (replace-one, all-pairs gradient)", f"GDP ({T} releases)", "moments",
                            mu=compose_mu([r] * int(T)), ratios=((r, int(T)),), sigma_note="per-step noise std")


_P3_CAL = {"exact": "zcdp-exact", "approx": "zcdp-approx", "printed": "zcdp-printed"}


def p3_online(n, eps, delta=None, reading="exact", T1=7, G=1.0, alpha=1.0):
    """P3 Alg. 1 (Thm 1): releases t = T1+1..n of Pi_C(w_t + N(0, sigma_t^2 I)).

    Delta_t = 8G/(alpha t) (Lemma 4), sigma_t^2 = 32 G^2 (n - T1)/(alpha^2 t^2 rho) (Alg. 1 step 12),
    so every release has Delta_t^2/sigma_t^2 = 2 rho/(n - T1) and the n - T1 releases compose to
    mu = sqrt(2 rho) (rho-zCDP Gaussian releases are exactly sqrt(2 rho)-GDP), whatever T1, G,
    alpha.  ``reading`` of rho: "exact" root of rho + 2 sqrt(rho log 1/delta) = eps (P3-E1),
    "approx" eps^2/(4 log 1/delta) (the paper's, P3-E2), "printed" eps^2 (the garbled printed
    substitution, P3-E1).  delta defaults to 1/n (the experiments' choice).
    """
    n = chk.n(n)
    delta = 1.0 / n if delta is None else chk.delta(delta)
    reading = chk.choice("reading", reading, tuple(_P3_CAL))
    rho = {"exact": lambda: cal.p3_rho(eps, delta, True), "approx": lambda: cal.p3_rho(eps, delta, False),
           "printed": lambda: chk.eps(eps) ** 2}[reading]()
    m = n - chk.integer_at_least("T1", T1, 2)
    t_ref = T1 + 1
    sigma = math.sqrt(cal.p3_sigma2_online(t_ref, n, T1, G, alpha, rho))
    r = cal.p3_sensitivity(t_ref, G, alpha) / sigma        # the same for every release t
    return PrivacyMechanism("P3", "p3_online", f"rho {reading}", n, m, delta, eps, sigma,
                            "8G/(alpha t) per release (Lemma 4)", f"GDP ({m} zCDP releases)", _P3_CAL[reading],
                            mu=compose_mu([r] * m), ratios=((r, m),), sigma_note=f"sigma_t at t = T1+1 = {t_ref}",
                            note=f"rho = {rho:.5g}; mu = sqrt(2 rho)")


def p3_offline(n, eps, delta=None, G=1.0, alpha=1.0):
    """P3 Alg. 3 (Thm 5): one Gaussian on the average iterate, sigma^2 = 128 G^2 log^2 n log(1.25/delta)/(alpha^2 n^2 eps^2).

    Sensitivity 8G log(n)/(alpha n) (the paper's bound on (1/n) sum_t 8G/(alpha t)); classical
    Gaussian mechanism (Def. 2), proven for eps < 1 only (P3-E7).  delta defaults to 1/n.
    """
    n = chk.n(n)
    delta = 1.0 / n if delta is None else chk.delta(delta)
    sigma = math.sqrt(cal.p3_sigma2_offline(n, G, alpha, eps, delta))
    sens = 8.0 * G * math.log(n) / (alpha * n)
    return PrivacyMechanism("P3", "p3_offline", "Alg. 3", n, 1, delta, eps, sigma,
                            "8G log(n)/(alpha n) (Alg. 3)", "single", "classical", mu=sens / sigma,
                            ratios=((sens / sigma, 1),), sigma_note="output noise std")


def p4_dpsgd(n, T, eps, delta=None, pairwise=False, G=1.0, grid_step=1e-4):
    """P4 Alg. 1 (pointwise) / Alg. 2 (pairwise): T steps of a subsampled Gaussian, sigma^2 by the beta search.

    Replace-one sensitivity 2G per step on a uniform subset of size k = 1 (pointwise) or 2
    (pairwise: touches a point w.p. 2/n) of n.  PLD: Poisson rate q = k/n (the explicit-pair
    mapping of :mod:`.accountant`); RDP: sampling without replacement, replace-one (upper bound).
    delta defaults to 1/n^2 (P4's experiments).  Raises InfeasiblePrivacyParameters where no
    beta satisfies Thm 2/5's conditions.
    """
    n, T = chk.n(n), chk.T(T)
    delta = 1.0 / n ** 2 if delta is None else chk.delta(delta)
    k = 2 if pairwise else 1
    res = cal.p4_beta_search(eps, delta, n, T, G, pairwise, grid_step=grid_step)
    sigma = math.sqrt(res.sigma2)
    return PrivacyMechanism("P4", f"p4_alg{k}", f"Thm {5 if pairwise else 2} beta={res.beta:.4g}", n, T, delta,
                            eps, sigma, "2G per step (replace-one)", "subsampled", "rdp",
                            z=sigma / (2.0 * G), q=k / n, k=k, steps=T, sigma_note="per-step noise std")


ALGORITHMS = {"p0_alg2": p0_alg2, "p1_alg3": p1_alg3, "p2_alg1": p2_alg1, "p3_online": p3_online,
              "p3_offline": p3_offline, "p4_alg1": p4_dpsgd, "p4_alg2": p4_dpsgd}


# ----------------------------------------------------------------------------- suite
def _study_toml(studies_dir, sid, profile=None):
    """The study file's sections with ``profile``'s overrides laid over them (None: ``full`` where
    the file defines it, as ``stabsim run`` does), so that a row states the n and T that ran."""
    from stabsim.study import apply_profile

    path = Path(studies_dir) / f"{sid}.toml"
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    return apply_profile(str(path), raw, profile)[2]


def _as_list(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


def suite_settings(studies_dir=None, study_ids=None):
    """(study id, PrivacyMechanism) for the calibrations the suite's privacy studies use.

    Read from the study TOMLs with the profile each study ran under laid over them: ``study_ids``
    may map each id to its profile (``{"p0_thm4_sigma": "quick"}``; None or a plain collection of
    ids: the ``full`` profile where defined, else the base values), so that the rows' n and T are
    those of the runs:
    p0_thm4_sigma (both readings of Eq. (5)), p0_thm5_private (corrected, its n sweep),
    p1_thm10_dp, p2_thm1_privacy, p3_calibration (online: exact/approx/printed rho; offline),
    p3_thm2_thm4_strc (online, exact and approximate rho), p3_offline_rates,
    p4_thm2_thm5_sigma2 (feasible eps only).  Unknown/missing study files are skipped, and so
    are studies not in ``study_ids`` when it is given (e.g. the studies of one report).
    """
    from stabsim.study import default_studies_dir
    from stabsim.privacy.errors import InfeasiblePrivacyParameters

    sd = Path(studies_dir) if studies_dir is not None else default_studies_dir()
    out = []
    profiles = dict(study_ids) if isinstance(study_ids, Mapping) else {}

    def have(sid):
        return (study_ids is None or sid in study_ids) and (sd / f"{sid}.toml").is_file()

    def _toml(_sd, sid):   # each study under the profile it ran
        return _study_toml(_sd, sid, profiles.get(sid))

    if have("p0_thm4_sigma"):
        t = _toml(sd, "p0_thm4_sigma")
        n, delta = t["data"]["n"], t["privacy"]["delta"]
        for reading in ("printed", "corrected"):
            for e in _as_list(t["sweep"]["eps"]):
                out.append(("p0_thm4_sigma", p0_alg2(n, e, delta, reading)))
    if have("p0_thm5_private"):
        t = _toml(sd, "p0_thm5_private")
        for e in _as_list(t["sweep"].get("eps", t["p0"].get("eps", 1.0))):
            for n in _as_list(t["sweep"].get("n", t["data"]["n"])):
                out.append(("p0_thm5_private", p0_alg2(n, e, t["p0"]["delta"], t["p0"].get("reading", "corrected"))))
    if have("p1_thm10_dp"):
        t = _toml(sd, "p1_thm10_dp")
        for e in _as_list(t["sweep"].get("eps", t["privacy"]["eps"])):
            for n in _as_list(t["sweep"].get("n", t["data"]["n"])):
                out.append(("p1_thm10_dp", p1_alg3(n, e, t["privacy"]["delta"])))
    if have("p2_thm1_privacy"):
        t = _toml(sd, "p2_thm1_privacy")
        q = t["privacy"]
        for e in _as_list(t["sweep"].get("eps", q.get("eps", 1.0))):
            for T in _as_list(t["sweep"].get("T", q.get("T", 10))):
                out.append(("p2_thm1_privacy", p2_alg1(q["n"], T, e, q["delta"], q.get("G", 1.0))))
    for sid in ("p3_calibration", "p3_thm2_thm4_strc", "p3_offline_rates"):
        if not have(sid):
            continue
        t = _toml(sd, sid)
        a, sw = t["algorithm"], t.get("sweep", {})
        variants = _as_list(sw.get("variant", a.get("variant", "OnPairStrC")))
        for e in _as_list(sw.get("eps", a.get("eps", 1.0))):
            for n in _as_list(sw.get("n", t["data"]["n"])):
                delta = a.get("delta", 0.0) or 1.0 / n
                if any(v.startswith("On") for v in variants):
                    readings = ("exact", "approx", "printed") if sid == "p3_calibration" else ("exact", "approx")
                    for r in readings:
                        out.append((sid, p3_online(n, e, delta, r)))
                if any(v.startswith("Off") for v in variants):
                    out.append((sid, p3_offline(n, e, delta)))
    if have("p4_thm2_thm5_sigma2"):
        t = _toml(sd, "p4_thm2_thm5_sigma2")
        q, sw = t["privacy"], t.get("sweep", {})
        for pw in _as_list(sw.get("pairwise", q.get("pairwise", False))):
            for e in _as_list(sw.get("eps", q.get("eps", 1.0))):
                delta = q.get("delta", 0.0) or 1.0 / q["n"] ** 2
                try:
                    out.append(("p4_thm2_thm5_sigma2", p4_dpsgd(q["n"], q["T"], e, delta, bool(pw))))
                except InfeasiblePrivacyParameters:
                    continue
    return out


def ledger_rows_for_suite(studies_dir=None, study_ids=None):
    """Ledger rows of :func:`suite_settings` (each row's ``study`` names its study)."""
    return ledger(suite_settings(studies_dir, study_ids))


# ----------------------------------------------------------------------------- output
_COLS = ("study", "paper", "algorithm", "reading", "n", "T", "delta", "eps_target", "sigma", "eps_bought", "method",
         "eps_pld", "eps_rdp", "sigma_needed", "sigma_ratio", "verdict")


def _f(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def format_ledger(rows, reasons=True):
    """Plain-text table of ledger rows (the ``stabsim privacy`` output)."""
    cols = [c for c in _COLS if c != "study" or any(r.study for r in rows)]
    table = [[_f(getattr(r, c)) for c in cols] for r in rows]
    w = [max(len(c), *(len(t[i]) for t in table)) if table else len(c) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w[i]) for i, c in enumerate(cols))]
    lines.append("  ".join("-" * x for x in w))
    for r, t in zip(rows, table):
        lines.append("  ".join(v.ljust(w[i]) for i, v in enumerate(t)))
        if reasons:
            lines.append("    reason: " + r.reason + (f" [{r.note}]" if r.note else ""))
    return "\n".join(lines)


def ledger_markdown(rows):
    """Markdown table of ledger rows (for the report), with a per-paper summary of the sigma ratios."""
    head = ("| study | paper | algorithm | reading | n | T | delta | eps claimed | sigma | eps bought (exact) | method "
            "| PLD check | RDP | sigma needed | sigma ratio | verdict | reason |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        verdict = r.verdict if r.private else f"**{r.verdict}**"
        cells = [r.study, r.paper, r.algorithm, r.reading, str(r.n), str(r.T), f"{r.delta:.3g}", f"{r.eps_target:g}",
                 _f(r.sigma), _f(r.eps_bought), r.method, _f(r.eps_pld), _f(r.eps_rdp), _f(r.sigma_needed),
                 _f(r.sigma_ratio), verdict, "" if r.private else r.reason.replace("|", "\\|")]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| paper | rows | not private | sigma ratio (used/needed) min-max | eps bought/claimed min-max |")
    lines.append("|---|---|---|---|---|")
    for p in sorted({r.paper for r in rows}):
        rs = [r for r in rows if r.paper == p]
        sr = [r.sigma_ratio for r in rs]
        tt = [r.tightness for r in rs]
        lines.append(f"| {p} | {len(rs)} | {sum(not r.private for r in rs)} | {min(sr):.3g}-{max(sr):.3g} "
                     f"| {min(tt):.3g}-{max(tt):.3g} |")
    return "\n".join(lines) + "\n"


def ledger_figure(rows, path):
    """Bought vs claimed eps per paper (log-log, diagonal = exactly as claimed); writes ``path``, returns it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 5.2))
    marks = {"P0": "o", "P1": "s", "P2": "^", "P3": "D", "P4": "v"}
    for i, p in enumerate(sorted({r.paper for r in rows})):
        rs = [r for r in rows if r.paper == p and r.eps_bought > 0]
        ok = [r for r in rs if r.private]
        bad = [r for r in rs if not r.private]
        if ok:
            ax.loglog([r.eps_target for r in ok], [r.eps_bought for r in ok], marks.get(p, "o"), color=f"C{i}",
                      alpha=0.75, label=f"{p} private")
        if bad:
            ax.loglog([r.eps_target for r in bad], [r.eps_bought for r in bad], marks.get(p, "o"), color=f"C{i}",
                      mfc="none", ms=9, label=f"{p} not private")
    es = [r.eps_target for r in rows] + [r.eps_bought for r in rows if r.eps_bought > 0]
    if es:
        lo, hi = min(es) / 2, max(es) * 2
        ax.loglog([lo, hi], [lo, hi], "k--", lw=1, label="bought = claimed")
    ax.set_xlabel("eps claimed (calibration target)")
    ax.set_ylabel("eps bought (exact: analytic GDP; P4: PLD)")
    ax.set_title("Privacy ledger: what each paper's noise buys (above the diagonal: not private)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def with_reading(mech, **changes):
    """A copy of ``mech`` with fields changed (e.g. another target eps for :func:`sigma_needed`)."""
    return replace(mech, **changes)
