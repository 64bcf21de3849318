"""Where the twin kernels run: ``"cpu"`` (numba, parallel over replicates), ``"cuda"``
(numba-cuda, one GPU thread per replicate: ``stabsim.kernels.twin_cuda``) or ``"auto"``
(the GPU when one is usable, else the CPU with a warning).

``run_twin(backend=...)`` takes a name; ``backend=None`` uses the thread's default, which
``use_backend`` sets for a block (the study engine sets it from ``[run] backend`` or
``stabsim run --backend``).  ``resolve_backend`` turns a name into ``"cpu"`` or ``"cuda"``, and
raises ``BackendError`` when CUDA is asked for but cannot run, saying which part is missing:
the ``numba.cuda`` module (``pip install 'stabsim[cuda]'`` brings ``numba-cuda``), or a GPU with
its driver.  ``import stabsim`` never imports ``numba.cuda``.

Both backends draw the same indices and normals for every replicate (the counter generator of
``stabsim.engine.rng`` is a pure function of (seed, replicate, counter)); the numbers agree to
rounding, not bit for bit: the GPU's ``log``, ``cos`` and ``sqrt`` (in the Gaussian draws and the
projections) and NVVM's fused multiply-adds round differently from the CPU's (docs/gpu.md).
"""

from __future__ import annotations

import contextlib
import threading
import warnings

BACKENDS = ("cpu", "cuda", "auto")


class BackendError(RuntimeError):
    """A backend was asked for that cannot run here (the message says what is missing)."""


_DEFAULT = threading.local()


@contextlib.contextmanager
def thread_default(local: threading.local, value):
    """Within the block, ``local.value`` is ``value`` in this thread (restored after)."""
    old = getattr(local, "value", None)
    local.value = value
    try:
        yield
    finally:
        local.value = old


def use_backend(name):
    """Within the block (this thread), ``run_twin(backend=None)`` runs on ``name``."""
    return thread_default(_DEFAULT, check_backend_name(name))


def default_backend() -> str:
    """The backend ``run_twin(backend=None)`` uses in this thread (``"cpu"`` unless ``use_backend``)."""
    return getattr(_DEFAULT, "value", None) or "cpu"


def check_backend_name(name) -> str:
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {name!r}")
    return name


def cuda_module():
    """``numba.cuda``, imported on first use.

    numba-cuda 0.30 calls ``np.row_stack``, which NumPy 2.5 removed (it was an alias of
    ``np.vstack``); the alias is restored, only when missing, before the import.  Raises
    ``BackendError`` when the module cannot be imported."""
    import numpy as np

    if not hasattr(np, "row_stack"):  # numba-cuda 0.30.x with NumPy >= 2.5
        np.row_stack = np.vstack
    try:
        from numba import cuda
    except Exception as e:  # ImportError, or a broken CUDA toolkit found at import
        raise BackendError(f"backend 'cuda' needs numba's CUDA target, which failed to import ({e}); "
                           "install it with: pip install 'stabsim[cuda]' (numba-cuda)") from None
    return cuda


def cuda_unavailable_reason() -> str | None:
    """None when a CUDA GPU can run the kernels (or numba's CUDA simulator is on), else why not."""
    try:
        cuda = cuda_module()
    except BackendError as e:
        return str(e)
    if simulator_enabled():
        return None
    try:
        ok = cuda.is_available()
    except Exception as e:  # a driver that fails to initialise
        return f"backend 'cuda': the CUDA driver failed to initialise ({e})"
    if not ok:
        return ("backend 'cuda': numba.cuda is installed but finds no usable GPU (no NVIDIA driver, "
                "no device, or CUDA_VISIBLE_DEVICES hides them); use backend='cpu'")
    return None


def simulator_enabled() -> bool:
    """Whether numba's CUDA simulator is on (``NUMBA_ENABLE_CUDASIM=1``: the kernels run as
    Python on the CPU, slowly; the tests use it on machines with no GPU)."""
    from numba.core import config

    return bool(config.ENABLE_CUDASIM)


def resolve_backend(name=None) -> str:
    """``"cpu"`` or ``"cuda"`` for a backend name (None: the thread's default).

    ``"cuda"`` raises ``BackendError`` when it cannot run; ``"auto"`` then falls back to the
    CPU with a ``RuntimeWarning`` that says why."""
    name = check_backend_name(default_backend() if name is None else name)
    if name == "cpu":
        return "cpu"
    reason = cuda_unavailable_reason()
    if reason is None:
        return "cuda"
    if name == "cuda":
        raise BackendError(reason)
    warnings.warn(f"backend 'auto' runs on the CPU: {reason}", RuntimeWarning, stacklevel=3)
    return "cpu"


def device_description() -> str:
    """What ran a CUDA kernel, for the provenance: the GPU's name and compute capability (or
    the simulator)."""
    if simulator_enabled():
        return "numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1, on the CPU)"
    cuda = cuda_module()
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    cc = ".".join(map(str, dev.compute_capability))
    return f"{name} (compute capability {cc})"
