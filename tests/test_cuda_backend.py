"""The CUDA backend against the CPU kernel, every kernel kind.

On a machine with no GPU (CI) these run in numba's CUDA simulator (tests/conftest.py sets
NUMBA_ENABLE_CUDASIM=1): the launch, the chunking over replicates, the scratch layout and the
copies between host and device are exercised, and the replicate body runs as the CPU-compiled
function, so the numbers must be *identical* to the CPU backend's.  With STABSIM_TEST_GPU=1 on a
machine with a GPU the same tests run on the device, where the numbers agree to GPU_RTOL
(docs/gpu.md: the GPU's log/cos/sqrt and NVVM's fused multiply-adds round differently).

``test_every_kind_compiles_for_the_gpu`` compiles each kind to PTX for sm_90 with NVVM, without a
GPU, when numba-cuda and its toolkit wheels are installed (``pip install 'stabsim[cuda]'``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
import warnings
from pathlib import Path

import early_children
import numpy as np
import pytest

import stabsim.engine.backend as backend
from stabsim.engine.backend import BackendError, resolve_backend
from stabsim.kernels.twin import FAST_PAIR, FAST_POINT, FAST_PREVIOUS, GENERAL, kernel_kind
from stabsim.engine.algorithm_specs import get_algorithm
from stabsim.engine.losses import get_loss
from stabsim.engine.twin_runs import run_twin

ON_GPU = os.environ.get("STABSIM_TEST_GPU") == "1"
#: real GPU: relative agreement of every recorded number (rounding differences, docs/gpu.md)
GPU_RTOL = 1e-10
RECORDED = ("dist_iterate", "dist_output", "loss_path", "loss_ref_path", "eta2_loss_path")


def _data(n=24, d=3, seed=0, per_replicate=None):
    rng = np.random.default_rng(seed)
    shape = (n, d) if per_replicate is None else (per_replicate, n, d)
    X = rng.standard_normal(shape)
    y = np.where(rng.random(shape[:-1]) < 0.5, 1.0, -1.0)
    y[..., 0], y[..., 1] = 1.0, -1.0   # both classes in every data set
    return X, y


#: (id, run_twin keywords): every kernel kind, schedule, output rule, noise mode, constraint kind
CASES = [
    ("p1_alg1-hinge-l2", dict(algorithm="p1_alg1", loss="auc_hinge", constraint="l2:0.5")),
    ("p1_alg2-online", dict(algorithm="p1_alg2", loss="auc_logistic", T=20)),
    ("sgd_pair-logistic-ref", dict(algorithm="sgd_pair", loss="auc_logistic", w_ref=np.array([0.1, -0.2, 0.3]))),
    ("sgd_pair-ranking-noise", dict(algorithm="sgd_pair", loss="ranking_logistic", sigma=0.3)),
    ("p4_alg1-shared-noise", dict(algorithm="p4_alg1", loss="point_logistic", sigma=0.5, constraint="l2:2")),
    ("p4_alg2-independent-noise", dict(algorithm="p4_alg2", loss="auc_squared", sigma=0.5, independent_noise=True)),
    ("p1_buffer-s3", dict(algorithm="p1_buffer", buffer=3, loss="auc_squared")),
    ("p0_alg1-all-previous-stats", dict(algorithm="p0_alg1", loss="auc_squared", constraint="l2:1", T=12)),
    ("p0_alg1-all-previous-hinge", dict(algorithm="p0_alg1", loss="auc_hinge", T=12)),
    ("p2_alg1-full-batch", dict(algorithm="p2_alg1", loss="auc_hinge", sigma=0.2, T=10)),
    ("metric-psd", dict(algorithm="sgd_pair", loss="metric_hinge", constraint="psd")),
    ("metric-frobenius", dict(algorithm="sgd_pair", loss="metric_logistic", constraint="frobenius:1")),
    ("outputs-recorded", dict(algorithm="p1_alg1", loss="auc_hinge", record_outputs=True, w0="random")),
    ("per-replicate-data", dict(algorithm="sgd_pair", loss="auc_hinge", per_replicate=True)),
]


def _run(kw, backend_name, R=5):
    kw = dict(kw)
    per = kw.pop("per_replicate", False)
    X, y = _data(per_replicate=R if per else None)
    kw.setdefault("T", 30)
    return run_twin(X, y, replicates=R, seed=7, eta=0.05, neighbour="flip", progress=False,
                    backend=backend_name, **kw)


def _assert_agree(cpu, gpu):
    assert np.array_equal(cpu["k"].values, gpu["k"].values)   # the same neighbours
    names = RECORDED + (("output",) if "output" in cpu else ())
    for name in names:
        a, b = cpu[name].values, gpu[name].values
        if ON_GPU:
            np.testing.assert_allclose(b, a, rtol=GPU_RTOL, atol=GPU_RTOL * np.nanmax(np.abs(a)), err_msg=name)
        else:
            np.testing.assert_array_equal(b, a, err_msg=name)


@pytest.mark.parametrize("case", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_cuda_backend_agrees_with_the_cpu(case):
    cpu = _run(case, "cpu")
    gpu = _run(case, "cuda")
    _assert_agree(cpu, gpu)
    assert gpu.attrs["backend"] == "cuda" and cpu.attrs["backend"] == "cpu"
    assert gpu.attrs["device"] != "cpu"


#: (run_twin keywords, length of the specialisation): a fast kind with per-thread iterates, noise
#: and recorded outputs; the general kind (no per-thread iterates)
SPECIALISED = {"p4_alg1-noise-outputs": (dict(algorithm="p4_alg1", loss="point_logistic", sigma=0.5,
                                              constraint="l2:2", record_outputs=True), 7),
               "p1_buffer-s3": (dict(CASES)["p1_buffer-s3"], 6)}


#: a fast kind's configuration built with per-thread iterates (``test_per_thread_iterates...``)
PER_THREAD = dict(algorithm="p4_alg1", loss="point_logistic", sigma=0.5, constraint="l2:2")   # p = d = 3


def compile_specialised_builds():
    """The early child's work: run the specialised builds the tests below run, so that numba's
    on-disk cache holds their CPU compilations (the simulator runs the CPU-compiled replicate)."""
    import stabsim.kernels.twin_cuda as tc

    tc.SPECIALIZE = True
    for case, _ in SPECIALISED.values():
        _run(case, "cuda")
    _run(PER_THREAD, "cuda", R=6)


#: In the simulator each specialised build is a CPU compilation of about 10-40 s from an empty
#: cache: a child started with the session (tests/early_children.py) compiles them into the
#: session's cache on the otherwise idle core, and the tests that run them wait for it.  Not on a
#: GPU, where the builds are compiled for the device in each process.
EARLY_CHILDREN = () if ON_GPU else ("specialised",)


def early_child(key, folder):
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); " \
           "import test_cuda_backend; test_cuda_backend.compile_specialised_builds()"
    return [sys.executable, "-c", code], {**os.environ, "STABSIM_NO_WARMUP": "1"}


@pytest.fixture(scope="module")
def specialised_builds_cached(tmp_path_factory):
    """The early child has compiled the specialised builds into numba's cache (or failed: then
    its error is this fixture's)."""
    if EARLY_CHILDREN:
        done, _ = early_children.results(sys.modules[__name__], tmp_path_factory.mktemp("early"))
        assert done["specialised"].returncode == 0, done["specialised"].stderr[-3000:]


