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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import xarray as xr

from .measures import REPLICATE, _check_level, bootstrap_counts

BOUND_TAGS = ("EXPLICIT", "EXPLICIT-DD")
#: measured / bound below this at every coordinate: the bound "holds" but says almost nothing.
VACUOUS_TIGHTNESS = 0.01
#: verdicts that are good news for the claim checked (the rest: a significant failure, or no claim).
OK_VERDICTS = ("holds", "consistent", "matches", "faster than claimed", "private")
#: verdicts that claim a failure; only ever given when significant.
FAILED_VERDICTS = ("violated", "inconsistent", "not private at this setting")


# ---------------------------------------------------------------------------------------------
# Verdict
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    """The outcome of one bound or rate check.

    key          registry key of the bound (e.g. ``"P1.Thm4.uas"``) or a free label.
    quantity     the measured quantity (``stabsim.theory.QUANTITIES`` name).
    tag          EXPLICIT, EXPLICIT-DD, RATE, CONDITION, IDENTITY, REPRO, ... (the kind of check).
    verdict      bounds: "holds" / "violated" / "inconclusive"; rates: "matches" /
                 "faster than claimed" / "inconsistent" / "inconclusive" (module rules);
                 other checks: "holds" / "violated", "consistent" / "inconsistent".
    qualifier    why a verdict is what it is, in a word or two ("saturated", "curvature",
                 "stand-in (no paper value)", ...); shown in brackets after the verdict.
    n_replicates, level   replicates behind the measure and the CI's confidence level.
    worst_margin, worst_at  bounds: min over coordinates of bound - CI upper end, and where.
    n_significant, multiplicity  bounds: coordinates significantly above the bound after the
                 stated correction (``multiplicity``, e.g. "Holm over 12 coordinates").
    slope, slope_lower, slope_upper, exponent, tol, kind, rate_matched   rates (``exponent`` is
                 the nominal polynomial exponent; ``log_factors`` names the log factors beside it).
    local_slope, local_lower, local_upper  the slope over the last decade of the sweep.
    tightness_min, tightness_max  range of measure/bound over the coordinates (NaN if unknown).
    vacuous      True when the bound is vacuous (module rules); None when not assessed.
    notes        short remarks (violations, caveats).
    details      per-coordinate Dataset (bound, margin, tightness, status) or the slope fit.
    """

    key: str
    quantity: str
    tag: str
    verdict: str
    n_replicates: int
    level: float
    worst_margin: float | None = None
    worst_at: Mapping[str, object] = field(default_factory=dict)
    slope: float | None = None
    slope_lower: float | None = None
    slope_upper: float | None = None
    exponent: float | None = None
    tol: float | None = None
    kind: str | None = None
    rate_matched: bool | None = None
    tightness_min: float = math.nan
    tightness_max: float = math.nan
    notes: tuple[str, ...] = ()
    details: object = field(default=None, repr=False, compare=False)
    qualifier: str = ""
    vacuous: bool | None = None
    n_significant: int | None = None
    multiplicity: str = ""
    local_slope: float | None = None
    local_lower: float | None = None
    local_upper: float | None = None
    log_factors: str = ""

    @property
    def ok(self) -> bool:
        """True when the claim checked is supported (holds / matches / faster than claimed / consistent)."""
        return self.verdict in OK_VERDICTS

    @property
    def failed(self) -> bool:
        """True for a significant failure (violated / inconsistent)."""
        return self.verdict in FAILED_VERDICTS

    @property
    def label(self) -> str:
        """The verdict with its qualifier, e.g. ``inconclusive (saturated)``."""
        return f"{self.verdict} ({self.qualifier})" if self.qualifier else self.verdict

    def relabel(self, verdict: str, qualifier: str = "", note: str = "") -> "Verdict":
        """A copy with another verdict class (e.g. a saturated "inconsistent" made "inconclusive").

        The original verdict is kept in the notes, so nothing is hidden."""
        from dataclasses import replace

        extra = (f"rule verdict: {self.label}",) + ((note,) if note else ())
        return replace(self, verdict=verdict, qualifier=qualifier, notes=self.notes + extra)

    def summary(self) -> str:
        """One line for legends and logs, e.g. ``holds; worst margin 0.53 at t=1; tightness 0.0004-0.006``."""
        parts = [self.label]
        if self.slope is not None:
            parts.append(f"slope {self.slope:.3g} [{self.slope_lower:.3g}, {self.slope_upper:.3g}] "
                         f"vs {self.exponent:.3g}" + (" (rate matched)" if self.rate_matched else ""))
        if self.worst_margin is not None:
            at = ", ".join(f"{k}={_fmt(v)}" for k, v in self.worst_at.items())
            parts.append(f"worst margin {self.worst_margin:.3g}" + (f" at {at}" if at else ""))
        if np.isfinite(self.tightness_min):
            parts.append(f"tightness {self.tightness_min:.2g}-{self.tightness_max:.2g}")
        if self.vacuous:
            parts.append("vacuous")
        return "; ".join(parts)

    def to_row(self) -> dict:
        """A flat dict (strings and numbers) for summary tables."""
        return {
            "key": self.key, "quantity": self.quantity, "tag": self.tag, "verdict": self.verdict,
            "qualifier": self.qualifier,
            "worst_margin": _num(self.worst_margin),
            "worst_at": ", ".join(f"{k}={_fmt(v)}" for k, v in self.worst_at.items()),
            "n_significant": self.n_significant, "multiplicity": self.multiplicity,
            "slope": _num(self.slope), "slope_ci": _ci_text(self.slope_lower, self.slope_upper),
            "slope_lower": _num(self.slope_lower), "slope_upper": _num(self.slope_upper),
            "exponent": _num(self.exponent), "rate_matched": "" if self.rate_matched is None else self.rate_matched,
            "log_factors": self.log_factors,
            "local_slope": _num(self.local_slope), "local_slope_ci": _ci_text(self.local_lower, self.local_upper),
            "tightness_min": self.tightness_min, "tightness_max": self.tightness_max,
            "vacuous": "" if self.vacuous is None else bool(self.vacuous),
            "n_replicates": self.n_replicates, "confidence": self.level,
            "notes": "; ".join(self.notes),
        }


