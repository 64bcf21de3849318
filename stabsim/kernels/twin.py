"""The twin kernel's entry point and dispatch: one algorithm run on S and on its neighbour S'.

``twin_kernel(config, X, Y, kidx, krows, reps, seed, W0, rec, outs)`` runs R coupled replicates
of the configuration ``config`` (``twin_config.TwinConfig``: schedule, loss form, constraint,
noise, output rule, recording, by name).  Both runs of a replicate consume the same random
stream (same indices, same initial point, same Gaussian noise unless the noise is independent),
which is the coupling every stability bound assumes (docs/errata.md, Conventions, "Coupling").
Replicates run in parallel with ``prange`` (``_twin_kernel``); each is a pure function of
``(seed, reps[r])`` through the counter-based generator in ``stabsim.engine.rng``, so results do not
depend on the thread count or on chunking.  The step maths (schedules, output conventions,
recorded columns) is ``twin_steps``; one replicate is built by ``twin_replicate``.

What is decided here, none of it changing a number:

* which compiled replicate runs a call (``kernel_kind``): one of the three fast kinds or the
  general one, called by ``_twin_kernel`` through its address (``native_call``: the kernel is
  compiled once for every kind);
* whether a fast kind runs the general build or one specialised to the call's configuration
  (``wants_specialised``, ``replicate_address``: its loss form, constraint, noise mode, output
  lag, reference point, recorded outputs and dimension compiled in as constants);
* what a helper process compiles beside a cold call (``_compiled_beside``,
  ``stabsim.compile.beside``);
* whether the call runs in a helper thread that a signal can interrupt
  (``INTERRUPTIBLE_MIN_WORK``, ``stabsim.runtime.signals``).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import prange, typeof, types
from numba._dispatcher import compute_fingerprint

from stabsim.compile import beside as compile_beside
from stabsim.runtime.signals import call_interruptible, new_stop_flag
from stabsim.compile.jit import njit
from stabsim.engine.losses import AUC, AUC_ORDERED, POINT, POINT_LSQ, RANKING, linear_pair_value, point_coef
from stabsim.engine.rng import stream_key
from stabsim.compile.native_call import address_for, caller_beside, make_native_caller
from stabsim.kernels.twin_config import TwinConfig, kernel_arg
from stabsim.kernels.twin_replicate import build_replicate, replicate_types, spec_of, twin_layout
from stabsim.kernels.twin_steps import (FAST_PAIR, FAST_POINT, FAST_PREVIOUS, GENERAL, NOISE_NONE, POINTWISE, PREVIOUS,
                         UNIFORM_PAIR, _first_draws, _record)

_LINEAR_PAIR_FORMS = (AUC, AUC_ORDERED, RANKING)


def kernel_kind(schedule: int, s: int, form: int) -> int:
    """Which compiled replicate runs a configuration (see ``_twin_kernel``)."""
    if schedule == PREVIOUS and s == 1 and form in _LINEAR_PAIR_FORMS:
        return FAST_PREVIOUS
    if schedule == UNIFORM_PAIR and form in _LINEAR_PAIR_FORMS:
        return FAST_PAIR
    if schedule == POINTWISE and form in (POINT, POINT_LSQ):
        return FAST_POINT
    return GENERAL


def kind_of(config: TwinConfig, kind=None) -> int:
    """The kernel kind a call of ``config`` runs: ``kernel_kind``, or ``kind`` when given
    (``GENERAL`` runs any configuration; the tests use it to check that the fast kinds give
    bit-identical results)."""
    kk = kernel_kind(config.schedule, config.buffer, config.form) if kind is None else int(kind)
    if not 0 <= kk <= GENERAL:
        raise ValueError(f"unknown kernel kind {kk}; kinds are 0..{GENERAL}")
    return kk


_call_replicate = make_native_caller(lambda tys: replicate_types(tys[1:]), "the twin kernel's replicate")


@njit(cache=True, parallel=True, nogil=True)
def _twin_kernel(replicate, X, Y, kidx, krows, reps, seed, schedule, s, seq, form, phi, q, ckind, radius, md,
                 T, etas, es, omegas, os_, lag, noise, sigma, has_ref, wref, W0, ckpts, rec, rec_out, outs, stop):
    """The parallel (CPU) twin kernel: a ``prange`` over the R replicates, each with its own
    scratch, running the compiled replicate at address ``replicate`` (one kind's
    ``_CPU_REPLICATES`` entry, ``replicate_address``).  Called through its address, the replicate
    is not linked into this kernel: one compilation of the kernel serves every kind
    (``native_call``).  The kind is a closure constant of each replicate, so numba drops the code of
    the other kinds before typing; the loss, constraint, output and noise codes stay run-time
    arguments (well-predicted branches cost far less than a compilation for every combination)."""
    R = W0.shape[0]
    p = W0.shape[1]
    d = X.shape[2]
    n, hlen, nwork, use_stats, slen = twin_layout(X, Y, R, schedule, s, form, phi, T)
    for r in prange(R):
        W = np.empty((2, 2, p))
        g = np.empty((2, p))
        acc = np.empty((2, p))
        nz = np.empty((2, p))
        dx = np.empty(max(d, p))
        hist = np.empty(hlen, dtype=np.int64)
        A = np.empty((md, md))
        V = np.empty((md, md))
        lam = np.empty(md)
        tmp = np.empty(md)
        work = np.empty(nwork)
        stats = np.empty((2, 2, slen))
        nrm2 = np.empty(2)
        # np.int64: the parfor's index is uint64 in its body
        _call_replicate(replicate, (np.int64(r), X, Y, kidx, krows, reps, seed, schedule, s, seq, form, phi, q,
                                    ckind, radius, md, T, etas, es, omegas, os_, lag, noise, sigma, has_ref, wref,
                                    W0, ckpts, rec, rec_out, outs, stop, n, use_stats, W, g, acc, nz, dx, hist,
                                    A, V, lam, tmp, work, stats, nrm2))


#: The CPU replicates, one per kind (compiled on their first use, each under its own name).
_CPU_REPLICATES = tuple(build_replicate(kind, True) for kind in range(GENERAL + 1))


def replicate_address(kind: int, kernel_args: tuple, spec: tuple, specialise: bool = False) -> int:
    """The address of kind ``kind``'s replicate compiled for ``_twin_kernel(addr, *kernel_args)``
    (compiled or loaded from the on-disk cache on first use; when it is compiled, the kernel and
    the checkpoint sums are compiled meanwhile in a helper process, ``stabsim.compile.beside``).
    ``spec``: the call's ``specialisation``, the constants of a specialised build.

    Cold start (``SPECIALISE_COLD``): when a fast kind's replicate is neither compiled in this
    process nor in numba's on-disk cache, the call runs the build specialised to its own
    configuration, which compiles faster (benchmarks/README.md, "The cold start specialised"),
    and the helper compiles the general build after the kernel, in the background: a later call
    of another configuration of that kind loads it from the cache, or waits for the helper if it
    is still at it.  The specialised build only fixes run-time codes as constants, so its numbers
    are the general build's, bit for bit (tests/test_cold_start.py; LLVM keeps IEEE arithmetic
    without fast-math flags).

    ``specialise`` (a fast kind): run the build specialised to this configuration whatever is
    compiled (``wants_specialised``), compiled if it is in neither this process nor the on-disk
    cache, with nothing compiled after it."""
    general = _CPU_REPLICATES[kind]
    beside = functools.partial(_compiled_beside, kind)
    if kind == GENERAL or not (SPECIALISE_COLD or specialise):
        return address_for(general, kernel_args, replicate_types, beside=beside)
    try:
        key = (kind, spec, bool(specialise), tuple(map(compute_fingerprint, kernel_args)))
    except Exception:   # (as in address_for: no shortcut without fingerprints)
        key = None
    addr = _CHOSEN.get(key) if key is not None else None
    if addr is not None:
        return addr
    if specialise:
        addr = address_for(_specialised(kind, spec), kernel_args, replicate_types, beside=beside)
        if key is not None:
            _CHOSEN[key] = addr
        return addr
    want = replicate_types(tuple(typeof(a) for a in kernel_args))
    helper = compile_beside.pending(__name__, f"_CPU_REPLICATES[{kind}]", want)
    if helper is not None:   # the general build is being compiled beside: it serves every configuration
        compile_beside.wait_for(helper)
    if compile_beside.cached(general, want):
        addr = address_for(general, kernel_args, replicate_types, beside=beside)
    else:
        addr = address_for(_specialised(kind, spec), kernel_args, replicate_types, beside=beside,
                           later=lambda argtypes: [(__name__, f"_CPU_REPLICATES[{kind}]", [want])])
    if key is not None:
        _CHOSEN[key] = addr
    return addr


#: run a fast kind's specialised replicate when its general build is not compiled yet
#: (``replicate_address``); the warm-up's recording turns it off, to record the general builds
SPECIALISE_COLD = True
#: (kind, specialisation, forced, the arguments' fingerprints) -> the replicate's address
_CHOSEN: dict = {}
#: ``wants_specialised``'s automatic rule: a noise-free call of a fast kind with at least this many
#: twin steps (R T: long enough to repay the specialised build's compilation) and d at most
#: ``SPECIALISE_MAX_D`` (where it is faster) runs its specialised build (benchmarks/README.md,
#: "Builds specialised to a configuration")
SPECIALISE_MIN_STEPS = 4 * 10**8
SPECIALISE_MAX_D = 64


def wants_specialised(kind: int, noise: int, steps: int, d: int, specialise) -> bool:
    """Whether a ``twin_kernel`` call runs the replicate specialised to its configuration (its
    loss form, constraint, noise mode, output lag, reference point, recorded outputs and dimension
    compiled in as constants; the same numbers bit for bit).  ``specialise``: True (a fast kind
    always), False (never: the general build, but for the cold start's rule in
    ``replicate_address``) or None, automatic: a fast kind without noise, with at least
    ``SPECIALISE_MIN_STEPS`` twin steps (``steps`` = R T) at a dimension ``d`` of at most
    ``SPECIALISE_MAX_D``.  Without noise the specialised build is faster, the more so the smaller
    d; with noise the normal draws take most of the time and it is slower (benchmarks/README.md,
    "Builds specialised to a configuration"; benchmarks/bench_specialised.py).  The general kind
    has no specialised build."""
    if specialise is not None and not isinstance(specialise, (bool, np.bool_)):
        raise ValueError(f"specialise must be None (automatic), True or False, got {specialise!r}")
    if kind == GENERAL:
        return False
    if specialise is None:
        return noise == NOISE_NONE and steps >= SPECIALISE_MIN_STEPS and d <= SPECIALISE_MAX_D
    return bool(specialise)


def call_specialises(specialise, config: TwinConfig, steps: int, d: int) -> bool:
    """``wants_specialised`` for a whole ``run_twin`` call of ``config`` with ``steps`` = R T twin
    steps, decided once for all the replicate blocks it is run in (a progress bar splits it)."""
    return wants_specialised(kind_of(config), config.noise, steps, d, specialise)


def specialisation(config: TwinConfig, p=None) -> tuple:
    """``build_replicate``'s ``SPEC`` for a call of ``config`` (``spec_of``), with the parameter
    dimension ``p`` when given."""
    return spec_of(config.form, config.ckind, config.noise, config.lag, config.has_ref, config.record_outputs, p)


@functools.lru_cache(maxsize=None)
def _specialised(kind: int, spec: tuple):
    """The CPU replicate of a fast kind specialised to ``spec`` (one dispatcher per configuration)."""
    return build_replicate(kind, True, spec)


def _compiled_beside(kind: int, argtypes: tuple) -> list:
    """What a ``twin_kernel`` call of this kind with these argument types compiles late in the
    replicate (``_late_callees``) and after it: ``_twin_kernel`` (the address typed as an int64)
    and ``run_twin``'s ``checkpoint_sums`` (etas, es, ckpts)."""
    sums = (kernel_arg(argtypes, "etas"), types.int64, kernel_arg(argtypes, "ckpts"))
    return _late_callees(kind) + _KERNEL_BESIDE(argtypes) + [(__name__, "checkpoint_sums", [sums])]


