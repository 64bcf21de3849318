"""From a ``run_twin`` Dataset and a bound to a verdict and a figure, in one call each.

::

    ds = stabsim.run_twin(X, y, algorithm="p1_alg1", loss="auc_hinge", constraint=("l2", 5.0),
                          eta=0.05, T=2000, replicates=64, seed=1, neighbour="flip")
    v = stabsim.judge(ds, "P1.Thm4.uas", X=X)          # a Verdict: v.verdict, v.tightness_max, ...
    fig = stabsim.overlay_figure(ds, "P1.Thm4.uas", X=X, path="thm4.png")

``bound`` is a registry key (``stabsim.theory``), a registry ``Bound``, or a function of the
run's parameters in the paper's symbols, e.g. ``lambda t, n, eta, G: 2 * G * eta * (t ** 0.5 + 2 * t / n)``
(a function's name, or ``name=``, labels it).  Its arguments are bound by name, as the study
files' ``overlay`` check binds them (``stabsim.analyses.overlay``): ``t`` (the checkpoints), the
run's ``n``, ``d``, ``T`` and constant step size ``eta``; ``G``, ``L`` of the run's loss with
``kappa`` = sup ||x|| (the largest row norm of ``X=``, or ``kappa=``) and the radius R of the
constraint; ``D`` = 2R; anything in ``constants``.  A value that is missing is an error naming it.

The measured side is the estimator of ``stabsim.engine.measures`` named by the bound's quantity
(``uas_mean`` for UAS in expectation: E||A_t(S) - A_t(S')|| with a Student t CI over replicates;
``measure=`` picks another, e.g. ``"uas_quantile"`` with ``gamma=``).  EXPLICIT / EXPLICIT-DD
bounds are judged by ``stabsim.judging.rules.check_bound`` (the measure's CI below the bound at every
coordinate: *holds*; significantly above at one after Holm's correction: *violated*), with
min(D, 2 eta G t) as the trivial bound of a distance between the coupled runs (``_trivial_distance``).

**A sweep** is a list of Datasets that differ in one parameter (``x``, default: the one attribute
among ``n``, ``eta``, ``T``, ``d``, ``sigma``, ``seed`` that differs), or a Dataset with a dim
besides ``replicate`` and ``t``.  Each run is measured at its last checkpoint (t = T) and the
bound is evaluated there, giving one curve across x: ``judge`` compares it with ``check_bound``,
or with ``rate=True`` compares the measured log-log slope in x with the bound's rate by
``stabsim.judging.rules.check_rate`` (a RATE entry's registered exponent, or the slope the bound itself
has over the sweep); ``overlay_figure`` draws one figure across x.
"""

from __future__ import annotations

import inspect
import math
from typing import Callable

import numpy as np
import xarray as xr

from stabsim.analyses.overlay import _DISTANCE_QUANTITIES, _bound_values, bound_verdicts

#: attributes that may be the swept parameter of a list of runs, in the order they are tried.
SWEEPABLE = ("n", "eta", "T", "d", "sigma", "seed")

__all__ = ["judge", "overlay_figure", "SWEEPABLE"]


def _resolve_bound(bound, quantity: str | None, tag: str | None, name: str | None):
    """A registry ``Bound`` for a key, a Bound or a user's function (wrapped: paper "custom")."""
    from stabsim.theory import get
    from stabsim.theory.registry import Bound

    if isinstance(bound, str):
        return get(bound)
    if isinstance(bound, Bound):
        return bound
    if callable(bound):
        label = name or getattr(bound, "__name__", "") or "bound"
        if label == "<lambda>":
            label = "your bound"
        return Bound(key=label, paper="custom", ref=label, quantity=quantity or "uas_mean",
                     tag=tag or "EXPLICIT", func=bound, description=f"user's bound {label}")
    raise TypeError(f"bound must be a registry key (e.g. 'P1.Thm4.uas'), a stabsim.theory Bound or a function "
                    f"of the run's parameters, got {type(bound).__name__}")


def _measure_fn(name: str) -> Callable:
    from stabsim.engine import measures

    fn = getattr(measures, name, None)
    if fn is None or not callable(fn) or name.startswith("_"):
        raise ValueError(f"no estimator {name!r} in stabsim.engine.measures: pass measure= one of uas_mean, "
                         "uas_quantile, onavg_stability, ... (the bound's quantity names the default)")
    return fn


