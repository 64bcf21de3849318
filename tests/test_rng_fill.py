"""``rng.fill``: large arrays are filled on all numba threads, and must hold the same numbers bit for
bit as the serial fillers (every number is a function of (key, counter) alone)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stabsim import rng


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