def _late_callees(kind: int) -> list:
    """The kind's replicate's callees a helper started with a cold call can have compiled before
    the replicate types them, as (module, name, signatures).  The general kind has none: its
    reference point's losses call ``_grad`` with a typed ``prime`` flag, the signature
    ``_general_step`` compiled (a literal False made it a second ``_grad``, which the helper had
    to compile beside).  The fast kinds type ``stream_key`` and ``_first_draws`` early in the
    replicate's compilation, then ``_record`` and their loss's value (also in the specialised
    build of a cold call, which hands them the run-time codes: the same signatures); the helper
    compiles them in that order, and whichever it is done with is loaded, the others are
    compiled here as before (benchmarks/README.md, "The loop compiled beside its replicate").
    The signatures are the warm-up's recorded ones (the kernel's arguments have fixed types);
    one the call does not use only costs the helper's time."""
    from stabsim.compile.signatures import load_signatures

    want = [(f.py_func.__module__, f.py_func.__name__, literal) for f, literal in _LATE_CALLEES[kind]]
    homes = {name: module for module, name, _ in want}
    # by name: a callee is recorded under whichever module first held it when the warm-up
    # recorded; the dispatcher, and so its signature, is the same one (its own module preferred)
    found = {}
    for m, n, sigs in load_signatures():
        for sig in sigs:
            key = (n, any(isinstance(t, types.BooleanLiteral) for t in sig))
            if m == homes.get(n) or key not in found:
                found[key] = sig
    return [(m, n, [found[(n, lit)]]) for m, n, lit in want if (n, lit) in found]


