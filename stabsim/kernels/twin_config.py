"""The named configuration of a twin-kernel call: ``TwinConfig``.

A call of the twin kernel (``twin.twin_kernel``, or ``twin_cuda.twin_kernel_cuda`` on a GPU) is
``kernel(config, X, Y, kidx, krows, reps, seed, W0, rec, outs)``: the arrays of the replicates
(data, neighbours, replicate ids, initial points, what is recorded) and one ``TwinConfig``, which
holds everything the replicates share, by name:

============  ============================================================================
schedule      ``schedule`` (``twin_steps.PREVIOUS`` .. ``FULL_BATCH``), ``buffer`` (s of the
              FIFO buffer), ``sequential`` (the online stream), ``T`` steps, the step sizes
              ``etas`` (eta_t = etas[t * eta_stride]; stride 0: one constant)
loss form     ``form``, ``phi``, ``q`` (``stabsim.engine.losses``)
constraint    ``ckind``, ``radius`` (``stabsim.engine.constraints``), ``md`` (d for matrix
              parameters, else 0)
noise         ``sigma``, ``independent_noise`` (the noise mode ``noise`` follows from them)
output rule   ``lag`` (``twin_steps``: 2, 1, 0 or ``LAST_ITERATE``), the weights ``omegas``
              (omega_t = omegas[t * omega_stride])
recording     ``checkpoints`` (increasing steps in 1..T), ``record_outputs``, ``w_ref`` (the
              reference point of the regret path, or None)
============  ============================================================================

It is built and checked once (``TwinConfig(...)``, keyword arguments only), and turned into the
positional arguments of the compiled kernel by ``kernel_args``, whose order is ``KERNEL_ARGS``
(``kernel_arg`` reads one entry by name).  The compiled kernels take the same arguments of the
same types as before there was a configuration object: the numbers do not depend on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stabsim.engine.constraints import PSD
from stabsim.engine.losses import POINT_LSQ, QHINGE
from stabsim.kernels.twin_steps import FULL_BATCH, LAST_ITERATE, NOISE_INDEPENDENT, NOISE_NONE, NOISE_SHARED

#: the kernel's arguments after the replicate's address, in the order of the compiled signature
KERNEL_ARGS = ("X", "Y", "kidx", "krows", "reps", "seed", "schedule", "s", "seq", "form", "phi", "q", "ckind",
               "radius", "md", "T", "etas", "es", "omegas", "os_", "lag", "noise", "sigma", "has_ref", "wref",
               "W0", "ckpts", "rec", "rec_out", "outs", "stop")
_POSITION = {name: i for i, name in enumerate(KERNEL_ARGS)}
#: the arrays of a configuration that ``kernel_args`` may replace (a GPU call passes device copies)
SHARED_ARRAYS = ("etas", "omegas", "wref", "ckpts")


def kernel_arg(kernel_args, name: str):
    """The entry ``name`` (one of ``KERNEL_ARGS``) of the kernel's arguments, or of their types."""
    return kernel_args[_POSITION[name]]


