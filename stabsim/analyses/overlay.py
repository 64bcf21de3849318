"""The generic check ``overlay``: any measure (a function of ``stabsim.engine.measures``, or a statistic of
a formula over the data, ``stabsim.analyses.overlay_measure``) against any list of bounds.

Configured in the study's ``[check]`` section (validated at parse time, ``stabsim.study``)::

    [study]
    check = "overlay"

    [check]
    measure = "uas_mean"             # a function of stabsim.engine.measures
    x = "t"                          # the coordinate the bounds are evaluated along
    candidates = ["neighbour"]       # sweep axes of candidate neighbours: max over them
    by = ["n"]                       # the other sweep axes: one verdict row per combination
    bounds = ["P1.Thm4.uas", "custom.mine"]   # registry keys or [bounds.custom.NAME]

A bound's arguments are bound by name (only those its function takes): the cell's ``n``,
``d``, ``T``, ``eta`` (a constant step size), the loss constants ``G``, ``L``, ``kappa`` of the
cell's loss and problem (``stabsim.setups.constants``), ``D`` = the diameter 2R of the constraint set,
``gamma``/``delta``/``eps`` (``[check] gamma`` or ``[bounds]``), ``[check] constants``, numeric
attrs of the data set with the same name, and finally the coordinate ``x`` itself (its values
override the cell's scalar).  EXPLICIT and EXPLICIT-DD bounds are judged by
``stabsim.judging.rules.check_bound`` (with the diameter 2R as the trivial bound of distance
measures); RATE bounds need per-replicate slopes and are refused here (use a specific check).
"""

from __future__ import annotations

import inspect
import math

import numpy as np

from stabsim.registry import register_check, twin_problem
from stabsim.registry.formulas import with_variant
from stabsim.analyses.base import CheckResult, cell_setting, figure_name, sweep_slices
from stabsim.analyses.overlay_measure import check_constants, statistic_measure

#: measures whose value is a distance between two points of W (bounded by the diameter 2R).
_DISTANCE_QUANTITIES = ("uas_mean", "uas_quantile", "iterate_dist", "iterate_dist_quantile", "sensitivity")


def _loss_constants(params, spec=None) -> dict:
    """G, L, kappa, D (and the radius) of the cell's loss on its problem (or, on real data, with
    kappa = the largest row norm of the cell's training rows); only kappa = sup||x|| of the
    problem for a kind without a loss; {} where unknown."""
    from stabsim.setups.constants import cell_constants, source_constants

    if "algorithm" not in params or "loss" not in params["algorithm"]:
        if "problem" in params.get("data", {}) and not (spec is not None and getattr(spec, "data_source", None)):
            return {"kappa": float(twin_problem(params["data"]).kappa)}
        return {}  # no loss and no problem: the constants are not defined
    if spec is not None and getattr(spec, "data_source", None):
        c = source_constants(spec, params)
    elif "problem" in params.get("data", {}):
        c = cell_constants(params)
    else:
        return {}
    out = {k: float(c[k]) for k in ("G", "L", "kappa", "margin_range")}
    out["radius"] = float(c["radius"])
    if math.isfinite(c["radius"]):
        out["D"] = 2.0 * float(c["radius"])
    out["loss"] = c["loss"]
    return out


def _trivial_distance(cfg, c, vals, measure, x):
    """The largest value a distance between the twin runs can take at each x, or None: the diameter
    D of W when the run is projected, and, along the steps t at a constant step eta, the path bound
    2 G eta t (each of t steps moves the two runs apart by at most eta ||g - g'|| <= 2 eta G, and an
    average of iterates is no farther apart than the farthest of them)."""
    if not cfg.get("trivial", True) or measure.attrs.get("quantity") not in _DISTANCE_QUANTITIES:
        return None
    triv = np.full(measure[x].shape, c.get("D", math.inf), dtype=float)
    G, eta = c.get("G", math.inf), vals.get("eta")
    if x == "t" and eta is not None and np.ndim(eta) == 0 and math.isfinite(G):
        triv = np.minimum(triv, 2.0 * G * float(eta) * measure[x].values.astype(float))
    return triv if np.all(np.isfinite(triv)) else None


