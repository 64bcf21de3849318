"""OLP and OAM_gra (P1 Table 1's buffer baselines): the kernels against one-partner-at-a-time
builds of the same updates (issue #17, session 31).

Run from the repository root::

    python benchmarks/bench_baselines.py            # d = 784 (mnist5k's width) and d = 16, about 1 min

The kernels in ``stabsim.kernels.baselines`` sweep the buffer with ``_hinge_partners``, which sums
four partners' margins at once.  The comparators here are those kernels with the sweep written
the obvious way, ``_hinge_pair`` per partner (the code before session 31).  Both are run on the
same data and streams in interleaved rounds; the script prints the median seconds per run and
checks that the iterates agree bit for bit.  Nothing is asserted about speed.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from numba import njit

from stabsim.kernels.baselines import _hinge_pair, _project_l2, oam_gra_steps, olp_steps
from stabsim.engine.rng import randint, uniform


@njit(nogil=True)
def olp_one_by_one(X, y, ki, kr, eta, radius, s, t0, t1, W, F, I, B):
    """``olp_steps`` with ``_hinge_pair`` called for each buffered point."""
    n, d = X.shape
    w, acc, g, buf, tmp = W[0], W[2], W[3], B[0], B[1]
    for t in range(t0 + 1, t1 + 1):
        i = randint(ki, t, n)
        m = I[0]
        if m > 0:
            g[:] = 0.0
            for c in range(m):
                _hinge_pair(w, X, i, y[i], buf[c], y[buf[c]], 1.0 / m, g)
            for a in range(d):
                w[a] = w[a] - eta * g[a]
            _project_l2(w, radius)
        for a in range(d):
            acc[a] += w[a]
        F[0] += 1.0
        if m < s:
            buf[m] = i
            I[0] = m + 1
        elif t == s + 1:
            tmp[:s] = buf[:s]
            tmp[s] = i
            for c in range(s):
                buf[c] = tmp[randint(kr, t * s + c, s + 1)]
        else:
            for c in range(s):
                if uniform(kr, t * s + c) < 1.0 / t:
                    buf[c] = i


@njit(nogil=True)
def oam_one_by_one(X, y, ki, kr, eta, radius, N, t0, t1, W, F, I, B):
    """``oam_gra_steps`` with ``_hinge_pair`` called for each buffered point."""
    n, d = X.shape
    w, acc, g = W[0], W[2], W[3]
    for t in range(t0 + 1, t1 + 1):
        i = randint(ki, t, n)
        own, opp = (0, 1) if y[i] == 1.0 else (1, 0)
        I[1 + own] += 1
        k = I[1 + own]
        n_opp = I[1 + opp]
        C = eta * max(1.0, n_opp / N)
        if k <= N:
            B[own, k - 1] = i
        elif uniform(kr, 2 * t) < N / k:
            B[own, randint(kr, 2 * t + 1, N)] = i
        m = min(n_opp, N)
        if m > 0:
            g[:] = 0.0
            for c in range(m):
                b = B[opp, c]
                _hinge_pair(w, X, i, y[i], b, y[b], 1.0, g)
            for a in range(d):
                w[a] = w[a] - C * g[a]
            _project_l2(w, radius)
        for a in range(d):
            acc[a] += w[a]
        F[0] += 1.0


def _run(f, X, y, s, T):
    d = X.shape[1]
    W, F, I, B = np.zeros((4, d)), np.zeros(1), np.zeros(4, np.int64), np.zeros((2, s + 1), np.int64)
    t = time.perf_counter()
    f(X, y, np.uint64(5), np.uint64(7), 0.01, 10.0, s, 0, T, W, F, I, B)
    return time.perf_counter() - t, W


def main(rounds: int = 5) -> None:
    g = np.random.default_rng(0)
    print("| d | method | buffer | steps | one partner at a time (s) | four margins at once (s) | ratio | same bits |")
    print("|---|---|---|---|---|---|---|---|")
    for d, n, T in ((784, 4000, 3000), (16, 5000, 20000)):
        X = g.uniform(-1, 1, (n, d))
        y = np.where(g.uniform(size=n) < 0.4, 1.0, -1.0)
        for name, new, old, s in (("olp", olp_steps, olp_one_by_one, 200),
                                  ("oam_gra", oam_gra_steps, oam_one_by_one, 100)):
            _run(new, X, y, s, 1), _run(old, X, y, s, 1)          # compile outside the timing
            times = {"old": [], "new": []}
            same = True
            for r in range(rounds):
                order = (("old", old), ("new", new)) if r % 2 == 0 else (("new", new), ("old", old))
                got = {}
                for label, f in order:
                    sec, W = _run(f, X, y, s, T)
                    times[label].append(sec)
                    got[label] = W
                same &= np.array_equal(got["old"], got["new"])
            a, b = statistics.median(times["old"]), statistics.median(times["new"])
            print(f"| {d} | {name} | {s} | {T} | {a:.3f} | {b:.3f} | {a / b:.2f} | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
