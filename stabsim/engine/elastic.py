"""Pairwise locally elastic stability (P2 Def. 6, Eq. 4, Lemma 1) and P1 Thm 8/9 helpers.

``locally_elastic_stability``  P2 Def. 6 for the (regularised) ERM algorithm
        A_D = argmin_w F_D(w) + reg/2 ||w||^2,   F_D = 1/(n(n-1)) sum_{j != k} l(w; z_j, z_k),
    with the REMOVAL neighbour relation: D^{-i} = D without z_i (n - 1 points), unlike the
    replace-one relation used everywhere else in stabsim (P0, P1, P3, P4).  Two estimators
    of A_{D^{-i}} - A_D:

    ``exact``      leave-one-out: ``risk.erm`` re-solved on D^{-i} (same reg, F normalised by
                   (n-1)(n-2), i.e. the same algorithm run on the smaller data set), with the
                   ERM certificates reported.
    ``influence``  the pairwise influence function (P2 Eq. 4), one Newton step from A_D:
                   A_{D^{-i}} - A_D ~= H^{-1} [ 1/(n(n-1)) sum_{z' != z_i} (grad l(A_D; z_i, z')
                                              + grad l(A_D; z', z_i))  +  (2 reg / n) A_D ],
                   H = grad^2 F_D(A_D) + reg I, computed EXACTLY (closed form over all ordered
                   pairs: phi''(m) c^2 (x_a - x_b)(x_a - x_b)^T for m = c w.(x_a - x_b)).
                   For reg = 0 this is Eq. (4) verbatim.  The (2 reg / n) A_D term is the
                   regulariser's first-order correction: removing z_i reweights F from
                   1/(n(n-1)) to 1/((n-1)(n-2)), i.e. by 1 + 2/(n-2) relative to reg/2 ||w||^2.

    Then beta_n(z_i; z_j, z_k) = |l(A_D; z_j, z_k) - l(A_{D^{-i}}; z_j, z_k)| over test pairs
    (default: all n(n-1) ordered pairs of D) and the summary sup_i n * mean_pairs beta, the
    estimator of sup_z E_{z', z''} beta(z; z', z'') (P2 Thm 3, beta_n = beta/n).

``grad_norm_sq_path``  ||grad F_S(w)||^2 for outputs of shape (..., p) (P1 Thm 8).
``pl_gap``             F_S(w) - min F_S for outputs of shape (..., p) (P1 Thm 9).

Supported losses: the linear pairwise forms (``auc_*``, ``auc_ordered_*``, ``ranking_*``).
The influence estimator needs a smooth phi (logistic or squared); hinge and q-hinge raise
a ValueError.  Metric-learning and pointwise losses are not supported here.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from stabsim import risk as _risk
from stabsim.engine.losses import AUC, AUC_ORDERED, HINGE, LOGISTIC, RANKING, SQUARED, Loss, get_loss
from stabsim.engine.measures import SUP_NOTE, mean_ci
from stabsim.engine.validation import check_Xy

__all__ = ["grad_norm_sq_path", "locally_elastic_stability", "pair_matrices", "pl_gap"]

ESTIMATORS = ("exact", "influence")


# ---- vectorised pair losses for the linear pairwise forms -----------------------------------

def _as_loss(loss) -> Loss:
    return loss if isinstance(loss, Loss) else get_loss(loss)


def _check_linear_pairwise(lf: Loss):
    if not lf.pairwise or lf.matrix or lf.form not in (AUC, AUC_ORDERED, RANKING):
        raise ValueError(f"locally elastic stability is implemented for the linear pairwise losses "
                         f"(auc_*, auc_ordered_*, ranking_*); got {lf.name!r}")


def _coef(form, ya, yb):
    """c(y_a, y_b) with margin m = c w.(x_a - x_b); 'active' = whether the pair contributes."""
    ya = np.asarray(ya, float)
    yb = np.asarray(yb, float)
    shape = np.broadcast(ya, yb).shape
    if form == AUC:
        c = 0.5 * (ya - yb)
        active = c != 0.0
    elif form == AUC_ORDERED:
        c = ((ya == 1.0) & (yb == -1.0)).astype(float)
        active = c != 0.0
    else:  # RANKING: same-label pairs give phi(0) (constant in w)
        c = ya - yb
        active = np.ones(shape, bool)
    return np.broadcast_to(c, shape), np.broadcast_to(active, shape)


def _phi(phi, m, q=2.0):
    """phi(m), phi'(m), phi''(m) elementwise (phi'' only meaningful for smooth phi)."""
    if phi == LOGISTIC:
        v = np.logaddexp(0.0, -m)
        s = 0.5 * (1.0 + np.tanh(0.5 * m))           # sigmoid(m), stable
        return v, s - 1.0, s * (1.0 - s)
    if phi == SQUARED:
        r = 1.0 - m
        return r * r, -2.0 * r, np.full_like(m, 2.0)
    if phi == HINGE:
        return np.maximum(1.0 - m, 0.0), np.where(m < 1.0, -1.0, 0.0), np.full_like(m, np.nan)
    r = np.maximum(1.0 - m, 0.0)  # QHINGE
    return r ** q, -q * r ** (q - 1.0), np.full_like(m, np.nan)


