"""The twin kernel on a CUDA GPU (numba-cuda): one GPU thread per replicate.

Every kernel kind of ``stabsim.kernels.twin`` runs here, from the same code: the body of one
replicate is ``twin_replicate.build_replicate(KIND, POLL=False)``, the function the CPU kernel
calls in its ``prange`` loop, compiled by numba-cuda as a device function.  Nothing is written
twice, so a replicate draws exactly the indices and normals it draws on the CPU (``stabsim.engine.rng``:
a pure function of (seed, replicate id, counter)); the numbers agree to rounding (docs/gpu.md).

Design:

* one thread per replicate; a replicate's scratch (iterates, gradient, output sums, index
  history, workspaces) lives in global memory with the replicate as the *last* axis, so that the
  threads of a warp touch consecutive addresses (coalesced) when they read or write the same
  coordinate; on a GPU each configuration gets its own kernel (``SPECIALIZE``), and the fast
  kinds at small p keep their iterates in per-thread arrays, i.e. registers (``LOCAL_MAX_P``);
* the data set and the step-size arrays are copied to the GPU once per call and read by every
  thread (served by the L1/L2 caches); nothing goes back to the host between steps;
* replicates are run in chunks that fit in half of the GPU's free memory (``max_chunk``), each
  chunk one launch; a chunk's results are copied back when it ends.  A launch cannot be
  interrupted: the ``stop`` flag (Ctrl-C in ``run_twin``) is read between chunks;
* float64 throughout.

The GPU is not the fastest choice for every configuration: FULL_BATCH (P2 Alg. 1) sorts n scores
per step in one thread, and metric learning's projections need an eigendecomposition per step
per thread; both run, but a block of threads per replicate would suit them better (not done:
docs/gpu.md, "What runs where").
"""

from __future__ import annotations

import warnings
from functools import lru_cache

import numpy as np
from numba import float64

from stabsim.engine.backend import cuda_module, simulator_enabled
from stabsim.kernels.twin import _CPU_REPLICATES, _specialised, kind_of, specialisation
from stabsim.kernels.twin_config import SHARED_ARRAYS, TwinConfig
from stabsim.kernels.twin_replicate import build_replicate, twin_layout
from stabsim.kernels.twin_steps import GENERAL, N_REC

# imported here, not on ``import stabsim`` (this module is imported only when a GPU run is asked
# for); a module global, as numba's simulator expects of the ``cuda`` a kernel refers to
cuda = cuda_module()

#: threads per block (a multiple of the warp size, 32)
THREADS_PER_BLOCK = 128
#: registers per thread the compiler may use; None leaves it to ptxas, which gives the fast kinds
#: about 180-220 at sm_90 (two blocks of 128 threads per multiprocessor).  A lower cap raises the
#: occupancy and spills to local memory; ``benchmarks/bench_gpu.py --tune`` measures the trade.
#: Read when a kind's kernel is built (``cuda_kernel.cache_clear()`` after changing it).
MAX_REGISTERS = None
#: compile one kernel per configuration (loss form, constraint kind, noise mode, output rule,
#: reference point, recorded outputs) with these as constants (``twin_replicate.build_replicate``'s
#: ``SPEC``), so that NVVM drops the branches a run does not take: a compilation per
#: configuration for fewer registers per thread, and on the fast kinds per-thread iterates
#: (``LOCAL_MAX_P``).  None (the default): on a GPU (not in numba's simulator, where a
#: specialised build would only compile the CPU replicate once more per configuration; the
#: specialised builds are tested there on their own: tests/test_cuda_backend.py), for a call of at
#: least ``SPECIALIZE_MIN_STEPS`` replicate-steps (R * T; ``SPECIALIZE_MIN_STEPS_GLOBAL`` without
#: per-thread iterates).
SPECIALIZE = None
#: the work (replicates x steps of one call) from which ``SPECIALIZE = None`` compiles the
#: specialised build, where it keeps the iterates in per-thread arrays (fast kinds, p <=
#: ``LOCAL_MAX_P``): its compilation (NVVM on one core) costs seconds per configuration, which
#: a call repays only when long, and a run of many short calls of many configurations (the quick
#: suite: 34 configurations, every call far under this) would spend minutes compiling them.
#: The value is the break-even: the compilation's time divided by what the specialised build
#: saves per replicate-step against the general build (P1 Alg. 1, d = 10; benchmarks/README.md,
#: "GPU").  Below it a call uses the general build of its kind (one compilation per kind).  The
#: build follows from (R, T, configuration) alone, so a call gives the same numbers whatever ran
#: before it in the process.
SPECIALIZE_MIN_STEPS = 5 * 10**10
#: the same without per-thread iterates (the general kind, p > ``LOCAL_MAX_P``): there the
#: specialised build only drops branches and saves far less per replicate-step, so its
#: break-even lies further (benchmarks/README.md, "GPU").
SPECIALIZE_MIN_STEPS_GLOBAL = 4 * 10**11
#: in a specialised build of a fast kind (P1 Alg. 1/2, SGD_pair, P4 Alg. 1: p = d) with p at most
#: this, a thread keeps its replicate's iterates, output sums, noise and norms in per-thread arrays
#: of compile-time size (``cuda.local.array``) instead of global scratch: with the dimension a
#: constant the coordinate loops unroll and the compiler can hold the arrays in registers.
#: At d = 10 ptxas keeps every array in registers, and the launches run about as fast as a
#: hand-written kernel and several times faster than the specialised build with its iterates in
#: global memory; at d = 12 a little of them spills out of registers and beyond it hundreds of
#: bytes per thread and more, so larger p keep the global scratch (benchmarks/README.md, "GPU").
#: 0 turns it off.
LOCAL_MAX_P = 12
#: replicates per launch in numba's CUDA simulator (it runs each simulated thread as a Python thread)
SIMULATOR_CHUNK = 64


