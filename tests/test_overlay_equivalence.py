"""The studies converted to the generic overlay check give the verdicts of the
per-theorem checks they replaced (kept as readable references in tests/reference_checks.py).

Each converted check is exercised on one of its studies (quick profile); the overlay's rows and
the reference's rows must agree on key, case, verdict, worst margin, tightness and the vacuous
flag: the same measure, CI and bound, computed once by each route.
"""

from __future__ import annotations

import json

import pytest

import reference_checks as ref
from stabsim.reporting.analyse import _row, load_results
from stabsim.cli import main

#: study -> the reference check it used before the conversion
CONVERTED = {
    "p1_thm4_gen": ref.p1_gen,
    "p1_thm5_gen": ref.p1_gen,
    "p1_thm6a_opt": ref.p1_opt,
    "p1_thm7a_opt_hp": ref.p1_opt_hp,
    "p0_lemA9": ref.p0_regret,
    "p0_thmA7_hoeffding": ref.p0_hoeffding,
    "p4_lemma14a": ref.p4_onavg,
    "p4_lemma19a": ref.p4_onavg,
}
COMPARED = ("key", "label", "verdict", "worst_margin", "tightness_min", "tightness_max", "vacuous")


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    d = tmp_path_factory.mktemp("overlay_eq")
    assert main(["run", *CONVERTED, "--quick", "--out", str(d), "--no-progress"]) == 0
    return d


@pytest.mark.parametrize("study", list(CONVERTED))
def test_overlay_equals_the_reference_check(out, study):
    spec, ds, _ = load_results(out / study)
    assert spec.check and spec.id == study
    rec = json.loads((out / study / "analysis.json").read_text())
    assert rec["check"] == "overlay"
    old = CONVERTED[study](spec, ds)
    old_rows = [_row(old, i) for i in range(len(old.verdicts))]
    assert len(rec["rows"]) == len(old_rows) >= 1
    for new_row, old_row in zip(rec["rows"], old_rows):
        for k in COMPARED:
            assert new_row[k] == old_row[k], (study, k, new_row[k], old_row[k])
        assert new_row["verdict"] in ("holds", "violated", "inconclusive")
        assert (out / study / new_row["figure"]).is_file()


def test_ten_single_theorem_studies_use_the_overlay():
    from stabsim.study import default_studies_dir, load_study

    overlay = []
    for p in sorted(default_studies_dir().glob("*.toml")):
        spec = load_study(p)
        if spec.check and (spec.check.get("measure") or spec.check.get("value")):
            assert '\ncheck = "overlay"' in spec.text, p  # a [check] section is the overlay's configuration
            overlay.append(spec.id)
    assert len(overlay) >= 10, overlay
    assert set(CONVERTED) <= set(overlay)


# ---- what the overlay refuses instead of computing a wrong number ---------------------------------

@pytest.fixture(scope="module")
def opt_study(out):
    return load_results(out / "p1_thm7a_opt_hp")


def _run_overlay(spec, ds, **check):
    import dataclasses

    from stabsim.analyses.overlay import check_overlay

    return check_overlay(dataclasses.replace(spec, check={**spec.check, **check}), ds)


def test_a_per_replicate_constant_is_refused(opt_study):
    spec, ds, _ = opt_study
    with pytest.raises(ValueError, match="constants.dist_sq .* varies along .*replicate"):
        _run_overlay(spec, ds, constants={"dist_sq": "wS_dist0_sq", "B": "1 + margin_range"})


def test_a_constant_shadows_a_data_variable_in_later_formulas(opt_study):
    spec, ds, _ = opt_study
    base = _run_overlay(spec, ds)
    # dist_sq is also the name of a (fake) data variable: the constant of the same name wins
    ds2 = ds.assign(dist_sq=ds["wS_dist0_sq"] * 1000.0)
    same = _run_overlay(spec, ds2, constants={"dist_sq": "max_all(wS_dist0_sq)", "B": "1 + margin_range"})
    assert [v.worst_margin for v in same.verdicts] == [v.worst_margin for v in base.verdicts]


def test_an_infinite_bound_is_an_error_not_holds(opt_study):
    spec, ds, _ = opt_study
    with pytest.raises(ValueError, match="not finite"):
        _run_overlay(spec, ds, constants={"dist_sq": "max_all(wS_dist0_sq)", "B": "1 + margin_range / 0"})


def test_the_quantile_level_follows_delta_and_a_mean_is_refused_for_a_quantile_bound(opt_study):
    spec, ds, _ = opt_study
    assert spec.check.get("quantile") is None and spec.bounds["delta"] == 0.1
    res = _run_overlay(spec, ds, quantile=0.5)
    assert any("quantile = 0.5" in n for v in res.verdicts for n in v.notes)
    with pytest.raises(ValueError, match="bounds a quantile"):
        _run_overlay(spec, ds, statistic="mean")
