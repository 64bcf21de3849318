"""P3 (Huai, Wang, Miao, Xu, Zhang, AAAI 2020: pairwise learning with DP guarantees): the setting.

What the P3 experiments (:mod:`stabsim.experiments.p3_giga`, kinds ``p3_giga`` and
``p3_experiment``) and their analyses (:mod:`stabsim.analyses.p3_stability`, ``p3_privacy``,
``p3_rates``, ``p3_reproduction``) both need:

``VARIANTS``, ``ONLINE``, ``CONVEX``
    The four P3 algorithms (OnPairStrC = Alg. 1, OnPairC = Alg. 2, OffPairStrC = Alg. 3,
    OffPairC = Alg. 4), whether each releases online (Alg. 1/2, Thm 2-4) and whether it is the
    convex one (Thm 3 / Thm 5 Eq. (13); the StrC variants run l + (alpha/2)||w||^2).
``P3_DATA``, ``P3_ALGORITHM``, ``P3_MEASURE`` (= ``P3_PARAMS``) and ``FIGURE``
    The sections of a P3 study file (``[data]``, ``[algorithm]``, ``[measure]``; ``[figure]``
    of the Figure 1-6 reproductions).
``cell_value``
    Reads one of the cell constants the P3 kinds store (no replicate dim): ``alpha``, ``T1``,
    ``T1_paper``, ``G``, ``L``, ``G_tilde``, ``L_tilde``, ``rho``, ``sigma_coef``,
    ``sigma_off``, ``delta``, ``kappa``, ``dim``.
"""

from __future__ import annotations

from stabsim.registry import BadValue, Param, boolean, choice, integer, number, open_unit
from stabsim.registry.twin import check_constraint, check_loss, check_problem

VARIANTS = ("OnPairStrC", "OnPairC", "OffPairStrC", "OffPairC")
ONLINE = {"OnPairStrC": True, "OnPairC": True, "OffPairStrC": False, "OffPairC": False}
CONVEX = {"OnPairStrC": False, "OnPairC": True, "OffPairStrC": False, "OffPairC": True}


def _check_dataset(v):
    if v == "":
        return v
    from stabsim.engine.real_datasets import _resolve

    try:
        _resolve(v)
    except (ValueError, TypeError) as e:
        raise BadValue(str(e), standalone=True) from None
    return v


P3_DATA = {
    "problem": Param("synthetic problem (when dataset = '')", "auc_separable", check_problem),
    "dataset": Param("shipped real data set (stabsim.engine.real_datasets); '' = use the synthetic problem", "",
                     _check_dataset),
    "scale": Param("scaling of the real data set", "minmax[-1,1]+unit-norm",
                   choice(("minmax[-1,1]", "unit-norm", "minmax[-1,1]+unit-norm")), sweepable=False),
    "d": Param("dimension of the synthetic problem", 5, integer(1, " (the dimension)")),
    "n": Param("number of training examples (stream length)", 200, integer(10, " (the number of examples)")),
    "seed": Param("data seed (default: [study] seed)", None, integer(0), dim="data_seed"),
    "test_m": Param("test sample size (synthetic problems)", 1000, integer(10, " (test sample size)"),
                    sweepable=False),
    "gamma": Param("problem: class separation", None, number(gt=0)),
    "rho": Param("problem: noise-ball radius", None, number(ge=0)),
    "pi": Param("problem: P(y = 1)", None, open_unit(" (P(y = 1))")),
    "flip": Param("problem: label-flip probability", None, number(ge=0, lt=0.5)),
}

P3_ALGORITHM = {
    "variant": Param("P3 algorithm", "OnPairStrC", choice(VARIANTS)),
    "loss": Param("pairwise loss (P3 Ex. 2: ranking_logistic; Ex. 1: metric_logistic)", "ranking_logistic",
                  check_loss),
    "constraint": Param("constraint set C (an l2 / Frobenius ball)", "l2:1.0", check_constraint),
    "eps": Param("privacy epsilon", 1.0, number(gt=0, what=" (privacy budget epsilon)")),
    "delta": Param("privacy delta; 0 = 1/n (the experiments' choice)", 0.0, number(ge=0, lt=1)),
    "alpha_rule": Param("how alpha is set: fixed, sqrt_n (alpha_c/sqrt n), burnin (T_1 <= burnin_frac n), "
                        "auto (fixed for the StrC variants, sqrt_n for the convex ones: the theorems' settings)",
                        "fixed", choice(("fixed", "sqrt_n", "quarter_n", "burnin", "auto"))),
    "alpha": Param("strong-convexity modulus (alpha_rule = fixed)", 4.0, number(gt=0)),
    "alpha_c": Param("alpha = alpha_c / sqrt(n) (sqrt_n) or alpha_c / n^(1/4) (quarter_n)", 16.0, number(gt=0)),
    "burnin_frac": Param("alpha_rule = burnin: the paper's T_1 <= burnin_frac * n", 0.5, number(gt=0, lt=1)),
    "T1": Param("burn-in override (0 = the paper's max(ceil(16 L~^2/alpha^2), 7))", 0, integer(0)),
    "neighbour": Param("replacement rule", "farthest", choice(("flip", "farthest", "same"))),
    "exact_rho": Param("exact rho (true) or the paper's approximation eps^2/(4 log(1/delta))", True, boolean),
    "checkpoints": Param("number of log-spaced checkpoints of dist_iterate", 30, integer(2), sweepable=False),
}

P3_MEASURE = {
    "regret": Param("regret (Eq. 4) with l and l~", False, boolean, sweepable=False),
    "excess": Param("test-sample excess risk of w_priv", False, boolean, sweepable=False),
    "objective": Param("training objective L(w; D)", False, boolean, sweepable=False),
    "auc": Param("test AUC (linear losses)", False, boolean, sweepable=False),
    "knn": Param("test 3-NN accuracy (metric losses)", False, boolean, sweepable=False),
    "k_nn": Param("k of the k-NN classifier", 3, integer(1), sweepable=False),
}

P3_PARAMS = {"data": P3_DATA, "algorithm": P3_ALGORITHM, "measure": P3_MEASURE}

#: ``[figure]`` of the P3 Figure 1-6 reproductions (kind ``p3_experiment``, check ``p3_figure``)
FIGURE = {
    "number": Param("P3 figure number (1-6)", 1, integer(1, " (a figure number)"), sweepable=False),
    "metric": Param("plotted metric", "objective", choice(("objective", "auc", "knn")), sweepable=False),
}


def cell_value(sub, name):
    """A cell constant (no replicate dim) of a P3 data set as a float."""
    v = sub[name]
    return float(v.values.ravel()[0])