@lru_cache(maxsize=None)
def cuda_kernel(kind: int, spec: tuple | None = None):
    """The CUDA kernel of one kind (compiled for the GPU on its first launch); ``spec``: the
    constants of a specialised build (``SPECIALIZE``); a seventh entry p > 0 builds the kernel
    with per-thread iterates of that size (``LOCAL_MAX_P``)."""
    if simulator_enabled():
        # the CPU kernel's own replicate (it also polls ``stop``, which the launch leaves at 0):
        # compiled once for both backends; a specialised build is the CPU's cold-start build of
        # the same constants (``twin._specialised``: the CPU pipeline, without reference counting)
        replicate = _on_simulated_arrays(_CPU_REPLICATES[kind] if spec is None else _specialised(kind, spec))
    else:
        replicate = build_replicate(kind, False, spec)

    # numba's simulator has no registers (and its jit takes no such option)
    options = {} if MAX_REGISTERS is None or simulator_enabled() else {"max_registers": int(MAX_REGISTERS)}
    P = 0 if spec is None or len(spec) < 7 else int(spec[6])
    if P > 0:
        return _local_kernel(replicate, P, options)

    @cuda.jit(**options)
    def kernel(X, Y, kidx, krows, reps, seed, schedule, s, seq, form, phi, q, ckind, radius, md,
               T, etas, es, omegas, os_, lag, noise, sigma, has_ref, wref, W0, ckpts, rec, rec_out, outs,
               stop, n, use_stats, Wb, gb, accb, nzb, dxb, histb, Ab, Vb, lamb, tmpb, workb, statsb, nrm2b):
        r = cuda.grid(1)
        if r < W0.shape[0]:
            replicate(r, X, Y, kidx, krows, reps, seed, schedule, s, seq, form, phi, q, ckind, radius, md,
                      T, etas, es, omegas, os_, lag, noise, sigma, has_ref, wref, W0, ckpts, rec, rec_out, outs,
                      stop, n, use_stats, Wb[:, :, :, r], gb[:, :, r], accb[:, :, r], nzb[:, :, r], dxb[:, r],
                      histb[:, r], Ab[:, :, r], Vb[:, :, r], lamb[:, r], tmpb[:, r], workb[:, r],
                      statsb[:, :, :, r], nrm2b[:, r])

    return kernel


