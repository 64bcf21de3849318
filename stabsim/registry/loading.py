"""Importing the modules that fill the registries: the built-in ones by name (``load_modules``,
so that the registry never imports a kind or a check itself) and every module of a package
(``import_package_modules``, what ``stabsim.experiments`` and ``stabsim.analyses`` do on import)."""

from __future__ import annotations

import importlib
import pkgutil


def load_modules(names) -> None:
    """Import each module of ``names`` (each registers its entries); a module that is not
    installed is skipped, an error inside one is raised."""
    for mod in names:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise


def import_package_modules(package: str) -> list[str]:
    """Import every module of ``package`` (not starting with ``_``); returns their names."""
    pkg = importlib.import_module(package)
    names = []
    for m in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if not m.name.startswith("_"):
            importlib.import_module(f"{package}.{m.name}")
            names.append(m.name)
    return names


def defined_in(func) -> str:
    """The module that defines ``func`` (what a registry records beside each entry)."""
    return getattr(func, "__module__", None) or "?"
