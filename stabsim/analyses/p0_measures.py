"""P0 (Yang, Lei, Lyu, Ying, AISTATS 2021): the measures and figures the P0 checks share
(``p0_excess_risk``, ``p0_concentration``); registers no check.

``quantile_measure``  the (1-gamma)-quantile over replicates with the distribution-free order-statistic
                      CI (P0's bounds hold with probability 1 - gamma), optionally widened by the
                      test-sample standard error of the risks.
``max_measure``       the maximum over replicates of a deterministic statement (Lemma A.10).
``overlay``           a measure against registry bounds; ``rate_figure`` the log-log fit of a RATE row.
``stack_n``           the slices of a study over every sweep axis except n.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from stabsim.engine.measures import order_statistic_bounds
from stabsim.analyses.base import sweep_slices


def quantile_measure(values, gamma, coord, widen=None, quantity="", level=0.95, note=""):
    """(1-gamma)-quantile over replicates (axis 0 of ``values`` (R, m)) with the distribution-free
    order-statistic CI, optionally widened by ``widen`` (m,) on both ends; coordinates ``coord``."""
    name, xs = coord
    Rr = np.shape(values)[0]
    est, lower, upper, cov = order_statistic_bounds(values, 1 - gamma, level)
    w = np.zeros_like(est) if widen is None else np.asarray(widen, float)
    m = xr.Dataset({"estimate": (name, est), "lower": (name, lower - w), "upper": (name, upper + w)},
                   coords={name: np.asarray(xs)})
    m.attrs.update(quantity=quantity, n_replicates=Rr, level=level, gamma=gamma,
                   ci_method=f"order-statistic CI (coverage {cov:.3f})" + ("" if widen is None else
                                                                           " widened by 2 x test-sample SE"),
                   note=note)
    return m


def max_measure(values, coord, quantity, note):
    """Maximum over replicates (axis 0 of ``values`` (R, m)) of a deterministic statement (every run
    must satisfy it): estimate = lower = upper, level 1; coordinates ``coord``."""
    name, xs = coord
    mx = np.asarray(values, float).max(axis=0)
    m = xr.Dataset({"estimate": (name, mx), "lower": (name, mx), "upper": (name, mx)},
                   coords={name: np.asarray(xs)})
    m.attrs.update(quantity=quantity, n_replicates=int(np.asarray(values).shape[0]), level=1.0, note=note)
    return m


def overlay(res, fname, measure, bounds, verdicts, setting, x=None):
    """Register the figure ``fname`` of ``measure`` against ``bounds`` ((registry key, values) pairs)."""
    from stabsim.judging.plots import plot_bound_overlay
    from stabsim.theory import get

    fig = plot_bound_overlay(measure, [(get(k), v) for k, v in bounds], verdicts=verdicts, setting=setting, x=x)
    return res.figure(fname, fig)


def rate_figure(res, fname, x, fit, verdict, quantity, xname, title):
    """Register the figure ``fname`` of a RATE verdict's log-log fit (``stabsim.judging.plots.plot_rate_fit``)."""
    from stabsim.judging.plots import plot_rate_fit

    return res.figure(fname, plot_rate_fit(x, fit, verdict, quantity=quantity, xname=xname, title=title))


def stack_n(spec, ds, var, consumed_other=()):
    """Slices over every sweep axis except n: (label, params-of-first-n, {n: sub}) with n sorted."""
    if "n" not in ds.dims:
        raise ValueError("this check needs a sweep over [data] n (axis 'n')")
    for label, params, sub in sweep_slices(spec, ds, consumed=("n",) + tuple(consumed_other)):
        yield label, params, sub
