"""Faults: signals, errors before work, read-only installs, committed reports.

Each test injects one fault and asserts what stabsim does (docs/reliability.md, "Signals,
errors before work, read-only installs and committed reports").
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from stabsim import make_problem, run_twin
from stabsim.runtime.signals import Terminated, sigterm_as_interrupt
from stabsim.cli import main
from stabsim.runtime.resources import ResourceError

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}

#: 2 replicates, one per chunk; each chunk is one replicate of 2 * 10^8 steps (about 4 s on
#: one core at 19 ns per twin step), so a signal 0.5 s into a chunk lands mid-kernel.
LONG_STUDY = """\
[study]
id = "sig"
replicates = 2
chunk = 1
seed = 3
[data]
n = 100
[algorithm]
T = 200000000
eta = 0.1
"""


def _default_sigint():
    """Children get Python's own Ctrl-C handling even when this test run was started in the
    background by a shell without job control, which starts it with SIGINT ignored (a process that
    starts with SIGINT ignored keeps it ignored, and so would the CLI under test)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def sigint_raises():
    """Ctrl-C raises KeyboardInterrupt in this process for the test (see ``_default_sigint``)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def _cli(*args):
    return [sys.executable, "-m", "stabsim.cli", *args]


def _wait_for(pred, timeout, what):
    t = time.monotonic()
    while not pred():
        if time.monotonic() - t > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _chunks(out):
    d = out / "sig" / "chunks"
    return sorted(p.name for p in d.glob("*.nc") if not p.name.startswith(".")) if d.is_dir() else []


def _stop(proc, sig):
    """Send ``sig``; return (exit status, seconds until the process was gone)."""
    t = time.monotonic()
    proc.send_signal(sig)
    rc = proc.wait(timeout=30)
    return rc, time.monotonic() - t


def test_sigterm_and_sigint_mid_chunk_then_resume_is_bit_identical(tmp_path):
    study = tmp_path / "sig.toml"
    study.write_text(LONG_STUDY)
    out = tmp_path / "out"
    cmd = _cli("run", str(study), "--out", str(out), "--no-progress", "--no-analyse")

    # 1. SIGTERM (a batch scheduler's wall-time limit) just after the first chunk was saved,
    #    i.e. in the middle of the second chunk's kernel
    err1 = tmp_path / "err1.txt"
    with open(err1, "w") as f:
        p = subprocess.Popen(cmd, stderr=f, stdout=subprocess.DEVNULL, env=ENV, cwd=tmp_path,
                                 preexec_fn=_default_sigint)
    try:
        _wait_for(lambda: len(_chunks(out)) >= 1 or p.poll() is not None, 600, "the first chunk")
        time.sleep(0.3)
        rc, dt = _stop(p, signal.SIGTERM)
    finally:
        p.kill() if p.poll() is None else None
    text = err1.read_text()
    assert rc == 143, text
    assert dt < 2.0, f"SIGTERM took {dt:.2f} s"
    assert "terminated (signal 15): 1 of 2 chunks" in text and "to resume, run the same command again" in text
    assert _chunks(out) == ["c000__r0-1.nc"] or len(_chunks(out)) == 1

    # 2. Ctrl-C (SIGINT) during the resumed run's kernel: the finished chunk stays
    err2 = tmp_path / "err2.txt"
    with open(err2, "w") as f:
        p = subprocess.Popen(cmd, stderr=f, stdout=subprocess.DEVNULL, env=ENV, cwd=tmp_path,
                                 preexec_fn=_default_sigint)
    try:
        _wait_for(lambda: "resuming" in err2.read_text() or p.poll() is not None, 300, "the resume message")
        time.sleep(0.5)
        rc, dt = _stop(p, signal.SIGINT)
    finally:
        p.kill() if p.poll() is None else None
    text = err2.read_text()
    assert rc == 130, text
    assert dt < 2.0, f"SIGINT took {dt:.2f} s"
    assert "interrupted: 1 of 2 chunks" in text and "to resume" in text
    assert len(_chunks(out)) == 1

    # 3. the resume finishes; its data.nc equals a clean run's, bit for bit
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    clean = tmp_path / "clean"
    clean_study = tmp_path / "clean.toml"
    clean_study.write_text(LONG_STUDY.replace("chunk = 1", "chunk = 2"))  # both replicates at once
    r = subprocess.run(_cli("run", str(clean_study), "--out", str(clean), "--no-progress", "--no-analyse"),
                       capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    with xr.open_dataset(out / "sig" / "data.nc", engine="h5netcdf") as a, \
            xr.open_dataset(clean / "sig" / "data.nc", engine="h5netcdf") as b:
        assert set(a.data_vars) == set(b.data_vars)
        for v in a.data_vars:
            assert np.array_equal(a[v].values, b[v].values, equal_nan=True), v


def _X():
    return make_problem("auc_separable", d=10).sample(100, seed=0)


def _after(seconds, sig):
    t = threading.Timer(seconds, os.kill, (os.getpid(), sig))
    t.start()
    return t


def test_run_twin_with_a_huge_T_stops_on_a_signal(sigint_raises):
    X, y = _X()
    # compiled before the clock starts (both kernel kinds the timed calls use)
    run_twin(X, y, T=10, replicates=2, eta=0.1)
    run_twin(X, y, T=10, replicates=2, eta=0.1, algorithm="sgd_pair")
    t0 = time.monotonic()
    timer = _after(0.5, signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        run_twin(X, y, T=10**12, replicates=2, eta=0.1)
    timer.join()
    assert time.monotonic() - t0 < 2.5
    time.sleep(0.2)
    assert not any(t.name == "stabsim-kernel" for t in threading.enumerate())
    # SIGTERM, as the CLI handles it
    with sigterm_as_interrupt():
        timer = _after(0.5, signal.SIGTERM)
        with pytest.raises(Terminated):
            run_twin(X, y, T=10**12, replicates=2, eta=0.1, algorithm="sgd_pair")
        timer.join()
    # nothing is left behind: the next call gives the same numbers as before
    a = run_twin(X, y, T=3000, replicates=3, seed=5)
    b = run_twin(X, y, T=3000, replicates=3, seed=5)
    assert a.equals(b)


@pytest.mark.parametrize("algorithm,loss,kw", [
    ("p1_alg1", "auc_hinge", {}),                                        # FAST_PREVIOUS
    ("sgd_pair", "auc_squared", dict(sigma=0.1, record_outputs=True)),   # FAST_PAIR with noise
    ("p1_buffer", "auc_hinge", dict(buffer=3, constraint=("l2", 1.0))),  # GENERAL
])
def test_results_do_not_depend_on_the_interruptible_path_or_the_replicate_blocks(monkeypatch, algorithm, loss, kw):
    import stabsim.kernels.twin as K

    X, y = _X()
    args = dict(algorithm=algorithm, loss=loss, T=5000, seed=7, eta=0.05, **kw)
    monkeypatch.setattr(K, "INTERRUPTIBLE_MIN_WORK", 0)          # every call in the helper thread
    threaded = run_twin(X, y, replicates=6, **args)
    monkeypatch.setattr(K, "INTERRUPTIBLE_MIN_WORK", 10**30)     # every call direct
    direct = run_twin(X, y, replicates=6, **args)
    blocks = [run_twin(X, y, replicates=np.arange(a, b), **args) for a, b in ((0, 1), (1, 4), (4, 6))]
    for v in threaded.data_vars:
        assert np.array_equal(threaded[v].values, direct[v].values, equal_nan=True), v
        joined = np.concatenate([blk[v].values for blk in blocks], axis=0)
        assert np.array_equal(threaded[v].values, joined, equal_nan=True), v


def test_a_set_stop_flag_ends_the_kernel_at_once():
    from stabsim.kernels import TwinConfig
    from stabsim.kernels.twin import twin_kernel

    X, y = _X()
    ref = run_twin(X, y, T=100, replicates=1)  # noqa: F841  (compiled)
    R, C = 2, 3
    Xe = np.ascontiguousarray(np.concatenate([X, X[:R]])[None])
    Ye = np.ascontiguousarray(np.concatenate([y, y[:R]])[None])
    rec = np.full((R, C, 5), np.nan)
    stop = np.ones(1, dtype=np.int64)
    config = TwinConfig(schedule=0, T=10**11, etas=np.array([0.1]), eta_stride=0, form=0, q=1.0, ckind=0,
                        radius=0.0, lag=2, omegas=np.ones(1), omega_stride=0,
                        checkpoints=np.array([10**9, 10**10, 10**11]))
    t = time.monotonic()
    twin_kernel(config, Xe, Ye, np.zeros(R, np.int64), 100 + np.arange(R), np.arange(R), 0, np.zeros((R, 10)), rec,
                np.zeros((1, 1, 2, 1)), stop=stop)
    assert time.monotonic() - t < 1.0
    assert np.isnan(rec).all()   # nothing recorded: the unfinished call is discarded


# ---- errors before work ------------------------------------------------------------------

def test_empty_study_file_and_check_typo_rejected_before_any_compute(tmp_path, capsys):
    empty = tmp_path / "empty.toml"
    empty.write_text("# nothing here\n")
    out = tmp_path / "out"
    assert main(["run", str(empty), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "stabsim: error:" in err and "empty" in err
    typo = tmp_path / "typo.toml"
    typo.write_text('[study]\nreplicates = 2\ncheck = "p1_pth"\n[algorithm]\nT = 100\n')
    t = time.monotonic()
    assert main(["run", str(empty.parent / "typo.toml"), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "check = 'p1_pth'" in err and "Did you mean 'p1_path'" in err
    assert time.monotonic() - t < 30
    assert not out.exists()  # nothing ran, nothing was written


def test_oversize_requests_rejected_at_once_with_the_size(tmp_path, capsys, monkeypatch):
    import tracemalloc

    monkeypatch.setenv("STABSIM_MEMORY_LIMIT", "4G")  # the same answer on every machine
    X, y = _X()
    t = time.monotonic()
    with pytest.raises(ResourceError, match=r"20000000 replicates.*needs about [\d.]+ GiB.*fewer replicates"):
        run_twin(X, y, replicates=2 * 10**7, T=1000)
    assert time.monotonic() - t < 5
    # d = 10^6: validation builds no d x d matrix (it once asked for 7 TiB)
    tracemalloc.start()
    pb = make_problem("auc_separable", 10**6)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 200 * 2**20 and pb.w_star.shape == (10**6,)
    # a study with d = 10^6 whose chunk cannot fit: refused before any compute, with the size
    big = tmp_path / "big.toml"
    big.write_text("[study]\nreplicates = 4\n[data]\nd = 1000000\nn = 5000\n[algorithm]\nT = 10\n")
    t = time.monotonic()
    assert main(["run", str(big), "--out", str(tmp_path / "out"), "--no-progress", "--no-analyse"]) == 2
    err = capsys.readouterr().err
    assert "stabsim: error:" in err and "GiB of memory" in err and "chunk" in err
    assert time.monotonic() - t < 30
    assert not list((tmp_path / "out").rglob("*.nc"))


def test_file_size_limit_while_writing_data_nc_is_one_error_line(tmp_path):
    study = tmp_path / "fs.toml"
    study.write_text("[study]\nreplicates = 8\nchunk = 1\n[data]\nn = 50\n[algorithm]\nT = 2000\ncheckpoints = 150\n")
    out = tmp_path / "out"
    base = _cli("run", str(study), "--out", str(out), "--no-progress", "--no-analyse", "--keep-chunks")
    r = subprocess.run(base, capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    data = out / "fs" / "data.nc"
    chunks = sorted((out / "fs" / "chunks").glob("*.nc"))
    limit = data.stat().st_size // 2
    assert len(chunks) == 8 and max(c.stat().st_size for c in chunks) < limit
    data.unlink()
    script = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
        from stabsim.cli import main
        sys.exit(main({base[3:]!r}))
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=ENV, cwd=tmp_path,
                       timeout=600)
    assert r.returncode == 2, (r.returncode, r.stderr)   # not 139 (segfault), not 153 (SIGXFSZ)
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("stabsim: error")]
    assert len(lines) == 1 and lines[0].startswith("stabsim: error: cannot write"), r.stderr
    assert str(data) in lines[0] and "file-size limit" in lines[0]
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr
    assert not data.exists() and sorted((out / "fs" / "chunks").glob("*.nc")) == chunks   # chunks kept
    r = subprocess.run(base, capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=600)
    assert r.returncode == 0 and data.is_file(), r.stderr


# ---- read-only installs ------------------------------------------------------------------

def _blocked(tmp_path):
    """Paths below a regular file: they can never be created (even by root)."""
    f = tmp_path / "a-file"
    f.write_text("")
    return f


def test_unwritable_numba_cache_falls_back_with_one_warning(tmp_path):
    f = _blocked(tmp_path)
    env = {**ENV, "NUMBA_CACHE_DIR": str(f / "numba"), "HOME": str(f / "home"), "XDG_CACHE_HOME": str(f / "xdg")}
    r = subprocess.run([sys.executable, "-c", "import os, stabsim.kernels.twin; from stabsim.cli import main; "
                        "print(os.environ.get('NUMBA_CACHE_DIR')); main(['list', '--studies', '.'])"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    warn = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(warn) == 1 and warn[0].startswith("stabsim: warning: NUMBA_CACHE_DIR="), r.stderr
    used = r.stdout.splitlines()[0]
    assert used != str(f / "numba") and Path(used).is_dir()


def test_no_writable_cache_folder_at_all_compiles_without_cache(tmp_path):
    f = _blocked(tmp_path)
    # nothing can be created anywhere a cache could go (root ignores permissions, so block mkdir)
    script = textwrap.dedent("""
        import pathlib
        _mkdir = pathlib.Path.mkdir
        def mkdir(self, *a, **k):
            if "numba" in str(self):
                raise PermissionError(13, "read-only", str(self))
            return _mkdir(self, *a, **k)
        pathlib.Path.mkdir = mkdir
        import numba, stabsim, stabsim.kernels.twin
        from numba.core.dispatcher import Dispatcher
        @numba.njit(cache=True)
        def f(x):
            return x + 1
        assert f(1) == 2 and stabsim.kernels.twin._twin_kernel._cache.__class__.__name__ == "NullCache"
        print("ok")
    """)
    env = {**ENV, "NUMBA_CACHE_DIR": str(f / "numba"), "HOME": str(f / "home"), "XDG_CACHE_HOME": str(f / "xdg")}
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    warn = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(warn) == 1 and warn[0].startswith("stabsim: warning:") and "without an on-disk cache" in warn[0]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes to read-only folders")
def test_read_only_install_with_unwritable_home_starts(tmp_path):
    import shutil

    pkg = tmp_path / "ro"
    shutil.copytree(ROOT / "stabsim", pkg / "stabsim", ignore=shutil.ignore_patterns("__pycache__"))
    home = tmp_path / "home"
    home.mkdir()
    for p in (pkg, home):
        subprocess.run(["chmod", "-R", "a-w", str(p)], check=True)
    try:
        env = {**os.environ, "PYTHONPATH": str(pkg), "HOME": str(home), "TMPDIR": str(home)}
        env.pop("NUMBA_CACHE_DIR", None)
        env.pop("XDG_CACHE_HOME", None)
        r = subprocess.run([sys.executable, "-m", "stabsim.cli", "--help"], capture_output=True, text=True,
                           env=env, cwd=tmp_path, timeout=300)
        assert r.returncode == 0, r.stderr
        assert len([ln for ln in r.stderr.splitlines() if ln.startswith("stabsim: warning")]) <= 1
    finally:
        for p in (pkg, home):
            subprocess.run(["chmod", "-R", "u+w", str(p)], check=True)


# ---- committed reports -------------------------------------------------------------------

def test_a_quick_report_does_not_overwrite_a_full_profile_report(tmp_path, capsys):
    study = tmp_path / "tiny.toml"
    study.write_text("[study]\nreplicates = 2\n[algorithm]\nT = 50\n[profiles.quick]\nstudy.replicates = 2\n")
    out = tmp_path / "out"
    assert main(["run", str(study), "--quick", "--out", str(out), "--no-progress"]) == 0
    committed = tmp_path / "reports"
    committed.mkdir()
    original = "# stabsim report\n\n- command: `stabsim run suite`\n- profile: full\n\n## Verdicts\n"
    (committed / "index.md").write_text(original)
    capsys.readouterr()
    # the default place of a quick report is out/reports, and the command says so
    assert main(["report", str(out)]) == 0
    said = capsys.readouterr().out
    assert (out / "reports" / "index.md").is_file() and f"wrote {out / 'reports' / 'index.md'}" in said
    assert (committed / "index.md").read_text() == original
    # asked to write over the full-profile report: refused, unless --overwrite-report
    assert main(["report", str(out), "--reports", str(committed)]) == 2
    err = capsys.readouterr().err
    assert "profile full" in err and "not overwritten" in err and "--overwrite-report" in err
    assert (committed / "index.md").read_text() == original
    assert main(["run", str(study), "--quick", "--out", str(out), "--no-progress", "--report", str(committed)]) == 2
    assert (committed / "index.md").read_text() == original
    capsys.readouterr()
    assert main(["report", str(out), "--reports", str(committed), "--overwrite-report"]) == 0
    assert "- profile: quick" in (committed / "index.md").read_text()


class _SignalInFinalizer:
    """Sends this process SIGTERM from its finalizer and keeps running Python code there, so the
    handler's ``Terminated`` is raised inside the finalizer, where Python prints it as "Exception
    ignored" and drops it.  On a GPU numba-cuda frees device memory in finalizers: a batch
    scheduler's SIGTERM landed there and the run went on for minutes (stabsim.runtime.signals)."""

    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100_000):   # the handler runs at a bytecode boundary in here
            pass


