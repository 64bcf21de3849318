"""RATE verdicts: the log-log slope of a measure against a swept variable with a bootstrap CI
widened by the fit's lack of fit (``fit_slope``), the local slope over the last decade, and the
comparison with a theorem's nominal exponent (``rate_rule``, ``rate_class``, ``check_rate``).
The rules (matches / faster than claimed / inconsistent / consistent / inconclusive): the
docstring of ``stabsim.judging.rules``, which re-exports every name of this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import xarray as xr

from stabsim.engine.measures import REPLICATE, _check_level, bootstrap_counts
from stabsim.judging.verdict import Verdict, _check_against_registry, _finite_range


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
        from stabsim.theory.registry import get
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


#: the qualifier family of a rate row whose curve has a shape that says nothing about the claimed
#: rate on the measured range (one rule each, the same for every paper): below the bound's curve
#: while decaying more slowly (``check_rate``), flattened by noise that fills the domain
#: (``noise_saturation`` callers), or held at a term the bound itself keeps (P4-F1's floor).
SHAPE_PRE_ASYMPTOTIC = "shape: pre-asymptotic"
SHAPE_SATURATED = "shape: saturated"
SHAPE_FLOOR = "shape: floor"
SHAPE_QUALIFIERS = (SHAPE_PRE_ASYMPTOTIC, SHAPE_SATURATED, SHAPE_FLOOR)


#: the smallest error in a rate exponent that a rate row must be able to detect: a row whose slope CI
#: is wider than this on either side, or whose band (nominal exponent .. the bound's own slope) is
#: wider than twice this, cannot tell the claimed rate from one 0.25 away ("cannot discriminate").
RATE_RESOLUTION = 0.25


def shape_band(exponent: float, shape_slope: float | None) -> tuple[float, float]:
    """The band of slopes the claim allows on the measured range: between the nominal polynomial
    exponent and the log-log slope of the bound's own expression there (log factors included).
    Without an expression the band is the exponent alone."""
    a = float(exponent)
    if shape_slope is None or not math.isfinite(shape_slope):
        return a, a
    return min(a, float(shape_slope)), max(a, float(shape_slope))


def _class_of(lo: float, hi: float, a, kind: str, tol: float, toward: str = "infinity") -> str:
    """Class of the slope CI [lo, hi] against the band ``a`` (a number or a (low, high) pair).
    ``toward``: the direction of x in which the claim is asymptotic; toward "zero" (e.g. x = 1/eps
    on a sweep of large eps) a larger exponent is the faster decay, so the two sides swap."""
    b_lo, b_hi = (a, a) if not isinstance(a, tuple) else a
    if lo - tol <= b_hi and b_lo <= hi + tol:
        return "matches"
    below = hi < b_lo - tol  # the measure decays faster / grows more slowly than every slope of the band
    if toward == "zero":
        below = not below
    if kind == "upper":
        return "faster than claimed" if below else "inconsistent"
    if kind == "lower":
        return "inconsistent" if below else "consistent"
    return "inconsistent"


def rate_class(fit: SlopeFit, exponent: float, kind: str = "upper", tol: float = 0.0,
               shape_slope: float | None = None, toward: str = "infinity") -> tuple[str, str]:
    """(verdict, qualifier) of a slope fit against the band of ``shape_band(exponent, shape_slope)``
    (module rules).

    The global fit decides, unless the last decade of the sweep disagrees with it significantly
    and would give another class: then "inconclusive" with qualifier "curvature"."""
    if kind not in ("upper", "lower", "exact"):
        raise ValueError(f"kind={kind!r} is not allowed: use 'upper', 'lower' or 'exact'")
    if toward not in ("infinity", "zero"):
        raise ValueError(f"toward={toward!r} is not allowed: use 'infinity' or 'zero'")
    band = shape_band(exponent, shape_slope)
    g = _class_of(fit.lower, fit.upper, band, kind, tol, toward)
    if fit.local_slope is None:
        return g, ""
    disagree = not (fit.local_lower <= fit.slope <= fit.local_upper)  # significant: the local CI excludes it
    loc = _class_of(fit.local_lower, fit.local_upper, band, kind, tol, toward)
    if disagree and loc != g:
        return "inconclusive", "curvature"
    return g, ""


def rate_power(fit: SlopeFit, band: tuple[float, float]) -> tuple[bool, str]:
    """(can_fail, note): could this sweep have told the claimed rate from one ``RATE_RESOLUTION`` away?

    Yes when both half-widths of the slope CI are at most ``RATE_RESOLUTION`` and the band is at
    most twice that wide.  Otherwise the note says what is missing: the x range that would bring
    the CI down to the resolution (the half-width of a least-squares slope falls like 1/span of
    log x at a fixed number of points and replicates), or that the bound's log factors move its
    slope by more than the resolution over this range."""
    half = max(fit.upper - fit.slope, fit.slope - fit.lower)
    width = band[1] - band[0]
    x = np.asarray(fit.x, dtype=float)
    why = []
    if not half <= RATE_RESOLUTION:
        span = math.log(x.max() / x.min())
        need = x.min() * math.exp(span * half / RATE_RESOLUTION)
        why.append(f"slope CI half-width {half:.2g} > {RATE_RESOLUTION:g}: a rate {RATE_RESOLUTION:g} away "
                   f"would not be detected on x = {x.min():.4g}..{x.max():.4g}; about x = {x.min():.4g}.."
                   f"{need:.3g} would be needed at this number of points and replicates")
    if not width <= 2 * RATE_RESOLUTION:
        why.append(f"the bound's own slope here ({band[0]:.3g}..{band[1]:.3g} with the nominal exponent) spans "
                   f"{width:.2g} > {2 * RATE_RESOLUTION:g}: its log factors dominate on this range")
    if why:
        return False, "; ".join(why)
    return True, (f"slope CI half-width {half:.2g} <= {RATE_RESOLUTION:g} and band width {width:.2g} <= "
                  f"{2 * RATE_RESOLUTION:g}: a rate {RATE_RESOLUTION:g} outside the band would be detected")


def trivial_rate_note(fit: SlopeFit, band: tuple[float, float], trivial_slope: float | None) -> str:
    """"" when the sweep tells the claimed band from the quantity's *trivial* rate, else why not.

    The trivial rate is what the quantity does with no learning at all: slope 0 for a quantity the
    claim says decays (an excess risk, an average regret: bounded, so flat is always possible),
    slope 1 for a cumulative regret (at most n times a bounded loss).  A "matches" whose band,
    widened by the slope CI's half-width, reaches the trivial slope would be given to a curve at
    the trivial rate too: it supports nothing (``check_rate`` turns it into "inconclusive (cannot
    discriminate)", ``can_fail`` False)."""
    if trivial_slope is None or not math.isfinite(trivial_slope):
        return ""
    half = max(fit.upper - fit.slope, fit.slope - fit.lower)
    if band[0] - half <= trivial_slope <= band[1] + half:
        return (f"the band {band[0]:.3g}..{band[1]:.3g} widened by the CI half-width {half:.2g} reaches the "
                f"trivial slope {trivial_slope:g} (a curve {'without decay' if trivial_slope == 0 else 'at the trivial rate'}"
                " would match too): the bound's own expression is that flat on this range, so a match "
                "cannot tell the claim from no learning")
    return ""


