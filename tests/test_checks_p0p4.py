"""End-to-end P0/P4 checks: quick profiles through run_study + analyse give the verdicts the
theory predicts, and a deliberately wrong bound (the registered one / 1000) is caught."""

from __future__ import annotations

from pathlib import Path

import pytest
from check_helpers import shrink_bounds, verdicts

from stabsim.reporting.analyse import analyse
from stabsim.study import load_study, run_study

STUDIES = Path(__file__).resolve().parent.parent / "studies"


def _run(study, tmp_path):
    spec = load_study(STUDIES / f"{study}.toml", profile="quick")
    res = run_study(spec, tmp_path, progress=False)
    return res.data_path.parent


@pytest.fixture(scope="module")
def p0_dir(tmp_path_factory):
    return _run("p0_thm1", tmp_path_factory.mktemp("p0"))


@pytest.fixture(scope="module")
def p4_dir(tmp_path_factory):
    return _run("p4_lemma19a", tmp_path_factory.mktemp("p4"))


def test_p0_thm1_quick_holds(p0_dir):
    rec = analyse(p0_dir)
    assert rec["error"] is None, rec["error"]
    v = verdicts(rec)
    keys = {k for k, _ in v}
    assert {"P0.Thm1.iterate_sq.printed", "P0.Thm1.iterate_sq.corrected", "P0.Eq9.avg_sq.printed",
            "P0.Eq9.avg_sq.corrected"} <= keys
    assert all(x == "holds" for x in v.values()), v
    assert (p0_dir / "summary.md").is_file() and any((p0_dir / "figures").glob("*.png"))


def test_p0_thm1_wrong_bound_is_violated(p0_dir, monkeypatch):
    shrink_bounds(monkeypatch, {"P0.Thm1.iterate_sq.corrected"}, factor=1e-5)  # the true bound is ~1e3 x loose
    v = verdicts(analyse(p0_dir))
    assert v[("P0.Thm1.iterate_sq.corrected", "iterate w_{t+1}")] == "violated"
    assert v[("P0.Thm1.iterate_sq.printed", "iterate w_{t+1}")] == "holds"


def test_p4_lemma19a_quick_holds(p4_dir):
    rec = analyse(p4_dir)
    assert rec["error"] is None, rec["error"]
    v = verdicts(rec)
    assert v == {("P4.Lemma19a.onavg", "w_priv"): "holds", ("P4.Lemma19a.onavg", "iterate"): "holds"}, v


def test_p4_lemma19a_wrong_bound_is_violated(p4_dir, monkeypatch):
    shrink_bounds(monkeypatch, {"P4.Lemma19a.onavg"})
    v = verdicts(analyse(p4_dir))
    assert v[("P4.Lemma19a.onavg", "w_priv")] == "violated"


@pytest.fixture(scope="module")
def p0_gamma_dir(tmp_path_factory):
    return _run("p0_thm1_gamma", tmp_path_factory.mktemp("p0g"))


def test_p0_thm1_gamma_quick_rows_per_level(p0_gamma_dir):
    """P0 Thm 1 / Eq. (9) at gamma = 0.01..0.3: one row per key and gamma, each holds; the measured
    (1-gamma)-quantile grows as gamma falls (a quantile is monotone in its level)."""
    from stabsim.analyses.p0_stability import GAMMA_LADDER

    rec = analyse(p0_gamma_dir)
    v = verdicts(rec)
    assert set(v) == {(k, f"{w}, gamma={g:g}") for g in GAMMA_LADDER
                      for k, w in (("P0.Thm1.iterate.corrected", "iterate"), ("P0.Eq9.avg.proof", "average"))}
    assert all(x == "holds" for x in v.values()), v
    q = [rec["measured"][f"max quantile ||w_{{t+1}}-w'_{{t+1}}|| (gamma={g:g})"] for g in sorted(GAMMA_LADDER)]
    assert q == sorted(q, reverse=True) and q[0] > q[-1]


def test_p0_thm1_gamma_wrong_bound_is_violated(p0_gamma_dir, monkeypatch):
    shrink_bounds(monkeypatch, {"P0.Eq9.avg.proof"}, factor=1e-3)
    v = verdicts(analyse(p0_gamma_dir))
    assert all(x == "violated" for (k, _), x in v.items() if k == "P0.Eq9.avg.proof")
    assert all(x == "holds" for (k, _), x in v.items() if k == "P0.Thm1.iterate.corrected")
