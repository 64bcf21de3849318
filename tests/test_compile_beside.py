"""A kernel compiled in a helper process while this process compiles its callee (stabsim.compile.beside)."""

import os
import subprocess
import sys
import textwrap

import early_children
import numpy as np
import pytest
from numba import typeof

from stabsim import run_twin
from stabsim.compile import beside as compile_beside
from stabsim.compile.helper import usable_cores
from stabsim.kernels import giga, twin
from stabsim.compile import native_call
from stabsim.engine.losses import AUC

TARGET = """
from stabsim.compile.jit import njit


@njit(cache=True)
def f(x):
    return 2.0 * x + 1.0


@njit(cache=True)
def g(x):
    return 3.0 * x
"""

SCRIPT = """
import os
from numba import types
from numba.core import event
import stabsim
from stabsim.compile import beside as cb
import beside_target

sig = (types.float64,)
assert not cb.in_cache(beside_target.f, sig)
os.environ["STABSIM_NO_WARMUP"] = "1"
assert cb.start([("beside_target", "f", [sig])]) is None      # turned off: nothing started
del os.environ["STABSIM_NO_WARMUP"]
helper = cb.start([("beside_target", "f", [sig])])
assert helper is not None
assert cb.finish(helper)
assert cb.in_cache(beside_target.f, sig)                     # in the on-disk cache, not compiled here
assert cb.start([("beside_target", "f", [sig])]) is None      # nothing left to compile
compiled = []


class Listener(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__name__)

    def on_end(self, ev):
        pass


event.register("numba:compile", Listener())
assert beside_target.f(1.5) == 4.0
assert compiled == [], compiled                                 # loaded from the helper's cache entry
# later work: finish waits for the first part only; the helper compiles the rest meanwhile
sig_i = (types.int64,)
helper = cb.start([("beside_target", "f", [sig_i])], [("beside_target", "g", [sig])])
assert cb.finish(helper)
assert cb.in_cache(beside_target.f, sig_i)
assert cb.pending("beside_target", "g", sig) in (helper, None)   # None once the helper is done
assert cb.pending("beside_target", "f", sig) is None              # not its later work
assert cb.wait_for(helper, 120) and cb.pending("beside_target", "g", sig) is None
assert cb.in_cache(beside_target.g, sig)
assert beside_target.g(2.0) == 6.0
assert compiled == [], compiled
print("ok")
"""


@pytest.mark.skipif(usable_cores() < 2, reason="the helper runs only with two usable cores")
def test_the_helper_compiles_into_the_on_disk_cache(tmp_path):
    (tmp_path / "beside_target.py").write_text(TARGET)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    env.pop("STABSIM_NUMBA_CACHE_AUTO", None)
    env.pop("STABSIM_NO_WARMUP", None)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"


class _FakeDispatcher:
    pass


@pytest.mark.parametrize("cached, fails", [(False, False), (True, False), (False, True)])
def test_address_for_starts_a_helper_only_for_a_callee_it_compiles(monkeypatch, cached, fails):
    calls = []
    helper = object()
    monkeypatch.setattr(compile_beside, "cached", lambda d, sig: calls.append(("cached", sig)) or cached)
    monkeypatch.setattr(compile_beside, "start",
                        lambda entries, later: calls.append(("start", entries)) or calls.append(("later", later)) or helper)
    monkeypatch.setattr(compile_beside, "finish", lambda h: calls.append(("finish", h)))
    monkeypatch.setattr(compile_beside, "stop", lambda h: calls.append(("stop", h)))

    def native_address(d, sig):
        calls.append(("compile", sig))
        if fails:
            raise KeyboardInterrupt
        return 1234

    monkeypatch.setattr(native_call, "native_address", native_address)
    args = (np.zeros(3), np.int64(2))
    want = (typeof(args[0]), typeof(args[1]), typeof(args[0]))

    def beside(argtypes):
        return [("m", "kernel", [argtypes])]

    run = lambda: native_call.address_for(_FakeDispatcher(), args, lambda t: (*t, typeof(args[0])), beside)  # noqa: E731
    if fails:
        with pytest.raises(KeyboardInterrupt):
            run()
    else:
        assert run() == 1234
    steps = [c[0] for c in calls]
    assert calls[0] == ("cached", want)
    if cached:
        assert steps == ["cached", "compile", "finish"] and calls[-1] == ("finish", None)
    else:
        assert calls[1] == ("start", [("m", "kernel", [want[:2]])]) and calls[2] == ("later", ())
        assert steps == ["cached", "start", "later", "compile", "stop" if fails else "finish"]
        assert calls[-1][1] is helper


