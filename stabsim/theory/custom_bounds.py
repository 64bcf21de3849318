"""Bounds written in a study file: ``[bounds.custom.NAME]``.

::

    [bounds.custom.mine]
    quantity = "uas_mean"                      # a measure name (stabsim.theory.QUANTITIES)
    expr = "2 * G * eta * (sqrt(t) + t / n)"   # the paper's symbols, numpy functions only
    tag = "EXPLICIT"                           # EXPLICIT, EXPLICIT-DD or RATE
    rate = {t = 0.5}                           # optional (required for RATE)
    measured = ["B"]                           # optional: extra (measured) constant names

The formula is never passed to ``eval``: :func:`compile_expr` parses it with :mod:`ast`,
accepts only numbers, the allowed names, ``+ - * / **``, unary ``-``/``+`` and calls of the
whitelisted functions (``FUNCTIONS``, mapped to numpy), and turns the tree into nested
closures once.  The result broadcasts over numpy arrays.  A dry run (:func:`dry_run`) at parse
time evaluates it on representative values and rejects non-finite or negative results before
anything is computed or written.  The bound is registered as ``custom.NAME`` (paper "custom",
ref "study file") for the lifetime of the process.
"""

from __future__ import annotations

import ast
import difflib
import operator
from dataclasses import dataclass
from typing import Callable

import numpy as np

#: the paper's symbols a formula may use (plus the names a bound declares in ``measured``).
SYMBOLS = ("t", "n", "T", "eta", "G", "L", "D", "kappa", "gamma", "delta", "eps", "d")

#: whitelisted functions (elementwise; ``min``/``max`` of two or more arguments are elementwise too).
FUNCTIONS: dict[str, Callable] = {
    "sqrt": np.sqrt, "log": np.log, "exp": np.exp, "abs": np.abs,
    "min": lambda *a: _reduce(np.minimum, a), "max": lambda *a: _reduce(np.maximum, a),
    "minimum": np.minimum, "maximum": np.maximum,
}
ARITY = {"sqrt": (1, 1), "log": (1, 1), "exp": (1, 1), "abs": (1, 1), "min": (2, None), "max": (2, None),
          "minimum": (2, 2), "maximum": (2, 2)}

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.Pow: operator.pow}
_UNOPS = {ast.USub: operator.neg, ast.UAdd: operator.pos}
TAGS = ("EXPLICIT", "EXPLICIT-DD", "RATE")
KEYS = ("quantity", "expr", "tag", "rate", "measured", "description")


class ExprError(ValueError):
    """A formula that is not allowed (the message says what and where)."""


def _reduce(f, args):
    out = args[0]
    for a in args[1:]:
        out = f(out, a)
    return out


def _hint(name, options) -> str:
    close = difflib.get_close_matches(name, list(options), n=3)
    return f" Did you mean {', '.join(map(repr, close))}?" if close else ""


_WHAT = {ast.Attribute: "attribute access", ast.Subscript: "subscripts", ast.Lambda: "lambda",
         ast.ListComp: "comprehensions", ast.SetComp: "comprehensions", ast.DictComp: "comprehensions",
         ast.GeneratorExp: "comprehensions", ast.Compare: "comparisons", ast.BoolOp: "boolean operators",
         ast.IfExp: "conditional expressions", ast.List: "lists", ast.Tuple: "tuples", ast.Dict: "dicts",
         ast.Set: "sets", ast.Starred: "starred arguments", ast.NamedExpr: "assignment expressions",
         ast.JoinedStr: "strings", ast.Await: "await"}


@dataclass(frozen=True)
class Formula:
    """A compiled formula: ``text``, the ``names`` it uses, and ``__call__(**values)``."""

    text: str
    names: tuple
    _f: Callable

    def __call__(self, **values):
        missing = [s for s in self.names if s not in values]
        if missing:
            raise ExprError(f"formula {self.text!r} needs {', '.join(missing)} (not given)")
        with np.errstate(all="ignore"):
            out = self._f({k: (np.asarray(v, dtype=float) if not np.isscalar(v) else np.float64(v))
                           for k, v in values.items() if k in self.names})
        return np.asarray(out, dtype=float) if not np.isscalar(out) else float(out)

    def on_arrays(self, env: dict):
        """Evaluate with the values as given (xarray DataArrays keep their dims and coords)."""
        missing = [s for s in self.names if s not in env]
        if missing:
            raise ExprError(f"formula {self.text!r} needs {', '.join(missing)} (not given)")
        with np.errstate(all="ignore"):
            return self._f({k: (np.float64(env[k]) if isinstance(env[k], float) else env[k]) for k in self.names})


