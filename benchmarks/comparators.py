"""The alternatives a researcher would write instead of stabsim, for ``run_all.py``.

For every algorithm family two twin implementations (run on S and on S' in lockstep, same
index draws, same output rule as the kernel), returning the final ||w_T - w'_T|| and
||A_T(S) - A_T(S')||:

* ``naive_*``: one replicate, a Python loop over steps with NumPy vector operations per step
  (the way the papers' experiments are usually written: the P1 authors' public code,
  github.com/zhenhuan-yang/simple-pairwise ``alg/auc_fifo_hinge.py``, is such a loop for one
  run: skip same-label pairs, hinge gradient with ``np.inner``, update, optional l2
  projection with ``np.linalg.norm``, running sum for the average);
* ``vec_*``: NumPy vectorised across R replicates (arrays (R, d) of iterates, fancy-indexed
  gathers of the rows each replicate uses): the best one can do without a JIT.

Index streams are drawn up front (vectorised, from ``stabsim.engine.rng`` so that a run with
sigma = 0 can be checked against the kernel) and are not part of the timed work.  Gaussian
noise (p4_alg1, p2_alg1 with sigma > 0) is drawn inside the loop with NumPy's Generator, as a
NumPy user would; those runs are timed only, the check against the kernel uses sigma = 0.

Losses: AUC hinge (p1_alg1, sgd_pair, p0_alg1), pointwise logistic (p4_alg1), AUC squared
over all pairs (p2_alg1); definitions as in stabsim.engine.losses (``auc``: c = (y - y')/2,
m = c w.(x - x')).
"""

from __future__ import annotations

import numpy as np

from stabsim.engine import rng


# ---- index streams (the kernel's draws, vectorised) -------------------------------------------

def _randint(u, n):
    return np.minimum((u * n).astype(np.int64), n - 1)


def draws(family: str, seed: int, rep: int, T: int, n: int):
    """The kernel's index draws of one replicate: (ia, ib) arrays of length T + 1 (entry t =
    step t) for the pair families, idx (T + 1) for p0_alg1 (i_{1}..: hist) and p4_alg1."""
    if family == "sgd_pair":
        u = rng.uniforms(seed, rep, rng.STREAM_INDEX, 2 * T + 2)
        i = _randint(u[0::2], n)
        j = _randint(u[1::2], n - 1)
        j = j + (j >= i)
        return i, j
    u = rng.uniforms(seed, rep, rng.STREAM_INDEX, T + 1)
    idx = _randint(u, n)
    if family == "p1_alg1":
        ib = np.r_[0, idx[:-1]]
        return idx, ib
    return idx


# ---- one-replicate Python loops ---------------------------------------------------------------------

def _hinge_grad(w, xa, xb, ya, yb):
    c = 0.5 * (ya - yb)
    if c == 0.0:
        return None
    diff = xa - xb
    if c * np.dot(w, diff) < 1.0:
        return -c * diff
    return None


def naive_pairs(X, y, Xp, yp, ia, ib, eta, T, lag):
    """p1_alg1 (lag 2, eta-weighted) and sgd_pair (lag 1, mean): one pair per step, AUC hinge."""
    d = X.shape[1]
    w = np.zeros(d); wp = np.zeros(d)
    w2 = w.copy(); w2p = wp.copy()
    acc = np.zeros(d); accp = np.zeros(d)
    wsum = 0.0
    for t in range(1, T + 1):
        i, j = ia[t], ib[t]
        g = _hinge_grad(w, X[i], X[j], y[i], y[j])
        gp = _hinge_grad(wp, Xp[i], Xp[j], yp[i], yp[j])
        wn = w - eta * g if g is not None else w.copy()
        wnp = wp - eta * gp if gp is not None else wp.copy()
        if lag == 2:
            acc += eta * w2
            accp += eta * w2p
            wsum += eta
            w2, w2p = w, wp
        else:
            acc += w
            accp += wp
            wsum += 1.0
        w, wp = wn, wnp
    return float(np.linalg.norm(w - wp)), float(np.linalg.norm((acc - accp) / wsum))


