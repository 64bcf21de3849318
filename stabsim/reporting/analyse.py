"""One study's analysis: its check run on ``data.nc``, written beside it (``analyse``).

``analyse(study_dir)`` loads ``data.nc`` and the study text stored in it (with the profile and
seed of the run; ``load_results``), runs the check the study names (``[study] check``, looked up
in ``stabsim.registry.checks``), and writes into ``study_dir``:

``summary.md``      description, profile, replicates, seed, the reproducing command
                    (``reproduce_command``), the verdict table (theorem, key, quantity, tag,
                    verdict, worst margin or slope with CI, tightness, explanation) and the figures;
``figures/*.png``   the check's figures;
``analysis.json``   the rows of the table (read by ``stabsim.reporting.report``).

What a check returns and how its rows are explained: ``stabsim.analyses.base``.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import shlex
import time
import tomllib
import traceback
from pathlib import Path

import numpy as np
import xarray as xr

from stabsim.analyses.base import CheckResult, _g, check_kind, md_table
from stabsim.runtime.atomic_files import atomic_write_text
from stabsim.runtime.data_integrity import DamagedData, verify_data
from stabsim.registry import get_check, load_builtin
from stabsim.study import parse_study
from stabsim.study.index import default_studies_dir

ANALYSIS_FILE = "analysis.json"
SUMMARY_FILE = "summary.md"
FIGURE_DIR = "figures"


# ---- the study's spec and data -----------------------------------------------------------------

def check_name(spec) -> str | None:
    """The check a study names: ``[study] check`` (a profile may override it)."""
    try:
        raw = tomllib.loads(spec.text or "")
    except tomllib.TOMLDecodeError:
        return None
    name = raw.get("study", {}).get("check")
    if spec.profile:
        name = raw.get("profiles", {}).get(spec.profile, {}).get("study", {}).get("check", name)
    return name


def load_results(study_dir):
    """(spec, ds, manifest) of a finished study directory (``ds`` loaded into memory)."""
    study_dir = Path(study_dir)
    data = study_dir / "data.nc"
    if not data.is_file():
        raise FileNotFoundError(f"{data} does not exist (run the study first)")
    try:
        ds = verify_data(data)  # every value read, every checksum checked
    except DamagedData as e:
        if not getattr(e, "legacy", False):
            raise
        import warnings

        warnings.warn(f"{e}; analysing it unverified (run the study again to get a verified data.nc)",
                      stacklevel=2)
        with xr.open_dataset(data, engine="h5netcdf") as ds:
            ds = ds.load()
    manifest = {}
    if (study_dir / "study.json").is_file():
        manifest = json.loads((study_dir / "study.json").read_text(encoding="utf-8"))
    load_builtin()  # the kinds and checks a stored study may name
    text = ds.attrs.get("study_file", "")
    profile = ds.attrs.get("study_profile") or None
    path = ds.attrs.get("study_path") or None
    # the study was refused at run time where a bound is outside its assumptions and it did not opt
    # in: a mismatch now was opted in (file or Python argument), and its rows are marked (analyse)
    spec = parse_study(text, path=path, profile=profile, seed=int(ds.attrs.get("seed", 0)),
                       outside_assumptions=True)
    return spec, ds, manifest


def _study_argument(spec) -> str:
    """How ``stabsim run`` finds the study again: its id for a file of the default studies folder,
    else the path of the study file it was run from (a user's file is no id ``run`` knows)."""
    path = getattr(spec, "path", None)
    if not path or path == "<study>":
        return spec.id
    p = Path(path)
    try:
        builtin = p.resolve().parent == default_studies_dir().resolve() and p.stem == spec.id
    except OSError:
        builtin = False
    return spec.id if builtin else str(path)


def reproduce_command(spec, out_dir, backend=None) -> str:
    """The ``stabsim run`` command of these results; ``backend``: the one they were computed on
    (data.nc's ``study_backend``), named when the study file's ``[run] backend`` differs."""
    args = ["stabsim", "run", _study_argument(spec)]
    if spec.profile == "quick":
        args.append("--quick")
    elif spec.profile:
        args += ["--profile", spec.profile]
    args += ["--seed", str(spec.seed), "--out", str(out_dir)]
    if backend is not None and backend != spec.backend:
        args += ["--backend", backend]
    return shlex.join(args)


# ---- the rows ----------------------------------------------------------------------------------------

def _theorem(key: str) -> str:
    from stabsim.theory.registry import get

    try:
        b = get(key)
    except KeyError:
        return key
    return f"{b.paper} {b.ref}"


def _row(res: CheckResult, i: int, figure_prefix: str = FIGURE_DIR + "/") -> dict:
    v = res.verdicts[i]
    r = v.to_row()
    if v.slope is not None:
        value = f"slope {_g(v.slope)} {r['slope_ci']} vs {_g(v.exponent)}"
        if v.local_slope is not None:
            value += f"; last decade {_g(v.local_slope)} {r['local_slope_ci']}"
    elif v.worst_margin is not None:
        at = f" at {r['worst_at']}" if r["worst_at"] else ""
        value = f"margin {_g(v.worst_margin)}{at}"
    else:
        value = ""
    tight = ""
    if np.isfinite(v.tightness_min):
        tight = f"{_g(v.tightness_min, 2)}-{_g(v.tightness_max, 2)}"
    return {"theorem": _theorem(v.key), "key": v.key, "label": res.labels.get(i, ""), "quantity": v.quantity,
            "tag": v.tag, "check_kind": check_kind(v), "verdict": v.verdict, "qualifier": v.qualifier,
            "verdict_label": v.label, "value": value, "tightness": tight,
            "figure": (figure_prefix + res.links[i]) if i in res.links else "",
            "explanation": res.explanation(i), "notes": r["notes"], "n_replicates": v.n_replicates,
            "confidence": _num(v.level), "worst_margin": _num(v.worst_margin), "worst_at": r["worst_at"],
            "n_significant": v.n_significant, "multiplicity": v.multiplicity,
            "slope": _num(v.slope), "slope_ci": r["slope_ci"], "slope_lower": _num(v.slope_lower),
            "slope_upper": _num(v.slope_upper), "exponent": _num(v.exponent), "log_factors": v.log_factors,
            "local_slope": _num(v.local_slope), "local_slope_lower": _num(v.local_lower),
            "local_slope_upper": _num(v.local_upper),
            "tightness_min": _num(v.tightness_min), "tightness_max": _num(v.tightness_max),
            "lower_tightness_max": _num(getattr(v, "lower_tightness_max", math.nan)),
            "vacuous": v.vacuous, "can_fail": v.can_fail, "power_note": v.power_note,
            "shape_slope": _num(v.shape_slope), "data": res.data.get(i, "synthetic")}


def _num(x):
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


# ---- figures ---------------------------------------------------------------------------------------

def _open_figures() -> set:
    """Numbers of the pyplot figures open now (empty when pyplot was never imported)."""
    import sys

    plt = sys.modules.get("matplotlib.pyplot")
    return set(plt.get_fignums()) if plt is not None else set()


def _close_figure(fig) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)


