"""Numbers and verdicts in the docs, generated from the committed report.

``docs/errata.md`` (and other summary docs) quote what the studies measured: margins, slopes,
verdicts.  Each such quote is wrapped in a marker that says which rows of the report
(``reports/verdicts.json``) it comes from and how to print them::

    <!--q study=p3_calibration key=P3.Alg1.sigma2_t.printed field=worst_margin agg=range order=desc-->-1.15 to -12.1<!--/q-->

:func:`sync` rewrites the text between the two comments from the rows, :func:`check` lists
every marker whose text differs from what the rows give (or whose selection fails).  Run
``python -m stabsim.reporting.errata_sync [--check] [--reports reports] [DOC ...]`` after regenerating
``reports/``; without ``DOC`` it handles :data:`DEFAULT_DOCS`.

Marker attributes (``name=value``; quote a value that holds spaces or commas: ``case="a, b"``):

selectors
    any column of the report (``study``, ``key``, ``case``, ``verdict``, ``quantity``, ...).
    a value with ``*``, ``?`` or ``[`` matches the whole cell as a shell pattern
    (``key=P3.Thm3.*``, ``key=P0.Thm[235].excess.printed``, ``case="*eps=1"``); otherwise ``case``, ``explanation`` and ``qualifier`` match as
    substrings, the other columns exactly.  A column may be
    given several times: every condition must hold.
``field``
    the column to print (default ``verdict`` for ``agg=verdict``, else ``worst_margin``).
``re``
    a regular expression applied to the (text) field; its first group is the value
    (e.g. numbers that a row states only in its ``explanation``).
``agg``
    ``value`` (exactly one distinct value over the selected rows), ``min``, ``max``,
    ``range`` (``min<sep>max``; ``order=desc`` prints ``max<sep>min``, ``order=abs`` orders by
    absolute value), ``list`` (every selected value in report order, joined by ``sep``),
    ``count`` (number of selected rows; no row at all is an error unless ``zero=ok``), ``verdict`` (the one verdict of the selected rows, with
    its qualifier in parentheses unless ``qual=no``; a trailing errata citation such as
    ``(P4-F1)`` is dropped from the qualifier).
``fmt``
    a format spec for numbers (default ``.3g``); ``sep`` the separator of ``range``/``list``
    (default `` to `` and ``, ``).

A range whose two ends print alike is printed once.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MARKER_RE", "Marker", "SyncError", "MissingStudy", "Mismatch", "load_rows", "markers", "render",
           "sync", "check", "DEFAULT_DOCS", "main"]

REPO = Path(__file__).resolve().parents[2]
#: the docs that quote study results (relative to the repository root).
DEFAULT_DOCS = ("docs/errata.md", "docs/privacy.md", "README.md")

# attributes start with a name=, so that prose mentioning "<!--q ...-->" is not a marker
MARKER_RE = re.compile(r"<!--q\s+(?P<attrs>\w+=[^>]*?)\s*-->(?P<text>.*?)<!--/q-->", re.S)
_SUBSTRING_COLS = {"case", "explanation", "qualifier"}
_OPTIONS = {"field", "agg", "fmt", "sep", "order", "re", "qual", "zero"}
_AGGS = {"value", "min", "max", "range", "list", "count", "verdict"}
_TRAILING_ID = re.compile(r"\s*\(P[0-4]-[A-Z0-9/]+\)\s*$")


class SyncError(ValueError):
    """A marker that cannot be rendered (bad attribute, no matching row, ambiguous value)."""


class MissingStudy(SyncError):
    """A marker names (``study=<id>``) a study that has no row at all in the report: a study
    added after the report was generated."""

    def __init__(self, study: str):
        super().__init__(f"study {study!r} has no row in the report (not run since it was added?)")
        self.study = study


@dataclass(frozen=True)
class Marker:
    """One ``<!--q ...-->text<!--/q-->`` span of a document."""
    start: int
    end: int
    line: int
    attrs: str
    text: str


@dataclass(frozen=True)
class Mismatch:
    """A marker whose text is not what the report gives (``expected`` None: an error)."""
    doc: str
    line: int
    attrs: str
    found: str
    expected: str | None
    error: str | None = None
    missing_study: str | None = None

    def __str__(self):
        if self.error is not None:
            return f"{self.doc}:{self.line}: <!--q {self.attrs}-->: {self.error}"
        return f"{self.doc}:{self.line}: <!--q {self.attrs}-->: has {self.found!r}, the report gives {self.expected!r}"


def load_rows(reports: str | Path) -> list[dict]:
    """The rows of ``<reports>/verdicts.json`` (or of that file itself)."""
    p = Path(reports)
    if p.is_dir():
        p = p / "verdicts.json"
    rows = json.loads(p.read_text(encoding="utf-8"))
    if not isinstance(rows, list):
        raise SyncError(f"{p}: expected a list of rows")
    return rows


def markers(text: str) -> list[Marker]:
    """Every marker of ``text``, in order."""
    out = []
    for m in MARKER_RE.finditer(text):
        out.append(Marker(m.start(), m.end(), text.count("\n", 0, m.start()) + 1,
                          m.group("attrs"), m.group("text")))
    return out


def _parse(attrs: str) -> tuple[list[tuple[str, str]], dict[str, str]]:
    try:
        parts = shlex.split(attrs)
    except ValueError as e:
        raise SyncError(f"cannot parse attributes: {e}") from None
    sel, opt = [], {}
    for p in parts:
        if "=" not in p:
            raise SyncError(f"attribute {p!r} is not name=value")
        k, v = p.split("=", 1)
        if k in _OPTIONS:
            opt[k] = v
        else:
            sel.append((k, v))
    if not sel:
        raise SyncError("no selector (give at least study= or key=)")
    return sel, opt


def _cell(v) -> str:
    return "" if v is None else str(v)


def _matches(row: dict, col: str, want: str) -> bool:
    if col not in row:
        raise SyncError(f"the report has no column {col!r}")
    have = _cell(row[col])
    if any(c in want for c in "*?["):
        return fnmatch.fnmatchcase(have, want)
    if col in _SUBSTRING_COLS:
        return want in have
    return have == want


def _select(rows: list[dict], sel: list[tuple[str, str]]) -> list[dict]:
    return [r for r in rows if all(_matches(r, c, w) for c, w in sel)]


def _num(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(str(v))
    except ValueError:
        return None


def _fmt(x: float, spec: str) -> str:
    if math.isnan(x):
        return "nan"
    s = format(x, spec)
    if "e" in s:  # 1.2e-05 -> 1.2e-5, 3e+04 -> 3e4
        mant, exp = s.split("e")
        exp = exp.lstrip("+")
        neg = exp.startswith("-")
        exp = exp.lstrip("-").lstrip("0") or "0"
        s = f"{mant}e{'-' if neg else ''}{exp}"
    return s


def _values(rows: list[dict], field: str, pattern: str | None) -> list:
    out = []
    for r in rows:
        if field not in r:
            raise SyncError(f"the report has no column {field!r}")
        v = r[field]
        if pattern is not None:
            m = re.search(pattern, _cell(v))
            if m is None:
                raise SyncError(f"re={pattern!r} does not match the {field} of row "
                                f"{r.get('key')!r} / {r.get('case')!r}")
            v = m.group(1) if m.groups() else m.group(0)
        out.append(v)
    return out


def render(attrs: str, rows: list[dict]) -> str:
    """The text a marker with these attributes stands for, given the report's rows."""
    sel, opt = _parse(attrs)
    agg = opt.get("agg", "value")
    if agg not in _AGGS:
        raise SyncError(f"agg={agg!r} is not one of {sorted(_AGGS)}")
    picked = _select(rows, sel)
    if not picked and agg == "count" and opt.get("zero") == "ok":
        return "0"
    if not picked:
        for c, w in sel:
            if c == "study" and not any(ch in w for ch in "*?[") and not any(_cell(r.get("study")) == w for r in rows):
                raise MissingStudy(w)
        raise SyncError("no row of the report matches " + " ".join(f"{c}={w!r}" for c, w in sel))
    if agg == "count":
        return str(len(picked))
    spec = opt.get("fmt", ".3g")
    if agg == "verdict":
        field = opt.get("field", "verdict")
        words = []
        for r in picked:
            w = _cell(r[field])
            q = _TRAILING_ID.sub("", _cell(r.get("qualifier", ""))).strip()
            if q and opt.get("qual", "yes") != "no":
                w = f"{w} ({q})"
            words.append(w)
        if len(set(words)) != 1:
            raise SyncError(f"the selected rows disagree: {sorted(set(words))}")
        return words[0]
    field = opt.get("field", "worst_margin")
    vals = _values(picked, field, opt.get("re"))
    nums = [_num(v) for v in vals]
    if agg in ("value", "list"):
        shown = [_fmt(x, spec) if x is not None else _cell(v) for v, x in zip(vals, nums)]
        if agg == "list":
            return opt.get("sep", ", ").join(shown)
        if len(set(shown)) != 1:
            raise SyncError(f"agg=value but the {len(picked)} selected rows give {sorted(set(shown))}")
        return shown[0]
    if any(x is None for x in nums):
        bad = [v for v, x in zip(vals, nums) if x is None]
        raise SyncError(f"agg={agg} needs numbers; the {field} of the selected rows has {bad[:3]!r}")
    if agg == "min":
        return _fmt(min(nums), spec)
    if agg == "max":
        return _fmt(max(nums), spec)
    order = opt.get("order", "asc")
    key = abs if order == "abs" else (lambda x: x)
    lo, hi = min(nums, key=key), max(nums, key=key)
    a, b = (hi, lo) if order == "desc" else (lo, hi)
    sa, sb = _fmt(a, spec), _fmt(b, spec)
    return sa if sa == sb else f"{sa}{opt.get('sep', ' to ')}{sb}"


