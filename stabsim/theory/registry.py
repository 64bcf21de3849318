"""The bound registry: every theorem formula of the five papers as a plain function.

Each entry records the paper, the theorem/lemma number, the assumptions, the quantity
it bounds (the name of a *measure* it is compared with), its tag and the reading used
where the printed formula has a typo.  See ``docs/errata.md`` (ids such as
"P0-E3" = paper P0, erratum 3; :mod:`stabsim.judging.errata` parses and links them).

Tags (docs/errata.md, Conventions):

``EXPLICIT``     fully computable; overlay as is, no constant fitted.
``EXPLICIT-DD``  explicit once a measured quantity is plugged in (passed as an argument).
``RATE``         O(.) only: compare log-log slopes (``rate`` maps swept variable -> exponent).
``CONDITION``    a privacy calibration (noise level / feasibility), not a risk bound.

The registry knows nothing of kernels or plotting.  Bound functions take keyword
arguments named after the paper's symbols (n, t, T, eta, G, L, gamma, delta, eps, ...)
and broadcast over numpy arrays.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Callable, Mapping

from stabsim.theory.assumptions import NOTHING, Assumptions, requirements_for

TAGS = ("EXPLICIT", "EXPLICIT-DD", "RATE", "CONDITION")
PAPERS = {
    "P0": "Yang, Lei, Lyu, Ying (AISTATS 2021): stability and DP of SGD for pairwise learning with non-smooth loss",
    "P1": "Yang, Lei, Wang, Yang, Ying (NeurIPS 2021): simple stochastic and online gradient descent for pairwise learning",
    "P2": "Kang, Liu, Li, Wang: towards sharper utility bounds for differentially private pairwise learning",
    "P3": "Huai, Wang, Miao, Xu, Zhang (AAAI 2020): pairwise learning with differential privacy guarantees",
    "P4": "Wang, Lei, Ying, Zhou: differentially private SGD with low-noise",
}


@dataclass(frozen=True)
class Bound:
    """One registered bound.

    key          unique id, ``"<paper>.<ref-short>[.<what>][.<variant>]"``, e.g. ``"P1.Thm4.uas"``.
    paper        ``"P0"`` .. ``"P4"``.
    ref          the paper's own label, e.g. ``"Theorem 4"``, ``"Lemma A.9"``, ``"Eq. (9)"``.
    quantity     the measure the bound is compared with (see ``QUANTITIES``).
    tag          one of ``TAGS``.
    func         the formula; keyword arguments in the paper's notation, returns an array.
    assumptions  the theorem's assumptions in words (e.g. ``"G-Lipschitz"``, ``"convex"``).
    requires     the same, structured: the algorithm, loss class, pairwise or pointwise, constraint,
                 step rule and output the theorem is proven for (``stabsim.theory.assumptions``;
                 checked against a study's runs by ``stabsim.judging.applicability.check_applicable``).
    reading      which reading of the text is implemented (``"as printed"`` or the correction
                 with its errata id, docs/errata.md).
    variant      ``"printed"``, ``"corrected"`` or ``""`` when there is only one reading.
    rate         for RATE (and optionally EXPLICIT) entries: the exponent of the bounded quantity
                 in each swept variable, e.g. ``{"n": -0.5}``.
    sweep        the variable the theorem is naturally plotted against (``"t"``, ``"n"``, ``"eps"`` ...).
    measured     names of arguments that must be *measured* in the simulation (EXPLICIT-DD).
    description  one line, readable without the paper.
    """

    key: str
    paper: str
    ref: str
    quantity: str
    tag: str
    func: Callable
    assumptions: tuple[str, ...] = ()
    reading: str = "as printed"
    variant: str = ""
    rate: Mapping[str, float] | None = None
    sweep: str = ""
    measured: tuple[str, ...] = ()
    description: str = ""
    extra: Mapping[str, object] = field(default_factory=dict)
    requires: Assumptions = NOTHING

    def __call__(self, **kwargs):
        return self.func(**kwargs)


#: Names of measured quantities a bound may be compared with.
QUANTITIES = {
    "uas_mean": "E_A ||A(S) - A(S')||  (uniform argument stability in expectation)",
    "uas_quantile": "(1-gamma)-quantile of ||A(S) - A(S')||  (high-probability UAS)",
    "uas_sq_quantile": "(1-gamma)-quantile of ||A(S) - A(S')||^2",
    "iterate_dist_sq_quantile": "(1-gamma)-quantile of ||w_t - w'_t||^2",
    "iterate_dist": "||w_t - w'_t|| along the run",
    "onavg_stability": "E (1/n) sum_i ||A(S) - A(S^(i))||^2  (on-average argument stability, P4 Def. 6)",
    "gen_gap": "E[F(A(S)) - F_S(A(S))]",
    "opt_error": "E[F_S(A(S))] - F_S(w)",
    "excess_risk": "E[F(A(S))] - F(w*)",
    "regret": "online regret / average regret",
    "grad_norm_sq": "(1/t) sum_j E||grad F_S(w_{j-2})||^2",
    "pl_gap": "E[F_S(w_t) - F_S(w_S)]",
    "sensitivity": "||A_t(D) - A_t(D')|| (l2 sensitivity of one release)",
    "rademacher": "Rademacher complexity of the loss class",
    "iterate_norm_sq": "||w_t||^2",
    "noise_sigma": "Gaussian noise level of a private algorithm",
    "noise_sigma2": "Gaussian noise variance of a private algorithm",
    "privacy_rho": "zCDP parameter",
    "privacy_feasible": "feasibility of privacy parameters",
    "dp_utility_loss": "R(w_priv) - R(w_bar_T)",
    "hoeffding_term": "R_S(w*) - R(w*)",
    "locally_elastic_beta": "pairwise locally elastic stability coefficient",
    "eta2_weighted_train_risk": "sum_j eta_j^2 E[F_S(w_j)] along the run (P4 Eq. (11), Lemma 20)",
    "step_expansion": "||w - eta g(w) - w' + eta g(w')||^2 - ||w - w'||^2 (one gradient step, P4 Lemma 18)",
    "iterate_dist_quantile": "(1-gamma)-quantile of ||w_t - w'_t||  (high-probability per-iterate distance)",
    "excess_risk_quantile": "(1-gamma)-quantile over S and A of F(A(S)) - F(w*)  (high-probability excess risk)",
    "gen_gap_quantile": "(1-gamma)-quantile over S and A of F(A(S)) - F_S(A(S))  (high-probability generalization gap)",
    "opt_error_quantile": "(1-gamma)-quantile over A (and S) of F_S(A(S)) - F_S(w)  (high-probability optimization error)",
    "step_size": "a step size prescribed by a theorem's calibration (a parameter to set, not a measurement)",
}

_REGISTRY: dict[str, Bound] = {}


def register(*, key: str, paper: str, ref: str, quantity: str, tag: str,
             assumptions=(), reading: str = "as printed", variant: str = "",
             rate=None, sweep: str = "", measured=(), description: str = "", requires: Assumptions | None = None,
             **extra):
    """Decorator: register ``func`` as a bound.  Returns the function unchanged.  ``requires``: the
    structured assumptions (default: the rule of ``stabsim.theory.assumptions.REQUIRES`` for ``key``,
    nothing where no rule names it)."""
    if tag not in TAGS:
        raise ValueError(f"bound {key!r}: tag {tag!r} is not one of {TAGS}")
    if paper not in PAPERS:
        raise ValueError(f"bound {key!r}: paper {paper!r} is not one of {tuple(PAPERS)}")
    if quantity not in QUANTITIES:
        raise ValueError(f"bound {key!r}: quantity {quantity!r} is not one of {tuple(QUANTITIES)}")
    if tag == "RATE" and not rate:
        raise ValueError(f"bound {key!r}: a RATE entry needs its exponents, e.g. rate={{'n': -0.5}}")

    def deco(func):
        if key in _REGISTRY:
            raise ValueError(f"bound {key!r} is registered twice")
        _REGISTRY[key] = Bound(key=key, paper=paper, ref=ref, quantity=quantity, tag=tag,
                               func=func, assumptions=tuple(assumptions), reading=reading,
                               variant=variant, rate=dict(rate) if rate else None, sweep=sweep,
                               measured=tuple(measured),
                               description=description or (func.__doc__ or "").strip().split("\n")[0],
                               extra=dict(extra),
                               requires=requirements_for(key) if requires is None else requires)
        return func

    return deco


def register_custom(*, key: str, quantity: str, tag: str, func: Callable, rate=None, measured=(),
                    description: str = "", expr: str = "") -> Bound:
    """Register a study file's own bound (``[bounds.custom.NAME]``, ``stabsim.theory.custom_bounds``) as
    ``key`` (``"custom.NAME"``), paper "custom", ref "study file", for the rest of the process.
    Registering the same definition again is a no-op; another definition under the same key
    is an error."""
    if not key.startswith("custom."):
        raise ValueError(f"custom bound key {key!r} must start with 'custom.'")
    if tag not in TAGS:
        raise ValueError(f"bound {key!r}: tag {tag!r} is not one of {TAGS}")
    if quantity not in QUANTITIES:
        raise ValueError(f"bound {key!r}: quantity {quantity!r} is not one of {tuple(QUANTITIES)}")
    rate = dict(rate) if rate else None
    b = Bound(key=key, paper="custom", ref="study file", quantity=quantity, tag=tag, func=func,
              reading="as written in the study file", rate=rate, sweep="t", measured=tuple(measured),
              description=description, extra={"expr": expr})
    old = _REGISTRY.get(key)
    if old is not None:
        same = (old.extra.get("expr") == expr and old.quantity == quantity and old.tag == tag
                and old.rate == rate and old.measured == tuple(measured))
        if not same:
            raise ValueError(f"bound {key!r} is already registered in this process with another definition "
                             f"({old.quantity}, {old.tag}, expr {old.extra.get('expr')!r}); give the new bound "
                             f"another name")
        return old
    _REGISTRY[key] = b
    return b


def get(key: str) -> Bound:
    """The bound registered under ``key``; unknown keys raise with a 'did you mean'."""
    try:
        return _REGISTRY[key]
    except KeyError:
        close = difflib.get_close_matches(key, list(_REGISTRY), n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise KeyError(f"unknown bound {key!r}.{hint} `stabsim.theory.list_bounds()` lists all "
                       f"{len(_REGISTRY)} registered bounds.") from None


def list_bounds(paper: str | None = None, tag: str | None = None) -> list[Bound]:
    """All registered bounds, optionally filtered by paper and tag, in key order."""
    out = [b for b in _REGISTRY.values()  # a study file's own bounds only when asked for (paper="custom")
           if (b.paper == paper if paper is not None else b.paper != "custom") and (tag is None or b.tag == tag)]
    return sorted(out, key=lambda b: b.key)


def table(paper: str | None = None) -> str:
    """A plain-text table of the registry (key, tag, quantity, reference, reading)."""
    rows = [(b.key, b.tag, b.quantity, f"{b.paper} {b.ref}", b.reading) for b in list_bounds(paper)]
    head = ("key", "tag", "quantity", "reference", "reading")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    return "\n".join([fmt.format(*head)] + [fmt.format(*r) for r in rows])
