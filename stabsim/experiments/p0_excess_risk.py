"""P0 (Yang, Lei, Lyu, Ying, AISTATS 2021): the ``p0_risk`` study kind, excess risk, generalization,
optimization and iterate norms of P0 Alg. 1 / Alg. 2 (``studies/p0_thm2_risk.toml``, ``p0_thm3_risk``,
``p0_thm5_private``; analysed by ``p0_excess`` in ``stabsim.analyses.p0_excess_risk``).

Setting (the paper has no experiments; errata P0-D suggests Cor 1/2): the AUC hinge loss
l(w, z, z') = I[y != y'] (1 - s w.(x - x'))_+ (``auc_hinge``, G = 2 kappa, M = l(0, z, z') <= 1)
on ``auc_separable``, where w* = e_1/(2 gamma) has zero risk, so inf_W R = R(w*) = 0 whenever
||w*|| <= the ball radius, and excess risk = R(A(S)) (``stabsim.setups.p0``).

Kind ``p0_risk``
    one data set per replicate (the probability is over S and A).  P0 Alg. 1 (``p0_alg1``) run
    for T steps with the schedule of ``[p0] schedule``: ``bounded`` T = n^2, eta = c n^{-3/2}
    (Thm 2 / 5, Cor 1 / 2); ``unbounded`` T = ceil(n^{4/3}), eta = c / n (Thm 3); ``given``
    ([algorithm] T and eta).  Per replicate: F_S and F (U-statistic over a fresh test sample,
    with SE) of w_bar_T, ||w_bar_T||, F_S(w*), Monte-Carlo Rademacher averages
    (``stabsim.engine.rademacher``, a lower estimate for the hinge class) over the ball W (radius of the
    constraint, or Thm 3's W_t) and over W_D (radius ||w*||); with ``private = true`` also P0
    Alg. 2's w_priv = Pi_W(w_bar_T + u) (``stabsim.privacy.p0_alg2``) and F(w_priv); with
    ``iterates = true`` the squared norms of the iterates w_{t+1} at checkpoints (Lemma A.10).
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from stabsim.setups.p0 import per_replicate_data, risk_constants
from stabsim.registry import (Param, StudyError, StudySpec, boolean, choice, integer, number, open_unit, register_kind,
                        twin_params, twin_problem, validate_twin)

P0_SECTION = {
    "schedule": Param("T and eta: 'bounded' (T = n^2, eta = c n^-1.5), 'unbounded' (T = ceil(n^(4/3)), "
                      "eta = c/n) or 'given' ([algorithm] T, eta)", "bounded",
                      choice(("bounded", "unbounded", "given")), sweepable=False),
    "c": Param("constant c of the step-size schedule", 1.0, number(gt=0, what=" (step-size constant)")),
    "m": Param("test sample size of the U-statistic for R(w)", 2000, integer(3, " (test sample size)"),
               sweepable=False),
    "rad_samples": Param("Monte-Carlo samples of the Rademacher averages per replicate (0: none)", 4,
                         integer(0), sweepable=False),
    "rad_iters": Param("subgradient-ascent iterations per start (hinge-class supremum)", 40, integer(1),
                       sweepable=False),
    "iterates": Param("also record ||w_{t+1}||^2 at checkpoints (Lemma A.10; a second run)", False, boolean,
                      sweepable=False),
    "private": Param("also run P0 Alg. 2 (output perturbation)", False, boolean, sweepable=False),
    "eps": Param("privacy budget eps of Alg. 2", 1.0, number(gt=0, what=" (privacy budget)")),
    "delta": Param("privacy delta of Alg. 2", 1e-3, open_unit(" (privacy delta)"), sweepable=False),
    "reading": Param("Eq. (5) reading for Alg. 2's sigma", "corrected", choice(("corrected", "printed")),
                     sweepable=False),
}


def _schedule(p) -> tuple[int, float]:
    """(T, eta) of a ``p0_risk`` cell by ``[p0] schedule``: 'bounded' T = n^2, eta = c n^{-3/2} (P0 Thm 2 / 5,
    Cor 1 / 2), 'unbounded' T = ceil(n^{4/3}), eta = c / n (Thm 3), 'given' the cell's [algorithm] T, eta."""
    n, s = p["data"]["n"], p["p0"]
    if s["schedule"] == "bounded":
        return n * n, s["c"] * n ** -1.5
    if s["schedule"] == "unbounded":
        return int(math.ceil(n ** (4.0 / 3.0) - 1e-9)), s["c"] / n
    eta = p["algorithm"]["eta"]
    if isinstance(eta, str):
        raise ValueError("[p0] schedule = 'given' needs a constant [algorithm] eta")
    return p["algorithm"]["T"], float(eta)


