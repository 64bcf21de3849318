"""Stability estimators with confidence intervals, computed from twin runs.

Every estimator reads the per-replicate distances of a ``run_twin`` Dataset (dims
``replicate``, ``t``) and returns an ``xarray.Dataset`` over the remaining coordinates with

``estimate``   the point estimate,
``lower``      lower end of the confidence interval,
``upper``      upper end of the confidence interval,

(plus ``se`` for mean-based estimates) and the attrs ``quantity`` (a name of
``stabsim.theory.QUANTITIES``), ``var`` (the distance used), ``n_replicates``, ``level``
(two-sided confidence level), ``ci_method``, ``note`` and the run's provenance
(algorithm, loss, n, eta, T, seed, neighbour, ...).  The coordinates of ``t`` (``sum_eta``,
``sum_eta2``, ``eta_t``) are kept, so a bound can be evaluated on the same grid.

Notation (P0, P1, P4): A(S) is the algorithm's output on the data set S, S' a neighbour
(one example replaced), and ||A(S) - A(S')|| the distance recorded by the twin kernel.

================  =========================================================  ==================
estimator          estimates                                                  CI
================  =========================================================  ==================
``uas_mean``       E_A ||A(S) - A(S')||   (P1 Def. 1, UAS in expectation)     Student t (or bootstrap)
``uas_quantile``   (1-gamma)-quantile of ||A(S) - A(S')||  (P0, w.p. 1-gamma)  order statistics
``onavg_stability`` E (1/n) sum_i ||A(S) - A(S^(i))||^2  (P4 Def. 6)          Student t (or bootstrap)
================  =========================================================  ==================

All mean-type CIs go through the single helper ``mean_ci``.

Every stability bound is a statement about the *supremum over neighbouring pairs* (S, S').
A simulation sees only the pairs it ran, so each UAS estimate here is an estimate of a
*lower bound* on that supremum.  That is the right direction for checking an upper bound:
if the bound is violated for the pairs we tried, it is violated.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from scipy import stats

REPLICATE = "replicate"

#: quantity names (``stabsim.theory.QUANTITIES``) by recorded distance variable.
_MEAN_QUANTITY = {"dist_output": "uas_mean", "dist_iterate": "iterate_dist"}
_QUANTILE_QUANTITY = {
    ("dist_output", False): "uas_quantile", ("dist_output", True): "uas_sq_quantile",
    ("dist_iterate", False): "iterate_dist_quantile", ("dist_iterate", True): "iterate_dist_sq_quantile",
}
#: run attributes copied onto every estimate (provenance for tables and plot titles).
_RUN_ATTRS = ("algorithm", "loss", "constraint", "n", "d", "T", "eta", "seed", "sigma", "noise",
              "neighbour", "neighbour_relation", "stabsim_version", "git_commit")

SUP_NOTE = ("an estimate of a lower bound on the supremum over neighbouring pairs "
            "(only the simulated pairs S, S' are seen)")


# ---------------------------------------------------------------------------------------------
# Shared CI helpers
# ---------------------------------------------------------------------------------------------

def _check_level(level: float) -> float:
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level={level!r} is not allowed: the confidence level must lie in (0, 1)")
    return level


def _as_replicate_array(values, dim: str = REPLICATE) -> xr.DataArray:
    """``values`` as a finite DataArray with a replicate dim (a numpy array: axis 0 = replicates)."""
    if not isinstance(values, xr.DataArray):
        a = np.asarray(values, dtype=float)
        if a.ndim == 0:
            raise ValueError("per-replicate values must have at least one axis (the replicates)")
        values = xr.DataArray(a, dims=(dim,) + tuple(f"dim_{i}" for i in range(1, a.ndim)))
    if dim not in values.dims:
        raise ValueError(f"per-replicate values need a {dim!r} dimension, got dims {values.dims}")
    bad = int((~np.isfinite(values)).sum())
    if bad:
        raise ValueError(f"{bad} per-replicate value(s) are NaN or infinite (a diverged run or an "
                         f"unrecorded checkpoint?); drop those replicates before estimating")
    return values


def standard_error(values, dim: str = REPLICATE) -> xr.DataArray:
    """Standard error of the replicate mean, s / sqrt(R) with the unbiased (ddof = 1) s."""
    values = _as_replicate_array(values, dim)
    R = values.sizes[dim]
    if R < 2:
        raise ValueError(f"a standard error needs at least 2 replicates, got {R}")
    return values.std(dim, ddof=1) / math.sqrt(R)


def bootstrap_counts(R: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, R) resampling counts: row b says how often each replicate is drawn in resample b.

    Resample b draws R replicate indices uniformly with replacement; a resampled mean is then
    ``counts @ values / R`` (no (n_boot, R, ...) copy of the data).  Analysis-side randomness:
    ``numpy.random.Generator(PCG64(seed))``.
    """
    R, n_boot = int(R), int(n_boot)
    if R < 1 or n_boot < 1:
        raise ValueError(f"need R >= 1 replicates and n_boot >= 1 resamples, got R={R}, n_boot={n_boot}")
    gen = np.random.Generator(np.random.PCG64(int(seed)))
    idx = gen.integers(0, R, size=(n_boot, R)) + R * np.arange(n_boot)[:, None]
    return np.bincount(idx.ravel(), minlength=n_boot * R).reshape(n_boot, R).astype(float)


