"""Adversarial neighbour search: the worst replacement z' = (x', y') found for a data set S.

Uniform argument stability is a supremum over neighbouring pairs (S, S').  The studies
estimate it with hand-picked neighbours ("flip", "farthest"); ``worst_neighbour`` instead
*maximises* the stability measure over the replaced index k, the label y' and the point x'
in a domain, and reports the found neighbour's value on fresh replicates.

Method
------
* **Common random numbers.**  Every candidate (k, x', y') is run with the same replicate ids
  ``0 .. replicates-1`` (``run_twin`` draws every random number from (seed, replicate id,
  stream, counter)), so the objective is a deterministic function of (k, x', y'): the search
  compares candidates on identical index sequences and never chases Monte-Carlo noise.
* **Enumeration over k and y'** (k = "all" or a list; y' in ``labels``), and a derivative-free
  optimiser over x' for each (k, y').  Optionally (``screen``) every (k, y') is first scored at a
  few probe points and only the best ``screen`` pairs are optimised.
* **Optimiser: differential evolution** (``scipy.optimize.differential_evolution``, fixed seed,
  ``polish=False``; the default).  Why: the objective is piecewise smooth at best -- the hinge's
  kink and the projection onto the constraint set make it non-differentiable, with flat pieces
  (a hinge that is inactive along the whole run) and several local maxima (different sets of
  active pairs) -- so gradient or finite-difference methods stall, and L-BFGS-B polishing would
  spend evaluations on meaningless finite differences (hence polish off).  DE is global,
  bound-constrained, derivative-free and deterministic for a fixed seed; its population covers
  the box before it contracts.  ``optimizer="nelder-mead"``: restarts of Nelder-Mead from
  seeded starting points (cheaper per restart, local, for smooth-ish objectives).
* **Domains.**  ``("box", lo, hi)`` is searched directly; ``("ball", R)`` through the radial
  cube-to-ball map v in [-1, 1]^d -> R v ||v||_inf / ||v||_2 (onto, continuous, every ray of the
  cube scaled to the sphere); ``"support"`` is the ball of radius max_i ||x_i|| (the smallest
  centred ball holding the data, so kappa = sup ||x|| is not increased).
* **Bounded cost.**  ``max_evals`` caps the number of objective evaluations (one ``run_twin``
  call each); the optimiser's iteration budget per (k, y') is derived from it.
* **Winner's curse.**  The maximum of the in-sample objective is biased upwards (it was chosen
  because it was large on *those* replicates).  The found (k, x', y') is therefore re-evaluated
  on a disjoint set of fresh replicate ids (``fresh_start`` = 10**6 onwards) with a CI
  (``mean_ci``; for a quantile measure the distribution-free order-statistic CI): the fresh
  lower CI end is a valid lower estimate of the supremum at that confidence, because the found
  neighbour is one fixed neighbouring pair, chosen independently of the fresh replicates.  The
  hand-picked neighbours "flip" and "farthest" (k drawn per replicate, as in the studies) are
  evaluated on the same fresh ids for comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

__all__ = ["SearchResult", "worst_neighbour", "evaluate_neighbour", "domain_map", "FRESH_START"]

#: first replicate id of the fresh (held-out) evaluation: disjoint from the search's 0..R-1.
FRESH_START = 10 ** 6


@dataclass
class SearchResult:
    """Outcome of ``worst_neighbour``.

    k, x, y        the found neighbour (replace example k by (x, y)); ``neighbour`` gives the
                   ``run_twin`` tuple.
    in_sample      the objective at the found neighbour on the search replicates (biased upwards).
    fresh          the measure at t on the fresh replicate ids: Dataset ``estimate``, ``lower``,
                   ``upper`` (+ ``se`` for means).  ``fresh["lower"]`` is the lower estimate of
                   the supremum at the CI's one-sided level.
    baselines      {"flip": Dataset, "farthest": Dataset} on the same fresh ids.
    per_pair       {(k, y'): (best value, x')} over the pairs optimised (in-sample).
    n_evals        objective evaluations spent; ``measure``, ``t``, ``domain``, ``optimizer``,
                   ``seed``, ``search_ids``, ``fresh_ids``: what was done.
    """

    k: int
    x: np.ndarray
    y: float
    in_sample: float
    fresh: xr.Dataset
    baselines: dict
    per_pair: dict
    n_evals: int
    measure: object
    t: int
    domain: object
    optimizer: str
    seed: int
    search_ids: np.ndarray = field(repr=False)
    fresh_ids: np.ndarray = field(repr=False)

    @property
    def neighbour(self) -> tuple:
        return (self.k, np.asarray(self.x, float), float(self.y))

    @property
    def value(self) -> float:
        """Fresh-replicate estimate of the measure at the found neighbour."""
        return float(self.fresh["estimate"])

    @property
    def lower(self) -> float:
        """Fresh-replicate lower CI end: a lower estimate of the supremum."""
        return float(self.fresh["lower"])

    def summary(self) -> str:
        b = ", ".join(f"{name} {float(ds['estimate']):.4g}" for name, ds in self.baselines.items())
        return (f"worst neighbour k={self.k}, y'={self.y:+g}, x'={np.round(self.x, 4).tolist()}: "
                f"in-sample {self.in_sample:.4g}, fresh {self.value:.4g} "
                f"[{float(self.fresh['lower']):.4g}, {float(self.fresh['upper']):.4g}]; {b}; "
                f"{self.n_evals} evaluations ({self.optimizer})")


# ---- domain -------------------------------------------------------------------------------------

def domain_map(domain, X):
    """(lo, hi, to_x): the search box and the map from it to x' in the domain."""
    X = np.asarray(X, float)
    d = X.shape[-1]
    if isinstance(domain, str):
        if domain != "support":
            raise ValueError(f"domain={domain!r}: use ('ball', R), ('box', lo, hi) or 'support'")
        domain = ("ball", float(np.sqrt((X.reshape(-1, d) ** 2).sum(1)).max()))
    kind = domain[0]
    if kind == "box":
        lo = np.broadcast_to(np.asarray(domain[1], float), (d,)).copy()
        hi = np.broadcast_to(np.asarray(domain[2], float), (d,)).copy()
        if np.any(hi <= lo):
            raise ValueError("box domain needs lo < hi in every coordinate")
        return lo, hi, lambda v: np.clip(np.asarray(v, float), lo, hi)
    if kind == "ball":
        R = float(domain[1])
        if not R > 0:
            raise ValueError("ball domain needs a radius R > 0")

        def to_x(v):
            v = np.clip(np.asarray(v, float), -1.0, 1.0)
            n2 = float(np.sqrt((v ** 2).sum()))
            return np.zeros(d) if n2 == 0 else R * v * (np.abs(v).max() / n2)
        return -np.ones(d), np.ones(d), to_x
    raise ValueError(f"domain={domain!r}: use ('ball', R), ('box', lo, hi) or 'support'")


