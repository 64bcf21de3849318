"""Twin runs on user-supplied arrays: the Python entry point to the twin kernel.

``run_twin(X, y, ...)`` validates the input, builds the neighbours, calls the kernel and
returns an ``xarray.Dataset`` with dims ``replicate`` and ``t`` (the checkpoints).
"""

from __future__ import annotations

import threading

import math
import numbers
from typing import NamedTuple

import numpy as np
import xarray as xr

from stabsim.engine import rng
from stabsim.engine.algorithm_specs import get_algorithm
from stabsim.engine.backend import device_description, resolve_backend, thread_default
from stabsim.engine.constraints import get_constraint
from stabsim.kernels import N_REC, TwinConfig, twin_kernel
from stabsim.kernels.twin import call_specialises, checkpoint_sums
from stabsim.engine.losses import get_loss
from stabsim.engine.neighbours import as_neighbour, make_neighbours
from stabsim.runtime.provenance import provenance
from stabsim.runtime.resources import check_memory, fmt_bytes, twin_bytes
from stabsim.engine.steps import kernel_step_sizes
from stabsim.engine.validation import check_Xy, positive_int

REC_VARS = (
    ("dist_iterate", "||w_t - w'_t||", "distance between the iterates on S and S'"),
    ("dist_output", "||A_t(S) - A_t(S')||", "distance between the algorithm outputs on S and S' after t steps"),
    ("loss_path", "sum_{j<=t} fhat_j(w_{j-1})", "cumulative loss of the step's pairs at the pre-step iterate (run on S)"),
    ("loss_ref_path", "sum_{j<=t} fhat_j(w_ref)", "cumulative loss of the step's pairs at the reference point w_ref"),
    ("eta2_loss_path", "sum_{j<=t} eta_j^2 fhat_j(w_{j-1})", "unbiased estimate of sum_j eta_j^2 F_S(w_{j-1}) for independently drawn pairs"),
)


def log_checkpoints(T: int, count: int = 30) -> np.ndarray:
    """About ``count`` log-spaced distinct steps in [1, T], always including T."""
    pts = np.unique(np.round(np.logspace(0, math.log10(T), int(count))).astype(np.int64))
    return np.unique(np.r_[pts[(pts >= 1) & (pts <= T)], T])


def replicate_count(replicates) -> int:
    """R of ``run_twin``'s ``replicates`` without building the ids (a count is checked here; an
    array is the caller's, already in memory)."""
    if isinstance(replicates, (int, np.integer)):
        return positive_int("replicates", int(replicates))
    return int(np.size(replicates))


def replicate_ids(replicates) -> np.ndarray:
    """``run_twin``'s ``replicates``: a count R (ids 0..R-1) or an array of ids >= 0, as int64."""
    if isinstance(replicates, (int, np.integer)):
        return np.arange(replicate_count(replicates), dtype=np.int64)
    reps = np.asarray(replicates, dtype=np.int64).ravel()
    if reps.size == 0 or np.any(reps < 0):
        raise ValueError("replicates must be a positive count or a non-empty array of ids >= 0")
    return reps


def _initial_points(w0, R, p, reps, seed, constraint, md):
    if w0 is None:
        return np.zeros((R, p))
    if isinstance(w0, str):
        if w0 != "random":
            raise ValueError(f"w0 must be None (zeros), 'random' or an array, got {w0!r}")
        W = np.stack([rng.normals(seed, int(r), rng.STREAM_INIT, p) for r in reps]) / math.sqrt(p)
        for i in range(R):
            W[i] = constraint.project(W[i], md or None)
        return W
    W = np.asarray(w0, dtype=np.float64)
    if W.shape == (p,):
        W = np.broadcast_to(W, (R, p))
    if W.shape != (R, p) or not np.all(np.isfinite(W)):
        raise ValueError(f"w0 must be finite with shape ({p},) or ({R}, {p}), got {W.shape}")
    # always a writable copy: a read-only array (broadcast_to above with R = 1, or the caller's) is
    # another numba type, and each kernel kind would be compiled a second time for it
    return np.array(W, order="C", copy=True)


