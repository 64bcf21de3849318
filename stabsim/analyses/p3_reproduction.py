"""P3 Figures 1-6 (Huai et al., AAAI 2020, "Experiments"): reproductions on the shipped UCI data
(studies ``p3_fig1`` .. ``p3_fig6``, kind ``p3_experiment`` of :mod:`stabsim.experiments.p3_giga`).

Figures (errata P3-D):

====  ===========  ====================  =====================  ==========  ==============
fig   algorithm    task / loss           data                   n           metric
====  ===========  ====================  =====================  ==========  ==============
1     OnPairStrC   AUC, ranking_logistic hepatitis, cancer      40-90       objective
2     OnPairC      AUC                   diabetes, DR           50-350      objective (+ NonPrivate)
3     OffPairStrC  AUC                   hepatitis, cancer      40-90       objective
4     OffPairC     AUC                   diabetes, DR           50-350      test AUC
5     OnPairC      metric_logistic       diabetes, DR           50-350      objective
6     OffPairC     metric_logistic       diabetes, DR           50-350      test 3-NN accuracy
====  ===========  ====================  =====================  ==========  ==============

DR = Diabetic Retinopathy Debrecen, which no installed package ships: the stand-in is
``vehicle`` (see ``stabsim.engine.real_datasets``).  Data: minmax to [-1, 1] then unit norm (||x|| <= 1).

Choices where the paper is silent or infeasible (recorded in every summary):

* alpha: the paper's lambda = 1e-3 gives T_1 = ceil(16 L~^2/alpha^2) ~ 10^8 >> n, so the GIGA
  loop never runs (errata P3-D/E6).  We keep the paper's T_1 formula and pick the smallest
  alpha with T_1 <= n/2 (``alpha_rule = "burnin"``), i.e. alpha ~ 4L/sqrt(n/2) -- O(1/sqrt n) as
  Thm 3/5 ask for the convex variants; the StrC variants get the same alpha as their
  regulariser lambda.
* objective = L(w; D) of Eq. (1) with the unregularised loss on the training set; online
  algorithms are evaluated at the online-to-batch average of their releases (Thm 4), offline
  ones at their output.  NonPrivate (the paper's "GIGA for pairwise losses", Kar et al. 2013) =
  a second run of the same Pairwise GIGA (loss, alpha, order) without noise and with burn-in
  T_1 = 2 (the shortest the step size allows), evaluated at the average of its iterates.
* 3-NN accuracy uses the PSD part of the learned symmetric W (``p3_giga.knn_accuracy``).

Check ``p3_figure``: the figure (one panel per data set, x = n, one curve per eps with +-1
standard error, NonPrivate dashed), a summary table of the means, and one verdict row per
data set and claim: "improves with n" (per eps), "larger eps is better", and "comparable with
NonPrivate".  Claim verdicts: ``consistent`` (the 95% bootstrap CI of the effect lies on the
claimed side), ``inconclusive`` (the CI contains 0) or ``inconsistent`` (the CI lies on the
other side).  The NonPrivate tolerance (10% of the NonPrivate objective, 0.05 of AUC/accuracy)
is fixed here, before any run.
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.engine.measures import bootstrap_counts
from stabsim.judging.verdict import SETUP_NOT_THE_PAPERS
from stabsim.judging.rules import Verdict
from stabsim.registry import register_check
from stabsim.analyses.base import CheckResult

LOWER_IS_BETTER = {"objective": True, "auc": False, "knn": False}
YLABEL = {"objective": "objective value L(w; D)", "auc": "test AUC", "knn": "test 3-NN accuracy"}
TOL = {"objective": ("relative", 0.10), "auc": ("absolute", 0.05), "knn": ("absolute", 0.05)}
N_BOOT = 2000


def _claim(key, quantity, verdict, R, lo, hi, est, notes):
    return Verdict(key=key, quantity=quantity, tag="QUALITATIVE", verdict=verdict, n_replicates=R, level=0.95,
                   slope=float(est), slope_lower=float(lo), slope_upper=float(hi), exponent=0.0,
                   kind="sign", notes=tuple(notes))


def _side(lo, hi, want_negative):
    if want_negative:
        return "consistent" if hi < 0 else ("inconsistent" if lo > 0 else "inconclusive")
    return "consistent" if lo > 0 else ("inconsistent" if hi < 0 else "inconclusive")


def _trend(n, Y, seed):
    """OLS slope of the replicate mean of Y (R, m) against n, with a per-n bootstrap CI."""
    n = np.asarray(n, float)
    xc = n - n.mean()
    est = float((Y.mean(0) - Y.mean()) @ xc / (xc @ xc))
    R, m = Y.shape
    means = np.stack([bootstrap_counts(R, N_BOOT, seed + 7 * j) @ Y[:, j] / R for j in range(m)], axis=1)
    sl = (means - means.mean(1, keepdims=True)) @ xc / (xc @ xc)
    lo, hi = np.quantile(sl, [0.025, 0.975])
    return est, float(lo), float(hi)


def _diff(a, b, seed):
    """mean(a) - mean(b) with a bootstrap CI (independent samples)."""
    Ra, Rb = len(a), len(b)
    ma = bootstrap_counts(Ra, N_BOOT, seed) @ a / Ra
    mb = bootstrap_counts(Rb, N_BOOT, seed + 1) @ b / Rb
    lo, hi = np.quantile(ma - mb, [0.025, 0.975])
    return float(a.mean() - b.mean()), float(lo), float(hi)


def _n_trend_rows(res, ax, sub, dname, table, seed, R, data_kind, c):
    """Per eps: the curve of the panel, its summary-table line and the claim "the metric improves with
    n" (OLS slope of the replicate mean vs n, per-n bootstrap CI).  Returns the next bootstrap seed."""
    n, metric, lower, fig_no = c["n"], c["metric"], c["lower"], c["fig_no"]
    for e in c["epss"]:
        Y = sub[metric].sel(eps=e).transpose("replicate", "n").values
        mu, se = Y.mean(0), Y.std(0, ddof=1) / math.sqrt(R) if R > 1 else np.zeros(len(n))
        ax.errorbar(n, mu, yerr=se, marker="o", ms=3, capsize=2, label=f"eps = {e:g}")
        table.append(f"{dname:<14} {e:>5g} " + " ".join(f"{m_:>7.4f}+-{s_:<5.3f}" for m_, s_ in zip(mu, se)))
        est, lo, hi = _trend(n, Y, seed)
        seed += 101
        v = _side(lo, hi, want_negative=lower)
        claim = "decreases" if lower else "increases"
        verdict = _claim(f"P3.Fig{fig_no}.{metric}_vs_n", metric, v, R, lo, hi, est,
                         [f"OLS slope of the mean {metric} vs n: {est:.3g} per example, 95% bootstrap CI "
                          f"[{lo:.3g}, {hi:.3g}]"])
        res.add(verdict, label=f"{dname}, eps={e:g}: {metric} {claim} with n", figure=f"fig{fig_no}.png", data=data_kind,
                explanation=None if v == "consistent" else _why_not(v, metric, claim, "n"))
    return seed


