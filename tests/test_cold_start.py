"""A fast kind's first call, when its general replicate is compiled neither in this process nor in
numba's on-disk cache, runs a build specialised to the call's configuration
(``stabsim.kernels.twin.replicate_address``): it must give the general build's
numbers bit for bit, and a compiled general build must be used whenever there is one."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import early_children
import numpy as np
import pytest

from stabsim import run_twin
from stabsim.compile import beside as compile_beside
from stabsim.engine import rng
from stabsim.kernels import twin
from stabsim.compile import native_call

ROOT = Path(__file__).resolve().parent.parent

#: From an empty cache (no helper): each case run cold, which must take a specialised build of
#: its kind and compile no general one, then with ``SPECIALISE_COLD`` off, which compiles the
#: general build; the recorded numbers compared bit for bit.  The cases: each fast kind, with
#: the codes a specialisation fixes varied between them (loss form, constraint, noise mode,
#: output lag, reference point, recorded outputs).
CHILD = """
import json, sys
import numpy as np
from stabsim import run_twin
from numba import types
from stabsim.compile import native_call
from stabsim.kernels import twin, twin_steps

RECORDED = ("dist_iterate", "dist_output", "loss_path", "loss_ref_path", "eta2_loss_path", "output")
CASES = {"p1_alg1-hinge-l2": (dict(algorithm="p1_alg1", loss="auc_hinge", constraint="l2:0.5"), twin.FAST_PREVIOUS),
         "sgd_pair-noise-ref-outputs": (dict(algorithm="sgd_pair", loss="auc_logistic", sigma=0.3, record_outputs=True,
                                             w_ref=np.array([0.1, -0.2, 0.3])), twin.FAST_PAIR),
         "p4_alg1-independent-noise": (dict(algorithm="p4_alg1", loss="point_logistic", sigma=0.5, constraint="l2:2",
                                            independent_noise=True), twin.FAST_POINT)}
r = np.random.default_rng(0)
X = r.standard_normal((24, 3)); y = np.where(r.random(24) < 0.5, 1.0, -1.0); y[:2] = [1.0, -1.0]
APART = {"_record": twin_steps._record, "linear_pair_value": twin.linear_pair_value, "point_coef": twin.point_coef,
         "stream_key": twin.stream_key, "_first_draws": twin_steps._first_draws}
report = {}
for name, (kw, kind) in CASES.items():
    run = lambda: run_twin(X, y, replicates=5, T=200, seed=7, eta=0.05, neighbour="flip", progress=False, **kw)
    before = twin._specialised.cache_info().currsize
    cold = run()
    literal_callees = sorted(n for n, f in APART.items() for sig in f.signatures
                             if any(isinstance(t, types.Literal) for t in sig))
    specs = [list(k[1]) for k in twin._CHOSEN if k[0] == kind]
    general_compiled_cold = len(twin._CPU_REPLICATES[kind].signatures)
    twin.SPECIALISE_COLD = False
    twin._CHOSEN.clear(); native_call._ADDRESSES.clear()
    general = run()
    twin.SPECIALISE_COLD = True
    names = [n for n in RECORDED if n in general]
    report[name] = {"kind": kind, "specs": specs, "built": twin._specialised.cache_info().currsize - before,
                    "literal_callees": literal_callees,
                    "general_compiled_cold": general_compiled_cold,
                    "general_compiled_after": len(twin._CPU_REPLICATES[kind].signatures),
                    "equal": {n: bool(np.array_equal(cold[n].values.view(np.int64), general[n].values.view(np.int64)))
                              for n in names}}