def _meeting_point(fit: SlopeFit, curve, curve_slope: float | None) -> str:
    """"; extrapolating both slopes, the measure would reach the curve near x = ..." (the sweep that
    would decide), or "" when it cannot be said."""
    if curve_slope is None or not fit.slope > curve_slope:
        return ""
    i = int(np.argmax(fit.x))
    m, c = float(np.asarray(fit.mean).ravel()[i]), float(np.asarray(curve, dtype=float).ravel()[i])
    x_max = float(np.asarray(fit.x).ravel()[i])
    if not (m > 0 and c > m):
        return ""
    return (f"; extrapolating both slopes ({fit.slope:.3g} and {curve_slope:.3g}) the measure would reach the curve "
            f"near x = {x_max * (c / m) ** (1.0 / (fit.slope - curve_slope)):.3g}: a sweep to there would decide")


def _default_trivial(exponent: float, kind: str, toward: str) -> float | None:
    """Slope 0 for an upper claim of decay toward x -> infinity; None (not assessed) otherwise."""
    return 0.0 if (kind == "upper" and toward == "infinity" and exponent < 0) else None


def _below_curve(y: np.ndarray, curve, level: float, n_boot: int, seed: int, paired: bool) -> bool | None:
    """True when the bootstrap upper end of the replicate mean lies below ``curve`` at every x."""
    if curve is None:
        return None
    c = np.asarray(curve, dtype=float).ravel()
    if c.shape != (y.shape[1],) or not np.all(np.isfinite(c)):
        raise ValueError(f"the bound curve has {c.size} entries, the sweep {y.shape[1]}")
    upper = np.quantile(_bootstrap_means(y, n_boot, seed, paired), 0.5 + level / 2, axis=0)
    return bool(np.all(upper < c))


