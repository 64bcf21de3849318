"""The whole performance suite of issue #7 in one command.

    python benchmarks/run_all.py            # full: about 10-15 minutes on an idle 2-core machine
    python benchmarks/run_all.py --quick    # smaller sizes, no cold compile, no suite run: ~3 minutes

writes ``benchmarks/results_all.json`` and ``benchmarks/RESULTS.md`` (machine details, load
average before/after every section).  Nothing is asserted: targets are reported as met or not.

Sections (see benchmarks/README.md for what each number means):

1. ``families``: for p1_alg1, sgd_pair, p0_alg1, p4_alg1 and p2_alg1 (``run_twin`` uses the fast
   all-pairs gradient of ``stabsim.kernels.allpairs``; ``benchmarks/p2_fast.py`` is the same twin
   loop with the double loop over pairs that the kernel had before), at
   d = 10 and 100: ns per twin step of the numba kernel on 1 and 2 threads, a naive
   Python/NumPy loop, NumPy vectorised across replicates, a C loop (gcc -O3 -march=native;
   benchmarks/c/twin_p1.c, benchmarks/c/twin_families.c; none for p2_alg1) and JAX lax.scan + vmap (p1_alg1 and
   sgd_pair, when an interpreter with JAX is given or found).  Every comparator is checked
   against the kernel (same index draws, sigma = 0) before it is timed.
2. ``allpairs``: the P2 all-pairs gradient at n = 10^4 (AUC squared, hinge, logistic; ranking logistic):
   fast vs the naive double loop (timed on a subset of rows i and extrapolated; the full
   double sum is run once for the squared loss to check the fast result to 1e-10), plus the
   O(d^2) sufficient-statistics variants (P2 full batch and P0/P3 all-previous).
3. ``compile``: numba compile time with an empty cache dir (subprocess) and with the
   on-disk cache; ``import stabsim`` time.
4. ``suite``: ``stabsim run suite --quick`` in a subprocess: wall time and peak RSS.
5. with ``--full-suite``: the same for the full-profile ``stabsim run suite`` (about 15 minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import numba  # noqa: E402

import bench_twin as bt  # noqa: E402  (machine_info, load_now, best_of, CLoop)
import comparators as cp  # noqa: E402
from stabsim import make_problem, run_twin  # noqa: E402
from stabsim.kernels import allpairs as ap  # noqa: E402
from stabsim.kernels import allprev as apv  # noqa: E402
from stabsim.kernels import pair_stats as ps  # noqa: E402
from stabsim.engine.losses import get_loss  # noqa: E402
from stabsim.engine.neighbours import as_neighbour, make_neighbours  # noqa: E402
from stabsim.engine.twin_runs import extend_with_replacements  # noqa: E402

SEED = 0
DIMS = (10, 100)
TARGETS = {"p1_naive_over_kernel_d10": 150.0, "p1_kernel_over_c": 1.3, "speedup_2_threads": 1.8,
           "p2_allpairs_squared_fast_over_naive_n1e4": 100.0, "suite_quick_s": 600.0}

# per family: loss, data, step size, noise, and sizes (full, quick)
FAMILIES = {
    "p1_alg1": dict(loss="auc_hinge", n=1000, eta=0.01, sigma=0.0, lag=2,
                    T=(10 ** 6, 2 * 10 ** 4), R=8, Tn=(20000, 4000), Tv=(2000, 500), Rv=256, Tj=20000),
    "sgd_pair": dict(loss="auc_hinge", n=1000, eta=0.01, sigma=0.0, lag=1,
                     T=(10 ** 6, 2 * 10 ** 4), R=8, Tn=(20000, 4000), Tv=(2000, 500), Rv=256, Tj=20000),
    "p0_alg1": dict(loss="auc_hinge", n=1000, eta=0.01, sigma=0.0, lag=1,
                    T=(2000, 1000), R=4, Tn=(500, 200), Tv=(500, 200), Rv=16),
    "p4_alg1": dict(loss="point_logistic", n=1000, eta=0.01, sigma=0.1, lag=1,
                    T=(10 ** 5, 2 * 10 ** 4), R=8, Tn=(20000, 4000), Tv=(2000, 500), Rv=256),
    "p2_alg1": dict(loss="auc_squared", n=200, eta=0.05, sigma=0.01, lag=-1,
                    T=(2000, 500), R=4, Tn=(2, 1), Tv=(5, 2), Rv=4, Tloop=(20, 5)),
}


def log(msg=""):
    print(msg, flush=True)


def timed(fn, repeat):
    return bt.best_of(fn, repeat)


def dataset(d, n):
    X, y = make_problem("auc_noisy", d=d).sample(n, seed=SEED)
    return np.ascontiguousarray(X), np.ascontiguousarray(y)


def neighbours(X, y, R):
    reps = np.arange(R, dtype=np.int64)
    kidx, xrep, yrep = make_neighbours(as_neighbour("flip"), X[None], y[None], reps, SEED)
    return kidx, xrep, yrep


def kernel(fam, X, y, T, R, sigma=None, ck=None):
    f = FAMILIES[fam]
    return run_twin(X, y, algorithm=fam, loss=f["loss"], eta=f["eta"], T=T, replicates=R, seed=SEED,
                    neighbour="flip", sigma=f["sigma"] if sigma is None else sigma,
                    checkpoints=[T] if ck is None else ck)


def close(a, b, tol=1e-9):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return bool(np.all(np.abs(a - b) <= tol * np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))))


def s_prime(X, y, k, xrep, yrep):
    Xp, yp = X.copy(), y.copy()
    Xp[k], yp[k] = xrep, yrep
    return Xp, yp


# ---------------------------------------------------------------------------------------------
# 1. families

def draws_all(fam, T, R, n):
    out = [cp.draws(fam, SEED, r, T, n) for r in range(R)]
    if isinstance(out[0], tuple):
        return np.stack([o[0] for o in out]), np.stack([o[1] for o in out])
    return np.stack(out)


def run_naive(fam, X, y, Xp, yp, T, sigma, gen):
    f = FAMILIES[fam]
    n = len(y)
    if fam in ("p1_alg1", "sgd_pair"):
        ia, ib = cp.draws(fam, SEED, 0, T, n)
        return lambda: cp.naive_pairs(X, y, Xp, yp, ia, ib, f["eta"], T, f["lag"])
    if fam == "p0_alg1":
        idx = cp.draws(fam, SEED, 0, T, n)
        return lambda: cp.naive_p0(X, y, Xp, yp, idx, f["eta"], T)
    if fam == "p4_alg1":
        idx = cp.draws(fam, SEED, 0, T, n)
        return lambda: cp.naive_p4(X, y, Xp, yp, idx, f["eta"], T, sigma, gen)
    return lambda: cp.naive_p2(X, y, Xp, yp, f["eta"], T, sigma, gen)


def run_vec(fam, X, y, nb, T, R, sigma, gen):
    f = FAMILIES[fam]
    n = len(y)
    k, xrep, yrep = nb[0][:R], nb[1][:R], nb[2][:R]
    if fam in ("p1_alg1", "sgd_pair"):
        IA, IB = draws_all(fam, T, R, n)
        return lambda: cp.vec_pairs(X, y, k, xrep, yrep, IA, IB, f["eta"], T, f["lag"])
    if fam == "p0_alg1":
        IDX = draws_all(fam, T, R, n)
        return lambda: cp.vec_p0(X, y, k, xrep, yrep, IDX, f["eta"], T)
    if fam == "p4_alg1":
        IDX = draws_all(fam, T, R, n)
        return lambda: cp.vec_p4(X, y, k, xrep, yrep, IDX, f["eta"], T, sigma, gen)
    return lambda: cp.vec_p2(X, y, k, xrep, yrep, f["eta"], T, sigma, gen, R)


def p2_loop_call(X, y, nb, T, R, sigma):
    from p2_fast import p2_twin_double_loop
    f = FAMILIES["p2_alg1"]
    L = get_loss(f["loss"])
    k, xrep, yrep = nb[0][:R], nb[1][:R], nb[2][:R]
    Xext, Yext, krows = extend_with_replacements(X[None], y[None], xrep, yrep)
    etas = np.full(T + 1, f["eta"])
    etas[0] = np.nan
    out = np.zeros((R, 3))
    reps = np.arange(R, dtype=np.int64)

    def go():
        p2_twin_double_loop(Xext[0], Yext[0], len(y), k, krows, reps, np.int64(SEED), L.form, L.phi, float(L.q),
                     etas, float(sigma), out)
        return out
    return go


def thread_pair(fn, repeat):
    """Alternating 1- and 2-thread runs; minimum wall of each, cores used by the best 2-thread run."""
    res = {1: [], 2: []}
    for _ in range(repeat):
        for nt in (1, 2):
            if nt > numba.config.NUMBA_NUM_THREADS:
                continue
            numba.set_num_threads(nt)
            m = timed(fn, 1)
            res[nt].append((m["wall_s"], m["cpu_s"]))
    numba.set_num_threads(1)
    out = {}
    for nt, v in res.items():
        if v:
            w, c = min(v)
            out[nt] = {"wall_s": w, "cores_used": c / w, "walls_s": [x[0] for x in v]}
    return out


def jax_python(arg):
    if arg:
        return arg if arg != "none" else None
    try:
        import jax  # noqa: F401
        return sys.executable
    except ImportError:
        return os.environ.get("STABSIM_JAX_PYTHON") or None


def run_jax(py, fam, X, y, nb, T, R, repeat, tmpdir, single_core):
    f = FAMILIES[fam]
    IA, IB = draws_all(fam, T, R, len(y))
    path = Path(tmpdir) / f"jax_{fam}_{X.shape[1]}.npz"
    np.savez(path, X=X, y=y, k=nb[0][:R], xrep=nb[1][:R], yrep=nb[2][:R], IA=IA, IB=IB,
             eta=f["eta"], lag=f["lag"], repeat=repeat)
    cmd = [py, str(HERE / "jax_twin.py"), str(path)]
    if single_core and shutil.which("taskset"):
        cmd = ["taskset", "-c", "0"] + cmd
    env = dict(os.environ, XLA_FLAGS="--xla_cpu_multi_thread_eigen=false")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout).strip().splitlines()[-1:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


class CFamilies:
    """benchmarks/c/twin_families.c (sgd_pair, p0_alg1, p4_alg1) compiled at benchmark time."""

    CODES = {"sgd_pair": 0, "p0_alg1": 1, "p4_alg1": 2}

    def __init__(self, tmpdir):
        import ctypes
        so = Path(tmpdir) / "libtwin_families.so"
        cmd = ["gcc", "-O3", "-march=native", "-ffp-contract=off", "-shared", "-fPIC", "-o", str(so),
               str(HERE / "c" / "twin_families.c"), "-lm"]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        self.cmd = " ".join(cmd)
        f = ctypes.CDLL(str(so)).twin_family
        P, i64, u64, dbl = ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint64, ctypes.c_double
        f.argtypes = [ctypes.c_int, P, P, i64, i64, i64, i64, u64, u64, dbl, i64, dbl, P]
        f.restype = ctypes.c_int
        self.fn = f

    def run(self, fam, Xext, Yext, n, k, krow, T):
        f = FAMILIES[fam]
        stats = np.zeros(3)
        rc = self.fn(self.CODES[fam], Xext.ctypes.data, Yext.ctypes.data, n, Xext.shape[1], k, krow, SEED, 0,
                     f["eta"], T, f["sigma"], stats.ctypes.data)
        if rc != 0:
            raise MemoryError("twin_family: out of memory")
        return stats


def families(args, tmpdir, cloops, jaxpy, ktimer):
    qi = 1 if args.quick else 0
    rep = args.repeat
    rows = []
    gen = np.random.default_rng(123)
    for fam in args.families:
        f = FAMILIES[fam]
        for d in DIMS:
            X, y = dataset(d, f["n"])
            n = len(y)
            T, R = f["T"][qi], f["R"]
            Tn, Tv, Rv = f["Tn"][qi], f["Tv"][qi], f["Rv"]
            nb = neighbours(X, y, max(R, Rv))
            Xp, yp = s_prime(X, y, nb[0][0], nb[1][0], nb[2][0])
            row = {"family": fam, "d": d, "n": n, "loss": f["loss"], "eta": f["eta"], "sigma": f["sigma"],
                   "T": T, "R": R, "load_start": bt.load_now()["loadavg_1_5_15"]}
            log(f"[{fam} d={d}] kernel warm-up")
            kernel(fam, X, y, 3, 2)
            # --- checks: comparators vs kernel (sigma = 0, same draws)
            dsn = kernel(fam, X, y, Tn, 1, sigma=0.0)
            nres = run_naive(fam, X, y, Xp, yp, Tn, 0.0, gen)()
            row["naive_matches_kernel"] = close(nres, (float(dsn.dist_iterate[0, -1]), float(dsn.dist_output[0, -1])))
            Rchk = min(Rv, 16)
            dsv = kernel(fam, X, y, Tv, Rchk, sigma=0.0)
            vres = run_vec(fam, X, y, nb, Tv, Rchk, 0.0, gen)()
            row["vec_matches_kernel"] = close(np.stack(vres), np.stack([dsv.dist_iterate[:, -1].values,
                                                                         dsv.dist_output[:, -1].values]))
            # --- single thread, interleaved rounds (each round runs every implementation once, so
            # that load drifting over the run hits all alike): run_twin with 1 replicate (and its
            # kernel call alone), the naive loop (1 replicate), NumPy across replicates, the C loop
            numba.set_num_threads(1)
            impls = {"kernel_R1": lambda: kernel(fam, X, y, T, 1),
                     "naive": run_naive(fam, X, y, Xp, yp, Tn, f["sigma"], gen),
                     "vec": run_vec(fam, X, y, nb, Tv, Rv, f["sigma"], gen)}
            Xext, Yext, k, krow = bt.neighbour_arrays(X, y)
            if fam == "p1_alg1" and cloops:
                cl = cloops["c"]
                impls["c"] = lambda: cl.run(Xext, Yext, k, krow, T, None)
            elif fam in CFamilies.CODES and "families" in cloops:
                cf = cloops["families"]
                impls["c"] = lambda: cf.run(fam, Xext, Yext, n, k, krow, T)
            times = bt.interleaved(impls, rep, ktimer)
            steps = {"kernel_R1": T, "kernelcall_R1": T, "naive": Tn, "vec": Tv * Rv, "c": T}
            best = {name: min(w for w, _ in v) / steps[name] * 1e9 for name, v in times.items()}
            row["kernel_R1_1t_ns"] = best["kernel_R1"]
            if "kernelcall_R1" in best:   # the kernel call alone, without run_twin's Python work (grows with T)
                row["kernelcall_R1_ns"] = best["kernelcall_R1"]
            row["naive_ns"] = best["naive"]
            row["naive_T"] = Tn
            row["vec_ns"] = best["vec"]
            row["vec_T"], row["vec_R"] = Tv, Rv
            # --- numba kernel, 1 and 2 threads, R replicates
            thr = thread_pair(lambda: kernel(fam, X, y, T, R), rep)
            row["kernel_1t_ns"] = thr[1]["wall_s"] / (T * R) * 1e9
            if 2 in thr:
                row["kernel_2t_ns"] = thr[2]["wall_s"] / (T * R) * 1e9
                row["speedup_2t"] = thr[1]["wall_s"] / thr[2]["wall_s"]
                row["cores_used_2t"] = thr[2]["cores_used"]
            # --- C loops (1 replicate): p1_alg1 (c/twin_p1.c), sgd_pair / p0_alg1 / p4_alg1 (c/twin_families.c)
            if "c" in best:
                row["c_ns"] = best["c"]
                row["kernel_R1_over_c"] = row["kernel_R1_1t_ns"] / row["c_ns"]
                row["kernel_R1_over_c_paired_median"] = bt.paired_median(times["kernel_R1"], times["c"])
                if "kernelcall_R1_ns" in row:
                    row["kernelcall_over_c"] = row["kernelcall_R1_ns"] / row["c_ns"]
                    row["kernelcall_over_c_paired_median"] = bt.paired_median(times["kernelcall_R1"], times["c"])
            if fam == "p1_alg1" and cloops:
                stats, _ = cl.run(Xext, Yext, k, krow, T, None)
                dsk = kernel(fam, X, y, T, 1, sigma=0.0)
                row["c_matches_kernel"] = close((stats[0], stats[1]), (float(dsk.dist_iterate[0, -1]),
                                                                       float(dsk.dist_output[0, -1])))
            elif fam in CFamilies.CODES and "families" in cloops:
                stats = cf.run(fam, Xext, Yext, n, k, krow, T)
                dsk = kernel(fam, X, y, T, 1)
                row["c_matches_kernel"] = close((stats[0], stats[1], stats[2]),
                                                (float(dsk.dist_iterate[0, -1]), float(dsk.dist_output[0, -1]),
                                                 float(dsk.loss_path[0, -1])))
            elif fam == "p2_alg1":
                row["c_skipped"] = "no C loop for p2_alg1 (full batch)"
            # --- JAX
            if fam in ("p1_alg1", "sgd_pair") and jaxpy:
                Tj = f["Tj"] if not args.quick else f["Tj"] // 4
                jr = run_jax(jaxpy, fam, X, y, nb, Tj, Rv if not args.quick else 64, rep, tmpdir, True)
                if "error" in jr:
                    row["jax_error"] = jr["error"]
                else:
                    Rj = Rv if not args.quick else 64
                    row["jax_ns"] = jr["wall_s"] / (Tj * Rj) * 1e9
                    row["jax_R1_ns"] = jr["wall_R1_s"] / Tj * 1e9
                    row["jax_compile_s"] = jr["compile_s"]
                    row["jax_version"] = jr["jax"]
                    dsj = kernel(fam, X, y, Tj, Rj, sigma=0.0)
                    row["jax_matches_kernel"] = close(np.stack([jr["dist_iterate"], jr["dist_output"]]),
                                                      np.stack([dsj.dist_iterate[:, -1].values,
                                                                dsj.dist_output[:, -1].values]))
                    row["jax_T"], row["jax_R"] = Tj, Rj
            elif fam in ("p1_alg1", "sgd_pair"):
                row["jax_skipped"] = "JAX not installed (pass --jax-python or set STABSIM_JAX_PYTHON)"
            else:
                row["jax_skipped"] = "JAX comparator written for p1_alg1 and sgd_pair only"
            # --- p2: the double loop over pairs (the kernel before it used stabsim.kernels.allpairs)
            if fam == "p2_alg1":
                Tl = f["Tloop"][qi]
                loop = p2_loop_call(X, y, nb, Tl, R, f["sigma"])
                chk = loop()  # compile / load, and the check against the kernel
                dsk = kernel(fam, X, y, Tl, R, ck=[Tl])
                lp = dsk.loss_path[:, -1].values
                row["loop_matches_kernel"] = close(chk[:, 0], dsk.dist_iterate[:, -1].values, 1e-8) and \
                    close(chk[:, 1], lp, 1e-9)
                row["loop_max_rel_diff_dist"] = float(np.max(np.abs(chk[:, 0] - dsk.dist_iterate[:, -1].values)
                                                             / np.abs(dsk.dist_iterate[:, -1].values)))
                numba.set_num_threads(1)
                thr = thread_pair(loop, rep)
                row["loop_T"] = Tl
                row["loop_1t_ns"] = thr[1]["wall_s"] / (Tl * R) * 1e9
                if 2 in thr:
                    row["loop_2t_ns"] = thr[2]["wall_s"] / (Tl * R) * 1e9
                    row["loop_speedup_2t"] = thr[1]["wall_s"] / thr[2]["wall_s"]
                row["loop_over_kernel"] = row["loop_1t_ns"] / row["kernel_1t_ns"]
            row["naive_over_kernel"] = row["naive_ns"] / row["kernel_R1_1t_ns"]
            if "kernelcall_R1_ns" in row:
                row["naive_over_kernelcall"] = row["naive_ns"] / row["kernelcall_R1_ns"]
            row["vec_over_kernel"] = row["vec_ns"] / row["kernel_1t_ns"]
            row["load_end"] = bt.load_now()["loadavg_1_5_15"]
            rows.append(row)
            log("   " + ", ".join(f"{k_}={v:.4g}" if isinstance(v, float) else f"{k_}={v}"
                                  for k_, v in row.items() if k_.endswith(("_ns", "matches_kernel", "speedup_2t"))))
    return rows


# ---------------------------------------------------------------------------------------------
# 2. all-pairs gradient at n = 10^4

def allpairs_section(args):
    from p2_fast import naive_allpairs
    n = 10_000
    rows_sub = 50 if args.quick else 200
    out = []
    for d in DIMS:
        X, y = dataset(d, n + 1)
        X[n] = X[3] + 0.5           # replacement row for S' (krow = n)
        y[n] = -y[3]
        w = np.random.default_rng(1).normal(size=d) / np.sqrt(d)
        for lossname in ("auc_squared", "auc_hinge", "auc_logistic", "ranking_logistic"):
            L = get_loss(lossname)
            work = np.empty(ap.allpairs_work_size(n))
            dx = np.empty(d)
            for prime in (False, True):
                g = np.zeros(d)
                ap.allpairs_grad(L.form, L.phi, L.q, n, X, y, prime, 3, n, w, 1.0, g, work)
                gn = np.zeros(d)
                naive_allpairs(L.form, L.phi, L.q, n, X, y, prime, 3, n, w, 1.0, gn, dx, 2)
            row = {"loss": lossname, "n": n, "d": d, "load_start": bt.load_now()["loadavg_1_5_15"]}

            def fast():
                g = np.zeros(d)
                return ap.allpairs_grad(L.form, L.phi, L.q, n, X, y, True, 3, n, w, 1.0, g, work), g
            m = timed(fast, max(3, args.repeat) if not lossname.endswith("logistic") else args.repeat)
            row["fast_s"] = m["wall_s"]
            m = timed(lambda: naive_allpairs(L.form, L.phi, L.q, n, X, y, True, 3, n, w, 1.0, np.zeros(d), dx,
                                             rows_sub), args.repeat)
            row["naive_rows_timed"] = rows_sub
            row["naive_s_extrapolated"] = m["wall_s"] * n / rows_sub
            row["fast_over_naive"] = row["naive_s_extrapolated"] / row["fast_s"]
            if lossname == "auc_squared" and (d == 10 or not args.quick):
                vf, gf = fast()
                gn = np.zeros(d)
                t0 = time.perf_counter()
                vn = naive_allpairs(L.form, L.phi, L.q, n, X, y, True, 3, n, w, 1.0, gn, dx, n)
                row["naive_full_s"] = time.perf_counter() - t0
                row["loss_rel_diff"] = abs(vf - vn) / abs(vn)
                row["grad_rel_diff"] = float(np.max(np.abs(gf - gn)) / np.max(np.abs(gn)))
                row["identical_1e-10"] = row["loss_rel_diff"] <= 1e-10 and row["grad_rel_diff"] <= 1e-10
            if lossname == "auc_squared":
                st = np.zeros(ps.stats_shape(d))
                ps.class_stats(n, X, y, True, 3, n, st)
                ws = np.empty(d)

                def stat():
                    g = np.zeros(d)
                    return ps.allpairs_squared_stats(L.form, n, st, w, 1.0, g, ws), g
                stat()
                vs, gs = stat()
                vf, gf = fast()
                row["stats_per_step_s"] = timed(stat, max(3, args.repeat))["wall_s"]
                row["stats_setup_s"] = timed(lambda: ps.class_stats(n, X, y, True, 3, n, st), args.repeat)["wall_s"]
                row["stats_vs_fast_rel_diff"] = max(abs(vs - vf) / abs(vf),
                                                    float(np.max(np.abs(gs - gf)) / np.max(np.abs(gf))))
            row["load_end"] = bt.load_now()["loadavg_1_5_15"]
            out.append(row)
            log(f"   allpairs {lossname} d={d}: fast {row['fast_s'] * 1e3:.3f} ms, naive (extrap.) "
                f"{row['naive_s_extrapolated']:.2f} s -> {row['fast_over_naive']:.0f}x"
                + (f"; full naive {row['naive_full_s']:.1f} s, rel diff loss {row['loss_rel_diff']:.1e} "
                   f"grad {row['grad_rel_diff']:.1e}" if "naive_full_s" in row else ""))
    # all-previous: O(t d) loop vs O(d^2) statistics, per call at t previous draws
    prev = []
    for d in DIMS:
        X, y = dataset(d, 1000)
        L = get_loss("auc_squared")
        for t in (1000, 10000):
            hist = np.random.default_rng(2).integers(0, 1000, size=t).astype(np.int64)
            st = np.zeros(ps.stats_shape(d))
            for b in hist:
                ps.stats_add(st, X, y, int(b))
            w = np.random.default_rng(3).normal(size=d) / np.sqrt(d)
            ws = np.empty(d)
            a = 5
            g1, g2 = np.zeros(d), np.zeros(d)
            v1 = apv.allprev_pairs(L.form, L.phi, L.q, w, X, y, a, hist, t, False, -1, 1000, 1.0, g1)
            v2 = ps.allprev_squared(L.form, w, X, y, a, t, st, 1.0, g2, ws)
            n_call = 200
            m1 = timed(lambda: [apv.allprev_pairs(L.form, L.phi, L.q, w, X, y, a, hist, t, False, -1, 1000, 1.0, g1)
                                for _ in range(n_call)], args.repeat)
            m2 = timed(lambda: [ps.allprev_squared(L.form, w, X, y, a, t, st, 1.0, g2, ws) for _ in range(n_call)],
                       args.repeat)
            st2 = st.copy()   # stats_add's cost does not depend on the counts: add to a scratch copy
            m3 = timed(lambda: [ps.stats_add(st2, X, y, 7) for _ in range(n_call)], args.repeat)
            prev.append({"d": d, "t": t, "loop_us": m1["wall_s"] / n_call * 1e6,
                         "stats_us": m2["wall_s"] / n_call * 1e6,
                         "stats_add_us": m3["wall_s"] / n_call * 1e6,
                         "rel_diff": max(abs(v1 - v2) / abs(v1), float(np.max(np.abs(g1 - g2)) / np.max(np.abs(g1)))),
                         "note": "per call incl. Python call overhead (~0.3 us)"})
            log(f"   all-previous squared d={d} t={t}: loop {prev[-1]['loop_us']:.1f} us, stats "
                f"{prev[-1]['stats_us']:.1f} us (+ add {prev[-1]['stats_add_us']:.1f} us), rel diff {prev[-1]['rel_diff']:.1e}")
    return {"allpairs_n1e4": out, "allprev": prev}


# ---------------------------------------------------------------------------------------------
# 3. compile / import, 4. suite

PROBE = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, sys.argv[1])
    t0 = time.perf_counter()
    import stabsim
    from stabsim import make_problem, run_twin
    t1 = time.perf_counter()
    X, y = make_problem("auc_noisy", d=5).sample(50, seed=0)
    kw = dict(algorithm="p1_alg1", loss="auc_hinge", T=10, replicates=2, neighbour="flip", checkpoints=[10])
    run_twin(X, y, **kw)
    t2 = time.perf_counter()
    run_twin(X, y, **kw)
    t3 = time.perf_counter()
    import numpy as np
    from stabsim.kernels import allpairs as ap
    from stabsim.engine.losses import get_loss
    L = get_loss("auc_squared")
    Xe = np.ascontiguousarray(np.vstack([X, X[:1]])); ye = np.r_[y, -y[0]]
    work = np.empty(ap.allpairs_work_size(50)); g = np.zeros(5)
    t4 = time.perf_counter()
    ap.allpairs_grad(L.form, L.phi, L.q, 50, Xe, ye, True, 0, 50, X[0].copy(), 1.0, g, work)
    t5 = time.perf_counter()
    print(json.dumps({"import_s": t1 - t0, "first_run_twin_s": t2 - t1, "second_run_twin_s": t3 - t2,
                      "first_allpairs_s": t5 - t4}))
""")


