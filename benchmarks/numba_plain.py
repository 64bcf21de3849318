"""``benchmarks/c/twin_p1.c`` ported line by line to numba: the plain loop, without stabsim's
generality (run-time loss, constraint, output-rule and noise codes, checkpoints, iterate slots),
and without its look-ahead of the index draws (which changes no number).

It separates the two parts of the kernel-vs-C gap in ``bench_twin.py``: numba's code generation
for the same program (this port against the C build) and the cost of the kernel's generality
(``stabsim.kernels.twin`` against this port).  Same arguments and results as ``twin_p1`` in the
C file, same floating-point order, so all three agree bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from stabsim.engine.rng import randint


@njit(cache=True, inline="always")
def _step_auc_hinge(w, X, a, b, ya, yb, eta, d):
    """One SGD step on the AUC hinge loss at the pair (a, b), in place; returns the loss."""
    c = 0.5 * (ya - yb)
    if c == 0.0:
        return 0.0
    dot = 0.0
    for j in range(d):
        dot += w[j] * (X[a, j] - X[b, j])
    m = c * dot
    if m >= 1.0:
        return 0.0
    f = -c
    for j in range(d):
        w[j] = w[j] - eta * (f * (X[a, j] - X[b, j]))
    return 1.0 - m


@njit(cache=True, inline="always")
def _project_l2(w, d, radius):
    s = 0.0
    for j in range(d):
        s += w[j] * w[j]
    if s > radius * radius:
        f = radius / math.sqrt(s)
        for j in range(d):
            w[j] *= f
        return 1
    return 0


@njit(cache=True)
def twin_p1_plain(X, Y, n, k, krow, key, etas, omegas, T, use_l2, radius, w0, out, stats):
    """P1 Alg. 1 twin run, AUC hinge, one replicate: see twin_p1.c (same layout of out/stats)."""
    d = X.shape[1]
    w = w0.copy()
    wp = w0.copy()
    w2 = w0.copy()
    w2p = w0.copy()
    acc = np.zeros(d)
    accp = np.zeros(d)
    iprev = randint(key, 0, n)
    wsum = 0.0
    lsum = 0.0
    l2sum = 0.0
    nproj = 0.0
    nactive = 0.0
    pend = 0.0
    pendp = 0.0
    same = True
    samep = True
    for t in range(1, T + 1):
        i = randint(key, t, n)
        ip = krow if i == k else i
        jp = krow if iprev == k else iprev
        eta = etas[t]
        om = omegas[t]
        pend += om
        pendp += om
        if not same:
            for j in range(d):
                acc[j] += pend * w2[j]
                w2[j] = w[j]
            pend = 0.0
        if not samep:
            for j in range(d):
                accp[j] += pendp * w2p[j]
                w2p[j] = wp[j]
            pendp = 0.0
        wsum += om
        f = _step_auc_hinge(w, X, i, iprev, Y[i], Y[iprev], eta, d)
        fp = _step_auc_hinge(wp, X, ip, jp, Y[ip], Y[jp], eta, d)
        same = f == 0.0
        samep = fp == 0.0
        lsum += f
        l2sum += eta * eta * f
        nactive += f != 0.0
        if use_l2:
            a = _project_l2(w, d, radius)
            b = _project_l2(wp, d, radius)
            nproj += a + b
            same = same and a == 0
            samep = samep and b == 0
        iprev = i
    s = 0.0
    so = 0.0
    for j in range(d):
        e = w[j] - wp[j]
        s += e * e
        a = acc[j] + pend * w2[j] if pend != 0.0 else acc[j]
        ap = accp[j] + pendp * w2p[j] if pendp != 0.0 else accp[j]
        eo = (a - ap) / wsum
        so += eo * eo
        out[j] = w[j]
        out[d + j] = wp[j]
        out[2 * d + j] = a / wsum
        out[3 * d + j] = ap / wsum
    stats[0] = math.sqrt(s)
    stats[1] = math.sqrt(so)
    stats[2] = lsum
    stats[3] = l2sum
    stats[4] = nproj
    stats[5] = nactive
