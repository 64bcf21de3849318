"""The warm-up of a run of a few studies: the kernels those studies use, compiled on every core
first (``stabsim.compile.warmup.warm`` on a part of the recorded list).

Each built-in study's kernels are recorded in ``stabsim/data/study_kernels.pkl``
(``stabsim.compile.signatures.load_study_kernels``).  A study without a record (a user's own) gets
the kernels that every built-in study of the same kind and algorithm uses (``stand_ins``).  Only
those not yet in numba's on-disk cache are compiled; no marker is written (the cache itself says
what is left).
"""

from __future__ import annotations

from pathlib import Path

from stabsim.compile.beside import uncached
from stabsim.compile.signatures import STUDY_KERNELS, load_study_kernels
from stabsim.compile.warmup import tasks, warm
from stabsim.study.index import default_studies_dir


def study_entries(study_ids, path=STUDY_KERNELS, like=None) -> list:
    """The recorded kernels (module, name, signatures) that these built-in studies use.  A study
    without a record (a user's own) uses ``like``: {study id: (kind, algorithm)} gives it the
    kernels that every built-in study of the same kind and algorithm uses (``stand_ins``); none
    when it is not given or no built-in study is alike."""
    recorded = load_study_kernels(path)
    merged: dict = {}
    for sid in study_ids:
        entries = recorded.get(sid)
        if entries is None and like and sid in like:
            entries = _common_entries([recorded[i] for i in stand_ins(*like[sid]) if i in recorded])
        for module, name, sigs in entries or ():
            have = merged.setdefault((module, name), [])
            have += [s for s in sigs if s not in have]
    return [(m, n, sigs) for (m, n), sigs in merged.items()]


def study_likeness(kind, sections) -> tuple:
    """(kind, algorithm) of a study: what ``stand_ins`` matches a study without a record by
    (``sections``: the study's sections; the algorithm is ``[algorithm] name``, or ``[audit]
    algorithm``, None for kinds without one)."""
    algorithm = (sections.get("algorithm") or {}).get("name") or (sections.get("audit") or {}).get("algorithm")
    return kind, algorithm


def stand_ins(kind, algorithm, studies_dir=None) -> list:
    """The built-in studies (ids) of this kind and algorithm (read from their files)."""
    import tomllib

    ids = []
    for p in sorted(Path(studies_dir or default_studies_dir()).glob("*.toml")):
        try:
            t = tomllib.loads(p.read_text(encoding="utf-8"))
            sid, like = t["study"]["id"], study_likeness(t["study"]["kind"], t)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue   # not a study file of this package's form: no stand-in
        if like == (kind, algorithm):
            ids.append(sid)
    return ids


def _common_entries(records) -> list:
    """The (module, name, signatures) every one of ``records`` uses (none for no records)."""
    if not records:
        return []
    sigs_of = [{(m, n): list(sigs) for m, n, sigs in rec} for rec in records]
    out = []
    for (m, n), sigs in sigs_of[0].items():
        common = [s for s in sigs if all(s in other.get((m, n), ()) for other in sigs_of[1:])]
        if common:
            out.append((m, n, common))
    return out


def warm_studies(study_ids, processes: int | None = None, log=None, path=STUDY_KERNELS, like=None) -> dict | None:
    """A run of a few studies (fewer than the suite's warm-up is for): the kernels they use
    compiled on every core first, those not yet in the on-disk cache (a single study of the
    suite on a fresh install: its replicate, the twin kernel and the risk kernels at once
    instead of one after the other).  A user's own study gets the kernels of the built-in
    studies like it (``like``, see ``study_entries``).  None when all are cached or nothing can run."""
    todo = uncached(study_entries(study_ids, path, like))
    # one task (one module's kernels, or one replicate) gains nothing from a worker: compiled as usual
    return warm(processes, log, entries=todo, mark=False) if len(tasks(todo)) >= 2 else None
