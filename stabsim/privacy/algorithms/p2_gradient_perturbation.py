"""P2 Algorithm 1 / Thm 1 (full-batch all-pairs GD with gradient perturbation) on S and S'.

:func:`p2_alg1`: ``run_twin(algorithm="p2_alg1", sigma=...)`` with sigma = ``calibration.p2_sigma``
(Thm 1, equality); unprojected as printed, ``projected=True`` is a variant "not in paper" (P2-E2).
"""

from __future__ import annotations

import math

import xarray as xr

from stabsim.engine.twin_runs import run_twin
from stabsim.engine.validation import positive, positive_int
from stabsim.privacy import calibration as cal
from stabsim.privacy.algorithms.common import (_add_private, _setup, _attach, _ckpts_with, _constants, _neighbours, _noise_scale)


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
    eps, delta, lossf, cons, X, y, X3, y3, n, reps, seed = _setup(eps, delta, loss, constraint, X, y, replicates, seed)
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
