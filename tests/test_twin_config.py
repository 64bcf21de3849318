"""``stabsim.kernels.twin_config.TwinConfig``: the twin kernel's configuration, by name, checked
once, and turned into the compiled kernel's positional arguments with the types it was compiled
for (the recorded warm-up signature of ``_twin_kernel``)."""

import numpy as np
import pytest
from numba import typeof

from stabsim.compile import warmup
from stabsim.kernels.twin_config import KERNEL_ARGS, SHARED_ARRAYS, TwinConfig, kernel_arg
from stabsim.kernels.twin_steps import ALL_PREV, LAST_ITERATE, NOISE_INDEPENDENT, NOISE_NONE, NOISE_SHARED, PREVIOUS


def config(**kw):
    base = dict(schedule=PREVIOUS, T=10, etas=np.full(11, 0.1), form=0, phi=0, q=2.0, ckind=1, radius=1.0, md=0,
                lag=2, omegas=np.full(11, 0.1), checkpoints=np.array([1, 5, 10]))
    return TwinConfig(**{**base, **kw})


def arrays(p=3, R=2):
    """X, Y, kidx, krows, reps, seed, W0, rec, outs, stop of R replicates."""
    return (np.zeros((1, 20 + R, p)), np.ones((1, 20 + R)), np.zeros(R, np.int64), 20 + np.arange(R), np.arange(R), 7,
            np.zeros((R, p)), np.zeros((R, 3, 5)), np.zeros((1, 1, 2, 1)), np.zeros(1, np.int64))


def args(c, **kw):
    return c.kernel_args(*arrays(), **kw)


def test_the_arguments_are_named_and_in_the_kernels_order():
    c = config(buffer=1, sequential=True, sigma=0.5, independent_noise=True, record_outputs=True,
               w_ref=np.array([1.0, 2.0, 3.0]))
    a = args(c)
    assert len(a) == len(KERNEL_ARGS) == 31
    expect = {"seed": 7, "schedule": PREVIOUS, "s": 1, "seq": 1, "form": 0, "phi": 0, "q": 2.0, "ckind": 1,
              "radius": 1.0, "md": 0, "T": 10, "es": 1, "os_": 1, "lag": 2, "noise": NOISE_INDEPENDENT,
              "sigma": 0.5, "has_ref": True, "rec_out": True}
    for name, value in expect.items():
        assert kernel_arg(a, name) == value, name
    for name, field in (("etas", "etas"), ("omegas", "omegas"), ("ckpts", "checkpoints"), ("wref", "w_ref")):
        assert kernel_arg(a, name) is getattr(c, field)
    # a GPU call hands device copies of the shared arrays in their place
    swapped = args(c, arrays={name: name for name in SHARED_ARRAYS})
    assert all(kernel_arg(swapped, name) == name for name in SHARED_ARRAYS)


def test_the_types_are_those_the_kernel_was_compiled_for():
    """The scalar arguments have the numba types of the suite's recorded ``_twin_kernel``
    signature (after the replicate's address), so no call compiles the kernel again."""
    recorded = [sig for m, n, sigs in warmup.load_signatures() for sig in sigs
                if (m, n) == ("stabsim.kernels.twin", "_twin_kernel")]
    if not recorded:
        pytest.skip("no recorded signature of the twin kernel")
    got = [typeof(v) for v in args(config(w_ref=None))]
    for name in ("seed", "schedule", "s", "seq", "form", "phi", "q", "ckind", "radius", "md", "T", "es", "os_",
                 "lag", "noise", "sigma", "has_ref", "rec_out", "wref"):
        i = KERNEL_ARGS.index(name)
        assert got[i] == recorded[0][1 + i], (name, got[i], recorded[0][1 + i])


def test_derived_fields():
    assert config().noise == NOISE_NONE and config(sigma=0.1).noise == NOISE_SHARED
    assert config(sigma=0.1, independent_noise=True).noise == NOISE_INDEPENDENT
    assert config(independent_noise=True).noise == NOISE_NONE
    c = config()
    assert not c.has_ref and c.wref.dtype == np.float64 and c.wref.ndim == 1
    assert config(T=None).T == 10
    assert config(etas=np.array([0.1]), eta_stride=0, omegas=np.ones(1), omega_stride=0, T=1000).T == 1000
    assert isinstance(config(sequential=1).sequential, bool) and isinstance(config(q=2).q, float)


@pytest.mark.parametrize("kw, match", [
    (dict(schedule=5), "schedule"),
    (dict(buffer=0), "buffer"),
    (dict(form=9), "form"),
    (dict(phi=-1), "phi"),
    (dict(ckind=7), "ckind"),
    (dict(md=-1), "md"),
    (dict(lag=3), "lag"),
    (dict(sigma=-1.0), "sigma"),
    (dict(sigma=float("inf")), "sigma"),
    (dict(q=float("nan")), "q and radius"),
    (dict(T=0, checkpoints=np.array([], dtype=np.int64)), "T must be"),
    (dict(T=20), "etas"),
    (dict(eta_stride=2), "etas"),
    (dict(omegas=np.ones(3)), "omegas"),
    (dict(checkpoints=np.array([0, 5])), "checkpoints"),
    (dict(checkpoints=np.array([5, 3])), "checkpoints"),
    (dict(checkpoints=np.array([11])), "checkpoints"),
    (dict(checkpoints=np.array([1.0, 2.0])), "checkpoints"),
    (dict(w_ref=np.zeros((2, 2))), "w_ref"),
])
def test_a_bad_configuration_is_refused_when_built(kw, match):
    with pytest.raises(ValueError, match=match):
        config(**kw)


def test_keyword_arguments_only_and_frozen():
    with pytest.raises(TypeError):
        TwinConfig(ALL_PREV)   # the schedule by position
    c = config(lag=LAST_ITERATE)
    with pytest.raises(AttributeError):
        c.lag = 2