def _pair_values(lf: Loss, w, Xa, ya, Xb, yb):
    """l(w; z_a, z_b) for aligned arrays of pairs (m,)."""
    c, act = _coef(lf.form, np.asarray(ya, float), np.asarray(yb, float))
    m = c * ((Xa - Xb) @ w)
    v = _phi(lf.phi, m, lf.q)[0]
    return np.where(act, v, 0.0)


def pair_matrices(w, X, y, loss):
    """All ordered pairs of (X, y) at w: values V (n, n), phi' and phi'' times c, c^2, and c.

    Diagonal entries (j = k) are set to 0 and excluded.  Returns (V, D1, D2, C) with
    V[a, b] = l(w; z_a, z_b), D1[a, b] = c phi'(m), D2[a, b] = c^2 phi''(m), so that
    grad l(w; z_a, z_b) = D1[a, b] (x_a - x_b) and its Hessian D2[a, b] (x_a - x_b)(x_a - x_b)^T.
    """
    lf = _as_loss(loss)
    _check_linear_pairwise(lf)
    X = np.asarray(X, float)
    y = np.asarray(y, float)
    s = X @ np.asarray(w, float)
    c, act = _coef(lf.form, y[:, None], y[None, :])
    m = c * (s[:, None] - s[None, :])
    v, d1, d2 = _phi(lf.phi, m, lf.q)
    off = act & ~np.eye(len(y), dtype=bool)
    V = np.where(off, v, 0.0)
    D1 = np.where(off, c * d1, 0.0)
    D2 = np.where(off, c * c * d2, 0.0)
    return V, D1, D2, c


def _hessian(D2, X):
    """sum_{a != b} D2[a, b] (x_a - x_b)(x_a - x_b)^T (unnormalised), exact."""
    S = D2 + D2.T
    r = S.sum(axis=1)
    return (X.T * r) @ X - X.T @ S @ X


# ---- P2 Def. 6 ---------------------------------------------------------------------------------

def _test_pairs(test_pairs, X, y):
    """(Xa, ya, Xb, yb, description) for the test pairs."""
    n = len(y)
    if test_pairs is None:
        a, b = np.nonzero(~np.eye(n, dtype=bool))
        return X[a], y[a], X[b], y[b], f"all n(n-1) = {n * (n - 1)} ordered pairs of D"
    if isinstance(test_pairs, tuple) and len(test_pairs) == 4:
        Xa, ya, Xb, yb = (np.asarray(t, float) for t in test_pairs)
        if Xa.shape != Xb.shape or Xa.ndim != 2 or Xa.shape[1] != X.shape[1] \
                or ya.shape != (len(Xa),) or yb.shape != (len(Xa),):
            raise ValueError("test_pairs as (Xa, ya, Xb, yb) needs Xa, Xb of shape (m, d) and ya, yb of shape (m,)")
        return Xa, ya, Xb, yb, f"{len(Xa)} given external pairs"
    idx = np.asarray(test_pairs)
    if idx.ndim != 2 or idx.shape[1] != 2 or not np.issubdtype(idx.dtype, np.integer) \
            or idx.min() < 0 or idx.max() >= n:
        raise ValueError("test_pairs must be None, an integer array (m, 2) of indices into D, "
                         "or a tuple (Xa, ya, Xb, yb)")
    return X[idx[:, 0]], y[idx[:, 0]], X[idx[:, 1]], y[idx[:, 1]], f"{len(idx)} given index pairs of D"


