"""P1 Sec. 6 comparison methods as single trajectories with measured CPU time.

>>> from stabsim.engine.p1_baselines import run_method
>>> tr = run_method("olp", X, y, eta=0.05, T=5000, radius=10.0, seed=1, replicate=0,
...                 checkpoints=[100, 1000, 5000])
>>> tr.outputs      # (3, d): the method's output after 100, 1000, 5000 steps
>>> tr.cpu          # (3,): process CPU seconds spent in the kernel up to each checkpoint

Methods (``METHODS``): ``p1_alg1`` (P1 Algorithm 1), ``sgd_pair`` (SGD_pair), ``olp`` (Kar
et al. 2013, buffer s = 200), ``oam_gra`` (Zhao et al. 2011, buffers N = 100 + 100),
``spauc`` (Lei & Ying 2019, square loss).  The update rules, outputs and the random-stream
conventions are documented in ``stabsim.kernels.baselines``; every trajectory is a pure
function of (method, data, eta, radius, T, seed, replicate).  The kernels run between
consecutive checkpoints and ``time.process_time`` is read at each one (the first call per
method compiles or loads the numba kernel; it is warmed up on a 0-step call so compilation
never enters the timing).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from stabsim.engine import rng
from stabsim.kernels import baselines as K
from stabsim.engine.validation import check_Xy

METHODS = K.METHODS
DEFAULT_BUFFER = {"olp": 200, "oam_gra": 100}
LOSS = {"p1_alg1": "auc_hinge", "sgd_pair": "auc_hinge", "olp": "auc_hinge", "oam_gra": "auc_hinge",
        "spauc": "auc_squared (saddle-point form)"}
REFERENCE = {
    "p1_alg1": "P1 Algorithm 1 (Yang, Lei, Wang, Yang & Ying, NeurIPS 2021)",
    "sgd_pair": "SGD_pair (Lei, Ledent & Kloft, NeurIPS 2020), P1 ref. [27]",
    "olp": "OLP with RS-x (Kar, Sriperumbudur, Jain & Karnick, ICML 2013), P1 ref. [22]",
    "oam_gra": "OAM_gra (Zhao, Hoi, Jin & Yang, ICML 2011), P1 ref. [48]",
    "spauc": "SPAUC (Lei & Ying 2019, stochastic proximal AUC maximisation), P1 ref. [26]",
}


@dataclass
class Trajectory:
    """Outputs and CPU time of one run at its checkpoints."""

    method: str
    steps: np.ndarray      # (C,) checkpoint steps
    outputs: np.ndarray    # (C, d) the method's output (averaged iterate) after each checkpoint
    last: np.ndarray       # (C, d) the iterate w_t at each checkpoint
    cpu: np.ndarray        # (C,) cumulative process CPU seconds in the kernel
    eta: float
    radius: float
    buffer: int | None


_WARM: set = set()


def _state(d, s):
    return (np.zeros((4, d)), np.zeros(1), np.zeros(4, dtype=np.int64),
            np.zeros((2, max(int(s), 1) + 1), dtype=np.int64))


def _segment(method, X, y, ki, kr, eta, radius, s, p, t0, t1, W, F, I, B, M):
    if method == "p1_alg1":
        K.p1_alg1_steps(X, y, ki, eta, radius, t0, t1, W, F, I)
    elif method == "sgd_pair":
        K.sgd_pair_steps(X, y, ki, eta, radius, t0, t1, W, F)
    elif method == "olp":
        K.olp_steps(X, y, ki, kr, eta, radius, s, t0, t1, W, F, I, B)
    elif method == "oam_gra":
        K.oam_gra_steps(X, y, ki, kr, eta, radius, s, t0, t1, W, F, I, B)
    else:
        K.spauc_steps(X, y, ki, eta, radius, p, t0, t1, W, F, M)


def _warm(method, d):
    """Compile / load the kernel on a 0-step call with the real argument types."""
    if method in _WARM:
        return
    X = np.zeros((2, d))
    y = np.array([1.0, -1.0])
    s = DEFAULT_BUFFER.get(method, 1)
    W, F, I, B = _state(d, s)
    _segment(method, X, y, np.uint64(1), np.uint64(2), 0.1, 1.0, s, 0.5, 0, 0, W, F, I, B, np.zeros((2, d)))
    _WARM.add(method)


def run_method(method: str, X, y, *, eta: float, T: int, radius: float = math.inf, seed: int = 0,
               replicate: int = 0, checkpoints=None, buffer: int | None = None) -> Trajectory:
    """Run ``method`` for T steps on (X, y); return its outputs and CPU time at ``checkpoints``.

    eta: constant step size > 0 (OAM_gra: the constant C of C_t = C max(1, N_opp / N)).
    radius: the l2-ball constraint (inf = unconstrained).  buffer: OLP's s (default 200) or
    OAM_gra's per-class N (default 100); other methods take none.
    checkpoints: increasing steps in [1, T] (default [T]).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")
    X, y = check_Xy(X, y, pairwise_auc=True)
    if X.ndim != 2:
        raise ValueError(f"X must be one data set of shape (n, d), got shape {X.shape}")
    n, d = X.shape
    if not (isinstance(T, (int, np.integer)) and T >= 1):
        raise ValueError(f"T must be an integer >= 1, got {T!r}")
    eta = float(eta)
    if not (eta > 0 and math.isfinite(eta)):
        raise ValueError(f"eta must be a finite number > 0, got {eta!r}")
    radius = float(radius)
    if not radius > 0:
        raise ValueError(f"radius must be > 0 (or inf), got {radius!r}")
    if buffer is not None and method not in DEFAULT_BUFFER:
        raise ValueError(f"buffer applies to olp and oam_gra only, not {method!r}")
    s = int(DEFAULT_BUFFER.get(method, 1) if buffer is None else buffer)
    if s < 1:
        raise ValueError(f"buffer must be an integer >= 1, got {buffer!r}")
    ck = np.array([T] if checkpoints is None else checkpoints, dtype=np.int64).ravel()
    if ck.size == 0 or ck[0] < 1 or ck[-1] > T or np.any(np.diff(ck) <= 0):
        raise ValueError(f"checkpoints must be increasing steps in [1, T={T}], got {ck.tolist()[:6]}")
    ki = rng.key(seed, replicate, rng.STREAM_INDEX)
    kr = rng.key(seed, replicate, K.STREAM_RESERVOIR)
    W, F, I, B = _state(d, s)
    M = np.zeros((2, d))
    p = 0.5
    if method == "spauc":
        pos = y == 1.0
        p = float(pos.mean())
        M[0] = X[pos].mean(axis=0)
        M[1] = X[~pos].mean(axis=0)
    if method == "p1_alg1":
        I[0] = int(rng.randint(ki, 0, n))       # i_0
    X = np.ascontiguousarray(X)
    y = np.ascontiguousarray(y)
    _warm(method, d)
    outs = np.empty((ck.size, d))
    last = np.empty((ck.size, d))
    cpu = np.empty(ck.size)
    spent, t0 = 0.0, 0
    for c, t1 in enumerate(ck):
        c0 = time.process_time()
        _segment(method, X, y, ki, kr, eta, radius, s, p, t0, int(t1), W, F, I, B, M)
        spent += time.process_time() - c0
        outs[c] = W[2] / F[0]
        last[c] = W[0]
        cpu[c] = spent
        t0 = int(t1)
    return Trajectory(method, ck, outs, last, cpu, eta, radius, s if method in DEFAULT_BUFFER else None)