def _num(x):
    return math.nan if x is None else float(x)


def _fmt(v):
    return f"{v:.4g}" if isinstance(v, (float, np.floating)) else str(v)


def _ci_text(lo, hi):
    return "" if lo is None else f"[{lo:.4g}, {hi:.4g}]"


# ---------------------------------------------------------------------------------------------
# Registry consistency
# ---------------------------------------------------------------------------------------------

def _registered(key: str):
    """The registry entry for ``key``, or None when ``key`` is a free label."""
    if not key:
        return None
    from .theory.registry import get
    try:
        return get(key)
    except KeyError:
        return None


def _check_against_registry(key: str, tag: str | None, quantity: str) -> None:
    """A registered ``key`` must have tag ``tag`` (unless None) and bound ``quantity`` (unless empty)."""
    b = _registered(key)
    if b is None:
        return
    if tag is not None and b.tag != tag:
        raise ValueError(f"bound {key!r} is tagged {b.tag} in the registry, not {tag}")
    if quantity and b.quantity != quantity:
        raise ValueError(f"bound {key!r} bounds {b.quantity!r}, but the measure is {quantity!r}: "
                         f"compare it with the matching estimator")


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
    vac, vac_note = _vacuity(tmax, bound, trivial_bound, est)
    return Verdict(key=key, quantity=quantity, tag=tag, verdict=verdict,
                   n_replicates=int(measure.attrs.get("n_replicates", 0)), level=level,
                   worst_margin=float(margin.min()), worst_at=worst,
                   tightness_min=tmin, tightness_max=tmax, vacuous=vac,
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
    status = xr.where(holds, "holds", xr.where(sig, "violated", "inconclusive"))
    return xr.Dataset({"estimate": est, "lower": lower, "upper": upper, "bound": bound,
                       "margin": bound - upper, "tightness": tight, "holds": holds, "p_exceed": pv,
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


def _finite_range(a: xr.DataArray) -> tuple[float, float]:
    v = np.asarray(a, dtype=float)
    v = v[np.isfinite(v)]
    return (float(v.min()), float(v.max())) if v.size else (math.nan, math.nan)


# ---------------------------------------------------------------------------------------------
# RATE: log-log slope with a bootstrap CI
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SlopeFit:
    """Least-squares fit log(mean_r y_r(x)) = intercept + slope log x, with a CI.

    ``lower``/``upper``: the bootstrap percentile CI widened by the lack of fit (module rules);
    ``boot_lower``/``boot_upper``: the bootstrap CI alone; ``se_fit``: the OLS slope standard
    error from the residuals of the mean curve (NaN with 2 points).  ``local_*``: the slope over
    the last decade of x (None when the sweep spans a decade or less)."""

    slope: float
    lower: float
    upper: float
    intercept: float
    level: float
    n_replicates: int
    n_boot: int
    seed: int
    paired: bool
    x: np.ndarray = field(repr=False)
    mean: np.ndarray = field(repr=False)
    n_dropped: int = 0
    boot_lower: float = math.nan
    boot_upper: float = math.nan
    se_fit: float = math.nan
    local_slope: float | None = None
    local_lower: float | None = None
    local_upper: float | None = None
    local_from: float | None = None


def _loglog_slopes(lx: np.ndarray, ly: np.ndarray) -> np.ndarray:
    """OLS slopes of each row of ``ly`` (..., m) on ``lx`` (m,)."""
    xc = lx - lx.mean()
    return (ly - ly.mean(axis=-1, keepdims=True)) @ xc / (xc @ xc)


def _as_xy(x, per_replicate_y):
    if isinstance(per_replicate_y, xr.DataArray):
        if REPLICATE not in per_replicate_y.dims or per_replicate_y.ndim != 2:
            raise ValueError(f"per-replicate y must be 2-D with a {REPLICATE!r} dim, got {per_replicate_y.dims}")
        y = per_replicate_y.transpose(REPLICATE, ...).values
    else:
        y = np.asarray(per_replicate_y, dtype=float)
    x = np.asarray(x, dtype=float).ravel()
    if y.ndim != 2 or y.shape[1] != x.size:
        raise ValueError(f"per-replicate y must have shape (replicates, {x.size}), got {y.shape}")
    if x.size < 2 or not np.all(x > 0) or np.unique(x).size != x.size:
        raise ValueError("x must hold at least 2 distinct positive values (log-log fit)")
    if y.shape[0] < 2 or not np.all(np.isfinite(y)):
        raise ValueError("per-replicate y needs >= 2 replicates and finite values")
    return x, y


def lack_of_fit_se(lx: np.ndarray, ly: np.ndarray) -> float:
    """OLS standard error of the slope from the residuals, sqrt(SSR/(m-2)/Sxx); NaN for m = 2."""
    m = lx.size
    if m < 3:
        return math.nan
    xc = lx - lx.mean()
    slope = float(_loglog_slopes(lx, ly))
    res = ly - ly.mean() - slope * xc
    return float(math.sqrt(float(res @ res) / (m - 2) / float(xc @ xc)))


def last_decade(x: np.ndarray) -> np.ndarray | None:
    """Mask of the points with x >= max(x)/10 when the sweep spans more than a decade and the
    last decade holds >= 2 points and fewer than all of them; else None."""
    x = np.asarray(x, dtype=float)
    if x.max() <= 10 * x.min():
        return None
    mask = x >= x.max() / 10
    if mask.sum() < 2:  # sparse sweep: the last two points
        mask = x >= np.sort(x)[-2]
    return mask if mask.sum() < x.size else None


def fit_slope(x, per_replicate_y, *, level: float = 0.95, n_boot: int = 2000, seed: int = 0,
              paired: bool = True) -> SlopeFit:
    """Log-log slope of the replicate-mean measure against the swept variable x.

    ``per_replicate_y``: array (R, m) (or a DataArray with dims replicate and the sweep) of
    y_r(x_j).  The point estimate fits log ybar(x_j) = c + s log x_j by least squares, with
    ybar the mean over replicates (the slope of the *expected* measure, which is what the
    theorems bound).  The CI is a percentile bootstrap over replicates: resample R replicates
    with replacement, recompute ybar and refit, ``n_boot`` times (``Generator(PCG64(seed))``),
    and each half-width is then widened in quadrature by t_{m-2} times the lack-of-fit standard
    error of the slope (``lack_of_fit_se``), so a curve that is not one power law over the sweep
    gets a wide CI instead of a tight wrong one.  The same resamples give the CI of the local
    slope over the last decade (``last_decade``).
    ``paired=True`` resamples whole rows (one replicate = one run observed at every x, e.g. the
    checkpoints t of a twin run); ``paired=False`` resamples each column independently (an
    independent set of runs per x, e.g. a sweep over n).  Resamples whose mean is <= 0 at some x
    cannot be logged and are dropped (counted in ``n_dropped``).
    """
    from scipy.stats import t as student_t

    level = _check_level(level)
    x, y = _as_xy(x, per_replicate_y)
    R, m = y.shape
    ybar = y.mean(axis=0)
    if not np.all(ybar > 0):
        raise ValueError(f"the replicate mean is <= 0 at x = {x[ybar <= 0].tolist()}: no log-log slope there")
    lx, ly = np.log(x), np.log(ybar)
    slope, intercept = np.polyfit(lx, ly, 1)
    means = _bootstrap_means(y, n_boot, seed, paired)
    ok = np.all(means > 0, axis=1)
    lmeans = np.log(means[ok])
    boots = _loglog_slopes(lx, lmeans)
    if boots.size < 0.5 * n_boot:
        raise ValueError("more than half of the bootstrap resamples have a mean <= 0: too many zeros")
    q = [0.5 - level / 2, 0.5 + level / 2]
    blo, bhi = np.quantile(boots, q)
    se_fit = lack_of_fit_se(lx, ly)
    widen = float(student_t.ppf(0.5 + level / 2, m - 2) * se_fit) if m > 2 else 0.0
    lo = slope - math.hypot(slope - blo, widen)
    hi = slope + math.hypot(bhi - slope, widen)
    loc = dict(local_slope=None, local_lower=None, local_upper=None, local_from=None)
    mask = last_decade(x)
    if mask is not None:
        ls = float(_loglog_slopes(lx[mask], ly[mask]))
        llo, lhi = np.quantile(_loglog_slopes(lx[mask], lmeans[:, mask]), q)
        if mask.sum() > 2:
            w = float(student_t.ppf(0.5 + level / 2, mask.sum() - 2) * lack_of_fit_se(lx[mask], ly[mask]))
            llo, lhi = ls - math.hypot(ls - llo, w), ls + math.hypot(lhi - ls, w)
        loc = dict(local_slope=ls, local_lower=float(llo), local_upper=float(lhi), local_from=float(x[mask].min()))
    return SlopeFit(slope=float(slope), lower=float(lo), upper=float(hi), intercept=float(intercept),
                    level=level, n_replicates=R, n_boot=int(n_boot), seed=int(seed), paired=paired,
                    x=x, mean=ybar, n_dropped=int((~ok).sum()), boot_lower=float(blo), boot_upper=float(bhi),
                    se_fit=se_fit, **loc)


def _bootstrap_means(y: np.ndarray, n_boot: int, seed: int, paired: bool) -> np.ndarray:
    """(n_boot, m) replicate means of bootstrap resamples."""
    R, m = y.shape
    if paired:
        return bootstrap_counts(R, n_boot, seed) @ y / R
    gen_seeds = np.random.SeedSequence(int(seed)).spawn(m)
    cols = [bootstrap_counts(R, n_boot, int(s.generate_state(1)[0])) @ y[:, j] / R
            for j, s in enumerate(gen_seeds)]
    return np.stack(cols, axis=1)


def rate_exponent(bound, var: str, **params) -> float:
    """The exponent of a registry bound's rate in ``var``; callable exponents get ``params``.

    ``bound``: a registry key or ``Bound``.  E.g. ``rate_exponent("P1.Thm3.rate", "n", L=1, mu=.5)``.
    """
    if isinstance(bound, str):
        from .theory.registry import get
        bound = get(bound)
    if not bound.rate or var not in bound.rate:
        raise ValueError(f"bound {bound.key!r} has no rate exponent in {var!r} (rate = {bound.rate})")
    e = bound.rate[var]
    return float(e(**params) if callable(e) else e)


def bound_slope(x, bound_values) -> float:
    """Least-squares log-log slope of a bound curve over x (the rate an EXPLICIT bound implies there)."""
    x = np.asarray(x, dtype=float).ravel()
    b = np.asarray(bound_values, dtype=float).ravel()
    if b.shape != x.shape or not (np.all(x > 0) and np.all(b > 0)):
        raise ValueError("bound_slope needs positive x and bound values of the same length")
    return float(_loglog_slopes(np.log(x), np.log(b)))


def rate_rule(fit: SlopeFit, exponent: float, kind: str, tol: float) -> tuple[bool, bool]:
    """(consistent, rate_matched) of the global fit by the module's rules (no curvature test)."""
    matched = fit.lower - tol <= exponent <= fit.upper + tol
    if kind == "upper":
        return fit.lower <= exponent + tol, matched
    if kind == "lower":
        return fit.upper >= exponent - tol, matched
    if kind == "exact":
        return matched, matched
    raise ValueError(f"kind={kind!r} is not allowed: use 'upper', 'lower' or 'exact'")


def _class_of(lo: float, hi: float, a: float, kind: str, tol: float) -> str:
    if lo - tol <= a <= hi + tol:
        return "matches"
    below = hi < a - tol  # the measure decays faster / grows more slowly than x^a
    if kind == "upper":
        return "faster than claimed" if below else "inconsistent"
    if kind == "lower":
        return "inconsistent" if below else "consistent"
    return "inconsistent"


def rate_class(fit: SlopeFit, exponent: float, kind: str = "upper", tol: float = 0.0) -> tuple[str, str]:
    """(verdict, qualifier) of a slope fit against a nominal exponent (module rules).

    The global fit decides, unless the last decade of the sweep disagrees with it significantly
    and would give another class: then "inconclusive" with qualifier "curvature"."""
    if kind not in ("upper", "lower", "exact"):
        raise ValueError(f"kind={kind!r} is not allowed: use 'upper', 'lower' or 'exact'")
    g = _class_of(fit.lower, fit.upper, exponent, kind, tol)
    if fit.local_slope is None:
        return g, ""
    disagree = not (fit.local_lower <= fit.slope <= fit.local_upper)  # significant: the local CI excludes it
    loc = _class_of(fit.local_lower, fit.local_upper, exponent, kind, tol)
    if disagree and loc != g:
        return "inconclusive", "curvature"
    return g, ""


def check_rate(x, y_reps, exponent: float, kind: str = "upper", *, tol: float = 0.0, level: float = 0.95,
               n_boot: int = 2000, seed: int = 0, paired: bool = True, key: str = "", quantity: str = "",
               tag: str = "RATE", bound_values=None, notes: Sequence[str] = (), log_factors: str = "") -> Verdict:
    """Compare the measured log-log slope with a theorem's nominal exponent (module rules).

    ``x``: the swept variable (t, n, eta, eps, ...); ``y_reps``: per-replicate measure (R, m);
    ``exponent``: the bound's *nominal polynomial* exponent in x (``rate_exponent`` reads it
    from the registry).  Never pass the local log-log slope of an expression with log factors
    (over a short range ln^2 n turns a decay into a positive "exponent"); name the log factors
    in ``log_factors`` instead, and widen ``tol`` for them only if chosen before the run.
    ``kind``: "upper" (default; the theorem says measure = O(x^exponent)), "lower" or "exact".
    ``bound_values``: optional bound curve on x; gives the tightness ratio measure/bound along
    the sweep (for a RATE entry the O(.) constant is 1, so only the ratio's drift is meaningful).
    """
    tol = float(tol)
    if tol < 0:
        raise ValueError(f"tol={tol!r} is not allowed: the tolerance must be >= 0")
    _check_against_registry(key, None, quantity)  # any tag: an explicit bound's rate may be checked too
    fit = fit_slope(x, y_reps, level=level, n_boot=n_boot, seed=seed, paired=paired)
    a = float(exponent)
    verdict, qualifier = rate_class(fit, a, kind, tol)
    matched = fit.lower - tol <= a <= fit.upper + tol
    tmin = tmax = math.nan
    if bound_values is not None:
        b = np.asarray(bound_values, dtype=float).ravel()
        if b.shape != fit.mean.shape:
            raise ValueError(f"bound values have {b.size} entries, the sweep {fit.mean.size}")
        tmin, tmax = _finite_range(xr.DataArray(np.where(b > 0, fit.mean / b, np.nan)))
    return Verdict(key=key, quantity=quantity, tag=tag, verdict=verdict, qualifier=qualifier,
                   n_replicates=fit.n_replicates, level=fit.level, slope=fit.slope, slope_lower=fit.lower,
                   slope_upper=fit.upper, exponent=a, tol=tol, kind=kind, rate_matched=matched,
                   tightness_min=tmin, tightness_max=tmax, local_slope=fit.local_slope,
                   local_lower=fit.local_lower, local_upper=fit.local_upper, log_factors=log_factors,
                   notes=tuple(notes) + _rate_notes(fit, a, kind, tol, verdict, qualifier, log_factors),
                   details=fit)


def _rate_notes(fit: SlopeFit, a: float, kind: str, tol: float, verdict: str, qualifier: str, log_factors: str):
    out = [f"{kind} rule, tol = {tol:g}, {fit.n_boot} bootstrap resamples "
           f"({'paired' if fit.paired else 'per-x'}) over {fit.n_replicates} replicates"
           + (f"; CI widened for lack of fit (se {fit.se_fit:.2g}; bootstrap alone "
              f"[{fit.boot_lower:.3g}, {fit.boot_upper:.3g}])" if math.isfinite(fit.se_fit) else "")]
    if log_factors:
        out.append(f"nominal exponent {a:g}; log factors {log_factors} not in the exponent")
    if verdict == "faster than claimed":
        how = "decays faster" if a < 0 else "grows more slowly"
        out.append(f"the measure {how} than x^{a:g}: consistent with the O(.) bound, "
                   f"but its rate is not attained on this range")
    if verdict == "inconsistent":
        out.append(f"slope CI [{fit.lower:.3g}, {fit.upper:.3g}] excludes the exponent {a:g} on the wrong side")
    if fit.local_slope is not None:
        out.append(f"last decade (x >= {fit.local_from:.4g}): slope {fit.local_slope:.3g} "
                   f"[{fit.local_lower:.3g}, {fit.local_upper:.3g}]"
                   + (" -- disagrees with the global fit: not one power law over the sweep" if qualifier == "curvature"
                      else ""))
    if fit.n_dropped:
        out.append(f"{fit.n_dropped} bootstrap resamples dropped (mean <= 0)")
    return tuple(out)


__all__ = ["Verdict", "SlopeFit", "check_bound", "check_rate", "fit_slope", "rate_exponent", "bound_slope",
           "rate_rule", "rate_class", "holm_reject", "lack_of_fit_se", "last_decade", "BOUND_TAGS",
           "OK_VERDICTS", "FAILED_VERDICTS", "VACUOUS_TIGHTNESS"]
