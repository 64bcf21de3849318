"""JAX comparator for bench_gpu.py: the one-pair-per-step twin run (p1_alg1 / sgd_pair, AUC hinge,
l2 ball) as ``lax.scan`` over steps and ``vmap`` over replicates, float64, on JAX's default
device (the GPU when JAX has one).  What a user would write in about 30 lines, plus the counter
generator of ``stabsim.engine.rng`` written in ``jnp.uint64`` so that every replicate draws the same
indices as stabsim (the final distances are then checked against ``run_twin``).

Usage: ``python jax_twin_gpu.py IN.npz`` (written by bench_gpu.py: X, y, k, xrep, yrep, keys
(the STREAM_INDEX key of each replicate), alg, eta, radius, T, repeat).  Prints one JSON line:
the JAX version and device, compile seconds, the best wall seconds over ``repeat`` runs, and the
final ||w_T - w'_T|| of every replicate.  Needs only numpy and jax.
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
    n = X.shape[0]
    eta, radius, T, repeat = float(z["eta"]), float(z["radius"]), int(z["T"]), int(z["repeat"])
    pair = str(z["alg"]) == "sgd_pair"
    u64 = jnp.uint64
    golden, m1, m2 = u64(0x9E3779B97F4A7C15), u64(0xBF58476D1CE4E5B9), u64(0x94D049BB133111EB)

    def mix64(v):  # SplitMix64 finaliser, as stabsim.engine.rng.mix64 (uint64 arithmetic wraps)
        v = (v ^ (v >> u64(30))) * m1
        v = (v ^ (v >> u64(27))) * m2
        return v ^ (v >> u64(31))

    def randint(key, counter, m):
        u = (mix64(key + (counter.astype(u64) + u64(1)) * golden) >> u64(11)).astype(jnp.float64) * 2.0 ** -53
        r = (u * m).astype(jnp.int64)
        return jnp.minimum(r, m - 1)

    def grad(w, xa, xb, ya, yb):
        c = 0.5 * (ya - yb)
        diff = xa - xb
        m = c * jnp.dot(w, diff)
        return jnp.where((c != 0.0) & (m < 1.0), -c, 0.0) * diff

    def project(w):
        s = jnp.dot(w, w)
        return jnp.where(s > radius * radius, w * (radius / jnp.sqrt(s)), w)

    def one(key, k, xrep, yrep):
        def rows(i):
            xa, ya = X[i], y[i]
            sub = i == k
            return xa, ya, jnp.where(sub, xrep, xa), jnp.where(sub, yrep, ya)

        def step(carry, t):
            w, wp, prev = carry
            if pair:   # (i, j) uniform over ordered pairs i != j (stabsim.engine.rng.pair_ij)
                i = randint(key, 2 * t, n)
                j = randint(key, 2 * t + 1, n - 1)
                j = jnp.where(j >= i, j + 1, j)
            else:      # P1 Alg. 1: pair i_t with i_{t-1}
                i, j = randint(key, t, n), prev
            xa, ya, xpa, ypa = rows(i)
            xb, yb, xpb, ypb = rows(j)
            w = project(w - eta * grad(w, xa, xb, ya, yb))
            wp = project(wp - eta * grad(wp, xpa, xpb, ypa, ypb))
            return (w, wp, i), None

        zero = jnp.zeros(X.shape[1])
        (w, wp, _), _ = lax.scan(step, (zero, zero, randint(key, jnp.int64(0), n)), jnp.arange(1, T + 1))
        return jnp.linalg.norm(w - wp)

    run = jax.jit(jax.vmap(one))
    args = (jnp.asarray(z["keys"].astype(np.uint64)), jnp.asarray(z["k"]), jnp.asarray(z["xrep"]),
            jnp.asarray(z["yrep"]))
    t0 = time.perf_counter()
    out = jax.block_until_ready(run(*args))
    compile_s = time.perf_counter() - t0
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(run(*args))
        best = min(best, time.perf_counter() - t0)
    print(json.dumps({"jax": jax.__version__, "device": str(jax.devices()[0]), "compile_s": compile_s,
                      "wall_s": best, "dist_iterate": np.asarray(out).tolist()}))


if __name__ == "__main__":
    main(sys.argv[1])
