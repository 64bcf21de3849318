"""Figures: a bound overlay is produced on log-log axes, shows verdicts in the legend and saves as PNG."""

import numpy as np
import pytest
import xarray as xr

from stabsim.judging.plots import X_LABELS, Y_LABELS, default_title, plot_bound_overlay, plot_rate_fit
from stabsim.theory import get
from stabsim.judging.rules import check_bound, check_rate, fit_slope


@pytest.fixture
def measure():
    t = np.array([1, 3, 10, 30, 100, 300, 1000])
    est = 0.01 * t ** 0.8
    ds = xr.Dataset({"estimate": ("t", est), "lower": ("t", 0.9 * est), "upper": ("t", 1.1 * est)},
                    coords={"t": t, "sum_eta": ("t", 0.05 * t)})
    ds.attrs.update(quantity="uas_mean", n_replicates=200, level=0.95,
                    neighbour="replace-one: example k=random replaced by a 'flip' point")
    return ds


def test_overlay_log_axes_legend_and_png(measure, tmp_path):
    b = get("P1.Thm4.uas")
    vals = b(t=measure.t.values, n=100, eta=0.05, G=1.4)
    v_ok = check_bound(measure, vals, "EXPLICIT", key=b.key)
    v_bad = check_bound(measure, vals / 1000, "EXPLICIT")
    path = tmp_path / "figs" / "p1_thm4.png"
    fig = plot_bound_overlay(measure, [(b, vals), ("bound / 1000", vals / 1000, "printed")],
                             verdicts=[v_ok, v_bad], setting="non-smooth convex", path=path)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("holds" in s and "P1 Theorem 4" in s for s in texts)
    assert any("violated" in s for s in texts)
    assert any("95% CI" in s and "R = 200" in s for s in texts)
    assert ax.get_title() == "P1 Theorem 4: UAS, non-smooth convex"
    assert ax.get_xlabel() == X_LABELS["t"] and ax.get_ylabel() == Y_LABELS["uas_mean"]
    assert path.exists() and path.stat().st_size > 1000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_printed_and_corrected_have_distinct_styles(measure):
    t = measure.t.values
    fig = plot_bound_overlay(measure, [("printed", t * 1.0, "printed"), ("corrected", t * 2.0, "corrected")],
                             x="sum_eta")
    ax = fig.axes[0]
    styles = {ln.get_label(): ln.get_linestyle() for ln in ax.get_lines()}
    assert styles["printed"] != styles["corrected"]
    assert ax.get_xlabel() == X_LABELS["sum_eta"]


def test_overlay_rejects_multi_dim_measure(measure):
    two = xr.concat([measure, measure], dim="n")
    with pytest.raises(ValueError, match="1-D measure"):
        plot_bound_overlay(two, {"b": 1.0})


def test_rate_fit_plot(tmp_path):
    x = np.geomspace(10, 1000, 8)
    y = x ** -0.5 * np.random.default_rng(0).lognormal(0, 0.3, size=(100, x.size))
    fit = fit_slope(x, y)
    v = check_rate(x, y, -0.5)
    fig = plot_rate_fit(x, fit, v, quantity="excess_risk", xname="n", title="P1 Theorem 1: excess risk rate",
                        path=tmp_path / "rate.png")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert any(v.verdict in t.get_text() for t in ax.get_legend().get_texts())
    assert (tmp_path / "rate.png").stat().st_size > 0


def test_default_title():
    assert default_title(get("P1.Thm5.uas"), "uas_mean", "smooth convex") == "P1 Theorem 5: UAS, smooth convex"


# ---- log axes with non-positive CI ends, titles that fit, figures of the P4 rate checks -----------------

def _neg_lower_measure():
    t = np.array([1, 3, 10, 30, 100, 300, 1000])
    est = np.array([-1e-4, 2e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1])
    lo = np.array([-5e-4, -1e-4, -2e-3, 2e-3, 8e-3, 2.5e-2, 9e-2])
    ds = xr.Dataset({"estimate": ("t", est), "lower": ("t", lo), "upper": ("t", np.abs(est) * 1.5 + 1e-4)},
                    coords={"t": t})
    ds.attrs.update(quantity="gen_gap", n_replicates=100, level=0.95)
    return ds


