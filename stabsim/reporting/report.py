"""``stabsim report``: one table over every analysed study in an output folder.

``report(out_dir, reports_dir=None)`` (re-)analyses studies whose ``data.nc`` is newer
than their ``analysis.json`` (``stabsim.reporting.analyse.analyse``), copies their figures to
``reports_dir/figures/<study>/`` and writes

``index.md``        one screen first: what was checked (command, profile, studies, rows) and the
                    findings about the papers (``stabsim.reporting.findings``: one line per finding,
                    grouped by paper, errata ids linked to ``docs/errata.md``, figure linked), what
                    held, the uninformative rows and the failed verdicts that are not findings,
                    counted apart; then the verdicts counted by kind of check with the rules, a
                    per-theorem summary (best tightness reached, and where), the privacy ledger and
                    the studies;
``verdicts.md``     every verdict row, explanations cut (``stabsim.reporting.pages``);
``index.html``      the same, self-contained: the findings' figures inline, the full verdict table
                    sortable and filterable (``stabsim.reporting.html``);
``verdicts.csv``    one row per verdict (``VERDICT_COLUMNS``), for pandas;
``verdicts.json``   the same rows as a JSON list.

``headline_counts(rows)`` gives the counts that ``index.md`` opens with and that ``report``'s
message ends with (``headline_text``).
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import math
import re
import os
import shutil
from pathlib import Path

from stabsim.analyses.base import CHECK_KINDS, LITERAL_LEDGER_READINGS, STAND_IN, _g, md_table
from stabsim.reporting.findings import first_screen, headline_counts, headline_text, row_contradictions  # noqa: F401
from stabsim.reporting.pages import verdicts_page
from stabsim.reporting.analyse import ANALYSIS_FILE, FIGURE_DIR, SUMMARY_FILE, analyse
from stabsim.judging.verdict import FAILED_VERDICTS, LITERAL_READING, PROOF_GAP, is_headline, mark_repeats
from stabsim.judging.rules import OK_VERDICTS

__all__ = ["report", "collect", "verdict_rows", "VERDICT_COLUMNS", "write_verdict_table", "count_by_kind",
           "theorem_summary", "headline_counts", "headline_text", "row_contradictions"]

#: the columns of verdicts.csv / verdicts.json, in order.
VERDICT_COLUMNS = (
    "study", "key", "paper", "reference", "tag", "check_kind", "case", "quantity", "verdict", "qualifier",
    "worst_margin", "worst_at", "n_significant", "multiplicity", "slope", "slope_lower", "slope_upper",
    "exponent", "log_factors", "local_slope", "local_slope_lower", "local_slope_upper",
    "tightness_min", "tightness_max", "lower_tightness_max", "vacuous",
    "can_fail", "power_note", "shape_slope", "headline", "repeat_of", "data", "n_replicates", "confidence",
    "errata_ids", "explanation", "figure", "summary",
)

#: the kinds of check in the one line of what held.
_SHORT_TITLES = {"bound": "theorem bounds", "rate": "rate claims", "privacy": "privacy calibrations",
                 "audit": "privacy audits", "privacy ledger": "ledger calibrations", "condition": "theorem conditions",
                 "reproduction": "reproductions", "identity": "identity checks", "other": "other"}

KIND_TITLES = {"bound": "theorem bounds", "rate": "rate claims", "privacy": "privacy calibrations (studies' checks)",
               "audit": "privacy audits (empirical eps lower bounds vs the accountant; SANITY: noise scaled down)",
               "privacy ledger": "privacy ledger (exact eps bought by every calibration)",
               "condition": "theorem conditions", "reproduction": "reproductions",
               "identity": "identity checks (tests, not findings)", "other": "other"}


def collect(out_dir, *, reanalyse: bool = True) -> list[dict]:
    """The analysis records of every finished study in ``out_dir`` (analysing when needed)."""
    out_dir = Path(out_dir)
    recs = []
    for d in sorted(p for p in out_dir.iterdir() if (p / "data.nc").is_file()) if out_dir.is_dir() else []:
        a = d / ANALYSIS_FILE
        if reanalyse and (not a.is_file() or a.stat().st_mtime < (d / "data.nc").stat().st_mtime):
            try:
                analyse(d, out_dir=out_dir)
            except Exception as e:  # unreadable data: say so in the report
                recs.append({"study_id": d.name, "dir": str(d), "rows": [], "error": f"{type(e).__name__}: {e}"})
                continue
        if a.is_file():
            rec = json.loads(a.read_text(encoding="utf-8"))
            rec["dir"] = str(d)
            recs.append(rec)
    return recs


def _copy_summary(sdir: Path, study_id: str, reports_dir: Path, errata_base: str | None = None) -> str | None:
    """Copy a study's summary.md and all its figures into ``reports_dir`` (so the report stands
    on its own, without the ``out/`` folder); return the summary's path relative to it.  A figure
    left in the report's folder by an earlier run that this run's study no longer draws is
    removed: a reader would take it for this run's."""
    src = sdir / SUMMARY_FILE
    if not src.is_file():
        return None
    fig_dir = reports_dir / FIGURE_DIR / study_id
    pngs = sorted((sdir / FIGURE_DIR).glob("*.png"))
    if fig_dir.is_dir():
        drawn = {png.name for png in pngs}
        for old in fig_dir.glob("*.png"):
            if old.name not in drawn:
                old.unlink()
    for png in pngs:
        fig_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy2(png, fig_dir / png.name)
    dst = reports_dir / "summaries" / f"{study_id}.md"
    dst.parent.mkdir(parents=True, exist_ok=True)
    text = src.read_text(encoding="utf-8").replace(f"]({FIGURE_DIR}/", f"](../{FIGURE_DIR}/{study_id}/")
    if errata_base is not None:  # summaries/ is one level below reports/
        text = _link_errata(text, "../" + errata_base)
    dst.write_text(text, encoding="utf-8")
    return dst.relative_to(reports_dir).as_posix()


