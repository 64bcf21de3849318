"""Figures: a bound overlay is produced on log-log axes, shows verdicts in the legend and saves as PNG."""

import numpy as np
import pytest
import xarray as xr

from stabsim.plots import X_LABELS, Y_LABELS, default_title, plot_bound_overlay, plot_rate_fit
from stabsim.theory import get
from stabsim.verdicts import check_bound, check_rate, fit_slope


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
    assert any("consistent" in t.get_text() for t in ax.get_legend().get_texts())
    assert (tmp_path / "rate.png").stat().st_size > 0


def test_default_title():
    assert default_title(get("P1.Thm5.uas"), "uas_mean", "smooth convex") == "P1 Theorem 5: UAS, smooth convex"
