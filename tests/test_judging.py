"""stabsim.judge / stabsim.overlay_figure: from a run_twin Dataset and a bound to a verdict and a figure."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

import stabsim

T, R = 120, 16


@pytest.fixture(scope="module")
def problem():
    return stabsim.make_problem("auc_separable", d=4)


@pytest.fixture(scope="module")
def run(problem):
    X, y = problem.sample(30, seed=0)
    ds = stabsim.run_twin(X, y, algorithm="p1_alg1", loss="auc_hinge", constraint=("l2", 5.0), eta=0.05, T=T,
                          replicates=R, seed=1, neighbour="flip")
    return X, ds


@pytest.fixture(scope="module")
def sweep(problem):
    runs = []
    for n in (20, 40, 80):
        X, y = problem.sample(n, seed=0)
        runs.append(stabsim.run_twin(X, y, algorithm="p1_alg1", loss="auc_logistic", constraint=("l2", 5.0),
                                     eta=0.05, T=T, replicates=R, seed=1, neighbour="flip"))
    return problem.sample(80, seed=0)[0], runs


def _labels(fig):
    return [ln.get_label() for ln in fig.axes[0].get_lines()]


def test_registry_bound_verdict(run):
    X, ds = run
    v = stabsim.judge(ds, "P1.Thm4.uas", X=X)
    assert v.key == "P1.Thm4.uas" and v.quantity == "uas_mean" and v.tag == "EXPLICIT"
    assert v.verdict == "holds" and v.n_replicates == R and v.worst_margin > 0
    assert 0 <= v.tightness_max < 1


def test_too_small_bound_is_violated(run):
    """The other way round: a user's bound far below the measured UAS is violated, and named as given."""
    X, ds = run

    def tiny(t, eta):
        return 1e-6 * eta * t

    v = stabsim.judge(ds, tiny, X=X)
    assert v.verdict == "violated" and v.key == "tiny" and v.worst_margin < 0


def test_overlay_figure_has_measure_and_bounds(run, tmp_path):
    X, ds = run

    def mine(t, n, eta, G):
        return 2 * G * eta * (np.sqrt(t) + 2 * t / n)

    fig = stabsim.overlay_figure(ds, ["P1.Thm4.uas", mine], X=X, path=tmp_path / "f.png")
    labels = _labels(fig)
    assert any(lb.startswith("measured mean") for lb in labels)
    assert any(lb.startswith("P1 Theorem 4 bound") and "holds" in lb for lb in labels)
    assert any(lb.startswith("mine bound") for lb in labels)
    assert not any("custom" in lb or "study file" in lb for lb in labels)
    title = fig.axes[0].get_title()
    assert title.startswith("P1 Theorem 4: UAS") and "None" not in title and f"T={T}" in title
    assert (tmp_path / "f.png").stat().st_size > 0


def test_missing_constant_is_named(run):
    _, ds = run
    with pytest.raises(ValueError, match="no value for G.*X="):
        stabsim.judge(ds, "P1.Thm4.uas")
    v = stabsim.judge(ds, "P1.Thm4.uas", constants={"G": 10.0})
    assert v.verdict == "holds"


def test_rate_needs_a_sweep(run):
    X, ds = run
    with pytest.raises(ValueError, match="needs a sweep"):
        stabsim.judge(ds, "P1.Thm4.uas", X=X, rate=True)


def test_sweep_one_figure_across_n(sweep):
    X, runs = sweep
    v = stabsim.judge(runs, "P1.Thm5.uas", X=X)
    assert v.verdict == "holds" and list(v.worst_at) == ["n"]
    fig = stabsim.overlay_figure(runs, "P1.Thm5.uas", X=X)
    line = next(ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("measured"))
    assert list(line.get_xdata()) == [20, 40, 80]
    assert "n=" not in fig.axes[0].get_title()  # the swept parameter is the x axis, not the setting


def test_sweep_rate_verdict(sweep):
    X, runs = sweep
    v = stabsim.judge(runs, "P1.Thm5.uas", X=X, rate=True)
    assert v.exponent == pytest.approx(-1.0) and v.slope is not None
    assert v.verdict in ("matches", "faster than claimed", "inconsistent", "inconclusive")
    assert v.slope_lower <= v.slope <= v.slope_upper
    fig = stabsim.overlay_figure(runs, "P1.Thm5.uas", X=X, rate=True)
    assert "rate in n" in fig.axes[0].get_title()


def test_sweep_needs_one_differing_parameter(sweep):
    X, runs = sweep
    with pytest.raises(ValueError, match="differ in \\['n', 'eta'\\].*pass x="):
        stabsim.judge([runs[0], runs[1].assign_attrs(eta=0.1)], "P1.Thm5.uas", X=X)
    with pytest.raises(ValueError, match="differ in none"):
        stabsim.judge([runs[0], runs[0]], "P1.Thm5.uas", X=X)
    v = stabsim.judge([runs[0], runs[1].assign_attrs(eta=0.1)], "P1.Thm5.uas", X=X, x="n")
    assert list(v.worst_at) == ["n"]


def test_readme_python_example_ends_with_judge_and_figure(tmp_path, monkeypatch):
    """The README's Python example ends with the two calls, and runs (at a small T and R)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    sec = text.split("## Python API", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", sec, re.S).group(1)
    calls = [ln for ln in code.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert "stabsim.judge(" in calls[-3] and "stabsim.overlay_figure(" in calls[-1]
    small = code.replace("T=20_000", "T=200").replace("replicates=500", "replicates=16")
    assert small != code
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(small, "README.md", "exec"), scope)
    assert scope["v"].key == "P1.Thm4.uas" and scope["v"].verdict in ("holds", "violated", "inconclusive")
    assert (tmp_path / "p1_thm4.png").is_file()


def test_a_dataset_with_a_swept_dim_is_a_sweep(sweep):
    """One Dataset with a dim n besides (replicate, t) gives the same verdict as the list of its runs."""
    import xarray as xr

    X, runs = sweep
    stacked = xr.concat([r.expand_dims(n=[r.attrs["n"]]) for r in runs], dim="n", combine_attrs="override")
    a = stabsim.judge(stacked, "P1.Thm5.uas", X=X)
    b = stabsim.judge(runs, "P1.Thm5.uas", X=X)
    assert a.verdict == b.verdict and a.worst_margin == pytest.approx(b.worst_margin)
    assert a.tightness_max == pytest.approx(b.tightness_max)
    with pytest.raises(ValueError, match="not a dim"):
        stabsim.judge(stacked, "P1.Thm5.uas", X=X, x="eta")
