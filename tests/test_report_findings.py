"""The report's first screen: which rows are findings, how they are counted (the same words in
index.md and in the CLI's closing line), rows whose states contradict each other, and the three
pages (index.md, verdicts.md, index.html) rendered from rows without running a study."""

import json
import re
from pathlib import Path

import pytest

from stabsim.reporting import report as R
from stabsim.reporting.findings import finding_groups, first_screen, is_headline, merge_cases
from stabsim.reporting.html import html_page, md_to_html
from stabsim.reporting.pages import EXPLANATION_CHARS, verdicts_page

REPORTS = Path(__file__).resolve().parents[1] / "reports"
BASE = "../docs/errata.md"


def _row(verdict, key="P1.Thm4.uas", **kw):
    row = {c: "" for c in R.VERDICT_COLUMNS}
    row.update(study="s", key=key, paper=key.split(".")[0], reference="Theorem 4", check_kind="bound",
               verdict=verdict, data="synthetic", case="", explanation="why")
    row.update(kw)
    return row


def _screen(rows):
    return first_screen(rows, link_errata=lambda t: R._link_errata(t, BASE), kind_titles=R._SHORT_TITLES,
                        kind_order=("bound", "rate"))


def test_headline_rule_counts_and_words():
    rows = [_row("violated", case="n=8", errata_ids="P1-E1"),
            _row("violated", case="n=16", errata_ids="P1-E1"),                      # same claim: same line
            _row("inconsistent", key="P1.Thm5.rate", check_kind="rate", case="eta=1"),
            _row("inconsistent", data="stand-in"),                                  # stand-in: not a finding
            _row("violated", can_fail=False),                                       # uninformative
            _row("holds", can_fail="False"),                                        # uninformative (csv text)
            _row("inconsistent", qualifier="literal reading", headline=False),      # the row says: not one
            _row("holds"), _row("error", check_kind="other")]
    assert [is_headline(r) for r in rows] == [True, True, True, False, False, False, False, False, False]
    c = R.headline_counts(rows)
    assert (c["findings"], c["rows"], c["distinct"], c["uninformative"], c["other_failed"], c["errors"]) == \
        (2, 3, 3, 2, 2, 1)
    assert c["other_reasons"] == {"on stand-in data": 1, "literal reading": 1}
    assert R.headline_text(c) == ("2 findings (3 rows) about the papers; 2 uninformative rows; "
                                  "1 studies or checks failed to run")
    one = R.headline_counts([_row("violated")])
    assert R.headline_text(one) == "1 finding (1 row) about the papers; 0 uninformative rows"


def test_a_repeat_joins_the_line_of_the_row_it_repeats():
    first = _row("inconsistent", key="P3.Thm2.regret", case="eps=1")
    rows = [first, _row("inconsistent", key="P3.Thm2.avg_regret", case="eps=1", repeat_of="s/P3.Thm2.regret/eps=1"),
            _row("inconsistent", key="P3.Thm2.avg_regret", case="eps=16")]
    groups = finding_groups(rows)
    assert [(g["key"], len(g["rows"])) for g in groups] == [("P3.Thm2.regret", 2), ("P3.Thm2.avg_regret", 1)]
    c = R.headline_counts(rows)
    assert (c["findings"], c["rows"], c["distinct"]) == (2, 3, 2)


def test_merge_cases():
    assert merge_cases(["variant=A, eps=1.0", "variant=A, eps=16.0"]) == "variant=A, eps=1.0/16.0"
    assert merge_cases(["printed", "corrected", "corrected"]) == "printed/corrected"
    assert merge_cases(["a=1, b=2", "c", "d"]) == "a=1, b=2 (+2 more)"     # unlike parts: the first, counted
    assert merge_cases(["x"]) == "x" and merge_cases(["", ""]) == ""
    assert merge_cases(["k=" + "v" * 300]).endswith("…") and len(merge_cases(["k=" + "v" * 300])) == 110


def test_first_screen_lists_every_finding_grouped_by_paper():
    rows = [_row("violated", case="n=8", errata_ids="P1-E1", figure="figures/s/a.png"),
            _row("violated", case="n=16", errata_ids="P1-E1", figure="figures/s/b.png"),
            _row("inconsistent", key="P3.Thm3.regret", reference="Theorem 3", check_kind="rate"),
            _row("holds")]
    lines = _screen(rows)
    text = "\n".join(lines)
    assert R.headline_text(R.headline_counts(rows)) in text
    p1 = next(i for i, ln in enumerate(lines) if ln.startswith("- **P1**"))
    assert lines[p1 + 1].startswith("  - P1 Theorem 4 `P1.Thm4.uas`: n=8/16 — **violated** — [P1-E1](")
    assert "[figure](figures/s/a.png) (+1 more in verdicts.md) (2 rows)" in lines[p1 + 1]
    assert any(ln.startswith("  - P3 Theorem 3 `P3.Thm3.regret`") and "(2 rows)" not in ln for ln in lines)
    none = "\n".join(_screen([_row("holds")]))
    assert "0 findings (0 rows)" in none and "No row contradicts a paper's claim." in none


def test_row_contradictions():
    bad = [_row("inconclusive", vacuous=True),
           _row("inconclusive", explanation="the CI straddles it (the bound is fairly tight here)"),
           _row("violated", headline=True, can_fail=False)]
    found = R.row_contradictions(bad)
    assert len(found) == 3
    assert "vacuous but 'inconclusive'" in found[0] and "says the bound is tight" in found[1]
    assert "could not fail" in found[2]
    clean = [_row("holds", vacuous="True"), _row("inconclusive", explanation="the bound is not tight here"),
             _row("violated", headline=True, can_fail=True), _row("holds", vacuous=False)]
    assert R.row_contradictions(clean) == []


