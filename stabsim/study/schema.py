"""The keys every study file has, as ``{key: Param}`` tables: ``STUDY_PARAMS`` (``[study]``),
``BOUNDS_PARAMS`` (``[bounds]``), ``CHECK_PARAMS`` (``[check]``), ``RUN_PARAMS`` (``[run]``).  The
built-in ``twin`` kind's ``[data]`` and ``[algorithm]``: ``stabsim.registry.twin``.  Every key is
documented for users in docs/study-files.md (tests/test_study_schema_doc.py keeps the two in
step)."""

from __future__ import annotations

from stabsim.registry import BadValue, Param, boolean, choice, get_check, integer, number, open_unit, string
from stabsim.registry.plugins import PluginError, load_plugins


# ---- [study], [bounds], [check] ------------------------------------------------------------

def _check_check(v):
    """``[study] check``: a registered analysis check (validated before anything runs, so that
    a typo is not found only after the whole computation)."""
    v = string()(v)
    try:
        get_check(v)
    except KeyError as e:
        raise BadValue(str(e.args[0]), standalone=True) from None
    return v


def _check_plugins(v):
    """``[study] plugins``: user modules imported at parse time (``stabsim.registry.plugins``), before the
    kind and the check are looked up, so that they may register either."""
    if not isinstance(v, list) or not all(isinstance(m, str) for m in v):
        raise BadValue("must be a list of module names, e.g. plugins = [\"mybounds\"]")
    try:
        load_plugins(v)
    except PluginError as e:
        raise BadValue(str(e), standalone=True) from None
    return list(v)


STUDY_PARAMS = {
    "id": Param("study id (output directory name)", None, string(r"[A-Za-z0-9_.-]+")),
    "description": Param("one-line description", "", string()),
    "plugins": Param("user modules to import (they may register kinds, checks, losses, bounds)", [],
                     _check_plugins),
    "kind": Param("registered study kind", "twin", string()),
    "seed": Param("master seed", 0, integer(0)),
    "replicates": Param("replicates per cell", 100, integer(1, " (the number of replicates per cell)")),
    "chunk": Param("replicates per chunk", None, integer(1, " (replicates per chunk)")),
    "suite": Param("part of `stabsim run suite`", False, boolean),
    "check": Param("analysis check (stabsim.registry.checks) run after the study", None, _check_check),
}


def _bound_keys(v):
    if not isinstance(v, list) or not all(isinstance(k, str) for k in v):
        raise BadValue("must be a list of theory registry keys (strings)")
    from stabsim.theory import get as get_bound

    for k in v:
        if k.startswith("custom."):
            continue  # a [bounds.custom.NAME] of this file: checked once the custom tables are parsed
        try:
            get_bound(k)
        except KeyError as e:
            raise BadValue(str(e.args[0]) if e.args else str(e), standalone=True) from None
    return list(v)


def _custom_tables(v):
    """``[bounds.custom.NAME]`` tables (``stabsim.theory.custom_bounds``): keys and types checked here; the
    formula is compiled and dry-run once the study's parameters are known."""
    from stabsim.theory.custom_bounds import ExprError, validate_table

    if not isinstance(v, dict):
        raise BadValue("must be tables [bounds.custom.NAME] with quantity, expr, tag")
    try:
        return {name: validate_table(name, t) for name, t in v.items()}
    except ExprError as e:
        raise BadValue(str(e), standalone=True) from None


def _check_outside(v):
    """``outside_assumptions`` ([bounds], [check]): true (every bound of the study), false, or a
    list of bound keys that may be compared with runs outside their theorems' assumptions."""
    if isinstance(v, bool):
        return v
    if isinstance(v, list) and all(isinstance(k, str) for k in v):
        return list(v)
    raise BadValue("must be true, false or a list of bound keys, e.g. outside_assumptions = [\"P1.Thm4.uas\"]")


BOUNDS_PARAMS = {
    "keys": Param("theory registry keys to overlay", [], _bound_keys, sweepable=False),
    "custom": Param("the study file's own bounds, [bounds.custom.NAME]", {}, _custom_tables, sweepable=False),
    "gamma": Param("confidence level gamma", None, open_unit(" (a confidence level)"), sweepable=False),
    "delta": Param("failure probability / privacy delta", None, open_unit(" (a probability)"), sweepable=False),
    "eps": Param("privacy budget epsilon", None, number(gt=0, what=" (privacy budget epsilon)"), sweepable=False),
    "outside_assumptions": Param("compare these bounds (true: all) with runs outside their theorems' assumptions",
                                 False, _check_outside, sweepable=False),
}


def _str_list(what):
    def check(v):
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list) or not all(isinstance(k, str) for k in v):
            raise BadValue(f"must be a list of {what} (strings)")
        return list(v)
    return check


