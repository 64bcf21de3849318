"""Privacy audits: the cell parameters of the kind ``privacy_audit`` -> the audit's inputs
(shared by :mod:`stabsim.experiments.privacy_audit` and :mod:`stabsim.analyses.privacy_audit`)."""

from __future__ import annotations


def audit_inputs(params):
    """(design, keyword arguments of ``audit_scores``) for the cell parameters ``params['audit']``:
    the worst-case design of :func:`stabsim.privacy.audit_designs.worst_case_design`, plus any
    ``[audit] algorithm_kwargs`` on top of it."""
    from stabsim.privacy.audit_designs import worst_case_design

    a = params["audit"]
    design = worst_case_design(a["algorithm"], n=a["n"], T=a["T"] or None)
    kw = dict(design.kwargs)
    kw.update(a.get("options") or {})
    kw.update(eps=a["eps"], delta=a["delta"], canary=design.canary, noise_scale=a["noise_scale"],
              threat_model=a["threat_model"])
    return design, kw


def known_randomness_inputs(params, seed):
    """(instance, keyword arguments of ``known_randomness_scores``) of a known-randomness cell: the worst
    instance found by :func:`stabsim.privacy.audit_output.worst_instance` at the cell's algorithm, n, T,
    eps, delta and options (searched on replicate ids 0..15 with the study's seed)."""
    from stabsim.privacy.audit_output import worst_instance

    a = params["audit"]
    inst = worst_instance(a["algorithm"], n=a["n"], T=a["T"] or None, eps=a["eps"], delta=a["delta"], seed=seed,
                          options=a.get("options") or None)
    kw = dict(inst["kwargs"], eps=a["eps"], delta=a["delta"], canary=inst["canary"], noise_scale=a["noise_scale"])
    return inst, kw
