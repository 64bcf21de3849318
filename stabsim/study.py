"""Studies: a TOML file -> a validated grid of cells x replicate chunks -> a resumable run
-> one ``data.nc``.

>>> from stabsim.study import load_study, run_study
>>> spec = load_study("studies/example_twin.toml", profile="quick")
>>> result = run_study(spec, "out")                     # in-process (numba threads)
>>> result = run_study(spec, "out", scheduler="local:2")  # dask LocalCluster, 2 workers
>>> xr.open_dataset(result.data_path)

Study file schema
=================

Every section and key is checked: an unknown one is an error with a "did you mean";
a bad value is an error naming the section, the key, the value and what is allowed.

``[study]``
    ``id``            str, ``[A-Za-z0-9_.-]+``; default: the file name without ``.toml``.
                      The output goes to ``OUT/<id>/``.
    ``description``   str, one line (``stabsim list`` shows it).
    ``kind``          str, a registered kind (default ``"twin"``; see "Kinds" below).
    ``seed``          int >= 0 (default 0).  Every replicate is a pure function of
                      (seed, replicate id); ``stabsim run --seed N`` overrides it.
    ``replicates``    int >= 1 (default 100): replicate ids 0..replicates-1 in every cell.
    ``chunk``         int >= 1 (default min(replicates, 64)): replicates per chunk, the unit
                      of scheduling, persistence and resumption.
    ``suite``         bool (default false): part of ``stabsim run suite``.
    ``check``         str: the analysis (``stabsim.analyses.register_check``) that turns the
                      results into verdicts and figures (``summary.md``); not part of the data.

``[data]`` (kind ``twin``)
    ``problem``       a ``stabsim.synthetic`` problem (default ``"auc_separable"``).
    ``d``             int >= 1 (default 10).  ``n`` int >= 2 (default 100).
    ``per_replicate`` bool (default false): false = one data set per cell, drawn from
                      (data seed, replicate 0); true = replicate r gets its own data set drawn
                      from (data seed, r) (on-average stability).
    ``seed``          int >= 0, the data seed (default: ``[study] seed``).
    ``gamma``, ``rho``, ``pi``, ``flip``, ``kappa``: problem parameters, passed to
                      ``make_problem`` (only the ones given; it rejects the ones a problem
                      does not take).  ``gamma`` here is the class separation (> 0).
    Real data instead of a problem (kind ``twin``; ``stabsim.datafiles``; give exactly one of
    ``problem``, ``dataset``, ``file``; problem parameters and ``per_replicate`` are errors):
    ``dataset``       a ``stabsim.datasets`` name (``"diabetes"``, ...).
    ``file``          ``.csv`` / ``.npz`` (arrays ``X``, ``y``) / ``.libsvm`` / ``.nc`` (variables
                      ``X (sample, feature)``, ``y``); relative to the study file's folder.  Read
                      and checked at parse time (errors name the file, line and column); its
                      sha256 is part of the fingerprint.
    ``label``         the label column: a header name or a 0-based index (CSV; default the
                      column ``label``/``y``, else the last one), or the label array (npz/nc).
    ``positive``      the label value mapped to +1 (default: the larger / later-sorted of the two).
    ``scale``         ``"none"`` (file default), ``"minmax[-1,1]"`` (dataset default, as P1),
                      ``"unit-norm"``, ``"minmax[-1,1]+unit-norm"``; over the whole file.
    ``n``             a stratified subsample of the training rows, drawn from the data seed
                      (sweepable; default: all training rows, in file order).  ``d``: from the data.
    ``test_fraction`` in [0, 1) (default 0): a stratified, seeded held-out part, never trained on.

``[algorithm]`` (kind ``twin``; the arguments of ``stabsim.run_twin``)
    ``name``          algorithm (default ``"p1_alg1"``).  ``loss`` (default ``"auc_hinge"``).
    ``constraint``    ``"none"`` (default), ``"psd"``, ``"l2:1.0"`` or ``["l2", 1.0]``.
    ``eta``           step size: a number > 0 (constant), or a schedule ``"sqrt:0.5"`` /
                      ``["sqrt", 0.5]`` (``constant``, ``sqrt``, ``strongly_convex``, ``pl``).
    ``T``             int >= 1, number of steps (default 1000).
    ``neighbour``     ``"flip"``, ``"farthest"`` (default), ``"fresh"`` or ``"same"``.
    ``k``             index of the replaced example, int >= 0, or ``"random"`` (default).
    ``sigma``         gradient noise >= 0 (default 0).  ``independent_noise`` bool.
    ``buffer``        int >= 1 (FIFO algorithms).  ``output``: output rule.  ``q`` in (1, 2].
    ``w0``            ``"zeros"`` (default) or ``"random"``.
    ``checkpoints``   int >= 1: about that many log-spaced steps (default 30); or a list of
                      steps in [1, T].  ``record_outputs`` bool: also keep A_t(S), A_t(S').

``[sweep]``
    ``AXIS = [v1, v2, ...]``: a non-empty list of distinct values for a ``[data]`` or
    ``[algorithm]`` key (e.g. ``n``, ``d``, ``T``, ``eta``, ``sigma``, ``loss``, ``gamma``);
    ``[algorithm] name`` is swept as ``algorithm``, ``[data] problem`` as ``problem`` and
    ``[data] seed`` as ``data_seed``.  The grid is the cartesian product of the axes in file
    order; each axis becomes a dimension of ``data.nc`` named after it.  A swept value
    replaces the section's value in that cell.

``[bounds]``
    ``keys``          list of theory registry keys to overlay (checked with
                      ``stabsim.theory.get``; unknown keys get a "did you mean").
    ``gamma``, ``delta``  confidence levels in the open interval (0, 1); ``eps`` > 0: the
                      parameters the bound curves are evaluated at.  Not part of the
                      simulation (changing them does not change the fingerprint).
    ``[bounds.custom.NAME]``  the file's own bound: ``quantity``, ``expr`` (a formula in the
                      paper's symbols), ``tag``, optional ``rate``/``measured``; compiled by a
                      restricted evaluator, dry-run at parse time and registered as
                      ``custom.NAME`` (``stabsim.custom_bounds``).

``[check]``  (analysis only, not in the fingerprint)
    The configuration of a generic check (``[study] check = "overlay"``,
    ``stabsim.analyses.overlay``): ``measure`` (a function of ``stabsim.measures``), ``x``,
    ``by``, ``candidates``, ``bounds`` (registry keys or ``custom.NAME``), ``gamma``,
    ``constants``, ``trivial``.  Unknown measure, bound or axis names are parse errors.

``[study] plugins``  user modules imported at parse time (``stabsim.plugins``, docs/plugins.md);
    the SHA-256 of each one's source is part of the fingerprint.

``[profiles.NAME]``  (e.g. ``quick``, ``full``)
    Tables mirroring the sections above whose keys override the base values, e.g.
    ``[profiles.quick] study.replicates = 8`` or ``[profiles.quick.sweep] n = [50]``.
    The profile is chosen with ``load_study(path, profile)`` / ``stabsim run --quick`` /
    ``--profile NAME``; with none given, ``full`` is used when it exists, else the base.

Kinds
=====

A kind turns one cell into raw per-replicate measurements::

    from stabsim.study import Param, register_kind, twin_params, integer

    @register_kind("my_kind", params=twin_params(algorithm={"m": Param("...", 5, integer(1))}),
                   description="one line")
    def my_cell(spec, cell, replicates):
        p = spec.cell_params(cell)          # {"data": {...}, "algorithm": {...}, ...}
        ...
        return ds   # xarray.Dataset with dim "replicate" == replicates (+ anything else)

Contract: the dataset's ``replicate`` coordinate equals ``replicates``; each replicate's
values depend only on (spec, cell, replicate id) (use ``stabsim.rng`` streams keyed by the
replicate id), so any chunking, thread count or scheduler gives bit-identical results; it
holds only what measures need (values at checkpoints, not whole trajectories); variables
that do not depend on the replicate are fine (they must agree between chunks); attrs are
str/int/float.  ``params`` maps section names to ``{key: Param}`` (sections other than
``study``, ``sweep``, ``bounds``, ``profiles`` are the kind's own); ``validate(spec)`` may
check combinations (raise ``StudyError``).  Kinds used with dask must live in a module
the workers can import.  The module that registers a kind must be imported before a
study of that kind is loaded: ``get_kind`` imports the modules listed in ``KIND_MODULES``
(``stabsim.experiments``) the first time it meets an unknown kind.

Execution
=========

``run_study(spec, out_dir, scheduler=...)`` (``stabsim run``).  The grid is the cartesian
product of the sweep axes; a *chunk* is one cell x a block of ``chunk`` consecutive
replicate ids.  ``scheduler``: ``None``/``"local"`` runs the chunks one after the other in
this process (numba threads parallelise over the replicates inside a chunk); ``"local:N"``
starts a ``dask.distributed.LocalCluster(n_workers=N, threads_per_worker=1,
processes=True)`` (each worker's numba uses cpu_count // N threads) and submits every chunk
with ``client.submit``; ``"tcp://host:port"`` uses an existing cluster.  Workers only
compute and return the chunk's dataset; this process writes it, so workers need no access
to the output folder.  Replicate r is a pure function of (seed, r), so every mode, thread
count and chunk size gives bit-identical ``data.nc``.  A tqdm bar counts chunks (with
ETA); Ctrl-C keeps the finished chunks and says how to resume.  ``run_studies`` shares one
``Executor`` (one cluster) between several studies.

Storage (``stabsim.store``), in ``OUT/<id>/``: ``study.json`` (the fingerprint: a hash of
the normalised spec, which includes the seed but not the code, whose identity -- a hash of
every module, git commit, versions (``stabsim.codeid``) -- is recorded beside every chunk and
data.nc: a resume with chunks of other code is refused unless ``recompute_stale=True``; a
directory holding another study is refused unless ``force=True``, and the message names the
changed keys; a changed ``replicates``/``chunk`` reuses every valid replicate; see
docs/reliability.md), ``chunks/<cell-id>__r<start>-<stop>.nc``
(each written to a temporary file, checked, then ``os.replace``-d; validated on start: a
truncated, foreign or altered chunk is deleted and recomputed, leftover temporary files
are removed) and ``data.nc`` (chunks concatenated along ``replicate`` per cell, cells
stacked along the sweep dims, provenance attrs; written atomically, and the chunks are
deleted only after it has been written and checked, unless ``keep_chunks``).
"""

