"""The analysis framework: study results -> verdicts + figures -> ``summary.md``.

An *analysis function* ("check") turns a study's spec and its assembled Dataset into a
``CheckResult``::

    from stabsim.analyses import CheckResult, register_check

    @register_check("my_check", description="one line")
    def my_check(spec, ds) -> CheckResult:
        res = CheckResult()
        measure = uas_mean(ds)                       # stabsim.measures
        v = check_bound(measure, bound, "EXPLICIT", key="P1.Thm4.uas")   # stabsim.verdicts
        fig = plot_bound_overlay(measure, [(get(key), bound)], verdicts=[v])
        res.add(v, figure=res.figure("thm4_uas.png", fig), explanation="...")
        return res

A study names its check in ``[study] check = "my_check"``.  ``analyse(study_dir)`` loads
``data.nc`` and the study text stored in it (with the profile and seed of the run), runs the
check, and writes into ``study_dir``:

``summary.md``      description, profile, replicates, seed, the reproducing command, the
                    verdict table (theorem, key, quantity, tag, verdict, worst margin or slope
                    with CI, tightness, explanation) and the figures;
``figures/*.png``   the check's figures;
``analysis.json``   the rows of the table (read by ``stabsim.report``).

Explanations: every verdict that is not "holds"/"consistent" carries one.  A check should
attach its own (``res.add(v, explanation=...)``, e.g. "printed reading; errata P1-E3 says
..."); otherwise the verdict's own notes are used.  A check that raises gives one row with
verdict "error" and the exception text, so a suite run never stops at an analysis failure.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import shlex
import time
import tomllib
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import xarray as xr

from ..store import atomic_write_text
from ..verdict_core import LITERAL_READING, PROOF_GAP
from ..verdicts import OK_VERDICTS, Verdict

__all__ = ["CheckResult", "Check", "CHECKS", "register_check", "get_check", "analyse", "check_name",
           "load_results", "reproduce_command", "ANALYSIS_FILE", "SUMMARY_FILE", "FIGURE_DIR",
           "sweep_slices", "constant_eta", "figure_name", "cell_setting", "check_kind", "CHECK_KINDS", "STAND_IN",
           "rate_explanation"]

ANALYSIS_FILE = "analysis.json"
SUMMARY_FILE = "summary.md"
FIGURE_DIR = "figures"
STAND_IN = "stand-in (no paper value)"

#: registry keys that implement a literal reading of the paper's typesetting which its authors would
#: not defend (the reason, with its docs/errata.md id).  A failed row of such a key keeps its verdict,
#: with the qualifier ``LITERAL_READING``, and is never a headline finding (``verdict_core.is_headline``).
LITERAL_READINGS = {
    "P3.Alg1.sigma2_t.printed": (
        "literal reading (P3-E1): the square root in (sqrt(log(1/delta)) + eps - sqrt(log(1/delta)))^2 is read "
        "as ending before '+ eps'; the paper's next sentence Taylor-expands the term to eps^2/(4 log(1/delta)), "
        "which holds only when the root covers log(1/delta) + eps (the corrected reading)"),
}
#: (paper, privacy-ledger reading) pairs priced under the same literal reading (``stabsim.privacy.ledger``).
LITERAL_LEDGER_READINGS = {("P3", "rho printed")}


@dataclass
class CheckResult:
    """What a check returns.

    verdicts      ``Verdict``s (one per bound key / rate claim), in table order.
    figures       ``(file name, matplotlib Figure or a function drawing it)`` pairs (PNG names, no folders).
    explanations  verdict index -> text (required in effect for failed verdicts; see ``add``).
    links         verdict index -> figure file name shown next to that verdict.
    labels        verdict index -> a short label for the row (e.g. "n=100", "eta0 = 0 reading").
    data          verdict index -> "synthetic" (default), "real" or "stand-in".
    measured      measured constants the check used (EXPLICIT-DD inputs, certificates, ...).
    notes         study-level remarks (printed under the table).
    """

    verdicts: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    explanations: dict = field(default_factory=dict)
    links: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)
    measured: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def add(self, verdict: Verdict, *, figure: str | None = None, explanation: str | None = None,
            label: str | None = None, data: str = "synthetic", stand_in_for: str | None = None) -> Verdict:
        """Append a verdict row.

        ``data``: what the row was measured on: "synthetic", "real" (the paper's own data set) or
        "stand-in".  ``stand_in_for``: the paper's data set that a stand-in replaces; a row
        compared with a number the paper reported on *other* data gets the verdict
        "stand-in (no paper value)" (its rule verdict stays in the notes) and is left out of
        the headline counts.
        """
        if data not in ("synthetic", "real", "stand-in"):
            raise ValueError(f"data={data!r} is not allowed: use 'synthetic', 'real' or 'stand-in'")
        if stand_in_for:
            data = "stand-in"
            verdict = verdict.relabel(STAND_IN, note=f"stand-in data set for the paper's {stand_in_for}: "
                                                     f"the paper's number is context, not a reference value")
        if verdict.failed and verdict.key in LITERAL_READINGS:
            verdict = verdict.relabel(verdict.verdict, LITERAL_READING, note=LITERAL_READINGS[verdict.key])
        if verdict.verdict == "violated" and check_kind(verdict) == "privacy":
            # a calibration priced at the paper's own sensitivity bound: a gap in the argument, not a
            # measured failure of privacy (verdict_core.PROOF_GAP)
            verdict = verdict.relabel(PROOF_GAP, verdict.qualifier,
                                      note="priced at the paper's sensitivity bound: the argument does not certify "
                                           "the claim; whether the algorithm is private is the audits' question")
        i = len(self.verdicts)
        self.verdicts.append(verdict)
        self.data[i] = data
        if figure:
            self.links[i] = figure
        if explanation:
            self.explanations[i] = explanation
        if label:
            self.labels[i] = label
        return verdict

    def figure(self, name: str, fig) -> str:
        """Register ``fig`` under the file name ``name`` (``.png`` added); returns the name.
        ``fig``: a matplotlib Figure, or a function of no arguments that draws it; ``analyse``
        draws, saves and closes those one at a time, so that a check of many figures (P1 Thm 4's
        tightness sweep: 24) does not hold them all at once."""
        name = name if name.endswith(".png") else name + ".png"
        self.figures.append((name, fig))
        return name

    def explanation(self, i: int) -> str:
        v = self.verdicts[i]
        text = self.explanations.get(i, "")
        if not text and v.verdict not in OK_VERDICTS:
            text = "; ".join(v.notes) or v.summary()
        return text


@dataclass
class Check:
    name: str
    func: Callable
    description: str = ""


CHECKS: dict[str, Check] = {}


def register_check(name: str, *, description: str = "") -> Callable:
    """Decorator registering ``func(spec, ds) -> CheckResult`` as the analysis ``name``."""

    def deco(func):
        if name in CHECKS and CHECKS[name].func is not func:
            raise ValueError(f"analysis check {name!r} is registered twice")
        CHECKS[name] = Check(name, func, description or (func.__doc__ or "").strip().split("\n")[0])
        return func
    return deco


def get_check(name: str) -> Check:
    _import_builtin()
    if name not in CHECKS:
        import difflib

        close = difflib.get_close_matches(name, list(CHECKS), n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise KeyError(f"no analysis check {name!r}.{hint} Registered: {', '.join(sorted(CHECKS))}")
    return CHECKS[name]


def _import_builtin():
    """Register every built-in check (``stabsim.analyses``) and study kind (through the study
    registry, ``stabsim.study.KIND_MODULES``): an analysis never imports an experiment itself."""
    from ..builtin import load_analyses
    from ..study import load_kinds

    load_analyses()
    load_kinds()


# ---- spec / data -----------------------------------------------------------------------------

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
    from ..study import parse_study

    study_dir = Path(study_dir)
    data = study_dir / "data.nc"
    if not data.is_file():
        raise FileNotFoundError(f"{data} does not exist (run the study first)")
    from ..data_integrity import DamagedData, verify_data

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
    _import_builtin()  # kinds registered by the checks modules
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
    from ..study.index import default_studies_dir

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


# ---- formatting ----------------------------------------------------------------------------

def _g(x, digits=3) -> str:
    if x is None:
        return ""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(x):
        return ""
    return f"{x:.{digits}g}"


def _theorem(key: str) -> str:
    from ..theory.registry import get

    try:
        b = get(key)
    except KeyError:
        return key
    return f"{b.paper} {b.ref}"


def rate_explanation(v: Verdict, failure: str) -> str | None:
    """The explanation of a rate row: none when it succeeds, ``failure`` (the check's reading of a
    significant failure) when it failed, else a no-claim text from the verdict's own notes (an
    "inconclusive (curvature)" row is not a slow decay)."""
    if v.ok:
        return None
    if v.failed:
        return failure
    return f"{v.label}: no claim either way; " + "; ".join(v.notes)


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
    is closed: a suite of ~70 studies otherwise ends holding all their figures (issue #17, memory)."""
    import sys

    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    for num in set(plt.get_fignums()) - before:
        plt.close(num)


