"""Speed of the twin kernel on P1 Algorithm 1 (AUC hinge), against a naive NumPy loop and a C loop.

Run from the repository root::

    python benchmarks/bench_twin.py            # T = 10^6 (about 1-2 minutes)
    python benchmarks/bench_twin.py --quick    # T = 10^5
    python benchmarks/bench_twin.py --out benchmarks/results.json

Every number is nanoseconds per *twin step* (one SGD step on S plus one on S'), the
minimum over ``--repeat`` interleaved rounds (default 3; in each round every implementation
runs once, so that load drifting over the run hits all alike), excluding numba compile time.
Besides the C loop, ``benchmarks/numba_plain.py`` (the C loop ported line by line to numba)
splits the kernel-vs-C gap into numba's code generation and the kernel's generality.  Nothing is
asserted: the issue's targets are reported as met / not met.  See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _stabsim_root(argv) -> str:
    """``--stabsim DIR`` (a directory holding a ``stabsim`` package, e.g. a scratch copy with a
    kernel change to compare) or the repository root."""
    for i, a in enumerate(argv):
        if a == "--stabsim" and i + 1 < len(argv):
            return str(Path(argv[i + 1]).resolve())
        if a.startswith("--stabsim="):
            return str(Path(a.split("=", 1)[1]).resolve())
    return str(ROOT)


STABSIM_ROOT = _stabsim_root(sys.argv[1:])
sys.path.insert(0, STABSIM_ROOT)  # this checkout (or --stabsim DIR) before any installed copy

import numba  # noqa: E402

import stabsim  # noqa: E402
from stabsim import make_problem, run_twin  # noqa: E402
from stabsim.engine import rng
from stabsim.engine.neighbours import as_neighbour, make_neighbours  # noqa: E402
from stabsim.engine.twin_runs import extend_with_replacements  # noqa: E402

sys.path.insert(0, str(HERE))
from numba_plain import twin_p1_plain  # noqa: E402

C_SOURCE = HERE / "c" / "twin_p1.c"
ALGORITHM = "p1_alg1"
LOSS = "auc_hinge"
PROBLEM = "auc_noisy"      # 10% label noise: the hinge stays active on a good share of the pairs
N = 1000                   # examples in S
ETA = 0.01                 # constant step size
RADIUS = 20.0              # l2-ball radius: never active here (at d = 100, radius 10 is active in ~7% of steps);
                           # the share of active projections is reported
SEED = 0
REPLICATE = 0              # replicate id of the single-replicate runs (and of the C/naive runs)
NEIGHBOUR = "flip"         # S' = S with the label of a random example k flipped
DIMS = (10, 100)

TARGETS = {"naive_over_kernel_d10": 150.0, "kernel_over_c": 1.3, "speedup_2_threads": 1.8}


# ---------------------------------------------------------------------------------------
# machine / load

def machine_info() -> dict:
    cpu = platform.processor() or platform.machine()
    flags = ""
    try:
        with open("/proc/cpuinfo") as fh:
            info = fh.read()
        m = re.search(r"^model name\s*:\s*(.+)$", info, re.M)
        cpu = m.group(1).strip() if m else cpu
        m = re.search(r"^flags\s*:\s*(.+)$", info, re.M)
        flags = m.group(1) if m else ""
    except OSError:
        pass
    simd = [f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f") if f" {f} " in f" {flags} "]
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = None
    gcc = shutil.which("gcc")
    gcc_version = None
    if gcc:
        gcc_version = subprocess.run([gcc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return {
        "cpu_model": cpu, "simd": simd, "logical_cores": os.cpu_count(), "usable_cores": affinity,
        "platform": platform.platform(), "python": platform.python_version(),
        "numpy": np.__version__, "numba": numba.__version__, "stabsim": stabsim.__version__,
        "stabsim_path": str(Path(stabsim.__file__).parent),
        "numba_max_threads": numba.config.NUMBA_NUM_THREADS, "gcc": gcc_version,
    }


def steal_ticks():
    """Cumulative steal time of all CPUs (/proc/stat, clock ticks): time the hypervisor ran something
    else while this VM wanted the CPU; invisible to wall/CPU-time ratios."""
    try:
        with open("/proc/stat") as fh:
            f = fh.readline().split()
        return int(f[8]) if f[0] == "cpu" and len(f) > 8 else None
    except OSError:
        return None


def load_now() -> dict:
    up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip() if shutil.which("uptime") else ""
    try:
        with open("/proc/loadavg") as fh:
            la = [float(x) for x in fh.read().split()[:3]]
    except OSError:
        la = list(os.getloadavg())
    return {"uptime": up, "loadavg_1_5_15": la, "steal_ticks": steal_ticks(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def best_of(fn, repeat: int) -> dict:
    """Minimum wall and CPU (process) time of ``repeat`` calls of fn.

    The minimum is the least disturbed run on a shared machine.  CPU time counts only the
    time this process was on a core, so it is much less inflated than wall time when other
    jobs compete for the cores (it sums over threads: use wall time for thread speed-ups).
    """
    return as_best([timed_call(fn) for _ in range(repeat)])


def timed_call(fn) -> tuple[float, float]:
    """(wall s, CPU s of this process) of one call of fn."""
    c0 = time.process_time()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def as_best(samples) -> dict:
    """Minimum wall and CPU time over (wall, CPU) samples, with the raw samples."""
    walls = [w for w, _ in samples]
    cpus = [c for _, c in samples]
    return {"wall_s": min(walls), "cpu_s": min(cpus), "walls_s": walls, "cpus_s": cpus}


def record(row: dict, name: str, m: dict, steps: int) -> None:
    """Store a measurement as ns per twin step (wall and CPU) plus the raw times."""
    row[f"{name}_ns"] = m["wall_s"] / steps * 1e9
    row[f"{name}_cpu_ns"] = m["cpu_s"] / steps * 1e9
    row[f"{name}_walls_s"] = m["walls_s"]
    row[f"{name}_cpus_s"] = m["cpus_s"]


# ---------------------------------------------------------------------------------------
# the three implementations

def data(d: int):
    X, y = make_problem(PROBLEM, d=d).sample(N, seed=SEED)
    return np.ascontiguousarray(X), np.ascontiguousarray(y)


class KernelTimer:
    """Times the kernel call inside run_twin (wall and CPU), by wrapping the kernel that
    stabsim.engine.twin_runs calls: ``twin_kernel``, or the result of ``get_twin_kernel`` if the package
    (e.g. a --stabsim variant) builds specialised kernels.  run_twin's own Python work grows
    with T (step-size and weight arrays, cumulative sums for the result), so the kernel call
    alone is the fairer number to set against the C loop."""

    def __init__(self):
        import stabsim.engine.twin_runs as st
        self.calls = []
        if hasattr(st, "get_twin_kernel"):
            get = st.get_twin_kernel
            st.get_twin_kernel = lambda *a, **k: self._wrap(get(*a, **k))
        elif hasattr(st, "twin_kernel"):
            st.twin_kernel = self._wrap(st.twin_kernel)
        else:
            self.calls = None  # unknown layout: kernel-only times are not reported

    def _wrap(self, kern):
        def timed(*args, **kwargs):
            c0 = time.process_time()
            t0 = time.perf_counter()
            out = kern(*args, **kwargs)
            self.calls.append((time.perf_counter() - t0, time.process_time() - c0))
            return out
        return timed


def kernel_run(X, y, T, R, constraint, record_outputs=False, specialise=None):
    """The benchmark's run_twin call; ``specialise`` is passed only when given (a --stabsim copy from
    before it existed has no such argument)."""
    extra = {} if specialise is None else {"specialise": specialise}
    return run_twin(X, y, algorithm=ALGORITHM, loss=LOSS, constraint=constraint, eta=ETA, T=T,
                    replicates=R, seed=SEED, neighbour=NEIGHBOUR, record_outputs=record_outputs, **extra)


def neighbour_arrays(X, y):
    """S extended with the replacement row exactly as run_twin builds it for replicate 0."""
    reps = np.array([REPLICATE], dtype=np.int64)
    kidx, xrep, yrep = make_neighbours(as_neighbour(NEIGHBOUR), X[None], y[None], reps, SEED)
    Xext, Yext, krows = extend_with_replacements(X[None], y[None], xrep, yrep)
    return Xext[0], Yext[0], int(kidx[0]), int(krows[0])


def indices(T: int) -> np.ndarray:
    """i_0..i_T of replicate 0: the same counter-based draws as the kernel (stabsim.engine.rng.randint)."""
    u = rng.uniforms(SEED, REPLICATE, rng.STREAM_INDEX, T + 1)
    return np.minimum((u * N).astype(np.int64), N - 1)


def naive_twin(X, y, Xp, yp, idx, eta, T, radius):
    """The twin run as a paper's author would write it: NumPy vector ops per step.

    The index sequence is drawn up front (in one vectorised call, like rng.integers(n, T + 1)),
    so the loop is charged only for the steps themselves.  Returns (||w_T - w'_T||,
    ||out - out'||, sum of losses on S).
    """
    d = X.shape[1]
    w = np.zeros(d); wp = np.zeros(d)
    w2 = w.copy(); w2p = wp.copy()
    acc = np.zeros(d); accp = np.zeros(d)
    wsum = 0.0
    lsum = 0.0
    for t in range(1, T + 1):
        i, j = idx[t], idx[t - 1]
        # run on S
        g = np.zeros(d)
        c = 0.5 * (y[i] - y[j])
        if c != 0.0:
            diff = X[i] - X[j]
            m = c * np.dot(w, diff)
            if m < 1.0:
                g = -c * diff
                lsum += 1.0 - m
        # run on S'
        gp = np.zeros(d)
        c = 0.5 * (yp[i] - yp[j])
        if c != 0.0:
            diff = Xp[i] - Xp[j]
            m = c * np.dot(wp, diff)
            if m < 1.0:
                gp = -c * diff
        wn = w - eta * g
        wnp = wp - eta * gp
        if radius is not None:
            nrm = np.linalg.norm(wn)
            if nrm > radius:
                wn = wn * (radius / nrm)
            nrm = np.linalg.norm(wnp)
            if nrm > radius:
                wnp = wnp * (radius / nrm)
        acc += eta * w2          # output: sum_t eta_t w_{t-2} / sum_t eta_t
        accp += eta * w2p
        wsum += eta
        w2, w2p = w, wp
        w, wp = wn, wnp
    return (float(np.linalg.norm(w - wp)), float(np.linalg.norm((acc - accp) / wsum)), lsum)


class CLoop:
    """benchmarks/c/twin_p1.c compiled into a temporary directory and called through ctypes."""

    def __init__(self, tmpdir: str, flags: list[str], tag: str):
        self.flags = flags
        so = Path(tmpdir) / f"libtwin_p1_{tag}.so"
        cmd = ["gcc", *flags, "-shared", "-fPIC", "-o", str(so), str(C_SOURCE), "-lm"]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        self.cmd = " ".join(cmd)
        lib = ctypes.CDLL(str(so))
        f = lib.twin_p1
        P = ctypes.c_void_p
        i64, u64 = ctypes.c_int64, ctypes.c_uint64
        f.argtypes = [P, P, i64, i64, i64, i64, u64, u64, u64, P, P, i64, ctypes.c_int, ctypes.c_double, P, P, P]
        f.restype = ctypes.c_int
        self.fn = f
        lib.stream_key.argtypes = [u64, u64, u64]
        lib.stream_key.restype = u64
        self.stream_key = lib.stream_key

    def run(self, Xext, Yext, k, krow, T, radius):
        d = Xext.shape[1]
        etas, omegas = step_arrays(T)
        w0 = np.zeros(d)
        out = np.zeros(4 * d)
        stats = np.zeros(6)
        ptr = lambda a: a.ctypes.data  # noqa: E731
        rc = self.fn(ptr(Xext), ptr(Yext), N, d, k, krow, SEED, REPLICATE, rng.STREAM_INDEX,
                     ptr(etas), ptr(omegas), T, int(radius is not None),
                     float(radius if radius is not None else math.inf), ptr(w0), ptr(out), ptr(stats))
        if rc != 0:
            raise MemoryError("twin_p1: out of memory")
        return stats, out


_STEP_ARRAYS = {}


def step_arrays(T: int):
    """eta_t = omega_t = ETA for t = 1..T (index 0 unused), built once per T: the C loop and its
    numba port are timed on the loop alone (run_twin's own array set-up is in "kernel R=1",
    not in "call R=1")."""
    if T not in _STEP_ARRAYS:
        etas = np.full(T + 1, ETA)
        etas[0] = np.nan
        _STEP_ARRAYS[T] = (etas, etas.copy())
    return _STEP_ARRAYS[T]


def plain_run(Xext, Yext, k, krow, T, radius):
    """numba_plain.twin_p1_plain (the C loop ported line by line to numba), same interface as CLoop.run."""
    d = Xext.shape[1]
    etas, omegas = step_arrays(T)
    out = np.zeros(4 * d)
    stats = np.zeros(6)
    twin_p1_plain(Xext, Yext, N, k, krow, rng.key(SEED, REPLICATE, rng.STREAM_INDEX), etas, omegas, T,
                  radius is not None, float(radius if radius is not None else math.inf), np.zeros(d), out, stats)
    return stats, out


def interleaved(impls: dict, rounds: int, ktimer) -> dict:
    """Time every implementation once per round, ``rounds`` times, in turn, so that a change of the
    machine's load hits all of them alike.  impls: name -> callable.  Returns name -> list of
    (wall s, CPU s), plus "kernelcall_R<R>" for the kernel calls that the "kernel_R<R>" runs made."""
    times = {name: [] for name in impls}
    for _ in range(rounds):
        for name, fn in impls.items():
            start = len(ktimer.calls or [])
            times[name].append(timed_call(fn))
            if name.startswith("kernel_R") and ktimer.calls:
                calls = ktimer.calls[start:]
                times.setdefault("kernelcall" + name[len("kernel"):], []).append(
                    (sum(c[0] for c in calls), sum(c[1] for c in calls)))
    return times


def paired_median(a, b) -> float:
    """Median over rounds of wall(a) / wall(b): robust to load that drifts between rounds."""
    return float(np.median([x[0] / y[0] for x, y in zip(a, b)]))


# ---------------------------------------------------------------------------------------

def cname(constraint) -> str:
    return "none" if constraint == "none" else f"l2:{constraint[1]:g}"


def close(a, b, tol=1e-9) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="T = 10^5 instead of 10^6 (and a shorter thread test)")
    ap.add_argument("--out", default=None, help="write the results as JSON to this file")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per measurement; the minimum is reported")
    ap.add_argument("--stabsim", default=None, metavar="DIR",
                    help="benchmark the stabsim package in DIR instead of this checkout (e.g. a scratch copy)")
    ap.add_argument("--radius", type=float, default=RADIUS, help="l2-ball radius of the constrained case")
    ap.add_argument("--thread-repeat", type=int, default=5,
                    help="alternating 1-/2-thread runs for the speed-up (the minimum of each is used)")
    ap.add_argument("--naive-steps", type=int, default=20_000, help="steps timed for the naive NumPy loop")
    args = ap.parse_args(argv)
    T = 10 ** 5 if args.quick else 10 ** 6
    T_threads, R_threads = (10 ** 3, 1000) if args.quick else (10 ** 4, 1000)
    Tn = min(args.naive_steps, T)
    rep = max(1, args.repeat)
    rep_threads = max(1, args.thread_repeat)
    constraints = (("l2", args.radius), "none")

    info = machine_info()
    load_before = load_now()
    print(f"stabsim {info['stabsim']} from {Path(stabsim.__file__).parent}  numba {info['numba']}  numpy {info['numpy']}  python {info['python']}")
    print(f"CPU: {info['cpu_model']}  ({info['logical_cores']} logical cores, SIMD {', '.join(info['simd'])})")
    print(f"load: {load_before['uptime']}")
    print(f"{ALGORITHM}, {LOSS}, {PROBLEM} n={N}, eta={ETA}, neighbour={NEIGHBOUR}; T={T:,}; "
          f"min of {rep} interleaved rounds; ns per twin step (one step on S + one on S')\n")

    tmp = tempfile.TemporaryDirectory(prefix="stabsim_bench_")
    cloops = {}
    c_skip = None
    if shutil.which("gcc") is None:
        c_skip = "gcc not found: the C loop is skipped"
        print(c_skip)
    else:
        try:
            base = ["-O3", "-march=native"]
            cloops["c"] = CLoop(tmp.name, base + ["-ffp-contract=off"], "nofma")
            cloops["c_fma"] = CLoop(tmp.name, base, "default")
            key_c = int(cloops["c"].stream_key(SEED, REPLICATE, rng.STREAM_INDEX))
            if key_c != int(rng.key(SEED, REPLICATE, rng.STREAM_INDEX)):
                raise RuntimeError("the C stream_key differs from stabsim.engine.rng.key")
        except (subprocess.CalledProcessError, OSError, RuntimeError) as exc:
            c_skip = f"C loop skipped: {getattr(exc, 'stderr', '') or exc}"
            cloops = {}
            print(c_skip)

    numba.set_num_threads(1)
    ktimer = KernelTimer()
    rows = []
    for d in DIMS:
        X, y = data(d)
        Xext, Yext, k, krow = neighbour_arrays(X, y)
        Xp = Xext[:N].copy(); yp = Yext[:N].copy()
        Xp[k] = Xext[krow]; yp[k] = Yext[krow]
        idx = indices(Tn)
        for cons in constraints:
            radius = None if cons == "none" else cons[1]
            row = {"d": d, "constraint": cname(cons), "T": T}
            # --- warm up (compile or load from the on-disk cache) every implementation
            kernel_run(X, y, 100, 1, cons)
            plain_run(Xext, Yext, k, krow, 100, radius)
            row["run_twin_overhead_s"] = best_of(lambda: kernel_run(X, y, 1, 1, cons), rep)["wall_s"]
            steps = {"kernel_R1": T, "kernel_R8": 8 * T, "kernelcall_R1": T, "kernelcall_R8": 8 * T,
                     "naive": Tn, "plain": T, **{tag: T for tag in cloops}}
            impls = {"kernel_R1": lambda: kernel_run(X, y, T, 1, cons),
                     "kernel_R8": lambda: kernel_run(X, y, T, 8, cons),
                     "naive": lambda: naive_twin(X, y, Xp, yp, idx, ETA, Tn, radius),
                     "plain": lambda: plain_run(Xext, Yext, k, krow, T, radius),
                     **{tag: (lambda cl=cl: cl.run(Xext, Yext, k, krow, T, radius)) for tag, cl in cloops.items()}}
            times = interleaved(impls, rep, ktimer)
            for name, samples in times.items():
                record(row, name, as_best(samples), steps[name])
            row["naive_steps"] = Tn
            # --- results of the runs, checked against each other
            ds = kernel_run(X, y, T, 1, cons)
            kres = (float(ds.dist_iterate[0, -1]), float(ds.dist_output[0, -1]), float(ds.loss_path[0, -1]))
            row["kernel_final"] = dict(zip(("dist_iterate", "dist_output", "loss_path"), kres))
            nres = naive_twin(X, y, Xp, yp, idx, ETA, Tn, radius)
            dsn = kernel_run(X, y, Tn, 1, cons)
            kn = (float(dsn.dist_iterate[0, -1]), float(dsn.dist_output[0, -1]), float(dsn.loss_path[0, -1]))
            row["naive_matches_kernel"] = all(close(a, b) for a, b in zip(nres, kn))
            row["naive_final"] = dict(zip(("dist_iterate", "dist_output", "loss_path"), nres))
            for tag in ("plain", *cloops):   # the loops that report the same statistics as the kernel
                stats, _ = impls[tag]()
                cres = (stats[0], stats[1], stats[2])
                row[f"{tag}_final"] = dict(zip(("dist_iterate", "dist_output", "loss_path"), map(float, cres)))
                row[f"{tag}_max_abs_diff"] = max(abs(a - b) for a, b in zip(cres, kres))
                row[f"{tag}_matches_kernel"] = all(close(a, b) for a, b in zip(cres, kres))
                row[f"{tag}_identical_to_kernel"] = all(a == b for a, b in zip(cres, kres))
                if tag == "plain":
                    row["projection_active_share"] = stats[4] / (2 * T) if radius is not None else 0.0
                    row["hinge_active_share"] = stats[5] / T
            row["plain_over_c"] = row["plain_ns"] / row["c_ns"] if "c_ns" in row else None
            row["kernelcall_over_plain"] = (row["kernelcall_R1_ns"] / row["plain_ns"]
                                            if "kernelcall_R1_ns" in row else None)
            if "c" in times:
                row["kernel_over_c_paired_median"] = paired_median(times["kernel_R1"], times["c"])
                if "kernelcall_R1" in times:
                    row["kernelcall_over_c_paired_median"] = paired_median(times["kernelcall_R1"], times["c"])
            row["naive_over_kernel"] = row["naive_ns"] / row["kernel_R1_ns"]
            row["naive_over_kernel_cpu"] = row["naive_cpu_ns"] / row["kernel_R1_cpu_ns"]
            if "c_ns" in row:
                row["kernel_over_c"] = row["kernel_R1_ns"] / row["c_ns"]
                row["kernel_over_c_cpu"] = row["kernel_R1_cpu_ns"] / row["c_cpu_ns"]
                if "kernelcall_R1_ns" in row:
                    row["kernelcall_over_c"] = row["kernelcall_R1_ns"] / row["c_ns"]
                    row["kernelcall_over_c_cpu"] = row["kernelcall_R1_cpu_ns"] / row["c_cpu_ns"]
            rows.append(row)
            print(f"  d={d:<3} {row['constraint']:<6} kernel {row['kernel_R1_ns']:7.1f} / {row['kernel_R8_ns']:7.1f} ns"
                  f"  naive {row['naive_ns']:9.0f} ns" + (f"  C {row['c_ns']:6.1f} ns" if "c_ns" in row else ""),
                  flush=True)

    # --- threads: 1000 replicates, shorter T
    X, y = data(10)
    cons = constraints[0]
    thr = {"d": 10, "constraint": cname(cons), "T": T_threads, "R": R_threads}
    counts = [nt for nt in (1, 2) if nt <= numba.config.NUMBA_NUM_THREADS]
    for nt in counts:  # warm up (the thread pool starts on first use)
        numba.set_num_threads(nt)
        kernel_run(X, y, 10, 4, cons)
    # 1- and 2-thread runs alternate, so that a change of the machine load hits both alike
    runs = {nt: {"walls_s": [], "cpus_s": []} for nt in counts}
    for _ in range(rep_threads):
        for nt in counts:
            numba.set_num_threads(nt)
            m = best_of(lambda: kernel_run(X, y, T_threads, R_threads, cons), 1)
            runs[nt]["walls_s"] += m["walls_s"]
            runs[nt]["cpus_s"] += m["cpus_s"]
    for nt in (1, 2):
        if nt not in runs:
            thr[f"threads{nt}_s"] = None
            continue
        walls, cpus = runs[nt]["walls_s"], runs[nt]["cpus_s"]
        ibest = int(np.argmin(walls))
        thr[f"threads{nt}_s"] = walls[ibest]
        thr[f"threads{nt}_walls_s"] = walls
        thr[f"threads{nt}_cpus_s"] = cpus
        thr[f"threads{nt}_ns_per_twin_step"] = walls[ibest] / (T_threads * R_threads) * 1e9
        # CPU seconds per wall second of the fastest run: ~nt when the threads really ran in parallel
        thr[f"threads{nt}_cores_used"] = cpus[ibest] / walls[ibest]
    numba.set_num_threads(1)
    thr["speedup_2_threads"] = (thr["threads1_s"] / thr["threads2_s"]) if thr.get("threads2_s") else None
    thr["threading_layer"] = numba.threading_layer()
    load_after = load_now()

    # --- table
    for label, sfx in (("wall clock", ""), ("CPU time of the process", "_cpu")):
        print(f"\nns per twin step, {label} (min of {rep} interleaved rounds)")
        hdr = (f"{'d':>4} {'constraint':>10} {'kernel R=1':>11} {'kernel R=8':>11} {'call R=1':>9} "
               f"{'naive NumPy':>12} {'C':>8} {'C (FMA)':>8} {'numba port':>11} {'naive/kern':>11} {'kern/C':>7} "
               f"{'call/C':>7} {'port/C':>7} {'same bits':>10}")
        print(hdr)
        print("-" * len(hdr))
        for r in rows:
            def cell(key, width, fmt):
                return f"{r[key]:{width}{fmt}}" if r.get(key) is not None else f"{'-':>{width}}"
            same = all(r.get(f"{t}_identical_to_kernel", True) for t in ("c", "plain"))
            pc = r["plain" + sfx + "_ns"] / r["c" + sfx + "_ns"] if "c_ns" in r else None
            print(f"{r['d']:>4} {r['constraint']:>10} {cell('kernel_R1' + sfx + '_ns', 11, '.1f')} "
                  f"{cell('kernel_R8' + sfx + '_ns', 11, '.1f')} {cell('kernelcall_R1' + sfx + '_ns', 9, '.1f')} "
                  f"{cell('naive' + sfx + '_ns', 12, '.0f')} {cell('c' + sfx + '_ns', 8, '.1f')} "
                  f"{cell('c_fma' + sfx + '_ns', 8, '.1f')} {cell('plain' + sfx + '_ns', 11, '.1f')} "
                  f"{r['naive_over_kernel' + sfx]:10.0f}x "
                  f"{cell('kernel_over_c' + sfx, 7, '.2f')} {cell('kernelcall_over_c' + sfx, 7, '.2f')} "
                  f"{pc if pc is None else format(pc, '7.2f'):>7} {'yes' if same else 'NO':>10}")
    print("\nmedian over rounds of the per-round ratio (robust to load that drifts between rounds):")
    for r in rows:
        if "kernel_over_c_paired_median" in r:
            print(f"  d={r['d']:<3} {r['constraint']:<6} kernel/C {r['kernel_over_c_paired_median']:.2f}"
                  f"  call/C {r.get('kernelcall_over_c_paired_median', float('nan')):.2f}")
    print("  numba port = benchmarks/numba_plain.py, the C loop ported line by line: port/C is numba's code "
          "generation, call/port the cost of the kernel's generality")
    print(f"\nthreads: R={R_threads}, T={T_threads:,}, d=10, {thr['constraint']}: "
          f"1 thread {thr['threads1_s']:.3f} s, 2 threads "
          + (f"{thr['threads2_s']:.3f} s -> speed-up {thr['speedup_2_threads']:.2f}x" if thr.get("threads2_s")
             else "n/a (numba has 1 thread)") + f"  [{thr['threading_layer']}]")
    if thr.get("threads2_s"):
        print(f"  cores actually obtained by the 2-thread run (CPU s / wall s): {thr['threads2_cores_used']:.2f}"
              + ("  <- the machine is busy: the speed-up is limited by the other jobs, not by the kernel"
                 if thr["threads2_cores_used"] < 1.7 else ""))
    for r in rows:
        if "c_matches_kernel" in r:
            print(f"C loop vs kernel, d={r['d']} {r['constraint']}: final ||w_T - w'_T|| "
                  f"C {r['c_final']['dist_iterate']:.15g} kernel {r['kernel_final']['dist_iterate']:.15g} -> "
                  f"{'MATCH' if r['c_matches_kernel'] else 'MISMATCH'} (max |diff| {r['c_max_abs_diff']:.2e}; "
                  f"FMA build {'matches' if r['c_fma_matches_kernel'] else 'differs'}, {r['c_fma_max_abs_diff']:.1e}); "
                  f"projection active {100 * r['projection_active_share']:.2f}% of projections, "
                  f"hinge active {100 * r['hinge_active_share']:.0f}% of steps")
    print("naive loop matches kernel (first %d steps, all cases): %s"
          % (Tn, all(r["naive_matches_kernel"] for r in rows)))
    if c_skip:
        print(c_skip)

    d10 = [r for r in rows if r["d"] == 10]
    verdict = {
        "naive_over_kernel_d10": min(r["naive_over_kernel"] for r in d10),
        "kernel_over_c": max((r["kernel_over_c"] for r in rows if "kernel_over_c" in r), default=None),
        "speedup_2_threads": thr["speedup_2_threads"],
        "naive_over_kernel_d10_cpu": min(r["naive_over_kernel_cpu"] for r in d10),
        "kernel_over_c_cpu": max((r["kernel_over_c_cpu"] for r in rows if "kernel_over_c_cpu" in r), default=None),
        "kernelcall_over_c": max((r["kernelcall_over_c"] for r in rows if "kernelcall_over_c" in r), default=None),
        "kernel_over_c_paired_median": max((r["kernel_over_c_paired_median"] for r in rows
                                            if "kernel_over_c_paired_median" in r), default=None),
    }
    met = {
        "naive_over_kernel_d10": verdict["naive_over_kernel_d10"] >= TARGETS["naive_over_kernel_d10"],
        "kernel_over_c": None if verdict["kernel_over_c"] is None else verdict["kernel_over_c"] <= TARGETS["kernel_over_c"],
        "kernelcall_over_c": None if verdict["kernelcall_over_c"] is None
        else verdict["kernelcall_over_c"] <= TARGETS["kernel_over_c"],
        "speedup_2_threads": None if verdict["speedup_2_threads"] is None
        else verdict["speedup_2_threads"] >= TARGETS["speedup_2_threads"],
    }
    print("\ntargets (reported, not asserted):")
    print(f"  kernel >= {TARGETS['naive_over_kernel_d10']:.0f}x faster than naive at d=10: "
          f"{verdict['naive_over_kernel_d10']:.0f}x (CPU time: {verdict['naive_over_kernel_d10_cpu']:.0f}x) -> "
          f"{'met' if met['naive_over_kernel_d10'] else 'NOT met'}")
    if verdict["kernel_over_c"] is not None:
        print(f"  kernel within {TARGETS['kernel_over_c']}x of C (worst case over d and constraint):")
        if verdict["kernelcall_over_c"] is not None:
            print(f"    the kernel call: {verdict['kernelcall_over_c']:.2f}x -> "
                  f"{'met' if met['kernelcall_over_c'] else 'NOT met'}")
        print(f"    run_twin with R=1, including its Python set-up: {verdict['kernel_over_c']:.2f}x "
              f"(CPU time {verdict['kernel_over_c_cpu']:.2f}x; median of per-round ratios "
              f"{verdict['kernel_over_c_paired_median']:.2f}x) -> {'met' if met['kernel_over_c'] else 'NOT met'}")
    if verdict["speedup_2_threads"] is not None:
        print(f"  2-thread speed-up >= {TARGETS['speedup_2_threads']}x: {verdict['speedup_2_threads']:.2f}x -> "
              f"{'met' if met['speedup_2_threads'] else 'NOT met'}")
    print(f"load after: {load_after['uptime']}")

    result = {
        "benchmark": "bench_twin", "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "config": {"algorithm": ALGORITHM, "loss": LOSS, "problem": PROBLEM, "n": N, "eta": ETA,
                   "radius": args.radius, "seed": SEED, "neighbour": NEIGHBOUR, "T": T, "repeat": rep,
                   "naive_steps": Tn, "threads_T": T_threads, "threads_R": R_threads, "thread_repeat": rep_threads, "quick": args.quick,
                   "unit": "ns per twin step (one step on S and one on S'), minimum over interleaved rounds"},
        "machine": info, "load_before": load_before, "load_after": load_after,
        "c_build": {tag: cl.cmd.replace(tmp.name, "$TMP") for tag, cl in cloops.items()} or c_skip,
        "rows": rows, "threads": thr, "targets": TARGETS, "achieved": verdict, "target_met": met,
    }
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2, default=float) + "\n")
        print(f"wrote {out}")
    tmp.cleanup()
    return result


if __name__ == "__main__":
    main()