def _eps_row(res, sub, dname, seed, R, data_kind, c):
    """The claim "larger eps is better" (averaged over the n grid).  Returns the next bootstrap seed."""
    epss, metric, lower, fig_no = c["epss"], c["metric"], c["lower"], c["fig_no"]
    a = sub[metric].sel(eps=epss.max()).mean("n").values
    b = sub[metric].sel(eps=epss.min()).mean("n").values
    est, lo, hi = _diff(a, b, seed)
    seed += 101
    v = _side(lo, hi, want_negative=lower)
    res.add(_claim(f"P3.Fig{fig_no}.{metric}_vs_eps", metric, v, R, lo, hi, est,
                   [f"mean over n of {metric} at eps={epss.max():g} minus at eps={epss.min():g}: {est:.3g}, "
                    f"95% CI [{lo:.3g}, {hi:.3g}]"]),
            label=f"{dname}: larger eps gives {'lower' if lower else 'higher'} {metric}", figure=f"fig{fig_no}.png",
            data=data_kind,
            explanation=None if v == "consistent" else _why_not(v, metric, "is better", "eps"))
    return seed


def _nonprivate_row(res, sub, dname, seed, R, data_kind, c):
    """The claim "comparable with NonPrivate" at the largest eps and n, within the tolerance ``TOL``
    fixed in advance.  Returns the next bootstrap seed."""
    n, epss, metric, lower, fig_no, npriv = (c[k] for k in ("n", "epss", "metric", "lower", "fig_no", "npriv"))
    a = sub[metric].sel(eps=epss.max()).isel(n=-1).values
    b = sub[npriv].sel(eps=epss.max()).isel(n=-1).values
    est, lo, hi = _diff(a, b, seed)
    seed += 101
    kind, tol = TOL[metric]
    lim = tol * abs(float(b.mean())) if kind == "relative" else tol
    worse = est if lower else -est
    v = "consistent" if worse <= lim else "inconsistent"
    claim = _claim(f"P3.Fig{fig_no}.{metric}_vs_nonprivate", metric, v, R, lo, hi, est,
                   [f"private - NonPrivate at eps={epss.max():g}, n={int(n[-1])}: {est:.3g} "
                    f"(CI [{lo:.3g}, {hi:.3g}]); tolerance {lim:.3g} ({kind} {tol:g}, fixed in advance)"])
    if claim.failed:   # alpha (and splits, G, L) are stabsim's: the paper's alpha never starts GIGA (P3-D)
        claim = claim.relabel(claim.verdict, SETUP_NOT_THE_PAPERS, note="alpha is stabsim's choice (P3-D, P3-E6)")
    res.add(claim,
            label=f"{dname}: comparable with NonPrivate (eps={epss.max():g}, n={int(n[-1])})",
            figure=f"fig{fig_no}.png", data=data_kind,
            explanation=None if v == "consistent" else (
                f"the private {metric} is {abs(est):.3g} {'above' if est > 0 else 'below'} NonPrivate, beyond "
                f"the tolerance {lim:.3g}: the calibrated noise (sigma ~ G~/(alpha eps) x log factors, "
                "see the measured sigma) is of the order of the radius of C at these n, so the private output "
                "is mostly noise; alpha is stabsim's choice (the smallest with T_1 <= n/2), since the paper's "
                "alpha = 1e-3 never starts the GIGA loop (P3-D, P3-E6): a reproduction under that set-up, not "
                "the paper's own"))
    return seed


