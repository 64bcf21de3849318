"""Import the built-in experiments and analyses, which fills the two registries.

``stabsim.experiments`` holds the study kinds (what one cell of a study computes; registered
with ``stabsim.study.register_kind``) and ``stabsim.analyses`` the checks (a finished study's
data -> verdicts and figures; registered with ``stabsim.analyses.register_check``).  Neither
imports the other: the registries meet only here, in the study runner and in the CLI.
"""

from __future__ import annotations

import importlib
import pkgutil

EXPERIMENTS = "stabsim.experiments"
ANALYSES = "stabsim.analyses"


def import_package_modules(package: str) -> list[str]:
    """Import every module of ``package`` (not starting with ``_``); returns their names."""
    pkg = importlib.import_module(package)
    names = []
    for m in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if not m.name.startswith("_"):
            importlib.import_module(f"{package}.{m.name}")
            names.append(m.name)
    return names


def load_experiments() -> None:
    """Register every built-in study kind."""
    importlib.import_module(EXPERIMENTS)


def load_analyses() -> None:
    """Register every built-in analysis check."""
    importlib.import_module(ANALYSES)


def load_all() -> None:
    load_experiments()
    load_analyses()
