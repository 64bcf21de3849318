"""The built-in study kind ``twin`` and what the kinds that extend it build on: coupled SGD runs
on S and its neighbour S' (``stabsim.run_twin``) on a synthetic problem or real data, one cell
at a time (``twin_cell``).

Its sections: ``TWIN_DATA`` (``[data]``; ``DATA_SOURCE`` for real data) and ``TWIN_ALGORITHM``
(``[algorithm]``), which ``twin_params()`` hands to kinds that extend them; every key is
documented for users in docs/study-files.md (tests/test_study_schema_doc.py keeps the two in
step).  Its helpers, for other kinds and for the checks that read their data: ``twin_problem``
(a cell's synthetic problem), ``twin_kwargs`` (``run_twin``'s arguments from a cell's
``[algorithm]``), ``validate_twin`` (the checks of parameter combinations) and ``source_arrays``
(the arrays of a cell on real data).  Importing this module registers the kind ``twin``."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import xarray as xr

from stabsim.registry.kinds import register_kind
from stabsim.registry.spec import StudySpec
from stabsim.registry.values import (BadValue, Param, StudyError, boolean, choice, engine_name, integer, is_int, is_num, number,
                     open_unit)


# ---- [data], [algorithm] ------------------------------------------------------------------

def check_problem(v):
    """``[data] problem``: a name ``stabsim.engine.synthetic.make_problem`` knows."""
    from stabsim.engine.synthetic import make_problem

    if not isinstance(v, str):
        raise BadValue("must be a string (a problem name)")
    try:
        make_problem(v, 10)
    except ValueError as e:
        if "unknown problem" in str(e):
            raise BadValue(str(e), standalone=True) from None
    return v


def _check_eta(v):
    from stabsim.engine.steps import SCHEDULES, step_sizes

    allowed = ("must be a step size > 0 (a number), or a schedule 'NAME:c' / ['NAME', c] with NAME in "
               f"{', '.join(SCHEDULES)} and c > 0")
    if is_num(v):
        if not (math.isfinite(v) and v > 0):
            raise BadValue(allowed)
        return float(v)
    if isinstance(v, str) and ":" in v:
        kind, _, c = v.partition(":")
        try:
            c = float(c)
        except ValueError:
            raise BadValue(allowed) from None
        v = [kind, c]
    if isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and is_num(v[1]):
        try:
            step_sizes((v[0], float(v[1])), 1)
        except ValueError as e:
            raise BadValue(f"{allowed} ({e})") from None
        return f"{v[0]}:{float(v[1])!r}"
    raise BadValue(allowed)


def eta_arg(eta):
    """A checked ``eta`` as ``run_twin`` takes it: a number, or a schedule ``(NAME, c)``."""
    if isinstance(eta, str):
        kind, _, c = eta.partition(":")
        return (kind, float(c))
    return eta


def check_constraint(v):
    """``[algorithm] constraint``: ``'none'``, ``'psd'``, ``'NAME:radius'`` or ``['NAME', radius]``."""
    from stabsim.engine.constraints import get_constraint

    if isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and is_num(v[1]):
        v = f"{v[0]}:{float(v[1])!r}"
    if not isinstance(v, str):
        raise BadValue("must be 'none', 'psd', 'NAME:radius' or ['NAME', radius]")
    try:
        get_constraint(v)
    except ValueError as e:
        raise BadValue(str(e), standalone=True) from None
    return v


def check_loss(v):
    """``[algorithm] loss``: a loss of ``stabsim.engine.losses`` (a q-hinge's q is checked per cell)."""
    from stabsim.engine.losses import get_loss

    if isinstance(v, str) and v.endswith("qhinge"):
        return engine_name(lambda name: get_loss(name, 1.5))(v)  # q is checked per cell
    return engine_name(get_loss)(v)


def _check_algorithm(v):
    from stabsim.engine.algorithm_specs import get_algorithm

    return engine_name(get_algorithm)(v)


def _check_output(v):
    from stabsim.engine.algorithm_specs import OUTPUTS

    return choice(tuple(OUTPUTS))(v)


def _check_k(v):
    if v == "random" or (is_int(v) and v >= 0):
        return v if v == "random" else int(v)
    raise BadValue("must be 'random' or an integer >= 0 (an index into the data set)")


def _check_checkpoints(v):
    if is_int(v):
        return integer(1, " (a count of log-spaced checkpoints) or a list of steps")(v)
    if isinstance(v, list) and v and all(is_int(x) and x >= 1 for x in v):
        return sorted(set(int(x) for x in v))
    raise BadValue("must be an integer >= 1 (a count of log-spaced checkpoints) or a non-empty list of steps >= 1")


TWIN_DATA = {
    "problem": Param("synthetic problem", "auc_separable", check_problem),
    "d": Param("dimension", 10, integer(1, " (the dimension)")),
    "n": Param("number of examples", 100, integer(2, " (the number of examples)")),
    "per_replicate": Param("one data set per replicate", False, boolean, sweepable=False),
    "seed": Param("data seed (default: [study] seed)", None, integer(0), dim="data_seed"),
    "gamma": Param("problem: class separation", None, number(gt=0, what=" (class separation)")),
    "rho": Param("problem: noise-ball radius", None, number(ge=0)),
    "pi": Param("problem: P(y = 1)", None, open_unit(" (P(y = 1))")),
    "flip": Param("problem: label-flip probability", None, number(ge=0, lt=0.5)),
    "kappa": Param("problem: noise level (p4_*)", None, number(ge=0)),
}
PROBLEM_KEYS = ("gamma", "rho", "pi", "flip", "kappa")

TWIN_ALGORITHM = {
    "name": Param("algorithm", "p1_alg1", _check_algorithm, dim="algorithm"),
    "loss": Param("loss", "auc_hinge", check_loss),
    "constraint": Param("constraint set", "none", check_constraint),
    "eta": Param("step size or schedule", 0.1, _check_eta),
    "T": Param("number of steps", 1000, integer(1, " (the number of steps)")),
    "neighbour": Param("replacement rule", "farthest", choice(("flip", "farthest", "fresh", "same"))),
    "k": Param("replaced index", "random", _check_k),
    "sigma": Param("gradient noise", 0.0, number(ge=0, what=" (noise level)")),
    "independent_noise": Param("independent noise for S'", False, boolean),
    "buffer": Param("FIFO buffer size s", None, integer(1, " (buffer size)")),
    "output": Param("output rule", None, _check_output),
    "q": Param("q-norm hinge exponent", None, number(gt=1, le=2, what=" (q-hinge exponent)")),
    "w0": Param("initial point", "zeros", choice(("zeros", "random"))),
    "checkpoints": Param("checkpoint count or steps", 30, _check_checkpoints, sweepable=False),
    "record_outputs": Param("keep the outputs A_t", False, boolean, sweepable=False),
}


def twin_params(**extra: dict) -> dict:
    """The ``twin`` kind's ``{section: {key: Param}}``, extended/overridden by ``extra``
    (``twin_params(algorithm={"m": Param(...)}, measure={...})``)."""
    out = {"data": dict(TWIN_DATA), "algorithm": dict(TWIN_ALGORITHM)}
    for sec, table in extra.items():
        out.setdefault(sec, {}).update(table)
    return out


# ---- [data] dataset / file: real data instead of a synthetic problem (stabsim.engine.user_data) --------

def _check_dataset_name(v):
    if not isinstance(v, str) or not v:
        raise BadValue("must be a data set name (see stabsim.engine.real_datasets.available())")
    from stabsim.engine.real_datasets import _resolve

    try:
        _resolve(v)
    except ValueError as e:
        raise BadValue(str(e), standalone=True) from None
    return v


def _check_file(v):
    if not isinstance(v, str) or not v:
        raise BadValue("must be a path (a string; relative paths start at the study file's folder)")
    return v


def _check_label(v):
    if not (isinstance(v, str) and v) and not is_int(v):
        raise BadValue("must be a column name (a string) or a 0-based column index (an integer)")
    return v


def _check_positive(v):
    if not isinstance(v, str) and not is_num(v):
        raise BadValue("must be the label value that maps to +1 (a string or a number)")
    return v


def _check_scale(v):
    from stabsim.engine.user_data import SCALES

    v = {"minmax": "minmax[-1,1]", "minmax+unit-norm": "minmax[-1,1]+unit-norm"}.get(v, v)
    return choice(SCALES)(v)


#: ``[data]`` keys that load real data (the ``twin`` kind; a kind opts in with
#: ``twin_params(data=DATA_SOURCE)`` and handling ``spec.data_source`` as ``twin_cell`` does,
#: with ``source_arrays``).
DATA_SOURCE = {
    "dataset": Param("a shipped data set (stabsim.engine.real_datasets)", None, _check_dataset_name, sweepable=False),
    "file": Param("a data file: .csv, .npz, .libsvm, .nc (stabsim.engine.user_data)", None, _check_file,
                  sweepable=False),
    "label": Param("the label column (name or 0-based index) / array name", None, _check_label,
                   sweepable=False),
    "positive": Param("the label value that maps to +1", None, _check_positive, sweepable=False),
    "scale": Param("none, minmax[-1,1], unit-norm, minmax[-1,1]+unit-norm", None, _check_scale,
                   sweepable=False),
    "test_fraction": Param("stratified held-out fraction (not trained on)", 0.0,
                           number(ge=0, lt=1, what=" (a fraction)"), sweepable=False),
}


# ---- real data: the arrays of one cell --------------------------------------------------------

_SOURCE_CACHE: dict = {}


def source_arrays(spec, d: dict, data_seed: int):
    """(X, y, X_test, y_test) of one cell of a study on real data (``spec.data_source``)."""
    from stabsim.engine.user_data import file_sha256, prepare, read_data_file, scale_features

    s = spec.data_source
    key = (s["kind"], s.get("path") or s.get("name"), s.get("sha256"), d["label"], d["positive"], d["scale"])
    if key not in _SOURCE_CACHE:
        if s["kind"] == "file":
            sha = file_sha256(s["path"])
            if sha != s["sha256"]:
                raise StudyError(f"[data] file {s['path']} changed since the study was loaded (sha256 "
                                 f"{s['sha256'][:12]}... -> {sha[:12]}...); load the study again")
            X, y, _ = read_data_file(s["path"], label=d["label"], positive=d["positive"])
            X = scale_features(X, d["scale"])
        else:
            from stabsim.engine.real_datasets import load

            X, y, _ = load(s["name"], scale=None if d["scale"] == "none" else d["scale"])
        if len(_SOURCE_CACHE) > 4:
            _SOURCE_CACHE.clear()
        _SOURCE_CACHE[key] = (X, y)
    X, y = _SOURCE_CACHE[key]
    part = prepare(X, y, scale="none", n=d["n"], test_fraction=d["test_fraction"], seed=data_seed)
    return part["X"], part["y"], part["X_test"], part["y_test"]


# ---- the kind and its helpers --------------------------------------------------------------

def twin_problem(data: dict):
    """The synthetic problem of a cell's ``[data]`` (its name, ``d`` and the problem keys given)."""
    from stabsim.engine.synthetic import make_problem

    kw = {k: data[k] for k in PROBLEM_KEYS if data.get(k) is not None}
    return make_problem(data["problem"], data["d"], **kw)


def twin_kwargs(spec: StudySpec, p: dict) -> dict:
    """``run_twin``'s keyword arguments from a cell's parameters ``p`` (its ``[algorithm]``)."""
    from stabsim.engine.twin_runs import log_checkpoints

    a = p["algorithm"]
    ck = a["checkpoints"]
    kw = dict(algorithm=a["name"], loss=a["loss"], constraint=a["constraint"], eta=eta_arg(a["eta"]),
              T=a["T"], seed=spec.seed, sigma=a["sigma"], independent_noise=a["independent_noise"],
              buffer=a["buffer"], output=a["output"], q=a["q"],
              w0=None if a["w0"] == "zeros" else a["w0"],
              checkpoints=log_checkpoints(a["T"], ck) if isinstance(ck, int) else np.asarray(ck),
              record_outputs=a["record_outputs"])
    if a["k"] != "random":
        from stabsim.engine.neighbours import Neighbour

        kw["neighbour"] = Neighbour(kind=a["neighbour"], k=a["k"])
    else:
        kw["neighbour"] = a["neighbour"]
    return kw


def validate_twin(spec: StudySpec) -> None:
    """Combinations: algorithm/loss agreement, n large enough, problem parameters, ..."""
    from stabsim.engine.algorithm_specs import get_algorithm
    from stabsim.engine.constraints import get_constraint
    from stabsim.engine.losses import get_loss

    for cell in spec.cells():
        p = spec.cell_params(cell)
        d, a = p["data"], p["algorithm"]
        label = cell.label
        try:
            pb = None if spec.data_source else twin_problem(d)
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


@register_kind("twin", params=twin_params(data=DATA_SOURCE), validate=validate_twin,
               description="coupled SGD runs on S and its neighbour S' (stabsim.run_twin) on synthetic or real data")
def twin_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``twin`` study: sample the data, call ``run_twin`` for ``replicates``."""
    p = spec.cell_params(cell)
    d = p["data"]
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    if spec.data_source:  # real data ([data] dataset / file): the same rows for every replicate
        from stabsim.engine.twin_runs import run_twin

        X, y, _, _ = source_arrays(spec, d, data_seed)
        ds = run_twin(X, y, replicates=np.asarray(replicates, dtype=np.int64), **twin_kwargs(spec, p))
        s = spec.data_source
        ds.attrs.update(problem=f"{s['kind']}:{s.get('name') or Path(s['path']).name}", data_seed=data_seed,
                        data_sets="shared", label_map=s["label_map"], data_scale=d["scale"],
                        data_sha256=s.get("sha256", ""))
        return ds
    pb = twin_problem(d)
    if d["per_replicate"]:
        X, y = pb.sample_replicates(d["n"], data_seed, replicates)
    else:
        X, y = pb.sample(d["n"], data_seed, 0)
    from stabsim.engine.twin_runs import run_twin

    ds = run_twin(X, y, replicates=np.asarray(replicates, dtype=np.int64), problem=pb, **twin_kwargs(spec, p))
    # run_twin's own data_sets attr cannot tell a 1-replicate per-replicate chunk from a shared set
    ds.attrs.update(problem=pb.name, data_seed=data_seed,
                    data_sets="per-replicate" if d["per_replicate"] else "shared")
    return ds
