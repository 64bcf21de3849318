"""The analysis framework: what a check returns (``CheckResult``) and the helpers the checks share.

An *analysis function* ("check") turns a study's spec and its assembled Dataset into a
``CheckResult``::

    from stabsim.analyses import CheckResult, register_check

    @register_check("my_check", description="one line")
    def my_check(spec, ds) -> CheckResult:
        res = CheckResult()
        measure = uas_mean(ds)                       # stabsim.engine.measures
        v = check_bound(measure, bound, "EXPLICIT", key="P1.Thm4.uas")   # stabsim.judging.rules
        fig = plot_bound_overlay(measure, [(get(key), bound)], verdicts=[v])
        res.add(v, figure=res.figure("thm4_uas.png", fig), explanation="...")
        return res

A study names its check in ``[study] check = "my_check"`` (the registry of checks:
``stabsim.registry.checks``).  ``stabsim.reporting.analyse.analyse(study_dir)`` loads ``data.nc`` and
the study text stored in it, runs the check, and writes ``summary.md``, ``figures/*.png`` and
``analysis.json`` into ``study_dir``.

Explanations: every verdict that is not "holds"/"consistent" carries one.  A check should
attach its own (``res.add(v, explanation=...)``, e.g. "printed reading; errata P1-E3 says
..."); otherwise the verdict's own notes are used.  A check that raises gives one row with
verdict "error" and the exception text, so a suite run never stops at an analysis failure.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from stabsim.judging.verdict import LITERAL_READING, PROOF_GAP
from stabsim.judging.rules import OK_VERDICTS, Verdict

__all__ = ["CheckResult", "sweep_slices", "constant_eta", "figure_name", "cell_setting", "check_kind", "CHECK_KINDS",
           "STAND_IN", "rate_explanation", "md_table"]

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
        ``fig``: a matplotlib Figure, or a function of no arguments that draws it;
        ``stabsim.reporting.analyse.analyse`` draws, saves and closes those one at a time, so that a
        check of many figures (P1 Thm 4's tightness sweep: 24) does not hold them all at once."""
        name = name if name.endswith(".png") else name + ".png"
        self.figures.append((name, fig))
        return name

    def explanation(self, i: int) -> str:
        v = self.verdicts[i]
        text = self.explanations.get(i, "")
        if not text and v.verdict not in OK_VERDICTS:
            text = "; ".join(v.notes) or v.summary()
        return text


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


def rate_explanation(v: Verdict, failure: str) -> str | None:
    """The explanation of a rate row: none when it succeeds, ``failure`` (the check's reading of a
    significant failure) when it failed, else a no-claim text from the verdict's own notes (an
    "inconclusive (curvature)" row is not a slow decay)."""
    if v.ok:
        return None
    if v.failed:
        return failure
    return f"{v.label}: no claim either way; " + "; ".join(v.notes)


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


def _md_cell(s) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def md_table(rows: list[dict], cols: list[tuple[str, str]]) -> str:
    out = ["| " + " | ".join(h for h, _ in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        out.append("| " + " | ".join(_md_cell(r.get(k, "")) for _, k in cols) + " |")
    return "\n".join(out)


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
