"""numba's ``njit`` with a faster inliner: the same compiled code, less compile time.

Every kernel of the package is compiled with ``stabsim.compile.jit.njit``: numba's ``njit`` whose
pipeline (``InlineCompiler``) is numba's own but for one pass, ``InlineCallees``, which does
what numba's ``InlineInlinables`` does (inline the callees declared ``inline="always"``) without
its copies.

Why.  numba inlines a callee by building its IR afresh from the callee's bytecode (once per call
site), then copying that IR (``InlineWorker.inline_ir``: twice, the second copy returned and
unused by ``InlineInlinables``) block by block with ``copy.deepcopy``.  Each variable of numba's
IR points to the function's scope, which holds every variable of the function, and each block is
copied with a memo of its own: so each block's copy copies the whole scope again, blocks x
variables objects per copy.  The twin kernel's replicate inlines about 90 such callees (nested),
so the copies are a large part of its compile time (``benchmarks/README.md``, "The inliner's
copies").

What changes.  ``InlineCallees`` runs ``InlineInlinables`` with ``_FreshCalleeWorker`` as its
inline worker: when it inlines a callee, the inliner's block copies are the blocks themselves.
The IR they belong to was built for this one call site by ``InlineWorker.run_untyped_passes``
and is dropped after it, so nothing else sees the blocks that the inliner then relabels, renames
into the caller's scope and moves into the caller.  The copies exist for inliners whose callee
IR is kept and reused, such as the overload inliner of the typed passes (a template's IR serves
every call site), and those still copy, also when building a callee's IR compiles another
function whose typed passes inline overloads (``tests/test_jit.py`` has such a case: with the
copies switched off for the whole pass, as first written, that second inlining read IR the
first had moved, and numba failed).  Copying with the callee's scope kept (a memo mapping the
scope to itself) would remove the quadratic part only; not copying at all saves the rest.
The inlined IR is the same statement for statement, so the machine code is: the kind-0 twin
replicate's LLVM IR and assembly compared equal up to numba's per-process unique ids
(``tests/test_jit.py`` compares a compiled function's LLVM IR under both pipelines).  Only the
names that numba's inliner looks up in its module (``numba.core.inline_closurecall.InlineWorker``
while the pass runs, and ``copy`` while a fresh callee IR is inlined) are replaced (numba
compiles under a global lock, so no other compilation sees them); numba's other inliners
(overloads, closures) are untouched.  If numba's module no longer has those names, or its
``inline_function`` takes other arguments, the pass is numba's own.
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
    of it is the inliner's block copy) while ``_FreshCalleeWorker`` inlines a fresh callee IR: a
    block is not copied."""

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


_NUMBA_WORKER = inline_closurecall.InlineWorker


class _FreshCalleeWorker(_NUMBA_WORKER):
    """numba's ``InlineWorker`` whose ``inline_function`` (used by ``InlineInlinables`` alone)
    inlines the callee IR it has just built for this call site without copying its blocks.  The
    IR is built (``run_untyped_passes``, which may compile other functions) with numba's copies in
    place; only the ``inline_ir`` of that fresh IR runs without them.  ``inline_ir`` called
    directly, as numba's overload inliner does with the IR a template keeps for every call site,
    copies as numba does."""

    def inline_function(self, caller_ir, block, i, function, arg_typs=None):
        callee_ir = self.run_untyped_passes(function)
        with _no_block_copies():
            return self.inline_ir(caller_ir, block, i, callee_ir, function.__code__.co_freevars,
                                  arg_typs=arg_typs)


#: numba's ``InlineWorker.inline_function`` as this module was written against (else: numba's own)
_EXPECTED_ARGS = ("self", "caller_ir", "block", "i", "function", "arg_typs")


@contextlib.contextmanager
def _fresh_callee_workers():
    """``InlineInlinables`` looks ``InlineWorker`` up in ``numba.core.inline_closurecall`` when it
    runs: within the block it finds ``_FreshCalleeWorker`` (nested passes leave it in place)."""
    code = getattr(getattr(_NUMBA_WORKER, "inline_function", None), "__code__", None)
    if (getattr(inline_closurecall, "InlineWorker", None) is not _NUMBA_WORKER or code is None
            or code.co_varnames[:len(_EXPECTED_ARGS)] != _EXPECTED_ARGS):
        yield
        return
    inline_closurecall.InlineWorker = _FreshCalleeWorker
    try:
        yield
    finally:
        inline_closurecall.InlineWorker = _NUMBA_WORKER


@register_pass(mutates_CFG=True, analysis_only=False)
class InlineCallees(FunctionPass):
    """numba's ``InlineInlinables`` without the inliner's copies of the (fresh, per call site)
    callee blocks (see the module docstring)."""
    _name = "stabsim_inline_callees"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        with _fresh_callee_workers():
            return InlineInlinables().run_pass(state)


def nopython_pipeline(state, swap: dict):
    """numba's nopython pass manager for ``state`` with the passes in ``swap`` (class ->
    (class, description), or None to drop the pass) replaced, and ``InlineInlinables`` by
    ``InlineCallees``."""
    swap = {InlineInlinables: (InlineCallees, "inline callees"), **swap}
    pm = DefaultPassBuilder.define_nopython_pipeline(state)
    pm.passes = [entry for entry in (swap.get(cls, (cls, desc)) for cls, desc in pm.passes) if entry is not None]
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
