"""``stabsim.compile.jit``: numba's pipeline without the inliner's copies of the fresh callee blocks.

The pass must change the compile time only: the same function compiled with numba's own
``njit`` and with ``stabsim.compile.jit.njit`` has the same LLVM IR, up to numba's per-process unique
ids in symbol and value names.  The function below inlines callees that inline callees
(``linear_pair_coef`` -> ``phi_value_deriv``; ``normal`` -> ``uniform`` -> ``mix64``), with
loops and branches in the callees, which is where a wrong copy would show.
"""

from __future__ import annotations

import re

import numba
import numpy as np
from numba.extending import overload

from stabsim.compile import jit as sjit
from stabsim.kernels import twin as K
from stabsim.kernels import twin_steps
from stabsim.engine.losses import AUC, HINGE, LOGISTIC, linear_pair_coef
from stabsim.engine.rng import normal


def _inlining(w, X, key, phi):
    acc = 0.0
    for t in range(X.shape[0] - 1):
        dot = 0.0
        for c in range(X.shape[1]):
            dot += w[c] * (X[t, c] - X[t + 1, c])
        f = linear_pair_coef(AUC, phi, 1.0, dot, 1.0, -1.0)
        acc += f[0] + normal(key, t)
    return acc


def _normalised_llvm(dispatcher, sig) -> str:
    text = dispatcher.inspect_llvm(sig)
    text = re.sub(r"B\d+v\d+B", "BvB", text)          # mangled symbols' unique ids
    text = re.sub(r"_v\d{4,}", "_v", text)            # inlined variables' unique ids
    labels: dict = {}                                 # block labels: numba's counter, renumbered
    text = re.sub(r"\bB\d+\b", lambda m: labels.setdefault(m.group(0), f"L{len(labels)}"), text)
    return re.sub(r"[ \t]+", " ", text)              # (comments aligned to the labels' lengths)


W = np.linspace(-1.0, 1.0, 4)
X = np.arange(24.0).reshape(6, 4) / 10.0


def test_inlined_code_is_numbas():
    w = W
    args = (w, X, np.uint64(12345), np.int64(LOGISTIC))
    ours = sjit.njit(_inlining)
    numbas = numba.njit(_inlining)
    assert ours(*args) == numbas(*args)
    assert ours(w, X, np.uint64(7), np.int64(HINGE)) == numbas(w, X, np.uint64(7), np.int64(HINGE))
    sig = ours.signatures[0]
    assert "stabsim_inline_callees" in _pass_names(ours)
    assert "inline_inlinables" in _pass_names(numbas)
    assert _normalised_llvm(ours, sig) == _normalised_llvm(numbas, sig)


def _pass_names(dispatcher) -> list:
    return [name.split("_", 1)[1] for name in
            next(iter(dispatcher.overloads.values())).metadata["pipeline_times"]["nopython"]]


def test_kernels_compile_with_the_pass():
    """The package's kernels go through ``stabsim.compile.jit``; the replicates' simplified pipeline
    includes the pass too."""
    from stabsim.compile.pipeline import SimplifiedCompiler
    assert twin_steps._general_step._compiler.pipeline_class is sjit.InlineCompiler
    assert K._CPU_REPLICATES[0]._compiler.pipeline_class is SimplifiedCompiler
    args = (W, X, np.uint64(3), np.int64(HINGE))
    simplified = sjit.njit(parallel=True, pipeline_class=SimplifiedCompiler)(_inlining)
    assert simplified(*args) == numba.njit(_inlining)(*args)
    names = _pass_names(simplified)
    assert "stabsim_inline_callees" in names and "stabsim_simplify_ir" in names
    assert "inline_inlinables" not in names


def test_no_module_compiles_with_numbas_njit():
    """Every module of the package takes ``njit`` from ``stabsim.compile.jit``, not from numba."""
    from pathlib import Path

    root = Path(sjit.__file__).resolve().parents[1]  # the package
    direct = [str(p.relative_to(root)) for p in root.rglob("*.py") if p.name != "jit.py"
              and re.search(r"^\s*from numba import [^\n]*\bnjit\b|\bnumba\.njit\(", p.read_text(), re.M)]
    assert direct == []


def test_copy_module_restored():
    """The stand-in for numba's ``copy`` lives only while the pass runs."""
    import copy

    from numba.core import inline_closurecall
    with sjit._no_block_copies():
        assert inline_closurecall.copy is sjit._NoBlockCopy
    assert inline_closurecall.copy is copy
    with sjit._fresh_callee_workers():
        assert inline_closurecall.InlineWorker is sjit._FreshCalleeWorker
    assert inline_closurecall.InlineWorker is sjit._NUMBA_WORKER


def _twice(x):
    pass


@overload(_twice, inline="always")
def _ov_twice(x):
    def impl(x):
        y = x * 2.0
        if y > 100.0:
            y = 100.0
        return y
    return impl


@numba.njit   # numba's typed passes inline the overload twice from the IR its template keeps
def _uses_the_overload_twice(x):
    return _twice(x) + 10.0 * _twice(x + 1.0)


@numba.njit(inline="always")
def _compiles_another_while_built(x):
    if isinstance(x, float):   # partial type inference while this IR is built: compiles the above
        return _uses_the_overload_twice(1.5) + x
    return 0.0


def _outer(x):
    return _compiles_another_while_built(x)


def test_an_overload_inlined_while_a_callee_is_built_keeps_numbas_copies():
    """Building an inlined callee's IR can compile another function, whose typed passes inline an
    ``@overload(inline="always")`` from the IR the template keeps for every call site: that
    inliner must still copy (with the copies off for the whole pass, the second inlining read
    blocks the first had moved, and numba failed: "Cannot add edge as dest node ... not in nodes").
    Found in review; no kernel of the package is built like this."""
    assert sjit.njit(_outer)(3.0) == numba.njit(_outer)(3.0) == 56.0
    assert _uses_the_overload_twice(3.0) == 6.0 + 10.0 * 8.0

