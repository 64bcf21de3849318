"""``verdicts.md``: the table of every verdict row of a report, one line each.

The long cells are cut: an explanation at ``EXPLANATION_CHARS`` characters (the full text is in
``verdicts.csv`` / ``verdicts.json`` and in ``index.html``).  ``table_rows`` gives the cells
both this page and ``index.html`` show.
"""

from __future__ import annotations

from stabsim.analyses.base import STAND_IN, _g, md_table
from stabsim.reporting.findings import can_fail, is_headline, is_true
from stabsim.judging.verdict import FAILED_VERDICTS

__all__ = ["EXPLANATION_CHARS", "TABLE_COLUMNS", "table_rows", "verdicts_page", "cut"]

#: an explanation in verdicts.md is cut after this many characters.
EXPLANATION_CHARS = 200

#: (heading, cell) of the table, in order.
TABLE_COLUMNS = [("study", "study"), ("theorem key", "key"), ("kind", "kind"), ("case", "case"),
                 ("verdict", "verdict"), ("finding", "finding"), ("margin / slope (CI)", "value"),
                 ("tightness", "tightness"), ("vacuous", "vacuous"), ("can fail", "can_fail"), ("data", "data"),
                 ("figure", "figure"), ("summary", "summary"), ("explanation", "explanation")]


def cut(text: str, n: int = EXPLANATION_CHARS) -> str:
    """``text`` cut after about ``n`` characters (at a word), with "…" where it was cut."""
    text = str(text or "")
    if len(text) <= n:
        return text
    head = text[:n].rsplit(" ", 1)[0] if " " in text[:n] else text[:n]
    return head.rstrip(" ,;:") + " …"


def _value(r: dict) -> str:
    if r.get("slope") not in ("", None):
        value = (f"slope {_g(r['slope'])} [{_g(r.get('slope_lower'), 4)}, {_g(r.get('slope_upper'), 4)}] "
                 f"vs {_g(r.get('exponent'))}" + (f" ({r['log_factors']})" if r.get("log_factors") else ""))
        if r.get("local_slope") not in ("", None):
            value += f"; last decade {_g(r['local_slope'])}"
        return value
    if r.get("worst_margin") not in ("", None):
        return f"margin {_g(r['worst_margin'])}" + (f" at {r['worst_at']}" if r.get("worst_at") else "")
    return ""


def table_rows(rows: list[dict]) -> list[dict]:
    """The cells of the verdict table, one dict per row; ``explanation`` is the full text (the
    caller cuts it), ``failed`` says whether the verdict claims a failure."""
    out = []
    for r in rows:
        lab = r["verdict"] + (f" ({r['qualifier']})" if r.get("qualifier") and r["verdict"] != STAND_IN else "")
        tight = (f"{_g(r['tightness_min'], 2)}-{_g(r['tightness_max'], 2)}"
                 if r.get("tightness_min") not in ("", None) else "")
        cf = can_fail(r)
        out.append({"study": r.get("study", ""), "key": r.get("key", ""), "kind": r.get("check_kind", ""),
                    "case": r.get("case", ""), "verdict": lab, "failed": r["verdict"] in FAILED_VERDICTS,
                    "finding": "finding" + (" (repeat)" if r.get("repeat_of") else "") if is_headline(r) else "",
                    "value": _value(r), "tightness": tight,
                    "vacuous": "vacuous" if is_true(r.get("vacuous")) else "",
                    "can_fail": {True: "yes", False: "no (uninformative)", None: ""}[cf],
                    "data": "" if r.get("data") == "synthetic" else r.get("data", ""),
                    "figure": r.get("figure") or "", "summary": r.get("summary") or "",
                    "explanation": str(r.get("explanation") or "")})
    return out


def verdicts_page(rows: list[dict], link_errata) -> str:
    """The markdown of ``verdicts.md`` (failed verdicts in bold, errata ids linked by
    ``link_errata``, explanations cut at ``EXPLANATION_CHARS``)."""
    shown = []
    for t in table_rows(rows):
        shown.append(dict(t, verdict=f"**{t['verdict']}**" if t["failed"] else t["verdict"],
                          figure=f"[png]({t['figure']})" if t["figure"] else "",
                          summary=f"[summary]({t['summary']})" if t["summary"] else "",
                          explanation=link_errata(cut(t["explanation"]))))
    return "\n".join([
        "# stabsim report: every verdict", "",
        f"{len(rows)} rows, one per verdict; the findings and how to read a verdict are in [index.md](index.md). "
        f"Explanations are cut at {EXPLANATION_CHARS} characters: the full text is in [verdicts.csv](verdicts.csv), "
        "[verdicts.json](verdicts.json) and [index.html](index.html).", "",
        md_table(shown, TABLE_COLUMNS), ""])