def mean_ci(values, *, dim: str = REPLICATE, level: float = 0.95, method: str = "t",
            n_boot: int = 2000, seed: int = 0) -> xr.Dataset:
    """Mean over replicates with a two-sided confidence interval: the one shared CI helper.

    ``values``: a DataArray with dim ``dim`` (other dims are kept) or a numpy array whose axis 0
    is the replicate axis.

    ``method="t"`` (default): the Student t-interval  mean +- t_{R-1, (1+level)/2} s / sqrt(R).
    Exact for normal data; by the CLT approximately right for any finite-variance quantity when R
    is in the hundreds (the twin studies' regime).  ``method="bootstrap"``: percentile bootstrap
    over replicates (``n_boot`` resamples, fixed ``seed``); the same resample is used at every
    coordinate, which keeps the dependence between checkpoints of one replicate.

    Returns a Dataset with ``estimate``, ``se``, ``lower``, ``upper`` and attrs ``n_replicates``,
    ``level``, ``ci_method``.
    """
    level = _check_level(level)
    values = _as_replicate_array(values, dim)
    R = values.sizes[dim]
    est = values.mean(dim)
    se = standard_error(values, dim)
    if method == "t":
        half = stats.t.ppf(0.5 + level / 2, R - 1) * se
        lower, upper = est - half, est + half
        ci_method = f"Student t-interval on the mean (df = {R - 1})"
    elif method == "bootstrap":
        lower, upper = _bootstrap_mean_bounds(values, dim, level, n_boot, seed)
        ci_method = f"percentile bootstrap over replicates ({int(n_boot)} resamples, seed {int(seed)})"
    else:
        raise ValueError(f"method={method!r} is not allowed: use 't' or 'bootstrap'")
    out = xr.Dataset({"estimate": est, "se": se, "lower": lower, "upper": upper})
    out.attrs.update(n_replicates=int(R), level=level, ci_method=ci_method)
    return out


def _bootstrap_mean_bounds(values: xr.DataArray, dim: str, level: float, n_boot: int, seed: int):
    R = values.sizes[dim]
    v = values.transpose(dim, ...)
    flat = v.values.reshape(R, -1)
    means = bootstrap_counts(R, n_boot, seed) @ flat / R            # (n_boot, m)
    lo, hi = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2], axis=0)
    template = v.isel({dim: 0}, drop=True)
    shape = template.shape
    return template.copy(data=lo.reshape(shape)), template.copy(data=hi.reshape(shape))