@pytest.mark.usefixtures("specialised_builds_cached")
@pytest.mark.parametrize("case_id", sorted(SPECIALISED))
def test_a_specialised_build_gives_the_same_numbers(case_id, monkeypatch):
    """``twin_cuda.SPECIALIZE``: the loss form, constraint, noise mode and output rule become
    compile-time constants of the kernel, and on a fast kind (p = d <= ``LOCAL_MAX_P``) the
    dimension too, with the iterates in per-thread arrays (a seventh constant); the numbers must
    not change (in the simulator the specialised replicate is compiled for the CPU, so they
    must be identical there)."""
    import stabsim.kernels.twin_cuda as tc

    case, length = SPECIALISED[case_id]
    monkeypatch.setattr(tc, "SPECIALIZE", True)
    calls = []
    real = tc.cuda_kernel
    monkeypatch.setattr(tc, "cuda_kernel", lambda kind, spec=None: calls.append(spec) or real(kind, spec))
    _assert_agree(_run(case, "cpu"), _run(case, "cuda"))
    assert calls and all(spec is not None and len(spec) == length for spec in calls)
    if length == 7:
        assert all(spec[6] == 3 for spec in calls)   # p = d = 3 (``_data``)


def test_short_calls_take_the_general_build_and_long_ones_the_specialised(monkeypatch):
    """``SPECIALIZE = None`` on a GPU: a call of at least ``SPECIALIZE_MIN_STEPS`` replicate-steps
    gets the specialised build (a compilation per configuration), a shorter one the general build
    of its kind; ``True``/``False`` decide alone; numba's simulator never specialises by itself."""
    import stabsim.kernels.twin_cuda as tc

    monkeypatch.setattr(tc, "simulator_enabled", lambda: False)   # as on a GPU
    monkeypatch.setattr(tc, "SPECIALIZE", None)
    m, g = tc.SPECIALIZE_MIN_STEPS, tc.SPECIALIZE_MIN_STEPS_GLOBAL
    assert tc.specialised_build(m // 1000, 1000) and tc.specialised_build(1, m)
    assert not tc.specialised_build(m // 1000 - 1, 1000) and not tc.specialised_build(65536, 20000)
    assert not tc.specialised_build(m, 1, local=False) and tc.specialised_build(g, 1, local=False)
    monkeypatch.setattr(tc, "SPECIALIZE", True)
    assert tc.specialised_build(1, 1)
    monkeypatch.setattr(tc, "SPECIALIZE", False)
    assert not tc.specialised_build(m, m)
    monkeypatch.setattr(tc, "SPECIALIZE", None)
    monkeypatch.setattr(tc, "simulator_enabled", lambda: True)
    assert not tc.specialised_build(m, m)


def test_the_low_occupancy_warning_of_small_launches_is_not_shown(monkeypatch):
    """numba-cuda warns at every launch of few blocks ("Grid size 1 will likely result in GPU
    under-utilization", on a GPU in every audit's small calls): run_twin keeps it out of the
    user's output; the numbers are the kernel's own (here the launch is wrapped to warn like that)."""
    import warnings

    import stabsim.kernels.twin_cuda as tc

    real = tc.cuda_kernel

    class Warns:   # a kernel that warns at launch as numba-cuda does, then runs
        def __init__(self, kernel):
            self.kernel = kernel

        def __getitem__(self, config):
            def launch(*args):
                warnings.warn("\x1b[1mGrid size 1 will likely result in GPU under-utilization due to low "
                              "occupancy.\x1b[0m", RuntimeWarning)
                return self.kernel[config](*args)
            return launch

    kw = dict(algorithm="p1_alg1", loss="auc_hinge", constraint="l2:0.5")
    plain = _run(kw, "cuda")
    monkeypatch.setattr(tc, "cuda_kernel", lambda kind, spec=None: Warns(real(kind, spec)))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        wrapped = _run(kw, "cuda")
    assert not [w for w in seen if "Grid size" in str(w.message)]
    np.testing.assert_array_equal(wrapped["dist_iterate"].values, plain["dist_iterate"].values)


def test_the_cases_cover_every_kernel_kind():
    kinds = set()
    for _id, kw in CASES:
        alg = get_algorithm(kw["algorithm"], buffer=kw.get("buffer"))
        kinds.add(kernel_kind(alg.schedule, alg.buffer, get_loss(kw["loss"]).form))
    assert kinds == {FAST_PREVIOUS, FAST_PAIR, FAST_POINT, GENERAL}


def test_chunks_of_replicates_give_the_same_numbers(monkeypatch):
    import stabsim.kernels.twin_cuda as tc

    kw = dict(algorithm="p4_alg1", loss="point_logistic", sigma=0.5)
    whole = _run(kw, "cuda", R=7)
    monkeypatch.setattr(tc, "SIMULATOR_CHUNK", 3)
    monkeypatch.setattr(tc, "max_chunk", lambda per: 3)   # the same on a real GPU
    chunked = _run(kw, "cuda", R=7)
    for name in RECORDED:
        np.testing.assert_array_equal(chunked[name].values, whole[name].values)
    _assert_agree(_run(kw, "cpu", R=7), chunked)


def test_unknown_backend_names_are_refused():
    X, y = _data()
    with pytest.raises(ValueError, match="backend must be one of 'cpu', 'cuda', 'auto'"):
        run_twin(X, y, T=5, replicates=2, backend="gpu")


def test_cuda_without_a_gpu_says_what_is_missing(monkeypatch):
    monkeypatch.setattr(backend, "cuda_unavailable_reason", lambda: "backend 'cuda': no usable GPU (test)")
    X, y = _data()
    with pytest.raises(BackendError, match="no usable GPU"):
        run_twin(X, y, T=5, replicates=2, backend="cuda")
    with pytest.warns(RuntimeWarning, match="backend 'auto' runs on the CPU: .*no usable GPU"):
        ds = run_twin(X, y, T=5, replicates=2, backend="auto", progress=False)
    assert ds.attrs["backend"] == "cpu"


def test_missing_numba_cuda_is_reported_with_the_install_command(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_cuda(name, globals=None, locals=None, fromlist=(), level=0):
        if name == "numba" and fromlist and "cuda" in fromlist:
            raise ImportError("No module named 'numba.cuda'")
        return real_import(name, globals, locals, fromlist, level)

    monkeypatch.setattr(builtins, "__import__", no_cuda)
    reason = backend.cuda_unavailable_reason()
    assert "pip install 'stabsim[cuda]'" in reason
    with pytest.raises(BackendError, match="numba-cuda"):
        resolve_backend("cuda")


def test_use_backend_sets_the_default_for_run_twin():
    X, y = _data()
    with backend.use_backend("cuda"):
        assert resolve_backend() == "cuda"
        ds = run_twin(X, y, T=5, replicates=2, progress=False)
    assert ds.attrs["backend"] == "cuda"
    assert resolve_backend() == "cpu"


def test_import_stabsim_does_not_import_numba_cuda():
    code = "import sys, stabsim, stabsim.engine.twin_runs, stabsim.study; print('numba.cuda' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"


def _nvvm_available():
    try:
        from numba.cuda.cudadrv import nvvm

        nvvm.NVVM()
    except Exception:
        return False
    return True


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and "STABSIM_TEST_PTX" not in os.environ,
                    reason="PTX check: run with STABSIM_TEST_PTX=1 and NUMBA_ENABLE_CUDASIM=0 where numba-cuda "
                           "and its NVVM are installed (pip install 'stabsim[cuda]'); no GPU needed")
def test_every_kind_compiles_for_the_gpu(monkeypatch):
    """Compile every kernel kind to PTX for compute capability 9.0 with NVVM, with no GPU: the
    device functions the kernels call (the replicate body, losses, projections, the generator)
    are typed and lowered by the CUDA target, the check the simulator cannot make."""
    if not _nvvm_available():
        pytest.skip("numba-cuda with NVVM is not installed")
    import numba
    import numba.cuda.dispatcher as cuda_dispatcher
    from numba import cuda

    import stabsim.kernels.twin_cuda as tc
    import stabsim.engine.twin_runs as st

    # no driver: device functions are compiled for a stated compute capability, arrays stay on the host
    monkeypatch.setattr(cuda_dispatcher, "get_current_device", lambda: types.SimpleNamespace(compute_capability=(9, 0)))
    class HostArray(np.ndarray):
        def copy_to_host(self):
            return np.asarray(self)

    monkeypatch.setattr(tc.cuda, "to_device", lambda a: np.array(a).view(HostArray))
    monkeypatch.setattr(tc.cuda, "device_array", lambda shape, dtype=np.float64: np.zeros(shape, dtype).view(HostArray))
    monkeypatch.setattr(tc, "max_chunk", lambda per: 64)
    monkeypatch.setattr(st, "resolve_backend", lambda name=None: "cuda")
    monkeypatch.setattr(st, "device_description", lambda: "offline")
    launched = {}
    build = tc.cuda_kernel.__wrapped__

    class Capture:
        def __init__(self, kind, spec=None):
            self.kernel = build(kind, spec)
            self.key = (kind, spec)

        def __getitem__(self, config):
            def launch(*args):
                launched[self.key] = (self.kernel, args)
            return launch

    monkeypatch.setattr(tc, "cuda_kernel", Capture)
    # both builds a GPU call can get (``SPECIALIZE``): the general one of each kind (short calls)
    # and the specialised ones, the fast kinds' with per-thread iterates (long calls)
    for specialize in (False, True):
        monkeypatch.setattr(tc, "SPECIALIZE", specialize)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _id, kw in CASES:
                _run(kw, "cuda")
    every_kind = {FAST_PREVIOUS, FAST_PAIR, FAST_POINT, GENERAL}
    assert {kind for kind, spec in launched if spec is None} == every_kind
    specialised = [(kind, spec) for kind, spec in launched if spec is not None]
    assert {kind for kind, _ in specialised} == every_kind
    assert all(len(spec) == (6 if kind == GENERAL else 7) for kind, spec in specialised)
    for (kind, _spec), (kernel, args) in launched.items():
        ptx, _ = cuda.compile_ptx(kernel.py_func, tuple(numba.typeof(a) for a in args), cc=(9, 0))
        assert ".visible .entry" in ptx


def test_arrays_reach_the_device_with_canonical_strides(monkeypatch):
    """NumPy gives the shared data set, (1, rows, d), the stride 0 on its first axis; numba-cuda
    takes a stride-0 axis for a broadcast one, so its ``to_device`` would walk the array element by
    element in Python (many times the kernel's own time; benchmarks/README.md, "GPU") and the kernel
    would be typed for a non-contiguous array.  Every array the call sends must have NumPy's canonical
    C strides."""
    import stabsim.kernels.twin_cuda as tc

    sent = []
    real = tc.cuda.to_device
    monkeypatch.setattr(tc.cuda, "to_device", lambda a, *k, **kw: sent.append(np.asarray(a)) or real(a, *k, **kw))
    X, _y = _data()
    assert 0 in np.ascontiguousarray(X[None]).strides   # what NumPy does (the case guarded here)
    _run(CASES[0][1], "cuda")
    assert any(a.ndim == 3 and a.shape[0] == 1 for a in sent)   # the shared data set was among them
    for a in sent:
        assert a.flags.c_contiguous and (a.size == 0 or 0 not in a.strides), (a.shape, a.strides)


@pytest.mark.usefixtures("specialised_builds_cached")
def test_per_thread_iterates_allocate_no_global_iterates(monkeypatch):
    """A build with per-thread iterates keeps W, g, acc, nz, dx and the norms in per-thread
    arrays: their global scratch gets room for one replicate (for the kernel's argument types),
    not for R, and the chunk size counts only what the build uses; the numbers stay the CPU's."""
    import stabsim.kernels.twin_cuda as tc

    shapes = []
    real = tc.cuda.device_array
    monkeypatch.setattr(tc.cuda, "device_array", lambda shape, dtype=np.float64: shapes.append(shape) or real(shape, dtype))
    monkeypatch.setattr(tc, "SPECIALIZE", True)
    gpu, cpu = _run(PER_THREAD, "cuda", R=6), _run(PER_THREAD, "cpu", R=6)
    _assert_agree(cpu, gpu)
    assert (2, 2, 3, 1) in shapes and (2, 2, 3, 6) not in shapes   # W: room for one replicate
    assert (2, 3, 1) in shapes and (2, 1) in shapes                   # g, acc, nz; the norms
    assert any(len(sh) == 2 and sh[-1] == 6 for sh in shapes)        # the index history: one per replicate
    args = (3, 3, 1, 3, 0, 0, 1, False, 1, 24)
    assert tc.bytes_per_replicate(*args, local=True) < tc.bytes_per_replicate(*args)


def test_private_algorithms_follow_the_backend(monkeypatch):
    """P1 Alg. 3 runs its phases through the twin kernel itself (not run_twin): under
    ``use_backend("cuda")`` they must run on the GPU kernel too, with the CPU's numbers."""
    import stabsim.kernels.twin_cuda as tc
    import stabsim.privacy.algorithms as pa

    X, y = _data(n=16)
    cfg = pa.P1Alg3Config(eps=1.0, delta=0.1, eta=0.5, loss="auc_logistic", constraint=("l2", 1.0), G=1.5)
    cpu = pa.p1_alg3(X, y, cfg, replicates=3, seed=5, neighbour="flip")
    calls = []
    real = tc.twin_kernel_cuda
    monkeypatch.setattr(tc, "twin_kernel_cuda", lambda *a, **k: calls.append(1) or real(*a, **k))
    with backend.use_backend("cuda"):
        gpu = pa.p1_alg3(X, y, cfg, replicates=3, seed=5, neighbour="flip")
    assert calls, "P1 Alg. 3 did not run on the CUDA kernel"
    for name in ("dist_phase_avg", "phase_output", "w_priv", "dist_priv"):
        if ON_GPU:
            np.testing.assert_allclose(gpu[name].values, cpu[name].values, rtol=GPU_RTOL)
        else:
            np.testing.assert_array_equal(gpu[name].values, cpu[name].values)
