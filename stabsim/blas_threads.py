"""BLAS on one thread while stabsim computes (issue #17).

stabsim parallelises with numba: its threads (OpenMP by default), one per core, run the prange
loops.  numpy's and scipy's BLAS (OpenBLAS, MKL) keep a thread pool of their own, also one
thread per core, for matrix products, and both pools spin for a while after their work before
they sleep.  With few cores the two pools fight: a Python loop that alternates a parallel numba
kernel with scipy code calling BLAS (an L-BFGS-B step, a matrix-vector product) waits for a BLAS
thread that cannot run while numba's thread spins on the other core.  Measured on this 2-core
machine (benchmarks/README.md, "Two thread pools"): an L-BFGS-B evaluation around a 0.4 ms
parallel kernel took 6.7 ms, and 0.44 ms with BLAS on one thread; the study p2_lemma3_metric
(its ERM is such a loop) 18.0 -> 5.6 s.  The numbers do not change (the suite's data.nc files
are equal value for value; numba's thread count is not touched).

``single_threaded_blas()`` limits every BLAS library loaded in this process to one thread
(threadpoolctl) and sets ``OPENBLAS_NUM_THREADS`` and its kin to 1 for the processes started
afterwards (the warm-up's workers, the privacy ledger's), each only where the user has not set
it.  ``stabsim run`` and the test suite call it; the Python API leaves a user's BLAS alone (call
it in a script that alternates numba kernels and BLAS in the same way).
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
