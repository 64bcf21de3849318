"""Single-trajectory kernels for the P1 Table 1 / Figure 1 comparison (P1 Sec. 6).

Five algorithms for linear AUC maximisation, each one trajectory on one training set
(X (n, d), y in {-1, +1}), constant step size eta, projection onto the l2 ball of radius R
(P1 Sec. 6: "W is an l2 ball with the same diameter [for all methods]; eta_t = eta tuned by
cross validation"):

=============  =====================================================================  ===========
method         update at step t (z_t = (x_t, y_t), w = w_{t-1})                        output
=============  =====================================================================  ===========
``p1_alg1``    P1 Algorithm 1: i_t ~ Unif[n], w_t = Pi(w - eta grad f(w; z_{i_t},      mean of
               z_{i_{t-1}}))                                                           w_{j-2}
``sgd_pair``   SGD_pair (Lei, Ledent & Kloft 2020; P1 ref. [27]): (i, j) uniform over   mean of
               the ordered pairs i != j, w_t = Pi(w - eta grad f(w; z_i, z_j))         w_0..w_{t-1}
``olp``        OLP (Kar, Sriperumbudur, Jain & Karnick, ICML 2013, Alg. 1 + RS-x      mean of
               Alg. 2; P1 ref. [22]): buffer B of s = 200 past points,                 w_1..w_t
               w_t = Pi(w - (eta/|B|) sum_{b in B} grad f(w; z_t, z_b)), then
               B <- RS-x(B, z_t)
``oam_gra``    OAM_gra (Zhao, Hoi, Jin & Yang, ICML 2011, Alg. 1 + gradient update;   mean of
               P1 ref. [48]): reservoir buffers B+ and B- of N = 100 each; for        w_1..w_t
               y_t = +1: B+ <- RS(B+, x_t), C_t = eta max(1, N-_t / N),
               w_t = Pi(w - C_t sum_{b in B-} grad f(w; z_t, z_b)); symmetric for -1
``spauc``      SPAUC (Lei & Ying 2019, "Stochastic proximal AUC maximization";       mean of
               square loss via the saddle-point form of Ying, Wen & Lyu 2016 and       w_1..w_t
               Natole, Ying & Lyu 2018, P1 ref. [26]): w_t = Pi(w - eta g(w; z_t))
=============  =====================================================================  ===========

f is the symmetric AUC loss of ``stabsim.engine.losses`` form ``auc`` with the hinge:
f(w; z, z') = I[y=1, y'=-1] (1 - w.(x - x'))_+ + I[y=-1, y'=1] (1 - w.(x' - x))_+
(P1 Sec. 6), with the subgradient -s (x - x') when the margin s w.(x - x') < 1 (0 at the
kink, as ``stabsim.engine.losses``), s = (y - y')/2.

SPAUC's stochastic gradient (square loss).  With p = n+/n and the class means mu+, mu- of
the training set,

    g(w; z) = 2(1-p) (w.(x - mu+)) (x - mu+) I[y=1] + 2p (w.(x - mu-)) (x - mu-) I[y=-1]
              + 2p(1-p) (1 + w.(mu- - mu+)) (mu- - mu+),

and for z uniform on S, E_z g(w; z) = p(1-p) grad_w (1/(n+ n-)) sum_{i:+, j:-} (1 - w.(x_i - x_j))^2
exactly (the minimisers a = w.mu+, b = w.mu-, alpha = w.(mu- - mu+) of the saddle-point
form plugged in).  tests/test_baselines.py checks this identity.

Index streams and buffers (identical randomness for tests/naive_baselines.py).  Every random
number comes from the counter-based ``stabsim.engine.rng`` streams of (seed, replicate):

* ``STREAM_INDEX`` (key ``ki``): p1_alg1 i_t = randint(ki, t, n), t = 0..T (as the twin
  kernel); sgd_pair (i, j) = pair_ij(ki, t, n) (as the twin kernel); olp, oam_gra, spauc:
  the stream z_t = z_{i_t}, i_t = randint(ki, t, n), t = 1..T (sampling with replacement,
  as the P1 authors' code).
* ``STREAM_RESERVOIR`` (key ``kr``, defined here): OLP's RS-x at step t uses counters
  t*s + slot (the s slots); OAM's reservoir uses uniform(kr, 2t) (accept) and
  randint(kr, 2t + 1, N) (slot).

RS-x (Kar et al. 2013, Alg. 2), buffer size s, step t: if |B| < s, append z_t; at t = s + 1
repopulate B with s draws with replacement from B u {z_t} (slot c takes element
randint(kr, t*s + c, s + 1) of [B, z_t]); for t > s + 1 replace each slot independently by
z_t with probability 1/t (uniform(kr, t*s + c) < 1/t).  Every slot is then marginally
uniform on z_1..z_t.  RS (Vitter's Algorithm R, OAM): the class's k-th point enters slot
k - 1 while k <= N, later it replaces slot randint(kr, 2t + 1, N) with probability N / k.

Kernels are resumable: the state (iterates, running sums, buffers, counters) lives in
arrays the caller owns, and a call performs steps t0 + 1 .. t1.  The driver
(``stabsim.engine.p1_baselines``) calls them between checkpoints and reads the CPU time there, so
Figure 1's time axis is measured, not extrapolated.  Nothing is allocated in the loops.

State layout (all methods): W (4, d): W[0] current iterate w_t, W[1] previous iterate
w_{t-1} (p1_alg1), W[2] running sum of the averaged iterates, W[3] gradient workspace;
F (1,): F[0] the number of averaged iterates; I (4,): counters (see each kernel);
B (2, s + 1) int64 buffers of row indices; M (2, d): mu+ and mu- (SPAUC only).
"""

