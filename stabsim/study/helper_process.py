"""The start of a helper process of ``stabsim run`` (the background analyses' worker, the second
lane's worker): set up like the calling process, on one numba thread, then frozen.

``prepare_helper(plugins, preload)``: Ctrl-C ignored (it is the parent's, which stops the helper),
the thread pools configured as in the calling process (``stabsim.runtime.thread_pools``), numba on one
thread (the calling process keeps the cores; no number depends on the thread count), the built-in
study kinds and checks and the run's plugins loaded, the modules in ``preload`` imported, and then
everything imported frozen out of the garbage collector's walks
(``stabsim.runtime.resources.freeze_long_lived``).  The caller lowers its priority first.
"""

from __future__ import annotations

import signal
from importlib import import_module


def ignore_interrupts() -> None:
    """Ctrl-C is the parent's: it stops this helper."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def prepare_helper(plugins=(), preload=()) -> None:
    """Everything a helper needs before its first task, then the freeze (see the module doc)."""
    import numba

    from stabsim.registry import load_builtin
    from stabsim.runtime.resources import freeze_long_lived
    from stabsim.runtime.thread_pools import configure_thread_pools

    configure_thread_pools()
    numba.set_num_threads(1)
    load_builtin()
    if plugins:
        from stabsim.registry.plugins import load_plugins

        load_plugins(list(plugins))
    for name in preload:
        import_module(name)
    freeze_long_lived()   # the collector walks only what the helper's tasks create