def naive_p0(X, y, Xp, yp, idx, eta, T):
    """P0 Alg. 1: draw i_{t+1}, average the AUC-hinge gradient over all previous draws
    (NumPy-vectorised over the history at each step), eta_t = eta; output mean of w_0..w_{T-1}."""
    d = X.shape[1]
    w = np.zeros(d); wp = np.zeros(d)
    acc = np.zeros(d); accp = np.zeros(d)

    def grad(w, XX, yy, a, hist):
        c = 0.5 * (yy[a] - yy[hist])                 # (t,)
        diff = XX[a][None, :] - XX[hist]              # (t, d)
        m = c * (diff @ w)
        act = (c != 0.0) & (m < 1.0)
        return -(c[act][:, None] * diff[act]).sum(axis=0) / len(hist)

    for t in range(1, T + 1):
        a, hist = idx[t], idx[:t]
        g = grad(w, X, y, a, hist)
        gp = grad(wp, Xp, yp, a, hist)
        acc += w
        accp += wp
        w = w - eta * g
        wp = wp - eta * gp
    return float(np.linalg.norm(w - wp)), float(np.linalg.norm((acc - accp) / T))


def naive_p4(X, y, Xp, yp, idx, eta, T, sigma, gen):
    """P4 Alg. 1: pointwise logistic loss, Gaussian noise shared by both runs, output mean of
    w_0..w_{T-1}."""
    d = X.shape[1]
    w = np.zeros(d); wp = np.zeros(d)
    acc = np.zeros(d); accp = np.zeros(d)
    for t in range(1, T + 1):
        i = idx[t]
        m = y[i] * np.dot(w, X[i])
        g = (-1.0 / (1.0 + np.exp(m))) * y[i] * X[i]
        mp = yp[i] * np.dot(wp, Xp[i])
        gp = (-1.0 / (1.0 + np.exp(mp))) * yp[i] * Xp[i]
        if sigma > 0.0:
            b = sigma * gen.standard_normal(d)
            g = g + b
            gp = gp + b
        acc += w
        accp += wp
        w = w - eta * g
        wp = wp - eta * gp
    return float(np.linalg.norm(w - wp)), float(np.linalg.norm((acc - accp) / T))


def naive_p2(X, y, Xp, yp, eta, T, sigma, gen):
    """P2 Alg. 1: full-batch gradient of the AUC squared loss over all ordered pairs i != j as a
    Python double loop (as tests/naive.full_batch_gd), Gaussian noise, last iterate."""
    n, d = X.shape
    w = np.zeros(d); wp = np.zeros(d)

    def grad(w, XX, yy):
        g = np.zeros(d)
        for i in range(n):
            for j in range(n):
                if i != j:
                    c = 0.5 * (yy[i] - yy[j])
                    if c != 0.0:
                        diff = XX[i] - XX[j]
                        g += -2.0 * (1.0 - c * np.dot(w, diff)) * c * diff
        return g / (n * (n - 1))

    for _ in range(1, T + 1):
        g = grad(w, X, y)
        gp = grad(wp, Xp, yp)
        if sigma > 0.0:
            b = sigma * gen.standard_normal(d)
            g += b
            gp += b
        w = w - eta * g
        wp = wp - eta * gp
    return float(np.linalg.norm(w - wp)), float(np.linalg.norm(w - wp))


# ---- NumPy vectorised across replicates ---------------------------------------------------------

def _rows(X, y, idx, k, xrep, yrep):
    """Rows idx (R,) of S and of S' (example k[r] replaced by xrep[r], yrep[r])."""
    xa, ya = X[idx], y[idx]
    sub = idx == k
    return xa, ya, np.where(sub[:, None], xrep, xa), np.where(sub, yrep, ya)


def _hinge_grad_vec(W, xa, xb, ya, yb):
    c = 0.5 * (ya - yb)
    diff = xa - xb
    m = c * np.einsum("rd,rd->r", W, diff)
    f = np.where((c != 0.0) & (m < 1.0), -c, 0.0)
    return f[:, None] * diff


def vec_pairs(X, y, k, xrep, yrep, IA, IB, eta, T, lag):
    """p1_alg1 / sgd_pair for R replicates at once; IA, IB (R, T + 1) index draws."""
    R, d = IA.shape[0], X.shape[1]
    W = np.zeros((R, d)); Wp = np.zeros((R, d))
    W2 = W.copy(); W2p = Wp.copy()
    acc = np.zeros((R, d)); accp = np.zeros((R, d))
    wsum = 0.0
    for t in range(1, T + 1):
        xa, ya, xpa, ypa = _rows(X, y, IA[:, t], k, xrep, yrep)
        xb, yb, xpb, ypb = _rows(X, y, IB[:, t], k, xrep, yrep)
        Wn = W - eta * _hinge_grad_vec(W, xa, xb, ya, yb)
        Wnp = Wp - eta * _hinge_grad_vec(Wp, xpa, xpb, ypa, ypb)
        if lag == 2:
            acc += eta * W2
            accp += eta * W2p
            wsum += eta
            W2, W2p = W, Wp
        else:
            acc += W
            accp += Wp
            wsum += 1.0
        W, Wp = Wn, Wnp
    return np.linalg.norm(W - Wp, axis=1), np.linalg.norm((acc - accp) / wsum, axis=1)


