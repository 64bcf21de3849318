"""The recorded kernel signatures: which numba kernels (by module and name) the warm-up compiles,
and for which argument types.

``stabsim/data/kernel_signatures.pkl`` holds a list of (module, name, [signature, ...]) entries:
every kernel and signature the quick suite compiles.  ``stabsim/data/study_kernels.pkl`` holds,
per built-in study, the same kind of list for a quick run of that study alone.  Both are written
by the maintainer's script ``tools/record_kernels.py``.  A name is "name" or "name[i]" (an entry of
a module-level tuple of kernels); ``resolve`` finds the dispatcher it names by importing the module
at run time, so this module imports no kernel itself.
"""

from __future__ import annotations

import pickle
import re
from importlib import import_module
from pathlib import Path

SIGNATURES = Path(__file__).resolve().parents[1] / "data" / "kernel_signatures.pkl"
#: per built-in study, the kernels a run of it alone uses (``stabsim.study.warm``)
STUDY_KERNELS = SIGNATURES.parent / "study_kernels.pkl"


def resolve(module: str, path: str):
    """The dispatcher at ``module`` + ``path`` ("name" or "name[i]", an entry of a tuple)."""
    obj = import_module(module)
    m = re.fullmatch(r"(\w+)(?:\[(\d+)\])?", path)
    obj = getattr(obj, m.group(1))
    if m.group(2) is not None:
        obj = obj[int(m.group(2))]
    return obj


def _load(path, empty):
    try:
        with open(path, "rb") as fh:
            return pickle.load(fh)
    except Exception:   # missing, or pickled by an incompatible numba: nothing to warm
        return empty


def load_signatures(path=SIGNATURES) -> list:
    """The recorded (module, name, signatures) entries of the suite (none if unreadable)."""
    return _load(path, [])


def load_study_kernels(path=STUDY_KERNELS) -> dict:
    """{study id: (module, name, signatures) entries} of the built-in studies (empty if unreadable)."""
    return _load(path, {})
