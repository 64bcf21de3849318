"""A bound is only compared where its theorem applies: the structured assumptions of every
registered bound (``stabsim.theory.assumptions``), ``stabsim.judging.applicability.check_applicable``, and
the refusal at load time of a study that compares a bound with runs outside them (unless it opts
in with ``outside_assumptions``, and then every row of that bound is qualified).  Nothing here runs
a kernel."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from stabsim.engine.algorithm_specs import ALGORITHMS, OUTPUTS
from stabsim.judging.applicability import OUTSIDE, check_applicable, study_mismatches
from stabsim.engine.losses import LOSSES
from stabsim.registry import load_builtin
from stabsim.study import StudyError, load_study, parse_study
from stabsim.theory import get, list_bounds
from stabsim.theory.assumptions import NOTHING, REQUIRES, rule_for

load_builtin()  # the built-in kinds and checks

STUDIES = sorted((Path(__file__).resolve().parents[1] / "studies").glob("*.toml"))
P3_VARIANTS = ("OnPairStrC", "OnPairC", "OffPairStrC", "OffPairC")


def test_every_registered_bound_has_its_rule_and_the_rules_name_real_things():
    keys = [b.key for b in list_bounds()]
    assert len(keys) > 100
    assert [k for k in keys if rule_for(k) is None] == []
    assert rule_for("P9.Thm1.nothing") is None and get("P1.Thm4.uas").requires is not NOTHING
    for pattern, req in REQUIRES:
        assert any(rule_for(k) == (pattern, req) for k in keys), f"rule {pattern!r} matches no bound"
        assert set(req.algorithms or ()) <= set(ALGORITHMS) | set(P3_VARIANTS), pattern
        assert set(req.output or ()) <= set(OUTPUTS), pattern
        assert set(req.losses or ()) <= set(LOSSES), pattern


def _check_name(raw: dict, profile):
    name = raw.get("study", {}).get("check")
    return raw.get("profiles", {}).get(profile, {}).get("study", {}).get("check", name) if profile else name


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_builtin_studies_are_inside_their_bounds_assumptions(path):
    """The shipped studies are the papers' own settings: every bound they name fits their runs,
    in every profile (load_study would refuse them otherwise; study_mismatches says why)."""
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    for profile in [None] + list(raw.get("profiles", {})):
        spec = load_study(path, profile=profile)
        assert study_mismatches(spec, _check_name(raw, profile)) == {}
        assert spec.outside_assumptions == {}


def test_builtin_studies_check_many_bounds():
    """The test above is not vacuous: most shipped studies name bounds that require something."""
    named = set()
    for path in STUDIES:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        named |= set(raw.get("bounds", {}).get("keys", [])) | set(raw.get("check", {}).get("bounds", []))
    required = [k for k in named if not k.startswith("custom.") and get(k).requires.algorithms is not None]
    assert len(required) > 60


# ---- each kind of assumption: a run it accepts, a run it refuses ------------------------------

RUN = {"name": "p1_alg1", "loss": "auc_hinge", "constraint": "none", "eta": 0.1}
CASES = [
    # key, accepted settings, refused settings, what the refusal names
    ("P1.Thm4.uas", RUN, {**RUN, "name": "p1_alg2"}, "algorithm: P1.Thm4.uas (P1 Theorem 4) is proven for p1_alg1; "
                                                     "the run uses 'p1_alg2'"),
    ("P4.Lemma19a.onavg", {"name": "sgd_pair", "loss": "auc_squared"}, {"name": "p1_alg1", "loss": "auc_squared"},
     "algorithm: P4.Lemma19a.onavg (P4 Lemma 19(a)) is proven for p4_alg2 or sgd_pair; the run uses 'p1_alg1'"),
    ("P0.Cor1.rate", {"name": "p0_alg1", "loss": "auc_hinge", "constraint": "l2:1.0", "eta": 0.1},
     {"name": "p0_alg1", "loss": "ranking_hinge", "constraint": "l2:1.0", "eta": 0.1},
     "loss: P0.Cor1.rate (P0 Corollary 1) is stated for the loss auc_hinge; the run uses 'ranking_hinge'"),
    ("P1.Thm5.uas", {**RUN, "loss": "auc_logistic"}, RUN,
     "loss class: P1.Thm5.uas (P1 Theorem 5) needs a smooth loss"),
    ("P1.Thm2.rate", {**RUN, "loss": "auc_squared", "constraint": "l2:1.0"}, {**RUN, "loss": "auc_squared"},
     "needs a lipschitz loss (G-Lipschitz in w on W (bounded gradients)); the run's loss 'auc_squared' is not "
     "lipschitz on W = none (R^d) (it is on a bounded W"),
    ("P1.Thm6b.rate", {**RUN, "loss": "auc_squared", "constraint": "l2:2.0", "eta": "strongly_convex:0.3"},
     {**RUN, "constraint": "l2:2.0", "eta": "strongly_convex:0.3"}, "needs a strongly_convex loss"),
    ("P4.Lemma13a.gen", {"name": "p4_alg1", "loss": "point_lsq"}, {"name": "p4_alg2", "loss": "auc_squared"},
     "pairwise: P4.Lemma13a.gen (P4 Lemma 13(a)) needs a pointwise loss f(w; z); the run's loss 'auc_squared' "
     "is pairwise"),
    ("P0.Thm2.excess.printed", {"name": "p0_alg1", "loss": "auc_hinge", "constraint": "l2:1.0", "eta": 0.1},
     {"name": "p0_alg1", "loss": "auc_hinge", "constraint": "none", "eta": 0.1},
     "constraint: P0.Thm2.excess.printed (P0 Theorem 2) needs a bounded W"),
    ("P0.Thm3.excess.printed", {"name": "p0_alg1", "loss": "auc_hinge", "constraint": "none", "eta": 0.1},
     {"name": "p0_alg1", "loss": "auc_hinge", "constraint": "l2:1.0", "eta": 0.1},
     "needs W = R^d (no effective projection); the run has constraint 'l2 of radius 1'"),
    ("P1.Thm4.uas", RUN, {**RUN, "eta": "sqrt:0.5"},
     "step rule: P1.Thm4.uas (P1 Theorem 4) needs step sizes constant; the run's eta = 'sqrt:0.5' is sqrt"),
    ("P1.Thm9.pl", {**RUN, "loss": "auc_squared", "eta": ("pl", 0.3), "output": "last"},
     {**RUN, "loss": "auc_squared", "eta": ("pl", 0.3)},
     "output: P1.Thm9.pl (P1 Theorem 9) is stated for the output last; the run outputs 'eta_weighted_lag2'"),
    ("P1.Thm1.rate", RUN, {**RUN, "output": "last"}, "is stated for the output eta_weighted_lag2; the run outputs 'last'"),
]


@pytest.mark.parametrize("key, good, bad, names", CASES, ids=[f"{c[0]}-{c[3].split(':')[0]}" for c in CASES])
def test_each_assumption_accepts_and_refuses(key, good, bad, names):
    assert check_applicable(key, good) == []
    found = check_applicable(key, bad)
    assert len(found) == 1 and names in found[0], found


def test_absent_settings_are_not_checked_and_custom_bounds_assume_nothing():
    assert check_applicable("P1.Thm4.uas", {}) == []
    assert check_applicable("P1.Thm2.rate", {"loss": "auc_squared"}) == []  # W unknown: bounded W would do
    assert check_applicable("P1.Thm5.uas", {"loss": "auc_hinge"}) != []     # no W makes the hinge smooth
    parse_study(CUSTOM)
    assert check_applicable("custom.appl_mine", {"name": "p4_alg1", "loss": "point_hinge"}) == []


CUSTOM = """
[study]
id = "appl_custom"
[algorithm]
name = "p4_alg1"
loss = "point_hinge"
[bounds.custom.appl_mine]
quantity = "uas_mean"
expr = "eta * t"
tag = "EXPLICIT"
[bounds]
keys = ["custom.appl_mine"]
"""


# ---- two user files outside the assumptions: refused with the mismatch named, accepted when opted in

P4_FILE = """
[study]
id = "p4_alg1_thm4"
check = "overlay"
replicates = 8
[data]
problem = "p4_logistic"
d = 10
n = 50
[algorithm]
name = "p4_alg1"
loss = "point_hinge"
eta = 0.05
T = 100
[bounds]
keys = ["P1.Thm4.uas"]
{bounds_extra}
[check]
measure = "uas_mean"
bounds = ["P1.Thm4.uas"]
{check_extra}
"""

SGD_PAIR_FILE = """
[study]
id = "sgd_pair_thm5"
check = "overlay"
replicates = 8
[data]
problem = "auc_noisy"
d = 5
n = 50
[algorithm]
name = "sgd_pair"
loss = "auc_hinge"
eta = 0.05
T = 100
[bounds]
keys = ["P1.Thm5.uas"]
{bounds_extra}
[check]
measure = "uas_mean"
bounds = ["P1.Thm5.uas"]
{check_extra}
"""


def _file(text, bounds_extra="", check_extra=""):
    return text.format(bounds_extra=bounds_extra, check_extra=check_extra)


def test_pointwise_p4_alg1_against_p1_thm4_is_refused_naming_the_mismatch():
    with pytest.raises(StudyError) as e:
        parse_study(_file(P4_FILE))
    msg = str(e.value)
    assert "outside the assumptions of P1.Thm4.uas" in msg
    assert "algorithm: P1.Thm4.uas (P1 Theorem 4) is proven for p1_alg1; the run uses 'p4_alg1'" in msg
    assert "pairwise: P1.Thm4.uas (P1 Theorem 4) needs a pairwise loss" in msg and "'point_hinge' is pointwise" in msg
    assert 'outside_assumptions = ["P1.Thm4.uas"]' in msg


def test_sgd_pair_against_p1_thm5_is_refused_naming_the_mismatch():
    with pytest.raises(StudyError) as e:
        parse_study(_file(SGD_PAIR_FILE))
    msg = str(e.value)
    assert "algorithm: P1.Thm5.uas (P1 Theorem 5) is proven for p1_alg1; the run uses 'sgd_pair'" in msg
    assert "needs a smooth loss" in msg and "'auc_hinge' is not smooth" in msg


@pytest.mark.parametrize("how", ["bounds_true", "bounds_list", "check_list", "python"])
def test_the_opt_in_accepts_and_records_the_mismatches(how):
    text, kw = _file(P4_FILE), {}
    if how == "bounds_true":
        text = _file(P4_FILE, bounds_extra="outside_assumptions = true")
    elif how == "bounds_list":
        text = _file(P4_FILE, bounds_extra='outside_assumptions = ["P1.Thm4.uas"]')
    elif how == "check_list":
        text = _file(P4_FILE, check_extra='outside_assumptions = ["P1.Thm4.uas"]')
    else:
        kw = {"outside_assumptions": ["P1.Thm4.uas"]}
    spec = parse_study(text, **kw)
    assert list(spec.outside_assumptions) == ["P1.Thm4.uas"]
    assert any(m.startswith("algorithm:") for m in spec.outside_assumptions["P1.Thm4.uas"])
    assert spec.fingerprint == parse_study(_file(P4_FILE), outside_assumptions=True).fingerprint  # [bounds]: not data


def test_opt_in_must_name_a_bound_of_the_study_and_changes_no_fingerprint():
    with pytest.raises(StudyError, match="outside_assumptions names 'P1.Thm5.uas', which is not among the study's"):
        parse_study(_file(P4_FILE, bounds_extra='outside_assumptions = ["P1.Thm5.uas"]'))
    with pytest.raises(StudyError, match=r"\[bounds\] outside_assumptions = 1: outside_assumptions must be true, false or a list"):
        parse_study(_file(P4_FILE, bounds_extra="outside_assumptions = 1"))
    inside = parse_study(_file(SGD_PAIR_FILE).replace('"sgd_pair"', '"p1_alg1"').replace('"auc_hinge"', '"auc_logistic"'))
    assert inside.outside_assumptions == {} and "outside_assumptions" not in inside.bounds


def test_overlay_needs_every_cell_a_kinds_check_one():
    """check = "overlay" compares every bound on every cell: one cell outside is refused, named;
    without the overlay a kind's check picks its cells, so one fitting cell is enough."""
    text = _file(SGD_PAIR_FILE).replace('"sgd_pair"', '"p1_alg1"').replace('"auc_hinge"', '"auc_logistic"')
    swept = text + '\n[sweep]\nalgorithm = ["p1_alg1", "sgd_pair"]\n'
    with pytest.raises(StudyError, match=r"the run uses 'sgd_pair' \[cell algorithm=sgd_pair\]"):
        parse_study(swept)
    no_overlay = swept.replace('check = "overlay"\n', "").split("[check]")[0] + '\n[sweep]\nalgorithm = ["p1_alg1", "sgd_pair"]\n'
    assert parse_study(no_overlay).outside_assumptions == {}
    with pytest.raises(StudyError, match="outside the assumptions of P1.Thm5.uas"):
        parse_study(no_overlay.replace('["p1_alg1", "sgd_pair"]', '["p4_alg2", "sgd_pair"]'))


