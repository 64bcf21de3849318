"""P1 (Yang et al. 2021) Sec. 6 on real data: the ``p1_table1`` study kind, the runs behind Table 1
(test AUC of five methods) and Figure 1 (CPU time vs AUC) (study ``p1_table1``; errata P1-D).

Kind ``p1_table1``
    One cell = one data set (``[data] dataset``, swept as ``dataset``) x one method
    (``[algorithm] method``, swept as ``method``: p1_alg1, sgd_pair, olp, oam_gra, spauc; see
    ``stabsim.kernels.baselines``).  Replicate r is outer split ``fold = r % folds`` of repeat
    ``r // folds`` of a repeated K-fold split (the P1 authors use 5 folds x 5 repeats; external
    information, errata P1-D).  Per replicate:

    1. split: repeat q permutes the rows with ``stabsim.engine.rng`` stream STREAM_SPLIT of
       (seed, q) (argsort of n uniforms, counters 0..n-1); fold f of ``np.array_split`` is
       the test set, the rest the training set (n_tr ~ 0.8 n);
    2. step-size tuning (cross validation over a small grid, P1 Sec. 6 "eta tuned by cross
       validation"): an inner hold-out split of the training set (25 % validation, from
       STREAM_SPLIT of (seed, r), counters n..), one run per grid value c with eta = c / sqrt(T_cv),
       T_cv = cv_passes x n_inner; the c with the best validation AUC of the final output wins
       (ties: the smaller c).  Unlike the authors' script, the test fold is never used to tune;
    3. the final run on the whole training set, T = passes x n_tr steps, eta = c* / sqrt(T)
       (constant), outputs and CPU time recorded at ``checkpoints`` log-spaced steps; the
       test AUC of each output (``stabsim.risk.auc``).

    Features are min-max scaled to [-1, 1] over the whole data set and labels binarised by
    the P1 rule (``stabsim.engine.real_datasets.load`` defaults; the authors' preprocessing).  All
    methods use the same l2 ball (``radius``).  Variables: ``auc`` (replicate, ck),
    ``cpu`` (replicate, ck), ``ck_step`` (ck), ``eta`` and ``c_chosen`` (replicate),
    ``cv_auc`` (replicate, grid), ``n_train``, ``T``.  Everything but ``cpu`` is a pure function
    of (study, seed, replicate id); ``cpu`` is a measurement of this machine and run.

Its check, the comparison with the paper's numbers, is ``p1_table1``
(``stabsim.analyses.p1_reproduction``).
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from stabsim.setups.p1 import DATASETS, METHOD_NAMES
from stabsim.registry import BadValue, Param, StudyError, StudySpec, choice, integer, number, register_kind
from stabsim.runtime.thread_pools import map_in_threads


# ---- the study file's sections -----------------------------------------------------------------

def _passes(v):
    """A number > 0, or a table {dataset: passes} with an optional ``default``."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k != "default" and k not in DATASETS:
                raise BadValue(f"table keys must be data set names ({', '.join(DATASETS)}) or 'default', got {k!r}")
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not (x > 0 and math.isfinite(x)):
                raise BadValue(f"table values must be numbers > 0, got {k} = {x!r}")
            out[k] = float(x)
        return out
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v > 0 and math.isfinite(v)):
        raise BadValue("must be a number > 0 (passes over the training set) or a table {dataset = passes, default = ...}")
    return float(v)


def _grid(v):
    """``[algorithm] eta_grid``: distinct numbers > 0 (the constants c of eta = c / sqrt(T)), sorted."""
    if (not isinstance(v, list) or not v or any(isinstance(x, bool) or not isinstance(x, (int, float))
                                                 or not (x > 0 and math.isfinite(x)) for x in v)):
        raise BadValue("must be a non-empty list of numbers > 0 (step-size constants c, eta = c / sqrt(T))")
    if len(set(v)) != len(v):
        raise BadValue("must not repeat a value")
    return [float(x) for x in sorted(v)]


def passes_for(value, dataset: str) -> float:
    """The passes of data set ``dataset`` from a number or a ``{dataset = passes, default = ...}`` table."""
    if isinstance(value, dict):
        if dataset in value:
            return value[dataset]
        if "default" in value:
            return value["default"]
        raise ValueError(f"passes table has no entry for {dataset!r} and no 'default'")
    return float(value)