from __future__ import annotations

import copy
import datetime as _dt
import difflib
import hashlib
import itertools
import json
import math
import numbers
import os
import platform
import re
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import xarray as xr

from . import __version__
from .provenance import provenance
from .store import (StoreError, StudyDir, atomic_write_netcdf, chunk_attrs, clean_encoding, open_chunk,
                    validate_chunk, write_data)

__all__ = ["StudyError", "Param", "StudySpec", "Kind", "KINDS", "register_kind", "get_kind",
           "twin_params", "load_study", "parse_study", "run_study", "run_studies", "RunResult",
           "Executor", "assemble", "default_studies_dir", "study_index",
           "integer", "number", "open_unit", "boolean", "choice", "string"]

FORMAT_VERSION = 1


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


KINDS: dict[str, Kind] = {}
_FIXED_SECTIONS = ("study", "sweep", "bounds", "profiles")


def register_kind(name: str, *, params: dict | None = None, validate: Callable | None = None,
                  description: str = "") -> Callable:
    """Decorator registering ``func(spec, cell, replicates) -> xr.Dataset`` as study kind ``name``.

    ``params``: ``{section: {key: Param}}`` for the kind's sections (``twin_params()``
    gives the built-in ``[data]``/``[algorithm]`` schema to extend).  Swept axis names
    (``Param.dim`` or the key) must be unique across the kind's sections.
    """
    params = {} if params is None else {s: dict(t) for s, t in params.items()}
    for sec in params:
        if sec in ("study", "sweep", "profiles"):
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
                           description or (func.__doc__ or "").strip().split("\n")[0])
        return func
    return deco


#: Modules imported (once) when a study names a kind that is not registered yet: the places
#: where theorem-specific kinds live.  Append to it to make another module's kinds
#: available to ``load_study`` without importing it first.
KIND_MODULES = ["stabsim.experiments", "stabsim.checks"]  # TRANSITION (#18): stabsim.checks goes


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


def _check_check(v):
    """``[study] check``: a registered analysis check (validated before anything runs, so that
    a typo is not found only after the whole computation)."""
    v = string()(v)
    from .analyses.base import get_check

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
    from .plugins import PluginError, load_plugins

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
    from .theory import get as get_bound

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
    from .custom_bounds import ExprError, validate_table

    if not isinstance(v, dict):
        raise _Bad("must be tables [bounds.custom.NAME] with quantity, expr, tag")
    try:
        return {name: validate_table(name, t) for name, t in v.items()}
    except ExprError as e:
        raise _Bad(str(e), standalone=True) from None


BOUNDS_PARAMS = {
    "keys": Param("theory registry keys to overlay", [], _bound_keys, sweepable=False),
    "custom": Param("the study file's own bounds, [bounds.custom.NAME]", {}, _custom_tables, sweepable=False),
    "gamma": Param("confidence level gamma", None, open_unit(" (a confidence level)"), sweepable=False),
    "delta": Param("failure probability / privacy delta", None, open_unit(" (a probability)"), sweepable=False),
    "eps": Param("privacy budget epsilon", None, number(gt=0, what=" (privacy budget epsilon)"), sweepable=False),
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
    if not isinstance(v, dict) or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                          for x in v.values()):
        raise _Bad("must be a table of numbers, e.g. constants = {B = 1.5}")
    return {str(k): float(x) for k, x in v.items()}


#: ``[check]``: the configuration of a generic check (``check = "overlay"``, stabsim.analyses.overlay).
#: Analysis only: not part of the fingerprint.  Names are checked at the end of ``parse_study``.
CHECK_PARAMS = {
    "measure": Param("a function of stabsim.measures (uas_mean, uas_quantile, onavg_stability, ...)", None,
                     string(), sweepable=False),
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
    "constants": Param("extra named constants passed to the bounds", {}, _check_constants, sweepable=False),
    "trivial": Param("flag bounds above the diameter 2R of the constraint set as vacuous", True, boolean,
                     sweepable=False),
}


def _finish_custom_and_check(spec) -> None:
    """Compile, dry-run and register the ``[bounds.custom.*]`` of ``spec``; check that every
    ``custom.*`` key and the ``[check]`` names exist (raise ``StudyError``)."""
    from .custom_bounds import ExprError, prepare, register_custom

    custom = spec.bounds.get("custom") or {}
    cells = spec.cells()
    first = spec.cell_params(cells[0]) if cells else spec.sections
    for name, table in custom.items():
        try:
            f = prepare(name, table, first)
            register_custom(name, table, f)
        except (ExprError, ValueError) as e:
            raise StudyError(f"[bounds.custom.{name}] {e}" if not str(e).startswith("[bounds.custom.")
                             else str(e)) from None
    for k in spec.bounds.get("keys", []):
        if k.startswith("custom.") and k[len("custom."):] not in custom:
            raise StudyError(f"[bounds] keys: {k!r} is not defined in this file "
                             f"(define it in [bounds.custom.{k[len('custom.'):]}]){_hint(k[7:], custom)}")
    chk = spec.check
    if not chk:
        return
    from . import measures as _measures
    from .theory import get as get_bound

    m = chk.get("measure")
    if m is None:
        raise StudyError("[check] measure is required (a function of stabsim.measures, e.g. \"uas_mean\")")
    if not callable(getattr(_measures, m, None)) or m.startswith("_"):
        names = [n for n in dir(_measures) if not n.startswith("_") and callable(getattr(_measures, n))]
        raise StudyError(f"[check] measure = {m!r}: not a function of stabsim.measures.{_hint(m, names)}")
    if not chk.get("bounds"):
        raise StudyError("[check] bounds: name at least one bound (a registry key or custom.NAME)")
    for k in chk["bounds"]:
        if k.startswith("custom.") and k[7:] in custom:
            continue
        try:
            get_bound(k)
        except KeyError as e:
            raise StudyError(f"[check] bounds: {e.args[0]}") from None
    for key in ("by", "candidates"):
        for ax in chk.get(key) or []:
            if ax not in spec.sweep:
                raise StudyError(f"[check] {key}: {ax!r} is not a sweep axis of this study.{_hint(ax, spec.sweep)} "
                                 f"Axes: {', '.join(spec.sweep) or '(none)'}")


# ---- the built-in "twin" kind's schema -----------------------------------------------------

def _check_problem(v):
    from .synthetic import make_problem

    if not isinstance(v, str):
        raise _Bad("must be a string (a problem name)")
    try:
        make_problem(v, 10)
    except ValueError as e:
        if "unknown problem" in str(e):
            raise _Bad(str(e), standalone=True) from None
    return v


def _check_eta(v):
    from .steps import SCHEDULES, step_sizes

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
    from .constraints import get_constraint

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
    from .losses import get_loss

    if isinstance(v, str) and v.endswith("qhinge"):
        return _engine(lambda name: get_loss(name, 1.5))(v)  # q is checked per cell
    return _engine(get_loss)(v)


def _check_algorithm(v):
    from .algorithms import get_algorithm

    return _engine(get_algorithm)(v)


def _check_output(v):
    from .algorithms import OUTPUTS

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
    from .datasets import _resolve

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
    from .datafiles import SCALES

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


def _source_error(src, what, msg):
    return StudyError(f"{src}: [data] {what}: {msg}")


