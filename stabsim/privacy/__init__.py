"""Privacy calibration, accountant cross-check and audit statistics for the five papers.

* :mod:`.calibration` -- the noise each paper prescribes (P0 Eq. (5), P1 Alg. 3, P2 Thm 1,
  P3 Alg. 1/3, P4 Thm 2/5 and its beta search).
* :mod:`.analytic` -- the exact (analytic) Gaussian mechanism of Balle & Wang (2018).
* :mod:`.accountant` -- what those sigmas actually buy according to dp_accounting (RDP, PLD).
* :mod:`.exact` -- exact GDP accounting (analytic Gaussian mechanism) and the guarded PLD/RDP.
* :mod:`.ledger` -- one mechanism description per algorithm and the privacy ledger (``stabsim privacy``).
* :mod:`.audit` -- Clopper-Pearson epsilon lower bounds for empirical privacy audits.
* :mod:`.algorithms` -- the private algorithms as twin runs on S and S' (loaded lazily).
* :mod:`.audit_runner` -- empirical audits: ``run_audit`` (loaded lazily).
"""

from stabsim.privacy.errors import InfeasiblePrivacyParameters
from stabsim.privacy import analytic, audit, calibration
from stabsim.privacy.calibration import (
    gaussian_mechanism_sigma, p0_sensitivity_eq9, p0_sigma2, p1_alg3_schedule, p1_thm10_eta,
    p2_sensitivity, p2_sigma, p3_check_burnin, p3_convex_surrogate, p3_eta, p3_rho,
    p3_sensitivity, p3_sigma2_offline, p3_sigma2_online, p3_T1, p4_beta_search,
    p4_condition_margins, p4_feasible, p4_lambda, p4_sigma2,
)
from stabsim.privacy.analytic import analytic_gaussian_delta, analytic_gaussian_epsilon, analytic_gaussian_sigma
from stabsim.privacy.audit import (
    clopper_pearson_upper, eps_from_rates, eps_lower_from_counts, eps_lower_from_scores,
)

__all__ = [
    "InfeasiblePrivacyParameters", "analytic", "audit", "calibration",
    "gaussian_mechanism_sigma", "p0_sensitivity_eq9", "p0_sigma2", "p1_alg3_schedule",
    "p1_thm10_eta", "p2_sensitivity", "p2_sigma", "p3_check_burnin", "p3_convex_surrogate",
    "p3_eta", "p3_rho", "p3_sensitivity", "p3_sigma2_offline", "p3_sigma2_online", "p3_T1",
    "p4_beta_search", "p4_condition_margins", "p4_feasible", "p4_lambda", "p4_sigma2",
    "analytic_gaussian_delta", "analytic_gaussian_epsilon", "analytic_gaussian_sigma",
    "clopper_pearson_upper", "eps_from_rates", "eps_lower_from_counts", "eps_lower_from_scores",
]
# The accountant (it imports dp_accounting, slow to import: benchmarks/README.md, "Import time") is
# loaded lazily: ``from stabsim.privacy import accountant``.
# The private algorithms and the audit runner (numba kernels) are loaded on first use too.
_LAZY = {
    "algorithms": ("algorithms", None),
    "audit_runner": ("audit_runner", None),
    "PRIVATE_ALGORITHMS": ("algorithms", "PRIVATE_ALGORITHMS"),
    "run_private": ("algorithms", "run_private"),
    "calibration_record": ("algorithms", "calibration_record"),
    "p0_alg2": ("algorithms", "p0_alg2"),
    "p1_alg3": ("algorithms", "p1_alg3"),
    "P1Alg3Config": ("algorithms", "P1Alg3Config"),
    "P3GigaConfig": ("algorithms", "P3GigaConfig"),
    "p2_alg1": ("algorithms", "p2_alg1"),
    "p3_giga": ("algorithms", "p3_giga"),
    "p3_onpairstrc": ("algorithms", "p3_onpairstrc"),
    "p3_onpairc": ("algorithms", "p3_onpairc"),
    "p3_offpairstrc": ("algorithms", "p3_offpairstrc"),
    "p3_offpairc": ("algorithms", "p3_offpairc"),
    "p4_alg1": ("algorithms", "p4_alg1"),
    "p4_alg2": ("algorithms", "p4_alg2"),
    "run_audit": ("audit_runner", "run_audit"),
    "make_canary": ("audit_runner", "make_canary"),
    "AuditReport": ("audit_runner", "AuditReport"),
    "PrivacyViolationWarning": ("audit_runner", "PrivacyViolationWarning"),
}
__all__ += list(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        m = importlib.import_module(f".{mod}", __name__)
        return m if attr is None else getattr(m, attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
