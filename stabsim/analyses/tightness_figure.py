"""The figures of the ``p1_tightness`` check (``stabsim.analyses.p1_worst_neighbour``): the bound, the
hand-picked neighbours, the searched worst case and the on-average neighbour against t (left panel)
and, when the study runs one, the lower-bound instance against its own bound (right panel)
(``tightness_figure``); the same at the final T against a swept eta or n (``sweep_figure``)."""

from __future__ import annotations

import numpy as np

STYLES = {"searched": ("C0", "o-"), "flip": ("C2", "s--"), "farthest": ("C3", "^--"), "fresh": ("C4", "d:"),
          "instance": ("C1", "o-")}
LABELS = {"searched": "searched worst case (fresh replicates): uniform stability, lower estimate",
          "fresh": "on-average: k random, i.i.d. replacement"}


def _curve(ax, t, m, name, label):
    col, st = STYLES[name]
    est = np.asarray(m["estimate"].values, float)
    lo, hi = np.asarray(m["lower"].values, float), np.asarray(m["upper"].values, float)
    ok = est > 0
    ax.plot(t[ok], est[ok], st, color=col, markersize=3, label=label)
    band = (lo > 0) & np.isfinite(hi)
    ax.fill_between(t, np.where(band, lo, np.nan), np.where(band, hi, np.nan), color=col, alpha=0.2, linewidth=0)
    return est[ok]


def _guide(ax, t, through, exponent, text):
    """A t^exponent line through the value ``through`` at the last t."""
    if exponent is not None and np.isfinite(through) and through > 0:
        ax.plot(t, through * (t / t[-1]) ** exponent, ":", color="grey", label=text)


def _finish(ax, values, ylabel, title, xlabel="t (steps)"):
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=8.5)
    pos = np.concatenate([np.ravel(v) for v in values]) if values else np.array([])
    pos = pos[np.isfinite(pos) & (pos > 0)]
    if pos.size:
        ax.set_ylim(bottom=pos.min() / 3)
    ax.legend(fontsize=6.2, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=1, frameon=False)
    ax.grid(True, which="both", alpha=0.3)


def tightness_figure(t, curves, bound, verdicts, title, thm, ylabel, lower_bound=None):
    """Left: ``curves`` ({neighbour: measure Dataset}) and ``bound`` against ``t`` with the verdicts
    of the bound and the rate (``thm``: the theorem's record, see ``THEOREMS``).  Right, when
    ``lower_bound`` is given ({t, measure, bound, expected, verdicts, title}): the lower-bound
    instance with its CI, its own bound, the event model's prediction and a sqrt(t) guide."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ncol = 2 if lower_bound is not None else 1
    fig, axes = plt.subplots(1, ncol, figsize=(7.0 * ncol, 6.4), squeeze=False)
    ax = axes[0, 0]
    shown = []
    for name, m in curves.items():
        shown.append(_curve(ax, t, m, name, LABELS.get(name, f"typical neighbour: {name}")))
    ax.plot(t, bound, "-", color="k", linewidth=1.8,
            label=f"{thm.name} bound {thm.formula}" + (f" — {verdicts[0].summary()}" if verdicts else ""))
    if thm.exponent is not None and "searched" in curves:
        _guide(ax, t, float(curves["searched"]["estimate"][-1]), thm.exponent,
               f"{thm.term} through the searched value at T"
               + (f" — rate: {verdicts[1].summary()}" if len(verdicts) > 1 else ""))
    _finish(ax, shown, thm.ylabel, title)
    if lower_bound is not None:
        lb = lower_bound
        ax = axes[0, 1]
        tl = lb["t"]
        v = lb["verdicts"]
        shown = [_curve(ax, tl, lb["measure"], "instance",
                        f"lower-bound instance {lb['name']!r}: E||A_t(S) - A_t(S')||, 95% CI")]
        ax.plot(tl, lb["expected"], "--", color="C1", alpha=0.7, label="event model of the instance (expected)")
        ax.plot(tl, lb["bound"], "-", color="k", linewidth=1.8,
                label=f"{thm.name} bound at the instance's n, eta, G" + (f" — {v[0].summary()}" if v else ""))
        _guide(ax, tl, float(lb["measure"]["estimate"][-1]), 0.5,
               "sqrt(t) through the instance at T" + (f" — rate of ||w_t - w'_t||: {v[1].summary()}" if len(v) > 1 else ""))
        ax.axvspan(lb["fit"][0], lb["fit"][1], color="C1", alpha=0.06, linewidth=0)
        _finish(ax, shown, "E ||A_t(S) - A_t(S')||", lb["title"])
    fig.tight_layout()
    return fig


XLABELS = {"eta": "eta (constant step size)", "n": "n (data set size)"}


def sweep_figure(x, var, curves, bound, verdict, thm, exponent, title):
    """Log-log against the swept ``var`` (values ``x``): ``curves`` ({neighbour: measure Dataset
    along ``var``}, taken at the final T), the bound at T with the rate ``verdict`` of the checked
    neighbour, and the bound's shape (exponent ``exponent`` in ``var``) through it at the largest x."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 6.4))
    shown = [_curve(ax, x, m, name, LABELS.get(name, f"typical neighbour: {name}")) for name, m in curves.items()]
    ax.plot(x, bound, "-", color="k", linewidth=1.8, marker=".", label=f"{thm.name} bound at T: {thm.formula}")
    shown.append(bound)
    ref = thm.checked if thm.checked in curves else next(iter(curves))
    through = float(curves[ref]["estimate"][-1])
    if np.isfinite(through) and through > 0:  # the bound's shape (its exponent: `exponent`) through the value
        ax.plot(x, through * bound / bound[-1], ":", color="grey",
                label=f"the bound's shape (exponent {exponent:.3g} in {var}) through the {ref} value at the largest "
                      f"{var} — rate: {verdict.summary()}")
    _finish(ax, shown, thm.ylabel + " at T", title, XLABELS.get(var, var))
    fig.tight_layout()
    return fig
