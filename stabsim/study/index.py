"""Discovering study files: ``default_studies_dir`` (``$STABSIM_STUDIES``, the source
checkout's ``studies/``, or the packaged ones) and ``study_index`` (``stabsim list``)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path


def default_studies_dir() -> Path:
    """``$STABSIM_STUDIES``, else the repository's ``studies/`` next to the package (a source
    checkout), else the package data folder ``stabsim/data/studies``."""
    env = os.environ.get("STABSIM_STUDIES")
    if env:
        return Path(env)
    package = Path(__file__).resolve().parent.parent  # stabsim/ (this file: stabsim/study/index.py)
    repo = package.parent / "studies"
    if repo.is_dir():
        return repo
    return package / "data" / "studies"


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
