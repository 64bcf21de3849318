"""Where ``twin_kernel_cuda``'s host time goes (issue #22): the GPU kernel of the p1_alg1 workload runs
in about 0.04 ns per replicate-step, while the call took about 20 us per replicate more.

Prints (1) the time of the raw numba-cuda operations the call makes, for one 64 MB array
(allocation, a second allocation, copies from pageable and pinned host memory, copy back, free)
and (2) cProfile's 25 most expensive functions of one ``run_twin(backend="cuda")`` call.

    python benchmarks/gpu_host_profile.py [--replicates 65536] [--T 200]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_gpu  # noqa: E402
from stabsim.engine.backend import cuda_module  # noqa: E402

cuda = cuda_module()


def timed(label, fn, *, sync=True):
    t0 = time.perf_counter()
    out = fn()
    if sync:
        cuda.synchronize()
    print(f"{label:<48} {1e3 * (time.perf_counter() - t0):9.2f} ms", flush=True)
    return out


def raw_operations(nbytes: int = 64 * 2**20) -> None:
    n = nbytes // 8
    host = np.random.default_rng(0).standard_normal(n)
    timed("first device_array (context, 64 MB)", lambda: cuda.device_array(n))
    a = timed("device_array 64 MB", lambda: cuda.device_array(n))
    b = timed("device_array 64 MB, again", lambda: cuda.device_array(n))
    timed("device_array 64 x 1 MB", lambda: [cuda.device_array(n // 64) for _ in range(64)])
    timed("to_device 64 MB (pageable)", lambda: cuda.to_device(host))
    timed("copy_to_device 64 MB into an allocation", lambda: a.copy_to_device(host))
    pinned = cuda.pinned_array(n)
    pinned[:] = host
    timed("copy_to_device 64 MB from pinned memory", lambda: b.copy_to_device(pinned))
    timed("copy_to_host 64 MB", lambda: a.copy_to_host())
    del a, b
    ctx = cuda.current_context()
    if hasattr(ctx, "deallocations"):   # (not in numba's simulator)
        timed("free two 64 MB (deallocations.clear)", lambda: ctx.deallocations.clear())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicates", type=int, default=65536)
    ap.add_argument("--T", type=int, default=200)
    args = ap.parse_args(argv)
    raw_operations()
    bench_gpu.run("p1_alg1", 64, "cuda", T=args.T)   # compile
    _ds, k, w = bench_gpu.run("p1_alg1", args.replicates, "cuda", T=args.T)
    print(f"R = {args.replicates}, T = {args.T}: twin_kernel_cuda {k:.3f} s, run_twin {w:.3f} s", flush=True)
    prof = cProfile.Profile()
    prof.enable()
    _ds, k, w = bench_gpu.run("p1_alg1", args.replicates, "cuda", T=args.T)
    prof.disable()
    print(f"profiled: twin_kernel_cuda {k:.3f} s, run_twin {w:.3f} s")
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    pstats.Stats(prof).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