def test_negative_lower_end_is_marked_not_clipped(tmp_path):
    from stabsim.judging.plots import NONPOSITIVE_LOWER_LABEL, NONPOSITIVE_MEAN_LABEL

    m = _neg_lower_measure()
    fig = plot_bound_overlay(m, {"bound": 0.5 * m.t.values ** 0.5}, path=tmp_path / "neg.png")
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    tri = lines[NONPOSITIVE_LOWER_LABEL]
    assert tri.get_marker() == "v"
    lo = m["lower"].values
    np.testing.assert_array_equal(np.sort(tri.get_xdata()), np.sort(m.t.values[lo <= 0]))
    assert np.all(np.asarray(tri.get_ydata()) == 0)        # on the axis' lower limit (axes coordinates)
    assert NONPOSITIVE_MEAN_LABEL in lines                   # the negative mean is marked too
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert NONPOSITIVE_LOWER_LABEL in texts
    data = np.concatenate([m[v].values for v in ("estimate", "lower", "upper")] + [0.5 * m.t.values ** 0.5])
    pos_min = data[data > 0].min()
    ymin, ymax = ax.get_ylim()
    assert ymin >= pos_min / 1e3 and ymin > 0
    # no artist was drawn at a made-up tiny value: every data-coordinate y is >= the axis' lower limit
    for ln in ax.get_lines():
        if ln.get_transform() == ax.transData:
            y = np.asarray(ln.get_ydata(), dtype=float)
            assert np.all(~np.isfinite(y) | (y >= ymin * (1 - 1e-9)))


def test_rate_fit_ci_marker_and_floor():
    from stabsim.judging.plots import FLOOR_LABEL, NONPOSITIVE_LOWER_LABEL

    rng = np.random.default_rng(1)
    x = np.array([100.0, 200.0, 400.0, 800.0])
    y = x ** -1.0 * rng.lognormal(0, 0.2, size=(40, x.size))
    y[:, 3] = rng.normal(2e-4, 2e-3, size=40)      # mean > 0 but CI lower end < 0
    y[:, 3] += 5e-4 - y[:, 3].mean()
    fit = fit_slope(x, y)
    v = check_rate(x, y, -1.0)
    fig = plot_rate_fit(x, fit, v, y_reps=y, floor=3e-3, quantity="excess_risk")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert FLOOR_LABEL in labels and NONPOSITIVE_LOWER_LABEL in labels
    assert any("CI of the mean" in s for s in labels)
    assert ax.get_ylim()[0] > 0 and ax.get_yscale() == "log"


@pytest.mark.parametrize("kind", ["overlay", "suptitle", "plain"])
def test_long_titles_fit_in_the_figure(kind, measure, tmp_path):
    from matplotlib.figure import Figure

    from stabsim.judging.plots import save

    long = "P9 Theorem 99(z): a very long title with many parameters, " + ", ".join(f"p{i}={i / 7:.4f}" for i in range(25))
    if kind == "overlay":
        fig = plot_bound_overlay(measure, {"b": 1.0}, title=long)
    elif kind == "suptitle":
        fig = Figure(figsize=(8, 4), layout="constrained")
        a1, a2 = fig.subplots(1, 2)
        a1.set_title(long)
        a2.set_title(long)
        fig.suptitle(long)
    else:
        fig = Figure(figsize=(6, 4))          # no layout engine (as the pyplot figures of some checks)
        fig.add_subplot().set_title(long)
    save(fig, tmp_path / "t.png")
    fig.set_dpi(150)          # measured as saved (save's default dpi): at another dpi glyph advances round
    fig.draw_without_rendering()  # differently (a 6.4 pt line is 12 % wider at 100 dpi than at 150, measured)
    r = fig.canvas.get_renderer()
    fb = fig.bbox
    texts = [ax.title for ax in fig.axes] + ([fig._suptitle] if fig._suptitle is not None else [])
    for t in texts:
        bb = t.get_window_extent(r)
        assert bb.x0 >= fb.x0 - 1 and bb.x1 <= fb.x1 + 1 and bb.y1 <= fb.y1 + 1 and bb.y0 >= fb.y0 - 1, (t.get_text(), bb)
    assert "\n" in fig.axes[0].title.get_text()


