"""Verdicts: does a measured quantity respect a bound, and does its rate match?

Two checks, one per kind of registry entry (``stabsim.theory``):

``check_bound``  EXPLICIT / EXPLICIT-DD entries: the bound curve is compared with the measure's
                 confidence interval coordinate by coordinate.  The bound is used exactly as
                 given: it is never rescaled or fitted.
``check_rate``   RATE entries (and the rate of any explicit bound): the log-log slope of the
                 replicate-mean measure against the swept variable, with a bootstrap CI over
                 replicates (``fit_slope``), is compared with the theorem's exponent.

Both return a ``Verdict`` (``to_row()`` gives a flat dict for tables).

Rules
-----
Bound (at each coordinate c, with the measure's CI [lower_c, upper_c] at level ``level``)::

    holds at c      iff  upper_c < bound_c
    margin_c        =    bound_c - upper_c                  (> 0 where it holds)
    tightness_c     =    estimate_c / bound_c               (1 = the bound is attained)
    overall         =    "holds" iff it holds at every coordinate, else "violated"

A violated coordinate with lower_c > bound_c is reported as *significant* (the whole CI is
above the bound); otherwise the CI straddles the bound (inconclusive, still "violated":
the data cannot certify the bound).  The CIs are pointwise, so requiring all coordinates is
conservative for "holds".

Rate (slope s with bootstrap CI [s_lo, s_hi], exponent a, tolerance tol >= 0)::

    kind="upper"  (measure = O(x^a))      consistent iff s_lo <= a + tol
                  i.e. a lies in the CI, or the measure grows slower / decays faster
    kind="lower"  (measure = Omega(x^a))  consistent iff s_hi >= a - tol
    kind="exact"  (measure ~ x^a)         consistent iff s_lo - tol <= a <= s_hi + tol
    rate matched  iff  s_lo - tol <= a <= s_hi + tol  (reported for every kind)

else "inconsistent".  ``tol`` defaults to 0; a non-zero tolerance (e.g. for pre-asymptotic
curvature) must be chosen before looking at the data and is printed in the verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import xarray as xr

from .measures import REPLICATE, _check_level, bootstrap_counts

BOUND_TAGS = ("EXPLICIT", "EXPLICIT-DD")


# ---------------------------------------------------------------------------------------------
# Verdict
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    """The outcome of one bound or rate check.

    key          registry key of the bound (e.g. ``"P1.Thm4.uas"``) or a free label.
    quantity     the measured quantity (``stabsim.theory.QUANTITIES`` name).
    tag          EXPLICIT, EXPLICIT-DD or RATE.
    verdict      "holds" / "violated" (bounds) or "consistent" / "inconsistent" (rates).
    n_replicates, level   replicates behind the measure and the CI's confidence level.
    worst_margin, worst_at  bounds: min over coordinates of bound - CI upper end, and where.
    slope, slope_lower, slope_upper, exponent, tol, kind, rate_matched   rates.
    tightness_min, tightness_max  range of measure/bound over the coordinates (NaN if unknown).
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

    @property
    def ok(self) -> bool:
        """True when the bound holds / the rate is consistent."""
        return self.verdict in ("holds", "consistent")

    def summary(self) -> str:
        """One line for legends and logs, e.g. ``holds; worst margin 0.53 at t=1; tightness 0.0004-0.006``."""
        parts = [self.verdict]
        if self.slope is not None:
            parts.append(f"slope {self.slope:.3g} [{self.slope_lower:.3g}, {self.slope_upper:.3g}] "
                         f"vs {self.exponent:.3g}" + (" (rate matched)" if self.rate_matched else ""))
        if self.worst_margin is not None:
            at = ", ".join(f"{k}={_fmt(v)}" for k, v in self.worst_at.items())
            parts.append(f"worst margin {self.worst_margin:.3g}" + (f" at {at}" if at else ""))
        if np.isfinite(self.tightness_min):
            parts.append(f"tightness {self.tightness_min:.2g}-{self.tightness_max:.2g}")
        return "; ".join(parts)

    def to_row(self) -> dict:
        """A flat dict (strings and numbers) for summary tables."""
        return {
            "key": self.key, "quantity": self.quantity, "tag": self.tag, "verdict": self.verdict,
            "worst_margin": _num(self.worst_margin),
            "worst_at": ", ".join(f"{k}={_fmt(v)}" for k, v in self.worst_at.items()),
            "slope": _num(self.slope), "slope_ci": _ci_text(self.slope_lower, self.slope_upper),
            "exponent": _num(self.exponent), "rate_matched": "" if self.rate_matched is None else self.rate_matched,
            "tightness_min": self.tightness_min, "tightness_max": self.tightness_max,
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
                notes: Sequence[str] = ()) -> Verdict:
    """Check an EXPLICIT / EXPLICIT-DD bound against a measure with CI (see the module rules).

    ``measure``: an estimator's Dataset (``estimate``, ``lower``, ``upper``; attrs ``quantity``,
    ``n_replicates``, ``level``), e.g. ``stabsim.measures.uas_mean(ds)``.
    ``bound_values``: the bound on the same coordinates (a DataArray aligned exactly, or an array
    of the same shape, or a scalar).  It is used as given: never rescaled.
    ``key``: the registry key; when registered, its tag and quantity must match ``tag`` and the
    measure's quantity (guards against comparing a mean with a quantile bound).
    For EXPLICIT-DD the bound was evaluated at measured inputs; their uncertainty is not
    propagated (noted in the verdict).
    """
    if tag not in BOUND_TAGS:
        hint = " use check_rate for RATE entries" if tag == "RATE" else ""
        raise ValueError(f"check_bound handles tags {BOUND_TAGS}, got {tag!r};{hint}")
    quantity = quantity or measure.attrs.get("quantity", "")
    _check_against_registry(key, tag, quantity)
    est, upper, lower = measure["estimate"], measure["upper"], measure["lower"]
    bound = _align_bound(bound_values, est)
    details = _bound_details(est, lower, upper, bound)
    margin = details["margin"]
    worst = {d: margin[d].values[int(i)].item() for d, i in margin.argmin(dim=list(margin.dims)).items()} \
        if margin.ndim else {}
    holds = bool(details["holds"].all())
    tmin, tmax = _finite_range(details["tightness"])
    return Verdict(key=key, quantity=quantity, tag=tag, verdict="holds" if holds else "violated",
                   n_replicates=int(measure.attrs.get("n_replicates", 0)),
                   level=float(measure.attrs.get("level", math.nan)),
                   worst_margin=float(margin.min()), worst_at=worst,
                   tightness_min=tmin, tightness_max=tmax,
                   notes=tuple(notes) + _bound_notes(details, tag), details=details)