def test_rows_of_a_bound_used_outside_its_assumptions_are_qualified():
    from stabsim.analyses.base import CheckResult
    from stabsim.reporting.analyse import _mark_outside
    from stabsim.judging.verdict import Verdict

    spec = parse_study(_file(P4_FILE, bounds_extra="outside_assumptions = true"))
    res = CheckResult()
    res.add(Verdict(key="P1.Thm4.uas", quantity="uas_mean", tag="EXPLICIT", verdict="holds", n_replicates=8,
                    level=0.95, qualifier="vacuous"))
    res.add(Verdict(key="custom.other", quantity="uas_mean", tag="EXPLICIT", verdict="holds", n_replicates=8,
                    level=0.95))
    _mark_outside(spec, res)
    marked, other = res.verdicts
    assert marked.qualifier == f"vacuous; {OUTSIDE}" and marked.label == f"holds (vacuous; {OUTSIDE})"
    assert any(n.startswith(f"{OUTSIDE} (opted in): algorithm: P1.Thm4.uas") for n in marked.notes)
    assert other.qualifier == "" and other.notes == ()
    assert res.explanation(0).startswith(f"{OUTSIDE}: algorithm: P1.Thm4.uas") and res.explanation(1) == ""
    assert any("P1.Thm4.uas is compared outside its theorem's assumptions" in n for n in res.notes)


