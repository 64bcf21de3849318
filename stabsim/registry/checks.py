"""The registry of analysis checks: what turns a finished study's data into verdicts.

A check is registered with ``@register_check(name)`` on a function ``func(spec, ds) ->
CheckResult`` (``stabsim.analyses.base.CheckResult``); a study names it in ``[study] check``,
and ``get_check(name)`` finds it.  Each ``Check`` records the module that defined it
(``Check.module``).  The built-in checks are those of ``stabsim.analyses``, imported by name
(``CHECK_MODULES``) the first time a check is looked up.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Callable

from stabsim.registry.loading import defined_in, load_modules


@dataclass
class Check:
    name: str
    func: Callable
    description: str = ""
    #: the module that defines ``func`` (where to read the check)
    module: str = ""


CHECKS: dict[str, Check] = {}

#: Modules imported (once) when a check is looked up: the places where the built-in checks live.
CHECK_MODULES = ["stabsim.analyses"]


def register_check(name: str, *, description: str = "") -> Callable:
    """Decorator registering ``func(spec, ds) -> CheckResult`` as the analysis ``name``."""

    def deco(func):
        if name in CHECKS and CHECKS[name].func is not func:
            raise ValueError(f"analysis check {name!r} is registered twice (by {CHECKS[name].module} and by "
                             f"{defined_in(func)})")
        CHECKS[name] = Check(name, func, description or (func.__doc__ or "").strip().split("\n")[0],
                             defined_in(func))
        return func
    return deco


def load_checks() -> None:
    """Import ``CHECK_MODULES`` (each registers its checks)."""
    load_modules(CHECK_MODULES)


def get_check(name: str) -> Check:
    """The check registered as ``name``; raises ``KeyError`` naming the registered checks."""
    load_checks()
    if name not in CHECKS:
        close = difflib.get_close_matches(name, list(CHECKS), n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise KeyError(f"no analysis check {name!r}.{hint} Registered: {', '.join(sorted(CHECKS))}")
    return CHECKS[name]