def vec_p0(X, y, k, xrep, yrep, IDX, eta, T):
    """P0 Alg. 1 for R replicates: (R, t, d) gathers of the history at each step."""
    R, d = IDX.shape[0], X.shape[1]
    W = np.zeros((R, d)); Wp = np.zeros((R, d))
    acc = np.zeros((R, d)); accp = np.zeros((R, d))
    kk = k[:, None]
    for t in range(1, T + 1):
        a = IDX[:, t]
        H = IDX[:, :t]
        xa, ya, xpa, ypa = _rows(X, y, a, k, xrep, yrep)
        xh, yh = X[H], y[H]                                    # (R, t, d), (R, t)
        sub = H == kk
        xph = np.where(sub[:, :, None], xrep[:, None, :], xh)
        yph = np.where(sub, yrep[:, None], yh)

        def grad(W, xa, ya, xh, yh):
            c = 0.5 * (ya[:, None] - yh)
            diff = xa[:, None, :] - xh
            m = c * np.einsum("rtd,rd->rt", diff, W)
            f = np.where((c != 0.0) & (m < 1.0), -c, 0.0)
            return np.einsum("rt,rtd->rd", f, diff) / t

        G = grad(W, xa, ya, xh, yh)
        Gp = grad(Wp, xpa, ypa, xph, yph)
        acc += W
        accp += Wp
        W = W - eta * G
        Wp = Wp - eta * Gp
    return np.linalg.norm(W - Wp, axis=1), np.linalg.norm((acc - accp) / T, axis=1)


def vec_p4(X, y, k, xrep, yrep, IDX, eta, T, sigma, gen):
    R, d = IDX.shape[0], X.shape[1]
    W = np.zeros((R, d)); Wp = np.zeros((R, d))
    acc = np.zeros((R, d)); accp = np.zeros((R, d))
    for t in range(1, T + 1):
        xa, ya, xpa, ypa = _rows(X, y, IDX[:, t], k, xrep, yrep)
        m = ya * np.einsum("rd,rd->r", W, xa)
        G = (-ya / (1.0 + np.exp(m)))[:, None] * xa
        mp = ypa * np.einsum("rd,rd->r", Wp, xpa)
        Gp = (-ypa / (1.0 + np.exp(mp)))[:, None] * xpa
        if sigma > 0.0:
            B = sigma * gen.standard_normal((R, d))
            G += B
            Gp += B
        acc += W
        accp += Wp
        W = W - eta * G
        Wp = Wp - eta * Gp
    return np.linalg.norm(W - Wp, axis=1), np.linalg.norm((acc - accp) / T, axis=1)


def vec_p2(X, y, k, xrep, yrep, eta, T, sigma, gen, R):
    """P2 Alg. 1, AUC squared, R replicates: (R, n, n) margin tensors from the scores (the
    all-pairs gradient as sum_i (sum_j coef_ij - sum_j coef_ji) x_i), last iterate."""
    n, d = X.shape
    Xp = np.repeat(X[None], R, axis=0)
    yp = np.repeat(y[None], R, axis=0)
    Xp[np.arange(R), k] = xrep
    yp[np.arange(R), k] = yrep
    C = 0.5 * (y[:, None] - y[None, :])                      # (n, n)
    Cp = 0.5 * (yp[:, :, None] - yp[:, None, :])             # (R, n, n)
    W = np.zeros((R, d)); Wp = np.zeros((R, d))
    npairs = n * (n - 1.0)
    for _ in range(1, T + 1):
        s = W @ X.T                                          # (R, n)
        coef = C * (-2.0 * (1.0 - C * (s[:, :, None] - s[:, None, :])))
        G = (coef.sum(2) - coef.sum(1)) @ X / npairs
        sp = np.einsum("rnd,rd->rn", Xp, Wp)
        coefp = Cp * (-2.0 * (1.0 - Cp * (sp[:, :, None] - sp[:, None, :])))
        Gp = np.einsum("rn,rnd->rd", coefp.sum(2) - coefp.sum(1), Xp) / npairs
        if sigma > 0.0:
            B = sigma * gen.standard_normal((R, d))
            G += B
            Gp += B
        W = W - eta * G
        Wp = Wp - eta * Gp
    dist = np.linalg.norm(W - Wp, axis=1)
    return dist, dist
