"""Where the suite's time goes, sampled (issue #17, item 2): every study under py-spy.

    pip install py-spy                      # a benchmark tool only; stabsim does not need it
    stabsim run suite --out out             # first: the kernels compiled and cached
    python benchmarks/profile_sampled.py [--quick] [--studies ID ...] [--keep DIR] [--md benchmarks/PROFILE_SAMPLED.md]
    python benchmarks/profile_sampled.py --samples DIR      # tally samples kept with --keep again

``profile_suite.py`` (cProfile) no longer sees the kernels: the twin kernel runs in a helper
thread that a signal can stop (``stabsim.runtime.signals.call_interruptible``), so cProfile, which follows
one thread, books its time as a lock wait of the main thread.  This script samples instead, from
outside the process: for each study, two processes under ``py-spy record --threads --nonblocking``
(100 samples a second; a thread that sleeps or waits is not sampled; the process is never paused,
so it runs at its usual speed):

1. ``stabsim run ID --no-analyse`` into a fresh folder: the computation;
2. ``stabsim run ID`` again with ``STABSIM_ANALYSE_INLINE=1``: the study is complete, so this is
   its analysis, in the same process.

Each sample (one running thread at one instant) is booked to one category by its innermost Python
frame.  A compiled kernel has no Python frame of its own: its time is booked to the stabsim line
that called it.  So the stabsim categories below are named after where that line is, and hold the
kernels called from there plus that code's own Python (small: the Python-heavy work shows as
numpy, xarray, matplotlib and so on, whose frames are innermost):

* **twin kernel**: ``stabsim/runtime/signals.py`` (the helper thread) and ``stabsim/kernels/twin.py``;
* **stabsim: risk / ERM**, **stabsim: P3 GIGA / regret**, **stabsim: P1 Table 1 baselines**,
  **stabsim: privacy**, **stabsim: data sampling**, **stabsim: other**, by the file;
* **start-up (imports)** for Python's import machinery;
* otherwise the category of ``profile_suite.CATEGORIES`` of the innermost frame that has one
  (numba compilation and loading, matplotlib, xarray and netCDF, numpy, scipy, ...; the standard
  library goes to the nearest caller with a category).

Seconds are samples / rate, summed over threads: where a study's kernel thread and its main thread
both run, both count.  numba's OpenMP worker threads have no Python state and are not sampled, so a
parallel kernel counts once, on the thread that called it (its wall time).  Numbers depend on the
machine and its load; they are measurements, never asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from profile_suite import OTHER, category  # noqa: E402

#: the innermost stabsim frame's file -> its category (first match wins)
STABSIM_FILES = (
    ("twin kernel", ("/stabsim/_signals.py", "/stabsim/kernels/twin.py")),
    ("stabsim: risk / ERM", ("stabsim/risk/", "stabsim/kernels/risk", "stabsim/kernels/allpairs")),
    ("stabsim: P3 GIGA / regret", ("stabsim/kernels/giga", "stabsim/kernels/regret", "stabsim/experiments/p3_giga",
                                   "stabsim/privacy/algorithms/p3_pairwise_giga")),
    ("stabsim: P1 Table 1 baselines", ("stabsim/engine/p1_baselines.py", "stabsim/kernels/baselines")),
    ("stabsim: privacy", ("stabsim/privacy/",)),
    ("stabsim: data sampling", ("stabsim/synthetic", "stabsim/engine/rng.py", "stabsim/datasets")),
    ("stabsim: other", ("stabsim/",)),
)
START_UP = "start-up (imports)"


def _file(frame: str) -> str:
    """The file of a py-spy frame ``function (path:line)``, as ``/path`` (py-spy shortens a
    package's path to ``numba/core/ir.py``, the project's to ``stabsim/engine/twin_runs.py``)."""
    path = frame.rsplit("(", 1)[-1].rstrip(")").rsplit(":", 1)[0]
    return path if path.startswith("/") else "/" + path


def classify(frames: list[str]) -> str:
    """The category of one sample's Python stack (outermost frame first)."""
    if any("importlib._bootstrap" in f for f in frames):
        return START_UP
    for f in reversed(frames):
        path = _file(f)
        if "site-packages" not in path and "/stabsim/" in path:
            for name, keys in STABSIM_FILES:
                if any(k in path for k in keys):
                    return name
        c = category(path)
        if c != OTHER:
            return c
    return OTHER


def tally(raw: Path, rate: float) -> Counter:
    """Seconds per category of one ``py-spy record -f raw`` file."""
    out: Counter = Counter()
    if not raw.exists():
        return out
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        frames = [f for f in stack.split(";")[1:] if f]   # the first entry names the thread
        out[classify(frames)] += int(n) / rate
    return out


