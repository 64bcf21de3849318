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
    vacuous        only for a bound that holds: the bound is at or above the trivial bound the
                        quantity can ever reach (``trivial_bound``, e.g. the diameter of W for a
                        distance between two points of W) at every coordinate, or max_c tightness_c
                        < VACUOUS_TIGHTNESS (0.01), the tightness of a squared quantity
                        (``SQUARED_QUANTITIES``) square-rooted first so that a bound and its square
                        agree; never set when the measure is <= 0 at every coordinate (a note says so).
    can_fail       a planted violation: Holm's test run against bound_c' = estimate_c / 2 (a
                        quantity at twice the bound, at the measured relative precision) rejects
                        at some coordinate.  False also when the bound is at or above the trivial
                        bound everywhere or the measure is <= 0 everywhere.  A row that cannot fail
                        is *uninformative*: counted apart, never a finding.

Rate (slope s with CI [s_lo, s_hi], nominal exponent a, the bound's own log-log slope b over the
measured x (its expression with the study's parameters, log factors included), the band
[min(a, b), max(a, b)], tolerance tol >= 0 fixed before the run)::

    matches              the CI meets the band (widened by tol)           (the rate is attained)
    faster than claimed  s_hi < band low - tol, kind "upper"              (the measure decays faster /
                         grows more slowly: consistent with the O(.) bound, its rate not attained here)
    inconsistent         s_lo > band high + tol, kind "upper" (significantly slower than claimed);
                         kind "exact": the CI misses the band
    consistent           s_lo > band high + tol, kind "lower" (Omega(.) claim, exceeded)
    inconclusive         (curvature) the global fit and the last decade of the sweep disagree
                         significantly (the sweep has not reached one power law; see below);
                         (cannot discriminate) "matches", but a CI half-width above RATE_RESOLUTION
                         (0.25) or a band wider than twice that: a rate 0.25 away would not have
                         been detected (``rate_power``; the note says what x range would be needed);
                         (shape: pre-asymptotic) "inconsistent", but the measure's CI stays below the
                         bound's curve at every x: no contradiction on this range.  A row whose
                         docs/errata.md finding argues an asymptotic contradiction keeps
                         "inconsistent" (``finding``).  The shape family also holds "shape:
                         saturated" (noise fills the domain) and "shape: floor" (a flat curve at a
                         term the bound keeps, without a significant slope claim; a significantly
                         slow row at P4-F1's floor stays "inconsistent", the finding that entry argues),
                         set by the studies that measure them.

The slope CI combines the percentile bootstrap over replicates (``n_boot`` resamples) with the
fit's lack of fit: with m >= 3 points, the OLS standard error of the slope of the mean curve,
se_fit = sqrt(SSR / (m - 2) / Sxx), is added in quadrature to each half-width (times
t_{m-2, (1+L)/2}).  The *local slope* is the same fit over the last decade of x (x >= x_max/10,
at least 2 points; only when the sweep spans more than a decade) with its own bootstrap CI.
When the local CI excludes the global slope (a significant difference; a wide local CI
never triggers it), the two disagree: the verdict is "inconclusive" (qualifier "curvature")
unless both say the same class.  The exponent compared is the theorem's nominal polynomial
exponent (e.g. -1/2 for O~(n^-1/2)) together with the expression's own slope: over a short range
ln^2 n turns n^-1/2 into +0.1, which is why the band, not the local slope alone, is compared,
and why a band that wide cannot discriminate.

Significance: a bound verdict is one family (Holm over its coordinates); a rate verdict is one
test at level L.  No correction is made across the rows of a report: each row is its own claim.

Code: ``check_bound`` is here; the rate rules (``fit_slope``, ``rate_class``, ``check_rate``, ...) are
in ``stabsim.judging.rates`` and the ``Verdict`` record with the verdict classes in ``stabsim.judging.verdict``;
this module re-exports both.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import xarray as xr

from stabsim.judging.rates import (  # noqa: F401  (re-exported)
    _as_xy, _bootstrap_means, _class_of, _loglog_slopes, _rate_notes, bound_slope, check_rate,
    fit_slope, lack_of_fit_se, last_decade, rate_class, rate_exponent, rate_rule, SlopeFit)
from stabsim.judging.verdict import (  # noqa: F401  (re-exported)
    _check_against_registry, _ci_text, _finite_range, _fmt, _num, _registered, BOUND_TAGS,
    FAILED_VERDICTS, LITERAL_READING, OK_VERDICTS, VACUOUS_TIGHTNESS, Verdict, is_headline, mark_repeats)


# ---------------------------------------------------------------------------------------------
# EXPLICIT / EXPLICIT-DD
# ---------------------------------------------------------------------------------------------

def coupled_distance_cap(t, *, diameter=None, eta=None, G=None):
    """The largest ||w_t - w'_t|| two coupled runs can reach by step t, whatever the data: min(diam W,
    2 eta G t) -- both start at the same w_0, each step moves either run by at most eta G, and the
    projection onto W is 1-Lipschitz (an average of iterates is no farther apart than the farthest pair).
    A term that is not known (None or infinite) is left out; None when neither is known."""
    t = np.asarray(t, dtype=float)
    caps = []
    if diameter is not None and np.isfinite(diameter):
        caps.append(np.full(t.shape, float(diameter)))
    if eta is not None and G is not None and np.isfinite(G):
        caps.append(2.0 * float(eta) * float(G) * t)
    if not caps:
        return None
    return caps[0] if len(caps) == 1 else np.minimum(caps[0], caps[1])


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
    ``n_replicates``, ``level``), e.g. ``stabsim.engine.measures.uas_mean(ds)``.
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
    vac, vac_note = _vacuity(tmax, bound, trivial_bound, est, verdict, quantity)
    can_fail, power_note = _bound_power(est, lower, upper, bound, level, trivial_bound, verdict)
    return Verdict(key=key, quantity=quantity, tag=tag, verdict=verdict,
                   n_replicates=int(measure.attrs.get("n_replicates", 0)), level=level,
                   worst_margin=float(margin.min()), worst_at=worst,
                   tightness_min=tmin, tightness_max=tmax, lower_tightness_max=ltmax, vacuous=vac,
                   n_significant=n_sig, multiplicity=f"Holm over {m} coordinate{'s' if m != 1 else ''}",
                   can_fail=can_fail, power_note=power_note,
                   notes=tuple(notes) + _bound_notes(details, tag) + vac_note, details=details)