from __future__ import annotations

import math

from stabsim.compile.jit import njit

from stabsim.engine.rng import pair_ij, randint, uniform

#: stabsim.engine.rng stream id of the reservoir-sampling draws (OLP, OAM_gra); rng.py's engine
#: streams are 1..7, so this id cannot collide with them.
STREAM_RESERVOIR = 101

METHODS = ("p1_alg1", "sgd_pair", "olp", "oam_gra", "spauc")
P1_ALG1, SGD_PAIR, OLP, OAM_GRA, SPAUC = range(5)


@njit(cache=True, inline="always")
def _project_l2(w, radius):
    """Pi onto {||w|| <= radius} in place (radius = inf: identity)."""
    s = 0.0
    for a in range(w.shape[0]):
        s += w[a] * w[a]
    if s > radius * radius:
        f = radius / math.sqrt(s)
        for a in range(w.shape[0]):
            w[a] *= f


@njit(cache=True, inline="always")
def _hinge_pair(w, X, ia, ya, ib, yb, scale, g):
    """Add scale * (sub)gradient of the symmetric AUC hinge f(w; z_ia, z_ib) to g; return f."""
    if ya == yb:
        return 0.0
    c = 0.5 * (ya - yb)
    d = X.shape[1]
    dot = 0.0
    for a in range(d):
        dot += w[a] * (X[ia, a] - X[ib, a])
    m = c * dot
    if m < 1.0:
        f = -scale * c
        for a in range(d):
            g[a] += f * (X[ia, a] - X[ib, a])
        return 1.0 - m
    return 0.0


@njit(cache=True, inline="always")
def _hinge_add(X, i, b, dot, c, scale, g):
    """The hinge part of ``_hinge_pair`` once its dot product w.(x_i - x_b) is known."""
    if c * dot < 1.0:
        f = -scale * c
        for a in range(X.shape[1]):
            g[a] += f * (X[i, a] - X[b, a])


@njit(cache=True, inline="always")
def _hinge_partners(w, X, y, i, partners, m, scale, g):
    """``_hinge_pair(w, X, i, y[i], b, y[b], scale, g)`` for b = partners[0], ..., partners[m-1] in
    that order, every b of the other class than i.

    w is fixed during the sweep, so the margins of four partners are summed at once: four
    independent additions per coordinate instead of one chain whose every addition waits for the
    previous one, so the four chains' additions overlap (benchmarks/README.md, "Other kernels").
    Each dot product is still summed over a = 0..d-1 in order and g is updated partner by
    partner, so the numbers are those of ``_hinge_pair`` called for each partner, bit for bit."""
    d = X.shape[1]
    c = 0
    while c + 4 <= m:
        b0 = partners[c]
        b1 = partners[c + 1]
        b2 = partners[c + 2]
        b3 = partners[c + 3]
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for a in range(d):
            wa = w[a]
            xa = X[i, a]
            s0 += wa * (xa - X[b0, a])
            s1 += wa * (xa - X[b1, a])
            s2 += wa * (xa - X[b2, a])
            s3 += wa * (xa - X[b3, a])
        _hinge_add(X, i, b0, s0, 0.5 * (y[i] - y[b0]), scale, g)
        _hinge_add(X, i, b1, s1, 0.5 * (y[i] - y[b1]), scale, g)
        _hinge_add(X, i, b2, s2, 0.5 * (y[i] - y[b2]), scale, g)
        _hinge_add(X, i, b3, s3, 0.5 * (y[i] - y[b3]), scale, g)
        c += 4
    while c < m:
        b = partners[c]
        _hinge_pair(w, X, i, y[i], b, y[b], scale, g)
        c += 1