def _check_constants(v):
    if not isinstance(v, dict) or not all((isinstance(x, (int, float)) and not isinstance(x, bool))
                                          or isinstance(x, str) for x in v.values()):
        raise BadValue("must be a table of numbers or formulas, e.g. constants = {B = 1.5, dist_sq = \"max_all(d2)\"}")
    bad = [k for k in v if not str(k).isidentifier()]
    if bad:
        raise BadValue(f"constant name {bad[0]!r} is not an identifier (letters, digits, _)")
    return {str(k): (x if isinstance(x, str) else float(x)) for k, x in v.items()}


_VARIANT_KEYS = ("label", "var", "measure", "value", "statistic")


def _check_variants(v):
    if not isinstance(v, list) or not v or not all(isinstance(t, dict) for t in v):
        raise BadValue("must be a list of tables, e.g. variants = [{label = \"w_priv\", var = \"dist_output\"}]")
    for t in v:
        unknown = [k for k in t if k not in _VARIANT_KEYS]
        if unknown:
            raise BadValue(f"variant key {unknown[0]!r} is not allowed; allowed: {', '.join(_VARIANT_KEYS)}")
        if not isinstance(t.get("label"), str) or not t["label"]:
            raise BadValue("every variant needs a label (a non-empty string)")
        bad = [k for k in t if not isinstance(t[k], str)]
        if bad:
            raise BadValue(f"variant key {bad[0]!r} must be a string")
    labels = [t["label"] for t in v]
    if len(set(labels)) != len(labels):
        raise BadValue("variant labels must differ")
    return [dict(t) for t in v]


def _formula(v):
    if not isinstance(v, str) or not v.strip():
        raise BadValue("must be a formula (a string), e.g. \"F_out - FS_out\"")
    return v


#: ``[check]``: the configuration of a generic check (``check = "overlay"``, stabsim.analyses.overlay).
#: Analysis only: not part of the fingerprint.  Names are checked at the end of ``parse_study``.
CHECK_PARAMS = {
    "measure": Param("a function of stabsim.engine.measures (uas_mean, uas_quantile, onavg_stability, ...)", None,
                     string(), sweepable=False),
    "value": Param("instead of measure: a per-replicate formula over the data's variables", None, _formula,
                   sweepable=False),
    "statistic": Param("with value: mean | quantile | max over replicates (default mean)", None,
                       choice(("mean", "quantile", "max")), sweepable=False),
    "quantile": Param("with statistic = quantile: the level p", None, open_unit(" (a quantile level)"),
                      sweepable=False),
    "widen": Param("with value: widen the CI (both ends) by this formula", None, _formula, sweepable=False),
    "shift": Param("with value: add this formula to the estimate and both CI ends", None, _formula,
                   sweepable=False),
    "quantity": Param("with value: the quantity's name in the verdict row", None, string(), sweepable=False),
    "variants": Param("repeat the comparison per variant (label + var / measure / value / statistic)", None,
                      _check_variants, sweepable=False),
    "x_symbol": Param("the bound's symbol that x stands for (default: x itself)", None, string(),
                      sweepable=False),
    "var": Param("the per-replicate variable the measure reads (default: the measure's own)", None, string(),
                 sweepable=False),
    "x": Param("the coordinate the bound is plotted/evaluated along", "t", string(), sweepable=False),
    "by": Param("sweep axes to split on (one verdict per combination); default: every axis not in candidates",
                None, _str_list("sweep axes"), sweepable=False),
    "candidates": Param("sweep axes whose values are candidate neighbours: the measure takes the max over them",
                        [], _str_list("sweep axes"), sweepable=False),
    "bounds": Param("registry keys or custom.NAME bounds to compare with", [], _str_list("bound keys"),
                    sweepable=False),
    "gamma": Param("quantile level gamma for quantile measures (default [bounds] gamma)", None,
                   open_unit(" (a confidence level)"), sweepable=False),
    "constants": Param("extra named constants passed to the bounds: numbers or formulas over the cell", {},
                       _check_constants, sweepable=False),
    "trivial": Param("flag bounds above the diameter 2R of the constraint set as vacuous", True, boolean,
                     sweepable=False),
    "outside_assumptions": Param("compare these bounds (true: all) with runs outside their theorems' assumptions",
                                 False, _check_outside, sweepable=False),
}


# ---- [run]: how the study is computed, not what (outside the fingerprint) ---------------------

def _check_backend(v):
    """``[run] backend``: a name of ``stabsim.engine.backend.BACKENDS``; "auto" is resolved once per run
    (``run_study``), when the chunks are about to be computed."""
    from stabsim.engine.backend import BACKENDS

    return choice(BACKENDS)(v)


RUN_PARAMS = {
    "backend": Param("where the twin kernels run: 'cpu', 'cuda' or 'auto' (stabsim.engine.backend)", "cpu",
                     _check_backend, sweepable=False),
}
