"""The study runner: spec validation, chunk store, resumption and bit-identical results in
every execution mode (in-process, numba thread counts, dask LocalCluster, after a kill)."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stabsim.study.store import CHUNK_RE, StudyDir
from stabsim.registry import KINDS, Param, integer, register_kind
from stabsim.study import StudyError, load_study, parse_study, run_study

REPO = Path(__file__).resolve().parent.parent

SMALL = """
[study]
id = "{id}"
description = "a small test study"
seed = {seed}
replicates = {replicates}
chunk = {chunk}

[data]
problem = "auc_separable"
d = 4

[algorithm]
name = "p1_alg1"
loss = "auc_hinge"
eta = 0.1
T = {T}
neighbour = "flip"
checkpoints = 12

[sweep]
n = [30, 40]
"""


def write_study(tmp_path, name="small", *, seed=7, replicates=6, chunk=2, T=200, extra=""):
    p = tmp_path / f"{name}.toml"
    p.write_text(SMALL.format(id=name, seed=seed, replicates=replicates, chunk=chunk, T=T) + extra)
    return p


def load(path) -> xr.Dataset:
    """data.nc without the attrs that may legitimately differ between two runs: the creation
    time, and the git commit (in a shared checkout someone may commit between two runs), and the
    checksum record (it covers the attrs, creation time included)."""
    ds = xr.load_dataset(path, engine="h5netcdf")
    for key in ("created", "git_commit", "code_git_commit", "code_git_dirty", "stabsim_integrity"):
        ds.attrs.pop(key)
    return ds


def assert_identical(a_path, b_path):
    a, b = load(a_path), load(b_path)
    for name in a.variables:  # a readable diff first
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)
    assert a.identical(b)


def cli(*args, env=None, cwd=None, **kw):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "stabsim.cli", *map(str, args)], capture_output=True,
                          text=True, env=e, cwd=cwd, timeout=120, **kw)


def run_main(capsys, *args):
    """``stabsim ARGS`` in this process: (exit code, stdout, stderr)."""
    from stabsim.cli import main

    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def chunk_names(d: Path):
    return sorted(p.name for p in d.iterdir() if CHUNK_RE.match(p.name)) if d.is_dir() else []


# ---- execution modes: bit-identical ---------------------------------------------------------

def test_local_run_layout_and_provenance(tmp_path):
    spec = load_study(write_study(tmp_path))
    res = run_study(spec, tmp_path / "out", progress=False)
    assert (res.reused, res.computed, res.n_chunks) == (0, 6, 6)
    ds = xr.load_dataset(res.data_path, engine="h5netcdf")
    assert dict(ds.sizes) == {"n": 2, "replicate": 6, "t": ds.sizes["t"]}
    assert ds["dist_output"].dims == ("n", "replicate", "t")
    assert ds["n"].values.tolist() == [30, 40]
    assert ds["replicate"].values.tolist() == list(range(6)) and ds["replicate"].dtype == np.int64
    assert ds["sum_eta"].dims == ("t",)  # the same for every n: not expanded
    for key in ("stabsim_version", "git_commit", "seed", "study_file", "created", "versions",
                "study_fingerprint"):
        assert key in ds.attrs, key
    assert ds.attrs["study_file"] == spec.text and ds.attrs["seed"] == 7
    assert not (res.out_dir / "chunks").exists()  # removed once data.nc was written
    # a second run finds it complete
    again = run_study(spec, tmp_path / "out", progress=False)
    assert again.status == "already complete"


def test_chunking_does_not_change_results(tmp_path):
    a = run_study(load_study(write_study(tmp_path, "a", chunk=2)), tmp_path / "o1", progress=False)
    b = run_study(load_study(write_study(tmp_path, "a", chunk=5)), tmp_path / "o2", progress=False)
    da, db = load(a.data_path), load(b.data_path)
    for v in da.data_vars:
        np.testing.assert_array_equal(da[v].values, db[v].values)


def test_dask_localcluster_matches_local(tmp_path):
    spec = load_study(write_study(tmp_path))
    local = run_study(spec, tmp_path / "local", progress=False)
    dask = run_study(spec, tmp_path / "dask", scheduler="local:2", progress=False)
    assert dask.computed == spec.n_chunks
    assert_identical(local.data_path, dask.data_path)


def test_data_nc_is_written_while_a_dask_client_is_active(tmp_path):
    """The CLI keeps its dask client open while it writes data.nc: xarray must not take a
    distributed lock on the in-memory netCDF (it failed with "Semaphore or Lock ... not known")."""
    from stabsim.study import Executor

    spec = load_study(write_study(tmp_path))
    local = run_study(spec, tmp_path / "local", progress=False)
    with Executor("local:1") as ex:
        dask = run_study(spec, tmp_path / "dask", executor=ex, progress=False)
    assert_identical(local.data_path, dask.data_path)


def test_numba_thread_count_does_not_change_results(tmp_path):
    path = write_study(tmp_path, replicates=5, chunk=5, T=400)
    procs, outs = [], []
    for threads in (1, 2):  # two processes at once: NUMBA_NUM_THREADS is read at start-up
        out = tmp_path / f"t{threads}"
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "stabsim.cli", "run", str(path), "--out", str(out), "--no-progress"],
            env={**os.environ, "NUMBA_NUM_THREADS": str(threads)}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
        outs.append(out / "small" / "data.nc")
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert_identical(*outs)


def _wait_for_chunk(proc, chunk_dir, timeout=60):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if chunk_names(chunk_dir):
            return
        if proc.poll() is not None:
            pytest.fail(f"run ended before writing a chunk: {proc.stderr.read()}")
        time.sleep(0.01)
    pytest.fail("no chunk appeared")


def test_kill_and_resume_is_bit_identical(tmp_path):
    # 8 chunks of 10^6 replicate-steps each (~0.1 s): slow enough to kill the run in the middle
    path = write_study(tmp_path, "slow", replicates=8, chunk=2, T=500_000)
    ref = run_study(load_study(path), tmp_path / "ref", progress=False)

    out = tmp_path / "out"
    chunk_dir = out / "slow" / "chunks"
    proc = subprocess.Popen([sys.executable, "-m", "stabsim.cli", "run", str(path), "--out", str(out),
                             "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_chunk(proc, chunk_dir)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(30)
        proc.stdout.close(); proc.stderr.close()
    done = chunk_names(chunk_dir)
    assert 1 <= len(done) < 8, done
    assert not (out / "slow" / "data.nc").exists()

    r = cli("run", path, "--out", out, "--no-progress")
    assert r.returncode == 0, r.stderr
    assert f"resuming, {len(done)} of 8 chunks already done" in r.stderr
    assert_identical(ref.data_path, out / "slow" / "data.nc")


def test_ctrl_c_keeps_chunks_and_says_how_to_resume(tmp_path):
    # The run gets Python's own Ctrl-C handling even when this test session was started in the
    # background by a shell without job control (SIGINT ignored, and inherited: the run then
    # finished with exit status 0, twice, until the child got SIGINT's default back).
    from test_reliability_signals import _default_sigint

    path = write_study(tmp_path, "slow", replicates=16, chunk=2, T=500_000)
    out = tmp_path / "out"
    chunk_dir = out / "slow" / "chunks"
    proc = subprocess.Popen([sys.executable, "-m", "stabsim.cli", "run", str(path), "--out", str(out),
                             "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)
    try:
        _wait_for_chunk(proc, chunk_dir)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted:" in err and "resume" in err and "stabsim run" in err
    assert "Traceback" not in err
    assert len(chunk_names(chunk_dir)) >= 1


# ---- the chunk store ----------------------------------------------------------------------

def test_corrupt_foreign_and_temp_files_are_detected_and_recomputed(tmp_path):
    spec = load_study(write_study(tmp_path))
    out = tmp_path / "out"
    first = run_study(spec, out, progress=False, keep_chunks=True)
    reference = load(first.data_path)
    sd = StudyDir(out / spec.id)
    files = sd.chunk_files()
    assert len(files) == 6

    sd.data_path.unlink()
    truncated, overwritten, tampered = files[0], files[1], files[2]
    raw = truncated.read_bytes()
    truncated.write_bytes(raw[: len(raw) // 2])
    overwritten.write_bytes(files[3].read_bytes())  # a valid chunk of other replicates
    ds = xr.open_dataset(tampered, engine="scipy").load()
    ds["dist_output"].values[0, -1] += 1e-12  # same attrs, altered value
    ds.to_netcdf(tampered, engine="scipy")
    temp_chunk = sd.chunk_dir / f".{files[4].name}.999.deadbeef.tmp"
    temp_chunk.write_bytes(raw[:100])
    temp_data = sd.root / ".data.nc.999.deadbeef.tmp"
    temp_data.write_bytes(b"partial")

    res = run_study(spec, out, progress=False, keep_chunks=True)
    invalid = dict(res.invalid)
    assert set(invalid) == {truncated.name, overwritten.name, tampered.name}
    assert "unreadable" in invalid[truncated.name]
    assert "replicate" in invalid[overwritten.name] or "chunk_cell" in invalid[overwritten.name]
    assert "checksum" in invalid[tampered.name]
    assert (res.reused, res.computed) == (3, 3)
    assert not temp_chunk.exists() and not temp_data.exists()
    assert {Path(p).name for p in res.removed_temps} == {temp_chunk.name, temp_data.name}
    assert load(res.data_path).identical(reference)


def test_chunk_files_are_written_atomically(tmp_path, monkeypatch):
    """A failure while writing leaves no file under the final name (and no temp file)."""
    import stabsim.study.store as store

    spec = load_study(write_study(tmp_path))
    calls = {"n": 0}
    real = store.atomic_write_netcdf

    def failing(ds, path, check=None, engine=store.ENGINE):
        calls["n"] += 1
        if calls["n"] == 3:
            def boom(tmp):
                assert Path(tmp).exists() and Path(tmp).name.endswith(".tmp")
                raise OSError("disk full (simulated)")
            return real(ds, path, check=boom, engine=engine)
        return real(ds, path, check=check, engine=engine)

    monkeypatch.setattr(store, "atomic_write_netcdf", failing)
    with pytest.raises(StudyError, match="simulated"):
        run_study(spec, tmp_path / "out", progress=False)
    chunk_dir = tmp_path / "out" / spec.id / "chunks"
    assert len(chunk_names(chunk_dir)) == 2
    assert not [p for p in chunk_dir.iterdir() if p.name.endswith(".tmp")]
    monkeypatch.setattr(store, "atomic_write_netcdf", real)
    res = run_study(spec, tmp_path / "out", progress=False)
    assert (res.reused, res.computed) == (2, 4)


def test_refuses_to_mix_studies_unless_forced(tmp_path, capsys):
    out = tmp_path / "out"
    path = write_study(tmp_path, "same", seed=1)
    assert run_main(capsys, "run", path, "--out", out, "--no-progress")[0] == 0
    # the same file with another seed is a different study
    code, _, err = run_main(capsys, "run", path, "--out", out, "--seed", "2", "--no-progress")
    assert code == 2
    assert "refusing to mix" in err and "--force" in err and len(err.strip().splitlines()) == 1
    code, out_text, err = run_main(capsys, "run", path, "--out", out, "--seed", "2", "--force", "--no-progress")
    assert code == 0, err
    assert "--force: removed" in err
    ds = xr.load_dataset(out / "same" / "data.nc", engine="h5netcdf")
    assert ds.attrs["seed"] == 2


def test_library_refusal_names_both_fingerprints(tmp_path):
    s1 = load_study(write_study(tmp_path, "x", seed=1))
    s2 = load_study(write_study(tmp_path, "x", seed=2))
    run_study(s1, tmp_path, progress=False)
    with pytest.raises(StudyError, match="refusing to mix") as e:
        run_study(s2, tmp_path, progress=False)
    assert s1.fingerprint in str(e.value) and s2.fingerprint in str(e.value)
    assert run_study(s2, tmp_path, progress=False, force=True).computed == s2.n_chunks


# ---- grids, assembly, kinds ------------------------------------------------------------------

def test_sweep_over_T_and_eta_schedules(tmp_path):
    text = SMALL.format(id="grid", seed=3, replicates=3, chunk=2, T=100).replace(
        "n = [30, 40]", 'T = [50, 80]\neta = [0.1, "sqrt:0.5", ["pl", 2]]')
    spec = parse_study(text, path=tmp_path / "grid.toml")
    assert [c.id for c in spec.cells()][:2] == ["c000_T50_eta0.1", "c001_T50_etasqrt-0.5"]
    res = run_study(spec, tmp_path, progress=False)
    ds = xr.load_dataset(res.data_path, engine="h5netcdf")
    assert ds["dist_output"].dims == ("T", "eta", "replicate", "t")
    assert ds["eta"].values.tolist() == ["0.1", "sqrt:0.5", "pl:2.0"]
    assert int(ds["t"].max()) == 80
    # checkpoints beyond T = 50 do not exist for that cell
    assert np.isnan(ds["dist_output"].sel(T=50, t=80)).all()
    assert not np.isnan(ds["dist_output"].sel(T=80, t=80)).any()
    assert set(ds["sum_eta"].dims) == {"T", "eta", "t"}


def test_single_cell_study_has_no_sweep_dims(tmp_path):
    text = SMALL.format(id="one", seed=3, replicates=3, chunk=2, T=50).replace("n = [30, 40]", "")
    res = run_study(parse_study(text), tmp_path, progress=False)
    ds = xr.load_dataset(res.data_path, engine="h5netcdf")
    assert ds["dist_output"].dims == ("replicate", "t")


def test_per_replicate_data_sets(tmp_path):
    extra_text = SMALL.format(id="pr", seed=3, replicates=4, chunk=3, T=50).replace(
        'd = 4', 'd = 4\nper_replicate = true')
    res = run_study(parse_study(extra_text), tmp_path / "a", progress=False)
    ds = xr.load_dataset(res.data_path, engine="h5netcdf")
    assert ds.attrs["data_sets"] == "per-replicate"
    shared = run_study(parse_study(extra_text.replace("per_replicate = true", "")), tmp_path / "b",
                       progress=False)
    ds2 = xr.load_dataset(shared.data_path, engine="h5netcdf")
    assert ds2.attrs["data_sets"] == "shared"
    # replicate 0 draws the shared data set, the others their own
    np.testing.assert_array_equal(ds["dist_output"].sel(replicate=0), ds2["dist_output"].sel(replicate=0))
    assert not np.array_equal(ds["loss_path"].sel(replicate=[1, 2, 3]), ds2["loss_path"].sel(replicate=[1, 2, 3]))


@register_kind("test_constant", params={"model": {"m": Param("a test parameter", 3, integer(1))}},
               description="test kind: values derived from (seed, replicate, m)")
def _constant_cell(spec, cell, replicates):
    m = spec.cell_params(cell)["model"]["m"]
    vals = np.outer(replicates + spec.seed, np.arange(m, dtype=float))
    return xr.Dataset({"v": (("replicate", "j"), vals, {"long_name": "test value"})},
                      coords={"replicate": replicates, "label": ("j", [f"j{i}" for i in range(m)])},
                      attrs={"note": "x"})


def test_registering_a_kind(tmp_path):
    assert "test_constant" in KINDS
    text = """