def _registry_info(key: str) -> tuple[str, str]:
    from stabsim.theory.registry import get

    try:
        b = get(key)
    except KeyError:
        return (key.split(".")[0] if key[:1] == "P" and key[1:2].isdigit() else ""), ""
    return b.paper, b.ref


def _errata_ids(text: str) -> list[str]:
    try:
        from stabsim.judging.errata import find_ids
    except ImportError:  # pragma: no cover - errata module missing
        return []
    return sorted(set(find_ids(text or "")))


def _link_errata(text: str, base: str) -> str:
    try:
        from stabsim.judging.errata import link_ids
    except ImportError:  # pragma: no cover
        return text
    return link_ids(text, base=base)


def verdict_rows(recs: list[dict]) -> list[dict]:
    """One flat dict per verdict (``VERDICT_COLUMNS``) over the analysis records ``recs``."""
    out = []
    for rec in recs:
        rows = rec.get("rows", []) or [{"verdict": "error", "explanation": rec.get("error", ""),
                                        "check_kind": "other"}]
        for r in rows:
            paper, ref = _registry_info(r.get("key", ""))
            row = {c: r.get(c, "") for c in VERDICT_COLUMNS}
            expl = str(r.get("explanation", "") or "")
            row.update(study=rec.get("study_id", ""), paper=paper, reference=ref, case=r.get("label", ""),
                       check_kind=r.get("check_kind") or "other", data=r.get("data") or "synthetic",
                       errata_ids=" ".join(_errata_ids(expl + " " + str(r.get("notes", "")))),
                       explanation=expl, summary=rec.get("summary_path", ""))
            for c in VERDICT_COLUMNS:
                v = row[c]
                if v is None or (isinstance(v, float) and math.isnan(v)):
                    row[c] = ""
            out.append(row)
    return out