def record(cmd: list[str], raw: Path, rate: int, env: dict) -> float:
    """Run ``cmd`` under py-spy; its wall seconds."""
    spy = ["py-spy", "record", "--nonblocking", "--threads", "-r", str(rate), "-f", "raw", "-o", str(raw), "--"]
    t0 = time.perf_counter()
    p = subprocess.run(spy + cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return wall


def suite_ids() -> list[str]:
    from stabsim.study.index import study_index

    return [e["id"] for e in study_index() if e["suite"]]


def profile(ids, quick: bool, rate: int, work: Path) -> None:
    """Record each study's computation and analysis into ``work/ID.compute.txt`` / ``.analyse.txt``."""
    base = [sys.executable, "-m", "stabsim.cli", "run"]
    flags = ["--no-progress", "--out", str(work / "out")] + (["--quick"] if quick else [])
    for sid in ids:
        env = dict(os.environ, STABSIM_NO_WARMUP="1")
        w1 = record(base + [sid, "--no-analyse"] + flags, work / f"{sid}.compute.txt", rate, env)
        env["STABSIM_ANALYSE_INLINE"] = "1"
        w2 = record(base + [sid] + flags, work / f"{sid}.analyse.txt", rate, env)
        print(f"{sid}: compute {w1:.1f} s, analysis {w2:.1f} s (walls of the two processes)", flush=True)


def tallies(ids, rate: int, work: Path) -> dict:
    """Per study: seconds per category of its computation and of its analysis."""
    return {sid: {"compute": tally(work / f"{sid}.compute.txt", rate),
                  "analyse": tally(work / f"{sid}.analyse.txt", rate)} for sid in ids}


def _order(total: Counter) -> list[str]:
    return [k for k, _ in total.most_common()]


def render(rows: dict, quick: bool, rate: int, wall: float | None) -> str:
    """The Markdown report; ``wall`` None: re-tallied from kept samples (no recording time)."""
    both: Counter = Counter()
    comp: Counter = Counter()
    anal: Counter = Counter()
    for r in rows.values():
        comp.update(r["compute"])
        anal.update(r["analyse"])
    both.update(comp)
    both.update(anal)
    tot = sum(both.values())
    profile = "quick" if quick else "full"
    lines = [f"# Where the suite's time goes, sampled ({profile} profile)", "",
             f"Generated by `python benchmarks/profile_sampled.py{' --quick' if quick else ''}` on "
             f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')}; {platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} logical cores, Python {platform.python_version()}; {len(rows)} studies, each "
             f"in two processes (computation, then analysis) under py-spy at {rate} samples/s, warm numba "
             f"cache; {'re-tallied from kept samples' if wall is None else f'{wall:.0f} s in all'}.  See the module docstring for how samples are booked.", "",
             "## By category (thread-seconds sampled, all studies)", "",
             "| category | computation s | analysis s | both s | share |", "|---|---|---|---|---|"]
    for k in _order(both):
        lines.append(f"| {k} | {comp[k]:.1f} | {anal[k]:.1f} | {both[k]:.1f} | {100 * both[k] / tot:.1f} % |")
    lines.append(f"| **all** | **{sum(comp.values()):.1f}** | **{sum(anal.values()):.1f}** | **{tot:.1f}** | |")
    cols = [k for k in _order(comp) if k != START_UP][:6]
    lines += ["", "## Computation by study (thread-seconds sampled; start-up left out)", "",
              "| study | " + " | ".join(cols) + " | rest | sum |", "|---|" + "---|" * (len(cols) + 2)]
    order = sorted(rows, key=lambda s: -sum(v for k, v in rows[s]["compute"].items() if k != START_UP))
    for sid in order:
        c = rows[sid]["compute"]
        s = sum(v for k, v in c.items() if k != START_UP)
        rest = s - sum(c[k] for k in cols)
        lines.append(f"| {sid} | " + " | ".join(f"{c[k]:.1f}" for k in cols) + f" | {rest:.1f} | {s:.1f} |")
    lines += ["", "## Analysis by study, largest 20 (thread-seconds sampled; start-up left out)", "",
              "| study | largest categories | sum |", "|---|---|---|"]
    order = sorted(rows, key=lambda s: -sum(v for k, v in rows[s]["analyse"].items() if k != START_UP))
    for sid in order[:20]:
        a = Counter({k: v for k, v in rows[sid]["analyse"].items() if k != START_UP})
        top = ", ".join(f"{k} {v:.1f}" for k, v in a.most_common(3))
        lines.append(f"| {sid} | {top} | {sum(a.values()):.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the quick profile (default: full)")
    ap.add_argument("--studies", nargs="+", help="study ids (default: every suite study)")
    ap.add_argument("--rate", type=int, default=100, help="samples per second (default 100)")
    ap.add_argument("--keep", help="keep the raw samples and outputs in this folder")
    ap.add_argument("--samples", help="record nothing: tally the raw samples kept in this folder by --keep")
    ap.add_argument("--md", default=str(HERE / "PROFILE_SAMPLED.md"), help="where the Markdown report goes")
    args = ap.parse_args(argv)
    ids = args.studies or suite_ids()
    if args.samples:
        rows = tallies(ids, args.rate, Path(args.samples))
        Path(args.md).write_text(render(rows, args.quick, args.rate, None), encoding="utf-8")
        print(f"wrote {args.md}")
        return 0
    if shutil.which("py-spy") is None:
        print("py-spy is not installed: pip install py-spy (a benchmark tool; stabsim does not need it)",
              file=sys.stderr)
        return 2
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="stabsim_spy_"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    profile(ids, args.quick, args.rate, work)
    rows = tallies(ids, args.rate, work)
    Path(args.md).write_text(render(rows, args.quick, args.rate, time.perf_counter() - t0), encoding="utf-8")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {args.md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