@dataclass(frozen=True, kw_only=True, eq=False)
class TwinConfig:
    """What every replicate of a twin-kernel call shares (see the module docstring); checked
    when built.  ``T`` defaults to ``len(etas) - 1``."""

    # schedule
    schedule: int
    buffer: int = 1
    sequential: bool = False
    T: int | None = None
    etas: np.ndarray
    eta_stride: int = 1
    # loss form
    form: int
    phi: int = 0
    q: float = 2.0
    # constraint
    ckind: int = 0
    radius: float = math.inf
    md: int = 0
    # noise
    sigma: float = 0.0
    independent_noise: bool = False
    # output rule
    lag: int
    omegas: np.ndarray
    omega_stride: int = 1
    # recording
    checkpoints: np.ndarray
    record_outputs: bool = False
    w_ref: np.ndarray | None = None

    def __post_init__(self):
        put = _setter(self)
        for name in ("schedule", "buffer", "form", "phi", "ckind", "md", "lag", "eta_stride", "omega_stride"):
            put(name, int(getattr(self, name)))
        for name in ("q", "radius", "sigma"):
            put(name, float(getattr(self, name)))
        for name in ("sequential", "independent_noise", "record_outputs"):
            put(name, bool(getattr(self, name)))
        put("T", int(self.etas.shape[0] - 1 if self.T is None else self.T))
        _check(self)
        # the kernel reads wref only with a reference point: any float64 vector stands in for none
        object.__setattr__(self, "_wref", np.zeros(1) if self.w_ref is None else self.w_ref)

    @property
    def noise(self) -> int:
        """``NOISE_NONE`` (sigma = 0), ``NOISE_SHARED`` or ``NOISE_INDEPENDENT``."""
        if self.sigma == 0.0:
            return NOISE_NONE
        return NOISE_INDEPENDENT if self.independent_noise else NOISE_SHARED

    @property
    def has_ref(self) -> bool:
        return self.w_ref is not None

    @property
    def wref(self) -> np.ndarray:
        """The reference point the kernel is given (a placeholder without one)."""
        return self._wref

    def kernel_args(self, X, Y, kidx, krows, reps, seed, W0, rec, outs, stop, arrays=None) -> tuple:
        """The compiled kernel's arguments (``KERNEL_ARGS``) for these replicates' arrays;
        ``arrays``: replacements for the configuration's ``SHARED_ARRAYS`` (by those names)."""
        a = {"etas": self.etas, "omegas": self.omegas, "wref": self.wref, "ckpts": self.checkpoints}
        if arrays:
            a.update(arrays)
        i64 = np.int64
        return (X, Y, kidx, krows, reps, i64(seed), i64(self.schedule), i64(self.buffer), i64(self.sequential),
                i64(self.form), i64(self.phi), self.q, i64(self.ckind), self.radius, i64(self.md), i64(self.T),
                a["etas"], i64(self.eta_stride), a["omegas"], i64(self.omega_stride), i64(self.lag),
                i64(self.noise), self.sigma, self.has_ref, a["wref"], W0, a["ckpts"], rec, self.record_outputs,
                outs, stop)


def _setter(obj):
    """A setter of ``obj``'s fields for its ``__post_init__`` (the dataclass is frozen)."""
    return lambda name, value: object.__setattr__(obj, name, value)


def _check(c: TwinConfig) -> None:
    """Raise ValueError for a configuration the kernel cannot run as meant."""
    if not 0 <= c.schedule <= FULL_BATCH:
        raise ValueError(f"schedule must be a code in 0..{FULL_BATCH} (twin_steps.PREVIOUS .. FULL_BATCH), "
                         f"got {c.schedule}")
    if c.buffer < 1:
        raise ValueError(f"buffer size s must be >= 1, got {c.buffer}")
    for name, top in (("form", POINT_LSQ), ("phi", QHINGE), ("ckind", PSD)):
        if not 0 <= getattr(c, name) <= top:
            raise ValueError(f"{name} must be a code in 0..{top}, got {getattr(c, name)}")
    if c.md < 0:
        raise ValueError(f"md must be >= 0 (d for matrix parameters, else 0), got {c.md}")
    if c.lag not in (LAST_ITERATE, 0, 1, 2):
        raise ValueError(f"lag must be 2, 1, 0 or {LAST_ITERATE} (the last iterate), got {c.lag}")
    if not (c.sigma >= 0.0 and math.isfinite(c.sigma)):
        raise ValueError(f"sigma (noise level) must be finite and >= 0, got {c.sigma!r}")
    if math.isnan(c.q) or math.isnan(c.radius):
        raise ValueError(f"q and radius must be numbers, got q = {c.q!r}, radius = {c.radius!r}")
    if c.T < 1:
        raise ValueError(f"T must be >= 1, got {c.T}")
    for name, arr, st in (("etas", c.etas, c.eta_stride), ("omegas", c.omegas, c.omega_stride)):
        if arr.ndim != 1 or st not in (0, 1) or arr.shape[0] < (1 if st == 0 else c.T + 1):
            raise ValueError(f"{name}: need stride 0 (one constant) or 1 with T + 1 = {c.T + 1} entries, "
                             f"got stride {st} and {arr.shape[0]} entries")
    ck = c.checkpoints
    if ck.ndim != 1 or ck.dtype.kind not in "iu":
        raise ValueError("checkpoints must be a one-dimensional array of integer steps")
    if ck.size and (ck[0] < 1 or ck[-1] > c.T or np.any(np.diff(ck) <= 0)):
        raise ValueError(f"checkpoints must be increasing steps in [1, T={c.T}], got {ck.tolist()[:5]}...")
    if c.w_ref is not None and c.w_ref.ndim != 1:
        raise ValueError(f"w_ref must be a vector, got shape {c.w_ref.shape}")