def extend_with_replacements(X, Y, xrep, yrep):
    """The kernel's data layout: S's n rows followed by the replacement rows.

    One shared data set (nS = 1): rows n..n+R-1 hold the R replacements, krows[r] = n + r.
    One data set per replicate: row n of data set r holds its replacement, krows[r] = n.
    """
    nS, n, d = X.shape
    R = xrep.shape[0]
    if nS == 1:
        Xext = np.concatenate([X[0], xrep])[None]
        Yext = np.concatenate([Y[0], yrep])[None]
        krows = n + np.arange(R, dtype=np.int64)
    else:
        Xext = np.concatenate([X, xrep[:, None, :]], axis=1)
        Yext = np.concatenate([Y, yrep[:, None]], axis=1)
        krows = np.full(R, n, dtype=np.int64)
    return np.ascontiguousarray(Xext), np.ascontiguousarray(Yext), krows


def twin_memory(*, R, n, d, p, md, C, T, nS, record_outputs, eta, alg, lossf) -> dict:
    """``stabsim.runtime.resources.twin_bytes`` for one ``run_twin`` configuration."""
    from stabsim.kernels.twin_steps import ALL_PREV, FULL_BATCH
    from stabsim.engine.losses import AUC, AUC_ORDERED, RANKING, SQUARED

    const = isinstance(eta, numbers.Real) or (isinstance(eta, (list, tuple)) and len(eta) == 2
                                              and isinstance(eta[0], str) and eta[0] == "constant")
    steps = (0 if const else 1) + (1 if alg.output == "t_weighted_lag2" else 0)
    all_prev = alg.schedule == ALL_PREV
    linear = lossf.form in (AUC, AUC_ORDERED, RANKING)
    return twin_bytes(R=R, n=n, d=d, p=p, md=md, C=C, T=T, nS=nS, record_outputs=record_outputs,
                      step_arrays=steps, all_prev=all_prev, full_batch=alg.schedule == FULL_BATCH,
                      stats=all_prev and linear and lossf.phi == SQUARED)


def check_twin_memory(**kw) -> None:
    """Raise ``ResourceError`` (before anything is allocated) when ``run_twin`` would need more
    memory than the machine has; the message names the size and how to shrink it."""
    est = twin_memory(**kw)
    R, C, T, p = kw["R"], kw["C"], kw["T"], kw["p"]
    parts = ", ".join(f"{k} {fmt_bytes(v)}" for k, v in est.items() if k != "total")
    check_memory(est["total"], f"run_twin with {R} replicates x {C} checkpoints (T = {T}, {p} parameters; "
                 f"{parts})", "use fewer replicates (run them in blocks: each replicate depends only on (seed, "
                 "replicate id)), fewer checkpoints, a smaller d, or record_outputs=False")