def _local_kernel(replicate, P, options):
    """The kernel with the replicate's iterates (W), gradient (g), output sums (acc), noise (nz),
    work vector (dx) and squared norms (nrm2) in per-thread arrays of the compile-time size P
    (p = d = P); the other scratch is global, as in ``cuda_kernel``, whose arguments it takes
    (the global W, g, acc, nz, dx, nrm2 are then unused)."""
    @cuda.jit(**options)
    def kernel(X, Y, kidx, krows, reps, seed, schedule, s, seq, form, phi, q, ckind, radius, md,
               T, etas, es, omegas, os_, lag, noise, sigma, has_ref, wref, W0, ckpts, rec, rec_out, outs,
               stop, n, use_stats, Wb, gb, accb, nzb, dxb, histb, Ab, Vb, lamb, tmpb, workb, statsb, nrm2b):
        r = cuda.grid(1)
        if r < W0.shape[0]:
            W = cuda.local.array((2, 2, P), float64)
            g = cuda.local.array((2, P), float64)
            acc = cuda.local.array((2, P), float64)
            nz = cuda.local.array((2, P), float64)
            dx = cuda.local.array(P, float64)
            nrm2 = cuda.local.array(2, float64)
            replicate(r, X, Y, kidx, krows, reps, seed, schedule, s, seq, form, phi, q, ckind, radius, md,
                      T, etas, es, omegas, os_, lag, noise, sigma, has_ref, wref, W0, ckpts, rec, rec_out, outs,
                      stop, n, use_stats, W, g, acc, nz, dx, histb[:, r], Ab[:, :, r], Vb[:, :, r], lamb[:, r],
                      tmpb[:, r], workb[:, r], statsb[:, :, :, r], nrm2)

    return kernel


def _on_simulated_arrays(fn):
    """In numba's CUDA simulator a kernel runs as Python and sees its arrays as simulator
    wrappers, which the compiled (CPU) replicate cannot take: hand it the NumPy arrays inside.
    The strided scratch views (replicate axis last) are passed as contiguous copies and written
    back, so that the replicate the CPU kernel compiled takes them (no second compilation);
    the strided layout itself is compiled for the GPU (docs/gpu.md, "Checks without a GPU")."""
    def call(*args):
        plain, back = [], []
        for a in args:
            if hasattr(a, "_item") and hasattr(a._item, "_ary"):
                a = a._item._ary
                if not a.flags.c_contiguous:
                    c = np.ascontiguousarray(a)
                    back.append((a, c))
                    a = c
            plain.append(a)
        out = fn(*plain)
        for view, c in back:
            view[...] = c
        return out

    return call


def _to_device(a):
    """``a`` copied to the GPU, C-contiguous with the strides NumPy gives a new array.  NumPy may
    give a dimension of length 1 the stride 0 (X and Y of a shared data set, (1, rows, d), arrive
    so), which numba-cuda takes for a broadcast dimension: ``to_device`` then walks the array
    element by element in Python (many times the kernel's own time; benchmarks/README.md, "GPU")
    and the kernel is typed for a non-contiguous ('A') array."""
    a = np.ascontiguousarray(a)
    if a.size and 0 in a.strides:
        a = a.copy()
    return cuda.to_device(a)


#: the scratch a build with per-thread iterates (``_local_kernel``) keeps in per-thread arrays: its
#: global arrays are passed for their types only, with one replicate's room
LOCAL_SCRATCH = frozenset({"W", "g", "acc", "nz", "dx", "nrm2"})


def scratch_shapes(p: int, d: int, md: int, hlen: int, nwork: int, slen: int, R: int, local: bool = False) -> dict:
    """Shapes of the per-replicate scratch arrays for R replicates (replicate axis last);
    ``local``: for a build with per-thread iterates (``LOCAL_SCRATCH`` get room for one)."""
    shapes = {"W": (2, 2, p), "g": (2, p), "acc": (2, p), "nz": (2, p), "dx": (max(d, p),), "hist": (hlen,),
              "A": (md, md), "V": (md, md), "lam": (md,), "tmp": (md,), "work": (nwork,), "stats": (2, 2, slen),
              "nrm2": (2,)}
    return {k: v + (1 if local and k in LOCAL_SCRATCH else R,) for k, v in shapes.items()}


def bytes_per_replicate(p, d, md, hlen, nwork, slen, C, rec_out, nS, rows, local: bool = False) -> int:
    """GPU memory one replicate needs: its scratch (not ``LOCAL_SCRATCH`` in a build with
    per-thread iterates), its records (and outputs), its data set when every replicate has its own."""
    per = sum(int(np.prod(s[:-1])) for k, s in scratch_shapes(p, d, md, hlen, nwork, slen, 1).items()
              if not (local and k in LOCAL_SCRATCH))
    per += C * N_REC + (C * 2 * p if rec_out else 0) + 4 + p
    if nS > 1:
        per += rows * (d + 1)
    return 8 * per