PARAMS = {
    "data": {
        "dataset": Param("data set (stabsim.engine.real_datasets canonical name; stand-ins: satimage = ijcnn1, "
                         "mnist5k = mnist, digits = usps)", "diabetes", choice(DATASETS)),
        "folds": Param("K of the repeated K-fold split", 5, integer(2, " (folds)"), sweepable=False),
        "cv_fraction": Param("validation share of the inner hold-out split", 0.25,
                             number(gt=0, lt=1, what=" (validation fraction)"), sweepable=False),
    },
    "algorithm": {
        "method": Param("p1_alg1, sgd_pair, olp, oam_gra or spauc", "p1_alg1", choice(METHOD_NAMES)),
        "passes": Param("T = passes x n_train (number or {dataset = passes, default = ...})", 10.0, _passes,
                        sweepable=False),
        "cv_passes": Param("passes of the tuning runs (number or table; default: passes)", None, _passes,
                           sweepable=False),
        "radius": Param("radius of the l2 ball W (same for all methods)", 10.0, number(gt=0), sweepable=False),
        "eta_grid": Param("step-size constants c (eta = c / sqrt(T)) tried by cross validation",
                          [0.1, 1.0, 10.0, 100.0], _grid, sweepable=False),
        "olp_buffer": Param("OLP buffer size s", 200, integer(1, " (buffer size)"), sweepable=False),
        "oam_buffer": Param("OAM_gra buffer size per class", 100, integer(1, " (buffer size)"), sweepable=False),
        "checkpoints": Param("number of log-spaced checkpoints of the final run", 12, integer(2, " (checkpoints)"),
                             sweepable=False),
    },
}


def _validate(spec: StudySpec):
    """Replicate r is fold r % folds of repeat r // folds: the replicates fill whole repeats."""
    folds = spec.sections["data"]["folds"]
    if spec.replicates % folds:
        raise StudyError(f"[study] replicates = {spec.replicates} must be a multiple of [data] folds = {folds} "
                         f"(replicate r is fold r % folds of repeat r // folds)")


# ---- splits and checkpoints ----------------------------------------------------------------------

def log_steps(T: int, count: int, first_frac: float = 1 / 200) -> np.ndarray:
    """``count`` strictly increasing log-spaced steps from about T * first_frac to T."""
    if T < count:
        raise ValueError(f"T = {T} is smaller than the number of checkpoints ({count})")
    lo = max(1.0, T * first_frac)
    s = np.round(np.geomspace(lo, T, count)).astype(np.int64)
    for k in range(1, count):
        s[k] = max(s[k], s[k - 1] + 1)
    for k in range(count - 1, -1, -1):       # push back below T if the fix-up overshot
        s[k] = min(s[k], T - (count - 1 - k))
    return s


def split_indices(seed: int, repeat: int, fold: int, n: int, folds: int):
    """(train, test) row indices of fold ``fold`` of repeat ``repeat`` (stabsim.engine.rng STREAM_SPLIT)."""
    from stabsim.engine import rng

    perm = np.argsort(rng.uniforms(seed, repeat, rng.STREAM_SPLIT, n), kind="stable")
    parts = np.array_split(perm, folds)
    test = parts[fold]
    train = np.concatenate([parts[k] for k in range(folds) if k != fold])
    return train, test


def inner_split(seed: int, replicate: int, n_train: int, n_total: int, frac: float):
    """(inner train, validation) positions within the training set (STREAM_SPLIT of (seed, r), counters n_total..)."""
    from stabsim.engine import rng

    u = rng.uniforms(seed, replicate, rng.STREAM_SPLIT, n_train, start=n_total)
    perm = np.argsort(u, kind="stable")
    m = max(2, int(round(frac * n_train)))
    return perm[m:], perm[:m]


def _both_classes(y):
    """Whether labels ``y`` hold both classes (+1 and -1): an AUC needs both."""
    return (y == 1).any() and (y == -1).any()


# ---- the kind -------------------------------------------------------------------------------------

@register_kind("p1_table1", params=PARAMS, validate=_validate,
               description="P1 Table 1 / Fig. 1: repeated K-fold test AUC and CPU time of Alg. 1 and four baselines")
