"""The measured side of the overlay check: a statistic of a formula over a study's data.

Instead of a named measure of ``stabsim.engine.measures``, a study may describe its measure in the
``[check]`` section::

    [check]
    value = "F_out - FS_out"          # per replicate: a formula over the data's variables
    statistic = "mean"                # mean (Student t CI) | quantile (order statistics) | max
    quantile = 0.9                    # the level p of statistic = "quantile" (default 1 - gamma or
                                      # 1 - delta of [check] / [bounds])
    widen = "2 * mean_all(F_out_se)"  # widen the CI (both ends) by this: an estimation error shared
                                      # by all replicates (e.g. a test-sample SE)
    shift = "max_all(erm_certificate)"  # the quantity lies in [measured, measured + shift] (e.g. an
                                      # ERM certificate: the bound is on F_S(w) - min F_S): added to
                                      # the estimate and the CI upper end
    quantity = "gen_gap"              # default: the first bound's registered quantity
    constants = {dist_sq = "max_all(wS_dist0_sq)", B = "1 + margin_range"}

Formulas go through the restricted evaluator of ``stabsim.theory.custom_bounds`` (never ``eval``):
numbers, names, ``+ - * / **``, the elementwise functions of ``custom_bounds.FUNCTIONS`` and the
reductions of ``stabsim.registry.formulas`` (where a study's formulas are compiled at parse time).  In ``value`` a name is a data variable or coordinate of the cell (an xarray
DataArray, so the arithmetic keeps its dims), a numeric attribute of the data set, a cell value
(``n``, ``eta``, ``T``, ``G``, ``L``, ``kappa``, ``radius``, ``D``, ``margin_range``, ...) or a
constant; a constant shadows a cell value, which shadows a data variable of the same name.  A
constant may be a number, a scalar formula or a formula that varies along x.

``mean_lower(v)`` / ``mean_upper(v)`` give the ends of the 95 % CI of the replicate mean of v
at each coordinate (e.g. a data-dependent bound evaluated conservatively at the lower end).

``variants = [{label = "w_priv", var = "dist_output"}, {label = "iterate", var = "dist_iterate"}]``
repeats the comparison per variant (each may set ``var``, ``measure``, ``value``, ``statistic``),
one verdict row per variant, labelled by it.

Statistics (all over the replicate axis, per coordinate x):

``mean``      ``stabsim.engine.measures.mean_ci`` (Student t, 95 %);
``quantile``  the empirical p-quantile X_(ceil(R p)) with the distribution-free order-statistic
              CI (``measures.order_statistic_ci_indices``; an end beyond the sample is -inf/+inf);
``max``       the maximum over replicates, for deterministic statements that every run must
              satisfy (no CI: estimate = lower = upper, level 1).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from stabsim.theory.custom_bounds import ExprError
from stabsim.engine.measures import REPLICATE, mean_ci, quantile_ci
from stabsim.registry.formulas import STATISTICS, compile_formula


def evaluate(text: str, env: dict, where: str):
    """Evaluate a ``[check]`` formula over ``env`` (DataArrays, arrays or numbers)."""
    f = compile_formula(text, where)
    missing = [n for n in f.names if n not in env]
    if missing:
        known = sorted(k for k in env if not k.startswith("_"))
        raise ExprError(f"[check] {where} = {text!r}: unknown name {missing[0]!r}; the cell has: {', '.join(known)}")
    return f.on_arrays(env)


def data_env(sub: xr.Dataset) -> dict:
    """The cell's data variables and coordinates by name."""
    env = {k: sub[k] for k in sub.coords}
    env.update({k: sub[k] for k in sub.data_vars})
    return env


def _maximum(values: xr.DataArray) -> xr.Dataset:
    worst = values.max(REPLICATE)
    out = xr.Dataset({"estimate": worst, "lower": worst, "upper": worst})
    out.attrs.update(n_replicates=int(values.sizes[REPLICATE]), level=1.0,
                     ci_method="none: the maximum over replicates (a statement every run must satisfy)")
    return out