def write_verdict_table(rows: list[dict], reports_dir) -> tuple[Path, Path]:
    """Write ``verdicts.csv`` and ``verdicts.json`` into ``reports_dir``; returns their paths."""
    reports_dir = Path(reports_dir)
    csv_path, json_path = reports_dir / "verdicts.csv", reports_dir / "verdicts.json"
    with csv_path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(VERDICT_COLUMNS))
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in VERDICT_COLUMNS})
    json_path.write_text(json.dumps([{c: r.get(c, "") for c in VERDICT_COLUMNS} for r in rows], indent=1,
                                    default=str), encoding="utf-8")
    return csv_path, json_path


def count_by_kind(rows: list[dict]) -> dict:
    """{kind: {verdict label: count}} over the rows that are findings; stand-in rows under
    ``"stand-in"`` and errors under ``"error"``, apart from the kinds."""
    out: dict = {}
    for r in rows:
        if r["verdict"] == STAND_IN:
            kind = "stand-in"
        elif r["verdict"] in ("error", "skipped"):
            kind = "error"
        else:
            kind = r["check_kind"] or "other"
        label = _verdict_label(r)
        out.setdefault(kind, {})
        out[kind][label] = out[kind].get(label, 0) + 1
    return out


def _verdict_label(r: dict) -> str:
    """The verdict with its qualifier, e.g. "inconclusive (curvature)" (a stand-in row's own), and
    "uninformative" for a row that could not have failed (counted apart from the others)."""
    label = r["verdict"] + (f" ({r['qualifier']})" if r.get("qualifier") and r["verdict"] != STAND_IN else "")
    return label + (" — uninformative" if str(r.get("can_fail")) == "False" else "")