def order_statistic_ci_indices(R: int, p: float, level: float = 0.95) -> tuple[int, int, float]:
    """Indices (l, u) of the distribution-free CI [X_(l), X_(u)] for the p-quantile, and its coverage.

    X_(1) <= ... <= X_(R) are the order statistics of R i.i.d. draws and B ~ Binom(R, p).  Since
    X_(l) <= xi_p <= X_(u) whenever l <= B <= u-1 (B = #{X_i <= xi_p}), the interval covers the
    p-quantile xi_p with probability >= P(l <= B <= u-1) for *any* distribution.  Each tail gets
    at most (1-level)/2:

        l = max{l : P(B <= l-1) <= (1-level)/2},   u = min{u : P(B >= u) <= (1-level)/2}.

    ``l = 0`` means the lower end is -infinity (too few replicates below the quantile) and
    ``u = R+1`` means the upper end is +infinity.  Returns (l, u, P(l <= B <= u-1)).
    """
    R = int(R)
    if R < 1:
        raise ValueError(f"need at least one replicate, got R={R}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"p={p!r} is not allowed: the quantile level must lie in (0, 1)")
    tail = (1.0 - _check_level(level)) / 2
    ks = np.arange(0, R + 2)
    cdf_below = stats.binom.cdf(ks - 1, R, p)          # P(B <= k-1), k = 0..R+1
    l = int(ks[cdf_below <= tail].max())               # cdf_below[0] = 0, so l >= 0
    sf_at = stats.binom.sf(ks - 1, R, p)               # P(B >= k)
    u = int(ks[sf_at <= tail].min())                   # P(B >= R+1) = 0, so u <= R+1
    coverage = float(stats.binom.cdf(u - 1, R, p) - stats.binom.cdf(l - 1, R, p))
    return l, u, coverage


def empirical_quantile_index(R: int, p: float) -> int:
    """1-based index of the empirical p-quantile X_(ceil(R p)) (the inverse of the empirical CDF)."""
    return int(min(max(math.ceil(R * p - 1e-9), 1), R))


def order_statistic_bounds(values, p: float, level: float = 0.95):
    """The empirical p-quantile X_(ceil(R p)) over axis 0 of ``values`` (R, ...) and its
    distribution-free CI [X_(l), X_(u)] (``order_statistic_ci_indices``; an end beyond the sample
    is -inf / +inf).  Returns (estimate, lower, upper, coverage) as arrays over the other axes."""
    v = np.asarray(values, dtype=float)
    R = v.shape[0]
    srt = np.sort(v, axis=0)
    lo_i, hi_i, cov = order_statistic_ci_indices(R, p, level)
    est = srt[empirical_quantile_index(R, p) - 1]
    lower = srt[lo_i - 1] if lo_i >= 1 else np.full(est.shape, -np.inf)
    upper = srt[hi_i - 1] if hi_i <= R else np.full(est.shape, np.inf)
    return est, lower, upper, cov


def quantile_ci(values: xr.DataArray, p: float, level: float = 0.95) -> xr.Dataset:
    """``order_statistic_bounds`` of a DataArray over its replicate axis: a Dataset with
    ``estimate``, ``lower``, ``upper`` over the remaining dims (attrs n_replicates, level, p,
    ci_method)."""
    dims = [dd for dd in values.dims if dd != REPLICATE]
    est, lower, upper, cov = order_statistic_bounds(values.transpose(REPLICATE, *dims).values, p, level)
    coords = {dd: values[dd].values for dd in dims}
    out = xr.Dataset({"estimate": (dims, est), "lower": (dims, lower), "upper": (dims, upper)}, coords=coords)
    out.attrs.update(n_replicates=int(values.sizes[REPLICATE]), level=level, p=p,
                     ci_method=f"distribution-free order statistics (coverage {cov:.3f})")
    return out


# ---------------------------------------------------------------------------------------------
# Reading a twin Dataset
# ---------------------------------------------------------------------------------------------

def _per_replicate(ds, var: str) -> xr.DataArray:
    """The per-replicate distance ``var`` of a twin Dataset, checked for the coupling convention."""
    if isinstance(ds, xr.DataArray):
        return _as_replicate_array(ds)
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"expected a twin-run xarray.Dataset (from run_twin), got {type(ds).__name__}")
    if var not in ds:
        raise ValueError(f"variable {var!r} is not in the Dataset; it has {sorted(ds.data_vars)}")
    if ds.attrs.get("noise") == "independent":
        raise ValueError("this run drew the noise of S' independently of S (a privacy-audit run): "
                         "stability measures need coupled runs (shared indices and noise), "
                         "see docs/errata.md, Conventions, 'Coupling'")
    return _as_replicate_array(ds[var])


def _run_attrs(ds) -> dict:
    return {k: ds.attrs[k] for k in _RUN_ATTRS if k in getattr(ds, "attrs", {})}


def _finish(out: xr.Dataset, ds, *, quantity: str, var: str, note: str) -> xr.Dataset:
    out.attrs = {**_run_attrs(ds), **out.attrs, "quantity": quantity, "var": var, "note": note}
    out["estimate"].attrs["long_name"] = quantity
    return out


# ---------------------------------------------------------------------------------------------
# Estimators
# ---------------------------------------------------------------------------------------------

