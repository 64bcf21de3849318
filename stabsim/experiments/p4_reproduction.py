"""P4 Section 5 (Figures 1 and 2): test error of non-private SGD and DP-SGD (P4 Alg. 1) against eps
(studies ``p4_fig1_mse``, ``p4_fig2_misclass``; check ``p4_figures`` in
:mod:`stabsim.analyses.p4_reproduction`).

Kind ``p4_figure``
    P4 Alg. 1 (``p4_alg1``) on P4's synthetic designs (``p4_lsq``: least squares, Fig. 1;
    ``p4_logistic``: logistic regression, Fig. 2), one data set per replicate (a "run" of the paper
    = a fresh data set and a fresh run of the algorithm), w_1 = 0, constant eta, T steps.  ``[figure]
    eps`` = 0 is non-private SGD (sigma = 0); eps > 0 calibrates sigma by P4 Thm 2 with the paper's beta
    search (grid from 1e-4, step 1e-4, the step is ours) at delta = ``[figure] delta`` (0 = 1/n^2, the
    paper's).  Per replicate: the test metric of w_priv on one fresh test sample of size ``[figure] m``
    shared by all replicates (``metric``: mean squared error (x.w - y)^2, or the misclassification rate
    with a zero score counted as an error) and the same metric on the training set.

Choices where the paper is silent (errata P4-D): x uniform on the unit sphere; least squares
f = (w.x - y)^2/2 on the l2 ball of radius 1 (G = 2, needed for sigma); logistic unconstrained
(G = sup||x|| = 1); labels of the logistic design y = sign(w*.x + gamma), gamma ~ N(0, kappa^2).
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from stabsim.setups.p4 import FIGURE
from stabsim.registry import StudySpec, register_kind, twin_params, twin_problem, validate_twin


def _sigma(p):
    """(sigma, note) of a p4_figure cell: 0 for eps = 0, else P4 Thm 2 with the paper's beta search."""
    from stabsim.engine.constraints import get_constraint
    from stabsim.engine.losses import get_loss
    from stabsim.privacy.calibration import p4_beta_search

    f, d, a = p["figure"], p["data"], p["algorithm"]
    if f["eps"] == 0:
        return 0.0, "non-private"
    pb = twin_problem(d)
    G = get_loss(a["loss"]).G(pb.kappa, get_constraint(a["constraint"]).radius)
    if not math.isfinite(G):
        raise ValueError("P4 calibration needs a finite Lipschitz constant G: give a constraint l2:R")
    delta = 1.0 / d["n"] ** 2 if f["delta"] == 0 else f["delta"]
    res = p4_beta_search(f["eps"], delta, d["n"], a["T"], G, pairwise=False)
    return math.sqrt(res.sigma2), f"beta = {res.beta:.4g}, sigma^2 = {res.sigma2:.4g}, G = {G:.4g}"


def _validate(spec):
    from stabsim.registry import StudyError

    validate_twin(spec)
    for cell in spec.cells():
        p = spec.cell_params(cell)
        if p["algorithm"]["name"] != "p4_alg1" or p["data"]["problem"] not in ("p4_lsq", "p4_logistic"):
            raise StudyError("p4_figure: needs [algorithm] name = 'p4_alg1' and [data] problem 'p4_lsq' or 'p4_logistic'")
        if isinstance(p["algorithm"]["eta"], str):
            raise StudyError("p4_figure: [algorithm] eta must be a constant (the paper uses 0.01)")
        try:
            _sigma(p)
        except Exception as e:
            raise StudyError(f"p4_figure: cell {cell.coords}: {e}") from None


#: the data sets of the chunk in hand, kept for the next cell that draws them (see ``_data_sets``)
_KEPT: dict = {}


def _data_sets(spec, cell, pb, n, seed, reps):
    """``pb.sample_replicates(n, seed, reps)``, kept in memory while a later cell of the study draws
    the same data sets.  The cells of one kappa differ only in eps, and a data set is a function of
    (problem, n, seed, replicate) alone: the 12 eps cells of Fig. 1 use the same 500 sets of 5000
    points each, whose drawing, once per cell, would be a good part of the study's time
    (benchmarks/README.md, "Data sets and samples").  The chunks that draw the same sets run one
    after another (``_jobs_sharing_data_together``), so one chunk's sets are held at a time (100 x 5000 x 10
    doubles, 44 MB with the labels, in the studies), dropped when other sets are drawn; in any
    other order (a cluster's workers, a resume) a chunk only draws again."""
    design = (spec.id, pb.name, pb.d, repr(sorted(pb.params.items())), int(n), int(seed))
    key = design + (reps.tobytes(),)
    data = _KEPT.pop(key, None)
    _KEPT.clear()
    if data is None:
        data = pb.sample_replicates(n, seed, reps)
    if _later_cell_draws_the_same(spec, cell):
        _KEPT[key] = data
    return data


