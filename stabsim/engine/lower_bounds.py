"""Lower-bound instances: data sets and neighbours built to make the stability of an algorithm large.

A stability bound is an upper bound on a supremum over neighbouring data sets (S, S').  The
searched (``stabsim.engine.neighbour_search``) and hand-picked neighbours are lower estimates of that supremum on
*one* given S; a lower-bound instance is a pair (S, S') constructed from a proof idea so that the
divergence provably grows at a known rate.  ``bfgt_instance`` is the first: the mechanism of the
non-smooth lower bound of Bassily, Feldman, Guzmán & Talwar (2020), "Stability of stochastic
gradient descent on nonsmooth convex losses" (NeurIPS 2020), adapted to the pairwise AUC hinge loss
and P1 Algorithm 1 (Yang et al. 2021, SGD that pairs i_t with i_{t-1}).  Each instance is a
``LowerBoundInstance`` whose ``run`` feeds ``stabsim.run_twin`` and whose ``expected`` gives the
predicted growth (an event model of the construction, independent of the twin kernel).

>>> from stabsim.engine.lower_bounds import bfgt_instance
>>> inst = bfgt_instance(n=200, eta=0.1)
>>> ds = inst.run(T=2000, replicates=64, seed=1, checkpoints=[500, 1000, 2000])
>>> ds["dist_iterate"].mean("replicate")       # ~ eta * c * sqrt(rho * (t - tbar))
>>> inst.expected([500, 1000, 2000])["iterate"]  # the event model's prediction
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["LowerBoundInstance", "bfgt_instance", "INSTANCES", "get_instance"]


@dataclass(frozen=True)
class LowerBoundInstance:
    """A data set S = (X, y), its neighbour S' (``neighbour`` = (k, x', y'): z_k replaced by
    (x', y')) and the algorithm settings (``run_kwargs``: algorithm, loss, constraint, eta, w0)
    under which the divergence E||A_t(S) - A_t(S')|| grows like ``exponent`` in t.

    G, kappa      the loss's Lipschitz constant sup ||x - x'|| over the +/- pairs of S and S',
                  and sup ||x|| over both (the constants a bound is evaluated with).
    fit_from, fit_to  the t-window where the growth law holds (after the onset, before the
                  construction's pieces run out); the exponent is meant to be fitted there.
    rate          the leading-order law, in words.
    """

    name: str
    X: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    neighbour: tuple = field(repr=False)
    run_kwargs: dict = field(repr=False)
    G: float
    kappa: float
    exponent: float
    fit_from: int
    fit_to: int
    rate: str
    reference: str
    params: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def eta(self) -> float:
        return float(self.run_kwargs["eta"])

    def run(self, *, T: int, replicates, seed: int = 0, checkpoints=None, **kw):
        """``stabsim.run_twin`` on (S, S') with the instance's settings (``kw`` overrides them)."""
        from stabsim.engine.twin_runs import run_twin

        args = dict(self.run_kwargs, T=T, replicates=replicates, seed=seed, neighbour=self.neighbour,
                    checkpoints=checkpoints, progress=False)
        args.update(kw)
        return run_twin(self.X, self.y, **args)

    def expected(self, t, *, samples: int = 4000, seed: int = 0) -> dict:
        """The predicted E||w_t - w'_t|| (``iterate``) and E||A_t(S) - A_t(S')|| (``output``,
        P1's eta-weighted average of w_{j-2}) at the steps ``t``, with Monte-Carlo standard errors
        (``iterate_se``, ``output_se``), from the instance's event model over ``samples`` index
        sequences (numpy's generator, not the kernel's)."""
        model = _MODELS[self.name]
        return model(self, np.asarray(t, dtype=np.int64), int(samples), int(seed))


# ---- BFGT (2020), adapted to the pairwise AUC hinge and P1 Algorithm 1 ------------------------------

def bfgt_instance(n: int = 200, *, hubs: int = 1, eta: float = 0.1, c: float = 1.0,
                  tie_break: float = 1.0 / 64) -> LowerBoundInstance:
    r"""The non-smooth lower-bound instance: orthogonal hinge kinks tied at w_0, broken on S' only.

    The mechanism of Bassily, Feldman, Guzmán, Talwar (2020) for non-smooth convex losses: at a
    point where many pieces of a piecewise-linear loss tie, a subgradient step is decided by the tie
    break; a one-example perturbation breaks the ties differently on S', after which every step on
    S' takes a *new* piece whose subgradient is orthogonal to all earlier differences, while S takes
    none.  The differences add up in quadrature: ||w_t - w'_t|| = eta G sqrt(#pieces taken), i.e.
    the eta sqrt(t) term of the upper bounds cannot be removed for non-smooth losses.

    Construction (d = M = n - hubs - 1 coordinates, AUC hinge f(w; z, z') = (1 - w.(x - x'))_+ for
    y = +1, y' = -1):

    * M "spokes": x_j = -c e_j, label -1 (j = 1..M); ``hubs`` positives at x = 0 and the replaced
      example k, also a positive at 0 in S.  A hub-spoke pair has margin c w_j and subgradient
      -c e_j: M pieces with orthogonal subgradients, one per coordinate.
    * Initial point w_0 = (1 + tau)/c (1, ..., 1) (P1 Alg. 1 initialises w_0 in W; here W = R^d):
      every hub-spoke margin is 1 + tau, just past the kink, so on S no pair is active and
      w_t = w_0 for ever (tau > 0: the tie does not rest on the kernel's subgradient choice at m = 1).
    * S': x'_k = eps u with u = -(1, ..., 1)/sqrt(M), eps = ``tie_break`` c / sqrt(M).  The pair
      (k, spoke j) has margin c w_j + eps u.w < 1, so on S' it is active: its step moves w'_j past
      the kink *and* lowers every other spoke's margin by delta = eta eps c / sqrt(M) > tau (the
      tie break).  From then on every hub-spoke pair on a fresh spoke is active on S' (margin
      1 + tau - m delta < 1) and inactive on S: S' takes the piece, S does not, and the spoke is
      spent (margin + eta c^2 > 1; ``eta c^2 >= 1/32`` keeps it past the kink for the whole run).

    Exactly (module tests): w'_t - w_t = eta (c 1_{spent} + m eps u), m = number of k-steps, so
    ||w_t - w'_t||^2 = eta^2 (c^2 N_t - 2 c eps m N_t / sqrt(M) + eps^2 m^2), N_t = spent spokes.

    Expected growth.  A step's pair (i_t, i_{t-1}) is (positive, spoke) with probability
    rho = 2 (hubs + 1) M / n^2 and involves k with probability 2 M / n^2, so the first k-step comes
    after tbar = n^2 / (2 M) steps on average (geometric), and then N_t grows at rate rho until the
    M spokes run out (coupon collector, after ~M / rho = n^2 / (2 (hubs + 1)) steps):

        E||w_t - w'_t|| ~ eta c sqrt(rho (t - tbar)),   E||A_t(S) - A_t(S')|| ~ eta c sqrt(rho t / 3)

    for tbar << t << n^2 / (2 (hubs + 1)): exponent 1/2 in t, and G = c exactly (the k-spoke pairs
    have ||eps u + c e_j|| < c).  ``fit_from`` = 10 tbar, ``fit_to`` = n^2 / (8 (hubs + 1)).  On a
    finite window the exact expected curve (``expected``) departs from t^{1/2}: the onset makes the
    local exponent t / (2 (t - tbar)) for the iterates and, since P1's output averages w_{j-2} from
    j = 1, about 3 t / (2 (t - tbar)) - 1 for the output (0.58 at t = 10 tbar, 0.53 at 30 tbar), and
    the spent spokes pull it down near ``fit_to``.  On [10 tbar, fit_to] the two effects cancel for
    the iterates (the event model's slope is 0.50-0.51 there), so the check compares the iterates'
    exponent with 1/2 and reports the output's beside its event model's.

    What is adapted, and what is not.
    * Kept: the tie-at-a-kink mechanism, orthogonal pieces, a single replaced example as the tie
      breaker, growth in quadrature with exponent 1/2, the coupling (same indices on S and S').
    * BFGT's pieces are the coordinates of *one* loss max_k(...) in dimension d >= T, so every step
      takes a new piece.  A pairwise linear loss has one kink per pair and its subgradients lie in the
      span of the n data points, so here (i) the pieces are the M <= n hub-spoke pairs, (ii) only the
      fraction rho of steps draws one, and the amplitude is eta c sqrt(rho t) rather than eta G sqrt(t)
      (rho <= 1/2: P1's pair (i_t, i_{t-1}) is a +/- pair at most half the time), and (iii) the law
      holds only until t ~ n^2 / (2 (hubs + 1)), when the spokes are spent (saturation at eta c sqrt(M)).
    * The onset: the replaced example is drawn at rate 2 M / n^2, so E||A_t(S) - A_t(S')|| grows like
      t^{3/2} for t << tbar (BFGT's min{1, T/n} factor for sampling with replacement).
    * The initial point is the tie point, not 0 (P1 Alg. 1 allows any w_0 in W, and Thm 4's proof uses
      only w_0 = w'_0); W = R^d (no projection), as P1 Thm 4 allows.
    """
    n, hubs = int(n), int(hubs)
    if hubs < 1:
        raise ValueError(f"hubs must be >= 1, got {hubs}")
    M = n - hubs - 1
    if M < 2:
        raise ValueError(f"n = {n} leaves {M} spokes for {hubs} hub(s) and the replaced example: "
                         "use n >= hubs + 3")
    eta, c, tb = float(eta), float(c), float(tie_break)
    if not (c > 0 and math.isfinite(c)):
        raise ValueError(f"c (the spoke length, = G) must be finite and > 0, got {c!r}")
    if not 0 < tb <= 1 / 16:
        raise ValueError(f"tie_break must lie in (0, 1/16], got {tb!r}")
    if not (eta * c * c >= 2 * tb and math.isfinite(eta)):
        raise ValueError(f"eta c^2 = {eta * c * c:.3g} must be >= 2 tie_break = {2 * tb:.3g}: a spent spoke "
                         "must stay past its kink while S' keeps moving (raise eta or c)")
    eps = tb * c / math.sqrt(M)
    delta = eta * eps * c / math.sqrt(M)  # the tie break: margin drop of a fresh spoke per k-step
    tau = delta / 16                       # S sits tau past the kink
    X = np.zeros((n, M))
    X[:M] = -c * np.eye(M)
    y = np.ones(n)
    y[:M] = -1.0
    k = n - 1
    u = -np.ones(M) / math.sqrt(M)
    w0 = np.full(M, (1.0 + tau) / c)
    rho = 2.0 * (hubs + 1) * M / n ** 2
    tbar = n ** 2 / (2.0 * M)
    fit_from = int(math.ceil(10 * tbar))
    fit_to = int(n ** 2 / (8 * (hubs + 1)))
    return LowerBoundInstance(
        name="bfgt", X=X, y=y, neighbour=(k, eps * u, 1.0),
        run_kwargs=dict(algorithm="p1_alg1", loss="auc_hinge", constraint="none", eta=eta, w0=w0),
        G=c, kappa=c, exponent=0.5, fit_from=fit_from, fit_to=max(fit_to, fit_from),
        rate=(f"E||w_t - w'_t|| ~ eta c sqrt(rho (t - tbar)), E||A_t - A'_t|| ~ eta c sqrt(rho t / 3), "
              f"rho = {rho:.4g}, tbar = {tbar:.4g}, for tbar << t << {n ** 2 / (2 * (hubs + 1)):.4g}"),
        reference="Bassily, Feldman, Guzman, Talwar (NeurIPS 2020), non-smooth lower bound mechanism; "
                  "adapted to the AUC hinge and P1 Algorithm 1 (stabsim.engine.lower_bounds.bfgt_instance)",
        params=dict(n=n, hubs=hubs, M=M, eta=eta, c=c, eps=eps, tau=tau, delta=delta, rho=rho, tbar=tbar))


def _bfgt_model(inst: LowerBoundInstance, t: np.ndarray, samples: int, seed: int) -> dict:
    """Event model of ``bfgt_instance`` (its docstring): i_0, i_1, ... uniform on [n]; the pair of
    step s is (i_s, i_{s-1}); a (positive, fresh spoke) pair is taken on S' iff the positive is k or
    k has been taken before.  With sigma_j the step spoke j is taken and the k-steps at sigma:
    w'_s - w_s = eta (c sum_{sigma_j <= s} e_j + eps m_s u), and P1's output (1/s) sum_{r=1}^s w_{r-2}
    holds spoke j with weight (s - 1 - sigma_j)_+ / s and u with eps sum_sigma (s - 1 - sigma)_+ / s."""
    p = inst.params
    n, M, eta, c, eps = p["n"], p["M"], p["eta"], p["c"], p["eps"]
    k = n - 1
    if t.size == 0 or t.min() < 1:
        raise ValueError("expected: t must be steps >= 1")
    rs = np.random.default_rng([seed, 15])
    R, rows = samples, np.arange(samples)
    when = np.full((R, M), np.inf)   # step at which S' took spoke j
    m = np.zeros(R)                  # k-steps so far, and the sum of their steps
    msum = np.zeros(R)
    started = np.zeros(R, dtype=bool)
    prev = rs.integers(0, n, R)
    want = {int(v): i for i, v in enumerate(t)}
    it, out = np.zeros((R, t.size)), np.zeros((R, t.size))
    cross = -2.0 * c * eps / math.sqrt(M)  # 2 (c e_j) . (eps u) per spoke and k-step
    for s in range(1, int(t.max()) + 1):
        if s in want:  # the output at s only holds w_{s-2} and earlier: evaluate before step s
            i = want[s]
            a = c * np.clip(s - 1 - when, 0, None) / s
            b = eps * (m * (s - 1) - msum) / s
            au = -a.sum(1) / math.sqrt(M)
            out[:, i] = eta * np.sqrt(np.maximum((a * a).sum(1) + 2 * b * au + b * b, 0.0))
        cur = rs.integers(0, n, R)
        hi, lo = np.maximum(cur, prev), np.minimum(cur, prev)  # a positive (>= M) and a spoke (< M)
        pair = (hi >= M) & (lo < M)
        j = np.where(pair, lo, 0)
        is_k = hi == k
        take = pair & np.isinf(when[rows, j]) & (is_k | started)
        when[rows[take], j[take]] = s
        kt = take & is_k
        m += kt
        msum += np.where(kt, s, 0)
        started |= kt
        prev = cur
        if s in want:
            N = np.isfinite(when).sum(1)
            it[:, want[s]] = eta * np.sqrt(np.maximum(c * c * N + cross * m * N + eps * eps * m * m, 0.0))
    se = lambda v: v.std(0, ddof=1) / math.sqrt(R)  # noqa: E731
    return {"t": t, "iterate": it.mean(0), "iterate_se": se(it), "output": out.mean(0), "output_se": se(out)}


_MODELS = {"bfgt": _bfgt_model}

#: name -> constructor of the lower-bound instances (``[lower_bound] instance`` in p1_tightness studies)
INSTANCES = {"bfgt": bfgt_instance}


def get_instance(name: str, **kw) -> LowerBoundInstance:
    """The lower-bound instance ``name`` built with ``kw``."""
    if name not in INSTANCES:
        raise ValueError(f"unknown lower-bound instance {name!r}; allowed: {', '.join(INSTANCES)}")
    return INSTANCES[name](**kw)
