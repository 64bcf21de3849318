"""End-to-end tests of the analysis framework (stabsim.analyses, stabsim.reporting.report, CLI wiring)."""

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
    verdicts = (out / "reports" / "verdicts.md").read_text()
    table = [ln for ln in verdicts.splitlines() if ln.startswith("| p1_")]
    assert len(table) == n_verdicts and not [ln for ln in index.splitlines() if ln.startswith("| p1_")]
    assert "command:" in index and "wall time" in index and "profile: quick" in index
    assert "## Findings" in index and "0 findings (0 rows) about the papers" in index
    assert (out / "reports" / "index.html").read_text().count("<tr") >= n_verdicts


def test_wrong_bound_is_violated(out, monkeypatch):
    import stabsim.theory as theory
    from stabsim.reporting.analyse import analyse

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


def test_analyse_closes_the_figures_it_opened(tmp_path):
    """pyplot keeps every figure until it is closed; a suite must not end holding all of them (#17).
    p4_thm2_thm5_sigma2's check draws with pyplot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from stabsim.reporting.analyse import analyse
    from stabsim.cli import main

    assert main(["run", "p4_thm2_thm5_sigma2", "--quick", "--out", str(tmp_path), "--no-progress",
                 "--no-analyse"]) == 0
    mine = plt.figure()                      # a figure of the caller's: left alone
    before = set(plt.get_fignums())
    rec = analyse(tmp_path / "p4_thm2_thm5_sigma2")
    assert rec["rows"] and list((tmp_path / "p4_thm2_thm5_sigma2" / "figures").glob("*.png"))
    assert set(plt.get_fignums()) == before and plt.fignum_exists(mine.number)
    plt.close(mine)


def test_figures_drawn_on_demand_are_drawn_saved_and_closed_one_at_a_time(tmp_path, monkeypatch):
    """``CheckResult.figure(name, function)``: analyse draws each such figure when it saves it and
    closes it before the next (a check of 24 figures held them all at once); a function that
    raises is an error row naming the figure, and the other figures are still saved."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import stabsim.reporting.analyse as report_study
    from stabsim.analyses.base import CheckResult
    from stabsim.registry import Check
    from stabsim.reporting.analyse import analyse
    from stabsim.cli import main

    sid = "p4_thm2_thm5_sigma2"
    assert main(["run", sid, "--quick", "--out", str(tmp_path), "--no-progress", "--no-analyse"]) == 0
    open_at_draw = []

    def draw(k):
        open_at_draw.append(len(plt.get_fignums()))
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, k])
        return fig

    def broken():
        raise ValueError("no data to draw")

    def check(spec, ds):
        from stabsim.judging.rules import Verdict

        res = CheckResult()
        for k in range(3):
            res.figure(f"lazy_{k}", lambda k=k: draw(k))
        res.add(Verdict(key="P4.Thm2.sigma2", quantity="x", tag="EXPLICIT", verdict="holds", n_replicates=5,
                        level=0.95),
                figure=res.figure("broken", broken))
        res.figure("broken_too", broken)
        return res

    monkeypatch.setattr(report_study, "get_check", lambda name: Check(name=name, func=check))
    before = len(plt.get_fignums())
    rec = analyse(tmp_path / sid)
    assert open_at_draw == [before] * 3          # each drawn with the one before it closed
    assert len(plt.get_fignums()) == before
    figs = sorted(p.name for p in (tmp_path / sid / "figures").glob("*.png"))
    assert figs == ["lazy_0.png", "lazy_1.png", "lazy_2.png"]
    assert rec["rows"][-1]["verdict"] == "error" and "broken.png" in rec["rows"][-1]["explanation"]
    assert "broken_too.png" in rec["rows"][-1]["explanation"]   # every failure named
    assert "no data to draw" in rec["rows"][-1]["explanation"]
    assert rec["rows"][0]["verdict"] == "holds" and not rec["rows"][0]["figure"]   # no link to a missing PNG


def test_unknown_check_is_an_error_row(out):
    from stabsim.registry import get_check

    with pytest.raises(KeyError, match="no analysis check"):
        get_check("p1_nope")


