"""The committed full-profile report (reports/verdicts.csv) keeps the promises of the verdict rules.

These read the committed table, not a fresh run: they fail when a report is committed that a rule
change would have decided differently, or that was written by code breaking a rule.
"""

import csv
import math
from pathlib import Path

import pytest

from stabsim.analyses.base import CHECK_KINDS, STAND_IN
from stabsim.reporting.report import VERDICT_COLUMNS
from stabsim.judging.rules import SQUARED_QUANTITIES, VACUOUS_TIGHTNESS

REPORTS = Path(__file__).resolve().parents[1] / "reports"
TABLE = REPORTS / "verdicts.csv"

pytestmark = pytest.mark.skipif(not TABLE.is_file(), reason="no committed reports/verdicts.csv")


@pytest.fixture(scope="module")
def rows():
    with TABLE.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _f(x):
    return float(x) if x not in ("", None) else math.nan


def test_columns_and_kinds(rows):
    header = tuple(rows[0].keys()) if rows else ()
    assert rows and header == tuple(VERDICT_COLUMNS)
    kinds = {r["check_kind"] for r in rows}
    assert kinds <= set(CHECK_KINDS) | {"privacy ledger"}
    assert {r["data"] for r in rows} <= {"synthetic", "real", "stand-in"}


def test_violated_bounds_are_significant_and_straddles_inconclusive(rows):
    for r in rows:
        if r["check_kind"] != "bound":
            continue
        if r["verdict"] == "violated":
            assert int(r["n_significant"]) >= 1 and r["multiplicity"].startswith("Holm"), r
        if r["verdict"] == "holds":
            assert _f(r["worst_margin"]) > 0, r
        if r["verdict"] == "inconclusive" and r["qualifier"] == "":
            assert _f(r["worst_margin"]) <= 0 and int(r["n_significant"]) == 0, r


def test_rate_classes_follow_the_slope_ci_and_the_band(rows):
    """The band runs from the nominal exponent to the bound's own slope over the range (shape_slope)."""
    for r in rows:
        if r["check_kind"] != "rate" or r["tag"] not in ("RATE", "EXPLICIT", "EXPLICIT-DD") or r["qualifier"]:
            continue
        lo, hi, a = _f(r["slope_lower"]), _f(r["slope_upper"]), _f(r["exponent"])
        s = _f(r["shape_slope"])
        b_lo, b_hi = (a, a) if math.isnan(s) else (min(a, s), max(a, s))
        if r["verdict"] == "matches":
            assert lo <= b_hi and b_lo <= hi or r["key"].startswith("P3"), r   # P3 rows may carry a stated tolerance
            assert r["can_fail"] == "True" or "by construction" in r["power_note"], r
        elif r["verdict"] == "faster than claimed":   # in 1/eps over large eps the claim is about x -> 0
            assert hi < b_lo or ("1/eps" in r["case"] and lo > b_hi), r
        elif r["verdict"] == "inconsistent":
            assert lo > b_hi or hi < b_lo, r


def test_every_finding_names_the_errata_entry_that_argues_it(rows):
    """A headline row (a finding about a paper) carries a docs/errata.md id; a row that could not fail,
    a literal reading or a stand-in row is never one."""
    for r in rows:
        if r["headline"] == "True":
            assert r["errata_ids"], r
            assert r["can_fail"] != "False" and r["data"] != "stand-in" and r["qualifier"] != "literal reading", r


def test_vacuous_only_where_a_bound_holds(rows):
    for r in rows:
        if r["vacuous"] == "True":
            assert r["verdict"] == "holds", r


def test_no_positive_exponent_where_the_theorem_decays(rows):
    """P0 Thm 2/3 carry ln^2 n: the compared exponent is the nominal -1/2 and -1/3, never the
    local slope of the expression (+0.11 / +0.16 over the swept n)."""
    from stabsim.theory.registry import get

    for r in rows:
        if r["check_kind"] != "rate" or r["exponent"] == "":
            continue
        try:
            b = get(r["key"])
        except KeyError:
            continue
        if b.rate and all(not callable(v) and v < 0 for v in b.rate.values()):
            assert _f(r["exponent"]) < 0, r
    p0 = {r["key"]: _f(r["exponent"]) for r in rows if r["key"] in ("P0.Thm2.rate", "P0.Thm3.rate")}
    assert p0 == {"P0.Thm2.rate": -0.5, "P0.Thm3.rate": pytest.approx(-1 / 3)}


def test_privacy_rows_say_private_only_when_the_exact_eps_is_within_the_target(rows):
    ledger = [r for r in rows if r["check_kind"] == "privacy ledger"]
    assert ledger
    for r in ledger:
        assert (r["verdict"] == "private") == (_f(r["tightness_max"]) <= 1 + 1e-9), r
    # the settings found to buy more than claimed (exact eps), each marked not private
    def bought(study, pred):
        return [r for r in ledger if r["study"] == study and pred(r["case"])]
    assert all(r["verdict"] == "not certified by the paper's argument" for r in bought("p1_thm10_dp", lambda c: "eps=100" in c))
    assert all(r["verdict"] == "not certified by the paper's argument" for r in bought("p0_thm5_private", lambda c: "eps=1000" in c))
    assert all(r["verdict"] == "not certified by the paper's argument"
               for r in bought("p3_offline_rates", lambda c: "eps=16" in c))
    # P3's approximate rho at eps = 0.5 is private under exact accounting
    p3 = [r for r in rows if r["study"] == "p3_calibration" and r["key"].endswith(".approx") and "eps=0.5" in r["case"]]
    assert p3 and all(r["verdict"] == "holds" for r in p3)


def test_vacuous_flag_and_stand_ins(rows):
    for r in rows:
        if r["check_kind"] == "bound" and r["vacuous"] == "True" and "trivial bound" not in r["power_note"]:
            t = _f(r["tightness_max"])
            t = math.sqrt(max(t, 0.0)) if r["quantity"] in SQUARED_QUANTITIES or r["quantity"].endswith("_sq") else t
            assert t < VACUOUS_TIGHTNESS, r
        if r["verdict"] == STAND_IN:
            assert r["data"] == "stand-in", r


def test_errata_ids_resolve(rows):
    from stabsim.judging.errata import errata_ids

    known = errata_ids()
    used = {i for r in rows for i in r["errata_ids"].split()}
    assert used and used <= known, sorted(used - known)



def test_every_committed_figure_is_one_a_summary_shows_and_exists():
    """reports/figures holds exactly the figures the committed summaries, index and verdicts pages link to: no figure of
    an earlier run that the studies no longer draw (a reader would take it for this run's)."""
    import re

    linked = set()
    for page in ("index.md", "verdicts.md"):
        if (REPORTS / page).is_file():
            linked |= set(re.findall(r"\]\((figures/[^)]+\.png)\)", (REPORTS / page).read_text(encoding="utf-8")))
    for md in (REPORTS / "summaries").glob("*.md"):
        linked |= set(re.findall(r"\]\(\.\./(figures/[^)]+\.png)\)", md.read_text(encoding="utf-8")))
    present = {p.relative_to(REPORTS).as_posix() for p in (REPORTS / "figures").rglob("*.png")}
    assert linked, "no figure links found in reports/summaries"
    assert sorted(present - linked) == [] and sorted(linked - present) == []