def _data_axes(spec) -> list:
    """The sweep axes that set [data] (the rest of the section is common to every cell)."""
    return [a for a, (section, _) in spec.axes.items() if section == "data"]


def _later_cell_draws_the_same(spec, cell) -> bool:
    """Whether a cell after ``cell`` (coords) has the same [data] section."""
    data_axes = _data_axes(spec)
    cells = [c.coords for c in spec.cells()]
    later = cells[cells.index(cell) + 1:] if cell in cells else []
    return any(all(c[a] == cell[a] for a in data_axes) for c in later)


def _jobs_sharing_data_together(spec, jobs: list) -> list:
    """The study's missing chunks ``(cell, start, stop, path)`` in the order that draws each
    chunk's data sets once: per [data] design (in cell order), chunk by chunk, every cell of that
    design (the eps cells) in cell order.  Cell by cell, the engine's default, each design's
    data sets of every chunk had to be held at once (220 MB of Fig. 1's 500 sets, on top of the
    chunk in hand).  The numbers do not depend on the order: a chunk is a function of its cell
    and replicates."""
    axes = _data_axes(spec)

    def design(cell):
        return tuple(repr(cell.coords[a]) for a in axes)

    first: dict = {}
    for i, (cell, _start, _stop, _path) in enumerate(jobs):
        first.setdefault(design(cell), i)
    return sorted(jobs, key=lambda j: (first[design(j[0])], j[1], j[2], j[0].index))


def _metric(name, W, X, y):
    """Per row of W: the mean squared error (x.w - y)^2 or the misclassification rate (y x.w <= 0) on (X, y)."""
    S = W @ X.T  # (R, m)
    if name == "mse":
        return ((S - y[None, :]) ** 2).mean(axis=1)
    return ((S * y[None, :]) <= 0).mean(axis=1)


@register_kind("p4_figure", params=twin_params(figure=FIGURE), validate=_validate,
               description="P4 Sec. 5: test MSE / misclassification of (DP-)SGD (Alg. 1) per replicate",
               job_order=_jobs_sharing_data_together)
def p4_figure_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    from stabsim.engine.rng import STREAM_SPLIT
    from stabsim.engine.twin_runs import run_twin

    p = spec.cell_params(cell)
    d, a, f = p["data"], p["algorithm"], p["figure"]
    pb = twin_problem(d)
    sigma, note = _sigma(p)
    seed = spec.seed if d["seed"] is None else d["seed"]
    reps = np.asarray(replicates, dtype=np.int64)
    if d["per_replicate"]:
        X, y = _data_sets(spec, cell, pb, d["n"], seed, reps)
    else:
        X, y = pb.sample(d["n"], seed, 0)
    ds = run_twin(X, y, algorithm="p4_alg1", loss=a["loss"], constraint=a["constraint"], eta=float(a["eta"]),
                  T=a["T"], replicates=reps, seed=spec.seed, neighbour="same", sigma=sigma, checkpoints=[a["T"]],
                  record_outputs=True)
    W = np.ascontiguousarray(ds["output"].isel(t=-1).sel(run="S").values)  # (R, p)
    Xt, yt = pb.sample(f["m"], seed, 0, stream=STREAM_SPLIT)
    test = _metric(f["metric"], W, Xt, yt)
    if X.ndim == 3:
        train = np.array([_metric(f["metric"], W[i:i + 1], X[i], y[i])[0] for i in range(len(reps))])
    else:
        train = _metric(f["metric"], W, X, y)
    out = xr.Dataset({"test": (("replicate",), test, {"long_name": f"test {f['metric']} of w_priv"}),
                      "train": (("replicate",), train, {"long_name": f"training {f['metric']} of w_priv"}),
                      "wnorm": (("replicate",), np.linalg.norm(W, axis=1), {"long_name": "||w_priv||"}),
                      "sigma_eff": ((), float(sigma))}, coords={"replicate": reps})
    out.attrs.update(calibration=note)
    return out
