"""P1 (Yang et al. 2021): the ``p1_path`` study kind, the runs behind the non-convex Theorems 8
(gradient norm) and 9 (PL condition) (studies ``p1_thm8_grad``, ``p1_thm9_pl``).

Kind ``p1_path``
    Alg. 1 with the iterates recorded at every step (``output = "last"``): per replicate,
    ``grad_avg`` = (1/t) sum_{j=1}^t ||grad F_S(w_{j-2})||^2 (w_{-1} = w_0), ``FS_last`` = F_S(w_t)
    at ``[path] grid`` log-spaced t, and ``m2`` = the exact E_{i,i'}||grad f(w_j; z_i, z_i')||^2
    (i, i' uniform with replacement, the expectation over the two fresh indices of P1 Thm 8/9's
    alpha_0 condition) at every j = 0..T; the certified ERM value of each F_S (``FS_wS``,
    certificate) and its PL constant ``mu_S`` (quadratic losses).

``path_stats`` is its numba kernel (exact sums over all pairs of a data set), ``path_statistics``
the numpy front end.  Its check is ``p1_path`` (``stabsim.analyses.p1_nonconvex``).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from numba import prange, types
from stabsim.compile.jit import njit

from stabsim.compile.native_call import address_for, caller_beside, make_native_caller
from stabsim.kernels.nrt_free import NRT_FREE
from stabsim.engine.losses import AUC, RANKING, _linear_coef, linear_pair_coef, pair_loss_grad
from stabsim.setups.p1 import pl_constant, replicate_data_sets
from stabsim.registry import (Param, StudyError, boolean, integer, register_kind, twin_kwargs, twin_params, twin_problem,
                        validate_twin)


# ---- the path statistics kernel ---------------------------------------------------------------

#: parameter vectors per parallel task of ``path_stats`` (each task allocates its pair workspaces once)
_PATH_TASK = 64


def path_stats(form, phi, q, W, X3, y3, data_idx, FS, GSQ, M2, gbuf, gpbuf, dxbuf, reuse=True):
    """For every parameter vector W[k] on the data set X3[data_idx[k]] (exact sums over pairs):

    FS[k]  = F_S(w) = 1/(n(n-1)) sum_{a != b} f(w; z_a, z_b)
    GSQ[k] = ||grad F_S(w)||^2
    M2[k]  = (1/n^2) sum_{a, b} ||grad f(w; z_a, z_b)||^2  (a, b uniform with replacement; the
             a = b terms vanish for the linear pairwise forms since x_a - x_b = 0)
    gbuf, gpbuf (K, p) and dxbuf (K, d) are workspaces (no allocation in the loop).  The tasks
    of ``_PATH_TASK`` vectors run in parallel (``_path_parallel``), each through the address of
    ``_path_task`` (``kernels.native_call``: compiled once, not linked and optimised again).

    ``reuse`` (auc and ranking forms): f and its gradient are evaluated once per unordered pair
    (see ``_pairs_symmetric``); the sums are still taken over the ordered pairs in order, so the
    numbers are those of ``reuse=False`` bit for bit (tests/test_p1_path.py).
    """
    args = (form, phi, q, W, X3, y3, data_idx, FS, GSQ, M2, gbuf, gpbuf, dxbuf, bool(reuse))
    _path_parallel(address_for(_path_task, args, _task_types, _BESIDE), *args)


def _task_types(kernel_types) -> tuple:
    """The argument types of ``_path_task`` from those of ``_path_parallel`` (form .. reuse)."""
    f1 = types.Array(types.float64, 1, "C")
    return (types.int64,) + tuple(kernel_types)[:14] + (f1, f1)


_call_task = make_native_caller(lambda tys: _task_types(tys[1:]), "path_stats' task")


@njit(cache=True, parallel=True)
def _path_parallel(task_fn, form, phi, q, W, X3, y3, data_idx, FS, GSQ, M2, gbuf, gpbuf, dxbuf, reuse):
    K = W.shape[0]
    n = X3.shape[1]
    sym = reuse and (form == AUC or form == RANKING)
    nbuf = n * n if sym else 0
    for task in prange((K + _PATH_TASK - 1) // _PATH_TASK):
        pv = np.empty(nbuf)
        pf = np.empty(nbuf)
        _call_task(task_fn, (np.int64(task), form, phi, q, W, X3, y3, data_idx, FS, GSQ, M2, gbuf, gpbuf, dxbuf,
                             sym, pv, pf))


#: compiled in a helper process while the callee compiles, on a cold cache (``native_call.address_for``)
_BESIDE = caller_beside(__name__, "_path_parallel")


@njit(cache=True, **NRT_FREE)
def _path_task(task, form, phi, q, W, X3, y3, data_idx, FS, GSQ, M2, gbuf, gpbuf, dxbuf, sym, pv, pf):
    """Task ``task`` of ``path_stats``: vectors task * _PATH_TASK .. (task + 1) * _PATH_TASK - 1,
    with the pair workspaces pv, pf (n * n each when ``sym``: each unordered pair evaluated once,
    ``_pairs_symmetric``; allocates nothing)."""
    K, p = W.shape
    n = X3.shape[1]
    inv_pairs = 1.0 / (n * (n - 1.0))
    inv_sq = 1.0 / (n * n * 1.0)
    for k in range(task * _PATH_TASK, min(K, (task + 1) * _PATH_TASK)):
        di = data_idx[k]
        Xs = X3[di]
        ys = y3[di]
        w = W[k]
        g = gbuf[k]
        gp = gpbuf[k]
        dx = dxbuf[k]
        for c in range(p):
            g[c] = 0.0
        if sym:
            fs, m2 = _pairs_symmetric(form, phi, q, w, Xs, ys, g, gp, dx, pv, pf)
        else:
            fs = 0.0
            m2 = 0.0
            for ia in range(n):
                for ib in range(n):
                    if ia == ib:
                        continue
                    for c in range(p):
                        gp[c] = 0.0
                    fs += pair_loss_grad(form, phi, q, w, Xs, ia, ys[ia], ib, ys[ib], 1.0, gp, dx)
                    s2 = 0.0
                    for c in range(p):
                        g[c] += gp[c]
                        s2 += gp[c] * gp[c]
                    m2 += s2
        gs = 0.0
        for c in range(p):
            gs += (g[c] * inv_pairs) ** 2
        FS[k] = fs * inv_pairs
        GSQ[k] = gs
        M2[k] = m2 * inv_sq


@njit(cache=True, inline="always")
def _pairs_symmetric(form, phi, q, w, Xs, ys, g, gp, dx, pv, pf):
    """The ordered-pair sums of ``path_stats`` (returns (sum f, sum ||grad f||^2), adds sum grad f
    into g) for the auc and ranking forms, f evaluated once per unordered pair.

    Exactness: the pair (b, a) has c(b, a) = -c(a, b) and w.(x_b - x_a) = -w.(x_a - x_b) exactly,
    hence the same margin, the same value and the coefficient -f, so its gradient
    (-f)(x_b - x_a) equals f (x_a - x_b) bit for bit: the visit of (a, b), a < b, keeps f and the
    value; the visit of (b, a) recomputes the gradient from them.  A pair with c = 0 has zero
    gradient (its value phi(0) counts for ranking, 0 for auc): adding zeros changes no sum."""
    n = Xs.shape[0]
    p = w.shape[0]
    v0 = pair_loss_grad(RANKING, phi, q, w, Xs, 0, 1.0, 0, 1.0, 0.0, gp, dx) if form == RANKING else 0.0
    fs = 0.0
    m2 = 0.0
    for ia in range(n):
        for ib in range(n):
            if ia == ib:
                continue
            cf = _linear_coef(form, ys[ia], ys[ib])
            if cf == 0.0:
                fs += v0
                continue
            if ib > ia:
                dot = 0.0
                for c in range(p):
                    dot += w[c] * (Xs[ia, c] - Xs[ib, c])
                val, f = linear_pair_coef(form, phi, q, dot, ys[ia], ys[ib])
                pv[ib * n + ia] = val
                pf[ib * n + ia] = f
            else:
                val = pv[ia * n + ib]
                f = -pf[ia * n + ib]
            fs += val
            s2 = 0.0
            for c in range(p):
                e = f * (Xs[ia, c] - Xs[ib, c])
                g[c] += e
                s2 += e * e
            m2 += s2
    return fs, m2


def path_statistics(W, X3, y3, data_idx, loss):
    """(F_S, ||grad F_S||^2, E||grad f||^2) for W (K, p); numpy front end of ``path_stats``."""
    from stabsim.engine.losses import get_loss

    lf = get_loss(loss)
    if lf.matrix or not lf.pairwise:
        raise ValueError(f"path statistics need a linear pairwise loss, got {loss!r}")
    W = np.ascontiguousarray(W, dtype=np.float64)
    X3 = np.ascontiguousarray(X3, dtype=np.float64)
    y3 = np.ascontiguousarray(y3, dtype=np.float64)
    K, p = W.shape
    out = [np.empty(K) for _ in range(3)]
    path_stats(lf.form, lf.phi, float(lf.q), W, X3, y3, np.ascontiguousarray(data_idx, dtype=np.int64),
               *out, np.zeros((K, p)), np.zeros((K, p)), np.zeros((K, X3.shape[2])), True)
    return out


# ---- kind p1_path ------------------------------------------------------------------------------

PATH = {"grid": Param("number of log-spaced t at which grad_avg and FS_last are kept", 25,
                      integer(2, " (checkpoint count)"), sweepable=False),
        "erm": Param("certified ERM per data set (Thm 9)", True, boolean, sweepable=False)}


def _validate_path(spec):
    """Alg. 1 with its last iterate as output (the iterates are read from the outputs) and w_0 = 0."""
    validate_twin(spec)
    for cell in spec.cells():
        a = spec.cell_params(cell)["algorithm"]
        if a["name"] != "p1_alg1" or a["output"] != "last" or a["w0"] != "zeros":
            raise StudyError("p1_path: needs [algorithm] name = 'p1_alg1', output = 'last' (the iterates w_t "
                             "are read from the outputs) and w0 = 'zeros'")


@register_kind("p1_path", params=twin_params(path=PATH), validate=_validate_path,
               description="P1 Thm 8/9: iterates of Alg. 1 at every step -> running mean of ||grad F_S||^2, "
                           "F_S(w_t), the gradient moment alpha_0^2, certified ERM")
def path_cell(spec, cell, replicates) -> xr.Dataset:
    """One cell of a ``p1_path`` study (see the module docstring)."""
    from stabsim.risk import erm
    from stabsim.engine.twin_runs import log_checkpoints, run_twin

    p = spec.cell_params(cell)
    d, a = p["data"], p["algorithm"]
    pb = twin_problem(d)
    reps = np.asarray(replicates, dtype=np.int64)
    R = len(reps)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    if d["per_replicate"]:
        X3, y3 = replicate_data_sets(pb, d["n"], data_seed, reps)
        didx = np.arange(R)
    else:
        X, y = pb.sample(d["n"], data_seed, 0)
        X3, y3, didx = X[None], y[None], np.zeros(R, dtype=np.int64)
    T = a["T"]
    kw = twin_kwargs(spec, p)
    kw.update(checkpoints=np.arange(1, T + 1), record_outputs=True, neighbour="same")
    ds = run_twin(X3 if d["per_replicate"] else X3[0], y3 if d["per_replicate"] else y3[0], replicates=reps,
                  problem=pb, **kw)
    W = ds["output"].sel(run="S").values            # (R, T, p): w_1 .. w_T
    p_ = W.shape[2]
    allW = np.concatenate([np.zeros((R, 1, p_)), W], axis=1)   # w_0 .. w_T
    FS, GSQ, M2 = (v.reshape(R, T + 1) for v in
                   path_statistics(allW.reshape(-1, p_), X3, y3, np.repeat(didx, T + 1), a["loss"]))
    # (1/t) sum_{j=1}^t ||grad F_S(w_{j-2})||^2 with w_{-1} = w_0: the sequence g0, g0, g1, ..., g_{T-2}
    seq = np.concatenate([GSQ[:, :1], GSQ[:, :T - 1]], axis=1)   # j = 1..T
    run_avg = np.cumsum(seq, axis=1) / np.arange(1, T + 1)
    grid = log_checkpoints(T, p["path"]["grid"])
    out = xr.Dataset(
        {"grad_avg": (("replicate", "t"), run_avg[:, grid - 1],
                      {"long_name": "(1/t) sum_{j=1}^t ||grad F_S(w_{j-2})||^2"}),
         "FS_last": (("replicate", "t"), FS[:, grid],
                     {"long_name": "F_S(w_t) (last iterate)"}),
         "m2": (("replicate", "step"), M2, {"long_name": "E_{i,i'}||grad f(w_j; z_i, z_i')||^2 (exact, j = step)"}),
         "FS_w0": ("replicate", FS[:, 0], {"long_name": "F_S(w_0)"})},
        coords={"replicate": reps, "t": grid, "step": np.arange(T + 1)})
    if p["path"]["erm"]:
        sets = [(X3[i], y3[i]) for i in range(R)] if d["per_replicate"] else [(X3[0], y3[0])]
        res = [erm(Xs, ys, a["loss"], a["constraint"]) for Xs, ys in sets]
        if not d["per_replicate"]:
            res = res * R
        out["FS_wS"] = ("replicate", np.array([r.value for r in res]), {"long_name": "F_S(w_S) (certified ERM)"})
        out["erm_certificate"] = ("replicate", np.array([r.certificate for r in res]),
                                  {"long_name": "proven bound on F_S(w_S) - min F_S"})
        out["wS_norm"] = ("replicate", np.array([float(np.linalg.norm(r.w)) for r in res]),
                          {"long_name": "||w_S||"})
    from stabsim.engine.losses import SQUARED, get_loss
    if get_loss(a["loss"]).phi == SQUARED:
        mus = [pl_constant(X3[i], y3[i], a["loss"]) for i in range(len(X3))]
        out["mu_S"] = ("replicate", np.array([mus[i] for i in didx]), {"long_name": "PL constant of F_S"})
    out.attrs.update(problem=pb.name, data_seed=data_seed,
                     data_sets="per-replicate" if d["per_replicate"] else "shared")
    return out
