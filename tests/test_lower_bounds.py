"""stabsim.engine.lower_bounds: the BFGT (2020) non-smooth instance on P1 Alg. 1 / AUC hinge.

The twin kernel's divergence is compared with the instance's event model (independent code: numpy's
generator, closed-form distances) and its growth in t with the model's and with sqrt(t), all with
tolerances from standard errors at fixed seeds."""

import math

import numpy as np
import pytest

from stabsim.engine.lower_bounds import bfgt_instance, get_instance
from stabsim.judging.rates import fit_slope

Z = 4.0  # two-sided, ~6e-5 per comparison


@pytest.fixture(scope="module")
def inst():
    return bfgt_instance(n=200, eta=0.1)


@pytest.fixture(scope="module")
def window(inst):
    return np.unique(np.round(np.geomspace(inst.fit_from, inst.fit_to, 6)).astype(np.int64))


@pytest.fixture(scope="module")
def runs(inst, window):
    ck = np.union1d([20, 100, 300], window)
    ds = inst.run(T=int(window[-1]), replicates=np.arange(500, 900), seed=7, checkpoints=ck)
    return ck, ds, inst.expected(ck, samples=6000, seed=3)


def test_construction_is_what_the_docstring_says(inst):
    p = inst.params
    X, y = inst.X, inst.y
    k, xk, yk = inst.neighbour
    M = p["M"]
    assert X.shape == (200, M) and (y[:M] == -1).all() and (y[M:] == 1).all() and yk == 1.0
    # G = sup ||x_pos - x_neg|| over S and S' is c, kappa = sup ||x|| is c
    pos = np.vstack([X[y == 1], xk])
    diffs = np.linalg.norm(pos[:, None, :] - X[y == -1][None, :, :], axis=-1)
    assert diffs.max() == pytest.approx(inst.G) and np.linalg.norm(X, axis=1).max() == pytest.approx(inst.kappa)
    # every hub-spoke margin at w_0 is 1 + tau > 1 (S never moves); the k-spoke pairs are active on S'
    w0 = inst.run_kwargs["w0"]
    assert np.all(-X[:M] @ w0 > 1.0)
    assert np.all((xk - X[:M]) @ w0 < 1.0)
    # the tie break exceeds the tie: delta > tau
    assert p["delta"] > p["tau"] > 0


def test_run_on_S_never_moves(inst):
    ds = inst.run(T=300, replicates=4, seed=1, checkpoints=[1, 10, 300], record_outputs=True)
    out_S = ds["output"].sel(run="S").values
    np.testing.assert_array_equal(out_S, np.broadcast_to(inst.run_kwargs["w0"], out_S.shape))


def test_kernel_matches_event_model(runs):
    """E||w_t - w'_t|| and E||A_t - A'_t|| of the kernel equal the event model's within Z standard errors."""
    ck, ds, exp = runs
    for var, key in (("dist_iterate", "iterate"), ("dist_output", "output")):
        v = ds[var].values
        mean, se = v.mean(0), v.std(0, ddof=1) / math.sqrt(v.shape[0])
        z = (mean - exp[key]) / np.hypot(se, exp[key + "_se"])
        assert np.all(np.abs(z) < Z), (var, ck.tolist(), z.round(2).tolist())


