"""P1 Sec. 6 on real data: Table 1 (test AUC of five methods) and Figure 1 (CPU time vs AUC).

Kind ``p1_table1``
    One cell = one data set (``[data] dataset``, swept as ``dataset``) x one method
    (``[algorithm] method``, swept as ``method``: p1_alg1, sgd_pair, olp, oam_gra, spauc; see
    ``stabsim.kernels.baselines``).  Replicate r is outer split ``fold = r % folds`` of repeat
    ``r // folds`` of a repeated K-fold split (the P1 authors use 5 folds x 5 repeats; external
    information, errata P1-D).  Per replicate:

    1. split: repeat q permutes the rows with ``stabsim.rng`` stream STREAM_SPLIT of
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
    the P1 rule (``stabsim.datasets.load`` defaults; the authors' preprocessing).  All
    methods use the same l2 ball (``radius``).  Variables: ``auc`` (replicate, ck),
    ``cpu`` (replicate, ck), ``ck_step`` (ck), ``eta`` and ``c_chosen`` (replicate),
    ``cv_auc`` (replicate, grid), ``n_train``, ``T``.  Everything but ``cpu`` is a pure function
    of (study, seed, replicate id); ``cpu`` is a measurement of this machine and run.

Check ``p1_table1``
    Reproduction comparison with P1 Table 1 (the paper's numbers copied verbatim from the
    paper, errata P1-D): per data set and method, the mean +- std over replicates of the
    test AUC of the final output against the paper's mean +- std; verdict "consistent" iff
    |ours - paper| <= 0.02 + 2 x (paper's std), a tolerance fixed before any run,
    "inconsistent" only when |ours - paper| exceeds it by more than 1.96 standard errors of our
    mean, else "inconclusive".  Also per
    data set: P1's two qualitative claims, "Alg. 1 is competitive" (its mean AUC within
    0.01 + 2 x its std of the best method's mean) and Figure 1's "OLP and OAM_gra need
    more CPU time than Alg. 1 and SGD_pair" (mean CPU time of the final run).  Figures:
    ``table1_auc.png`` (ours vs paper) and ``fig1_cpu_auc.png`` (mean test AUC against mean
    CPU time along the checkpoints, log time axis, as P1 Figure 1).
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from ..study import Param, StudyError, StudySpec, _Bad, choice, integer, number, register_kind
from ..verdicts import Verdict
from ..analyses.base import CheckResult, register_check

METHOD_NAMES = ("p1_alg1", "sgd_pair", "olp", "oam_gra", "spauc")
METHOD_LABELS = {"p1_alg1": "Ours (Alg. 1)", "sgd_pair": "SGD_pair", "olp": "OLP", "oam_gra": "OAM_gra",
                 "spauc": "SPAUC"}
DATASETS = ("diabetes", "german", "satimage", "letter", "mnist5k", "digits")
#: our data set -> the paper's column (stand-ins: satimage for ijcnn1, mnist5k for mnist, digits for usps)
PAPER_NAME = {"diabetes": "diabetes", "german": "german", "satimage": "ijcnn1", "letter": "letter",
              "mnist5k": "mnist", "digits": "usps"}
#: P1 Table 1 (mean, std), verbatim from the paper (seed 001, Sec. 6).
PAPER_TABLE1 = {
    "p1_alg1": {"diabetes": (.831, .030), "german": (.793, .021), "ijcnn1": (.934, .002), "letter": (.810, .007),
                "mnist": (.932, .001), "usps": (.926, .006)},
    "sgd_pair": {"diabetes": (.830, .028), "german": (.794, .023), "ijcnn1": (.934, .003), "letter": (.811, .008),
                 "mnist": (.932, .001), "usps": (.925, .006)},
    "olp": {"diabetes": (.825, .028), "german": (.787, .028), "ijcnn1": (.916, .003), "letter": (.808, .010),
            "mnist": (.927, .003), "usps": (.917, .006)},
    "oam_gra": {"diabetes": (.828, .026), "german": (.785, .029), "ijcnn1": (.930, .003), "letter": (.806, .008),
                "mnist": (.898, .002), "usps": (.916, .005)},
    "spauc": {"diabetes": (.828, .031), "german": (.799, .026), "ijcnn1": (.932, .002), "letter": (.809, .008),
              "mnist": (.927, .002), "usps": (.923, .005)},
}
TOL_ABS, TOL_SD = 0.02, 2.0
COMPETITIVE_ABS, COMPETITIVE_SD = 0.01, 2.0


def _passes(v):
    """A number > 0, or a table {dataset: passes} with an optional ``default``."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k != "default" and k not in DATASETS:
                raise _Bad(f"table keys must be data set names ({', '.join(DATASETS)}) or 'default', got {k!r}")
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not (x > 0 and math.isfinite(x)):
                raise _Bad(f"table values must be numbers > 0, got {k} = {x!r}")
            out[k] = float(x)
        return out
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v > 0 and math.isfinite(v)):
        raise _Bad("must be a number > 0 (passes over the training set) or a table {dataset = passes, default = ...}")
    return float(v)


