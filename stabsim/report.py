"""``stabsim report``: one table over every analysed study in an output folder.

``report(out_dir, reports_dir="reports")`` (re-)analyses studies whose ``data.nc`` is newer
than their ``analysis.json`` (``stabsim.checks.analyse``), copies their figures to
``reports_dir/figures/<study>/`` and writes ``reports_dir/index.md``: a header (command,
date, wall time, profile) and one row per verdict (study, theorem key, verdict, margin or
slope, tightness, figure, summary, explanation).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import sys
from pathlib import Path

from .checks.base import ANALYSIS_FILE, FIGURE_DIR, SUMMARY_FILE, analyse, md_table

__all__ = ["report", "collect"]


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


def _copy_summary(sdir: Path, study_id: str, reports_dir: Path) -> str | None:
    """Copy a study's summary.md and all its figures into ``reports_dir`` (so the report stands
    on its own, without the ``out/`` folder); return the summary's path relative to it."""
    src = sdir / SUMMARY_FILE
    if not src.is_file():
        return None
    fig_dir = reports_dir / FIGURE_DIR / study_id
    for png in sorted((sdir / FIGURE_DIR).glob("*.png")):
        fig_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy2(png, fig_dir / png.name)
    dst = reports_dir / "summaries" / f"{study_id}.md"
    dst.parent.mkdir(parents=True, exist_ok=True)
    text = src.read_text(encoding="utf-8").replace(f"]({FIGURE_DIR}/", f"](../{FIGURE_DIR}/{study_id}/")
    dst.write_text(text, encoding="utf-8")
    return dst.relative_to(reports_dir).as_posix()


def report(out_dir="out", reports_dir=None, *, command: str | None = None,
           wall_seconds: float | None = None) -> str:
    """Write ``reports_dir/index.md`` over the studies in ``out_dir``; returns a short message.

    ``reports_dir`` default: ``reports/`` beside ``out_dir`` (``./reports`` for ``out``)."""
    out_dir = Path(out_dir)
    reports_dir = out_dir.parent / "reports" if reports_dir is None else Path(reports_dir)
    recs = collect(out_dir)
    if not recs:
        return f"no finished studies in {out_dir}; nothing reported"
    reports_dir.mkdir(parents=True, exist_ok=True)
    rows, n_ok, n_bad = [], 0, 0
    counts, n_unexplained = {}, 0
    for rec in recs:
        sdir = Path(rec["dir"])
        summ = _copy_summary(sdir, rec["study_id"], reports_dir) or os.path.relpath(sdir / SUMMARY_FILE, reports_dir)
        for r in rec.get("rows", []) or [{"verdict": "error", "explanation": rec.get("error", "")}]:
            fig = ""
            if r.get("figure"):
                src = sdir / r["figure"]
                dst = reports_dir / FIGURE_DIR / rec["study_id"] / Path(r["figure"]).name
                if src.is_file():
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, dst)
                    fig = f"[png]({dst.relative_to(reports_dir).as_posix()})"
            ok = r.get("verdict") in ("holds", "consistent")
            n_ok += ok
            n_bad += not ok
            counts[r.get("verdict", "")] = counts.get(r.get("verdict", ""), 0) + 1
            n_unexplained += (not ok) and not str(r.get("explanation", "")).strip()
            rows.append({"study": rec["study_id"], "key": r.get("key", ""), "case": r.get("label", ""),
                         "verdict": ("**" + r.get("verdict", "") + "**") if not ok else r.get("verdict", ""),
                         "value": r.get("value", ""), "tightness": r.get("tightness", ""), "figure": fig,
                         "summary": f"[summary]({Path(summ).as_posix()})", "explanation": r.get("explanation", "")})
    profiles = sorted({str(r.get("profile")) for r in recs})
    run_total = sum(r.get("run_seconds") or 0 for r in recs) + sum(r.get("analysis_seconds") or 0 for r in recs)
    wall = wall_seconds if wall_seconds is not None else run_total
    cmd = command or " ".join(["stabsim", "report", str(out_dir)])
    head = [
        "# stabsim report", "",
        f"- command: `{cmd}`",
        f"- date: {_dt.datetime.now().isoformat(timespec='seconds')}",
        f"- wall time: {wall:.1f} s" + ("" if wall_seconds is not None else " (sum of the studies' run + analysis times)"),
        f"- profile: {', '.join(profiles)}",
        f"- studies: {len(recs)} in `{out_dir}`; {n_ok + n_bad} verdicts: {n_ok} hold/consistent, {n_bad} not ("
        + ", ".join(f"{c} {v}" for v, c in sorted(counts.items(), key=lambda kv: -kv[1])) + "); "
        + (f"**{n_unexplained} not holding without an explanation**" if n_unexplained
           else "every row that does not hold carries its explanation"),
        "- reproduce one study: the command in its summary; all: `stabsim run suite"
        + (" --quick" if profiles == ["quick"] else "") + "`",
        "",
    ]
    cols = [("study", "study"), ("theorem key", "key"), ("case", "case"), ("verdict", "verdict"),
            ("margin / slope (CI)", "value"), ("tightness", "tightness"), ("figure", "figure"),
            ("summary", "summary"), ("explanation", "explanation")]
    studies = ["## Studies", ""] + [f"- **{r['study_id']}** ({r.get('profile')}, {r.get('replicates')} replicates, "
                                     f"seed {r.get('seed')}, run {float(r.get('run_seconds') or 0):.1f} s): "
                                     f"{r.get('description', '')}" for r in recs]
    text = "\n".join(head + ["## Verdicts", "", md_table(rows, cols), ""] + studies + [""])
    path = reports_dir / "index.md"
    path.write_text(text, encoding="utf-8")
    lines = []
    for rec in recs:
        vs = [r.get("verdict", "") for r in rec.get("rows", [])]
        state = f"finished: {Path(rec['dir']) / 'data.nc'}" if (Path(rec["dir"]) / "data.nc").is_file() else "no data"
        lines.append(f"{rec['study_id']} ({rec.get('kind', '?')}, profile {rec.get('profile')}, seed {rec.get('seed')}): "
                     f"{state}; verdicts: {', '.join(vs) or 'none'}")
    lines.append(f"wrote {path}: {len(rows)} verdicts over {len(recs)} studies ({n_bad} not holding)")
    return "\n".join(lines)
