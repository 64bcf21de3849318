"""The vocabulary of study files: ``StudyError``, the value checkers (``integer``, ``number``,
``open_unit``, ``boolean``, ``string``, ``choice``, ``engine_name``), ``BadValue`` (what a
checker raises) and ``Param`` (one key of a section).  The keys of ``[study]``, ``[bounds]``,
``[check]``, ``[run]``: ``stabsim.study.schema``; of the ``twin`` kind: ``stabsim.registry.twin``;
the file format: docs/study-files.md."""

from __future__ import annotations

import difflib
import math
import numbers
import re
from dataclasses import dataclass
from typing import Any, Callable


class StudyError(ValueError):
    """A bad study file or a run that cannot proceed; the message is for the user."""


class BadValue(ValueError):
    """Raised by a checker: the message says what is allowed ("must be ...", completed with
    the key's name), or, with ``standalone=True``, is a whole sentence (engine errors)."""

    def __init__(self, msg, standalone: bool = False):
        super().__init__(msg)
        self.standalone = standalone

    def text(self, key) -> str:
        return str(self) if self.standalone else f"{key} {self}"


REQUIRED = object()


# ---- value checkers ----------------------------------------------------------------------

def is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def is_num(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def integer(minimum: int | None = None, what: str = "") -> Callable:
    def check(v):
        lim = f" >= {minimum}" if minimum is not None else ""
        if not is_int(v) or (minimum is not None and v < minimum):
            raise BadValue(f"must be an integer{lim}{what}")
        return int(v)
    return check


def number(*, gt=None, ge=None, lt=None, le=None, what: str = "") -> Callable:
    parts = [f"> {gt}" if gt is not None else "", f">= {ge}" if ge is not None else "",
             f"< {lt}" if lt is not None else "", f"<= {le}" if le is not None else ""]
    desc = " and ".join(p for p in parts if p)

    def check(v):
        ok = is_num(v) and math.isfinite(v)
        if ok:
            ok = ((gt is None or v > gt) and (ge is None or v >= ge)
                  and (lt is None or v < lt) and (le is None or v <= le))
        if not ok:
            raise BadValue(f"must be a finite number{' ' + desc if desc else ''}{what}")
        return float(v)
    return check


def open_unit(what: str = "") -> Callable:
    def check(v):
        if not (is_num(v) and 0.0 < v < 1.0):
            raise BadValue(f"must be a number in the open interval (0, 1){what}")
        return float(v)
    return check


def boolean(v):
    if not isinstance(v, bool):
        raise BadValue("must be true or false")
    return v


def string(pattern: str | None = None, what: str = "") -> Callable:
    def check(v):
        if not isinstance(v, str) or (pattern and not re.fullmatch(pattern, v)):
            raise BadValue(f"must be a string{' matching ' + pattern if pattern else ''}{what}")
        return v
    return check


def did_you_mean(name: str, options) -> str:
    close = difflib.get_close_matches(str(name), [str(o) for o in options], n=3, cutoff=0.6)
    return f" Did you mean {', '.join(map(repr, close))}?" if close else ""


def choice(options) -> Callable:
    options = tuple(options)

    def check(v):
        if v not in options:
            raise BadValue(f"must be one of {', '.join(map(repr, options))}.{did_you_mean(v, options)}".rstrip("."))
        return v
    return check


def engine_name(fn) -> Callable:
    """A checker that calls an engine ``get_*``; its own ValueError message is the reason."""
    def check(v):
        if not isinstance(v, str):
            raise BadValue("must be a string (a name)")
        try:
            fn(v)
        except (ValueError, KeyError) as e:
            raise BadValue(str(e).strip("'\""), standalone=True) from None
        return v
    return check


@dataclass(frozen=True)
class Param:
    """One key of a section: documentation, default (``REQUIRED``: must be given; None:
    optional, absent), a checker ``value -> normalised value`` (raises ``BadValue``),
    whether it may be a ``[sweep]`` axis and the axis/dimension name when it is."""

    doc: str
    default: Any = None
    check: Callable | None = None
    sweepable: bool = True
    dim: str | None = None
