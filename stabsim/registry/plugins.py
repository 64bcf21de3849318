"""User modules outside the package (contract in docs/plugins.md).

A plugin is an importable Python module that, when imported, registers any of: a study kind
(``stabsim.registry.register_kind``), an analysis check (``stabsim.registry.register_check``), a
loss form (``stabsim.engine.losses``) or a bound (``stabsim.theory.register``; paper "custom" via
``stabsim.theory.register_custom``).  It is loaded by ``stabsim run/report --plugins NAME``
or by the study's ``[study] plugins = ["NAME"]`` (imported at parse time), and again inside
every dask worker task before it computes (:func:`ensure_loaded`).  The kinds and checks it
registers record it as their module (``Kind.module``, ``Check.module``).

The code identity (``stabsim.runtime.codeid``) covers only the stabsim package, so the SHA-256 of each
plugin's source file is recorded in the study fingerprint (:func:`plugin_hashes`).
"""

from __future__ import annotations

import hashlib
import importlib
import sys
from pathlib import Path

__all__ = ["PluginError", "load_plugins", "plugin_hashes", "plugin_file", "ensure_loaded"]

#: name -> (source file or "", folder to put on sys.path or "") of every plugin loaded in this process.
LOADED: dict[str, tuple[str, str]] = {}


class PluginError(ImportError):
    """A plugin module that cannot be imported (the message says where Python looked)."""


def _check_name(name) -> str:
    if not isinstance(name, str) or not all(p.isidentifier() for p in name.split(".")):
        raise PluginError(f"plugin {name!r} is not a module name (dotted identifiers, e.g. 'mybounds' or "
                          "'mypkg.bounds'; not a file path)")
    return name


def plugin_file(name: str) -> str:
    mod = sys.modules.get(name)
    f = getattr(mod, "__file__", None) if mod is not None else None
    return str(Path(f).resolve()) if f else ""


def load_plugins(names, *, paths=()) -> list[str]:
    """Import each module in ``names`` (once; a module already imported is not re-imported).

    ``paths``: folders put at the front of ``sys.path`` first (e.g. the folder of the study
    file).  A module that cannot be found raises ``PluginError`` naming the module, the
    folders searched and how to add one; an error *inside* the plugin is re-raised as
    ``PluginError`` with the original exception chained.  Returns the names.
    """
    names = [names] if isinstance(names, str) else list(names or [])
    for p in paths:
        p = str(p)
        if p and p not in sys.path:
            sys.path.insert(0, p)
    for name in names:
        _check_name(name)
        if name in sys.modules and name in LOADED:
            continue
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and (name == e.name or name.startswith(e.name + ".")):
                shown = [p or "." for p in sys.path[:6]]
                raise PluginError(
                    f"plugin module {name!r} cannot be imported: no module named {e.name!r} on sys.path "
                    f"({', '.join(shown)}{', ...' if len(sys.path) > 6 else ''}).  Put the folder that holds "
                    f"{name.split('.')[0]}.py on PYTHONPATH (e.g. PYTHONPATH=/path/to/folder stabsim run ...), "
                    "run from that folder, or pip install the package that provides it") from None
            raise PluginError(f"plugin module {name!r} failed to import: {type(e).__name__}: {e}") from e
        except Exception as e:
            raise PluginError(f"plugin module {name!r} failed to import: {type(e).__name__}: {e}") from e
        f = getattr(mod, "__file__", None)
        folder = ""
        if f:
            top = Path(f).resolve().parent
            for _ in range(name.count(".") + (1 if Path(f).name == "__init__.py" else 0)):
                top = top.parent
            folder = str(top)
        LOADED[name] = (str(Path(f).resolve()) if f else "", folder)
    return names


def plugin_hashes(names) -> dict[str, str]:
    """``{name: sha256 of its source file}`` (``"builtin"`` for a module without a file)."""
    out = {}
    for name in names:
        f = plugin_file(name)
        out[name] = hashlib.sha256(Path(f).read_bytes()).hexdigest() if f and Path(f).is_file() else "no-file"
    return out


def ensure_loaded(names, paths=()) -> None:
    """In a dask worker task: make ``names`` importable (``paths``: the folders they were found in
    on the client) and import them before computing."""
    if names:
        load_plugins(names, paths=paths)
