"""Figures: a measured curve with its confidence band overlaid on bound curves (log-log).

Plots read only finished results (an estimator's Dataset from ``stabsim.measures``, bound
values, ``Verdict``s); they never run simulations.  Figures are built on
``matplotlib.figure.Figure`` with an explicit Agg canvas: no pyplot state, no display needed,
and the user's global backend is left alone.

A figure must be readable without the code: axis labels carry symbols and units
("t (steps)", "E||A(S) - A(S')||"), the legend says what the band is (mean or quantile, CI
level, replicates) and, per bound, its variant and the verdict with the tightness range.
Printed and corrected readings of a bound get distinct line styles.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

#: x-axis labels by swept variable (dims or coordinates of a measure).
X_LABELS = {
    "t": "t (steps)", "T": "T (total steps)", "n": "n (sample size)", "eta": "η (step size)",
    "eps": "ε (privacy budget)", "epsilon": "ε (privacy budget)", "d": "d (dimension)",
    "sum_eta": "Σ_{j≤t} η_j", "sum_eta2": "Σ_{j≤t} η_j²", "s": "s (buffer size)",
}
#: y-axis labels by quantity name (``stabsim.theory.QUANTITIES``).
Y_LABELS = {
    "uas_mean": "E‖A(S) − A(S′)‖",
    "uas_quantile": "(1−γ)-quantile of ‖A(S) − A(S′)‖",
    "uas_sq_quantile": "(1−γ)-quantile of ‖A(S) − A(S′)‖²",
    "iterate_dist": "E‖w_t − w′_t‖",
    "iterate_dist_quantile": "(1−γ)-quantile of ‖w_t − w′_t‖",
    "iterate_dist_sq_quantile": "(1−γ)-quantile of ‖w_t − w′_t‖²",
    "onavg_stability": "E (1/n) Σ_i ‖A(S) − A(S⁽ⁱ⁾)‖²",
    "gen_gap": "E[F(A(S)) − F_S(A(S))]",
    "opt_error": "E[F_S(A(S))] − F_S(w)",
    "excess_risk": "E[F(A(S))] − F(w*)",
}
#: short names of quantities for titles.
Q_NAMES = {
    "uas_mean": "UAS", "uas_quantile": "high-probability UAS", "uas_sq_quantile": "high-probability UAS²",
    "iterate_dist": "iterate distance", "onavg_stability": "on-average stability",
    "gen_gap": "generalization gap", "opt_error": "optimization error", "excess_risk": "excess risk",
}
#: line style per bound variant.
VARIANT_STYLES = {"printed": "--", "corrected": "-.", "": "-"}


def _bound_entries(bounds) -> list[dict]:
    """Normalise ``bounds`` to dicts with label, values, variant, bound (a registry Bound or None).

    Accepts a mapping label -> values, or a sequence of ``(label_or_Bound, values)``,
    ``(label_or_Bound, values, variant)`` or dicts with those keys.
    """
    if isinstance(bounds, Mapping):
        bounds = list(bounds.items())
    out = []
    for item in bounds:
        if isinstance(item, Mapping):
            entry = dict(item)
        else:
            head, values, *rest = item
            entry = {"label": head, "values": values, "variant": rest[0] if rest else None}
        head = entry.get("label")
        b = head if hasattr(head, "key") and hasattr(head, "func") else entry.get("bound")
        if b is not None:
            entry["bound"] = b
            if not isinstance(head, str):
                v = f" ({b.variant})" if b.variant else ""
                entry["label"] = f"{b.paper} {b.ref} bound{v}"
            if entry.get("variant") is None:
                entry["variant"] = b.variant
        entry.setdefault("bound", None)
        entry["variant"] = entry.get("variant") or ""
        out.append(entry)
    return out


def _x_values(measure: xr.Dataset, x: str | None) -> tuple[str, np.ndarray, str]:
    """(name, values, dim) of the x axis: a dim of the 1-D measure or a coordinate along it."""
    est = measure["estimate"]
    if est.ndim != 1:
        raise ValueError(f"plot_bound_overlay needs a 1-D measure (one swept variable), got dims {est.dims}; "
                         "select the other coordinates first (e.g. measure.sel(n=100))")
    dim = est.dims[0]
    name = x or dim
    if name not in measure.coords:
        raise ValueError(f"x={name!r} is not a coordinate of the measure; it has {list(measure.coords)}")
    if measure[name].dims != (dim,):
        raise ValueError(f"x={name!r} must lie along {dim!r}")
    return name, np.asarray(measure[name].values, dtype=float), dim


def _measure_label(measure: xr.Dataset) -> str:
    """E.g. "measured mean with 95% CI band (R = 200), 'flip' neighbour"."""
    a = measure.attrs
    what = "quantile" if "quantile" in a.get("quantity", "") else "mean"
    lvl = a.get("level")
    ci = f" with {100 * lvl:g}% CI band" if lvl is not None else ""
    r = a.get("n_replicates")
    reps = f" (R = {r})" if r is not None else ""
    if "gamma" in a:
        what = f"{1 - a['gamma']:g}-quantile"
    nb = a.get("neighbour", "")
    if nb.startswith("max"):
        n_cand = len(a.get("n_replicates_per_candidate", [])) or "several"
        kind = f", max over {n_cand} candidate neighbours"
    else:
        kind = f", {nb.split('by a ')[-1].replace(' point', '')} neighbour" if "by a " in nb else ""
    return f"measured {what}{ci}{reps}{kind}"


def default_title(bound=None, quantity: str = "", setting: str = "") -> str:
    """"P1 Theorem 4: UAS, non-smooth convex"-style title from a registry Bound and a setting."""
    q = Q_NAMES.get(quantity or (bound.quantity if bound is not None else ""), quantity)
    head = f"{bound.paper} {bound.ref}" if bound is not None else ""
    body = ", ".join(p for p in (q, setting) if p)
    return f"{head}: {body}" if head and body else (head or body)


def _positive(a) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    return a[np.isfinite(a) & (a > 0)]


def plot_bound_overlay(measure: xr.Dataset, bounds, *, verdicts: Sequence | Mapping | None = None,
                       x: str | None = None, title: str | None = None, setting: str = "",
                       xlabel: str | None = None, ylabel: str | None = None, path=None,
                       dpi: int = 150, figsize=(7.0, 4.8), ax=None) -> Figure:
    """Overlay the measured curve (estimate with its CI band) and bound curves on log-log axes.

    measure   an estimator's Dataset (``estimate``, ``lower``, ``upper``) along one swept dim.
    bounds    mapping label -> values, or a sequence of ``(label_or_Bound, values[, variant])``;
              values on the measure's coordinates.  A registry ``Bound`` gives the label and
              the variant; printed / corrected / single readings get ``--`` / ``-.`` / ``-``.
    verdicts  ``Verdict``s in the order of ``bounds`` (or a mapping label -> Verdict): the
              verdict and tightness are appended to that bound's legend entry.
    x         the x coordinate (default: the measure's dim; e.g. ``"sum_eta"``).
    title     default: from the first registry Bound, e.g. "P1 Theorem 4: UAS, non-smooth convex"
              (``setting`` supplies the part after the quantity).
    path      save a PNG there (parent folders are created).
    Returns the Figure.
    """
    xname, xv, _ = _x_values(measure, x)
    entries = _bound_entries(bounds)
    fig, ax = _figure_axes(ax, figsize)
    est, lo, hi = (np.asarray(measure[v].values, dtype=float) for v in ("estimate", "lower", "upper"))
    ax.fill_between(xv, np.where(lo > 0, lo, np.nan), hi, color="C0", alpha=0.25, linewidth=0,
                    label="_band")
    ax.plot(xv, np.where(est > 0, est, np.nan), "o-", color="C0", markersize=3, linewidth=1.5,
            label=_measure_label(measure))
    vmap = _verdict_lookup(verdicts, entries)
    for i, entry in enumerate(entries):
        vals = np.broadcast_to(np.asarray(entry["values"], dtype=float), xv.shape)
        label = entry["label"]
        if vmap.get(i) is not None:
            label += f" — {vmap[i].summary()}"
        ax.plot(xv, vals, VARIANT_STYLES.get(entry["variant"], ":"), color=f"C{i + 1}", linewidth=1.8,
                label=label)
    quantity = measure.attrs.get("quantity", "")
    first_bound = next((e["bound"] for e in entries if e["bound"] is not None), None)
    _decorate(ax, xv, [est, lo, hi] + [e["values"] for e in entries],
              xlabel or X_LABELS.get(xname, xname), ylabel or Y_LABELS.get(quantity, quantity),
              title if title is not None else default_title(first_bound, quantity, setting))
    if path is not None:
        save(fig, path, dpi=dpi)
    return fig


def plot_rate_fit(x, fit, verdict=None, *, quantity: str = "", xname: str = "n", title: str = "",
                  path=None, dpi: int = 150, figsize=(7.0, 4.8), ax=None) -> Figure:
    """Replicate means against x with the fitted log-log line and the theorem's exponent.

    ``fit``: a ``stabsim.verdicts.SlopeFit``; ``verdict``: the ``check_rate`` Verdict (its
    exponent is drawn as a reference line through the fit's centre, and its summary is in the legend).
    """
    fig, ax = _figure_axes(ax, figsize)
    xv = np.asarray(x, dtype=float)
    ax.plot(xv, fit.mean, "o", color="C0", label=f"measured mean (R = {fit.n_replicates})")
    lx = np.log(xv)
    centre = fit.intercept + fit.slope * lx.mean()
    ax.plot(xv, np.exp(fit.intercept + fit.slope * lx), "-", color="C0",
            label=f"fit: slope {fit.slope:.3g}, {100 * fit.level:g}% CI [{fit.lower:.3g}, {fit.upper:.3g}]")
    if verdict is not None and verdict.exponent is not None:
        ref = np.exp(centre + verdict.exponent * (lx - lx.mean()))
        ax.plot(xv, ref, "--", color="C1", label=f"theorem rate x^{verdict.exponent:.3g} — {verdict.verdict}")
    _decorate(ax, xv, [fit.mean], X_LABELS.get(xname, xname), Y_LABELS.get(quantity, quantity or "measure"),
              title)
    if path is not None:
        save(fig, path, dpi=dpi)
    return fig


def _figure_axes(ax, figsize):
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _verdict_lookup(verdicts, entries) -> dict:
    if verdicts is None:
        return {}
    if isinstance(verdicts, Mapping):
        return {i: verdicts.get(e["label"]) for i, e in enumerate(entries)}
    return dict(enumerate(verdicts))


def _decorate(ax, xv, curves, xlabel, ylabel, title):
    ax.set_xscale("log")
    ax.set_yscale("log")
    pos = np.concatenate([_positive(c) for c in curves] + [np.empty(0)])
    if pos.size:
        ax.set_ylim(pos.min() / 1.5, pos.max() * 1.5)
    xp = _positive(xv)
    if xp.size:
        ax.set_xlim(xp.min() / 1.2, xp.max() * 1.2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize="small", frameon=False)


def save(fig: Figure, path, dpi: int = 150) -> Path:
    """Save ``fig`` as PNG (or the format of the suffix), creating parent folders."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    return path


__all__ = ["plot_bound_overlay", "plot_rate_fit", "default_title", "save", "X_LABELS", "Y_LABELS",
           "VARIANT_STYLES"]