def _count_text(counts: dict) -> str:
    return ", ".join(f"{c} {v}" for v, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def theorem_summary(rows: list[dict]) -> list[dict]:
    """Per registry key of a theorem bound: rows, how many hold / are vacuous / are violated or
    inconclusive, the best (largest) tightness reached among holding rows, with where, and the
    largest (pointwise 95 % CI lower end)/bound among holding rows."""
    by: dict = {}
    for r in rows:
        if r["check_kind"] != "bound" or r["verdict"] == STAND_IN:
            continue
        e = by.setdefault(r["key"], {"key": r["key"], "paper": r["paper"], "reference": r["reference"], "rows": 0,
                                      "holds": 0, "vacuous": 0, "violated": 0, "inconclusive": 0,
                                      "best": -math.inf, "where": "", "best_lower": -math.inf})
        e["rows"] += 1
        e[r["verdict"]] = e.get(r["verdict"], 0) + 1
        e["vacuous"] += r.get("vacuous") is True
        t = r.get("tightness_max")
        if r["verdict"] == "holds" and isinstance(t, (int, float)) and math.isfinite(t) and t > e["best"]:
            e["best"], e["where"] = t, f"{r['study']}" + (f" ({r['case']})" if r.get("case") else "")
        lt = r.get("lower_tightness_max")
        if r["verdict"] == "holds" and isinstance(lt, (int, float)) and math.isfinite(lt):
            e["best_lower"] = max(e["best_lower"], lt)
    out = []
    for e in by.values():
        e["best_tightness"] = "" if e["best"] == -math.inf else _g(e["best"], 2)
        e["best_lower_tightness"] = "" if e["best_lower"] == -math.inf else _g(e["best_lower"], 2)
        out.append(e)
    return sorted(out, key=lambda e: e["key"])


def default_reports_dir(out_dir, profiles) -> Path:
    """Where a report goes by default: ``reports/`` beside ``out_dir`` (``./reports`` for ``out``,
    the repository's committed full-profile report), except for a report that includes
    quick-profile studies: ``out_dir/reports`` (``out/reports``), so that a quick run never
    lands on the committed report."""
    out_dir = Path(out_dir)
    return out_dir / "reports" if "quick" in set(profiles) else out_dir.parent / "reports"


def existing_report_profile(reports_dir) -> str | None:
    """The ``- profile:`` line of an existing ``reports_dir/index.md`` (None when there is none)."""
    try:
        with open(Path(reports_dir) / "index.md", encoding="utf-8") as f:
            for line in f:
                if line.startswith("- profile:"):
                    return line[len("- profile:"):].strip()
                if line.startswith("## "):
                    break
    except (OSError, UnicodeDecodeError):
        return None
    return None


def report(out_dir="out", reports_dir=None, *, command: str | None = None,
           wall_seconds: float | None = None, overwrite: bool = False, failures: dict | None = None) -> str:
    """Write ``reports_dir/index.md``, ``verdicts.md``, ``index.html``, ``verdicts.csv`` and
    ``verdicts.json`` over the studies in ``out_dir``; returns a short message that ends with
    ``headline_text`` (the counts index.md opens with).

    ``reports_dir`` default: ``reports/`` beside ``out_dir`` (``./reports`` for ``out``), or
    ``out_dir/reports`` when the studies include quick-profile runs (``default_reports_dir``).
    An ``index.md`` already there whose profile differs from this report's (the committed
    full-profile report, a quick run's) is not overwritten unless ``overwrite``: a
    ``FileExistsError`` says where it is and how to go on."""
    out_dir = Path(out_dir)
    recs = collect(out_dir)
    _add_failures(recs, out_dir, failures)
    if not recs:
        return f"no finished studies in {out_dir}; nothing reported"
    profiles = sorted({str(r.get("profile")) for r in recs if r.get("profile")})
    reports_dir = default_reports_dir(out_dir, profiles) if reports_dir is None else Path(reports_dir)
    _refuse_other_profile(reports_dir, profiles, out_dir, overwrite)
    reports_dir.mkdir(parents=True, exist_ok=True)
    errata_base = _errata_base(reports_dir)
    _copy_study_files(recs, reports_dir, errata_base)
    rows = verdict_rows(recs)
    ledger, ledger_rows = _ledger_section(reports_dir, {r["study_id"]: r.get("profile") for r in recs})
    rows += ledger_rows
    mark_repeats(rows)
    for r in rows:
        r["headline"] = is_headline(r)
    write_verdict_table(rows, reports_dir)
    text = index_markdown(recs, rows, profiles, out_dir, command, wall_seconds, ledger, errata_base)
    path = reports_dir / "index.md"
    path.write_text(text, encoding="utf-8")
    (reports_dir / "verdicts.md").write_text(verdicts_page(rows, lambda t: _link_errata(t, errata_base)),
                                             encoding="utf-8")
    from stabsim.reporting.html import write_html

    write_html(text, rows, reports_dir, errata_base)
    return _report_message(recs, rows, path)


def index_markdown(recs: list[dict], rows: list[dict], profiles: list[str], out_dir, command: str | None,
                   wall_seconds: float | None, ledger: list[str], errata_base: str) -> str:
    """The text of ``index.md``: its first screen (header and findings), then the verdicts by
    kind, the per-theorem tightness, the privacy ledger (``ledger``: its lines) and the studies."""
    screen = first_screen(rows, link_errata=lambda t: _link_errata(t, errata_base), kind_titles=_SHORT_TITLES,
                          kind_order=CHECK_KINDS + ("privacy ledger", "other"))
    return "\n".join(_index_head(recs, rows, profiles, out_dir, command, wall_seconds) + screen
                     + _kinds_section(rows) + _theorem_section(rows) + _audit_section(rows) + ledger
                     + ["## Every verdict", "", f"The table of all {len(rows)} verdict rows is in "
                        "[verdicts.md](verdicts.md) (sortable in [index.html](index.html)).", ""]
                     + _studies_section(recs) + [""])


_AUDIT_MEASURE = {"sensitivity_ratio": "worst-case sensitivity measured / Delta the calibration used; its 95 % "
                                        "lower end in brackets",
                  "eps_lower": "eps lower bound of the GDP fit / accountant's eps; the assumption-free "
                               "Clopper-Pearson bound in brackets"}


def _audit_section(rows: list[dict]) -> list[str]:
    """The privacy audits, one line per algorithm and threat model: the AUDIT row's verdict and what it
    measured against the calibration (``tightness_max``: GDP-fit eps bound / accountant eps, or measured
    worst-case sensitivity / Delta), and whether its noise x 0.1 SANITY run was detected (its power)."""
    audits = [r for r in rows if r.get("check_kind") == "audit" and r.get("tag") == "AUDIT"]
    if not audits:
        return []
    sanity = {(r.get("study"), re.sub(r"noise_scale=[^,]*,?\s*", "", str(r.get("case") or ""))): r
              for r in rows if r.get("check_kind") == "audit" and r.get("tag") == "SANITY"}
    lines = ["## Privacy audits", "",
             "Per private algorithm and threat model: the audit's verdict at the calibrated noise, what it measured "
             "against the calibration, and whether the same audit detects the noise cut tenfold (its power: "
             "without it the audit says nothing).  A known-randomness audit sees the index sequence, a stronger "
             "adversary than the final-output one; every-iterate audits see the whole noisy path.", "",
             "| audit study | threat model | verdict | measured / calibration | noise x 0.1 detected |", "|---|---|---|---|---|"]
    for r in audits:
        tm = re.sub(r"noise_scale=[^,]*,?\s*", "", str(r.get("case") or "")).strip()
        s_ = sanity.get((r.get("study"), tm))
        what = _AUDIT_MEASURE.get(str(r.get("quantity")), str(r.get("quantity")))
        try:
            val = f"{float(r['tightness_max']):.3g} [{float(r['lower_tightness_max']):.3g}] ({what})"
        except (TypeError, ValueError, KeyError):
            val = ""
        det = "" if s_ is None else ("yes" if s_.get("verdict") == "holds" else "no")
        label = r["verdict"] + (f" ({r['qualifier']})" if r.get("qualifier") else "")
        lines.append(f"| {r.get('study')} | {tm.replace('threat_model=', '') or 'every iterate'} | {label} | {val} | {det} |")
    return lines + [""]


def _add_failures(recs: list[dict], out_dir: Path, failures: dict | None) -> None:
    """Studies of this run that could not run (``failures``: id -> why): one row each."""
    done = {r["study_id"] for r in recs}
    for sid, why in (failures or {}).items():
        if sid not in done:
            verdict = "skipped" if why.startswith("skipped") else "error"
            recs.append({"study_id": sid, "dir": str(out_dir / sid), "rows": [
                {"verdict": verdict, "check_kind": "other", "key": "", "label": "", "explanation": why}],
                "error": why, "profile": None})


def _refuse_other_profile(reports_dir: Path, profiles: list[str], out_dir: Path, overwrite: bool) -> None:
    """``FileExistsError`` when ``reports_dir/index.md`` is a report of another profile (unless
    ``overwrite``)."""
    old = existing_report_profile(reports_dir)
    if old is not None and (old or "custom") != _profile_text(profiles) and not overwrite:
        raise FileExistsError(
            f"{reports_dir / 'index.md'} is a report of profile {old or 'custom'}; this one is of profile "
            f"{_profile_text(profiles)} (studies in {out_dir}), so it was not overwritten. Write it elsewhere "
            "(stabsim report --reports DIR, stabsim run --report DIR) or replace it with --overwrite-report")


def _copy_study_files(recs: list[dict], reports_dir: Path, errata_base: str) -> None:
    """Copy each study's summary and figures into ``reports_dir``; the records then point at the
    copies (``summary_path``, each row's ``figure``; a missing figure becomes "")."""
    for rec in recs:
        sdir = Path(rec["dir"])
        summ = _copy_summary(sdir, rec["study_id"], reports_dir, errata_base) \
            or os.path.relpath(sdir / SUMMARY_FILE, reports_dir)
        rec["summary_path"] = Path(summ).as_posix()
        for r in rec.get("rows", []):
            if r.get("figure"):
                src = sdir / r["figure"]
                dst = reports_dir / FIGURE_DIR / rec["study_id"] / Path(r["figure"]).name
                if src.is_file():
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, dst)
                    r["figure"] = dst.relative_to(reports_dir).as_posix()
                else:
                    r["figure"] = ""


