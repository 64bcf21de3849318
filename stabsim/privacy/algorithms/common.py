"""Shared machinery of the private algorithms (:mod:`stabsim.privacy.algorithms`).

Input checks, the replace-one neighbours, the loss constants G/L/kappa, the Gaussian noise rows of
the counter-based streams (``gaussian_rows``), the projection Pi_W of every row, and the
calibration record attached to every output Dataset (``privacy_*`` attrs and
``attrs["calibration"]``, read back with :func:`calibration_record`).  Also
:func:`keyword_form`, which turns a config-based algorithm ``f(X, y, config, **run)`` into the
uniform keyword interface of ``PRIVATE_ALGORITHMS`` / ``run_private`` / the audits.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import numbers
import pickle

import numpy as np
from numba import prange
from stabsim.compile.jit import njit

from stabsim.engine import rng
from stabsim.engine.constraints import project
from stabsim.engine.neighbours import as_neighbour, make_neighbours
from stabsim.engine.validation import check_Xy, open_unit, positive, positive_int


# ============================================================================ helpers
#: The last twin run of an algorithm that adds its noise after the run (output perturbation), by
#: the SHA-256 of its pickled arguments: one entry, so that the cells of a sweep over the noise
#: alone (eps, noise_scale; P0 Alg. 2's audit: 2500 replicates of T = n^2 steps each) run it once.
_LAST_TWIN_RUN: dict = {}


def twin_run_once(X, y, **kwargs):
    """``run_twin(X, y, **kwargs)``, given again (a deep copy) to the next call with equal
    arguments in this process.  The run is a pure function of them (replicate r depends on
    (seed, r) alone), so the copy equals a new run; arguments that do not pickle are not
    remembered."""
    from stabsim.engine.twin_runs import run_twin

    try:
        key = hashlib.sha256(pickle.dumps((X, y, sorted(kwargs.items())), protocol=5)).hexdigest()
    except Exception:  # an argument that does not pickle (a user object): just run
        return run_twin(X, y, **kwargs)
    if key not in _LAST_TWIN_RUN:
        _LAST_TWIN_RUN.clear()
        _LAST_TWIN_RUN[key] = run_twin(X, y, **kwargs)
    return _LAST_TWIN_RUN[key].copy(deep=True)


def _check_privacy(eps, delta):
    """eps > 0 finite, delta in (0, 1): ValueError naming the argument otherwise."""
    return positive("eps", eps), open_unit("delta", delta)


def _replicate_ids(replicates):
    if isinstance(replicates, (numbers.Integral,)) and not isinstance(replicates, bool):
        return np.arange(positive_int("replicates", int(replicates)), dtype=np.int64)
    reps = np.asarray(replicates, dtype=np.int64).ravel()
    if reps.size == 0 or np.any(reps < 0):
        raise ValueError("replicates must be a positive count or a non-empty array of ids >= 0")
    return reps


def _setup(eps, delta, loss, constraint, X, y, replicates, seed):
    """Validate the privacy parameters, the loss and constraint names, the data, the replicate ids
    and the seed, as every private algorithm does before it runs; returns
    (eps, delta, lossf, cons, X, y, X3, y3, n, reps, seed)."""
    from stabsim.engine.constraints import get_constraint
    from stabsim.engine.losses import get_loss

    eps, delta = _check_privacy(eps, delta)
    lossf, cons = get_loss(loss), get_constraint(constraint)
    X, y, X3, y3 = _data(X, y, lossf)
    n = X3.shape[1]
    reps = _replicate_ids(replicates)
    seed = rng.check_seed(seed)
    return eps, delta, lossf, cons, X, y, X3, y3, n, reps, seed


def _data(X, y, lossf, allow_3d=True):
    X, y = check_Xy(X, y, pairwise_auc=lossf.form in (0, 1))
    if X.ndim == 3 and not allow_3d:
        raise ValueError("this private algorithm runs on one data set: X must be 2-D (n, d), "
                         f"got shape {X.shape}")
    X3, y3 = (X[None], y[None]) if X.ndim == 2 else (X, y)
    return X, y, X3, y3


def _neighbours(neighbour, X3, y3, reps, seed, problem=None):
    nb = as_neighbour(neighbour)
    kidx, xrep, yrep = make_neighbours(nb, X3, y3, reps, seed, problem=problem)
    return nb, kidx, xrep, yrep


def _constants(lossf, cons, X3, xrep, G=None, L=None, kappa=None, need_L=False):
    """(G, L, kappa, source): declared loss constants at kappa = max ||x|| (S and S')."""
    src = []
    if kappa is None:
        kappa = float(max(np.linalg.norm(X3, axis=-1).max(), np.linalg.norm(xrep, axis=-1).max()))
        src.append("kappa = max ||x|| over S and the replacement points")
    else:
        kappa = positive("kappa", kappa)
        src.append("kappa given")
    if G is None:
        G = float(lossf.G(kappa, cons.radius))
        src.append(f"G = {lossf.name}.G(kappa, R={cons.radius:g})")
    else:
        G = positive("G", G)
        src.append("G given")
    if not (math.isfinite(G) and G > 0):
        raise ValueError(f"the Lipschitz constant G of loss {lossf.name!r} is {G!r} on constraint "
                         f"{cons.name!r} (R={cons.radius:g}); the noise calibration needs a finite "
                         "G > 0: use a bounded constraint (('l2', R)) or pass G=")
    if need_L or L is not None:
        if L is None:
            L = float(lossf.L(kappa, cons.radius))
            src.append(f"L = {lossf.name}.L(kappa, R={cons.radius:g})")
        else:
            L = positive("L", L)
            src.append("L given")
        if not (math.isfinite(L) and L > 0):
            raise ValueError(f"the smoothness constant L of loss {lossf.name!r} is {L!r}; pass L=")
    return G, L, kappa, "; ".join(src)


@njit(cache=True, parallel=True)
def _gaussian_rows(seed, reps, stream, start, out):
    """out[r, c] = normal number start + c of stream (seed, reps[r], stream)."""
    p = out.shape[1]
    for r in prange(reps.shape[0]):
        key = rng.stream_key(seed, reps[r], stream)
        for c in range(p):
            out[r, c] = rng.normal(key, start + c)


@njit(cache=True, parallel=True)
def _project_rows(kind, radius, md, W):
    """Pi_W applied to every row of W (in place)."""
    for r in prange(W.shape[0]):
        A = np.empty((md, md))
        V = np.empty((md, md))
        lam = np.empty(md)
        tmp = np.empty(md)
        project(kind, radius, W[r], md, A, V, lam, tmp)


def gaussian_rows(seed, reps, stream, start, p):
    """(R, p) standard normals: row r = numbers start..start+p-1 of stream (seed, reps[r], stream)."""
    out = np.empty((len(reps), int(p)))
    _gaussian_rows(np.int64(seed), np.asarray(reps, dtype=np.int64), np.int64(stream),
                   np.int64(start), out)
    return out


def _project(cons, W, md):
    W = np.ascontiguousarray(W, dtype=np.float64).copy()
    _project_rows(cons.kind, float(cons.radius), md, W)
    return W


def _noise_scale(noise_scale, deviations):
    """noise_scale validated (> 0); anything but 1 is listed in ``deviations``."""
    return _scale_note(positive("noise_scale", noise_scale), deviations)


def _scale_note(s, deviations):
    """List an already validated noise scale s != 1 in ``deviations``; return s."""
    if s != 1.0:
        deviations.append(f"noise deliberately scaled by {s:g} (NOT the paper's calibration; "
                          "privacy claims do not apply)")
    return s


def _attr(v):
    if isinstance(v, bool):
        return "yes" if v else "no"
    if v is None:
        return "n/a"
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, (str, int, float)):
        return v
    if isinstance(v, (list, tuple)):
        try:
            return json.dumps([_attr(x) for x in v])
        except TypeError:
            return str(v)
    return str(v)


