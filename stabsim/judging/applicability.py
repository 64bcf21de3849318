"""Where a bound applies: a theorem's assumptions (``Bound.requires``,
``stabsim.theory.assumptions``) against the run it is compared with.

``check_applicable(key, settings)`` lists the mismatches between a registered bound and one run,
each naming the assumption, what the theorem needs and what the run has::

    >>> check_applicable("P1.Thm4.uas", {"algorithm": "p4_alg1", "loss": "point_hinge"})
    ["algorithm: P1.Thm4.uas (P1 Theorem 4) is proven for p1_alg1; the run uses 'p4_alg1'",
     "pairwise: P1.Thm4.uas (P1 Theorem 4) needs a pairwise loss f(w; z, z'); the run's loss 'point_hinge' is pointwise"]

A run's settings are those of a twin ``[algorithm]`` section: ``algorithm`` (or ``name``),
``loss`` (with ``q``), ``constraint``, ``eta`` and ``output``; a setting that is absent is not
checked.  ``study_settings`` reads them from a study's cells (``run_settings``), and
``study_mismatches`` checks every bound a study names ([bounds] keys, [check] bounds):
``stabsim.study.parse_study`` refuses a study with a mismatch unless it opts in
(``outside_assumptions``), and the rows of a bound used outside its assumptions are then marked so
in the report (``mark_outside``).
"""

from __future__ import annotations

import math
from typing import Mapping

from stabsim.theory.assumptions import CONSTRAINTS, LOSS_CLASSES, NOTHING, Assumptions

#: The qualifier of a verdict row whose bound was used outside its theorem's assumptions.
OUTSIDE = "outside the theorem's assumptions"


def _requires(key: str) -> tuple[Assumptions, str]:
    from stabsim.theory import get

    b = get(key)
    ref = f"{key} ({b.paper} {b.ref})" if b.paper != "custom" else key
    return getattr(b, "requires", NOTHING), ref


def step_rule(eta) -> str | None:
    """The step-size rule of a run's ``eta``: a number is ``"constant"``, ``"NAME:c"`` or
    ``("NAME", c)`` is NAME (``stabsim.engine.steps.SCHEDULES``); an explicit array: None (not known)."""
    if isinstance(eta, (int, float)) and not isinstance(eta, bool):
        return "constant"
    if isinstance(eta, str):
        return eta.partition(":")[0]
    if isinstance(eta, (list, tuple)) and len(eta) == 2 and isinstance(eta[0], str):
        return eta[0]
    return None


def _algorithm(settings: Mapping):
    """(name, Algorithm or None): a name that is not a twin algorithm (P3's variants) is kept as is."""
    from stabsim.engine.algorithm_specs import ALGORITHMS, get_algorithm

    name = settings.get("algorithm", settings.get("name"))
    if name is None:
        return None, None
    if name in ALGORITHMS:
        return name, get_algorithm(name)
    return name, None


def _loss_mismatches(req, ref, loss, cons) -> list[str]:
    out = []
    if req.losses is not None and loss.name not in req.losses:
        out.append(f"loss: {ref} is stated for the loss {' or '.join(req.losses)}; the run uses {loss.name!r}")
    if req.pairwise is not None and loss.pairwise != req.pairwise:
        need = "a pairwise loss f(w; z, z')" if req.pairwise else "a pointwise loss f(w; z)"
        out.append(f"pairwise: {ref} needs {need}; the run's loss {loss.name!r} is "
                   f"{'pairwise' if loss.pairwise else 'pointwise'}")
    # the constraint not known: refuse only what no W would give
    have = loss.classes(True if cons is None else cons.bounded)
    for c in (c for c in req.loss_class if c not in have):
        why = ""
        if c in loss.classes(True):  # on a bounded W it would be
            why = (f" on W = {cons.name}" + (" (R^d)" if cons.name == "none" else "")
                   + " (it is on a bounded W: constrain W, e.g. constraint = \"l2:1.0\")")
        out.append(f"loss class: {ref} needs a {c} loss ({LOSS_CLASSES[c]}); the run's loss {loss.name!r} "
                   f"is not {c}{why}")
    return out