def _profile_text(profiles: list[str]) -> str:
    """The profile(s) of a report's studies; "custom" when no study names one."""
    return ", ".join(profiles) or "custom"


def _index_head(recs: list[dict], rows: list[dict], profiles: list[str], out_dir: Path,
                command: str | None, wall_seconds: float | None) -> list[str]:
    """The header of ``index.md``: command, date, wall time, profile, what was checked."""
    run_total = sum(r.get("run_seconds") or 0 for r in recs) + sum(r.get("analysis_seconds") or 0 for r in recs)
    wall = wall_seconds if wall_seconds is not None else run_total
    cmd = command or " ".join(["stabsim", "report", str(out_dir)])
    n_stand_in = sum(1 for r in rows if r.get("data") == "stand-in")
    return [
        "# stabsim report", "",
        f"- command: `{cmd}`; date: {_dt.datetime.now().isoformat(timespec='seconds')}; wall time: {wall:.1f} s"
        + ("" if wall_seconds is not None else " (sum of the studies' run + analysis times)"),
        f"- profile: {_profile_text(profiles)}",
        f"- checked: {len(recs)} studies in `{out_dir}`, {len(rows)} verdict rows (each a bound, rate, privacy, "
        f"condition or reproduction claim of a paper; {n_stand_in} on stand-in data sets); reproduce: "
        "`stabsim run suite" + (" --quick" if profiles == ["quick"] else "") + "`, or the command in a study's summary",
        "- every row: [verdicts.md](verdicts.md), [verdicts.csv](verdicts.csv), [verdicts.json](verdicts.json); "
        "this page with figures and a sortable table: [index.html](index.html)",
        "",
    ]


