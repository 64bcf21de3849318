"""Exact-arithmetic weak-duality bound for the unconstrained hinge ERM (reg = 0): the smoothed
dual weights are rounded to a dyadic grid, made dual feasible (sum_k alpha_k u_k = 0) in rational
arithmetic, and the bound K0 + c sum_k alpha_k is evaluated exactly and rounded down
(``stabsim.risk.erm``'s certificate when the floating-point bounds are not tight enough).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import scipy.linalg

from stabsim.kernels.risk_kernels import KIND_PN, KIND_POINT, point_rows
from stabsim.kernels.risk_pn import pn_alpha
from stabsim.engine.losses import POINT_LSQ

def _exact_dot(ints, xs):
    """sum_k ints_k * xs_k exactly (Python integers and the floats' dyadic values), as a Fraction."""
    terms = [(int(a),) + float(x).as_integer_ratio() for a, x in zip(ints, xs) if a and x]
    if not terms:
        return Fraction(0)
    L = max(den.bit_length() - 1 for _, _, den in terms)
    return Fraction(sum((a * num) << (L - den.bit_length() + 1) for a, num, den in terms), 1 << L)


def _exact_hinge_lb(obj, w, tau, bits=40, ncand=2000):
    """Unconstrained hinge (reg = 0): min F_S >= K0 + c sum_k alpha_k for every alpha in [0, 1]
    with sum_k alpha_k u_k = 0 exactly (weak duality; u_k = x_i - x_j, or y_i x_i pointwise).

    alpha = -phi_tau'(margins at w) (the smoothed dual weights) is rounded to multiples of
    2^-bits (integers A_k); the residual Z = sum_k A_k u_k is removed (1) in floating point by a
    room-weighted least-norm correction spread over the ``ncand`` most interior alphas, rounded
    back to integers, and (2) exactly, by solving for d of them in rational arithmetic.  If every
    corrected alpha stays in [0, 1] the bound is computed exactly and rounded down; else -inf.
    """
    pl = obj.pl
    one = 1 << bits
    if pl.kind == KIND_PN:
        ap, an = obj._block(w)
        if ap.size == 0 or an.size == 0:
            return math.nextafter(obj.K0, -math.inf)
        Af = np.empty((ap.size, an.size))
        pn_alpha(tau, ap, an, Af)
        A = np.rint(Af * float(one)).astype(np.int64)
        XP, XN = obj.XP, obj.XN
        room = np.minimum(A, one - A).ravel()
        cand = np.argsort(room)[::-1][:ncand]
        cand = cand[room[cand] > 0]
        ci, cj = cand // an.size, cand % an.size
        U = (XP[ci] - XN[cj]).T

        def resid(Acur):
            rP, rN = Acur.sum(axis=1), Acur.sum(axis=0)
            return [_exact_dot(rP, XP[:, c]) - _exact_dot(rN, XN[:, c]) for c in range(pl.d)]

        def col(k, c):
            return Fraction(float(XP[ci[k], c])) - Fraction(float(XN[cj[k], c]))
        cw = Fraction(pl.mult) / Fraction(pl.n * (pl.n - 1))
        K0 = Fraction(pl.kconst) / Fraction(pl.n * (pl.n - 1))
        flatA = A.reshape(-1)
    elif pl.kind == KIND_POINT and obj.form != POINT_LSQ and np.all(np.abs(pl.y) == 1.0):
        a = pl.X @ w
        v = np.empty(pl.n); d1 = np.empty(pl.n); d2 = np.empty(pl.n)
        point_rows(obj.form, obj.phi, obj.q, tau, a, pl.y, v, d1, d2)
        A = np.rint(np.clip(-d1 * pl.y, 0.0, 1.0) * float(one)).astype(np.int64)
        Yx = pl.X * pl.y[:, None]
        room = np.minimum(A, one - A)
        cand = np.argsort(room)[::-1][:ncand]
        cand = cand[room[cand] > 0]
        U = Yx[cand].T

        def resid(Acur):
            return [_exact_dot(Acur, Yx[:, c]) for c in range(pl.d)]

        def col(k, c):
            return Fraction(float(pl.y[cand[k]])) * Fraction(float(pl.X[cand[k], c]))
        cw = Fraction(1, pl.n)
        K0 = Fraction(0)
        flatA = A
    else:
        return -math.inf
    Z = resid(A)
    if any(Z):
        if cand.size == 0:
            return -math.inf
        # (1) floating-point least-norm correction weighted by the room of each alpha
        Zf = np.array([float(z) for z in Z])
        r = room[cand].astype(float)
        G = (U * r) @ U.T
        try:
            lam = np.linalg.lstsq(G, -Zf, rcond=None)[0]
        except np.linalg.LinAlgError:
            return -math.inf
        delta = np.rint(r * (U.T @ lam))
        over = np.max(np.abs(delta) / r)
        if over > 0.5:
            delta = np.rint(delta * (0.5 / over))
        flatA[cand] += delta.astype(np.int64)
        Z = resid(A)
    if any(Z):
        # (2) exact: d independent candidate columns absorb the rest
        top = np.argsort(np.minimum(flatA[cand], one - flatA[cand]))[::-1][: 20 * pl.d]
        _, Rq, piv = scipy.linalg.qr(np.ascontiguousarray(U[:, top]), pivoting=True, mode="economic")
        dg = np.abs(np.diag(Rq))
        rank = int(np.sum(dg > 1e-12 * max(dg.max(initial=0.0), 1e-300)))
        sel = [int(top[k]) for k in piv[:rank]]
        Mx = [[col(k, c) for k in sel] for c in range(pl.d)]
        sol = _exact_solve(Mx, [-z for z in Z])
        if sol is None:
            return -math.inf
        for k, dk in zip(sel, sol):
            newv = flatA[cand[k]] + dk
            if newv < 0 or newv > one:
                return -math.inf
        extra = sum(sol, Fraction(0))
    else:
        extra = Fraction(0)
    lb = K0 + cw * (Fraction(int(A.sum())) + extra) / one
    return math.nextafter(float(lb), -math.inf)


def _exact_solve(A, b):
    """A solution x of A x = b (lists of Fractions, A: rows x cols) by Gauss–Jordan elimination,
    free variables 0; None if inconsistent."""
    rows, ncols = len(A), len(A[0]) if A else 0
    M = [list(A[i]) + [b[i]] for i in range(rows)]
    piv_cols = []
    r = 0
    for c in range(ncols):
        pr = next((i for i in range(r, rows) if M[i][c] != 0), None)
        if pr is None:
            continue
        M[r], M[pr] = M[pr], M[r]
        inv = 1 / M[r][c]
        M[r] = [x * inv for x in M[r]]
        for i in range(rows):
            if i != r and M[i][c] != 0:
                f = M[i][c]
                M[i] = [xi - f * xr for xi, xr in zip(M[i], M[r])]
        piv_cols.append(c)
        r += 1
        if r == rows:
            break
    for i in range(r, rows):
        if M[i][ncols] != 0:
            return None
    x = [Fraction(0)] * ncols
    for i, c in enumerate(piv_cols):
        x[c] = M[i][ncols]
    return x