def probe(cache_dir=None, timeout=1800):
    env = dict(os.environ)
    if cache_dir:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([sys.executable, "-c", PROBE, str(ROOT)], capture_output=True, text=True, env=env,
                       timeout=timeout)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[-3:]}
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["cpu_s"] = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    return out


def compile_section(args, tmpdir):
    res = {}
    imp = []
    for _ in range(3):
        p = subprocess.run([sys.executable, "-c", "import sys,time; sys.path.insert(0, sys.argv[1]); "
                            "t=time.perf_counter(); import stabsim; print(time.perf_counter()-t)", str(ROOT)],
                           capture_output=True, text=True)
        imp.append(float(p.stdout.strip()))
    res["import_stabsim_s"] = min(imp)
    res["import_stabsim_all_s"] = imp
    res["load_start"] = bt.load_now()["loadavg_1_5_15"]
    probe()  # populate the default on-disk cache if the sources changed
    res["cached"] = probe()
    log(f"   import stabsim {res['import_stabsim_s']:.2f} s; with the on-disk cache: first run_twin "
        f"{res['cached'].get('first_run_twin_s', float('nan')):.2f} s")
    if args.skip_cold:
        res["cold"] = "skipped (--quick or --skip-cold)"
    else:
        cdir = Path(tmpdir) / "numba_cache_cold"
        cdir.mkdir()
        res["cold"] = probe(cdir)
        res["cold_then_cached"] = probe(cdir)
        log(f"   cold: first run_twin {res['cold'].get('first_run_twin_s', float('nan')):.1f} s, "
            f"first allpairs {res['cold'].get('first_allpairs_s', float('nan')):.1f} s")
    res["load_end"] = bt.load_now()["loadavg_1_5_15"]
    return res