def uas_mean(ds_or_list, var: str = "dist_output", level: float = 0.95, *, ci: str = "t",
             n_boot: int = 2000, seed: int = 0) -> xr.Dataset:
    """Uniform argument stability in expectation (P1 Def. 1): E_A ||A(S) - A(S')||.

    ``ds_or_list``: a twin Dataset, or a list of them, one per *candidate neighbour* (replaced
    index k, replacement kind "flip" / "farthest" / "fresh" / ...) run on the same t grid.

    One Dataset: the mean of ``var`` over replicates with ``mean_ci`` (``ci="t"`` Student
    t-interval, or ``ci="bootstrap"``).  With k = "random" the mean is over k as well, which is
    <= the supremum over k, so it is still a lower-bound estimate.

    Several Datasets: at each coordinate, the largest of the candidates' means, with the CI of
    the maximising candidate (variable ``candidate`` = its position in the list).  The max of
    noisy means is biased upward and the CI is not simultaneous over candidates; both err on the
    side of *not* certifying an upper bound, the safe side for a bound check.

    ``var="dist_iterate"`` gives ||w_t - w'_t|| (quantity ``iterate_dist``).
    Attrs say (``note``) that the result is an estimate of a lower bound on the supremum over
    neighbouring pairs.
    """
    datasets = list(ds_or_list) if isinstance(ds_or_list, (list, tuple)) else [ds_or_list]
    if not datasets:
        raise ValueError("uas_mean needs at least one Dataset")
    quantity = _MEAN_QUANTITY.get(var, f"mean of {var}")
    per = [mean_ci(_per_replicate(d, var), level=level, method=ci, n_boot=n_boot, seed=seed)
           for d in datasets]
    if len(per) == 1:
        return _finish(per[0], datasets[0], quantity=quantity, var=var, note=SUP_NOTE)
    return _max_over_candidates(per, datasets, quantity=quantity, var=var)


def _max_over_candidates(per: list[xr.Dataset], datasets: list, *, quantity: str, var: str) -> xr.Dataset:
    try:
        stacked = xr.concat(per, dim="candidate", join="exact", combine_attrs="drop")
    except ValueError as err:
        raise ValueError("the candidate Datasets must share the same coordinates (same checkpoints t): "
                         f"{err}") from None
    best = stacked["estimate"].argmax("candidate")
    out = stacked.isel(candidate=best)
    out = out.drop_vars("candidate", errors="ignore").assign(candidate=best)
    out["candidate"].attrs["long_name"] = "position (in the list given) of the maximising candidate neighbour"
    reps = [p.attrs["n_replicates"] for p in per]
    described = [getattr(d, "attrs", {}).get("neighbour", f"candidate {i}") for i, d in enumerate(datasets)]
    out.attrs = {**_run_attrs(datasets[0]), "neighbour": "max over candidates",
                 "candidates": " | ".join(f"[{i}] {s}" for i, s in enumerate(described)),
                 "n_replicates": int(min(reps)), "n_replicates_per_candidate": reps,
                 "level": per[0].attrs["level"],
                 "ci_method": per[0].attrs["ci_method"] + "; CI of the maximising candidate"}
    note = (f"max over {len(per)} candidate neighbours of the replicate means: " + SUP_NOTE)
    return _finish(out, datasets[0], quantity=quantity, var=var, note=note)