def _grid(v):
    if (not isinstance(v, list) or not v or any(isinstance(x, bool) or not isinstance(x, (int, float))
                                                 or not (x > 0 and math.isfinite(x)) for x in v)):
        raise _Bad("must be a non-empty list of numbers > 0 (step-size constants c, eta = c / sqrt(T))")
    if len(set(v)) != len(v):
        raise _Bad("must not repeat a value")
    return [float(x) for x in sorted(v)]


def passes_for(value, dataset: str) -> float:
    if isinstance(value, dict):
        if dataset in value:
            return value[dataset]
        if "default" in value:
            return value["default"]
        raise ValueError(f"passes table has no entry for {dataset!r} and no 'default'")
    return float(value)


PARAMS = {
    "data": {
        "dataset": Param("data set (stabsim.datasets canonical name; stand-ins: satimage = ijcnn1, "
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
    folds = spec.sections["data"]["folds"]
    if spec.replicates % folds:
        raise StudyError(f"[study] replicates = {spec.replicates} must be a multiple of [data] folds = {folds} "
                         f"(replicate r is fold r % folds of repeat r // folds)")


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
    """(train, test) row indices of fold ``fold`` of repeat ``repeat`` (stabsim.rng STREAM_SPLIT)."""
    from .. import rng

    perm = np.argsort(rng.uniforms(seed, repeat, rng.STREAM_SPLIT, n), kind="stable")
    parts = np.array_split(perm, folds)
    test = parts[fold]
    train = np.concatenate([parts[k] for k in range(folds) if k != fold])
    return train, test


def inner_split(seed: int, replicate: int, n_train: int, n_total: int, frac: float):
    """(inner train, validation) positions within the training set (STREAM_SPLIT of (seed, r), counters n_total..)."""
    from .. import rng

    u = rng.uniforms(seed, replicate, rng.STREAM_SPLIT, n_train, start=n_total)
    perm = np.argsort(u, kind="stable")
    m = max(2, int(round(frac * n_train)))
    return perm[m:], perm[:m]


def _both_classes(y):
    return (y == 1).any() and (y == -1).any()


@register_kind("p1_table1", params=PARAMS, validate=_validate,
               description="P1 Table 1 / Fig. 1: repeated K-fold test AUC and CPU time of Alg. 1 and four baselines")
def p1_table1_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One (dataset, method) cell; see the module docstring."""
    from .. import datasets
    from ..baselines import run_method
    from ..risk import auc

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
    for k, r in enumerate(np.asarray(replicates, dtype=np.int64)):
        repeat, fold = int(r) // folds, int(r) % folds
        tr, te = split_indices(spec.seed, repeat, fold, n, folds)
        Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
        itr, iva = inner_split(spec.seed, int(r), len(tr), n, dp["cv_fraction"])
        if not (_both_classes(ytr[itr]) and _both_classes(ytr[iva]) and _both_classes(yte)):
            raise ValueError(f"{name}: a split of replicate {r} lacks a class; use fewer folds")
        Tcv = max(2, int(round(cv_passes * len(itr))))
        for g, c in enumerate(grid):
            trj = run_method(method, Xtr[itr], ytr[itr], eta=c / math.sqrt(Tcv), T=Tcv, radius=ap["radius"],
                             seed=spec.seed, replicate=int(r), buffer=buf)
            cv[k, g] = auc(trj.outputs[-1], Xtr[iva], ytr[iva])
        best = int(np.nanargmax(np.where(np.isfinite(cv[k]), cv[k], -np.inf)))
        chosen[k] = grid[best]
        n_train = len(tr)
        T = max(C, int(round(passes * n_train)))
        steps = log_steps(T, C)
        etas[k] = grid[best] / math.sqrt(T)
        trj = run_method(method, Xtr, ytr, eta=etas[k], T=T, radius=ap["radius"], seed=spec.seed,
                         replicate=int(r), checkpoints=steps, buffer=buf)
        aucs[k] = np.atleast_1d(auc(trj.outputs, Xte, yte))
        cpus[k] = trj.cpu
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


# ---- the check ----------------------------------------------------------------------------------

def _sel(ds, dataset, method):
    sub = ds
    if "dataset" in ds.dims:
        sub = sub.sel(dataset=dataset)
    if "method" in ds.dims:
        sub = sub.sel(method=method)
    return sub


def _cell_values(spec, ds):
    """[(dataset, method, sub-dataset)] over the cells present."""
    from ..analyses.base import sweep_slices

    out = []
    for _label, params, sub in sweep_slices(spec, ds):
        out.append((params["data"]["dataset"], params["algorithm"]["method"], sub))
    return out


@register_check("p1_table1", description="P1 Table 1 / Fig. 1 reproduction: test AUC vs the paper, CPU time vs AUC")
def check_table1(spec, ds) -> CheckResult:
    from .. import datasets

    res = CheckResult()
    cells = _cell_values(spec, ds)
    dsets = list(dict.fromkeys(c[0] for c in cells))
    meths = [m for m in METHOD_NAMES if any(c[1] == m for c in cells)]
    stats = {}
    for name, method, sub in cells:
        final = sub["auc"].isel(ck=-1).values
        curve = sub["auc"].mean("replicate").values
        stats[(name, method)] = {
            "mean": float(np.mean(final)), "std": float(np.std(final)), "R": int(final.size),
            "paper_style": float(np.max(curve)),
            "cpu": float(sub["cpu"].isel(ck=-1).mean()), "cpu_curve": sub["cpu"].mean("replicate").values,
            "auc_curve": curve, "c": sub["c_chosen"].values, "T": int(sub["T"]), "n_train": int(sub["n_train"]),
            "passes": float(sub["passes"]), "cv_passes": float(sub["cv_passes"]),
        }
    fig_t = res.figure("table1_auc.png", _table_figure(stats, dsets, meths))
    fig_c = res.figure("fig1_cpu_auc.png", _cpu_figure(stats, dsets, meths))
    rows = []
    for name in dsets:
        pname = PAPER_NAME[name]
        stand = datasets._resolve(name).stand_in
        for method in meths:
            st = stats[(name, method)]
            pm, psd = PAPER_TABLE1[method][pname]
            diff = st["mean"] - pm
            tol = TOL_ABS + TOL_SD * psd
            ok = abs(diff) <= tol
            # "inconsistent" is a claim: |diff| must exceed the tolerance by more than 1.96 of our mean's SE
            se = st["std"] / math.sqrt(st["R"]) if st["R"] > 1 else math.inf
            verdict = "consistent" if ok else ("inconsistent" if abs(diff) - tol > 1.96 * se else "inconclusive")
            notes = (f"ours {st['mean']:.3f} +- {st['std']:.3f} (R = {st['R']}, SE {se:.3g}), paper {pm:.3f} +- {psd:.3f}, "
                     f"diff {diff:+.3f}, tolerance {tol:.3f}",
                     f"T = {st['T']} ({st['passes']:g} passes over n_tr = {st['n_train']}), chosen c: "
                     f"{_counts(st['c'])}")
            v = Verdict(key="P1.Table1", quantity="test AUC (mean over splits)", tag="REPRO",
                        verdict=verdict, n_replicates=st["R"], level=0.95,
                        worst_margin=tol - abs(diff), worst_at={"diff": round(diff, 4)}, notes=notes)
            expl = None
            if not ok:
                others = [stats[(name, m)]["mean"] for m in meths]
                expl = _miss_explanation(name, pname, method, diff, st, stand, (min(others), max(others)),
                                         spec.sections["algorithm"]["eta_grid"])
            label = f"{name}{' [stand-in for ' + pname + ']' if stand else ''} / {METHOD_LABELS[method]}"
            # compared with the paper's number: on a stand-in that number is context, not a reference value
            res.add(v, figure=fig_t, label=label, explanation=expl, data="stand-in" if stand else "real",
                    stand_in_for=pname if stand else None)
            rows.append((name, pname, stand, method, st, pm, psd, diff, tol, ok))
        # qualitative claims per data set
        if "p1_alg1" in meths and len(meths) > 1:
            a = stats[(name, "p1_alg1")]
            best_m = max(meths, key=lambda m: stats[(name, m)]["mean"])
            gap = stats[(name, best_m)]["mean"] - a["mean"]
            tolc = COMPETITIVE_ABS + COMPETITIVE_SD * a["std"]
            ok = gap <= tolc
            b = stats[(name, best_m)]
            se_gap = math.sqrt(a["std"] ** 2 / a["R"] + b["std"] ** 2 / b["R"]) if min(a["R"], b["R"]) > 1 else math.inf
            verdict = "consistent" if ok else ("inconsistent" if gap - tolc > 1.96 * se_gap else "inconclusive")
            v = Verdict(key="P1.Sec6.competitive", quantity="best mean AUC - Alg. 1 mean AUC", tag="CLAIM",
                        verdict=verdict, n_replicates=a["R"], level=0.95,
                        worst_margin=tolc - gap, notes=(f"best: {METHOD_LABELS[best_m]} {stats[(name, best_m)]['mean']:.3f}; "
                                                       f"Alg. 1 {a['mean']:.3f}; tolerance {tolc:.3f}",))
            res.add(v, figure=fig_t, label=name, data="stand-in" if stand else "real", explanation=None if ok else (
                f"Alg. 1 is {gap:.3f} below {METHOD_LABELS[best_m]} on {name}, more than 0.01 + 2 x its split std; "
                + ("stand-in data set; " if datasets._resolve(name).stand_in else "")
                + "scaled budget (fewer passes/repeats than the paper) and a 4-value step grid"))
        buffered = [m for m in ("olp", "oam_gra") if m in meths]
        cheap = [m for m in ("p1_alg1", "sgd_pair") if m in meths]
        if buffered and cheap:
            slow = min(stats[(name, m)]["cpu"] for m in buffered)
            fast = max(stats[(name, m)]["cpu"] for m in cheap)
            ok = slow > fast
            v = Verdict(key="P1.Fig1.cpu", quantity="CPU time of the final run (mean)", tag="CLAIM",
                        verdict="consistent" if ok else "inconsistent", n_replicates=stats[(name, cheap[0])]["R"],
                        level=math.nan, worst_margin=slow - fast,
                        notes=("; ".join(f"{METHOD_LABELS[m]} {stats[(name, m)]['cpu']:.3g} s" for m in meths),))
            res.add(v, figure=fig_c, label=name, data="stand-in" if stand else "real", explanation=None if ok else (
                "the buffered methods were not slower at this size; at tiny T the per-call overhead dominates"))
    res.notes.append(_markdown_table(rows))
    res.notes.append(f"Tolerance (fixed before running): |ours - paper| <= {TOL_ABS} + {TOL_SD:g} x paper's std. "
                     "'Ours' = mean +- std over the replicates (outer folds) of the test AUC of the FINAL output, "
                     "with the step tuned on an inner hold-out of the training fold. 'paper-style' = the authors' "
                     "reporting (max over checkpoints of the mean test AUC; the authors' script also tuned on the "
                     "test fold), optimistic by construction.")
    res.notes.append("Stand-ins (no package ships the paper's files): satimage (class 4 vs rest, 9.7 % positives) "
                     "for ijcnn1, mnist5k (5000-image MNIST subset) for mnist, sklearn digits (8x8) for usps; their "
                     "Table 1 rows show the paper's number for context only (verdict 'stand-in (no paper value)', "
                     "the tolerance rule's verdict in the notes, left out of the headline counts); their qualitative "
                     "rows (competitive, CPU) are judged and marked data = stand-in.")
    res.notes.append("Step size eta = c / sqrt(T) constant (the authors' 'const' geometry), c from the grid "
                     f"{list(spec.sections['algorithm']['eta_grid'])}; radius {spec.sections['algorithm']['radius']:g} "
                     "for all methods (the paper tunes it too; fixed here to keep the grid small).")
    for (name, method), st in stats.items():
        res.measured[f"AUC {name}/{method}"] = round(st["mean"], 4)
        res.measured[f"CPU s {name}/{method}"] = round(st["cpu"], 4)
    return res


def _counts(c) -> str:
    vals, cnt = np.unique(np.asarray(c, dtype=float), return_counts=True)
    return ", ".join(f"{v:g} x{k}" for v, k in zip(vals, cnt))


def _miss_explanation(name, pname, method, diff, st, stand, spread, grid) -> str:
    parts = [f"reproduction miss: ours - paper = {diff:+.3f}"]
    if stand:
        parts.append(f"{name} is a STAND-IN for the paper's {pname} (different data; the paper's number is not "
                     f"expected to transfer): all methods give {spread[0]:.3f}-{spread[1]:.3f} on {name}, so the "
                     "gap is the data set's, shared by every method")
    if st["passes"] < 10:
        parts.append(f"scaled budget: {st['passes']:g} passes instead of the authors' 10")
    if st["paper_style"] - st["mean"] > 0.005:
        parts.append(f"the curve peaks before the end: the paper's reporting (max over checkpoints of the mean "
                     f"test AUC) gives {st['paper_style']:.3f} here, diff {st['paper_style'] - (st['mean'] - diff):+.3f}")
    if method == "oam_gra" and st["paper_style"] - st["mean"] > 0.005:
        parts.append("OAM_gra's step C_t = c max(1, N_opp / N) multiplies an unnormalised sum over the buffer and "
                     "grows linearly in t, so its final average decays after a peak")
    c = np.asarray(st["c"], dtype=float)
    if np.mean((c == min(grid)) | (c == max(grid))) > 0.5:
        parts.append(f"the tuned step sits at the edge of the grid {list(grid)} in most splits")
    if method == "spauc":
        parts.append("SPAUC optimises the square loss, not the hinge")
    return "; ".join(parts)


def _markdown_table(rows) -> str:
    lines = ["P1 Table 1 reproduction (test AUC, mean +- std over replicates):", "",
             "| data (paper's) | method | ours | paper | diff | tol | paper-style ours | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for name, pname, stand, method, st, pm, psd, diff, tol, ok in rows:
        dn = f"{name} ({pname}{', STAND-IN' if stand else ''})"
        lines.append(f"| {dn} | {METHOD_LABELS[method]} | {st['mean']:.3f} +- {st['std']:.3f} | {pm:.3f} +- {psd:.3f} "
                     f"| {diff:+.3f} | {tol:.3f} | {st['paper_style']:.3f} | {'consistent' if ok else 'MISS'} |")
    return "\n".join(lines)


def _table_figure(stats, dsets, meths):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from .. import datasets

    fig = Figure(figsize=(max(7.0, 1.7 * len(dsets)), 5.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(meths))
    colors = [f"C{i}" for i in range(len(meths))]
    for j, m in enumerate(meths):
        x = np.arange(len(dsets)) + (j - (len(meths) - 1) / 2) * width
        ours = [stats[(dn, m)]["mean"] for dn in dsets]
        osd = [stats[(dn, m)]["std"] for dn in dsets]
        pap = [PAPER_TABLE1[m][PAPER_NAME[dn]][0] for dn in dsets]
        psd = [PAPER_TABLE1[m][PAPER_NAME[dn]][1] for dn in dsets]
        ax.errorbar(x - width * 0.15, ours, yerr=osd, fmt="o", color=colors[j], label=f"{METHOD_LABELS[m]} (ours)")
        ax.errorbar(x + width * 0.15, pap, yerr=psd, fmt="x", color=colors[j], alpha=0.6,
                    label=f"{METHOD_LABELS[m]} (paper)")
    ax.set_xticks(np.arange(len(dsets)))
    ax.set_xticklabels([dn + ("*" if datasets._resolve(dn).stand_in else "") + f"\n({PAPER_NAME[dn]})"
                        for dn in dsets])
    ax.set_ylabel("test AUC (mean +- std)")
    ax.set_title("P1 Table 1: ours (o) vs paper (x); * = stand-in data set")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="x-small", ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    return fig


def _cpu_figure(stats, dsets, meths):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ncol = min(3, len(dsets))
    nrow = int(math.ceil(len(dsets) / ncol))
    fig = Figure(figsize=(4.2 * ncol, 3.4 * nrow), layout="constrained")
    FigureCanvasAgg(fig)
    for i, dn in enumerate(dsets):
        ax = fig.add_subplot(nrow, ncol, i + 1)
        for j, m in enumerate(meths):
            st = stats[(dn, m)]
            t = np.maximum(st["cpu_curve"], 1e-6)
            ax.plot(t, st["auc_curve"], "-o", ms=3, color=f"C{j}", label=METHOD_LABELS[m])
        ax.set_xscale("log")
        ax.set_xlabel("CPU time (s, log scale)")
        ax.set_ylabel("test AUC")
        ax.set_title(f"{dn} ({PAPER_NAME[dn]})")
        ax.grid(True, alpha=0.3)
        if i == 0:
            ax.legend(fontsize="x-small")
    fig.suptitle("P1 Figure 1: CPU time vs AUC (mean over replicates, final run)")
    return fig