def _rewrite(text: str, rows: list[dict], doc: str) -> tuple[str, list[Mismatch]]:
    out, pos, problems = [], 0, []
    for mk in markers(text):
        out.append(text[pos:mk.start])
        try:
            new = render(mk.attrs, rows)
            if new != mk.text:
                problems.append(Mismatch(doc, mk.line, mk.attrs, mk.text, new))
        except SyncError as e:
            new = mk.text
            problems.append(Mismatch(doc, mk.line, mk.attrs, mk.text, None, str(e),
                                     getattr(e, "study", None)))
        out.append(f"<!--q {mk.attrs}-->{new}<!--/q-->")
        pos = mk.end
    out.append(text[pos:])
    return "".join(out), problems


def sync(doc_path: str | Path, rows: list[dict], allow_missing: bool = False) -> str:
    """The text of ``doc_path`` with every marker's text regenerated from ``rows``.

    Raises :class:`SyncError` (listing every failing marker) when a marker cannot be rendered,
    so that a stale number is never kept silently.  ``allow_missing`` keeps the text of the
    markers whose study has no row at all in the report (:class:`MissingStudy`) instead."""
    p = Path(doc_path)
    new, problems = _rewrite(p.read_text(encoding="utf-8"), rows, str(p))
    errors = [m for m in problems if m.error is not None and not (allow_missing and m.missing_study)]
    if errors:
        raise SyncError("\n".join(str(m) for m in errors))
    return new


