"""JAX comparator for run_all.py: the one-pair-per-step twin run (p1_alg1 / sgd_pair, AUC hinge)
as ``lax.scan`` over steps and ``vmap`` over replicates, float64, on the CPU.

Run by ``run_all.py`` in a subprocess with an interpreter that has JAX (JAX is not a
dependency of stabsim), e.g. a throwaway virtual environment::

    python -m venv /tmp/jaxvenv && /tmp/jaxvenv/bin/pip install jax numpy
    python benchmarks/run_all.py --jax-python /tmp/jaxvenv/bin/python

Usage: ``python jax_twin.py IN.npz`` (written by run_all.py: X, y, k, xrep, yrep, IA, IB,
eta, lag, repeat); prints one JSON line: best wall seconds of the vmapped run over all
replicates and of a single replicate, compile seconds, and the final distances (checked
against the numba kernel by run_all.py).  Needs only numpy and jax.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def main(path):
    import jax
    import jax.numpy as jnp
    from jax import lax

    jax.config.update("jax_enable_x64", True)
    z = np.load(path)
    X, y = jnp.asarray(z["X"]), jnp.asarray(z["y"])
    eta = float(z["eta"])
    lag = int(z["lag"])
    repeat = int(z["repeat"])

    def grad(w, xa, xb, ya, yb):
        c = 0.5 * (ya - yb)
        diff = xa - xb
        m = c * jnp.dot(w, diff)
        return jnp.where((c != 0.0) & (m < 1.0), -c, 0.0) * diff

    def one(k, xrep, yrep, ia, ib):
        d = X.shape[1]

        def rows(i):
            xa, ya = X[i], y[i]
            sub = i == k
            return xa, ya, jnp.where(sub, xrep, xa), jnp.where(sub, yrep, ya)

        def step(carry, ij):
            w, wp, w2, w2p, acc, accp = carry
            i, j = ij
            xa, ya, xpa, ypa = rows(i)
            xb, yb, xpb, ypb = rows(j)
            wn = w - eta * grad(w, xa, xb, ya, yb)
            wnp = wp - eta * grad(wp, xpa, xpb, ypa, ypb)
            if lag == 2:   # sum eta w_{t-2} / sum eta (constant eta: the mean of w_{t-2})
                acc, accp = acc + w2, accp + w2p
                w2, w2p = w, wp
            else:          # mean of w_{t-1}
                acc, accp = acc + w, accp + wp
            return (wn, wnp, w2, w2p, acc, accp), None

        zero = jnp.zeros(d)
        (w, wp, _, _, acc, accp), _ = lax.scan(step, (zero, zero, zero, zero, zero, zero), (ia[1:], ib[1:]))
        T = ia.shape[0] - 1
        return jnp.linalg.norm(w - wp), jnp.linalg.norm((acc - accp) / T)

    run = jax.jit(jax.vmap(one))
    args = tuple(jnp.asarray(z[n]) for n in ("k", "xrep", "yrep", "IA", "IB"))
    t0 = time.perf_counter()
    out = run(*args)
    jax.block_until_ready(out)
    compile_s = time.perf_counter() - t0
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(run(*args))
        best = min(best, time.perf_counter() - t0)
    one_args = tuple(a[:1] for a in args)
    jax.block_until_ready(run(*one_args))
    best1 = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(run(*one_args))
        best1 = min(best1, time.perf_counter() - t0)
    print(json.dumps({"jax": jax.__version__, "wall_s": best, "wall_R1_s": best1, "compile_s": compile_s,
                      "dist_iterate": np.asarray(out[0]).tolist(), "dist_output": np.asarray(out[1]).tolist()}))


if __name__ == "__main__":
    main(sys.argv[1])
