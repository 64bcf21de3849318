"""The ``p1_tightness`` check across cells: with [sweep] eta and n, the searched
worst case at T against eta and against n, with its exponent vs the bound's (rows "across eta" /
"across n", figures thm4_tightness_vs_*), on a tiny profile of studies/p1_thm4_tightness_sweep.toml."""

from pathlib import Path

import numpy as np
import pytest

ETAS = [0.02, 0.04, 0.08]
NS = [8, 12]
TINY = (f"[profiles.tiny]\nstudy.replicates = 8\nstudy.chunk = 8\nalgorithm.T = 30\nalgorithm.checkpoints = 4\n"
        f"search.replicates = 4\nsearch.max_evals = 12\nsearch.screen = 1\n\n[profiles.tiny.sweep]\n"
        f"eta = {ETAS}\nn = {NS}\n\n[profiles.quick]")


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    import xarray as xr

    from stabsim.reporting.analyse import analyse
    from stabsim.study import parse_study, run_study

    text = Path(__file__).parents[1].joinpath("studies", "p1_thm4_tightness_sweep.toml").read_text()
    spec = parse_study(text.replace("[profiles.quick]", TINY), profile="tiny")
    out = tmp_path_factory.mktemp("sweep")
    run_study(spec, out, progress=False)
    rec = analyse(out / spec.id)
    ds = xr.load_dataset(out / spec.id / "data.nc", engine="h5netcdf")
    return spec, rec, ds, out / spec.id


def test_cross_cell_rows_and_figures(swept):
    spec, rec, ds, where = swept
    assert not rec.get("error"), rec.get("error")
    rows = rec["rows"]
    across = {v: [r for r in rows if f"across {v} at T=" in r["label"]]
              for v in ("eta", "n")}
    # one row per slice of the other axis, a RATE verdict with a slope CI, and its figure on disk
    assert len(across["eta"]) == len(NS) and len(across["n"]) == len(ETAS)
    for r in across["eta"] + across["n"]:
        assert r["tag"] == "RATE" and r["key"] == "P1.Thm4.uas"
        assert r["verdict"] in ("matches", "faster than claimed", "inconsistent", "inconclusive")
        assert r["slope_lower"] <= r["slope"] <= r["slope_upper"]
        assert (where / r["figure"]).is_file() and "tightness_vs_" in r["figure"]
    # the per-cell rows are still there: a bound row per cell
    assert sum(1 for r in rows if r["tag"] == "EXPLICIT") == len(ETAS) * len(NS)
    # the slope of the row is that of the replicate mean at T of the searched neighbour, read back from data.nc
    m = rec["measured"]
    n0 = NS[0]
    y = ds["dist_output"].sel(neighbour="searched", n=n0).isel(t=-1).mean("replicate").sel(eta=ETAS).values
    row = next(r for r in across["eta"] if f"n={n0}," in r["label"])
    assert row["slope"] == pytest.approx(np.polyfit(np.log(ETAS), np.log(y), 1)[0], rel=1e-9)
    T = float(ds["t"].values[-1])
    per_cell = [m[f"searched at T={T:g} (eta={e}, n={n0})"] for e in ETAS]
    assert m[f"searched worst case at T={T:g} by eta (n={n0})"] == pytest.approx(per_cell, rel=1e-12)
    # the search result survives the sweep (per-cell variables, not only attrs that a sweep drops)
    assert all(np.isfinite(m[f"search in-sample at T (eta={e}, n={n})"]) for e in ETAS for n in NS)


def test_bound_exponents_from_the_theorem(swept):
    """The bound's exponent in eta is 1 and in n its own log-log slope, both recomputed here from the
    theory registry's formula (independent of the check's code path)."""
    from stabsim.theory import get

    spec, rec, ds, _ = swept
    m = rec["measured"]
    T = float(ds["t"].values[-1])
    thm4 = get("P1.Thm4.uas")
    b_eta = np.array([thm4(t=T, n=NS[0], eta=e, G=1.0) for e in ETAS], float)
    assert np.polyfit(np.log(ETAS), np.log(b_eta), 1)[0] == pytest.approx(1.0, abs=1e-12)
    for n in NS:
        assert m[f"bound: exponent in eta at T={T:g} (n={n})"] == 1.0
        assert m[f"bound: log-log slope in eta over the sweep at T={T:g} (n={n})"] == pytest.approx(1.0, abs=1e-9)
    b_n = np.array([thm4(t=T, n=n, eta=ETAS[0], G=1.0) for n in NS], float)
    slope_n = np.polyfit(np.log(NS), np.log(b_n), 1)[0]
    assert -1.0 < slope_n < 0.0  # only the 2t/n term depends on n
    for e in ETAS:
        assert m[f"bound: exponent in n at T={T:g} (eta={e})"] == pytest.approx(slope_n, rel=1e-9)