def _data_set_panel(res, ax, sub, dname, table, seed, c):
    """One data set: its panel of the figure, its summary-table lines and its claim rows.  Returns the
    next bootstrap seed (each claim uses its own, in a fixed order)."""
    from stabsim.engine import real_datasets as datasets

    # qualitative trends only (no paper number is compared): a stand-in row is judged, marked data = stand-in
    data_kind = "stand-in" if datasets._resolve(str(dname)).stand_in else "real"
    R = int(sub.sizes["replicate"])
    n, metric, npriv = c["n"], c["metric"], c["npriv"]
    seed = _n_trend_rows(res, ax, sub, dname, table, seed, R, data_kind, c)
    if npriv in sub:
        Yn = sub[npriv].isel(eps=0).transpose("replicate", "n").values
        ax.errorbar(n, Yn.mean(0), yerr=Yn.std(0, ddof=1) / math.sqrt(R) if R > 1 else None, ls="--",
                    color="k", marker="s", ms=3, capsize=2, label="NonPrivate (GIGA)")
        table.append(f"{dname:<14} {'NP':>5} " + " ".join(f"{m_:>7.4f}{'':6}" for m_ in Yn.mean(0)))
    # larger eps is better (averaged over the n grid)
    seed = _eps_row(res, sub, dname, seed, R, data_kind, c)
    # comparable with NonPrivate at the largest eps and n
    if npriv in sub:
        seed = _nonprivate_row(res, sub, dname, seed, R, data_kind, c)
    if metric == "objective" and c["loss"] == "ranking_logistic":
        ax.axhline(math.log(2.0), ls=":", color="grey", lw=1, label="L(0; D) = log 2")
    ax.set_xlabel("training size n")
    ax.set_ylabel(YLABEL[metric])
    ax.set_title(f"{dname}{' (stand-in for Diabetic Retinopathy)' if dname == 'vehicle' else ''}", fontsize=9)
    ax.legend(fontsize=7)
    return seed


