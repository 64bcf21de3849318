"""P4 (Wang, Lei, Ying, Zhou: differentially private SGD with low noise): the setting.

What the P4 experiments (:mod:`stabsim.experiments.p4_risk`, ``p4_generalization``,
``p4_reproduction``, ``p4_expansion``, ``p4_privacy``) and their analyses
(:mod:`stabsim.analyses.p4_*`) both need:

Sections of the P4 study files
    ``RISK`` (``[risk]`` of kind ``p4_risk``), ``P4`` (``[p4]`` of kind ``p4_gen``), ``FIGURE``
    (``[figure]`` of kind ``p4_figure``, Sec. 5 Figures 1/2), ``EXPANSION`` (``[expansion]`` of
    kind ``p4_expansion``, Lemma 18) and ``PRIV`` (``[privacy]`` of kind ``p4_privacy``, Thm 2/5).
Constants of a cell
    :func:`constants` (G, L, kappa, the loss and the problem), :func:`F_star` (F(w*) of P4's
    design), :func:`reference` (the comparison point w_ref and F(w_ref) of the bounds: the
    population minimiser where it is known exactly).
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.registry import Param, boolean, choice, integer, number, twin_problem

# ------------------------------------------------------------------------------------------ sections

RISK = {
    "m": Param("test sample size for the Monte Carlo F(w_priv)", 20000, integer(3, " (test sample size)"),
               sweepable=False),
    "population": Param("estimate F(w_priv)", True, boolean, sweepable=False),
    "T_per_n": Param("if > 0: T = ceil(T_per_n * n) (overrides [algorithm] T)", 0.0, number(ge=0)),
    "eps": Param("if > 0: sigma calibrated by P4 Thm 2/5 at this eps (overrides [algorithm] sigma)", 0.0,
                 number(ge=0)),
    "delta": Param("privacy delta for the calibration", 1e-5, number(gt=0, lt=1), sweepable=False),
    "schedule": Param("'fixed' ([algorithm] eta, T) or P4's recommended eta and T ~ n for Thm '3a' / '3b'",
                      "fixed", choice(("fixed", "3a", "3b"))),
    "c": Param("constant c of the recommended step size", 1.0, number(gt=0)),
    "schedule_eps": Param("eps used in the recommended step size when [risk] eps = 0 (non-private runs)", 4.0,
                          number(gt=0), sweepable=False),
}

P4 = {
    "m": Param("test sample size for Monte Carlo F(w_priv)", 20000, integer(3), sweepable=False),
    "eps": Param("if > 0: sigma from P4 Thm 2/5 at this eps (else [algorithm] sigma)", 0.0, number(ge=0)),
    "delta": Param("privacy delta; 0 means 1/n^2", 1e-5, number(ge=0, lt=1)),
    "theorem": Param("'' ([algorithm] eta, T) or the rate theorem 3, 4, 6, 7 whose eta and T to use", "",
                     choice(("", "3", "4", "6", "7"))),
    "c": Param("constant c of the recommended step size", 1.0, number(gt=0)),
    "schedule_eps": Param("eps in the recommended step size when eps = 0", 4.0, number(gt=0), sweepable=False),
}

FIGURE = {
    "eps": Param("privacy eps; 0 = non-private SGD", 0.0, number(ge=0)),
    "delta": Param("privacy delta; 0 = 1/n^2 (the paper's)", 0.0, number(ge=0, lt=1)),
    "m": Param("test sample size", 20000, integer(3), sweepable=False),
    "metric": Param("'mse' (Fig. 1) or 'misclassification' (Fig. 2)", "mse", choice(("mse", "misclassification")),
                    sweepable=False),
}

EXPANSION = {
    "samples": Param("random (w, w', z) triples per replicate", 4000, integer(10), sweepable=False),
    "eta": Param("step size", 0.1, number(gt=0)),
    "alpha_loss": Param("loss: 'point_hinge' (alpha 0) or 'auc_qhinge' (alpha q-1)", "point_hinge",
                        choice(("point_hinge", "auc_hinge", "auc_qhinge"))),
    "q": Param("q of the q-hinge", 1.5, number(gt=1, lt=2)),
    "kappa": Param("sup ||x|| of the data points", 1.0, number(gt=0)),
}

PRIV = {
    "eps": Param("privacy eps", 1.0, number(gt=0)),
    "n": Param("number of examples", 5000, integer(2)),
    "T": Param("number of steps", 1000, integer(1)),
    "delta": Param("privacy delta (0 = 1/n^2)", 0.0, number(ge=0, lt=1)),
    "pairwise": Param("Alg. 2 (Thm 5) instead of Alg. 1 (Thm 2)", False, boolean),
    "accountant": Param("also compute eps with the RDP accountant (dp_accounting)", True, boolean, sweepable=False),
}


# ------------------------------------------------------------------------------------------ constants


def loss_of(a):
    """The loss of an ``[algorithm]`` section (with its q)."""
    from stabsim.engine.losses import get_loss

    return get_loss(a["loss"], a["q"])


def radius_of(a):
    """The radius of the constraint set of an ``[algorithm]`` section (inf when unconstrained)."""
    from stabsim.engine.constraints import get_constraint

    return get_constraint(a["constraint"]).radius


def constants(params) -> dict:
    """G, L, kappa of a p4_risk cell, with its loss (``loss``, ``pairwise``) and problem."""
    from stabsim.engine.constraints import get_constraint
    from stabsim.engine.losses import get_loss

    a = params["algorithm"]
    pb = twin_problem(params["data"])
    loss = get_loss(a["loss"], a["q"])
    R = get_constraint(a["constraint"]).radius
    return {"G": loss.G(pb.kappa, R), "L": loss.L(pb.kappa, R), "kappa": pb.kappa, "loss": loss,
            "pairwise": loss.pairwise, "problem": pb}


def F_star(pb, seed=0, m=400000) -> tuple[float, str]:
    """F(w*): 0 for p4_lsq with kappa = 0 (exact), else a large Monte Carlo estimate (fixed test stream)."""
    if pb.F_star is not None:
        return float(pb.F_star), "exact"
    value, se = _risk_at_w_star(pb, pb.loss_name, seed, m)
    return value, f"Monte Carlo, m = {m}, SE {se:.2g}"


#: (problem, loss, seed, m) -> (F(w*), its standard error), see ``_risk_at_w_star``
_W_STAR_RISK: dict = {}


def _risk_at_w_star(pb, loss_name, seed, m) -> tuple[float, float]:
    """The Monte Carlo estimate of F at P4's w* (``population_risk``, m points of the test stream
    ``seed``, replicate 1) and its standard error, computed once per process for each problem,
    loss, seed and m: every chunk of a p4_gen study and every analysis would otherwise draw and
    evaluate the m = 400 000-point test sample again (benchmarks/README.md, "Data sets and
    samples").  The estimate is a function of these
    alone (the problem's name, d and parameters fix its sampling; w* is in the key too)."""
    w = np.asarray(pb.w_star_paper, float)
    key = (pb.name, pb.d, repr(sorted(pb.params.items())), w.tobytes(), loss_name, int(seed), int(m))
    if key not in _W_STAR_RISK:
        from stabsim.risk import population_risk

        est = population_risk(w, pb, loss_name, m=m, seed=seed, replicate=1)
        _W_STAR_RISK[key] = (float(np.asarray(est.value)), float(np.asarray(est.se)))
    return _W_STAR_RISK[key]


def auc_pair_probs(pb):
    """For the auc_* problems: P(y=1) and, for an observed (+1, -1) pair, the probabilities that
    the true-label difference t - t' is +2, 0, -2 (flips are independent of x's noise part)."""
    g, pi, f = pb.params["gamma"], pb.params["pi"], pb.params["flip"]
    p1 = pi * (1 - f) + (1 - pi) * f
    a_pos = pi * (1 - f) / p1            # P(t = +1 | y = +1)
    a_neg = pi * f / (1 - p1)            # P(t' = +1 | y' = -1)
    pp = a_pos * (1 - a_neg)
    pm = (1 - a_pos) * a_neg
    return p1, pp, 1 - pp - pm, pm, g


def reference(pb, lossf, value=True) -> tuple[np.ndarray, float, str, bool]:
    """(w_ref, F(w_ref), how, exact) for problem ``pb`` and loss ``lossf``; ``value=False``: without
    the Monte Carlo estimates (F = nan, exact False, ``how`` "not estimated"), for the checks of a
    study file, which need only whether a reference exists and is exact.

    * p4_lsq / p4_logistic: P4's w* (Sec. 5); F(w*) = 0 exactly for p4_lsq with kappa = 0, else
      Monte Carlo (m = 400000).
    * auc_* with auc_squared: the closed-form minimiser and F* of ``synthetic``.
    * auc_* with point_hinge: w* = e1/gamma, F* = 2 flip.  Derivation: x = (t gamma, xi) with xi
      independent of the labels and symmetric, so by Jensen over xi the optimum has w_rest = 0;
      on w = a e1, F(a) = (1-f)(1 - a gamma)_+ + f (1 + a gamma)_+, minimal at a gamma = 1 (f < 1/2).
    * auc_* with auc_hinge / auc_qhinge: w = e1/(2 gamma): for an observed (+1, -1) pair the margin
      is a gamma (t - t') in {2a gamma, 0, -2a gamma} with probabilities (pp, p0, pm); F =
      2 p1 (1-p1) [pp phi(1) + p0 phi(0) + pm phi(-1)].  For the hinge, (as above, Jensen over
      xi - xi') F(a) = 2p1(1-p1)[pp (1-2a g)_+ + p0 + pm (1 + 2a g)] is minimal at 2 a g = 1 when
      pp > pm, so it is w*; for the q-hinge it is a reference point with F = 0 when flip = 0.
    The bounds of P4 Thm 16 / Lemma 20 and the decomposition (3) behind the explicit excess bound
    hold for any fixed w in W in place of w* (with F(w)), so a reference that is not the minimiser
    is still a valid comparison point; ``exact`` says whether F(w_ref) is exact.
    """
    d = pb.d
    if pb.name in ("p4_lsq", "p4_logistic"):
        w = np.asarray(pb.w_star_paper, float)
        if pb.name == "p4_lsq" and lossf.name == "point_lsq" and (value or pb.F_star is not None):
            F, how = F_star(pb, 0)
            return w, F, f"P4's w* ({how})", how == "exact"
        if not value:
            return w, math.nan, "P4's w*, Monte Carlo (not estimated)", False
        return w, _risk_at_w_star(pb, lossf.name, 0, 400000)[0], "P4's w*, Monte Carlo", False
    if pb.name in ("auc_separable", "auc_noisy", "metric"):
        if lossf.name == "auc_squared":
            return np.asarray(pb.w_star, float), float(pb.F_star), "closed-form minimiser", True
        g = pb.params["gamma"]
        if lossf.name == "point_hinge":
            return np.eye(d)[0] / g, 2.0 * pb.params["flip"], "w* = e1/gamma (exact, see _reference)", True
        if lossf.name in ("auc_hinge", "auc_qhinge"):
            p1, pp, p0, pm, _ = auc_pair_probs(pb)
            q = lossf.q if lossf.name == "auc_qhinge" else 1.0
            F = 2 * p1 * (1 - p1) * (p0 * 1.0 + pm * 2.0 ** q)
            how = "w* = e1/(2 gamma) (exact)" if lossf.name == "auc_hinge" else "reference e1/(2 gamma)"
            return np.eye(d)[0] / (2 * g), float(F), how, True
    raise ValueError(f"p4_gen: no reference point for problem {pb.name!r} with loss {lossf.name!r}; allowed: p4_lsq "
                     "(point_lsq), auc_* with auc_squared, point_hinge, auc_hinge or auc_qhinge")
