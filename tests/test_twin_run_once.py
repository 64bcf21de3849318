"""P0 Alg. 2 adds its noise after the twin run: cells that differ in the noise alone (eps, the
audit's noise scale) run it once in a process, with the same results as separate runs."""

import numpy as np
import pytest
import xarray as xr

import stabsim.engine.twin_runs
from stabsim.privacy.algorithms import common, p0_alg2


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 3))
    y = np.where(np.arange(12) % 2 == 0, 1.0, -1.0)
    return X, y


@pytest.fixture
def counted(monkeypatch):
    calls = []
    real = stabsim.engine.twin_runs.run_twin
    monkeypatch.setattr(stabsim.engine.twin_runs, "run_twin", lambda *a, **k: calls.append(k.get("seed")) or real(*a, **k))
    common._LAST_TWIN_RUN.clear()
    yield calls
    common._LAST_TWIN_RUN.clear()


def _unstamped(ds):
    out = ds.copy()
    out.attrs = {k: v for k, v in ds.attrs.items() if k != "created"}
    return out


def _run(X, y, **kw):
    return p0_alg2(X, y, delta=1e-3, T=30, replicates=6, constraint="l2:1.0", **kw)


def test_a_sweep_over_the_noise_runs_once_with_the_same_results(data, counted):
    X, y = data
    a = _run(X, y, eps=1.0, seed=4)
    b = _run(X, y, eps=1.0, seed=4, noise_scale=0.1)
    c = _run(X, y, eps=8.0, seed=4)
    assert counted == [4]
    for got, kw in ((a, dict(eps=1.0)), (b, dict(eps=1.0, noise_scale=0.1)), (c, dict(eps=8.0))):
        common._LAST_TWIN_RUN.clear()               # a separate run, as without the memo
        again = _run(X, y, seed=4, **kw)
        # everything identical but the wall-clock stamp, which differs when the runs straddle a second
        assert "created" in got.attrs and "created" in again.attrs
        xr.testing.assert_identical(_unstamped(got), _unstamped(again))
    assert not np.array_equal(a["w_priv"].values, b["w_priv"].values)   # the noise itself differs


def test_other_arguments_run_again_and_copies_are_independent(data, counted):
    X, y = data
    a = _run(X, y, eps=1.0, seed=4)
    a["output"].values[:] = np.nan                    # the caller's copy, not the remembered run
    b = _run(X, y, eps=1.0, seed=4)
    assert np.isfinite(b["output"].values).all()
    _run(X, y, eps=1.0, seed=5)
    _run(X[::-1].copy(), y[::-1].copy(), eps=1.0, seed=5)
    assert counted == [4, 5, 5]
