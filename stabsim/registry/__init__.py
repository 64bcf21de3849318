"""Where study kinds and analysis checks are registered, and what they are made of.

Below ``stabsim.experiments`` and ``stabsim.analyses`` (which register into it) and
``stabsim.study`` (which looks up from it), so that none of the three imports another:

``kinds``     ``register_kind``, ``get_kind``, ``KINDS``: what one cell of a study computes;
``checks``    ``register_check``, ``get_check``, ``CHECKS``: a finished study's data -> verdicts;
``values``    the vocabulary of a section's keys: ``Param``, the value checkers (``integer``,
              ``number``, ``open_unit``, ``boolean``, ``string``, ``choice``, ``engine_name``),
              ``BadValue`` (what a checker raises), ``StudyError``, ``REQUIRED``;
``spec``      ``StudySpec`` and ``Cell``: what a kind's function and a check receive;
``twin``      the built-in kind ``twin`` (registered on import) and what the kinds that extend
              it build on: ``twin_params``, ``DATA_SOURCE``, ``twin_problem``, ``twin_kwargs``,
              ``validate_twin``, ``source_arrays``;
``formulas``  the ``[check]`` formulas (``compile_formula``) over ``stabsim.theory.custom_bounds``'s
              restricted evaluator, which also compiles ``[bounds.custom.NAME]``;
``plugins``   user modules that register kinds, checks, losses or bounds (``load_plugins``);
``loading``   importing the modules that register the built-in entries.

Every ``Kind`` and ``Check`` records the module that defined it (``.module``).  The built-in
kinds and checks are imported by name when first looked up (``KIND_MODULES``,
``CHECK_MODULES``), or all at once by ``load_builtin()``.
"""

from stabsim.registry.checks import CHECK_MODULES, CHECKS, Check, get_check, load_checks, register_check
from stabsim.registry.kinds import KIND_MODULES, KINDS, Kind, get_kind, load_kinds, register_kind
from stabsim.registry.spec import Cell, StudySpec
from stabsim.registry.twin import (DATA_SOURCE, PROBLEM_KEYS, TWIN_ALGORITHM, TWIN_DATA, source_arrays, twin_cell, twin_kwargs,
                   twin_params, twin_problem, validate_twin)
from stabsim.registry.values import (REQUIRED, BadValue, Param, StudyError, boolean, choice, did_you_mean, engine_name, integer,
                     number, open_unit, string)

__all__ = ["register_kind", "get_kind", "load_kinds", "Kind", "KINDS", "KIND_MODULES",
           "register_check", "get_check", "load_checks", "Check", "CHECKS", "CHECK_MODULES", "load_builtin",
           "StudySpec", "Cell", "Param", "StudyError", "BadValue", "REQUIRED", "integer", "number", "open_unit",
           "boolean", "string", "choice", "engine_name", "did_you_mean",
           "twin_params", "twin_cell", "twin_problem", "twin_kwargs", "validate_twin", "source_arrays",
           "DATA_SOURCE", "TWIN_DATA", "TWIN_ALGORITHM", "PROBLEM_KEYS"]


def load_builtin() -> None:
    """Register every built-in study kind and analysis check (``KIND_MODULES``, ``CHECK_MODULES``)."""
    load_kinds()
    load_checks()