def _close_figures_since(before: set) -> None:
    """Close the pyplot figures a check opened (saved by then).  pyplot keeps every figure until it
    is closed: a suite of ~70 studies otherwise ends holding all their figures."""
    import sys

    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    for num in set(plt.get_fignums()) - before:
        plt.close(num)


# ---- analyse -------------------------------------------------------------------------------------

def analyse(study_dir, *, run_seconds: float | None = None, out_dir=None) -> dict:
    """Run the study's check on ``study_dir/data.nc``; write summary.md, figures/, analysis.json.

    Returns the analysis record (the content of analysis.json).  A study without a check, or
    a check that raises, still gets a summary (with the reason) and a record.
    """
    study_dir = Path(study_dir)
    out_dir = study_dir.parent if out_dir is None else Path(out_dir)
    t0 = time.perf_counter()
    spec, ds, manifest = load_results(study_dir)
    name = check_name(spec)
    res, error = CheckResult(), None
    if name is None:
        error = "the study names no analysis check ([study] check = \"...\")"
    else:
        open_before = _open_figures()
        try:
            res = get_check(name).func(spec, ds)
            _mark_outside(spec, res)
        except Exception as e:  # the suite goes on; the summary says what went wrong
            error = f"check {name!r} failed: {type(e).__name__}: {e}"
            res = CheckResult(notes=[traceback.format_exc(limit=4)])
    figdir = study_dir / FIGURE_DIR
    for old in figdir.glob("*.png") if figdir.is_dir() else []:
        old.unlink()
    from stabsim.judging.plots import save

    failed = []
    for fname, fig in res.figures:
        try:
            drawn = fig() if callable(fig) else fig
        except Exception as e:  # a figure drawn on demand fails like its check: said in the summary
            failed.append(f"figure {fname!r} of check {name!r} failed: {type(e).__name__}: {e}")
            res.links = {i: f for i, f in res.links.items() if f != fname}   # no link to a missing PNG
            continue
        save(drawn, figdir / fname)
        if drawn is not fig:
            _close_figure(drawn)
    if failed:
        error = "; ".join(([error] if error else []) + failed)
    if name is not None:
        _close_figures_since(open_before)
    rows = [_row(res, i) for i in range(len(res.verdicts))]
    if error:
        rows.append({"theorem": "", "key": name or "(no check)", "label": "", "quantity": "", "tag": "", "verdict": "error",
                     "check_kind": "other", "verdict_label": "error", "qualifier": "",
                     "value": "", "tightness": "", "figure": "", "explanation": error})
    prev = {}
    if (study_dir / ANALYSIS_FILE).is_file():
        try:
            prev = json.loads((study_dir / ANALYSIS_FILE).read_text(encoding="utf-8"))
        except ValueError:
            prev = {}
    record = {
        "study_id": spec.id, "description": spec.description, "kind": spec.kind, "check": name,
        "profile": spec.profile, "seed": spec.seed, "replicates": spec.replicates,
        "cells": len(spec.cells()), "sweep": {k: v for k, v in spec.sweep.items()},
        "command": reproduce_command(spec, out_dir, ds.attrs.get("study_backend")), "fingerprint": spec.fingerprint,
        "backend": str(ds.attrs.get("study_backend", "cpu")), "device": str(ds.attrs.get("study_device", "cpu")),
        "run_seconds": run_seconds if run_seconds is not None else prev.get("run_seconds"),
        "analysis_seconds": None, "analysed": _dt.datetime.now().isoformat(timespec="seconds"),
        "measured": {k: _jsonable(v) for k, v in res.measured.items()}, "notes": list(res.notes),
        "error": error, "rows": rows,
    }
    record["analysis_seconds"] = round(time.perf_counter() - t0, 2)
    # each file whole or not at all, analysis.json last: an analysis stopped on the way (a run
    # interrupted while its analyses run beside it, stabsim.reporting.background) leaves the old
    # analysis.json, older than data.nc, which the report redoes (stabsim.reporting.report.collect)
    atomic_write_text(study_dir / SUMMARY_FILE, _summary_md(record, ds, manifest))
    atomic_write_text(study_dir / ANALYSIS_FILE, json.dumps(record, indent=1, default=str))
    return record