def check_rate(x, y_reps, exponent: float, kind: str = "upper", *, tol: float = 0.0, level: float = 0.95,
               n_boot: int = 2000, seed: int = 0, paired: bool = True, key: str = "", quantity: str = "",
               tag: str = "RATE", bound_values=None, notes: Sequence[str] = (), log_factors: str = "",
               shape_values=None, explicit_bound=None, finding: str = "", toward: str = "infinity",
               trivial_slope="auto") -> Verdict:
    """Compare the measured log-log slope with a theorem's rate on the measured range (module rules).

    ``x``: the swept variable (t, n, eta, eps, ...); ``y_reps``: per-replicate measure (R, m);
    ``exponent``: the bound's *nominal polynomial* exponent in x (``rate_exponent`` reads it
    from the registry).  Never pass the local log-log slope of an expression with log factors as
    the exponent; name the log factors in ``log_factors`` and give the expression itself as
    ``shape_values`` (or ``bound_values``): the verdict then compares the slope CI with the band
    between the nominal exponent and the expression's own slope over x (``shape_band``), and a row
    whose CI or band is too wide to tell a rate ``RATE_RESOLUTION`` away is "inconclusive (cannot
    discriminate)" with ``can_fail`` False (``rate_power``).
    ``kind``: "upper" (default; the theorem says measure = O(x^exponent)), "lower" or "exact".
    ``bound_values``: optional bound curve on x (the registered expression with the study's own
    parameters); gives the tightness ratio measure/bound along the sweep (for a RATE entry the O(.)
    constant is 1, so only the ratio's drift is meaningful), and the shape when ``shape_values`` is
    not given.
    ``explicit_bound``: a curve with the theorem's real constants, when the study has one.  A slope
    significantly slower than the band ("inconsistent", kind "upper") whose data lie below the
    bound's curve (``explicit_bound``, else ``bound_values``) at every x, CI upper ends included, is
    a pre-asymptotic shape, not a contradiction: "inconclusive (shape: pre-asymptotic)".
    ``finding``: the id of the docs/errata.md entry that argues an asymptotic contradiction (e.g. a
    provable 1/log^2 t rate); such a row keeps "inconsistent" whatever the curve.
    ``toward``: "infinity" (default) when the claim is about growing x (n, t, d); "zero" when it is
    about x -> 0 (x = 1/eps over large eps): there a slope above the band is the faster decay.
    ``trivial_slope``: the slope of the quantity with no learning ("auto": 0 for an upper claim of
    decay, none otherwise; pass 1 for a cumulative regret).  A "matches" that a curve at that slope
    would get too is "inconclusive (cannot discriminate)" (``trivial_rate_note``).
    The pre-asymptotic rule needs a curve that decays at least as fast as the band's slow end: lying
    below a bound that itself decays more slowly than the claim (a floor the bound keeps) says
    nothing about the claimed rate, and the row stays "inconsistent".
    """
    tol = float(tol)
    if tol < 0:
        raise ValueError(f"tol={tol!r} is not allowed: the tolerance must be >= 0")
    _check_against_registry(key, None, quantity)  # any tag: an explicit bound's rate may be checked too
    fit = fit_slope(x, y_reps, level=level, n_boot=n_boot, seed=seed, paired=paired)
    a = float(exponent)
    shape = bound_values if shape_values is None else shape_values
    shape_slope = None
    if shape is not None:
        sv = np.asarray(shape, dtype=float).ravel()
        if sv.shape == fit.x.shape and np.all(sv > 0) and np.all(np.isfinite(sv)):
            shape_slope = bound_slope(fit.x, sv)
    band = shape_band(a, shape_slope)
    verdict, qualifier = rate_class(fit, a, kind, tol, shape_slope, toward)
    can_fail, power_note = rate_power(fit, band)
    extra = []
    if verdict in ("faster than claimed", "inconsistent", "consistent"):
        can_fail = True
        power_note = "significant: the slope CI lies outside the band"
    elif verdict == "matches" and not can_fail:
        verdict, qualifier = "inconclusive", "cannot discriminate"
    triv = _default_trivial(a, kind, toward) if trivial_slope == "auto" else trivial_slope
    if verdict == "matches":
        why = trivial_rate_note(fit, band, triv)
        if why:
            verdict, qualifier, can_fail, power_note = "inconclusive", "cannot discriminate", False, why
    if verdict == "inconsistent" and kind == "upper" and not finding:
        curve = explicit_bound if explicit_bound is not None else bound_values
        y = np.asarray(y_reps.transpose(REPLICATE, ...).values if isinstance(y_reps, xr.DataArray) else y_reps,
                       dtype=float)
        curve_slope = None
        if curve is not None:
            cv = np.asarray(curve, dtype=float).ravel()
            if cv.shape == fit.x.shape and np.all(cv > 0) and np.all(np.isfinite(cv)):
                curve_slope = bound_slope(fit.x, cv)
        if curve_slope is not None and toward == "infinity" and curve_slope > band[1] + 1e-12:
            extra.append(f"the {'explicit bound' if explicit_bound is not None else 'bound expression'} itself has "
                         f"slope {curve_slope:.3g} here, slower than the claim's band: lying below it says nothing "
                         "about the claimed rate (no pre-asymptotic relabelling)")
        elif _below_curve(y, curve, fit.level, n_boot, seed, paired):
            which = "the explicit bound" if explicit_bound is not None else "the bound's expression (O(.) constants 1)"
            verdict, qualifier = "inconclusive", SHAPE_PRE_ASYMPTOTIC
            extra.append(f"rule verdict: inconsistent; the measure stays below {which} at every x (CI upper ends "
                         "included) while decaying more slowly: a pre-asymptotic shape on this range, not a "
                         "contradiction of the O(.) claim" + _meeting_point(fit, curve, curve_slope))
    matched = fit.lower - tol <= a <= fit.upper + tol
    tmin = tmax = math.nan
    if bound_values is not None:
        b = np.asarray(bound_values, dtype=float).ravel()
        if b.shape != fit.mean.shape:
            raise ValueError(f"bound values have {b.size} entries, the sweep {fit.mean.size}")
        tmin, tmax = _finite_range(xr.DataArray(np.where(b > 0, fit.mean / b, np.nan)))
    if finding:
        extra.append(f"asymptotic contradiction argued in {finding}")
    return Verdict(key=key, quantity=quantity, tag=tag, verdict=verdict, qualifier=qualifier,
                   n_replicates=fit.n_replicates, level=fit.level, slope=fit.slope, slope_lower=fit.lower,
                   slope_upper=fit.upper, exponent=a, tol=tol, kind=kind, rate_matched=matched,
                   tightness_min=tmin, tightness_max=tmax, local_slope=fit.local_slope,
                   local_lower=fit.local_lower, local_upper=fit.local_upper, log_factors=log_factors,
                   shape_slope=shape_slope, can_fail=can_fail, power_note=power_note,
                   notes=tuple(notes) + _rate_notes(fit, a, kind, tol, verdict, qualifier, log_factors, band, toward)
                   + tuple(extra),
                   details=fit)