@njit(cache=True, nogil=True)
def p1_alg1_steps(X, y, ki, eta, radius, t0, t1, W, F, I):
    """P1 Algorithm 1 (pair i_t with i_{t-1}), steps t0+1..t1.

    w_t = Pi_W(w_{t-1} - eta grad f(w_{t-1}; z_{i_t}, z_{i_{t-1}})), i_t = randint(ki, t, n),
    i_0 drawn by the caller (I[0] = i_{t0}).  Output (P1 Alg. 1, constant eta):
    (1/t) sum_{j=1}^t w_{j-2} with w_{-1} = w_0, i.e. W[2] += W[1] (= w_{j-2}) before step j.
    W[0] = w_t, W[1] = w_{t-1} (both w_0 at t = 0).
    """
    n = X.shape[0]
    d = X.shape[1]
    w = W[0]
    wp = W[1]
    acc = W[2]
    g = W[3]
    for t in range(t0 + 1, t1 + 1):
        i = randint(ki, t, n)
        j = I[0]
        for a in range(d):
            acc[a] += wp[a]
            g[a] = 0.0
        F[0] += 1.0
        _hinge_pair(w, X, i, y[i], j, y[j], 1.0, g)
        for a in range(d):
            wp[a] = w[a]
            w[a] = w[a] - eta * g[a]
        _project_l2(w, radius)
        I[0] = i


@njit(cache=True, nogil=True)
def sgd_pair_steps(X, y, ki, eta, radius, t0, t1, W, F):
    """SGD_pair: (i, j) = pair_ij(ki, t, n) uniform over ordered pairs i != j,
    w_t = Pi_W(w_{t-1} - eta grad f(w_{t-1}; z_i, z_j)).  Output (1/t) sum_{j<t} w_j
    (P4's numbering, as ``stabsim.engine.algorithm_specs`` ``sgd_pair``): W[2] += w_{t-1} before step t."""
    n = X.shape[0]
    d = X.shape[1]
    w = W[0]
    acc = W[2]
    g = W[3]
    for t in range(t0 + 1, t1 + 1):
        i, j = pair_ij(ki, t, n)
        for a in range(d):
            acc[a] += w[a]
            g[a] = 0.0
        F[0] += 1.0
        _hinge_pair(w, X, i, y[i], j, y[j], 1.0, g)
        for a in range(d):
            w[a] = w[a] - eta * g[a]
        _project_l2(w, radius)


@njit(cache=True, nogil=True)
def olp_steps(X, y, ki, kr, eta, radius, s, t0, t1, W, F, I, B):
    """OLP (Kar et al. 2013, Alg. 1) with RS-x buffer updates (Alg. 2), steps t0+1..t1.

    z_t = z_{i_t}, i_t = randint(ki, t, n).  With the buffer B of |B| = I[0] past points:
    w_t = Pi_W(w_{t-1} - (eta/|B|) sum_{b in B} grad f(w_{t-1}; z_t, z_b)) (w_t = w_{t-1}
    while B is empty), then B <- RS-x(B, z_t, s, t) (see the module docstring).  B[0, :s]
    holds row indices, B[1] is workspace (the buffer's points of the other class at each
    step; the repopulation).  Output (1/t) sum_{j<=t} w_j.
    """
    n = X.shape[0]
    d = X.shape[1]
    w = W[0]
    acc = W[2]
    g = W[3]
    buf = B[0]
    tmp = B[1]
    for t in range(t0 + 1, t1 + 1):
        i = randint(ki, t, n)
        m = I[0]
        if m > 0:
            for a in range(d):
                g[a] = 0.0
            k = 0                     # the buffer's points of the other class, in buffer order
            for c in range(m):
                if y[buf[c]] != y[i]:
                    tmp[k] = buf[c]
                    k += 1
            _hinge_partners(w, X, y, i, tmp, k, 1.0 / m, g)
            for a in range(d):
                w[a] = w[a] - eta * g[a]
            _project_l2(w, radius)
        for a in range(d):
            acc[a] += w[a]
        F[0] += 1.0
        # RS-x
        if m < s:
            buf[m] = i
            I[0] = m + 1
        elif t == s + 1:
            for c in range(s):
                tmp[c] = buf[c]
            tmp[s] = i
            for c in range(s):
                buf[c] = tmp[randint(kr, t * s + c, s + 1)]
        else:
            p = 1.0 / t
            for c in range(s):
                if uniform(kr, t * s + c) < p:
                    buf[c] = i


