"""Record which kernels the warm-up compiles (a maintainer's tool, not part of the package).

``python tools/record_kernels.py`` runs the quick suite in this process (``stabsim run suite
--quick``), then writes every compiled signature of every stabsim kernel to
``stabsim/data/kernel_signatures.pkl``; then it runs every built-in study alone, each in a process
of its own (``--used-by STUDY --into FILE``), and writes the kernels each used to
``stabsim/data/study_kernels.pkl``.  Both files hold (module, name, [signature, ...]) entries
(``stabsim.compile.signatures``).  Run it with an empty numba cache after a change of a kernel's
parameters (tests/test_warmup.py says when).

The recording runs turn off the cold start's specialised replicate and the data fillers' Python
path (``kernels.twin.SPECIALISE_COLD``, ``rng.PYTHON_FILL_MAX``), so that what is recorded is what
the suite's runs use once compiled, not what a cold start does instead.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if __name__ == "__main__":   # the checkout's stabsim, whatever else is installed
    sys.path.insert(0, str(ROOT))

#: seconds a study's recording run may take (a quick run takes seconds once the suite compiled)
STUDY_TIMEOUT = 600


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


def record(out=None) -> int:
    """Write every compiled signature of every stabsim kernel in this process to ``out`` (default
    ``stabsim/data/kernel_signatures.pkl``; run after the quick suite, in the same process, or
    after one study, ``--used-by``); the number of signatures written."""
    from stabsim.compile.signatures import SIGNATURES

    entries = used_entries()
    with open(SIGNATURES if out is None else out, "wb") as fh:
        pickle.dump(entries, fh)
    return sum(len(e[2]) for e in entries)


def record_studies(study_ids, out=None) -> int:
    """For each study, the kernels a quick run of it alone uses (compiled or loaded from the
    cache), each study run in a process of its own (``--used-by``), written to ``out`` (default
    ``stabsim/data/study_kernels.pkl``); the number of studies recorded."""
    from stabsim.compile.signatures import STUDY_KERNELS

    table = {}
    env = dict(os.environ, STABSIM_NO_WARMUP="1")
    with tempfile.TemporaryDirectory() as tmp:
        for sid in study_ids:
            dump = Path(tmp) / f"{sid}.pkl"
            try:
                rc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--used-by", sid,
                                     "--into", str(dump)],
                                    env=env, stdout=subprocess.DEVNULL, timeout=STUDY_TIMEOUT).returncode
            except subprocess.TimeoutExpired:
                rc = "timed out"
            if rc != 0:   # a study that cannot run here (a missing optional package), or hung: no record
                print(f"{sid}: not recorded (exit status {rc})", file=sys.stderr)
                continue
            with open(dump, "rb") as fh:
                table[sid] = pickle.load(fh)
    with open(STUDY_KERNELS if out is None else out, "wb") as fh:
        pickle.dump(table, fh)
    return len(table)


def _as_compiled() -> None:
    """Record the kernels the suite's runs use when they are compiled, not what a cold start does
    instead (a specialised replicate, small data sets drawn without compiled code)."""
    from stabsim.engine import rng
    from stabsim.kernels import twin

    twin.SPECIALISE_COLD = False
    rng.PYTHON_FILL_MAX = 0


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="run the quick suite, then record the kernel signatures it compiled "
                                             "and the kernels each built-in study uses")
    ap.add_argument("--used-by", metavar="STUDY",
                    help="run this built-in study (quick profile) and write the kernels it used (--into)")
    ap.add_argument("--into", metavar="FILE", help="where --used-by writes")
    args = ap.parse_args(argv)
    _as_compiled()
    from stabsim.cli import main as cli

    if args.used_by:
        with tempfile.TemporaryDirectory() as tmp:
            if cli(["run", args.used_by, "--quick", "--out", tmp, "--no-progress"]) != 0:
                return 1
        record(args.into)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        rc = cli(["run", "suite", "--quick", "--out", tmp, "--no-progress", "--no-analyse"])
    if rc != 0:   # an interrupted or failed suite would record a part of the list: nothing written
        print(f"the quick suite ended with status {rc}: nothing recorded", file=sys.stderr)
        return rc
    from stabsim.compile.signatures import SIGNATURES, STUDY_KERNELS
    from stabsim.study import default_studies_dir

    print(f"{record()} signatures -> {SIGNATURES}")
    ids = sorted(p.stem for p in default_studies_dir().glob("*.toml"))
    print(f"{record_studies(ids)} studies' kernels -> {STUDY_KERNELS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
