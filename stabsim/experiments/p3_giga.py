"""P3 (Huai, Wang, Miao, Xu, Zhang, AAAI 2020: pairwise learning with DP guarantees): private
Pairwise GIGA, the kinds ``p3_giga`` (the theorem studies ``studies/p3_*.toml``) and
``p3_experiment`` (the Figure 1-6 reproductions, the same cell with a ``[figure]`` section).
Their checks are in :mod:`stabsim.analyses.p3_stability`, ``p3_privacy``, ``p3_rates`` and
``p3_reproduction``; the sections and variant tables in :mod:`stabsim.setups.p3`.

Kind ``p3_giga``
    One cell = one P3 algorithm (``[algorithm] variant``: OnPairStrC = Alg. 1, OnPairC =
    Alg. 2, OffPairStrC = Alg. 3, OffPairC = Alg. 4) run by
    :func:`stabsim.privacy.algorithms.p3_giga` on S and on a neighbour S' (shared burn-in
    points and shared noise), reduced per replicate to scalars:

    ``regret``  R_A(n, D) of Eq. (4) for the played points, with the loss of the theorem: the
        alpha-strongly convex loss actually run, l~ = l + (alpha/2)||w||^2, for OnPairStrC
        (Thm 2), the plain loss l for OnPairC (Thm 3; its regulariser centre is random):
        sum_{t=2}^n Lhat_t(w_{t-1}, D_t) (the kernel's ``loss_path`` at t = n) minus
        min_{w in C} sum_{t=2}^n Lhat_t(w, D_t), computed by :func:`regret_minimum` (SLSQP on
        the ball, certified by the Frank-Wolfe gap, stored as ``regret_certificate``).
    ``excess`` / ``excess_surrogate``  Err_P(w_priv) = L_P(w_priv) - min_C L_P estimated on a
        fresh test sample (synthetic problems: ``[data] test_m`` points of the problem's
        STREAM_SPLIT stream; real data: the examples not used for training): the U-statistic
        of w_priv minus the certified ERM value on the same sample (``stabsim.risk.erm``,
        ``reg`` = alpha for the surrogate).  Output w_priv: online the average of the released
        w_1..w_{n-1} (Thm 4), offline Pi_C(w~ + noise) (Alg. 3/4).
    ``objective`` (and ``objective_nonprivate``)  L(w; D) of Eq. (1) with l on the training
        set, for w_priv (and for the "NonPrivate" GIGA baseline of the experiments: a second
        run of the same Pairwise GIGA -- loss, alpha, order -- without noise and with burn-in
        T_1 = 2, the shortest the step size ((t-1)/(t-2)) 2/(alpha t) allows; the average of
        its iterates).
    ``auc`` (``auc_nonprivate``)  test AUC of the scores x.w (linear forms).
    ``knn`` (``knn_nonprivate``, ``knn_euclid``)  test 3-NN accuracy under the learned
        metric (metric forms): :func:`knn_accuracy` with the PSD part of the symmetric W.
    ``dist_iterate`` (replicate, t)  ||w_t - w'_t|| of the noise-free Pairwise GIGA iterates
        (coordinate ``lemma4_bound`` = 8 G~/(alpha t)), ``dist_average``.
    Cell constants (no replicate dim): ``alpha``, ``T1``, ``G_tilde``, ``L_tilde``, ``rho``,
    ``sigma_coef`` (online sigma_t = sigma_coef / t), ``sigma_off`` (offline std), ``delta``.

    Data: a synthetic problem (one training set per cell, data seed = ``[data] seed`` or the
    study seed) or a shipped real data set (``[data] dataset``): replicate r then trains on a
    class-stratified random subset of n examples (counter-based stream ``STREAM_SUBSAMPLE``
    keyed by (data seed, r)) in a random order, and tests on the rest.

    alpha (``[algorithm] alpha_rule``): ``fixed`` (``alpha``), ``sqrt_n`` (alpha_c/sqrt(n),
    the alpha = O(1/sqrt n) of Thm 3/5) or ``burnin`` (the smallest alpha for which the
    paper's T_1 = max(ceil(16 L~^2/alpha^2), 7) is <= ``burnin_frac`` n, L~ = L + alpha).
    T_1 is always the paper's formula unless ``[algorithm] T1`` > 0 overrides it (recorded).
    delta = ``[algorithm] delta``, or 1/n (the experiments' choice) when it is 0.

Kind ``p3_experiment``
    The same cell on a real data set with a ``[figure]`` section: ``number`` (1-6) and
    ``metric`` (``objective``, ``auc`` or ``knn``).  Replicate r trains on a class-stratified
    random subset of n examples in a random order ("20 runs of different random permutations")
    and tests on the remaining examples; delta = 1/n (the figure table and the choices where
    the paper is silent: :mod:`stabsim.analyses.p3_reproduction`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import xarray as xr

from stabsim.engine import rng
from stabsim.setups.p3 import CONVEX, FIGURE, ONLINE, P3_PARAMS
from stabsim.registry import StudyError, register_kind

#: counter-based stream of the per-replicate training subsets of real data sets (local to P3)
STREAM_SUBSAMPLE = 12


# ============================================================================ helpers

@functools.lru_cache(maxsize=8)
def _real(name: str, scale: str):
    from stabsim.engine.real_datasets import load

    X, y, info = load(name, scale=scale)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y, info


def stratified_subset(y, n, seed, replicate):
    """(train, test) index arrays: a class-stratified random subset of n examples of y, in a
    random order, and the remaining examples.  Pure function of (seed, replicate) through the
    counter-based stream ``STREAM_SUBSAMPLE`` (so every replicate is reproducible anywhere)."""
    y = np.asarray(y)
    N = y.size
    if not 4 <= n < N:
        raise ValueError(f"n={n} is not allowed: the data set has {N} examples; need 4 <= n < {N} "
                         "(the rest is the test set)")
    u = rng.uniforms(seed, replicate, STREAM_SUBSAMPLE, 2 * N)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y != 1)
    n_pos = int(min(max(round(n * pos.size / N), 2), pos.size - 1, n - 2))
    pick_p = pos[np.argsort(u[pos], kind="stable")]
    pick_n = neg[np.argsort(u[neg], kind="stable")]
    train = np.r_[pick_p[:n_pos], pick_n[:n - n_pos]]
    train = train[np.argsort(u[N + train], kind="stable")]  # stream order
    test = np.setdiff1d(np.arange(N), train)
    return train, test


def alpha_for(rule, *, n, L, alpha, alpha_c, burnin_frac):
    """alpha of a cell (see the module docstring); L = smoothness of the loss l."""
    if rule == "fixed":
        return float(alpha)
    if rule == "sqrt_n":
        return float(alpha_c / math.sqrt(n))
    if rule == "quarter_n":
        return float(alpha_c / n ** 0.25)
    # burnin: 16 (L + a)^2 / a^2 <= f n  <=>  a >= L / (sqrt(f n / 16) - 1)
    s = math.sqrt(burnin_frac * n / 16.0)
    if s <= 1.0:
        raise ValueError(f"alpha_rule = 'burnin' needs burnin_frac * n > 16 (got {burnin_frac} * {n}): "
                         "the paper's T_1 >= 16 for every alpha")
    a = L / (s - 1.0) * (1.0 + 1e-9)
    while max(math.ceil(16.0 * (L + a) ** 2 / a ** 2), 7) > burnin_frac * n:
        a *= 1.0 + 1e-6
    return a


def regret_minimum(Xo, yo, loss, radius, reg=0.0, center=None):
    """min_{||w|| <= radius} sum_{t=2}^n Lhat_t(w, D_t) (+ reg (n-1)/2 ||w - center||^2), P3 Eq. (4).

    Xo, yo: the data in stream order (z_1..z_n).  Lhat_t(w) = (1/(t-1)) sum_{i<t} l(w; z_t, z_i),
    Eq. (3).  Linear-margin pairwise losses (``ranking_*``, ``auc_*``) with a smooth phi.
    Returns (value, certificate): ``value`` is the objective at the SLSQP solution w_hat and
    ``certificate`` the Frank-Wolfe gap <g, w_hat> + R ||g|| (g the gradient at w_hat), a
    proven bound on value - min (the objective is convex).  The objective and its gradient are
    streamed over the pairs (``stabsim.kernels.regret_objective``): memory O(n d).
    """
    from scipy.optimize import minimize

    from stabsim.kernels.regret_objective import regret_objective
    from stabsim.engine.losses import AUC, LOGISTIC, RANKING, SQUARED, get_loss

    lossf = get_loss(loss)
    if lossf.form not in (AUC, RANKING):
        raise ValueError(f"regret_minimum handles the ranking_* / auc_* losses, got {loss!r}")
    if lossf.phi not in (LOGISTIC, SQUARED):
        raise ValueError(f"regret_minimum needs a smooth phi (logistic or squared), got {loss!r}")
    Xo = np.ascontiguousarray(Xo, dtype=float)
    yo = np.ascontiguousarray(yo, dtype=float)
    n, d = Xo.shape
    cen = np.zeros(d) if center is None else np.ascontiguousarray(center, dtype=float)
    lam = float(reg) * (n - 1)
    row_val, row_grad = np.zeros(n), np.zeros((n, d))

    def f(w):
        return regret_objective(Xo, yo, np.ascontiguousarray(w, dtype=float), cen, lam,
                                lossf.form == RANKING, lossf.phi, row_val, row_grad)

    R = float(radius)
    cons = {"type": "ineq", "fun": lambda w: R * R - w @ w, "jac": lambda w: -2.0 * w}
    best = None
    w0 = np.zeros(d)
    for _ in range(3):
        res = minimize(f, w0, jac=True, method="SLSQP", constraints=[cons],
                       options={"ftol": 1e-14, "maxiter": 500})
        w = res.x
        nw = np.linalg.norm(w)
        if nw > R:
            w = w * (R / nw)
        val, g = f(w)
        cert = max(float(g @ w + R * np.linalg.norm(g)), 0.0)
        if best is None or val + cert < best[0] + best[1]:
            best = (val, cert)
        if cert <= 1e-8 * max(1.0, abs(val)):
            break
        w0 = w
    return best


def k_nearest(D, k):
    """The columns of the k smallest entries of each row of D, in the order of
    ``np.argsort(D, axis=1, kind="stable")[:, :k]`` (by value, ties by column), without sorting whole
    rows: the k-th smallest value v of a row (``np.partition``) splits it into the entries < v (all
    taken) and the entries == v (taken in column order until k are taken); only those k are sorted.
    Rows with a NaN fall back to the full sort."""
    D = np.asarray(D, dtype=float)
    m, n = D.shape
    if k >= n or not np.isfinite(D).all():
        return np.argsort(D, axis=1, kind="stable")[:, :k]
    v = np.partition(D, k - 1, axis=1)[:, k - 1:k]
    less = D < v
    tie = D == v
    need = k - less.sum(axis=1, keepdims=True)               # >= 1 entries == v per row
    take = less | tie
    over = np.nonzero(tie.sum(axis=1) > need[:, 0])[0]        # rows with more ties at v than needed
    if over.size:
        t = tie[over]
        take[over] = less[over] | (t & (np.cumsum(t, axis=1) <= need[over]))
    cols = np.nonzero(take)[1].reshape(m, k)                 # per row, in column order
    by_value = np.argsort(np.take_along_axis(D, cols, axis=1), axis=1, kind="stable")
    return np.take_along_axis(cols, by_value, axis=1)


def knn_accuracy(Wmat, Xtr, ytr, Xte, yte, k=3):
    """Test accuracy of the k-NN classifier (majority vote, k odd; ties -> the nearest label)
    under the Mahalanobis distance (x - x')^T M (x - x'), M = the PSD part of sym(Wmat)
    (negative eigenvalues clipped to 0; P3 Ex. 1's C = {W symmetric, ||W||_F <= 1} is not
    restricted to PSD matrices, so the learned W need not define a metric).  ``Wmat`` None:
    the Euclidean distance.  Returns the fraction of test points classified correctly."""
    Xtr, Xte = np.asarray(Xtr, float), np.asarray(Xte, float)
    ytr, yte = np.asarray(ytr, float), np.asarray(yte, float)
    k = int(k)
    if not 1 <= k <= len(ytr):
        raise ValueError(f"k={k} is not allowed: need 1 <= k <= {len(ytr)} (training points)")
    if Wmat is None:
        A = Xtr, Xte
    else:
        S = 0.5 * (np.asarray(Wmat, float) + np.asarray(Wmat, float).T)
        lam, V = np.linalg.eigh(S)
        Lh = V * np.sqrt(np.clip(lam, 0.0, None))
        A = Xtr @ Lh, Xte @ Lh
    Ptr, Pte = A
    D = (Pte ** 2).sum(1)[:, None] + (Ptr ** 2).sum(1)[None, :] - 2.0 * Pte @ Ptr.T
    order = k_nearest(D, k)
    votes = ytr[order].sum(axis=1)
    pred = np.where(votes > 0, 1.0, np.where(votes < 0, -1.0, ytr[order[:, 0]]))
    return float(np.mean(pred == yte))


def _log_ckpts(n, T1, m):
    ck = np.unique(np.round(np.geomspace(1, n, m)).astype(np.int64))
    return np.unique(np.r_[ck, min(T1 + 1, n), n])


# ============================================================================ the cell: setting and runs

def _validate(spec):
    from stabsim.engine.constraints import get_constraint
    from stabsim.engine.losses import get_loss

    for cell in spec.cells():
        p = spec.cell_params(cell)
        a, m = p["algorithm"], p["measure"]
        lossf, cons = get_loss(a["loss"]), get_constraint(a["constraint"])
        if m["auc"] and lossf.matrix:
            raise StudyError(f"[measure] auc needs a linear loss, got {a['loss']!r}")
        if m["knn"] and not lossf.matrix:
            raise StudyError(f"[measure] knn needs a metric loss (metric_logistic), got {a['loss']!r}")
        if m["regret"] and lossf.matrix:
            raise StudyError("[measure] regret is implemented for the linear losses only")
        if not math.isfinite(cons.radius):
            raise StudyError(f"[algorithm] constraint must be a ball ('l2:R' / 'frobenius:R'), got {a['constraint']!r}")


def _setup(p, seed):
    """Per-cell constants: loss, constraint, kappa, alpha, delta."""
    from stabsim.engine.constraints import get_constraint
    from stabsim.engine.losses import get_loss

    a, d = p["algorithm"], p["data"]
    lossf, cons = get_loss(a["loss"]), get_constraint(a["constraint"])
    if d["dataset"]:
        X, y, info = _real(d["dataset"], d["scale"])
        kappa = 1.0 if d["scale"].endswith("unit-norm") else float(np.linalg.norm(X, axis=1).max())
        pb = None
    else:
        from stabsim.registry import twin_problem
        pb = twin_problem(d)
        kappa = float(pb.kappa)
    n = d["n"]
    L = float(lossf.L(kappa, cons.radius))
    rule = a["alpha_rule"]
    if rule == "auto":
        rule = "sqrt_n" if CONVEX[a["variant"]] else "fixed"
    alpha = alpha_for(rule, n=n, L=L, alpha=a["alpha"], alpha_c=a["alpha_c"],
                      burnin_frac=a["burnin_frac"])
    delta = a["delta"] if a["delta"] > 0 else 1.0 / n
    return lossf, cons, kappa, alpha, delta, pb


def _giga_kwargs(spec, a, delta, alpha, kappa):
    """The keyword arguments of :func:`stabsim.privacy.algorithms.p3_giga` shared by every run of the
    cell: its ``config`` (a ``P3GigaConfig``), ``seed`` and ``neighbour``."""
    from stabsim.privacy.algorithms import P3GigaConfig

    config = P3GigaConfig(variant=a["variant"], eps=a["eps"], delta=delta, alpha=alpha, loss=a["loss"],
                          constraint=a["constraint"], T1=a["T1"] or None, kappa=kappa, exact_rho=a["exact_rho"])
    return dict(config=config, seed=spec.seed, neighbour=a["neighbour"])


def _data_sets(d, pb, reps, data_seed):
    """[(X, y, Xt, yt)]: one shared (training, test) pair for a synthetic problem, else one per
    replicate (a class-stratified subset of the real data set and the rest as its test set)."""
    n = d["n"]
    if d["dataset"]:
        Xall, yall, _ = _real(d["dataset"], d["scale"])
        splits = [stratified_subset(yall, n, data_seed, int(r)) for r in reps]
        return [(Xall[tr], yall[tr], Xall[te], yall[te]) for tr, te in splits]
    X, y = pb.sample(n, data_seed, 0)
    Xt, yt = pb.sample(d["test_m"], data_seed, 0, stream=rng.STREAM_SPLIT)
    return [(X, y, Xt, yt)]


def _runs(sets, reps, kw, *, n, a, alpha, lossf, cons, kappa, nonprivate):
    """The private run(s) on S and S' (``p3_run``: ``p3_giga``'s arrays without the Dataset) and,
    when ``nonprivate``, the (R, p) NonPrivate averages (else None): one call for a shared data set,
    one per replicate otherwise, those on numba's threads at once (``map_in_threads``: each run is
    a pure function of its data set and replicate, so the numbers are those of a loop).  The
    checkpoints (log-spaced, plus T_1 + 1 and n) come from a dry plan of the burn-in T_1."""
    from stabsim.privacy.algorithms import p3_plan
    from stabsim.runtime.thread_pools import map_in_threads

    T1 = p3_plan(n, variant=a["variant"], alpha=alpha, lossf=lossf, cons=cons, kappa=kappa,
                 T1=a["T1"] or None)["T1"]
    ck = _log_ckpts(n, T1, a["checkpoints"])
    done = map_in_threads(lambda i: _runs_of_set(sets[i], reps if len(sets) == 1 else reps[i:i + 1],
                                                 kw, ck, n, nonprivate), range(len(sets)))
    runs = [run for run, _ in done]
    return runs, (np.concatenate([wa for _, wa in done], axis=0) if nonprivate else None)


def _runs_of_set(data, rr, kw, ck, n, nonprivate):
    """The private run of replicates ``rr`` on one data set and, when ``nonprivate``, the (R, p)
    NonPrivate baseline (the experiments' "GIGA for pairwise losses", Kar et al. 2013): the same
    Pairwise GIGA on the same loss, order and alpha, without noise and with the shortest burn-in
    the step size allows (T_1 = 2, so eta_t is defined from t = 3); its average of the iterates."""
    import dataclasses

    from stabsim.privacy.algorithms import p3_run

    X, y = data[:2]
    run = p3_run(X, y, replicates=rr, checkpoints=ck, **kw)
    if not nonprivate:
        return run, None
    base = p3_run(X, y, replicates=rr, checkpoints=np.array([n]),
                  **dict(kw, config=dataclasses.replace(kw["config"], T1=2), neighbour="same"))
    return run, base.values("w_average")[:, 0]


# ============================================================================ the cell: measures

def _regret_vars(sets, a, cons, alpha, lp, lps, R) -> dict:
    """``regret`` (Eq. (4)) and its comparator's certificate.  StrC variants: the theorem's loss is the
    alpha-strongly convex l~ = l + (alpha/2)||w||^2 (centre 0); convex variants (Thm 3): the regret is
    w.r.t. l itself.  One minimisation per data set."""
    strc = not CONVEX[a["variant"]]
    regv, certs = np.empty(R), np.empty(R)
    cache = {}
    for i in range(R):
        j = 0 if len(sets) == 1 else i
        if j not in cache:
            X, y = sets[j][:2]
            cache[j] = regret_minimum(X, y, a["loss"], cons.radius, reg=alpha if strc else 0.0)
        v0, c0 = cache[j]
        regv[i], certs[i] = (lps[i] if strc else lp[i]) - v0, c0
    return {"regret": ("replicate", regv,
                       {"long_name": "R_A(n, D), Eq. (4), with l~ = l + (alpha/2)||w||^2 (StrC) or l (convex)"}),
            "regret_certificate": ("replicate", certs,
                                   {"long_name": "proven bound on (computed min) - (true min) of the comparator"})}


def _excess_vars(sets, a, alpha, Wp, R) -> dict:
    """``excess`` / ``excess_surrogate``: L_T(w_priv) - min_C L_T on the test sample T (certified ERM,
    once per test sample), with l and with l + (alpha/2)||w||^2; the larger certificate of the two."""
    from stabsim.risk import empirical_risk, erm
    ex, exs, cert = np.empty(R), np.empty(R), np.empty(R)
    cache = {}
    for i in range(R):
        j = 0 if len(sets) == 1 else i
        Xt, yt = sets[j][2:]
        if j not in cache:
            r0 = erm(Xt, yt, a["loss"], a["constraint"])
            r1 = erm(Xt, yt, a["loss"], a["constraint"], reg=alpha)
            cache[j] = (r0.value, r0.certificate, r1.value, r1.certificate)
        v0, c0, v1, c1 = cache[j]
        F = float(empirical_risk(Wp[i], Xt, yt, a["loss"]))
        ex[i] = F - v0
        exs[i] = F + 0.5 * alpha * float(Wp[i] @ Wp[i]) - v1
        cert[i] = max(c0, c1)
    return {"excess": ("replicate", ex, {"long_name": "L_T(w_priv) - min_C L_T (test sample T), loss l"}),
            "excess_surrogate": ("replicate", exs, {"long_name": "the same with l + (alpha/2)||w||^2"}),
            "excess_certificate": ("replicate", cert, {"long_name": "ERM certificate on the test sample"})}


def _objective_vars(sets, a, Wp, Wa, R) -> dict:
    """``objective`` L(w; D) of P3 Eq. (1) on the training set, for w_priv and the NonPrivate average
    (both in one call: two parameter vectors, one per thread, each value that of its own call)."""
    from stabsim.risk import empirical_risk
    ob, obn = np.empty(R), np.empty(R)
    for i in range(R):
        X, y = sets[0 if len(sets) == 1 else i][:2]
        ob[i], obn[i] = empirical_risk(np.stack([Wp[i], Wa[i]]), X, y, a["loss"])
    return {"objective": ("replicate", ob, {"long_name": "L(w_priv; D) (Eq. 1, loss l, training set)"}),
            "objective_nonprivate": ("replicate", obn,
                                     {"long_name": "L(w_nonprivate; D): noise-free GIGA average (NonPrivate)"})}


def _auc_vars(sets, Wp, Wa, R) -> dict:
    """``auc``: test AUC of the scores x.w, for w_priv and the NonPrivate average."""
    from stabsim.risk import auc
    au, aun = np.empty(R), np.empty(R)
    for i in range(R):
        Xt, yt = sets[0 if len(sets) == 1 else i][2:]
        au[i] = float(auc(Wp[i], Xt, yt))
        aun[i] = float(auc(Wa[i], Xt, yt))
    return {"auc": ("replicate", au, {"long_name": "test AUC of w_priv"}),
            "auc_nonprivate": ("replicate", aun, {"long_name": "test AUC of the NonPrivate GIGA average"})}


def _knn_vars(sets, ms, Wp, Wa, R) -> dict:
    """``knn``: test k-NN accuracy under the metric of w_priv, of the NonPrivate average and Euclidean
    (the replicates on numba's threads at once: numpy's distance products and partitions release
    the GIL)."""
    from stabsim.runtime.thread_pools import map_in_threads

    dd = sets[0][0].shape[1]

    def accuracies(i):
        X, y, Xt, yt = sets[0 if len(sets) == 1 else i]
        return (knn_accuracy(Wp[i].reshape(dd, dd), X, y, Xt, yt, ms["k_nn"]),
                knn_accuracy(Wa[i].reshape(dd, dd), X, y, Xt, yt, ms["k_nn"]),
                knn_accuracy(None, X, y, Xt, yt, ms["k_nn"]))
    kn, knn_np, kne = (np.array(v, dtype=float).reshape(R) for v in zip(*map_in_threads(accuracies, range(R))))
    return {"knn": ("replicate", kn, {"long_name": f"test {ms['k_nn']}-NN accuracy, metric of w_priv"}),
            "knn_nonprivate": ("replicate", knn_np, {"long_name": "the same for the NonPrivate GIGA average"}),
            "knn_euclid": ("replicate", kne, {"long_name": "the same with the Euclidean metric"})}


def _stored_constants(rec, a, alpha, delta, kappa, dim) -> dict:
    """The cell constants stored without a replicate dim (the calibration the run recorded)."""
    return dict(alpha=alpha, T1=int(rec["T1"]), G=float(rec["G"]), L=float(rec["L"]),
                G_tilde=float(rec["G_tilde"]), L_tilde=float(rec["L_tilde"]), rho=float(rec["rho"]),
                sigma_coef=float(rec["sigma_coef"]), sigma_off=float(rec["sigma"]) if not ONLINE[a["variant"]] else 0.0,
                delta=delta, kappa=kappa, T1_paper=int(rec["T1_paper"]),
                T1_as_in_paper=int(rec["T1_as_in_paper"] == "yes"), dim=dim)


@register_kind("p3_giga", params=P3_PARAMS, validate=_validate,
               description="P3 Algs 1-4 (private pairwise GIGA) on S and S': regret, excess risk, objective, AUC, k-NN")
def p3_cell(spec, cell, replicates) -> xr.Dataset:
    """One cell of a ``p3_giga`` study (see the module docstring)."""
    p = spec.cell_params(cell)
    a, d, ms = p["algorithm"], p["data"], p["measure"]
    reps = np.asarray(replicates, dtype=np.int64)
    lossf, cons, kappa, alpha, delta, pb = _setup(p, spec.seed)
    data_seed = spec.seed if d["seed"] is None else d["seed"]
    n = d["n"]
    kw = _giga_kwargs(spec, a, delta, alpha, kappa)
    sets = _data_sets(d, pb, reps, data_seed)
    runs, Wa = _runs(sets, reps, kw, n=n, a=a, alpha=alpha, lossf=lossf, cons=cons, kappa=kappa,
                     nonprivate=bool(ms["objective"] or ms["auc"] or ms["knn"]))
    ds0 = runs[0]
    rec = {k[len("privacy_"):]: ds0.attrs[k] for k in ds0.attrs if k.startswith("privacy_")}
    R = len(reps)
    out = {}
    cat = lambda name: np.concatenate([r.values(name) for r in runs], axis=0)  # noqa: E731
    out["dist_iterate"] = (("replicate", "t"), cat("dist_iterate"),
                           {"long_name": "||w_t - w'_t|| (noise-free Pairwise GIGA iterates)"})
    out["dist_average"] = ("replicate", cat("dist_average"),
                           {"long_name": "||average(S) - average(S')|| (non-private average of the iterates)"})
    out["k_position"] = ("replicate", cat("k_position"), {"long_name": "step at which the replaced example arrives"})
    Wp = cat("w_priv")[:, 0]          # (R, p) on S
    at_n = int(np.flatnonzero(ds0.values("t") == n)[0])   # the checkpoint t = n
    lp = np.stack([r.values("loss_path")[:, at_n] for r in runs]).reshape(R)
    lps = np.stack([r.values("loss_path_surrogate")[:, at_n] for r in runs]).reshape(R)
    if ms["regret"]:
        out.update(_regret_vars(sets, a, cons, alpha, lp, lps, R))
    if ms["excess"]:
        out.update(_excess_vars(sets, a, alpha, Wp, R))
    if ms["objective"]:
        out.update(_objective_vars(sets, a, Wp, Wa, R))
    if ms["auc"]:
        out.update(_auc_vars(sets, Wp, Wa, R))
    if ms["knn"]:
        out.update(_knn_vars(sets, ms, Wp, Wa, R))
    t = ds0.values("t")
    for k, v in _stored_constants(rec, a, alpha, delta, kappa, int(Wp.shape[1])).items():
        out[k] = ((), v)
    ds = xr.Dataset(out, coords={"replicate": reps, "t": t,
                                 "lemma4_bound": ("t", ds0.values("lemma4_bound")),
                                 "sigma_t": ("t", ds0.values("sigma_t"))})
    ds.attrs.update(variant=a["variant"], deviations=str(rec.get("deviations", "none")),
                    data=d["dataset"] or (pb.name if pb is not None else ""), data_seed=int(data_seed),
                    calibration=str(ds0.attrs.get("calibration", "")))
    return ds


register_kind("p3_experiment", params={**P3_PARAMS, "figure": FIGURE}, validate=_validate,
              description="P3 experiments: private pairwise GIGA on subsets of a real data set")(p3_cell)
