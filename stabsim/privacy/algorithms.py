"""The papers' private algorithms as twin runs (S and its neighbour S', shared randomness).

=====================  =====================================================================
function               algorithm
=====================  =====================================================================
:func:`p0_alg2`        P0 Alg. 2: P0 Alg. 1 (run_twin ``p0_alg1``), then output perturbation
                       w_priv = Pi_W(wbar_T + u), u ~ N(0, sigma^2 I), sigma^2 from Eq. (5)
:func:`p1_alg3`        P1 Alg. 3 (DP localized SGD): phases of P1 Alg. 1 on disjoint S_k, each
                       followed by Gaussian noise sigma_k
:func:`p2_alg1`        P2 Alg. 1: full-batch all-pairs GD with gradient noise (unprojected as
                       printed; ``projected=True`` is a variant "not in paper")
:func:`p3_onpairstrc`  P3 Alg. 1 (online, strongly convex), :func:`p3_onpairc` Alg. 2 (online,
:func:`p3_offpairstrc` convex), Alg. 3 / :func:`p3_offpairc` Alg. 4 (offline output
                       perturbation): pairwise GIGA, kernel ``stabsim.kernels.giga``
:func:`p4_alg1`        P4 Alg. 1 / Alg. 2: DP-SGD (pointwise / uniform pair), sigma^2 from the
:func:`p4_alg2`        beta search of P4 section 5
=====================  =====================================================================

Every function returns an ``xarray.Dataset`` with dim ``replicate`` and, at least:

``w_priv``    (replicate, run, param): the released output on S (run "S") and on S' ("S'")
``dist_priv`` (replicate): ||w_priv(S) - w_priv(S')||
``k``         (replicate): the replaced example

plus the algorithm's own measurements, and the calibration record in ``attrs``: the flat
keys ``privacy_*`` (``privacy_sigma``, ``privacy_reading``, ``privacy_beta``,
``privacy_grid_step``, ``privacy_T1``, ``privacy_T1_as_in_paper``, ``privacy_as_in_paper``,
``privacy_deviations``, ...) and the whole record as JSON in ``attrs["calibration"]`` (read it
back with :func:`calibration_record`).  ``privacy_as_in_paper`` is "yes" only when no
deviation from the paper was applied (every deviation is listed in ``privacy_deviations``).

Noise coupling.  ``independent_noise=False`` (stability runs): S and S' get the *same*
Gaussian numbers (gradient noise, phase noise, release noise, output noise), so S' = S gives
distance exactly 0 and with a real neighbour the noise cancels in w - w' (up to the
projection).  ``independent_noise=True`` (privacy audits): the run on S' draws its noise from
``rng.STREAM_NOISE_PRIME`` instead of ``rng.STREAM_NOISE``.  The index draws, P2's random
theta_0 and P3's burn-in points (all data independent) stay shared in both modes; an audit only
compares the *marginal* output distributions on S and S', which sharing data-independent
randomness does not change.

Constants G (Lipschitz) and L (smoothness) default to the loss's declared constants
(``stabsim.losses.Loss.G / .L``) at kappa = the largest ||x|| over S and the replacement
points and at the constraint's radius; pass ``G=``/``L=``/``kappa=`` to override (recorded).

``noise_scale`` multiplies every noise standard deviation; anything but 1 is recorded as a
deviation ("noise deliberately scaled") -- it exists to break the privacy on purpose in
audits.
"""

from __future__ import annotations

import json
import math
import numbers

import numpy as np
import xarray as xr
from numba import njit, prange

from .. import rng
from ..algorithms import get_algorithm
from ..constraints import L2, FROBENIUS, get_constraint, project
from ..kernels import N_REC, twin_kernel
from ..kernels.giga import N_REC_GIGA, STREAM_BURNIN, ball_point, giga_kernel
from ..losses import get_loss
from ..neighbours import as_neighbour, make_neighbours
from ..provenance import provenance
from ..steps import kernel_step_sizes
from ..twin import extend_with_replacements, log_checkpoints, run_twin
from ..validation import check_Xy, open_unit, positive, positive_int
from . import calibration as cal
from .errors import InfeasiblePrivacyParameters

__all__ = [
    "PRIVATE_ALGORITHMS", "QUICK", "calibration_record", "p0_alg2", "p1_alg3", "p2_alg1",
    "p3_giga", "p3_onpairstrc", "p3_onpairc", "p3_offpairstrc", "p3_offpairc", "p3_plan",
    "p4_alg1", "p4_alg2", "quick_data", "quick_run", "run_private",
]

#: stream of the per-phase seeds of P1 Alg. 3 (local to this module; rng.py lists 1..7, giga 8)
STREAM_PHASE = 10


# ============================================================================ helpers
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
    s = positive("noise_scale", noise_scale)
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
    record = dict(record)
    record["deviations"] = list(deviations)
    record["as_in_paper"] = not deviations
    for key, val in record.items():
        ds.attrs["privacy_" + key] = _attr(val) if key != "deviations" else (
            "; ".join(deviations) if deviations else "none")
    ds.attrs["calibration"] = json.dumps({k: _jsonable(v) for k, v in record.items()})
    return ds


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


def _add_private(ds, W, Wp, name_note):
    ds["w_priv"] = (("replicate", "run", "param"), np.stack([W, Wp], axis=1),
                    {"long_name": "released output on S and S'", "description": name_note,
                     "units": "1"})
    ds["dist_priv"] = ("replicate", np.linalg.norm(W - Wp, axis=1),
                       {"long_name": "||w_priv(S) - w_priv(S')||", "units": "1"})
    if "run" not in ds.coords:
        ds = ds.assign_coords(run=["S", "S'"])
    return ds


def _ckpts_with(checkpoints, T):
    if checkpoints is None:
        return None
    ck = np.unique(np.r_[np.asarray(checkpoints, dtype=np.int64).ravel(), T])
    return ck


