"""Counter-based random numbers usable inside numba kernels.

Every random number is a pure function of ``(seed, replicate, stream, counter)``:

    key      = stream_key(seed, replicate, stream)
    uniform  = mix64(key + (counter + 1) * GOLDEN) >> 11, scaled to [0, 1)

``mix64`` is the SplitMix64 finaliser (Steele, Lea & Flood 2014), so the sequence for a
fixed key is exactly SplitMix64's output sequence.  Because nothing depends on a mutable
generator state, a replicate gives bit-identical numbers whatever the thread count, the
chunking of replicates, or the machine that runs it (README, Concepts, "Coupling").
numba's own ``np.random`` is per-thread state and is never used in kernels.

Streams used by the engine (one independent sequence each):

``STREAM_INDEX``   sampled example indices (shared by the runs on S and S')
``STREAM_NOISE``   Gaussian gradient/output noise of the run on S (and on S' when coupled)
``STREAM_NOISE_PRIME`` noise of the run on S' when the noise is *independent* (privacy audits)
``STREAM_INIT``    random initial points
``STREAM_NEIGHBOUR`` the replaced index k and replacement point z'
``STREAM_DATA``    synthetic data sets
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from stabsim.compile import beside as compile_beside
from stabsim.compile.jit import njit

STREAM_INDEX = 1
STREAM_NOISE = 2
STREAM_NOISE_PRIME = 3
STREAM_INIT = 4
STREAM_NEIGHBOUR = 5
STREAM_DATA = 6
STREAM_SPLIT = 7

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_ONE = np.uint64(1)
_TWO_POW_M53 = 1.0 / 9007199254740992.0


@njit(cache=True, inline="always")
def mix64(z):
    """SplitMix64 finaliser: a bijective 64-bit mixer."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True)
def stream_key(seed, replicate, stream):
    """The 64-bit key of one random stream of one replicate.  Kernels pass the stream typed,
    ``np.int64(STREAM_NOISE)``: a module constant is a literal to numba, which would compile one
    specialisation of this function per stream."""
    k = mix64(np.uint64(seed) + _GOLDEN)
    k = mix64(k ^ (np.uint64(replicate) * _M1 + _ONE))
    return mix64(k ^ (np.uint64(stream) * _M2 + _GOLDEN))


@njit(cache=True, inline="always")
def uniform(key, counter):
    """A float in [0, 1) with 53 random bits: number ``counter`` of stream ``key``."""
    x = mix64(key + (np.uint64(counter) + _ONE) * _GOLDEN)
    return np.float64(x >> _S11) * _TWO_POW_M53


@njit(cache=True, inline="always")
def randint(key, counter, n):
    """An integer uniform on {0, ..., n-1} (bias below n / 2**53)."""
    r = np.int64(uniform(key, counter) * n)
    return r if r < n else n - 1


@njit(cache=True, inline="always")
def normal(key, counter):
    """A standard normal (Box–Muller, cosine branch) from counters 2c and 2c+1."""
    u1 = 1.0 - uniform(key, 2 * counter)  # in (0, 1]
    u2 = uniform(key, 2 * counter + 1)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@njit(cache=True, inline="always")
def pair_ij(key, t, n):
    """The ordered pair (i, j), i != j, uniform over n(n-1) pairs, drawn at step t."""
    i = randint(key, 2 * t, n)
    j = randint(key, 2 * t + 1, n - 1)
    if j >= i:
        j += 1
    return i, j


@njit(cache=True)
def fill_uniform(key, start, out):
    for c in range(out.shape[0]):
        out[c] = uniform(key, start + c)


@njit(cache=True)
def fill_normal(key, start, out):
    for c in range(out.shape[0]):
        out[c] = normal(key, start + c)


#: ``fill`` hands arrays of at least this many numbers to the parallel filler
PARALLEL_FILL_MIN = 1 << 15
_FILL_BLOCK = 1 << 12


@njit(cache=True, parallel=True)
def _fill_parallel(key, start, out, gaussian):
    """``fill_uniform`` / ``fill_normal`` over blocks on all threads: number c is still a
    function of (key, start + c) alone, so the array is the same bit for bit."""
    nb = (out.shape[0] + _FILL_BLOCK - 1) // _FILL_BLOCK
    for b in prange(nb):
        lo = b * _FILL_BLOCK
        for c in range(lo, min(out.shape[0], lo + _FILL_BLOCK)):
            out[c] = normal(key, start + c) if gaussian else uniform(key, start + c)


def fill(key, start: int, out: np.ndarray, gaussian: bool) -> None:
    """Numbers start, start + 1, ... of stream ``key`` into ``out`` (1-d float64): normals or
    uniforms; large arrays are filled on all numba threads.  Small ones (under ``PYTHON_FILL_MAX``)
    are filled without compiled code (``_fill_python``) as long as the compiled filler is neither
    compiled in this process nor in numba's on-disk cache, so that a first small data set on a
    fresh install compiles nothing: the same numbers either way."""
    filler = fill_normal if gaussian else fill_uniform
    if out.shape[0] >= PARALLEL_FILL_MIN:
        _fill_parallel(key, np.int64(start), out, gaussian)
    elif out.shape[0] < PYTHON_FILL_MAX and not _compiled(filler, out):
        _fill_python(key, int(start), out, gaussian)
    else:
        filler(key, np.int64(start), out)


