"""The thread pools of a `stabsim run`: BLAS on one thread, OpenMP's threads idle sooner (issue #17).

stabsim parallelises with numba: its threads (OpenMP by default), one per core, run the prange
loops.  numpy's and scipy's BLAS (OpenBLAS, MKL) keep a thread pool of their own, also one
thread per core, for matrix products, and both pools spin for a while after their work before
they sleep.  With few cores the two pools fight: a Python loop that alternates a parallel numba
kernel with scipy code calling BLAS (an L-BFGS-B step, a matrix-vector product) waits for a BLAS
thread that cannot run while numba's thread spins on the other core.  Measured on this 2-core
machine (benchmarks/README.md, "Two thread pools"): an L-BFGS-B evaluation around a 0.4 ms
parallel kernel took 6.7 ms, and 0.44 ms with BLAS on one thread; the study p2_lemma3_metric
(its ERM is such a loop) 18.0 -> 5.6 s.

GNU OpenMP's threads, after each parallel loop, spin about 300 000 times before they sleep.
A study that calls short kernels between lines of Python (P3's figures: 1680 GIGA runs) spends
as much CPU spinning as computing: p3_fig5 used 28-30 s of CPU in 16-17 s, and 17 s of CPU in
the same time with a spin of 1000 (``GOMP_SPINCOUNT``).  Alone that costs nothing; in a suite,
whose analyses and privacy ledger run in other processes on the same cores, it is CPU they wait
for.

``single_threaded_blas()`` limits every BLAS library loaded in this process to one thread
(threadpoolctl) and sets ``OPENBLAS_NUM_THREADS`` and its kin to 1 for the processes started
afterwards (the warm-up's workers, the analyses', the privacy ledger's); ``short_openmp_spin()``
sets ``GOMP_SPINCOUNT`` for this process (read when numba starts its threads, at the first
parallel kernel) and its children.  Each leaves a variable the user set alone.
``configure_thread_pools()`` does both; ``stabsim run`` and the test suite call it, the Python
API leaves a user's settings alone.  No number changes: they decide when threads wait, not what
they compute (the suite's data.nc files are equal value for value, but P3's regret comparator:
benchmarks/README.md).
"""

from __future__ import annotations

import os

#: the variables BLAS libraries read at start-up for their thread count (not OMP_NUM_THREADS,
#: which numba's OpenMP layer would read too)
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                         "VECLIB_MAXIMUM_THREADS")


def single_threaded_blas() -> bool:
    """One BLAS thread in this process and its future children (see the module docstring).
    Returns False when the user chose a BLAS thread count (``OPENBLAS_NUM_THREADS`` or one of
    its kin is set): nothing is changed then."""
    if any(v in os.environ for v in BLAS_THREAD_VARIABLES):
        return False
    for v in BLAS_THREAD_VARIABLES:
        os.environ[v] = "1"
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")   # the libraries already loaded (numpy's, scipy's)
    return True


#: spins of an idle GNU OpenMP thread before it sleeps (libgomp's default is 300000)
OPENMP_SPIN = 1000


def short_openmp_spin() -> bool:
    """``GOMP_SPINCOUNT`` = ``OPENMP_SPIN`` for this process and its children, unless the user set
    it or ``OMP_WAIT_POLICY`` (then False, nothing changed).  Takes effect only if numba has not
    started its OpenMP threads yet (they start with the first parallel kernel)."""
    if "GOMP_SPINCOUNT" in os.environ or "OMP_WAIT_POLICY" in os.environ:
        return False
    os.environ["GOMP_SPINCOUNT"] = str(OPENMP_SPIN)
    return True


def configure_thread_pools() -> None:
    """``single_threaded_blas()`` and ``short_openmp_spin()`` (see the module docstring)."""
    single_threaded_blas()
    short_openmp_spin()
