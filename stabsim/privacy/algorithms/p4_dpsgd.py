"""P4 Algorithms 1 and 2 / Thms 2 and 5 (pointwise and pairwise DP-SGD) on S and S'.

:func:`p4_alg1` (pointwise) and :func:`p4_alg2` (uniform ordered pair i != j): ``run_twin`` with
sigma^2 from the beta search of P4 section 5 (``calibration.p4_beta_search``, errata P4-A).
"""

from __future__ import annotations

import math

import xarray as xr

from stabsim.engine.twin_runs import run_twin
from stabsim.engine.validation import positive_int
from stabsim.privacy import calibration as cal
from stabsim.privacy.algorithms.common import (_add_private, _setup, _attach, _ckpts_with, _constants, _neighbours, _noise_scale)


def _p4(X, y, pairwise, *, eps, delta, loss, constraint, eta, T, replicates, seed, neighbour,
        independent_noise, G, kappa, grid_step, beta_lo, beta_hi, continuous, noise_scale,
        checkpoints, w0, problem):
    eps, delta, lossf, cons, X, y, X3, y3, n, reps, seed = _setup(eps, delta, loss, constraint, X, y, replicates, seed)
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