def locally_elastic_stability(X, y, loss, *, constraint="none", reg=0.01, indices=None,
                              test_pairs=None, estimators=ESTIMATORS, tol=1e-11,
                              level=0.95) -> xr.Dataset:
    """Pairwise locally elastic stability of regularised ERM (P2 Def. 6), removal neighbours.

    For each i in ``indices`` (default: all of 0..n-1) compares A_D with A_{D^{-i}}, where
    D^{-i} is D with z_i REMOVED (``neighbour_relation = "remove-one"``), by

    * ``exact``: ``risk.erm`` on D and on D^{-i} (tolerance ``tol``; certificates reported;
      with reg > 0 the objective is reg-strongly convex, so ||w - w*|| <= sqrt(2 cert / reg)
      is reported as ``w_err_bound``);
    * ``influence``: the pairwise influence function, P2 Eq. (4), with the exact Hessian
      and the regulariser's (2 reg / n) A_D correction (see the module docstring).

    beta_n(z_i; z_j, z_k) = |l(A_D; z_j, z_k) - l(A_{D^{-i}}; z_j, z_k)| over the test pairs
    (None: all ordered pairs of D; an int array (m, 2) of indices into D; or a tuple
    (Xa, ya, Xb, yb) of external pairs).

    Parameters
    ----------
    loss : a linear pairwise loss (``ranking_logistic``, ``auc_squared``, ...).  Requesting the
        ``influence`` estimator with a non-smooth loss (hinge, q-hinge) raises ValueError.
    constraint : only ``"none"`` (the influence function assumes an interior minimiser).
    reg : lambda >= 0 of (lambda/2)||w||^2, makes the ERM unique / PL (P2 Lemma 3 remark).

    Returns
    -------
    xarray.Dataset with dims ``i`` (removed index; coordinate = position in D), ``estimator``
    (``exact``, ``influence``), ``param``, and variables

    ``delta``            (i, estimator, param) A_{D^{-i}} - A_D
    ``delta_norm``       (i, estimator) ||A_{D^{-i}} - A_D||
    ``rel_err``          (i) ||delta_influence - delta_exact|| / ||delta_exact||
    ``beta_mean``        (i, estimator) mean over test pairs of beta_n(z_i; z_j, z_k)
    ``beta_max``         (i, estimator) max over test pairs
    ``beta_mean_lemma1`` (i) mean over test pairs of |delta_influence . grad l(A_D; z_j, z_k)|
                         (P2 Lemma 1's linearisation)
    ``n_beta``           (i, estimator) n * beta_mean
    ``cert_loo``, ``w_err_bound_loo`` (i) ERM certificates of the leave-one-out solves
    ``estimate``, ``lower``, ``upper`` (estimator): sup_i n * beta_mean.  With all i this is
        the exact value for this D (lower = upper = estimate, up to the ERM accuracy); with a
        subset of i it is a lower bound on the sup over i (upper = NaN).
    ``mean_n_beta``, ``mean_n_beta_lower``, ``mean_n_beta_upper`` (estimator): mean over i of
        n * beta_mean with a Student t-interval (``measures.mean_ci`` over i).
    attrs: quantity, neighbour_relation = "remove-one", loss, n, d, reg, constraint, hessian,
    cert_full, w_err_bound_full, erm_method, test_pairs, note, level, ci_method.
    """
    lf, estimators, reg, X, y, idx, all_i = _validate_elastic(X, y, loss, constraint, reg, indices,
                                                              estimators)
    n, d = X.shape
    full, w, D1, Hinv, pairs, tp_desc, l_full, d1_t = _at_full_solution(X, y, lf, reg, tol, estimators,
                                                                         test_pairs)
    loo = _removal_loop(X, y, lf, reg, tol, estimators, idx, w, D1, Hinv, pairs, l_full, d1_t)
    ds, ci_method = _elastic_dataset(n, d, reg, estimators, idx, all_i, level, *loo)
    _elastic_attrs(ds, lf, n, d, reg, full, tol, tp_desc, idx, all_i, level, ci_method)
    return ds


