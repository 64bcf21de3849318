"""numba's on-disk cache shared by processes that compiled different kernels.

numba names machine code by qualified name, argument types and a per-process counter.  The
twin kernel's four replicates (one per kind) are closures of one factory with one signature; when two processes
compiled two kinds under the same count, their cache entries carried the same symbols, and a
third process loading both ran one kind's code for the other: P4 Alg. 2 gave other numbers in a
suite whose kernels the warm-up's workers had compiled.  stabsim names each closure
(``twin._own_name``) and starts numba's counter at a random offset (``_cache.spread_function_ids``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import early_children

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import sys, numpy as np
from stabsim import run_twin
from stabsim.kernels import twin
twin.SPECIALISE_COLD = False   # the general builds, which the warm-up's workers compile for the suite
rng = np.random.default_rng(0)
X = rng.standard_normal((30, 3)); y = np.where(rng.random(30) < .5, 1.0, -1.0); y[:2] = [1, -1]
KW = {"pair": dict(algorithm="sgd_pair", loss="auc_hinge"),
      "point": dict(algorithm="p4_alg1", loss="point_logistic", sigma=0.5)}
out = {name: run_twin(X, y, T=50, replicates=3, seed=1, neighbour="flip", progress=False,
                      **KW[name])["dist_iterate"].values for name in sys.argv[2:]}
np.savez(sys.argv[1], **out)
"""


#: each kind compiled (and cached) by its own process, at the same time, as the warm-up does;
#: started when the session starts (tests/early_children.py)
EARLY_CHILDREN = ("pair", "point")


def _env(folder):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(folder / "cache"), "STABSIM_NO_WARMUP": "1",
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("STABSIM_NUMBA_CACHE_AUTO", None)
    return env


def early_child(kind, folder):
    return [sys.executable, "-c", CHILD, str(folder / f"{kind}.npz"), kind], _env(folder)


def test_kernel_kinds_compiled_by_different_processes_keep_their_own_code(tmp_path):
    done, tmp_path = early_children.results(sys.modules[__name__], tmp_path)
    for p in done.values():
        assert p.returncode == 0, p.stderr
    env = _env(tmp_path)

    def child(out, *kinds):
        return subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / out), *kinds], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    # then both loaded from the cache into one process, in either order
    for out, order in (("ab.npz", ("pair", "point")), ("ba.npz", ("point", "pair"))):
        p = child(out, *order)
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    pair, point = np.load(tmp_path / "pair.npz")["pair"], np.load(tmp_path / "point.npz")["point"]
    assert not np.array_equal(pair, point)
    for out in ("ab.npz", "ba.npz"):
        both = np.load(tmp_path / out)
        np.testing.assert_array_equal(both["pair"], pair, err_msg=out)
        np.testing.assert_array_equal(both["point"], point, err_msg=out)


def test_each_kernel_kind_compiles_under_its_own_name():
    from stabsim.kernels import twin

    names = {f.py_func.__qualname__ for f in twin._CPU_REPLICATES}
    assert len(names) == twin.GENERAL + 1
