"""The benchmark's reference loops compute exactly what the twin kernel computes.

benchmarks/bench_twin.py sets the kernel against a plain C loop (benchmarks/c/twin_p1.c) and its
line-by-line numba port (benchmarks/numba_plain.py) and reports them as the same work in the same
floating-point order.  These tests hold that claim on a short run: identical final
||w_T - w'_T||, ||A_T(S) - A_T(S')|| and cumulative loss, with and without the l2 ball (radius
small enough that the projection is active).  No timings are asserted.
"""

from __future__ import annotations

import math
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_twin as bt  # noqa: E402

T = 3000
CASES = [(5, None), (5, 0.5), (12, 1.0)]


def kernel_result(X, y, T, radius):
    cons = "none" if radius is None else ("l2", radius)
    ds = bt.kernel_run(X, y, T, 1, cons)
    return (float(ds.dist_iterate[0, -1]), float(ds.dist_output[0, -1]), float(ds.loss_path[0, -1]))


@pytest.fixture(scope="module")
def c_loop(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("gcc not found: the C reference loop cannot be built")
    return bt.CLoop(str(tmp_path_factory.mktemp("cloop")), ["-O2", "-ffp-contract=off"], "test")


@pytest.mark.parametrize("d,radius", CASES)
def test_numba_port_of_the_c_loop_matches_the_kernel_bit_for_bit(d, radius):
    X, y = bt.data(d)
    Xext, Yext, k, krow = bt.neighbour_arrays(X, y)
    stats, out = bt.plain_run(Xext, Yext, k, krow, T, radius)
    assert (stats[0], stats[1], stats[2]) == kernel_result(X, y, T, radius)
    if radius is not None:
        assert stats[4] > 0, "the test should exercise an active projection"
        assert np.linalg.norm(out[:d]) <= radius * (1 + 1e-12)
    assert stats[5] > 0 and math.isfinite(stats[2])


@pytest.mark.parametrize("d,radius", CASES)
def test_c_loop_matches_the_kernel_bit_for_bit(c_loop, d, radius):
    X, y = bt.data(d)
    Xext, Yext, k, krow = bt.neighbour_arrays(X, y)
    stats, _ = c_loop.run(Xext, Yext, k, krow, T, radius)
    assert (stats[0], stats[1], stats[2]) == kernel_result(X, y, T, radius)


def test_c_stream_key_is_stabsim_rng_key(c_loop):
    from stabsim.engine import rng
    for seed, rep, stream in [(0, 0, rng.STREAM_INDEX), (7, 123, rng.STREAM_NOISE), (2**40, 5, 3)]:
        assert int(c_loop.stream_key(seed, rep, stream)) == int(rng.key(seed, rep, stream))
