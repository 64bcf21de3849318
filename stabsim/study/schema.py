"""The keys of a study file, as ``{key: Param}`` tables: ``STUDY_PARAMS`` (``[study]``),
``BOUNDS_PARAMS`` (``[bounds]``), ``CHECK_PARAMS`` (``[check]``), ``RUN_PARAMS`` (``[run]``), and the built-in ``twin``
kind's ``[data]`` (``TWIN_DATA``, ``DATA_SOURCE`` for real data) and ``[algorithm]``
(``TWIN_ALGORITHM``), which ``twin_params()`` hands to kinds that extend them.  Every key is
documented for users in docs/study-files.md (tests/test_study_schema_doc.py keeps the two in
step)."""

from __future__ import annotations

import math

from .params import Param, _Bad, _engine, _is_int, _is_num, boolean, choice, integer, number, open_unit, string


# ---- [study], [bounds], [check] ------------------------------------------------------------

def _check_check(v):
    """``[study] check``: a registered analysis check (validated before anything runs, so that
    a typo is not found only after the whole computation)."""
    v = string()(v)
    from ..analyses.base import get_check

    try:
        get_check(v)
    except KeyError as e:
        raise _Bad(str(e.args[0]), standalone=True) from None
    return v


def _check_plugins(v):
    """``[study] plugins``: user modules imported at parse time (``stabsim.plugins``), before the
    kind and the check are looked up, so that they may register either."""
    if not isinstance(v, list) or not all(isinstance(m, str) for m in v):
        raise _Bad("must be a list of module names, e.g. plugins = [\"mybounds\"]")
    from ..plugins import PluginError, load_plugins

    try:
        load_plugins(v)
    except PluginError as e:
        raise _Bad(str(e), standalone=True) from None
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
    "check": Param("analysis check (stabsim.analyses registry) run after the study", None, _check_check),
}


def _bound_keys(v):
    if not isinstance(v, list) or not all(isinstance(k, str) for k in v):
        raise _Bad("must be a list of theory registry keys (strings)")
    from ..theory import get as get_bound

    for k in v:
        if k.startswith("custom."):
            continue  # a [bounds.custom.NAME] of this file: checked once the custom tables are parsed
        try:
            get_bound(k)
        except KeyError as e:
            raise _Bad(str(e.args[0]) if e.args else str(e), standalone=True) from None
    return list(v)


def _custom_tables(v):
    """``[bounds.custom.NAME]`` tables (``stabsim.custom_bounds``): keys and types checked here; the
    formula is compiled and dry-run once the study's parameters are known."""
    from ..custom_bounds import ExprError, validate_table

    if not isinstance(v, dict):
        raise _Bad("must be tables [bounds.custom.NAME] with quantity, expr, tag")
    try:
        return {name: validate_table(name, t) for name, t in v.items()}
    except ExprError as e:
        raise _Bad(str(e), standalone=True) from None


def _check_outside(v):
    """``outside_assumptions`` ([bounds], [check]): true (every bound of the study), false, or a
    list of bound keys that may be compared with runs outside their theorems' assumptions."""
    if isinstance(v, bool):
        return v
    if isinstance(v, list) and all(isinstance(k, str) for k in v):
        return list(v)
    raise _Bad("must be true, false or a list of bound keys, e.g. outside_assumptions = [\"P1.Thm4.uas\"]")


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
            raise _Bad(f"must be a list of {what} (strings)")
        return list(v)
    return check


def _check_constants(v):
    if not isinstance(v, dict) or not all((isinstance(x, (int, float)) and not isinstance(x, bool))
                                          or isinstance(x, str) for x in v.values()):
        raise _Bad("must be a table of numbers or formulas, e.g. constants = {B = 1.5, dist_sq = \"max_all(d2)\"}")
    bad = [k for k in v if not str(k).isidentifier()]
    if bad:
        raise _Bad(f"constant name {bad[0]!r} is not an identifier (letters, digits, _)")
    return {str(k): (x if isinstance(x, str) else float(x)) for k, x in v.items()}


_VARIANT_KEYS = ("label", "var", "measure", "value", "statistic")


