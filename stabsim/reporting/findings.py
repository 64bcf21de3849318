"""The findings of a report: which verdict rows are findings about the papers, how they are
counted, the lines that open ``index.md``, and rows whose states contradict each other.

A *headline* row is a finding about a paper (a candidate erratum, not a failure of stabsim):
``row["headline"]`` when the row carries it, else ``stabsim.judging.verdict.is_headline``: a failed verdict (``FAILED_VERDICTS``) on data
that is not a stand-in, from a design that could have failed (``can_fail`` not False).

A *finding* is one line of the report: the headline rows of one claim (registry ``key``) with
one verdict (and qualifier) and the same errata ids; a row whose ``repeat_of`` names another row
joins that row's line (rows are named by their ``id`` column, or by "study/key/case").  ``headline_counts`` counts findings, headline rows, *uninformative* rows
(``can_fail`` False: the design could not have detected a violation of the claimed size) and
the rows with a failed verdict that are not findings (stand-in data, literal readings, ...);
``headline_text`` says it in the words that both ``index.md`` and ``stabsim report`` print.
"""

from __future__ import annotations

import re

from stabsim.judging.verdict import FAILED_VERDICTS, NOT_A_CLAIM_OF_THE_PAPER, OK_VERDICTS, PROOF_GAP
from stabsim.judging.verdict import is_headline as core_rule

__all__ = ["is_headline", "headline_counts", "headline_text", "finding_groups", "row_contradictions",
           "merge_cases", "is_true", "can_fail"]

STAND_IN = "stand-in (no paper value)"
#: a phrase of an explanation that says the bound is tight (or attained): never with "inconclusive".
_TIGHT_CLAIM = re.compile(r"\b(?:bound|it) is (?!not\b)(?:\w+ )?(?:tight|attained)\b", re.I)


def is_true(v) -> bool:
    """A boolean column read from a row, a csv cell ("True") or json (True)."""
    return v is True or (isinstance(v, str) and v.strip().lower() == "true")


def can_fail(row: dict):
    """``row["can_fail"]`` as True / False / None (None: not assessed, or the column is absent)."""
    v = row.get("can_fail")
    if v is True or v is False:
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    return None


def is_headline(row: dict) -> bool:
    """Is ``row`` a finding about a paper?  Its ``headline`` column when set, else the rule."""
    v = row.get("headline")
    if v is True or v is False or (isinstance(v, str) and v.strip().lower() in ("true", "false")):
        return is_true(v)
    return bool(core_rule(row))


def _label(row: dict) -> str:
    q = row.get("qualifier") or ""
    return row.get("verdict", "") + (f" ({q})" if q and row.get("verdict") != STAND_IN else "")


def _row_ids(row: dict) -> list[str]:
    """The names a ``repeat_of`` may give a row: its ``id`` column, or "study/key/case"."""
    names = [f"{row.get('study', '')}/{row.get('key', '')}/{row.get('case', '')}"]
    return ([str(row["id"])] if row.get("id") else []) + names


_ARGUED_ID = re.compile(r"\bP\d-F\d+\b")


def is_argument_erratum(row: dict) -> bool:
    """A row that documents an erratum of a paper's *argument* rather than a measured contradiction:
    a calibration the paper's own sensitivity bound does not certify (``PROOF_GAP``), or an
    inconclusive row (a shape the report cannot judge, a range too short to discriminate) whose
    explanation cites an erratum argued from the paper's own statements ("P4-F1", "P3-F1").  Rows
    outside the assumptions or under a literal reading are not (they are counted apart as such)."""
    if is_headline(row) or not_a_claim(row):
        return False
    if row.get("verdict") == PROOF_GAP:
        return True
    return row.get("verdict") == "inconclusive" and bool(_ARGUED_ID.search(str(row.get("errata_ids") or "")))