[study]
kind = "test_constant"
replicates = 5
chunk = 2
[model]
m = 2
[sweep]
m = [2]
"""
    res = run_study(parse_study(text, path=tmp_path / "k.toml"), tmp_path, progress=False)
    ds = xr.load_dataset(res.data_path, engine="h5netcdf")
    assert ds["v"].dims == ("m", "replicate", "j")
    np.testing.assert_array_equal(ds["v"].values[0, :, 1], np.arange(5))
    assert ds["label"].values.tolist() == ["j0", "j1"] and ds.attrs["note"] == "x"
    with pytest.raises(StudyError, match=r"\[model\] m = 0"):
        parse_study(text.replace("m = 2", "m = 0"))
    with pytest.raises(StudyError, match="unknown section \\[data\\]"):
        parse_study(text + "[data]\nn = 3\n")


def test_profiles(tmp_path):
    path = REPO / "studies" / "example_twin.toml"
    quick, full = load_study(path, "quick"), load_study(path)
    assert quick.profile == "quick" and full.profile == "full"
    assert quick.replicates < full.replicates and quick.fingerprint != full.fingerprint
    assert quick.sections["algorithm"]["T"] < full.sections["algorithm"]["T"]
    assert load_study(path, "quick", seed=5).seed == 5
    text = path.read_text()
    with pytest.raises(StudyError, match=r"\[profiles\.quick\.study\] replicates = 0"):
        parse_study(text.replace("study.replicates = 8", "study.replicates = 0"), profile="quick")
    # typos in a profile that is not selected are errors too
    with pytest.raises(StudyError, match="replicats.*Did you mean 'replicates'"):
        parse_study(text.replace("study.replicates = 8", "study.replicats = 8"), profile="full")


# ---- validation messages ------------------------------------------------------------------

BASE = """
[study]
id = "v"
replicates = 4
[data]
n = 20
[algorithm]
T = 10
eta = 0.1
[bounds]
keys = []
"""


def with_value(section: str, key: str, literal: str) -> str:
    """BASE with ``key = literal`` set in ``[section]``."""
    lines, out, cur, done = BASE.strip().splitlines(), [], None, False
    for line in lines:
        if line.startswith("["):
            if cur == section and not done:
                out.append(f"{key} = {literal}"); done = True
            cur = line.strip("[]")
        elif cur == section and line.split("=")[0].strip() == key:
            line, done = f"{key} = {literal}", True
        out.append(line)
    if not done:
        out += ([f"[{section}]"] if cur != section else []) + [f"{key} = {literal}"]
    return "\n".join(out) + "\n"


def toml_literal(v) -> str:
    if isinstance(v, float):
        return repr(v)  # nan, inf, -inf, 1e-05 ... are valid TOML floats
    if isinstance(v, str):
        return '"' + v + '"'
    return str(v)


BAD_VALUES = [
    # section, key, strategy, what the message must say is allowed
    ("study", "replicates", st.integers(max_value=0), "must be an integer >= 1"),
    ("study", "chunk", st.integers(max_value=0), "must be an integer >= 1"),
    ("study", "seed", st.integers(max_value=-1), "must be an integer >= 0"),
    ("data", "n", st.integers(min_value=-10**6, max_value=1), "must be an integer >= 2"),
    ("data", "n", st.floats(allow_nan=False), "must be an integer >= 2"),
    ("data", "d", st.integers(max_value=0), "must be an integer >= 1"),
    ("algorithm", "T", st.integers(max_value=0), "must be an integer >= 1"),
    ("algorithm", "eta", st.floats(max_value=0.0) | st.sampled_from([math.nan, math.inf]),
     "must be a step size > 0"),
    ("algorithm", "sigma", st.floats(max_value=-1e-300), "must be a finite number >= 0"),
    ("bounds", "gamma", st.floats(max_value=0.0) | st.floats(min_value=1.0) | st.just(math.nan),
     "must be a number in the open interval (0, 1)"),
    ("bounds", "delta", st.floats(max_value=0.0) | st.floats(min_value=1.0),
     "must be a number in the open interval (0, 1)"),
    ("bounds", "eps", st.floats(max_value=0.0) | st.just(-math.inf), "must be a finite number > 0"),
    ("data", "pi", st.floats(max_value=0.0) | st.floats(min_value=1.0), "open interval (0, 1)"),
]


@pytest.mark.parametrize("section,key,strategy,allowed", BAD_VALUES,
                         ids=[f"{s}.{k}" for s, k, *_ in BAD_VALUES])
def test_bad_values_name_key_value_and_allowed(section, key, strategy, allowed):
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(strategy)
    def check(value):
        with pytest.raises(StudyError) as e:
            parse_study(with_value(section, key, toml_literal(value)), path="v.toml")
        msg = str(e.value)
        assert msg.startswith("v.toml: "), msg
        assert f"[{section}] {key} = {value!r}" in msg, msg
        assert allowed in msg, msg
        assert "\n" not in msg

    check()


def test_bad_sweep_values():
    with pytest.raises(StudyError, match=r"\[sweep\] n = \[50, 1\]: element 1, 1: n must be an integer >= 2"):
        parse_study(BASE + "[sweep]\nn = [50, 1]\n")
    with pytest.raises(StudyError, match=r"\[sweep\] eta = \[0.1, -0.2\]: element 1, -0.2: eta must be a step size > 0"):
        parse_study(BASE + "[sweep]\neta = [0.1, -0.2]\n")
    with pytest.raises(StudyError, match="non-empty list"):
        parse_study(BASE + "[sweep]\nn = []\n")
    with pytest.raises(StudyError, match="non-empty list"):
        parse_study(BASE + "[sweep]\nn = 50\n")
    with pytest.raises(StudyError, match="appears twice"):
        parse_study(BASE + "[sweep]\neta = [0.5, \"constant:0.5\", 0.5]\n")


@pytest.mark.parametrize("edit,expected", [
    (("[algorithm]", "[algoritm]"), r"unknown section \[algoritm\]\. Did you mean 'algorithm'\?"),
    (("replicates = 4", "replicate = 4"), r"unknown key 'replicate' in \[study\]\. Did you mean 'replicates'\?"),
    (("T = 10", 'T = 10\nloss = "auc_hing"'), r"\[algorithm\] loss = 'auc_hing': unknown loss 'auc_hing'\. Did you mean 'auc_hinge'"),
    (("T = 10", 'T = 10\nname = "p1_alg3"'), r"\[algorithm\] name = 'p1_alg3': unknown algorithm 'p1_alg3'\. Did you mean"),
    (("n = 20", 'n = 20\nproblem = "auc_seperable"'), r"\[data\] problem = 'auc_seperable': unknown problem 'auc_seperable'\. Did you mean 'auc_separable'"),
    (("n = 20", 'n = 20\nT = 10'), r"unknown key 'T' in \[data\]\..*'T' belongs in \[algorithm\]"),
    (("replicates = 4", 'replicates = 4\nkind = "twn"'), r"\[study\] kind = 'twn': kind must be a registered study kind.*Did you mean 'twin'"),
    (("keys = []", 'keys = ["P1.Thm4.ua"]'), r"\[bounds\] keys = \['P1.Thm4.ua'\]: unknown bound 'P1.Thm4.ua'\. Did you mean 'P1.Thm4.uas'"),
    (("keys = []", "keys = []\n[sweep]\nm = [1, 2]"), r"unknown sweep axis 'm'.*Sweepable: "),
    (("keys = []", "keys = []\n[sweep]\nper_replicate = [true, false]"), r"data.per_replicate cannot be swept"),
    (("T = 10", 'T = 10\nneighbour = "flipp"'), r"\[algorithm\] neighbour = 'flipp': neighbour must be one of .*Did you mean 'flip'"),
    (("eta = 0.1", 'eta = "sqrtt:0.5"'), r"unknown step-size schedule 'sqrtt'"),
    (("T = 10", 'T = 10\nloss = "point_lsq"'), r"cell \(single cell\): \[algorithm\] name = 'p1_alg1' is pairwise but loss = 'point_lsq' is not"),
    (("T = 10", 'T = 30\nname = "p1_alg2"'), r"\[data\] n = 20: algorithm 'p1_alg2' needs n >= 31 for T = 30"),
    (("n = 20", "n = 20\ngamma = 0.5\nkappa = 0.1"), r"unknown parameters for 'auc_separable': \['kappa'\]"),
    (("[study]", "seed = 3\n[study]"), r"top-level key 'seed' must be inside a section"),
    (("T = 10", "T = 10 10"), r"not valid TOML"),
])
def test_bad_study_files(edit, expected):
    text = BASE.replace(*edit, 1)
    assert text != BASE
    with pytest.raises(StudyError, match=expected):
        parse_study(text, path="v.toml")


def test_missing_profile_and_file():
    with pytest.raises(StudyError, match="no profile 'quick'.*Profiles defined: none"):
        parse_study(BASE, profile="quick")
    with pytest.raises(StudyError, match="not found"):
        load_study("/nonexistent/study.toml")


def test_fingerprint_ignores_description_and_bounds_only():
    a = parse_study(BASE)
    assert parse_study(BASE.replace('id = "v"', 'id = "v"\ndescription = "other"')).fingerprint == a.fingerprint
    assert parse_study(BASE.replace("keys = []", "keys = []\ngamma = 0.1")).fingerprint == a.fingerprint
    assert parse_study(BASE.replace("T = 10", "T = 11")).fingerprint != a.fingerprint
    assert parse_study(BASE, seed=1).fingerprint != a.fingerprint
    # writing a default explicitly does not change it
    assert parse_study(BASE.replace("T = 10", 'T = 10\nloss = "auc_hinge"')).fingerprint == a.fingerprint


# ---- the command line --------------------------------------------------------------------

def test_cli_list_shows_the_example_study():
    r = cli("list")
    assert r.returncode == 0, r.stderr
    line = next(l for l in r.stdout.splitlines() if l.startswith("example_twin"))
    assert "P1 Alg. 1" in line


def test_cli_bad_study_id_did_you_mean():
    r = cli("run", "exampel_twin", "--quick")
    assert r.returncode != 0
    assert "unknown study 'exampel_twin'. Did you mean 'example_twin'?" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_cli_bad_inputs_are_one_line_errors(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(BASE.replace("n = 20", "n = 1"))
    for args in (["run", bad], ["run", tmp_path / "missing.toml"], ["run", "example_twin", "--profile", "ful"],
                 ["run", "example_twin", "--quick", "--scheduler", "bogus"], ["frobnicate"], [],
                 ["run", "example_twin", "--seed", "x"], ["audit", "--whatever"], ["run", "nope"]):
        code, _, err = run_main(capsys, *args, "--out", tmp_path) if args[:1] == ["run"] else \
            run_main(capsys, *args)
        assert code != 0, args
        assert len(err.strip().splitlines()) == 1, (args, err)
        assert err.startswith("stabsim: error:"), (args, err)
    code, _, err = run_main(capsys, "run", bad, "--out", tmp_path)
    assert "[data] n = 1: n must be an integer >= 2" in err
    assert not list(tmp_path.glob("*/study.json"))  # nothing was started


def test_cli_suite_and_report(tmp_path, capsys):
    studies = tmp_path / "studies"
    studies.mkdir()
    p1 = write_study(studies, "s1", T=30, replicates=2)
    p1.write_text(p1.read_text().replace('seed = 7', 'seed = 7\nsuite = true'))
    write_study(studies, "s2", T=30, replicates=2)
    code, out, _ = run_main(capsys, "list", "--studies", studies)
    assert code == 0 and "s1" in out and "[suite]" in out and "s2" in out
    code, out, err = run_main(capsys, "run", "suite", "--studies", studies, "--out", tmp_path / "out",
                              "--no-progress")
    assert code == 0, err
    assert "s1: 2 chunks (0 reused, 2 computed)" in out
    assert (tmp_path / "out" / "s1" / "data.nc").exists() and not (tmp_path / "out" / "s2").exists()
    code, out, _ = run_main(capsys, "report", tmp_path / "out")
    assert code == 0 and "s1" in out
