"""A hand-written numba-cuda kernel of P1 Algorithm 1's twin step: the yardstick for the generic
CUDA kernel (issue #22).

The issue measured such a kernel (one thread per replicate, the same SplitMix64 counter generator
as ``stabsim.engine.rng``) at 0.036 ns per replicate-step on an H100, where ``twin_cuda``'s kernel, which
runs every configuration from the CPU's replicate code, takes about 0.9 ns (benchmarks/RESULTS.md,
GPU section).  This file is that kernel for the ``bench_gpu.py`` workload ``p1_alg1`` (AUC hinge,
l2 ball, flip neighbour, d = 10, constant eta): it computes w_T on S and on S' and nothing else
(no output averages, no loss sums, no records but the final distance), with the replicate's own
indices (``rng.randint(stream_key(seed, rep, STREAM_INDEX), t, n)``: i_0 before the first step,
then the pair (i_t, i_{t-1}) at step t) and its own replaced example (S' reads row ``krows[r]``
where S reads row ``kidx[r]``).

``python benchmarks/gpu_minimal.py`` checks ||w_T - w'_T|| against ``run_twin`` on the CPU (same
numbers to rounding: FMA contraction) and then times the kernel and ``run_twin(backend="cuda")``
at the same R and T, in one process; ``--smoke`` runs a tiny case in numba's CUDA simulator.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import bench_gpu  # noqa: E402
import stabsim.kernels.twin as kt  # noqa: E402
import stabsim.engine.twin_runs as st  # noqa: E402
from stabsim.engine.backend import cuda_module  # noqa: E402
from stabsim.engine.rng import STREAM_INDEX, randint, stream_key  # noqa: E402

cuda = cuda_module()
D = bench_gpu.D
THREADS = 128


@cuda.jit
def twin_p1_hinge_l2(X, Y, kidx, krows, reps, seed, n, T, eta, radius, W0, out):
    """One thread per replicate r: T steps of P1 Alg. 1 on S and on S', out[r] = ||w_T - w'_T||."""
    r = cuda.grid(1)
    if r >= W0.shape[0]:
        return
    w = cuda.local.array((2, D), np.float64)
    for c in range(D):
        w[0, c] = W0[r, c]
        w[1, c] = W0[r, c]
    k = kidx[r]
    krow = krows[r]
    key = np.uint64(stream_key(seed, reps[r], STREAM_INDEX))   # (a Python int in the simulator)
    r2 = radius * radius
    ia = randint(key, 0, n)
    for t in range(1, T + 1):
        ib = ia
        ia = randint(key, t, n)
        for run in range(2):
            a = krow if (run == 1 and ia == k) else ia
            b = krow if (run == 1 and ib == k) else ib
            coef = 0.5 * (Y[0, a] - Y[0, b])
            if coef != 0.0:
                dot = 0.0
                for c in range(D):
                    dot += w[run, c] * (X[0, a, c] - X[0, b, c])
                if coef * dot < 1.0:   # hinge: phi'(m) = -1, gradient -coef (x_a - x_b)
                    f = -coef
                    s = 0.0
                    for c in range(D):
                        v = w[run, c] - eta * (f * (X[0, a, c] - X[0, b, c]))
                        w[run, c] = v
                        s += v * v
                    if s > r2:
                        sc = radius / math.sqrt(s)
                        for c in range(D):
                            w[run, c] *= sc
    s = 0.0
    for c in range(D):
        e = w[0, c] - w[1, c]
        s += e * e
    out[r] = math.sqrt(s)


def kernel_args(R: int, T: int):
    """(arguments of the CPU twin kernel for the p1_alg1 workload, its dist_iterate at T)."""
    captured = {}
    real = kt.twin_kernel

    def capture(*args, **kw):
        captured["args"] = args
        return real(*args, **kw)

    st.twin_kernel = capture
    try:
        ds, _k, _w = bench_gpu.run("p1_alg1", R, "cpu", T=T)
    finally:
        st.twin_kernel = real
    return captured["args"], ds["dist_iterate"].values.reshape(-1)


def launch(args, T: int):
    """Run the hand-written kernel on the twin kernel's arguments; (distances, kernel seconds)."""
    config, X, Y, kidx, krows, reps, seed, W0 = args[:8]   # (twin_kernel's arguments)
    radius = config.radius
    n = X.shape[1] - (W0.shape[0] if X.shape[0] == 1 else 1)
    R = W0.shape[0]
    dev = [cuda.to_device(np.ascontiguousarray(a)) for a in (X, Y, kidx, krows, reps, W0)]
    out = cuda.device_array(R, dtype=np.float64)
    cuda.synchronize()
    t0 = time.perf_counter()
    twin_p1_hinge_l2[(R + THREADS - 1) // THREADS, THREADS](
        dev[0], dev[1], dev[2], dev[3], dev[4], np.int64(seed), np.int64(n), np.int64(T), bench_gpu.ETA,
        radius, dev[5], out)
    cuda.synchronize()
    return out.copy_to_host(), time.perf_counter() - t0


