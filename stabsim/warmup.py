"""Compile the kernels a study run needs on every core at once, before it starts (issue #17).

numba compiles a kernel the first time it is called, one after the other, on one core: on a fresh
install the quick suite spends about 3.5 of its 5.7 minutes compiling.  ``warm()`` compiles the
kernels listed in ``stabsim/data/kernel_signatures.pkl`` (every kernel and signature the quick
suite compiles, recorded by ``python -m stabsim.warmup --record``) in a pool of worker processes,
one per core; each writes its results to numba's on-disk cache (``stabsim._cache``), from which the
run then loads them.  Nothing is computed, so no number depends on it.

``stabsim run`` calls it once per source version: a marker file in the cache folder records that
the warm-up ran, so a warm cache costs nothing.  It is skipped on one core (nothing to gain), when
``STABSIM_NO_WARMUP=1``, and when numba has no on-disk cache.  A kernel that fails to compile in a
worker (a signature recorded by another numba version, say) is simply left for the run to compile.

A run of fewer studies compiles, the same way, only the kernels those studies use
(``warm_studies``): ``--record`` also runs every built-in study alone in a process of its own and
writes the kernels each used to ``stabsim/data/study_kernels.pkl``.  Those not in the on-disk
cache are compiled first; no marker is written (the cache itself says what is left).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import pickle
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from importlib import import_module
from pathlib import Path

SIGNATURES = Path(__file__).resolve().parent / "data" / "kernel_signatures.pkl"
#: per built-in study, the kernels a run of it alone uses (``warm_studies``; recorded with ``--record``)
STUDY_KERNELS = SIGNATURES.parent / "study_kernels.pkl"
#: seconds a study's recording run may take (a quick run takes seconds once the suite compiled)
STUDY_TIMEOUT = 600
# numba files a cache entry under the source file's folder path too, so two checkouts of the same
# source (same cache folder) do not share entries: one marker per checkout
MARKER = "warmup-done-" + hashlib.sha1(str(Path(__file__).resolve().parent).encode()).hexdigest()[:16]
#: compiled first, each in its own task: the twin kernel's four replicates take most of the time
_HEAVY = re.compile(r"_CPU_REPLICATES\[\d\]$")


def _resolve(module: str, path: str):
    """The dispatcher at ``module`` + ``path`` ("name" or "name[i]", an entry of a tuple)."""
    obj = import_module(module)
    m = re.fullmatch(r"(\w+)(?:\[(\d+)\])?", path)
    obj = getattr(obj, m.group(1))
    if m.group(2) is not None:
        obj = obj[int(m.group(2))]
    return obj


def _compile_task(entries) -> tuple[int, int]:
    """Compile (module, path, signatures) entries in this worker; (compiled, failed) counts."""
    ok = bad = 0
    for module, path, sigs in entries:
        try:
            disp = _resolve(module, path)
        except Exception:
            bad += len(sigs)
            continue
        for sig in sigs:
            try:
                disp.compile(sig)
                ok += 1
            except Exception:
                bad += 1
    return ok, bad


def _tasks(entries) -> list:
    """The twin replicates one per task (largest first), the other kernels one task per module."""
    heavy = [[e] for e in entries if _HEAVY.search(e[1])]
    by_module: dict[str, list] = {}
    for e in entries:
        if not _HEAVY.search(e[1]):
            by_module.setdefault(e[0], []).append(e)
    return heavy + sorted(by_module.values(), key=len, reverse=True)


def _load(path, empty):
    try:
        with open(path, "rb") as fh:
            return pickle.load(fh)
    except Exception:   # missing, or pickled by an incompatible numba: nothing to warm
        return empty


def load_signatures(path=SIGNATURES) -> list:
    return _load(path, [])


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _cache_dir() -> Path | None:
    from numba.core.config import CACHE_DIR

    return Path(CACHE_DIR) if CACHE_DIR else None


def warm(processes: int | None = None, log=None, entries=None, cache=None, mark: bool = True) -> dict | None:
    """Compile the recorded kernels (``entries``, default ``load_signatures()``) on ``processes``
    workers (default: the usable cores), unless this source version already did (the marker in
    ``cache``, default numba's cache folder), or there is one core.  Returns what was done, or None.
    ``mark=False`` (a part of the list, ``warm_studies``): no marker is written."""
    import stabsim  # noqa: F401  (configures numba's cache folder before anything compiles)

    cache = _cache_dir() if cache is None else Path(cache)
    if os.environ.get("STABSIM_NO_WARMUP") == "1" or cache is None or (cache / MARKER).exists():
        return None
    n = processes or usable_cores()
    entries = load_signatures() if entries is None else entries
    if (n or 1) < 2 or not entries:
        return None
    t0 = time.perf_counter()
    if log:
        what = "the kernels" if mark else "the study's kernels"
        log(f"compiling {what} on {n} cores first (once per stabsim version; STABSIM_NO_WARMUP=1 skips it)")
    # spawned, not forked: a fork of a process whose numba threads are running can hang
    try:
        with ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn")) as pool:
            counts = list(pool.map(_compile_task, _tasks(entries)))
    except Exception as e:   # no worker processes here (no semaphores, a sandbox): the run compiles as usual
        if log:
            log(f"warm-up skipped: {type(e).__name__}: {e}")
        return None
    done = {"compiled": sum(c[0] for c in counts), "failed": sum(c[1] for c in counts),
            "seconds": time.perf_counter() - t0, "processes": n}
    if mark:
        try:
            cache.mkdir(parents=True, exist_ok=True)
            (cache / MARKER).write_text(repr(done) + "\n")
        except OSError:
            pass
    return done


def load_study_kernels(path=STUDY_KERNELS) -> dict:
    return _load(path, {})


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

    from .study import default_studies_dir

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
    from .compile_beside import uncached

    todo = uncached(study_entries(study_ids, path, like))
    # one task (one module's kernels, or one replicate) gains nothing from a worker: compiled as usual
    return warm(processes, log, entries=todo, mark=False) if len(_tasks(todo)) >= 2 else None


def record(out=SIGNATURES) -> int:
    """Write every compiled signature of every stabsim kernel in this process to ``out``
    (run after the quick suite, in the same process: ``python -m stabsim.warmup --record``; or
    after one study, ``--used-by``)."""
    entries = used_entries()
    with open(out, "wb") as fh:
        pickle.dump(entries, fh)
    return sum(len(e[2]) for e in entries)


def record_studies(study_ids, out=STUDY_KERNELS) -> int:
    """For each study, the kernels a quick run of it alone uses (compiled or loaded from the
    cache), each study run in a process of its own (``--used-by``), written to ``out``."""
    import subprocess
    import tempfile

    table = {}
    env = dict(os.environ, STABSIM_NO_WARMUP="1")
    with tempfile.TemporaryDirectory() as tmp:
        for sid in study_ids:
            dump = Path(tmp) / f"{sid}.pkl"
            try:
                rc = subprocess.run([sys.executable, "-m", "stabsim.warmup", "--used-by", sid, "--into", str(dump)],
                                    env=env, stdout=subprocess.DEVNULL, timeout=STUDY_TIMEOUT).returncode
            except subprocess.TimeoutExpired:
                rc = "timed out"
            if rc != 0:   # a study that cannot run here (a missing optional package), or hung: no record
                print(f"{sid}: not recorded (exit status {rc})", file=sys.stderr)
                continue
            with open(dump, "rb") as fh:
                table[sid] = pickle.load(fh)
    with open(out, "wb") as fh:
        pickle.dump(table, fh)
    return len(table)


def used_entries() -> list:
    """(module, name, signatures) of every stabsim kernel this process has compiled or loaded."""
    from numba.core.dispatcher import Dispatcher

    entries, seen = [], set()

    def add(module, path, obj):
        if isinstance(obj, Dispatcher) and id(obj) not in seen and obj.signatures:
            seen.add(id(obj))
            entries.append((module, path, list(obj.signatures)))

    for name, mod in sorted(sys.modules.items()):
        if not name.startswith("stabsim") or mod is None:
            continue
        for attr, obj in list(vars(mod).items()):
            if isinstance(obj, tuple):
                for i, o in enumerate(obj):
                    add(name, f"{attr}[{i}]", o)
            else:
                add(name, attr, obj)
    return entries


def _main(argv=None) -> int:
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(description="compile stabsim's kernels in parallel (or record which)")
    ap.add_argument("--record", action="store_true",
                    help="run the quick suite in this process, then write the signatures it compiled")
    ap.add_argument("--stdin", action="store_true",
                    help="compile the pickled pair of (module, name, signatures) lists read from stdin, "
                         "saying so after the first (stabsim.compile_beside's helper); exit status 1 "
                         "if any failed")
    ap.add_argument("--used-by", metavar="STUDY",
                    help="run this built-in study (quick profile) and write the kernels it used (--into)")
    ap.add_argument("--into", metavar="FILE", help="where --used-by writes")
    args = ap.parse_args(argv)
    if args.used_by or args.record:
        # record the kernels the suite's runs use when they are compiled, not what a cold start
        # does instead (a specialised replicate, small data sets drawn without compiled code)
        from . import rng
        from .kernels import twin

        twin.SPECIALISE_COLD = False
        rng.PYTHON_FILL_MAX = 0
    if args.used_by:
        from .cli import main as cli

        with tempfile.TemporaryDirectory() as tmp:
            if cli(["run", args.used_by, "--quick", "--out", tmp, "--no-progress"]) != 0:
                return 1
        record(args.into)
        return 0
    if args.stdin:
        import stabsim  # noqa: F401  (numba's cache folder, before anything compiles)

        now, later = pickle.load(sys.stdin.buffer)
        ok, bad = _compile_task(now)
        if later:   # the caller waits for this line only (compile_beside.finish)
            print("compiled", flush=True)
            ok2, bad2 = _compile_task(later)
            ok, bad = ok + ok2, bad + bad2
        return 1 if bad or not ok else 0
    if args.record:
        from .cli import main as cli

        with tempfile.TemporaryDirectory() as tmp:
            rc = cli(["run", "suite", "--quick", "--out", tmp, "--no-progress", "--no-analyse"])
        if rc != 0:   # an interrupted or failed suite would record a part of the list: nothing written
            print(f"the quick suite ended with status {rc}: nothing recorded", file=sys.stderr)
            return rc
        print(f"{record()} signatures -> {SIGNATURES}")
        from .study import default_studies_dir

        ids = sorted(p.stem for p in default_studies_dir().glob("*.toml"))
        print(f"{record_studies(ids)} studies' kernels -> {STUDY_KERNELS}")
        return 0
    print(warm(log=print))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