def _validate_elastic(X, y, loss, constraint, reg, indices, estimators):
    """Checked inputs of ``locally_elastic_stability``: the loss, the estimators, reg, the data as
    float arrays, the removed indices i and whether they are all of 0..n-1."""
    lf = _as_loss(loss)
    _check_linear_pairwise(lf)
    estimators = tuple(estimators)
    bad = set(estimators) - set(ESTIMATORS)
    if bad or not estimators:
        raise ValueError(f"estimators must be a non-empty subset of {ESTIMATORS}, got {estimators}")
    if "influence" in estimators and not (lf.smooth and lf.phi in (LOGISTIC, SQUARED)):
        raise ValueError(f"the influence-function estimator (P2 Eq. 4) needs a twice-differentiable "
                         f"loss (logistic or squared phi); {lf.name!r} is not smooth. Use "
                         f"estimators=('exact',) for it.")
    if constraint not in (None, "none"):
        raise ValueError(f"constraint {constraint!r} is not supported: the influence function (Eq. 4) "
                         "assumes an unconstrained (interior) minimiser; use constraint='none' with reg > 0")
    reg = float(reg)
    if not (reg >= 0 and math.isfinite(reg)):
        raise ValueError(f"reg must be finite and >= 0, got {reg!r}")
    X, y = check_Xy(X, y)
    X = np.asarray(X, float)
    y = np.asarray(y, float)
    n, d = X.shape
    if n < 4:
        raise ValueError(f"need n >= 4 points (D^{{-i}} must keep at least 3), got n = {n}")
    idx = np.arange(n) if indices is None else np.asarray(indices, dtype=np.int64).ravel()
    if idx.size == 0 or idx.min() < 0 or idx.max() >= n or np.unique(idx).size != idx.size:
        raise ValueError(f"indices must be distinct integers in [0, {n}), got {indices!r}")
    all_i = indices is None or np.unique(idx).size == n
    return lf, estimators, reg, X, y, idx, all_i


def _at_full_solution(X, y, lf, reg, tol, estimators, test_pairs):
    """Everything at A_D (P2 Def. 6): the certified ERM on D, the pair derivative matrix D1, the
    inverse exact Hessian (influence estimator, P2 Eq. 4), the test pairs with their losses, and
    the test-pair derivative weights for P2 Lemma 1's linearisation."""
    n, d = X.shape
    full = _risk.erm(X, y, lf, "none", tol=tol, reg=reg)
    if not full.certificate <= max(1e3 * tol, 1e-8):
        raise ValueError(f"ERM on D is not certified (certificate {full.certificate:.3g} > tol): the "
                         "minimiser may not exist (e.g. separable data with reg = 0); use reg > 0")
    w = full.w
    _, D1, D2, _ = pair_matrices(w, X, y, lf)
    N = n * (n - 1.0)
    Hinv = None
    if "influence" in estimators:
        H = _hessian(D2, X) / N + reg * np.eye(d)
        Hinv = np.linalg.inv(H)
    Xa, ya, Xb, yb, tp_desc = _test_pairs(test_pairs, X, y)
    l_full = _pair_values(lf, w, Xa, ya, Xb, yb)
    # gradients of the test pairs at A_D, for Lemma 1: D1_test * (x_a - x_b)
    c_t, act_t = _coef(lf.form, ya, yb)
    dphi_t = _phi(lf.phi, c_t * ((Xa - Xb) @ w), lf.q)[1]
    d1_t = np.where(act_t, c_t * dphi_t, 0.0)
    return full, w, D1, Hinv, (Xa, ya, Xb, yb), tp_desc, l_full, d1_t


