"""The identity of the code that computes a result.

Every chunk and every ``data.nc`` records it (attrs ``code_*``), so that a resume never
mixes replicates of two versions of the code (docs/reliability.md, "Code identity"):

``code_sha256``      SHA-256 over the relative path and the bytes of every ``*.py`` module of
                     the package, sorted by path (not a version string: a one-line edit of a
                     helper such as ``rng.py`` changes it);
``code_git_commit``  the commit of the checkout ('' outside git), ``code_git_dirty`` 1 when
                     the tree had uncommitted changes (0 clean, -1 unknown);
``code_python``, ``code_numpy``, ``code_numba``: the versions that compiled and ran the kernels.

Two identities *match* when the keys in ``MATCH_KEYS`` agree (the source hash and the three
versions); the git commit and dirty flag are for people (a commit that changes no module of
the package changes no result).  The source hash is computed once per process, at import
of ``stabsim`` (a small part of the import; benchmarks/README.md, "Import time"), so it
describes the modules this process loaded even if the files are edited while it runs.

This module imports neither numba nor numpy at import time: ``stabsim/__init__.py`` uses it
to key numba's on-disk cache by the source hash before any kernel is compiled.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import subprocess
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]

#: identity keys that must agree for a stored result to be reused by the running code
MATCH_KEYS = ("code_sha256", "code_python", "code_numpy", "code_numba")
KEYS = ("code_sha256", "code_git_commit", "code_git_dirty", "code_python", "code_numpy", "code_numba")


def _sources(package_dir: Path) -> list[Path]:
    out = []
    for root, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        out += [Path(root) / f for f in files if f.endswith(".py")]
    return sorted(out, key=lambda p: p.relative_to(package_dir).as_posix())


@functools.lru_cache(maxsize=8)
def source_sha256(package_dir=None) -> str:
    """SHA-256 (hex) over every ``.py`` file below ``package_dir`` (default: this package):
    relative path, size and bytes of each, in sorted path order."""
    package_dir = Path(package_dir).resolve() if package_dir is not None else PACKAGE_DIR
    h = hashlib.sha256()
    for p in _sources(package_dir):
        data = p.read_bytes()
        h.update(p.relative_to(package_dir).as_posix().encode() + b"\0" + str(len(data)).encode() + b"\0")
        h.update(data)
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def _git() -> tuple[str, int]:
    def git(*args):
        return subprocess.run(["git", *args], cwd=PACKAGE_DIR, capture_output=True, text=True, timeout=10)

    try:
        out = git("rev-parse", "HEAD")
        if out.returncode != 0:
            return "", -1
        commit = out.stdout.strip()
        st = git("status", "--porcelain", "--untracked-files=no")
        return commit, (1 if st.stdout.strip() else 0) if st.returncode == 0 else -1
    except (OSError, subprocess.SubprocessError):
        return "", -1


def _version(pkg: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(pkg)
    except PackageNotFoundError:
        return ""


@functools.lru_cache(maxsize=1)
def _identity() -> tuple:
    commit, dirty = _git()
    return (("code_sha256", source_sha256()), ("code_git_commit", commit), ("code_git_dirty", dirty),
            ("code_python", platform.python_version()), ("code_numpy", _version("numpy")),
            ("code_numba", _version("numba")))


def code_identity() -> dict:
    """The running code's identity (a new dict each call; computed once per process)."""
    return dict(_identity())


def matches(recorded: dict, current: dict | None = None) -> bool:
    """Whether ``recorded`` (attrs of a stored result) was computed by code matching ``current``."""
    current = code_identity() if current is None else current
    return all(str(recorded.get(k, "")) == str(current[k]) for k in MATCH_KEYS) and bool(recorded.get("code_sha256"))


def describe(ident: dict) -> str:
    """One line: ``source 1a2b3c4d5e6f, git 0123abcd (dirty), python 3.11.7, numpy 2.4.6, numba 0.68.1``."""
    if not ident or not ident.get("code_sha256"):
        return "code of unknown identity (written by a stabsim that did not record it)"
    commit = str(ident.get("code_git_commit") or "")
    dirty = {1: " (dirty)", 0: "", -1: ""}.get(int(ident.get("code_git_dirty", -1) or 0), "")
    git = f"git {commit[:10]}{dirty}" if commit else "no git"
    return (f"source {str(ident['code_sha256'])[:12]}, {git}, python {ident.get('code_python', '?')}, "
            f"numpy {ident.get('code_numpy', '?')}, numba {ident.get('code_numba', '?')}")


def differences(old: dict, new: dict) -> list[str]:
    """The identity keys that differ, as ``key: old -> new`` (the source hash shortened)."""
    out = []
    for k in MATCH_KEYS:
        a, b = str(old.get(k, "") or ""), str(new.get(k, "") or "")
        if a != b:
            if k == "code_sha256":
                a, b = a[:12] or "(none)", b[:12]
            out.append(f"{k[5:]}: {a} -> {b}")
    return out


def recorded_identity(attrs) -> dict:
    """The ``code_*`` attrs of a stored result (chunk attrs use the prefix ``chunk_code_``)."""
    out = {}
    for k in KEYS:
        for key in (k, "chunk_" + k):
            if key in attrs:
                v = attrs[key]
                out[k] = v.item() if hasattr(v, "item") else v
    return out

