"""The compiler pipeline of the twin kernel's replicates: numba's parallel one, with a faster
IR clean-up.

The replicate (``twin.build_replicate``) is one large function with no ``prange``.  Compiled
with numba's plain pipeline it runs up to a third slower on some configurations than with
``parallel=True``, and with the plain pipeline plus only the IR simplification below still a
little slower (benchmarks/README.md, "Compile time and the cold start"): the parallel
pipeline's array analysis and its fusion pass's simplification of the IR (copy propagation,
dead code removal, CFG simplification: ``numba.core.ir_utils.simplify``, twice) give LLVM a
smaller function.  numba's copy propagation deep-copies its data-flow sets on every iteration
of its fixed point, a large part of each replicate's compile.

``SimplifiedCompiler`` is numba's pipeline (used with ``parallel=True``) whose parfor fusion and
pre-lowering passes are replaced, for a function without parfors, by ``SimplifyIR`` and
``PreLowerIR``: the same steps (the fusion pass has nothing to fuse; both simplify the IR, three
times in all) with a copy propagation that copies the sets of name pairs shallowly (they hold
tuples of strings: the same result).  A function with parfors gets numba's own passes.  The IR is
the same, so the machine code and the numbers are (the four kinds' replicates disassemble
identically, up to symbol names and the pickled file paths of error messages); each replicate
compiles without the deep copies' time (benchmarks/README.md, "Compile time and the cold start").
``LeanCompiler`` also drops numba's parfor conversion (``PreParforPass``, ``ParforPass``: array
analysis, a tenth of a specialised replicate's compile): for the build a fast kind's cold call
waits for (``twin._specialised``), whose machine code runs as fast as ``SimplifiedCompiler``'s
(benchmarks/README.md, "Compile time and the cold start") with the same numbers.
Built from numba's pipeline API (``CompilerBase``, ``DefaultPassBuilder``, ``register_pass``) and
the IR utilities of ``numba.core.ir_utils`` and ``numba.parfors.parfor`` that numba's own passes
use.
"""

from __future__ import annotations

from numba.core import ir_utils
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.compiler import CompilerBase
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.typed_passes import ParforFusionPass, ParforPass, ParforPreLoweringPass, PreParforPass
from numba.parfors.parfor import push_call_vars, simplify_parfor_body_CFG

from stabsim.compile.jit import nopython_pipeline


def _copy_propagate(blocks, typemap):
    """``numba.core.ir_utils.copy_propagate`` with shallow copies of the per-block sets (whose
    elements, pairs of variable names, are immutable) instead of a deep copy per iteration."""
    cfg = compute_cfg_from_blocks(blocks)
    entry = cfg.entry_point()
    gen_copies, _, kill_copies, in_copies, out_copies = ir_utils.init_copy_propagate_data(blocks, entry, typemap)
    old_point = None
    new_point = {k: set(v) for k, v in out_copies.items()}
    while old_point != new_point:
        for label in blocks.keys():
            if label == entry:
                continue
            predecs = [i for i, _d in cfg.predecessors(label)]
            in_copies[label] = out_copies[predecs[0]].copy()
            for p in predecs:
                in_copies[label] &= out_copies[p]
            out_copies[label] = gen_copies[label] | (in_copies[label] - kill_copies[label])
        old_point = new_point
        new_point = {k: set(v) for k, v in out_copies.items()}
    return in_copies, out_copies


def simplify(func_ir, typemap, calltypes, metadata):
    """``numba.core.ir_utils.simplify`` with the faster copy propagation above."""
    in_cps, _ = _copy_propagate(func_ir.blocks, typemap)
    name_var_table = ir_utils.get_name_var_table(func_ir.blocks)
    save_copies = ir_utils.apply_copy_propagate(func_ir.blocks, in_cps, name_var_table, typemap, calltypes)
    var_rename_map = ir_utils.restore_copy_var_names(func_ir.blocks, save_copies, typemap)
    metadata.setdefault("var_rename_map", {}).update(var_rename_map)
    ir_utils.remove_dead(func_ir.blocks, func_ir.arg_names, func_ir, typemap)
    func_ir.blocks = ir_utils.simplify_CFG(func_ir.blocks)


@register_pass(mutates_CFG=True, analysis_only=False)
class SimplifyIR(FunctionPass):
    """numba's parfor fusion pass for a function without parfors: the IR simplified twice (with
    the copy propagation above); with parfors, numba's own pass."""
    _name = "stabsim_simplify_ir"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        if simplify_parfor_body_CFG(state.func_ir.blocks) > 0:
            return ParforFusionPass().run_pass(state)
        for _ in range(2):
            simplify(state.func_ir, state.typemap, state.calltypes, state.metadata.setdefault("parfors", {}))
        return True


@register_pass(mutates_CFG=True, analysis_only=False)
class PreLowerIR(FunctionPass):
    """numba's parfor pre-lowering pass for a function without parfors (call variables pushed
    into parfors, of which there are none, then the IR simplified once more, with the copy
    propagation above); with parfors, numba's own pass."""
    _name = "stabsim_prelower_ir"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        if simplify_parfor_body_CFG(state.func_ir.blocks) > 0:
            return ParforPreLoweringPass().run_pass(state)
        push_call_vars(state.func_ir.blocks, {}, {}, state.typemap)
        simplify(state.func_ir, state.typemap, state.calltypes, state.metadata.setdefault("parfors", {}))
        return True


#: the parfor fusion and pre-lowering passes swapped for the faster IR clean-up
_SIMPLIFY = {ParforFusionPass: (SimplifyIR, "simplify the IR"), ParforPreLoweringPass: (PreLowerIR, "pre-lower the IR")}


class SimplifiedCompiler(CompilerBase):
    """numba's nopython pipeline with its parfor fusion and pre-lowering passes replaced by
    ``SimplifyIR`` and ``PreLowerIR`` (``njit(parallel=True, pipeline_class=SimplifiedCompiler)``),
    and with ``stabsim.compile.jit``'s inliner."""

    def define_pipelines(self):
        return [nopython_pipeline(self.state, _SIMPLIFY)]


class LeanCompiler(CompilerBase):
    """``SimplifiedCompiler`` without numba's parfor conversion (``PreParforPass``, ``ParforPass``),
    for a function without ``prange`` compiled while a call waits (a fast kind's cold start,
    ``twin._specialised``; see the module docstring): the IR is still simplified three times."""

    def define_pipelines(self):
        return [nopython_pipeline(self.state, {PreParforPass: None, ParforPass: None, **_SIMPLIFY})]