def _resolve_data_source(src, path, sections: dict, sweep: dict, merged: dict, seed: int) -> dict | None:
    """Read and check ``[data] dataset``/``file`` at parse time (before any output exists); fill
    ``d`` and (unless given) ``n`` from the data.  Returns ``spec.data_source`` or None.  Without
    a source the source keys are dropped from the sections (fingerprints of synthetic studies
    are unchanged)."""
    from .datafiles import DataFileError, read_data_file, stratified_split

    d = sections["data"]
    given = set(merged.get("data", {})) | {k for k in sweep if k in d or k in ("problem", "n", "d")}
    if d["dataset"] is None and d["file"] is None:
        extra = [k for k in DATA_SOURCE if k in given]
        if extra:
            raise StudyError(f"{src}: [data] {extra[0]} applies to real data only: give [data] dataset = "
                             "\"NAME\" or file = \"PATH\"")
        for k in DATA_SOURCE:
            d.pop(k, None)
        return None
    chosen = [k for k in ("problem", "dataset", "file") if k in given]
    if len(chosen) > 1:
        raise StudyError(f"{src}: [data] give exactly one of problem, dataset, file (this file gives "
                         f"{' and '.join(chosen)})")
    bad = [k for k in PROBLEM_KEYS + ("per_replicate",) if k in given]
    if bad:
        raise StudyError(f"{src}: [data] {bad[0]} is a synthetic-problem setting; it does not apply to "
                         f"real data ({'dataset ' + repr(d['dataset']) if d['dataset'] else 'file ' + repr(d['file'])})")
    if "d" in sweep:
        raise StudyError(f"{src}: [sweep] d: the dimension of real data is fixed by the data")
    if d["dataset"] is not None:
        from .datasets import load

        for k in ("label", "positive"):
            if k in given:
                raise _source_error(src, k, f"applies to [data] file only; dataset {d['dataset']!r} has "
                                            "its own labels")
        scale = d["scale"] or "minmax[-1,1]"
        try:
            X, y, info = load(d["dataset"], scale=None if scale == "none" else scale)
        except (ValueError, ImportError) as e:
            raise _source_error(src, f"dataset = {d['dataset']!r}", str(e)) from None
        source = {"kind": "dataset", "name": info["name"], "label_map": info["binarize_rule"]}
        what = f"dataset {d['dataset']!r}"
    else:
        fp = Path(d["file"]).expanduser()
        if not fp.is_absolute():
            fp = (Path(path).resolve().parent if path is not None else Path.cwd()) / fp
        scale = d["scale"] or "none"
        try:
            X, y, info = read_data_file(fp, label=d["label"], positive=d["positive"])
        except DataFileError as e:
            raise _source_error(src, f"file = {d['file']!r}", str(e)) from None
        source = {"kind": "file", "path": str(fp), "sha256": info["sha256"], "format": info["format"],
                  "label_map": info["label_map"]}
        what = f"file {d['file']!r}"
    d["scale"] = scale
    d["problem"] = None
    rows, dim = X.shape
    if "d" in given and d["d"] != dim:
        raise _source_error(src, f"d = {d['d']}", f"{what} has {dim} features; leave d unset (it is "
                                                   "taken from the data)")
    d["d"] = int(dim)
    n_train = int(stratified_split(y, d["test_fraction"], 0)[0].size)
    held = f" ({rows} rows less {rows - n_train} held out by test_fraction = {d['test_fraction']})" \
        if n_train < rows else ""
    if "n" not in merged.get("data", {}):
        d["n"] = n_train  # every training row (a swept n replaces it)
    for n in sweep.get("n", [d["n"]]):
        if n > n_train:
            raise _source_error(src, f"n = {n}", f"larger than the {n_train} training examples of "
                                                 f"{what}{held}; the subsample n must be <= {n_train}")
    source.update(rows=int(rows), d=int(dim), n_train=n_train, n_pos=int((y == 1).sum()),
                  n_neg=int((y == -1).sum()))
    return source


_SOURCE_CACHE: dict = {}


def _source_arrays(spec, d: dict, data_seed: int):
    """(X, y, X_test, y_test) of one cell of a study on real data (``spec.data_source``)."""
    from .datafiles import file_sha256, prepare, read_data_file, scale_features

    s = spec.data_source
    key = (s["kind"], s.get("path") or s.get("name"), s.get("sha256"), d["label"], d["positive"], d["scale"])
    if key not in _SOURCE_CACHE:
        if s["kind"] == "file":
            sha = file_sha256(s["path"])
            if sha != s["sha256"]:
                raise StudyError(f"[data] file {s['path']} changed since the study was loaded (sha256 "
                                 f"{s['sha256'][:12]}... -> {sha[:12]}...); load the study again")
            X, y, _ = read_data_file(s["path"], label=d["label"], positive=d["positive"])
            X = scale_features(X, d["scale"])
        else:
            from .datasets import load

            X, y, _ = load(s["name"], scale=None if d["scale"] == "none" else d["scale"])
        if len(_SOURCE_CACHE) > 4:
            _SOURCE_CACHE.clear()
        _SOURCE_CACHE[key] = (X, y)
    X, y = _SOURCE_CACHE[key]
    part = prepare(X, y, scale="none", n=d["n"], test_fraction=d["test_fraction"], seed=data_seed)
    return part["X"], part["y"], part["X_test"], part["y_test"]


# ---- the spec ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Cell:
    index: int
    id: str
    coords: dict