def _kinds_section(rows: list[dict]) -> list[str]:
    """The section "Verdicts by kind of check": counts per kind, and how to read a verdict."""
    counts = count_by_kind(rows)
    n_unexplained = sum(1 for r in rows if r["verdict"] not in OK_VERDICTS and r["verdict"] != STAND_IN
                        and not str(r.get("explanation", "")).strip())
    lines = ["## Verdicts by kind of check", "",
             "- " + (f"**{n_unexplained} rows that do not hold carry no explanation**" if n_unexplained
                     else "every row that does not hold carries its explanation")]
    for kind in CHECK_KINDS + ("privacy ledger", "stand-in", "error"):
        if kind in counts:
            title = KIND_TITLES.get(kind, {"stand-in": "stand-in data sets (not judged; paper values are "
                                                       "context only)", "error": "studies or checks that failed or were skipped"}.get(kind, kind))
            lines.append(f"- **{title}** ({sum(counts[kind].values())}): {_count_text(counts[kind])}")
    return lines + ["", _RULES_TEXT, ""]


def _theorem_section(rows: list[dict]) -> list[str]:
    """The section "Theorem bounds: best tightness reached": one line per registered bound."""
    summary = theorem_summary(rows)
    return ["## Theorem bounds: best tightness reached", "",
            "Per registered bound: rows, how they came out, the largest measured/bound among the rows that "
            "hold (1 = attained; below 0.01 the bound is vacuous there) with where, and the largest (CI lower "
            "end)/bound among them, each lower end a pointwise 95 % one (for a searched worst-case "
            "neighbour: the best lower estimate of the supremum over the bound).", "",
            md_table(summary, [("key", "key"), ("paper", "paper"), ("reference", "reference"), ("rows", "rows"),
                               ("holds", "holds"), ("vacuous", "vacuous"), ("violated", "violated"),
                               ("inconclusive", "inconclusive"), ("best tightness", "best_tightness"),
                               ("where", "where"), ("best lower / bound", "best_lower_tightness")]), ""]