def _measure(ds: xr.Dataset, name: str, var: str | None, gamma: float | None) -> xr.Dataset:
    fn = _measure_fn(name)
    sig = inspect.signature(fn).parameters
    kw = {}
    if var is not None:
        if "var" not in sig:
            raise ValueError(f"measure {name} takes no var= argument")
        kw["var"] = var
    if "gamma" in sig:
        if gamma is None:
            raise ValueError(f"measure {name} needs gamma= (the bound holds with probability 1 - gamma)")
        kw["gamma"] = float(gamma)
    return fn(ds, **kw)


def _number(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _run_values(ds: xr.Dataset, X, kappa, constants, gamma) -> tuple[dict, float | None]:
    """The run's parameters by the paper's symbols, and the diameter D (None when W is unbounded)."""
    from stabsim.engine.losses import get_loss

    a = ds.attrs
    vals = {}
    for k in ("n", "d", "T", "eta", "sigma"):
        f = _number(a.get(k))
        if f is not None:
            vals[k] = f
    if kappa is None and X is not None:
        Xa = np.asarray(X, dtype=float)
        kappa = float(np.max(np.linalg.norm(Xa, axis=-1)))
    R = _number(a.get("radius"))
    R = math.inf if R is None else R
    D = 2.0 * R if math.isfinite(R) else None
    if D is not None:
        vals["D"] = D
    if kappa is not None:
        vals["kappa"] = float(kappa)
        if a.get("loss"):
            loss = get_loss(a["loss"], a.get("q"))
            vals["G"] = float(loss.G(float(kappa), R))
            vals["L"] = float(loss.L(float(kappa), R))
    if gamma is not None:
        vals["gamma"] = float(gamma)
    vals.update(constants or {})
    return vals, D


def _trivial_distance(vals: dict, t):
    """min(D, 2 eta G t) for the run's parameters (``stabsim.judging.rules.coupled_distance_cap``); None when
    neither is known (an unbounded W and a step-size schedule)."""
    from stabsim.judging.rules import coupled_distance_cap

    return coupled_distance_cap(t, diameter=vals.get("D"), eta=vals.get("eta"), G=vals.get("G"))


def _split_sweep(data, x: str | None) -> tuple[list, str | None]:
    """A list of single-run Datasets and the swept parameter (None for one run along t)."""
    if isinstance(data, xr.Dataset):
        extra = [dm for dm in data.dims if dm not in ("replicate", "t")]
        if not extra:
            return [data], None
        if len(extra) > 1 and x is None:
            raise ValueError(f"the Dataset has several swept dims {extra}: pass x= one of them")
        dim = x or extra[0]
        if dim not in data.dims:
            raise ValueError(f"x = {dim!r} is not a dim of the Dataset (dims {list(data.dims)})")
        runs = []
        for v in data[dim].values:
            r = data.sel({dim: v})
            runs.append(r.assign_attrs({dim: v.item() if hasattr(v, "item") else v}))
        return runs, dim
    runs = list(data)
    if not runs or not all(isinstance(r, xr.Dataset) for r in runs):
        raise TypeError("judge / overlay_figure take a run_twin Dataset or a list of them (a sweep)")
    if len(runs) == 1:
        return runs, None
    if x is None:
        differ = [k for k in SWEEPABLE if len({str(r.attrs.get(k)) for r in runs}) > 1]
        if len(differ) != 1:
            raise ValueError(f"the runs differ in {differ or 'none'} of {list(SWEEPABLE)}: pass x= the swept "
                             "parameter (one attribute that differs between the runs)")
        x = differ[0]
    xs = [_number(r.attrs.get(x)) for r in runs]
    if any(v is None for v in xs):
        raise ValueError(f"every run needs a numeric attribute {x!r} to be swept over")
    return runs, x


class _Judged:
    """The measure, the bounds' curves and the verdicts of one judge / overlay_figure call."""

    def __init__(self, measure, curves, verdicts, x, y_reps=None, fit_x=None):
        self.measure, self.curves, self.verdicts, self.x = measure, curves, verdicts, x
        self.y_reps, self.fit_x = y_reps, fit_x


def _evaluate(data, bounds, *, x, measure, var, gamma, X, kappa, constants, rate, tol, quantity, tag, name):
    from stabsim.judging.rules import check_rate

    bounds_reg = [_resolve_bound(b, quantity, tag, name) for b in bounds]
    refused = [b.key for b in bounds_reg if b.tag not in ("EXPLICIT", "EXPLICIT-DD", "RATE")]
    if refused:
        raise ValueError(f"{', '.join(refused)}: judge compares EXPLICIT / EXPLICIT-DD bounds and RATE entries; "
                         "a CONDITION is a privacy calibration (stabsim.privacy.ledger)")
    mname = measure or bounds_reg[0].quantity
    runs, xdim = _split_sweep(data, x)
    is_rate = rate or any(b.tag == "RATE" for b in bounds_reg)
    if xdim is None:
        if is_rate:
            raise ValueError("a rate verdict needs a sweep: a list of runs that differ in one parameter")
        ds = runs[0]
        m = _measure(ds, mname, var, gamma)
        vals, D = _run_values(ds, X, kappa, constants, gamma)
        vals["t"] = m["t"].values.astype(float)
        triv = _trivial_distance(vals, vals["t"]) if m.attrs.get("quantity") in _DISTANCE_QUANTITIES else None
        curves, verdicts = _call(lambda: bound_verdicts(m, bounds_reg, vals, "t", trivial_bound=triv))
        return _Judged(m, curves, verdicts, "t")
    # a sweep: each run at its last checkpoint, along the swept parameter
    per, bvals, xs, reps = [], [], [], []
    for r in runs:
        m = _measure(r, mname, var, gamma).isel(t=-1)
        vals, D = _run_values(r, X, kappa, constants, gamma)
        vals["t"] = float(m["t"])
        xs.append(_number(r.attrs.get(xdim)) if xdim not in vals else vals[xdim])
        per.append(m.drop_vars("t"))
        bvals.append(vals)
        if is_rate:
            reps.append(np.asarray(r[var or "dist_output"].isel(t=-1).values, dtype=float))
    order = np.argsort(xs)
    xs = np.asarray(xs, dtype=float)[order]
    per, bvals = [per[i] for i in order], [bvals[i] for i in order]
    m = xr.concat(per, dim=xdim, combine_attrs="override").assign_coords({xdim: xs})
    curves = []
    for b in bounds_reg:
        if b.tag == "RATE":
            curves.append((b, None))
            continue
        vals_b = [_call(lambda v=v: float(np.asarray(_bound_values(b, v, (1,)))[0])) for v in bvals]
        curves.append((b, np.asarray(vals_b)))
    if not is_rate:
        triv = (np.array([_trivial_distance(v, v["t"]) if _trivial_distance(v, v["t"]) is not None else np.inf
                          for v in bvals], dtype=float)
                if m.attrs.get("quantity") in _DISTANCE_QUANTITIES else None)
        if triv is not None and not np.all(np.isfinite(triv)):
            triv = None
        from stabsim.judging.rules import check_bound
        verdicts = [check_bound(m, vb, b.tag, key=b.key, trivial_bound=triv) for b, vb in curves]
        return _Judged(m, curves, verdicts, xdim)
    if len({len(y) for y in reps}) != 1:
        raise ValueError("a rate verdict needs the same replicates in every run of the sweep")
    y = np.stack([reps[i] for i in order], axis=1)  # (R, m)
    verdicts = []
    for b, vb in curves:
        if b.rate and xdim in b.rate:
            from stabsim.judging.rates import rate_exponent
            exponent, how = rate_exponent(b, xdim, **bvals[0]), "its registered exponent"
        elif vb is not None:
            from stabsim.judging.rates import bound_slope
            exponent, how = bound_slope(xs, vb), "the log-log slope of the bound over the sweep"
        else:
            raise ValueError(f"{b.key} has no rate in {xdim!r} (rate = {b.rate})")
        verdicts.append(check_rate(xs, y, exponent, tol=tol, key=b.key, quantity=m.attrs.get("quantity", ""),
                                   bound_values=vb, notes=(f"exponent in {xdim}: {how}",)))
    return _Judged(m, curves, verdicts, xdim, y_reps=y, fit_x=xs)


def _call(f):
    """A bound evaluation; the study files' hint ("[check] constants") becomes the Python one."""
    try:
        return f()
    except ValueError as e:
        msg = str(e)
        if "no value for" in msg:
            msg = msg.split(" (give it")[0] + (": pass X= (the training inputs, for kappa and so G, L), kappa=, "
                                               "or constants={...}")
            raise ValueError(msg) from None
        raise


def _bounds_list(bound) -> list:
    return list(bound) if isinstance(bound, (list, tuple)) else [bound]


def judge(data, bound, *, x: str | None = None, measure: str | None = None, var: str | None = None,
          gamma: float | None = None, X=None, kappa: float | None = None, constants: dict | None = None,
          rate: bool = False, tol: float = 0.0, quantity: str | None = None, tag: str | None = None,
          name: str | None = None):
    """The verdict of ``bound`` on the run(s) ``data`` (module docstring): a ``stabsim.judging.rules.Verdict``
    (``verdict``, ``worst_margin``, ``tightness_min`` / ``tightness_max``, ``summary()``,
    ``to_row()``), or a list of them when ``bound`` is a list.

    data      a ``run_twin`` Dataset (a curve along t), or a sweep (a list of them, or a Dataset with
              a swept dim ``x``).
    bound     a registry key, a ``Bound`` or a function of the paper's symbols (``t, n, eta, G, ...``).
    measure   the estimator of ``stabsim.engine.measures`` (default: the bound's quantity); ``var``, ``gamma``
              its arguments.
    X, kappa  the training inputs (kappa = their largest row norm) or kappa itself, for G and L.
    constants other values by symbol, e.g. ``{"B": 2.0}``.
    rate      on a sweep: compare the log-log slope in x with the bound's exponent (``check_rate``
              with tolerance ``tol``) instead of the bound's values.
    quantity, tag, name   for a function: the quantity it bounds (default ``uas_mean``), its tag
              (default EXPLICIT) and its label (default the function's name).
    """
    many = isinstance(bound, (list, tuple))
    j = _evaluate(data, _bounds_list(bound), x=x, measure=measure, var=var, gamma=gamma, X=X, kappa=kappa,
                  constants=constants, rate=rate, tol=tol, quantity=quantity, tag=tag, name=name)
    return j.verdicts if many else j.verdicts[0]


def overlay_figure(data, bound, *, x: str | None = None, measure: str | None = None, var: str | None = None,
                   gamma: float | None = None, X=None, kappa: float | None = None, constants: dict | None = None,
                   rate: bool = False, tol: float = 0.0, quantity: str | None = None, tag: str | None = None,
                   name: str | None = None, title: str | None = None, path=None):
    """The figure of ``judge``'s comparison (same arguments): the measured curve with its CI band and
    the bound(s), each labelled with its verdict (``stabsim.judging.plots.plot_bound_overlay``); on a sweep
    one figure across x (with ``rate=True`` or a RATE entry: the replicate means, the fitted log-log
    line and the exponent, ``stabsim.judging.plots.plot_rate_fit``).  ``path`` saves a PNG there.
    Returns a matplotlib Figure."""
    from stabsim.judging.plots import bound_name, plot_bound_overlay, plot_rate_fit

    j = _evaluate(data, _bounds_list(bound), x=x, measure=measure, var=var, gamma=gamma, X=X, kappa=kappa,
                  constants=constants, rate=rate, tol=tol, quantity=quantity, tag=tag, name=name)
    setting = _setting(data if isinstance(data, xr.Dataset) else data[0], j.x)
    if j.y_reps is not None:
        v = j.verdicts[0]
        b = j.curves[0][0]
        head = bound_name(b)
        return plot_rate_fit(j.fit_x, v.details, v, y_reps=j.y_reps, quantity=j.measure.attrs.get("quantity", ""),
                             xname=j.x, title=title if title is not None else f"{head}: rate in {j.x}, {setting}",
                             path=path)
    curves = [(b, vb) for b, vb in j.curves]
    return plot_bound_overlay(j.measure, curves, verdicts=j.verdicts, x=j.x, title=title,
                              setting=setting, path=path)


def _setting(ds: xr.Dataset, x: str) -> str:
    """The run's algorithm, loss and fixed parameters for a title (the swept one left out)."""
    a = ds.attrs
    parts = [str(a[k]) for k in ("algorithm", "loss") if a.get(k)]
    parts += [f"{k}={a[k]}" for k in ("n", "eta", "T") if k != x and a.get(k) is not None]
    return ", ".join(parts)
