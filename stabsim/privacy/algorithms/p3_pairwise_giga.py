"""P3 Algorithms 1-4 / Thms 1, 3, 5 (pairwise private GIGA) as twin runs on S and S'.

:class:`P3GigaConfig` holds the symbols of one variant (``"OnPairStrC"`` Alg. 1, ``"OnPairC"``
Alg. 2, ``"OffPairStrC"`` Alg. 3, ``"OffPairC"`` Alg. 4): eps, delta, alpha, the loss and C (radius
R), the burn-in T_1, the constants G, L, kappa, the rho reading, the regulariser centre c, the
stream order and the noise scale, validated once.  :func:`p3_plan` gives the constants G~, L~
and T_1 of a run, :func:`p3_giga` runs the kernel :mod:`stabsim.kernels.giga`;
``p3_onpairstrc`` ... ``p3_offpairc`` are its keyword forms (``PRIVATE_ALGORITHMS``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import xarray as xr

from stabsim.engine import rng
from stabsim.engine.constraints import FROBENIUS, L2, Constraint, get_constraint
from stabsim.kernels.giga import N_REC_GIGA, STREAM_BURNIN, ball_point, giga_kernel
from stabsim.engine.losses import Loss, get_loss
from stabsim.runtime.provenance import provenance
from stabsim.engine.twin_runs import extend_with_replacements, log_checkpoints, mirrored_kidx
from stabsim.engine.validation import positive
from stabsim.privacy import calibration as cal
from stabsim.privacy.errors import InfeasiblePrivacyParameters
from stabsim.privacy.algorithms.common import (_private_vars, privacy_attrs, _check_privacy, _data, _neighbours, _replicate_ids,
                     _scale_note, _set, keyword_form, optional_positive)

P3_VARIANTS = {
    # name: (online, convex surrogate (G~ = G + alpha diam), default centre, paper)
    "OnPairStrC": (True, False, "zero", "P3 Algorithm 1 (OnPairStrC) / Thm 1"),
    "OnPairC": (True, True, "random", "P3 Algorithm 2 (OnPairC) / Thm 3"),
    "OffPairStrC": (False, False, "zero", "P3 Algorithm 3 (OffPairStrC) / Thm 5"),
    "OffPairC": (False, True, "zero", "P3 Algorithm 4 (OffPairC) / Thm 5"),
}


def _variant(variant):
    for name in P3_VARIANTS:
        if str(variant).lower() == name.lower():
            return name
    raise ValueError(f"unknown P3 variant {variant!r}; allowed: {', '.join(P3_VARIANTS)}")


def p3_plan(n, *, variant, alpha, lossf, cons, kappa, G=None, L=None, T1=None):
    """Constants and burn-in of a P3 run: dict(G, L, G_tilde, L_tilde, alpha, T1, burnin, ...).

    The loss actually run is l~ = l + (alpha/2)||w - c||^2, alpha-strongly convex:
    StrC variants (Alg. 1/3) need an alpha-strongly convex loss, and every loss here is only
    convex, so the regulariser (alpha/2)||w||^2 of the paper's experiments (lambda = alpha)
    is added, c = 0: G~ = G + alpha R (||w|| <= R on C), L~ = L + alpha.  Convex variants
    (Alg. 2/4): G~ = G + alpha ||C||_2 (diameter), L~ = L + alpha, as printed.
    T_1 = max(ceil(16 L~^2/alpha^2), 7) (the smoothness of the loss actually run).
    Raises InfeasiblePrivacyParameters when T_1 >= n unless T1 is given (then recorded as
    "not as in paper").
    """
    variant = _variant(variant)
    online, convex, _, _ = P3_VARIANTS[variant]
    alpha = positive("alpha", alpha)
    G = float(lossf.G(kappa, cons.radius)) if G is None else positive("G", G)
    L = float(lossf.L(kappa, cons.radius)) if L is None else positive("L", L)
    if not (math.isfinite(G) and math.isfinite(L)):
        raise ValueError(f"G={G}, L={L} of loss {lossf.name!r}: pass finite G= and L=")
    if convex:
        Gt, Lt = cal.p3_convex_surrogate(G, L, alpha, cons.diameter)
        how = "G~ = G + alpha diam(C), L~ = L + alpha (Alg. 2/4)"
    else:
        Gt, Lt = G + alpha * cons.radius, L + alpha
        how = ("loss + (alpha/2)||w||^2 (experiments' regulariser, lambda = alpha): "
               "G~ = G + alpha R, L~ = L + alpha")
    try:
        burn = cal.p3_check_burnin(n, Lt, alpha, T1)
    except InfeasiblePrivacyParameters as e:
        root = math.sqrt(n - 1) - 4.0
        need = (f"alpha >= 4L/(sqrt(n-1) - 4) = {4.0 * L / root:.4g}" if root > 0 else
                "n >= 18 (T_1 >= 16 always, since L~ = L + alpha)")
        raise InfeasiblePrivacyParameters(
            f"{e} [stabsim.privacy.algorithms.p3_{variant.lower()}: here L~ = L + alpha "
            f"(L={L:.4g}), so T_1 < n={n} needs {need}.  To run anyway pass "
            f"T1=<integer in [2, {n})> (recorded as 'not as in paper').]") from None
    return dict(variant=variant, online=online, convex=convex, G=G, L=L, G_tilde=Gt,
                L_tilde=Lt, alpha=alpha, T1=burn.T1, T1_paper=burn.T1_paper,
                T1_as_in_paper=burn.as_in_paper, T1_note=burn.note, constants_rule=how)


#: the centres c of the regulariser (alpha/2)||w - c||^2 given by name
CENTERS = ("zero", "random")


@dataclass(frozen=True)
class P3GigaConfig:
    """P3 Pairwise GIGA (Algs 1-4): the paper's symbols, validated once in ``__post_init__``.

    ``variant``: ``"OnPairStrC"``, ``"OnPairC"``, ``"OffPairStrC"``, ``"OffPairC"`` (case-insensitive,
    stored as spelled here).  ``eps`` > 0, ``delta`` in (0, 1): the guarantee the noise is calibrated to.
    ``alpha`` > 0: the strong convexity of l~ = l + (alpha/2)||w - c||^2 (None: StrC 1e-3, the
    experiments' lambda; convex 1/sqrt(n), constant 1, ours).  ``loss``: a pairwise loss;
    ``constraint``: the ball C, ``("l2", R)`` (vector losses) or ``("frobenius", R)`` (matrix losses).
    ``T1``: burn-in override, an integer >= 2 (None: the paper's T_1, raising
    InfeasiblePrivacyParameters when T_1 >= n).  ``G``, ``L``, ``kappa``: override the declared
    constants.  ``exact_rho``: exact rho (default) or the printed approximation (P3-E1/E2).
    ``center``: None (the variant's c), ``"zero"``, ``"random"`` or a point of C.
    ``permute``: one random order per replicate.  ``noise_scale``: multiplies every noise std.
    """

    variant: str
    eps: float
    delta: float
    alpha: float | None = None
    loss: str = "ranking_logistic"
    constraint: Any = ("l2", 1.0)
    T1: int | None = None
    G: float | None = None
    L: float | None = None
    kappa: float | None = None
    exact_rho: bool = True
    center: Any = None
    permute: bool = False
    noise_scale: float = 1.0
    lossf: Loss = field(init=False, repr=False, compare=False)
    cons: Constraint = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        eps, delta = _check_privacy(self.eps, self.delta)
        _set(self, "eps", eps)
        _set(self, "delta", delta)
        _set(self, "variant", _variant(self.variant))
        self._check_loss_and_ball()
        for name in ("alpha", "G", "L", "kappa"):
            _set(self, name, optional_positive(name, getattr(self, name)))
        if self.T1 is not None:
            _set(self, "T1", cal.chk.integer_at_least("T1", self.T1, 2))
        for name in ("exact_rho", "permute"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
            _set(self, name, bool(getattr(self, name)))
        _set(self, "noise_scale", positive("noise_scale", self.noise_scale))
        self._check_center()

    def _check_loss_and_ball(self):
        """A pairwise loss and a ball C matching it (l2 for vectors, frobenius for matrices)."""
        lossf, cons = get_loss(self.loss), get_constraint(self.constraint)
        if not lossf.pairwise:
            raise ValueError(f"P3's algorithms are pairwise: loss {self.loss!r} is pointwise")
        if cons.kind not in (L2, FROBENIUS):
            raise ValueError("P3 needs a bounded ball C to draw its random points from: constraint "
                             f"('l2', R) or ('frobenius', R), got {cons.name!r}")
        if lossf.matrix != (cons.kind == FROBENIUS):
            raise ValueError(f"constraint {cons.name!r} does not match loss {self.loss!r} "
                             "(matrix losses use ('frobenius', R), vector losses ('l2', R))")
        _set(self, "lossf", lossf)
        _set(self, "cons", cons)

    def _check_center(self):
        """center: None, 'zero', 'random', or a point of C (stored as a tuple of floats; its
        length must be the parameter dimension p, checked when the data are known)."""
        c = self.center
        if c is None:
            return
        if isinstance(c, str):
            if c not in CENTERS:
                raise ValueError(f"center must be 'zero', 'random' or a point of C (an array of p "
                                 f"finite entries), got {c!r}")
            return
        c0 = np.asarray(c, dtype=np.float64).ravel()
        if c0.size == 0 or not np.all(np.isfinite(c0)):
            raise ValueError(f"center must have p finite entries (p = d, or d*d for matrix losses), got {c!r}")
        if np.linalg.norm(c0) > self.cons.radius * (1 + 1e-12):
            raise ValueError("center must lie in C")
        _set(self, "center", tuple(float(v) for v in c0))

    @property
    def radius(self) -> float:
        """The radius R of the ball C."""
        return self.cons.radius

    @property
    def online(self) -> bool:
        """Online variant (Alg. 1/2: noisy releases) or offline (Alg. 3/4: output perturbation)."""
        return P3_VARIANTS[self.variant][0]

    @property
    def convex(self) -> bool:
        """Convex variant (Alg. 2/4: G~ = G + alpha diam(C)) or strongly convex (Alg. 1/3)."""
        return P3_VARIANTS[self.variant][1]


def _alpha(config, n):
    """(alpha, note): the given alpha, or the default (StrC 1e-3, convex 1/sqrt(n))."""
    if config.alpha is not None:
        return config.alpha, "alpha given"
    if not config.convex:
        return 1e-3, "alpha = 1e-3 (experiments' lambda)"
    return 1.0 / math.sqrt(n), "alpha = 1/sqrt(n) (constant 1, ours)"


def _kappa(config, X, xrep):
    """(kappa, source): the given kappa, or max ||x|| over S and the replacement points."""
    if config.kappa is not None:
        return config.kappa, "kappa given"
    kappa = float(max(np.linalg.norm(X, axis=1).max(), np.linalg.norm(xrep, axis=1).max()))
    return kappa, "kappa = max ||x|| over S and the replacement points"


def _noise(config, n, plan, ns, deviations):
    """(rho, sigma_coef, sigma_off, sigma_paper) of a run (P3 Alg. 1/3 noise).

    Online: sigma_t^2 = 32 G~^2 (n - T_1)/(alpha^2 t^2 rho) (``calibration.p3_sigma2_online``),
    sigma_t = sigma_coef/t, sigma_paper = sigma_{T_1+1} without ``noise_scale``.  Offline:
    sigma^2 = 128 G~^2 log^2 n log(1.25/delta)/(alpha^2 n^2 eps^2) (``p3_sigma2_offline``).
    """
    Gt, T1v, alpha = plan["G_tilde"], plan["T1"], plan["alpha"]
    rho = cal.p3_rho(config.eps, config.delta, exact=config.exact_rho)
    if not config.exact_rho:
        deviations.append("rho from the approximation eps^2/(4 log(1/delta)) (P3-E2: under-noises)")
    if config.online:
        sig_paper_first = math.sqrt(cal.p3_sigma2_online(T1v + 1, n, T1v, Gt, alpha, rho))
        return rho, sig_paper_first * (T1v + 1) * ns, 0.0, sig_paper_first
    sigma_off_paper = math.sqrt(cal.p3_sigma2_offline(n, Gt, alpha, config.eps, config.delta))
    return rho, 0.0, sigma_off_paper * ns, sigma_off_paper


def _centers(config, reps, seed, p, md):
    """((R, p) centres c, note): 'zero', 'random' (point 0 of STREAM_BURNIN per replicate, the
    same on S and S') or the given point of C."""
    default_center = P3_VARIANTS[config.variant][2]
    cspec = default_center if config.center is None else config.center
    R = len(reps)
    if isinstance(cspec, str):
        if cspec == "zero":
            centers = np.zeros((R, p))
        else:
            centers = np.empty((R, p))
            for i, r in enumerate(reps):
                ball_point(rng.key(seed, int(r), STREAM_BURNIN), np.int64(0), p, md,
                           float(config.cons.radius), centers[i])
        return centers, {"zero": "c = 0", "random": "c random in C (point 0 of STREAM_BURNIN)"}[cspec]
    c0 = np.asarray(cspec, dtype=np.float64)
    if c0.shape != (p,):
        raise ValueError(f"center must have {p} finite entries, got shape {c0.shape}")
    return np.tile(c0, (R, 1)), "c given"


def _orders(permute, reps, seed, n):
    """(R, n) stream orders: the data order, or argsort of n uniforms of STREAM_INDEX per replicate."""
    if permute:
        return np.stack([np.argsort(rng.uniforms(seed, int(r), rng.STREAM_INDEX, n), kind="stable")
                         for r in reps]).astype(np.int64)
    return np.tile(np.arange(n, dtype=np.int64), (len(reps), 1))


def _checkpoints(checkpoints, n, T1v):
    """The steps t recorded: every t <= n (n <= 1000) or log-spaced plus T_1, T_1+1; or the given ones."""
    if checkpoints is None:
        return np.arange(1, n + 1, dtype=np.int64) if n <= 1000 else np.unique(np.r_[log_checkpoints(n), T1v, T1v + 1])
    ck = np.unique(np.asarray(checkpoints, dtype=np.int64).ravel())
    if ck.size == 0 or ck[0] < 1 or ck[-1] > n:
        raise ValueError(f"checkpoints must be steps in [1, n={n}]")
    return ck


class _Twin(NamedTuple):
    """The data of one P3 twin run: S as (1, n, d) arrays, the replacements (xrep, yrep) of the
    replaced indices kidx, the replicate ids and seed, n, d, the matrix side md and p."""
    X3: np.ndarray
    y3: np.ndarray
    xrep: np.ndarray
    yrep: np.ndarray
    kidx: np.ndarray
    reps: np.ndarray
    seed: int
    n: int
    d: int
    md: int
    p: int


def _run_kernel(config, tw, alpha, T1v, noise, centers, perms, ck, independent_noise, record_outputs, mirror):
    """The Pairwise GIGA kernel on S and S' (``kernels.giga``): (rec, outs, final).

    ``noise`` = (sigma_coef, sigma_off) (see :func:`_noise`); ``mirror``: the kernel computes
    the replicates whose S' is S once (``twin.mirrored_kidx``).
    """
    lossf, cons = config.lossf, config.cons
    R, p = len(tw.reps), tw.p
    Xext, Yext, krows = extend_with_replacements(tw.X3, tw.y3, tw.xrep, tw.yrep)
    rec = np.full((R, ck.size, N_REC_GIGA), np.nan)
    outs = np.zeros((R, ck.size, 2, p) if record_outputs else (1, 1, 2, 1))
    final = np.zeros((R, 2, 2, p))
    kidx = mirrored_kidx(tw.X3, tw.y3, tw.kidx, tw.xrep, tw.yrep) if mirror else tw.kidx
    giga_kernel(Xext, Yext, kidx, krows, tw.reps, np.int64(tw.seed), perms, lossf.form, lossf.phi,
                float(lossf.q), cons.kind, float(cons.radius), tw.md, float(alpha), np.int64(T1v),
                bool(config.online), float(noise[0]), float(noise[1]), bool(independent_noise),
                np.ascontiguousarray(centers), ck, rec, bool(record_outputs), outs, final)
    return rec, outs, final


def _measures(online, kernel_out, centers, kidx, pos, record_outputs) -> dict:
    """The data variables of a P3 run: distances, regret paths, averages, centre, k, k_position."""
    rec, outs, final = kernel_out
    data = {
        "dist_iterate": (("replicate", "t"), rec[:, :, 0],
                         {"long_name": "||w_t - w'_t|| (noise-free Pairwise GIGA iterates)"}),
        "dist_release": (("replicate", "t"), rec[:, :, 1],
                         {"long_name": "||released_t - released'_t||" if online else
                          "offline: = dist_iterate (nothing is released per step)"}),
        "loss_path": (("replicate", "t"), rec[:, :, 2],
                      {"long_name": "sum_{s=2}^t Lhat_s(v_{s-1}) with l (run on S; v = released "
                                    "point online, internal iterate offline)"}),
        "loss_path_surrogate": (("replicate", "t"), rec[:, :, 3],
                                {"long_name": "the same with l~ = l + (alpha/2)||w - c||^2"}),
        "w_average": (("replicate", "run", "param"), final[:, 0],
                      {"long_name": "non-private average of the GIGA iterates (w_1..w_{n-1} online, w_1..w_n offline)"}),
        "center": (("replicate", "param"), centers, {"long_name": "regulariser centre c"}),
        "k": ("replicate", kidx, {"long_name": "index of the replaced example"}),
        "k_position": ("replicate", pos, {"long_name": "step t at which the replaced example arrives"}),
    }
    if record_outputs:
        data["released"] = (("replicate", "t", "run", "param"), outs,
                            {"long_name": "released point (online) / internal iterate (offline) at t"})
    return data


def _coords_and_attrs(config, tw, ck, plan, sig_coef, independent_noise) -> tuple[dict, dict]:
    """The P3 Dataset's coordinates (``lemma4_bound`` = 8 G~/(alpha t) (P3 Lemma 4), ``sigma_t``,
    ``eta_t``) and its provenance attrs."""
    online, lossf, cons = config.online, config.lossf, config.cons
    Gt, T1v, alpha = plan["G_tilde"], plan["T1"], plan["alpha"]
    tt = ck.astype(float)
    sig_t = np.where(ck > T1v, sig_coef / tt, 0.0) if online else np.zeros(ck.size)
    eta_t = np.where(ck > T1v, (tt - 1) / np.maximum(tt - 2, 1) * 2 / (alpha * tt), np.nan)
    coords = {"replicate": tw.reps, "t": ck, "run": ["S", "S'"],
              "lemma4_bound": ("t", 8.0 * Gt / (alpha * tt), {"long_name": "P3 Lemma 4: 8 G~/(alpha t)"}),
              "sigma_t": ("t", sig_t, {"long_name": "release noise std at t (online)"}),
              "eta_t": ("t", eta_t, {"long_name": "((t-1)/(t-2)) 2/(alpha t) for t > T_1"})}
    return coords, provenance(algorithm=f"p3_{config.variant.lower()}", loss=lossf.name, constraint=cons.name,
                              radius=cons.radius, n=tw.n, d=tw.d, seed=tw.seed,
                              noise="independent" if independent_noise else "shared",
                              neighbour_relation="replace-one", private_algorithm=f"p3_{config.variant.lower()}")


def _record(config, plan, noise, notes, n, ns, independent_noise) -> dict:
    """The calibration record of a P3 run; ``noise`` = (rho, sigma_coef, sigma_off, sigma_paper),
    ``notes`` = (alpha_note, kappa, kappa_source, center_note)."""
    rho, sig_coef, sigma_off, sigma_paper = noise
    alpha_note, kappa, ksrc, center_note = notes
    online, T1v, exact_rho = config.online, plan["T1"], config.exact_rho
    return dict(
        algorithm=f"p3_{config.variant.lower()}", paper=P3_VARIANTS[config.variant][3],
        variant=config.variant, eps=config.eps, delta=config.delta,
        online=online, rho=rho, exact_rho=bool(exact_rho),
        reading="exact rho" if exact_rho else "approximate rho (printed approximation)",
        sigma=(sig_coef / (T1v + 1)) if online else sigma_off,
        sigma_note=("sigma_t at t = T_1+1; sigma_t = sigma_coef/t" if online else
                    "offline output-noise std"),
        sigma_coef=sig_coef, sigma_paper=sigma_paper,
        T1=T1v, T1_paper=plan["T1_paper"], T1_as_in_paper=plan["T1_as_in_paper"],
        T1_note=plan["T1_note"], alpha=plan["alpha"], alpha_note=alpha_note, G=plan["G"], L=plan["L"],
        G_tilde=plan["G_tilde"], L_tilde=plan["L_tilde"], constants_rule=plan["constants_rule"], kappa=kappa,
        constants=ksrc, center=center_note, order="random permutation per replicate" if config.permute
        else "data order", n=n, noise_scale=ns, beta=None, grid_step=None,
        independent_noise=bool(independent_noise))


def _twin(config, X, y, replicates, seed, neighbour, problem):
    """(_Twin, X): the validated data set (one, 2-D), the replicate ids, the seed and the
    replace-one neighbours of a P3 run."""
    lossf = config.lossf
    X, y, X3, y3 = _data(X, y, lossf, allow_3d=False)
    n, d = X.shape
    reps = _replicate_ids(replicates)
    seed = rng.check_seed(seed)
    _, kidx, xrep, yrep = _neighbours(neighbour, X3, y3, reps, seed, problem)
    return _Twin(X3, y3, xrep, yrep, kidx, reps, seed, n, d, d if lossf.matrix else 0,
                 d * d if lossf.matrix else d), X


def p3_giga(X, y, config: P3GigaConfig, *, replicates=100, seed=0, neighbour="farthest",
            independent_noise=False, checkpoints=None, record_outputs=False,
            problem=None, mirror_identical=True) -> xr.Dataset:
    """P3 Algs 1-4 (pairwise private GIGA) with ``config`` (:class:`P3GigaConfig`) on S = (X, y)
    and S'; kernel :mod:`stabsim.kernels.giga`.

    ``replicates`` (a count or replicate ids), ``seed``, ``neighbour`` (replace-one relation),
    ``independent_noise`` (S' draws its noise from STREAM_NOISE_PRIME), ``checkpoints`` (steps
    in [1, n] recorded), ``record_outputs`` (keep ``released``) and ``problem`` describe the run.
    ``mirror_identical``: as in ``run_twin`` (a replicate whose S' is S bit for bit, with shared
    noise, sums each gradient once for both runs; False sums it on S' too).

    One pass over z_1..z_n in the data order (``permute=True``: a random order per replicate,
    argsort of ``n`` uniforms of STREAM_INDEX, shared by S and S', as in the experiments'
    "random permutations").  Burn-in t <= T_1: random points uniform in C (shared by S and S').
    Then eta_t = ((t-1)/(t-2)) 2/(alpha t) GIGA steps on l~ = l + (alpha/2)||w - c||^2 (see
    :func:`p3_plan` for the constants).

    Centre c: StrC variants 0 (the experiments' (lambda/2)||w||^2); OnPairC a random point of
    C (Alg. 2 step 3, point 0 of STREAM_BURNIN, the same on S and S'); OffPairC "any point of
    C" -> 0.  ``center`` overrides ("zero", "random" or a point of C, recorded).

    Noise: online sigma_t^2 = 32 G~^2 (n - T_1)/(alpha^2 t^2 rho) per release t > T_1
    (``calibration.p3_sigma2_online``; rho exact unless ``exact_rho=False``, P3-E1/E2), release
    Pi_C(w_t + n_t); offline sigma^2 = 128 G~^2 log^2 n log(1.25/delta)/(alpha^2 n^2 eps^2)
    (``p3_sigma2_offline``) on the average of w_1..w_n, output Pi_C(...).
    Outputs ``w_priv``: offline Pi_C(w~ + noise); online the online-to-batch average of the
    released w_1..w_{n-1} (Thm 4).  Measurements: ``dist_iterate`` (noise-free GIGA
    iterates, vs ``lemma4_bound`` = 8 G~/(alpha t)), ``dist_release``, ``loss_path`` (regret
    path of the played points with l; ``loss_path_surrogate`` with l~), optionally
    ``released`` (the released points / internal iterates at the checkpoints).

    alpha defaults: StrC 1e-3 (the experiments' lambda), convex 1/sqrt(n) (alpha = O(1/sqrt n),
    constant 1, ours) -- at these T_1 >= n and the run raises InfeasiblePrivacyParameters
    unless T1 is given (errata P3-D feasibility warning).
    """
    if not isinstance(config, P3GigaConfig):
        raise TypeError(f"p3_giga(X, y, config): config must be a P3GigaConfig, got {type(config).__name__}")
    run = p3_run(X, y, config, replicates=replicates, seed=seed, neighbour=neighbour,
                 independent_noise=independent_noise, checkpoints=checkpoints, record_outputs=record_outputs,
                 problem=problem, mirror_identical=mirror_identical)
    return xr.Dataset(run.data, coords=run.coords, attrs=run.attrs)


class P3Run(NamedTuple):
    """A P3 run as plain arrays (:func:`p3_run`): what :func:`p3_giga` makes its Dataset of."""
    data: dict     #: variable name -> (dims, values, attrs)
    coords: dict   #: coordinate name -> values or (dims, values, attrs)
    attrs: dict    #: provenance and calibration attrs (``privacy_*``, ``calibration``)

    def values(self, name: str) -> np.ndarray:
        """The values of a variable or coordinate (a Dataset's ``ds[name].values``)."""
        v = self.data[name] if name in self.data else self.coords[name]
        return np.asarray(v[1] if isinstance(v, tuple) else v)


def p3_run(X, y, config: P3GigaConfig, *, replicates=100, seed=0, neighbour="farthest",
           independent_noise=False, checkpoints=None, record_outputs=False,
           problem=None, mirror_identical=True) -> P3Run:
    """:func:`p3_giga` without the Dataset: the same variables, coordinates and attrs as plain
    arrays and dicts (building the Dataset is most of a small run's time, and the figure studies
    make 1680 runs each: benchmarks/README.md, "run_twin's overhead per call")."""
    if not isinstance(config, P3GigaConfig):
        raise TypeError(f"p3_run(X, y, config): config must be a P3GigaConfig, got {type(config).__name__}")
    tw, X = _twin(config, X, y, replicates, seed, neighbour, problem)
    n, R, reps, seed = tw.n, len(tw.reps), tw.reps, tw.seed
    deviations = []
    ns = _scale_note(config.noise_scale, deviations)
    alpha, alpha_note = _alpha(config, n)
    kappa, ksrc = _kappa(config, X, tw.xrep)
    plan = p3_plan(n, variant=config.variant, alpha=alpha, lossf=config.lossf, cons=config.cons,
                   kappa=kappa, G=config.G, L=config.L, T1=config.T1)
    if not plan["T1_as_in_paper"]:
        deviations.append(plan["T1_note"])
    T1v, alpha = plan["T1"], plan["alpha"]
    noise = _noise(config, n, plan, ns, deviations)
    centers, center_note = _centers(config, reps, seed, tw.p, tw.md)
    default_center = P3_VARIANTS[config.variant][2]
    if config.center is not None and config.center != default_center:
        deviations.append(f"regulariser centre {center_note} (paper: "
                          f"{'random' if default_center == 'random' else 'zero / any point'})")
    perms = _orders(config.permute, reps, seed, n)
    ck = _checkpoints(checkpoints, n, T1v)
    kernel_out = _run_kernel(config, tw, alpha, T1v, noise[1:3], centers, perms, ck,
                             independent_noise, record_outputs, mirror_identical)
    kidx = tw.kidx
    pos = np.array([int(np.flatnonzero(perms[i] == kidx[i])[0]) + 1 if kidx[i] >= 0 else 0
                    for i in range(R)], dtype=np.int64)
    data = _measures(config.online, kernel_out, centers, kidx, pos, record_outputs)
    final = kernel_out[2]
    # every variable in one Dataset call (each later assignment would be a merge)
    data.update(_private_vars(final[:, 1, 0], final[:, 1, 1],
                              "online-to-batch average of the releases" if config.online else "Pi_C(w~ + noise)"))
    data["dist_average"] = ("replicate", np.linalg.norm(final[:, 0, 0] - final[:, 0, 1], axis=1),
                            {"long_name": "||w_average(S) - w_average(S')||"})
    coords, attrs = _coords_and_attrs(config, tw, ck, plan, noise[1], independent_noise)
    notes = (alpha_note, kappa, ksrc, center_note)
    attrs.update(privacy_attrs(_record(config, plan, noise, notes, n, ns, independent_noise), deviations))
    return P3Run(data, coords, attrs)


def _keyword_variant(variant):
    """``p3_<variant>(X, y, **kwargs)``: :func:`p3_giga` with ``P3GigaConfig(variant=variant, ...)``
    built from the config fields among ``kwargs``, the rest passed on (replicates, seed, ...)."""
    name = f"p3_{variant.lower()}"
    doc = (f"P3 {P3_VARIANTS[variant][3]}: ``p3_giga(X, y, P3GigaConfig(variant={variant!r}, ...), ...)`` "
           "from keyword arguments (config fields and run arguments together).")
    return keyword_form(p3_giga, P3GigaConfig, name, doc, variant=variant)


p3_onpairstrc = _keyword_variant("OnPairStrC")
p3_onpairc = _keyword_variant("OnPairC")
p3_offpairstrc = _keyword_variant("OffPairStrC")
p3_offpairc = _keyword_variant("OffPairC")
