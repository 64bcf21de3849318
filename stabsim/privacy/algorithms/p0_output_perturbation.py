"""P0 Algorithm 2 / Thm 4 (private SGD with output perturbation) as a twin run on S and S'.

:func:`p0_alg2`: P0 Alg. 1 (``run_twin(algorithm="p0_alg1")``), then w_priv = Pi_W(wbar_T + u),
u ~ N(0, sigma^2 I), sigma^2 from P0 Eq. (5) (``calibration.p0_sigma2``, reading "corrected" =
errata P0-E2 by default).
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from stabsim.engine import rng
from stabsim.engine.validation import positive, positive_int
from stabsim.privacy import calibration as cal
from stabsim.privacy.algorithms.common import (_add_private, _setup, _attach, _ckpts_with, _constants, _neighbours, _noise_scale,
                     _project, gaussian_rows, twin_run_once)


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
    eps, delta, lossf, cons, X, y, X3, y3, n, reps, seed = _setup(eps, delta, loss, constraint, X, y, replicates, seed)
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
    # the noise comes after the run: a sweep over eps or the noise scale shares it
    ds = twin_run_once(X, y, algorithm="p0_alg1", loss=loss, constraint=cons, eta=eta_used, T=T,
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