def run_twin(X, y, *, algorithm="p1_alg1", loss="auc_hinge", constraint="none", eta=0.1,
             T=1000, replicates=100, seed=0, neighbour="farthest", checkpoints=None,
             record_outputs=False, w0=None, sigma=0.0, independent_noise=False, buffer=None,
             output=None, q=None, w_ref=None, problem=None, progress=None, backend=None,
             mirror_identical=True, raw=False, specialise=None) -> xr.Dataset:
    """Run ``algorithm`` on S = (X, y) and on its neighbour S' with shared randomness.

    Parameters
    ----------
    X, y : arrays (n, d) and (n,), or (R, n, d) and (R, n) for one data set per replicate
        (on-average stability, P4 Def. 6).
    algorithm : name in ``stabsim.engine.algorithm_specs.ALGORITHMS`` (``p1_alg1``, ``sgd_pair``, ...).
    loss : name in ``stabsim.engine.losses.LOSSES`` (``auc_hinge``, ``auc_squared``, ...).
    constraint : ``"none"``, ``("l2", R)``, ``"l2:R"``, ``("frobenius", R)``, ``("nuclear", R)``, ``"psd"``.
    eta : step sizes: a number (constant), ``("sqrt", c)``, ``("strongly_convex", alpha)``,
        ``("pl", mu)`` or an array of length T (see ``stabsim.engine.steps``).
    T : number of steps.  replicates : a count R (ids 0..R-1) or an array of replicate ids.
    seed : integer in [0, 2**63 - 1]; each replicate is a pure function of (seed, replicate id).
    neighbour : ``(k, x_new, y_new)``, a kind (``"farthest"``, ``"flip"``, ``"fresh"``,
        ``"heldout"``, ``"same"``) or a ``stabsim.engine.neighbours.Neighbour``.
    checkpoints : steps at which to record (default: about 30 log-spaced).
    record_outputs : also return the outputs A_t(S), A_t(S') (dims replicate, t, run, param).
    w0 : initial point: None (zeros), ``"random"`` or an array (p,) / (R, p).
    sigma : Gaussian gradient-noise level (P4 Alg. 1/2, P2 Alg. 1); 0 = non-private.
    independent_noise : draw the noise of S' independently (privacy audits), not shared.
    buffer : FIFO buffer size s for ``p1_buffer``.  output : another output rule.
    q : exponent of the q-norm hinge.  w_ref : reference point for the regret path.
    problem : the ``stabsim.engine.synthetic.Problem`` the data came from (for ``"fresh"`` neighbours).
    progress : None (default: a tqdm bar over replicate blocks when the call is estimated to take
        over ``PROGRESS_SECONDS``), True or False.  The numbers never depend on it.
    backend : ``"cpu"``, ``"cuda"`` (numba-cuda, one GPU thread per replicate) or ``"auto"`` (the
        GPU when usable, else the CPU with a warning); None: the thread's default
        (``stabsim.engine.backend.use_backend``; ``"cpu"``).  Both draw the same indices and noise;
        the numbers agree to rounding (docs/gpu.md).  Recorded in the attributes ``backend``
        and ``device``.
    mirror_identical : a replicate whose S' is S bit for bit, with shared noise, runs S once and
        reports it for both (same numbers as ``False``, which runs both: tests/test_mirror.py).
    raw : return a ``TwinRecord`` (the recorded arrays and the metadata; ``.dataset()`` gives the
        Dataset, ``.var(name)`` one (replicate, t) array) instead of building the Dataset (most of
        a short call's time): for callers that run many small calls (the worst-neighbour search).
    specialise : True runs the kernel compiled for this configuration (loss, constraint, noise,
        output rule, d as constants): the same numbers, faster at small d without noise
        (slower with it), after a first compilation of its own (cached on disk;
        benchmarks/README.md, "Specialised builds").  None
        (default): for a long noise-free call (``kernels.twin.wants_specialised``); False: never.

    Returns
    -------
    xarray.Dataset with ``dist_iterate``, ``dist_output``, ``loss_path``, ``loss_ref_path``,
    ``eta2_loss_path`` (replicate, t), coordinates ``sum_eta`` and ``sum_eta2`` (t), and
    provenance attributes.
    """
    lossf = get_loss(loss, q)
    alg = get_algorithm(algorithm, buffer=buffer, output=output)
    if alg.pairwise != lossf.pairwise:
        kind = "pairwise" if alg.pairwise else "pointwise"
        raise ValueError(f"algorithm {alg.name!r} is {kind} but loss {loss!r} is not; "
                         f"use a {'pairwise' if alg.pairwise else 'pointwise (point_*)'} loss")
    cons = get_constraint(constraint)
    X, y = check_Xy(X, y, pairwise_auc=lossf.form in (0, 1), copy=False)  # only read: the kernel gets new arrays
    if X.ndim == 2:
        X, y = X[None], y[None]
    nS, n, d = X.shape
    T = positive_int("T", T)
    seed = rng.check_seed(seed)
    R = replicate_count(replicates)  # the ids come after the memory check: 2e9 of them are 16 GB
    if nS not in (1, R):
        raise ValueError(f"a per-replicate data array needs {R} data sets (one per replicate), got {nS}")
    if n < alg.min_rows(T):
        raise ValueError(f"{alg.name} reads one new example per step: it needs n >= {alg.min_rows(T)} "
                         f"rows for T = {T}, got n = {n}")
    md = d if lossf.matrix else 0
    if cons.matrix and not lossf.matrix:
        raise ValueError(f"constraint {cons.name!r} is for matrix parameters (metric learning losses)")
    p = d * d if lossf.matrix else d
    ck = log_checkpoints(T) if checkpoints is None else np.unique(np.asarray(checkpoints, dtype=np.int64))
    if ck.size == 0 or ck[0] < 1 or ck[-1] > T:
        raise ValueError(f"checkpoints must be steps in [1, T={T}], got {ck.tolist()[:5]}...")
    check_twin_memory(R=R, n=n, d=d, p=p, md=md, C=ck.size, T=T, nS=nS, record_outputs=bool(record_outputs),
                      eta=eta, alg=alg, lossf=lossf)
    reps = replicate_ids(replicates)
    etas, es = kernel_step_sizes(eta, T)
    omegas, os_ = alg.kernel_omegas(etas, es, T)
    be = resolve_backend(backend)
    sigma = float(sigma)   # (checked with the rest of the kernel's configuration below)
    nb = as_neighbour(neighbour)
    kidx, xrep, yrep = make_neighbours(nb, X, y, reps, seed, problem=problem)
    kkern = mirrored_kidx(X, y, kidx, xrep, yrep) if mirror_identical else kidx
    W0 = _initial_points(w0, R, p, reps, seed, cons, md)
    wref = None if w_ref is None else np.ascontiguousarray(np.asarray(w_ref, float).ravel())
    if wref is not None and wref.shape != (p,):
        raise ValueError(f"w_ref must have {p} entries, got {wref.shape}")
    config = TwinConfig(schedule=alg.schedule, buffer=alg.buffer, sequential=alg.sequential, T=T, etas=etas,
                        eta_stride=es, form=lossf.form, phi=lossf.phi, q=lossf.q, ckind=cons.kind,
                        radius=cons.radius, md=md, sigma=sigma, independent_noise=independent_noise,
                        lag=alg.avg_lag, omegas=omegas, omega_stride=os_, checkpoints=ck,
                        record_outputs=record_outputs, w_ref=wref)
    spec = call_specialises(specialise, config, R * T, d)
    rec = np.full((R, ck.size, N_REC), np.nan)
    outs = np.zeros((R, ck.size, 2, p) if record_outputs else (1, 1, 2, 1))
    kernel = backend_kernel(be)
    spec_kw = {} if be == "cuda" else {"specialise": spec}
    # the GPU: one block, chunked by its memory (no progress bar)
    blocks, bar = ([slice(0, R)], None) if be == "cuda" else replicate_blocks(R, T, p, progress)
    try:
        for sl in blocks:  # replicate r depends only on (seed, r): any split gives the same numbers
            # the kernel's layout for this block's replicates (one block: all of them)
            Xext, Yext, krows = extend_with_replacements(X if nS == 1 else X[sl], y if nS == 1 else y[sl],
                                                         xrep[sl], yrep[sl])
            kernel(config, Xext, Yext, kkern[sl], krows, reps[sl], seed, W0[sl], rec[sl],
                   outs[sl] if record_outputs else outs, **spec_kw)
            if bar is not None:
                bar.update(sl.stop - sl.start)
    finally:
        if bar is not None:
            bar.close()
    record = TwinRecord(rec, outs if record_outputs else None, reps, ck, etas, es, kidx,
                        _meta(alg, lossf, cons, T, n, d, seed, sigma, independent_noise, nb, be, nS, eta))
    return record if raw else record.dataset()