def _bound_details(est, lower, upper, bound) -> xr.Dataset:
    holds = upper < bound
    significant = lower > bound
    with np.errstate(divide="ignore", invalid="ignore"):
        tight = xr.where((bound > 0) & np.isfinite(bound), est / bound, np.nan)
    status = xr.where(holds, "holds", xr.where(significant, "violated (significant)", "violated"))
    return xr.Dataset({"estimate": est, "lower": lower, "upper": upper, "bound": bound,
                       "margin": bound - upper, "tightness": tight, "holds": holds, "status": status})


def _bound_notes(details: xr.Dataset, tag: str) -> tuple[str, ...]:
    out = []
    n_bad = int((~details["holds"]).sum())
    if n_bad:
        n_sig = int((details["status"] == "violated (significant)").sum())
        out.append(f"violated at {n_bad} of {details['holds'].size} coordinates "
                   f"({n_sig} with the whole CI above the bound)")
    if bool(np.isinf(details["upper"]).any()):
        out.append("CI upper end is +inf somewhere (too few replicates for that quantile)")
    if tag == "EXPLICIT-DD":
        out.append("EXPLICIT-DD: bound evaluated at measured inputs; their uncertainty is not propagated")
    return tuple(out)


def _finite_range(a: xr.DataArray) -> tuple[float, float]:
    v = np.asarray(a, dtype=float)
    v = v[np.isfinite(v)]
    return (float(v.min()), float(v.max())) if v.size else (math.nan, math.nan)


# ---------------------------------------------------------------------------------------------
# RATE: log-log slope with a bootstrap CI
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SlopeFit:
    """Least-squares fit log(mean_r y_r(x)) = intercept + slope log x, with a bootstrap CI."""

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


