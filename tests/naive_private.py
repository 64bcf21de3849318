"""Slow, readable reference implementations of the private algorithms (test oracles).

Plain Python/NumPy loops, one run per data set (S and S' are run separately, so the
coupling of the kernels is checked too).  Every random number comes from the same
``stabsim.engine.rng`` streams and counters as the kernels:

* indices: uniform number ``c`` of STREAM_INDEX mapped to {0..n-1} (``randint``);
* Gaussian noise: normal number ``c`` of STREAM_NOISE (S' in audits: STREAM_NOISE_PRIME);
* P3's random points of C: STREAM_BURNIN (8), P1 Alg. 3's phase seeds: STREAM_PHASE (10).

The losses and projections are re-implemented here in NumPy (not taken from
``stabsim.engine.losses``), so the kernels' loss code is checked as well.
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.engine import rng

STREAM_BURNIN = 8
STREAM_PHASE = 10


# ----------------------------------------------------------------------------- rng helpers
def randint(seed, rep, stream, counter, n):
    u = rng.uniforms(seed, rep, stream, 1, start=counter)[0]
    return min(int(u * n), n - 1)


def normals(seed, rep, stream, size, start):
    return rng.normals(seed, rep, stream, size, start=start)


def pair_ij(seed, rep, t, n):
    i = randint(seed, rep, rng.STREAM_INDEX, 2 * t, n)
    j = randint(seed, rep, rng.STREAM_INDEX, 2 * t + 1, n - 1)
    if j >= i:
        j += 1
    return i, j


# ----------------------------------------------------------------------------- losses
def phi(name, m):
    """(phi(m), phi'(m)) for hinge / squared / logistic."""
    if name == "hinge":
        return (1.0 - m, -1.0) if m < 1.0 else (0.0, 0.0)
    if name == "squared":
        return (1.0 - m) ** 2, -2.0 * (1.0 - m)
    if name == "logistic":
        return math.log1p(math.exp(-m)) if m > -30 else -m, -1.0 / (1.0 + math.exp(m))
    raise ValueError(name)


def loss_grad(loss, w, za, zb=None):
    """(value, gradient) of the named loss: auc_*, auc_ordered_*, ranking_*, point_*."""
    form, _, ph = loss.rpartition("_")
    if form == "point" and ph == "lsq":
        x, y = za
        r = w @ x - y
        return 0.5 * r * r, r * x
    if form == "point":
        x, y = za
        v, dv = phi(ph, y * (w @ x))
        return v, dv * y * x
    (xa, ya), (xb, yb) = za, zb
    if form == "auc":
        c = 0.5 * (ya - yb)
    elif form == "auc_ordered":
        c = 1.0 if (ya == 1 and yb == -1) else 0.0
    elif form == "ranking":
        c = ya - yb
    else:
        raise ValueError(loss)
    if c == 0.0 and form != "ranking":
        return 0.0, np.zeros_like(w)
    diff = xa - xb
    v, dv = phi(ph, c * (w @ diff))
    return v, dv * c * diff


def project_l2(w, radius):
    nrm = np.linalg.norm(w)
    return w * (radius / nrm) if nrm > radius else w.copy()


def proj(w, radius):
    return w.copy() if radius is None or math.isinf(radius) else project_l2(w, radius)


def replace(X, y, k, xk, yk):
    X2, y2 = X.copy(), y.copy()
    X2[k], y2[k] = xk, yk
    return X2, y2


# ----------------------------------------------------------------------------- P0
def p0_alg1(X, y, loss, radius, eta, T, seed, rep):
    """P0 Alg. 1: wbar_T = (1/T) sum_{t=1}^T w_t, w_1 = 0 (P0 numbering)."""
    n, p = X.shape
    idx = [randint(seed, rep, rng.STREAM_INDEX, 0, n)]          # i_1
    w = np.zeros(p)                                              # w_1
    ws = [w]
    for t in range(1, T + 1):
        idx.append(randint(seed, rep, rng.STREAM_INDEX, t, n))   # i_{t+1}
        new = idx[t]
        g = np.zeros(p)
        for kk in range(t):                                      # pair with i_1..i_t
            g += loss_grad(loss, w, (X[new], y[new]), (X[idx[kk]], y[idx[kk]]))[1]
        w = proj(w - eta * g / t, radius)                        # w_{t+1}
        ws.append(w)
    return np.mean(ws[:T], axis=0)


def p0_alg2(X, y, neighbour, loss, radius, eta, T, sigma, seed, reps, independent=False):
    """(w_priv on S, w_priv on S') per replicate: Pi_W(wbar_T + u)."""
    k, xk, yk = neighbour
    Xp, yp = replace(X, y, k, xk, yk)
    p = X.shape[1]
    out = np.zeros((len(reps), 2, p))
    for i, r in enumerate(reps):
        wbar = p0_alg1(X, y, loss, radius, eta, T, seed, r)
        wbarp = p0_alg1(Xp, yp, loss, radius, eta, T, seed, r)
        u = normals(seed, r, rng.STREAM_NOISE, p, (T + 1) * p)
        up = normals(seed, r, rng.STREAM_NOISE_PRIME, p, (T + 1) * p) if independent else u
        out[i, 0] = proj(wbar + sigma * u, radius)
        out[i, 1] = proj(wbarp + sigma * up, radius)
    return out


# ----------------------------------------------------------------------------- P1
def p1_alg1(X, y, loss, radius, eta, T, w0, seed, rep):
    """P1 Alg. 1: pair i_t with i_{t-1}; output sum_j eta_j w_{j-2} / sum_j eta_j, w_{-1} = w_0."""
    n = len(y)
    i_prev = randint(seed, rep, rng.STREAM_INDEX, 0, n)          # i_0
    w_m2 = w0.copy()                                             # w_{t-2}
    w_m1 = w0.copy()                                             # w_{t-1}
    acc, wsum = np.zeros_like(w0), 0.0
    for t in range(1, T + 1):
        i_t = randint(seed, rep, rng.STREAM_INDEX, t, n)
        g = loss_grad(loss, w_m1, (X[i_t], y[i_t]), (X[i_prev], y[i_prev]))[1]
        w = proj(w_m1 - eta * g, radius)
        acc += eta * w_m2
        wsum += eta
        w_m2, w_m1, i_prev = w_m1, w, i_t
    return acc / wsum


def phase_seed(seed, k):
    return int(rng.key(seed, k, STREAM_PHASE)) >> 2


def p1_alg3(X, y, neighbour, loss, radius, eta, G, eps, delta, seed, reps,
            independent=False, project_noise=False):
    """P1 Alg. 3 with consecutive blocks S_k of floor(n/2^k) points; phases n_k < 2 skipped."""
    n, p = X.shape
    k_rep, xk, yk = neighbour
    Xp, yp = replace(X, y, k_rep, xk, yk)
    K = math.ceil(math.log2(n))
    l4 = math.log(4 / delta)
    out = np.zeros((len(reps), 2, p))
    for i, r in enumerate(reps):
        w, wp = np.zeros(p), np.zeros(p)
        start = 0
        for k in range(1, K + 1):
            nk = n // 2 ** k
            blk = slice(start, start + nk)
            start += nk
            if nk < 2:
                continue
            eta_k = eta / 4 ** k
            Tk = math.ceil(nk * l4)
            sigma_k = 12 * G * eta_k * l4 * math.sqrt(2 * math.log(2.5 / delta)) / eps
            sk = phase_seed(seed, k)
            wbar = p1_alg1(X[blk], y[blk], loss, radius, eta_k, Tk, w, sk, r)
            wbarp = p1_alg1(Xp[blk], yp[blk], loss, radius, eta_k, Tk, wp, sk, r)
            u = normals(sk, r, rng.STREAM_NOISE, p, (Tk + 1) * p)
            up = normals(sk, r, rng.STREAM_NOISE_PRIME, p, (Tk + 1) * p) if independent else u
            w, wp = wbar + sigma_k * u, wbarp + sigma_k * up
            if project_noise:
                w, wp = proj(w, radius), proj(wp, radius)
        out[i, 0], out[i, 1] = w, wp
    return out


# ----------------------------------------------------------------------------- P2
def p2_alg1(X, y, neighbour, loss, radius, eta, T, sigma, seed, reps, independent=False):
    """P2 Alg. 1: full-batch all ordered pairs + N(0, sigma^2 I) per step; theta_0 random;
    ``radius`` None = unprojected (as printed)."""
    n, p = X.shape
    k, xk, yk = neighbour
    Xp, yp = replace(X, y, k, xk, yk)
    out = np.zeros((len(reps), 2, p))
    for i, r in enumerate(reps):
        th0 = proj(normals(seed, r, rng.STREAM_INIT, p, 0) / math.sqrt(p), radius)
        for run, (XX, yy, stream) in enumerate(((X, y, rng.STREAM_NOISE),
                                                (Xp, yp, rng.STREAM_NOISE_PRIME if independent
                                                 else rng.STREAM_NOISE))):
            th = th0.copy()
            for t in range(1, T + 1):
                g = np.zeros(p)
                for a in range(n):
                    for b in range(n):
                        if a != b:
                            g += loss_grad(loss, th, (XX[a], yy[a]), (XX[b], yy[b]))[1]
                g /= n * (n - 1)
                b_t = sigma * normals(seed, r, stream, p, t * p)
                th = proj(th - eta * (g + b_t), radius)
            out[i, run] = th
    return out


# ----------------------------------------------------------------------------- P4
def p4_alg(X, y, neighbour, loss, radius, eta, T, sigma, seed, reps, pairwise,
           independent=False):
    """P4 Alg. 1/2: w_1 = 0; output (1/T) sum_{t=1}^T w_t (P4 numbering)."""
    n, p = X.shape
    k, xk, yk = neighbour
    Xp, yp = replace(X, y, k, xk, yk)
    out = np.zeros((len(reps), 2, p))
    for i, r in enumerate(reps):
        for run, (XX, yy, stream) in enumerate(((X, y, rng.STREAM_NOISE),
                                                (Xp, yp, rng.STREAM_NOISE_PRIME if independent
                                                 else rng.STREAM_NOISE))):
            w = np.zeros(p)
            acc = np.zeros(p)
            for t in range(1, T + 1):
                if pairwise:
                    a, b = pair_ij(seed, r, t, n)
                    g = loss_grad(loss, w, (XX[a], yy[a]), (XX[b], yy[b]))[1]
                else:
                    a = randint(seed, r, rng.STREAM_INDEX, t, n)
                    g = loss_grad(loss, w, (XX[a], yy[a]))[1]
                b_t = sigma * normals(seed, r, stream, p, t * p)
                acc += w
                w = proj(w - eta * (g + b_t), radius)
            out[i, run] = acc / T
    return out


# ----------------------------------------------------------------------------- P3
def ball_point(seed, rep, j, p, radius):
    """Point j of STREAM_BURNIN: uniform in the l2 ball (vector parameters)."""
    base = j * (p + 1)
    g = normals(seed, rep, STREAM_BURNIN, p, base)
    u = rng.uniforms(seed, rep, STREAM_BURNIN, 1, start=2 * (base + p))[0]
    return g * (radius * u ** (1.0 / p) / np.linalg.norm(g))


def p3_run(X, y, loss, radius, alpha, T1, online, sig_coef, sigma_off, center, order,
           seed, rep, noise_stream):
    """One pass of P3's (private) pairwise GIGA on one data set.

    Returns dict(w: internal iterates w_1..w_n, played: points v_1..v_n whose penalty is
    recorded, loss_path: [sum_{s=2}^t Lhat_s(v_{s-1})]_t, w_priv, w_average).
    """
    n, p = X.shape
    Z = [(X[order[t]], y[order[t]]) for t in range(n)]       # z_1..z_n (0-based list)

    def lhat(w, t):                                           # t 1-based, pairs z_t with z_1..z_{t-1}
        vals, grads = zip(*(loss_grad(loss, w, Z[t - 1], Z[s]) for s in range(t - 1)))
        return float(np.mean(vals)), np.mean(grads, axis=0)

    ws, played, path = [], [], []
    tot = 0.0
    w = None
    for t in range(1, n + 1):
        if t >= 2:
            tot += lhat(played[-1], t)[0]
        path.append(tot)
        if t <= T1:
            w = ball_point(seed, rep, t, p, radius)
            v = w
        else:
            eta = (t - 1) / (t - 2) * 2 / (alpha * t)
            g = lhat(w, t)[1] + alpha * (w - center)
            w = project_l2(w - eta * g, radius)
            v = project_l2(w + (sig_coef / t) * normals(seed, rep, noise_stream, p, t * p),
                           radius) if online else w
        ws.append(w)
        played.append(v)
    if online:
        w_avg = np.mean(ws[:n - 1], axis=0)
        w_priv = np.mean(played[:n - 1], axis=0)
    else:
        w_avg = np.mean(ws, axis=0)
        w_priv = project_l2(w_avg + sigma_off * normals(seed, rep, noise_stream, p, (n + 1) * p),
                            radius)
    return dict(w=np.array(ws), played=np.array(played), loss_path=np.array(path),
                w_priv=w_priv, w_average=w_avg)


def p3(X, y, neighbour, loss, radius, alpha, T1, online, sig_coef, sigma_off, center_kind,
       seed, reps, independent=False, permute=False):
    """P3 Algs 1-4 on S and S' for each replicate: list of (run on S, run on S')."""
    n, p = X.shape
    k, xk, yk = neighbour
    Xp, yp = replace(X, y, k, xk, yk)
    res = []
    for r in reps:
        order = (np.argsort(rng.uniforms(seed, r, rng.STREAM_INDEX, n), kind="stable")
                 if permute else np.arange(n))
        c = ball_point(seed, r, 0, p, radius) if center_kind == "random" else np.zeros(p)
        a = p3_run(X, y, loss, radius, alpha, T1, online, sig_coef, sigma_off, c, order, seed, r,
                   rng.STREAM_NOISE)
        b = p3_run(Xp, yp, loss, radius, alpha, T1, online, sig_coef, sigma_off, c, order, seed, r,
                   rng.STREAM_NOISE_PRIME if independent else rng.STREAM_NOISE)
        res.append((a, b))
    return res
