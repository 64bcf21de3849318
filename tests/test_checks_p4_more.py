"""P4 remaining bounds (stabsim/experiments/p4_generalization.py, stabsim/analyses/p4_generalization.py) and
Figures 1/2 (stabsim/experiments/p4_reproduction.py, stabsim/analyses/p4_reproduction.py):
tiny studies through run_study + analyse with asserted verdicts, plus independent checks of the
ingredients (exact reference risks vs Monte Carlo, the twin generalization estimator vs the direct
one, the Lemma 18 sampler vs the analytic gradient-jump bound, the beta-search table of errata P4-A)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from stabsim.reporting.analyse import analyse
from stabsim.study import parse_study, run_study


def _run(text, tmp_path):
    spec = parse_study(text)
    res = run_study(spec, tmp_path, progress=False)
    rec = analyse(res.data_path.parent)
    assert rec["error"] is None, rec["error"]
    return res.data_path.parent, {(r["key"], r["label"]): r["verdict"] for r in rec["rows"]}


# ---------------------------------------------------------------------------------------- reference points

@pytest.mark.parametrize("loss,flip", [("point_hinge", 0.1), ("auc_hinge", 0.1), ("auc_qhinge", 0.1),
                                       ("auc_hinge", 0.0)])
def test_reference_risk_matches_monte_carlo(loss, flip):
    """The closed-form F(w_ref) of _reference (derived by hand) agrees with an independent Monte Carlo
    estimate on a fresh sample within 4 standard errors (+ a tiny absolute slack for F = 0)."""
    from stabsim.setups.p4 import reference as _reference
    from stabsim.engine.losses import get_loss
    from stabsim.risk import population_risk
    from stabsim.engine.synthetic import make_problem

    pb = make_problem("auc_separable", d=10, gamma=0.5, rho=0.5, flip=flip)
    lossf = get_loss(loss, 1.5 if loss == "auc_qhinge" else None)
    w, F, _, exact = _reference(pb, lossf)
    assert exact
    est = population_risk(w, pb, loss, q=lossf.q if loss == "auc_qhinge" else None, m=4000 if lossf.pairwise
                          else 200000, seed=11, replicate=3)
    assert abs(float(est.value) - F) <= 4 * float(est.se) + 1e-12, (float(est.value), float(est.se), F)


def test_hinge_reference_is_the_minimiser_along_e1():
    """F(a e1) of the pointwise hinge on auc_separable with flips is minimal at a = 1/gamma (Monte Carlo on a
    common sample: the minimiser of the empirical curve is the grid point next to 1/gamma)."""
    from stabsim.risk import empirical_risk
    from stabsim.engine.synthetic import make_problem

    pb = make_problem("auc_separable", d=10, gamma=0.5, rho=0.5, flip=0.1)
    X, y = pb.sample(200000, 5, 0)
    a = np.linspace(1.0, 3.0, 21)
    W = a[:, None] * np.eye(10)[0][None, :]
    F = np.asarray(empirical_risk(W, X, y, "point_hinge"))
    assert a[int(np.argmin(F))] == pytest.approx(2.0)


# ---------------------------------------------------------------------------------------- p4_gen + p4_more

POINT_SMOOTH = """
[study]
id = "t_point_smooth"
kind = "p4_gen"
check = "p4_more"
seed = 7
replicates = 200
chunk = 200
[data]
problem = "p4_lsq"
n = 60
kappa = 0.0
per_replicate = true
[algorithm]
name = "p4_alg1"
loss = "point_lsq"
constraint = "l2:1.0"
eta = 0.5
T = 60
neighbour = "fresh"
k = "random"
[p4]
m = 20000
[sweep]
eps = [0.0, 8.0]
[bounds]
keys = ["P4.Lemma13a.gen", "P4.Thm15a.gen", "P4.Lemma20.sum_eta2_FS", "P4.Thm3.excess_explicit.printed",
        "P4.Thm3.excess_explicit.corrected"]