#: kinds of check, counted separately in the report (a theorem bound is not a reproduction).
CHECK_KINDS = ("bound", "rate", "privacy", "audit", "condition", "reproduction", "identity", "other")
_REPRO_TAGS = ("REPRO", "EXPERIMENT", "QUALITATIVE", "CLAIM")


def check_kind(v: Verdict) -> str:
    """The kind of check a verdict is: bound, rate, privacy (calibration), condition (a theorem's
    assumption), reproduction (a paper's experiment or claim), identity (formula = calibration:
    a self-consistency test, not a finding), audit (an empirical privacy audit against the
    accountant, and its noise-scaled-down sanity rows) or other."""
    if v.tag == "IDENTITY":
        return "identity"
    if v.tag in ("AUDIT", "SANITY"):
        return "audit"
    if v.tag in _REPRO_TAGS:  # a paper's experiment, even when judged by a trend's slope
        return "reproduction"
    if v.tag == "CONDITION":
        q = v.quantity.lower()
        return "privacy" if any(w in q for w in ("privacy", "sigma", "rho", "eps", "noise", "delta")) else "condition"
    if v.slope is not None or v.tag == "RATE":
        return "rate"
    if v.tag in ("EXPLICIT", "EXPLICIT-DD"):
        return "bound"
    return "other"


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