def finding_groups(rows: list[dict], select=None) -> list[dict]:
    """The findings: ``{"paper", "reference", "key", "label", "errata_ids", "rows": [...]}`` in
    order of first appearance; the headline rows of one claim, verdict and errata ids share one,
    and a row whose ``repeat_of`` names another headline row joins that row's finding.
    ``select``: another predicate than ``is_headline`` (e.g. ``is_argument_erratum``)."""
    heads = [r for r in rows if (select or is_headline)(r)]
    by_id = {name: r for r in heads for name in _row_ids(r)}

    def root(r):
        seen = set()
        while str(r.get("repeat_of") or "") in by_id and id(r) not in seen:
            seen.add(id(r))
            r = by_id[str(r["repeat_of"])]
        return r

    groups: dict = {}
    for r in heads:
        top = root(r)
        gkey = (top.get("paper", ""), top.get("key", ""), _label(top), top.get("errata_ids", ""))
        g = groups.setdefault(gkey, {"paper": top.get("paper", "") or "", "reference": top.get("reference", "") or "",
                                     "key": top.get("key", "") or "", "label": _label(top),
                                     "errata_ids": top.get("errata_ids", "") or "", "rows": []})
        g["rows"].append(r)
    for g in groups.values():   # a repeat may name more errata than its root (e.g. a ledger row)
        ids = [i for r in g["rows"] for i in str(r.get("errata_ids") or "").split()]
        g["errata_ids"] = " ".join(sorted(set(ids)))
    return list(groups.values())


_EPS = re.compile(r"\beps\s*=\s*([0-9][0-9.eE+-]*)")


def eps_span(rows: list[dict], failing: bool = True) -> str:
    """"fails from eps = 3 (4 values up to 1000)" when the rows of one finding are at several eps
    (read from their cases): the smallest eps at which the claim fails leads; "" otherwise."""
    vals = set()
    for r in rows:
        for m in _EPS.findall(str(r.get("case") or "")):
            try:
                vals.add(float(m.rstrip(".")))
            except ValueError:
                pass
    if len(vals) < 2:
        return ""
    lo, hi = min(vals), max(vals)
    if not failing:
        return f"at eps = {lo:g} .. {hi:g} ({len(vals)} values)"
    return f"fails from eps = {lo:g} ({len(vals)} values up to {hi:g})"


def not_a_claim(row: dict) -> bool:
    """True for a row whose qualifier says it checks no claim of the paper (``NOT_A_CLAIM_OF_THE_PAPER``)."""
    return (row.get("qualifier") or "") in NOT_A_CLAIM_OF_THE_PAPER


def _failed_not_headline_reason(row: dict) -> str:
    if row.get("data") == "stand-in":
        return "on stand-in data"
    if row.get("qualifier"):
        return str(row["qualifier"])
    return "not a claim of the paper"


def headline_counts(rows: list[dict]) -> dict:
    """``findings`` (lines), ``rows`` (headline rows), ``distinct`` (headline rows that repeat
    no other), ``uninformative`` (``can_fail`` False), ``other_failed`` (failed verdicts that are
    neither findings nor uninformative) with ``other_reasons`` {why: count}, ``errors`` (studies or
    checks that failed or were skipped: failures of the run, not findings)."""
    groups = finding_groups(rows)
    heads = [r for g in groups for r in g["rows"]]
    others = [r for r in rows if r.get("verdict") in FAILED_VERDICTS and not is_headline(r)
              and can_fail(r) is not False]
    reasons: dict = {}
    for r in others:
        why = _failed_not_headline_reason(r)
        reasons[why] = reasons.get(why, 0) + 1
    argued = finding_groups(rows, is_argument_erratum)
    held_apart = sum(1 for r in rows if r.get("verdict") in OK_VERDICTS and not_a_claim(r) and can_fail(r) is not False)
    return {"findings": len(groups), "rows": len(heads), "held_apart": held_apart,
            "argued": len(argued), "argued_rows": sum(len(g["rows"]) for g in argued),
            "distinct": sum(1 for r in heads if not str(r.get("repeat_of") or "")),
            "uninformative": sum(1 for r in rows if can_fail(r) is False),
            "other_failed": len(others), "other_reasons": reasons,
            "errors": sum(1 for r in rows if r.get("verdict") in ("error", "skipped"))}


def headline_text(counts: dict) -> str:
    """The one sentence index.md and ``stabsim report`` both give, e.g.
    "12 findings (74 rows) about the papers; 3 uninformative rows"."""
    text = (f"{counts['findings']} finding{'s' * (counts['findings'] != 1)} ({counts['rows']} "
            f"row{'s' * (counts['rows'] != 1)}) about the papers; {counts['uninformative']} uninformative "
            f"row{'s' * (counts['uninformative'] != 1)}")
    if counts.get("errors"):
        text += f"; {counts['errors']} studies or checks failed to run"
    return text


