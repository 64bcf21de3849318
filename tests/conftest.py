import os
import sys

# The GPU backend's tests run in numba's CUDA simulator unless STABSIM_TEST_GPU=1 asks for the
# real GPU (docs/gpu.md); numba reads this when numba.cuda is first imported.
if os.environ.get("STABSIM_TEST_GPU") != "1":
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import matplotlib  # noqa: E402
import pytest  # noqa: E402

matplotlib.use("Agg")
sys.path.insert(0, os.path.dirname(__file__))  # tests/naive.py, tests/naive_private.py

from hypothesis import settings  # noqa: E402

settings.register_profile("stabsim", deadline=None, print_blob=True)
settings.load_profile("stabsim")


def pytest_sessionstart(session):
    """Compile the kernels the suite records on every core first (stabsim.compile.warmup: once per source
    version; the tests then load most of what they compile from numba's on-disk cache), with BLAS
    on one thread as in `stabsim run`."""
    from stabsim.runtime.thread_pools import configure_thread_pools
    from stabsim.compile.warmup import warm

    configure_thread_pools()   # as `stabsim run` does (stabsim.runtime.thread_pools)
    warm()


@pytest.hookimpl(trylast=True)   # after -k / -m have deselected
def pytest_collection_modifyitems(session, config, items):
    """Start the child processes that collected tests will wait for (tests/early_children.py);
    not in a pytest-xdist worker, where every worker collects every test (the tests start them)."""
    import early_children

    if hasattr(config, "workerinput"):
        return
    for module in {item.module for item in items if hasattr(item, "module")}:
        early_children.start_for(module)


def pytest_sessionfinish(session, exitstatus):
    import early_children

    early_children.stop_all()
