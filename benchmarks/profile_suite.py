"""Where the suite's time goes (issue #17, item 2): ``stabsim run suite`` under cProfile.

    python benchmarks/profile_suite.py [--quick] [--out DIR] [--md benchmarks/PROFILE.md]
    python benchmarks/profile_suite.py --stats suite.prof --times times.json   # re-render only
    ... --log full_run.log     # add the per-study compute seconds of an unprofiled `stabsim run` log

Runs the suite in this process (the default local scheduler computes chunks in-process, so the
profile sees them), times each study's computation and its analysis separately, and writes a
Markdown report with

* the self time (cProfile ``tottime``) summed by category of the code it was spent in, and
* per study: seconds computing (``run_study``) and seconds analysing (``analyse``).

Categories go by the file a function is defined in.  A numba kernel is a C-level callable that
cProfile does not list, so its run time is charged to the Python function that calls it: the
"simulation" category (``stabsim/engine/twin_runs.py``, ``stabsim/kernels/``, ``stabsim/privacy/algorithms/``,
``stabsim/experiments/``) is kernels plus their Python drivers.  ``numba`` is compilation and
dispatch (a cold cache compiles the kernels once, about 75 s).  The numbers are for the machine
and load of the run; they are measurements, never asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: (category, substrings of the defining file's path), first match wins.
CATEGORIES = (
    ("numba compile / dispatch", ("/numba/", "/llvmlite/")),
    ("simulation (kernels + drivers)", ("stabsim/engine/twin_runs.py", "stabsim/kernels/", "stabsim/privacy/algorithms/",
                                        "stabsim/experiments/", "stabsim/engine/neighbour_search.py", "stabsim/engine/elastic.py",
                                        "stabsim/engine/rademacher.py", "stabsim/engine/p1_baselines.py")),
    ("risk / ERM certificates", ("stabsim/risk/",)),
    ("statistics (CIs, bootstrap, rate fits)", ("stabsim/engine/measures.py", "stabsim/judging/rates.py", "stabsim/verdict",
                                                "stabsim/analyses/overlay_measure.py")),
    ("privacy accounting", ("stabsim/privacy/", "dp_accounting")),
    ("plotting (matplotlib)", ("matplotlib", "stabsim/judging/plots.py", "/PIL/")),
    ("storage (xarray, netCDF, HDF5)", ("xarray", "h5netcdf", "h5py", "netCDF", "stabsim/study/store.py",
                                        "stabsim/runtime/atomic_files.py",
                                        "stabsim/study/assembly.py")),
    ("dask", ("/dask/", "/distributed/")),
    ("scipy", ("/scipy/",)),
    ("numpy", ("/numpy/",)),
    ("other stabsim (study runner, analyses, report)", ("stabsim/",)),
)


def category(filename: str) -> str:
    f = filename.replace(os.sep, "/")
    for name, keys in CATEGORIES:
        if any(k in f for k in keys):
            return name
    return "other (Python, builtins)"


OTHER = "other (Python, builtins)"


def _caller_shares(stats: pstats.Stats, fn, stack: frozenset, memo: dict) -> dict[str, float]:
    """How the time of a generic function (the standard library, builtins) divides over the
    categories of its callers, in proportion to the cumulative time each caller spent in it."""
    c = category(fn[0])
    if c != OTHER:
        return {c: 1.0}
    if fn in memo:
        return memo[fn]
    callers = stats.stats.get(fn, (0, 0, 0, 0, {}))[4]
    total = sum(v[3] for v in callers.values())
    if not callers or total <= 0 or fn in stack or len(stack) > 60:
        return {OTHER: 1.0}
    out: dict[str, float] = {}
    for caller, v in callers.items():
        for k, share in _caller_shares(stats, caller, stack | {fn}, memo).items():
            out[k] = out.get(k, 0.0) + share * v[3] / total
    memo[fn] = out
    return out


def by_category(stats: pstats.Stats) -> dict[str, float]:
    """Self time by category; the standard library's and the builtins' self time is charged to the
    categories of their callers (so numba's IR copying counts as compilation, a lock wait in
    dask as dask)."""
    out: dict[str, float] = {}
    memo: dict = {}
    for fn, (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():
        for k, share in _caller_shares(stats, fn, frozenset(), memo).items():
            out[k] = out.get(k, 0.0) + tottime * share
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def run(profile: str | None, out: str, prof_path: Path) -> tuple[dict, float]:
    """Run the suite under cProfile, timing each study's run and analysis."""
    import stabsim.cli as cli
    import stabsim.reporting.analyse as report_study

    times: dict[str, dict] = {}

    def timed(fn, what, name_of):
        def wrapper(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                times.setdefault(name_of(*a), {})[what] = time.perf_counter() - t0
        return wrapper

    cli.run_study = timed(cli.run_study, "run", lambda spec, *a: spec.id)
    report_study.analyse = timed(report_study.analyse, "analyse", lambda d, *a: Path(d).name)
    argv = ["run", "suite", "--out", out, "--no-progress"] + (["--quick"] if profile == "quick" else [])
    pr = cProfile.Profile()
    t0 = time.perf_counter()
    pr.enable()
    rc = cli.main(argv)
    pr.disable()
    wall = time.perf_counter() - t0
    pr.dump_stats(str(prof_path))
    if rc != 0:
        print(f"warning: the suite exited with {rc}", file=sys.stderr)
    return times, wall


def log_times(path) -> list[tuple[str, int, float]]:
    """(study, chunks, seconds) from the lines "ID: N chunks (... computed) in S s" of a run's log."""
    import re

    pat = re.compile(r"^([A-Za-z0-9_.-]+): (\d+) chunks \(.*\) in ([0-9.]+) s")
    out = [(m.group(1), int(m.group(2)), float(m.group(3)))
           for m in map(pat.match, Path(path).read_text(errors="replace").splitlines()) if m]
    return sorted(out, key=lambda r: -r[2])


def render_log(rows, path) -> list[str]:
    total = sum(r[2] for r in rows)
    lines = ["", f"## Unprofiled run: compute seconds per study (from `{Path(path).name}`)", "",
             "The chunk computation only (not compilation before the first chunk, not the analysis), as "
             "`stabsim run` prints it; share of the sum over studies.", "",
             "| study | chunks | seconds | share |", "|---|---|---|---|"]
    lines += [f"| {sid} | {n} | {sec:.1f} | {100 * sec / total:.1f} % |" for sid, n, sec in rows]
    lines.append(f"| **all {len(rows)} studies** | | **{total:.1f}** | |")
    return lines


def render(stats: pstats.Stats, times: dict, wall: float, title: str) -> str:
    cats = by_category(stats)
    total = sum(cats.values())
    lines = [f"# Where the suite's time goes ({title})", "",
             f"Generated by `python benchmarks/profile_suite.py` on {time.strftime('%Y-%m-%dT%H:%M:%S%z')}; "
             f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical cores, Python "
             f"{platform.python_version()}.  Wall time {wall:.0f} s; profiled self time {total:.0f} s.  "
             "See the module docstring of `benchmarks/profile_suite.py` for how time is attributed.", "",
             "## By category (cProfile self time; the standard library's and builtins' time charged to "
             "their callers' categories)", "", "| category | seconds | share |", "|---|---|---|"]
    lines += [f"| {k} | {v:.1f} | {100 * v / total:.1f} % |" for k, v in cats.items()]
    rows = sorted(times.items(), key=lambda kv: -(kv[1].get("run", 0) + kv[1].get("analyse", 0)))
    lines += ["", "## By study (wall seconds)", "", "| study | compute (`run_study`) | analysis (`analyse`) | total |",
              "|---|---|---|---|"]
    for sid, t in rows:
        r, a = t.get("run", 0.0), t.get("analyse", 0.0)
        lines.append(f"| {sid} | {r:.1f} | {a:.1f} | {r + a:.1f} |")
    sr = sum(t.get("run", 0.0) for t in times.values())
    sa = sum(t.get("analyse", 0.0) for t in times.values())
    lines += [f"| **all {len(times)} studies** | **{sr:.1f}** | **{sa:.1f}** | **{sr + sa:.1f}** |", "",
              "## Top functions by self time", "", "| function | file | self s | calls |", "|---|---|---|---|"]
    top = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:25]
    for (filename, line, fn), (cc, nc, tt, _ct, _c) in top:
        short = filename.replace(os.sep, "/")
        short = short.split("site-packages/")[-1].split("/work/")[-1]
        lines.append(f"| `{fn}` | {short}:{line} | {tt:.1f} | {nc} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the quick profile (default: full)")
    ap.add_argument("--out", default="out_profile", help="output folder of the suite run")
    ap.add_argument("--md", default=str(HERE / "PROFILE.md"), help="where the Markdown report goes")
    ap.add_argument("--stats", help="render an existing cProfile dump instead of running")
    ap.add_argument("--times", help="with --stats: the per-study times JSON written by a run")
    ap.add_argument("--log", help="also tabulate the per-study compute seconds of this `stabsim run` log")
    args = ap.parse_args(argv)
    profile = "quick" if args.quick else "full"
    if args.stats:
        stats = pstats.Stats(args.stats)
        meta = json.loads(Path(args.times).read_text()) if args.times else {"times": {}, "wall": float("nan"),
                                                                             "profile": profile}
        times, wall, profile = meta["times"], meta["wall"], meta.get("profile", profile)
    else:
        prof = Path(args.out).with_suffix(".prof")
        times, wall = run(profile, args.out, prof)
        Path(args.out).with_suffix(".times.json").write_text(json.dumps({"times": times, "wall": wall,
                                                                         "profile": profile}, indent=1))
        stats = pstats.Stats(str(prof))
    text = render(stats, times, wall, f"{profile} profile")
    if args.log:
        text += "\n".join(render_log(log_times(args.log), args.log)) + "\n"
    Path(args.md).write_text(text, encoding="utf-8")
    print(f"wrote {args.md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
