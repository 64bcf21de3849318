"""End-to-end tests of the analysis framework (stabsim.checks, stabsim.report, CLI wiring)."""

import dataclasses
import json
import shutil

import pytest

from stabsim.cli import main

STUDIES = ["p1_thm4_uas", "p1_thm5_uas", "p1_thm6a_opt"]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    d = tmp_path_factory.mktemp("checks")
    rc = main(["run", *STUDIES, "--quick", "--out", str(d / "out"), "--no-progress"])
    assert rc == 0
    return d


@pytest.mark.parametrize("study", STUDIES)
def test_quick_study_holds(out, study):
    sdir = out / "out" / study
    text = (sdir / "summary.md").read_text()
    rec = json.loads((sdir / "analysis.json").read_text())
    assert rec["rows"], text
    assert all(r["verdict"] == "holds" for r in rec["rows"]), text
    assert "| holds |" in text
    assert "stabsim run " + study + " --quick" in text
    assert all((sdir / r["figure"]).is_file() for r in rec["rows"])


def test_report_one_row_per_verdict(out):
    rc = main(["report", str(out / "out"), "--reports", str(out / "reports")])
    assert rc == 0
    index = (out / "reports" / "index.md").read_text()
    n_verdicts = sum(len(json.loads((out / "out" / s / "analysis.json").read_text())["rows"]) for s in STUDIES)
    table = [ln for ln in index.splitlines() if ln.startswith("| p1_")]
    assert len(table) == n_verdicts
    assert "command:" in index and "wall time" in index and "profile: quick" in index


def test_wrong_bound_is_violated(out, monkeypatch):
    import stabsim.theory as theory
    from stabsim.checks import analyse

    sdir = out / "copy" / "p1_thm4_uas"
    shutil.copytree(out / "out" / "p1_thm4_uas", sdir)
    real_get = theory.get

    def fake_get(key):
        b = real_get(key)
        return dataclasses.replace(b, func=lambda **kw: b.func(**kw) / 1000)

    monkeypatch.setattr(theory, "get", fake_get)
    rec = analyse(sdir)
    assert [r["verdict"] for r in rec["rows"]] == ["violated"]
    assert rec["rows"][0]["explanation"]
    assert "violated" in (sdir / "summary.md").read_text()


def test_unknown_check_is_an_error_row(out):
    from stabsim.checks import get_check

    with pytest.raises(KeyError, match="no analysis check"):
        get_check("p1_nope")
