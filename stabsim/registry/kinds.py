"""The registry of study kinds: what one cell of a study computes.

A kind is registered with ``@register_kind(name, params=..., validate=...)`` on a function
``func(spec, cell, replicates) -> xr.Dataset`` (the contract: docs/study-files.md, "Writing a
kind"); ``stabsim.study`` finds it with ``get_kind(name)``.  Each ``Kind`` records the module
that defined it (``Kind.module``).  The built-in kinds: ``twin`` (``stabsim.registry.twin``) and
those of ``stabsim.experiments``, imported by name (``KIND_MODULES``) the first time a study
names a kind that is not registered yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from stabsim.registry.loading import defined_in, load_modules
from stabsim.registry.values import BadValue, Param, did_you_mean


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
    #: the module that defines ``func`` (where to read the kind)
    module: str = ""


KINDS: dict[str, Kind] = {}
RESERVED_SECTIONS = ("study", "sweep", "profiles", "run")


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
        if sec in RESERVED_SECTIONS:
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
            raise ValueError(f"study kind {name!r} is registered twice (by {KINDS[name].module} and by "
                             f"{defined_in(func)})")
        KINDS[name] = Kind(name, func, params, validate,
                           description or (func.__doc__ or "").strip().split("\n")[0], job_order,
                           defined_in(func))
        return func
    return deco


#: Modules imported (once) when a study names a kind that is not registered yet: the places
#: where theorem-specific kinds live.  Append to it to make another module's kinds
#: available to ``load_study`` without importing it first.
KIND_MODULES = ["stabsim.experiments"]


def load_kinds() -> None:
    """Import ``KIND_MODULES`` (each registers its kinds)."""
    load_modules(KIND_MODULES)


def get_kind(name: str) -> Kind:
    """The kind registered as ``name`` (``KIND_MODULES`` imported first when it is not yet);
    raises ``BadValue`` naming the registered kinds."""
    if name not in KINDS:
        load_kinds()
    if name not in KINDS:
        raise BadValue(f"must be a registered study kind: {', '.join(map(repr, KINDS))}."
                       f"{did_you_mean(name, KINDS)}".rstrip("."))
    return KINDS[name]