def _rate_notes(fit: SlopeFit, a: float, kind: str, tol: float, verdict: str, qualifier: str, log_factors: str,
               band: tuple[float, float] | None = None, toward: str = "infinity"):
    out = [f"{kind} rule, tol = {tol:g}, {fit.n_boot} bootstrap resamples "
           f"({'paired' if fit.paired else 'per-x'}) over {fit.n_replicates} replicates"
           + (f"; CI widened for lack of fit (se {fit.se_fit:.2g}; bootstrap alone "
              f"[{fit.boot_lower:.3g}, {fit.boot_upper:.3g}])" if math.isfinite(fit.se_fit) else "")]
    if log_factors:
        out.append(f"nominal exponent {a:g}; log factors {log_factors} not in the exponent")
    if verdict == "faster than claimed":
        how = "decays faster" if a < 0 or toward == "zero" else "grows more slowly"
        out.append(f"the measure {how} than x^{a:g}" + (" as x -> 0" if toward == "zero" else "")
                   + ": consistent with the O(.) bound, "
                   f"but its rate is not attained on this range")
    if band is not None and band[1] > band[0]:
        out.append(f"band of the claim on this range: {band[0]:.3g}..{band[1]:.3g} (nominal exponent {a:g} and "
                   f"the bound's own log-log slope over x)")
    if verdict == "inconsistent":
        out.append(f"slope CI [{fit.lower:.3g}, {fit.upper:.3g}] lies on the wrong side of the band")
    if fit.local_slope is not None:
        out.append(f"last decade (x >= {fit.local_from:.4g}): slope {fit.local_slope:.3g} "
                   f"[{fit.local_lower:.3g}, {fit.local_upper:.3g}]"
                   + (" -- disagrees with the global fit: not one power law over the sweep" if qualifier == "curvature"
                      else ""))
    if fit.n_dropped:
        out.append(f"{fit.n_dropped} bootstrap resamples dropped (mean <= 0)")
    return tuple(out)