@pytest.fixture(scope="module")
def committed_rows():
    path = REPORTS / "verdicts.json"
    if not path.is_file():
        pytest.skip("no committed reports/verdicts.json")
    return json.loads(path.read_text(encoding="utf-8"))


def test_committed_rows_have_no_contradictions(committed_rows):
    assert R.row_contradictions(committed_rows) == []


_NONE = re.compile(r"\bNone\b|\bnan\b")


def _visible(text):
    return re.sub(r"base64,[A-Za-z0-9+/=]+", "", text)


def test_pages_rendered_from_the_committed_rows(committed_rows):
    rows = committed_rows
    recs = [{"study_id": s, "profile": None, "seed": None} for s in dict.fromkeys(r["study"] for r in rows)]
    index = R.index_markdown(recs, rows, [], "out", None, None, [], BASE)
    page = verdicts_page(rows, lambda t: R._link_errata(t, BASE))
    html = html_page(index, rows, REPORTS, BASE)
    for text in (index, page, _visible(html)):
        assert not _NONE.findall(text)
    assert "- profile: custom" in index
    counts = R.headline_counts(rows)
    screen = index.split("\n## Verdicts by kind of check", 1)[0]
    assert R.headline_text(counts) in screen and len(screen.splitlines()) < 70
    for r in rows:                       # every headline row is on a line of the first screen
        if is_headline(r) and not r.get("repeat_of"):   # a repeat is shown on the line of the row it repeats
            assert f"`{r['key']}`" in screen, r
    shown = [ln for ln in screen.splitlines() if ln.startswith("  - ")]
    assert len(shown) == counts["findings"]
    per_line = [re.search(r"\((\d+) rows\)$", ln) for ln in shown]
    assert sum(int(m.group(1)) if m else 1 for m in per_line) == counts["rows"]
    # the full table is on verdicts.md, one line per row, long explanations cut there
    assert "| study |" not in index and len([ln for ln in page.splitlines() if ln.startswith("| ")]) == len(rows) + 1
    longest = max(rows, key=lambda r: len(r["explanation"]))
    assert len(longest["explanation"]) > EXPLANATION_CHARS + 50
    assert longest["explanation"] not in page and longest["explanation"][-40:] in html
    assert max(len(ln) for ln in page.splitlines()) < 900
    # the html: every row in the table, the findings' figures inline, nothing fetched from elsewhere
    assert html.split('id="verdict-table"', 1)[1].count("<tr") == len(rows) + 1
    assert "data:image/png;base64," in html and not re.search(r'(src|href)="https?:', html)
    assert len(html) < 6_000_000


def test_none_and_nan_never_reach_the_pages():
    rows = [_row("violated", worst_margin=float("nan"), tightness_min=None, slope="", case="n=8")]
    rows = R.verdict_rows([{"study_id": "s", "rows": [dict(rows[0], label="n=8")]}])
    assert rows[0]["worst_margin"] == "" and rows[0]["tightness_min"] == ""
    msg = R._report_message([{"study_id": "s", "dir": "/nonexistent/s", "rows": rows, "profile": None}], rows,
                            Path("/tmp/index.md"))
    assert "None" not in msg and "profile custom" in msg and "no data" in msg
    assert msg.endswith(R.headline_text(R.headline_counts(rows)))
    assert R._study_facts({"profile": "full", "replicates": 4, "seed": 0}) == "full, 4 replicates, seed 0"
    assert R._study_facts({"profile": None}) == "custom"


def test_md_to_html():
    html = md_to_html("# T\n\n- a <b> `x<y`\n  - sub [l](verdicts.md)\n\n| h | k |\n|---|---|\n| 1 \\| 2 | **3** |\n",
                      href=lambda u: "#v" if u == "verdicts.md" else u)
    assert '<h1 id="t">T</h1>' in html and "a &lt;b&gt; <code>x&lt;y</code>" in html
    assert '<ul>\n<li>sub <a href="#v">l</a></li>\n</ul>' in html
    assert "<td>1 | 2</td><td><strong>3</strong></td>" in html


def test_only_the_findings_figures_within_the_budget_are_inline(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "a.png").write_bytes(b"\x89PNG" + b"a" * 100)
    (tmp_path / "figures" / "b.png").write_bytes(b"\x89PNG" + b"b" * 100)
    (tmp_path / "figures" / "c.png").write_bytes(b"\x89PNG" + b"c" * 100)
    rows = [_row("violated", figure="figures/a.png"), _row("violated", key="P1.Thm5.x", figure="figures/b.png"),
            _row("holds", key="P1.Thm6.x", figure="figures/c.png")]
    index = "## Findings\n" + "\n".join(_screen(rows))
    html = html_page(index, rows, tmp_path, BASE, budget=150)
    assert html.count("data:image/png;base64,") == 1 and 'id="fig-1"' in html and 'id="fig-2"' not in html
    assert '<a href="#fig-1">figure</a>' in html and '<a href="figures/b.png">figure</a>' in html
    assert html_page(index, rows, tmp_path, BASE, budget=10_000).count("data:image/png;base64,") == 2


def test_report_of_a_folder_that_is_not_there_fails(tmp_path, capsys):
    from stabsim.cli import main

    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "is not a folder of study results" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 0