def _to_box(x, domain, X):
    """Inverse of ``domain_map``'s map (for probe points given as x')."""
    x = np.asarray(x, float)
    if isinstance(domain, str) or domain[0] == "ball":
        R = float(np.sqrt((np.asarray(X, float).reshape(-1, x.size) ** 2).sum(1)).max()) \
            if isinstance(domain, str) else float(domain[1])
        n2 = float(np.sqrt((x ** 2).sum()))
        if n2 == 0:
            return np.zeros_like(x)
        x = x * min(1.0, R / n2)
        return x / R * (float(np.sqrt((x ** 2).sum())) / np.abs(x).max())
    lo, hi, _ = domain_map(domain, X)
    return np.clip(x, lo, hi)


# ---- measures -----------------------------------------------------------------------------------

def _parse_measure(measure, t, T):
    if measure == "mean":
        return "dist_output", None, int(T if t is None else t)
    if isinstance(measure, (tuple, list)) and len(measure) == 2:
        if measure[0] == "quantile":
            g = float(measure[1])
            if not 0 < g < 1:
                raise ValueError("measure ('quantile', gamma) needs gamma in (0, 1)")
            return "dist_output", g, int(T if t is None else t)
        if measure[0] == "iterate":
            return "dist_iterate", None, int(measure[1])
    raise ValueError(f"measure={measure!r}: use 'mean', ('quantile', gamma) or ('iterate', t)")


def _stat(values, gamma):
    if gamma is None:
        return float(np.mean(values))
    from stabsim.engine.measures import empirical_quantile_index

    v = np.sort(np.asarray(values, float))
    return float(v[empirical_quantile_index(v.size, 1 - gamma) - 1])