def _removal_loop(X, y, lf, reg, tol, estimators, idx, w, D1, Hinv, pairs, l_full, d1_t):
    """A_{D^{-i}} - A_D for every removed i and estimator (exact leave-one-out ERM or the influence
    function, P2 Eq. 4) and beta_n(z_i; z_j, z_k) over the test pairs (P2 Def. 6); returns
    (delta, beta_mean, beta_max, lemma1, cert_loo, conv_loo)."""
    Xa, ya, Xb, yb = pairs
    n, d = X.shape
    N = n * (n - 1.0)
    E = len(estimators)
    delta = np.full((idx.size, E, d), np.nan)
    beta_mean = np.full((idx.size, E), np.nan)
    beta_max = np.full((idx.size, E), np.nan)
    lemma1 = np.full(idx.size, np.nan)
    cert_loo = np.full(idx.size, np.nan)
    conv_loo = np.zeros(idx.size, bool)
    for r, i in enumerate(idx):
        for e, est in enumerate(estimators):
            if est == "exact":
                keep = np.arange(n) != i
                res = _risk.erm(X[keep], y[keep], lf, "none", tol=tol, reg=reg, w0=w)
                cert_loo[r] = res.certificate
                conv_loo[r] = res.converged
                delta[r, e] = res.w - w
            else:
                # sum_{z' != z_i} grad l(w; z_i, z') + grad l(w; z', z_i)
                #   = sum_b D1[i, b] (x_i - x_b) + sum_a D1[a, i] (x_a - x_i)
                g = D1[i].sum() * X[i] - D1[i] @ X + D1[:, i] @ X - D1[:, i].sum() * X[i]
                delta[r, e] = Hinv @ (g / N + (2.0 * reg / n) * w)
                lemma1[r] = np.mean(np.abs(d1_t * ((Xa - Xb) @ delta[r, e])))
            l_loo = _pair_values(lf, w + delta[r, e], Xa, ya, Xb, yb)
            b = np.abs(l_full - l_loo)
            beta_mean[r, e] = b.mean()
            beta_max[r, e] = b.max()
    return delta, beta_mean, beta_max, lemma1, cert_loo, conv_loo


def _elastic_dataset(n, d, reg, estimators, idx, all_i, level, delta, beta_mean, beta_max, lemma1,
                     cert_loo, conv_loo):
    """The Dataset of ``locally_elastic_stability``: per-i variables, the sup_i n * beta_mean
    summary (P2 Thm 3, beta_n = beta/n) and the mean over i with its t-interval; returns
    (ds, ci_method)."""
    coords = {"i": idx, "estimator": list(estimators), "param": np.arange(d)}
    ds = xr.Dataset(coords=coords)
    ds["delta"] = (("i", "estimator", "param"), delta)
    ds["delta_norm"] = (("i", "estimator"), np.linalg.norm(delta, axis=-1))
    ds["beta_mean"] = (("i", "estimator"), beta_mean)
    ds["beta_max"] = (("i", "estimator"), beta_max)
    ds["n_beta"] = n * ds["beta_mean"]
    if "influence" in estimators:
        ds["beta_mean_lemma1"] = (("i",), lemma1)
    if "exact" in estimators:
        ds["cert_loo"] = (("i",), cert_loo)
        ds["converged_loo"] = (("i",), conv_loo)
        ds["w_err_bound_loo"] = (("i",), np.sqrt(2.0 * cert_loo / reg) if reg > 0 else np.full(idx.size, np.nan))
    if set(estimators) == set(ESTIMATORS):
        de = ds["delta"].sel(estimator="exact")
        di = ds["delta"].sel(estimator="influence")
        ds["rel_err"] = np.sqrt(((di - de) ** 2).sum("param")) / np.sqrt((de ** 2).sum("param"))
    sup = ds["n_beta"].max("i")
    ds["estimate"] = sup
    ds["lower"] = sup
    ds["upper"] = sup if all_i else xr.full_like(sup, np.nan)
    if idx.size >= 2:
        ci = mean_ci(ds["n_beta"], dim="i", level=level)
        ds["mean_n_beta"] = ci["estimate"]
        ds["mean_n_beta_lower"] = ci["lower"]
        ds["mean_n_beta_upper"] = ci["upper"]
        ci_method = ci.attrs["ci_method"] + " over the removed indices i"
    else:
        ci_method = "none (one index)"
    return ds, ci_method