# ============================================================================ P0
def p0_alg2(X, y, *, eps, delta, loss="auc_hinge", constraint="none", eta=None, T=None,
            replicates=100, seed=0, neighbour="farthest", independent_noise=False,
            reading="corrected", G=None, kappa=None, noise_scale=1.0, checkpoints=None,
            w0=None, problem=None) -> xr.Dataset:
    """P0 Alg. 2 (private SGD with output perturbation) on S and S'.

    Runs P0 Alg. 1 (``run_twin(algorithm="p0_alg1", record_outputs=True)``) for T steps,
    then releases w_priv = Pi_W(wbar_T + u), u ~ N(0, sigma^2 I) with
    sigma^2 = ``calibration.p0_sigma2(T, n, eta, G, eps, delta, reading)`` (reading
    "corrected" = 8e, the default; "printed" = Eq. (5) as printed, errata P0-E2).
    u is normal numbers (T+1)p .. (T+1)p+p-1 of ``STREAM_NOISE`` (past anything the kernel
    uses), the same on S and S' unless ``independent_noise`` (then ``STREAM_NOISE_PRIME``).

    Defaults: T = n^2 and eta = n^-1.5 (bounded-W setting of Thm 2 with constant c = 1, ours).
    Returns run_twin's Dataset plus ``w_priv``, ``dist_priv`` and the calibration record.
    """
    eps, delta = _check_privacy(eps, delta)
    lossf, cons = get_loss(loss), get_constraint(constraint)
    X, y, X3, y3 = _data(X, y, lossf)
    n = X3.shape[1]
    reps = _replicate_ids(replicates)
    seed = positive_int("seed", seed, minimum=0)
    deviations = []
    T = n * n if T is None else positive_int("T", T)
    eta_used = n ** -1.5 if eta is None else positive("eta", eta)
    reading = cal.chk.choice("reading", reading, ("corrected", "printed"))
    if reading == "printed":
        deviations.append("sigma^2 from Eq. (5) as printed (missing factor e, P0-E2): "
                          "not the privacy-consistent calibration")
    ns = _noise_scale(noise_scale, deviations)
    _, kidx, xrep, _ = _neighbours(neighbour, X3, y3, reps, seed, problem)
    G, _, kappa, src = _constants(lossf, cons, X3, xrep, G=G, kappa=kappa)
    sigma2 = cal.p0_sigma2(T, n, eta_used, G, eps, delta, reading)
    sigma = math.sqrt(sigma2) * ns
    ck = _ckpts_with(checkpoints, T)
    ds = run_twin(X, y, algorithm="p0_alg1", loss=loss, constraint=cons, eta=eta_used, T=T,
                  replicates=reps, seed=seed, neighbour=neighbour, checkpoints=ck,
                  record_outputs=True, w0=w0, problem=problem)
    p = ds.sizes["param"]
    md = X3.shape[2] if lossf.matrix else 0
    wbar = ds["output"].sel(t=T).values  # (R, 2, p)
    start = (T + 1) * p
    u = gaussian_rows(seed, reps, rng.STREAM_NOISE, start, p)
    up = gaussian_rows(seed, reps, rng.STREAM_NOISE_PRIME, start, p) if independent_noise else u
    W = _project(cons, wbar[:, 0] + sigma * u, md)
    Wp = _project(cons, wbar[:, 1] + sigma * up, md)
    ds = _add_private(ds, W, Wp, "Pi_W(wbar_T + u), P0 Alg. 2")
    ds["dist_output_nonprivate"] = ("replicate", np.linalg.norm(wbar[:, 0] - wbar[:, 1], axis=1),
                                    {"long_name": "||wbar_T - wbar'_T|| (before the noise)"})
    ds.attrs["private_algorithm"] = "p0_alg2"
    ds.attrs["noise"] = "independent" if independent_noise else "shared"
    return _attach(ds, dict(
        algorithm="p0_alg2", paper="P0 Algorithm 2 / Thm 4", eps=eps, delta=delta,
        sigma=sigma, sigma2=sigma**2, sigma_paper=math.sqrt(sigma2), reading=reading,
        T=T, n=n, eta=eta_used, G=G, kappa=kappa, constants=src, noise_scale=ns,
        noise_stream=f"STREAM_NOISE counters from {start}",
        defaults=("T = n^2" if T == n * n else "T given") + ", " +
                 ("eta = n^-1.5 (c = 1, ours)" if eta is None else "eta given"),
        beta=None, grid_step=None, T1=None, T1_as_in_paper=None,
        independent_noise=bool(independent_noise)), deviations)


# ============================================================================ P2
def p2_alg1(X, y, *, eps, delta, loss="ranking_logistic", constraint=("l2", 1.0),
            projected=False, eta=None, T=None, replicates=100, seed=0, neighbour="farthest",
            independent_noise=False, G=None, L=None, kappa=None, noise_scale=1.0,
            checkpoints=None, w0="random", problem=None) -> xr.Dataset:
    """P2 Alg. 1 (full-batch all-pairs GD with gradient perturbation) on S and S'.

    theta_t = theta_{t-1} - eta (grad L(theta_{t-1}; D) + b_t), b_t ~ N(0, sigma^2 I),
    sigma = ``calibration.p2_sigma(T, n, G, eps, delta)`` (Thm 1, equality); output theta_T.
    As printed there is no projection (``projected=False``): ``constraint`` is the paper's C,
    used for the constants G, L only.  ``projected=True`` projects every iterate onto C -- a
    variant "not in paper" (recorded).  theta_0 random (``w0="random"``, shared by S and S').
    Defaults: eta = 1/L (Thm 2/3), T = max(1, ceil(log(sqrt(n) eps))) (Thm 3's
    T = O(log(sqrt(n) eps)) with constant 1, ours).  The neighbour relation is replace-one
    (the DP relation); P2's stability uses removal, which this run does not measure.
    """
    eps, delta = _check_privacy(eps, delta)
    lossf, cons = get_loss(loss), get_constraint(constraint)
    X, y, X3, y3 = _data(X, y, lossf)
    n = X3.shape[1]
    reps = _replicate_ids(replicates)
    seed = positive_int("seed", seed, minimum=0)
    deviations = []
    if projected:
        if not cons.bounded:
            raise ValueError("projected=True needs a bounded constraint C, e.g. ('l2', 1.0)")
        deviations.append("iterates projected onto C: not in paper (P2-E2)")
    ns = _noise_scale(noise_scale, deviations)
    _, _, xrep, _ = _neighbours(neighbour, X3, y3, reps, seed, problem)
    G, L, kappa, src = _constants(lossf, cons, X3, xrep, G=G, L=L, kappa=kappa, need_L=eta is None)
    eta_used = 1.0 / L if eta is None else positive("eta", eta)
    if T is None:
        T = max(1, math.ceil(math.log(math.sqrt(n) * eps)))
        t_note = "T = max(1, ceil(log(sqrt(n) eps))) (constant 1, ours)"
    else:
        T = positive_int("T", T)
        t_note = "T given"
    sigma_paper = cal.p2_sigma(T, n, G, eps, delta)
    sigma = sigma_paper * ns
    ck = _ckpts_with(checkpoints, T)
    ds = run_twin(X, y, algorithm="p2_alg1", loss=loss, constraint=cons if projected else "none",
                  eta=eta_used, T=T, replicates=reps, seed=seed, neighbour=neighbour,
                  checkpoints=ck, record_outputs=True, w0=w0, sigma=sigma,
                  independent_noise=independent_noise, problem=problem)
    out = ds["output"].sel(t=T).values
    ds = _add_private(ds, out[:, 0], out[:, 1], "theta_T, P2 Alg. 1")
    ds.attrs["private_algorithm"] = "p2_alg1"
    return _attach(ds, dict(
        algorithm="p2_alg1", paper="P2 Algorithm 1 / Thm 1", eps=eps, delta=delta,
        sigma=sigma, sigma_paper=sigma_paper, reading="printed (Thm 1, equality)",
        T=T, n=n, eta=eta_used, G=G, L=L, kappa=kappa, constants=src, noise_scale=ns,
        projected=bool(projected), variant="projected onto C (not in paper)" if projected
        else "unprojected (as printed)", defaults=t_note + ", " + (
            "eta = 1/L" if eta is None else "eta given"),
        beta=None, grid_step=None, T1=None, T1_as_in_paper=None,
        independent_noise=bool(independent_noise)), deviations)