def _attach(ds, record, deviations):
    ds.attrs.update(privacy_attrs(record, deviations))
    return ds


def privacy_attrs(record, deviations) -> dict:
    """The attrs a private run's Dataset gets from its calibration ``record`` and ``deviations``:
    each entry as ``privacy_<key>``, and the whole record as JSON in ``calibration``."""
    record = dict(record)
    record["deviations"] = list(deviations)
    record["as_in_paper"] = not deviations
    attrs = {"privacy_" + key: _attr(val) if key != "deviations" else ("; ".join(deviations) if deviations else "none")
             for key, val in record.items()}
    attrs["calibration"] = json.dumps({k: _jsonable(v) for k, v in record.items()})
    return attrs


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def calibration_record(ds) -> dict:
    """The calibration record of a private run (the JSON in ``ds.attrs['calibration']``)."""
    return json.loads(ds.attrs["calibration"])


def _private_vars(W, Wp, name_note) -> dict:
    """The variables ``w_priv`` (the released outputs on S and S') and ``dist_priv``."""
    return {"w_priv": (("replicate", "run", "param"), np.stack([W, Wp], axis=1),
                       {"long_name": "released output on S and S'", "description": name_note, "units": "1"}),
            "dist_priv": ("replicate", np.linalg.norm(W - Wp, axis=1),
                          {"long_name": "||w_priv(S) - w_priv(S')||", "units": "1"})}


def _add_private(ds, W, Wp, name_note):
    ds = ds.assign(_private_vars(W, Wp, name_note))      # one merge for both
    if "run" not in ds.coords:
        ds = ds.assign_coords(run=["S", "S'"])
    return ds


def _ckpts_with(checkpoints, T):
    if checkpoints is None:
        return None
    ck = np.unique(np.r_[np.asarray(checkpoints, dtype=np.int64).ravel(), T])
    return ck



# ============================================================================ configs
def _set(config, name, value):
    """Store a normalised field value on a frozen config (used in ``__post_init__`` only)."""
    object.__setattr__(config, name, value)


def optional_positive(name, value):
    """None, or value > 0 finite as a float (ValueError naming the field otherwise)."""
    return None if value is None else positive(name, value)


def config_fields(config_cls) -> tuple:
    """The names of the fields a config dataclass takes in its constructor."""
    return tuple(f.name for f in dataclasses.fields(config_cls) if f.init)


def keyword_form(run, config_cls, name, doc, **fixed):
    """``f(X, y, **kwargs)``: build ``config_cls(**fixed, <its fields from kwargs>)`` and call
    ``run(X, y, config, **<the other kwargs>)`` (replicates, seed, neighbour, ...).

    The uniform keyword interface of ``PRIVATE_ALGORITHMS``, ``run_private`` and the audits;
    ``f.config`` is the config class and ``f.fixed`` the fields it sets itself.
    """
    fields = config_fields(config_cls)

    def f(X, y, **kwargs):
        own = {k: kwargs.pop(k) for k in list(kwargs) if k in fields}
        return run(X, y, config_cls(**fixed, **own), **kwargs)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    f.config, f.fixed, f.run = config_cls, dict(fixed), run
    return f
