"""stabsim.engine.neighbour_search.worst_neighbour: brute-force agreement, fresh-replicate comparison, determinism."""

import numpy as np
import pytest

from stabsim.engine.neighbour_search import domain_map, worst_neighbour
from stabsim.engine.twin_runs import run_twin

X = np.array([[0.9], [-0.4], [0.2], [-0.8], [0.6]])
Y = np.array([1.0, -1.0, 1.0, -1.0, -1.0])
KW = dict(algorithm="p1_alg1", loss="auc_hinge", constraint="l2:1", eta=0.5, T=8)
SEED, R = 3, 32


@pytest.fixture(scope="module")
def found():
    return worst_neighbour(X, Y, domain=("box", -1, 1), replicates=R, fresh_replicates=256, seed=SEED,
                           max_evals=600, **KW)


def test_search_matches_grid_brute_force(found):
    """A 201-point grid over x' x all k x both labels, on the SAME replicate ids (CRN)."""
    ids = np.arange(R)
    grid = np.linspace(-1, 1, 201)
    best = max(float(run_twin(X, Y, replicates=ids, seed=SEED, neighbour=(k, [g], yy), checkpoints=[8],
                              progress=False, **KW)["dist_output"].mean())
               for k in range(len(X)) for yy in (-1.0, 1.0) for g in grid)
    assert found.in_sample >= 0.98 * best
    assert found.in_sample <= best * 1.02 + 1e-12  # the grid is fine: nothing far above it
    assert found.n_evals <= 600


def test_search_beats_hand_picked_on_fresh_replicates(found):
    assert set(found.baselines) == {"flip", "farthest"}
    for name, b in found.baselines.items():
        # the searched neighbour's fresh CI upper end is above the hand-picked estimate
        assert float(found.fresh["upper"]) >= float(b["estimate"]), name
    assert found.fresh_ids[0] >= 10 ** 6 and found.fresh_ids.size == 256
    assert float(found.fresh["lower"]) <= found.value <= float(found.fresh["upper"])


def test_search_is_deterministic():
    a = worst_neighbour(X, Y, domain=("ball", 1.0), k=[0, 3], replicates=16, fresh_replicates=32, seed=1,
                        max_evals=120, **KW)
    b = worst_neighbour(X, Y, domain=("ball", 1.0), k=[0, 3], replicates=16, fresh_replicates=32, seed=1,
                        max_evals=120, **KW)
    assert (a.k, a.y, a.in_sample, a.value) == (b.k, b.y, b.in_sample, b.value)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.n_evals <= 120


def test_nelder_mead_and_quantile_measure():
    r = worst_neighbour(X, Y, domain="support", k=[0], replicates=16, fresh_replicates=64, seed=0,
                        optimizer="nelder-mead", restarts=2, max_evals=60, measure=("quantile", 0.5), **KW)
    assert r.n_evals <= 60 and np.isfinite(r.value) and r.value >= 0


def test_ball_map_stays_in_ball():
    lo, hi, to_x = domain_map(("ball", 2.0), np.zeros((3, 2)))
    rs = np.random.default_rng(0)
    for v in rs.uniform(-1, 1, (200, 2)):
        assert np.linalg.norm(to_x(v)) <= 2.0 + 1e-12
    assert np.isclose(np.linalg.norm(to_x([1.0, 0.3])), 2.0)


def test_bad_arguments():
    with pytest.raises(ValueError):
        worst_neighbour(X, Y, measure="median", **KW)
    with pytest.raises(ValueError):
        worst_neighbour(X, Y, k=[7], **KW)


@pytest.mark.parametrize("study,key", [("p1_thm4_tightness", "P1.Thm4.uas"), ("p1_thm5_tightness", "P1.Thm5.uas")])
def test_tightness_study_kind_and_check(tmp_path, study, key):
    """The p1_tightness kind + check end to end on a tiny profile (searched/flip/farthest on fresh ids),
    for the non-smooth (Thm 4) and the smooth (Thm 5) study."""
    from pathlib import Path

    from stabsim.reporting.analyse import analyse
    from stabsim.study import parse_study, run_study

    text = Path(__file__).parents[1].joinpath("studies", f"{study}.toml").read_text()
    spec = parse_study(text.replace("[profiles.quick]", "[profiles.tiny]\nstudy.replicates = 8\nstudy.chunk = 4\n"
                                    "algorithm.T = 30\nalgorithm.checkpoints = 5\nsearch.replicates = 4\n"
                                    "search.max_evals = 15\nsearch.screen = 1\n\n[profiles.quick]"),
                       profile="tiny")
    run_study(spec, tmp_path, progress=False)
    rec = analyse(tmp_path / spec.id)
    assert not rec.get("error"), rec.get("error")
    rows = rec["rows"]
    assert [r["key"] for r in rows][:1] == [key] and rows[0]["verdict"] != "error"
    # the verdict row carries best lower estimate / bound, at most the estimate's tightness
    assert rows[0]["lower_tightness_max"] <= rows[0]["tightness_max"] + 1e-12
    # the on-average neighbour (k random, i.i.d. replacement) runs beside the others on the same ids
    import xarray as xr

    ds = xr.load_dataset(tmp_path / spec.id / "data.nc", engine="h5netcdf")
    assert list(ds["neighbour"].values) == ["searched", "flip", "farthest", "fresh"]
    on_avg = [k for k in rec["measured"] if k.startswith("on-average stability")]
    assert len(on_avg) == 1 and rec["measured"][on_avg[0]] == pytest.approx(
        float((ds["dist_output"].sel(neighbour="fresh").isel(t=-1) ** 2).mean()))
