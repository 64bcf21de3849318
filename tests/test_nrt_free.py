"""Functions compiled without numba's reference counting (``stabsim.kernels.nrt_free``).

A function compiled with ``NRT_FREE`` passes the flag on to every function compiled while it is
compiled.  The rule that keeps that safe: none of them returns an array (a caller with reference
counting that reused such a compiled function would release a reference it was never given;
allocation is refused by numba itself).  The check compiles the NRT-free functions from an
empty cache in a child process and records, with numba's compile events, every function
compiled in their context and its return type.  (That the numbers are unchanged is what the
reference-loop tests check: tests/test_engine.py runs the general kind's buffer update against
tests/naive.py.)
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import early_children


ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys, numpy as np
from numba.core import event as ev, types

stack, found = [], []

def nrt_free_context():
    for opts in reversed(stack):       # the nearest explicit setting wins (numba's inheritance)
        if "_nrt" in opts:
            return not opts["_nrt"]
    return False

def has_array(t):
    return isinstance(t, types.Array) or (isinstance(t, types.BaseTuple) and any(has_array(x) for x in t.types))

class Listener(ev.Listener):
    def on_start(self, event):
        stack.append(dict(event.data["dispatcher"].targetoptions))
    def on_end(self, event):
        free = nrt_free_context()
        stack.pop()
        d = event.data["dispatcher"]
        cres = d.overloads.get(tuple(event.data["args"]))
        if free and cres is not None:
            ret = cres.signature.return_type
            found.append((d.py_func.__module__ + "." + d.py_func.__qualname__, str(ret), has_array(ret)))

ev.register("numba:compile", Listener())

from stabsim import run_twin
from stabsim.kernels import giga, p2_removal
from stabsim.engine.losses import AUC, METRIC
rng = np.random.default_rng(0)
X = rng.standard_normal((20, 3)); y = np.where(rng.random(20) < .5, 1.0, -1.0); y[:2] = [1, -1]
# the general kind (every schedule, loss, constraint and output rule behind run-time codes) and a fast kind
run_twin(X, y, algorithm="p1_buffer", buffer=3, loss="auc_hinge", constraint="l2:1", T=20, replicates=2, progress=False)
run_twin(X, y, algorithm="p4_alg1", loss="point_logistic", sigma=0.5, T=20, replicates=2, progress=False)
w, g, dx = np.zeros(9), np.zeros(9), np.zeros(3)
p2_removal.full_grad(METRIC, 0, 1.0, w, X, y, -1, g, dx, np.zeros(20), np.zeros(20), np.zeros(0), np.zeros(0))
p2_removal.full_grad(AUC, 2, 1.0, w[:3], X, y, -1, g[:3], dx, np.zeros(20), np.zeros(20), np.zeros(400), np.zeros(400))
giga.ball_point(np.uint64(1), 0, 9, 3, 1.0, w)
giga._lhat(AUC, 0, 1.0, w[:3], X, y, np.arange(20), 5, False, -1, 0, 1.0, g[:3], dx)
R = 2   # GIGA's replicate (called through its address by the parallel loop)
giga.giga_kernel(np.vstack([X, X[:R]])[None], np.r_[y, y[:R]][None], np.zeros(R, np.int64), 20 + np.arange(R),
                 np.arange(R), np.int64(0), np.array([np.arange(20)] * R), AUC, 0, 1.0, 1, 1.0, 0, 0.1,
                 np.int64(3), True, 0.5, 0.5, False, np.zeros((R, 3)), np.array([20]),
                 np.zeros((R, 1, giga.N_REC_GIGA)), False, np.zeros((1, 1, 2, 1)), np.zeros((R, 2, 2, 3)))
json.dump(found, open(sys.argv[1], "w"))
"""


#: started when the session starts (tests/early_children.py)
EARLY_CHILDREN = ("nrt_free",)


def early_child(key, folder):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(folder / "cache"), "STABSIM_NO_WARMUP": "1",
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return [sys.executable, "-c", CHILD, str(folder / "found.json")], env


def test_no_function_compiled_without_reference_counting_returns_an_array(tmp_path):
    done, folder = early_children.results(sys.modules[__name__], tmp_path)
    p = done["nrt_free"]
    assert p.returncode == 0, p.stderr
    out = folder / "found.json"
    found = json.loads(out.read_text())
    names = {name for name, _, _ in found}
    # the context reached what it should: the replicates, their callees, P2's and GIGA's helpers
    # (the fast kind's cold call compiles its replicate specialised: replicate_kind2_<constants>)
    for expected in ("stabsim.kernels.twin_replicate.replicate_kind3", "stabsim.kernels.twin_steps._general_step",
                     "stabsim.kernels.twin_steps._pair", "stabsim.kernels.allpairs.allpairs_grad",
                     "stabsim.kernels.twin_replicate.replicate_kind2", "stabsim.kernels.p2_removal.full_grad",
                     "stabsim.kernels.giga._lhat", "stabsim.kernels.giga.ball_point",
                     "stabsim.kernels.giga._giga_replicate"):
        assert any(n == expected or n.startswith(expected + "_") for n in names), (expected, sorted(names))
    assert not any(t.startswith("stabsim.kernels.twin._twin_kernel") for t in names)   # it allocates
    arrays = [(name, ret) for name, ret, is_array in found if is_array]
    assert arrays == [], arrays

