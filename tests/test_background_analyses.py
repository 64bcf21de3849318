"""stabsim.reporting.background: a run of many studies analyses each in a worker process while the
next computes; what the analyses write is what they write in place, results come back in the
studies' order, an analysis error reaches the caller, an interrupt stops the worker."""

from __future__ import annotations

import json
import multiprocessing

import pytest

from stabsim.reporting.background import INLINE_ENV, BackgroundAnalyses
from stabsim.cli import WARM_STUDIES, main

# five cheap built-in studies (quick profile): enough for `stabsim run` to analyse in the background
STUDIES = ["p1_thm1_rate", "p1_thm2_rate", "p1_thm4_gen", "p0_thm1", "p4_lemma14a"]


def _run(capsys, out, monkeypatch, inline):
    monkeypatch.setenv("STABSIM_NO_WARMUP", "1")
    monkeypatch.setenv("STABSIM_ONE_LANE", "1")   # every study computed here, in order (tests/test_study_lane.py)
    if inline:
        monkeypatch.setenv(INLINE_ENV, "1")
    else:
        monkeypatch.delenv(INLINE_ENV, raising=False)
    capsys.readouterr()
    code = main(["run", *STUDIES, "--quick", "--out", str(out), "--no-progress"])
    return code, capsys.readouterr().out


def test_background_analyses_write_what_inline_ones_write(tmp_path, capsys, monkeypatch):
    assert len(STUDIES) >= WARM_STUDIES
    code_b, out_b = _run(capsys, tmp_path / "bg", monkeypatch, inline=False)
    code_i, out_i = _run(capsys, tmp_path / "inline", monkeypatch, inline=True)
    assert code_b == 0 and code_i == 0

    def verdict_lines(out, root):
        return [ln.replace(str(root), "OUT") for ln in out.splitlines() if ln.startswith("  -> ")]

    lines = verdict_lines(out_b, tmp_path / "bg")
    assert lines == verdict_lines(out_i, tmp_path / "inline")           # same verdicts, same order
    assert [ln.split("/")[1] for ln in lines] == STUDIES
    for sid in STUDIES:
        a = json.loads((tmp_path / "bg" / sid / "analysis.json").read_text())
        b = json.loads((tmp_path / "inline" / sid / "analysis.json").read_text())
        assert a["rows"] == b["rows"]
        figs = sorted(p.name for p in (tmp_path / "inline" / sid / "figures").glob("*.png"))
        for name in figs:   # the figures byte for byte
            assert (tmp_path / "bg" / sid / "figures" / name).read_bytes() == \
                (tmp_path / "inline" / sid / "figures" / name).read_bytes(), (sid, name)


    # All five handed over at once and then waited for: the waiting ones go to a second worker
    # (FINISH_MIN = 3), and the results are still those of the analyses in place, in order.
    import stabsim.reporting.background as B

    before = {sid: json.loads((tmp_path / "inline" / sid / "analysis.json").read_text())["rows"]
              for sid in STUDIES}
    with BackgroundAnalyses() as bg:
        for sid in STUDIES:
            bg.submit(tmp_path / "inline" / sid, out_dir=tmp_path / "inline")
        got = list(bg.ready(wait=True))
        assert len(bg._pools) == B.FINISH_WORKERS == 2
    assert [d.name for d, _ in got] == STUDIES
    for sid in STUDIES:
        assert json.loads((tmp_path / "inline" / sid / "analysis.json").read_text())["rows"] == before[sid]


def test_an_analysis_error_reaches_the_caller(tmp_path):
    with pytest.raises(Exception) as err:
        with BackgroundAnalyses() as bg:
            bg.submit(tmp_path / "no_such_study")
            list(bg.ready(wait=True))
    assert "no_such_study" in str(err.value)
    assert not [p for p in multiprocessing.active_children() if p.is_alive()]   # the worker stopped


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv(INLINE_ENV, "1")
    assert BackgroundAnalyses.start() is None


def test_the_report_redoes_an_analysis_left_older_than_its_data(tmp_path, capsys, monkeypatch):
    """What an interrupted background analysis leaves (no analysis.json, or the previous one, older
    than data.nc) is analysed anew by the report, not read as it is."""
    import os

    from stabsim.reporting.report import collect

    monkeypatch.setenv("STABSIM_NO_WARMUP", "1")
    assert main(["run", "p0_thm1", "--quick", "--out", str(tmp_path), "--no-progress"]) == 0
    study = tmp_path / "p0_thm1"
    a, data = study / "analysis.json", study / "data.nc"
    rows = json.loads(a.read_text())["rows"]
    a.write_text(json.dumps({"rows": [], "stale": True}))            # an earlier run's record ...
    old = data.stat().st_mtime - 60
    os.utime(a, (old, old))                                          # ... older than data.nc
    (recs,) = collect(tmp_path)
    assert "stale" not in recs and recs["rows"] == rows
    a.unlink()                                                       # none at all
    (recs,) = collect(tmp_path)
    assert recs["rows"] == rows and a.is_file()