def test_growth_exponent(inst, runs, window):
    """On the window the kernel's log-log slope equals the event model's (bootstrap CI of the kernel +
    Z model standard errors), and the model's slope is 1/2 up to its onset/saturation departure,
    which the docstring bounds: iterates t/(2(t - tbar)) at t = fit_from, i.e. <= 0.5 + 1/18."""
    ck, ds, exp = runs
    use = np.isin(ck, window)
    tb = inst.params["tbar"]
    for var, key in (("dist_iterate", "iterate"), ("dist_output", "output")):
        fit = fit_slope(ck[use], ds[var].values[:, use], seed=0)
        model = np.polyfit(np.log(ck[use]), np.log(exp[key][use]), 1)[0]
        # the model's slope error: propagate its standard errors through the linear fit
        lx = np.log(ck[use]) - np.log(ck[use]).mean()
        w = lx / (lx ** 2).sum()
        model_se = math.sqrt(((w * exp[key + "_se"][use] / exp[key][use]) ** 2).sum())
        assert fit.lower - Z * model_se <= model <= fit.upper + Z * model_se, (var, fit, model)
    onset = inst.fit_from / (2 * (inst.fit_from - tb))
    assert 0.5 - 0.1 < np.polyfit(np.log(ck[use]), np.log(exp["iterate"][use]), 1)[0] <= onset + 0.02


def test_exact_distance_formula(inst):
    """||w_t - w'_t||^2 / (eta c)^2 = N - 2 eps m N / (c sqrt(M)) + eps^2 m^2 / c^2 for integers 0 <= m <= N
    (N spent spokes, m k-steps) at every replicate, to rounding error."""
    ds = inst.run(T=1500, replicates=64, seed=5, checkpoints=[1500])
    p = inst.params
    a, b = 2 * p["eps"] / (p["c"] * math.sqrt(p["M"])), (p["eps"] / p["c"]) ** 2
    q = ds["dist_iterate"].values[:, 0] ** 2 / (p["eta"] * p["c"]) ** 2
    for v in q:
        cand = [N - a * m * N + b * m * m for N in range(max(int(v) - 1, 0), int(v) + 3) for m in range(N + 1)]
        assert min(abs(v - cv) for cv in cand) < 1e-9 * max(v, 1.0), v
    assert (q > 0.5).mean() > 0.9  # the divergence has started in almost all replicates


def test_kernel_equals_closed_form_per_replicate(inst):
    """On the kernel's own index sequence (stabsim.engine.rng: i_t = randint(key, t, n), t = 0..T, P1 Alg. 1
    pairs (i_t, i_{t-1})), the event rules of the docstring give N and m, and ||w_T - w'_T|| is the
    closed form to rounding error -- replicate by replicate."""
    from stabsim.engine import rng

    p = inst.params
    n, M, k, T, seed = inst.n, p["M"], inst.n - 1, 800, 9
    reps = np.arange(12)
    ds = inst.run(T=T, replicates=reps, seed=seed, checkpoints=[T])
    started = 0
    for r in reps:
        key = rng.key(seed, int(r), rng.STREAM_INDEX)
        idx = [int(rng.randint(key, np.int64(t), np.int64(n))) for t in range(T + 1)]
        spent, m = set(), 0
        for s in range(1, T + 1):
            hi, lo = max(idx[s], idx[s - 1]), min(idx[s], idx[s - 1])
            if hi >= M > lo and lo not in spent and (hi == k or m > 0):
                spent.add(lo)
                m += hi == k
        N = len(spent)
        started += m > 0
        want = p["eta"] * math.sqrt(p["c"] ** 2 * N - 2 * p["c"] * p["eps"] * m * N / math.sqrt(M)
                                    + p["eps"] ** 2 * m * m)
        assert float(ds["dist_iterate"].values[r, 0]) == pytest.approx(want, abs=1e-12)
    assert started >= len(reps) // 2  # not a vacuous check of zeros


def test_bad_arguments():
    with pytest.raises(ValueError, match="hubs"):
        bfgt_instance(n=10, hubs=0)
    with pytest.raises(ValueError, match="spokes"):
        bfgt_instance(n=4, hubs=2)
    with pytest.raises(ValueError, match="eta c"):
        bfgt_instance(n=50, eta=0.01)
    with pytest.raises(ValueError, match="unknown lower-bound instance"):
        get_instance("nope")
    with pytest.raises(ValueError, match="steps >= 1"):
        bfgt_instance(n=20).expected([0, 5])


