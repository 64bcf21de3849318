"""One launch of the CUDA twin kernel to profile with Nsight Compute (issue #22: what bounds it).

    ncu --set full --kernel-name regex:kernel --launch-skip 1 --launch-count 1 -o p1 \
        python benchmarks/gpu_profile.py
    ncu --import p1.ncu-rep --page details > p1.txt     # stall reasons: "Warp State Statistics"

The workload of ``bench_gpu.py`` (P1 Alg. 1, AUC hinge, l2 ball of radius 10, n = 1000, d = 10,
flip neighbour, eta = 0.01) with fewer replicates and steps (default: one wave of the H100, 132
multiprocessors x 256 threads, and T = 2000), launched twice: the first call compiles, the second
is the one to profile (``--launch-skip 1``).  ``--general`` profiles the general build instead of
the specialised one (``twin_cuda.SPECIALIZE = False`` instead of ``True``); ``--minimal`` the hand-written
kernel of ``gpu_minimal.py`` (ncu's kernel name: ``twin_p1_hinge_l2``).  Prints the kernel's seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_gpu  # noqa: E402
import stabsim.kernels.twin_cuda as twin_cuda  # noqa: E402


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicates", type=int, default=132 * 256)
    ap.add_argument("--T", type=int, default=2000)
    ap.add_argument("--general", action="store_true", help="the general build (SPECIALIZE = False)")
    ap.add_argument("--minimal", action="store_true", help="the hand-written kernel of gpu_minimal.py")
    args = ap.parse_args(argv)
    if args.minimal:
        import gpu_minimal
        cargs, _ = gpu_minimal.kernel_args(args.replicates, 1)
        gpu_minimal.launch(cargs, 2)   # compile: launch 1
        kernel_s = gpu_minimal.launch(cargs, args.T)[1]   # launch 2
        print(f"hand-written kernel, R = {args.replicates}, T = {args.T}: kernel {kernel_s:.4f} s "
              f"({kernel_s / (args.replicates * args.T) * 1e9:.3f} ns per replicate-step)")
        return kernel_s
    saved = twin_cuda.SPECIALIZE
    twin_cuda.SPECIALIZE = not args.general   # (a call this short would get the general build by default)
    try:
        bench_gpu.run("p1_alg1", min(args.replicates, 64), "cuda", T=args.T)   # compile: launch 1
        t0 = time.perf_counter()
        _ds, kernel_s, _wall = bench_gpu.run("p1_alg1", args.replicates, "cuda", T=args.T)   # launch 2
    finally:
        twin_cuda.SPECIALIZE = saved
    print(f"{'general' if args.general else 'specialised'} build, R = {args.replicates}, T = {args.T}: kernel "
          f"{kernel_s:.4f} s ({kernel_s / (args.replicates * args.T) * 1e9:.3f} ns per replicate-step), "
          f"call {time.perf_counter() - t0:.4f} s")
    return kernel_s


if __name__ == "__main__":
    main()
