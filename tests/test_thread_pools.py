"""stabsim.runtime.thread_pools: BLAS on one thread and a short OpenMP spin in `stabsim run` and the
processes it starts, a user's own setting left alone.  Each case runs in a fresh interpreter (the
settings are process-wide)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from stabsim.runtime.thread_pools import BLAS_THREAD_VARIABLES, OPENMP_SPIN

_PROBE = """
import json, os, subprocess, sys
import numpy, scipy.linalg  # BLAS loaded before the call, as in `stabsim run`
from threadpoolctl import threadpool_info
from stabsim.runtime.thread_pools import single_threaded_blas
changed = single_threaded_blas()
child = subprocess.run([sys.executable, "-c", "import numpy, json; from threadpoolctl import threadpool_info; "
                        "print(json.dumps([i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas']))"],
                       capture_output=True, text=True, check=True)
print(json.dumps({"changed": changed, "env": os.environ.get("OPENBLAS_NUM_THREADS"),
                  "here": [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"],
                  "child": json.loads(child.stdout)}))
"""


def _probe(**env):
    base = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    out = subprocess.run([sys.executable, "-c", _PROBE], env={**base, **env}, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_blas_limited_here_and_in_children():
    r = _probe()
    assert r["changed"] is True and r["env"] == "1"
    assert r["here"] and all(n == 1 for n in r["here"])     # numpy's BLAS was already loaded
    assert r["child"] and all(n == 1 for n in r["child"])   # a process started afterwards


def test_user_setting_is_respected():
    r = _probe(OPENBLAS_NUM_THREADS="2")
    assert r["changed"] is False and r["env"] == "2"


def test_stabsim_run_configures_thread_pools(monkeypatch, tmp_path):
    """`stabsim run` calls configure_thread_pools once, before its studies (a stand-in counts the calls)."""
    import stabsim.cli as cli

    calls = []
    monkeypatch.setattr(cli, "configure_thread_pools", lambda: calls.append(1))
    monkeypatch.setenv("STABSIM_NO_WARMUP", "1")
    rc = cli.main(["run", "p1_thm1_rate", "--quick", "--out", str(tmp_path / "out"), "--no-progress",
                   "--no-analyse"])
    assert rc == 0 and calls == [1]


def _spin(**env):
    base = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    code = ("import json, os; from stabsim.runtime.thread_pools import short_openmp_spin; "
            "print(json.dumps([short_openmp_spin(), os.environ.get('GOMP_SPINCOUNT')]))")
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_openmp_spin_shortened_unless_the_user_chose():
    assert _spin() == [True, str(OPENMP_SPIN)]
    assert _spin(GOMP_SPINCOUNT="50") == [False, "50"]
    assert _spin(OMP_WAIT_POLICY="active") == [False, None]


# ---- map_in_threads ------------------------------------------------------------------------------

def _p3_runs_on_sets(mapper):
    """P3's per-replicate runs (one data set each, as in the figure studies) through ``mapper``."""
    import numpy as np

    from stabsim import make_problem
    from stabsim.privacy import algorithms as pa

    cfg = pa.P3GigaConfig(variant="OnPairStrC", eps=1.0, delta=0.05, alpha=1.5, T1=5, G=2.0, L=1.0,
                          constraint=("l2", 1.0))
    sets = [make_problem("auc_noisy", d=3).sample(30, 40 + i) for i in range(5)]
    runs = mapper(lambda i: pa.p3_giga(*sets[i], cfg, replicates=[i], seed=13, record_outputs=True), range(5))
    return [np.concatenate([r[v].values.ravel() for v in ("w_priv", "dist_iterate", "loss_path", "released")])
            for r in runs]


def test_map_in_threads_gives_the_loop_s_numbers_in_order():
    """Kernels run from two threads at once (each on one numba thread) give the plain loop's
    numbers bit for bit, in the order of the items."""
    import numpy as np

    from stabsim.runtime.thread_pools import map_in_threads

    loop = _p3_runs_on_sets(lambda f, xs: [f(x) for x in xs])
    threaded = _p3_runs_on_sets(lambda f, xs: map_in_threads(f, xs, threads=2))
    assert len(threaded) == 5
    for a, b in zip(loop, threaded):
        np.testing.assert_array_equal(a, b)


def test_map_in_threads_runs_one_after_the_other_where_the_layer_is_not_thread_safe(monkeypatch):
    """numba's workqueue layer aborts on concurrent launches: then every call runs in the caller."""
    import threading

    import stabsim.runtime.thread_pools as tp

    monkeypatch.setattr(tp, "_concurrent_launches_safe", lambda: False)
    where = tp.map_in_threads(lambda x: (x, threading.get_ident()), range(4), threads=2)
    assert [x for x, _ in where] == [0, 1, 2, 3]
    assert {t for _, t in where} == {threading.get_ident()}


def test_map_in_threads_raises_the_error_and_drops_the_calls_not_started():
    """A call that fails: its error is raised once the calls running have ended (here each later
    call waits 0.5 s), and the calls not started are never made."""
    import time

    import pytest

    from stabsim.runtime.thread_pools import map_in_threads

    started = []

    def call(x):
        started.append(x)
        if x == 1:
            raise ValueError("replicate 1 failed")
        if x > 1:
            time.sleep(0.5)
        return x

    with pytest.raises(ValueError, match="replicate 1 failed"):
        map_in_threads(call, range(40), threads=2)
    # (the thread that ran call 0 may start call 2 before the other thread records call 1)
    assert sorted(started)[:2] == [0, 1] and len(started) <= 4
