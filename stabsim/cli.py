"""The ``stabsim`` command line.

::

    stabsim list [--studies DIR]
    stabsim run STUDY... [--quick | --profile NAME] [--out DIR] [--seed N]
                         [--scheduler ADDR] [--backend {cpu,cuda,auto}] [--force] [--keep-chunks]
                         [--no-progress] [--no-analyse] [--report DIR]
    stabsim report [DIR] [--reports DIR] [--overwrite-report]
    stabsim audit ...
    stabsim privacy ALGORITHM --n N --eps EPS [--delta D] [--T T] [--reading R] ...
    stabsim privacy suite

``STUDY`` is a study id (``[study] id`` or the file name without ``.toml``) found in the
studies folder, a path to a ``.toml`` file, or ``suite`` (every study with
``[study] suite = true``).  The studies folder is ``--studies DIR``, else
``$STABSIM_STUDIES``, else the repository's ``studies/`` next to the package (a source
checkout), else the package data folder ``stabsim/data/studies``
(``stabsim.study.default_studies_dir``).

``--scheduler``: ``local`` (default: in-process, numba threads parallelise inside a chunk),
``local:N`` (a dask LocalCluster with N worker processes) or ``tcp://host:port`` (an
existing dask cluster).  Results are bit-identical in every mode.  An interrupted run
(Ctrl-C, kill) keeps its finished chunks: run the same command again to resume.

``--backend``: where the twin kernels run, ``cpu``, ``cuda`` or ``auto`` (``stabsim.engine.backend``;
overrides the study's ``[run] backend``, default ``cpu``).  The backends agree only to
rounding, so a resume refuses chunks of another backend (docs/reliability.md).
``stabsim audit ... --backend`` does the same for an audit's runs.

Bad input ends with a one-line ``stabsim: error: ...`` and exit status 2 (set
``STABSIM_DEBUG=1`` for a traceback); Ctrl-C exits with status 130 and SIGTERM (a batch
scheduler's wall-time limit) with 143, both within about a second, even mid-chunk, after
saying how to resume.

Other modules behind two commands: ``stabsim report`` calls ``stabsim.reporting.report.report(out_dir)``
(``report`` below, a list of the studies in the folder and the state of their results, is what
it prints only if ``stabsim.reporting.report`` cannot be imported); ``stabsim audit ARGS`` calls
``stabsim.privacy.audit_cli.main(ARGS) -> int`` (ARGS: the list of arguments after ``audit``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import shlex
import sys
import time
import tomllib
from pathlib import Path

from stabsim.runtime.signals import exit_status, raise_if_interrupted, sigterm_as_interrupt
from stabsim.engine.backend import BACKENDS
from stabsim.runtime.thread_pools import configure_thread_pools
from stabsim.runtime.resources import freeze_long_lived, limit_malloc_arenas, release_freed_memory
from stabsim.registry import did_you_mean
from stabsim.study import Executor, StudyError, default_studies_dir, load_study, run_study, study_index
from stabsim.study.lane import StudyLane, failure_text, take_studies


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage block
        self.exit(2, f"stabsim: error: {message} (see '{self.prog} --help')\n")


class CLIError(Exception):
    pass


# ---- list ---------------------------------------------------------------------------------

def _studies_dir(args) -> Path:
    return Path(args.studies) if args.studies else default_studies_dir()


def cmd_list(args) -> int:
    d = _studies_dir(args)
    index = study_index(d)
    if not index:
        print(f"no studies (*.toml) in {d}")
        return 0
    w = max(len(e["id"]) for e in index)
    for e in index:
        desc = f"(unreadable: {e['error']})" if e["error"] else e["description"]
        tag = " [suite]" if e["suite"] else ""
        needs = optional_packages(e["path"]) if not e["error"] else {}
        if needs:
            tag += " [needs " + ", ".join(f"{p}{'' if ok else ' (not installed)'}" for p, ok in sorted(needs.items())) + "]"
        print(f"{e['id']:<{w}}  {desc}{tag}")
    return 0


def optional_packages(path) -> dict[str, bool]:
    """{pip name: installed?} of the optional packages the data sets named in a study file need
    (any string value of the study that is a stabsim.engine.real_datasets name)."""
    import importlib.util
    import tomllib

    from stabsim.engine import real_datasets as datasets

    def strings(v):
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            for x in v.values():
                yield from strings(x)
        elif isinstance(v, list):
            for x in v:
                yield from strings(x)

    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    out = {}
    for s in set(strings(raw)):
        try:
            entry = datasets._resolve(s)
        except (KeyError, ValueError):
            continue
        if entry.package:
            out[entry.pip_name] = importlib.util.find_spec(entry.package) is not None
    return out


# ---- run ----------------------------------------------------------------------------------

def resolve_studies(names, studies_dir: Path) -> list[Path]:
    """Study ids / paths / ``suite`` -> study file paths (in the order given, no duplicates)."""
    index = None
    out = []
    for name in names:
        p = Path(name)
        if name.endswith(".toml") or os.sep in name or p.is_file():
            if not p.is_file():
                raise CLIError(f"study file {name!r} not found")
            paths = [p]
        else:
            if index is None:
                index = study_index(studies_dir)
            if name == "suite":
                paths = [e["path"] for e in index if e["suite"]]
                if not paths:
                    raise CLIError(f"no study in {studies_dir} has [study] suite = true")
            else:
                paths = [e["path"] for e in index if e["id"] == name or e["path"].stem == name]
                if not paths:
                    known = sorted({e["id"] for e in index})
                    raise CLIError(f"unknown study {name!r}.{did_you_mean(name, known)} Studies in {studies_dir}: "
                                   f"{', '.join(known) or 'none'} (or give a path to a .toml file)")
                paths = paths[:1]
        for q in paths:
            if q.resolve() not in [r.resolve() for r in out]:
                out.append(q)
    return out


#: a run of this many studies (or 'suite') first compiles the recorded kernels in parallel (stabsim.compile.warmup)
WARM_STUDIES = 5


def cmd_run(args) -> int:
    from stabsim.registry import load_builtin

    limit_malloc_arenas()   # one heap for all threads: a long run keeps less memory it freed (stabsim.runtime.resources)
    load_builtin()  # the built-in study kinds and checks

    plugins = _load_plugins(args)
    paths = resolve_studies(args.study, _studies_dir(args))
    profile = "quick" if args.quick else args.profile
    specs = [load_study(p, profile, seed=args.seed, plugins=plugins)
             for p in paths]  # validate all before running any
    ids = [s.id for s in specs]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise CLIError(f"two study files have the same id {sorted(dup)[0]!r}; ids name the output directories")
    writable_dir(args.out, "--out")   # once the studies are valid: a bad study file leaves no folder behind
    if args.report is not None:
        writable_dir(args.report, "--report")
    hint = "run the same command again: " + shlex.join(["stabsim", *sys.argv[1:]]) if sys.argv[1:2] == ["run"] \
        else "run the same command again"
    t0 = time.perf_counter()
    analyse = None
    if not args.no_analyse:
        from stabsim.reporting.analyse import analyse
    failures: dict[str, str] = {}
    configure_thread_pools()   # numba's threads and BLAS's would spin against each other (stabsim.runtime.thread_pools)
    if "suite" in args.study or len(specs) >= WARM_STUDIES:  # compile on every core first, once per version
        from stabsim.compile.warmup import warm

        warm(log=lambda m: print(m, file=sys.stderr))
    elif args.backend in (None, "cpu"):   # a few studies: their (CPU) kernels, or an alike built-in study's, first
        from stabsim.study.warm import study_likeness, warm_studies

        warm_studies(ids, log=lambda m: print(m, file=sys.stderr),
                     like={s.id: study_likeness(s.kind, s.sections) for s in specs})
    if len(specs) >= WARM_STUDIES:   # a long run: imports and the warm-up's code out of the garbage collector's walks
        freeze_long_lived()
    reporting = (args.report is not None or "suite" in args.study) and analyse is not None
    ledger = None
    if reporting:   # the report's privacy ledger, accounted while the studies run
        from stabsim.privacy import prefetch

        ledger = prefetch.start({s.id: s.profile for s in specs}, log=lambda m: print(m, file=sys.stderr))
    # many studies: each analysed in a worker process while the next computes (stabsim.reporting.background)
    background = None
    if analyse is not None and len(specs) >= WARM_STUDIES:
        from stabsim.reporting.background import BackgroundAnalyses

        background = BackgroundAnalyses.start(plugins)
    run_kw = dict(force=args.force, keep_chunks=args.keep_chunks, resume_hint=hint,
                  recompute_stale=args.recompute_stale, backend=args.backend)
    # many studies: a worker computes studies from the back on the cores left idle (stabsim.study.lane)
    lane = StudyLane.start(specs, args.out, run_kw, args.scheduler, args.backend, plugins) \
        if len(specs) >= WARM_STUDIES else None
    with Executor(args.scheduler) as ex, background or contextlib.nullcontext(), lane or contextlib.nullcontext():
        for spec, from_lane in take_studies(specs, lane):  # each study is analysed as soon as it finishes
            raise_if_interrupted()   # a signal whose raise a finalizer swallowed (stabsim.runtime.signals)
            r, failure = from_lane or (None, None)
            try:
                if from_lane is None:
                    r = run_study(spec, args.out, executor=ex, progress=not args.no_progress, **run_kw)
            except Exception as e:  # one study that cannot run does not stop the others (Ctrl-C still does)
                if len(specs) == 1:
                    raise
                failure = failure_text(e)
            if failure is not None:
                failures[spec.id] = failure
                print(f"study {spec.id!r}: {failures[spec.id]}; going on with the other studies", file=sys.stderr)
                continue
            print(r.summary())
            if background is not None:
                background.submit(r.out_dir, run_seconds=r.seconds, out_dir=args.out)
                _print_verdicts(background.ready())
            elif analyse is not None:
                _print_verdicts([(r.out_dir, analyse(r.out_dir, run_seconds=r.seconds, out_dir=args.out))])
            release_freed_memory()   # a long suite otherwise keeps the heap of its largest study
        if background is not None:
            _print_verdicts(background.ready(wait=True))
    # default for 'run suite': reports/ beside the output folder (./reports for the default --out out),
    # or --out/reports for a quick run; never over a report of another profile unless --overwrite-report
    raise_if_interrupted()
    if reporting:
        from stabsim.reporting.report import report as write_report

        if ledger is not None:
            ledger.wait(log=lambda m: print(m, file=sys.stderr))
        print(write_report(args.out, args.report, command=shlex.join(["stabsim", *sys.argv[1:]])
                           if sys.argv[1:2] == ["run"] else None, wall_seconds=time.perf_counter() - t0,
                           overwrite=args.overwrite_report, failures=failures))
    if failures:
        print(f"stabsim: {len(failures)} of {len(specs)} studies did not run: "
              + "; ".join(f"{k}: {v}" for k, v in failures.items()), file=sys.stderr)
        return 1
    return 0


def writable_dir(path, flag: str) -> Path:
    """``path`` as a folder this process can write in (created if missing), or a ``CLIError`` that
    names the path, the option it came from and why (before any study computes)."""
    import errno
    import tempfile

    p = Path(path)
    why = {errno.ENOENT: "it (or a folder above it) cannot be created there",
           errno.EACCES: "permission denied", errno.EPERM: "operation not permitted",
           errno.EROFS: "read-only file system", errno.ENOTDIR: "a part of the path is a file, not a folder",
           errno.EEXIST: "it exists and is not a folder", errno.ENOSPC: "no space left on the device"}
    try:
        if p.exists() and not p.is_dir():
            raise FileExistsError(errno.EEXIST, "exists")
        p.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=p):
            pass
    except OSError as e:
        reason = why.get(e.errno, e.strerror or str(e))
        raise CLIError(f"cannot write the output folder {str(p)!r} ({flag}): {reason}; "
                       f"give {flag} a folder you can write to") from None
    return p


def _print_verdicts(analysed) -> None:
    """One line per analysed study: its summary.md and its verdicts."""
    for study_dir, rec in analysed:
        verdicts = ", ".join(f"{x['key']}{' [' + x['label'] + ']' if x.get('label') else ''}: {x['verdict']}"
                             for x in rec["rows"])
        print(f"  -> {Path(study_dir) / 'summary.md'}: {verdicts or 'no verdicts'}")


# ---- report (fallback without stabsim.reporting.report) ----------------------------------------------

def report(out_dir) -> str:
    """The studies in ``out_dir`` and the state of their results, one line each.

    ``stabsim report`` prints this only when ``stabsim.reporting.report`` cannot be imported; otherwise
    it writes the full report (``stabsim.reporting.report.report``: findings, verdicts, figures).
    """
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        return f"no results: {out_dir} does not exist"
    lines = []
    for d in sorted(p for p in out_dir.iterdir() if (p / "study.json").is_file()):
        try:
            m = json.loads((d / "study.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            lines.append(f"{d.name}: unreadable study.json")
            continue
        data = d / "data.nc"
        if data.is_file():
            state = f"finished: {data} ({data.stat().st_size / 1e6:.2f} MB)"
        else:
            done = len(list((d / "chunks").glob("*.nc"))) if (d / "chunks").is_dir() else 0
            state = f"incomplete: {done} of {m.get('n_chunks', '?')} chunks (resume with stabsim run)"
        prof = f", profile {m['profile']}" if m.get("profile") else ""
        lines.append(f"{m.get('study_id', d.name)} ({m.get('kind', '?')}{prof}, seed {m.get('seed')}): {state}")
    return "\n".join(lines) if lines else f"no study results in {out_dir}"


_PLUGINS_HELP = ("import these user modules first (comma-separated or repeated): they may register study kinds, "
                 "checks, loss forms and bounds; the folder holding them must be importable (PYTHONPATH or the "
                 "current folder); see docs/plugins.md")


def _load_plugins(args) -> list[str]:
    """The modules named by ``--plugins`` (imported now; errors say where Python looked)."""
    names = [m.strip() for v in (getattr(args, "plugins", None) or []) for m in v.split(",") if m.strip()]
    if not names:
        return []
    from stabsim.registry.plugins import PluginError, load_plugins

    if "" not in sys.path:  # like `python -m`: a plugin in the current folder is found
        sys.path.insert(0, "")
    try:
        return load_plugins(names)
    except PluginError as e:
        raise CLIError(str(e)) from None


def cmd_report(args) -> int:
    _load_plugins(args)
    if not Path(args.dir).is_dir():
        raise CLIError(f"{args.dir} is not a folder of study results: give the --out folder of `stabsim run` "
                       "(default: out)")
    fn = report
    try:
        fn = importlib.import_module("stabsim.reporting.report").report
    except ModuleNotFoundError as e:
        if e.name not in ("stabsim.reporting.report",):
            raise
    reports = getattr(args, "reports", None)
    print(fn(args.dir, reports, overwrite=args.overwrite_report) if fn is not report else fn(args.dir))
    return 0


# ---- audit (hook) -------------------------------------------------------------------------------

def cmd_audit(args) -> int:
    from stabsim.privacy.audit_cli import main

    return int(main(list(args.args)) or 0)


# ---- privacy ledger -----------------------------------------------------------------------------

def cmd_privacy(args) -> int:
    from stabsim.privacy import ledger as L
    from stabsim.privacy.errors import InfeasiblePrivacyParameters

    if args.algorithm == "suite":
        rows = L.ledger_rows_for_suite(args.studies)
    else:
        if args.n is None or args.eps is None:
            raise CLIError(f"stabsim privacy {args.algorithm} needs --n and --eps")
        a, kw = args.algorithm, {}
        if a == "p0_alg2":
            if args.delta is None:
                raise CLIError("p0_alg2 needs --delta")
            kw = dict(reading=args.reading or "corrected", delta_T=args.delta_T, T=args.T)
        elif a == "p1_alg3":
            if args.delta is None:
                raise CLIError("p1_alg3 needs --delta")
        elif a == "p2_alg1":
            if args.delta is None:
                raise CLIError("p2_alg1 needs --delta")
            kw = dict(T=args.T or 10)
        elif a == "p3_online":
            kw = dict(reading=args.reading or "exact")
        elif a in ("p4_alg1", "p4_alg2"):
            kw = dict(T=args.T or 1000, pairwise=(a == "p4_alg2"))
        try:
            if a == "p2_alg1":
                mech = L.p2_alg1(args.n, kw["T"], args.eps, args.delta)
            elif a in ("p4_alg1", "p4_alg2"):
                mech = L.p4_dpsgd(args.n, kw["T"], args.eps, args.delta, kw["pairwise"])
            else:
                mech = L.ALGORITHMS[a](args.n, args.eps, args.delta, **kw)
        except (ValueError, InfeasiblePrivacyParameters) as e:
            raise CLIError(str(e)) from None
        rows = L.ledger([mech])
    if args.markdown:
        print(L.ledger_markdown(rows))
    else:
        print(L.format_ledger(rows))
    return 0


# ---- main ---------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    from stabsim import __version__

    p = _Parser(prog="stabsim", description="Twin-trajectory simulations that check learning-theory bounds.")
    p.add_argument("--version", action="version", version=f"stabsim {__version__}",
                   help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    sp = sub.add_parser("list", help="list the studies (id and description)")
    sp.add_argument("--studies", metavar="DIR", help="folder of study files (default: see stabsim --help)")
    sp.set_defaults(func=cmd_list)

    sp = sub.add_parser("run", help="run studies (resumes an interrupted run)")
    sp.add_argument("study", nargs="+", metavar="STUDY", help="study id, path to a .toml file, or 'suite'")
    g = sp.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="use the study's [profiles.quick]")
    g.add_argument("--profile", metavar="NAME", help="use [profiles.NAME] (default: 'full' when defined)")
    sp.add_argument("--out", default="out", metavar="DIR", help="output folder (default: ./out)")
    sp.add_argument("--seed", type=int, metavar="N", help="override [study] seed")
    sp.add_argument("--scheduler", default="local", metavar="ADDR",
                    help="'local' (in-process, default), 'local:N' (dask LocalCluster, N workers) or tcp://host:port")
    sp.add_argument("--force", action="store_true",
                    help="replace the results of a different study in the output directory (chunks valid "
                         "for this study are kept)")
    sp.add_argument("--keep-chunks", action="store_true",
                    help="keep chunks/ after data.nc is written (remembered in study.json for later runs)")
    sp.add_argument("--backend", choices=BACKENDS, default=None,
                    help="where the twin kernels run: cpu, cuda (a GPU, numba-cuda) or auto (the GPU if "
                         "usable, else the CPU with a warning); overrides the study's [run] backend "
                         "(default cpu)")
    sp.add_argument("--recompute-stale", action="store_true",
                    help="recompute the chunks that other code computed (another stabsim source hash or "
                         "numba/numpy/python version) or that another backend computed; without it such "
                         "a resume is refused")
    sp.add_argument("--no-progress", action="store_true", help="no progress bar")
    sp.add_argument("--studies", metavar="DIR", help="folder of study files for ids and 'suite'")
    sp.add_argument("--no-analyse", action="store_true", help="do not analyse the studies (no summary.md)")
    sp.add_argument("--plugins", action="append", metavar="MODULE", help=_PLUGINS_HELP)
    sp.add_argument("--report", metavar="DIR", default=None,
                    help="write DIR/index.md over all studies in --out (default for 'run suite': "
                         "reports/ beside --out, i.e. ./reports; for --quick: --out/reports, i.e. out/reports)")
    sp.add_argument("--overwrite-report", action="store_true",
                    help="replace a report (index.md) of another profile, e.g. the committed full-profile one")
    sp.set_defaults(func=cmd_run)

    sp = sub.add_parser("report", help="verdict table over the finished studies -> reports/index.md")
    sp.add_argument("dir", nargs="?", default="out", help="output folder (default: ./out)")
    sp.add_argument("--reports", metavar="DIR", default=None,
                    help="where index.md goes (default: reports/ beside DIR, i.e. ./reports; DIR/reports when "
                         "the studies include quick-profile runs)")
    sp.add_argument("--overwrite-report", action="store_true",
                    help="replace a report (index.md) of another profile, e.g. the committed full-profile one")
    sp.add_argument("--plugins", action="append", metavar="MODULE", help=_PLUGINS_HELP)
    sp.set_defaults(func=cmd_report)

    sp = sub.add_parser("privacy", help="privacy ledger: the exact eps a paper's calibrated noise buys")
    sp.add_argument("algorithm", choices=["p0_alg2", "p1_alg3", "p2_alg1", "p3_online", "p3_offline", "p4_alg1",
                                          "p4_alg2", "suite"],
                    help="algorithm whose calibration to account, or 'suite' (the calibrations of the suite's studies)")
    sp.add_argument("--n", type=int, default=None, help="number of examples n (required unless 'suite'; no default)")
    sp.add_argument("--eps", type=float, default=None, help="target (claimed) epsilon (required unless 'suite'; no default)")
    sp.add_argument("--delta", type=float, default=None,
                    help="delta (default: none for p0/p1/p2 -- required; 1/n for p3; 1/n^2 for p4)")
    sp.add_argument("--T", type=int, default=None,
                    help="steps: p0_alg2 (default n^2), p2_alg1 (default 10), p4_alg* (default 1000)")
    sp.add_argument("--reading", default=None,
                    help="calibration reading: p0_alg2 Eq. (5) 'printed'/'corrected' (default corrected); "
                         "p3_online rho 'exact'/'approx'/'printed' (default exact)")
    sp.add_argument("--delta-T", dest="delta_T", default="eq9", choices=["eq9", "proof"],
                    help="p0_alg2 sensitivity reading: Eq. (9) with c = 3 'eq9' or the proof form 'proof' (default eq9)")
    sp.add_argument("--markdown", action="store_true", help="print a markdown table (default: plain text)")
    sp.add_argument("--studies", metavar="DIR", default=None,
                    help="folder of study files for 'suite' (default: see stabsim --help)")
    sp.set_defaults(func=cmd_privacy)

    sp = sub.add_parser("audit", help="empirical privacy audit (stabsim.privacy.audit_cli)",
                        add_help=False)
    sp.add_argument("args", nargs=argparse.REMAINDER)
    sp.set_defaults(func=cmd_audit)
    return p


def main(argv=None) -> int:
    """``stabsim COMMAND ...``; its exit status.  A reader that closes the pipe early
    (``stabsim privacy suite | head``) ends the command quietly (status 141, as for SIGPIPE)."""
    try:
        rc = _main(argv)
        sys.stdout.flush()   # inside the try: a closed pipe found only at this flush is quiet too
        return rc
    except BrokenPipeError:
        try:   # Python flushes stdout again at exit: send that to /dev/null, not to a closed pipe
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141


def _main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["audit"]:  # everything after 'audit' belongs to the audit runner
        return cmd_audit(argparse.Namespace(args=argv[1:]))
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, or a usage error (already printed as one line)
        return e.code if isinstance(e.code, int) else 2
    try:
        with sigterm_as_interrupt():  # a batch scheduler's SIGTERM: like Ctrl-C (message, resume hint)
            return args.func(args)
    except KeyboardInterrupt as e:  # Ctrl-C: 130; SIGTERM (Terminated): 143
        return exit_status(e)
    except (StudyError, CLIError, OSError, tomllib.TOMLDecodeError) as e:
        if os.environ.get("STABSIM_DEBUG") or isinstance(e, BrokenPipeError):
            raise
        msg = " ".join(str(e).split("\n"))
        print(f"stabsim: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
