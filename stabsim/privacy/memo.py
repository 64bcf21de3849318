"""The privacy ledger's on-disk memo: each mechanism's accounting (the PLD work, seconds for a
subsampled mechanism) remembered between runs in a JSON file keyed by the package's source hash
and dp-accounting's version, so that a cached number is always the one this code computes
(``stabsim.privacy.ledger._accounted`` reads and fills it)."""

from __future__ import annotations

from pathlib import Path

#: Set to "1" to switch the on-disk memo of the accounting off.
NO_MEMO_ENV = "STABSIM_NO_LEDGER_CACHE"


def memo_path() -> Path | None:
    """Where the accounting of each mechanism is remembered between runs: a JSON file keyed by
    the package's source hash and dp-accounting's version, beside the numba cache
    (``stabsim.compile.cache.cache_candidates``).  Other source or another dp-accounting never reads it,
    so a cached number is always the number this code would compute.  None when switched off."""
    import os

    if os.environ.get(NO_MEMO_ENV) == "1":
        return None
    from importlib.metadata import PackageNotFoundError, version

    from stabsim.compile.cache import cache_candidates
    from stabsim.runtime.codeid import source_sha256

    try:
        dpa = version("dp-accounting")
    except PackageNotFoundError:
        dpa = "unknown"
    h = source_sha256()
    name = f"ledger-{h[:16]}-dp-accounting-{dpa}.json"
    for d in cache_candidates(h):
        folder = d.parent.parent / "ledger"  # .../stabsim/ledger beside .../stabsim/numba/<hash>
        try:
            folder.mkdir(parents=True, exist_ok=True)
            return folder / name
        except OSError:
            continue
    return None


def read_memo(path: Path | None) -> dict:
    import json

    if path is None or not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # a damaged memo is recomputed and rewritten


def write_memo(path: Path | None, memo: dict) -> None:
    import json
    import os

    if path is None:
        return
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(memo), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # the memo only saves time


