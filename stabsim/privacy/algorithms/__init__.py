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

P1 Alg. 3 and P3's pairwise GIGA take a validated config object (the paper's symbols) and the
data as ordinary arguments: ``p1_alg3(X, y, P1Alg3Config(eps=..., delta=..., eta=...),
replicates=..., seed=...)``, ``p3_giga(X, y, P3GigaConfig(variant=..., eps=..., delta=...,
alpha=...), ...)``; ``PRIVATE_ALGORITHMS`` / :func:`run_private` take every algorithm with
keyword arguments (config fields and run arguments together).

Modules: :mod:`.common` (checks, noise rows, projection, calibration record),
:mod:`.p0_output_perturbation`, :mod:`.p1_localized`, :mod:`.p2_gradient_perturbation`,
:mod:`.p3_pairwise_giga`, :mod:`.p4_dpsgd`, :mod:`.registry` (``PRIVATE_ALGORITHMS``,
``run_private``, ``QUICK``); every public name is importable from this package.

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
(``stabsim.engine.losses.Loss.G / .L``) at kappa = the largest ||x|| over S and the replacement
points and at the constraint's radius; pass ``G``/``L``/``kappa`` (keyword or config field) to override (recorded).

``noise_scale`` multiplies every noise standard deviation; anything but 1 is recorded as a
deviation ("noise deliberately scaled") -- it exists to break the privacy on purpose in
audits.
"""

from stabsim.privacy.algorithms.common import calibration_record, gaussian_rows
from stabsim.privacy.algorithms.p0_output_perturbation import p0_alg2
from stabsim.privacy.algorithms.p1_localized import STREAM_PHASE, P1Alg3Config, p1_alg3, p1_phase_blocks, phase_seed
from stabsim.privacy.algorithms.p2_gradient_perturbation import p2_alg1
from stabsim.privacy.algorithms.p3_pairwise_giga import (P3_VARIANTS, P3GigaConfig, P3Run, _variant, p3_giga, p3_offpairc,
                               p3_offpairstrc, p3_onpairc, p3_onpairstrc, p3_plan, p3_run)
from stabsim.privacy.algorithms.p4_dpsgd import p4_alg1, p4_alg2
from stabsim.privacy.algorithms.registry import PRIVATE_ALGORITHMS, QUICK, config_default, quick_data, quick_run, run_private

__all__ = [
    "PRIVATE_ALGORITHMS", "QUICK", "P1Alg3Config", "P3GigaConfig", "P3_VARIANTS",
    "calibration_record", "config_default", "p0_alg2", "p1_alg3", "p2_alg1", "p3_giga",
    "p3_onpairstrc", "p3_onpairc", "p3_offpairstrc", "p3_offpairc", "p3_plan", "p3_run", "P3Run", "p4_alg1",
    "p4_alg2", "quick_data", "quick_run", "run_private",
]