#: per kind, (callee, whether the signature has a literal flag) of the callees ``_late_callees``
#: hands to the helper, in the order it compiles them
_FIRST_CALLEES = ((stream_key, False), (_first_draws, False))
_LATE_CALLEES = {FAST_PREVIOUS: _FIRST_CALLEES + ((_record, False), (linear_pair_value, False)),
                 FAST_PAIR: _FIRST_CALLEES + ((_record, False), (linear_pair_value, False)),
                 FAST_POINT: _FIRST_CALLEES + ((_record, False), (point_coef, False)),
                 GENERAL: ()}


_KERNEL_BESIDE = caller_beside(__name__, "_twin_kernel")


@njit(cache=True)
def checkpoint_sums(etas, es, ckpts):
    """(sum_{j<=t} eta_j, sum_{j<=t} eta_j^2) at the checkpoints t, with eta_j = etas[j * es]
    (es = 0: a constant step size stored as one number).

    Each stretch between checkpoints is summed in eight interleaved partial sums (combined
    pairwise), and the stretches are added in order.  A plain running sum is one chain of
    dependent additions; this is faster (benchmarks/README.md, "The twin kernel's design") and
    more accurate (relative error about 1e-16 against ``math.fsum`` where the running sum gives
    1e-14 at T = 10^6).  The order is fixed, so the numbers are the same on every machine."""
    C = ckpts.shape[0]
    out = np.empty((2, C))
    s1 = 0.0
    s2 = 0.0
    j = 1
    for ci in range(C):
        end = ckpts[ci] + 1
        if es == 0:
            # one constant: the eight partial sums see the same additions, so they are equal and
            # one of them is summed (the same numbers, an eighth of the additions)
            e = etas[0]
            a = 0.0
            b = 0.0
            while j + 8 <= end:
                a += e
                b += e * e
                j += 8
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a
            b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = b
        else:
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
            b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = 0.0
        while j + 8 <= end:
            e0 = etas[j * es]
            e1 = etas[(j + 1) * es]
            e2 = etas[(j + 2) * es]
            e3 = etas[(j + 3) * es]
            e4 = etas[(j + 4) * es]
            e5 = etas[(j + 5) * es]
            e6 = etas[(j + 6) * es]
            e7 = etas[(j + 7) * es]
            a0 += e0
            a1 += e1
            a2 += e2
            a3 += e3
            a4 += e4
            a5 += e5
            a6 += e6
            a7 += e7
            b0 += e0 * e0
            b1 += e1 * e1
            b2 += e2 * e2
            b3 += e3 * e3
            b4 += e4 * e4
            b5 += e5 * e5
            b6 += e6 * e6
            b7 += e7 * e7
            j += 8
        p1 = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
        p2 = ((b0 + b1) + (b2 + b3)) + ((b4 + b5) + (b6 + b7))
        while j < end:
            e = etas[j * es]
            p1 += e
            p2 += e * e
            j += 1
        s1 += p1
        s2 += p2
        out[0, ci] = s1
        out[1, ci] = s2
    return out