# ============================================================================ P4
def _p4(X, y, pairwise, *, eps, delta, loss, constraint, eta, T, replicates, seed, neighbour,
        independent_noise, G, kappa, grid_step, beta_lo, beta_hi, continuous, noise_scale,
        checkpoints, w0, problem):
    eps, delta = _check_privacy(eps, delta)
    lossf, cons = get_loss(loss), get_constraint(constraint)
    X, y, X3, y3 = _data(X, y, lossf)
    n = X3.shape[1]
    reps = _replicate_ids(replicates)
    seed = positive_int("seed", seed, minimum=0)
    deviations = []
    T = n if T is None else positive_int("T", T)
    ns = _noise_scale(noise_scale, deviations)
    _, _, xrep, _ = _neighbours(neighbour, X3, y3, reps, seed, problem)
    G, _, kappa, src = _constants(lossf, cons, X3, xrep, G=G, kappa=kappa)
    res = cal.p4_beta_search(eps, delta, n, T, G, pairwise, grid_step=grid_step, lo=beta_lo,
                             hi=beta_hi, continuous=continuous)
    sigma_paper = math.sqrt(res.sigma2)
    sigma = sigma_paper * ns
    name = "p4_alg2" if pairwise else "p4_alg1"
    ck = _ckpts_with(checkpoints, T)
    ds = run_twin(X, y, algorithm=name, loss=loss, constraint=cons, eta=eta, T=T,
                  replicates=reps, seed=seed, neighbour=neighbour, checkpoints=ck,
                  record_outputs=True, w0=w0, sigma=sigma, independent_noise=independent_noise,
                  problem=problem)
    out = ds["output"].sel(t=T).values
    ds = _add_private(ds, out[:, 0], out[:, 1], "(1/T) sum_{t=1}^T w_t, P4 Alg. %d" % (2 if pairwise else 1))
    ds.attrs["private_algorithm"] = name
    return _attach(ds, dict(
        algorithm=name, paper=f"P4 Algorithm {2 if pairwise else 1} / Thm {5 if pairwise else 2}",
        eps=eps, delta=delta, sigma=sigma, sigma2=sigma**2, sigma_paper=sigma_paper,
        sigma2_over_G2=res.sigma2_over_G2, reading="printed (beta search, P4 section 5)",
        beta=res.beta, grid_step=res.grid_step, beta_lo=res.lo, beta_hi=res.hi,
        search=res.method, n_feasible=res.n_feasible,
        feasible_intervals=[list(iv) for iv in res.feasible_intervals],
        lam=cal.p4_lambda(res.beta, eps, delta), pairwise=bool(pairwise),
        T=T, n=n, eta=repr(eta), G=G, kappa=kappa, constants=src, noise_scale=ns,
        T1=None, T1_as_in_paper=None, independent_noise=bool(independent_noise)), deviations)


def p4_alg1(X, y, *, eps, delta, loss="point_logistic", constraint="none", eta=0.01, T=None,
            replicates=100, seed=0, neighbour="farthest", independent_noise=False, G=None,
            kappa=None, grid_step=1e-4, beta_lo=1e-4, beta_hi=0.9999, continuous=False,
            noise_scale=1.0, checkpoints=None, w0=None, problem=None) -> xr.Dataset:
    """P4 Alg. 1 (pointwise DP-SGD) on S and S': run_twin(algorithm="p4_alg1", sigma=sqrt(sigma^2)).

    sigma^2 = 14 G^2 T lambda/(beta n^2 eps) with beta from ``calibration.p4_beta_search``
    (grid [beta_lo, beta_hi] with step ``grid_step`` -- the paper gives none, 1e-4 is ours and
    the result depends on it, errata P4-A -- or ``continuous=True``); no feasible
    beta raises InfeasiblePrivacyParameters.  Defaults: T = n (T ~ n in Thm 3), eta = 0.01 (the
    paper's experiments), w_1 = 0.  Output (1/T) sum_{t=1}^T w_t.
    """
    return _p4(X, y, False, eps=eps, delta=delta, loss=loss, constraint=constraint, eta=eta, T=T,
               replicates=replicates, seed=seed, neighbour=neighbour,
               independent_noise=independent_noise, G=G, kappa=kappa, grid_step=grid_step,
               beta_lo=beta_lo, beta_hi=beta_hi, continuous=continuous, noise_scale=noise_scale,
               checkpoints=checkpoints, w0=w0, problem=problem)