"""


def test_point_smooth_bounds_hold_and_twin_estimator_agrees(tmp_path):
    import xarray as xr

    d, v = _run(POINT_SMOOTH, tmp_path)
    assert len(v) == 10
    assert all(x == "holds" for x in v.values()), v
    ds = xr.open_dataset(d / "data.nc").sel(eps=0.0)
    # the twin estimator and the direct F - F_S estimate the same expectation (independent reason: the
    # identity E[F(A(S)) - F_S(A(S))] = E[f(A(S^(k)); z_k) - f(A(S); z_k)] for k uniform)
    tw, di = ds["gen_twin"].values, (ds["F_out"] - ds["FS_out"]).values
    se = math.hypot(tw.std(ddof=1), di.std(ddof=1)) / math.sqrt(len(tw)) + 1.96 * float(ds["F_out_se"].mean())
    assert abs(tw.mean() - di.mean()) <= 3 * se


PAIR_HOLDER = """
[study]
id = "t_pair_holder"
kind = "p4_gen"
check = "p4_more"
seed = 8
replicates = 48
chunk = 48
[data]
problem = "auc_separable"
n = 40
gamma = 0.5
rho = 0.5
per_replicate = true
[algorithm]
name = "p4_alg2"
loss = "auc_hinge"
q = 1.5
constraint = "l2:1.5"
eta = 0.05
T = 80
neighbour = "fresh"
k = "random"
[p4]
m = 1000
[sweep]
loss = ["auc_hinge", "auc_qhinge"]
[bounds]
keys = ["P4.Lemma17b.gen", "P4.Lemma19b.onavg.printed", "P4.Lemma19b.onavg.corrected", "P4.Lemma20.opt",
        "P4.Lemma20.sum_eta2_FS"]