def _values(spec, params, c, ds) -> dict:
    a, d = params.get("algorithm", {}), params.get("data", {})
    vals = {}
    for k, sec in (("n", d), ("d", d), ("T", a)):
        v = sec.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            vals[k] = float(v)
    eta = a.get("eta")
    if isinstance(eta, (int, float)) and not isinstance(eta, bool):
        vals["eta"] = float(eta)
    vals.update({k: c[k] for k in ("G", "L", "kappa", "D", "radius", "margin_range") if k in c})
    for k in ("gamma", "delta", "eps"):
        v = spec.check.get(k) if k == "gamma" and spec.check.get("gamma") is not None else spec.bounds.get(k)
        if v is not None:
            vals[k] = float(v)
    for k, v in ds.attrs.items():
        if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and k not in vals:
            vals[k] = float(v)
    return vals


def _call_bound(b, vals: dict):
    params = inspect.signature(b.func).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()) and getattr(b.func, "names", None) is None:
        from stabsim.theory.registry import _REGISTRY  # a wrapped registry bound: the original names its arguments

        orig = _REGISTRY.get(b.key)
        if orig is not None and orig.func is not b.func:
            params = inspect.signature(orig.func).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        names = getattr(b.func, "names", None)
        kw = {k: v for k, v in vals.items() if names is None or k in names}
        need = [n for n in (names or ()) if n not in vals]
    else:
        kw = {k: vals[k] for k in params if k in vals}
        need = [k for k, p in params.items() if p.default is p.empty and k not in vals
                and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if need:
        raise ValueError(f"bound {b.key}: no value for {', '.join(need)} (give it in [check] constants "
                         f"= {{{need[0]} = ...}}, or use a cell with a constant step size / a problem and a loss)")
    return b.func(**kw)


def _bound_values(b, vals: dict, shape) -> np.ndarray:
    """The bound along x.  A bound written for scalar arguments (it refuses arrays) is evaluated
    at each coordinate in turn, with every argument that varies along x taken at that point."""
    try:
        out = np.asarray(_call_bound(b, vals), dtype=float)
    except (TypeError, ValueError):
        along = [k for k, v in vals.items() if np.ndim(v) == 1 and len(v) == shape[0]]
        if not along:
            raise
        out = np.array([float(_call_bound(b, {**vals, **{k: vals[k][i] for k in along}}))
                        for i in range(shape[0])])
    out = np.array(np.broadcast_to(out, shape))
    if not np.all(np.isfinite(out)):
        raise ValueError(f"bound {b.key} is not finite at some coordinate ({out.tolist()[:5]}...): a bound that "
                         "is infinite (e.g. a loss bound on an unconstrained W) cannot be checked; constrain W")
    return out


def bound_verdicts(measure, bounds_reg, vals: dict, x: str, *, trivial_bound=None, notes=()) -> tuple[list, list]:
    """Every bound of ``bounds_reg`` evaluated along ``x`` (``vals`` binds its arguments by name;
    ``vals[x]`` holds the coordinates) and judged against ``measure`` by
    ``stabsim.judging.rules.check_bound``.  Returns ``([(bound, values), ...], [Verdict, ...])``, the
    curves in the form ``stabsim.judging.plots.plot_bound_overlay`` takes."""
    from stabsim.judging.rules import check_bound

    curves, verdicts = [], []
    for b in bounds_reg:
        bound = _bound_values(b, vals, measure[x].shape)
        verdicts.append(check_bound(measure, bound, b.tag, key=b.key, trivial_bound=trivial_bound,
                                    notes=list(notes)))
        curves.append((b, bound))
    return curves, verdicts


def _measure(spec, cfg, sub, cands_axes, env):
    from stabsim.engine import measures

    if cfg.get("value"):
        if cands_axes:
            raise ValueError("[check] candidates works with a named measure; with value = ... split on the axis "
                             "(by) instead")
        return statistic_measure(cfg, sub, env, cfg.get("x") or "t")
    fn = getattr(measures, cfg["measure"])
    sig = inspect.signature(fn).parameters
    kw = {}
    if cfg.get("var") and "var" in sig:
        kw["var"] = cfg["var"]
    if "gamma" in sig:
        g = cfg.get("gamma") if cfg.get("gamma") is not None else spec.bounds.get("gamma")
        if g is None:
            raise ValueError(f"measure {cfg['measure']} needs gamma: give [check] gamma or [bounds] gamma")
        kw["gamma"] = float(g)
    arg = sub
    if cands_axes:
        ax = cands_axes[0]
        if len(cands_axes) > 1:
            raise ValueError("[check] candidates: one axis of candidate neighbours at most")
        if ax in sub.dims:
            arg = [sub.sel({ax: v}).assign_attrs({ax: str(v)}) for v in sub[ax].values]
            if len(arg) == 1:
                arg = arg[0]
    if isinstance(arg, list):
        first = next(iter(inspect.signature(fn).parameters))
        if first != "ds_or_list":
            raise ValueError(f"measure {cfg['measure']} takes one data set: it cannot take the max over "
                             f"candidates {cands_axes}")
    return fn(arg, **kw)


@register_check("overlay", description="generic: a measure ([check] measure, or value + statistic) against a list of bounds "
                                       "([check] bounds, registry keys or custom.*), one figure per case")
def check_overlay(spec, ds) -> CheckResult:
    from stabsim.theory import get

    cfg = spec.check
    if not cfg or not (cfg.get("measure") or cfg.get("value")):
        raise ValueError("check = \"overlay\" needs a [check] section with a measure (or a value formula) "
                         "and bounds")
    keys = list(cfg["bounds"])
    bounds_reg = [get(k) for k in keys]
    rate = [b.key for b in bounds_reg if b.tag not in ("EXPLICIT", "EXPLICIT-DD")]
    if rate:
        raise ValueError(f"overlay compares EXPLICIT / EXPLICIT-DD bounds; {', '.join(rate)} "
                         "is a RATE (or CONDITION) entry: use a rate check")
    x = cfg.get("x") or "t"
    cands = list(cfg.get("candidates") or [])
    consumed = tuple(cands) + (x,)
    rest = [a for a in spec.sweep if a not in consumed and a in ds.dims]
    if cfg.get("by") is not None and sorted(cfg["by"]) != sorted(rest):
        raise ValueError(f"[check] by = {cfg['by']}: the sweep axes not consumed by x / candidates are {rest}; "
                         "every other axis must be split on (list them all in by)")
    res = CheckResult()
    for label, params, sub in sweep_slices(spec, ds, consumed=consumed):
        c = _loss_constants(params, spec)
        vals = _values(spec, params, c, ds)
        vals.update(check_constants(cfg, sub, vals, x))
        for variant in cfg.get("variants") or [{}]:
            case = ", ".join(s for s in (variant.get("label"), label) if s)
            _overlay_case(res, spec, with_variant(cfg, variant), sub, params, c, dict(vals), bounds_reg, case)
        if "G" in vals:
            res.measured[f"G{' (' + label + ')' if label else ''}"] = float(np.max(vals["G"]))
    for b in bounds_reg:  # the structured ones were checked against every cell when the study was loaded
        if getattr(b, "assumptions", ()):
            res.notes.append(f"{b.key} assumes: {'; '.join(b.assumptions)} (checked against every cell when the study "
                             f"was loaded: {b.requires.describe()}; numeric side conditions are not checked here)")
    if cands:
        res.notes.append("the measure is the max over the candidate neighbours run (a lower estimate of the sup over "
                         "neighbouring pairs), so 'holds' certifies the bound only for those pairs.")
    what = f"measure {cfg['measure']}" if cfg.get("measure") else f"{cfg.get('statistic') or 'mean'} of {cfg['value']}"
    res.notes.append(f"generic overlay check: {what} vs {', '.join(keys)}")
    return res


def _prepare_measure_config(spec, cfg: dict, bounds_reg) -> tuple[dict, list[str]]:
    """A formula measure's defaults and checks against the bounds: the quantity defaults to the
    first bound's; a quantile bound needs statistic = "quantile", whose level defaults to 1 - gamma
    (or 1 - delta) of ``[check]`` / ``[bounds]``; a level that differs from those is noted."""
    notes = []
    if not cfg.get("value"):
        return cfg, notes
    cfg = dict(cfg)
    registered = bounds_reg[0].quantity
    cfg["quantity"] = cfg.get("quantity") or registered
    stat = cfg.get("statistic") or "mean"
    if registered.endswith("quantile") and stat != "quantile":
        raise ValueError(f"{bounds_reg[0].key} bounds a quantile ({registered}); set [check] statistic = "
                         f"\"quantile\", not {stat!r}")
    if stat == "quantile":
        g = cfg.get("gamma") if cfg.get("gamma") is not None else spec.bounds.get("gamma")
        d = spec.bounds.get("delta")
        levels = [1.0 - float(v) for v in (g, d) if v is not None]
        if cfg.get("quantile") is None and levels:
            cfg["quantile"] = levels[0]
        elif levels and not any(abs(cfg["quantile"] - lv) < 1e-12 for lv in levels):
            notes.append(f"quantile = {cfg['quantile']:g}, but 1 - gamma / 1 - delta = "
                         f"{', '.join(f'{lv:g}' for lv in levels)}: the bound's level differs")
    return cfg, notes


def _guard_design(spec, cfg: dict, quantity: str, notes: list) -> None:
    """What the measured quantity needs from the study's design: on-average stability needs one
    data set per replicate (an error without); a generalization gap without it is noted."""
    per_rep = spec.sections.get("data", {}).get("per_replicate")
    if quantity == "onavg_stability" and per_rep is False:
        raise ValueError("on-average stability needs [data] per_replicate = true (one S per replicate)")
    if quantity == "gen_gap" and per_rep is False:
        notes.append("data.per_replicate = false: the expectation over S is not sampled (one data set)")


def _overlay_case(res, spec, cfg, sub, params, c, vals, bounds_reg, label) -> None:
    """One case (a cell, or a variant of it): the measure, every bound along x, the verdicts and one figure."""
    from stabsim.judging.plots import plot_bound_overlay

    x, cands = cfg.get("x") or "t", list(cfg.get("candidates") or [])
    cfg, notes = _prepare_measure_config(spec, cfg, bounds_reg)
    measure = _measure(spec, cfg, sub, cands, vals)
    _guard_design(spec, cfg, measure.attrs.get("quantity", ""), notes)
    if x not in measure.coords:
        raise ValueError(f"[check] x = {x!r} is not a coordinate of the measure (dims {list(measure.dims)})")
    extra_dims = [dm for dm in measure["estimate"].dims if dm != x]
    if extra_dims:
        raise ValueError(f"the measure still has dims {extra_dims} besides x = {x!r}: add them to [check] by "
                         "or candidates")
    vals[cfg.get("x_symbol") or x] = measure[x].values.astype(float)
    if "G" in c and "G" not in (cfg.get("constants") or {}):  # a G given in constants is noted below
        notes.append(f"G = {c['G']:.4g} ({c['loss']}, kappa = sup||x|| = {c['kappa']:.4g})")
    if cands:
        notes.append(f"neighbours: {measure.attrs.get('candidates', measure.attrs.get(cands[0]))}")
    notes += [f"{k} = {float(np.max(v)) if np.ndim(v) else v:.4g}{' (max over x)' if np.ndim(v) else ''}"
              for k, v in vals.items() if k in (cfg.get("constants") or {})]
    triv = _trivial_distance(cfg, c, vals, measure, x)
    curves, verdicts = bound_verdicts(measure, bounds_reg, vals, x, trivial_bound=triv, notes=notes)
    fig = plot_bound_overlay(measure, curves, verdicts=verdicts, x=x,
                             setting=cell_setting(params) if "G" in c else "")
    name = res.figure(figure_name(bounds_reg[0].key, label), fig)
    for v in verdicts:
        expl = None
        if not v.ok:
            expl = f"the measured {v.quantity} exceeds the bound at some {x}: " + "; ".join(v.notes)
        res.add(v, figure=name, label=label or None, explanation=expl)
