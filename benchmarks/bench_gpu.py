"""The GPU backend against the CPU kernel and a JAX comparator: ns per twin step (issue #22).

Workloads (bench_twin's, on one data set: n = 1000, d = 10, flip neighbour, eta = 0.01, l2 ball of
radius 10, T = 2 * 10^4, only the last step recorded):

``p1_alg1``   P1 Alg. 1, AUC hinge (FAST_PREVIOUS)      ``sgd_pair``  SGD_pair, AUC hinge (FAST_PAIR)
``p4_alg1``   P4 Alg. 1, logistic, sigma = 1 (FAST_POINT, one Gaussian per coordinate and step)
``p2_alg1``   P2 Alg. 1, AUC hinge, full batch, sigma = 1 (GENERAL; n = 200, T = 200: n log n per step)

For each: ``run_twin(backend="cuda")`` at each R of ``--replicates``; the CPU kernel at
``--cpu-replicates`` replicates on 1 thread and on all threads; JAX (``jax_twin_gpu.py``, p1_alg1 and
sgd_pair, with the interpreter of ``--jax-python``) at each R of ``--jax-replicates``.
``kernel`` = the kernel call alone (the GPU: copies to and from the device included), per
replicate-step; ``run_twin`` = the whole call (neighbours, arrays, Dataset).  Agreement: at
``--check-replicates`` replicates, the GPU's recorded numbers against the CPU's (max relative
difference; the replaced indices must be identical) and JAX's final distances against stabsim's.

Writes ``--out`` (JSON) and the GPU section of ``--results`` (benchmarks/RESULTS.md, between the
``<!-- gpu -->`` markers; the rest of the file is left as it is).  ``--smoke``: tiny sizes, to
check the script in numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) on a machine with no GPU;
its timings mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numba  # noqa: E402

import stabsim.kernels.twin_cuda as twin_cuda  # noqa: E402
import stabsim.engine.twin_runs as st  # noqa: E402
from stabsim.engine import rng  # noqa: E402
from stabsim.engine.backend import device_description  # noqa: E402
from stabsim.engine.neighbours import as_neighbour, make_neighbours  # noqa: E402

WORKLOADS = {
    "p1_alg1": dict(algorithm="p1_alg1", loss="auc_hinge", n=1000, T=20_000, sigma=0.0),
    "sgd_pair": dict(algorithm="sgd_pair", loss="auc_hinge", n=1000, T=20_000, sigma=0.0),
    "p4_alg1": dict(algorithm="p4_alg1", loss="point_logistic", n=1000, T=20_000, sigma=1.0),
    "p2_alg1": dict(algorithm="p2_alg1", loss="auc_hinge", n=200, T=200, sigma=1.0),
}
JAX_ALGS = ("p1_alg1", "sgd_pair")
D, ETA, RADIUS, SEED = 10, 0.01, 10.0, 0
MARK_BEGIN, MARK_END = "<!-- gpu -->", "<!-- /gpu -->"
TARGETS = {"gpu_over_cpu_all_threads": 50.0, "gpu_over_jax": 8.0}


def dataset(n: int, d: int = D):
    g = np.random.default_rng(1)
    X = g.standard_normal((n, d))
    y = np.where(X @ np.linspace(1, -1, d) + 0.5 * g.standard_normal(n) > 0, 1.0, -1.0)
    y[0], y[1] = 1.0, -1.0
    return X, y


class KernelTimer:
    """Times the kernel calls inside run_twin (CPU: twin_kernel; GPU: twin_kernel_cuda)."""

    def __init__(self):
        self.seconds = 0.0

    def wrap(self, fn):
        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.seconds += time.perf_counter() - t0
        return timed


def run(name: str, R: int, backend: str, T: int | None = None):
    """(Dataset, kernel seconds, run_twin seconds) for one workload."""
    w = WORKLOADS[name]
    T = w["T"] if T is None else T
    X, y = dataset(w["n"])
    timer = KernelTimer()
    cpu_kernel, gpu_kernel = st.twin_kernel, twin_cuda.twin_kernel_cuda
    st.twin_kernel, twin_cuda.twin_kernel_cuda = timer.wrap(cpu_kernel), timer.wrap(gpu_kernel)
    try:
        t0 = time.perf_counter()
        ds = st.run_twin(X, y, algorithm=w["algorithm"], loss=w["loss"], constraint=("l2", RADIUS), eta=ETA, T=T,
                         replicates=R, seed=SEED, neighbour="flip", checkpoints=[T], sigma=w["sigma"],
                         progress=False, backend=backend)
        wall = time.perf_counter() - t0
    finally:
        st.twin_kernel, twin_cuda.twin_kernel_cuda = cpu_kernel, gpu_kernel
    return ds, timer.seconds, wall


def best(name, R, backend, repeat, T=None) -> dict:
    t0 = time.perf_counter()
    run(name, min(R, 64), backend, T=T)   # compile (or load) first
    first = time.perf_counter() - t0
    k_best, w_best, ds = np.inf, np.inf, None
    for _ in range(repeat):
        ds, k, wall = run(name, R, backend, T=T)
        k_best, w_best = min(k_best, k), min(w_best, wall)
    T = WORKLOADS[name]["T"] if T is None else T
    return {"R": R, "kernel_ns": k_best / (R * T) * 1e9, "run_twin_ns": w_best / (R * T) * 1e9,
            "kernel_s": k_best, "run_twin_s": w_best, "first_call_s": first}


def agreement(name, R, T=None) -> dict:
    cpu, _, _ = run(name, R, "cpu", T=T)
    gpu, _, _ = run(name, R, "cuda", T=T)
    out = {"indices_identical": bool(np.array_equal(cpu["k"].values, gpu["k"].values))}
    for v in ("dist_iterate", "dist_output", "loss_path"):
        a, b = cpu[v].values, gpu[v].values
        out[v] = float(np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-300)))
    return out


def jax_run(name, R, jax_python, repeat, T=None) -> dict:
    w = WORKLOADS[name]
    T = w["T"] if T is None else T
    X, y = dataset(w["n"])
    reps = np.arange(R, dtype=np.int64)
    k, xrep, yrep = make_neighbours(as_neighbour("flip"), X[None], y[None], reps, SEED)
    keys = np.array([rng.key(SEED, int(r), rng.STREAM_INDEX) for r in reps], dtype=np.uint64)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "in.npz")
        np.savez(path, X=X, y=y, k=k, xrep=xrep, yrep=yrep, keys=keys, alg=name, eta=ETA, radius=RADIUS, T=T,
                 repeat=repeat)
        res = subprocess.run([jax_python, str(HERE / "jax_twin_gpu.py"), path], capture_output=True, text=True,
                             timeout=3600)
    if res.returncode != 0:
        return {"R": R, "error": res.stderr.strip().splitlines()[-1:]}
    out = json.loads(res.stdout.strip().splitlines()[-1])
    ref = st.run_twin(X, y, algorithm=w["algorithm"], loss=w["loss"], constraint=("l2", RADIUS), eta=ETA, T=T,
                      replicates=min(R, 256), seed=SEED, neighbour="flip", checkpoints=[T], progress=False)
    a = ref["dist_iterate"].values[:, -1]
    b = np.asarray(out.pop("dist_iterate"))[: a.size]
    out.update(R=R, ns=out["wall_s"] / (R * T) * 1e9,
               max_rel_diff_to_stabsim=float(np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-300))))
    return out


def cpu_rows(name, R, repeat, T=None) -> dict:
    nmax = numba.config.NUMBA_NUM_THREADS
    out = {}
    for threads in sorted({1, nmax}):
        numba.set_num_threads(threads)
        out[f"threads_{threads}"] = best(name, R, "cpu", repeat, T=T)
    numba.set_num_threads(nmax)
    return out


def markdown(res: dict) -> str:
    L = [MARK_BEGIN, "## GPU backend (issue #22)", "",
         f"Generated by `python benchmarks/bench_gpu.py` on {res['date']}.  **Device:** {res['device']}; "
         f"CPU: {res['cpu']} ({res['cores']} cores); numba {res['numba']}.  ns per replicate-step (one twin step "
         "= a step on S and one on S'); `kernel` = the kernel call (host-device copies included), `run_twin` = the "
         "whole call.  GPU rows: the " + res.get("build", "default") + " build of the CUDA kernel (`twin_cuda.SPECIALIZE`).", ""]
    L += ["| workload | backend | R | kernel ns | run_twin ns |", "|---|---|---|---|---|"]
    for name, r in res["workloads"].items():
        for row in r["gpu"]:
            L.append(f"| {name} | cuda | {row['R']:,} | {row['kernel_ns']:.4f} | {row['run_twin_ns']:.4f} |")
        for key, row in r["cpu"].items():
            L.append(f"| {name} | cpu, {key.split('_')[1]} thr | {row['R']:,} | {row['kernel_ns']:.3f} | "
                     f"{row['run_twin_ns']:.3f} |")
        for row in r.get("jax", []):
            if "ns" in row:
                L.append(f"| {name} | JAX ({row['device']}) | {row['R']:,} | {row['ns']:.4f} | - |")
    L += ["", "Agreement with the CPU kernel (max relative difference over replicates; replaced indices identical):", ""]
    for name, r in res["workloads"].items():
        a = r["agreement"]
        L.append(f"- {name}: indices identical {a['indices_identical']}; dist_iterate {a['dist_iterate']:.1e}, "
                 f"dist_output {a['dist_output']:.1e}, loss_path {a['loss_path']:.1e}")
    if res.get("tune"):
        L += ["", "Knobs of the CUDA kernel, P1 Alg. 1 (`--tune`; kernel ns per replicate-step):", "",
              "| specialised | per-thread iterates | max registers | threads per block | R | kernel ns | registers used "
              "| first call s (compile) |",
              "|---|---|---|---|---|---|---|---|"]
        for row in res["tune"]:
            L.append(f"| {'yes' if row.get('specialized') else 'no'} | {'yes' if row.get('local_max_p') else 'no'} | "
                     f"{row['max_registers'] or 'ptxas'} | "
                     f"{row['threads_per_block']} | {row['R']:,} | {row['kernel_ns']:.4f} | {row['registers']} | "
                     f"{row.get('first_call_s', float('nan')):.1f} |")
    L += ["", "Targets (P1 Alg. 1, d = 10, R >= 65,536):", ""]
    for t in res["targets"]:
        L.append(f"- {t}")
    L.append(MARK_END)
    return "\n".join(L) + "\n"


def targets(res: dict) -> list[str]:
    r = res["workloads"].get("p1_alg1")
    if not r:
        return []
    big = [row for row in r["gpu"] if row["R"] >= 65536] or r["gpu"]
    g = min(row["kernel_ns"] for row in big)
    cpu_all = r["cpu"][max(r["cpu"], key=lambda k: int(k.split("_")[1]))]["kernel_ns"]
    out = [f"GPU / CPU all threads >= {TARGETS['gpu_over_cpu_all_threads']:.0f}x: {cpu_all / g:.1f}x -> "
           f"{'met' if cpu_all / g >= TARGETS['gpu_over_cpu_all_threads'] else 'not met'}"]
    jx = [row["ns"] for row in r.get("jax", []) if "ns" in row and row["R"] >= 65536]
    if jx:
        ratio = min(jx) / g
        out.append(f"GPU / JAX >= {TARGETS['gpu_over_jax']:.0f}x: {ratio:.1f}x -> "
                   f"{'met' if ratio >= TARGETS['gpu_over_jax'] else 'not met'}")
    else:
        out.append("GPU / JAX: not measured (no --jax-python)")
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicates", type=int, nargs="+", default=[4096, 65536, 262144, 1048576])
    ap.add_argument("--cpu-replicates", type=int, default=256)
    ap.add_argument("--jax-replicates", type=int, nargs="+", default=[65536])
    ap.add_argument("--check-replicates", type=int, default=4096)
    ap.add_argument("--jax-python", default=None, help="a Python with jax (GPU build) for the comparator")
    ap.add_argument("--workloads", nargs="*", default=list(WORKLOADS), choices=list(WORKLOADS),
                    help="(none: only --tune)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(HERE / "results_gpu.json"))
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"), help="markdown file whose GPU section is replaced")
    ap.add_argument("--tune", type=int, default=0, metavar="R",
                    help="also time P1 Alg. 1 at R replicates for the rows of TUNE_ROWS (specialised build, "
                         "per-thread iterates, register cap, threads per block), before the workloads")
    ap.add_argument("--tune-rows", type=int, default=len(TUNE_ROWS), metavar="K",
                    help="only the first K rows of TUNE_ROWS")
    ap.add_argument("--build", choices=("specialised", "general", "default"), default="specialised",
                    help="the CUDA kernel build of the workload rows: 'specialised' (SPECIALIZE = True, the tuned "
                         "build), 'general' (False) or 'default' (what a call gets: twin_cuda.specialised_build)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (numba's CUDA simulator); writes nothing "
                    "unless --out / --results are given explicitly")
    args = ap.parse_args(argv)
    T = None
    if args.smoke:
        args.replicates, args.cpu_replicates, args.jax_replicates, args.check_replicates = [8], 4, [8], 8
        args.repeat, T = 1, 20
        args.tune = 8 if args.tune else 0
    res = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "device": device_description(),
           "cpu": os.uname().machine, "cores": os.cpu_count(), "numba": numba.__version__, "workloads": {},
           "build": args.build}
    given = argv or sys.argv

    def save():   # after every workload: a run stopped by a time limit keeps what it measured
        res["targets"] = targets(res)
        if not args.smoke or "--out" in given:
            Path(args.out).write_text(json.dumps(res, indent=2, default=float) + "\n")
        if not args.smoke or "--results" in given:
            write_section(Path(args.results), markdown(res))

    if args.tune:
        res["tune"] = []
        # (the simulator has no registers or blocks to tune: the smoke run builds each kernel once)
        for spec, local, maxreg, tpb in TUNE_ROWS[:3 if args.smoke else args.tune_rows]:
            row = tune(args.tune, maxreg, tpb, args.repeat, T=T, specialize=spec, local_max_p=local)
            res["tune"].append(row)
            print("tune", json.dumps(row, default=float), flush=True)
            save()
    saved = twin_cuda.SPECIALIZE
    twin_cuda.SPECIALIZE = {"specialised": True, "general": False, "default": None}[args.build]
    try:
        for name in args.workloads:
            workload(name, args, res, T, save)
    finally:
        twin_cuda.SPECIALIZE = saved
    save()
    print("\n".join(res["targets"]))
    return res


def workload(name, args, res, T, save) -> None:
    """The rows of one workload (GPU at each R, CPU, agreement, JAX), saved."""
    big = [R for R in args.replicates if name != "p2_alg1" or R <= 65536]
    r = {"gpu": [best(name, R, "cuda", args.repeat, T=T) for R in big],
         "cpu": cpu_rows(name, args.cpu_replicates, args.repeat, T=T),
         "agreement": agreement(name, args.check_replicates, T=T)}
    if args.jax_python and name in JAX_ALGS:
        r["jax"] = [jax_run(name, R, args.jax_python, args.repeat, T=T) for R in args.jax_replicates]
    res["workloads"][name] = r
    print(name, json.dumps(r, default=float), flush=True)
    save()


#: (specialised build, LOCAL_MAX_P: per-thread iterates up to that p, register cap, threads per
#: block), the most telling first (the section is saved after each row, so a run cut short keeps
#: them).  The first row is the general build, the kernel before specialised builds existed.
TUNE_ROWS = [(False, 0, None, 128), (True, 0, None, 128), (True, 32, None, 128), (True, 32, None, 64),
             (True, 32, 168, 128), (True, 32, 128, 128), (True, 0, 96, 128), (True, 32, None, 256)]


def tune(R: int, maxreg, tpb: int, repeat: int, T=None, specialize=False, local_max_p=0) -> dict:
    """P1 Alg. 1 on the GPU at R replicates with a register cap, a block size, with or without
    the specialised build and its per-thread iterates (the knobs of
    ``stabsim.kernels.twin_cuda``); restores the defaults afterwards."""
    knobs = ("MAX_REGISTERS", "THREADS_PER_BLOCK", "SPECIALIZE", "LOCAL_MAX_P")
    saved = [getattr(twin_cuda, k) for k in knobs]
    build = twin_cuda.cuda_kernel
    built = []
    for k, v in zip(knobs, (maxreg, tpb, specialize, local_max_p)):
        setattr(twin_cuda, k, v)
    twin_cuda.cuda_kernel = lambda kind, spec=None: built.append(build(kind, spec)) or built[-1]
    build.cache_clear()
    try:
        row = best("p1_alg1", R, "cuda", repeat, T=T)
        try:   # one compiled signature here; numba-cuda answers {signature: registers}
            regs = built[-1].get_regs_per_thread()
            regs = max(regs.values()) if isinstance(regs, dict) else regs
        except Exception:   # the simulator has no registers
            regs = "-"
    finally:
        for k, v in zip(knobs, saved):
            setattr(twin_cuda, k, v)
        twin_cuda.cuda_kernel = build
        build.cache_clear()
    row.update(specialized=specialize, local_max_p=local_max_p, max_registers=maxreg, threads_per_block=tpb,
               registers=str(regs))
    return row


def write_section(path: Path, section: str) -> None:
    """Replace the GPU section of ``path`` (between the markers), or append it."""
    text = path.read_text() if path.exists() else ""
    if MARK_BEGIN in text and MARK_END in text:
        a, b = text.index(MARK_BEGIN), text.index(MARK_END) + len(MARK_END)
        text = text[:a] + section.rstrip("\n") + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


if __name__ == "__main__":
    main()
