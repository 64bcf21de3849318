"""Verdicts: does a measured quantity respect a bound, and does its rate match?

Two checks, one per kind of registry entry (``stabsim.theory``):

``check_bound``  EXPLICIT / EXPLICIT-DD entries: the bound curve is compared with the measure's
                 confidence interval coordinate by coordinate.  The bound is used exactly as
                 given: it is never rescaled or fitted.
``check_rate``   RATE entries (and the rate of any explicit bound): the log-log slope of the
                 replicate-mean measure against the swept variable, with a bootstrap CI over
                 replicates widened by the fit's lack of fit (``fit_slope``), is compared with
                 the theorem's *nominal* polynomial exponent.

Both return a ``Verdict`` (``to_row()`` gives a flat dict for tables).  Every verdict class
means one thing; a claim ("violated", "inconsistent") is made only when it is significant.

Rules
-----
Bound, at each coordinate c of a curve (m coordinates), with the measure's two-sided CI
[lower_c, upper_c] at level L and alpha = (1 - L)/2 (one-sided)::

    holds          iff  upper_c < bound_c at EVERY coordinate.  This is an intersection-union
                        test of "the measure is below the bound everywhere": each coordinate is a
                        one-sided level-alpha test, and an IUT needs no multiplicity correction.
    violated       iff  Holm's step-down procedure at family-wise level alpha, over the m
                        one-sided tests of H_c: measure_c <= bound_c, rejects at least one H_c.
                        The one-sided p-value of coordinate c is Phi((bound_c - est_c) / se_c)
                        with se_c = (est_c - lower_c) / z_{1-alpha} (normal approximation read off
                        the CI's lower half, so with m = 1 this is exactly "lower_1 > bound_1").
    inconclusive   otherwise (some CI straddles the bound, none significantly above it).

    margin_c       =    bound_c - upper_c                  (> 0 where it holds)
    tightness_c    =    estimate_c / bound_c               (1 = the bound is attained)
    vacuous        iff  max_c tightness_c < VACUOUS_TIGHTNESS (0.01), or the bound exceeds the
                        trivial bound the quantity can ever reach (``trivial_bound``, e.g. the
                        diameter of W for a distance between two points of W) at every coordinate.

Rate (slope s with CI [s_lo, s_hi], nominal exponent a, tolerance tol >= 0 fixed before the run)::

    matches              s_lo - tol <= a <= s_hi + tol         (the rate is attained)
    faster than claimed  s_hi < a - tol, kind "upper"           (the measure decays faster / grows
                         more slowly: consistent with the O(.) bound, its rate not attained here)
    inconsistent         s_lo > a + tol, kind "upper" (significantly slower than claimed);
                         kind "exact": a outside [s_lo - tol, s_hi + tol]
    consistent           s_lo > a + tol, kind "lower" (Omega(.) claim, exceeded)
    inconclusive         the global fit and the last decade of the sweep disagree significantly
                         (curvature: the sweep has not reached one power law; see below)

The slope CI combines the percentile bootstrap over replicates (``n_boot`` resamples) with the
fit's lack of fit: with m >= 3 points, the OLS standard error of the slope of the mean curve,
se_fit = sqrt(SSR / (m - 2) / Sxx), is added in quadrature to each half-width (times
t_{m-2, (1+L)/2}).  The *local slope* is the same fit over the last decade of x (x >= x_max/10,
at least 2 points; only when the sweep spans more than a decade) with its own bootstrap CI.
When the local CI excludes the global slope (a significant difference; a wide local CI
never triggers it), the two disagree: the verdict is "inconclusive" (qualifier "curvature")
unless both say the same class.  The exponent compared is the theorem's nominal polynomial exponent (e.g. -1/2 for
O~(n^-1/2)); log factors are stated in ``log_factors`` and never turned into an exponent.

Significance: a bound verdict is one family (Holm over its coordinates); a rate verdict is one
test at level L.  No correction is made across the rows of a report: each row is its own claim.

Code: ``check_bound`` is here; the rate rules (``fit_slope``, ``rate_class``, ``check_rate``, ...) are
in ``stabsim.rates`` and the ``Verdict`` record with the verdict classes in ``stabsim.verdict_core``;
this module re-exports both.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import xarray as xr

from .rates import (  # noqa: F401  (re-exported)
    _as_xy, _bootstrap_means, _class_of, _loglog_slopes, _rate_notes, bound_slope, check_rate,
    fit_slope, lack_of_fit_se, last_decade, rate_class, rate_exponent, rate_rule, SlopeFit)
from .verdict_core import (  # noqa: F401  (re-exported)
    _check_against_registry, _ci_text, _finite_range, _fmt, _num, _registered, BOUND_TAGS,
    FAILED_VERDICTS, OK_VERDICTS, VACUOUS_TIGHTNESS, Verdict)


# ---------------------------------------------------------------------------------------------
# EXPLICIT / EXPLICIT-DD
# ---------------------------------------------------------------------------------------------

def _align_bound(bound_values, template: xr.DataArray) -> xr.DataArray:
    """``bound_values`` on the coordinates of ``template`` (exact match, no interpolation)."""
    if isinstance(bound_values, xr.DataArray):
        try:
            b, _ = xr.align(bound_values, template, join="exact")
        except ValueError as err:
            raise ValueError(f"the bound and the measure are on different coordinates: {err}") from None
        b = b.broadcast_like(template).transpose(*template.dims)
    else:
        arr = np.asarray(bound_values, dtype=float)
        if arr.ndim and arr.shape != template.shape:
            raise ValueError(f"bound values have shape {arr.shape}, the measure {template.shape} "
                             f"(dims {template.dims}); evaluate the bound on the measure's coordinates")
        b = template.copy(data=np.broadcast_to(arr, template.shape).astype(float))
    if bool(np.isnan(b).any()):
        raise ValueError("the bound is NaN at some coordinates (check its arguments)")
    return b.drop_attrs() if hasattr(b, "drop_attrs") else b


def check_bound(measure: xr.Dataset, bound_values, tag: str, *, key: str = "", quantity: str | None = None,
                notes: Sequence[str] = (), trivial_bound=None) -> Verdict:
    """Check an EXPLICIT / EXPLICIT-DD bound against a measure with CI (see the module rules).

    ``measure``: an estimator's Dataset (``estimate``, ``lower``, ``upper``; attrs ``quantity``,
    ``n_replicates``, ``level``), e.g. ``stabsim.measures.uas_mean(ds)``.
    ``bound_values``: the bound on the same coordinates (a DataArray aligned exactly, or an array
    of the same shape, or a scalar).  It is used as given: never rescaled.
    ``key``: the registry key; when registered, its tag and quantity must match ``tag`` and the
    measure's quantity (guards against comparing a mean with a quantile bound).
    ``trivial_bound``: the largest value the quantity can ever take (scalar or on the same
    coordinates, e.g. the diameter of W for ||A(S) - A(S')||); a bound above it everywhere is
    flagged vacuous.
    For EXPLICIT-DD the bound was evaluated at measured inputs; their uncertainty is not
    propagated (noted in the verdict).
    """
    if tag not in BOUND_TAGS:
        hint = " use check_rate for RATE entries" if tag == "RATE" else ""
        raise ValueError(f"check_bound handles tags {BOUND_TAGS}, got {tag!r};{hint}")
    quantity = quantity or measure.attrs.get("quantity", "")
    _check_against_registry(key, tag, quantity)
    est, upper, lower = measure["estimate"], measure["upper"], measure["lower"]
    level = float(measure.attrs.get("level", 0.95))
    bound = _align_bound(bound_values, est)
    details = _bound_details(est, lower, upper, bound, level)
    margin = details["margin"]
    worst = {d: margin[d].values[int(i)].item() for d, i in margin.argmin(dim=list(margin.dims)).items()} \
        if margin.ndim else {}
    m = int(details["holds"].size)
    n_sig = int(details["significant"].sum())
    if bool(details["holds"].all()):
        verdict = "holds"
    elif n_sig:
        verdict = "violated"
    else:
        verdict = "inconclusive"
    tmin, tmax = _finite_range(details["tightness"])
    ltmax = _finite_range(details["lower_tightness"])[1]
    vac, vac_note = _vacuity(tmax, bound, trivial_bound, est)
    return Verdict(key=key, quantity=quantity, tag=tag, verdict=verdict,
                   n_replicates=int(measure.attrs.get("n_replicates", 0)), level=level,
                   worst_margin=float(margin.min()), worst_at=worst,
                   tightness_min=tmin, tightness_max=tmax, lower_tightness_max=ltmax, vacuous=vac,
                   n_significant=n_sig, multiplicity=f"Holm over {m} coordinate{'s' if m != 1 else ''}",
                   notes=tuple(notes) + _bound_notes(details, tag) + vac_note, details=details)


def holm_reject(pvalues, alpha: float) -> np.ndarray:
    """Holm's step-down procedure: which of the hypotheses with these p-values are rejected at
    family-wise level ``alpha`` (Holm 1979).  NaN p-values are never rejected."""
    p = np.asarray(pvalues, dtype=float).ravel()
    p = np.where(np.isnan(p), np.inf, p)
    m = p.size
    order = np.argsort(p, kind="stable")
    reject = np.zeros(m, dtype=bool)
    for rank, i in enumerate(order):
        if p[i] > alpha / (m - rank):
            break
        reject[i] = True
    return reject


def _exceedance_pvalues(est, lower, bound, level: float) -> np.ndarray:
    """One-sided p-values of H_c: measure_c <= bound_c, from the CI's lower half (normal approx.)."""
    from scipy.stats import norm

    z = norm.ppf(0.5 + level / 2)
    e, lo, b = (np.asarray(a, dtype=float) for a in (est, lower, bound))
    with np.errstate(divide="ignore", invalid="ignore"):
        se = (e - lo) / z
        stat = np.where(se > 0, (e - b) / se, np.where(e > b, np.inf, -np.inf))
    stat = np.where(np.isfinite(lo) | np.isinf(stat), stat, -np.inf)  # lower = -inf: no evidence
    return norm.sf(stat)


def _bound_details(est, lower, upper, bound, level: float) -> xr.Dataset:
    holds = upper < bound
    alpha = (1.0 - level) / 2
    p = _exceedance_pvalues(est, lower, bound, level)
    sig = est.copy(data=holm_reject(p, alpha).reshape(est.shape)) & ~holds
    pv = est.copy(data=p.reshape(est.shape))
    with np.errstate(divide="ignore", invalid="ignore"):
        tight = xr.where((bound > 0) & np.isfinite(bound), est / bound, np.nan)
        lower_tight = xr.where((bound > 0) & np.isfinite(bound) & np.isfinite(lower), lower / bound, np.nan)
    status = xr.where(holds, "holds", xr.where(sig, "violated", "inconclusive"))
    return xr.Dataset({"estimate": est, "lower": lower, "upper": upper, "bound": bound,
                       "margin": bound - upper, "tightness": tight, "lower_tightness": lower_tight, "holds": holds, "p_exceed": pv,
                       "significant": sig, "status": status}, attrs={"level": level})


def _vacuity(tmax: float, bound, trivial_bound, template) -> tuple[bool | None, tuple[str, ...]]:
    if trivial_bound is not None:
        triv = _align_bound(trivial_bound, template)
        if bool((bound > triv).all()):
            return True, (f"vacuous: the bound exceeds the trivial bound {float(triv.min()):.3g} "
                          f"the quantity can ever reach, at every coordinate",)
    if not math.isfinite(tmax):
        return None, ()
    if tmax < VACUOUS_TIGHTNESS:
        return True, (f"vacuous: measured/bound <= {tmax:.2g} < {VACUOUS_TIGHTNESS:g} at every coordinate",)
    return False, ()


def _bound_notes(details: xr.Dataset, tag: str) -> tuple[str, ...]:
    out = []
    n_bad = int((~details["holds"]).sum())
    if n_bad:
        n_sig = int(details["significant"].sum())
        m = details["holds"].size
        out.append(f"CI not below the bound at {n_bad} of {m} coordinates; {n_sig} significantly above it "
                   f"(Holm over {m}, one-sided level {(1 - float(_level_of(details))) / 2:g})")
    if bool(np.isinf(details["upper"]).any()):
        out.append("CI upper end is +inf somewhere (too few replicates for that quantile)")
    if tag == "EXPLICIT-DD":
        out.append("EXPLICIT-DD: bound evaluated at measured inputs; their uncertainty is not propagated")
    return tuple(out)


def _level_of(details: xr.Dataset) -> float:
    return float(details.attrs.get("level", 0.95))


__all__ = ["Verdict", "SlopeFit", "check_bound", "check_rate", "fit_slope", "rate_exponent", "bound_slope",
           "rate_rule", "rate_class", "holm_reject", "lack_of_fit_se", "last_decade", "BOUND_TAGS",
           "OK_VERDICTS", "FAILED_VERDICTS", "VACUOUS_TIGHTNESS"]
