"""Statistics of an empirical privacy audit (Jagielski et al. 2020; Nasr et al. 2021).

An audit runs the private algorithm many times on S (label 0) and on a neighbour S'
(label 1), computes a scalar statistic of each output and tries to tell the two apart with
a threshold test "predict S' iff statistic >= tau" (direction "greater") or "<= tau"
("less").  For any test, (eps, delta)-DP forces (Kairouz et al. 2015)

    FPR + e^eps FNR >= 1 - delta   and   FNR + e^eps FPR >= 1 - delta,

so eps >= log((1 - delta - FNR)/FPR) and (symmetric version) eps >= log((1 - delta - FPR)/FNR).
We replace FPR and FNR by one-sided Clopper-Pearson upper bounds, each at level alpha/2
(alpha = 1 - confidence; union bound), so the reported ``eps_lower`` is <= the true eps with
probability >= confidence -- provided the test was fixed before looking at the counts.
Two ways to keep that true when the threshold is chosen from data:

* ``method="split"``: choose (tau, direction) on one part of the samples, count errors on the
  other part (default; the bound is then valid as is).
* ``method="bonferroni"``: a data-independent list of thresholds is given in advance, every
  (tau, direction) test is evaluated on all samples with alpha/(2 N_tests) per bound.

Pure functions; running the algorithms is left to the callers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta as beta_dist

from stabsim.privacy import _checks as chk

__all__ = ["AuditResult", "clopper_pearson_upper", "eps_from_rates", "eps_lower_from_counts",
           "eps_lower_from_scores"]


def clopper_pearson_upper(k, n, alpha):
    """One-sided (1 - alpha) Clopper-Pearson upper bound on p from k successes in n trials.

    = Beta(1 - alpha; k + 1, n - k) quantile, and 1 when k == n; vectorised over k (and n).
    For k = 0 it equals 1 - alpha^(1/n).
    """
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    if np.any(k < 0) or np.any(k > n) or np.any(n < 1):
        raise ValueError(f"k={k!r}, n={n!r} are not allowed: need 0 <= k <= n and n >= 1")
    alpha = chk.open_unit("alpha", alpha)
    full = k >= n
    out = beta_dist.ppf(1.0 - alpha, k + 1.0, np.where(full, 1.0, n - k))
    out = np.where(full, 1.0, out)
    return float(out) if out.ndim == 0 else out


def _eps_from_rates(fpr, fnr, delta, symmetric):
    """Vectorised max(0, log((1-delta-fnr)/fpr) [, log((1-delta-fpr)/fnr)])."""
    fpr, fnr = np.asarray(fpr, dtype=float), np.asarray(fnr, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        num = 1.0 - delta - fnr
        e = np.where(num > 0, np.log(np.maximum(num, 1e-300) / fpr), 0.0)
        if symmetric:
            num2 = 1.0 - delta - fpr
            e = np.maximum(e, np.where(num2 > 0, np.log(np.maximum(num2, 1e-300) / fnr), 0.0))
    return np.maximum(e, 0.0)


def eps_from_rates(fpr, fnr, delta=0.0, symmetric=True):
    """Point value max(0, log((1-delta-FNR)/FPR), log((1-delta-FPR)/FNR)) -- no confidence bound.

    Infinite when a rate is 0 and the other numerator is positive.
    """
    delta = chk.nonnegative("delta", delta)
    return float(_eps_from_rates(fpr, fnr, delta, symmetric))


@dataclass(frozen=True)
class AuditResult:
    """An epsilon lower bound and the counts it comes from."""

    eps_lower: float
    confidence: float
    delta: float
    fp: int            # label-0 (S) outputs classified as S'
    n0: int
    fn: int            # label-1 (S') outputs classified as S
    n1: int
    fpr_upper: float
    fnr_upper: float
    threshold: float | None = None
    direction: str | None = None
    method: str = "counts"
    n_tests: int = 1   # tests the confidence level was Bonferroni-corrected over

    def __float__(self):
        return float(self.eps_lower)


def _check_common(delta, confidence):
    delta = chk.nonnegative("delta", delta)
    if delta >= 1:
        raise ValueError(f"delta={delta!r} is not allowed: delta must be in [0, 1)")
    return delta, chk.open_unit("confidence", confidence)


def eps_lower_from_counts(fp, fn, trials, trials1=None, *, delta=0.0, confidence=0.95,
                          symmetric=True, n_tests=1):
    """Clopper-Pearson epsilon lower bound for one fixed test from its error counts.

    fp of ``trials`` runs on S were classified S' (false positives), fn of ``trials1``
    (default ``trials``) runs on S' were classified S.  FPR and FNR are bounded above at level
    alpha/(2 n_tests) each, alpha = 1 - confidence, and
    eps_lower = max(0, log((1-delta-FNR_u)/FPR_u) [, log((1-delta-FPR_u)/FNR_u)]).
    """
    delta, confidence = _check_common(delta, confidence)
    n0 = chk.integer_at_least("trials", trials, 1)
    n1 = n0 if trials1 is None else chk.integer_at_least("trials1", trials1, 1)
    fp, fn = chk.integer_at_least("fp", fp, 0), chk.integer_at_least("fn", fn, 0)
    if fp > n0 or fn > n1:
        raise ValueError(f"fp={fp}, fn={fn} are not allowed: need fp <= trials={n0}, fn <= trials1={n1}")
    n_tests = chk.integer_at_least("n_tests", n_tests, 1)
    a = (1.0 - confidence) / (2.0 * n_tests)
    fpr_u, fnr_u = clopper_pearson_upper(fp, n0, a), clopper_pearson_upper(fn, n1, a)
    eps = float(_eps_from_rates(fpr_u, fnr_u, delta, symmetric))
    return AuditResult(eps, confidence, delta, fp, n0, fn, n1, fpr_u, fnr_u, n_tests=n_tests)


def _counts(s0_sorted, s1_sorted, taus, direction):
    """(fp, fn) of "predict 1 iff s >= tau" (greater) or "s <= tau" (less), vectorised over taus."""
    n0, n1 = len(s0_sorted), len(s1_sorted)
    if direction == "greater":
        fp = n0 - np.searchsorted(s0_sorted, taus, side="left")
        fn = np.searchsorted(s1_sorted, taus, side="left")
    else:
        fp = np.searchsorted(s0_sorted, taus, side="right")
        fn = n1 - np.searchsorted(s1_sorted, taus, side="right")
    return fp, fn


def _bounds(fp, fn, n0, n1, a, delta, symmetric):
    fpr_u, fnr_u = clopper_pearson_upper(fp, n0, a), clopper_pearson_upper(fn, n1, a)
    return _eps_from_rates(fpr_u, fnr_u, delta, symmetric)


def _as_scores(name, x):
    return chk.scores(name, x, 2)


def eps_lower_from_scores(scores0, scores1, *, delta=0.0, confidence=0.95, method="split",
                          split=0.5, seed=0, select_confidence=0.95, thresholds=None,
                          direction="both", symmetric=True):
    """Epsilon lower bound from a scalar statistic on outputs of S (scores0) and S' (scores1).

    method="split": each sample is shuffled (``seed``) and its first floor(split*m) values
    select the test -- the (tau, direction) maximising the Clopper-Pearson bound at the fixed
    level ``select_confidence`` over the midpoints between consecutive distinct pooled
    selection values -- and the remaining values are counted for the reported bound, which is
    then valid at ``confidence`` (the selection never sees the evaluation half, and because it
    does not depend on ``confidence`` the bound is monotone in ``confidence``).
    method="bonferroni": ``thresholds`` (chosen before seeing the data) x directions are all
    evaluated on all samples with alpha/(2 N_tests) per rate; the best is reported.
    """
    delta, confidence = _check_common(delta, confidence)
    s0, s1 = _as_scores("scores0", scores0), _as_scores("scores1", scores1)
    method = chk.choice("method", method, ("split", "bonferroni"))
    direction = chk.choice("direction", direction, ("both", "greater", "less"))
    dirs = ("greater", "less") if direction == "both" else (direction,)
    alpha = 1.0 - confidence

    if method == "bonferroni":
        if thresholds is None:
            raise ValueError("thresholds=None is not allowed with method='bonferroni': give a "
                             "data-independent list of thresholds fixed before the audit")
        taus = np.unique(np.asarray(thresholds, dtype=float).ravel())
        n_tests = len(taus) * len(dirs)
        e0, e1 = np.sort(s0), np.sort(s1)
        a = alpha / (2.0 * n_tests)
        best = None
        for d in dirs:
            fp, fn = _counts(e0, e1, taus, d)
            eps = _bounds(fp, fn, len(e0), len(e1), a, delta, symmetric)
            i = int(np.argmax(eps))
            if best is None or eps[i] > best[0]:
                best = (float(eps[i]), float(taus[i]), d, int(fp[i]), int(fn[i]))
        _, tau, d, fp, fn = best
    else:
        split = chk.open_unit("split", split)
        select_confidence = chk.open_unit("select_confidence", select_confidence)
        rng = np.random.default_rng(seed)
        p0, p1 = rng.permutation(s0), rng.permutation(s1)
        k0, k1 = int(math.floor(split * len(p0))), int(math.floor(split * len(p1)))
        if min(k0, k1) < 1 or k0 >= len(p0) or k1 >= len(p1):
            raise ValueError(f"split={split!r} leaves an empty selection or evaluation part "
                             f"for sample sizes {len(p0)}, {len(p1)}")
        sel0, sel1 = np.sort(p0[:k0]), np.sort(p1[:k1])
        e0, e1 = np.sort(p0[k0:]), np.sort(p1[k1:])
        pooled = np.unique(np.concatenate([sel0, sel1]))
        taus = (pooled[:-1] + pooled[1:]) / 2.0 if len(pooled) > 1 else pooled
        a_sel = (1.0 - select_confidence) / 2.0
        best = None
        for d in dirs:
            fp, fn = _counts(sel0, sel1, taus, d)
            eps = _bounds(fp, fn, k0, k1, a_sel, delta, symmetric)
            i = int(np.argmax(eps))
            if best is None or eps[i] > best[0]:
                best = (float(eps[i]), float(taus[i]), d)
        _, tau, d = best
        fpv, fnv = _counts(e0, e1, np.array([tau]), d)
        fp, fn, n_tests = int(fpv[0]), int(fnv[0]), 1

    res = eps_lower_from_counts(fp, fn, len(e0), len(e1), delta=delta, confidence=confidence,
                                symmetric=symmetric, n_tests=n_tests)
    return AuditResult(res.eps_lower, confidence, delta, fp, len(e0), fn, len(e1), res.fpr_upper,
                       res.fnr_upper, tau, d, method, n_tests)
