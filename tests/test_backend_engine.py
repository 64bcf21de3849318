"""The backend (``stabsim.engine.backend``) through the study engine, the CLI and the audits: ``[run] backend`` and
``--backend``; one concrete backend per run ("auto" resolved once, in this process); every
``run_twin`` of a chunk (a neighbour search's, an audit's) on it; ``chunk_backend`` on every chunk
and ``study_backend`` in data.nc; and nothing mixed: a resume never combines chunks of two
backends, which agree only to rounding.  docs/reliability.md and docs/study-files.md cite these.

No GPU is needed: tests/conftest.py turns numba's CUDA simulator on, so ``resolve_backend("cuda")``
succeeds; "cuda" chunks of a store are faked by rewriting the attr, and the plumbing tests replace
``run_twin``'s own backend resolution by a spy that records what it was asked and runs on the CPU.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import stabsim.engine.backend as backend
import stabsim.engine.twin_runs as twin
from stabsim.engine.backend import default_backend
from stabsim.cli import build_parser
from stabsim.privacy import audit_runner as ar
from stabsim.privacy.audit_cli import build_parser as audit_parser
from stabsim.registry import KINDS, register_kind
from stabsim.study.store import StudyDir, open_chunk, write_chunk_file
from stabsim.study import OtherBackend, StudyError, load_study, parse_study, run_study
from stabsim.study import execution as study_execution
from stabsim.study.execution import _compute_chunk

from test_study import load, run_main, write_study

REPO = Path(__file__).resolve().parents[1]
RUN = '\n[run]\nbackend = "{}"\n'
NO_GPU = "no GPU on this test machine"


def run(spec, out, **kw):
    return run_study(spec, out, progress=False, **kw)


def no_gpu(monkeypatch):
    """A machine with neither a GPU nor the simulator."""
    monkeypatch.setattr(backend, "cuda_unavailable_reason", lambda: NO_GPU)


def spy_run_twin_backend(monkeypatch) -> list:
    """Record (backend argument, thread default) of every run_twin call; run it on the CPU."""
    seen = []

    def spy(name=None):
        seen.append((name, default_backend()))
        return "cpu"

    monkeypatch.setattr(twin, "resolve_backend", spy)
    return seen


def fake_backend(path, name, device="a faked GPU"):
    """Rewrite a stored chunk's backend attrs as that backend would have written them (values and
    checksums consistent: the attrs checksum is part of a written chunk); None: an old chunk."""
    from stabsim.study.store import attrs_sha256

    ds = open_chunk(path)
    for key in ("chunk_backend", "chunk_device"):
        ds.attrs.pop(key, None)
    if name is not None:
        ds.attrs.update(chunk_backend=name, chunk_device=device)
    ds.attrs["chunk_attrs_sha256"] = attrs_sha256(ds)
    write_chunk_file(ds, path)


if "backend_probe" not in KINDS:
    @register_kind("backend_probe", description="test kind: records the backend its chunk runs under")
    def _backend_probe(spec, cell, replicates):
        reps = np.asarray(replicates, dtype=np.int64)
        return xr.Dataset({"v": ("replicate", np.zeros(reps.size))}, coords={"replicate": reps},
                          attrs={"seen_backend": default_backend()})


# ---- [run] backend and --backend ----------------------------------------------------------------

def test_run_backend_key_is_parsed_validated_and_not_part_of_the_data(tmp_path):
    base = load_study(write_study(tmp_path))
    assert base.backend == "cpu"
    for name in ("cpu", "cuda", "auto"):
        spec = load_study(write_study(tmp_path, extra=RUN.format(name)))
        assert spec.backend == name
        assert spec.fingerprint == base.fingerprint and spec.data_fingerprint == base.data_fingerprint
    prof = '\n[profiles.gpu.run]\nbackend = "cuda"\n'
    assert load_study(write_study(tmp_path, extra=prof), profile="gpu").backend == "cuda"
    with pytest.raises(StudyError) as e:
        load_study(write_study(tmp_path, extra=RUN.format("gpu")))
    assert "[run] backend = 'gpu'" in str(e.value) and "'cpu', 'cuda', 'auto'" in str(e.value)
    with pytest.raises(StudyError, match=r"unknown key 'backnd' in \[run\]\. Did you mean 'backend'"):
        load_study(write_study(tmp_path, extra='\n[run]\nbacknd = "cuda"\n'))
    with pytest.raises(StudyError, match=r"unknown sweep axis 'backend'.*run\.backend cannot be swept"):
        load_study(write_study(tmp_path, extra='backend = ["cpu", "cuda"]\n'))  # inside [sweep]


def test_cli_backend_flag_overrides_the_study_file(tmp_path, capsys, monkeypatch):
    p = build_parser()
    assert p.parse_args(["run", "x"]).backend is None
    assert p.parse_args(["run", "x", "--backend", "auto"]).backend == "auto"
    code, _, err = run_main(capsys, "run", "x", "--backend", "gpu")
    assert code == 2 and "invalid choice: 'gpu'" in err
    no_gpu(monkeypatch)  # the file asks for "cuda", which cannot run here
    path = write_study(tmp_path, replicates=2, extra=RUN.format("cuda"))
    code, out, err = run_main(capsys, "run", path, "--out", tmp_path / "a", "--no-progress", "--no-analyse")
    assert code == 2 and "[run] backend = 'cuda'" in err and NO_GPU in err and len(err.splitlines()) == 1
    assert not (tmp_path / "a" / "small").exists()  # refused before any work
    code, out, err = run_main(capsys, "run", path, "--out", tmp_path / "b", "--no-progress", "--no-analyse",
                              "--backend", "cpu")
    assert code == 0, err
    assert " on cpu in " in out
    assert xr.load_dataset(tmp_path / "b" / "small" / "data.nc").attrs["study_backend"] == "cpu"


def test_auto_without_a_gpu_runs_on_the_cpu_resolved_once_with_a_warning(tmp_path, monkeypatch):
    no_gpu(monkeypatch)
    spec = load_study(write_study(tmp_path, replicates=4, extra=RUN.format("auto")))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = run(spec, tmp_path / "out")
    auto = [x for x in w if issubclass(x.category, RuntimeWarning) and "backend 'auto'" in str(x.message)]
    assert len(auto) == 1 and f"runs on the CPU: {NO_GPU}" in str(auto[0].message)  # once for 4 chunks
    assert res.backend == "cpu" and res.computed == spec.n_chunks == 4
    ds = xr.load_dataset(res.data_path)
    assert (ds.attrs["study_backend"], ds.attrs["study_device"]) == ("cpu", "cpu")
    with pytest.raises(StudyError, match=f"--backend cuda: {NO_GPU}"):
        run(spec, tmp_path / "out2", backend="cuda")


# ---- chunks ------------------------------------------------------------------------------------

def test_a_chunk_runs_its_kind_on_its_backend_and_records_it():
    spec = parse_study('[study]\nkind = "backend_probe"\nreplicates = 3\n')
    func, reps = KINDS["backend_probe"].func, np.arange(3)
    ds = _compute_chunk(func, spec, {}, reps, backend="cpu")
    assert (ds.attrs["chunk_backend"], ds.attrs["chunk_device"], ds.attrs["seen_backend"]) == ("cpu",) * 3
    ds = _compute_chunk(func, spec, {}, reps, backend="cuda")  # numba's CUDA simulator here
    assert ds.attrs["chunk_backend"] == ds.attrs["seen_backend"] == "cuda"
    assert ds.attrs["chunk_device"] == backend.device_description()
    assert default_backend() == "cpu"  # the thread's default is restored after the chunk


def test_every_chunk_and_data_record_the_backend(tmp_path):
    spec = load_study(write_study(tmp_path, replicates=4))
    res = run(spec, tmp_path / "out", keep_chunks=True)
    sd = StudyDir(res.out_dir)
    assert len(sd.chunk_files()) == 4
    assert {open_chunk(p).attrs["chunk_backend"] for p in sd.chunk_files()} == {"cpu"}
    ds = xr.load_dataset(res.data_path)
    assert ds.attrs["study_backend"] == "cpu" and not any(k.startswith("chunk_") for k in ds.attrs)
    assert " on cpu in " in res.summary()


def test_a_chunk_returned_from_another_backend_is_refused(tmp_path, monkeypatch):
    spec = load_study(write_study(tmp_path, replicates=2))

    def elsewhere(ds, name):  # a worker that ran the chunk on another backend than it was asked
        ds.attrs["chunk_backend"] = "cuda"
        return ds

    monkeypatch.setattr(study_execution, "_stamp_backend", elsewhere)
    with pytest.raises(OtherBackend, match="computed on backend 'cuda', not 'cpu' as asked"):
        run(spec, tmp_path / "out")
    assert not list((tmp_path / "out" / spec.id).glob("chunks/*.nc"))  # nothing of it was written


# ---- nothing mixed ------------------------------------------------------------------------------

def test_a_resume_never_mixes_chunks_of_two_backends(tmp_path, capsys):
    """Interrupted with 4 of 6 chunks... of which 2 were computed on the GPU, resumed on the CPU."""
    path = write_study(tmp_path)
    spec = load_study(path)
    out = tmp_path / "out"
    ref = run(spec, out, keep_chunks=True)
    reference = load(ref.data_path)
    sd = StudyDir(ref.out_dir)
    sd.data_path.unlink()
    victims = sd.chunk_files()[:2]
    for p in victims:
        fake_backend(p, "cuda")
    with pytest.raises(OtherBackend) as e:
        run(spec, out)
    msg = str(e.value)
    for part in ("2 chunk(s)", "computed on backend 'cuda'", "computes on backend 'cpu'", "--backend cuda",
                 "--recompute-stale", "keeping the 4 valid ones", victims[0].name):
        assert part in msg, (part, msg)
    code, _, err = run_main(capsys, "run", path, "--out", out, "--no-progress", "--no-analyse")
    assert code == 2 and "computed on backend 'cuda'" in err and len(err.splitlines()) == 1
    assert len(sd.chunk_files()) == 6 and not sd.data_path.exists()  # nothing deleted, nothing mixed
    res = run(spec, out, recompute_stale=True)
    assert sorted(res.other_backend) == sorted(p.name for p in victims)
    assert (res.reused, res.computed) == (4, 2)
    assert load(res.data_path).identical(reference)


def test_old_chunks_count_as_cpu_and_a_store_resumes_on_its_own_backend(tmp_path):
    spec = load_study(write_study(tmp_path, replicates=4))
    out = tmp_path / "out"
    ref = run(spec, out, keep_chunks=True)
    reference = load(ref.data_path)
    sd = StudyDir(ref.out_dir)
    # chunks written before the GPU backend record none: they are "cpu"
    sd.data_path.unlink()
    for p in sd.chunk_files():
        fake_backend(p, None)
    res = run(spec, out)
    assert (res.reused, res.computed) == (4, 0) and load(res.data_path).identical(reference)
    # a store of "cuda" chunks resumes under --backend cuda (nothing to compute: no kernel runs)
    sd.data_path.unlink()
    for p in sd.chunk_files():
        fake_backend(p, "cuda")
    res = run(spec, out, backend="cuda")
    assert (res.reused, res.computed, res.backend) == (4, 0, "cuda")
    ds = xr.load_dataset(res.data_path)
    assert (ds.attrs["study_backend"], ds.attrs["study_device"]) == ("cuda", "a faked GPU")
    # finished on "cuda", asked "cpu": kept with a note; --recompute-stale recomputes it on the CPU
    lines = []
    res = run(spec, out, log=lines.append)
    assert res.status == "already complete"
    assert any("note:" in x and "'cuda'" in x and "'cpu'" in x and "--recompute-stale" in x for x in lines), lines
    res = run(spec, out, recompute_stale=True)
    assert (res.reused, res.computed, len(res.other_backend)) == (0, 4, 4)
    assert load(res.data_path).identical(reference)


# ---- what runs inside a chunk, and the audits -------------------------------------------------------

def test_a_neighbour_search_in_a_study_follows_the_study_backend(tmp_path, monkeypatch):
    text = (REPO / "studies" / "p1_thm4_tightness.toml").read_text()
    spec = parse_study(text.replace("[profiles.quick]", "[profiles.tiny]\nstudy.replicates = 2\nstudy.chunk = 2\n"
                                    "algorithm.T = 20\nalgorithm.checkpoints = 3\nsearch.replicates = 2\n"
                                    "search.max_evals = 4\nsearch.screen = 1\n\n[profiles.quick]"), profile="tiny")
    seen = spy_run_twin_backend(monkeypatch)
    res = run(spec, tmp_path / "out", backend="cuda")
    assert res.backend == "cuda" and len(seen) > 4  # the search's evaluations and the chunk's runs
    assert set(seen) == {(None, "cuda")}


def test_an_audit_runs_on_the_chosen_backend(monkeypatch, capsys):
    seen = spy_run_twin_backend(monkeypatch)
    X, y = np.tile([1.0, 0.0], (20, 1)), np.ones(20)
    rep = ar.run_audit("p4_alg1", X, y, loss="point_logistic", T=10, eta=0.05, eps=8.0, delta=1e-3,
                       replicates=8, seed=1, accountant=False, verbose=False, backend="cuda")
    assert rep.backend == "cuda" and "backend=cuda" in rep.summary()
    assert seen and set(seen) == {(None, "cuda")}
    assert default_backend() == "cpu"
    assert audit_parser().parse_args(["p4_alg1", "--eps", "1"]).backend == "cpu"
    assert audit_parser().parse_args(["p4_alg1", "--eps", "1", "--backend", "auto"]).backend == "auto"
    no_gpu(monkeypatch)
    seen.clear()
    code, _, err = run_main(capsys, "audit", "p4_alg1", "--eps", "1", "--n", "20", "--replicates", "8",
                            "--T", "10", "--backend", "cuda")
    assert code == 2 and NO_GPU in err and not seen  # refused before any run
