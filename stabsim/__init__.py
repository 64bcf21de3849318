"""stabsim: twin-trajectory simulations that check stability, generalization and privacy
bounds of SGD for pairwise learning against measurement.

Public API::

    from stabsim import judge, make_problem, overlay_figure, run_twin
    X, y = make_problem("auc_separable", d=10).sample(200, seed=0)
    ds = run_twin(X, y, algorithm="p1_alg1", loss="auc_hinge", eta=0.05, T=10_000,
                  replicates=200, seed=1, neighbour="flip")
    v = judge(ds, "P1.Thm4.uas", X=X)                     # a Verdict (stabsim.analyses.judge)
    fig = overlay_figure(ds, "P1.Thm4.uas", X=X)          # measured UAS with its CI and the bound
"""
__version__ = "0.1.0"

from stabsim.compile.cache import configure_numba_cache, serialize_cache_saves, spread_function_ids  # noqa: E402

configure_numba_cache()  # before any kernel compiles: numba's cache follows the source hash
spread_function_ids()  # symbols that no other process's cache entries can share (_cache, "Symbols")
serialize_cache_saves()  # no two processes' cache entries mixed in one index (_cache, "Saves")

# The public names are imported on first use (PEP 562), so that a process that needs only a
# kernel module (the helper that compiles beside a cold call, ``stabsim.compile.beside``; a
# warm-up worker) does not import xarray and pandas with the package (about half of the
# package's import time; benchmarks/README.md, "Import time").
_PUBLIC = {"ALGORITHMS": "engine.algorithm_specs", "get_algorithm": "engine.algorithm_specs", "get_constraint": "engine.constraints",
           "make_problem": "engine.synthetic", "LOSSES": "engine.losses", "get_loss": "engine.losses", "Neighbour": "engine.neighbours",
           "log_checkpoints": "engine.twin_runs", "run_twin": "engine.twin_runs",
           "judge": "analyses.judge", "overlay_figure": "analyses.judge"}

__all__ = sorted(_PUBLIC) + ["__version__"]


def __getattr__(name: str):
    """A public name (``_PUBLIC``), or a submodule not imported yet (``stabsim.engine.twin_runs`` after a bare
    ``import stabsim``), imported now."""
    from importlib import import_module

    if name in _PUBLIC:
        value = getattr(import_module(f".{_PUBLIC[name]}", __name__), name)
        globals()[name] = value
        return value
    if name.startswith("__"):   # (probes such as __wrapped__ are not submodules)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        return import_module(f".{name}", __name__)
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":   # a submodule's own missing import
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