def max_chunk(per_replicate: int) -> int:
    """Replicates per launch: as many as fit in half of the GPU's free memory."""
    if simulator_enabled():
        return SIMULATOR_CHUNK
    free, _total = cuda.current_context().get_memory_info()
    return max(1, int(0.5 * free) // max(per_replicate, 1))


def specialised_build(R: int, T: int, local: bool = True) -> bool:
    """Whether a call of R replicates and T steps runs the specialised build (``SPECIALIZE``);
    ``local``: whether that build would keep the iterates in per-thread arrays."""
    if SPECIALIZE is not None:
        return bool(SPECIALIZE)
    least = SPECIALIZE_MIN_STEPS if local else SPECIALIZE_MIN_STEPS_GLOBAL
    return not simulator_enabled() and int(R) * int(T) >= least


def twin_kernel_cuda(config: TwinConfig, X, Y, kidx, krows, reps, seed, W0, rec, outs, *, kind=None, stop=None,
                     chunk=None):
    """``twin.twin_kernel`` on the GPU: the same arguments and the same results (to rounding).
    ``chunk``: replicates per launch (default: what fits in GPU memory)."""
    kk = kind_of(config, kind)
    i64 = np.int64
    R, p = W0.shape
    nS, rows, d = X.shape
    C = config.checkpoints.shape[0]
    rec_out = config.record_outputs
    n, hlen, nwork, use_stats, slen = twin_layout(X, Y, i64(R), i64(config.schedule), i64(config.buffer),
                                                  i64(config.form), i64(config.phi), i64(config.T))
    spec = None
    per_thread = kk != GENERAL and p == d and 0 < p <= LOCAL_MAX_P
    if specialised_build(R, config.T, per_thread):
        spec = specialisation(config, p if per_thread else None)
    local = spec is not None and len(spec) == 7   # per-thread iterates (_local_kernel)
    per = bytes_per_replicate(p, d, config.md, hlen, nwork, slen, C, rec_out, nS, rows, local)
    size = max_chunk(per) if chunk is None else max(1, int(chunk))
    size = min(size, R)
    kernel = cuda_kernel(kk, spec)
    shared = {name: _to_device(a) for name, a in
              (("etas", config.etas), ("omegas", config.omegas), ("wref", config.wref), ("ckpts", config.checkpoints),
               ("stop", np.zeros(1, i64)))}
    if nS == 1:
        shared["X"], shared["Y"] = _to_device(X), _to_device(Y)
    scratch = {k: cuda.device_array(shape, dtype=np.int64 if k == "hist" else np.float64)
               for k, shape in scratch_shapes(p, d, config.md, int(hlen), int(nwork), int(slen), size, local).items()}
    for a in range(0, R, size):
        if stop is not None and stop[0]:
            return
        b = min(R, a + size)
        m = b - a
        Xc = shared["X"] if nS == 1 else _to_device(X[a:b])
        Yc = shared["Y"] if nS == 1 else _to_device(Y[a:b])
        rec_c = _to_device(rec[a:b])
        outs_c = _to_device(outs[a:b] if rec_out else outs)
        sc = scratch   # whole arrays (one compiled layout); threads r >= m return at once
        blocks = (m + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
        args = config.kernel_args(Xc, Yc, _to_device(kidx[a:b]), _to_device(krows[a:b]), _to_device(reps[a:b]), seed,
                                  _to_device(W0[a:b]), rec_c, outs_c, shared["stop"],
                                  arrays={name: shared[name] for name in SHARED_ARRAYS})
        with warnings.catch_warnings():
            # a call of few replicates fills few blocks, and numba-cuda then warns of low occupancy
            # at every launch: nothing a user can act on (audits and searches make many such calls)
            warnings.filterwarnings("ignore", message=".*Grid size", category=Warning)
            kernel[blocks, THREADS_PER_BLOCK](
                *args, i64(n), bool(use_stats), sc["W"], sc["g"], sc["acc"], sc["nz"], sc["dx"], sc["hist"],
                sc["A"], sc["V"], sc["lam"], sc["tmp"], sc["work"], sc["stats"], sc["nrm2"])
        rec[a:b] = rec_c.copy_to_host()
        if rec_out:
            outs[a:b] = outs_c.copy_to_host()
