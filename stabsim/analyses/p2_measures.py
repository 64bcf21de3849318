"""P2 (Kang, Liu, Li, Wang: sharper utility bounds for DP pairwise learning): the measures and figures
the P2 checks share (``p2_excess_risk``, ``p2_stability``, ``p2_privacy``); registers no check.

``setting``           the setting line of a figure (loss, problem, extra).
``overlay``           a measure against bounds (registry ``Bound``s or labelled curves), along n by default.
``quantile_measure``  the (1 - xi)-quantile over replicates with the distribution-free order-statistic CI
                      (Thm 3 holds with probability 1 - xi).
"""

from __future__ import annotations

from stabsim.engine.measures import quantile_ci


def setting(params, extra=""):
    """The setting line of a P2 figure: loss, problem and ``extra``."""
    d, a = params["data"], params["algorithm"]
    s = f"{a['loss']}, {d['problem']}"
    return s + (f", {extra}" if extra else "")


def overlay(res, name, measure, entries, verdicts, setting, x="n", title=None, ylabel=None):
    """Register the figure ``name`` of ``measure`` against ``entries`` ((Bound or text, values) pairs)."""
    from stabsim.judging.plots import plot_bound_overlay

    fig = plot_bound_overlay(measure, entries, verdicts=verdicts, x=x, setting=setting, title=title, ylabel=ylabel)
    return res.figure(name, fig)


def quantile_measure(values, p, level=0.95):
    """(1 - xi)-quantile over replicates along the remaining dim, distribution-free order-statistic CI."""
    m = quantile_ci(values, p, level)
    del m.attrs["p"]
    return m