def uas_quantile(ds, gamma: float, var: str = "dist_output", level: float = 0.95, *,
                 squared: bool = False) -> xr.Dataset:
    """High-probability UAS (P0): the empirical (1-gamma)-quantile of ||A(S) - A(S')||.

    P0's bounds hold "with probability >= 1 - gamma over the indices": compare them with the
    (1-gamma)-quantile xi of the distance over the algorithm's randomness.  The estimate is the
    order statistic X_(ceil(R (1-gamma))); the CI [X_(l), X_(u)] is distribution-free (see
    ``order_statistic_ci_indices``), with coverage >= ``level`` for any distance distribution.
    With too few replicates the upper end is +inf (noted in attrs): it then certifies nothing.
    Distances are >= 0, so a lower end "X_(0)" is reported as 0.

    ``squared=True``: the quantile of ||A(S) - A(S')||^2 (P0 Eq. (9), quantity
    ``uas_sq_quantile``); squaring is monotone, so this is the square of the above with the
    squared CI.  ``var="dist_iterate"`` gives the per-iterate versions (P0 Thm 1).

    With k = "random" the quantile is of the mixture over k; a bound valid for every pair
    (S, S') is also valid for the mixture, so the check stays meaningful.
    """
    gamma = float(gamma)
    if not 0.0 < gamma < 1.0:
        raise ValueError(f"gamma={gamma!r} is not allowed: gamma must lie in (0, 1)")
    level = _check_level(level)
    values = _per_replicate(ds, var)
    if bool((values < 0).any()):
        raise ValueError(f"{var!r} has negative entries; uas_quantile expects distances")
    if squared:
        values = values ** 2
    R, p = values.sizes[REPLICATE], 1.0 - gamma
    l, u, coverage = order_statistic_ci_indices(R, p, level)
    srt = values.transpose(REPLICATE, ...).copy(data=np.sort(values.transpose(REPLICATE, ...).values, axis=0))
    est = srt.isel({REPLICATE: empirical_quantile_index(R, p) - 1}, drop=True)
    lower = srt.isel({REPLICATE: l - 1}, drop=True) if l >= 1 else xr.zeros_like(est)
    upper = srt.isel({REPLICATE: u - 1}, drop=True) if u <= R else xr.full_like(est, np.inf)
    out = xr.Dataset({"estimate": est, "lower": lower, "upper": upper})
    out.attrs.update(n_replicates=int(R), level=level, gamma=gamma, p=p,
                     order_statistics=f"l={l}, u={u} (1-based; 0 -> lower end 0, {R + 1} -> upper end +inf)",
                     coverage=coverage,
                     ci_method=f"distribution-free order-statistic interval [X_(l), X_(u)], "
                               f"exact binomial coverage {coverage:.4f}")
    note = SUP_NOTE if u <= R else (SUP_NOTE + f"; only {R} replicates: the CI upper end is +inf, "
                                    f"use more replicates for the {p:g}-quantile")
    return _finish(out, ds, quantity=_QUANTILE_QUANTITY.get((var, bool(squared)), f"quantile of {var}"),
                   var=var, note=note)


def onavg_stability(ds, var: str = "dist_output", level: float = 0.95, *, ci: str = "t",
                    n_boot: int = 2000, seed: int = 0, strict: bool = True) -> xr.Dataset:
    """On-average argument stability (P4 Def. 6): E_{S, S~, A} (1/n) sum_i ||A(S) - A(S^(i))||^2.

    Estimated by the replicate mean of the squared distance, with ``mean_ci``.  This mean is
    unbiased for the P4 quantity only under this sampling design (one replicate = one draw of
    everything the expectation is over):

    1. a fresh data set S per replicate (``run_twin`` with X of shape (R, n, d), y (R, n));
    2. the replaced index i uniform on [n] per replicate (neighbour ``k="random"``): averaging
       over random i gives the (1/n) sum_i;
    3. the replacement z'_i an independent copy from the same distribution (neighbour kind
       ``"fresh"`` with ``problem=...``, or ``"heldout"`` from an independent pool);
    4. coupled runs (same indices and the same noise b_t for S and S^(i)).

    Conditions 2-4 are checked from the run's attrs (``strict=True`` raises, ``strict=False``
    records a warning in ``note``).  Condition 1 is not recorded by ``run_twin`` and is the
    caller's responsibility.  ``var="dist_iterate"`` gives the per-iterate quantity
    (1/n) sum_i E||w_t - w_t^(i)||^2 that P4's Lemmas 14/19 bound.
    """
    values = _per_replicate(ds, var)
    problems = _onavg_design_problems(ds)
    if problems and strict:
        raise ValueError("on-average stability needs per-replicate data sets, a random index and an "
                         "independent copy; this run has: " + "; ".join(problems) +
                         " (pass strict=False to estimate anyway)")
    out = mean_ci(values ** 2, level=level, method=ci, n_boot=n_boot, seed=seed)
    note = "unbiased for P4 Def. 6 if each replicate drew its own S (not recorded by run_twin)"
    if problems:
        note = "WARNING, sampling design not met (" + "; ".join(problems) + "): not P4 Def. 6's quantity"
    return _finish(out, ds, quantity="onavg_stability", var=var, note=note)


def _onavg_design_problems(ds) -> list[str]:
    desc = getattr(ds, "attrs", {}).get("neighbour")
    if desc is None:
        return ["no 'neighbour' attribute to check the design"]
    out = []
    if "k=random" not in desc:
        out.append("the replaced index is fixed, not uniform on [n]")
    if "'fresh'" not in desc and "'heldout'" not in desc:
        out.append("the replacement is not an independent copy ('fresh' or 'heldout')")
    return out


__all__ = ["mean_ci", "standard_error", "bootstrap_counts", "order_statistic_ci_indices",
           "empirical_quantile_index", "uas_mean", "uas_quantile", "onavg_stability", "SUP_NOTE"]
