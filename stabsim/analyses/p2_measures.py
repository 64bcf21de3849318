"""P2 (Kang, Liu, Li, Wang: sharper utility bounds for DP pairwise learning): the measures and figures
the P2 checks share (``p2_excess_risk``, ``p2_stability``, ``p2_privacy``); registers no check.

``setting``           the setting line of a figure (loss, problem, extra).
``overlay``           a measure against bounds (registry ``Bound``s or labelled curves), along n by default.
``quantile_measure``  the (1 - xi)-quantile over replicates with the distribution-free order-statistic CI
                      (Thm 3 holds with probability 1 - xi).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..measures import REPLICATE, empirical_quantile_index, order_statistic_ci_indices


def setting(params, extra=""):
    """The setting line of a P2 figure: loss, problem and ``extra``."""
    d, a = params["data"], params["algorithm"]
    s = f"{a['loss']}, {d['problem']}"
    return s + (f", {extra}" if extra else "")


def overlay(res, name, measure, entries, verdicts, setting, x="n", title=None, ylabel=None):
    """Register the figure ``name`` of ``measure`` against ``entries`` ((Bound or text, values) pairs)."""
    from ..plots import plot_bound_overlay

    fig = plot_bound_overlay(measure, entries, verdicts=verdicts, x=x, setting=setting, title=title, ylabel=ylabel)
    return res.figure(name, fig)


def quantile_measure(values, p, level=0.95):
    """(1 - xi)-quantile over replicates along the remaining dim, distribution-free order-statistic CI."""
    dims = [dd for dd in values.dims if dd != REPLICATE]
    v = values.transpose(REPLICATE, *dims).values
    R = v.shape[0]
    srt = np.sort(v, axis=0)
    l, u, cov = order_statistic_ci_indices(R, p, level)
    est = srt[empirical_quantile_index(R, p) - 1]
    lower = srt[l - 1] if l >= 1 else np.full(est.shape, -np.inf)
    upper = srt[u - 1] if u <= R else np.full(est.shape, np.inf)
    coords = {dd: values[dd].values for dd in dims}
    m = xr.Dataset({"estimate": (dims, est), "lower": (dims, lower), "upper": (dims, upper)}, coords=coords)
    m.attrs.update(n_replicates=R, level=level, ci_method=f"distribution-free order statistics (coverage {cov:.3f})")
    return m
