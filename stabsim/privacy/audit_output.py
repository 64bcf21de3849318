"""Known-randomness audits of the output-perturbation algorithms.

Threat models of the audits (:mod:`stabsim.privacy.audit_runner`):

``every_iterate``     the adversary sees w_0..w_T (gradient perturbation: P2 Alg. 1, P4 Algs. 1/2).
``final_output``      the adversary sees the released output only; the sampled indices and the
                      noise are secret.
``known_randomness``  (this module; output perturbation: P0 Alg. 2, P1 Alg. 3, the four P3 variants)
                      the adversary knows the algorithm's internal randomness xi (sampled indices,
                      burn-in points, stream order) -- everything but the privacy noise -- and sees
                      the Gaussian release.  The papers calibrate the noise to a sensitivity Delta
                      that bounds ||A(S; xi) - A(S'; xi)|| for (almost) every xi, so the calibration
                      must resist this adversary too.

Given xi, the release is exactly a Gaussian mechanism: M(S) = A(S; xi) + b, b ~ N(0, sigma^2 I)
(online P3: the sequence of releases A_t(S; xi) + b_t, b_t ~ N(0, sigma_t^2 I)).  With
v = A(S'; xi) - A(S; xi), whitened by the calibrated noise std (sigma_t per release), the most
powerful test of S against S' uses the projection statistic

    z = < (M - A(S; xi)) / sigma, v / ||v|| >  ~  N(0, s^2) on S,  N(mu_xi, s^2) on S',

with mu_xi = ||v|| / sigma (the GDP parameter of the mechanism given xi; Dong, Roth, Su 2022) and
s = (noise actually added) / (calibrated sigma) (1 for a correct implementation, the noise scale
for the sanity runs).  The trade-off curve is exactly G_{mu_xi / s}, so the GDP conversion is exact
here.  The auditor knows mu_xi (computed from the twin run on S and S' with shared xi) and
estimates s from the statistic itself (sum of z^2 on S and of (z - mu_xi)^2 on S' is s^2 chi^2_{2R});
the upper confidence bound s_upper gives the lower confidence bound mu_lower = max_xi mu_xi / s_upper
and eps_lower = eps_{mu_lower}(delta), a valid lower bound on the eps this adversary faces.

What each calibration promises (Delta of the paper, noise sigma = c Delta / eps):

* P0 Alg. 2 (Thm 4): Delta_T of Eq. (9) at gamma = delta/2 (``calibration.p0_delta_T``, reading
  "eq9"), a bound on ||wbar_T - wbar'_T|| with probability >= 1 - gamma over the indices;
  sigma = sqrt(2 ln(2.5/delta)) Delta_T / eps (Eq. (5), corrected reading P0-E2).
* P1 Alg. 3 (Thm 10): phase k releases wbar_k + u_k with Delta_k = 12 G eta_k log(4/delta) (the UAS
  bound of Thm 5 / 6(a) in high probability), sigma_k = Delta_k sqrt(2 log(2.5/delta)) / eps.  The
  canary sits in S_1 (``audit_runner._allowed_indices``): the later phases never read it and start,
  on S and S', from the phase-1 release: post-processing.  The audited release is phase 1's.
* P3 offline (Alg. 3/4, Thm 5): Delta = 8 G~ log(n) / (alpha n) (Lemma 4 averaged over the
  iterates), sigma^2 = 128 G~^2 log^2 n log(1.25/delta) / (alpha^2 n^2 eps^2) (Def. 2).
* P3 online (Alg. 1/2, Thms 1/3): every release t > T_1 is w_t + n_t with Delta_t = 8 G~/(alpha t)
  (Lemma 4), sigma_t^2 = Delta_t^2 (n - T_1)/(2 rho) (Lemmas 1, 2): the releases compose to
  mu = sqrt(sum_t Delta_t^2/sigma_t^2) = sqrt(2 rho).  The adversary sees every release.

The *sensitivity ratio* of a sequence xi is ||v|| / Delta (online P3: max_t ||v_t|| / Delta_t): at most
1 is what the calibration promises; above 1 the paper's sensitivity bound fails on that sequence (a
finding; for the high-probability bounds of P0 and P1 a finding only if it fails on more than a
fraction gamma of the sequences).  ``worst_instance`` searches the instance (S, replaced example,
replacement) that maximises it: the audit design, a sample of a synthetic problem and the BFGT
lower-bound instance (:mod:`stabsim.engine.lower_bounds`), at the allowed positions k, with the canary,
the label flip, the engine's "farthest" neighbour and points on the data's norm sphere.

Where the release is projected (P3: Pi_C(w + n), post-processing of the Gaussian mechanism the
calibration protects) the pre-projection release is rebuilt from the noise numbers the kernel
documents (:mod:`stabsim.kernels.giga`: ``STREAM_NOISE`` counters t p + c online, (n+1) p + c
offline) times the record's sigma, and checked against the implementation's projected release
(``release_mismatch``: the largest difference; above ``MISMATCH_TOL`` the implementation does not
add the noise its record states, a finding).  P0 (W unconstrained) and P1 (no projection after
the noise) are observed as released.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq
from scipy.stats import chi2, norm

from stabsim.privacy import algorithms as palg
from stabsim.privacy import calibration as cal
from stabsim.privacy.exact import gdp_epsilon

__all__ = ["KNOWN_RANDOMNESS", "OUTPUT_PERTURBATION", "THREAT_MODELS", "KnownRandomnessScores",
           "KnownRandomnessReport", "known_randomness_scores", "known_randomness_report",
           "worst_instance", "gdp_delta", "mixture_epsilon", "bound_failure_probability"]

KNOWN_RANDOMNESS = "known_randomness"
#: the algorithms that release a noisy output of a non-private trajectory
OUTPUT_PERTURBATION = ("p0_alg2", "p1_alg3", "p3_onpairstrc", "p3_onpairc", "p3_offpairstrc", "p3_offpairc")
#: every threat model of the audits, with what the adversary sees
THREAT_MODELS = {
    "every_iterate": "every iterate w_0..w_T; sampled indices and noise secret",
    "final_output": "the released output only; sampled indices and noise secret",
    KNOWN_RANDOMNESS: "the Gaussian release and the internal randomness (indices, burn-in, order); noise secret",
}
#: the largest difference allowed between a rebuilt release (projected) and the implementation's
MISMATCH_TOL = 1e-8


@dataclass
class KnownRandomnessScores:
    """Per replicate xi (all in units of the *calibrated* noise std, noise_scale = 1):

    z0, z1   the projection statistic on S and on S' (N(0, s^2), N(shift, s^2));
    shift    mu_xi = ||v|| / sigma (online P3: sqrt(sum_t ||v_t||^2 / sigma_t^2));
    ratio    the sensitivity ratio ||v|| / Delta (online P3: max_t ||v_t|| / Delta_t);
    mu_cal   the calibration's GDP parameter Delta / sigma (online P3: sqrt(2 rho));
    Delta    the paper's sensitivity (online P3: Delta_{T_1+1}); sigma_paper the calibrated std.
    """

    z0: np.ndarray
    z1: np.ndarray
    shift: np.ndarray
    ratio: np.ndarray
    mu_cal: float
    Delta: float
    sigma_paper: float
    record: dict
    canary: object
    release_mismatch: float = 0.0
    released: str = "observed"
    notes: list = field(default_factory=list)


def gdp_delta(eps, mu):
    """delta(eps) of mu-GDP: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (0 for mu = 0), vectorised over mu."""
    mu = np.asarray(mu, float)
    out = np.zeros_like(mu)
    m = mu > 0
    if m.any():
        mm = mu[m]
        out[m] = norm.cdf(-eps / mm + mm / 2) - np.exp(eps) * norm.cdf(-eps / mm - mm / 2)
    return np.maximum(out, 0.0)


def mixture_epsilon(mus, delta):
    """eps(delta) of the mechanism (xi, A(S; xi) + b) with xi uniform over the given sequences:
    its privacy profile is the average of the per-sequence Gaussian profiles,
    delta(eps) = mean_xi delta_{mu_xi}(eps) (the adversary sees xi, so the test splits by xi)."""
    mus = np.asarray(mus, float)
    f = lambda e: float(gdp_delta(e, mus).mean()) - delta  # noqa: E731
    if f(0.0) <= 0:
        return 0.0
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
        if hi > 1e6:
            return math.inf
    return float(brentq(f, 0.0, hi, xtol=1e-12))


def bound_failure_probability(algorithm, delta):
    """The probability over xi with which the paper's sensitivity bound may fail: P0 Eq. (9) holds
    w.p. >= 1 - gamma, gamma = delta/2 (Alg. 2); P1's UAS bound (the log(4/delta) factor) in high
    probability, at most delta (the most an (eps, delta) proof can spend); P3 Lemma 4 always (0)."""
    if algorithm == "p0_alg2":
        return delta / 2.0
    if algorithm == "p1_alg3":
        return delta
    return 0.0


# ---------------------------------------------------------------------------- per algorithm
def _projection(A0, A1, E0, E1):
    """(z0, z1, shift) from the whitened noise-free outputs A (R, m) and noises E (R, m)."""
    v = A1 - A0
    shift = np.linalg.norm(v, axis=1)
    unit = np.zeros_like(v)
    unit[:, 0] = 1.0                               # any fixed direction where v = 0
    ok = shift > 0
    unit[ok] = v[ok] / shift[ok, None]
    z0 = np.einsum("rm,rm->r", E0, unit)
    z1 = np.einsum("rm,rm->r", E1, unit) + shift
    return z0, z1, shift


def _run(algorithm, X, y, ids, common, kw):
    return palg.PRIVATE_ALGORITHMS[algorithm](X, y, replicates=ids, **common, **kw)


def _p0(X, y, ids, common, kw):
    from stabsim.engine.constraints import get_constraint

    if get_constraint(kw.get("constraint", "none")).name != "none":
        raise ValueError("the known-randomness audit of p0_alg2 needs W unconstrained (constraint='none'): "
                         "the projected release Pi_W(wbar_T + u) is not observed before the projection")
    kw = dict(kw)
    kw.setdefault("checkpoints", [1])
    ds = _run("p0_alg2", X, y, ids, common, kw)
    rec = palg.calibration_record(ds)
    T = int(rec["T"])
    A = ds["output"].sel(t=T).values                       # (R, 2, p): wbar_T on S, S' (shared indices)
    O = ds["w_priv"].values                                # released wbar_T + u (no projection)
    Delta = cal.p0_delta_T(T, rec["n"], rec["eta"], rec["G"], rec["delta"] / 2.0, "eq9")
    sp = float(rec["sigma_paper"])
    z0, z1, shift = _projection(A[:, 0] / sp, A[:, 1] / sp, (O[:, 0] - A[:, 0]) / sp, (O[:, 1] - A[:, 1]) / sp)
    ratio = np.linalg.norm(A[:, 1] - A[:, 0], axis=1) / Delta
    return z0, z1, shift, ratio, Delta / sp, Delta, sp, rec, 0.0, "observed", [
        f"Delta_T = {Delta:.4g} (P0 Eq. (9), c = 3, gamma = delta/2), sigma = {sp:.4g} (Eq. (5), {rec['reading']})"]


def _p1(X, y, ids, common, kw):
    if kw.get("project_noise", False):
        raise ValueError("the known-randomness audit of p1_alg3 needs project_noise=False (the release is observed)")
    ds = _run("p1_alg3", X, y, ids, common, kw)
    rec = palg.calibration_record(ds)
    kph = ds["k_phase"].values
    if np.any(kph != 1):
        raise ValueError("the known-randomness audit of p1_alg3 needs the replaced example in block S_1 (phase 1): "
                         f"k_phase = {sorted(set(kph.tolist()))}; later phases start from different noisy points")
    sched = cal.p1_alg3_schedule(rec["n"], rec["eta"], rec["G"], rec["eps"], rec["delta"], "floor")
    ph = sched.phases[0]
    A = ds["phase_average"].values[:, 0]                   # (R, 2, p) wbar_1 on S, S' from the same w_0
    O = ds["phase_output"].values[:, 0]                    # wbar_1 + u_1 (not projected)
    Delta, sp = ph.sensitivity, ph.sigma
    z0, z1, shift = _projection(A[:, 0] / sp, A[:, 1] / sp, (O[:, 0] - A[:, 0]) / sp, (O[:, 1] - A[:, 1]) / sp)
    ratio = np.linalg.norm(A[:, 1] - A[:, 0], axis=1) / Delta
    return z0, z1, shift, ratio, Delta / sp, Delta, sp, rec, 0.0, "observed", [
        f"phase 1: Delta_1 = 12 G eta_1 log(4/delta) = {Delta:.4g}, sigma_1 = {sp:.4g} (Alg. 3 / Thm 10); "
        "later phases are post-processing of the phase-1 release"]


def _proj_rows(cons, W, md):
    from stabsim.privacy.algorithms.common import _project

    return _project(cons, W, md)


def _p3(algorithm, X, y, ids, common, kw):
    from stabsim.engine import rng
    from stabsim.engine.constraints import get_constraint
    from stabsim.engine.losses import get_loss
    from stabsim.privacy.algorithms.common import gaussian_rows

    online = algorithm.startswith("p3_on")
    n, p = X.shape
    cons = get_constraint(kw.get("constraint", ("l2", 1.0)))
    lossf = get_loss(kw.get("loss", palg.config_default(palg.PRIVATE_ALGORITHMS[algorithm], "loss")))
    md = X.shape[1] if lossf.matrix else 0
    seed = int(common["seed"])
    if not online:
        ds = _run(algorithm, X, y, ids, common, kw)
        rec = palg.calibration_record(ds)
        A = ds["w_average"].values                        # (R, 2, p) average of w_1..w_n on S, S'
        u0 = gaussian_rows(seed, ids, rng.STREAM_NOISE, (n + 1) * p, p)
        u1 = gaussian_rows(seed, ids, rng.STREAM_NOISE_PRIME, (n + 1) * p, p)
        s_used = float(rec["sigma"])
        O0, O1 = A[:, 0] + s_used * u0, A[:, 1] + s_used * u1
        mism = float(max(np.abs(_proj_rows(cons, O0, md) - ds["w_priv"].values[:, 0]).max(),
                         np.abs(_proj_rows(cons, O1, md) - ds["w_priv"].values[:, 1]).max()))
        Delta = 8.0 * rec["G_tilde"] * math.log(n) / (rec["alpha"] * n)
        sp = float(rec["sigma_paper"])
        z0, z1, shift = _projection(A[:, 0] / sp, A[:, 1] / sp, (O0 - A[:, 0]) / sp, (O1 - A[:, 1]) / sp)
        ratio = np.linalg.norm(A[:, 1] - A[:, 0], axis=1) / Delta
        return z0, z1, shift, ratio, Delta / sp, Delta, sp, rec, mism, "rebuilt", [
            f"Delta = 8 G~ log(n)/(alpha n) = {Delta:.4g} (Lemma 4, Alg. 3/4), sigma = {sp:.4g} (Def. 2)"]
    ck = np.arange(1, n + 1)
    ds = _run(algorithm, X, y, ids, common, dict(kw, record_outputs=True, checkpoints=ck))
    rec = palg.calibration_record(ds)
    # the noise-free iterates w_t: the offline counterpart runs the same GIGA state (same alpha, T_1,
    # constants and centre; the online state never sees the noise), recording its internal iterates
    off = {"p3_onpairstrc": "p3_offpairstrc", "p3_onpairc": "p3_offpairc"}[algorithm]
    okw = dict(kw, record_outputs=True, checkpoints=ck)
    if algorithm == "p3_onpairc":
        okw.setdefault("center", "random")
    dso = _run(off, X, y, ids, common, okw)
    W = dso["released"].values                             # (R, n, 2, p): w_t on S, S'
    dit = np.linalg.norm(W[:, :, 0] - W[:, :, 1], axis=2)
    traj = float(np.nanmax(np.abs(dit - ds["dist_iterate"].values)))
    T1 = int(rec["T1"])
    ts = np.arange(T1 + 1, n + 1)
    s_coef = float(rec["sigma_coef"])                      # sigma_t = sigma_coef / t (noise used)
    sp_coef = float(rec["sigma_paper"]) * (T1 + 1)         # calibrated
    rel = ds["released"].values                            # projected releases
    A0, A1, E0, E1, mism = [], [], [], [], traj
    Dt = 8.0 * rec["G_tilde"] / (rec["alpha"] * ts)
    for t in ts:
        w0, w1 = W[:, t - 1, 0], W[:, t - 1, 1]
        u0 = gaussian_rows(seed, ids, rng.STREAM_NOISE, t * p, p)
        u1 = gaussian_rows(seed, ids, rng.STREAM_NOISE_PRIME, t * p, p)
        O0, O1 = w0 + s_coef / t * u0, w1 + s_coef / t * u1
        mism = max(mism, float(np.abs(_proj_rows(cons, O0, md) - rel[:, t - 1, 0]).max()),
                   float(np.abs(_proj_rows(cons, O1, md) - rel[:, t - 1, 1]).max()))
        spt = sp_coef / t
        A0.append(w0 / spt), A1.append(w1 / spt), E0.append((O0 - w0) / spt), E1.append((O1 - w1) / spt)
    cat = lambda L: np.concatenate(L, axis=1)  # noqa: E731
    z0, z1, shift = _projection(cat(A0), cat(A1), cat(E0), cat(E1))
    ratio = np.max(dit[:, T1:] / Dt[None, :], axis=1)
    mu_cal = float(np.sqrt(np.sum((Dt / (sp_coef / ts)) ** 2)))
    return z0, z1, shift, ratio, mu_cal, float(Dt[0]), sp_coef / (T1 + 1), rec, mism, "rebuilt", [
        f"{len(ts)} releases t = {T1 + 1}..{n}: Delta_t = 8 G~/(alpha t) (Lemma 4; {Dt[0]:.4g} at t = T_1+1), "
        f"sigma_t = {sp_coef:.4g}/t (Alg. 1 step 12); composed mu = sqrt(2 rho) = {mu_cal:.4g}; "
        f"noise-free iterates from {off} (same GIGA state; trajectories agree to {traj:.2g})"]


def known_randomness_scores(algorithm, X, y, *, eps, delta, replicates, seed=0, canary="auto",
                            noise_scale=1.0, **algorithm_kwargs) -> KnownRandomnessScores:
    """The known-randomness statistics of ``algorithm`` (one of ``OUTPUT_PERTURBATION``) on (X, y) and the
    canary's S' for the replicate ids ``replicates`` (a count or an array): each replicate xi is run on S and
    S' with shared internal randomness and independent noise (module docstring).  ``canary``: as in
    :func:`stabsim.privacy.audit_runner.make_canary` ("auto", "flip" or (k, x', y'))."""
    from stabsim.engine.losses import get_loss
    from stabsim.engine.validation import check_Xy, open_unit, positive, positive_int
    from stabsim.privacy.audit_canary import make_canary
    from stabsim.privacy.audit_runner import _allowed_indices, _default

    if algorithm not in OUTPUT_PERTURBATION:
        raise ValueError(f"the known-randomness audit applies to the output-perturbation algorithms "
                         f"({', '.join(OUTPUT_PERTURBATION)}), not {algorithm!r}")
    eps, delta = positive("eps", eps), open_unit("delta", delta)
    noise_scale = positive("noise_scale", noise_scale)
    seed = positive_int("seed", seed, minimum=0)
    if isinstance(replicates, (int, np.integer)):
        ids = np.arange(positive_int("replicates", replicates, minimum=1), dtype=np.int64)
    else:
        ids = np.asarray(replicates, dtype=np.int64).ravel()
        if ids.size == 0:
            raise ValueError("replicates must name at least one replicate id")
    for bad in ("independent_noise", "neighbour"):
        if bad in algorithm_kwargs:
            raise ValueError(f"the known-randomness audit sets {bad!r} itself; do not pass it")
    fn = palg.PRIVATE_ALGORITHMS[algorithm]
    lossf = get_loss(algorithm_kwargs.get("loss", _default(fn, "loss")))
    Xc, yc = check_Xy(X, y, pairwise_auc=lossf.form in (0, 1))
    can = make_canary(Xc, yc, lossf, kind=canary, allowed=_allowed_indices(algorithm, Xc, yc, lossf, algorithm_kwargs))
    common = dict(eps=eps, delta=delta, seed=seed, neighbour=can.neighbour, independent_noise=True,
                  noise_scale=noise_scale)
    kw = dict(algorithm_kwargs)
    if algorithm == "p0_alg2":
        out = _p0(Xc, yc, ids, common, kw)
    elif algorithm == "p1_alg3":
        out = _p1(Xc, yc, ids, common, kw)
    else:
        out = _p3(algorithm, Xc, yc, ids, common, kw)
    z0, z1, shift, ratio, mu_cal, Delta, sp, rec, mism, how, notes = out
    return KnownRandomnessScores(z0, z1, shift, ratio, float(mu_cal), float(Delta), float(sp), rec, can,
                                 float(mism), how, notes)


# ---------------------------------------------------------------------------- estimator
@dataclass
class KnownRandomnessReport:
    """The known-randomness audit of one cell (:func:`known_randomness_report`).

    s_hat, s_upper     the noise actually added / the calibrated std: estimate and upper confidence bound.
    mu_max             max_xi mu_xi at the calibrated noise (the worst sequence's GDP parameter).
    mu_lower           mu_max / s_upper: lower confidence bound on the GDP parameter of the worst sequence.
    eps_lower          eps_{mu_lower}(delta): exact conversion (the trade-off given xi is Gaussian).
    eps_lower_mixture  eps(delta) of (xi, release) with xi random (mean of the profiles) at s_upper.
    eps_calibrated     eps_{mu_max}(delta): the calibrated algorithm's eps on this instance (the SANITY target).
    mu_cal, eps_promised  Delta / sigma and its eps (delta): what the calibration promises (Delta attained).
    ratio_max, frac_above, frac_above_upper  sup_xi ||v|| / Delta, the fraction of sequences above 1 and its
                       Clopper-Pearson upper bound; gamma: the failure probability the bound may spend.
    violated           the sensitivity bound fails on more than a fraction gamma of the sequences (one-sided
                       Clopper-Pearson lower bound above gamma; strict for P3), mu_lower > mu_cal, the
                       rebuilt release does not match the implementation's, or (noise_scale = 1) s_upper < 1:
                       the release carries less noise than the calibrated sigma its record states.
    detected           (noise_scale < 1) mu_lower > mu_max: the noise-scaled algorithm provably has a worse
                       trade-off curve than the calibrated one on this instance (eps_lower >= eps_calibrated).
    """

    algorithm: str
    eps_claimed: float
    delta: float
    confidence: float
    noise_scale: float
    replicates: int
    s_hat: float
    s_upper: float
    mu_max: float
    mu_lower: float
    eps_lower: float
    eps_lower_mixture: float
    eps_calibrated: float
    mu_cal: float
    eps_promised: float
    ratio_max: float
    frac_above: float
    frac_above_lower: float
    gamma: float
    Delta: float
    sigma_paper: float
    release_mismatch: float
    released: str
    violated: bool
    detected: bool
    notes: list = field(default_factory=list)

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def summary(self) -> str:
        return (f"audit {self.algorithm} [known_randomness]: max ||A(S)-A(S')||/Delta = {self.ratio_max:.4g} "
                f"(Delta = {self.Delta:.4g}); mu_max = {self.mu_max:.4g} at the calibrated noise (promised: "
                f"{self.mu_cal:.4g}); noise/calibrated = {self.s_hat:.4g} (<= {self.s_upper:.4g}); eps >= "
                f"{self.eps_lower:.4g} (exact, confidence {self.confidence:g}; calibrated algorithm on this "
                f"instance: {self.eps_calibrated:.4g}; promised: {self.eps_promised:.4g}; claimed: "
                f"{self.eps_claimed:g}) | violation={self.violated}")

    __str__ = summary


def known_randomness_report(algorithm, sc: KnownRandomnessScores, *, eps, delta, confidence=0.95,
                            noise_scale=1.0) -> KnownRandomnessReport:
    """The estimators of the known-randomness audit (module docstring) from its scores."""
    from stabsim.privacy.audit import clopper_pearson_upper
    from stabsim.engine.validation import open_unit, positive

    confidence = open_unit("confidence", confidence)
    delta = open_unit("delta", delta)
    eps = positive("eps", eps)
    z0, z1, shift = (np.asarray(a, float).ravel() for a in (sc.z0, sc.z1, sc.shift))
    R = len(z0)
    if R < 2 or len(z1) != R or len(shift) != R or not (np.all(np.isfinite(z0)) and np.all(np.isfinite(z1))):
        raise ValueError(f"the known-randomness scores need at least 2 finite replicates of z0, z1, shift (got {R})")
    a = 1.0 - confidence
    ss = float(np.sum(z0 ** 2) + np.sum((z1 - shift) ** 2))
    dof = 2 * R
    s_hat = math.sqrt(ss / dof)
    s_up = math.sqrt(ss / chi2.ppf(a, dof))
    mu_max = float(np.max(shift))
    mu_lower = mu_max / s_up if s_up > 0 else math.inf
    gdp = lambda m: 0.0 if not m > 0 else float(gdp_epsilon(delta, min(m, 1e6)))  # noqa: E731
    eps_lower = gdp(mu_lower)
    eps_mix = mixture_epsilon(shift / s_up, delta) if s_up > 0 else math.inf
    eps_cal = gdp(mu_max)
    ratio = np.asarray(sc.ratio, float)
    gamma = bound_failure_probability(algorithm, delta)
    above = int(np.sum(ratio > 1.0 + 1e-9))
    # one-sided lower Clopper-Pearson bound on the fraction of sequences the bound fails on
    frac_lo = 0.0 if above == 0 else 1.0 - clopper_pearson_upper(R - above, R, a)
    sens_fail = frac_lo > gamma if gamma > 0 else above > 0
    mism = sc.release_mismatch > MISMATCH_TOL * max(1.0, sc.sigma_paper)
    # the release carries significantly less noise than the calibrated sigma (only at noise_scale = 1 a claim)
    noise_short = noise_scale == 1.0 and s_up < 1.0
    violated = bool(sens_fail or mu_lower > sc.mu_cal or mism or noise_short)
    # the calibrated algorithm is exactly mu_max-GDP on this instance (this adversary); the audit proves
    # mu >= mu_lower: a trade-off curve strictly below the calibrated one's (compared in mu, the whole
    # curve, not at one delta, where eps is 0 for every mu below about delta/0.4)
    detected = bool(noise_scale < 1.0 and mu_max > 0 and mu_lower > mu_max)
    notes = list(sc.notes)
    notes.append(f"released output {sc.released}" + (f"; rebuilt release matches the implementation's to "
                                                     f"{sc.release_mismatch:.2g}" if sc.released == "rebuilt" else ""))
    return KnownRandomnessReport(
        algorithm, eps, delta, confidence, float(noise_scale), R, s_hat, s_up, mu_max, mu_lower, eps_lower,
        eps_mix, eps_cal, sc.mu_cal, gdp(sc.mu_cal), float(np.max(ratio)), above / R, frac_lo, gamma, sc.Delta,
        sc.sigma_paper, sc.release_mismatch, sc.released, violated, detected, notes)


# ---------------------------------------------------------------------------- worst-case instance
def _support_points(X, m=8):
    kappa = float(np.linalg.norm(X, axis=1).max()) or 1.0
    d = X.shape[1]
    pts = []
    for j in range(m):
        a = 2 * math.pi * j / m
        v = np.zeros(d)
        v[0], v[1 % d] = math.cos(a), (math.sin(a) if d > 1 else 0.0)
        pts.append(kappa * v / (np.linalg.norm(v) or 1.0))
    return pts


def _data_sets(algorithm, n, seed):
    from stabsim.engine.lower_bounds import bfgt_instance
    from stabsim.engine.synthetic import make_problem
    from stabsim.privacy.audit_designs import worst_case_design

    d = worst_case_design(algorithm, n=n)
    out = [("audit design", d.X, d.y)]
    Xs, ys = make_problem("auc_separable", d=2).sample(n, seed=seed)
    out.append(("auc_separable sample", np.asarray(Xs, float), np.asarray(ys, float)))
    try:
        inst = bfgt_instance(n=n)
        out.append(("BFGT lower-bound instance", np.asarray(inst.X, float), np.asarray(inst.y, float)))
    except (ValueError, TypeError):   # pragma: no cover - instance not constructible at this n
        pass
    return out


def worst_instance(algorithm, *, n=50, T=None, eps=1.0, delta=1e-5, seed=0, replicates=16, positions=3,
                   options=None):
    """The instance (S, k, x', y') maximising max_xi ||A(S; xi) - A(S'; xi)|| / Delta over the candidates of
    the module docstring, on replicate ids 0..replicates-1 (common random numbers: every candidate sees the
    same xi).  Returns dict(X, y, canary=(k, x', y'), ratio, name, table) with ``table`` the best ratio of
    every data set.  Remembered in this process (a study asks for it in every chunk and in its check)."""
    key = (algorithm, int(n), None if T is None else int(T), float(eps), float(delta), int(seed), int(replicates),
           int(positions), tuple(sorted((options or {}).items(), key=lambda kv: kv[0])) if options else ())
    return _worst_instance(*key)


@lru_cache(maxsize=32)
def _worst_instance(algorithm, n, T, eps, delta, seed, replicates, positions, options):
    from stabsim.engine.losses import get_loss
    from stabsim.privacy.audit_canary import make_canary
    from stabsim.privacy.audit_designs import worst_case_design
    from stabsim.privacy.audit_runner import _allowed_indices, _default

    if algorithm not in OUTPUT_PERTURBATION:
        raise ValueError(f"worst_instance: {algorithm!r} is not an output-perturbation algorithm "
                         f"({', '.join(OUTPUT_PERTURBATION)})")
    design = worst_case_design(algorithm, n=n, T=T)
    kw = dict(design.kwargs)
    kw.update(dict(options))
    lossf = get_loss(kw.get("loss", _default(palg.PRIVATE_ALGORITHMS[algorithm], "loss")))
    ids = np.arange(replicates, dtype=np.int64)
    best, table = None, {}
    for name, X, y in _data_sets(algorithm, n, seed):
        allowed = _allowed_indices(algorithm, X, y, lossf, kw)
        ks = np.arange(len(y)) if allowed is None else np.asarray(allowed)
        ks = np.unique(ks[np.linspace(0, len(ks) - 1, min(positions, len(ks))).astype(int)])
        cands = []
        try:
            cands.append(make_canary(X, y, lossf, kind="auto", allowed=allowed).neighbour)
        except ValueError:
            pass
        for k in ks:
            k = int(k)
            cands.append((k, X[k].copy(), -float(y[k])))                       # label flip
            opp = np.flatnonzero(y != y[k])
            if opp.size:
                j = opp[np.argmax(np.linalg.norm(X[opp] - X[k], axis=1))]
                cands.append((k, X[j].copy(), float(y[j])))                   # "farthest"
            for x in _support_points(X):
                for lab in (1.0, -1.0):
                    cands.append((k, x, lab))
        top = 0.0
        for can in cands:
            try:
                sc = known_randomness_scores(algorithm, X, y, eps=eps, delta=delta, replicates=ids, seed=seed,
                                             canary=can, **kw)
            except ValueError:
                continue
            r = float(np.max(sc.ratio))
            top = max(top, r)
            if best is None or r > best[0]:
                best = (r, name, X, y, can)
        table[name] = top
    if best is None:
        raise ValueError(f"worst_instance: no candidate instance of {algorithm} could be run")
    r, name, X, y, can = best
    return dict(X=X, y=y, canary=(int(can[0]), np.asarray(can[1], float), float(can[2])), ratio=r, name=name,
                table=table, kwargs=kw)
