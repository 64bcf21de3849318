"""Slow, readable reference implementations of every engine algorithm.

Each function runs ONE algorithm on ONE data set, exactly as the paper writes it, in
plain Python/NumPy.  The index stream (and the Gaussian noise) is passed in explicitly,
so a test can feed the reference the same randomness the numba kernel draws, and run it
on S and on S' (built here by copying the data and replacing one row) separately.

Losses and projections are re-implemented here from their definitions (the papers,
P0-P4), independently of ``stabsim.engine.losses`` / ``stabsim.engine.constraints``.
Iterates use P1's numbering (w_0 the initial point, step t produces w_t) unless a
docstring says otherwise.
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.engine import rng


# ---- losses (value, gradient) from their definitions ----------------------------------------

def phi(name, m, q=2.0):
    if name == "hinge":
        return (max(0.0, 1 - m), -1.0 if m < 1 else 0.0)
    if name == "squared":
        return ((1 - m) ** 2, -2 * (1 - m))
    if name == "logistic":
        return (math.log1p(math.exp(-m)) if m > -30 else -m, -1 / (1 + math.exp(m)))
    if name == "qhinge":
        r = max(0.0, 1 - m)
        return (r ** q, -q * r ** (q - 1))
    raise ValueError(name)


def pair_loss(loss, w, xa, ya, xb, yb, q=2.0):
    """f(w; z_a, z_b) and its gradient for the pairwise losses of ``stabsim.engine.losses``."""
    form, _, ph = loss.partition("_")
    if loss.startswith("auc_ordered_"):
        form, ph = "auc_ordered", loss[len("auc_ordered_"):]
    if form in ("auc", "auc_ordered", "ranking"):
        if form == "auc":
            if ya == yb:
                return 0.0, np.zeros_like(w)
            # I[y=1,y'=-1] phi(w.(x-x')) + I[y=-1,y'=1] phi(w.(x'-x))
            c = 1.0 if ya == 1 else -1.0
        elif form == "auc_ordered":
            if not (ya == 1 and yb == -1):
                return 0.0, np.zeros_like(w)
            c = 1.0
        else:
            c = ya - yb
        m = c * np.dot(w, xa - xb)
        v, dv = phi(ph, m, q)
        return v, dv * c * (xa - xb)
    if form == "metric":
        d = xa.size
        W = w.reshape(d, d)
        dx = xa - xb
        quad = dx @ W @ dx
        if ph == "hinge":  # P0: (1 + tau(y,y') dx^T W dx)_+, tau = +1 same label, -1 otherwise
            tau = 1.0 if ya == yb else -1.0
            v = max(0.0, 1 + tau * quad)
            gq = tau if 1 + tau * quad > 0 else 0.0
        else:  # P2/P3: phi(y y' (1 - dx^T W dx)), logistic
            m = ya * yb * (1 - quad)
            v, dv = phi("logistic", m)
            gq = dv * (-ya * yb)  # d/dquad of phi(yy'(1 - quad)) = phi'(m) * (-yy')
        return v, (gq * np.outer(dx, dx)).ravel()
    raise ValueError(loss)


def point_loss(loss, w, x, y):
    if loss == "point_lsq":
        r = np.dot(w, x) - y
        return 0.5 * r * r, r * x
    ph = loss.split("_")[1]
    v, dv = phi(ph, y * np.dot(w, x))
    return v, dv * y * x


# ---- projections from their definitions ------------------------------------------------------

def project(w, constraint):
    name, R = constraint if isinstance(constraint, tuple) else (constraint, math.inf)
    if name == "none":
        return w.copy()
    if name in ("l2", "frobenius"):
        nrm = np.linalg.norm(w)
        return w * (R / nrm) if nrm > R else w.copy()
    d = int(round(math.sqrt(w.size)))
    S = w.reshape(d, d)
    S = (S + S.T) / 2
    lam, V = np.linalg.eigh(S)
    if name == "psd":
        lam = np.maximum(lam, 0)
    else:  # nuclear ball: project eigenvalues onto the l1 ball (sort-based, Duchi et al. 2008)
        if np.abs(lam).sum() > R:
            u = np.sort(np.abs(lam))[::-1]
            css = np.cumsum(u)
            rho = max(j for j in range(d) if u[j] - (css[j] - R) / (j + 1) > 0)
            theta = (css[rho] - R) / (rho + 1)
            lam = np.sign(lam) * np.maximum(np.abs(lam) - theta, 0)
    return (V @ np.diag(lam) @ V.T).ravel()


# ---- random streams (the same calls the kernel makes) -----------------------------------------

def stream(seed, replicate, which):
    return rng.key(seed, replicate, which)


def index(key, counter, n):
    return int(rng.randint(key, counter, n))


def noise_vector(key, t, p, sigma):
    return np.array([sigma * rng.normal(key, t * p + c) for c in range(p)])


# ---- algorithms ---------------------------------------------------------------------------------

def p1_alg1(X, y, loss, constraint, etas, idx, w0, s=1):
    """P1 Algorithm 1 (s = 1) and its FIFO-buffer variant (Remark 7).

    idx[c] is i_{c-s+1}: the s initial indices i_{1-s}..i_0 followed by i_1..i_T.
    w_t = Pi_W(w_{t-1} - (eta_t/s) sum_{j=1}^s grad f(w_{t-1}; z_{i_t}, z_{i_{t-j}})).
    Output: sum_{j=1}^T eta_j w_{j-2} / sum_j eta_j, with w_{-1} = w_0.
    Returns (w_T, output, iterates w_0..w_T).
    """
    T = len(etas) - 1
    ws = [np.array(w0, dtype=float)]
    for t in range(1, T + 1):
        i_t = idx[t + s - 1]
        g = np.zeros_like(ws[-1])
        for j in range(1, s + 1):
            i_prev = idx[t + s - 1 - j]
            g += pair_loss(loss, ws[-1], X[i_t], y[i_t], X[i_prev], y[i_prev])[1] / s
        ws.append(project(ws[-1] - etas[t] * g, constraint))
    w_lag2 = lambda j: ws[max(j - 2, 0)]  # w_{j-2}, with w_{-1} = w_0
    out = sum(etas[j] * w_lag2(j) for j in range(1, T + 1)) / sum(etas[1:T + 1])
    return ws[-1], out, ws


def p0_alg1(X, y, loss, constraint, eta, T, idx, w1):
    """P0 Algorithm 1 in P0's numbering: w_1 = w1, draws i_1, i_2, ... (idx[m-1] = i_m).

    w_{t+1} = Pi_W(w_t - (eta/t) sum_{k=1}^t df(w_t; z_{i_{t+1}}, z_{i_k})), t = 1..T.
    Output (1/T) sum_{t=1}^T w_t.  Returns (w_{T+1}, output).
    """
    w = [None, np.array(w1, dtype=float)]  # w[1] = w_1
    for t in range(1, T + 1):
        g = np.zeros_like(w[t])
        a = idx[t]  # i_{t+1}
        for kk in range(1, t + 1):
            b = idx[kk - 1]  # i_k
            g += pair_loss(loss, w[t], X[a], y[a], X[b], y[b])[1]
        w.append(project(w[t] - (eta / t) * g, constraint))
    return w[T + 1], sum(w[1:T + 1]) / T


def dp_sgd(X, y, loss, constraint, etas, draws, w1, noises, pairwise):
    """P4 Algorithm 1 (pointwise) / Algorithm 2 (pairwise; SGD_pair when the noise is 0).

    P4 numbering: w_1 = w1; w_{t+1} = Pi_W(w_t - eta_t (df(w_t; z_{i_t}[, z_{j_t}]) + b_t)).
    draws[t-1] = i_t or (i_t, j_t); noises[t-1] = b_t.  Output (1/T) sum_{t=1}^T w_t.
    """
    T = len(etas) - 1
    w = [None, np.array(w1, dtype=float)]
    for t in range(1, T + 1):
        if pairwise:
            i, j = draws[t - 1]
            g = pair_loss(loss, w[t], X[i], y[i], X[j], y[j])[1]
        else:
            i = draws[t - 1]
            g = point_loss(loss, w[t], X[i], y[i])[1]
        w.append(project(w[t] - etas[t] * (g + noises[t - 1]), constraint))
    return w[T + 1], sum(w[1:T + 1]) / T


def full_batch_gd(X, y, loss, etas, theta0, noises, constraint="none"):
    """P2 Algorithm 1: theta_t = theta_{t-1} - eta_t (mean over ordered pairs i != j of grad + b_t).

    No projection as printed (``constraint`` lets a test check the projected variant).
    Output: the last iterate theta_T.
    """
    n = len(y)
    T = len(etas) - 1
    th = np.array(theta0, dtype=float)
    for t in range(1, T + 1):
        g = np.zeros_like(th)
        for i in range(n):
            for j in range(n):
                if i != j:
                    g += pair_loss(loss, th, X[i], y[i], X[j], y[j])[1]
        g /= n * (n - 1)
        th = project(th - etas[t] * (g + noises[t - 1]), constraint)
    return th


def replaced(X, y, k, xk, yk):
    """S' = S with example k replaced by (xk, yk)."""
    Xp, yp = X.copy(), y.copy()
    Xp[k], yp[k] = xk, yk
    return Xp, yp