def _md_cell(s) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def md_table(rows: list[dict], cols: list[tuple[str, str]]) -> str:
    out = ["| " + " | ".join(h for h, _ in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        out.append("| " + " | ".join(_md_cell(r.get(k, "")) for _, k in cols) + " |")
    return "\n".join(out)


# ---- analyse ---------------------------------------------------------------------------------

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
    from ..plots import save

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
    # interrupted while its analyses run beside it, stabsim.analyses.background) leaves the old
    # analysis.json, older than data.nc, which the report redoes (stabsim.report.collect)
    atomic_write_text(study_dir / SUMMARY_FILE, _summary_md(record, ds, manifest))
    atomic_write_text(study_dir / ANALYSIS_FILE, json.dumps(record, indent=1, default=str))
    return record


def _mark_outside(spec, res: CheckResult) -> None:
    """Rows of a bound the study compares outside its theorem's assumptions (opted in,
    ``stabsim.applicability``): qualifier "outside the theorem's assumptions", mismatches in the notes."""
    from ..applicability import OUTSIDE, mark_outside

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


# ---- helpers shared by the paper checks ---------------------------------------------------------

def sweep_slices(spec, ds, consumed=()):
    """Yield (label, cell params, sub-dataset) over the sweep axes of ``ds`` not in ``consumed``."""
    import itertools

    axes = [a for a in spec.sweep if a not in consumed and a in ds.dims]
    for combo in itertools.product(*(list(ds[a].values) for a in axes)):
        sel = {a: (v.item() if hasattr(v, "item") else v) for a, v in zip(axes, combo)}
        params = spec.cell_params({a: v for a, v in sel.items() if a in spec.axes})
        sub = ds.sel(sel) if sel else ds
        yield ", ".join(f"{a}={v}" for a, v in sel.items()), params, sub


def constant_eta(params) -> float:
    """The cell's step size, which must be a constant (not a schedule)."""
    eta = params["algorithm"]["eta"]
    if isinstance(eta, str):
        raise ValueError(f"this check needs a constant step size, got eta = {eta!r}")
    return float(eta)


def figure_name(key: str, label: str = "") -> str:
    """PNG file name for a bound key and a case label, e.g. ("P1.Thm4.uas", "n=100") -> thm4_uas_n-100.png."""
    s = re.sub(r"^P\d\.", "", key).replace(".", "_").lower()
    if label:
        s += "_" + "".join(c if c.isalnum() else "-" for c in label.replace(", ", "_"))
    return s + ".png"


def cell_setting(params, extra: str = "") -> str:
    """One-line description of a cell's loss, problem, n, eta and T (for figure titles)."""
    a, d = params["algorithm"], params["data"]
    parts = [a.get("loss"), d.get("problem") or d.get("dataset") or (Path(str(d["file"])).name if d.get("file") else None)]
    parts += [f"{k}={v}" for k, v in (("n", d.get("n")), ("eta", a.get("eta")), ("T", a.get("T"))) if v is not None]
    s = ", ".join(str(p) for p in parts if p is not None and p != "")
    return s + (f", {extra}" if extra else "")