def _studies_section(recs: list[dict]) -> list[str]:
    """The section "Studies": one line per study (profile, replicates, seed, run time, description)."""
    return ["## Studies", ""] + [f"- **{r['study_id']}** ({_study_facts(r)}): {r.get('description') or r.get('error') or ''}"
                                 for r in recs]


def _study_facts(rec: dict) -> str:
    """"full, 100 replicates, seed 0, run 1.2 s": what a study record says (missing facts left out)."""
    facts = [str(rec.get("profile") or "custom")]
    if rec.get("replicates") is not None:
        facts.append(f"{rec['replicates']} replicates")
    if rec.get("seed") is not None:
        facts.append(f"seed {rec['seed']}")
    if rec.get("run_seconds") is not None:
        facts.append(f"run {float(rec['run_seconds']):.1f} s")
    return ", ".join(facts)


def _report_message(recs: list[dict], rows: list[dict], path: Path) -> str:
    """The message ``report`` returns: one line per study and a total."""
    lines = []
    for rec in recs:
        vs = [r.get("verdict", "") for r in rec.get("rows", [])]
        state = f"finished: {Path(rec['dir']) / 'data.nc'}" if (Path(rec["dir"]) / "data.nc").is_file() else "no data"
        facts = ", ".join([str(rec.get("kind") or "unknown kind"), f"profile {rec.get('profile') or 'custom'}"]
                          + ([f"seed {rec['seed']}"] if rec.get("seed") is not None else []))
        lines.append(f"{rec['study_id']} ({facts}): {state}; verdicts: {', '.join(vs) or 'none'}")
    lines.append(f"wrote {path}, verdicts.md, index.html, verdicts.csv and verdicts.json: {len(rows)} verdicts over "
                 f"{len(recs)} studies; {headline_text(headline_counts(rows))}")
    return "\n".join(lines)


_RULES_TEXT = """\
How to read a verdict (the rules are in `stabsim/judging/rules.py`):
*holds*: the CI lies below the bound at every coordinate (an intersection-union test, no correction needed);
*violated*: significantly above the bound at some coordinate after Holm's correction over the curve's coordinates;
*inconclusive*: neither (the CI straddles the bound), or a qualifier says why no claim is made: *curvature* (the last
decade of the sweep disagrees with the whole), *cannot discriminate* (the slope CI or the claim's band is too wide to
tell a rate 0.25 away), *shape: pre-asymptotic / saturated / floor* (the curve's shape says nothing about the rate on
this range: below the bound's curve while decaying more slowly, flattened by noise that fills the domain, or held at
a term the bound itself keeps);
*matches*: the slope CI meets the claim's band, from the nominal exponent to the bound's own log-log slope over the
measured range (its log factors included);
*faster than claimed*: below the band: consistent with the O(.) bound, but the claimed rate is not attained here;
*inconsistent*: significantly above the band, and not below the bound's curve (unless an errata finding argues an
asymptotic contradiction);
*vacuous*: the bound holds, but measured/bound < 0.01 everywhere (on the scale of a distance for squared quantities)
or the bound is at or above the quantity's trivial bound;
*uninformative*: the row could not have failed (a planted violation at twice the bound, or a rate 0.25 outside the
band, would not have been detected; or the result holds by construction): counted apart, never a finding;
*literal reading*: a failure under a reading of the paper's typesetting its authors would not defend: reported,
not a finding;
*stand-in (no paper value)*: measured on a stand-in data set, so the paper's number is context, not a reference.
Each row is its own claim at 95 % confidence; no correction is made across rows.  Rows that repeat another row's
result (the same fit under two registry keys, one calibration priced at several n) name it in `repeat_of`."""