def _constraint_mismatch(req, ref, cons) -> list[str]:
    if req.constraint is None or cons is None:
        return []
    ok = {"bounded": cons.bounded, "unbounded": cons.name == "none", "nuclear": cons.name == "nuclear"}[req.constraint]
    if ok:
        return []
    have = cons.name + (f" of radius {cons.radius:g}" if math.isfinite(cons.radius) else "")
    return [f"constraint: {ref} needs {CONSTRAINTS[req.constraint]}; the run has constraint {have!r}"]


def check_applicable(bound_key: str, run_settings: Mapping) -> list[str]:
    """The mismatches between the assumptions of the bound ``bound_key`` and one run.

    ``run_settings``: ``algorithm`` (or ``name``), ``loss``, ``q``, ``constraint``, ``eta``,
    ``output`` as in a twin ``[algorithm]`` section; absent ones are not checked.  Each mismatch
    names the assumption (algorithm, loss, pairwise, loss class, constraint, step rule, output),
    what the theorem needs and what the run has; an empty list: the bound applies.  A ``custom.*``
    bound (a study file's own) assumes nothing.
    """
    from stabsim.engine.constraints import get_constraint
    from stabsim.engine.losses import get_loss

    req, ref = _requires(bound_key)
    s = dict(run_settings)
    out = []
    name, alg = _algorithm(s)
    if name is not None and req.algorithms is not None:
        names = alg.names if alg is not None else (name,)
        if not set(names) & set(req.algorithms):
            out.append(f"algorithm: {ref} is proven for {' or '.join(req.algorithms)}; the run uses {name!r}")
    cons = get_constraint(s["constraint"]) if s.get("constraint") is not None else None
    if s.get("loss") is not None:
        out += _loss_mismatches(req, ref, get_loss(s["loss"], s.get("q")), cons)
    elif alg is not None and req.pairwise is not None and alg.pairwise != req.pairwise:
        out.append(f"pairwise: {ref} needs a {'pairwise' if req.pairwise else 'pointwise'} loss; the run's "
                   f"algorithm {name!r} takes a {'pairwise' if alg.pairwise else 'pointwise'} one")
    out += _constraint_mismatch(req, ref, cons)
    rule = step_rule(s.get("eta"))
    if req.step_rule is not None and rule is not None and rule not in req.step_rule:
        out.append(f"step rule: {ref} needs step sizes {' or '.join(req.step_rule)}; the run's eta = "
                   f"{s['eta']!r} is {rule}")
    output = s.get("output") or (alg.output if alg is not None else None)
    if req.output is not None and output is not None and output not in req.output:
        out.append(f"output: {ref} is stated for the output {' or '.join(req.output)}; the run outputs {output!r}")
    return out


# ---- a study's runs ---------------------------------------------------------------------------

def _p1_excess(p: dict) -> dict:
    """``p1_excess``: the [schedule] rule sets eta and the output (thm3: eta_j = 2/(mu(j+1)), w_T)."""
    out = _twin(p)
    if p.get("schedule", {}).get("rule") == "thm3":
        out.update(eta=("pl", p["schedule"].get("mu") or 1.0), output="last")
    else:
        out["eta"] = 1.0  # eta = c T^(-x): constant in t
    return out


def _twin(p: dict) -> dict:
    a = p.get("algorithm", {})
    return {k: a[k] for k in ("name", "loss", "q", "constraint", "eta", "output") if k in a}


def _p2_gd(p: dict) -> dict:
    """P2 Alg. 1: full-batch GD, eta = 1/L, last iterate, no projection (errata P2-E2)."""
    return {"algorithm": "p2_alg1", "loss": p["algorithm"]["loss"], "constraint": "none", "eta": 1.0,
            "output": "last"}