def _synthetic_p4_risk(spec, dims_extra, rng):
    """A p4_risk-like Dataset on the study's sweep (fake measurements, for the checks' figures only)."""
    sweep = {a: list(spec.sweep[a]) for a in spec.sweep}
    R = 12
    shape = [R, 1] + [len(v) for v in sweep.values()]
    dims = ["replicate", "t"] + list(sweep)
    coords = {"replicate": np.arange(R), "t": [0], **sweep}
    n = np.asarray(sweep.get("n", [200]), float)
    base = 0.05 * (n / n[0]) ** -0.7
    bshape = [1, 1] + [len(v) if a == "n" else 1 for a, v in sweep.items()]
    val = base.reshape(bshape) * rng.lognormal(0, 0.2, size=shape)
    cell_dims = list(sweep)
    cell_shape = [len(v) for v in sweep.values()]
    ds = xr.Dataset(coords=coords)
    for name, f in dims_extra.items():
        ds[name] = (dims, f(val))
    nn = np.broadcast_to(n.reshape([len(n) if a == "n" else 1 for a in sweep]), cell_shape) if "n" in sweep \
        else np.full(cell_shape, 200.0)
    ds["T_eff"] = (cell_dims, nn.astype(int))
    ds["eta_eff"] = (cell_dims, np.full(cell_shape, 0.05))
    ds["sigma_eff"] = (cell_dims, np.full(cell_shape, 0.0))
    return ds


@pytest.mark.parametrize("study", ["p4_rates_lownoise", "p4_rates_noisy", "p4_thm16a"])
def test_p4_rate_checks_have_a_figure_per_verdict(study):
    """Synthetic data through the real check functions (a quick run of these studies takes > 20 s)."""
    from pathlib import Path

    from stabsim.analyses.p4_optimization import check_opt
    from stabsim.analyses.p4_rates import check_rates
    from stabsim.study import load_study

    spec = load_study(Path(__file__).resolve().parents[1] / "studies" / f"{study}.toml", profile="quick")
    rng = np.random.default_rng(0)
    if study == "p4_thm16a":
        ds = _synthetic_p4_risk(spec, {"FS_out": lambda v: 0.3 + v}, rng)
        ds["FS_wstar"] = ds["FS_out"].isel(t=0) * 0 + 0.3
        res = check_opt(spec, ds)
    else:
        from stabsim.setups.p4 import F_star as _F_star
        from stabsim.registry import twin_problem

        Fs = _F_star(twin_problem(spec.cell_params(spec.cells()[0])["data"]), spec.seed)[0]
        ds = _synthetic_p4_risk(spec, {"F_out": lambda v: Fs + v}, rng)
        res = check_rates(spec, ds)
    names = {n for n, _ in res.figures}
    assert res.verdicts and len(res.figures) >= 1
    for i in range(len(res.verdicts)):
        assert res.links.get(i) in names, (i, res.links, names)
    for _, fig in res.figures:
        assert fig.axes[0].get_yscale() == "log"