def _validate_p0_risk(spec):
    validate_twin(spec)
    for cell in spec.cells():
        p = spec.cell_params(cell)
        a, d = p["algorithm"], p["data"]
        if a["name"] != "p0_alg1" or a["loss"] != "auc_hinge":
            raise StudyError("p0_risk: [algorithm] name must be 'p0_alg1' and loss 'auc_hinge' "
                             f"(P0 Cor 1 / 2 setting), got {a['name']!r}, {a['loss']!r}")
        if d["problem"] != "auc_separable":
            raise StudyError("p0_risk: [data] problem must be 'auc_separable' (known w* with R(w*) = 0)")
        if not d["per_replicate"]:
            raise StudyError("p0_risk: [data] per_replicate must be true (P0's bounds hold w.p. over S and A)")
        if a["w0"] != "zeros":
            raise StudyError("p0_risk: [algorithm] w0 must be 'zeros' (P0 starts at w_1 = 0)")
        try:
            _schedule(p)
        except ValueError as e:
            raise StudyError(f"p0_risk: {e}") from None
        from stabsim.engine.constraints import get_constraint
        pb = twin_problem(d)
        R = get_constraint(a["constraint"]).radius
        if math.isfinite(R) and np.linalg.norm(pb.w_star_hinge) > R + 1e-12:
            raise StudyError(f"p0_risk: ||w*|| = {np.linalg.norm(pb.w_star_hinge):.4g} lies outside the ball of "
                             f"radius {R}: then inf_W R > 0 is unknown; use a radius >= 1/(2 gamma)")
        if p["p0"]["private"] and not math.isfinite(R):
            raise StudyError("p0_risk: [p0] private = true needs a bounded W (Thm 5): give constraint = 'l2:R'")


def _rademacher_columns(out, spec, X, y, c, s, T, eta, reps) -> None:
    """Add ``rad_W`` / ``rad_WD`` (and their Monte-Carlo SEs) to ``out``: per replicate the average
    (1/T) sum_t R_t of the AUC hinge class over W (P0 Thm 2: the ball of W's radius; Thm 3: the ball
    W_t = {||w||^2 <= (G^2 + 2M) eta t} of Lemma A.10) and over W_D (radius ||w*||), by
    ``stabsim.engine.rademacher.rademacher_avg`` (hinge supremum by subgradient ascent: a lower estimate)."""
    from stabsim.engine.rademacher import rademacher_avg

    R = len(reps)
    bounded = math.isfinite(c["radius"])
    r0, power = (c["radius"], 0.0) if bounded else (math.sqrt((c["G"] ** 2 + 2 * c["M"]) * eta), 0.5)
    for name, rad, pw in (("rad_W", r0, power), ("rad_WD", c["B"], 0.0)):
        if name == "rad_WD" and pw == power and rad == r0:  # same ball: same estimate
            out["rad_WD"], out["rad_WD_se"] = out["rad_W"].copy(), out["rad_W_se"].copy()
            continue
        vals, ses = np.empty(R), np.empty(R)
        for i, r in enumerate(reps):
            est = rademacher_avg(X[i], y[i], "auc_hinge", T, rad, power=pw, samples=s["rad_samples"],
                                 seed=spec.seed, replicate=int(r), iters=s["rad_iters"])
            vals[i], ses[i] = est.value, est.se
        what = ("W = ball of radius %.4g" % r0 if bounded else
                "W_t = {||w||^2 <= (G^2 + 2M) eta t}") if name == "rad_W" else "W_D = ball of radius ||w*||"
        out[name] = ("replicate", vals, {"long_name": f"(1/T) sum_t R_t(l o W), {what}",
                                         "description": "Monte-Carlo, t uniform on 1..T; the hinge supremum "
                                                        "by subgradient ascent (a lower estimate)"})
        out[name + "_se"] = ("replicate", ses, {"long_name": f"MC standard error of {name}"})


