"""P1 Algorithm 3 / Thm 10 (differentially private localized SGD) as a twin run on S and S'.

:class:`P1Alg3Config` holds the algorithm's symbols (eps, delta, eta, the loss and W, the
constants G, L, kappa, the noise scale and the projection choice), validated once;
:func:`p1_alg3` runs it on one data set (X, y) and its replace-one neighbours.

K = ceil(log2 n) phases; phase k runs P1 Alg. 1 (``p1_alg1``) on the block S_k with the constant
step eta_k = 4^-k eta for ceil(n_k log(4/delta)) steps, starting from the previous phase's noisy
output, then adds u_k ~ N(0, sigma_k^2 I) (``calibration.p1_alg3_schedule``).  Output w_K.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import xarray as xr

from stabsim.engine import rng
from stabsim.engine.algorithm_specs import get_algorithm
from stabsim.engine.constraints import Constraint, get_constraint
from stabsim.engine.backend import resolve_backend
from stabsim.kernels import N_REC, TwinConfig
from stabsim.engine.losses import Loss, get_loss
from stabsim.runtime.provenance import provenance
from stabsim.engine.steps import kernel_step_sizes
from stabsim.engine.twin_runs import backend_kernel, extend_with_replacements
from stabsim.engine.validation import positive
from stabsim.privacy import calibration as cal
from stabsim.privacy.algorithms.common import (_add_private, _attach, _check_privacy, _constants, _data, _neighbours,
                     _project, _replicate_ids, _scale_note, _set, gaussian_rows, optional_positive)

#: stream of the per-phase seeds of P1 Alg. 3 (local to this package; rng.py lists 1..7, giga 8)
STREAM_PHASE = 10

#: the string step-size rules: Thm 10's step as printed / corrected (errata P1-E7)
ETA_RULES = ("thm10", "thm10_corrected")


@dataclass(frozen=True)
class P1Alg3Config:
    """P1 Alg. 3 (DP localized SGD): the paper's symbols, validated once in ``__post_init__``.

    ``eps`` > 0, ``delta`` in (0, 1): the privacy guarantee the noise sigma_k is calibrated to.
    ``eta``: the base step (eta_k = 4^-k eta), a number > 0 or ``"thm10"`` (Thm 10's step as
    printed) / ``"thm10_corrected"`` (P1-E7); the rules need a bounded W (its diameter D).
    ``loss``: a pairwise loss; ``constraint``: W (``("l2", R)``, ``"l2:R"``, ...).
    ``G``, ``L``, ``kappa``: override the loss's declared constants (None: declared constants at
    kappa = max ||x|| over S and the replacement points).  ``noise_scale`` multiplies every
    sigma_k (anything but 1 is recorded as a deviation).  ``project_noise``: project the noisy
    phase outputs onto W (the paper does not; recorded).
    """

    eps: float
    delta: float
    eta: Any = "thm10"
    loss: str = "auc_logistic"
    constraint: Any = ("l2", 1.0)
    G: float | None = None
    L: float | None = None
    kappa: float | None = None
    noise_scale: float = 1.0
    project_noise: bool = False
    lossf: Loss = field(init=False, repr=False, compare=False)
    cons: Constraint = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        eps, delta = _check_privacy(self.eps, self.delta)
        _set(self, "eps", eps)
        _set(self, "delta", delta)
        lossf, cons = get_loss(self.loss), get_constraint(self.constraint)
        if not lossf.pairwise:
            raise ValueError(f"P1 Alg. 3 is pairwise: loss {self.loss!r} is pointwise; "
                             "use a pairwise loss (auc_* or ranking_*)")
        _set(self, "lossf", lossf)
        _set(self, "cons", cons)
        self._check_eta(cons)
        for name in ("G", "L", "kappa"):
            _set(self, name, optional_positive(name, getattr(self, name)))
        _set(self, "noise_scale", positive("noise_scale", self.noise_scale))
        if not isinstance(self.project_noise, (bool, np.bool_)):
            raise ValueError(f"project_noise must be True or False, got {self.project_noise!r}")
        _set(self, "project_noise", bool(self.project_noise))

    def _check_eta(self, cons):
        """eta: a number > 0 (stored as float) or one of ETA_RULES, which need a bounded W."""
        if isinstance(self.eta, str):
            cal.chk.choice("eta", self.eta, ETA_RULES)
            if not cons.bounded:
                raise ValueError(f"eta={self.eta!r} needs a bounded W (its diameter D): use "
                                 "constraint=('l2', R) or give eta as a number")
            return
        try:
            _set(self, "eta", positive("eta", self.eta))
        except ValueError:
            raise ValueError(f"eta must be a finite number > 0 or one of {', '.join(map(repr, ETA_RULES))}, "
                             f"got {self.eta!r}") from None

    @property
    def radius(self) -> float:
        """The radius R of W."""
        return self.cons.radius


def phase_seed(seed, k):
    """Seed of phase k of P1 Alg. 3: every phase draws its indices and noise from its own
    counter-based streams, keyed by (phase_seed(seed, k), replicate, stream)."""
    return int(rng.key(int(seed), int(k), STREAM_PHASE)) >> 2


def p1_phase_blocks(n, schedule):
    """[(k, start, n_k, skipped)]: S_k = data indices start .. start+n_k-1 (data order)."""
    out, start = [], 0
    for ph in schedule.phases:
        nk = int(ph.n_k)
        out.append((ph.k, start, nk, ph.skipped))
        start += nk
    return out


def _eta(config, n, G, L, cons, p):
    """(eta, note): the base step of P1 Alg. 3 -- the number given, or Thm 10's step
    (``calibration.p1_thm10_eta``, printed or corrected P1-E7) with D = diam(W), d = p."""
    eta = config.eta
    if not isinstance(eta, str):
        return eta, "eta given"
    reading = cal.chk.choice("eta", eta, ETA_RULES)
    eta_val = cal.p1_thm10_eta(n, G, cons.diameter, p, config.eps, config.delta,
                               reading="printed" if reading == "thm10" else "corrected", L=L)
    eta_note = f"Thm 10 step ({'printed' if reading == 'thm10' else 'corrected, P1-E7'}), D={cons.diameter:g}, d={p}"
    return eta_val, eta_note


def _initial_points(w0, R, p):
    """(R, p) starting points w_0: zeros, or ``w0`` of shape (p,) (every replicate) or (R, p)."""
    if w0 is None:
        return np.zeros((R, p))
    W = np.asarray(w0, dtype=np.float64)
    W = np.array(np.broadcast_to(W, (R, p)) if W.shape == (p,) else W)
    if W.shape != (R, p) or not np.all(np.isfinite(W)):
        raise ValueError(f"w0 must be finite with shape ({p},) or ({R}, {p}), got {W.shape}")
    return W


class _Twin(NamedTuple):
    """The data of one P1 Alg. 3 twin run: S = (X, y), the replacements (xrep, yrep) of the
    replaced indices kidx, the replicate ids and seed, the matrix side md and the dimension p."""
    X: np.ndarray
    y: np.ndarray
    xrep: np.ndarray
    yrep: np.ndarray
    kidx: np.ndarray
    reps: np.ndarray
    seed: int
    md: int
    p: int


def _phase_averages(config, tw, start, nk, eta_k, Tk, sk, W, Wp):
    """Phase k's noise-free P1 Alg. 1 outputs: (wbar_k on S_k from W, wbar'_k on S'_k from Wp).

    S_k = data indices start..start+n_k-1; constant step eta_k for Tk steps; the indices come
    from the phase's own seed ``sk`` (twin kernel, one checkpoint at Tk).
    """
    lossf, cons, alg = config.lossf, config.cons, get_algorithm("p1_alg1")
    R, p = len(tw.reps), tw.p
    inside = (tw.kidx >= start) & (tw.kidx < start + nk)
    Xext, Yext, krows = extend_with_replacements(tw.X[None, start:start + nk], tw.y[None, start:start + nk],
                                                 tw.xrep, tw.yrep)
    kl = np.where(inside, tw.kidx - start, -1).astype(np.int64)
    etas, es = kernel_step_sizes(eta_k, Tk)
    omegas, os_ = alg.kernel_omegas(etas, es, Tk)
    kconfig = TwinConfig(schedule=alg.schedule, buffer=alg.buffer, sequential=alg.sequential, T=Tk, etas=etas,
                         eta_stride=es, form=lossf.form, phi=lossf.phi, q=lossf.q, ckind=cons.kind,
                         radius=cons.radius, md=tw.md, lag=alg.avg_lag, omegas=omegas, omega_stride=os_,
                         checkpoints=np.array([Tk], dtype=np.int64), record_outputs=True)
    res = []
    twin_kernel = backend_kernel(resolve_backend())   # the study's or caller's backend (use_backend)
    for W0 in (W, Wp):
        rec = np.full((R, 1, N_REC), np.nan)
        outs = np.zeros((R, 1, 2, p))
        twin_kernel(kconfig, Xext, Yext, kl, krows, tw.reps, sk, np.ascontiguousarray(W0), rec, outs)
        res.append(outs)
    return res[0][:, 0, 0], res[1][:, 0, 1]


def _phases(config, tw, sched, blocks, W, Wp, independent_noise, ns):
    """Run the K phases of P1 Alg. 3 from (W, Wp) on S and S'.

    Returns (w_K, w'_K, k_phase, dist_avg, dist_out, outs_all, avgs_all): the final outputs, the
    phase holding each replicate's replaced example (0: unused), ||wbar_k - wbar'_k|| and
    ||w_k - w'_k|| per phase, the phase outputs w_k and the noise-free phase averages wbar_k
    (what the known-randomness audit, :mod:`stabsim.privacy.audit_output`, needs).  Skipped phases (n_k < 2) keep
    w_k = w_{k-1}.  u_k = normal numbers (T_k+1)p.. of STREAM_NOISE under phase_seed(seed, k)
    (STREAM_NOISE_PRIME on S' when ``independent_noise``), sigma_k times ``ns``.
    """
    R, K, p = len(tw.reps), sched.K, tw.p
    k_phase = np.zeros(R, dtype=np.int64)
    dist_avg = np.full((R, K), np.nan)
    dist_out = np.full((R, K), np.nan)
    outs_all = np.zeros((R, K, 2, p))
    avgs_all = np.zeros((R, K, 2, p))
    for (k, start, nk, skipped), ph in zip(blocks, sched.phases):
        inside = (tw.kidx >= start) & (tw.kidx < start + nk)
        k_phase[inside] = k
        if skipped:
            dist_avg[:, k - 1] = np.linalg.norm(W - Wp, axis=1)
            dist_out[:, k - 1] = dist_avg[:, k - 1]
            outs_all[:, k - 1, 0], outs_all[:, k - 1, 1] = W, Wp
            avgs_all[:, k - 1, 0], avgs_all[:, k - 1, 1] = W, Wp
            continue
        Tk = ph.steps
        sk = np.int64(phase_seed(tw.seed, k))
        wbar, wbarp = _phase_averages(config, tw, start, nk, ph.eta_k, Tk, sk, W, Wp)
        avgs_all[:, k - 1, 0], avgs_all[:, k - 1, 1] = wbar, wbarp
        start_noise = (Tk + 1) * p
        u = gaussian_rows(sk, tw.reps, rng.STREAM_NOISE, start_noise, p)
        up = gaussian_rows(sk, tw.reps, rng.STREAM_NOISE_PRIME, start_noise, p) if independent_noise else u
        sig = ph.sigma * ns
        W, Wp = wbar + sig * u, wbarp + sig * up
        if config.project_noise:
            W, Wp = _project(config.cons, W, tw.md), _project(config.cons, Wp, tw.md)
        dist_avg[:, k - 1] = np.linalg.norm(wbar - wbarp, axis=1)
        dist_out[:, k - 1] = np.linalg.norm(W - Wp, axis=1)
        outs_all[:, k - 1, 0], outs_all[:, k - 1, 1] = W, Wp
    return W, Wp, k_phase, dist_avg, dist_out, outs_all, avgs_all


def _dataset(config, tw, sched, blocks, ns, run, independent_noise):
    """The output Dataset of P1 Alg. 3 (before w_priv): per-phase distances and outputs,
    ``k``/``k_phase`` and the schedule (n_k, block_start, eta_k, steps_k, sigma_k, skipped)."""
    _, _, k_phase, dist_avg, dist_out, outs_all, avgs_all = run
    n, d = tw.X.shape
    phases = np.arange(1, sched.K + 1)
    return xr.Dataset(
        {"dist_phase_avg": (("replicate", "phase"), dist_avg,
                            {"long_name": "||wbar_k - wbar'_k|| (phase output before the noise)"}),
         "dist_phase": (("replicate", "phase"), dist_out,
                        {"long_name": "||w_k - w'_k|| (after the noise)"}),
         "phase_output": (("replicate", "phase", "run", "param"), outs_all,
                          {"long_name": "w_k on S and S'"}),
         "phase_average": (("replicate", "phase", "run", "param"), avgs_all,
                           {"long_name": "wbar_k on S and S' (phase output before the noise)"}),
         "k": ("replicate", tw.kidx, {"long_name": "index of the replaced example"}),
         "k_phase": ("replicate", k_phase,
                     {"long_name": "phase whose block S_k holds the replaced example (0: unused)"})},
        coords={"replicate": tw.reps, "phase": phases, "run": ["S", "S'"],
                "n_k": ("phase", np.array([b[2] for b in blocks])),
                "block_start": ("phase", np.array([b[1] for b in blocks])),
                "eta_k": ("phase", np.array(sched.eta_k)),
                "steps_k": ("phase", np.array([0 if p_.skipped else p_.steps for p_ in sched.phases])),
                "sigma_k": ("phase", np.array([0.0 if p_.skipped else p_.sigma * ns for p_ in sched.phases])),
                "skipped": ("phase", np.array([p_.skipped for p_ in sched.phases]))},
        attrs=provenance(algorithm="p1_alg3", loss=config.lossf.name, constraint=config.cons.name,
                         radius=config.cons.radius, n=n, d=d, seed=tw.seed,
                         noise="independent" if independent_noise else "shared",
                         neighbour_relation="replace-one", private_algorithm="p1_alg3"))


def _record(config, sched, blocks, ns, n, eta_val, eta_note, constants, independent_noise):
    """The calibration record of a P1 Alg. 3 run (``constants`` = (G, L, kappa, source))."""
    G, L, kappa, src = constants
    return dict(
        algorithm="p1_alg3", paper="P1 Algorithm 3 / Thm 10", eps=config.eps, delta=config.delta,
        sigma=sched.phases[0].sigma * ns, sigma_k=[0.0 if p_.skipped else p_.sigma * ns for p_ in sched.phases],
        sigma_paper=sched.phases[0].sigma, reading=eta_note, eta=eta_val, K=sched.K,
        n_k=[b[2] for b in blocks], steps_k=[p_.steps for p_ in sched.phases],
        skipped_phases=list(sched.degenerate), split="consecutive blocks in the data order",
        unused_points=n - sum(b[2] for b in blocks if not b[3]),
        projection_after_noise=bool(config.project_noise), n=n, G=G, L=L, kappa=kappa, constants=src,
        noise_scale=ns, beta=None, grid_step=None, T1=None, T1_as_in_paper=None,
        independent_noise=bool(independent_noise))


def p1_alg3(X, y, config: P1Alg3Config, *, replicates=100, seed=0, neighbour="farthest",
            independent_noise=False, w0=None, problem=None) -> xr.Dataset:
    """P1 Alg. 3 (DP localized SGD) with ``config`` (:class:`P1Alg3Config`) on S = (X, y) and S'.

    ``replicates`` (a count or replicate ids), ``seed``, ``neighbour`` (the replace-one relation,
    ``stabsim.engine.neighbours``), ``independent_noise`` (S' draws its noise from STREAM_NOISE_PRIME),
    ``w0`` (w_0; default 0) and ``problem`` (for problem-aware neighbours) describe the run.

    K = ceil(log2 n) phases; phase k runs P1 Alg. 1 (``p1_alg1``: pair i_t with i_{t-1},
    output sum eta_j w_{j-2}/sum eta_j) on S_k with constant step eta_k = 4^-k eta for
    ceil(n_k log(4/delta)) steps, initialised at the previous phase's noisy output, then adds
    u_k ~ N(0, sigma_k^2 I), sigma_k = 12 G eta_k log(4/delta) sqrt(2 log(2.5/delta))/eps
    (``calibration.p1_alg3_schedule``, n_k = floor(n/2^k)).  Output w_K.

    Choices (the paper is silent):

    * **Split.** S_k are consecutive blocks in the data order: S_1 = indices 0..n_1-1, S_2
      the next n_2, ...  (shuffle X beforehand for a random split).  sum_k n_k < n: the
      remaining indices are used by no phase.
    * **Degenerate phases** (n_k < 2) are skipped (no steps, no noise, w_k = w_{k-1}) and
      listed in the record; their single point (if any) is unused.
    * **Replaced index.** The replaced example k lies in exactly one block S_j
      (``k_phase = j``; 0 if k is unused, then S' gives the same output as S).  In phase j,
      S'_j = S_j with that example replaced; every other phase sees identical data.  Phases
      before j give identical iterates on S and S'; later phases start from different points.
    * **Streams.** Phase k uses its own seed ``phase_seed(seed, k)`` for the indices (the twin
      kernel's STREAM_INDEX) and for u_k (normal numbers (T_k+1)p.. of STREAM_NOISE, or
      STREAM_NOISE_PRIME for S' when ``independent_noise``).
    * **Projection after the noise**: none (as printed, errata P1-A, point 2); the next
      phase starts at the unprojected point.  ``project_noise=True`` projects (recorded).
    * **eta**: a number, or ``"thm10"`` (printed Thm 10 step, default) / ``"thm10_corrected"``
      (P1-E7) with D = the diameter of W, d = the parameter dimension; Thm 10's eta <= 2/L
      is enforced (InfeasiblePrivacyParameters).  w_0 = 0 unless ``w0`` is given.
    """
    if not isinstance(config, P1Alg3Config):
        raise TypeError(f"p1_alg3(X, y, config): config must be a P1Alg3Config, got {type(config).__name__}")
    lossf, cons = config.lossf, config.cons
    X, y, X3, y3 = _data(X, y, lossf, allow_3d=False)
    n, d = X.shape
    p = d * d if lossf.matrix else d
    md = d if lossf.matrix else 0
    reps = _replicate_ids(replicates)
    seed = rng.check_seed(seed)
    deviations = []
    ns = _scale_note(config.noise_scale, deviations)
    if config.project_noise:
        deviations.append("noisy phase outputs projected onto W (the paper does not project)")
    _, kidx, xrep, yrep = _neighbours(neighbour, X3, y3, reps, seed, problem)
    constants = _constants(lossf, cons, X3, xrep, G=config.G, L=config.L, kappa=config.kappa,
                           need_L=isinstance(config.eta, str))
    G, L = constants[0], constants[1]
    eta_val, eta_note = _eta(config, n, G, L, cons, p)
    sched = cal.p1_alg3_schedule(n, eta_val, G, config.eps, config.delta, "floor")
    blocks = p1_phase_blocks(n, sched)
    W = _initial_points(w0, len(reps), p)
    tw = _Twin(X, y, xrep, yrep, kidx, reps, seed, md, p)
    run = _phases(config, tw, sched, blocks, W, W.copy(), independent_noise, ns)
    ds = _dataset(config, tw, sched, blocks, ns, run, independent_noise)
    ds = _add_private(ds, run[0], run[1], "w_K, P1 Alg. 3")
    return _attach(ds, _record(config, sched, blocks, ns, n, eta_val, eta_note, constants,
                               independent_noise), deviations)