def _calibration_notes(res, spec, ds, metric):
    """The calibration actually used (alpha, T_1, noise, dimension) and the choices behind it."""
    variant = spec.sections["algorithm"]["variant"]
    al = ds["alpha"]
    res.measured["alpha (min..max over cells)"] = f"{float(al.min()):.4g}..{float(al.max()):.4g}"
    res.measured["T1 (min..max)"] = f"{int(ds['T1'].min())}..{int(ds['T1'].max())}"
    if float(ds["sigma_coef"].max()) > 0:
        sn = ds["sigma_coef"] / ds["n"]
        res.measured["release noise std at t = n (min..max)"] = f"{float(sn.min()):.3g}..{float(sn.max()):.3g}"
    else:
        res.measured["output noise std (min..max)"] = f"{float(ds['sigma_off'].min()):.3g}..{float(ds['sigma_off'].max()):.3g}"
    res.measured["parameter dimension"] = int(ds["dim"].max())
    res.notes.append("alpha: the smallest value for which the paper's T_1 = max(ceil(16 L~^2/alpha^2), 7) <= n/2 "
                     "(the paper's lambda = 1e-3 gives T_1 >> n: nothing but random points would be released, "
                     "errata P3-D/E6).  Noise: the paper's calibration with the exact rho; eps = 1.5, 2.5 are "
                     "outside Thm 1/5's 0 < eps <= 1 (P3-E7).")
    if variant == "OnPairC":
        res.notes.append("OnPairC (Alg. 2 step 3) regularises towards a RANDOM point w_0 of C with the alpha needed for "
                         "T_1 < n (alpha ~ 4 L~/sqrt(n/2), large at these n), so even its noise-free iterates stay near "
                         "a random point: the NonPrivate baseline (same loss and alpha) can be worse than w = 0.")
    if metric == "objective" and spec.sections["algorithm"]["loss"] == "ranking_logistic":
        res.notes.append("Reference: L(0; D) = log 2 = 0.6931 for the ranking logistic loss (every margin is 0).")
    res.notes.append("Claims are judged on the means with 95% bootstrap CIs over replicates (each replicate a "
                     "fresh stratified subset and order): consistent / inconclusive (CI contains no effect) / "
                     "inconsistent (CI on the other side).")


@register_check("p3_figure", description="P3 Figures 1-6: metric vs n per eps and data set; qualitative claims")
def check_figure(spec, ds) -> CheckResult:
    import matplotlib.pyplot as plt

    res = CheckResult()
    fig_no = spec.sections["figure"]["number"]
    metric = spec.sections["figure"]["metric"]
    lower = LOWER_IS_BETTER[metric]
    if metric not in ds:
        raise ValueError(f"the data hold no {metric!r}: set [measure] {metric} = true")
    for axis in ("n", "eps"):
        if axis not in ds.dims:
            raise ValueError(f"p3_figure needs a [sweep] over {axis}")
    dsets = list(ds["dataset"].values) if "dataset" in ds.dims else [spec.sections["data"]["dataset"]]
    n = ds["n"].values.astype(float)
    epss = ds["eps"].values.astype(float)
    variant = spec.sections["algorithm"]["variant"]
    c = dict(n=n, epss=epss, metric=metric, lower=lower, fig_no=fig_no, npriv=metric + "_nonprivate",
             loss=spec.sections["algorithm"]["loss"])
    fig, axes = plt.subplots(1, len(dsets), figsize=(5.2 * len(dsets), 4.2), squeeze=False)
    table = [f"{'data set':<14} {'eps':>5} " + " ".join(f"{'n=' + str(int(v)):>13}" for v in n)]
    seed = 0
    for di, dname in enumerate(dsets):
        sub = ds.sel(dataset=dname) if "dataset" in ds.dims else ds
        seed = _data_set_panel(res, axes[0, di], sub, dname, table, seed, c)
    fig.suptitle(f"P3 Fig. {fig_no} (reproduction): {YLABEL[metric]} of {variant}, "
                 f"{spec.sections['algorithm']['loss']}, delta = 1/n", fontsize=10)
    fig.tight_layout()
    res.figure(f"fig{fig_no}.png", fig)
    res.notes.append("Summary table (mean +- standard error over replicates; NP = NonPrivate GIGA):\n" + "\n".join(table))
    _calibration_notes(res, spec, ds, metric)
    return res


def _why_not(v, metric, claim, axis):
    if v == "inconclusive":
        return (f"the 95% CI of the effect of {axis} on the {metric} contains 0: with the paper's calibration the "
                "release/output noise is of the order of the radius of C on this range, so the trend (if any) is "
                "within the replicate spread; more replicates or larger n would be needed")
    return (f"the {metric} significantly moves against the claim ('{claim}' with {axis}); see the figure and the "
            "summary table: in the noise-dominated regime the objective of a random point of C can move either way")