def _p3(p: dict) -> dict:
    """P3's variants (OnPairStrC, ...) with their own step sizes and outputs."""
    a = p["algorithm"]
    return {"algorithm": a["variant"], "loss": a["loss"], "constraint": a["constraint"]}


#: Kinds whose run is not read off a twin ``[algorithm]`` section as is.
KIND_SETTINGS = {"p1_excess": _p1_excess, "p2_gd": _p2_gd, "p3_giga": _p3, "p3_experiment": _p3}


def run_settings(kind: str, params: dict) -> dict:
    """The settings of one cell (``spec.cell_params(cell)``) of a study of ``kind`` that
    ``check_applicable`` reads; ``{}`` for a kind without an ``[algorithm]`` section (a noise
    calibration, a function class: nothing of a run to check)."""
    if kind in KIND_SETTINGS:
        return KIND_SETTINGS[kind](params)
    return _twin(params)


def _opted(value, keys) -> set:
    if value is True:
        return set(keys)
    if isinstance(value, (list, tuple, set)):
        return set(value)
    return set()


def study_mismatches(spec, check: str | None = None) -> dict[str, list[str]]:
    """``{key: mismatches}`` for the bounds ``spec`` names ([bounds] keys, [check] bounds).

    With ``check = "overlay"`` every [check] bound is compared on every cell, so each cell's run
    must satisfy it (the mismatches name the cell); a bound that a kind's own check compares only
    on the cells it fits (a sweep over P3's variants, say) is refused when no cell satisfies it.
    """
    keys = list(dict.fromkeys(list(spec.bounds.get("keys", [])) + list((spec.check or {}).get("bounds") or [])))
    every_cell = set((spec.check or {}).get("bounds") or []) if check == "overlay" else set()
    runs = {}
    for cell in spec.cells():
        s = run_settings(spec.kind, spec.cell_params(cell))
        runs.setdefault(repr(sorted(s.items())), (s, []))[1].append(cell.label)
    out = {}
    for key in keys:
        found = [(labels, check_applicable(key, s)) for s, labels in runs.values()]
        bad = [(labels, m) for labels, m in found if m]
        if not bad or (key not in every_cell and len(bad) < len(found)):
            continue
        msgs = []
        for labels, m in bad:
            where = f" [{labels[0]}{f' and {len(labels) - 1} more' if len(labels) > 1 else ''}]" if len(runs) > 1 else ""
            msgs += [f"{x}{where}" for x in m if f"{x}{where}" not in msgs]
        out[key] = msgs
    return out


def outside_opt_in(spec, extra=None) -> set:
    """The keys the study lets be used outside their assumptions: ``[bounds] outside_assumptions``,
    ``[check] outside_assumptions`` (true: every bound; a list: those keys) and ``extra`` (the
    Python argument of ``parse_study``, the same values)."""
    keys = list(spec.bounds.get("keys", [])) + list((spec.check or {}).get("bounds") or [])
    return (_opted(spec.bounds.get("outside_assumptions"), keys)
            | _opted((spec.check or {}).get("outside_assumptions"), keys) | _opted(extra, keys))


def outside(verdict, why: str):
    """``verdict`` qualified "outside the theorem's assumptions" with ``why`` in its notes, unless it already
    carries a qualifier (a row that makes no claim for another reason keeps it): reported, counted apart
    from what held and from the findings."""
    if verdict.qualifier:
        return verdict
    from dataclasses import replace

    return replace(verdict, qualifier=OUTSIDE, notes=tuple(verdict.notes) + (why,))


def mark_outside(verdict, mismatches):
    """``verdict`` with the qualifier "outside the theorem's assumptions" and the mismatches in its notes."""
    from dataclasses import replace

    q = f"{verdict.qualifier}; {OUTSIDE}" if verdict.qualifier else OUTSIDE
    return replace(verdict, qualifier=q, notes=tuple(verdict.notes) + (f"{OUTSIDE} (opted in): " + "; ".join(mismatches),))