def _mark_outside(spec, res: CheckResult) -> None:
    """Rows of a bound the study compares outside its theorem's assumptions (opted in,
    ``stabsim.judging.applicability``): qualifier "outside the theorem's assumptions", mismatches in the notes."""
    from stabsim.judging.applicability import OUTSIDE, mark_outside

    outside = getattr(spec, "outside_assumptions", None) or {}
    for i, v in enumerate(res.verdicts):
        if v.key in outside:
            res.verdicts[i] = mark_outside(v, outside[v.key])
            why = f"{OUTSIDE}: " + "; ".join(outside[v.key])
            res.explanations[i] = f"{res.explanations[i]}; {why}" if res.explanations.get(i) else why
    for key, mism in outside.items():
        res.notes.append(f"{key} is compared outside its theorem's assumptions (outside_assumptions): "
                         + "; ".join(mism))


def _jsonable(v):
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


COLUMNS = [("theorem", "theorem"), ("key", "key"), ("case", "label"), ("quantity", "quantity"), ("tag", "tag"),
           ("verdict", "verdict_label"), ("vacuous", "vacuous_text"), ("worst margin / slope (CI)", "value"), ("tightness", "tightness"),
           ("figure", "figure"), ("explanation", "explanation")]


def _summary_md(rec: dict, ds, manifest) -> str:
    rows = [dict(r, figure=f"[{Path(r['figure']).name}]({r['figure']})" if r.get("figure") else "",
                 vacuous_text="vacuous" if r.get("vacuous") else "")
            for r in rec["rows"]]
    rs = rec.get("run_seconds")
    lines = [f"# {rec['study_id']}", "", rec["description"] or "", "",
             f"- kind: `{rec['kind']}`, check: `{rec['check']}`",
             f"- profile: `{rec['profile'] or 'custom'}`, replicates per cell: {rec['replicates']}, cells: {rec['cells']}, "
             f"seed: {rec['seed']}",
             f"- sweep: {', '.join(f'{k} = {v}' for k, v in rec['sweep'].items()) or '(none)'}",
             f"- reproduce: `{rec['command']}`",
             f"- run time: {_g(rs) + ' s' if rs is not None else 'n/a'}; analysis: {rec['analysis_seconds']} s; "
             f"stabsim {ds.attrs.get('stabsim_version', '?')}, commit {ds.attrs.get('git_commit', '') or 'n/a'}, "
             f"fingerprint {rec['fingerprint']}, backend {rec.get('backend', 'cpu')}"
             f"{' (' + rec['device'] + ')' if rec.get('backend') == 'cuda' else ''}",
             "", "## Verdicts", "", md_table(rows, COLUMNS), ""]
    if rec["measured"]:
        lines += ["## Measured inputs", ""]
        lines += [f"- `{k}` = {_g(v, 6) if isinstance(v, (int, float)) else v}" for k, v in rec["measured"].items()]
        lines.append("")
    if rec["notes"]:
        lines += ["## Notes", ""] + [f"- {n}" if "\n" not in n else f"```\n{n}\n```" for n in rec["notes"]] + [""]
    if rec.get("error"):
        lines += ["## Error", "", rec["error"], ""]
    figs = sorted({r["figure"] for r in rec["rows"] if r.get("figure")})
    if figs:
        lines += ["## Figures", ""] + [f"![{Path(f).name}]({f})" for f in figs] + [""]
    return "\n".join(lines)
