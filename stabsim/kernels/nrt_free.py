"""Compiled loops without numba's reference counting.

numba's runtime (NRT) counts references to every array: making a view (``W[run, 1]``,
``X[r]``) or handing an array to a compiled function that is not inlined costs an atomic
increment and, later, an atomic decrement (``NRT_incref`` / ``NRT_decref``).  On the general
twin path (buffers, all-previous pairs, metric learning) that is several views and calls per
pair and step: ``perf`` put 83 % of P1's buffer-4 update in those two instructions, and with two
threads sharing the data set the counters' cache line travels between cores as well.

``NRT_FREE`` (numba's ``_nrt=False``) compiles a function without the runtime: no counting at
all.  Every function compiled while it is compiled inherits the flag.  That is safe when the
function and everything it calls

* allocate nothing (numba refuses to compile an allocation without the runtime: a loud error),
* and return no array: a caller *with* the runtime that reused such a compiled callee would
  release a reference it was never given.  ``tests/test_nrt_free.py`` compiles the functions
  below from an empty cache and checks every function compiled in their context.

Used by: the CPU twin kernels' replicate (``twin.build_replicate``), P2 Alg. 1's full gradient
(``p2_removal.full_grad``) and P3's GIGA (its replicate ``giga._giga_replicate`` and the helpers
``giga._lhat``, ``giga.ball_point``).  The arithmetic is untouched, so the numbers are the same bit
for bit (the suite's data.nc files were compared; benchmarks/README.md, "Reference counting").
"""

#: numba options for a function that neither allocates nor returns an array (see above)
NRT_FREE = {"_nrt": False}
