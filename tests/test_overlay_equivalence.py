"""Issue #16: the studies converted to the generic overlay check give the verdicts of the
per-theorem checks they replaced (kept as readable references in tests/reference_checks.py).

Each converted check is exercised on one of its studies (quick profile); the overlay's rows and
the reference's rows must agree on key, case, verdict, worst margin, tightness and the vacuous
flag: the same measure, CI and bound, computed once by each route.
"""

from __future__ import annotations

import json

import pytest

import reference_checks as ref
from stabsim.analyses.base import _row, load_results
from stabsim.cli import main

#: study -> the reference check it used before the conversion
CONVERTED = {
    "p1_thm4_gen": ref.p1_gen,
    "p1_thm6a_opt": ref.p1_opt,
    "p1_thm7a_opt_hp": ref.p1_opt_hp,
    "p0_lemA9": ref.p0_regret,
    "p0_thmA7_hoeffding": ref.p0_hoeffding,
    "p4_lemma14a": ref.p4_onavg,
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

    overlay = [p.stem for p in sorted(default_studies_dir().glob("*.toml"))
               if load_study(p).check and '"overlay"' in p.read_text()]
    assert len(overlay) >= 10, overlay
    assert set(CONVERTED) <= set(overlay)
