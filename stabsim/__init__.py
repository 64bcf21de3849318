"""stabsim: twin-trajectory simulations that check stability, generalization and privacy
bounds of SGD for pairwise learning against measurement.

Public API::

    from stabsim import run_twin, make_problem
    X, y = make_problem("auc_separable", d=10).sample(200, seed=0)
    ds = run_twin(X, y, algorithm="p1_alg1", loss="auc_hinge", eta=0.05, T=10_000,
                  replicates=200, seed=1, neighbour="flip")
"""
__version__ = "0.1.0"

from ._cache import configure_numba_cache, serialize_cache_saves, spread_function_ids  # noqa: E402

configure_numba_cache()  # before any kernel compiles: numba's cache follows the source hash
spread_function_ids()  # symbols that no other process's cache entries can share (_cache, "Symbols")
serialize_cache_saves()  # no two processes' cache entries mixed in one index (_cache, "Saves")

from .algorithms import ALGORITHMS, get_algorithm  # noqa: E402
from .constraints import get_constraint  # noqa: E402
from .synthetic import make_problem  # noqa: E402
from .losses import LOSSES, get_loss  # noqa: E402
from .neighbours import Neighbour  # noqa: E402
from .twin import log_checkpoints, run_twin  # noqa: E402

__all__ = ["ALGORITHMS", "LOSSES", "Neighbour", "get_algorithm", "get_constraint", "get_loss",
           "log_checkpoints", "make_problem", "run_twin", "__version__"]