json.dump(report, open(sys.argv[1], "w"))
"""

#: started when the session starts (tests/early_children.py)
EARLY_CHILDREN = ("cold",)


def early_child(key, folder):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(folder / "cache"), "STABSIM_NO_WARMUP": "1",
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("STABSIM_NUMBA_CACHE_AUTO", None)
    return [sys.executable, "-c", CHILD, str(folder / "cold.json")], env


def test_a_cold_start_runs_the_specialised_build_with_the_same_numbers(tmp_path):
    done, folder = early_children.results(sys.modules[__name__], tmp_path)
    assert done["cold"].returncode == 0, done["cold"].stderr[-3000:]
    report = json.loads((folder / "cold.json").read_text())
    assert {case["kind"] for case in report.values()} == {twin.FAST_PREVIOUS, twin.FAST_PAIR, twin.FAST_POINT}
    for name, case in report.items():
        assert case["built"] == 1 and len(case["specs"]) == 1, (name, case)
        assert len(case["specs"][0]) == 7 and case["specs"][0][6] == 3, (name, case)   # p = d = 3
        assert case["general_compiled_cold"] == 0 and case["general_compiled_after"] == 1, (name, case)
        assert case["equal"] and all(case["equal"].values()), (name, case["equal"])
        # the callees compiled apart got the run-time codes, not the constants: the general
        # build's signatures, which the cache or the helper can serve
        assert case["literal_callees"] == [], (name, case)
    assert "output" in report["sgd_pair-noise-ref-outputs"]["equal"]


def test_the_helper_imports_no_xarray():
    """The helper that compiles beside a cold call needs only ``stabsim.kernels.twin``: the
    package's public names are imported on first use (``stabsim.__getattr__``), so it does not
    import xarray and pandas (benchmarks/README.md, "Import time"); a user's ``stabsim.run_twin``
    still works after a bare ``import stabsim``, and so does a submodule not imported yet."""
    code = ("import sys, stabsim.compile.helper, stabsim.kernels.twin\n"
            "print(sorted(m for m in ('xarray', 'pandas') if m in sys.modules))\n"
            "import stabsim\n"
            "print(stabsim.run_twin.__module__, stabsim.theory.__name__, 'run_twin' in dir(stabsim))\n"
            "try:\n    stabsim.no_such_name\nexcept AttributeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[]", "stabsim.engine.twin_runs stabsim.theory True",
                                       "module 'stabsim' has no attribute 'no_such_name'"]


def _run(kw):
    r = np.random.default_rng(0)
    X = r.standard_normal((24, 3))
    y = np.where(r.random(24) < 0.5, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    return run_twin(X, y, replicates=5, T=200, seed=7, eta=0.05, neighbour="flip", progress=False, **kw)


P1_ALG1 = dict(algorithm="p1_alg1", loss="auc_hinge", constraint="l2:0.5")


def _fresh_lookups(monkeypatch):
    """Forget which replicate this process resolved for which call (no helper process either)."""
    monkeypatch.setattr(twin, "_CHOSEN", {})
    monkeypatch.setattr(native_call, "_ADDRESSES", {})
    monkeypatch.setenv("STABSIM_NO_WARMUP", "1")


def test_a_compiled_general_build_is_used(monkeypatch):
    _fresh_lookups(monkeypatch)
    monkeypatch.setattr(twin, "_specialised", lambda k, spec: pytest.fail("specialised a warm kind"))
    _run(P1_ALG1)   # (the test session's warm-up compiled the general builds)
    _fresh_lookups(monkeypatch)
    monkeypatch.setattr(twin, "SPECIALISE_COLD", False)   # (the warm-up's recording) never specialises
    monkeypatch.setattr(compile_beside, "cached", lambda disp, sig: False)
    _run(P1_ALG1)


def test_a_call_waits_for_the_general_build_a_helper_is_compiling(monkeypatch):
    """Once a cold call has handed a kind's general build to a helper, a call of another
    configuration of that kind waits for it instead of compiling a second specialised build."""
    _fresh_lookups(monkeypatch)
    helper = object()
    waited = []
    monkeypatch.setattr(compile_beside, "pending",
                        lambda module, name, sig: helper if name == f"_CPU_REPLICATES[{twin.FAST_PREVIOUS}]" else None)
    monkeypatch.setattr(compile_beside, "wait_for", lambda h, timeout=None: waited.append(h) or True)
    monkeypatch.setattr(twin, "_specialised", lambda k, spec: pytest.fail("specialised while the general build comes"))
    _run(P1_ALG1)
    assert waited == [helper]


def test_the_warm_up_records_the_general_builds(monkeypatch, tmp_path):
    """``tools/record_kernels.py`` (and its ``--used-by``) runs studies to record the kernels they
    use; a cold start there would record specialised builds the warm-up cannot name, and no
    compiled data filler at all."""
    seen = []
    monkeypatch.setattr("stabsim.cli.main", lambda argv: seen.append((twin.SPECIALISE_COLD, rng.PYTHON_FILL_MAX)) or 0)
    monkeypatch.setattr(twin, "SPECIALISE_COLD", True)
    monkeypatch.setattr(rng, "PYTHON_FILL_MAX", rng.PYTHON_FILL_MAX)
    spec = importlib.util.spec_from_file_location("record_kernels", ROOT / "tools" / "record_kernels.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.main(["--used-by", "p1_thm4_gen", "--into", str(tmp_path / "used.pkl")]) == 0
    assert seen == [(False, 0)]