def check(doc_path: str | Path, rows: list[dict]) -> list[Mismatch]:
    """Every marker of ``doc_path`` whose text differs from the report, or cannot be rendered."""
    p = Path(doc_path)
    return _rewrite(p.read_text(encoding="utf-8"), rows, str(p))[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m stabsim.reporting.errata_sync",
                                 description="regenerate the study numbers quoted in the docs from reports/verdicts.json")
    ap.add_argument("docs", nargs="*", help=f"documents (default: {', '.join(DEFAULT_DOCS)})")
    ap.add_argument("--reports", default=str(REPO / "reports"), help="the reports folder or a verdicts.json")
    ap.add_argument("--check", action="store_true", help="only list the differences (exit 1 if any)")
    ap.add_argument("--allow-missing", action="store_true",
                    help="keep the text of markers whose study is not in the report at all (a study added since)")
    a = ap.parse_args(argv)
    rows = load_rows(a.reports)
    docs = [Path(d) for d in a.docs] or [REPO / d for d in DEFAULT_DOCS]
    status = 0
    for d in docs:
        if not d.is_file():
            continue
        if a.check:
            for m in check(d, rows):
                if a.allow_missing and m.missing_study:
                    continue
                print(m)
                status = 1
            continue
        try:
            new = sync(d, rows, allow_missing=a.allow_missing)
        except SyncError as e:
            print(e, file=sys.stderr)
            status = 2
            continue
        if new != d.read_text(encoding="utf-8"):
            d.write_text(new, encoding="utf-8")
            print(f"updated {d}")
    return status


if __name__ == "__main__":
    sys.exit(main())