#: quantities that are squares of a distance or norm: their tightness is put back on the scale of
#: the distance (square root) before the vacuity threshold is applied, so that a bound and its
#: square get the same vacuity flag.
SQUARED_QUANTITIES = frozenset({"uas_sq_quantile", "iterate_dist_sq_quantile", "onavg_stability", "iterate_norm_sq"})


def _bound_power(est, lower, upper, bound, level: float, trivial_bound, verdict: str) -> tuple[bool, str]:
    """(can_fail, note) of a bound row by a planted violation: would Holm's test have called the row
    violated had the quantity been twice the bound, at the relative precision measured?  That is
    the test run against bound_c' = estimate_c / 2 where the estimate is positive.  A bound above
    the quantity's trivial bound everywhere, or a quantity measured <= 0 everywhere, cannot fail."""
    if verdict == "violated":
        return True, "significant: violated"
    e = np.asarray(est, dtype=float)
    if trivial_bound is not None:
        triv = np.asarray(_align_bound(trivial_bound, est), dtype=float)
        if bool(np.all(np.asarray(bound, dtype=float) >= triv)):
            return False, (f"the bound is at or above the trivial bound {float(triv.min()):.3g} the quantity can "
                           "ever reach, at every coordinate: it cannot fail")
    pos = np.isfinite(e) & (e > 0)
    if not pos.any():
        return False, "the measured quantity is <= 0 at every coordinate: no violation of a positive bound is possible"
    planted = np.where(pos, e / 2.0, np.inf)
    p = _exceedance_pvalues(e, np.asarray(lower, dtype=float), planted, level)
    if bool(holm_reject(np.where(pos, p, np.nan), (1.0 - level) / 2).any()):
        return True, "a quantity at twice the bound would be detected (planted violation at the measured precision)"
    return False, ("not even a quantity at twice the bound would be detected at the measured precision "
                   "(planted violation: bound = estimate/2 is not rejected)")


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


def _vacuity(tmax: float, bound, trivial_bound, template, verdict: str = "holds",
             quantity: str = "") -> tuple[bool | None, tuple[str, ...]]:
    """Vacuity of a bound that holds (None for any other verdict: a bound not shown to hold is
    not vacuous).  Vacuous when the bound is at or above the quantity's trivial bound everywhere, or
    when max measured/bound, on the scale of a distance (square root for ``SQUARED_QUANTITIES``), is
    below ``VACUOUS_TIGHTNESS``.  A quantity measured <= 0 everywhere gets None and a note: the
    bound then holds trivially, which is not a statement about its size."""
    if verdict != "holds":
        return None, ()
    if trivial_bound is not None:
        triv = _align_bound(trivial_bound, template)
        if bool((bound >= triv).all()):
            return True, (f"vacuous: the bound is at or above the trivial bound {float(triv.min()):.3g} "
                          f"the quantity can ever reach, at every coordinate",)
    est = np.asarray(template, dtype=float)
    if est.size and bool(np.all(est[np.isfinite(est)] <= 0)):
        return None, ("measured quantity <= 0 at every coordinate: the bound holds trivially (not flagged vacuous)",)
    if not math.isfinite(tmax):
        return None, ()
    scale = math.sqrt(max(tmax, 0.0)) if quantity in SQUARED_QUANTITIES or quantity.endswith("_sq") else tmax
    if scale < VACUOUS_TIGHTNESS:
        sq = " (square root taken: the quantity is a square)" if scale != tmax else ""
        return True, (f"vacuous: measured/bound <= {scale:.2g} < {VACUOUS_TIGHTNESS:g} at every coordinate{sq}",)
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


__all__ = ["Verdict", "SlopeFit", "check_bound", "coupled_distance_cap", "check_rate", "fit_slope", "rate_exponent", "bound_slope",
           "rate_rule", "rate_class", "holm_reject", "lack_of_fit_se", "last_decade", "BOUND_TAGS",
           "OK_VERDICTS", "FAILED_VERDICTS", "VACUOUS_TIGHTNESS"]
