"""Figures: a measured curve with its confidence band overlaid on bound curves (log-log).

Plots read only finished results (an estimator's Dataset from ``stabsim.engine.measures``, bound
values, ``Verdict``s); they never run simulations.  Figures are built on
``matplotlib.figure.Figure`` with an explicit Agg canvas: no pyplot state, no display needed,
and the user's global backend is left alone.

A figure must be readable without the code: axis labels carry symbols and units
("t (steps)", "E||A(S) - A(S')||"), the legend says what the band is (mean or quantile, CI
level, replicates) and, per bound, its variant and the verdict with the tightness range.
Printed and corrected readings of a bound get distinct line styles.

Log axes and non-positive values: a CI whose lower end is <= 0 cannot be drawn on a log axis.
It is never clipped to a tiny positive number (that would draw it as if it were, say, 1e-8 and
stretch the axis).  The band / error bar is drawn only where the lower end is > 0; at the other
coordinates a thin line runs from the axis' lower limit up to the upper end, and a downward
triangle sits on the axis' lower limit (legend entry ``NONPOSITIVE_LOWER_LABEL``).  A mean <= 0
is marked the same way with an ``x`` (``NONPOSITIVE_MEAN_LABEL``).  The y-limits come from the
positive values only.

Titles never run off the figure: ``save`` (which every check's figure goes through) and
``fit_titles`` wrap each axes title to its axes' width and the suptitle to the figure's width,
and shrink the font if three lines are not enough.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import xarray as xr
import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine, TightLayoutEngine

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
#: legend entries of the markers for values that a log axis cannot show.
NONPOSITIVE_LOWER_LABEL = "CI lower end <= 0"
NONPOSITIVE_MEAN_LABEL = "mean <= 0 (below the log axis)"
#: legend entry of the optional floor line of ``plot_rate_fit``.
FLOOR_LABEL = "eta sigma^2 d floor"


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
                entry["label"] = f"{bound_name(b)} bound{v}"
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


def bound_name(bound) -> str:
    """"P1 Theorem 4" for a paper's bound; a user's bound (paper "custom": a study file's
    ``[bounds.custom.NAME]`` or a function given to ``stabsim.judge``) by its own name."""
    if bound.paper == "custom":
        key = str(bound.key)
        return key[len("custom."):] if key.startswith("custom.") else key
    return f"{bound.paper} {bound.ref}"


def default_title(bound=None, quantity: str = "", setting: str = "") -> str:
    """"P1 Theorem 4: UAS, non-smooth convex"-style title from a registry Bound and a setting."""
    q = Q_NAMES.get(quantity or (bound.quantity if bound is not None else ""), quantity)
    head = bound_name(bound) if bound is not None else ""
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
    # the band only where its lower end is > 0 (see the module docstring; marked after the limits are set)
    ax.fill_between(xv, np.where(lo > 0, lo, np.nan), np.where(lo > 0, hi, np.nan), color="C0", alpha=0.25,
                    linewidth=0, label="_band")
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
              title if title is not None else default_title(first_bound, quantity, setting), legend=False)
    mark_nonpositive(ax, xv, lo, hi, est, color="C0")
    _legend(ax)
    if path is not None:
        save(fig, path, dpi=dpi)
    return fig


def plot_rate_fit(x, fit, verdict=None, *, y_reps=None, floor=None, floor_label: str = FLOOR_LABEL,
                  quantity: str = "", xname: str = "n", title: str = "", ylabel: str | None = None,
                  path=None, dpi: int = 150, figsize=(7.0, 4.8), ax=None) -> Figure:
    """Replicate means against x with the fitted log-log line and the theorem's exponent.

    ``fit``: a ``stabsim.judging.rules.SlopeFit``; ``verdict``: the ``check_rate`` Verdict (its
    exponent is drawn as a reference line through the fit's centre, and its summary is in the legend).
    ``y_reps``: the per-replicate values (R, m) behind ``fit.mean``; when given, each mean gets
    its Student-t CI at ``fit.level`` as an error bar (a lower end <= 0 is marked at the axis'
    lower limit, see the module docstring).
    ``floor``: optional level (scalar, or one value per x) drawn as a horizontal (or piecewise)
    dashed grey line labelled ``floor_label`` (default "eta sigma^2 d floor"), e.g. the noise
    floor of a constant-step private run.
    """
    fig, ax = _figure_axes(ax, figsize)
    xv = np.asarray(x, dtype=float)
    mean = np.asarray(fit.mean, dtype=float)
    curves = [mean]
    lo = hi = None
    if y_reps is not None:
        from stabsim.engine.measures import mean_ci

        ci = mean_ci(np.asarray(y_reps, dtype=float), level=fit.level)
        lo, hi = (np.asarray(ci[v].values, dtype=float) for v in ("lower", "upper"))
        pos = lo > 0
        if pos.any():
            ax.errorbar(xv[pos], mean[pos], yerr=[mean[pos] - lo[pos], hi[pos] - mean[pos]], fmt="none",
                        ecolor="C0", elinewidth=1.2, capsize=3, label=f"{100 * fit.level:g}% CI of the mean")
        curves += [lo, hi]
    ax.plot(xv, mean, "o", color="C0", label=f"measured mean (R = {fit.n_replicates})")
    lx = np.log(xv)
    centre = fit.intercept + fit.slope * lx.mean()
    ax.plot(xv, np.exp(fit.intercept + fit.slope * lx), "-", color="C0",
            label=f"fit: slope {fit.slope:.3g}, {100 * fit.level:g}% CI [{fit.lower:.3g}, {fit.upper:.3g}]")
    if verdict is not None and verdict.exponent is not None:
        ref = np.exp(centre + verdict.exponent * (lx - lx.mean()))
        ax.plot(xv, ref, "--", color="C1", label=f"theorem rate x^{verdict.exponent:.3g} — {verdict.verdict}")
        curves.append(ref)
    if floor is not None:
        fl = np.broadcast_to(np.asarray(floor, dtype=float), xv.shape)
        if np.ndim(floor) == 0:
            ax.axhline(float(floor), ls="--", color="0.4", lw=1.2, label=floor_label)
        else:
            ax.plot(xv, fl, "--", color="0.4", lw=1.2, label=floor_label)
        curves.append(fl)
    _decorate(ax, xv, curves, X_LABELS.get(xname, xname),
              ylabel or Y_LABELS.get(quantity, quantity or "measure"), title, legend=False)
    if lo is not None:
        mark_nonpositive(ax, xv, lo, hi, mean, color="C0")
    _legend(ax)
    if path is not None:
        save(fig, path, dpi=dpi)
    return fig


def plot_bound_points(rows, *, title: str = "", ylabel: str = "", path=None, dpi: int = 150,
                      figsize=None, ax=None) -> Figure:
    """Measured means with CIs against their bounds, one column per case, log y axis.

    ``rows``: a sequence of ``(label, estimate, lower, upper, bound, verdict_or_None)``; all rows
    must be the same quantity (one unit: the axis has one label).  The bound is a horizontal
    bar (green: the verdict holds / is consistent, red: not, grey: no verdict); a CI lower end
    or a mean <= 0 is marked at the axis' lower limit (module docstring).
    """
    rows = list(rows)
    fig, ax = _figure_axes(ax, figsize or (max(5.0, 1.1 * len(rows) + 1.5), 4.6))
    xs = np.arange(len(rows), dtype=float)
    est, lo, hi, bnd = (np.array([float(r[k]) for r in rows]) for k in (1, 2, 3, 4))
    pos = (lo > 0) & (est > 0)
    if pos.any():
        ax.errorbar(xs[pos], est[pos], yerr=[est[pos] - lo[pos], hi[pos] - est[pos]], fmt="o", color="k",
                    capsize=3, label="measured mean (95% CI)")
    if (~pos & (est > 0)).any():
        sel = ~pos & (est > 0)
        ax.plot(xs[sel], est[sel], "o", color="k", label="_measured" if pos.any() else "measured mean (95% CI)")
    colours = {True: "tab:green", False: "tab:red", None: "0.5"}
    seen = set()
    for i, r in enumerate(rows):
        v = r[5]
        ok = None if v is None else bool(v.ok)
        lab = {True: "bound (holds)", False: "bound (not holding)", None: "bound"}[ok]
        ax.scatter([xs[i]], [bnd[i]], marker="_", s=500, color=colours[ok], linewidths=3,
                   label=lab if lab not in seen else "_" + lab)
        seen.add(lab)
    ax.set_yscale("log")
    ys = np.concatenate([_positive(a) for a in (est, lo, hi, bnd)] + [np.empty(0)])
    if ys.size:
        ax.set_ylim(ys.min() / 3, ys.max() * 3)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_xticks(xs)
    slant = len(rows) > 2 or (len(rows) > 1 and max(len(str(r[0])) for r in rows) > 12)
    ax.set_xticklabels([str(r[0]) for r in rows], rotation=30 if slant else 0, ha="right" if slant else "center",
                       fontsize=7)
    ax.set_ylabel(ylabel, fontsize=8)
    if title:
        ax.set_title(title, fontsize=8)
    ax.grid(True, which="major", axis="y", alpha=0.3)
    mark_nonpositive(ax, xs, lo, hi, est, color="k")
    ax.legend(fontsize=6, loc="best", markerscale=0.6)
    if path is not None:
        save(fig, path, dpi=dpi)
    return fig


def mark_nonpositive(ax, x, lower, upper=None, estimate=None, *, color="C0", line: bool = True,
                     label: str = NONPOSITIVE_LOWER_LABEL):
    """Mark, on a log y axis whose limits are already set, where a CI's lower end (or the mean) is <= 0.

    A downward triangle on the axis' lower limit (clip off, so it stays visible) at each such
    x, legend ``label`` (default ``NONPOSITIVE_LOWER_LABEL``); with ``line`` a thin line from the lower limit to the
    (positive) upper end; a mean <= 0 gets an ``x`` there (``NONPOSITIVE_MEAN_LABEL``).  Nothing
    is ever drawn at a made-up small positive value.
    """
    x = np.asarray(x, dtype=float)
    lower = np.asarray(lower, dtype=float)
    bad = np.isfinite(lower) & (lower <= 0)
    trans = ax.get_xaxis_transform()  # x in data, y in axes coordinates (0 = the lower limit)
    if bad.any():
        ax.plot(x[bad], np.zeros(bad.sum()), "v", color=color, markersize=7, transform=trans, clip_on=False,
                zorder=5, label=label)
        if line and upper is not None:
            up = np.asarray(upper, dtype=float)
            y0 = ax.get_ylim()[0]
            for xi, ui in zip(x[bad], up[bad]):
                if np.isfinite(ui) and ui > y0:
                    ax.plot([xi, xi], [y0, ui], "-", color=color, alpha=0.5, linewidth=1.2, label="_ci_to_axis")
    if estimate is not None:
        est = np.asarray(estimate, dtype=float)
        neg = np.isfinite(est) & (est <= 0)
        if neg.any():
            ax.plot(x[neg], np.full(neg.sum(), 0.035), "x", color=color, markersize=7, transform=trans,
                    clip_on=False, zorder=5, label=NONPOSITIVE_MEAN_LABEL)


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


def _decorate(ax, xv, curves, xlabel, ylabel, title, legend: bool = True):
    ax.set_xscale("log")
    ax.set_yscale("log")
    pos = np.concatenate([_positive(np.broadcast_to(np.asarray(c, dtype=float), np.shape(xv)) if np.ndim(c) == 0
                                    else c) for c in curves] + [np.empty(0)])
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
    if legend:
        _legend(ax)


def _legend(ax):
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize="small", frameon=False)


def _wrap(text: str, width_chars: int) -> str:
    return "\n".join(textwrap.fill(line, max(int(width_chars), 8), break_long_words=False,
                                    break_on_hyphens=False) or line for line in text.split("\n"))


def _fit_text(t, avail_px: float, renderer, max_lines: int = 3, min_size: float = 5.0) -> bool:
    """Wrap (then shrink) the Text ``t`` until it is at most ``avail_px`` wide; True if changed.

    Wraps at word boundaries (existing line breaks are kept) into at most ``max_lines`` lines
    (or as many as it already had); if that is not enough, the font shrinks by 10% steps down
    to ``min_size`` points."""
    text = t.get_text()
    if not text or avail_px <= 0:
        return False

    def width():
        return t.get_window_extent(renderer).width

    if width() <= avail_px:
        return False
    lines_allowed = max(max_lines, text.count("\n") + 1)
    size = t.get_fontsize()
    while True:
        t.set_text(text)
        chars = max(8, int(max(len(x) for x in text.split("\n")) * avail_px / max(width(), 1.0)))
        t.set_text(_wrap(text, chars))
        while width() > avail_px and chars > 8:
            chars -= max(1, chars // 20)
            t.set_text(_wrap(text, chars))
        if (width() <= avail_px and t.get_text().count("\n") + 1 <= lines_allowed) or size <= min_size:
            return True
        size = max(min_size, size * 0.9)
        t.set_fontsize(size)


def _fit_legends(fig: Figure, renderer) -> bool:
    """Wrap (and if needed shrink) legend entries wider than the figure: a legend below the axes
    (``_legend``) with a long label, e.g. a bound's formula and its verdict, otherwise made the
    layout engine squeeze the axes to a sliver (matplotlib: "constrained_layout not applied
    because axes sizes collapsed to zero").  An axes' legend gets the width that fits around its
    axes' centre (one panel of two: about half the figure).  True if a label changed."""
    changed = False
    W = fig.bbox.width
    for parent, leg in [(ax, ax.get_legend()) for ax in fig.axes] + [(None, leg) for leg in fig.legends]:
        if leg is None:
            continue
        width = 0.94 * W
        if parent is not None:   # centred on its axes (``_legend``): as wide as it can be around that centre
            centre = parent.get_position().x0 * W + parent.get_position().width * W / 2.0
            width = min(width, 0.97 * 2.0 * min(centre, W - centre))
        em = leg.prop.get_size_in_points() * fig.dpi / 72.0
        avail = width - (leg.handlelength + leg.handletextpad + 2 * leg.borderpad) * em
        for t in leg.get_texts():
            changed |= _fit_text(t, avail, renderer, max_lines=4)
    return changed


def fit_titles(fig: Figure) -> Figure:
    """Wrap (and if needed shrink) each axes title to its axes' width and the suptitle to the
    figure's, and legend entries wider than the figure to its width (``_fit_legends``).

    The axes get their drawn positions first: the figure's layout engine places them (for
    constrained layout that measures every text around the axes) and each applies its aspect,
    as a draw would, without drawing the artists (a layout-only draw of the whole figure cost
    about 30 % more and gives the same positions: the saved PNGs are equal byte for byte).
    When a title changed and the figure has no layout engine, applies ``tight_layout`` so that
    the taller title fits.
    """
    _fit(fig)
    return fig


#: one mathtext parser per renderer class for the whole process (``_share_mathtext_parser``)
_MATHTEXT_PARSERS: dict = {}


def _share_mathtext_parser(renderer) -> None:
    """Give ``renderer`` the mathtext parser of the first renderer of its class in this process.
    Each Agg renderer (one per figure) has a parser of its own, whose cache of parsed expressions
    (keyed by the parser, the expression, the dpi and the font) then starts empty: every log
    axis's tick labels ($10^{-3}$, ...) were parsed again for every figure, about a tenth of the
    analyses' time.  A parse result depends on its key only, so the pictures are the same."""
    parser = getattr(renderer, "mathtext_parser", None)
    if parser is not None:
        renderer.mathtext_parser = _MATHTEXT_PARSERS.setdefault(type(renderer), parser)


def _fit(fig: Figure) -> bool:
    """``fit_titles``; True if a title changed after the layout engine placed the axes (so the
    layout is stale), False if the engine's layout is the one of the figure as it is now."""
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()
    _share_mathtext_parser(renderer)
    legends_changed = _fit_legends(fig, renderer)
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)
    for ax in fig.axes:
        ax.apply_aspect()
    changed = False
    for ax in fig.axes:
        for t in (ax.title, getattr(ax, "_left_title", None), getattr(ax, "_right_title", None)):
            if t is not None and t.get_visible():
                changed |= _fit_text(t, ax.bbox.width, renderer)
    sup = getattr(fig, "_suptitle", None)
    if sup is not None and sup.get_visible():
        changed |= _fit_text(sup, 0.96 * fig.bbox.width, renderer)
    if (changed or legends_changed) and fig.get_layout_engine() is None:
        fig.tight_layout()
    return changed


def _drop_layout_engine(fig: Figure) -> None:
    """No layout engine at all, so that ``savefig`` draws once: with any engine, even the
    placeholder that ``set_layout_engine("none")`` or ``tight_layout`` leaves, it draws the whole
    figure a first time (rendering nothing) before the draw it saves."""
    with matplotlib.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)