def _ci(per_rep: xr.DataArray, gamma, level):
    from stabsim.engine.measures import mean_ci, uas_quantile

    if gamma is None:
        return mean_ci(per_rep, level=level)
    return uas_quantile(per_rep, gamma, level=level)


def evaluate_neighbour(X, y, neighbour, *, measure="mean", t=None, ids, level=0.95, checkpoints=None,
                       **run_twin_kwargs):
    """The measure of one neighbour on replicate ids ``ids`` with its CI, at t (or at ``checkpoints``).

    Returns (ci Dataset over the t's, the run_twin Dataset)."""
    from stabsim.engine.twin_runs import run_twin

    T = run_twin_kwargs.get("T", 1000)
    var, gamma, tt = _parse_measure(measure, t, T)
    ck = [tt] if checkpoints is None else checkpoints
    ds = run_twin(X, y, replicates=np.asarray(ids, np.int64), neighbour=neighbour, checkpoints=ck,
                  progress=False, **run_twin_kwargs)
    return _ci(ds[var], gamma, level), ds


# ---- search -------------------------------------------------------------------------------------

def worst_neighbour(X, y, *, measure="mean", t=None, domain="support", k="all", labels=(-1, 1),
                    replicates=64, fresh_replicates=256, seed=0, optimizer="de", maxiter=None,
                    max_evals=2000, popsize=8, restarts=4, screen=None, level=0.95,
                    fresh_start=FRESH_START, baselines=("flip", "farthest"), **run_twin_kwargs) -> SearchResult:
    """Maximise a stability measure over neighbours S' = S with z_k replaced by (x', y').

    measure   ``"mean"`` (E ||A_t(S) - A_t(S')||), ``("quantile", gamma)`` (its (1-gamma)-quantile)
              or ``("iterate", t)`` (E ||w_t - w'_t|| at that t).
    t         the step the measure is taken at (default: T).
    domain    ``("ball", R)``, ``("box", lo, hi)`` or ``"support"`` (ball of radius max_i ||x_i||).
    k         ``"all"`` or a list of indices; ``labels``: the labels y' tried.
    replicates  search replicate ids 0..replicates-1 (common random numbers, every candidate).
    fresh_replicates  ids fresh_start .. fresh_start + fresh_replicates - 1 for the reported value
              (0: no fresh evaluation, ``fresh`` is None; the caller must evaluate it itself).
    optimizer ``"de"`` (differential evolution; see the module docstring for why) or
              ``"nelder-mead"`` (``restarts`` seeded restarts).
    maxiter   DE generations / Nelder-Mead iterations per (k, y'); default: from ``max_evals``.
    max_evals hard cap on objective evaluations (one ``run_twin`` call each), over everything.
    screen    None: optimise every (k, y'); an int m: score each (k, y') at probe points (x_k,
              the data points, 0) and optimise only the best m pairs.
    **run_twin_kwargs  passed to ``run_twin`` (algorithm, loss, constraint, eta, T, ...).
    """
    X = np.asarray(X, float)
    y = np.asarray(y, float)
    var, gamma, tt, ks, labels, search_ids, fresh_ids = _validate_search(
        X, y, measure, t, k, labels, replicates, fresh_replicates, fresh_start, run_twin_kwargs)
    lo, hi, to_x = domain_map(domain, X)
    seed = int(seed)
    s = _Search(X, y, to_x, search_ids, seed, tt, var, gamma, int(max_evals), run_twin_kwargs)
    pairs = [(kk, yy) for kk in ks for yy in labels]
    if screen is not None:
        pairs = s.screen(pairs, domain, int(screen))
    n_pairs = len(pairs)
    per_pair_budget = max(1, s.budget["left"] // max(n_pairs, 1))
    d = X.shape[1]
    pop = max(5, int(popsize)) * d if d > 0 else 5
    for j, (kk, yy) in enumerate(pairs):
        if s.budget["left"] <= 0:
            break
        try:
            s.optimise_pair(j, kk, yy, optimizer, maxiter, per_pair_budget, pop, restarts, domain, lo, hi)
        except _Budget:
            pass
        s.absorb_cache(kk, yy)
    if s.best["k"] is None:
        raise ValueError("max_evals too small: no candidate was evaluated")
    return _search_result(s, X, y, measure, tt, domain, optimizer, seed, search_ids, fresh_ids, level,
                          baselines, run_twin_kwargs)


def _validate_search(X, y, measure, t, k, labels, replicates, fresh_replicates, fresh_start,
                     run_twin_kwargs):
    """Checked arguments of ``worst_neighbour``: T (default 1000, set in ``run_twin_kwargs``), the
    measure's variable / quantile / step t, the indices k, the labels y', and the search and fresh
    replicate ids (disjoint)."""
    if X.ndim != 2:
        raise ValueError("worst_neighbour needs one data set X (n, d)")
    n, d = X.shape
    T = run_twin_kwargs.setdefault("T", 1000)
    var, gamma, tt = _parse_measure(measure, t, T)
    if not 1 <= tt <= T:
        raise ValueError(f"t = {tt} must lie in [1, T = {T}]")
    ks = list(range(n)) if isinstance(k, str) and k == "all" else [int(i) for i in k]
    if not ks or min(ks) < 0 or max(ks) >= n:
        raise ValueError(f"k must be 'all' or indices in [0, {n})")
    labels = [float(v) for v in labels]
    search_ids = np.arange(int(replicates), dtype=np.int64)
    fresh_ids = np.arange(int(fresh_start), int(fresh_start) + int(fresh_replicates), dtype=np.int64)
    if fresh_ids.size and fresh_ids[0] < search_ids[-1] + 1:
        raise ValueError("the fresh replicate ids overlap the search ids: raise fresh_start")
    return var, gamma, tt, ks, labels, search_ids, fresh_ids


class _Budget(Exception):
    """The objective evaluation budget ``max_evals`` is spent."""


class _Search:
    """State of one ``worst_neighbour`` search: the cached, budgeted objective (the measure at t
    over the search replicates, common random numbers), the best neighbour so far and the best
    value per (k, y')."""

    def __init__(self, X, y, to_x, search_ids, seed, tt, var, gamma, max_evals, run_twin_kwargs):
        from stabsim.engine.twin_runs import run_twin

        self.X, self.y, self.to_x = X, y, to_x
        self.search_ids, self.seed, self.tt, self.var, self.gamma = search_ids, seed, tt, var, gamma
        self.run_twin, self.run_twin_kwargs = run_twin, run_twin_kwargs
        self.budget = {"left": max_evals, "used": 0}
        self.cache = {}
        self.best = {"val": -math.inf, "k": None, "x": None, "y": None}
        self.per_pair = {}

    def objective(self, kk, yy, v):
        """The measure for the neighbour (k, to_x(v), y') on the search replicates (cached; one
        ``run_twin`` call per new point; raises ``_Budget`` when the budget is spent)."""
        x = self.to_x(v)
        key = (kk, yy, x.tobytes())
        if key in self.cache:
            return self.cache[key]
        if self.budget["left"] <= 0:
            raise _Budget
        self.budget["left"] -= 1
        self.budget["used"] += 1
        rec = self.run_twin(self.X, self.y, replicates=self.search_ids, seed=self.seed,
                            neighbour=(kk, x, yy), checkpoints=[self.tt], progress=False, raw=True,
                            **self.run_twin_kwargs)
        val = _stat(rec.var(self.var)[:, 0], self.gamma)
        self.cache[key] = val
        return val

    def record(self, kk, yy, v, val):
        old = self.per_pair.get((kk, yy))
        if old is None or val > old[0]:
            self.per_pair[(kk, yy)] = (val, self.to_x(v))
        if val > self.best["val"]:
            self.best.update(val=val, k=kk, x=self.to_x(v), y=yy)

    def screen(self, pairs, domain, m):
        """Screening: score every (k, y') at x_k (a flip when y' = -y_k) and at the point
        farthest from x_k; keep the best m pairs."""
        X = self.X
        scores = []
        try:
            for kk, yy in pairs:
                s = -math.inf
                for p in ([X[kk]] + [X[int(np.argmax(((X - X[kk]) ** 2).sum(1)))]]):
                    v = _to_box(p, domain, X)
                    val = self.objective(kk, yy, v)
                    self.record(kk, yy, v, val)
                    s = max(s, val)
                scores.append(s)
        except _Budget:
            scores += [-math.inf] * (len(pairs) - len(scores))
        order = np.argsort(-np.asarray(scores), kind="stable")[:m]
        return [pairs[i] for i in order]

    def optimise_pair(self, j, kk, yy, optimizer, maxiter, per_pair_budget, pop, restarts, domain, lo, hi):
        """Maximise the objective over x' for the j-th pair (k, y'): differential evolution seeded
        with the probe points, or seeded Nelder-Mead restarts (may raise ``_Budget``)."""
        from scipy.optimize import differential_evolution, minimize

        X, seed, d = self.X, self.seed, self.X.shape[1]
        f = lambda v, kk=kk, yy=yy: -self.objective(kk, yy, v)  # noqa: E731
        if optimizer == "de":
            gens = maxiter if maxiter is not None else max(1, per_pair_budget // pop - 1)
            # the initial population holds the probe points x_k and the farthest point
            rs = np.random.default_rng([seed, j])
            init = lo + (hi - lo) * rs.random((pop, d))
            init[0] = _to_box(X[kk], domain, X)
            init[1] = _to_box(X[int(np.argmax(((X - X[kk]) ** 2).sum(1)))], domain, X)
            res = differential_evolution(f, list(zip(lo, hi)), seed=np.random.default_rng([seed, j, 1]),
                                         maxiter=int(gens), popsize=pop, init=init, polish=False,
                                         tol=0, atol=0, updating="immediate")
            self.record(kk, yy, res.x, -res.fun)
        elif optimizer in ("nelder-mead", "nm"):
            rs = np.random.default_rng([seed, j])
            starts = [_to_box(X[kk], domain, X)] + [lo + (hi - lo) * rs.random(d)
                                                     for _ in range(max(0, int(restarts) - 1))]
            it = maxiter if maxiter is not None else max(1, per_pair_budget // max(len(starts), 1))
            for s in starts:
                res = minimize(lambda v: f(np.clip(v, lo, hi)), s, method="Nelder-Mead",
                               options={"maxfev": int(it), "xatol": 1e-6, "fatol": 0.0})
                self.record(kk, yy, np.clip(res.x, lo, hi), -res.fun)
        else:
            raise ValueError(f"optimizer={optimizer!r}: use 'de' or 'nelder-mead'")

    def absorb_cache(self, kk, yy):
        """Every evaluated point of this pair counts (DE's best may be cut by the budget)."""
        for (ck, cy, xb), val in self.cache.items():
            if ck == kk and cy == yy and val > self.per_pair.get((kk, yy), (-math.inf,))[0]:
                xv = np.frombuffer(xb, dtype=float).copy()
                self.per_pair[(kk, yy)] = (val, xv)
                if val > self.best["val"]:
                    self.best.update(val=val, k=kk, x=xv, y=yy)


def _search_result(s, X, y, measure, tt, domain, optimizer, seed, search_ids, fresh_ids, level,
                   baselines, run_twin_kwargs):
    """The ``SearchResult``: the found neighbour re-evaluated on the fresh replicate ids (against
    the winner's curse), with the hand-picked baselines on the same ids."""
    best, per_pair, budget = s.best, s.per_pair, s.budget
    nb = (best["k"], best["x"], best["y"])
    tw = dict(run_twin_kwargs, seed=seed)
    if fresh_ids.size == 0:  # the caller evaluates the found neighbour itself (e.g. a study kind)
        return SearchResult(k=int(best["k"]), x=np.asarray(best["x"], float), y=float(best["y"]),
                            in_sample=float(best["val"]), fresh=None, baselines={}, per_pair=per_pair,
                            n_evals=budget["used"], measure=measure, t=tt, domain=domain, optimizer=optimizer,
                            seed=seed, search_ids=search_ids, fresh_ids=fresh_ids)
    fresh, _ = evaluate_neighbour(X, y, nb, measure=measure, t=tt, ids=fresh_ids, level=level, **tw)
    base = {}
    for name in baselines:
        base[name], _ = evaluate_neighbour(X, y, name, measure=measure, t=tt, ids=fresh_ids, level=level, **tw)
    sq = lambda ds: ds.squeeze(drop=True) if "t" in ds.dims else ds  # noqa: E731
    return SearchResult(k=int(best["k"]), x=np.asarray(best["x"], float), y=float(best["y"]),
                        in_sample=float(best["val"]), fresh=sq(fresh),
                        baselines={n_: sq(v) for n_, v in base.items()}, per_pair=per_pair,
                        n_evals=budget["used"], measure=measure, t=tt, domain=domain, optimizer=optimizer,
                        seed=seed, search_ids=search_ids, fresh_ids=fresh_ids)