def p4_alg2(X, y, *, eps, delta, loss="auc_hinge", constraint="none", eta=0.01, T=None,
            replicates=100, seed=0, neighbour="farthest", independent_noise=False, G=None,
            kappa=None, grid_step=1e-4, beta_lo=1e-4, beta_hi=0.9999, continuous=False,
            noise_scale=1.0, checkpoints=None, w0=None, problem=None) -> xr.Dataset:
    """P4 Alg. 2 (pairwise DP-SGD, uniform ordered pair i != j): as :func:`p4_alg1` with
    sigma^2 = 56 G^2 T lambda/(beta n^2 eps) and the pairwise condition of Thm 5."""
    return _p4(X, y, True, eps=eps, delta=delta, loss=loss, constraint=constraint, eta=eta, T=T,
               replicates=replicates, seed=seed, neighbour=neighbour,
               independent_noise=independent_noise, G=G, kappa=kappa, grid_step=grid_step,
               beta_lo=beta_lo, beta_hi=beta_hi, continuous=continuous, noise_scale=noise_scale,
               checkpoints=checkpoints, w0=w0, problem=problem)


# ============================================================================ P1
def phase_seed(seed, k):
    """Seed of phase k of P1 Alg. 3: every phase draws its indices and noise from its own
    counter-based streams, keyed by (phase_seed(seed, k), replicate, stream)."""
    return int(rng.key(int(seed), int(k), STREAM_PHASE)) >> 2


def p1_phase_blocks(n, schedule):
    """[(k, start, n_k, skipped)]: S_k = data indices start .. start+n_k-1 (data order)."""
    out, start = [], 0
    for ph in schedule.phases:
        nk = int(ph.n_k)
        out.append((ph.k, start, nk, ph.skipped))
        start += nk
    return out