def statistic_measure(cfg: dict, sub: xr.Dataset, env: dict, x: str) -> xr.Dataset:
    """The measure of ``cfg`` (``value``, ``statistic``, ``quantile``, ``widen``, ``shift``,
    ``quantity``) on one cell; ``env`` holds the cell's constants besides its data."""
    values = evaluate(cfg["value"], {**data_env(sub), **env}, "value")
    if not isinstance(values, xr.DataArray) or REPLICATE not in values.dims:
        raise ValueError(f"[check] value = {cfg['value']!r} has no replicate axis: name at least one "
                         f"per-replicate variable ({', '.join(v for v in sub.data_vars if REPLICATE in sub[v].dims)})")
    stat = cfg.get("statistic") or "mean"
    if stat == "mean":
        m = mean_ci(values)
    elif stat == "quantile":
        if cfg.get("quantile") is None:
            raise ValueError("[check] statistic = \"quantile\" needs a level: quantile = p, or gamma / delta "
                             "([check] or [bounds]) for p = 1 - gamma")
        m = quantile_ci(values.transpose(REPLICATE, x), float(cfg["quantile"]))
    elif stat == "max":
        m = _maximum(values)
    else:
        raise ValueError(f"[check] statistic = {stat!r}: allowed {', '.join(STATISTICS)}")
    full_env = {**data_env(sub), **env}
    if cfg.get("widen"):
        w = _along(evaluate(cfg["widen"], full_env, "widen"), x)
        m["upper"] = m["upper"] + w
        m["lower"] = m["lower"] - w
    if cfg.get("shift"):
        # the quantity lies in [measured, measured + shift] (e.g. F_S(w) - F_S(w_hat) with w_hat an
        # ERM certified to within the shift): the estimate and the upper end move, the lower end stays
        s = _along(evaluate(cfg["shift"], full_env, "shift"), x)
        if np.any(np.asarray(s) < 0):
            raise ValueError(f"[check] shift = {cfg['shift']!r} is negative somewhere; it is an amount the "
                             "quantity may exceed the measured one by (>= 0)")
        for v in ("estimate", "upper"):
            m[v] = m[v] + s
    m.attrs.update(quantity=cfg.get("quantity") or "value",
                   note=f"{stat} over replicates of {cfg['value']}"
                        + (f", CI widened by {cfg['widen']}" if cfg.get("widen") else "")
                        + (f", shifted by {cfg['shift']}" if cfg.get("shift") else ""))
    return m


def _along(v, x: str):
    """A widen/shift value as a number, or as an array along x (a DataArray keeps its own dims)."""
    if isinstance(v, xr.DataArray):
        extra = [d for d in v.dims if d != x]
        if extra:
            raise ValueError(f"[check] widen/shift must be a number or vary along {x!r} only, got dims {list(v.dims)}")
        return v
    return v if np.isscalar(v) else xr.DataArray(np.asarray(v, dtype=float), dims=(x,))


def check_constants(cfg: dict, sub: xr.Dataset, env: dict, x: str) -> dict:
    """``[check] constants``: numbers as given, formulas evaluated on the cell.  A name resolves to
    an earlier constant first, then a cell value (``n``, ``eta``, ``G``, ...; numeric attributes),
    then a data variable.  A formula must give a number or vary along ``x`` only: a per-replicate
    result is refused (reduce it, e.g. ``max_all(...)``) rather than paired with x by position."""
    out = {}
    for name, v in (cfg.get("constants") or {}).items():
        if not isinstance(v, str):
            out[name] = float(v)
            continue
        r = evaluate(v, {**data_env(sub), **env, **out}, f"constants.{name}")
        if isinstance(r, xr.DataArray):
            extra = [d for d in r.dims if d != x]
            if extra:
                raise ValueError(f"[check] constants.{name} = {v!r} varies along {extra} (allowed: a number, or "
                                 f"varying along x = {x!r} only); reduce it, e.g. max_all(...) or mean_lower(...)")
            r = r.transpose(*r.dims).values.astype(float)
        r = np.asarray(r, dtype=float)
        out[name] = float(r) if r.ndim == 0 else r
    return out