def _elastic_attrs(ds, lf, n, d, reg, full, tol, tp_desc, idx, all_i, level, ci_method):
    """Long names and the attrs of ``locally_elastic_stability``'s Dataset (neighbour relation,
    Hessian and influence formula, ERM certificates, test pairs, CI method, note)."""
    long = {"delta": "A_{D^{-i}} - A_D", "beta_mean": "mean over test pairs of beta_n(z_i; z_j, z_k)",
            "estimate": "sup_i n * mean_pairs beta_n(z_i; z_j, z_k)",
            "rel_err": "||delta_influence - delta_exact|| / ||delta_exact||"}
    for k, v in long.items():
        if k in ds:
            ds[k].attrs["long_name"] = v
    ds.attrs.update(
        quantity="locally_elastic_stability", neighbour_relation="remove-one",
        neighbour="D^{-i} = D with z_i removed (n - 1 points), P2 Def. 6",
        loss=lf.name, n=int(n), d=int(d), reg=reg, constraint="none",
        hessian=("exact closed form over all ordered pairs: sum phi''(m) c^2 (x_a - x_b)(x_a - x_b)^T "
                 "/ (n(n-1)) + reg I"),
        influence_formula=("H^{-1}[1/(n(n-1)) sum_{z'!=z_i}(grad l(A_D; z_i, z') + grad l(A_D; z', z_i)) "
                           "+ (2 reg/n) A_D]  (P2 Eq. 4 plus the regulariser's reweighting term)"),
        cert_full=float(full.certificate), converged_full=int(full.converged),
        w_err_bound_full=float(math.sqrt(2.0 * full.certificate / reg)) if reg > 0 else math.nan,
        erm_method=full.method, erm_certificate_method=full.certificate_method, tol=float(tol),
        test_pairs=tp_desc, n_indices=int(idx.size), all_indices=int(all_i), level=float(level),
        ci_method=ci_method,
        note=("estimate = sup_i n * mean_pairs beta, the estimator of sup_z E beta(z; z', z'') "
              "(P2 Thm 3 with beta_n = beta/n). " + ("Exact for this D over all i." if all_i else
                                                      "Only a subset of i: " + SUP_NOTE + ".")),
    )


# ---- P1 Thm 8 / Thm 9 ---------------------------------------------------------------------------

def _params(W, p):
    """(W2 (K, p), lead shape, DataArray template or None)."""
    template = None
    if isinstance(W, xr.DataArray):
        dim = "param" if "param" in W.dims else W.dims[-1]
        W = W.transpose(..., dim)
        template = W.isel({dim: 0}, drop=True)
        W = W.values
    W = np.asarray(W, dtype=float)
    if W.ndim == 0 or W.shape[-1] != p:
        raise ValueError(f"outputs must have shape (..., {p}), got {W.shape}")
    return W.reshape(-1, p), W.shape[:-1], template


def _p_of(X, lf):
    d = np.asarray(X).shape[1]
    return d * d if lf.matrix else d


def _wrap(arr, lead, template, name, long_name):
    arr = arr.reshape(lead)
    if template is not None:
        out = template.copy(data=arr).rename(name)
        out.attrs = {"long_name": long_name, "units": "1"}
        return out
    return float(arr) if arr.ndim == 0 else arr


def grad_norm_sq_path(outputs, X, y, loss, *, q=None):
    """||grad F_S(w)||^2 for every w in ``outputs`` (shape (..., p), ndarray or DataArray with a
    ``param`` dim), via ``risk.empirical_grad`` (P1 Thm 8's stationarity measure).  For hinge
    losses this is the norm of the subgradient with phi'(1) = 0."""
    lf = get_loss(loss, q) if isinstance(loss, str) else loss
    W2, lead, template = _params(outputs, _p_of(X, lf))
    out = np.array([float(np.sum(_risk.empirical_grad(w, X, y, lf) ** 2)) for w in W2])
    return _wrap(out, lead, template, "grad_norm_sq", "||grad F_S(w)||^2")


def pl_gap(w, X, y, loss, F_S_min, *, q=None):
    """F_S(w) - min F_S for w of shape (..., p) (P1 Thm 9's suboptimality).

    ``F_S_min``: a float, or a ``risk.ErmResult`` computed with reg = 0 (its proven lower bound
    is not used; its value F_S(w_S) is, so the gap is accurate to the ERM certificate)."""
    if isinstance(F_S_min, _risk.ErmResult):
        if F_S_min.reg != 0.0:
            raise ValueError("F_S_min from erm(..., reg > 0) is not min F_S; pass an unregularised ErmResult")
        F_S_min = F_S_min.value
    F_S_min = float(F_S_min)
    lf = get_loss(loss, q) if isinstance(loss, str) else loss
    W2, lead, template = _params(w, _p_of(X, lf))
    vals = np.asarray(_risk.empirical_risk(W2, X, y, lf), dtype=float).reshape(-1) - F_S_min
    return _wrap(vals, lead, template, "pl_gap", "F_S(w) - min F_S")