def p1_alg3(X, y, *, eps, delta, loss="auc_logistic", constraint=("l2", 1.0), eta="thm10",
            replicates=100, seed=0, neighbour="farthest", independent_noise=False, G=None,
            L=None, kappa=None, noise_scale=1.0, project_noise=False, w0=None,
            problem=None) -> xr.Dataset:
    """P1 Alg. 3 (DP localized SGD) on S and S'.

    K = ceil(log2 n) phases; phase k runs P1 Alg. 1 (``p1_alg1``: pair i_t with i_{t-1},
    output sum eta_j w_{j-2}/sum eta_j) on S_k with constant step eta_k = 4^-k eta for
    ceil(n_k log(4/delta)) steps, initialised at the previous phase's noisy output, then adds
    u_k ~ N(0, sigma_k^2 I), sigma_k = 12 G eta_k log(4/delta) sqrt(2 log(2.5/delta))/eps
    (``calibration.p1_alg3_schedule``, n_k = floor(n/2^k)).  Output w_K.

    Choices (the paper is silent):

    * **Split.** S_k are consecutive blocks in the data order: S_1 = indices 0..n_1-1, S_2
      the next n_2, ...  (shuffle X beforehand for a random split).  sum_k n_k < n: the
      remaining indices are used by no phase.
    * **Degenerate phases** (n_k < 2) are skipped (no steps, no noise, w_k = w_{k-1}) and
      listed in the record; their single point (if any) is unused.
    * **Replaced index.** The replaced example k lies in exactly one block S_j
      (``k_phase = j``; 0 if k is unused, then S' gives the same output as S).  In phase j,
      S'_j = S_j with that example replaced; every other phase sees identical data.  Phases
      before j give identical iterates on S and S'; later phases start from different points.
    * **Streams.** Phase k uses its own seed ``phase_seed(seed, k)`` for the indices (the twin
      kernel's STREAM_INDEX) and for u_k (normal numbers (T_k+1)p.. of STREAM_NOISE, or
      STREAM_NOISE_PRIME for S' when ``independent_noise``).
    * **Projection after the noise**: none (as printed, errata P1-A, point 2); the next
      phase starts at the unprojected point.  ``project_noise=True`` projects (recorded).
    * **eta**: a number, or ``"thm10"`` (printed Thm 10 step, default) / ``"thm10_corrected"``
      (P1-E7) with D = the diameter of W, d = the parameter dimension; Thm 10's eta <= 2/L
      is enforced (InfeasiblePrivacyParameters).  w_0 = 0 unless ``w0`` is given.
    """
    eps, delta = _check_privacy(eps, delta)
    lossf, cons = get_loss(loss), get_constraint(constraint)
    if not lossf.pairwise:
        raise ValueError(f"P1 Alg. 3 is pairwise: loss {loss!r} is pointwise")
    X, y, X3, y3 = _data(X, y, lossf, allow_3d=False)
    n, d = X.shape
    p = d * d if lossf.matrix else d
    md = d if lossf.matrix else 0
    reps = _replicate_ids(replicates)
    R = len(reps)
    seed = positive_int("seed", seed, minimum=0)
    deviations = []
    ns = _noise_scale(noise_scale, deviations)
    if project_noise:
        deviations.append("noisy phase outputs projected onto W (the paper does not project)")
    _, kidx, xrep, yrep = _neighbours(neighbour, X3, y3, reps, seed, problem)
    G, L, kappa, src = _constants(lossf, cons, X3, xrep, G=G, L=L, kappa=kappa,
                                  need_L=isinstance(eta, str))
    if isinstance(eta, str):
        reading = cal.chk.choice("eta", eta, ("thm10", "thm10_corrected"))
        if not cons.bounded:
            raise ValueError(f"eta={eta!r} needs a bounded W (its diameter D): use constraint=('l2', R) "
                             "or give eta as a number")
        eta_val = cal.p1_thm10_eta(n, G, cons.diameter, p, eps, delta,
                                   reading="printed" if reading == "thm10" else "corrected", L=L)
        eta_note = f"Thm 10 step ({'printed' if reading == 'thm10' else 'corrected, P1-E7'}), D={cons.diameter:g}, d={p}"
    else:
        eta_val = positive("eta", eta)
        eta_note = "eta given"
    sched = cal.p1_alg3_schedule(n, eta_val, G, eps, delta, "floor")
    blocks = p1_phase_blocks(n, sched)
    K = sched.K
    if w0 is None:
        W = np.zeros((R, p))
    else:
        W = np.asarray(w0, dtype=np.float64)
        W = np.array(np.broadcast_to(W, (R, p)) if W.shape == (p,) else W)
        if W.shape != (R, p) or not np.all(np.isfinite(W)):
            raise ValueError(f"w0 must be finite with shape ({p},) or ({R}, {p}), got {W.shape}")
    Wp = W.copy()
    alg = get_algorithm("p1_alg1")
    k_phase = np.zeros(R, dtype=np.int64)
    dist_avg = np.full((R, K), np.nan)
    dist_out = np.full((R, K), np.nan)
    outs_all = np.zeros((R, K, 2, p))
    for (k, start, nk, skipped), ph in zip(blocks, sched.phases):
        inside = (kidx >= start) & (kidx < start + nk)
        k_phase[inside] = k
        if skipped:
            dist_avg[:, k - 1] = np.linalg.norm(W - Wp, axis=1)
            dist_out[:, k - 1] = dist_avg[:, k - 1]
            outs_all[:, k - 1, 0], outs_all[:, k - 1, 1] = W, Wp
            continue
        Xext, Yext, krows = extend_with_replacements(X[None, start:start + nk], y[None, start:start + nk],
                                                     xrep, yrep)
        kl = np.where(inside, kidx - start, -1).astype(np.int64)
        Tk = ph.steps
        etas, es = kernel_step_sizes(ph.eta_k, Tk)
        omegas, os_ = alg.kernel_omegas(etas, es, Tk)
        sk = np.int64(phase_seed(seed, k))
        ck = np.array([Tk], dtype=np.int64)
        res = []
        for W0 in (W, Wp):
            rec = np.full((R, 1, N_REC), np.nan)
            outs = np.zeros((R, 1, 2, p))
            twin_kernel(Xext, Yext, kl, krows, reps, sk, alg.schedule, alg.buffer,
                        int(alg.sequential), lossf.form, lossf.phi, float(lossf.q), cons.kind,
                        float(cons.radius), md, etas, omegas, alg.avg_lag, 0.0, False, False,
                        np.zeros(p), np.ascontiguousarray(W0), ck, rec, True, outs, T=Tk, strides=(es, os_))
            res.append(outs)
        wbar, wbarp = res[0][:, 0, 0], res[1][:, 0, 1]
        start_noise = (Tk + 1) * p
        u = gaussian_rows(sk, reps, rng.STREAM_NOISE, start_noise, p)
        up = gaussian_rows(sk, reps, rng.STREAM_NOISE_PRIME, start_noise, p) if independent_noise else u
        sig = ph.sigma * ns
        W, Wp = wbar + sig * u, wbarp + sig * up
        if project_noise:
            W, Wp = _project(cons, W, md), _project(cons, Wp, md)
        dist_avg[:, k - 1] = np.linalg.norm(wbar - wbarp, axis=1)
        dist_out[:, k - 1] = np.linalg.norm(W - Wp, axis=1)
        outs_all[:, k - 1, 0], outs_all[:, k - 1, 1] = W, Wp
    phases = np.arange(1, K + 1)
    ds = xr.Dataset(
        {"dist_phase_avg": (("replicate", "phase"), dist_avg,
                            {"long_name": "||wbar_k - wbar'_k|| (phase output before the noise)"}),
         "dist_phase": (("replicate", "phase"), dist_out,
                        {"long_name": "||w_k - w'_k|| (after the noise)"}),
         "phase_output": (("replicate", "phase", "run", "param"), outs_all,
                          {"long_name": "w_k on S and S'"}),
         "k": ("replicate", kidx, {"long_name": "index of the replaced example"}),
         "k_phase": ("replicate", k_phase,
                     {"long_name": "phase whose block S_k holds the replaced example (0: unused)"})},
        coords={"replicate": reps, "phase": phases, "run": ["S", "S'"],
                "n_k": ("phase", np.array([b[2] for b in blocks])),
                "block_start": ("phase", np.array([b[1] for b in blocks])),
                "eta_k": ("phase", np.array(sched.eta_k)),
                "steps_k": ("phase", np.array([0 if p_.skipped else p_.steps for p_ in sched.phases])),
                "sigma_k": ("phase", np.array([0.0 if p_.skipped else p_.sigma * ns for p_ in sched.phases])),
                "skipped": ("phase", np.array([p_.skipped for p_ in sched.phases]))},
        attrs=provenance(algorithm="p1_alg3", loss=lossf.name, constraint=cons.name,
                         radius=cons.radius, n=n, d=d, seed=seed,
                         noise="independent" if independent_noise else "shared",
                         neighbour_relation="replace-one", private_algorithm="p1_alg3"))
    ds = _add_private(ds, W, Wp, "w_K, P1 Alg. 3")
    return _attach(ds, dict(
        algorithm="p1_alg3", paper="P1 Algorithm 3 / Thm 10", eps=eps, delta=delta,
        sigma=sched.phases[0].sigma * ns, sigma_k=[0.0 if p_.skipped else p_.sigma * ns for p_ in sched.phases],
        sigma_paper=sched.phases[0].sigma, reading=eta_note, eta=eta_val, K=K,
        n_k=[b[2] for b in blocks], steps_k=[p_.steps for p_ in sched.phases],
        skipped_phases=list(sched.degenerate), split="consecutive blocks in the data order",
        unused_points=n - sum(b[2] for b in blocks if not b[3]),
        projection_after_noise=bool(project_noise), n=n, G=G, L=L, kappa=kappa, constants=src,
        noise_scale=ns, beta=None, grid_step=None, T1=None, T1_as_in_paper=None,
        independent_noise=bool(independent_noise)), deviations)


# ============================================================================ P3
P3_VARIANTS = {
    # name: (online, convex surrogate (G~ = G + alpha diam), default centre, paper)
    "OnPairStrC": (True, False, "zero", "P3 Algorithm 1 (OnPairStrC) / Thm 1"),
    "OnPairC": (True, True, "random", "P3 Algorithm 2 (OnPairC) / Thm 3"),
    "OffPairStrC": (False, False, "zero", "P3 Algorithm 3 (OffPairStrC) / Thm 5"),
    "OffPairC": (False, True, "zero", "P3 Algorithm 4 (OffPairC) / Thm 5"),
}


def _variant(variant):
    for name in P3_VARIANTS:
        if str(variant).lower() == name.lower():
            return name
    raise ValueError(f"unknown P3 variant {variant!r}; allowed: {', '.join(P3_VARIANTS)}")


