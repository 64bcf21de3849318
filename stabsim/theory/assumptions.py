"""Structured assumptions of the registered bounds: what a run must satisfy for a theorem to apply.

Every registry entry (``stabsim.theory.registry.Bound.requires``) carries an ``Assumptions``
record, filled here from the papers, one rule per theorem (``REQUIRES``: the first pattern that
matches a key wins).  ``stabsim.judging.applicability.check_applicable`` compares it with a run's
algorithm, loss, constraint set, step sizes and output rule; a study that overlays a bound on a
run outside its assumptions is refused when it is loaded (``docs/study-files.md``, "Where a bound
applies").

Only what a study file determines is recorded: the algorithm, the loss class, pairwise or
pointwise, the constraint set, the step-size rule and the output.  Numeric side conditions
(eta <= 2/L, T >= n, gamma <= 1/e, eps <= 1 ...) stay in ``Bound.assumptions`` (words), in the
bound functions' own argument checks and in the checks of each study kind.

This module is a leaf (it imports nothing of stabsim), like the registry.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

#: The loss classes a bound may need.  ``strongly_convex`` and ``pl`` are properties of the
#: empirical risk F_S (P1 (A3) with alpha > 0, (A4); P2's PL condition): they hold for the
#: squared and logistic losses on data whose pair differences span R^d, never for the hinge or
#: q-hinge losses (flat regions); the check cannot see the data, so it refuses only the latter.
LOSS_CLASSES = {
    "nonnegative": "f >= 0",
    "convex": "w -> f(w; z, z') convex",
    "lipschitz": "G-Lipschitz in w on W (bounded gradients)",
    "smooth": "L-smooth (Lipschitz gradient)",
    "holder": "alpha-Hoelder continuous (sub)gradient, alpha in [0, 1] (P4 Def. 3)",
    "strongly_convex": "F_S alpha-strongly convex (alpha > 0)",
    "pl": "F_S satisfies the Polyak-Lojasiewicz condition with mu > 0",
}

#: Step-size rules of ``stabsim.engine.steps`` (a run's ``eta``: a number is "constant").
STEP_RULES = ("constant", "sqrt", "strongly_convex", "pl")
#: eta_j non-increasing: every schedule of ``stabsim.engine.steps``.
NONINCREASING = STEP_RULES

#: Constraint requirements: ``None`` (any closed convex W, including R^d), or one of these.
CONSTRAINTS = {
    "bounded": "a bounded W (a ball: l2, frobenius or nuclear with a radius)",
    "unbounded": "W = R^d (no effective projection)",
    "nuclear": "W a nuclear-norm ball",
}


@dataclass(frozen=True)
class Assumptions:
    """What a theorem assumes about the run it is compared with.

    algorithms  stabsim algorithm names it is proven for (``stabsim.engine.algorithm_specs.ALGORITHMS``; P3's
                variants ``OnPairStrC`` ...), ``None``: any algorithm (a statement about any
                stable algorithm, a function class or a noise calibration).
    losses      specific loss names (a corollary for one loss), ``None``: any loss of ``loss_class``.
    loss_class  classes of ``LOSS_CLASSES`` the loss must be in (all of them).
    pairwise    True: a pairwise loss f(w; z, z'), False: a pointwise f(w; z), None: either.
    constraint  ``None`` (any closed convex W) or a key of ``CONSTRAINTS``.
    step_rule   the step-size rules of ``STEP_RULES`` it allows; ``None``: any.
    output      the output rules of ``stabsim.engine.algorithm_specs.OUTPUTS`` it is stated for; ``None``:
                any (a bound on every iterate, hence on every average of them, or on the path).
    note        how the entry was read where the paper is ambiguous.
    """

    algorithms: tuple[str, ...] | None = None
    losses: tuple[str, ...] | None = None
    loss_class: tuple[str, ...] = ()
    pairwise: bool | None = None
    constraint: str | None = None
    step_rule: tuple[str, ...] | None = None
    output: tuple[str, ...] | None = None
    note: str = ""

    def __post_init__(self):
        bad = [c for c in self.loss_class if c not in LOSS_CLASSES]
        if bad:
            raise ValueError(f"loss class {bad[0]!r} is not one of {tuple(LOSS_CLASSES)}")
        if self.constraint is not None and self.constraint not in CONSTRAINTS:
            raise ValueError(f"constraint {self.constraint!r} is not None or one of {tuple(CONSTRAINTS)}")
        bad = [s for s in self.step_rule or () if s not in STEP_RULES]
        if bad:
            raise ValueError(f"step rule {bad[0]!r} is not one of {STEP_RULES}")

    def describe(self) -> str:
        """One line: what the theorem needs, e.g. ``algorithm p1_alg1; loss convex, lipschitz; pairwise``."""
        parts = []
        if self.algorithms is not None:
            parts.append(f"algorithm {' or '.join(self.algorithms)}")
        if self.losses is not None:
            parts.append(f"loss {' or '.join(self.losses)}")
        if self.loss_class:
            parts.append(f"loss {', '.join(self.loss_class)}")
        if self.pairwise is not None:
            parts.append("pairwise loss" if self.pairwise else "pointwise loss")
        if self.constraint is not None:
            parts.append(f"W: {CONSTRAINTS[self.constraint]}")
        if self.step_rule is not None:
            parts.append(f"step sizes {' or '.join(self.step_rule)}")
        if self.output is not None:
            parts.append(f"output {' or '.join(self.output)}")
        return "; ".join(parts) or "nothing about the run"


A = Assumptions
_CVX_LIP = ("nonnegative", "convex", "lipschitz")
_CVX_LIP_SMOOTH = _CVX_LIP + ("smooth",)
_CONST = ("constant",)
_P4_A1 = ("nonnegative", "convex")          # P4 Assumption 1
_P4_ALG2 = ("p4_alg2", "sgd_pair")          # SGD_pair = P4 Alg. 2 with sigma = 0
_P3_STRC_ON, _P3_C_ON, _P3_STRC_OFF, _P3_C_OFF = ("OnPairStrC",), ("OnPairC",), ("OffPairStrC",), ("OffPairC",)
_P3 = dict(loss_class=("convex", "lipschitz", "smooth"), pairwise=True, constraint="bounded")
_P2 = dict(algorithms=("p2_alg1",), pairwise=True, output=("last",),
           note="P2 Alg. 1 runs without projection (errata P2-E2): no constraint is required")
_P2_PL = dict(_P2, loss_class=("lipschitz", "smooth", "pl"), step_rule=_CONST)

#: ``(key pattern, Assumptions)``, first match wins (``fnmatch``: ``*`` any text).
REQUIRES: tuple[tuple[str, Assumptions], ...] = (
    # ---- P0: Algorithm 1 (SGD, the new draw paired with all previous draws), Alg. 2 = its output
    # perturbed (run as p0_alg1 plus noise); convex, G-Lipschitz, non-smooth allowed; avg output.
    ("P0.Thm1.*", A(("p0_alg1",), None, _CVX_LIP, True, None, _CONST, None)),
    ("P0.Eq9.*", A(("p0_alg1",), None, _CVX_LIP, True, None, _CONST, ("mean_lag1",))),
    ("P0.Thm2.*", A(("p0_alg1",), None, _CVX_LIP, True, "bounded", _CONST, ("mean_lag1",))),
    ("P0.Cor1.*", A(("p0_alg1",), ("auc_hinge",), _CVX_LIP, True, "bounded", _CONST, ("mean_lag1",))),
    ("P0.Cor3.*", A(("p0_alg1",), ("metric_hinge",), _CVX_LIP, True, "nuclear", _CONST, ("mean_lag1",))),
    ("P0.Thm3.*", A(("p0_alg1",), None, _CVX_LIP, True, "unbounded", _CONST, ("mean_lag1",))),
    ("P0.LemA10.*", A(("p0_alg1",), None, _CVX_LIP, True, "unbounded", _CONST, None)),
    ("P0.ThmA6.*", A(None, None, _CVX_LIP, True, None, None, None,
                     note="any eps_stab-UAS algorithm with ||A(S)|| <= B")),
    ("P0.CorA6.*", A(("p0_alg1",), None, _CVX_LIP, True, None, _CONST, ("mean_lag1",))),
    ("P0.ThmA8.*", A(("p0_alg1",), None, _CVX_LIP, True, None, _CONST, ("mean_lag1",))),
    ("P0.LemA9.*", A(("p0_alg1",), None, _CVX_LIP, True, None, _CONST, None)),
    ("P0.Thm4.*", A(("p0_alg1",), None, _CVX_LIP, True, None, _CONST, ("mean_lag1",))),
    ("P0.Thm5.*", A(("p0_alg1",), None, _CVX_LIP, True, "bounded", _CONST, ("mean_lag1",))),
    ("P0.Cor2.*", A(("p0_alg1",), ("auc_hinge",), _CVX_LIP, True, "bounded", _CONST, ("mean_lag1",))),
    ("P0.Cor4.*", A(("p0_alg1",), ("metric_hinge",), _CVX_LIP, True, "nuclear", _CONST, ("mean_lag1",))),
    ("P0.LemA12.*", A(("p0_alg1",), None, _CVX_LIP, True, None, None, ("mean_lag1",))),
    ("P0.Lem4.rademacher_auc_hinge*", A(None, ("auc_hinge",), _CVX_LIP, True, "bounded", None, None,
                                        note="a function class: the algorithm does not enter")),
    ("P0.Lem4.*", A(None, None, (), True, "bounded", None, None,
                    note="the class of h_w(x, x') = w.(x - x'): the algorithm does not enter")),
    ("P0.Lem5.*", A(None, None, (), True, "nuclear", None, None,
                    note="a function class: the algorithm does not enter")),
    ("P0.ThmA7.*", A(None, None, _CVX_LIP, True, None, None, None,
                     note="Hoeffding at the fixed w*: the algorithm does not enter")),
    # ---- P1: Algorithm 1 (pair i_t with i_{t-1}), output w_bar_t = sum eta_j w_{j-2} / sum eta_j.
    ("P1.Lem1.*", A(None, None, ("lipschitz",), True, None, None, None,
                    note="any eps-uniformly stable algorithm")),
    ("P1.Thm1.*", A(("p1_alg1",), None, _CVX_LIP, True, None, _CONST, ("eta_weighted_lag2",))),
    ("P1.Thm2.*", A(("p1_alg1",), None, _CVX_LIP_SMOOTH, True, None, _CONST, ("eta_weighted_lag2",))),
    ("P1.Thm3.*", A(("p1_alg1",), None, ("nonnegative", "lipschitz", "smooth", "pl"), True, "bounded", ("pl",),
                    ("last",), note="sup f(w_j; z, z') <= B: a bounded W")),
    # Thm 4/5 bound every iterate's distance, hence any average of the iterates
    ("P1.Thm4.*", A(("p1_alg1",), None, _CVX_LIP, True, None, _CONST, None)),
    ("P1.Thm5.*", A(("p1_alg1",), None, _CVX_LIP_SMOOTH, True, None, None, None,
                    note="eta_j <= 2/L is checked by the bound's own arguments, not here")),
    ("P1.Thm6a.*", A(("p1_alg1", "p1_alg2"), None, _CVX_LIP, True, None, None, ("eta_weighted_lag2",))),
    ("P1.Thm6b.*", A(("p1_alg1",), None, ("nonnegative", "lipschitz", "strongly_convex"), True, None,
                     ("strongly_convex",), ("eta_weighted_lag2",))),
    ("P1.Thm7a.*", A(("p1_alg1",), None, _CVX_LIP, True, "bounded", None, ("eta_weighted_lag2",),
                     note="sup_w f(w; z, z') <= B: a bounded W")),
    ("P1.Thm7b.*", A(("p1_alg1",), None, ("nonnegative", "lipschitz", "strongly_convex"), True, "bounded",
                     ("strongly_convex",), ("t_weighted_lag2",), note="sup f <= B: a bounded W")),
    ("P1.Thm8.*", A(("p1_alg1",), None, ("nonnegative", "smooth"), True, None, _CONST, None)),
    ("P1.Thm9.*", A(("p1_alg1",), None, ("nonnegative", "smooth", "pl"), True, None, ("pl",), ("last",))),
    ("P1.Rem7.*", A(("p1_buffer", "p1_buffer_online"), None, _CVX_LIP, True, None, None, ("eta_weighted_lag2",))),
    ("P1.Thm10.*", A(("p1_alg1",), None, _CVX_LIP_SMOOTH, True, "bounded", None, None,
                     note="Alg. 3 runs Alg. 1 in phases (kind p1_dp); W of diameter D")),
    ("P1.Rem8.*", A(note="another paper's rate, drawn beside P1 Thm 10 for comparison: no claim about this run")),
    ("P1.Rem9.*", A(note="another algorithm's rate, drawn beside P1 Thm 10 for comparison: no claim about this run")),
    # ---- P2: Algorithm 1, full-batch gradient descent with Gaussian noise, last iterate theta_T.
    ("P2.Thm1.*", A(**dict(_P2, loss_class=("lipschitz",)))),
    ("P2.Lemma1.*", A(None, None, ("lipschitz",), True, None, None, None,
                      note="a heuristic (influence-function Taylor argument) about the pairwise ERM")),
    ("P2.Lemma2.*", A(**dict(_P2_PL, losses=("ranking_logistic",)))),
    ("P2.Lemma3.*", A(**dict(_P2_PL, losses=("metric_logistic",)))),
    ("P2.*", A(**_P2_PL)),
    # ---- P3: Pairwise GIGA; Alg. 1 OnPairStrC, Alg. 2 OnPairC, Alg. 3 OffPairStrC, Alg. 4 OffPairC
    # (the convex variants regularise with (alpha/2)||w - w_0||^2: the loss itself is only convex).
    ("P3.Alg1.*", A(_P3_STRC_ON, **_P3)),
    ("P3.Alg3.*", A(_P3_STRC_OFF, **_P3)),
    ("P3.Lemma4.sensitivity.convex", A(_P3_C_ON + _P3_C_OFF, **_P3)),
    ("P3.Lemma4.*", A(_P3_STRC_ON, **_P3)),
    ("P3.Thm2.*", A(_P3_STRC_ON, **_P3)),
    ("P3.Thm3.*", A(_P3_C_ON, **_P3)),
    ("P3.Thm4.eq10", A(_P3_C_ON, **_P3)),
    ("P3.Thm4.eq11", A(_P3_STRC_ON, **_P3)),
    ("P3.Thm5.eq12", A(_P3_STRC_OFF, **_P3)),
    ("P3.Thm5.eq13", A(_P3_C_OFF, **_P3)),
    ("P3.rho.*", A(note="the zCDP budget of (eps, delta): a formula, no run enters")),
    # ---- P4: Alg. 1 pointwise DP-SGD, Alg. 2 pairwise DP-SGD; output w_priv = (1/T) sum_t w_t.
    ("P4.Thm2.*", A(("p4_alg1",), None, ("lipschitz",), False)),
    ("P4.Thm5.*", A(_P4_ALG2, None, ("lipschitz",), True)),
    ("P4.Lemma13a.*", A(None, None, ("nonnegative", "smooth"), False, note="any on-average stable algorithm")),
    ("P4.Lemma13b.*", A(None, None, _P4_A1 + ("holder",), False, note="any on-average stable algorithm")),
    ("P4.Lemma14a.*", A(("p4_alg1",), None, _P4_A1 + ("smooth",), False)),
    ("P4.Lemma14b.*", A(("p4_alg1",), None, _P4_A1 + ("holder",), False)),
    ("P4.Lemma17a.*", A(None, None, ("nonnegative", "smooth"), True, note="any on-average stable algorithm")),
    ("P4.Lemma17b.*", A(None, None, _P4_A1 + ("holder",), True, note="any on-average stable algorithm")),
    ("P4.Lemma18.*", A(None, None, ("convex", "holder"), None, note="one gradient step of any algorithm")),
    ("P4.Lemma19a.*", A(_P4_ALG2, None, _P4_A1 + ("smooth",), True,
                        note="printed 'Assumption 2' (G-Lipschitz); the proof ([32], and part (b) here) uses "
                             "Assumption 1 (f >= 0 convex), as Lemma 14 does: Lipschitz is not required")),
    ("P4.Lemma19b.*", A(_P4_ALG2, None, _P4_A1 + ("holder",), True,
                        note="printed 'Assumption 2'; the proof uses Assumption 1 and Lemma 18")),
    ("P4.Lemma20.sum_eta2_FS", A(("p4_alg1",) + _P4_ALG2, None, _P4_A1 + ("holder",), None, None, NONINCREASING)),
    ("P4.Lemma20.*", A(_P4_ALG2, None, _P4_A1 + ("holder",), True, None, NONINCREASING)),
    ("P4.Thm15a.*", A(("p4_alg1",), None, _P4_A1 + ("smooth",), False, None, None, ("mean_lag1",))),
    ("P4.Thm15b.*", A(("p4_alg1",), None, _P4_A1 + ("holder",), False, None, None, ("mean_lag1",))),
    ("P4.Thm16a.*", A(("p4_alg1",), None, _P4_A1 + ("smooth",), False, None, NONINCREASING)),
    ("P4.Thm16b.*", A(("p4_alg1",), None, _P4_A1 + ("holder",), False, None, NONINCREASING)),
    ("P4.Thm3*", A(("p4_alg1",), None, _P4_A1 + ("lipschitz", "smooth"), False, None, _CONST, ("mean_lag1",))),
    ("P4.Thm4*", A(("p4_alg1",), None, _P4_A1 + ("lipschitz", "holder"), False, None, _CONST, ("mean_lag1",))),
    ("P4.Thm6*", A(_P4_ALG2, None, _P4_A1 + ("lipschitz", "smooth"), True, None, _CONST, ("mean_lag1",))),
    ("P4.Thm7*", A(_P4_ALG2, None, _P4_A1 + ("lipschitz", "holder"), True, None, _CONST, ("mean_lag1",))),
)

#: The record of a key no rule names (a study file's own ``custom.*`` bounds, a plugin's): nothing required.
NOTHING = Assumptions()


def rule_for(key: str) -> tuple[str, Assumptions] | None:
    """The first ``(pattern, Assumptions)`` of ``REQUIRES`` whose pattern matches ``key``, or None."""
    for pattern, req in REQUIRES:
        if fnmatch.fnmatchcase(key, pattern):
            return pattern, req
    return None


def requirements_for(key: str) -> Assumptions:
    """The assumptions recorded for ``key`` (``NOTHING`` when no rule names it)."""
    rule = rule_for(key)
    return NOTHING if rule is None else rule[1]
