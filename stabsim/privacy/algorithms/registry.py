"""The registry of the private algorithms (:mod:`stabsim.privacy.algorithms`).

``PRIVATE_ALGORITHMS``: name -> a function ``f(X, y, **kwargs)`` (the uniform keyword interface
used by :func:`run_private`, the quick configurations ``QUICK`` and the audits of
:mod:`stabsim.privacy.audit_runner`).  P1 Alg. 3 and the P3 variants are config-based
(:class:`P1Alg3Config`, :class:`P3GigaConfig`); their entries are keyword forms that build the
config from the keyword arguments that name its fields (:func:`~.common.keyword_form`).
:func:`config_default` gives the default of any argument of any of them.
"""

from __future__ import annotations

import dataclasses
import inspect

import xarray as xr

from stabsim.privacy.algorithms.common import keyword_form
from stabsim.privacy.algorithms.p0_output_perturbation import p0_alg2
from stabsim.privacy.algorithms.p1_localized import P1Alg3Config, p1_alg3
from stabsim.privacy.algorithms.p2_gradient_perturbation import p2_alg1
from stabsim.privacy.algorithms.p3_pairwise_giga import P3GigaConfig, p3_giga, p3_offpairc, p3_offpairstrc, p3_onpairc, p3_onpairstrc
from stabsim.privacy.algorithms.p4_dpsgd import p4_alg1, p4_alg2

#: the config class of each config-based algorithm
CONFIGS = {p1_alg3: P1Alg3Config, p3_giga: P3GigaConfig}

PRIVATE_ALGORITHMS = {
    "p0_alg2": p0_alg2,
    "p1_alg3": keyword_form(p1_alg3, P1Alg3Config, "p1_alg3",
                            "P1 Alg. 3: ``p1_alg3(X, y, P1Alg3Config(...), ...)`` from keyword arguments "
                            "(config fields and run arguments together)."),
    "p2_alg1": p2_alg1,
    "p3_onpairstrc": p3_onpairstrc,
    "p3_onpairc": p3_onpairc,
    "p3_offpairstrc": p3_offpairstrc,
    "p3_offpairc": p3_offpairc,
    "p4_alg1": p4_alg1,
    "p4_alg2": p4_alg2,
}


def run_private(name, X, y, **kwargs) -> xr.Dataset:
    """Run the private algorithm ``name`` (a key of ``PRIVATE_ALGORITHMS``)."""
    if name not in PRIVATE_ALGORITHMS:
        import difflib
        close = difflib.get_close_matches(str(name), list(PRIVATE_ALGORITHMS), n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(f"unknown private algorithm {name!r}.{hint} "
                         f"Allowed: {', '.join(PRIVATE_ALGORITHMS)}")
    return PRIVATE_ALGORITHMS[name](X, y, **kwargs)


def config_default(algorithm, name):
    """The default of the argument ``name`` of a private algorithm (a ``PRIVATE_ALGORITHMS`` key
    or function, :func:`p1_alg3`, :func:`p3_giga`): its config field's default for the
    config-based ones, else the keyword default of the function.  KeyError if it has none."""
    fn = PRIVATE_ALGORITHMS[algorithm] if isinstance(algorithm, str) else algorithm
    run = getattr(fn, "run", fn)
    cfg = getattr(fn, "config", None) or CONFIGS.get(fn)
    if cfg is not None:
        for f in dataclasses.fields(cfg):
            if f.init and f.name == name and f.default is not dataclasses.MISSING:
                return f.default
    par = inspect.signature(run).parameters.get(name)
    if par is None or par.default is inspect.Parameter.empty:
        raise KeyError(f"{getattr(fn, '__name__', fn)!r} has no argument {name!r} with a default")
    return par.default


#: "quick" configurations (each runs in well under a minute): data (problem, n, d) and kwargs.
QUICK = {
    "p0_alg2": (("auc_separable", 30, 5), dict(eps=1.0, delta=1e-3, constraint=("l2", 1.0),
                                                replicates=200)),
    "p1_alg3": (("auc_separable", 256, 5), dict(eps=1.0, delta=1e-3, replicates=200)),
    "p2_alg1": (("auc_separable", 60, 5), dict(eps=1.0, delta=1e-3, T=20, replicates=200)),
    "p3_onpairstrc": (("auc_separable", 200, 5), dict(eps=1.0, delta=1 / 200, alpha=4.0,
                                                      replicates=200)),
    "p3_onpairc": (("auc_separable", 200, 5), dict(eps=1.0, delta=1 / 200, alpha=4.0,
                                                   replicates=200)),
    "p3_offpairstrc": (("auc_separable", 200, 5), dict(eps=1.0, delta=1 / 200, alpha=4.0,
                                                       replicates=200)),
    "p3_offpairc": (("auc_separable", 200, 5), dict(eps=1.0, delta=1 / 200, alpha=4.0,
                                                    replicates=200)),
    "p4_alg1": (("p4_logistic", 1000, 10), dict(eps=2.0, delta=1e-6, T=1000, replicates=200)),
    "p4_alg2": (("auc_separable", 2000, 5), dict(eps=2.0, delta=1e-6, T=2000, replicates=200)),
}


def quick_data(name, seed=0):
    """The synthetic data set (X, y) of the quick configuration of ``name``."""
    from stabsim.engine.synthetic import make_problem
    (prob, n, d), _ = QUICK[name]
    return make_problem(prob, d=d).sample(n, seed)


def quick_run(name, seed=0, **overrides) -> xr.Dataset:
    """Run ``name`` in its quick configuration (``QUICK``), with optional overrides."""
    X, y = quick_data(name, seed)
    kw = dict(QUICK[name][1])
    kw.update(seed=seed)
    kw.update(overrides)
    return run_private(name, X, y, **kw)