def p3_plan(n, *, variant, alpha, lossf, cons, kappa, G=None, L=None, T1=None):
    """Constants and burn-in of a P3 run: dict(G, L, G_tilde, L_tilde, alpha, T1, burnin, ...).

    The loss actually run is l~ = l + (alpha/2)||w - c||^2, alpha-strongly convex:
    StrC variants (Alg. 1/3) need an alpha-strongly convex loss, and every loss here is only
    convex, so the regulariser (alpha/2)||w||^2 of the paper's experiments (lambda = alpha)
    is added, c = 0: G~ = G + alpha R (||w|| <= R on C), L~ = L + alpha.  Convex variants
    (Alg. 2/4): G~ = G + alpha ||C||_2 (diameter), L~ = L + alpha, as printed.
    T_1 = max(ceil(16 L~^2/alpha^2), 7) (the smoothness of the loss actually run).
    Raises InfeasiblePrivacyParameters when T_1 >= n unless T1 is given (then recorded as
    "not as in paper").
    """
    variant = _variant(variant)
    online, convex, _, _ = P3_VARIANTS[variant]
    alpha = positive("alpha", alpha)
    G = float(lossf.G(kappa, cons.radius)) if G is None else positive("G", G)
    L = float(lossf.L(kappa, cons.radius)) if L is None else positive("L", L)
    if not (math.isfinite(G) and math.isfinite(L)):
        raise ValueError(f"G={G}, L={L} of loss {lossf.name!r}: pass finite G= and L=")
    if convex:
        Gt, Lt = cal.p3_convex_surrogate(G, L, alpha, cons.diameter)
        how = "G~ = G + alpha diam(C), L~ = L + alpha (Alg. 2/4)"
    else:
        Gt, Lt = G + alpha * cons.radius, L + alpha
        how = ("loss + (alpha/2)||w||^2 (experiments' regulariser, lambda = alpha): "
               "G~ = G + alpha R, L~ = L + alpha")
    try:
        burn = cal.p3_check_burnin(n, Lt, alpha, T1)
    except InfeasiblePrivacyParameters as e:
        root = math.sqrt(n - 1) - 4.0
        need = (f"alpha >= 4L/(sqrt(n-1) - 4) = {4.0 * L / root:.4g}" if root > 0 else
                f"n >= 18 (T_1 >= 16 always, since L~ = L + alpha)")
        raise InfeasiblePrivacyParameters(
            f"{e} [stabsim.privacy.algorithms.p3_{variant.lower()}: here L~ = L + alpha "
            f"(L={L:.4g}), so T_1 < n={n} needs {need}.  To run anyway pass "
            f"T1=<integer in [2, {n})> (recorded as 'not as in paper').]") from None
    return dict(variant=variant, online=online, convex=convex, G=G, L=L, G_tilde=Gt,
                L_tilde=Lt, alpha=alpha, T1=burn.T1, T1_paper=burn.T1_paper,
                T1_as_in_paper=burn.as_in_paper, T1_note=burn.note, constants_rule=how)


