"""Provenance attributes attached to every result (docs/reliability.md)."""

from __future__ import annotations

import datetime as _dt
import functools
import subprocess
from pathlib import Path

import numba
import numpy as np

from stabsim.runtime import codeid


@functools.lru_cache(maxsize=1)
def git_commit() -> str:
    """The commit of the stabsim source tree, or '' when not in a git checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def provenance(**extra) -> dict:
    """Global attrs: versions, commit, code identity (``stabsim.runtime.codeid``), creation time, plus ``extra`` (seed, study text, ...)."""
    from stabsim import __version__

    attrs = {
        "stabsim_version": __version__,
        "git_commit": git_commit(),
        "numba_version": numba.__version__,
        "numpy_version": np.__version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    attrs.update(codeid.code_identity())  # code_sha256 (source hash), git commit/dirty, versions
    for k, v in extra.items():
        attrs[k] = v if isinstance(v, (str, int, float)) else str(v)
    return attrs