@dataclass
class StudySpec:
    """A validated study: the effective values (profile applied, defaults filled in)."""

    id: str
    description: str
    kind: str
    seed: int
    replicates: int
    chunk: int
    suite: bool
    sections: dict            # the kind's sections: {"data": {...}, "algorithm": {...}, ...}
    sweep: dict               # axis -> list of normalised values (file order)
    bounds: dict
    profile: str | None = None
    path: str | None = None
    text: str = ""
    axes: dict = field(default_factory=dict)  # axis -> (section, key)
    check: dict = field(default_factory=dict)  # the [check] section (analysis only, not in the fingerprint)
    plugins: tuple = ()  # user modules ([study] plugins and --plugins), stabsim.plugins
    data_source: dict | None = None  # [data] dataset/file: what was read (_resolve_data_source)

    # grid ---------------------------------------------------------------------------------
    def cells(self) -> list[Cell]:
        axes = list(self.sweep)
        out = []
        for i, combo in enumerate(itertools.product(*(self.sweep[a] for a in axes))):
            coords = dict(zip(axes, combo))
            out.append(Cell(i, _cell_id(i, coords), coords))
        return out

    def chunk_ranges(self) -> list[tuple[int, int]]:
        return [(s, min(s + self.chunk, self.replicates)) for s in range(0, self.replicates, self.chunk)]

    @property
    def n_chunks(self) -> int:
        return len(self.cells()) * len(self.chunk_ranges())

    def cell_params(self, cell) -> dict:
        """``{section: {key: value}}`` for one cell (``cell``: a Cell or its coords dict)."""
        coords = cell.coords if isinstance(cell, Cell) else cell
        out = copy.deepcopy(self.sections)
        for axis, value in coords.items():
            sec, key = self.axes[axis]
            out[sec][key] = value
        return out

    # identity -----------------------------------------------------------------------------
    def normalized(self) -> dict:
        """Everything that determines the data (not description, suite, bounds).  The code is
        not part of it: its identity is recorded beside every result (``stabsim.codeid``)."""
        out = {"id": self.id, "kind": self.kind, "seed": self.seed, "replicates": self.replicates,
               "chunk": self.chunk, "sections": self.sections, "sweep": self.sweep,
               "format": FORMAT_VERSION}
        if self.plugins:  # the code identity covers stabsim only: a plugin's source is part of the study
            from .plugins import plugin_hashes

            out["plugins"] = plugin_hashes(self.plugins)
        if self.data_source and self.data_source.get("sha256"):  # a changed file is another study
            out["data_file_sha256"] = self.data_source["sha256"]
        return out

    @property
    def fingerprint(self) -> str:
        text = json.dumps(self.normalized(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    @property
    def data_fingerprint(self) -> str:
        """The fingerprint without ``replicates`` and ``chunk``: replicate r is a pure function
        of (this, cell, r), so chunks with the same data fingerprint hold valid replicates for
        any replicate count and chunk size (the ``chunk_fingerprint`` attr of chunks)."""
        norm = {k: v for k, v in self.normalized().items() if k not in _CHUNKING_KEYS}
        text = json.dumps(norm, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:20]


_CHUNKING_KEYS = ("replicates", "chunk")


def _sanitize(v) -> str:
    s = re.sub(r"[^A-Za-z0-9.+-]+", "-", str(v)).strip("-")
    return s or "x"


def _cell_id(i: int, coords: dict) -> str:
    parts = [f"c{i:03d}"] + [f"{_sanitize(a)}{_sanitize(v)}" for a, v in coords.items()]
    cid = "_".join(parts).replace("__", "_")
    if len(cid) > 80:
        h = hashlib.sha256(json.dumps(coords, sort_keys=True, default=str).encode()).hexdigest()[:8]
        cid = f"{cid[:70]}-{h}"
    return cid


# ---- parsing ---------------------------------------------------------------------------

def _err(src, where, msg):
    return StudyError(f"{src}: {where} {msg}")


def _check_value(src, where, key, p: Param, value):
    if p.check is None:
        return value
    try:
        return p.check(value)
    except _Bad as e:
        raise _err(src, where, f"{key} = {_fmt(value)}: {e.text(key)}") from None


def _unknown_key(src, section, key, allowed, schema_all):
    msg = f"unknown key {key!r} in [{section}].{_hint(key, allowed)}"
    owners = [s for s, t in schema_all.items() if key in t and s != section]
    if owners:
        msg += f" ({key!r} belongs in [{owners[0]}].)"
    msg += f" Allowed: {', '.join(allowed)}"
    return StudyError(f"{src}: {msg}")


def load_study(path, profile: str | None = None, *, seed: int | None = None, plugins=None) -> StudySpec:
    """Read and validate a study file.  ``profile``: a ``[profiles.NAME]`` (None: ``full``
    if present, else the base values).  ``seed`` overrides ``[study] seed``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StudyError(f"study file {str(path)!r} not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise StudyError(f"cannot read study file {str(path)!r}: {e}") from None
    return parse_study(text, path=path, profile=profile, seed=seed, plugins=plugins)


def parse_study(text: str, *, path=None, profile: str | None = None, seed: int | None = None,
                plugins=None) -> StudySpec:
    """Validate a study given as TOML text (see the module docstring for the schema).
    ``plugins``: module names imported first (``stabsim.plugins``; ``stabsim run --plugins``)."""
    if plugins:
        from .plugins import PluginError, load_plugins

        try:
            load_plugins(plugins)
        except PluginError as e:
            raise StudyError(str(e)) from None
    src = str(path) if path is not None else "<study>"
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise StudyError(f"{src}: not valid TOML: {e}") from None
    if not raw:
        raise StudyError(f"{src}: the study file is empty (no [study] section, no keys); a study needs at "
                         "least [study] with e.g. replicates = 100 (see 'stabsim list' for examples)")
    for key, val in raw.items():
        if not isinstance(val, dict):
            raise StudyError(f"{src}: top-level key {key!r} must be inside a section such as [study]")

    # profiles ------------------------------------------------------------------------------
    profiles = raw.pop("profiles", {})
    for pname, ptable in profiles.items():
        if not isinstance(ptable, dict):
            raise StudyError(f"{src}: [profiles] {pname} must be a table ([profiles.{pname}])")
        for sec, stable in ptable.items():
            if not isinstance(stable, dict):
                raise StudyError(f"{src}: [profiles.{pname}] {sec} = {_fmt(stable)}: a profile overrides "
                                 f"keys of sections, e.g. study.replicates = 8 or [profiles.{pname}.sweep]")
    if profile is None:
        profile = "full" if "full" in profiles else None
    elif profile not in profiles:
        avail = ", ".join(profiles) or "none"
        raise StudyError(f"{src}: no profile {profile!r}.{_hint(profile, profiles)} Profiles defined: {avail}")

    merged = copy.deepcopy(raw)
    origin = {}
    if profile is not None:
        for sec, stable in profiles[profile].items():
            merged.setdefault(sec, {})
            for key, val in stable.items():
                merged[sec][key] = val
                origin[(sec, key)] = f"profiles.{profile}.{sec}"

    def where(sec, key=None):
        return f"[{origin.get((sec, key), sec)}]"

    # [study] -------------------------------------------------------------------------------
    study_raw = merged.get("study", {})
    for key in study_raw:
        if key not in STUDY_PARAMS:
            raise _unknown_key(src, origin.get(("study", key), "study"), key, list(STUDY_PARAMS),
                               {"study": STUDY_PARAMS})
    study = {}
    for key, p in STUDY_PARAMS.items():
        study[key] = _check_value(src, where("study", key), key, p, study_raw[key]) if key in study_raw else p.default
    if seed is not None:
        study["seed"] = _check_value(src, "--seed", "seed", STUDY_PARAMS["seed"], seed)
    if study["id"] is None:
        stem = Path(src).stem if path is not None else "study"
        study["id"] = _sanitize(stem)
    try:
        kind = get_kind(study["kind"])
    except _Bad as e:
        raise _err(src, where("study", "kind"), f"kind = {_fmt(study['kind'])}: {e.text('kind')}") from None
    if study["chunk"] is None:
        study["chunk"] = min(study["replicates"], 64)

    # sections ------------------------------------------------------------------------------
    schema = {"study": STUDY_PARAMS, "bounds": {**BOUNDS_PARAMS, **kind.params.get("bounds", {})},
              "check": CHECK_PARAMS}
    schema.update({s: t for s, t in kind.params.items() if s != "bounds"})
    allowed_sections = list(schema) + ["sweep", "profiles"]
    for table in [merged] + [profiles[p] for p in profiles]:
        for sec in table:
            if sec not in allowed_sections:
                loc = "" if table is merged else " (in a profile)"
                raise StudyError(f"{src}: unknown section [{sec}]{loc}.{_hint(sec, allowed_sections)} "
                                 f"Sections for kind {kind.name!r}: {', '.join('[' + s + ']' for s in allowed_sections)}")
    # typos in profiles that are not selected are errors too
    for pname, ptable in profiles.items():
        for sec, stable in ptable.items():
            if sec in schema:
                for key in stable:
                    if key not in schema[sec]:
                        raise _unknown_key(src, f"profiles.{pname}.{sec}", key, list(schema[sec]), schema)

    sections, bounds, check_cfg = {}, {}, {}
    for sec, table in schema.items():
        if sec == "study":
            continue
        given = merged.get(sec, {})
        for key in given:
            if key not in table:
                raise _unknown_key(src, origin.get((sec, key), sec), key, list(table), schema)
        vals = {}
        for key, p in table.items():
            if key in given:
                vals[key] = _check_value(src, where(sec, key), key, p, given[key])
            elif p.default is REQUIRED:
                raise StudyError(f"{src}: [{sec}] {key} is required ({p.doc})")
            else:
                vals[key] = copy.deepcopy(p.default)
        if sec == "bounds":
            bounds = vals
        elif sec == "check":
            check_cfg = vals if sec in merged else {}
        else:
            sections[sec] = vals

    # [sweep] -------------------------------------------------------------------------------
    axes_all = {}
    for sec, table in schema.items():
        if sec in ("study", "bounds", "check"):
            continue
        for key, p in table.items():
            if p.sweepable:
                axes_all[p.dim or key] = (sec, key)
    sweep, axes = {}, {}
    for axis, values in merged.get("sweep", {}).items():
        loc = where("sweep", axis)
        if axis not in axes_all:
            fixed = [f"{s}.{k}" for s, t in schema.items() if s not in ("study",) for k, p in t.items()
                     if not p.sweepable and k == axis]
            why = f" ({fixed[0]} cannot be swept.)" if fixed else ""
            raise StudyError(f"{src}: {loc}: unknown sweep axis {axis!r}.{_hint(axis, axes_all)}{why} "
                             f"Sweepable: {', '.join(axes_all)}")
        if not isinstance(values, list) or not values:
            raise _err(src, loc, f"{axis} = {_fmt(values)}: a sweep axis must be a non-empty list of values, "
                                 f"e.g. {axis} = [v1, v2]")
        sec, key = axes_all[axis]
        p = schema[sec][key]
        normed = []
        for i, v in enumerate(values):
            try:
                normed.append(p.check(v) if p.check else v)
            except _Bad as e:
                raise _err(src, loc, f"{axis} = {_fmt(values)}: element {i}, {_fmt(v)}: {e.text(key)}") from None
        keys = [json.dumps(v, sort_keys=True) for v in normed]
        if len(set(keys)) != len(keys):
            dup = next(values[i] for i, k in enumerate(keys) if keys.count(k) > 1)
            raise _err(src, loc, f"{axis} = {_fmt(values)}: the value {_fmt(dup)} appears twice; "
                                 "sweep values must be distinct")
        sweep[axis], axes[axis] = normed, (sec, key)

    data_source = None
    if schema.get("data", {}).get("file") is DATA_SOURCE["file"]:  # kinds that take real data
        data_source = _resolve_data_source(src, path, sections, sweep, merged, study["seed"])
    spec = StudySpec(id=study["id"], description=study["description"], kind=kind.name,
                     seed=study["seed"], replicates=study["replicates"], chunk=study["chunk"],
                     suite=study["suite"], sections=sections, sweep=sweep, bounds=bounds,
                     profile=profile, path=str(path) if path is not None else None, text=text, axes=axes,
                     check=check_cfg, plugins=tuple(dict.fromkeys(list(study["plugins"]) + list(plugins or []))))
    try:
        _finish_custom_and_check(spec)
    except StudyError as e:
        raise StudyError(f"{src}: {e}") from None
    spec.data_source = data_source
    if kind.validate is not None:
        try:
            kind.validate(spec)
        except StudyError as e:
            raise StudyError(f"{src}: {e}") from None
    return spec


# ---- the built-in twin kind ------------------------------------------------------------------

def _problem(data: dict):
    from .synthetic import make_problem

    kw = {k: data[k] for k in PROBLEM_KEYS if data.get(k) is not None}
    return make_problem(data["problem"], data["d"], **kw)


def _twin_kwargs(spec: StudySpec, p: dict) -> dict:
    from .twin import log_checkpoints

    a = p["algorithm"]
    ck = a["checkpoints"]
    kw = dict(algorithm=a["name"], loss=a["loss"], constraint=a["constraint"], eta=_eta_arg(a["eta"]),
              T=a["T"], seed=spec.seed, sigma=a["sigma"], independent_noise=a["independent_noise"],
              buffer=a["buffer"], output=a["output"], q=a["q"],
              w0=None if a["w0"] == "zeros" else a["w0"],
              checkpoints=log_checkpoints(a["T"], ck) if isinstance(ck, int) else np.asarray(ck),
              record_outputs=a["record_outputs"])
    if a["k"] != "random":
        from .neighbours import Neighbour

        kw["neighbour"] = Neighbour(kind=a["neighbour"], k=a["k"])
    else:
        kw["neighbour"] = a["neighbour"]
    return kw


def _cell_label(cell: Cell) -> str:
    return "cell " + (", ".join(f"{k}={v}" for k, v in cell.coords.items()) or "(single cell)")


def _validate_twin(spec: StudySpec) -> None:
    """Combinations: algorithm/loss agreement, n large enough, problem parameters, ..."""
    from .algorithms import get_algorithm
    from .constraints import get_constraint
    from .losses import get_loss

    for cell in spec.cells():
        p = spec.cell_params(cell)
        d, a = p["data"], p["algorithm"]
        label = _cell_label(cell)
        try:
            pb = None if spec.data_source else _problem(d)
            loss = get_loss(a["loss"], a["q"])
            alg = get_algorithm(a["name"], buffer=a["buffer"], output=a["output"])
            cons = get_constraint(a["constraint"])
        except ValueError as e:
            raise StudyError(f"{label}: {e}") from None
        if alg.pairwise != loss.pairwise:
            kind = "pairwise" if alg.pairwise else "pointwise"
            raise StudyError(f"{label}: [algorithm] name = {a['name']!r} is {kind} but loss = {a['loss']!r} "
                             f"is not; use a {'pairwise' if alg.pairwise else 'pointwise (point_*)'} loss")
        if cons.matrix and not loss.matrix:
            raise StudyError(f"{label}: [algorithm] constraint = {a['constraint']!r} is for matrix "
                             "parameters (metric-learning losses)")
        if d["n"] < alg.min_rows(a["T"]):
            raise StudyError(f"{label}: [data] n = {d['n']}: algorithm {alg.name!r} needs n >= "
                             f"{alg.min_rows(a['T'])} for T = {a['T']}")
        if spec.data_source and a["neighbour"] == "fresh":
            raise StudyError(f"{label}: [algorithm] neighbour = 'fresh' draws z' from a synthetic problem's "
                             "distribution; with [data] dataset/file use 'farthest', 'flip' or 'same'")
        if loss.form in (0, 1) and pb is not None and pb.name == "p4_lsq":
            raise StudyError(f"{label}: [algorithm] loss = {a['loss']!r} needs labels +-1 but problem "
                             "'p4_lsq' has real-valued labels")
        if a["k"] != "random" and a["k"] >= d["n"]:
            raise StudyError(f"{label}: [algorithm] k = {a['k']}: k must be an index in [0, n) = [0, {d['n']})")
        ck = a["checkpoints"]
        if isinstance(ck, list) and ck[-1] > a["T"]:
            raise StudyError(f"{label}: [algorithm] checkpoints = {ck}: steps must lie in [1, T] = [1, {a['T']}]")


@register_kind("twin", params=twin_params(data=DATA_SOURCE), validate=_validate_twin,
               description="coupled SGD runs on S and its neighbour S' (stabsim.run_twin) on synthetic or real data")
def twin_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``twin`` study: sample the data, call ``run_twin`` for ``replicates``."""
    p = spec.cell_params(cell)
    d = p["data"]
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    if spec.data_source:  # real data ([data] dataset / file): the same rows for every replicate
        from .twin import run_twin

        X, y, _, _ = _source_arrays(spec, d, data_seed)
        ds = run_twin(X, y, replicates=np.asarray(replicates, dtype=np.int64), **_twin_kwargs(spec, p))
        s = spec.data_source
        ds.attrs.update(problem=f"{s['kind']}:{s.get('name') or Path(s['path']).name}", data_seed=data_seed,
                        data_sets="shared", label_map=s["label_map"], data_scale=d["scale"],
                        data_sha256=s.get("sha256", ""))
        return ds
    pb = _problem(d)
    if d["per_replicate"]:
        sets = [pb.sample(d["n"], data_seed, int(r)) for r in replicates]
        X, y = np.stack([s[0] for s in sets]), np.stack([s[1] for s in sets])
    else:
        X, y = pb.sample(d["n"], data_seed, 0)
    from .twin import run_twin

    ds = run_twin(X, y, replicates=np.asarray(replicates, dtype=np.int64), problem=pb, **_twin_kwargs(spec, p))
    # run_twin's own data_sets attr cannot tell a 1-replicate per-replicate chunk from a shared set
    ds.attrs.update(problem=pb.name, data_seed=data_seed,
                    data_sets="per-replicate" if d["per_replicate"] else "shared")
    return ds


# ---- execution ---------------------------------------------------------------------------

@dataclass
class RunResult:
    study_id: str
    out_dir: Path
    data_path: Path
    n_chunks: int
    reused: int = 0
    computed: int = 0
    invalid: list = field(default_factory=list)       # (file name, reason) of deleted chunks
    stale: list = field(default_factory=list)         # chunks of other code, recomputed (recompute_stale)
    removed_temps: list = field(default_factory=list)
    status: str = "complete"                           # or "already complete"
    seconds: float = 0.0

    def summary(self) -> str:
        if self.status == "already complete":
            return f"{self.study_id}: already complete -> {self.data_path}"
        extra = f", {len(self.invalid)} invalid recomputed" if self.invalid else ""
        return (f"{self.study_id}: {self.n_chunks} chunks ({self.reused} reused, {self.computed} computed"
                f"{extra}) in {self.seconds:.1f} s -> {self.data_path}")


class StaleCode(StudyError):
    """Stored chunks, or a dask worker, come from other code than this process's."""


def _code_mismatch(what: str, old: dict, new: dict, how: str) -> str:
    from .codeid import describe, differences

    changed = "; ".join(differences(old, new)) or "identity not recorded"
    return (f"{what} other code than this process: {describe(old)}; this process runs {describe(new)} "
            f"(changed: {changed}). Mixing results of two versions of the code is refused; {how}")


_WORKER_HOW = ("start the dask workers from the same stabsim source (same files, same numba/numpy/"
               "python) as the process that runs the study")


def _stamp_code(ds: xr.Dataset, expected: dict | None) -> xr.Dataset:
    """Record the identity of the code that computed a chunk (``chunk_code_*`` attrs);
    with ``expected`` (the client's identity), refuse to compute on other code."""
    from .codeid import code_identity, matches

    mine = code_identity()
    if expected is not None and not matches(mine, expected):
        import socket

        raise StaleCode(_code_mismatch(f"the dask worker on {socket.gethostname()} (pid {os.getpid()}) runs",
                                       mine, expected, _WORKER_HOW))
    ds.attrs.update({f"chunk_{k}": v for k, v in mine.items()})
    return ds


def _check_returned_code(ds: xr.Dataset, mine: dict) -> None:
    """A chunk coming back from a worker must carry this process's code identity (a worker
    running an older stabsim does not stamp it at all)."""
    from .codeid import matches, recorded_identity

    rec = recorded_identity({k: v for k, v in ds.attrs.items() if k.startswith("chunk_code_")})
    if not matches(rec, mine):
        raise StaleCode(_code_mismatch("a chunk came back from a dask worker computed by", rec, mine, _WORKER_HOW))


def _compute_chunk(func, spec, coords, reps, numba_threads=None, expected_code=None, plugins=None):
    """Run one chunk (in-process or on a dask worker).  ``expected_code``: the identity of
    the process that submitted it; a worker running other code refuses (``StaleCode``).
    ``plugins``: ``(names, folders)`` of user modules to import first (``stabsim.plugins``);
    then ``func`` may be the kind's name, looked up after the import."""
    if expected_code is not None:
        _stamp_code(xr.Dataset(), expected_code)  # fail before computing
    if plugins:
        from .plugins import ensure_loaded

        ensure_loaded(plugins[0], plugins[1])
    if isinstance(func, str):
        func = get_kind(func).func
    if numba_threads:
        import numba

        numba.set_num_threads(max(1, min(int(numba_threads), numba.config.NUMBA_NUM_THREADS)))
    from .twin import progress_bars

    with progress_bars(False):  # a study shows its own progress over chunks
        ds = func(spec, dict(coords), np.asarray(reps, dtype=np.int64))
    if not isinstance(ds, xr.Dataset) or "replicate" not in ds.dims:
        raise TypeError(f"study kind {spec.kind!r} must return an xarray.Dataset with a 'replicate' dim")
    if not np.array_equal(ds["replicate"].values, reps):
        raise ValueError(f"study kind {spec.kind!r} returned replicate ids that differ from the requested ones")
    return _stamp_code(ds, expected_code)


def _parse_scheduler(scheduler):
    if scheduler in (None, "", "local", "local:0", "in-process"):
        return ("local", None)
    if isinstance(scheduler, str):
        m = re.fullmatch(r"local:(\d+)", scheduler)
        if m and int(m.group(1)) >= 1:
            return ("cluster", int(m.group(1)))
        if re.fullmatch(r"(tcp|tls|ucx|inproc)://\S+", scheduler):
            return ("address", scheduler)
    raise StudyError(f"scheduler = {scheduler!r}: must be 'local' (in-process), 'local:N' (a dask "
                     "LocalCluster with N >= 1 worker processes) or a scheduler address 'tcp://host:port'")


class Executor:
    """Where chunks run: in-process, or on a dask.distributed cluster (``local:N`` / address).

    The cluster is started lazily (on the first chunk to compute) and shut down by
    ``close()``; one executor can serve several studies (``stabsim run A B``).
    """

    def __init__(self, scheduler=None, client=None):
        self.client, self.cluster, self.numba_threads = client, None, None
        self._own = False
        self.mode, self._arg = ("client", None) if client is not None else _parse_scheduler(scheduler)

    def _start(self):
        if self.client is not None or self.mode == "local":
            return
        mode, arg = self.mode, self._arg
        import logging

        from dask.distributed import Client, LocalCluster

        if mode == "cluster":
            self.cluster = LocalCluster(n_workers=arg, threads_per_worker=1, processes=True,
                                        dashboard_address=None, silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
            self.numba_threads = max(1, (os.cpu_count() or 1) // arg)
        else:
            try:
                self.client = Client(arg, timeout="20s")
            except OSError as e:
                raise StudyError(f"cannot connect to the dask scheduler at {arg}: {e}") from None
        self._own = True

    def close(self, interrupted: bool = False):
        """Shut down what this executor started.  ``interrupted`` (Ctrl-C, SIGTERM): first kill
        the local workers' processes, whose running chunk is discarded anyway, so that the
        shutdown takes a fraction of a second instead of waiting for their kernels (about 4 s)."""
        if self._own:
            if interrupted and self.cluster is not None:
                for w in list(getattr(self.cluster, "workers", {}).values()):
                    try:  # best effort: distributed's Nanny -> WorkerProcess -> AsyncProcess
                        w.process.process.kill()
                    except Exception:  # noqa: BLE001
                        pass
            if self.client is not None:
                self.client.close()
            if self.cluster is not None:
                self.cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(interrupted=exc_type is not None and issubclass(exc_type, KeyboardInterrupt))

    def run(self, func, spec, jobs):
        """Yield ``(job, dataset)`` as chunks finish; ``jobs``: list of (cell, start, stop, path)."""
        self._start()
        if self.client is None:
            for job in jobs:
                cell, start, stop, _ = job
                yield job, _compute_chunk(func, spec, cell.coords, np.arange(start, stop, dtype=np.int64))
            return
        from dask.distributed import as_completed

        from .codeid import code_identity

        futures = {}
        for job in jobs:
            cell, start, stop, path = job
            plug = None
            if spec.plugins:  # the worker imports them by name before unpickling anything of theirs
                from .plugins import LOADED

                plug = (tuple(spec.plugins), tuple(sorted({LOADED.get(m, ("", ""))[1] for m in spec.plugins} - {""})))
            fut = self.client.submit(_compute_chunk, spec.kind if plug else func, spec, cell.coords,
                                     np.arange(start, stop, dtype=np.int64), self.numba_threads,
                                     key=f"stabsim-{spec.fingerprint[:8]}-{path.stem}", pure=False,
                                     expected_code=code_identity(), plugins=plug)
            futures[fut] = job
        try:
            for fut in as_completed(futures):
                job = futures.pop(fut)
                yield job, fut.result()
                fut.release()
        finally:
            for fut in futures:
                fut.cancel()


def _manifest(spec: StudySpec) -> dict:
    return {"format": FORMAT_VERSION, "study_id": spec.id, "fingerprint": spec.fingerprint,
            "data_fingerprint": spec.data_fingerprint,
            "stabsim_version": __version__, "kind": spec.kind, "profile": spec.profile, "seed": spec.seed,
            "replicates": spec.replicates, "chunk": spec.chunk, "n_cells": len(spec.cells()),
            "n_chunks": spec.n_chunks, "study_path": spec.path, "spec": spec.normalized(),
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def _data_complete(sd: StudyDir, spec: StudySpec) -> bool:
    """data.nc exists, its checksums verify, and it holds this study."""
    from .store import verify_data

    if not sd.data_path.exists():
        return False
    try:
        return verify_data(sd.data_path).attrs.get("study_fingerprint") == spec.fingerprint
    except StoreError:
        return False


def run_study(spec: StudySpec, out_dir, *, scheduler=None, client=None, force: bool = False,
              progress: bool = True, keep_chunks: bool = False, resume_hint: str | None = None,
              log=None, executor: "Executor | None" = None, recompute_stale: bool = False) -> RunResult:
    """Run ``spec`` into ``out_dir/<spec.id>/``; resume whatever an earlier run finished.

    scheduler : None / ``"local"`` (in-process; numba threads parallelise inside a chunk),
        ``"local:N"`` (a dask ``LocalCluster`` with N single-threaded worker processes, each
        running numba with cpu_count // N threads) or ``"tcp://host:port"`` (an existing
        dask cluster).  ``client``: an existing ``dask.distributed.Client`` instead.
        Workers only compute; this process writes every chunk, so workers need no access
        to ``out_dir``.
    force : if ``out_dir/<id>`` holds a *different* study (another seed, sweep, parameter:
        the refusal names the keys that changed), remove that study's data.nc and chunks
        (without ``force`` that is an error).  Only what is invalid for this study goes:
        chunks that validate for it are kept.  A changed ``replicates`` or ``chunk`` is not
        a different study: every valid replicate is reused (re-chunked as needed).
    keep_chunks : keep ``chunks/`` after ``data.nc`` is written and checked (default: delete).
        Remembered in ``study.json``: later runs keep them too.
    recompute_stale : chunks computed by other code (``stabsim.codeid``: another source hash
        or numba/numpy/Python version) are an error naming both identities; with this, they
        are deleted and recomputed (the chunks of this code are kept).
    executor : an ``Executor`` shared between several studies (then ``scheduler`` and
        ``client`` are ignored and the caller closes it).

    Every finished chunk is written at once (atomically, ``stabsim.store``); on start,
    existing chunks are validated and invalid ones deleted and recomputed; data.nc's
    checksums are verified (a damaged one is moved aside to ``data.nc.damaged``, said so,
    and rebuilt from kept chunks or recomputed).  On Ctrl-C the
    finished chunks stay, a message says how to resume, and KeyboardInterrupt is re-raised.
    """
    log = log or (lambda msg: print(msg, file=sys.stderr))
    t0 = time.perf_counter()
    sd = StudyDir(Path(out_dir) / spec.id)
    kind = KINDS[spec.kind]
    result = RunResult(spec.id, sd.root, sd.data_path, spec.n_chunks)
    try:
        lock = sd.lock()
        lock.__enter__()
    except StoreError as e:
        raise StudyError(str(e)) from None
    try:
        _run_locked(spec, sd, kind, result, log, force=force, keep_chunks=keep_chunks,
                    recompute_stale=recompute_stale, scheduler=scheduler, client=client, executor=executor,
                    progress=progress, resume_hint=resume_hint)
    finally:
        lock.__exit__(None, None, None)
    result.seconds = time.perf_counter() - t0
    return result


def _flat(d, prefix="") -> dict:
    out = {}
    for k, v in (d or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


#: keys of old manifests' specs that are no longer part of the study's identity
_LEGACY_SPEC_KEYS = ("stabsim_version",)


def _spec_changes(old: dict | None, new: dict) -> list[tuple[str, Any, Any]]:
    """``(dotted key, old value, new value)`` for every key of the normalised spec that differs."""
    a = {k: v for k, v in _flat(old).items() if k not in _LEGACY_SPEC_KEYS}
    b = _flat(new)
    missing = object()
    out = []
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k, missing), b.get(k, missing)
        if va != vb:
            out.append((k, "(absent)" if va is missing else va, "(absent)" if vb is missing else vb))
    return out


def _changes_text(changes) -> str:
    return "; ".join(f"{k}: {o!r} -> {n!r}" for k, o, n in changes) or "no key (the fingerprint only)"


_FOREIGN = "attr chunk_fingerprint is"


def _move_aside(path: Path, suffix: str) -> Path:
    dest = path.with_name(path.name + suffix)
    os.replace(path, dest)
    return dest


def _run_locked(spec, sd, kind, result, log, *, force, keep_chunks, recompute_stale, scheduler, client,
                executor, progress, resume_hint):
    from .codeid import code_identity, describe, differences, matches, recorded_identity
    from .store import CHUNK_RE, STALE, DamagedData, verify_data

    code = code_identity()
    cells = spec.cells()
    R = spec.replicates

    # 1. study.json: the directory belongs to this study?  A lost or damaged one is rebuilt (every
    #    chunk and data.nc carries its own record); another study's is refused unless --force.
    problem = None
    try:
        manifest = sd.read_manifest()
    except StoreError as e:
        manifest, problem = None, str(e)
    if manifest is None and problem is None and sd.has_results():
        problem = f"{sd.manifest_path} is missing"
    if problem:
        log(f"{spec.id}: {problem}; rebuilding it (every chunk and data.nc is checked against this study "
            "by its own records)")
    remembered_keep = bool(manifest and manifest.get("keep_chunks"))
    keep = bool(keep_chunks or remembered_keep)
    foreign_study = False
    if manifest is not None and manifest.get("fingerprint") != spec.fingerprint:
        changes = _spec_changes(manifest.get("spec"), spec.normalized())
        data_changes = [c for c in changes if c[0] not in _CHUNKING_KEYS]
        if data_changes:
            if not force:
                what = (f"study {manifest.get('study_id')!r} (profile {manifest.get('profile')}, seed "
                        f"{manifest.get('seed')}, fingerprint {manifest.get('fingerprint')})")
                raise StudyError(f"{sd.root} holds {what}, not this study {spec.id!r} (profile {spec.profile}, "
                                 f"seed {spec.seed}, fingerprint {spec.fingerprint}); changed: "
                                 f"{_changes_text(data_changes)}; refusing to mix results. Use another --out "
                                 "directory, or --force to remove the old study's files (chunks valid for this "
                                 "study are kept)")
            foreign_study = True
        elif changes:
            log(f"{spec.id}: {_changes_text(changes)}: every replicate already computed and valid is reused")
    result.removed_temps = [str(p) for p in sd.remove_temps()]
    new_manifest = {**_manifest(spec), "keep_chunks": keep}
    if manifest is None or any(manifest.get(k) != new_manifest[k] for k in ("fingerprint", "keep_chunks")):
        if manifest is not None and manifest.get("fingerprint") == spec.fingerprint:
            new_manifest["created"] = manifest.get("created", new_manifest["created"])
        sd.write_manifest(new_manifest)

    # 2. data.nc: verified (checksums) before it is believed
    data_note = None
    if sd.data_path.exists():
        try:
            ds = verify_data(sd.data_path)
        except DamagedData as e:
            legacy = getattr(e, "legacy", False)
            dest = _move_aside(sd.data_path, ".unverified" if legacy else ".damaged")
            data_note = f"{e}; moved aside to {dest.name}"
        else:
            fp, dfp = ds.attrs.get("study_fingerprint"), ds.attrs.get("study_data_fingerprint")
            rec = recorded_identity(ds.attrs)
            if fp == spec.fingerprint and not (recompute_stale and not matches(rec, code)):
                if not matches(rec, code):
                    log(f"{spec.id}: note: {sd.data_path} was computed by {describe(rec)}; this process runs "
                        f"{describe(code)} (changed: {'; '.join(differences(rec, code))}). It is kept as it is; "
                        "to recompute it with this code, run again with --recompute-stale")
                result.status = "already complete"
                _refresh_attrs(sd, spec, ds)
                if not keep:
                    _remove_chunks(sd, spec)
                return
            if dfp != spec.data_fingerprint and fp != spec.fingerprint:
                if not force:
                    raise StudyError(f"{sd.data_path} holds the results of another study (fingerprint {fp}), "
                                     f"not this study {spec.id!r} (fingerprint {spec.fingerprint}); refusing to "
                                     "mix results. Use another --out directory, or --force to remove it")
                foreign_study = True
            if foreign_study:
                sd.data_path.unlink()
                log(f"--force: removed {sd.data_path}")
            elif fp != spec.fingerprint:
                log(f"{spec.id}: {sd.data_path} holds this study with replicates = {ds.sizes.get('replicate')}; "
                    "it is replaced once the new result is assembled")

    # 3. chunks: each checks itself (study, cell, replicates, checksum, code)
    cjson = {c.id: json.dumps(c.coords, sort_keys=True) for c in cells}
    valid = {c.id: [] for c in cells}
    stale, foreign, bad = [], [], []
    for p in sd.chunk_files():
        m = CHUNK_RE.match(p.name)
        cid, a, b = m.group("cell"), int(m.group("start")), int(m.group("stop"))
        if cid not in valid or b <= a:
            if force:
                p.unlink()
                log(f"--force: removed {p}")
            else:
                log(f"{spec.id}: ignoring unexpected file {p}")
            continue
        meta = chunk_attrs(spec.data_fingerprint, cid, cjson[cid], np.arange(a, b))
        reason = validate_chunk(p, meta, code=code)
        if reason is None:
            valid[cid].append((a, b, p))
        elif reason.startswith(STALE):
            stale.append(p)
        elif reason.startswith(_FOREIGN):
            foreign.append((p, reason))
        else:
            bad.append((p, reason))
    if foreign and not force:
        p, reason = foreign[0]
        raise StudyError(f"{sd.chunk_dir} holds {len(foreign)} chunk(s) of another study (e.g. {p.name}: {reason}), "
                         f"not of this study {spec.id!r}; refusing to mix results. Use another --out directory, "
                         "or --force to remove them (chunks valid for this study are kept)")
    for p, reason in foreign:
        p.unlink()
        log(f"--force: removed {p} ({reason})")
    for p, reason in bad:
        p.unlink()
        result.invalid.append((p.name, reason))
        log(f"{spec.id}: invalid chunk {p.name} ({reason}); removed, its replicates are recomputed")
    n_valid = sum(map(len, valid.values()))
    if stale:
        old = recorded_identity({k: v for k, v in open_chunk(stale[0]).attrs.items() if k.startswith("chunk_code_")})
        if not recompute_stale:
            raise StaleCode(_code_mismatch(
                f"{spec.id}: {len(stale)} chunk(s) in {sd.chunk_dir} were computed by", old, code,
                f"to recompute only those {len(stale)} chunk(s) with this code (keeping the {n_valid} valid ones "
                "it computed), run again with --recompute-stale (run_study(..., recompute_stale=True)); or use "
                "another --out directory"))
        for p in stale:
            p.unlink()
        result.stale = [p.name for p in stale]
        log(f"{spec.id}: --recompute-stale: removed {len(stale)} chunk(s) computed by {describe(old)}; "
            "recomputing them with this code")

    # 4. cover replicates 0..R-1 of every cell with valid chunks (any chunking); the gaps are jobs
    cover, jobs, expected, used = {}, [], {}, set()
    reused_reps = 0
    for cell in cells:
        files = valid[cell.id]
        pieces, pos = [], 0
        while pos < R:
            best = max((f for f in files if f[0] <= pos < f[1]), key=lambda f: f[1], default=None)
            if best is not None:
                hi = min(best[1], R)
                pieces.append((best[2], best[0], best[1], pos, hi))
                used.add(best[2])
                reused_reps += hi - pos
                pos = hi
                continue
            gap_end = min([f[0] for f in files if f[0] > pos] + [R])
            while pos < gap_end:
                stop = min(gap_end, (pos // spec.chunk + 1) * spec.chunk)
                path = sd.chunk_path(cell.id, pos, stop)
                expected[path.name] = chunk_attrs(spec.data_fingerprint, cell.id, cjson[cell.id],
                                                  np.arange(pos, stop))
                jobs.append((cell, pos, stop, path))
                pieces.append((path, pos, stop, pos, stop))
                pos = stop
        cover[cell.id] = pieces
    result.reused = len(used)
    result.n_chunks = len(used) + len(jobs)
    if data_note:
        how = (f"rebuilding it from the {len(used)} kept chunk(s)" if not jobs else
               f"recomputing {len(jobs)} chunk(s)" + (f" (reusing {len(used)} kept)" if used else ""))
        log(f"{spec.id}: {data_note}; {how}")
    if result.reused:
        log(f"{spec.id}: resuming, {result.reused} of {result.n_chunks} chunks already done")
        if reused_reps and any(not (a, b) in spec.chunk_ranges() for p, a, b, lo, hi in
                               (x for pcs in cover.values() for x in pcs) if p in used):
            log(f"{spec.id}: {reused_reps} of {R * len(cells)} replicates reused from chunks of another "
                "chunking")

    # 5. compute the missing chunks
    if jobs:
        _run_jobs(spec, kind, sd, jobs, expected, result, scheduler, client, executor, progress, log,
                  resume_hint)

    # 6. assemble, then drop the chunks data.nc now holds (unless kept)
    assemble(spec, sd, cover=cover)
    if not keep:
        _remove_chunks(sd, spec, log=log)


def run_studies(specs, out_dir, *, scheduler=None, client=None, **kw) -> list[RunResult]:
    """``run_study`` for several studies, sharing one executor (one dask cluster)."""
    with Executor(scheduler, client) as ex:
        return [run_study(spec, out_dir, executor=ex, **kw) for spec in specs]


def _run_jobs(spec, kind, sd, jobs, expected, result, scheduler, client, executor, progress, log,
              resume_hint):
    from tqdm import tqdm

    from .resources import ResourceError, check_study

    try:  # memory of one chunk, disk of the results: refused before any allocation or compute
        check_study(spec, sd.root)
    except ResourceError as e:
        raise StudyError(str(e)) from None
    bar = tqdm(total=result.n_chunks, initial=result.n_chunks - len(jobs), unit="chunk", desc=spec.id,
               disable=not progress, file=sys.stderr, dynamic_ncols=True, smoothing=0.1)
    try:
        own = executor is None
        ex = Executor(scheduler, client) if own else executor
        try:
            from .codeid import code_identity

            mine = code_identity()
            for (cell, start, stop, path), ds in ex.run(kind.func, spec, jobs):
                _check_returned_code(ds, mine)  # a dask worker running other code never mixes in
                sd.write_chunk(ds, path, expected[path.name])
                result.computed += 1
                bar.update(1)
        except KeyboardInterrupt:
            if own:
                ex.close(interrupted=True)
                own = False
            raise
        finally:
            if own:
                ex.close()
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (stabsim._signals.Terminated)
        bar.close()
        done = result.reused + result.computed
        hint = resume_hint or "run the same run_study(...) call again"
        what = f"terminated (signal {e.signum})" if hasattr(e, "signum") else "interrupted"
        log(f"\n{what}: {done} of {result.n_chunks} chunks of study {spec.id!r} are saved in "
            f"{sd.chunk_dir}; to resume, {hint}")
        raise
    except (StudyError, StoreError):
        raise
    except Exception as e:
        done = result.reused + result.computed
        raise StudyError(f"study {spec.id!r}: a chunk failed ({type(e).__name__}: {e}); "
                         f"{done} finished chunks are kept in {sd.chunk_dir}") from e
    finally:
        bar.close()


def _remove_chunks(sd: StudyDir, spec: StudySpec, log=None) -> None:
    """Delete the chunk files of this study's cells whose replicates data.nc holds (a chunk
    with replicates beyond ``replicates`` is valid work data.nc lacks: it stays)."""
    from .store import CHUNK_RE

    ids = {c.id for c in spec.cells()}
    kept = []
    for p in sd.chunk_files():
        m = CHUNK_RE.match(p.name)
        if m.group("cell") not in ids:
            continue
        if int(m.group("stop")) <= spec.replicates:
            p.unlink()
        else:
            kept.append(p.name)
    if kept and log is not None:
        log(f"{spec.id}: kept {len(kept)} chunk file(s) holding replicates beyond replicates = "
            f"{spec.replicates} (e.g. {kept[0]}): data.nc does not hold them")
    if sd.chunk_dir.is_dir() and not any(sd.chunk_dir.iterdir()):
        sd.chunk_dir.rmdir()


# ---- assembly ----------------------------------------------------------------------------

_PROVENANCE_KEYS = ("stabsim_version", "git_commit", "numba_version", "numpy_version", "created",
                    "code_sha256", "code_git_commit", "code_git_dirty", "code_python", "code_numpy", "code_numba")


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("numpy", "numba", "scipy", "xarray", "dask", "distributed", "h5netcdf", "h5py"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = ""
    return out


def study_attrs(spec: StudySpec) -> dict:
    """Global provenance attrs of ``data.nc``."""
    return provenance(
        study_id=spec.id, study_kind=spec.kind, study_profile=spec.profile or "", seed=spec.seed,
        replicates=spec.replicates, study_fingerprint=spec.fingerprint,
        study_data_fingerprint=spec.data_fingerprint,
        study_file=spec.text, study_path=spec.path or "",
        study_spec=json.dumps(spec.normalized(), sort_keys=True),
        study_description=spec.description, sweep_dims=json.dumps(list(spec.sweep)),
        bounds=json.dumps(spec.bounds, sort_keys=True), versions=json.dumps(_versions(), sort_keys=True))


def _axis_values(values):
    if all(_is_int(v) for v in values):
        return np.asarray(values, dtype=np.int64)
    if all(_is_num(v) for v in values):
        return np.asarray(values, dtype=np.float64)
    if all(isinstance(v, bool) for v in values):
        return np.asarray(values, dtype=bool)
    return np.asarray([str(v) for v in values], dtype=object)


def _constant_along(arr: np.ndarray, axis: int) -> bool:
    first = np.take(arr, [0], axis=axis)
    if arr.dtype.kind == "f":
        return bool(np.all((arr == first) | (np.isnan(arr) & np.isnan(first))))
    return bool(np.all(arr == first))


#: Above this estimated size of data.nc, chunks are read lazily (dask) while assembling.
LAZY_ASSEMBLY_BYTES = 256 * 2**20


def assemble(spec: StudySpec, sd: StudyDir | str | Path, *, lazy: bool | None = None, cover: dict | None = None) -> Path:
    """Concatenate the chunks along ``replicate`` per cell, stack the cells along the sweep
    dims and write ``data.nc`` (atomically, checked; chunk files are left alone).  Returns
    the path of ``data.nc``.

    ``lazy``: read the chunks as dask arrays, so that memory holds only a few chunks at a
    time while ``data.nc`` is written.  Default: lazy when the result is estimated to exceed
    ``LAZY_ASSEMBLY_BYTES``; smaller results are assembled in memory (faster, and no dask
    import).

    ``cover``: ``{cell id: [(path, start, stop, lo, hi), ...]}``, the chunk files (holding
    replicates start..stop-1) whose replicates lo..hi-1 make up the cell, in order (what
    ``run_study`` found valid, in any chunking); default: the files of the spec's chunking.

    data.nc is written with checksums (``stabsim.store.write_data``: Fletcher-32 per array
    variable, SHA-256 of the rest), verified before it gets its final name.
    """
    import contextlib

    sd = sd if isinstance(sd, StudyDir) else StudyDir(sd)
    axes = list(spec.sweep)
    labels = {a: _axis_values(spec.sweep[a]) for a in axes}
    if cover is None:
        cover = {c.id: [(sd.chunk_path(c.id, a, b), a, b, a, b) for a, b in spec.chunk_ranges()]
                 for c in spec.cells()}
    if lazy is None:
        path0, a0, b0 = cover[spec.cells()[0].id][0][:3]
        per_rep = open_chunk(path0).nbytes / (b0 - a0)
        lazy = per_rep * spec.replicates * len(spec.cells()) > LAZY_ASSEMBLY_BYTES
    if lazy:
        import dask

        ctx = dask.config.set(scheduler="synchronous")
    else:
        ctx = contextlib.nullcontext()
    opened, cells = [], []
    try:
        with ctx:
            for cell in spec.cells():
                parts = []
                for path, start, stop, lo, hi in cover[cell.id]:
                    ds = open_chunk(path, lazy=lazy)
                    opened.append(ds)
                    if (lo, hi) != (start, stop):  # part of a chunk of another chunking
                        ds = ds.isel(replicate=slice(lo - start, hi - start))
                    parts.append(ds)
                cds = parts[0] if len(parts) == 1 else xr.concat(
                    parts, dim="replicate", data_vars="minimal", coords="minimal", compat="equals",
                    join="exact", combine_attrs="drop_conflicts")
                aux = [c for c in cds.coords if c not in cds.dims]
                cds = cds.reset_coords(aux)
                if axes:
                    pos = np.unravel_index(cell.index, [len(spec.sweep[a]) for a in axes])
                    cds = cds.expand_dims({a: labels[a][[i]] for a, i in zip(axes, pos)})
                cells.append((cds, aux))
            aux = cells[0][1]
            if axes:
                grid = np.empty([len(spec.sweep[a]) for a in axes], dtype=object)
                for cell, (cds, _) in zip(spec.cells(), cells):
                    grid.flat[cell.index] = cds
                out = xr.combine_nested(grid.tolist(), concat_dim=axes, data_vars="all", coords="different",
                                        compat="equals", join="outer", combine_attrs="drop_conflicts")
            else:
                out = cells[0][0]
            out = out.set_coords([c for c in aux if c in out])
            # auxiliary coordinates keep only the sweep dims they vary along
            for name in aux:
                da = out[name]
                for a in axes:
                    if a in da.dims and _constant_along(da.values, da.dims.index(a)):
                        da = da.isel({a: 0}, drop=True)
                out = out.drop_vars(name).assign_coords({name: da.variable})
            attrs = {k: v for k, v in out.attrs.items() if not k.startswith("chunk_") and k not in _PROVENANCE_KEYS}
            for a in axes:  # per-cell attrs that happen to agree are not global facts
                attrs.pop(a, None)
                attrs.pop(spec.axes[a][1], None)
            attrs.update(study_attrs(spec))
            out.attrs = attrs
            out = clean_encoding(out)

            def check(tmp):  # h5py directly: xarray's open costs ~0.2 s here
                import h5py

                with h5py.File(tmp, "r") as f:
                    fp = f.attrs.get("study_fingerprint")
                    fp = fp.decode() if isinstance(fp, bytes) else fp
                    sizes = {d: f[d].shape[0] for d in out.dims if d in f}
                if fp != spec.fingerprint or sizes != dict(out.sizes):
                    raise StoreError(f"{tmp} does not read back as written")

            write_data(out, sd.data_path, check=check)
    finally:
        for ds in opened:
            ds.close()
    return sd.data_path


def _refresh_attrs(sd: StudyDir, spec: StudySpec, ds: xr.Dataset | None = None) -> None:
    """A finished data.nc whose study text changed only in non-data fields (description,
    bounds): rewrite its attrs (the code identity and creation time stay those of the run
    that computed it).  ``ds``: data.nc already loaded and verified."""
    from .store import verify_data, write_data

    new = verify_data(sd.data_path) if ds is None else ds
    if new.attrs.get("study_file") == spec.text and new.attrs.get("study_profile") == (spec.profile or ""):
        return
    old = dict(new.attrs)
    new.attrs = {**{k: v for k, v in old.items() if k not in study_attrs(spec)}, **study_attrs(spec),
                 **{k: old[k] for k in _PROVENANCE_KEYS if k in old}}
    write_data(new, sd.data_path)


# ---- discovery -------------------------------------------------------------------------

def default_studies_dir() -> Path:
    """``$STABSIM_STUDIES``, else the repository's ``studies/`` next to the package (a source
    checkout), else the package data folder ``stabsim/data/studies``."""
    env = os.environ.get("STABSIM_STUDIES")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parent.parent / "studies"
    if repo.is_dir():
        return repo
    return Path(__file__).resolve().parent / "data" / "studies"


def study_index(studies_dir=None) -> list[dict]:
    """``[{"id", "description", "suite", "path", "error"}]`` for every ``*.toml`` (sorted by id)."""
    d = Path(studies_dir) if studies_dir is not None else default_studies_dir()
    out = []
    for path in sorted(d.glob("*.toml")) if d.is_dir() else []:
        entry = {"id": path.stem, "description": "", "suite": False, "path": path, "error": None}
        try:
            st = tomllib.loads(path.read_text(encoding="utf-8")).get("study", {})
            entry.update(id=str(st.get("id", path.stem)), description=str(st.get("description", "")),
                         suite=st.get("suite") is True)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            entry["error"] = str(e).splitlines()[0]
        out.append(entry)
    return sorted(out, key=lambda e: e["id"])