"""


def test_pair_holder_bounds_hold(tmp_path):
    _, v = _run(PAIR_HOLDER, tmp_path)
    assert len(v) == 10
    assert all(x == "holds" for x in v.values()), v


def test_wrong_keys_for_setting_is_an_error():
    from stabsim.analyses.p4_generalization import applicable_keys

    assert "P4.Lemma13a.gen" not in applicable_keys(True, True)
    assert "P4.Lemma19b.onavg.corrected" in applicable_keys(True, False)


def test_rate_schedule_and_part():
    """Thm 7 with alpha = 0: T = n^2, eta = min{n^{-3/2}, n eps/(T sqrt(d log 1/delta))}; part (b) exactly when
    F(w*) = 0 (flip = 0)."""
    from stabsim.experiments.p4_generalization import _gen_effective

    base = {"data": {"problem": "auc_separable", "d": 10, "n": 100, "per_replicate": True, "seed": None,
                     "gamma": 0.5, "rho": 0.5, "pi": None, "flip": 0.0, "kappa": None},
            "algorithm": {"name": "p4_alg2", "loss": "auc_hinge", "q": None, "constraint": "l2:1.5", "eta": 0.1,
                          "T": 10, "sigma": 0.0},
            "p4": {"m": 100, "eps": 0.0, "delta": 1e-5, "theorem": "7", "c": 1.0, "schedule_eps": 16.0}}
    T, eta, sigma, _, ref, part = _gen_effective(base)
    assert (T, part, sigma) == (100 ** 2, "b", 0.0)
    assert eta == pytest.approx(min(100 ** -1.5, 100 * 16.0 / (T * math.sqrt(10 * math.log(1e5)))))
    base["data"]["flip"] = 0.1
    assert _gen_effective(base)[5] == "a"


# ---------------------------------------------------------------------------------------- Lemma 18

LEMMA18 = """
[study]
id = "t_lemma18"
kind = "p4_expansion"
check = "p4_lemma18"
seed = 3
replicates = 1
[expansion]
samples = 4000
alpha_loss = "point_hinge"
kappa = 1.0
[sweep]
eta = [0.1, 1.0]
"""


def test_lemma18_holds_and_sampler_finds_the_kink(tmp_path):
    import xarray as xr

    d, v = _run(LEMMA18, tmp_path)
    assert set(v.values()) == {"holds"} and len(v) == 2
    # analytic: for one hinge f(.; z) the gradient jumps by at most ||x|| <= 1, so the expansion is
    # <= eta^2 (<-2eta <w - w', g - g'> <= 0 by monotonicity); kink-straddling samples come close to it
    e = xr.open_dataset(d / "data.nc")["expansion"].max("replicate")
    for eta in (0.1, 1.0):
        assert 0.5 * eta ** 2 < float(e.sel(eta=eta)) <= eta ** 2 * (1 + 1e-12)


# ---------------------------------------------------------------------------------------- Thm 2 / 5

PRIV = """
[study]
id = "t_priv"
kind = "p4_privacy"
check = "p4_condition"
replicates = 1
[privacy]
n = 5000
T = 1000
delta = 0.0
accountant = false
[sweep]
pairwise = [false]
eps = [1.0, 4.0]
"""


def test_condition_rows_and_errata_table(tmp_path):
    d, v = _run(PRIV, tmp_path)
    labels = {lab for _, lab in v}
    assert "continuous beta search = errata P4-A table" in labels
    assert all(x == "holds" for x in v.values()), v


# ---------------------------------------------------------------------------------------- Figures

FIG2 = """
[study]
id = "t_fig2"
kind = "p4_figure"
check = "p4_figures"
seed = 5
replicates = 16
chunk = 16
[data]
problem = "p4_logistic"
n = 5000
kappa = 0.0
per_replicate = true
[algorithm]
name = "p4_alg1"
loss = "point_logistic"
eta = 0.01
T = 1000
[figure]
metric = "misclassification"
m = 5000
[sweep]
kappa = [0.0]
eps = [0.0, 1.5, 6.0]
"""


def test_fig2_error_falls_with_eps(tmp_path):
    import xarray as xr

    d, v = _run(FIG2, tmp_path)
    assert v[("P4.Fig2", "error falls with eps, kappa = 0")] == "consistent"
    t = xr.open_dataset(d / "data.nc")["test"].mean("replicate").sel(kappa=0.0)
    assert float(t.sel(eps=0.0)) < float(t.sel(eps=6.0)) < float(t.sel(eps=1.5))
    assert (d / "figures" / "p4_fig2.png").is_file()


def test_eps_cells_reuse_the_data_sets_and_give_the_same_numbers(tmp_path, monkeypatch):
    """The eps cells of one kappa draw the same data sets: drawn once, kept for the later cells,
    dropped after the last, the cells of one chunk run one after another (one chunk's sets held at
    a time); the data.nc equals drawing them for every cell."""
    import xarray as xr

    from stabsim.experiments import p4_reproduction as p4r
    from stabsim.registry import KINDS
    from stabsim.engine.synthetic import Problem

    text = FIG2.replace("kappa = [0.0]", "kappa = [0.0, 0.1]").replace("replicates = 16\nchunk = 16",
                                                                       "replicates = 6\nchunk = 3")
    calls, held, order = [], [], []
    draw = Problem.sample_replicates
    monkeypatch.setattr(Problem, "sample_replicates", lambda self, *a: calls.append(a[2].tolist()) or draw(self, *a))
    cell_fn = p4r.p4_figure_cell
    def cell_spy(spec, cell, reps):
        order.append((cell["kappa"], int(reps[0]), cell["eps"]))
        out = cell_fn(spec, cell, reps)
        held.append(len(p4r._KEPT))
        return out
    monkeypatch.setattr(KINDS["p4_figure"], "func", cell_spy)
    res = run_study(parse_study(text), tmp_path / "kept", progress=False)
    assert len(calls) == 2 * 2                 # 2 kappas x 2 chunks, not x 3 eps cells
    assert p4r._KEPT == {}                     # nothing held after the last cell
    # chunk by chunk within a kappa, so one chunk's data sets are held at a time (not both chunks')
    eps = sorted({e for _, _, e in order})
    assert order == [(k, r, e) for k in (0.0, 0.1) for r in (0, 3) for e in eps]
    assert max(held) == 1
    monkeypatch.setattr(KINDS["p4_figure"], "func", cell_fn)
    monkeypatch.setattr(p4r, "_later_cell_draws_the_same", lambda spec, cell: False)
    again = run_study(parse_study(text), tmp_path / "drawn", progress=False)
    assert len(calls) == 4 + 2 * 3 * 2
    a, b = xr.open_dataset(res.data_path), xr.open_dataset(again.data_path)
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


def test_study_checks_skip_the_reference_monte_carlo(monkeypatch):
    """Loading a p4_gen study checks each cell without estimating F(w_ref) by Monte Carlo (it
    compiled the risk kernels and sampled 400 000 points per cell before anything ran); the
    schedule, sigma and part it derives are those of the run, which does estimate it."""
    import stabsim.risk
    from stabsim.experiments.p4_generalization import _gen_effective
    from stabsim.study.spec import load_study

    path = Path(__file__).resolve().parent.parent / "studies" / "p4_gen_point_smooth.toml"

    def no_monte_carlo(*a, **k):
        raise AssertionError("Monte Carlo in a study check")

    with monkeypatch.context() as m:
        m.setattr(stabsim.risk, "population_risk", no_monte_carlo)
        spec = load_study(path, profile="quick")
    cells = [spec.cell_params(c) for c in spec.cells()]
    assert any(p["data"]["kappa"] > 0 for p in cells)   # (the Monte Carlo branch is exercised)
    for p in cells:
        checked, run = _gen_effective(p, value=False), _gen_effective(p)
        assert checked[:4] == run[:4] and checked[5] == run[5]
        assert np.array_equal(checked[4][0], run[4][0])
        if p["data"]["kappa"] > 0:
            assert math.isnan(checked[4][1]) and not checked[4][3] and math.isfinite(run[4][1])


def test_the_risk_at_w_star_is_estimated_once_per_problem_and_seed(monkeypatch):
    """F(w*) by Monte Carlo (400 000 points) is asked by every chunk of a p4_gen study and by its
    analysis: computed once per process for each problem, loss, seed and m, and the cached value
    is the estimate itself (equal to a fresh ``population_risk``)."""
    import stabsim.risk
    from stabsim.engine.losses import get_loss
    from stabsim.risk import population_risk
    from stabsim.setups import p4 as setup
    from stabsim.engine.synthetic import make_problem

    monkeypatch.setattr(setup, "_W_STAR_RISK", {})
    calls = []
    monkeypatch.setattr(stabsim.risk, "population_risk", lambda *a, **k: calls.append(k) or population_risk(*a, **k))
    pb = make_problem("p4_lsq", d=10, kappa=0.15)
    first = setup.F_star(pb, 0, m=20000)
    assert setup.F_star(make_problem("p4_lsq", d=10, kappa=0.15), 0, m=20000) == first
    assert len(calls) == 1
    fresh = population_risk(np.asarray(pb.w_star_paper, float), pb, "point_lsq", m=20000, seed=0, replicate=1)
    assert first[0] == float(fresh.value)
    setup.F_star(pb, 1, m=20000)                                  # another seed,
    setup.F_star(make_problem("p4_lsq", d=10, kappa=0.1), 0, m=20000)  # another problem: estimated again
    assert len(calls) == 3
    assert setup.F_star(make_problem("p4_lsq", d=10, kappa=0.0), 0)[1] == "exact" and len(calls) == 3
    w, F, _, exact = setup.reference(make_problem("p4_logistic", d=10, kappa=0.4), get_loss("point_logistic"))
    assert not exact and len(calls) == 4
    assert setup.reference(make_problem("p4_logistic", d=10, kappa=0.4), get_loss("point_logistic"))[1] == F
    assert len(calls) == 4