class LaunchTimer:
    """Times each launch of twin_cuda's kernels with CUDA events (the kernel alone, without the
    host work and copies of ``twin_kernel_cuda``)."""

    def __init__(self):
        self.seconds = []
        self.real = None

    def __enter__(self):
        import stabsim.kernels.twin_cuda as tc
        self.real = tc.cuda_kernel
        timer = self

        class Timed:
            def __init__(self, kernel):
                self.kernel = kernel

            def __getitem__(self, config):
                launch = self.kernel[config]

                def timed(*a):
                    if not hasattr(cuda, "event_elapsed_time"):   # numba's simulator
                        t0 = time.perf_counter()
                        launch(*a)
                        timer.seconds.append(time.perf_counter() - t0)
                        return
                    start, end = cuda.event(), cuda.event()
                    start.record()
                    launch(*a)
                    end.record()
                    end.synchronize()
                    timer.seconds.append(cuda.event_elapsed_time(start, end) / 1e3)
                return timed

        tc.cuda_kernel = lambda *a: Timed(self.real(*a))
        return self

    def __exit__(self, *exc):
        import stabsim.kernels.twin_cuda as tc
        tc.cuda_kernel = self.real


def scan(sizes, out=None) -> list:
    """twin_cuda's call, its launches (CUDA events) and the hand-written kernel at each (R, T)."""
    rows = []
    for R, T in sizes:
        cargs, _ = kernel_args(R, 1)
        launch(cargs, 2)
        hand = min(launch(cargs, T)[1] for _ in range(2))
        bench_gpu.run("p1_alg1", 64, "cuda", T=T)   # compiled
        with LaunchTimer() as lt:
            _ds, call_s, _wall = bench_gpu.run("p1_alg1", R, "cuda", T=T)
        row = {"R": R, "T": T, "hand_ns": hand / (R * T) * 1e9, "call_ns": call_s / (R * T) * 1e9,
               "launch_ns": [s / (R * T) * 1e9 for s in lt.seconds]}
        rows.append(row)
        print(f"R = {R:>7}, T = {T:>6}: hand-written {row['hand_ns']:.4f}, twin_kernel_cuda call {row['call_ns']:.4f}, "
              f"its launches {', '.join(f'{v:.4f}' for v in row['launch_ns'])} ns per replicate-step", flush=True)
        if out is not None:
            out.write_text(json.dumps(rows, indent=1))
    return rows


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicates", type=int, nargs="+", default=[65536, 262144])
    ap.add_argument("--T", type=int, default=20_000)
    ap.add_argument("--check-replicates", type=int, default=1024)
    ap.add_argument("--no-stabsim", action="store_true", help="time the hand-written kernel only")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (numba's CUDA simulator)")
    ap.add_argument("--out", type=Path, default=None, help="JSON of the rows")
    ap.add_argument("--scan", nargs="+", default=None, metavar="R:T",
                    help="only time twin_cuda's call, its launches and the hand-written kernel at these sizes")
    args = ap.parse_args(argv)
    if args.scan:
        return scan([tuple(int(v) for v in rt.split(":")) for rt in args.scan], args.out)
    if args.smoke:   # (long enough that every replicate's S' has left S: distances > 0)
        args.replicates, args.T, args.check_replicates = [16], 3000, 16
    res = {"T": args.T, "rows": []}
    cargs, ref = kernel_args(args.check_replicates, args.T)
    got, _ = launch(cargs, args.T)
    res["max_rel_diff_vs_cpu"] = float(np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300)))
    res["min_distance"] = float(np.min(ref))
    print(f"hand-written kernel vs run_twin (cpu), R = {args.check_replicates}, T = {args.T}: "
          f"max relative difference of ||w_T - w'_T|| {res['max_rel_diff_vs_cpu']:.2e}", flush=True)
    for R in args.replicates:
        cargs, _ = kernel_args(R, 1)   # the arrays of R replicates (T does not enter them)
        launch(cargs, 2)   # compiled, warm
        sec = min(launch(cargs, args.T)[1] for _ in range(2))
        row = {"R": R, "kernel": "hand-written", "ns": sec / (R * args.T) * 1e9}
        res["rows"].append(row)
        print(f"hand-written  R = {R:>8}: {row['ns']:.4f} ns per replicate-step", flush=True)
        if not args.no_stabsim:
            b = bench_gpu.best("p1_alg1", R, "cuda", 2, T=args.T)
            row = {"R": R, "kernel": "twin_cuda", "ns": b["kernel_ns"]}
            res["rows"].append(row)
            print(f"twin_cuda     R = {R:>8}: {row['ns']:.4f} ns per replicate-step", flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