def merge_cases(cases: list[str], width: int = 110) -> str:
    """The cases of one finding in a few words: equal ``k=v`` parts once, differing values joined
    by "/" ("variant=OnPairC, eps=1.0/16.0"), cut at ``width`` characters."""
    cases = list(dict.fromkeys(c for c in cases if c))
    if not cases:
        return ""
    if len(cases) == 1:
        text = cases[0]
    else:
        split = [c.split(", ") for c in cases]
        keys = [[p.split("=", 1)[0].strip() if "=" in p else None for p in s] for s in split]
        if len({len(s) for s in split}) == 1 and all(k == keys[0] for k in keys):
            parts = []
            for i, k in enumerate(keys[0]):
                vals = list(dict.fromkeys(s[i].split("=", 1)[1].strip() if k is not None else s[i] for s in split))
                joined = "/".join(vals)
                parts.append(f"{k}={joined}" if k is not None else joined)
            text = ", ".join(parts)
        else:
            text = f"{cases[0]} (+{len(cases) - 1} more)"
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def row_contradictions(rows: list[dict]) -> list[str]:
    """One line per row whose states contradict each other: *vacuous* with a verdict other than
    "holds" (vacuous says the bound holds with room to spare); "inconclusive" with an explanation
    that says the bound is tight or attained; a headline row that could not have failed
    (``can_fail`` False)."""
    out = []
    for i, r in enumerate(rows):
        where = f"row {i} ({r.get('study', '')}, {r.get('key', '')}{', ' + r['case'] if r.get('case') else ''})"
        verdict = r.get("verdict", "")
        if is_true(r.get("vacuous")) and verdict != "holds":
            out.append(f"{where}: vacuous but {verdict!r} (vacuous only with 'holds')")
        if verdict == "inconclusive" and _TIGHT_CLAIM.search(str(r.get("explanation") or "")):
            out.append(f"{where}: inconclusive, yet its explanation says the bound is tight")
        if is_true(r.get("headline")) and can_fail(r) is False:
            out.append(f"{where}: a headline finding from a design that could not fail (can_fail False)")
    return out


def ok_count_line(rows: list[dict], titles: dict, order) -> str:
    """"theorem bounds 199/201, rate claims 51/87 (21 matches, 30 faster than claimed), ...": per
    kind of check, the rows with a good verdict over the rows judged (stand-ins, errors,
    uninformative rows and rows that check no claim of the paper -- a literal reading, a setting
    outside the theorem's assumptions, a set-up not the paper's: ``not_a_claim`` -- apart)."""
    parts = []
    for kind in order:
        rs = [r for r in rows if (r.get("check_kind") or "other") == kind
              and r.get("verdict") not in (STAND_IN, "error", "skipped") and can_fail(r) is not False
              and not not_a_claim(r)]
        if not rs:
            continue
        ok: dict = {}
        for r in rs:
            if r.get("verdict") in OK_VERDICTS:
                ok[r["verdict"]] = ok.get(r["verdict"], 0) + 1
        detail = f" ({', '.join(f'{c} {v}' for v, c in ok.items())})" if len(ok) > 1 else ""
        parts.append(f"{titles.get(kind, kind)} {sum(ok.values())}/{len(rs)}{detail}")
    return ", ".join(parts)


_WHY_NOT = {"on stand-in data": "measured on a stand-in data set, the paper's number is context, not a reference",
            "literal reading": "a literal reading of the text that the paper does not intend",
            "not a claim of the paper": "the row checks no claim the paper makes",
            "outside the theorem's assumptions": "the setting is outside the theorem's stated assumptions",
            "set-up not the paper's": "a reproduction under a set-up stabsim had to choose where the paper gives none"}


def _figure_links(paths: list[str]) -> str:
    paths = list(dict.fromkeys(p for p in paths if p))
    if not paths:
        return ""
    return f"[figure]({paths[0]})" + (f" (+{len(paths) - 1} more in verdicts.md)" if len(paths) > 1 else "")