def _tiny(study, extra=""):
    from pathlib import Path

    from stabsim.study import parse_study

    text = Path(__file__).parents[1].joinpath("studies", f"{study}.toml").read_text()
    tiny = ("[profiles.tiny]\nstudy.replicates = 16\nstudy.chunk = 8\nalgorithm.T = 20\nalgorithm.checkpoints = 5\n"
            "search.replicates = 8\nsearch.max_evals = 12\nsearch.screen = 1\n" + extra + "\n[profiles.quick]")
    return parse_study(text.replace("[profiles.quick]", tiny), profile="tiny")


def test_thm4_study_runs_the_instance(tmp_path):
    """p1_thm4_tightness with [lower_bound] instance = "bfgt": data lb_*, a bound row and a rate row for
    the instance, the event model's prediction in the measured inputs, chunking-independent."""
    import xarray as xr

    from stabsim.reporting.analyse import analyse
    from stabsim.study import run_study

    spec = _tiny("p1_thm4_tightness", "lower_bound.n = 100\nlower_bound.T = 600\nlower_bound.checkpoints = 6\n")
    run_study(spec, tmp_path, progress=False)
    rec = analyse(tmp_path / spec.id)
    assert not rec.get("error"), rec.get("error")
    rows = {r["label"]: r for r in rec["rows"]}
    assert {"lower-bound instance", "lower-bound instance, per-iterate rate"} <= set(rows), sorted(rows)
    assert rows["lower-bound instance"]["verdict"] == "holds"
    assert rows["lower-bound instance, per-iterate rate"]["tag"] == "RATE"
    ds = xr.load_dataset(tmp_path / spec.id / "data.nc", engine="h5netcdf")
    assert ds["lb_dist_output"].dims == ("replicate", "lb_t") and ds.sizes["replicate"] == 16
    # the two chunks of 8 replicates equal one run over the 16 ids (replicate r depends on (seed, r) only)
    inst = bfgt_instance(n=100, eta=spec.cell_params(spec.cells()[0])["lower_bound"]["eta"])
    one = inst.run(T=600, replicates=np.arange(16), seed=spec.seed, checkpoints=ds["lb_t"].values)
    np.testing.assert_array_equal(one["dist_output"].values, ds["lb_dist_output"].values)
    assert any(k.startswith("lower-bound instance: event model") for k in rec["measured"])


@pytest.mark.parametrize("study,key,measure", [("p0_thm1_tightness", "P0.Eq9.avg.proof", "quantile"),
                                               ("p4_lemma19a_tightness", "P4.Lemma19a.onavg", "mean_sq")])
def test_generalised_tightness_studies(tmp_path, study, key, measure):
    """The p1_tightness kind/check on P0 Alg. 1 (quantile bound) and P4 Alg. 2 (on-average bound):
    one bound row of the right quantity, the searched-vs-hand-picked comparison in the measured inputs."""
    from stabsim.reporting.analyse import analyse
    from stabsim.analyses.p1_worst_neighbour import QUANTITY
    from stabsim.study import run_study

    spec = _tiny(study)
    run_study(spec, tmp_path, progress=False)
    rec = analyse(tmp_path / spec.id)
    assert not rec.get("error"), rec.get("error")
    first = rec["rows"][0]
    assert first["key"] == key and first["quantity"] == QUANTITY[measure] and first["verdict"] != "error"
    assert any(k.startswith("searched") and "hand-picked" in k for k in rec["measured"])


def test_lower_bound_needs_p1_alg1_hinge():
    """[lower_bound] is an instance of P1 Alg. 1 with the hinge: another algorithm is refused at parse time."""
    from pathlib import Path

    from stabsim.study import StudyError, parse_study

    text = Path(__file__).parents[1].joinpath("studies", "p4_lemma19a_tightness.toml").read_text()
    with pytest.raises(StudyError, match="p1_alg1"):
        parse_study(text.replace("[bounds]", '[lower_bound]\ninstance = "bfgt"\n\n[bounds]'), profile="quick")