def save(fig: Figure, path, dpi: int = 150) -> Path:
    """Save ``fig`` as PNG (or the format of the suffix), creating parent folders.

    Titles are fitted first (``fit_titles``): no title runs off the figure.  They are fitted at
    the resolution that is saved, so the saving draw reuses the canvas's renderer and with it
    every text measurement (matplotlib caches them per renderer): about half the time of drawing
    a figure twice at two resolutions.  Fitting runs the figure's layout engine; when no title
    changed after that, the figure is saved without an engine: the saving draw keeps that layout
    and is the only draw (``_drop_layout_engine``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    dpi0 = fig.dpi
    fig.set_dpi(dpi)
    engine = fig.get_layout_engine()
    try:
        # a layout that is stale (a title changed after the engine placed the axes) is redone
        # by the engine when savefig draws; else (or with a placeholder engine) none is needed
        if not (_fit(fig) and isinstance(engine, (ConstrainedLayoutEngine, TightLayoutEngine))):
            _drop_layout_engine(fig)
        try:
            fig.savefig(path, dpi=dpi)
        except OSError as e:  # a full disk: say which file (a write error carries no file name)
            from stabsim.runtime.atomic_files import write_error

            raise write_error(path, e, kept="the figure is incomplete") from None
    finally:
        fig.set_dpi(dpi0)
        if engine is not None and fig.get_layout_engine() is not engine:
            fig.set_layout_engine(engine)
    return path


__all__ = ["plot_bound_overlay", "plot_rate_fit", "plot_bound_points", "mark_nonpositive", "fit_titles",
           "default_title", "save", "X_LABELS", "Y_LABELS", "VARIANT_STYLES", "NONPOSITIVE_LOWER_LABEL",
           "NONPOSITIVE_MEAN_LABEL", "FLOOR_LABEL"]
