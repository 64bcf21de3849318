"""What the bound and rate checks of ``stabsim.judging.rules`` share: the ``Verdict`` record (one row
of a report, ``to_row()``), the verdict classes (``OK_VERDICTS``, ``FAILED_VERDICTS``), the
vacuity threshold, and the consistency check of a registered key's tag and quantity
(``stabsim.theory``).  The rules: the docstring of ``stabsim.judging.rules``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import xarray as xr

BOUND_TAGS = ("EXPLICIT", "EXPLICIT-DD")
#: measured / bound below this at every coordinate: the bound "holds" but says almost nothing.
VACUOUS_TIGHTNESS = 0.01
#: verdicts that are good news for the claim checked (the rest: a significant failure, or no claim).
OK_VERDICTS = ("holds", "consistent", "matches", "faster than claimed", "private")
#: verdicts that claim a failure; only ever given when significant.
FAILED_VERDICTS = ("violated", "inconsistent")
#: the verdict of a privacy calibration that the paper's own argument does not certify: the exact
#: epsilon that the noise buys *at the paper's sensitivity bound* exceeds the claimed one.  It is
#: an erratum of the argument (a proof gap), not a measured failure: the algorithm may still be
#: private (the true sensitivity can be far smaller, e.g. the diameter of W bounds an output in W),
#: and only an audit that witnesses a larger privacy loss could show that it is not.  Never a
#: finding; counted apart as an erratum of the paper's argument.
PROOF_GAP = "not certified by the paper's argument"
#: qualifier of a failed row that rests on a literal reading of the paper's typesetting which its
#: authors would not defend (docs/errata.md says which): reported, never a headline finding.
LITERAL_READING = "literal reading"
#: qualifiers of a failed row that is not a finding about the paper: a literal typesetting reading,
#: a bound overlaid, at the user's explicit request, or a calibration priced, outside its theorem's
#: assumptions (``stabsim.judging.applicability``; the privacy ledger),
#: and a reproduction that fails under a set-up stabsim had to choose where the paper gives none.
SETUP_NOT_THE_PAPERS = "set-up not the paper's"
NOT_A_CLAIM_OF_THE_PAPER = (LITERAL_READING, "outside the theorem's assumptions", SETUP_NOT_THE_PAPERS)


# ---------------------------------------------------------------------------------------------
# Verdict
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    """The outcome of one bound or rate check.

    key          registry key of the bound (e.g. ``"P1.Thm4.uas"``) or a free label.
    quantity     the measured quantity (``stabsim.theory.QUANTITIES`` name).
    tag          EXPLICIT, EXPLICIT-DD, RATE, CONDITION, IDENTITY, REPRO, ... (the kind of check).
    verdict      bounds: "holds" / "violated" / "inconclusive"; rates: "matches" /
                 "faster than claimed" / "inconsistent" / "inconclusive" (module rules);
                 other checks: "holds" / "violated", "consistent" / "inconsistent".
    qualifier    why a verdict is what it is, in a word or two ("saturated", "curvature",
                 "stand-in (no paper value)", ...); shown in brackets after the verdict.
    n_replicates, level   replicates behind the measure and the CI's confidence level.
    worst_margin, worst_at  bounds: min over coordinates of bound - CI upper end, and where.
    n_significant, multiplicity  bounds: coordinates significantly above the bound after the
                 stated correction (``multiplicity``, e.g. "Holm over 12 coordinates").
    slope, slope_lower, slope_upper, exponent, tol, kind, rate_matched   rates (``exponent`` is
                 the nominal polynomial exponent; ``log_factors`` names the log factors beside it).
    local_slope, local_lower, local_upper  the slope over the last decade of the sweep.
    shape_slope  rates: the log-log slope of the bound's own expression over the measured range (log
                 factors included); the claim's band runs from it to ``exponent``.
    can_fail     whether the design could have detected a failure of the claimed size (bounds: a
                 quantity at twice the bound, at the measured relative precision; rates: a rate
                 ``RATE_RESOLUTION`` outside the band); False makes the row *uninformative*: it
                 is counted apart and is never a finding.  None when not assessed.
    power_note   how ``can_fail`` was decided, or why the row cannot fail.
    tightness_min, tightness_max  range of measure/bound over the coordinates (NaN if unknown).
    lower_tightness_max  max over the coordinates of (CI lower end)/bound, each lower end at the
                 CI's pointwise level (not simultaneous over the coordinates): how close the data
                 put the quantity to the bound; for a lower estimate of a supremum (a searched
                 worst-case neighbour) it is "best lower estimate / bound".
    vacuous      True when the bound is vacuous (module rules); None when not assessed.
    notes        short remarks (violations, caveats).
    details      per-coordinate Dataset (bound, margin, tightness, status) or the slope fit.
    """

    key: str
    quantity: str
    tag: str
    verdict: str
    n_replicates: int
    level: float
    worst_margin: float | None = None
    worst_at: Mapping[str, object] = field(default_factory=dict)
    slope: float | None = None
    slope_lower: float | None = None
    slope_upper: float | None = None
    exponent: float | None = None
    tol: float | None = None
    kind: str | None = None
    rate_matched: bool | None = None
    tightness_min: float = math.nan
    tightness_max: float = math.nan
    lower_tightness_max: float = math.nan
    notes: tuple[str, ...] = ()
    details: object = field(default=None, repr=False, compare=False)
    qualifier: str = ""
    vacuous: bool | None = None
    n_significant: int | None = None
    multiplicity: str = ""
    local_slope: float | None = None
    local_lower: float | None = None
    local_upper: float | None = None
    log_factors: str = ""
    shape_slope: float | None = None
    can_fail: bool | None = None
    power_note: str = ""

    @property
    def ok(self) -> bool:
        """True when the claim checked is supported (holds / matches / faster than claimed / consistent)."""
        return self.verdict in OK_VERDICTS

    @property
    def failed(self) -> bool:
        """True for a significant failure (violated / inconsistent)."""
        return self.verdict in FAILED_VERDICTS

    @property
    def label(self) -> str:
        """The verdict with its qualifier, e.g. ``inconclusive (saturated)``."""
        return f"{self.verdict} ({self.qualifier})" if self.qualifier else self.verdict

    def relabel(self, verdict: str, qualifier: str = "", note: str = "") -> "Verdict":
        """A copy with another verdict class (e.g. a saturated "inconsistent" made "inconclusive").

        The original verdict is kept in the notes, so nothing is hidden.  A row relabelled to no
        claim keeps ``can_fail`` (the design's power does not change with the label); the
        vacuous flag only belongs to a bound that holds."""
        from dataclasses import replace

        extra = (f"rule verdict: {self.label}",) + ((note,) if note else ())
        vacuous = self.vacuous if verdict == "holds" else (None if self.vacuous else self.vacuous)
        return replace(self, verdict=verdict, qualifier=qualifier, notes=self.notes + extra, vacuous=vacuous)

    def uninformative(self, why: str) -> "Verdict":
        """A copy marked as a row that cannot fail (``can_fail`` False), with the reason."""
        from dataclasses import replace

        return replace(self, can_fail=False, power_note=why)

    def summary(self) -> str:
        """One line for legends and logs, e.g. ``holds; worst margin 0.53 at t=1; tightness 0.0004-0.006``."""
        parts = [self.label]
        if self.slope is not None:
            parts.append(f"slope {self.slope:.3g} [{self.slope_lower:.3g}, {self.slope_upper:.3g}] "
                         f"vs {self.exponent:.3g}" + (" (rate matched)" if self.rate_matched else ""))
        if self.worst_margin is not None:
            at = ", ".join(f"{k}={_fmt(v)}" for k, v in self.worst_at.items())
            parts.append(f"worst margin {self.worst_margin:.3g}" + (f" at {at}" if at else ""))
        if np.isfinite(self.tightness_min):
            parts.append(f"tightness {self.tightness_min:.2g}-{self.tightness_max:.2g}")
        if self.vacuous:
            parts.append("vacuous")
        return "; ".join(parts)

    def to_row(self) -> dict:
        """A flat dict (strings and numbers) for summary tables."""
        return {
            "key": self.key, "quantity": self.quantity, "tag": self.tag, "verdict": self.verdict,
            "qualifier": self.qualifier,
            "worst_margin": _num(self.worst_margin),
            "worst_at": ", ".join(f"{k}={_fmt(v)}" for k, v in self.worst_at.items()),
            "n_significant": self.n_significant, "multiplicity": self.multiplicity,
            "slope": _num(self.slope), "slope_ci": _ci_text(self.slope_lower, self.slope_upper),
            "slope_lower": _num(self.slope_lower), "slope_upper": _num(self.slope_upper),
            "exponent": _num(self.exponent), "rate_matched": "" if self.rate_matched is None else self.rate_matched,
            "log_factors": self.log_factors,
            "local_slope": _num(self.local_slope), "local_slope_ci": _ci_text(self.local_lower, self.local_upper),
            "tightness_min": self.tightness_min, "tightness_max": self.tightness_max,
            "vacuous": "" if self.vacuous is None else bool(self.vacuous),
            "shape_slope": _num(self.shape_slope), "can_fail": "" if self.can_fail is None else bool(self.can_fail),
            "power_note": self.power_note,
            "n_replicates": self.n_replicates, "confidence": self.level,
            "notes": "; ".join(self.notes),
        }


def _num(x):
    return math.nan if x is None else float(x)


def _fmt(v):
    return f"{v:.4g}" if isinstance(v, (float, np.floating)) else str(v)


def _ci_text(lo, hi):
    return "" if lo is None else f"[{lo:.4g}, {hi:.4g}]"



# ---------------------------------------------------------------------------------------------
# Registry consistency
# ---------------------------------------------------------------------------------------------

def _registered(key: str):
    """The registry entry for ``key``, or None when ``key`` is a free label."""
    if not key:
        return None
    from stabsim.theory.registry import get
    try:
        return get(key)
    except KeyError:
        return None


def _check_against_registry(key: str, tag: str | None, quantity: str) -> None:
    """A registered ``key`` must have tag ``tag`` (unless None) and bound ``quantity`` (unless empty)."""
    b = _registered(key)
    if b is None:
        return
    if tag is not None and b.tag != tag:
        raise ValueError(f"bound {key!r} is tagged {b.tag} in the registry, not {tag}")
    if quantity and b.quantity != quantity:
        raise ValueError(f"bound {key!r} bounds {b.quantity!r}, but the measure is {quantity!r}: "
                         f"compare it with the matching estimator")



def _finite_range(a: xr.DataArray) -> tuple[float, float]:
    v = np.asarray(a, dtype=float)
    v = v[np.isfinite(v)]
    return (float(v.min()), float(v.max())) if v.size else (math.nan, math.nan)


# ---------------------------------------------------------------------------------------------
# Headline findings and repeated rows
# ---------------------------------------------------------------------------------------------

def _flag(v) -> bool | None:
    """A report cell's True/False/None (csv cells are strings)."""
    if v is None or v == "":
        return None
    if isinstance(v, str):
        return v.strip().lower() == "true"
    return bool(v)


def is_headline(row: Mapping) -> bool:
    """True for a report row that is a finding about a paper: a significant failure
    (``FAILED_VERDICTS``) of a row that could fail (``can_fail`` not False), on the paper's own or
    synthetic data (not a stand-in), under a reading the authors would defend and inside the
    theorem's assumptions (qualifier not in ``NOT_A_CLAIM_OF_THE_PAPER``).  A row that repeats another's result (``repeat_of``) is a headline row
    of the same finding; counts of distinct results skip it."""
    return (row.get("verdict") in FAILED_VERDICTS and _flag(row.get("can_fail")) is not False
            and row.get("data") != "stand-in" and row.get("qualifier") not in NOT_A_CLAIM_OF_THE_PAPER)


def row_result(row: Mapping) -> tuple | None:
    """What a row measured, as far as it decides its verdict: the slope fit of a rate row, the
    margin and tightness of a bound row, the verdict and explanation of the rest.  Two rows of one
    study with the same result repeat one measurement (e.g. one slope checked under two registry
    keys, or one calibration repeated across n)."""
    def r(x):
        try:
            x = float(x)
        except (TypeError, ValueError):
            return None
        return None if math.isnan(x) else round(x, 10)
    if row.get("check_kind") == "privacy ledger":  # one calibration, whatever n, T and delta it was priced at
        case = re.sub(r"\b(n|T|delta)=[^,]*,?\s*", "", str(row.get("case", ""))).strip(" ,")
        return ("ledger", row.get("key"), case, row.get("verdict"))
    if r(row.get("slope")) is not None:
        return ("rate", r(row.get("slope")), r(row.get("slope_lower")), r(row.get("slope_upper")),
                r(row.get("exponent")), row.get("verdict"), row.get("qualifier"))
    if r(row.get("worst_margin")) is not None:
        return ("bound", row.get("key"), r(row.get("worst_margin")), r(row.get("tightness_max")), row.get("verdict"))
    return None


def _reading(text: str) -> str:
    """"printed" / "corrected" when ``text`` (a key or a case) names one reading of a formula, else ""."""
    found = [w for w in ("printed", "corrected") if re.search(rf"\b{w}\b", str(text or ""))]
    return found[0] if len(found) == 1 else ""


def _name(row: Mapping) -> str:
    return f"{row.get('study', '')}/{row.get('key', '')}/{row.get('case', '')}"


def mark_repeats(rows: list[dict]) -> list[dict]:
    """Set ``repeat_of`` on every row that repeats an earlier row's result, to that row's name
    ``"<study>/<key>/<case>"``; others get ``""``.  Returns ``rows``.

    * Within a study: the same ``row_result`` (one slope checked under two keys, ...).
    * Across studies, for the privacy ledger: one calibration priced in two studies.
    * A failed (or uncertified) ledger row repeats such a privacy-calibration row (check kind "privacy") of the
      same paper and the same reading (printed / corrected) that shares an errata id: the study's
      calibration check and the ledger price the same formula (e.g. P0 Eq. (5) in ``p0_thm4_sigma``
      and the ledger's rows for every study that uses it)."""
    first: dict = {}
    for row in rows:
        study = row.get("study", "")
        res = row_result(row)
        row["repeat_of"] = ""
        if res is None:
            continue
        k = res if row.get("check_kind") == "privacy ledger" else (study, res)
        if k in first:
            row["repeat_of"] = first[k]
        else:
            first[k] = _name(row)
    gap = FAILED_VERDICTS + (PROOF_GAP,)
    calib = [r for r in rows if r.get("check_kind") == "privacy" and r.get("verdict") in gap
             and _reading(r.get("key"))]
    for row in rows:
        if row.get("check_kind") != "privacy ledger" or row["repeat_of"] or row.get("verdict") not in gap:
            continue
        ids = set(str(row.get("errata_ids") or "").split())
        for c in calib:
            if (c.get("paper") == row.get("paper") and _reading(c.get("key")) == _reading(row.get("case"))
                    and ids & set(str(c.get("errata_ids") or "").split())):
                row["repeat_of"] = _name(c)
                break
    return rows