SUITE = textwrap.dedent("""
    import json, resource, subprocess, sys, time
    t0 = time.perf_counter()
    p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"rc": p.returncode, "wall_s": wall, "maxrss_kb": ru.ru_maxrss,
                      "cpu_s": ru.ru_utime + ru.ru_stime, "tail": p.stdout.strip().splitlines()[-3:],
                      "stderr_tail": p.stderr.strip().splitlines()[-3:]}))
""")


def suite_section(tmpdir, study="suite", quick=True, keep_out=None):
    """``stabsim run STUDY [--quick]`` in a wrapper process: wall time, CPU time, peak RSS.
    ``keep_out``: write the results there (relative to the repository root; must not exist,
    so that nothing is reused) instead of a temporary folder, with the report beside it."""
    exe = shutil.which("stabsim")
    cmd = [exe] if exe else [sys.executable, "-m", "stabsim.cli"]
    out = Path(tmpdir) / ("suite" if quick else "suite_full") / "out"
    if keep_out:
        if (ROOT / keep_out).exists():
            raise SystemExit(f"--full-suite-out {keep_out}: already exists; the suite would reuse its "
                             "finished chunks and the timing would be meaningless (remove it first)")
        out = Path(keep_out)
    flag = ["--quick"] if quick else []
    load0 = bt.load_now()["loadavg_1_5_15"]
    p = subprocess.run([sys.executable, "-c", SUITE, *cmd, "run", study, *flag, "--out", str(out),
                        "--no-progress"], capture_output=True, text=True, cwd=str(ROOT), timeout=3 * 3600)
    if p.returncode != 0 or not p.stdout.strip():
        return {"error": (p.stderr or "no output").strip().splitlines()[-3:]}
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["command"] = (f"stabsim run {study}{' --quick' if quick else ''} "
                      f"--out {keep_out if keep_out else '$TMP/out'} --no-progress")
    res["peak_rss_mb"] = res["maxrss_kb"] / 1024
    res["load_start"], res["load_end"] = load0, bt.load_now()["loadavg_1_5_15"]
    log(f"   {res['command'].split(' --out')[0]}: rc {res['rc']}, {res['wall_s']:.0f} s wall, "
        f"peak RSS {res['peak_rss_mb']:.0f} MB")
    return res