def finding_line(g: dict, link_errata) -> str:
    """One finding: paper and theorem reference, key, cases, verdict, errata links, figure, rows."""
    rows = g["rows"]
    ref = f"{g['paper']} {g['reference']}".strip() if g["reference"] else g["paper"]
    span = eps_span(rows, failing=any(r.get("verdict") in FAILED_VERDICTS + (PROOF_GAP,) for r in rows))
    what = merge_cases([str(r.get("case") or r.get("quantity") or "") for r in rows if r.get("key") == g["key"]])
    others = sorted({str(r.get("key")) for r in rows if r.get("key") != g["key"]})
    if others:   # repeats under another key (the ledger's rows of the same calibration)
        what += f" (with {', '.join(f'`{k}`' for k in others)})"
    what = f"{span}; {what}" if span and what else (span or what)
    errata = link_errata(g["errata_ids"].replace(" ", ", ")) if g["errata_ids"] else "no errata entry yet"
    figs = _figure_links([str(r.get("figure") or "") for r in rows])
    parts = [f"{ref} `{g['key']}`" + (f": {what}" if what else ""), f"**{g['label']}**", errata] + [figs] * bool(figs)
    return "- " + " — ".join(parts) + (f" ({len(rows)} rows)" if len(rows) > 1 else "")


def first_screen(rows: list[dict], *, link_errata, kind_titles: dict, kind_order,
                 tightness_anchor: str = "#theorem-bounds-best-tightness-reached") -> list[str]:
    """The findings (grouped by paper, one line each) and what held: the lines under the header
    that opens ``index.md``."""
    c = headline_counts(rows)
    lines = ["## Findings",
             f"**{headline_text(c)}.** A finding is a claim of a paper that the measurements contradict (an "
             "erratum of the paper, linked to its entry), not a failure of stabsim.", ""]
    groups = finding_groups(rows)
    for paper in dict.fromkeys(sorted(g["paper"] for g in groups)):
        mine = [g for g in groups if g["paper"] == paper]
        n_rows = sum(len(g["rows"]) for g in mine)
        lines.append(f"- **{paper or 'other'}** ({len(mine)} finding{'s' * (len(mine) != 1)}, "
                     f"{n_rows} row{'s' * (n_rows != 1)})")
        lines += ["  " + finding_line(g, link_errata) for g in mine]
    lines.append("" if groups else "No row contradicts a paper's claim.\n")
    argued = finding_groups(rows, is_argument_erratum)
    if argued:
        lines += ["## Errata of the papers' arguments",
                  f"**{len(argued)} erratum line{'s' * (len(argued) != 1)} ({c['argued_rows']} rows)**: the paper's own "
                  "argument does not certify its claim (a calibration priced at the paper's sensitivity bound buys a "
                  "larger eps than claimed; a rate the paper's proof cannot deliver), but no measurement here "
                  "contradicts the claim itself: the algorithm may still be private, the curve may still decay. "
                  "Cite these as errata of the proofs, not as measured failures.", ""]
        for paper in dict.fromkeys(sorted(g["paper"] for g in argued)):
            lines += ["- " + finding_line(g, link_errata)[2:] for g in argued if g["paper"] == paper]
        lines.append("")
    n_vac = sum(1 for r in rows if is_true(r.get("vacuous")))
    assessed = any(can_fail(r) is not None for r in rows)
    lines += ["## What held and what is counted apart",
              f"- held (good verdicts / rows judged, uninformative rows apart): "
              f"{ok_count_line(rows, kind_titles, kind_order)}",
              f"- how tightly: the best measured/bound per theorem is in [the tightness table]({tightness_anchor}); "
              f"{n_vac} rows are *vacuous* (the bound holds with measured/bound < 0.01 everywhere)",
              f"- uninformative: {c['uninformative']} rows could not have detected a violation of the claimed size "
              "(`can_fail` False, why in `power_note`); counted apart, never findings"
              + ("" if assessed else " (no row carries this assessment)")]
    if c["held_apart"]:
        lines.append(f"- good verdicts that are not support: {c['held_apart']} row{'s' * (c['held_apart'] != 1)} "
                     "outside the theorem's assumptions, under a literal reading or a set-up not the paper's "
                     "(reported in verdicts.md, counted neither as held nor as findings)")
    if c["other_failed"]:
        why = "; ".join(f"{n} {k}" + (f" ({_WHY_NOT[k]})" if k in _WHY_NOT else "")
                        for k, n in sorted(c["other_reasons"].items(), key=lambda kv: -kv[1]))
        lines.append(f"- failed verdicts that are not findings: {c['other_failed']} row{'s' * (c['other_failed'] != 1)}: "
                     f"{why}")
    if c["errors"]:
        lines.append(f"- **{c['errors']} studies or checks failed to run or were skipped** (failures of this run, "
                     "not findings; see the rows marked error/skipped)")
    lines.append("")
    return lines