def _iterate_norms(out, X, y, T, common) -> xr.Dataset:
    """``out`` with ``iter_norm_sq`` = ||w_{t+1}||^2 at log-spaced checkpoints t (P0 Lemma A.10), from a
    second run of P0 Alg. 1 recording the last iterate (the kernel's w_t is P0's w_{t+1})."""
    from stabsim.engine.twin_runs import log_checkpoints, run_twin

    ck = log_checkpoints(T, 12)
    di = run_twin(X, y, algorithm="p0_alg1", neighbour="same", checkpoints=ck, record_outputs=True,
                  output="last", **common)
    nrm = (di["output"].sel(run="S") ** 2).sum("param").values  # (R, ck): kernel w_t = P0's w_{t+1}
    out = out.assign_coords(t_it=ck)
    out["iter_norm_sq"] = (("replicate", "t_it"), nrm, {"long_name": "||w_{t+1}||^2 after t steps"})
    return out


@register_kind("p0_risk", params=twin_params(p0=P0_SECTION), validate=_validate_p0_risk,
               description="P0 Alg. 1 (and Alg. 2) per data set: risks of w_bar_T / w_priv, Rademacher "
                           "averages, iterate norms (P0 Thm 2/3/5, A.6, A.8, A.10, A.12)")
def p0_risk_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """One cell of a ``p0_risk`` study (see the module docstring)."""
    from stabsim.risk import empirical_risk, population_risk
    from stabsim.engine.twin_runs import run_twin

    p = spec.cell_params(cell)
    d, a, s = p["data"], p["algorithm"], p["p0"]
    c = risk_constants(p)
    pb = c["pb"]
    reps = np.asarray(replicates, dtype=np.int64)
    X, y = per_replicate_data(spec, d, pb, reps)
    T, eta = _schedule(p)
    R = len(reps)
    common = dict(loss="auc_hinge", constraint=a["constraint"], eta=eta, T=T, replicates=reps, seed=spec.seed,
                  problem=pb)
    sigma = 0.0
    if s["private"]:
        from stabsim.privacy.algorithms import p0_alg2

        ds = p0_alg2(X, y, eps=s["eps"], delta=s["delta"], neighbour="same", reading=s["reading"],
                     G=c["G"], kappa=c["kappa"], checkpoints=[T], **common)
        sigma = float(ds.attrs["privacy_sigma"])
        wpriv = ds["w_priv"].sel(run="S").values
    else:
        ds = run_twin(X, y, algorithm="p0_alg1", neighbour="same", checkpoints=np.array([T]),
                      record_outputs=True, **common)
    wbar = np.ascontiguousarray(ds["output"].sel(t=T, run="S").values)  # (R, p)
    out = xr.Dataset(coords={"replicate": reps})
    FS = np.array([float(empirical_risk(wbar[i], X[i], y[i], "auc_hinge")) for i in range(R)])
    Fw = population_risk(wbar, pb, "auc_hinge", m=s["m"], seed=spec.seed)
    out["FS_out"] = ("replicate", FS, {"long_name": "R_S(w_bar_T)"})
    out["F_out"] = ("replicate", np.asarray(Fw.value, float), {"long_name": "R(w_bar_T)", "description": Fw.note})
    out["F_out_se"] = ("replicate", np.asarray(Fw.se, float), {"long_name": "SE of R(w_bar_T) (test sample)"})
    out["B_T"] = ("replicate", np.linalg.norm(wbar, axis=1), {"long_name": "||w_bar_T||"})
    out["FS_wstar"] = ("replicate", np.array([float(empirical_risk(c["wstar"], X[i], y[i], "auc_hinge"))
                                              for i in range(R)]), {"long_name": "R_S(w*)"})
    out["F_wstar"] = ((), float(population_risk(c["wstar"], pb, "auc_hinge", m=s["m"], seed=spec.seed).value),
                      {"long_name": "R(w*) on the test sample"})
    if s["private"]:
        Fp = population_risk(wpriv, pb, "auc_hinge", m=s["m"], seed=spec.seed)
        out["F_priv"] = ("replicate", np.asarray(Fp.value, float), {"long_name": "R(w_priv)"})
        out["F_priv_se"] = ("replicate", np.asarray(Fp.se, float), {"long_name": "SE of R(w_priv)"})
        out["shift_priv"] = ("replicate", np.linalg.norm(wpriv - wbar, axis=1),
                             {"long_name": "||w_priv - w_bar_T|| (<= ||u||)"})
    if s["rad_samples"] > 0:
        _rademacher_columns(out, spec, X, y, c, s, T, eta, reps)
    if s["iterates"]:
        out = _iterate_norms(out, X, y, T, common)
    out["T"] = ((), T)
    out["eta"] = ((), eta)
    out["sigma"] = ((), sigma, {"long_name": "output-perturbation sigma of Alg. 2 (0: non-private)"})
    out.attrs.update(problem=pb.name, data_sets="per-replicate", schedule=s["schedule"])
    return out
