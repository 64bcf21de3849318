"""Synthetic problems with a known population and minimizer, and neighbouring data sets.

Every generator is a pure function of ``(seed, replicate)`` through ``stabsim.engine.rng``
(stream ``STREAM_DATA``), so the data of replicate r are the same wherever r runs.

Problems (``make_problem(name, **params)``):

``auc_separable``  low-noise AUC: x = y*gamma*e_1 + xi, xi uniform in the ball of radius
                   rho in span(e_2..e_d), P(y = 1) = pi.  w* = e_1/(2 gamma) gives
                   w*.(x - x') = 1 for every positive/negative pair, so the hinge and the
                   squared AUC losses have F(w*) = 0 (low noise, P4's F(w*) = 0).
``auc_noisy``      the same geometry with labels flipped with probability ``flip``:
                   F(w*) > 0.  Squared-loss risk and minimiser in closed form from the
                   class-conditional moments.
``p4_lsq``         P4 Sec. 5 least squares: x uniform on the unit sphere, y = x.w* + N(0,kappa^2)
                   conditioned on |y| <= 0.5 (rejection), w* = [.5,.3,0,.1,.2,0,0,0,0,.1].
``p4_logistic``    P4 Sec. 5 logistic: x on the sphere, y = sign(x.w* + N(0,kappa^2)),
                   w* = [5,3,0,.1,.2,0,0,0,0,.1] (the printed p(x) is circular; errata P4-D).
``metric``         metric learning: two classes that differ in the first coordinate,
                   x = y*gamma*e_1 + xi as in ``auc_separable``.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field

import numpy as np

from stabsim.engine import rng

P4_LSQ_WSTAR = np.array([0.5, 0.3, 0, 0.1, 0.2, 0, 0, 0, 0, 0.1])
P4_LOGISTIC_WSTAR = np.array([5, 3, 0, 0.1, 0.2, 0, 0, 0, 0, 0.1])


class _Stream:
    """Sequential draws from one counter-based stream (Python side, vectorised)."""

    def __init__(self, seed, replicate, stream=rng.STREAM_DATA):
        self.key = rng.key(seed, replicate, stream)
        self.pos = 0

    def uniform(self, size):
        out = np.empty(int(np.prod(size)))
        rng.fill(self.key, self.pos, out, False)
        self.pos += out.size
        return out.reshape(size)

    def normal(self, size):
        out = np.empty(int(np.prod(size)))
        rng.fill(self.key, self.pos, out, True)
        self.pos += 2 * out.size  # a normal uses two counters
        return out.reshape(size)


def _ball(st: _Stream, m: int, dim: int, radius: float) -> np.ndarray:
    """m points uniform in the ball of the given radius in R^dim."""
    if dim == 0:
        return np.zeros((m, 0))
    g = st.normal((m, dim))
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    return g * (radius * st.uniform(m) ** (1.0 / dim))[:, None]


@dataclass
class Problem:
    """A data distribution: ``sample(n, seed, replicate) -> (X, y)`` plus what is known of it.

    ``kappa`` = sup ||x||.  ``w_star`` / ``F_star``: population minimiser and minimal risk for
    ``loss_name`` when known (else None).  ``risk(w)``: the closed-form population risk of
    ``loss_name`` when available (else None).
    """

    name: str
    d: int
    kappa: float
    params: dict
    loss_name: str
    w_star: np.ndarray | None = None
    F_star: float | None = None
    notes: str = ""
    _risk: object = field(default=None, repr=False)

    def sample(self, n: int, seed: int, replicate: int = 0, stream: int = rng.STREAM_DATA):
        return _SAMPLERS[self.name](self, int(n), _Stream(seed, replicate, stream))

    def sample_replicates(self, n: int, seed: int, replicates):
        """One data set per replicate id, stacked: X (R, n, d), y (R, n), replicate r's set being
        ``sample(n, seed, r)``; written in place (one data set in memory besides the stack)."""
        X = y = None
        for i, r in enumerate(replicates):
            Xi, yi = self.sample(n, seed, int(r))
            if X is None:
                X = np.empty((len(replicates),) + Xi.shape, dtype=Xi.dtype)
                y = np.empty((len(replicates),) + yi.shape, dtype=yi.dtype)
            X[i], y[i] = Xi, yi
        if X is None:
            raise ValueError("sample_replicates needs at least one replicate id")
        return X, y

    def risk(self, w):
        return None if self._risk is None else self._risk(np.asarray(w, dtype=float))


def _sample_auc(pb: Problem, n: int, st: _Stream):
    d, g, rho, pi = pb.d, pb.params["gamma"], pb.params["rho"], pb.params["pi"]
    y = np.where(st.uniform(n) < pi, 1.0, -1.0)
    X = np.zeros((n, d))
    X[:, 0] = y * g
    X[:, 1:] = _ball(st, n, d - 1, rho)
    flip = pb.params.get("flip", 0.0)
    if flip > 0:
        y = np.where(st.uniform(n) < flip, -y, y)
    return X, y


def _sample_p4(pb: Problem, n: int, st: _Stream):
    """Rounds of m = 2n + 16 candidates (x on the sphere, label from x.w* + kappa N(0, 1)), the kept
    ones (lsq: |y| <= 0.5) appended until there are n; see ``_p4_round``."""
    w, kap = pb.w_star_paper, pb.params["kappa"]
    Xs, ys = [], []
    need = n
    while need > 0:
        X, y = _p4_round(st, 2 * n + 16, pb.d, w, kap, pb.params["kind"] == "lsq", need)
        Xs.append(X); ys.append(y)
        need -= len(y)
    if len(Xs) == 1:
        return Xs[0], ys[0]
    return np.concatenate(Xs)[:n], np.concatenate(ys)[:n]


def _p4_round(st: _Stream, m: int, d: int, w, kap: float, lsq: bool, need: int):
    """One round of ``_sample_p4``: the kept candidates among m, at most the first ``need`` kept.

    The round's draws are m x d normals for the directions, then m normals for the label noise,
    and the stream moves past all of them.  Only the candidates up to the need-th kept one can
    reach the data set (with about 96-100 % kept, about half of the 2n + 16), so only those are
    drawn: number c of the stream is a function of c alone (``stabsim.engine.rng``).  The numpy
    operations run on the round's full (m, d) and (m,) arrays as if every candidate had been
    drawn (rows not drawn hold ones and zeros): the matrix product's rounding depends on a row's
    position in the array (BLAS blocking), so the drawn rows come out bit for bit as when all m
    are drawn (tests/test_synthetic_p4.py compares with drawing them all).  A drawn row is
    normalised in place, once (a row's norm is its own reduction, so that equals normalising the
    whole array); rows not drawn stay ones, whose labels are discarded.  Only the kept rows
    returned are copied, which lowers the peak memory of F(w*)'s 400 000-point test sample
    (benchmarks/README.md, "Data sets and samples")."""
    pos_x, pos_noise = st.pos, st.pos + 2 * m * d
    st.pos = pos_noise + 2 * m
    X = np.ones((m, d))
    z = np.zeros(m)
    drawn = 0
    hi = min(m, need + need // 8 + 64)
    while True:
        rng.fill(st.key, pos_x + drawn * d, X[drawn:hi].reshape(-1), True)
        rng.fill(st.key, pos_noise + drawn, z[drawn:hi], True)
        _normalise_rows(X[drawn:hi])
        drawn = hi
        noise = kap * z
        if lsq:
            y = X @ w + noise
            keep = np.abs(y) <= 0.5
        else:
            y = np.where(X @ w + noise > 0, 1.0, -1.0)
            keep = np.ones(m, dtype=bool)
        keep[drawn:] = False
        kept = int(keep.sum())
        if kept >= need or drawn == m:
            rows = np.flatnonzero(keep)[:need]
            return X[rows], y[rows]
        hi = min(m, drawn + 2 * (need - kept) + 64)


def _normalise_rows(G, block: int = 1 << 15):
    """G[i] /= ||G[i]||_2 in place, ``np.linalg.norm(G, axis=1, keepdims=True)`` block by block of
    rows (the same per-row reduction, without a temporary the size of G)."""
    for a in range(0, G.shape[0], block):
        g = G[a:a + block]
        g /= np.linalg.norm(g, axis=1, keepdims=True)


_SAMPLERS = {"auc_separable": _sample_auc, "auc_noisy": _sample_auc, "metric": _sample_auc,
             "p4_lsq": _sample_p4, "p4_logistic": _sample_p4}


def _auc_moments(d, g, rho, pi, flip):
    """Class-conditional means/covariances of x given the *observed* label (after flips)."""
    var_xi = rho ** 2 / (d + 1.0)  # uniform in a (d-1)-ball: covariance rho^2/((d-1)+2) I
    # P(true = +1 | observed = +1) etc.
    p_obs_pos = pi * (1 - flip) + (1 - pi) * flip
    a_pos = pi * (1 - flip) / p_obs_pos          # P(true + | obs +)
    a_neg = pi * flip / (1 - p_obs_pos)          # P(true + | obs -)
    out = []
    for a in (a_pos, a_neg):
        mu = np.zeros(d); mu[0] = g * (2 * a - 1)
        cov = np.r_[g * g - mu[0] ** 2, np.full(d - 1, var_xi)]  # the diagonal of a diagonal covariance
        out.append((mu, cov))
    return p_obs_pos, out


#: Up to this d the squared AUC risk uses the dense d x d covariance (the numbers of earlier
#: versions, bit for bit); above it the diagonal, so that no d x d matrix is ever built (a
#: study with d = 10^6 would need 7 TiB).
DENSE_RISK_MAX_D = 1024


def _auc_squared_risk_factory(d, g, rho, pi, flip, symmetric=True):
    """Closed form of F(w) = E f(w; z, z') for the squared AUC loss (1 - w.(x - x'))^2.

    The covariance is diagonal and the mean difference mu is a multiple of e_1, so
    A = cov + mu mu^T is diagonal and w* = A^{-1} mu is an elementwise division (exactly what
    LU with partial pivoting gives for a diagonal matrix): O(d), not O(d^2) memory."""
    p1, ((mp, cp), (mn, cn)) = _auc_moments(d, g, rho, pi, flip)
    mu, cdiag = mp - mn, cp + cn
    pair = (2.0 if symmetric else 1.0) * p1 * (1 - p1)
    if d <= DENSE_RISK_MAX_D:
        cov = np.diag(cdiag)

        def risk(w):
            m = w @ mu
            return pair * ((1 - m) ** 2 + np.einsum("...i,ij,...j->...", w, cov, w))
    else:
        def risk(w):
            m = w @ mu
            return pair * ((1 - m) ** 2 + np.einsum("...i,i,...i->...", w, cdiag, w))

    w_star = mu / (cdiag + mu * mu)
    return risk, w_star, float(risk(w_star))


def make_problem(name: str, d: int = 10, **params) -> Problem:
    """A synthetic problem by name (see the module docstring for the parameters)."""
    if name not in _SAMPLERS:
        close = difflib.get_close_matches(name, list(_SAMPLERS), n=2)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown problem {name!r}.{hint} Allowed: {', '.join(_SAMPLERS)}")
    d = int(d)
    if d < 1:
        raise ValueError(f"dimension d must be >= 1, got {d}")
    if name in ("auc_separable", "auc_noisy", "metric"):
        g = float(params.pop("gamma", 0.5)); rho = float(params.pop("rho", 0.5))
        pi = float(params.pop("pi", 0.5))
        flip = float(params.pop("flip", 0.1 if name == "auc_noisy" else 0.0))
        if params:
            raise ValueError(f"unknown parameters for {name!r}: {sorted(params)}; allowed: gamma, rho, pi, flip")
        if not (0 < pi < 1):
            raise ValueError(f"pi = P(y = 1) must lie in (0, 1), got {pi}")
        if not (0 <= flip < 0.5):
            raise ValueError(f"label flip probability must lie in [0, 0.5), got {flip}")
        if g <= 0 or rho < 0:
            raise ValueError(f"need gamma > 0 and rho >= 0, got gamma={g}, rho={rho}")
        kappa = math.hypot(g, rho)
        risk, w_sq, F_sq = _auc_squared_risk_factory(d, g, rho, pi, flip)
        pb = Problem(name, d, kappa, dict(gamma=g, rho=rho, pi=pi, flip=flip), "auc_squared",
                     w_star=w_sq, F_star=F_sq, _risk=risk,
                     notes="closed-form population risk and minimiser for the symmetric squared AUC loss")
        if name == "auc_separable":
            pb.w_star_hinge = np.r_[1.0, np.zeros(d - 1)] / (2 * g)  # margin exactly 1 on every +/- pair
        return pb
    kappa_noise = float(params.pop("kappa", 0.0))
    if params:
        raise ValueError(f"unknown parameters for {name!r}: {sorted(params)}; allowed: kappa")
    if d != 10:
        raise ValueError(f"{name!r} is P4's d = 10 design, got d = {d}")
    if kappa_noise < 0:
        raise ValueError(f"noise level kappa must be >= 0, got {kappa_noise}")
    kind = "lsq" if name == "p4_lsq" else "logistic"
    w = P4_LSQ_WSTAR if kind == "lsq" else P4_LOGISTIC_WSTAR
    pb = Problem(name, d, 1.0, dict(kappa=kappa_noise, kind=kind),
                 "point_lsq" if kind == "lsq" else "point_logistic",
                 w_star=w.copy() if (kind == "lsq" and kappa_noise == 0) else None,
                 F_star=0.0 if (kind == "lsq" and kappa_noise == 0) else None,
                 notes="population risk by Monte Carlo (no closed form after rejection)")
    pb.w_star_paper = w.astype(float)
    return pb
