"""The formulas of a ``[check]`` section (``value``, ``widen``, ``shift``, formula ``constants``;
``stabsim.analyses.overlay_measure`` evaluates them on a study's data): the restricted evaluator of
``stabsim.theory.custom_bounds`` with the reductions over the data added (``CHECK_FUNCTIONS``), compiled
by ``compile_formula`` -- at parse time by ``stabsim.study`` (syntax and functions; names are
resolved on the data) -- and ``with_variant`` (a ``[check] variants`` entry laid over the section)."""

from __future__ import annotations

import ast

import numpy as np

from stabsim.theory.custom_bounds import ARITY, FUNCTIONS, ExprError, compile_expr
from stabsim.engine.measures import mean_ci

STATISTICS = ("mean", "quantile", "max")

#: reductions over every element of a data variable (a float).
REDUCTIONS = {
    "mean_all": lambda a: float(a.mean()) if hasattr(a, "mean") else float(np.mean(a)),
    "max_all": lambda a: float(a.max()) if hasattr(a, "max") else float(np.max(a)),
    "min_all": lambda a: float(a.min()) if hasattr(a, "min") else float(np.min(a)),
}
#: per coordinate, over the replicates: the ends of the 95 % Student t CI of the mean.
REPLICATE_REDUCTIONS = {
    "mean_lower": lambda a: mean_ci(a)["lower"],
    "mean_upper": lambda a: mean_ci(a)["upper"],
}
CHECK_FUNCTIONS = {**FUNCTIONS, **REDUCTIONS, **REPLICATE_REDUCTIONS}
CHECK_ARITY = {**ARITY, **{k: (1, 1) for k in (*REDUCTIONS, *REPLICATE_REDUCTIONS)}}


def formula_names(text: str) -> tuple:
    """The names a formula uses (functions excluded); raises ``ExprError`` on a syntax error."""
    try:
        tree = ast.parse(str(text).strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"formula {text!r} is not a valid expression: {e.msg} (column {e.offset})") from None
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return tuple(dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in called))


def compile_formula(text: str, where: str):
    """Compile a ``[check]`` formula (syntax and functions checked; names are resolved later)."""
    try:
        return compile_expr(text, formula_names(text), functions=CHECK_FUNCTIONS, arity=CHECK_ARITY)
    except ExprError as e:
        raise ExprError(f"[check] {where}: {e}") from None


def with_variant(cfg: dict, variant: dict) -> dict:
    """``cfg`` with a variant's keys (``[check] variants``); a variant's ``measure`` replaces a
    ``value`` and the reverse."""
    out = {**cfg, **variant}
    if "measure" in variant:
        out["value"] = None
    if "value" in variant:
        out["measure"] = None
    return out
