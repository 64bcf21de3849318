"""Call a compiled numba function through its machine address, without linking it in.

When compiled function A calls compiled function B in the usual way, numba links B's code into
A's and LLVM optimises the linked whole again.  For the twin kernel (a ``prange`` over
replicates around one call of the replicate, ``twin.build_replicate``) that second optimisation
of an already optimised replicate is most of the kernel's own compile time (benchmarks/README.md,
"Compile time and the cold start"), and it would be paid once for each of the four kernel kinds,
since each kind's kernel would link its own replicate.

``call_native(addr, args)`` calls the function at ``addr`` with numba's own calling convention
(the one numba uses between compiled functions), so nothing is linked: one kernel, compiled once,
runs every kind's replicate, and the replicate is compiled (or loaded from the on-disk cache) on
its own.  The address is a run-time argument, so the caller stays cacheable.  The call happens
once per replicate, not per step: the indirection costs nothing measurable.

The callee must have been compiled for exactly the types of ``args`` (numba's native ABI
passes arrays as their members, so a mismatch would read the wrong memory): callers derive both
from one function of the argument types (``twin.replicate_types``) and the typer below refuses,
at compile time, a tuple that does not match it.  Errors raised in the callee propagate as from
a direct call.
"""

from __future__ import annotations

from numba import typeof, types
from numba._dispatcher import compute_fingerprint
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic

from stabsim.compile import beside as compile_beside


def make_native_caller(expected_types, what: str):
    """An intrinsic ``call(addr, args)`` for callees whose argument types are
    ``expected_types(types_of_args)`` (a function of the tuple's element types that returns the
    types the callee was compiled for); ``what`` names the callee in the error."""

    @intrinsic
    def call(typingctx, addr, args):
        if not (isinstance(addr, types.Integer) and isinstance(args, types.BaseTuple)):
            return None
        got = tuple(args.types)
        want = tuple(expected_types(got))
        if got != want:
            bad = [f"argument {i}: {g} (expected {w})" for i, (g, w) in enumerate(zip(got, want)) if g != w]
            raise TypingError(f"{what}: the call's argument types differ from those the callee is compiled "
                              f"for ({len(got)} against {len(want)} arguments; {'; '.join(bad[:3])})")

        def codegen(context, builder, sig, llargs):
            argtys = tuple(sig.args[1].types)
            vals = cgutils.unpack_tuple(builder, llargs[1], len(argtys))
            fnty = context.call_conv.get_function_type(types.none, argtys)
            fn = builder.inttoptr(llargs[0], fnty.as_pointer())
            status, _ = context.call_conv.call_function(builder, fn, types.none, argtys, vals)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return context.get_dummy_value()

        return types.none(addr, args), codegen

    return call


def native_address(dispatcher, argtypes: tuple) -> int:
    """The address of ``dispatcher``'s machine code for ``argtypes`` (compiled, or loaded from
    numba's on-disk cache, if it is not yet), valid while the dispatcher lives."""
    argtypes = tuple(argtypes)
    cres = dispatcher.overloads.get(argtypes)
    if cres is None:
        dispatcher.compile(argtypes)
        cres = dispatcher.overloads[argtypes]
    return cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)


_ADDRESSES: dict = {}


def caller_beside(module: str, name: str):
    """``address_for``'s ``beside`` for a kernel ``module.name(addr, *args)`` that calls the
    callee at ``addr`` with its own arguments: that kernel, for the address typed as an int64."""
    return lambda argtypes: [(module, name, [(types.int64,) + tuple(argtypes)])]


def address_for(dispatcher, args: tuple, callee_types, beside=None, later=None) -> int:
    """``native_address(dispatcher, callee_types(types of args))``, looked up by the arguments'
    numba fingerprints (numba's own dispatch key, computed in C: a small fraction of the time
    ``numba.typeof`` of every argument and the callee's signature take; benchmarks/README.md,
    "run_twin's overhead per call"; same fingerprint, same numba type).  Arguments without a
    fingerprint fall back to ``numba.typeof``.

    ``beside``: None, or a function of the argument types returning the (module, name,
    signatures) the caller compiles next; when the callee has to be compiled (not in numba's
    on-disk cache either), those are compiled meanwhile in a helper process
    (``stabsim.compile.beside``), and this call returns once the helper is done with them.
    ``later``: None, or such a function for what the helper compiles after that, in the
    background (not waited for)."""
    try:
        key = (dispatcher, tuple(map(compute_fingerprint, args)))
    except Exception:   # a value numba fingerprints only through typeof: no shortcut
        key = None
    addr = _ADDRESSES.get(key) if key is not None else None
    if addr is None:
        argtypes = tuple(typeof(a) for a in args)
        want = tuple(callee_types(argtypes))
        helper = None
        if beside is not None and not compile_beside.cached(dispatcher, want):
            helper = compile_beside.start(beside(argtypes), later(argtypes) if later is not None else ())
        try:
            addr = native_address(dispatcher, want)
            compile_beside.finish(helper)
        except BaseException:   # an error or Ctrl-C: the helper is not left running
            compile_beside.stop(helper)
            raise
        if key is not None:
            _ADDRESSES[key] = addr
    return addr