def _errata_base(reports_dir: Path) -> str:
    """The path from ``reports_dir`` to the repository's docs/errata.md (for links)."""
    try:
        from stabsim.judging.errata import ERRATA_DOC
        return os.path.relpath(Path(ERRATA_DOC), reports_dir).replace(os.sep, "/")
    except ImportError:  # pragma: no cover
        return "../docs/errata.md"


#: papers whose privacy theorems assume eps <= 1 (P3 Thm 1 / 5, docs/errata.md P3-E7): a calibration
#: priced above that range is outside the theorem's assumptions, not a finding about the paper.
EPS_AT_MOST_ONE = ("P3",)


def _ledger_qualifier(r) -> str:
    """The qualifier of a ledger row that is not private: a literal reading, or outside the paper's
    stated eps range; "" otherwise."""
    if r.verdict not in FAILED_VERDICTS + (PROOF_GAP,):
        return ""
    if (r.paper, r.reading) in LITERAL_LEDGER_READINGS:
        return LITERAL_READING
    if r.paper in EPS_AT_MOST_ONE and r.eps_target > 1:
        return "outside the theorem's assumptions"
    return ""


def _ledger_section(reports_dir: Path, study_ids) -> tuple[list[str], list[dict]]:
    """The privacy ledger of the calibrations the reported studies use (``stabsim.privacy.ledger``):
    markdown lines for index.md, and one verdict row per calibration (kind "privacy ledger")."""
    from stabsim.privacy import ledger as _ledger

    try:
        ids = study_ids if isinstance(study_ids, dict) else set(study_ids)   # id -> the profile it ran, or ids
        lrows = _ledger.ledger_rows_for_suite(study_ids=ids)
    except Exception as e:  # the report is still written; say what failed
        return ["## Privacy ledger", "", f"(not available: {type(e).__name__}: {e})", ""], []
    if not lrows:
        return [], []
    fig_path = reports_dir / FIGURE_DIR / "privacy_ledger.png"
    fig_path.parent.mkdir(parents=True, exist_ok=True)
    _ledger.ledger_figure(lrows, fig_path)
    lines = ["## Privacy ledger", "",
             "Every calibration the reported studies use, with the exact epsilon it buys at its delta (analytic "
             "Gaussian mechanism for the non-subsampled compositions, PLD for P4's subsampled steps; see "
             "docs/privacy.md), the sigma that would be needed, and whether it is private at that setting.", "",
             _ledger.ledger_markdown(lrows), "",
             f"![bought vs claimed epsilon]({FIGURE_DIR}/privacy_ledger.png)", ""]
    vrows = []
    for r in lrows:
        case = f"{r.algorithm}, {r.reading}, n={r.n}, T={r.T}, delta={r.delta:.3g}, eps={r.eps_target:g}"
        row = {c: "" for c in VERDICT_COLUMNS}
        row.update(study=r.study, key=f"{r.paper}.ledger.{r.algorithm}", paper=r.paper, reference="calibration",
                   tag="LEDGER", check_kind="privacy ledger", case=case, quantity="eps bought (exact)",
                   verdict=r.verdict, worst_margin=r.eps_target - r.eps_bought,
                   tightness_min=r.tightness, tightness_max=r.tightness, data="synthetic",
                   figure=f"{FIGURE_DIR}/privacy_ledger.png", errata_ids=" ".join(_errata_ids(r.reason)),
                   qualifier=_ledger_qualifier(r),
                   explanation=f"eps bought {r.eps_bought:.4g} ({r.method}) vs claimed {r.eps_target:g}; sigma used "
                               f"{r.sigma:.4g}, needed {r.sigma_needed:.4g} (ratio {r.sigma_ratio:.3g}); {r.reason}")
        vrows.append(row)
    return lines, vrows