def compile_expr(text: str, allowed=SYMBOLS, functions: dict | None = None, arity: dict | None = None) -> Formula:
    """Parse and compile ``text`` (see the module docstring); raises ``ExprError``.

    ``functions``/``arity``: the callable names and their argument counts (default ``FUNCTIONS``);
    a ``[check]`` formula adds reductions over the data (``stabsim.registry.formulas``)."""
    FUNCTIONS = functions if functions is not None else globals()["FUNCTIONS"]
    ARITY = arity if arity is not None else globals()["ARITY"]
    if not isinstance(text, str) or not text.strip():
        raise ExprError("the formula must be a non-empty string, e.g. expr = \"2 * G * eta * t / n\"")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"formula {text!r} is not a valid expression: {e.msg} (column {e.offset})") from None
    allowed = tuple(allowed)
    names: list[str] = []

    def build(node) -> Callable:
        where = f" at column {getattr(node, 'col_offset', 0) + 1}"
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise ExprError(f"formula {text!r}: only numbers are allowed as constants, got "
                                f"{node.value!r}{where}")
            v = np.float64(node.value)  # numpy scalars: 1/0 is inf (then refused), not a ZeroDivisionError
            return lambda env: v
        if isinstance(node, ast.Name):
            nm = node.id
            if nm in FUNCTIONS:
                raise ExprError(f"formula {text!r}: {nm!r} is a function; call it, e.g. {nm}(t){where}")
            if nm not in allowed:
                raise ExprError(f"formula {text!r}: unknown name {nm!r}{where}.{_hint(nm, allowed + tuple(FUNCTIONS))}"
                                f" Allowed names: {', '.join(allowed)} (declare a measured constant in "
                                f"measured = [...]); functions: {', '.join(FUNCTIONS)}")
            if nm not in names:
                names.append(nm)
            return lambda env: env[nm]
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise ExprError(f"formula {text!r}: operator {type(node.op).__name__} is not allowed{where} "
                                "(allowed: + - * / **)")
            a, b = build(node.left), build(node.right)
            return lambda env: op(a(env), b(env))
        if isinstance(node, ast.UnaryOp):
            op = _UNOPS.get(type(node.op))
            if op is None:
                raise ExprError(f"formula {text!r}: unary {type(node.op).__name__} is not allowed{where}")
            a = build(node.operand)
            return lambda env: op(a(env))
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                what = "attribute access" if isinstance(node.func, ast.Attribute) else "calls of expressions"
                raise ExprError(f"formula {text!r}: {what} is not allowed{where}; call a function by name: "
                                f"{', '.join(FUNCTIONS)}")
            fn = node.func.id
            if fn not in FUNCTIONS:
                raise ExprError(f"formula {text!r}: function {fn!r} is not allowed{where}.{_hint(fn, FUNCTIONS)} "
                                f"Allowed functions: {', '.join(FUNCTIONS)}")
            if node.keywords:
                raise ExprError(f"formula {text!r}: keyword arguments are not allowed in {fn}(){where}")
            lo, hi = ARITY[fn]
            k = len(node.args)
            if k < lo or (hi is not None and k > hi):
                want = f"{lo}" if lo == hi else f"{lo} or more" if hi is None else f"{lo}-{hi}"
                raise ExprError(f"formula {text!r}: {fn}() takes {want} argument(s), got {k}{where}")
            args = [build(a) for a in node.args]
            f = FUNCTIONS[fn]
            return lambda env: f(*(a(env) for a in args))
        what = _WHAT.get(type(node), type(node).__name__)
        raise ExprError(f"formula {text!r}: {what} not allowed{where} (allowed: numbers, names, + - * / **, "
                        f"unary -, and {', '.join(FUNCTIONS)})")

    f = build(tree.body)
    return Formula(text=text, names=tuple(names), _f=f)


def representative_values(params: dict | None = None, extra=()) -> dict:
    """Values of the symbols for the dry run: t = [1, 10]; n, T, eta, d from the study's first
    cell where given; 1 for the constants; 0.1 for gamma and delta; 1 for eps."""
    params = params or {}
    data, alg = params.get("data", {}) or {}, params.get("algorithm", {}) or {}

    def num(v, default):
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else default

    vals = {"t": np.array([1.0, 10.0]), "n": num(data.get("n"), 100.0), "T": num(alg.get("T"), 100.0),
            "eta": num(alg.get("eta"), 0.1), "G": 1.0, "L": 1.0, "D": 1.0, "kappa": 1.0, "gamma": 0.1,
            "delta": 0.1, "eps": 1.0, "d": num(data.get("d"), 10.0)}
    for m in extra:
        vals.setdefault(m, 1.0)
    return vals


