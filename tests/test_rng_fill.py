"""``rng.fill``: large arrays are filled on all numba threads, and must hold the same numbers bit for
bit as the serial fillers (every number is a function of (key, counter) alone)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stabsim.engine import rng


@settings(max_examples=15, deadline=None)
@given(size=st.sampled_from([1, 4095, 4096, 4097, rng.PARALLEL_FILL_MIN - 1, rng.PARALLEL_FILL_MIN,
                             3 * rng.PARALLEL_FILL_MIN + 17]),
       start=st.integers(0, 2 ** 40), seed=st.integers(0, 2 ** 31), gaussian=st.booleans())
def test_fill_equals_the_serial_fillers_bit_for_bit(size, start, seed, gaussian):
    key = rng.key(seed, 3, rng.STREAM_DATA)
    serial, filled = np.empty(size), np.empty(size)
    (rng.fill_normal if gaussian else rng.fill_uniform)(key, np.int64(start), serial)
    rng.fill(key, start, filled, gaussian)
    np.testing.assert_array_equal(filled.view(np.int64), serial.view(np.int64))


@pytest.mark.parametrize("gaussian", [True, False])
def test_parallel_filler_matches_the_scalar_definition(gaussian):
    """Spot values of the parallel path against the per-number functions of the module docstring."""
    key = rng.key(7, 1, rng.STREAM_DATA)
    out = np.empty(rng.PARALLEL_FILL_MIN + 5)
    rng.fill(key, 11, out, gaussian)
    f = rng.normal if gaussian else rng.uniform
    for c in (0, 4095, 4096, out.size - 1):
        assert out[c] == f(key, np.int64(11 + c))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 63 - 1), reps=st.lists(st.integers(0, 2 ** 63 - 1), max_size=20),
       stream=st.integers(0, 2 ** 20), counter=st.integers(0, 2 ** 62), n=st.integers(1, 2 ** 40))
def test_array_keys_and_randints_are_the_compiled_generators(seed, reps, stream, counter, n):
    """``rng.keys`` and ``rng.randints`` (NumPy, for Python callers) draw exactly what the kernels'
    ``stream_key`` and ``randint`` draw, over the whole range of seeds, ids and counters (where
    64-bit products and sums wrap around)."""
    reps = np.array(reps, dtype=np.int64)
    got = rng.keys(seed, reps, stream)
    want = np.array([rng.stream_key(np.int64(seed), np.int64(r), np.int64(stream)) for r in reps], dtype=np.uint64)
    assert got.dtype == np.uint64 and np.array_equal(got, want)
    ints = rng.randints(got, counter, n)
    assert ints.dtype == np.int64
    assert np.array_equal(ints, [rng.randint(np.uint64(k), np.int64(counter), np.int64(n)) for k in got])
    if len(reps):
        one = rng.key(seed, int(reps[0]), stream)   # the scalar form, for Python callers
        assert isinstance(one, np.uint64) and one == want[0]


@settings(max_examples=40, deadline=None)
@given(size=st.integers(0, rng.PYTHON_FILL_MAX - 1), start=st.integers(0, 2 ** 60),
       seed=st.integers(0, 2 ** 63 - 1), gaussian=st.booleans())
def test_small_arrays_are_filled_without_compiled_code_and_with_the_same_bits(size, start, seed, gaussian):
    """``fill`` computes small arrays in NumPy and Python's ``math`` (nothing to compile for a first
    small data set): the compiled fillers' numbers, bit for bit (counters up to 2**61)."""
    key = rng.key(seed, 5, rng.STREAM_DATA)
    compiled, filled = np.empty(size), np.empty(size)
    (rng.fill_normal if gaussian else rng.fill_uniform)(key, np.int64(start), compiled)
    rng._fill_python(key, start, filled, gaussian)
    np.testing.assert_array_equal(filled.view(np.int64), compiled.view(np.int64))


def test_fill_takes_the_python_path_only_while_the_compiled_filler_is_not_at_hand(monkeypatch):
    key = rng.key(1, 2, rng.STREAM_DATA)
    want = np.empty(100)
    rng.fill_normal(key, np.int64(9), want)
    calls = []
    monkeypatch.setattr(rng, "fill_normal", lambda *a: calls.append("compiled"))
    monkeypatch.setattr(rng, "_fill_python", lambda *a: calls.append("python"))
    for at_hand in (False, True):
        monkeypatch.setattr(rng, "_compiled", lambda filler, out: at_hand)
        rng.fill(key, 9, np.empty(100), True)
    rng.fill(key, 9, np.empty(rng.PYTHON_FILL_MAX), True)   # (too large for the Python path)
    assert calls == ["python", "compiled", "compiled"]
    monkeypatch.undo()
    assert rng._compiled(rng.fill_normal, want)   # compiled in this process above