def p1_table1_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One (dataset, method) cell; see the module docstring."""
    from stabsim.engine import real_datasets as datasets
    from stabsim.engine.p1_baselines import run_method
    from stabsim.risk import auc

    p = spec.cell_params(cell)
    dp, ap = p["data"], p["algorithm"]
    name, method, folds = dp["dataset"], ap["method"], dp["folds"]
    X, y, info = datasets.load(name)
    n = len(y)
    passes = passes_for(ap["passes"], name)
    cv_passes = passes if ap["cv_passes"] is None else passes_for(ap["cv_passes"], name)
    grid = np.asarray(ap["eta_grid"], dtype=float)
    buf = {"olp": ap["olp_buffer"], "oam_gra": ap["oam_buffer"]}.get(method)
    C = ap["checkpoints"]
    R = len(replicates)
    aucs = np.full((R, C), np.nan)
    cpus = np.full((R, C), np.nan)
    cv = np.full((R, grid.size), np.nan)
    chosen = np.full(R, np.nan)
    etas = np.full(R, np.nan)
    steps = None
    n_train = T = None
    reps = np.asarray(replicates, dtype=np.int64)
    parts = []                   # per replicate: the outer split and the inner (tuning) split
    for r in reps:
        repeat, fold = int(r) // folds, int(r) % folds
        tr, te = split_indices(spec.seed, repeat, fold, n, folds)
        itr, iva = inner_split(spec.seed, int(r), len(tr), n, dp["cv_fraction"])
        if not (_both_classes(y[tr[itr]]) and _both_classes(y[tr[iva]]) and _both_classes(y[te])):
            raise ValueError(f"{name}: a split of replicate {r} lacks a class; use fewer folds")
        parts.append((tr, te, itr, iva))

    def tune(k, g):              # one tuning run: its validation AUC
        tr, _, itr, iva = parts[k]
        Tcv = max(2, int(round(cv_passes * len(itr))))
        trj = run_method(method, X[tr[itr]], y[tr[itr]], eta=grid[g] / math.sqrt(Tcv), T=Tcv,
                         radius=ap["radius"], seed=spec.seed, replicate=int(reps[k]), buffer=buf)
        cv[k, g] = auc(trj.outputs[-1], X[tr[iva]], y[tr[iva]])

    # The tuning runs are independent (each a pure function of its arguments; the kernels release
    # the GIL): on numba's threads at once.  The final runs, whose CPU time is measured, run one at
    # a time afterwards, with nothing else running in this process.
    map_in_threads(lambda kg: tune(*kg), [(k, g) for k in range(R) for g in range(grid.size)])
    outputs = []
    for k, r in enumerate(reps):
        tr = parts[k][0]
        best = int(np.nanargmax(np.where(np.isfinite(cv[k]), cv[k], -np.inf)))
        chosen[k] = grid[best]
        n_train = len(tr)
        T = max(C, int(round(passes * n_train)))
        steps = log_steps(T, C)
        etas[k] = grid[best] / math.sqrt(T)
        trj = run_method(method, X[tr], y[tr], eta=etas[k], T=T, radius=ap["radius"], seed=spec.seed,
                         replicate=int(r), checkpoints=steps, buffer=buf)
        outputs.append(trj.outputs)
        cpus[k] = trj.cpu
    # the test AUCs after the timed runs: a matrix product here starts OpenBLAS's threads, which
    # keep spinning for a while after it and would be counted in the next run's process CPU time
    # (it inflates OLP's and OAM_gra's CPU times; benchmarks/README.md, "Thread pools")
    for k, (_, te, _, _) in enumerate(parts):
        aucs[k] = np.atleast_1d(auc(outputs[k], X[te], y[te]))
    ds = xr.Dataset(
        {"auc": (("replicate", "ck"), aucs, {"long_name": "test AUC of the output", "units": "1"}),
         "cpu": (("replicate", "ck"), cpus, {"long_name": "CPU time of the final run up to the checkpoint",
                                              "units": "s", "description": "time.process_time, kernel only"}),
         "ck_step": (("ck",), steps, {"long_name": "checkpoint step t"}),
         "cv_auc": (("replicate", "grid"), cv, {"long_name": "validation AUC of the tuning run per grid value"}),
         "c_chosen": (("replicate",), chosen, {"long_name": "chosen step constant c (eta = c / sqrt(T))"}),
         "eta": (("replicate",), etas, {"long_name": "step size of the final run"}),
         "n_train": ((), n_train), "T": ((), T), "passes": ((), passes), "cv_passes": ((), cv_passes)},
        coords={"replicate": np.asarray(replicates, dtype=np.int64), "grid": grid})
    ds.attrs.update(stand_in=int(bool(info["stand_in"])), n=int(n), d=int(X.shape[1]))
    return ds
