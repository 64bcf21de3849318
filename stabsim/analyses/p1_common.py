"""P1 (Yang et al. 2021): helpers shared by the P1 checks (``stabsim.analyses.p1_*``): the bound
overlay figure, the two-panel rate figure (measurement + O(.) expression, slope fit), the
replicate-mean measure and the labels of a sweep slice.  Registers nothing.
"""

from __future__ import annotations

import xarray as xr

from stabsim.engine.measures import mean_ci
from stabsim.analyses.base import cell_setting, figure_name


def overlay_figure(res, key, measure, bounds, verdicts, label, params, extra="", x="t"):
    """Draw the measure against the bounds ``[(key, values)]`` with their verdicts and register the figure
    as ``figure_name(key, label)`` in ``res``; returns the figure's name."""
    from stabsim.judging.plots import plot_bound_overlay
    from stabsim.theory import get

    entries = [(get(k), vals) for k, vals in bounds]
    fig = plot_bound_overlay(measure, entries, verdicts=verdicts, x=x, setting=cell_setting(params, extra))
    return res.figure(figure_name(key, label), fig)


def bound_keys(spec, prefix):
    """The ``[bounds] keys`` of the study that start with ``prefix`` (at least one)."""
    keys = [k for k in spec.bounds.get("keys", []) if k.startswith(prefix)]
    if not keys:
        raise ValueError(f"[bounds] keys names no {prefix}* bound")
    return keys


def label_suffix(label):
    """' (label)' for a sweep slice's label, '' for the single cell."""
    return f" ({label})" if label else ""


def rate_setting(params, sched: str) -> str:
    """One-line setting of a rate figure: loss, problem (d), constraint and the schedule text."""
    a, d = params["algorithm"], params["data"]
    return f"{a['loss']}, {d['problem']} (d={d['d']}), {a['constraint']}, {sched}"


def rate_figure(res, key, x, measure, bound, verdict, params, xname, setting="", extra=()):
    """Two panels: measurement with CI and the O(.) expression (constant 1), and the slope fit."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from stabsim.judging.plots import default_title, plot_bound_overlay, plot_rate_fit
    from stabsim.theory import get

    fig = Figure(figsize=(13.0, 5.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    b = get(key)
    plot_bound_overlay(measure, [(f"{key} O(.) expression, constant 1", bound), *extra], verdicts=[verdict], x=xname,
                       ax=ax1, title="measurement (95% CI) and the O(.) expression")
    plot_rate_fit(x, verdict.details, verdict, quantity=measure.attrs.get("quantity", ""), xname=xname, ax=ax2,
                  title="log-log slope (bootstrap CI) vs the theorem's exponent")
    fig.suptitle(default_title(b, measure.attrs.get("quantity", ""), setting))
    return fig


def measure_over(values: xr.DataArray, quantity: str, note: str) -> xr.Dataset:
    """The replicate-mean 95% CI of ``values`` (``mean_ci``) with the quantity and a note as attributes."""
    m = mean_ci(values)
    m.attrs.update(quantity=quantity, note=note)
    return m


def loss_sup(loss: str, kappa: float, radius: float, q: float | None = None) -> float | None:
    """The largest value the loss ``loss`` can take over the data (sup ||x|| <= ``kappa``) and the ball of
    radius ``radius``, or None when the ball is unbounded.  With M = sup |margin| (``Loss._margin_range``):
    hinge (1 - m)_+ and logistic log(1 + e^{-m}) <= log 2 + |m| are <= 1 + M; squared (1 - m)^2 (and
    point_lsq's (w.x - y)^2 / 2, |y| <= 1) <= (1 + M)^2; q-hinge <= (1 + M)^q.  Every loss is >= 0, so it is
    the trivial bound of a generalization gap |F_S(w) - F(w)| or of F_S(w) - min F_S for w in the ball."""
    import math

    from stabsim.engine.losses import HINGE, LOGISTIC, get_loss

    if not math.isfinite(radius):
        return None
    lossf = get_loss(loss, q)
    M = lossf._margin_range(kappa, radius)
    if not math.isfinite(M):
        return None
    return 1.0 + M if lossf.phi in (HINGE, LOGISTIC) else (1.0 + M) ** lossf.q
