"""The built-in study kind ``twin``: coupled SGD runs on S and its neighbour S'
(``stabsim.run_twin``) on a synthetic problem or real data, one cell at a time
(``twin_cell``), with the checks of parameter combinations (``_validate_twin``).  Registers
the kind ``twin``.  Its helpers ``_problem`` (a cell's synthetic problem) and ``_twin_kwargs``
(``run_twin``'s arguments from a cell's ``[algorithm]``) serve the kinds that extend it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from .data_sources import _source_arrays
from .grid import _cell_label
from .params import StudyError, register_kind
from .schema import DATA_SOURCE, PROBLEM_KEYS, _eta_arg, twin_params
from .spec import StudySpec


def _problem(data: dict):
    from ..synthetic import make_problem

    kw = {k: data[k] for k in PROBLEM_KEYS if data.get(k) is not None}
    return make_problem(data["problem"], data["d"], **kw)


def _twin_kwargs(spec: StudySpec, p: dict) -> dict:
    from ..twin import log_checkpoints

    a = p["algorithm"]
    ck = a["checkpoints"]
    kw = dict(algorithm=a["name"], loss=a["loss"], constraint=a["constraint"], eta=_eta_arg(a["eta"]),
              T=a["T"], seed=spec.seed, sigma=a["sigma"], independent_noise=a["independent_noise"],
              buffer=a["buffer"], output=a["output"], q=a["q"],
              w0=None if a["w0"] == "zeros" else a["w0"],
              checkpoints=log_checkpoints(a["T"], ck) if isinstance(ck, int) else np.asarray(ck),
              record_outputs=a["record_outputs"])
    if a["k"] != "random":
        from ..neighbours import Neighbour

        kw["neighbour"] = Neighbour(kind=a["neighbour"], k=a["k"])
    else:
        kw["neighbour"] = a["neighbour"]
    return kw


def _validate_twin(spec: StudySpec) -> None:
    """Combinations: algorithm/loss agreement, n large enough, problem parameters, ..."""
    from ..algorithms import get_algorithm
    from ..constraints import get_constraint
    from ..losses import get_loss

    for cell in spec.cells():
        p = spec.cell_params(cell)
        d, a = p["data"], p["algorithm"]
        label = _cell_label(cell)
        try:
            pb = None if spec.data_source else _problem(d)
            loss = get_loss(a["loss"], a["q"])
            alg = get_algorithm(a["name"], buffer=a["buffer"], output=a["output"])
            cons = get_constraint(a["constraint"])
        except ValueError as e:
            raise StudyError(f"{label}: {e}") from None
        if alg.pairwise != loss.pairwise:
            kind = "pairwise" if alg.pairwise else "pointwise"
            raise StudyError(f"{label}: [algorithm] name = {a['name']!r} is {kind} but loss = {a['loss']!r} "
                             f"is not; use a {'pairwise' if alg.pairwise else 'pointwise (point_*)'} loss")
        if cons.matrix and not loss.matrix:
            raise StudyError(f"{label}: [algorithm] constraint = {a['constraint']!r} is for matrix "
                             "parameters (metric-learning losses)")
        if d["n"] < alg.min_rows(a["T"]):
            raise StudyError(f"{label}: [data] n = {d['n']}: algorithm {alg.name!r} needs n >= "
                             f"{alg.min_rows(a['T'])} for T = {a['T']}")
        if spec.data_source and a["neighbour"] == "fresh":
            raise StudyError(f"{label}: [algorithm] neighbour = 'fresh' draws z' from a synthetic problem's "
                             "distribution; with [data] dataset/file use 'farthest', 'flip' or 'same'")
        if loss.form in (0, 1) and pb is not None and pb.name == "p4_lsq":
            raise StudyError(f"{label}: [algorithm] loss = {a['loss']!r} needs labels +-1 but problem "
                             "'p4_lsq' has real-valued labels")
        if a["k"] != "random" and a["k"] >= d["n"]:
            raise StudyError(f"{label}: [algorithm] k = {a['k']}: k must be an index in [0, n) = [0, {d['n']})")
        ck = a["checkpoints"]
        if isinstance(ck, list) and ck[-1] > a["T"]:
            raise StudyError(f"{label}: [algorithm] checkpoints = {ck}: steps must lie in [1, T] = [1, {a['T']}]")


@register_kind("twin", params=twin_params(data=DATA_SOURCE), validate=_validate_twin,
               description="coupled SGD runs on S and its neighbour S' (stabsim.run_twin) on synthetic or real data")
def twin_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``twin`` study: sample the data, call ``run_twin`` for ``replicates``."""
    p = spec.cell_params(cell)
    d = p["data"]
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    if spec.data_source:  # real data ([data] dataset / file): the same rows for every replicate
        from ..twin import run_twin

        X, y, _, _ = _source_arrays(spec, d, data_seed)
        ds = run_twin(X, y, replicates=np.asarray(replicates, dtype=np.int64), **_twin_kwargs(spec, p))
        s = spec.data_source
        ds.attrs.update(problem=f"{s['kind']}:{s.get('name') or Path(s['path']).name}", data_seed=data_seed,
                        data_sets="shared", label_map=s["label_map"], data_scale=d["scale"],
                        data_sha256=s.get("sha256", ""))
        return ds
    pb = _problem(d)
    if d["per_replicate"]:
        X, y = pb.sample_replicates(d["n"], data_seed, replicates)
    else:
        X, y = pb.sample(d["n"], data_seed, 0)
    from ..twin import run_twin

    ds = run_twin(X, y, replicates=np.asarray(replicates, dtype=np.int64), problem=pb, **_twin_kwargs(spec, p))
    # run_twin's own data_sets attr cannot tell a 1-replicate per-replicate chunk from a shared set
    ds.attrs.update(problem=pb.name, data_seed=data_seed,
                    data_sets="per-replicate" if d["per_replicate"] else "shared")
    return ds
