"""The thread pools of a `stabsim run`: BLAS on one thread, OpenMP's threads idle sooner.

stabsim parallelises with numba: its threads (OpenMP by default), one per core, run the prange
loops.  numpy's and scipy's BLAS (OpenBLAS, MKL) keep a thread pool of their own, also one
thread per core, for matrix products, and both pools spin for a while after their work before
they sleep.  With few cores the two pools fight: a Python loop that alternates a parallel numba
kernel with scipy code calling BLAS (an L-BFGS-B step, a matrix-vector product) waits for a BLAS
thread that cannot run while numba's thread spins on the other core: on two cores such an
evaluation takes many times as long as with BLAS on one thread, and so does the study
p2_lemma3_metric, whose ERM is such a loop (benchmarks/README.md, "Thread pools").

GNU OpenMP's threads, after each parallel loop, spin about 300 000 times before they sleep.
A study that calls short kernels between lines of Python (P3's figures: 1680 GIGA runs) spends
about as much CPU spinning as computing, and about none with a spin of 1000 (``GOMP_SPINCOUNT``),
in the same wall time (benchmarks/README.md, "Thread pools").  Alone that costs nothing; in a suite,
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

``map_in_threads(fn, items)`` runs independent calls, each a handful of small kernels (one
replicate of P3's figures on its own data set, P1 Table 1's tuning runs), on numba's threads at
once: a kernel of one replicate uses one core, so a loop of them leaves the other cores idle.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

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


#: numba threading layers whose parallel kernels may be launched from several threads at once
#: (numba's "Threading Layers" table: workqueue is not thread safe and aborts the process)
THREAD_SAFE_LAYERS = ("omp", "tbb")


def _concurrent_launches_safe() -> bool | None:
    """Whether numba's threading layer takes parallel kernels from several threads at once; None
    before the first parallel kernel chose the layer."""
    import numba

    try:
        return numba.threading_layer() in THREAD_SAFE_LAYERS
    except ValueError:   # "Threading layer is not initialized": no parallel kernel has run yet
        return None


def _one_thread(fn):
    """``fn`` with numba's thread count (a per-thread setting) 1 in the calling thread."""
    import numba

    def call(x):
        numba.set_num_threads(1)
        return fn(x)
    return call


def map_in_threads(fn, items, threads: int | None = None) -> list:
    """``[fn(x) for x in items]``, the calls spread over ``threads`` Python threads (default:
    numba's thread count), each of whose parallel kernels runs on that one thread.

    For calls that are pure functions of their arguments and spend their time in kernels compiled
    with ``nogil=True``: their results are those of the plain loop, bit for bit, in the order of
    ``items``.  The first call runs alone in the calling thread (it may compile, and it starts
    numba's threading layer); the rest run at once only when that layer is thread safe
    (``THREAD_SAFE_LAYERS``), else one after the other.  An exception in a call is raised here
    after the calls already running have ended; the calls not started are dropped.
    """
    import numba

    items = list(items)
    n = numba.get_num_threads() if threads is None else int(threads)
    if n < 2 or len(items) < 2:
        return [fn(x) for x in items]
    out = [fn(items[0])]
    if _concurrent_launches_safe() is False:   # None: the calls launch no parallel kernel
        return out + [fn(x) for x in items[1:]]
    pool = ThreadPoolExecutor(max_workers=min(n, len(items) - 1))
    try:
        out += list(pool.map(_one_thread(fn), items[1:]))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return out