def test_a_signal_whose_raise_a_finalizer_swallowed_is_raised_again(monkeypatch):
    from stabsim.runtime.signals import raise_if_interrupted

    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: dropped.append(u.exc_type))
    went_on = False
    with pytest.raises(Terminated):
        with sigterm_as_interrupt():
            obj = _SignalInFinalizer()
            del obj
            went_on = True   # the signal's exception was lost ...
            raise_if_interrupted()   # ... and is raised again here
    assert went_on and dropped == [Terminated]
    raise_if_interrupted()   # outside the block nothing is remembered


def test_a_swallowed_sigterm_stops_the_study_after_the_chunk_it_was_saving(tmp_path, monkeypatch, capsys):
    """End to end in-process: the signal arrives inside a finalizer while the first of two chunks
    is written; the run stops after that chunk with 143 and says how to resume, instead of
    computing the second."""
    from stabsim.study.store import StudyDir

    study = tmp_path / "sig.toml"
    study.write_text(LONG_STUDY.replace("T = 200000000", "T = 200"))
    real = StudyDir.write_chunk

    def write_then_signal(self, *a, **k):
        real(self, *a, **k)
        obj = _SignalInFinalizer()
        del obj

    monkeypatch.setattr(StudyDir, "write_chunk", write_then_signal)
    monkeypatch.setattr(sys, "unraisablehook", lambda u: None)
    out = tmp_path / "out"
    rc = main(["run", str(study), "--out", str(out), "--no-progress", "--no-analyse"])
    err = capsys.readouterr().err
    assert rc == 143, err
    assert "terminated (signal 15): 1 of 2 chunks" in err and "to resume" in err
    assert len(_chunks(out)) == 1
    assert signal.getsignal(signal.SIGTERM) is not None   # the CLI put the old handler back