#: Replicates x steps x max(d, 10) below which a fast kind's call is not run in a helper thread.
INTERRUPTIBLE_MIN_WORK = 2 * 10**7


def _direct(fn, *args, stop):
    return fn(*args)


def twin_kernel(config: TwinConfig, X, Y, kidx, krows, reps, seed, W0, rec, outs, *, kind=None, stop=None,
                specialise=None):
    """Run R coupled replicates of ``config`` (``twin_config.TwinConfig``).

    X (nS, n + m, d), Y (nS, n + m): nS = 1 (one data set) or R (one per replicate); the first
    n rows are S, the extra m rows hold the replacement points.  S' replaces example
    kidx[r] by row krows[r] (kidx[r] = -1 makes S' = S).  reps (R,): the replicate ids, seed:
    the seed of the random streams.  W0 (R, p): initial points.  rec (R, C, N_REC) is written
    (``twin_steps``' recorded columns at the C checkpoints); outs (R, C, 2, p) receives the
    outputs on S and S' when ``config.record_outputs``.  Nothing is allocated inside the step
    loop.  ``kind`` overrides ``kernel_kind`` (``kind_of``).

    ``stop`` (int64 array of one element, default a fresh zero): the kernel returns early once
    ``stop[0]`` is non-zero.  Called from the main thread, the kernel runs in a helper thread
    and a signal (Ctrl-C, SIGTERM) sets the flag and is re-raised here within about a second
    (``stabsim.runtime.signals.call_interruptible``); the unfinished ``rec`` is then discarded.

    ``specialise``: None (automatic), True or False: whether a fast kind runs the replicate
    compiled for this configuration (``wants_specialised``); the numbers are the same.
    """
    kk = kind_of(config, kind)
    if stop is None:
        stop = new_stop_flag()
    # A short call on a fast kind runs directly: a signal waits for it, and it saves the helper
    # thread's start.
    small = kk != GENERAL and W0.shape[0] * config.T * max(X.shape[2], 10) < INTERRUPTIBLE_MIN_WORK
    spec = wants_specialised(kk, config.noise, W0.shape[0] * config.T, X.shape[2], specialise)
    args = config.kernel_args(X, Y, kidx, krows, reps, seed, W0, rec, outs, stop)
    addr = replicate_address(kk, args, specialisation(config, W0.shape[1]), spec)
    (_direct if small else call_interruptible)(_twin_kernel, addr, *args, stop=stop)