def _check_variants(v):
    if not isinstance(v, list) or not v or not all(isinstance(t, dict) for t in v):
        raise _Bad("must be a list of tables, e.g. variants = [{label = \"w_priv\", var = \"dist_output\"}]")
    for t in v:
        unknown = [k for k in t if k not in _VARIANT_KEYS]
        if unknown:
            raise _Bad(f"variant key {unknown[0]!r} is not allowed; allowed: {', '.join(_VARIANT_KEYS)}")
        if not isinstance(t.get("label"), str) or not t["label"]:
            raise _Bad("every variant needs a label (a non-empty string)")
        bad = [k for k in t if not isinstance(t[k], str)]
        if bad:
            raise _Bad(f"variant key {bad[0]!r} must be a string")
    labels = [t["label"] for t in v]
    if len(set(labels)) != len(labels):
        raise _Bad("variant labels must differ")
    return [dict(t) for t in v]


def _formula(v):
    if not isinstance(v, str) or not v.strip():
        raise _Bad("must be a formula (a string), e.g. \"F_out - FS_out\"")
    return v


#: ``[check]``: the configuration of a generic check (``check = "overlay"``, stabsim.analyses.overlay).
#: Analysis only: not part of the fingerprint.  Names are checked at the end of ``parse_study``.
CHECK_PARAMS = {
    "measure": Param("a function of stabsim.measures (uas_mean, uas_quantile, onavg_stability, ...)", None,
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
    """``[run] backend``: a name of ``stabsim.backend.BACKENDS``; "auto" is resolved once per run
    (``run_study``), when the chunks are about to be computed."""
    from ..backend import BACKENDS

    return choice(BACKENDS)(v)


RUN_PARAMS = {
    "backend": Param("where the twin kernels run: 'cpu', 'cuda' or 'auto' (stabsim.backend)", "cpu",
                     _check_backend, sweepable=False),
}


# ---- the built-in "twin" kind's schema -----------------------------------------------------

def _check_problem(v):
    from ..synthetic import make_problem

    if not isinstance(v, str):
        raise _Bad("must be a string (a problem name)")
    try:
        make_problem(v, 10)
    except ValueError as e:
        if "unknown problem" in str(e):
            raise _Bad(str(e), standalone=True) from None
    return v


def _check_eta(v):
    from ..steps import SCHEDULES, step_sizes

    allowed = ("must be a step size > 0 (a number), or a schedule 'NAME:c' / ['NAME', c] with NAME in "
               f"{', '.join(SCHEDULES)} and c > 0")
    if _is_num(v):
        if not (math.isfinite(v) and v > 0):
            raise _Bad(allowed)
        return float(v)
    if isinstance(v, str) and ":" in v:
        kind, _, c = v.partition(":")
        try:
            c = float(c)
        except ValueError:
            raise _Bad(allowed) from None
        v = [kind, c]
    if isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and _is_num(v[1]):
        try:
            step_sizes((v[0], float(v[1])), 1)
        except ValueError as e:
            raise _Bad(f"{allowed} ({e})") from None
        return f"{v[0]}:{float(v[1])!r}"
    raise _Bad(allowed)


def _eta_arg(eta):
    if isinstance(eta, str):
        kind, _, c = eta.partition(":")
        return (kind, float(c))
    return eta


def _check_constraint(v):
    from ..constraints import get_constraint

    if isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and _is_num(v[1]):
        v = f"{v[0]}:{float(v[1])!r}"
    if not isinstance(v, str):
        raise _Bad("must be 'none', 'psd', 'NAME:radius' or ['NAME', radius]")
    try:
        get_constraint(v)
    except ValueError as e:
        raise _Bad(str(e), standalone=True) from None
    return v


def _check_loss(v):
    from ..losses import get_loss

    if isinstance(v, str) and v.endswith("qhinge"):
        return _engine(lambda name: get_loss(name, 1.5))(v)  # q is checked per cell
    return _engine(get_loss)(v)


def _check_algorithm(v):
    from ..algorithms import get_algorithm

    return _engine(get_algorithm)(v)


def _check_output(v):
    from ..algorithms import OUTPUTS

    return choice(tuple(OUTPUTS))(v)


def _check_k(v):
    if v == "random" or (_is_int(v) and v >= 0):
        return v if v == "random" else int(v)
    raise _Bad("must be 'random' or an integer >= 0 (an index into the data set)")


def _check_checkpoints(v):
    if _is_int(v):
        return integer(1, " (a count of log-spaced checkpoints) or a list of steps")(v)
    if isinstance(v, list) and v and all(_is_int(x) and x >= 1 for x in v):
        return sorted(set(int(x) for x in v))
    raise _Bad("must be an integer >= 1 (a count of log-spaced checkpoints) or a non-empty list of steps >= 1")


TWIN_DATA = {
    "problem": Param("synthetic problem", "auc_separable", _check_problem),
    "d": Param("dimension", 10, integer(1, " (the dimension)")),
    "n": Param("number of examples", 100, integer(2, " (the number of examples)")),
    "per_replicate": Param("one data set per replicate", False, boolean, sweepable=False),
    "seed": Param("data seed (default: [study] seed)", None, integer(0), dim="data_seed"),
    "gamma": Param("problem: class separation", None, number(gt=0, what=" (class separation)")),
    "rho": Param("problem: noise-ball radius", None, number(ge=0)),
    "pi": Param("problem: P(y = 1)", None, open_unit(" (P(y = 1))")),
    "flip": Param("problem: label-flip probability", None, number(ge=0, lt=0.5)),
    "kappa": Param("problem: noise level (p4_*)", None, number(ge=0)),
}
PROBLEM_KEYS = ("gamma", "rho", "pi", "flip", "kappa")

TWIN_ALGORITHM = {
    "name": Param("algorithm", "p1_alg1", _check_algorithm, dim="algorithm"),
    "loss": Param("loss", "auc_hinge", _check_loss),
    "constraint": Param("constraint set", "none", _check_constraint),
    "eta": Param("step size or schedule", 0.1, _check_eta),
    "T": Param("number of steps", 1000, integer(1, " (the number of steps)")),
    "neighbour": Param("replacement rule", "farthest", choice(("flip", "farthest", "fresh", "same"))),
    "k": Param("replaced index", "random", _check_k),
    "sigma": Param("gradient noise", 0.0, number(ge=0, what=" (noise level)")),
    "independent_noise": Param("independent noise for S'", False, boolean),
    "buffer": Param("FIFO buffer size s", None, integer(1, " (buffer size)")),
    "output": Param("output rule", None, _check_output),
    "q": Param("q-norm hinge exponent", None, number(gt=1, le=2, what=" (q-hinge exponent)")),
    "w0": Param("initial point", "zeros", choice(("zeros", "random"))),
    "checkpoints": Param("checkpoint count or steps", 30, _check_checkpoints, sweepable=False),
    "record_outputs": Param("keep the outputs A_t", False, boolean, sweepable=False),
}


def twin_params(**extra: dict) -> dict:
    """The ``twin`` kind's ``{section: {key: Param}}``, extended/overridden by ``extra``
    (``twin_params(algorithm={"m": Param(...)}, measure={...})``)."""
    out = {"data": dict(TWIN_DATA), "algorithm": dict(TWIN_ALGORITHM)}
    for sec, table in extra.items():
        out.setdefault(sec, {}).update(table)
    return out


# ---- [data] dataset / file: real data instead of a synthetic problem (stabsim.datafiles) --------

def _check_dataset_name(v):
    if not isinstance(v, str) or not v:
        raise _Bad("must be a data set name (see stabsim.datasets.available())")
    from ..datasets import _resolve

    try:
        _resolve(v)
    except ValueError as e:
        raise _Bad(str(e), standalone=True) from None
    return v


def _check_file(v):
    if not isinstance(v, str) or not v:
        raise _Bad("must be a path (a string; relative paths start at the study file's folder)")
    return v


def _check_label(v):
    if not (isinstance(v, str) and v) and not _is_int(v):
        raise _Bad("must be a column name (a string) or a 0-based column index (an integer)")
    return v


def _check_positive(v):
    if not isinstance(v, str) and not _is_num(v):
        raise _Bad("must be the label value that maps to +1 (a string or a number)")
    return v


def _check_scale(v):
    from ..datafiles import SCALES

    v = {"minmax": "minmax[-1,1]", "minmax+unit-norm": "minmax[-1,1]+unit-norm"}.get(v, v)
    return choice(SCALES)(v)


#: ``[data]`` keys that load real data (the ``twin`` kind; a kind opts in with
#: ``twin_params(data=DATA_SOURCE)`` and handling ``spec.data_source`` as ``twin_cell`` does).
DATA_SOURCE = {
    "dataset": Param("a shipped data set (stabsim.datasets)", None, _check_dataset_name, sweepable=False),
    "file": Param("a data file: .csv, .npz, .libsvm, .nc (stabsim.datafiles)", None, _check_file,
                  sweepable=False),
    "label": Param("the label column (name or 0-based index) / array name", None, _check_label,
                   sweepable=False),
    "positive": Param("the label value that maps to +1", None, _check_positive, sweepable=False),
    "scale": Param("none, minmax[-1,1], unit-norm, minmax[-1,1]+unit-norm", None, _check_scale,
                   sweepable=False),
    "test_fraction": Param("stratified held-out fraction (not trained on)", 0.0,
                           number(ge=0, lt=1, what=" (a fraction)"), sweepable=False),
}
