"""A fast kind's first call, when its general replicate is compiled neither in this process nor in
numba's on-disk cache, runs a build specialised to the call's configuration
(``stabsim.kernels.twin.replicate_address``, issue #17 item 1): it must give the general build's
numbers bit for bit, and a compiled general build must be used whenever there is one."""

import numpy as np
import pytest

from stabsim import compile_beside, rng, run_twin, warmup
from stabsim.kernels import native_call, twin

RECORDED = ("dist_iterate", "dist_output", "loss_path", "loss_ref_path", "eta2_loss_path")

#: (id, run_twin keywords, kernel kind): each fast kind, with the codes a specialisation fixes
#: varied between them (loss form, constraint, noise mode, output lag, reference point, outputs)
CASES = [
    ("p1_alg1-hinge-l2", dict(algorithm="p1_alg1", loss="auc_hinge", constraint="l2:0.5"), twin.FAST_PREVIOUS),
    ("sgd_pair-noise-ref-outputs", dict(algorithm="sgd_pair", loss="auc_logistic", sigma=0.3, record_outputs=True,
                                        w_ref=np.array([0.1, -0.2, 0.3])), twin.FAST_PAIR),
    ("p4_alg1-independent-noise", dict(algorithm="p4_alg1", loss="point_logistic", sigma=0.5, constraint="l2:2",
                                       independent_noise=True), twin.FAST_POINT),
]


def _run(kw):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((24, 3))
    y = np.where(rng.random(24) < 0.5, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    return run_twin(X, y, replicates=5, T=200, seed=7, eta=0.05, neighbour="flip", progress=False, **kw)


def _fresh_lookups(monkeypatch):
    """Forget which replicate this process resolved for which call (no helper process either)."""
    monkeypatch.setattr(twin, "_CHOSEN", {})
    monkeypatch.setattr(native_call, "_ADDRESSES", {})
    monkeypatch.setenv("STABSIM_NO_WARMUP", "1")


@pytest.mark.parametrize("case, kind", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_cold_start_runs_the_specialised_build_with_the_same_numbers(case, kind, monkeypatch):
    general = _run(case)          # the general build (compiled by the test session's warm-up)
    _fresh_lookups(monkeypatch)
    real_cached = compile_beside.cached
    monkeypatch.setattr(compile_beside, "cached",   # as on a fresh install: no general build anywhere
                        lambda disp, sig: False if disp in twin._CPU_REPLICATES else real_cached(disp, sig))
    built = []
    real_specialised = twin._specialised
    monkeypatch.setattr(twin, "_specialised", lambda k, spec: built.append((k, spec)) or real_specialised(k, spec))
    cold = _run(case)
    assert built and all(k == kind and len(spec) == 7 and spec[6] == 3 for k, spec in built), built
    for name in RECORDED + (("output",) if "output" in general else ()):
        np.testing.assert_array_equal(cold[name].values.view(np.int64), general[name].values.view(np.int64),
                                      err_msg=name)


def test_a_compiled_general_build_is_used(monkeypatch):
    _fresh_lookups(monkeypatch)
    monkeypatch.setattr(twin, "_specialised", lambda k, spec: pytest.fail("specialised a warm kind"))
    case = CASES[0][1]
    _run(case)
    _fresh_lookups(monkeypatch)
    monkeypatch.setattr(twin, "SPECIALISE_COLD", False)   # (the warm-up's recording) never specialises
    monkeypatch.setattr(compile_beside, "cached", lambda disp, sig: False)
    _run(case)


def test_a_call_waits_for_the_general_build_a_helper_is_compiling(monkeypatch):
    """Once a cold call has handed a kind's general build to a helper, a call of another
    configuration of that kind waits for it instead of compiling a second specialised build."""
    _fresh_lookups(monkeypatch)
    helper = object()
    waited = []
    monkeypatch.setattr(compile_beside, "pending",
                        lambda module, name, sig: helper if name == f"_CPU_REPLICATES[{twin.FAST_PREVIOUS}]" else None)
    monkeypatch.setattr(compile_beside, "finish", lambda h, timeout=None: h is None or waited.append(h) or True)
    monkeypatch.setattr(twin, "_specialised", lambda k, spec: pytest.fail("specialised while the general build comes"))
    _run(CASES[0][1])
    assert waited == [helper]


def test_the_warm_up_records_the_general_builds(monkeypatch, tmp_path):
    """``python -m stabsim.warmup --used-by`` / ``--record`` run studies to record the kernels they
    use; a cold start there would record specialised builds the warm-up cannot name, and no
    compiled data filler at all."""
    seen = []
    monkeypatch.setattr("stabsim.cli.main", lambda argv: seen.append((twin.SPECIALISE_COLD, rng.PYTHON_FILL_MAX)) or 0)
    monkeypatch.setattr(twin, "SPECIALISE_COLD", True)
    monkeypatch.setattr(rng, "PYTHON_FILL_MAX", rng.PYTHON_FILL_MAX)
    assert warmup._main(["--used-by", "p1_thm4_gen", "--into", str(tmp_path / "used.pkl")]) == 0
    assert seen == [(False, 0)]