def test_opted_in_overlay_runs_and_its_summary_says_outside(tmp_path):
    """End to end (a tiny run): the opted-in study runs, its row is 'holds (outside the theorem's
    assumptions)' with the mismatches as its explanation, and summary.md shows both."""
    from stabsim.reporting.analyse import analyse
    from stabsim.study import run_study

    text = _file(P4_FILE, bounds_extra="outside_assumptions = true").replace("replicates = 8", "replicates = 4\nchunk = 4")
    spec = parse_study(text.replace("T = 100", "T = 50\ncheckpoints = 4"))
    run_study(spec, tmp_path)
    rec = analyse(tmp_path / spec.id)
    (row,) = rec["rows"]
    assert row["key"] == "P1.Thm4.uas" and row["qualifier"].endswith(OUTSIDE)
    assert row["verdict_label"] == f"{row['verdict']} ({row['qualifier']})"
    assert "the run uses 'p4_alg1'" in row["explanation"] and "'point_hinge' is pointwise" in row["explanation"]
    summary = (tmp_path / spec.id / "summary.md").read_text(encoding="utf-8")
    assert f"({OUTSIDE})" in summary and "P1.Thm4.uas is compared outside its theorem's assumptions" in summary


def test_declared_loss_classes_agree_with_the_losses_constants():
    """A loss is Lipschitz on R^d exactly when its G(kappa, inf) is finite, and on every bounded W;
    smooth exactly when its Hoelder exponent is 1; strongly convex / PL never for hinge-type losses."""
    import math

    from stabsim.engine.losses import get_loss

    losses = list(LOSSES.values()) + [get_loss(n, 1.5) for n in ("auc_qhinge", "ranking_qhinge")]
    for loss in losses:
        assert ("lipschitz" in loss.classes(False)) == math.isfinite(loss.G(1.0, math.inf)), loss.name
        assert "lipschitz" in loss.classes(True) and math.isfinite(loss.G(1.0, 2.0)), loss.name
        assert ("smooth" in loss.classes(True)) == (loss.holder == 1.0), loss.name
        assert ("strongly_convex" in loss.classes(True)) == ("hinge" not in loss.name), loss.name
    assert "lipschitz" not in LOSSES["auc_squared"].classes(False) and "lipschitz" in LOSSES["auc_hinge"].classes(False)
    assert ALGORITHMS["sgd_pair"].names == ("sgd_pair", "p4_alg2") and ALGORITHMS["p1_alg1"].names == ("p1_alg1",)
