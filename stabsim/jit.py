"""numba's ``njit`` with a faster inliner: the same compiled code, less compile time.

Every kernel of the package is compiled with ``stabsim.jit.njit``: numba's ``njit`` whose
pipeline (``InlineCompiler``) is numba's own but for one pass, ``InlineCallees``, which does
what numba's ``InlineInlinables`` does (inline the callees declared ``inline="always"``) without
its copies.

Why.  numba inlines a callee by building its IR afresh from the callee's bytecode (once per call
site), then copying that IR (``InlineWorker.inline_ir``: twice, the second copy returned and
unused by ``InlineInlinables``) block by block with ``copy.deepcopy``.  Each variable of numba's
IR points to the function's scope, which holds every variable of the function, and each block is
copied with a memo of its own: so each block's copy copies the whole scope again, blocks x
variables objects per copy.  The twin kernel's replicate inlines about 90 such callees (nested);
the copies were 2.5 of its 9 s of compile (first ``run_twin`` from an empty cache, Xeon;
``benchmarks/README.md``, "The inliner's copies").

What changes.  While ``InlineCallees`` runs (and the inlining it does inside the callees it
inlines), the inliner's block copies are the blocks themselves.  The IR they belong to was built
for this one call site by ``InlineWorker.run_untyped_passes`` and is dropped after it, so
nothing else sees the blocks that the inliner then relabels, renames into the caller's scope and
moves into the caller (the copies existed for inliners whose callee IR is kept and reused, such
as the overload inliner of the typed passes, which this pass does not touch).  Until session 21
the copies were made with the callee's scope kept (a memo mapping the scope to itself), which
removed the quadratic part; not copying at all saves the rest (0.3 s of the first ``run_twin``).
The inlined IR is the same statement for statement, so the machine code is: the kind-0 twin
replicate's LLVM IR and assembly compared equal up to numba's per-process unique ids
(``tests/test_jit.py`` compares a compiled function's LLVM IR under both pipelines).  Only the
copy function that numba's inliner looks up in its module (``numba.core.inline_closurecall.copy``)
is replaced, and only while the pass runs (numba compiles under a global lock, so no other
compilation sees it); numba's other inliners (overloads, closures) are untouched.  If numba's
module no longer has that name, the pass is numba's own.
"""

from __future__ import annotations

import contextlib
import copy
import functools

import numba
from numba.core import inline_closurecall, ir
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.untyped_passes import InlineInlinables


class _NoBlockCopy:
    """Stands in for the ``copy`` module inside ``numba.core.inline_closurecall`` (whose only use
    of it is the inliner's block copy) while ``InlineCallees`` runs: a block is not copied."""

    @staticmethod
    def deepcopy(x, memo=None):
        if memo is None and isinstance(x, ir.Block):
            return x
        return copy.deepcopy(x, memo)


@contextlib.contextmanager
def _no_block_copies():
    if getattr(inline_closurecall, "copy", None) is not copy:   # another numba: leave it alone
        yield
        return
    inline_closurecall.copy = _NoBlockCopy
    try:
        yield
    finally:
        inline_closurecall.copy = copy


@register_pass(mutates_CFG=True, analysis_only=False)
class InlineCallees(FunctionPass):
    """numba's ``InlineInlinables`` without the inliner's copies of the (fresh, per call site)
    callee blocks (see the module docstring)."""
    _name = "stabsim_inline_callees"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        with _no_block_copies():
            return InlineInlinables().run_pass(state)


def nopython_pipeline(state, swap: dict):
    """numba's nopython pass manager for ``state`` with the passes in ``swap`` (class ->
    (class, description)) replaced, and ``InlineInlinables`` by ``InlineCallees``."""
    swap = {InlineInlinables: (InlineCallees, "inline callees"), **swap}
    pm = DefaultPassBuilder.define_nopython_pipeline(state)
    pm.passes = [swap.get(cls, (cls, desc)) for cls, desc in pm.passes]
    pm.finalize()
    return pm


class InlineCompiler(CompilerBase):
    """numba's nopython pipeline with ``InlineCallees`` for ``InlineInlinables``."""

    def define_pipelines(self):
        return [nopython_pipeline(self.state, {})]


@functools.wraps(numba.njit)
def njit(*args, **kwargs):
    """``numba.njit`` compiling with ``InlineCompiler`` (unless a ``pipeline_class`` is given)."""
    kwargs.setdefault("pipeline_class", InlineCompiler)
    return numba.njit(*args, **kwargs)