def _meta(alg, lossf, cons, T, n, d, seed, sigma, independent_noise, nb, be, nS, eta) -> dict:
    """The provenance attributes of a ``run_twin`` Dataset."""
    return dict(
        algorithm=alg.name, algorithm_reference=alg.reference, buffer=alg.buffer, output_rule=alg.output,
        loss=lossf.name, constraint=cons.name, radius=cons.radius, T=T, n=n, d=d, seed=seed,
        sigma=sigma, noise="independent" if independent_noise else "shared",
        neighbour=nb.describe(), neighbour_relation="replace-one",
        backend=be, device=device_description() if be == "cuda" else "cpu",
        data_sets="per-replicate" if nS > 1 else "shared",
        eta=repr(eta) if not hasattr(eta, "__len__") or isinstance(eta, tuple) else "array")


class TwinRecord(NamedTuple):
    """What ``run_twin`` recorded, before it becomes a Dataset (``run_twin(raw=True)``)."""

    rec: np.ndarray          # (R, C, N_REC): the REC_VARS at the checkpoints
    outs: np.ndarray | None  # (R, C, 2, p) with record_outputs
    reps: np.ndarray
    ck: np.ndarray
    etas: np.ndarray
    es: int
    kidx: np.ndarray
    meta: dict

    def var(self, name: str) -> np.ndarray:
        """The (replicate, t) array of one of the REC_VARS (``dist_iterate``, ``dist_output``, ...)."""
        names = [v[0] for v in REC_VARS]
        if name not in names:
            raise ValueError(f"unknown recorded variable {name!r}; recorded: {', '.join(names)}")
        return self.rec[:, :, names.index(name)]

    def dataset(self) -> xr.Dataset:
        return _to_dataset(*self)