def fit_slope(x, per_replicate_y, *, level: float = 0.95, n_boot: int = 2000, seed: int = 0,
              paired: bool = True) -> SlopeFit:
    """Log-log slope of the replicate-mean measure against the swept variable x.

    ``per_replicate_y``: array (R, m) (or a DataArray with dims replicate and the sweep) of
    y_r(x_j).  The point estimate fits log ybar(x_j) = c + s log x_j by least squares, with
    ybar the mean over replicates (the slope of the *expected* measure, which is what the
    theorems bound).  The CI is a percentile bootstrap over replicates: resample R replicates
    with replacement, recompute ybar and refit, ``n_boot`` times (``Generator(PCG64(seed))``).
    ``paired=True`` resamples whole rows (one replicate = one run observed at every x, e.g. the
    checkpoints t of a twin run); ``paired=False`` resamples each column independently (an
    independent set of runs per x, e.g. a sweep over n).  Resamples whose mean is <= 0 at some x
    cannot be logged and are dropped (counted in ``n_dropped``).
    """
    level = _check_level(level)
    x, y = _as_xy(x, per_replicate_y)
    R, m = y.shape
    ybar = y.mean(axis=0)
    if not np.all(ybar > 0):
        raise ValueError(f"the replicate mean is <= 0 at x = {x[ybar <= 0].tolist()}: no log-log slope there")
    lx = np.log(x)
    slope, intercept = np.polyfit(lx, np.log(ybar), 1)
    means = _bootstrap_means(y, n_boot, seed, paired)
    ok = np.all(means > 0, axis=1)
    boots = _loglog_slopes(lx, np.log(means[ok]))
    if boots.size < 0.5 * n_boot:
        raise ValueError("more than half of the bootstrap resamples have a mean <= 0: too many zeros")
    lo, hi = np.quantile(boots, [0.5 - level / 2, 0.5 + level / 2])
    return SlopeFit(slope=float(slope), lower=float(lo), upper=float(hi), intercept=float(intercept),
                    level=level, n_replicates=R, n_boot=int(n_boot), seed=int(seed), paired=paired,
                    x=x, mean=ybar, n_dropped=int((~ok).sum()))


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
    """(consistent, rate_matched) by the module's rules (see the module docstring)."""
    matched = fit.lower - tol <= exponent <= fit.upper + tol
    if kind == "upper":
        return fit.lower <= exponent + tol, matched
    if kind == "lower":
        return fit.upper >= exponent - tol, matched
    if kind == "exact":
        return matched, matched
    raise ValueError(f"kind={kind!r} is not allowed: use 'upper', 'lower' or 'exact'")


def check_rate(x, y_reps, exponent: float, kind: str = "upper", *, tol: float = 0.0, level: float = 0.95,
               n_boot: int = 2000, seed: int = 0, paired: bool = True, key: str = "", quantity: str = "",
               tag: str = "RATE", bound_values=None, notes: Sequence[str] = ()) -> Verdict:
    """Compare the measured log-log slope with a theorem's exponent (rules in the module docstring).

    ``x``: the swept variable (t, n, eta, eps, ...); ``y_reps``: per-replicate measure (R, m);
    ``exponent``: the bound's exponent in x (``rate_exponent`` reads it from the registry;
    ``bound_slope`` gives the local slope of an explicit bound curve).
    ``kind``: "upper" (default; the theorem says measure = O(x^exponent)), "lower" or "exact".
    ``bound_values``: optional bound curve on x; gives the tightness ratio measure/bound along
    the sweep (for a RATE entry the O(.) constant is 1, so only the ratio's drift is meaningful).
    """
    tol = float(tol)
    if tol < 0:
        raise ValueError(f"tol={tol!r} is not allowed: the tolerance must be >= 0")
    _check_against_registry(key, None, quantity)  # any tag: an explicit bound's rate may be checked too
    fit = fit_slope(x, y_reps, level=level, n_boot=n_boot, seed=seed, paired=paired)
    consistent, matched = rate_rule(fit, float(exponent), kind, tol)
    tmin = tmax = math.nan
    if bound_values is not None:
        b = np.asarray(bound_values, dtype=float).ravel()
        if b.shape != fit.mean.shape:
            raise ValueError(f"bound values have {b.size} entries, the sweep {fit.mean.size}")
        tmin, tmax = _finite_range(xr.DataArray(np.where(b > 0, fit.mean / b, np.nan)))
    return Verdict(key=key, quantity=quantity, tag=tag, verdict="consistent" if consistent else "inconsistent",
                   n_replicates=fit.n_replicates, level=fit.level, slope=fit.slope, slope_lower=fit.lower,
                   slope_upper=fit.upper, exponent=float(exponent), tol=tol, kind=kind, rate_matched=matched,
                   tightness_min=tmin, tightness_max=tmax,
                   notes=tuple(notes) + _rate_notes(fit, float(exponent), kind, tol, consistent, matched),
                   details=fit)


def _rate_notes(fit: SlopeFit, a: float, kind: str, tol: float, consistent: bool, matched: bool):
    out = [f"{kind} rule, tol = {tol:g}, {fit.n_boot} bootstrap resamples "
           f"({'paired' if fit.paired else 'per-x'}) over {fit.n_replicates} replicates"]
    if consistent and not matched:
        how = ("grows more slowly (or decays faster)" if fit.upper < a - tol
               else "grows faster (or decays more slowly)")
        out.append(f"the measure {how} than x^{a:g}: consistent with the bound, "
                   f"but its rate is not attained on this range")
    if not consistent:
        out.append(f"slope CI [{fit.lower:.3g}, {fit.upper:.3g}] excludes the exponent {a:g} on the wrong side")
    if fit.n_dropped:
        out.append(f"{fit.n_dropped} bootstrap resamples dropped (mean <= 0)")
    return tuple(out)


__all__ = ["Verdict", "SlopeFit", "check_bound", "check_rate", "fit_slope", "rate_exponent", "bound_slope",
           "rate_rule", "BOUND_TAGS"]
