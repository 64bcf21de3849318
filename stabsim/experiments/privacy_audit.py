"""Privacy audits as studies: kind ``privacy_audit``; check ``privacy_audit`` in
:mod:`stabsim.analyses.privacy_audit`.

Kind ``privacy_audit``
    (``threat_model = "known_randomness"``: the output-perturbation algorithms on the worst instance
    found by :func:`stabsim.privacy.audit_output.worst_instance`; ``score`` is the projection statistic
    of :mod:`stabsim.privacy.audit_output`, ``shift`` its mean on S' (mu_xi at the calibrated noise) and
    ``ratio`` the sensitivity ratio ||A(S; xi) - A(S'; xi)|| / Delta of each replicate xi.)
    One private algorithm of the five papers on its worst-case audit design
    (:func:`stabsim.privacy.audit_designs.worst_case_design`), run on S and on the canary's S'
    with independent noise; each replicate stores the audit statistic of its two runs
    (``score``, dims replicate x run): the exact path likelihood ratio under the every-iterate
    threat model, the final-output statistic otherwise (:func:`stabsim.privacy.audit_runner.audit_scores`).
    Replicate r is a pure function of (seed, r), so chunks are independent and resumable; the
    estimators (Clopper-Pearson, GDP fit) and the accountant are the check's job, on all replicates.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from stabsim.setups.audit import audit_inputs, known_randomness_inputs
from stabsim.registry import Param, StudySpec, register_kind
from stabsim.registry import REQUIRED, BadValue, boolean, choice, integer, number, open_unit

ALGORITHMS = ("p0_alg2", "p1_alg3", "p2_alg1", "p3_onpairstrc", "p3_onpairc", "p3_offpairstrc",
              "p3_offpairc", "p4_alg1", "p4_alg2")

def _table(v):
    if not isinstance(v, dict):
        raise BadValue("must be a table of keyword arguments, e.g. {alpha = 1.0, T1 = 7}")
    return dict(v)


AUDIT = {
    "algorithm": Param("the private algorithm audited", REQUIRED, choice(ALGORITHMS), sweepable=False),
    "n": Param("number of examples of the audit design", 50, integer(4)),
    "T": Param("number of steps (0: the algorithm's default)", 0, integer(0), sweepable=False),
    "eps": Param("the claimed epsilon the noise is calibrated to", REQUIRED, number(gt=0), sweepable=False),
    "delta": Param("the claimed delta", 1e-5, open_unit(), sweepable=False),
    "noise_scale": Param("multiplier of the calibrated noise (< 1 breaks privacy on purpose: the sanity rows)",
                         1.0, number(gt=0)),
    "threat_model": Param("'auto' (every iterate where the algorithm perturbs every step), 'every_iterate', "
                          "'final_output' or 'known_randomness' (output perturbation: the adversary knows the "
                          "indices, stabsim.privacy.audit_output)", "auto",
                          choice(("auto", "every_iterate", "final_output", "known_randomness"))),
    "options": Param("further keyword arguments of the algorithm (a table, e.g. {alpha = 1.0, T1 = 7} for P3)",
                     None, _table, sweepable=False),
    "confidence": Param("confidence level of the audit's lower bounds", 0.95, open_unit(), sweepable=False),
    "accountant": Param("compare with the accountant's eps (dp_accounting)", True, boolean, sweepable=False),
}


@register_kind("privacy_audit", params={"audit": AUDIT},
               description="privacy audit of one private algorithm on its worst-case design: the audit statistic "
                           "of every run on S and S' (estimators and accountant in the check)")
def privacy_audit_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    from stabsim.privacy.audit_runner import audit_scores

    params = spec.cell_params(cell)
    if params["audit"]["threat_model"] == "known_randomness":
        return _known_randomness_cell(spec, params, replicates)
    design, kw = audit_inputs(params)
    sc = audit_scores(design.algorithm, design.X, design.y, replicates=np.asarray(replicates, dtype=np.int64),
                      seed=spec.seed, **kw)
    ones = np.ones(len(replicates))
    return xr.Dataset({
        "score": (("replicate", "run"), np.column_stack([sc.s0, sc.s1]),
                  {"long_name": "audit statistic of the run on S (run 0) and on S' (run 1)",
                   "description": sc.statistic}),
        "sigma": (("replicate",), ones * float(sc.record.get("sigma") or np.nan), {"long_name": "noise std used"}),
        **_kr_vars(np.full(len(replicates), np.nan), np.full(len(replicates), np.nan)),
    }, coords={"replicate": np.asarray(replicates, dtype=np.int64), "run": [0, 1]},
        attrs={"threat_model": sc.threat_model, "design": design.description})


def _kr_vars(shift, ratio):
    return {
        "shift": (("replicate",), shift, {"long_name": "known randomness: ||A(S') - A(S)|| / sigma_calibrated "
                                                       "(mu of the sequence; NaN for the other threat models)"}),
        "ratio": (("replicate",), ratio, {"long_name": "known randomness: ||A(S') - A(S)|| / Delta (the paper's "
                                                       "sensitivity; NaN for the other threat models)"}),
    }


def _known_randomness_cell(spec, params, replicates):
    from stabsim.privacy.audit_output import known_randomness_scores

    inst, kw = known_randomness_inputs(params, spec.seed)
    reps = np.asarray(replicates, dtype=np.int64)
    sc = known_randomness_scores(params["audit"]["algorithm"], inst["X"], inst["y"], replicates=reps,
                                 seed=spec.seed, **kw)
    return xr.Dataset({
        "score": (("replicate", "run"), np.column_stack([sc.z0, sc.z1]),
                  {"long_name": "audit statistic of the run on S (run 0) and on S' (run 1)",
                   "description": "projection of (release - A(S; xi)) / sigma_calibrated on v / ||v||, "
                                  "v = A(S'; xi) - A(S; xi) (known internal randomness xi)"}),
        "sigma": (("replicate",), np.ones(len(reps)) * float(sc.record.get("sigma") or np.nan),
                  {"long_name": "noise std used"}),
        **_kr_vars(sc.shift, sc.ratio),
    }, coords={"replicate": reps, "run": [0, 1]},
        attrs={"threat_model": "known_randomness",
               "design": f"worst instance found: {inst['name']} (max ratio {inst['ratio']:.4g} on 16 sequences)"})