def mirrored_kidx(X, y, kidx, xrep, yrep):
    """``kidx`` with -1 (the kernel's "S' = S") for the replicates whose replacement equals the
    example it replaces bit for bit: X (nS, n, d), y (nS, n) with nS = 1 or R."""
    r = np.arange(len(kidx))
    s = r if X.shape[0] > 1 else np.zeros_like(r)
    k = np.maximum(kidx, 0)
    bits = lambda a: np.ascontiguousarray(a, dtype=np.float64).view(np.int64)  # noqa: E731 (-0.0 != 0.0)
    same = (kidx >= 0) & np.all(bits(X[s, k]) == bits(xrep), axis=1) & (bits(y[s, k]) == bits(yrep))
    return np.where(same, -1, kidx).astype(np.int64)


def backend_kernel(backend: str):
    """The twin kernel of a resolved backend ("cpu" or "cuda"; ``stabsim.engine.backend.resolve_backend``):
    ``kernels.twin_kernel`` or ``kernels.twin_cuda.twin_kernel_cuda`` (same arguments)."""
    if backend == "cuda":
        from stabsim.kernels.twin_cuda import twin_kernel_cuda

        return twin_kernel_cuda
    return twin_kernel


#: rough cost of one twin step at d = 10 on one core, for the progress estimate (an upper end of
#: what benchmarks/bench_twin.py measures: benchmarks/README.md, "run_twin's overhead per call")
NS_PER_TWIN_STEP = 50.0
#: a call estimated to take longer than this shows a progress bar (``progress=None``)
PROGRESS_SECONDS = 5.0


_PROGRESS = threading.local()


def progress_bars(enabled):
    """Within the block (this thread), ``run_twin(progress=None)`` uses ``enabled`` instead of its
    estimate (the study engine turns the bars off: it shows its own progress over chunks)."""
    return thread_default(_PROGRESS, enabled)


def replicate_blocks(R: int, T: int, p: int, progress=None):
    """(list of replicate slices, tqdm bar or None) for one ``run_twin`` call.

    The cost is estimated up front as T x R twin steps at ``NS_PER_TWIN_STEP`` ns (scaled by the
    parameter dimension p / 10 when larger).  ``progress=None`` shows a bar over ~20 replicate
    blocks when the estimate exceeds ``PROGRESS_SECONDS``; True / False force it on / off.  Blocks
    never change the numbers (every random number is a function of (seed, replicate, ...)); Ctrl-C
    stops the block in flight (the kernel checks a stop flag), and nothing is returned."""
    est = T * R * NS_PER_TWIN_STEP * max(1.0, p / 10) * 1e-9
    if progress is None:
        progress = getattr(_PROGRESS, "value", None)
    show = est > PROGRESS_SECONDS if progress is None else bool(progress)
    if not show or R < 2:
        return [slice(0, R)], None
    from tqdm.auto import tqdm

    edges = np.unique(np.linspace(0, R, min(R, 20) + 1).astype(int))
    bar = tqdm(total=R, unit="replicate", desc=f"run_twin (~{est:.0f} s estimated)", leave=False)
    return [slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])], bar


def _to_dataset(rec, outs, reps, ck, etas, es, kidx, meta) -> xr.Dataset:
    sums = checkpoint_sums(etas, np.int64(es), ck)
    coords = {"replicate": reps, "t": ck,
              "sum_eta": ("t", sums[0], {"long_name": "sum_{j<=t} eta_j"}),
              "sum_eta2": ("t", sums[1], {"long_name": "sum_{j<=t} eta_j^2"}),
              "eta_t": ("t", etas[ck * es], {"long_name": "eta_t"})}
    data = {name: (("replicate", "t"), rec[:, :, i], {"long_name": ln, "description": desc, "units": "1"})
            for i, (name, ln, desc) in enumerate(REC_VARS)}
    data["k"] = ("replicate", kidx, {"long_name": "index of the replaced example"})
    if outs is not None:
        data["output"] = (("replicate", "t", "run", "param"), outs,
                          {"long_name": "A_t(S), A_t(S')", "units": "1"})
        coords["run"] = ["S", "S'"]
    return xr.Dataset(data, coords=coords, attrs=provenance(**meta))