#: ``fill`` computes arrays of fewer numbers than this without compiled code when its compiled
#: filler is not at hand: a few thousand normals in Python cost far less than compiling
#: ``fill_normal`` on a fresh install (``benchmarks/README.md``, "Compile time and the cold start")
PYTHON_FILL_MAX = 1 << 12
#: per (filler, array type): whether numba's on-disk cache holds it (read once per process)
_ON_DISK: dict = {}


def _compiled(filler, out: np.ndarray) -> bool:
    """Whether ``filler`` for ``out`` is compiled in this process or in numba's on-disk cache."""
    if filler.signatures:
        return True
    key = (filler, out.dtype, out.ndim, out.flags.c_contiguous)
    if key not in _ON_DISK:
        from numba import typeof
        from numba.core import types

        _ON_DISK[key] = compile_beside.cached(filler, (types.uint64, types.int64, typeof(out)))
    return _ON_DISK[key]


def _uniform_array(key, counters: np.ndarray) -> np.ndarray:
    """``uniform(key, c)`` for each counter c (uint64 array) in NumPy: the same integer operations,
    which wrap modulo 2**64 as numba's do, then the same exact scaling of a 53-bit integer."""
    x = _mix64_array(np.uint64(key) + (counters + _ONE) * _GOLDEN)
    return (x >> _S11).astype(np.float64) * _TWO_POW_M53


def _fill_python(key, start: int, out: np.ndarray, gaussian: bool) -> None:
    """``fill_uniform`` / ``fill_normal`` without compiled code.  Uniforms are exact integer
    arithmetic in NumPy.  Normals take Box-Muller's logarithm and cosine from Python's ``math``,
    which calls the C library's ``log`` and ``cos``, the functions numba's compiled ``math.log``
    and ``math.cos`` call: NumPy's own vectorised versions may round differently, so they are
    not used (tests/test_rng_fill.py compares them with the compiled fillers, bit for bit)."""
    m = out.shape[0]
    c = np.arange(m, dtype=np.uint64) + np.uint64(start)
    if not gaussian:
        out[:] = _uniform_array(key, c)
        return
    u1 = (1.0 - _uniform_array(key, np.uint64(2) * c)).tolist()
    u2 = _uniform_array(key, np.uint64(2) * c + _ONE).tolist()
    two_pi = 2.0 * math.pi
    out[:] = [math.sqrt(-2.0 * math.log(a)) * math.cos(two_pi * b) for a, b in zip(u1, u2)]


# ---- Python-side conveniences (not used inside kernels) ---------------------------------

def key(seed: int, replicate: int, stream: int) -> np.uint64:
    """``stream_key`` with argument checking, for Python callers (computed by ``keys``: nothing
    to compile)."""
    return keys(seed, np.array([replicate]), stream)[0]


def keys(seed: int, replicates: np.ndarray, stream: int) -> np.ndarray:
    """``key`` of each replicate id (uint64 array): ``stream_key``'s operations on whole arrays
    in NumPy, whose unsigned arithmetic wraps modulo 2**64 as numba's does (the same keys, with
    nothing to compile before a first ``run_twin``)."""
    seed = int(_seed(seed))
    reps = np.asarray(replicates, dtype=np.int64).astype(np.uint64)
    k = _mix64_array(np.full(reps.shape, (seed + int(_GOLDEN)) & _MASK64, dtype=np.uint64))
    k = _mix64_array(k ^ (reps * _M1 + _ONE))
    return _mix64_array(k ^ np.uint64((int(stream) * int(_M2) + int(_GOLDEN)) & _MASK64))


def randints(keys: np.ndarray, counter: int, n: int) -> np.ndarray:
    """``randint(keys[i], counter, n)`` for every key (int64 array), in NumPy (the same numbers)."""
    step = np.uint64(((int(counter) + 1) * int(_GOLDEN)) & _MASK64)
    u = (_mix64_array(np.asarray(keys, dtype=np.uint64) + step) >> _S11).astype(np.float64) * _TWO_POW_M53
    return np.minimum((u * n).astype(np.int64), n - 1)


_MASK64 = (1 << 64) - 1


#: ``mix64`` of each entry of a uint64 array: its Python body, run by NumPy (nothing compiled)
_mix64_array = mix64.py_func


#: the largest seed: the kernels hold it as a signed 64-bit integer
SEED_MAX = 2**63 - 1


def check_seed(seed) -> int:
    """``seed`` as an int, or ValueError naming the allowed range [0, 2**63 - 1]."""
    import numbers

    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= int(seed) <= SEED_MAX:
        raise ValueError(f"seed must be an integer in [0, 2**63 - 1] (0 to {SEED_MAX}), got {seed!r}")
    return int(seed)


def _seed(seed: int) -> np.int64:
    if not 0 <= int(seed) <= SEED_MAX:
        raise ValueError(f"seed must be an integer in [0, 2**63 - 1] (0 to {SEED_MAX}), got {seed!r}")
    return np.int64(seed)


def uniforms(seed: int, replicate: int, stream: int, size: int, start: int = 0) -> np.ndarray:
    out = np.empty(int(size))
    fill(key(seed, replicate, stream), start, out, False)
    return out


def normals(seed: int, replicate: int, stream: int, size: int, start: int = 0) -> np.ndarray:
    out = np.empty(int(size))
    fill(key(seed, replicate, stream), start, out, True)
    return out