def test_the_helpers_signatures_are_those_the_calls_compile(monkeypatch):
    """What the helper is given to compile must be what the calls then ask for, or it is wasted."""
    seen = {}
    for mod, name in ((twin, "replicate_address"), (giga, "address_for")):
        orig = getattr(mod, name)

        def record(*a, _orig=orig, _name=name, **k):
            seen[_name] = a
            return _orig(*a, **k)

        monkeypatch.setattr(mod, name, record)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3))
    y = np.where(rng.random(20) < .5, 1.0, -1.0)
    y[:2] = [1, -1]
    run_twin(X, y, algorithm="p1_alg1", loss="auc_hinge", constraint=("l2", 1.0), T=10, replicates=2,
             progress=False)
    R = 2
    giga.giga_kernel(np.vstack([X, X[:R]])[None], np.r_[y, y[:R]][None], np.zeros(R, np.int64), 20 + np.arange(R),
                     np.arange(R), np.int64(0), np.array([np.arange(20)] * R), AUC, 0, 1.0, 1, 1.0, 0, 0.1,
                     np.int64(3), True, 0.5, 0.5, False, np.zeros((R, 3)), np.array([20]),
                     np.zeros((R, 1, giga.N_REC_GIGA)), False, np.zeros((1, 1, 2, 1)), np.zeros((R, 2, 2, 3)))
    kind, kernel_args = seen["replicate_address"][:2]
    # (the replicate's late callees are left out here: loaded with the replicate from the cache, they
    # are not compiled in this process; test_the_late_callees_handed_over_are_those_the_replicate_types)
    entries = twin._compiled_beside(kind, tuple(typeof(a) for a in kernel_args))[len(twin._late_callees(kind)):]
    _, giga_args, _, beside = seen["address_for"]
    entries += beside(tuple(typeof(a) for a in giga_args))
    assert [e[1] for e in entries] == ["_twin_kernel", "checkpoint_sums", "_giga_parallel"]
    for module, name, sigs in entries:
        disp = getattr(sys.modules[module], name)
        for sig in sigs:
            assert sig in disp.signatures, (name, sig, disp.signatures)


GENERAL_CHILD = """
import numpy as np
from stabsim import run_twin
from stabsim.kernels import twin, twin_steps
rng = np.random.default_rng(0)
X = rng.standard_normal((20, 3)); y = np.where(rng.random(20) < .5, 1.0, -1.0); y[:2] = [1, -1]
for kind, kw in ((twin.GENERAL, {"buffer": 3}),):
    run_twin(X, y, algorithm="p1_alg1", loss="auc_hinge", constraint=("l2", 1.0), T=10, replicates=2,
             progress=False, **kw)
    (cres,) = twin._CPU_REPLICATES[kind].overloads.values()   # typed here: the cache was empty
    typed = {tuple(c.args) for c in cres.type_annotation.calltypes.values() if c is not None}
    late = twin._late_callees(kind)   # what the replicate itself calls, not its callees
    grads = twin_steps._grad.signatures     # compiled (or loaded) in this process
    print(kind, len(late), len(grads), all(tuple(s) in typed for s in grads))
"""

#: the general kind's replicate compiled from an empty cache, with its helper (tests/early_children.py)
EARLY_CHILDREN = ("general",)


def early_child(key, folder):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(folder / "cache"),
           "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                          os.environ.get("PYTHONPATH", "")])}
    for k in ("STABSIM_NO_WARMUP", "STABSIM_NUMBA_CACHE_AUTO"):
        env.pop(k, None)
    return [sys.executable, "-c", GENERAL_CHILD], env


def test_the_late_callees_handed_over_are_those_the_replicate_types(tmp_path):
    """The helper of a cold call compiles callees the kind's replicate types late (the fast kinds'
    random-stream keys and first draws, then ``_record`` and loss value; benchmarks/README.md,
    "The twin kernel's design: the numbers behind its docstrings"):
    the signatures handed over must be those the replicate
    itself calls (compiled by the helper and loaded, or compiled here when the helper was slower), or
    the helper's work is wasted.  The general kind hands over none: its reference point's losses call
    ``_grad`` with the typed flag ``_general_step`` uses, so one ``_grad`` is compiled, the one the
    replicate calls; checked in a process with an empty cache (a literal ``False`` at that call
    would compile a second ``_grad`` and fail it)."""
    # the fast kinds' callees have one recorded signature each (the one the suite's replicates typed)
    for k in range(twin.GENERAL):
        assert [(n, len(sigs)) for _, n, sigs in twin._late_callees(k)] == [
            ("stream_key", 1), ("_first_draws", 1), ("_record", 1),
            ("point_coef" if k == twin.FAST_POINT else "linear_pair_value", 1)]
    done, _ = early_children.results(sys.modules[__name__], tmp_path)
    p = done["general"]
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [str(twin.GENERAL), "0", "1", "True"]
