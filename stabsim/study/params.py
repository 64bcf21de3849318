"""The vocabulary of study files: ``StudyError``, the value checkers (``integer``, ``number``,
``open_unit``, ``boolean``, ``string``, ``choice``), ``Param`` (one key of a section) and the
registry of study kinds (``Kind``, ``register_kind``, ``get_kind``, ``load_kinds``,
``KIND_MODULES``).  The keys themselves: ``stabsim.study.schema``; the file format:
docs/study-files.md."""

from __future__ import annotations

import difflib
import math
import numbers
import re
from dataclasses import dataclass
from typing import Any, Callable


class StudyError(ValueError):
    """A bad study file or a run that cannot proceed; the message is for the user."""


class _Bad(ValueError):
    """Raised by a checker: the message says what is allowed ("must be ...", completed with
    the key's name), or, with ``standalone=True``, is a whole sentence (engine errors)."""

    def __init__(self, msg, standalone: bool = False):
        super().__init__(msg)
        self.standalone = standalone

    def text(self, key) -> str:
        return str(self) if self.standalone else f"{key} {self}"


REQUIRED = object()


# ---- value checkers ----------------------------------------------------------------------

def _fmt(v) -> str:
    return repr(v)


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def integer(minimum: int | None = None, what: str = "") -> Callable:
    def check(v):
        lim = f" >= {minimum}" if minimum is not None else ""
        if not _is_int(v) or (minimum is not None and v < minimum):
            raise _Bad(f"must be an integer{lim}{what}")
        return int(v)
    return check


def number(*, gt=None, ge=None, lt=None, le=None, what: str = "") -> Callable:
    parts = [f"> {gt}" if gt is not None else "", f">= {ge}" if ge is not None else "",
             f"< {lt}" if lt is not None else "", f"<= {le}" if le is not None else ""]
    desc = " and ".join(p for p in parts if p)

    def check(v):
        ok = _is_num(v) and math.isfinite(v)
        if ok:
            ok = ((gt is None or v > gt) and (ge is None or v >= ge)
                  and (lt is None or v < lt) and (le is None or v <= le))
        if not ok:
            raise _Bad(f"must be a finite number{' ' + desc if desc else ''}{what}")
        return float(v)
    return check


def open_unit(what: str = "") -> Callable:
    def check(v):
        if not (_is_num(v) and 0.0 < v < 1.0):
            raise _Bad(f"must be a number in the open interval (0, 1){what}")
        return float(v)
    return check


def boolean(v):
    if not isinstance(v, bool):
        raise _Bad("must be true or false")
    return v


def string(pattern: str | None = None, what: str = "") -> Callable:
    def check(v):
        if not isinstance(v, str) or (pattern and not re.fullmatch(pattern, v)):
            raise _Bad(f"must be a string{' matching ' + pattern if pattern else ''}{what}")
        return v
    return check


def _hint(name: str, options) -> str:
    close = difflib.get_close_matches(str(name), [str(o) for o in options], n=3, cutoff=0.6)
    return f" Did you mean {', '.join(map(repr, close))}?" if close else ""


def choice(options) -> Callable:
    options = tuple(options)

    def check(v):
        if v not in options:
            raise _Bad(f"must be one of {', '.join(map(repr, options))}.{_hint(v, options)}".rstrip("."))
        return v
    return check


def _engine(fn) -> Callable:
    """A checker that calls an engine ``get_*``; its own ValueError message is the reason."""
    def check(v):
        if not isinstance(v, str):
            raise _Bad("must be a string (a name)")
        try:
            fn(v)
        except (ValueError, KeyError) as e:
            raise _Bad(str(e).strip("'\""), standalone=True) from None
        return v
    return check


@dataclass(frozen=True)
class Param:
    """One key of a section: documentation, default (``REQUIRED``: must be given; None:
    optional, absent), a checker ``value -> normalised value`` (raises ``_Bad``),
    whether it may be a ``[sweep]`` axis and the axis/dimension name when it is."""

    doc: str
    default: Any = None
    check: Callable | None = None
    sweepable: bool = True
    dim: str | None = None


# ---- kinds -------------------------------------------------------------------------------

@dataclass
class Kind:
    name: str
    func: Callable
    params: dict[str, dict[str, Param]]
    validate: Callable | None = None
    description: str = ""
    #: ``(spec, jobs) -> jobs``: the order in which this process computes the missing chunks
    #: (jobs are ``(cell, start, stop, path)``; the default is cell by cell).  Only what a chunk
    #: costs may depend on it, never its numbers.
    job_order: Callable | None = None


KINDS: dict[str, Kind] = {}
_FIXED_SECTIONS = ("study", "sweep", "bounds", "profiles", "run")


def register_kind(name: str, *, params: dict | None = None, validate: Callable | None = None,
                  description: str = "", job_order: Callable | None = None) -> Callable:
    """Decorator registering ``func(spec, cell, replicates) -> xr.Dataset`` as study kind ``name``.

    ``params``: ``{section: {key: Param}}`` for the kind's sections (``twin_params()``
    gives the built-in ``[data]``/``[algorithm]`` schema to extend).  Swept axis names
    (``Param.dim`` or the key) must be unique across the kind's sections.  ``job_order``:
    see ``Kind.job_order``.
    """
    params = {} if params is None else {s: dict(t) for s, t in params.items()}
    for sec in params:
        if sec in ("study", "sweep", "profiles", "run"):
            raise ValueError(f"kind {name!r}: section [{sec}] is reserved")
    seen = {}
    for sec, table in params.items():
        if sec == "bounds":
            continue
        for key, p in table.items():
            if p.sweepable:
                ax = p.dim or key
                if ax in seen:
                    raise ValueError(f"kind {name!r}: sweep axis {ax!r} is declared by both "
                                     f"[{seen[ax]}] and [{sec}]; give one a distinct Param.dim")
                seen[ax] = sec

    def deco(func):
        if name in KINDS and KINDS[name].func is not func:
            raise ValueError(f"study kind {name!r} is registered twice")
        KINDS[name] = Kind(name, func, params, validate,
                           description or (func.__doc__ or "").strip().split("\n")[0], job_order)
        return func
    return deco


#: Modules imported (once) when a study names a kind that is not registered yet: the places
#: where theorem-specific kinds live.  Append to it to make another module's kinds
#: available to ``load_study`` without importing it first.
KIND_MODULES = ["stabsim.experiments"]


def load_kinds() -> None:
    """Import ``KIND_MODULES`` (each registers its kinds)."""
    import importlib

    for mod in KIND_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise


def get_kind(name: str) -> Kind:
    if name not in KINDS:
        load_kinds()
    if name not in KINDS:
        raise _Bad(f"must be a registered study kind: {', '.join(map(repr, KINDS))}.{_hint(name, KINDS)}".rstrip("."))
    return KINDS[name]