def test_report_writes_the_verdict_table(out):
    import csv

    from stabsim.reporting.report import VERDICT_COLUMNS

    assert main(["report", str(out / "out"), "--reports", str(out / "reports")]) == 0
    with (out / "reports" / "verdicts.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0].keys()) == VERDICT_COLUMNS
    n_verdicts = sum(len(json.loads((out / "out" / s / "analysis.json").read_text())["rows"]) for s in STUDIES)
    assert len(rows) == n_verdicts
    js = json.loads((out / "reports" / "verdicts.json").read_text())
    assert [(r["study"], r["key"], r["verdict"]) for r in js] == [(r["study"], r["key"], r["verdict"]) for r in rows]
    assert {r["paper"] for r in rows} == {"P1"} and all(r["reference"].startswith("Theorem") for r in rows)
    assert {r["check_kind"] for r in rows} <= {"bound", "rate"} and all(r["data"] == "synthetic" for r in rows)
    index = (out / "reports" / "index.md").read_text()
    assert "## Verdicts by kind of check" in index and "**theorem bounds**" in index
    assert "## Theorem bounds: best tightness reached" in index


def test_report_removes_figures_its_studies_no_longer_draw(out):
    """A figure an earlier run left in the report's folder (e.g. under a name the study has since
    changed) is removed when the report is written again; what the study draws is there, and files
    other than figures are left alone."""
    reports = out / "reports_stale"
    assert main(["report", str(out / "out"), "--reports", str(reports)]) == 0
    fig_dir = reports / "figures" / "p1_thm6a_opt"
    drawn = sorted(p.name for p in (out / "out" / "p1_thm6a_opt" / "figures").glob("*.png"))
    assert drawn and sorted(p.name for p in fig_dir.glob("*.png")) == drawn
    (fig_dir / "thm6a_old_name.png").write_bytes(b"stale")
    (fig_dir / "notes.txt").write_text("kept")
    assert main(["report", str(out / "out"), "--reports", str(reports)]) == 0
    assert sorted(p.name for p in fig_dir.glob("*.png")) == drawn
    assert (fig_dir / "notes.txt").read_text() == "kept"


def _row(verdict, kind="bound", qualifier="", **kw):
    return dict({"verdict": verdict, "check_kind": kind, "qualifier": qualifier, "key": "P1.Thm4.uas",
                 "paper": "P1", "reference": "Theorem 4", "study": "s", "case": "", "tightness_max": 0.5,
                 "vacuous": False}, **kw)


def test_headline_counts_kinds_apart_and_leaves_stand_ins_out():
    from stabsim.analyses.base import STAND_IN
    from stabsim.reporting.report import count_by_kind, theorem_summary

    rows = [_row("holds"), _row("violated"), _row("matches", "rate"), _row("inconclusive", "rate", "curvature"),
            _row(STAND_IN, "reproduction"), _row("holds", "privacy"), _row("holds", "identity")]
    c = count_by_kind(rows)
    assert c["bound"] == {"holds": 1, "violated": 1}
    assert c["rate"] == {"matches": 1, "inconclusive (curvature)": 1}
    assert c["stand-in"] == {STAND_IN: 1} and "reproduction" not in c
    assert c["privacy"] == {"holds": 1} and c["identity"] == {"holds": 1}
    s = theorem_summary([_row("holds", tightness_max=0.2, case="a"), _row("holds", tightness_max=0.7, case="b"),
                         _row("holds", tightness_max=0.001, vacuous=True)])
    assert len(s) == 1 and s[0]["best_tightness"] == "0.7" and s[0]["where"] == "s (b)" and s[0]["vacuous"] == 1


def test_stand_in_rows_are_not_judged():
    from stabsim.analyses import CheckResult
    from stabsim.analyses.base import STAND_IN
    from stabsim.reporting.analyse import _row as base_row
    from stabsim.judging.rules import Verdict

    res = CheckResult()
    v = Verdict(key="P1.Table1", quantity="test AUC", tag="REPRO", verdict="inconsistent", n_replicates=5,
                level=0.95)
    res.add(v, stand_in_for="ijcnn1")
    res.add(v, data="real")
    r0, r1 = base_row(res, 0), base_row(res, 1)
    assert r0["verdict"] == STAND_IN and r0["data"] == "stand-in" and "rule verdict: inconsistent" in r0["notes"]
    assert r1["verdict"] == "inconsistent" and r1["data"] == "real"
    with pytest.raises(ValueError, match="data="):
        res.add(v, data="fake")