@njit(cache=True, nogil=True)
def oam_gra_steps(X, y, ki, kr, eta, radius, N, t0, t1, W, F, I, B):
    """OAM_gra (Zhao et al. 2011, Alg. 1 with the gradient update), steps t0+1..t1.

    z_t = z_{i_t}, i_t = randint(ki, t, n).  Counters I[1] = N+_t, I[2] = N-_t (points of
    each class seen); buffers B[0] (positives) and B[1] (negatives), each of size N, filled by
    reservoir sampling (Algorithm R).  For y_t = +1: N+_t += 1, C_t = eta max(1, N-_t / N),
    B+ <- RS(B+, x_t), w_t = Pi_W(w_{t-1} - C_t sum_{b in B-} grad f(w_{t-1}; z_t, z_b))
    (the hinge subgradient: + C_t sum over b with w.(x_t - x_b) < 1 of (x_t - x_b));
    y_t = -1 symmetrically.  Output (1/t) sum_{j<=t} w_j.
    """
    n = X.shape[0]
    d = X.shape[1]
    w = W[0]
    acc = W[2]
    g = W[3]
    for t in range(t0 + 1, t1 + 1):
        i = randint(ki, t, n)
        if y[i] == 1.0:
            own, opp = 0, 1
        else:
            own, opp = 1, 0
        I[1 + own] += 1
        k = I[1 + own]
        n_opp = I[1 + opp]
        C = eta * max(1.0, n_opp / N)
        # reservoir sampling of the own-class buffer
        if k <= N:
            B[own, k - 1] = i
        elif uniform(kr, 2 * t) < N / k:
            B[own, randint(kr, 2 * t + 1, N)] = i
        m = min(n_opp, N)
        if m > 0:
            for a in range(d):
                g[a] = 0.0
            _hinge_partners(w, X, y, i, B[opp], m, 1.0, g)
            for a in range(d):
                w[a] = w[a] - C * g[a]
            _project_l2(w, radius)
        for a in range(d):
            acc[a] += w[a]
        F[0] += 1.0


@njit(cache=True, nogil=True)
def spauc_steps(X, y, ki, eta, radius, p, t0, t1, W, F, M):
    """SPAUC (square loss, saddle-point form with closed-form a, b, alpha), steps t0+1..t1.

    z_t = z_{i_t}, i_t = randint(ki, t, n); w_t = Pi_W(w_{t-1} - eta g(w_{t-1}; z_t)) with g of
    the module docstring; M[0] = mu+, M[1] = mu-, p = n+/n.  Output (1/t) sum_{j<=t} w_j.
    """
    n = X.shape[0]
    d = X.shape[1]
    w = W[0]
    acc = W[2]
    g = W[3]
    mp = M[0]
    mn = M[1]
    for t in range(t0 + 1, t1 + 1):
        i = randint(ki, t, n)
        if y[i] == 1.0:
            mu = mp
            coef = 2.0 * (1.0 - p)
        else:
            mu = mn
            coef = 2.0 * p
        dot = 0.0
        dd = 0.0
        for a in range(d):
            dot += w[a] * (X[i, a] - mu[a])
            dd += w[a] * (mn[a] - mp[a])
        f1 = coef * dot
        f2 = 2.0 * p * (1.0 - p) * (1.0 + dd)
        for a in range(d):
            g[a] = f1 * (X[i, a] - mu[a]) + f2 * (mn[a] - mp[a])
        for a in range(d):
            w[a] = w[a] - eta * g[a]
        _project_l2(w, radius)
        for a in range(d):
            acc[a] += w[a]
        F[0] += 1.0