def p3_giga(X, y, *, variant, eps, delta, alpha=None, loss="ranking_logistic",
            constraint=("l2", 1.0), T1=None, replicates=100, seed=0, neighbour="farthest",
            independent_noise=False, G=None, L=None, kappa=None, exact_rho=True, center=None,
            permute=False, noise_scale=1.0, checkpoints=None, record_outputs=False,
            problem=None) -> xr.Dataset:
    """P3 Algs 1-4 (pairwise private GIGA) on S and S'; kernel :mod:`stabsim.kernels.giga`.

    variant: ``"OnPairStrC"`` (Alg. 1), ``"OnPairC"`` (Alg. 2), ``"OffPairStrC"`` (Alg. 3),
    ``"OffPairC"`` (Alg. 4).  One pass over z_1..z_n in the data order (``permute=True``: a
    random order per replicate, argsort of ``n`` uniforms of STREAM_INDEX, shared by S and
    S', as in the experiments' "random permutations").  Burn-in t <= T_1: random points
    uniform in C (shared by S and S').  Then eta_t = ((t-1)/(t-2)) 2/(alpha t) GIGA steps on
    l~ = l + (alpha/2)||w - c||^2 (see :func:`p3_plan` for the constants).

    Centre c: StrC variants 0 (the experiments' (lambda/2)||w||^2); OnPairC a random point of
    C (Alg. 2 step 3, point 0 of STREAM_BURNIN, the same on S and S'); OffPairC "any point of
    C" -> 0.  ``center`` overrides ("zero", "random" or an array, recorded).

    Noise: online sigma_t^2 = 32 G~^2 (n - T_1)/(alpha^2 t^2 rho) per release t > T_1
    (``calibration.p3_sigma2_online``; rho exact unless ``exact_rho=False``, P3-E1/E2), release
    Pi_C(w_t + n_t); offline sigma^2 = 128 G~^2 log^2 n log(1.25/delta)/(alpha^2 n^2 eps^2)
    (``p3_sigma2_offline``) on the average of w_1..w_n, output Pi_C(...).
    Outputs ``w_priv``: offline Pi_C(w~ + noise); online the online-to-batch average of the
    released w_1..w_{n-1} (Thm 4).  Measurements: ``dist_iterate`` (noise-free GIGA
    iterates, vs ``lemma4_bound`` = 8 G~/(alpha t)), ``dist_release``, ``loss_path`` (regret
    path of the played points with l; ``loss_path_surrogate`` with l~), optionally
    ``released`` (the released points / internal iterates at the checkpoints).

    alpha defaults: StrC 1e-3 (the experiments' lambda), convex 1/sqrt(n) (alpha = O(1/sqrt n),
    constant 1, ours) -- at these T_1 >= n and the run raises InfeasiblePrivacyParameters
    unless T1 is given (errata P3-D feasibility warning).
    """
    eps, delta = _check_privacy(eps, delta)
    variant = _variant(variant)
    online, convex, default_center, paper = P3_VARIANTS[variant]
    lossf, cons = get_loss(loss), get_constraint(constraint)
    if not lossf.pairwise:
        raise ValueError(f"P3's algorithms are pairwise: loss {loss!r} is pointwise")
    if cons.kind not in (L2, FROBENIUS):
        raise ValueError("P3 needs a bounded ball C to draw its random points from: constraint "
                         f"('l2', R) or ('frobenius', R), got {cons.name!r}")
    if lossf.matrix != (cons.kind == FROBENIUS):
        raise ValueError(f"constraint {cons.name!r} does not match loss {loss!r} "
                         "(matrix losses use ('frobenius', R), vector losses ('l2', R))")
    X, y, X3, y3 = _data(X, y, lossf, allow_3d=False)
    n, d = X.shape
    p = d * d if lossf.matrix else d
    md = d if lossf.matrix else 0
    reps = _replicate_ids(replicates)
    R = len(reps)
    seed = positive_int("seed", seed, minimum=0)
    deviations = []
    ns = _noise_scale(noise_scale, deviations)
    if alpha is None:
        alpha = 1e-3 if not convex else 1.0 / math.sqrt(n)
        alpha_note = "alpha = 1e-3 (experiments' lambda)" if not convex else "alpha = 1/sqrt(n) (constant 1, ours)"
    else:
        alpha_note = "alpha given"
    _, kidx, xrep, yrep = _neighbours(neighbour, X3, y3, reps, seed, problem)
    if kappa is None:
        kappa = float(max(np.linalg.norm(X, axis=1).max(), np.linalg.norm(xrep, axis=1).max()))
        ksrc = "kappa = max ||x|| over S and the replacement points"
    else:
        kappa = positive("kappa", kappa)
        ksrc = "kappa given"
    plan = p3_plan(n, variant=variant, alpha=alpha, lossf=lossf, cons=cons, kappa=kappa, G=G,
                   L=L, T1=T1)
    if not plan["T1_as_in_paper"]:
        deviations.append(plan["T1_note"])
    Gt, T1v, alpha = plan["G_tilde"], plan["T1"], plan["alpha"]
    rho = cal.p3_rho(eps, delta, exact=exact_rho)
    if not exact_rho:
        deviations.append("rho from the approximation eps^2/(4 log(1/delta)) (P3-E2: under-noises)")
    if online:
        sig_paper_first = math.sqrt(cal.p3_sigma2_online(T1v + 1, n, T1v, Gt, alpha, rho))
        sig_coef = sig_paper_first * (T1v + 1) * ns
        sigma_off = 0.0
    else:
        sigma_off_paper = math.sqrt(cal.p3_sigma2_offline(n, Gt, alpha, eps, delta))
        sigma_off = sigma_off_paper * ns
        sig_coef = 0.0
    # centre of the regulariser
    cspec = default_center if center is None else center
    if isinstance(cspec, str):
        if cspec == "zero":
            centers = np.zeros((R, p))
        elif cspec == "random":
            centers = np.empty((R, p))
            for i, r in enumerate(reps):
                ball_point(rng.key(seed, int(r), STREAM_BURNIN), np.int64(0), p, md,
                           float(cons.radius), centers[i])
        else:
            raise ValueError(f"center must be 'zero', 'random' or an array of {p} entries, got {cspec!r}")
        center_note = {"zero": "c = 0", "random": "c random in C (point 0 of STREAM_BURNIN)"}[cspec]
    else:
        c0 = np.asarray(cspec, dtype=np.float64).ravel()
        if c0.shape != (p,) or not np.all(np.isfinite(c0)):
            raise ValueError(f"center must have {p} finite entries, got shape {c0.shape}")
        if np.linalg.norm(c0) > cons.radius * (1 + 1e-12):
            raise ValueError("center must lie in C")
        centers = np.tile(c0, (R, 1))
        center_note = "c given"
    if center is not None and cspec != default_center:
        deviations.append(f"regulariser centre {center_note} (paper: "
                          f"{'random' if default_center == 'random' else 'zero / any point'})")
    # stream order
    if permute:
        perms = np.stack([np.argsort(rng.uniforms(seed, int(r), rng.STREAM_INDEX, n), kind="stable")
                          for r in reps]).astype(np.int64)
    else:
        perms = np.tile(np.arange(n, dtype=np.int64), (R, 1))
    if checkpoints is None:
        ck = np.arange(1, n + 1, dtype=np.int64) if n <= 1000 else np.unique(np.r_[log_checkpoints(n), T1v, T1v + 1])
    else:
        ck = np.unique(np.asarray(checkpoints, dtype=np.int64).ravel())
        if ck.size == 0 or ck[0] < 1 or ck[-1] > n:
            raise ValueError(f"checkpoints must be steps in [1, n={n}]")
    Xext, Yext, krows = extend_with_replacements(X3, y3, xrep, yrep)
    rec = np.full((R, ck.size, N_REC_GIGA), np.nan)
    outs = np.zeros((R, ck.size, 2, p) if record_outputs else (1, 1, 2, 1))
    final = np.zeros((R, 2, 2, p))
    giga_kernel(Xext, Yext, kidx, krows, reps, np.int64(seed), perms, lossf.form, lossf.phi,
                float(lossf.q), cons.kind, float(cons.radius), md, float(alpha), np.int64(T1v),
                bool(online), float(sig_coef), float(sigma_off), bool(independent_noise),
                np.ascontiguousarray(centers), ck, rec, bool(record_outputs), outs, final)
    pos = np.array([int(np.flatnonzero(perms[i] == kidx[i])[0]) + 1 if kidx[i] >= 0 else 0
                    for i in range(R)], dtype=np.int64)
    tt = ck.astype(float)
    sig_t = np.where(ck > T1v, sig_coef / tt, 0.0) if online else np.zeros(ck.size)
    eta_t = np.where(ck > T1v, (tt - 1) / np.maximum(tt - 2, 1) * 2 / (alpha * tt), np.nan)
    data = {
        "dist_iterate": (("replicate", "t"), rec[:, :, 0],
                         {"long_name": "||w_t - w'_t|| (noise-free Pairwise GIGA iterates)"}),
        "dist_release": (("replicate", "t"), rec[:, :, 1],
                         {"long_name": "||released_t - released'_t||" if online else
                          "offline: = dist_iterate (nothing is released per step)"}),
        "loss_path": (("replicate", "t"), rec[:, :, 2],
                      {"long_name": "sum_{s=2}^t Lhat_s(v_{s-1}) with l (run on S; v = released "
                                    "point online, internal iterate offline)"}),
        "loss_path_surrogate": (("replicate", "t"), rec[:, :, 3],
                                {"long_name": "the same with l~ = l + (alpha/2)||w - c||^2"}),
        "w_average": (("replicate", "run", "param"), final[:, 0],
                      {"long_name": "non-private average of the GIGA iterates (w_1..w_{n-1} online, w_1..w_n offline)"}),
        "center": (("replicate", "param"), centers, {"long_name": "regulariser centre c"}),
        "k": ("replicate", kidx, {"long_name": "index of the replaced example"}),
        "k_position": ("replicate", pos, {"long_name": "step t at which the replaced example arrives"}),
    }
    if record_outputs:
        data["released"] = (("replicate", "t", "run", "param"), outs,
                            {"long_name": "released point (online) / internal iterate (offline) at t"})
    ds = xr.Dataset(data, coords={
        "replicate": reps, "t": ck, "run": ["S", "S'"],
        "lemma4_bound": ("t", 8.0 * Gt / (alpha * tt), {"long_name": "P3 Lemma 4: 8 G~/(alpha t)"}),
        "sigma_t": ("t", sig_t, {"long_name": "release noise std at t (online)"}),
        "eta_t": ("t", eta_t, {"long_name": "((t-1)/(t-2)) 2/(alpha t) for t > T_1"})},
        attrs=provenance(algorithm=f"p3_{variant.lower()}", loss=lossf.name, constraint=cons.name,
                         radius=cons.radius, n=n, d=d, seed=seed,
                         noise="independent" if independent_noise else "shared",
                         neighbour_relation="replace-one",
                         private_algorithm=f"p3_{variant.lower()}"))
    ds = _add_private(ds, final[:, 1, 0], final[:, 1, 1],
                      "online-to-batch average of the releases" if online else "Pi_C(w~ + noise)")
    ds["dist_average"] = ("replicate", np.linalg.norm(final[:, 0, 0] - final[:, 0, 1], axis=1),
                          {"long_name": "||w_average(S) - w_average(S')||"})
    return _attach(ds, dict(
        algorithm=f"p3_{variant.lower()}", paper=paper, variant=variant, eps=eps, delta=delta,
        online=online, rho=rho, exact_rho=bool(exact_rho),
        reading="exact rho" if exact_rho else "approximate rho (printed approximation)",
        sigma=(sig_coef / (T1v + 1)) if online else sigma_off,
        sigma_note=("sigma_t at t = T_1+1; sigma_t = sigma_coef/t" if online else
                    "offline output-noise std"),
        sigma_coef=sig_coef, sigma_paper=(sig_paper_first if online else sigma_off_paper),
        T1=T1v, T1_paper=plan["T1_paper"], T1_as_in_paper=plan["T1_as_in_paper"],
        T1_note=plan["T1_note"], alpha=alpha, alpha_note=alpha_note, G=plan["G"], L=plan["L"],
        G_tilde=Gt, L_tilde=plan["L_tilde"], constants_rule=plan["constants_rule"], kappa=kappa,
        constants=ksrc, center=center_note, order="random permutation per replicate" if permute
        else "data order", n=n, noise_scale=ns, beta=None, grid_step=None,
        independent_noise=bool(independent_noise)), deviations)


