"""stabsim.thread_pools: BLAS on one thread and a short OpenMP spin in `stabsim run` and the
processes it starts, a user's own setting left alone.  Each case runs in a fresh interpreter (the
settings are process-wide)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from stabsim.thread_pools import BLAS_THREAD_VARIABLES, OPENMP_SPIN

_PROBE = """
import json, os, subprocess, sys
import numpy, scipy.linalg  # BLAS loaded before the call, as in `stabsim run`
from threadpoolctl import threadpool_info
from stabsim.thread_pools import single_threaded_blas
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
    code = ("import json, os; from stabsim.thread_pools import short_openmp_spin; "
            "print(json.dumps([short_openmp_spin(), os.environ.get('GOMP_SPINCOUNT')]))")
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_openmp_spin_shortened_unless_the_user_chose():
    assert _spin() == [True, str(OPENMP_SPIN)]
    assert _spin(GOMP_SPINCOUNT="50") == [False, "50"]
    assert _spin(OMP_WAIT_POLICY="active") == [False, None]