# ---------------------------------------------------------------------------------------------
# RESULTS.md

def fmt(v, spec=".0f"):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "-"
    return format(v, spec)


def write_md(res, path):
    m = res["machine"]
    L = []
    L.append("# Benchmark results (issue #7)\n")
    L.append(f"Generated by `{res['command']}` on {res['load_before']['time']}.  "
             "Every number is a minimum over repeats; see `benchmarks/README.md` for definitions.\n")
    L.append(f"**Machine:** {m['cpu_model']} ({m['logical_cores']} logical cores, usable {m['usable_cores']}; "
             f"SIMD {', '.join(m['simd'])}); {m['platform']}; Python {m['python']}, NumPy {m['numpy']}, "
             f"numba {m['numba']}, {m['gcc'] or 'no gcc'}.\n")
    # the load average at the start is what other jobs put on the machine; later values include
    # this benchmark's own 2-thread runs and suite sections, so they do not say the machine was busy
    busy = res["load_before"]["loadavg_1_5_15"][0]
    if busy > 1.0 or res.get("quick"):
        L.append(f"> **Caveat:** {'`--quick` sizes; ' if res.get('quick') else ''}"
                 + (f"1-minute load average {busy:.1f} at the start on {m['logical_cores']} cores: every process got a "
                    "fraction of a core, wall times are inflated and unevenly so, and the 2-thread speed-ups "
                    "measure the other jobs.  Rerun on an idle machine for representative numbers; the "
                    "correctness checks (`ok`, relative differences) are unaffected." if busy > 1.0 else
                    "numbers are indicative only.") + "\n")
    L.append(f"**Load:** before `{res['load_before']['uptime']}`; after `{res['load_after']['uptime']}`.  "
             "Each section also records the 1/5/15-min load averages at its start and end; they rise during "
             "the run because the benchmark's own 2-thread runs and suite sections load both cores.  Load "
             "from other jobs at the start (above ~0.2 on 2 cores) inflates wall times and distorts the "
             "2-thread speed-ups.\n")
    if res.get("families"):
        L.append("## 1. ns per twin step, by algorithm family\n")
        L.append("One twin step = one step on S plus one on S'.  `kernel R=1` = `run_twin` with one replicate "
                 "(includes run_twin's own Python overhead); `1 thr` / `2 thr` = R replicates on 1 / 2 numba "
                 "threads (per replicate-step); `naive` = Python loop with NumPy per step (1 replicate); "
                 "`NumPy vec` = NumPy vectorised across replicates (per replicate-step); `C` = gcc -O3 "
                 "-march=native -ffp-contract=off loop (1 replicate; c/twin_p1.c, c/twin_families.c); `JAX` = lax.scan + vmap, 1 core (per replicate-step).  "
                 "`ok` = every comparator reproduces the kernel's final ||w_T - w'_T|| and ||A(S) - A(S')|| "
                 "(sigma = 0, same draws, rel. 1e-9).  Single-thread columns (kernel R=1, call, naive, NumPy "
                 "vec, C): minimum over interleaved rounds, each round running every implementation once.\n")
        L.append("| family | d | loss | T | kernel R=1 | kernel call R=1 | 1 thr | 2 thr | speed-up | naive | NumPy vec "
                 "| C | JAX | naive/kernel | naive/call | kernel/C | call/C | ok | load |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in res["families"]:
            oks = [r.get(k) for k in ("naive_matches_kernel", "vec_matches_kernel", "c_matches_kernel",
                                      "jax_matches_kernel", "loop_matches_kernel") if k in r]
            L.append(f"| {r['family']} | {r['d']} | {r['loss']} | {r['T']:,} | {fmt(r['kernel_R1_1t_ns'])} | "
                     f"{fmt(r.get('kernelcall_R1_ns'))} | {fmt(r['kernel_1t_ns'])} | {fmt(r.get('kernel_2t_ns'))} | {fmt(r.get('speedup_2t'), '.2f')} | "
                     f"{fmt(r['naive_ns'])} | {fmt(r['vec_ns'])} | {fmt(r.get('c_ns'))} | {fmt(r.get('jax_ns'))} | "
                     f"{fmt(r['naive_over_kernel'])}x | {fmt(r.get('naive_over_kernelcall'))}x | "
                     f"{fmt(r.get('kernel_R1_over_c'), '.2f')} | "
                     f"{fmt(r.get('kernelcall_over_c'), '.2f')} | {'yes' if all(oks) else 'NO'} | {r['load_start'][0]:.1f}-{r['load_end'][0]:.1f} |")
            if r["family"] == "p2_alg1":
                L.append(f"| p2_alg1 double loop | {r['d']} | {r['loss']} | {r['loop_T']:,} | - | - | {fmt(r['loop_1t_ns'])} | "
                         f"{fmt(r.get('loop_2t_ns'))} | {fmt(r.get('loop_speedup_2t'), '.2f')} | - | - | - | - | "
                         f"loop/kernel {fmt(r['loop_over_kernel'])}x | - | - | "
                         f"{'yes' if r['loop_matches_kernel'] else 'NO'} | |")
        L.append("")
        L.append("p0_alg1 costs O(t) per step: its ns per twin step is the average over t = 1..T.  p2_alg1 is at "
                 "n = 200 (all n(n-1) pairs per step; `naive` is the Python double loop, `NumPy vec` the (R, n, n) "
                 "margin tensors; the kernel uses `stabsim.kernels.allpairs`); `p2_alg1 double loop` is the same twin loop "
                 "with the O(n^2 d) double loop over pairs that the kernel had before (`benchmarks/p2_fast.py`), "
                 "checked against `run_twin`.  `kernel call` = the twin kernel call "
                 "alone inside the `kernel R=1` runs (run_twin's own Python work excluded, as in bench_twin.py): the "
                 "number to set against C.  Not measured: "
                 + "; ".join(sorted({f"{r['family']}: " + "; ".join(x for x in (r.get('c_skipped'), r.get('jax_skipped')) if x)
                                     for r in res["families"] if r.get("c_skipped") or r.get("jax_skipped")})) + ".\n")
    if res.get("allpairs"):
        a = res["allpairs"]
        L.append("## 2. P2 all-pairs gradient at n = 10^4 (S', one call = loss + gradient over n(n-1) ordered pairs)\n")
        L.append("AUC losses and `ranking_logistic` (the loss of P2's studies; labels +-1).  "
                 "`naive` = the numba double loop over ordered pairs (`benchmarks/p2_fast.py`, the twin kernel's FULL_BATCH branch before it used this module), timed on the first "
                 "`rows` values of i and extrapolated by n / rows; `full naive` = the whole double loop, run once "
                 "for the squared loss to compare results.\n")
        L.append("| loss | d | fast (ms) | naive, extrapolated (s) | rows timed | fast/naive speed-up | full naive (s) "
                 "| rel. diff loss | rel. diff grad | load |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        for r in a["allpairs_n1e4"]:
            L.append(f"| {r['loss']} | {r['d']} | {r['fast_s'] * 1e3:.3f} | {r['naive_s_extrapolated']:.2f} | "
                     f"{r['naive_rows_timed']} | {r['fast_over_naive']:,.0f}x | {fmt(r.get('naive_full_s'), '.1f')} | "
                     f"{fmt(r.get('loss_rel_diff'), '.1e')} | {fmt(r.get('grad_rel_diff'), '.1e')} | "
                     f"{r['load_start'][0]:.1f} |")
        L.append("")
        sq = [r for r in a["allpairs_n1e4"] if r["loss"] == "auc_squared"]
        L.append("Squared loss from sufficient statistics (`class_stats` once per run, O(n d^2); then "
                 "`allpairs_squared_stats`, O(d^2) per step): "
                 + "; ".join(f"d={r['d']}: set-up {r['stats_setup_s'] * 1e3:.2f} ms, per step (incl. the Python call) "
                             f"{r['stats_per_step_s'] * 1e6:.1f} us, rel. diff to the O(n d) path "
                             f"{r['stats_vs_fast_rel_diff']:.1e}" for r in sq) + ".\n")
        L.append("All-previous average (P0 Alg. 1 / P3 GIGA), squared AUC loss, per call from Python (~0.3 us of call "
                 "overhead included): O(t d) loop "
                 "(`allprev_pairs`) vs O(d^2) class statistics (`allprev_squared`; `stats_add` per new draw):\n")
        L.append("| d | t | loop (us) | statistics (us) | stats_add (us) | rel. diff |")
        L.append("|---|---|---|---|---|---|")
        for r in a["allprev"]:
            L.append(f"| {r['d']} | {r['t']:,} | {r['loop_us']:.1f} | {r['stats_us']:.2f} | {r['stats_add_us']:.2f} | "
                     f"{r['rel_diff']:.1e} |")
        L.append("")
    if res.get("compile"):
        c = res["compile"]
        L.append("## 3. Compile and import time\n")
        L.append(f"`import stabsim`: {c['import_stabsim_s']:.2f} s (min of 3 fresh interpreters).\n")
        L.append("| cache | first run_twin (s) | second run_twin (s) | first allpairs call (s) | process CPU (s) |")
        L.append("|---|---|---|---|---|")
        for key, lab in (("cold", "empty NUMBA_CACHE_DIR (cold compile)"), ("cold_then_cached", "same dir, second process"),
                         ("cached", "default on-disk cache")):
            v = c.get(key)
            if isinstance(v, dict) and "error" not in v:
                L.append(f"| {lab} | {v['first_run_twin_s']:.2f} | {v['second_run_twin_s']:.3f} | "
                         f"{v['first_allpairs_s']:.2f} | {v['cpu_s']:.1f} |")
            elif v is not None:
                L.append(f"| {lab} | {v} | | | |")
        L.append(f"\nload {c['load_start'][0]:.1f}-{c['load_end'][0]:.1f}\n")
    if res.get("suite") and "error" in res["suite"]:
        L.append(f"## 4. suite\n\nFailed: {res['suite']['error']}\n")
    elif res.get("suite"):
        s = res["suite"]
        L.append(f"## 4. `{s['command']}`\n")
        L.append(f"Exit code {s['rc']}; wall time {s['wall_s']:.0f} s (target < 600 s); peak RSS {s['peak_rss_mb']:.0f} MB "
                 f"(ru_maxrss of the largest process); CPU {s['cpu_s']:.0f} s; load {s['load_start'][0]:.1f}-"
                 f"{s['load_end'][0]:.1f}.\n")
    else:
        L.append("## 4. `stabsim run suite --quick`\n")
        L.append("Not run in this invocation (`--quick` skips it; run the full command or add `--suite`).\n")
    s = res.get("suite_full")
    if s:
        L.append(f"## 5. `{s.get('command', 'stabsim run suite')}` (full profile, `--full-suite`)\n")
        L.append(f"Failed: {s['error']}\n" if "error" in s else
                 f"Exit code {s['rc']}; wall time {s['wall_s']:.0f} s; peak RSS {s['peak_rss_mb']:.0f} MB (ru_maxrss "
                 f"of the largest process); CPU {s['cpu_s']:.0f} s; load {s['load_start'][0]:.1f}-"
                 f"{s['load_end'][0]:.1f}.\n")
    if res.get("targets_report"):
        L.append("## Targets (reported, not asserted)\n")
        for k, v in res["targets_report"].items():
            L.append(f"- {k}: {v}")
        L.append("")
    Path(path).write_text("\n".join(L + kept_sections(path)) + "\n")


def kept_sections(path) -> list:
    """The sections of the existing file that other scripts or notes maintain, between markers
    ``<!-- NAME -->`` and ``<!-- /NAME -->`` (the GPU benchmark's, issue #17's side-by-side
    table): kept, in their order, at the end of the regenerated file."""
    p = Path(path)
    text = p.read_text() if p.exists() else ""
    return [m.group(0) + "\n" for m in re.finditer(r"<!-- ([\w-]+) -->.*?<!-- /\1 -->", text, flags=re.S)]


def targets_report(res):
    out = {}
    fam = {(r["family"], r["d"]): r for r in res.get("families", [])}
    r = fam.get(("p1_alg1", 10))
    if r:
        # "the kernel" is the kernel call; run_twin with one replicate adds its per-call Python
        # set-up (1-4 ms at T = 10^6: step-size arrays, checkpoint sums, the Dataset), which
        # the replicates share when R > 1.  Both are reported; the verdict is on the call.
        nk = r.get("naive_over_kernelcall", r["naive_over_kernel"])
        out["p1_alg1 kernel >= 150x faster than naive at d=10"] = \
            f"kernel call {nk:.0f}x, run_twin R=1 {r['naive_over_kernel']:.0f}x -> " \
            f"{'met' if nk >= 150 else 'NOT met'}"
        if "kernel_R1_over_c" in r:
            kc = r.get("kernelcall_over_c")
            out["p1_alg1 kernel within 1.3x of C at d=10"] = \
                f"run_twin {r['kernel_R1_over_c']:.2f}x" + (f", kernel call {kc:.2f}x" if kc else "") + \
                (f" (medians of per-round ratios {r['kernel_R1_over_c_paired_median']:.2f}x / "
                 f"{r.get('kernelcall_over_c_paired_median', float('nan')):.2f}x)"
                 if "kernel_R1_over_c_paired_median" in r else "") + \
                f" -> {'met' if min(r['kernel_R1_over_c'], kc or 1e9) <= 1.3 else 'NOT met'}"
        if "speedup_2t" in r:
            out["2-thread speed-up >= 1.8 (p1_alg1, d=10)"] = \
                f"{r['speedup_2t']:.2f}x (cores obtained {r['cores_used_2t']:.2f}) -> " \
                f"{'met' if r['speedup_2t'] >= 1.8 else 'NOT met'}"
    sq = [a for a in res.get("allpairs", {}).get("allpairs_n1e4", []) if a["loss"] == "auc_squared"]
    for a in sq:
        ok = a["fast_over_naive"] >= 100 and a.get("identical_1e-10", None) is not False
        out[f"P2 all-pairs AUC squared, n=10^4, d={a['d']}: >= 100x, identical to 1e-10"] = \
            f"{a['fast_over_naive']:,.0f}x, rel. diff " + \
            (f"{max(a['loss_rel_diff'], a['grad_rel_diff']):.1e}" if "loss_rel_diff" in a else "not checked (quick)") + \
            f" -> {'met' if ok else 'NOT met'}"
    s = res.get("suite")
    if s and "error" not in s:
        out[f"{s['command'].split(' --out')[0]} under 10 minutes"] = f"{s['wall_s']:.0f} s -> {'met' if s['wall_s'] < 600 else 'NOT met'}"
    return out


def main(argv=None):
    ap_ = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap_.add_argument("--quick", action="store_true", help="smaller sizes; no cold compile, no suite run")
    ap_.add_argument("--repeat", type=int, default=None, help="timed runs per number (default 3, quick 2)")
    ap_.add_argument("--families", nargs="*", default=list(FAMILIES), choices=list(FAMILIES))
    ap_.add_argument("--skip", nargs="*", default=[], choices=["families", "allpairs", "compile", "suite"])
    ap_.add_argument("--skip-cold", action="store_true", help="no cold-cache compile (default with --quick)")
    ap_.add_argument("--suite", action="store_true", help="run the suite even with --quick")
    ap_.add_argument("--full-suite-out", metavar="DIR",
                     help="keep the full-profile suite's results in DIR (relative to the repository root, "
                          "must not exist; the report goes beside it, e.g. DIR=out -> reports/)")
    ap_.add_argument("--full-suite", action="store_true",
                     help="also run the full-profile suite (`stabsim run suite`, about 15 minutes): wall time, peak RSS")
    ap_.add_argument("--suite-study", default="suite",
                     help="what section 4 runs (default: the whole suite; a study id to test the section)")
    ap_.add_argument("--jax-python", default=None,
                     help="interpreter with JAX for the JAX comparator ('none' to skip); default: this one if it "
                          "imports jax, else $STABSIM_JAX_PYTHON")
    ap_.add_argument("--out-json", default=str(HERE / "results_all.json"))
    ap_.add_argument("--out-md", default=str(HERE / "RESULTS.md"))
    args = ap_.parse_args(argv)
    args.repeat = args.repeat or (2 if args.quick else 3)
    args.skip_cold = args.skip_cold or args.quick
    t_start = time.perf_counter()
    res = {"command": " ".join(["python benchmarks/run_all.py", *(argv if argv is not None else sys.argv[1:])]),
           "quick": args.quick, "machine": bt.machine_info(), "load_before": bt.load_now(), "targets": TARGETS}
    log(f"load: {res['load_before']['uptime']}")
    tmp = tempfile.TemporaryDirectory(prefix="stabsim_run_all_")
    cloops = {}
    if shutil.which("gcc"):
        try:
            cloops["c"] = bt.CLoop(tmp.name, ["-O3", "-march=native", "-ffp-contract=off"], "nofma")
            cloops["families"] = CFamilies(tmp.name)
            res["c_build"] = {"twin_p1.c": cloops["c"].cmd.replace(tmp.name, "$TMP"),
                              "twin_families.c": cloops["families"].cmd.replace(tmp.name, "$TMP")}
        except (subprocess.CalledProcessError, OSError) as exc:
            res["c_build"] = f"C loop skipped: {exc}"
    else:
        res["c_build"] = "gcc not found: C loop skipped"
    jaxpy = jax_python(args.jax_python)
    res["jax_python"] = jaxpy or "not installed"
    numba.set_num_threads(1)
    if "families" not in args.skip:
        log("1. families")
        res["families"] = families(args, tmp.name, cloops, jaxpy, bt.KernelTimer())
    if "allpairs" not in args.skip:
        log("2. all-pairs gradient, n = 10^4")
        res["allpairs"] = allpairs_section(args)
    if "compile" not in args.skip:
        log("3. compile / import")
        res["compile"] = compile_section(args, tmp.name)
    if "suite" not in args.skip and (args.suite or not args.quick):
        log("4. stabsim run suite --quick")
        res["suite"] = suite_section(tmp.name, args.suite_study)
    if args.full_suite:
        log("5. stabsim run suite (full profile)")
        res["suite_full"] = suite_section(tmp.name, args.suite_study, quick=False, keep_out=args.full_suite_out)
    res["load_after"] = bt.load_now()
    res["targets_report"] = targets_report(res)
    res["benchmark_wall_s"] = time.perf_counter() - t_start
    for k, v in res["targets_report"].items():
        log(f"  {k}: {v}")
    Path(args.out_json).write_text(json.dumps(res, indent=2, default=float) + "\n")
    write_md(res, args.out_md)
    log(f"wrote {args.out_json} and {args.out_md} ({res['benchmark_wall_s']:.0f} s)")
    tmp.cleanup()
    return res


if __name__ == "__main__":
    main()
