"""Known-randomness rows of the check ``privacy_audit`` (the estimator is
:mod:`stabsim.privacy.audit_output`).

Threat model: the adversary knows the internal randomness xi (indices, burn-in points, order) and sees
the Gaussian release; given xi the release is exactly N(A(S; xi), sigma^2 I), so the audit is exact.

``AUDIT`` (noise_scale = 1): "violated" iff the paper's sensitivity bound fails on more than the fraction
    gamma of the sequences it may spend (one-sided Clopper-Pearson at the stated confidence; P3's Lemma 4
    on any sequence), or the measured GDP parameter's lower bound exceeds the calibration's Delta / sigma,
    or the rebuilt release does not match the implementation's, or the noise read off the release is
    significantly below the calibrated sigma (s_upper < 1); otherwise "consistent".  The notes carry
    the measured worst-case sensitivity / Delta used and the eps it implies.  Tightness: the worst
    sequence's mu over the calibration's (= the sensitivity ratio for the one-release algorithms).
``SANITY`` (noise_scale < 1): "holds" iff the audit proves the noise-scaled algorithm's GDP parameter on
    this instance above the calibrated algorithm's (mu_lower > mu_max: its whole trade-off curve is worse);
    under this threat model the auditor reads the noise off the release, so this is a detection of the
    scaled-down noise at any instance where the canary moves the output at all.
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.judging.rules import Verdict


def known_report(spec, params, sub):
    """The :class:`~stabsim.privacy.audit_output.KnownRandomnessReport` of one stored known-randomness cell
    (the record, Delta and sigma from one replicate of the same cell)."""
    from stabsim.setups.audit import known_randomness_inputs
    from stabsim.privacy.audit_output import KnownRandomnessScores, known_randomness_report, known_randomness_scores

    a = params["audit"]
    inst, kw = known_randomness_inputs(params, spec.seed)
    one = known_randomness_scores(a["algorithm"], inst["X"], inst["y"], replicates=np.array([0]), seed=spec.seed, **kw)
    s = sub["score"].values
    sc = KnownRandomnessScores(s[:, 0], s[:, 1], sub["shift"].values, sub["ratio"].values, one.mu_cal, one.Delta,
                               one.sigma_paper, one.record, one.canary, one.release_mismatch, one.released,
                               one.notes + [f"instance: {inst['name']} (search over data sets: " + ", ".join(
                                   f"{k} {v:.3g}" for k, v in inst["table"].items()) + " max ratio on 16 sequences)"])
    rep = known_randomness_report(a["algorithm"], sc, eps=a["eps"], delta=a["delta"], confidence=a["confidence"],
                                  noise_scale=a["noise_scale"])
    return rep, sc


def trivial_sensitivity(rep, record) -> float | None:
    """The largest ||A(S; xi) - A(S'; xi)|| any data sets could give, where it can be said (None otherwise).
    P0 Alg. 2 releases w_bar_T, the average of T iterates of two coupled runs from the same start: each step
    moves them apart by at most 2 eta G, so ||w_t - w'_t|| <= 2 eta G t and ||w_bar_T - w_bar'_T|| <=
    eta G (T + 1).  When that is below the Delta the calibration uses, the sensitivity part of the audit cannot
    fail on any instance (it still checks the implementation's noise)."""
    rec = record or {}
    if rep.algorithm != "p0_alg2" or not all(k in rec for k in ("eta", "G", "T")):
        return None
    return float(rec["eta"]) * float(rec["G"]) * (float(rec["T"]) + 1.0)


def known_row(rep, label, record=None):
    """(Verdict, explanation) of a known-randomness cell (``record``: the calibration record of the run)."""
    from stabsim.privacy.audit_output import THREAT_MODELS

    notes = [f"threat model: known_randomness ({THREAT_MODELS['known_randomness']}; exact Gaussian given the sequence)",
             f"measured worst-case sensitivity / Delta used = {rep.ratio_max:.4g} (Delta = {rep.Delta:.4g}; "
             f"<= 1 promised; fraction of sequences above 1: {rep.frac_above:.3g}, allowed {rep.gamma:.3g})",
             f"eps implied by the measured worst case: mu = {rep.mu_max:.4g} at the calibrated noise -> eps = "
             f"{rep.eps_calibrated:.4g}; audit (noise x{rep.noise_scale:g}): noise/calibrated = {rep.s_hat:.4g} "
             f"(<= {rep.s_upper:.4g}), mu >= {rep.mu_lower:.4g} -> eps >= {rep.eps_lower:.4g} (worst sequence), "
             f"{rep.eps_lower_mixture:.4g} (sequence random)",
             f"calibration: Delta / sigma = {rep.mu_cal:.4g} -> eps = {rep.eps_promised:.4g} (GDP, exact); claimed "
             f"eps = {rep.eps_claimed:g}, delta = {rep.delta:.3g}; {rep.replicates} sequences"] + list(rep.notes)
    tight = rep.mu_max / rep.mu_cal if rep.mu_cal > 0 else math.nan
    if rep.noise_scale == 1.0:
        v = Verdict(key=f"{rep.algorithm}.audit", quantity="sensitivity_ratio", tag="AUDIT",
                    verdict="violated" if rep.violated else "consistent", n_replicates=rep.replicates,
                    level=rep.confidence, notes=tuple(notes), tightness_min=tight, tightness_max=tight,
                    lower_tightness_max=(rep.mu_lower / rep.mu_cal if rep.mu_cal > 0 else math.nan), vacuous=None)
        triv = trivial_sensitivity(rep, record)
        if triv is not None and triv < rep.Delta:
            v = v.uninformative(f"no instance can reach Delta: two coupled runs' averages differ by at most eta G (T + 1) "
                                f"= {triv:.4g} < Delta = {rep.Delta:.4g} (ratio <= {triv / rep.Delta:.3g}), so the "
                                "sensitivity part cannot fail; the row still checks the implementation's noise")
        expl = None
        if rep.violated:
            expl = (f"known randomness: sensitivity ratio {rep.ratio_max:.4g} (fraction above 1: {rep.frac_above:.3g}), "
                    f"mu >= {rep.mu_lower:.4g} vs Delta/sigma = {rep.mu_cal:.4g}, release mismatch "
                    f"{rep.release_mismatch:.3g}, noise/calibrated <= {rep.s_upper:.4g}: the calibration's premise "
                    "fails here")
        return v, expl
    notes.append(f"sanity target: mu_lower > {rep.mu_max:.4g}, the calibrated algorithm's mu on this instance "
                 f"(eps {rep.eps_calibrated:.4g})")
    v = Verdict(key=f"{rep.algorithm}.audit", quantity="sensitivity_ratio", tag="SANITY",
                verdict="holds" if rep.detected else "inconclusive", n_replicates=rep.replicates,
                level=rep.confidence, notes=tuple(notes), tightness_max=tight,
                lower_tightness_max=(rep.mu_lower / rep.mu_cal if rep.mu_cal > 0 else math.nan),
                qualifier="" if rep.detected else "not detected")
    expl = None if rep.detected else (
        f"noise x{rep.noise_scale:g}: mu >= {rep.mu_lower:.4g} does not exceed the calibrated algorithm's "
        f"{rep.mu_max:.4g} on this instance")
    return v, expl


def known_measured(rep) -> dict:
    return {"threat_model": "known_randomness", "noise_scale": rep.noise_scale, "sensitivity_ratio_max": rep.ratio_max,
            "Delta": rep.Delta, "sigma_paper": rep.sigma_paper, "mu_max": rep.mu_max, "mu_lower": rep.mu_lower,
            "mu_cal": rep.mu_cal, "noise_ratio_hat": rep.s_hat, "noise_ratio_upper": rep.s_upper,
            "eps_lower": rep.eps_lower, "eps_lower_mixture": rep.eps_lower_mixture,
            "eps_calibrated_instance": rep.eps_calibrated, "eps_promised": rep.eps_promised,
            "eps_claimed": rep.eps_claimed, "frac_above": rep.frac_above, "release_mismatch": rep.release_mismatch,
            "detected": rep.detected, "violated": rep.violated}


def score_histograms(ax, s0, s1, title: str, xlabel: str) -> None:
    """The audit statistic's histograms on S and on S' (central 99.8 %, 40 common bins) on ``ax``."""
    lo, hi = np.quantile(np.concatenate([s0, s1]), [0.001, 0.999])
    bins = np.linspace(lo, hi, 40)
    ax.hist(s0, bins=bins, alpha=0.5, density=True, label="on S")
    ax.hist(s1, bins=bins, alpha=0.5, density=True, label="on S'")
    ax.set_title(title, fontsize=8)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.legend(fontsize=6)


def draw_known(ax, rep, sc, label):
    score_histograms(ax[0], np.asarray(sc.z0), np.asarray(sc.z1),
                     f"{rep.algorithm} [known_randomness] noise x{rep.noise_scale:g}",
                     "projection statistic (units of the calibrated sigma)")
    r = np.asarray(sc.ratio, float)
    ax[1].hist(r, bins=40)
    ax[1].axvline(1.0, color="k", ls=":", label="Delta (ratio 1)")
    ax[1].set_xlabel("||A(S; xi) - A(S'; xi)|| / Delta per sequence xi", fontsize=8)
    ax[1].set_title(f"sensitivity ratio {label} (max {rep.ratio_max:.3g})", fontsize=8)
    ax[1].legend(fontsize=6)