def _p3(variant):
    def f(X, y, **kw):
        return p3_giga(X, y, variant=variant, **kw)
    f.__name__ = f.__qualname__ = f"p3_{variant.lower()}"
    f.__doc__ = f"P3 {P3_VARIANTS[variant][3]}: ``p3_giga(X, y, variant={variant!r}, ...)``."
    return f


p3_onpairstrc = _p3("OnPairStrC")
p3_onpairc = _p3("OnPairC")
p3_offpairstrc = _p3("OffPairStrC")
p3_offpairc = _p3("OffPairC")


# ============================================================================ registry
PRIVATE_ALGORITHMS = {
    "p0_alg2": p0_alg2,
    "p1_alg3": p1_alg3,
    "p2_alg1": p2_alg1,
    "p3_onpairstrc": p3_onpairstrc,
    "p3_onpairc": p3_onpairc,
    "p3_offpairstrc": p3_offpairstrc,
    "p3_offpairc": p3_offpairc,
    "p4_alg1": p4_alg1,
    "p4_alg2": p4_alg2,
}


def run_private(name, X, y, **kwargs) -> xr.Dataset:
    """Run the private algorithm ``name`` (a key of ``PRIVATE_ALGORITHMS``)."""
    if name not in PRIVATE_ALGORITHMS:
        import difflib
        close = difflib.get_close_matches(str(name), list(PRIVATE_ALGORITHMS), n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(f"unknown private algorithm {name!r}.{hint} "
                         f"Allowed: {', '.join(PRIVATE_ALGORITHMS)}")
    return PRIVATE_ALGORITHMS[name](X, y, **kwargs)


#: "quick" configurations (each runs in well under a minute): data (problem, n, d) and kwargs.
QUICK = {
    "p0_alg2": (("auc_separable", 30, 5), dict(eps=1.0, delta=1e-3, constraint=("l2", 1.0),
                                                replicates=200)),
    "p1_alg3": (("auc_separable", 256, 5), dict(eps=1.0, delta=1e-3, replicates=200)),
    "p2_alg1": (("auc_separable", 60, 5), dict(eps=1.0, delta=1e-3, T=20, replicates=200)),
    "p3_onpairstrc": (("auc_separable", 200, 5), dict(eps=1.0, delta=1 / 200, alpha=4.0,
                                                      replicates=200)),
    "p3_onpairc": (("auc_separable", 200, 5), dict(eps=1.0, delta=1 / 200, alpha=4.0,
                                                   replicates=200)),
    "p3_offpairstrc": (("auc_separable", 200, 5), dict(eps=1.0, delta=1 / 200, alpha=4.0,
                                                       replicates=200)),
    "p3_offpairc": (("auc_separable", 200, 5), dict(eps=1.0, delta=1 / 200, alpha=4.0,
                                                    replicates=200)),
    "p4_alg1": (("p4_logistic", 1000, 10), dict(eps=2.0, delta=1e-6, T=1000, replicates=200)),
    "p4_alg2": (("auc_separable", 2000, 5), dict(eps=2.0, delta=1e-6, T=2000, replicates=200)),
}


def quick_data(name, seed=0):
    """The synthetic data set (X, y) of the quick configuration of ``name``."""
    from ..synthetic import make_problem
    (prob, n, d), _ = QUICK[name]
    return make_problem(prob, d=d).sample(n, seed)


def quick_run(name, seed=0, **overrides) -> xr.Dataset:
    """Run ``name`` in its quick configuration (``QUICK``), with optional overrides."""
    X, y = quick_data(name, seed)
    kw = dict(QUICK[name][1])
    kw.update(seed=seed)
    kw.update(overrides)
    return run_private(name, X, y, **kw)