def test_a_long_legend_entry_below_the_axes_is_wrapped_to_the_figure(tmp_path):
    """A legend below the axes (``plots._legend``) with a label longer than the figure is wide (a
    bound's formula with its verdict) made constrained layout squeeze the axes to a sliver (P2
    Thm 3's explicit-bound figure); ``save`` wraps such entries to the figure's width."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from stabsim.judging import plots

    long = ("P2 Thm 3 Eq. (5) without the c_1..c_3 terms (a lower envelope of the bound) - holds; worst "
            "margin 8.82 at n=400; tightness 0.0014-0.0031; vacuous")
    fig, ax = plt.subplots(figsize=(7.0, 4.8), layout="constrained")
    ax.plot([100, 200, 400], [1.0, 0.5, 0.25], label="measured")
    ax.plot([100, 200, 400], [40.0, 20.0, 10.0], label=long)
    ax.set_xscale("log")
    ax.set_yscale("log")
    plots._legend(ax)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # "constrained_layout not applied ..." fails the test
        plots.save(fig, tmp_path / "f.png")
    fig.draw_without_rendering()               # positions at the figure's own dpi
    assert ax.get_position().width > 0.6       # the axes keep most of the figure's width
    texts = ax.get_legend().get_texts()
    assert "\n" in texts[1].get_text() and texts[0].get_text() == "measured"
    for t in texts:
        box = t.get_window_extent()
        assert box.x0 >= 0 and box.x1 <= fig.bbox.width
    plt.close(fig)


def test_a_long_legend_entry_under_one_of_two_panels_stays_on_the_figure(tmp_path):
    """Under the left panel of two (P1 Thm 4's tightness figure with its lower-bound panel), a
    legend centred on that panel can only be about twice the distance to the figure's edge wide."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from stabsim.judging import plots

    long = ("P1 Theorem 4 bound (corrected reading) - holds; worst margin 8.82 at t=400; tightness "
            "0.0014-0.0031 over the whole horizon; vacuous for every t below the crossing point")
    fig, (left, right) = plt.subplots(1, 2, figsize=(14.0, 5.0))
    left.plot([1, 2, 3], [1.0, 2.0, 3.0], label=long)
    right.plot([1, 2, 3], [3.0, 2.0, 1.0], label="short")
    plots._legend(left)
    fig.tight_layout()
    plots.save(fig, tmp_path / "f.png")
    fig.draw_without_rendering()
    for t in left.get_legend().get_texts():
        box = t.get_window_extent()
        assert box.x0 >= 0 and box.x1 <= fig.bbox.width
    assert "\n" in left.get_legend().get_texts()[0].get_text()
    plt.close(fig)



@pytest.mark.parametrize("title, runs", [("short", 1), ("a long title " * 20, 2)])
def test_save_runs_the_layout_again_only_after_a_title_changed(title, runs, tmp_path, monkeypatch):
    """``save`` fits the titles, which runs the layout engine; the saving draw re-runs it only
    when a title was wrapped after that run (its height changed), and the figure keeps its engine."""
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    from stabsim.judging.plots import save

    calls = []
    real = ConstrainedLayoutEngine.execute
    monkeypatch.setattr(ConstrainedLayoutEngine, "execute", lambda self, fig: calls.append(1) or real(self, fig))
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    ax.plot([1, 10, 100], [3, 2, 1])
    ax.set_xscale("log")
    ax.set_title(title)
    engine = fig.get_layout_engine()
    save(fig, tmp_path / "f.png")
    assert len(calls) == runs
    assert fig.get_layout_engine() is engine
    assert ("\n" in ax.title.get_text()) == (runs == 2)


@pytest.mark.parametrize("layout", ["constrained", "tight_layout"])
def test_save_draws_a_laid_out_figure_once_and_saves_what_two_draws_save(layout, tmp_path, monkeypatch):
    """With a layout engine (even the placeholder ``tight_layout`` leaves) ``savefig`` draws the
    figure once before the draw it saves; ``save`` removes the engine when the layout is final, so
    the figure is drawn once, and the PNG is byte for byte the one matplotlib's two draws give."""
    from matplotlib.figure import Figure

    from stabsim.judging.plots import fit_titles, save

    def figure():
        fig = Figure(figsize=(6, 4), layout="constrained" if layout == "constrained" else None)
        ax = fig.add_subplot()
        ax.plot([1, 10, 100], [3, 2, 1], label="a line")
        ax.set_xscale("log")
        ax.set_title("a short title")
        ax.legend()
        if layout == "tight_layout":
            fig.tight_layout()
        return fig

    reference = figure()
    reference.set_dpi(150)
    fit_titles(reference)
    assert reference.get_layout_engine() is not None
    reference.savefig(tmp_path / "two_draws.png", dpi=150)
    draws = []
    real = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda self, renderer: draws.append(1) or real(self, renderer))
    save(figure(), tmp_path / "one_draw.png")
    assert len(draws) == 1
    assert (tmp_path / "one_draw.png").read_bytes() == (tmp_path / "two_draws.png").read_bytes()