def dry_run(formula: Formula, values: dict, *, name: str = "") -> np.ndarray:
    """Evaluate at ``values``; raise ``ExprError`` on a non-finite or negative result."""
    who = f"bound {name!r}: " if name else ""
    try:
        out = np.asarray(formula(**values), dtype=float)
    except ExprError as e:
        raise ExprError(who + str(e)) from None
    except Exception as e:  # numpy errors on odd shapes etc.
        raise ExprError(f"{who}formula {formula.text!r} fails on representative values: {e}") from None
    shown = ", ".join(f"{k}={np.asarray(v).tolist()}" for k, v in values.items() if k in formula.names)
    if not np.all(np.isfinite(out)):
        raise ExprError(f"{who}formula {formula.text!r} is not finite at representative values ({shown}): "
                        f"{out.tolist()}; a bound must be a finite number")
    if np.any(out < 0):
        raise ExprError(f"{who}formula {formula.text!r} is negative at representative values ({shown}): "
                        f"{out.tolist()}; a bound on a norm, risk gap or quantile must be >= 0")
    return out


def validate_table(name: str, table) -> dict:
    """Check one ``[bounds.custom.NAME]`` table's keys and types; returns it normalised
    (``expr`` compiled later, when the allowed names are known)."""
    from stabsim.theory.registry import QUANTITIES

    if not isinstance(table, dict):
        raise ExprError(f"[bounds.custom.{name}] must be a table with quantity, expr, tag")
    unknown = [k for k in table if k not in KEYS]
    if unknown:
        raise ExprError(f"[bounds.custom.{name}]: unknown key {unknown[0]!r}.{_hint(unknown[0], KEYS)} "
                        f"Allowed: {', '.join(KEYS)}")
    for k in ("quantity", "expr", "tag"):
        if k not in table:
            raise ExprError(f"[bounds.custom.{name}]: {k} is required")
    q = table["quantity"]
    if q not in QUANTITIES:
        raise ExprError(f"[bounds.custom.{name}]: quantity {q!r} is not a registered measure.{_hint(str(q), QUANTITIES)}"
                        f" Known: {', '.join(QUANTITIES)}")
    tag = table["tag"]
    if tag not in TAGS:
        raise ExprError(f"[bounds.custom.{name}]: tag {tag!r} must be one of {', '.join(TAGS)}")
    rate = table.get("rate")
    if rate is not None:
        if not isinstance(rate, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                 for v in rate.values()):
            raise ExprError(f"[bounds.custom.{name}]: rate must map a symbol to an exponent, e.g. rate = {{t = 0.5}}")
        rate = {str(k): float(v) for k, v in rate.items()}
    if tag == "RATE" and not rate:
        raise ExprError(f"[bounds.custom.{name}]: a RATE bound needs its exponents, e.g. rate = {{t = 0.5}}")
    measured = table.get("measured", [])
    if not isinstance(measured, list) or not all(isinstance(m, str) and m.isidentifier() for m in measured):
        raise ExprError(f"[bounds.custom.{name}]: measured must be a list of names, e.g. measured = [\"B\"]")
    clash = [m for m in measured if m in FUNCTIONS]
    if clash:
        raise ExprError(f"[bounds.custom.{name}]: measured name {clash[0]!r} is a function name")
    if not isinstance(table["expr"], str):
        raise ExprError(f"[bounds.custom.{name}]: expr must be a string")
    desc = table.get("description", "")
    return {"quantity": q, "expr": table["expr"], "tag": tag, "rate": rate, "measured": list(measured),
            "description": str(desc)}


def prepare(name: str, table: dict, params: dict | None = None) -> Formula:
    """Compile a validated table's formula and dry-run it (the parse-time checks)."""
    if not name.isidentifier():
        raise ExprError(f"[bounds.custom.{name}]: the name must be an identifier (letters, digits, _)")
    try:
        f = compile_expr(table["expr"], SYMBOLS + tuple(table["measured"]))
    except ExprError as e:
        raise ExprError(f"[bounds.custom.{name}]: {e}") from None
    try:
        dry_run(f, representative_values(params, table["measured"]), name=f"custom.{name}")
    except ExprError as e:
        raise ExprError(f"[bounds.custom.{name}]: {e}") from None
    return f


def register_custom(name: str, table: dict, formula: Formula | None = None):
    """Register ``custom.NAME`` in the theory registry (idempotent for the same definition)."""
    from stabsim.theory.registry import register_custom as _reg

    formula = formula or compile_expr(table["expr"], SYMBOLS + tuple(table["measured"]))
    return _reg(key=f"custom.{name}", quantity=table["quantity"], tag=table["tag"], func=formula,
                rate=table.get("rate"), measured=tuple(table.get("measured", ())),
                description=table.get("description") or f"{table['quantity']} <= {table['expr']}",
                expr=table["expr"])
