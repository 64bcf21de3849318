"""Nothing lost, nothing mixed: code identity of every stored result,
checksums of data.nc verified on every read, and valid work kept through lost manifests,
re-chunking, --force and --keep-chunks.  docs/reliability.md cites these tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import h5py
import pytest
import xarray as xr

import stabsim.runtime.codeid as codeid
from stabsim.study import execution as study_execution
from stabsim.compile.cache import AUTO_MARK, configure_numba_cache
from stabsim.runtime.data_integrity import DamagedData, verify_data
from stabsim.study.store import StudyDir, attrs_sha256, open_chunk, write_chunk_file
from stabsim.study import StaleCode, StudyError, load_study, run_study

from test_study import assert_identical, load, write_study

PKG = codeid.PACKAGE_DIR


def chunks(sd: StudyDir) -> list[str]:
    return [p.name for p in sd.chunk_files()]


def logger():
    lines = []
    return lines, lines.append


def run(spec, out, **kw):
    return run_study(spec, out, progress=False, **kw)


def other_code(monkeypatch, sha="0" * 64):
    """Make this process's code identity that of another source."""
    ident = dict(codeid._identity())
    ident["code_sha256"] = sha
    monkeypatch.setattr(codeid, "code_identity", lambda: dict(ident))
    return ident


def copy_package(tmp_path) -> Path:
    dest = tmp_path / "pkg" / "stabsim"
    shutil.copytree(PKG, dest, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc", "data"))
    return dest


# ---- 1. code identity ------------------------------------------------------------------------

def test_source_hash_covers_every_module(tmp_path):
    pkg = copy_package(tmp_path)
    base = codeid.source_sha256(pkg)
    assert base == codeid.source_sha256(PKG)  # the content, not the location
    for rel in ("engine/rng.py", "engine/losses.py", "kernels/twin.py", "analyses/base.py", "study/spec.py", "__init__.py"):
        f = pkg / rel
        text = f.read_text()
        f.write_text(text + "# a one-line edit\n")
        codeid.source_sha256.cache_clear()
        assert codeid.source_sha256(pkg) != base, rel
        f.write_text(text)
        codeid.source_sha256.cache_clear()
        assert codeid.source_sha256(pkg) == base
    (pkg / "new_helper.py").write_text("X = 1\n")  # a new module counts too
    codeid.source_sha256.cache_clear()
    assert codeid.source_sha256(pkg) != base


def test_identity_is_recorded_in_chunks_and_data(tmp_path):
    spec = load_study(write_study(tmp_path, replicates=4, chunk=2))
    res = run(spec, tmp_path / "out", keep_chunks=True)
    mine = codeid.code_identity()
    ds = xr.load_dataset(res.data_path, engine="h5netcdf")
    for k in codeid.KEYS:
        assert str(ds.attrs[k]) == str(mine[k]), k
    assert len(ds.attrs["code_sha256"]) == 64 and "0.1.0" not in spec.fingerprint
    ch = open_chunk(StudyDir(res.out_dir).chunk_files()[0])
    assert ch.attrs["chunk_code_sha256"] == mine["code_sha256"]
    assert "stabsim_version" not in spec.normalized()


def test_resume_after_a_code_edit_is_refused_then_recomputes_only_stale_chunks(tmp_path, monkeypatch):
    """Interrupted with 4 of 6 chunks, the code edited (a helper module only), resumed."""
    path = write_study(tmp_path)
    spec = load_study(path)
    clean = run(spec, tmp_path / "clean")
    out = tmp_path / "out"
    run(spec, out, keep_chunks=True)
    sd = StudyDir(out / spec.id)
    sd.data_path.unlink()
    for p in sd.chunk_files()[4:]:
        p.unlink()  # the interruption
    # the edit: rng.py changes, so does the source hash of the running code
    pkg = copy_package(tmp_path)
    (pkg / "engine" / "rng.py").write_text((pkg / "engine" / "rng.py").read_text() + "# edited\n")
    new = other_code(monkeypatch, codeid.source_sha256(pkg))
    with pytest.raises(StaleCode) as e:
        run(spec, out)
    msg = str(e.value)
    old_sha = codeid._identity()[0][1]
    assert old_sha[:12] in msg and new["code_sha256"][:12] in msg, msg
    assert "4 chunk(s)" in msg and "--recompute-stale" in msg and "sha256:" in msg
    assert len(chunks(sd)) == 4 and not sd.data_path.exists()  # nothing deleted, nothing mixed
    res = run(spec, out, recompute_stale=True)
    assert (res.reused, res.computed, len(res.stale)) == (0, 6, 4)
    assert xr.load_dataset(res.data_path).attrs["code_sha256"] == new["code_sha256"]
    a, b = load(clean.data_path), load(res.data_path)  # the fake edit changes no number
    assert a.attrs.pop("code_sha256") != b.attrs.pop("code_sha256") and a.identical(b)


def test_only_the_chunks_of_other_code_are_stale(tmp_path):
    spec = load_study(write_study(tmp_path))
    out = tmp_path / "out"
    ref = run(spec, out, keep_chunks=True)
    reference = load(ref.data_path)
    sd = StudyDir(out / spec.id)
    sd.data_path.unlink()
    victim = sd.chunk_files()[2]
    ds = open_chunk(victim)
    ds.attrs["chunk_code_sha256"] = "f" * 64  # computed by other code (values and checksums intact)
    ds.attrs["chunk_attrs_sha256"] = attrs_sha256(ds)
    write_chunk_file(ds, victim)
    with pytest.raises(StaleCode, match=r"1 chunk\(s\).*ffffffffffff"):
        run(spec, out)
    res = run(spec, out, recompute_stale=True)
    assert res.stale == [victim.name] and (res.reused, res.computed) == (5, 1)
    assert load(res.data_path).identical(reference)


def test_finished_data_of_other_code_is_kept_with_a_note(tmp_path, monkeypatch):
    spec = load_study(write_study(tmp_path, replicates=2))
    out = tmp_path / "out"
    run(spec, out)
    other_code(monkeypatch)
    lines, log = logger()
    res = run(spec, out, log=log)
    assert res.status == "already complete"
    assert any("note:" in x and "--recompute-stale" in x for x in lines), lines
    res = run(spec, out, recompute_stale=True)
    assert res.computed == spec.n_chunks
    assert xr.load_dataset(res.data_path).attrs["code_sha256"] == "0" * 64


def test_a_worker_running_other_code_is_refused(tmp_path, monkeypatch):
    spec = load_study(write_study(tmp_path, replicates=2))
    # a worker of an older stabsim returns chunks without any code identity
    monkeypatch.setattr(study_execution, "_stamp_code", lambda ds, expected=None: ds)
    with pytest.raises(StaleCode, match="dask worker.*unknown identity"):
        run(spec, tmp_path / "a")
    monkeypatch.undo()
    # a dask worker (a thread of an in-process cluster) whose source hash differs
    from dask.distributed import Client, LocalCluster

    real = codeid.code_identity
    ident = dict(real(), code_sha256="1" * 64)
    monkeypatch.setattr(codeid, "code_identity",
                        lambda: dict(ident) if threading.current_thread() is not threading.main_thread() else real())
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        with pytest.raises(StaleCode) as e:
            run(spec, tmp_path / "b", client=client)
    assert "dask worker" in str(e.value) and "111111111111" in str(e.value)
    assert not list((tmp_path / "b" / spec.id).glob("chunks/*.nc"))  # nothing of it was written


_KERNEL_PKG = {
    "helper.py": "from numba import njit\n\n@njit\ndef h(x):\n    return x + 1\n",
    "kern.py": "from numba import njit\nfrom .helper import h\n\n@njit(cache=True)\ndef k(x):\n    return h(x)\n",
    "__init__.py": "",
}
_RUNNER = """
import sys
sys.path.insert(0, sys.argv[1])
from stabsim.compile.cache import configure_numba_cache
print(configure_numba_cache(sys.argv[1] + "/tpkg"))
from tpkg.kern import k
print(k(1))
"""


def test_numba_cache_follows_the_source_hash(tmp_path):
    """numba checks only kern.py's stamp: an edit of helper.py alone must not be served stale."""
    pkg = tmp_path / "tpkg"
    pkg.mkdir()
    for name, text in _KERNEL_PKG.items():
        (pkg / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", AUTO_MARK)}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")

    def go():
        r = subprocess.run([sys.executable, "-c", _RUNNER, str(tmp_path)], capture_output=True, text=True,
                           env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        folder, value = r.stdout.split()
        return folder, int(value)

    f1, v1 = go()
    assert v1 == 2 and f1.startswith(str(tmp_path / "cache")) and list(Path(f1).rglob("*.nbi"))
    assert go() == (f1, 2)  # served from the cache
    (pkg / "helper.py").write_text(_KERNEL_PKG["helper.py"].replace("x + 1", "x + 2"))
    f2, v2 = go()
    assert v2 == 3 and f2 != f1


def test_numba_cache_folder_respects_the_user_and_ignores_an_inherited_one(tmp_path, monkeypatch):
    pkg = copy_package(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "c"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.delenv(AUTO_MARK, raising=False)
    assert configure_numba_cache(pkg) == str(tmp_path / "mine")  # the user's choice
    monkeypatch.setenv(AUTO_MARK, str(tmp_path / "mine"))  # ...but one stabsim chose is recomputed
    a = configure_numba_cache(pkg)
    assert a == str(tmp_path / "c" / "stabsim" / "numba" / codeid.source_sha256(pkg)[:16])
    (pkg / "engine" / "losses.py").write_text((pkg / "engine" / "losses.py").read_text() + "\n")
    codeid.source_sha256.cache_clear()
    b = configure_numba_cache(pkg)
    assert b != a and os.environ["NUMBA_CACHE_DIR"] == b
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    monkeypatch.setenv("XDG_CACHE_HOME", str(ro))
    if not os.access(ro, os.W_OK):  # (root writes anywhere)
        assert "stabsim-numba-" in configure_numba_cache(pkg)  # the temp-dir fallback


# ---- 2. integrity of data.nc ----------------------------------------------------------------

def _flip_value_byte(path: Path, var="dist_output"):
    with h5py.File(path, "r") as f:
        d = f[var]
        assert d.fletcher32
        info = d.id.get_chunk_info(0)
        offset, size = info.byte_offset, info.size
    with open(path, "r+b") as fh:
        fh.seek(offset + size // 2)
        b = fh.read(1)
        fh.seek(offset + size // 2)
        fh.write(bytes([b[0] ^ 0x10]))


def test_a_flipped_byte_in_data_values_is_never_taken_as_complete(tmp_path):
    spec = load_study(write_study(tmp_path))
    out = tmp_path / "out"
    ref = run(spec, out)
    reference = load(ref.data_path)
    _flip_value_byte(ref.data_path)
    with pytest.raises(Exception):  # any reader: HDF5 checks Fletcher-32
        xr.load_dataset(ref.data_path, engine="h5netcdf")
    from stabsim.reporting.analyse import load_results

    with pytest.raises(DamagedData, match="data.nc is damaged"):
        load_results(ref.out_dir)
    lines, log = logger()
    res = run(spec, out, log=log)
    assert res.status == "complete" and res.computed == spec.n_chunks
    said = [x for x in lines if "data.nc" in x and "damaged" in x]
    assert said and "recomputing 6 chunk(s)" in said[0] and "data.nc.damaged" in said[0], lines
    assert (ref.out_dir / "data.nc.damaged").exists()
    assert load(res.data_path).identical(reference)


def test_a_changed_attr_is_detected(tmp_path):
    spec = load_study(write_study(tmp_path, replicates=2))
    res = run(spec, tmp_path / "out")
    with h5py.File(res.data_path, "r+") as f:
        f.attrs["seed"] = 8
    with pytest.raises(DamagedData, match="SHA-256"):
        verify_data(res.data_path)


def test_truncated_data_is_rebuilt_from_kept_chunks_or_recomputed_saying_so(tmp_path):
    spec = load_study(write_study(tmp_path))
    out = tmp_path / "out"
    ref = run(spec, out, keep_chunks=True)
    reference = load(ref.data_path)
    raw = ref.data_path.read_bytes()
    ref.data_path.write_bytes(raw[: len(raw) // 2])
    lines, log = logger()
    res = run(spec, out, log=log)
    assert (res.reused, res.computed) == (6, 0)
    assert any("damaged or unreadable" in x and "rebuilding it from the 6 kept chunk(s)" in x for x in lines), lines
    assert load(res.data_path).identical(reference)
    # without chunks: recomputed, after saying so
    shutil.rmtree(StudyDir(res.out_dir).chunk_dir)
    res.data_path.write_bytes(raw[:1000])
    lines, log = logger()
    res = run(spec, out, log=log)
    assert res.computed == 6 and any("recomputing 6 chunk(s)" in x for x in lines), lines
    assert load(res.data_path).identical(reference)


# ---- 3. never destroy valid work ------------------------------------------------------------

@pytest.mark.parametrize("damage", ["deleted", "garbage"])
def test_lost_or_damaged_study_json_keeps_every_valid_chunk(tmp_path, damage):
    spec = load_study(write_study(tmp_path))
    out = tmp_path / "out"
    ref = run(spec, out, keep_chunks=True)
    reference = load(ref.data_path)
    sd = StudyDir(ref.out_dir)
    sd.data_path.unlink()
    sd.chunk_files()[0].unlink()
    if damage == "deleted":
        sd.manifest_path.unlink()
    else:
        sd.manifest_path.write_text("{not json")
    lines, log = logger()
    res = run(spec, out, log=log)
    assert (res.reused, res.computed) == (5, 1)
    assert any("study.json" in x and "rebuilding it" in x for x in lines), lines
    assert json.loads(sd.manifest_path.read_text())["fingerprint"] == spec.fingerprint
    assert load(res.data_path).identical(reference)


def test_force_removes_only_what_is_invalid(tmp_path, capsys):
    spec = load_study(write_study(tmp_path, seed=7))
    other = load_study(write_study(tmp_path, "small", seed=8))
    out = tmp_path / "out"
    clean = run(spec, tmp_path / "clean")
    run(other, tmp_path / "o", keep_chunks=True)
    ref = run(spec, out, keep_chunks=True)
    sd = StudyDir(ref.out_dir)
    sd.data_path.unlink()
    sd.manifest_path.unlink()
    foreign = sd.chunk_files()[3]
    shutil.copy(StudyDir(tmp_path / "o" / "small").chunk_dir / foreign.name, foreign)  # another seed's
    with pytest.raises(StudyError, match="chunk.* of another study.*--force"):
        run(spec, out)
    assert len(chunks(sd)) == 6
    lines, log = logger()
    res = run(spec, out, force=True, log=log)
    assert (res.reused, res.computed) == (5, 1)
    assert any(x.startswith("--force: removed") and foreign.name in x for x in lines)
    assert_identical(clean.data_path, res.data_path)


def test_a_mismatch_names_the_keys_that_changed(tmp_path):
    out = tmp_path / "out"
    run(load_study(write_study(tmp_path, seed=7, replicates=2)), out)
    with pytest.raises(StudyError, match="refusing to mix") as e:
        run(load_study(write_study(tmp_path, seed=8, replicates=2, T=300)), out)
    assert "changed: sections.algorithm.T: 200 -> 300; seed: 7 -> 8;" in str(e.value)


def test_changed_chunk_and_replicates_reuse_every_valid_replicate(tmp_path):
    """replicate r depends only on (seed, r): a new chunking is assembled from the old chunks."""
    out = tmp_path / "out"
    run(load_study(write_study(tmp_path, replicates=6, chunk=2)), out, keep_chunks=True)
    sd = StudyDir(out / "small")
    sd.data_path.unlink()
    # chunk 2 -> 4 (re-chunked from the files of chunk 2), nothing computed
    path = write_study(tmp_path, replicates=6, chunk=4)
    lines, log = logger()
    res = run(load_study(path), out, log=log)
    assert res.computed == 0 and any("chunk: 2 -> 4" in x for x in lines), lines
    clean = run(load_study(path), tmp_path / "clean4")
    assert_identical(clean.data_path, res.data_path)
    # replicates 6 -> 9 (chunk 4): replicates 0..5 reused, only 6..8 computed (r6-8 and r8-9 per cell,
    # on the grid of chunk 4)
    path = write_study(tmp_path, replicates=9, chunk=4)
    res = run(load_study(path), out)
    assert (res.reused, res.computed) == (6, 4)
    assert "c000_n30__r6-8.nc" in chunks(sd) and "c000_n30__r8-9.nc" in chunks(sd)
    assert sorted(n for n in chunks(sd) if "__r" in n)[:2] == ["c000_n30__r0-2.nc", "c000_n30__r2-4.nc"]
    clean = run(load_study(path), tmp_path / "clean9")
    assert_identical(clean.data_path, res.data_path)
    # replicates 9 -> 3: data.nc from the kept chunks, none of them deleted (they are kept anyway)
    path = write_study(tmp_path, replicates=3, chunk=4)
    res = run(load_study(path), out)
    assert res.computed == 0
    assert_identical(run(load_study(path), tmp_path / "clean3").data_path, res.data_path)


def test_replicates_beyond_the_new_count_are_not_deleted(tmp_path):
    out = tmp_path / "out"
    run(load_study(write_study(tmp_path, replicates=4, chunk=2)), out, keep_chunks=True)
    sd = StudyDir(out / "small")
    m = json.loads(sd.manifest_path.read_text())
    m["keep_chunks"] = False  # forget --keep-chunks for this test
    sd.manifest_path.write_text(json.dumps(m))
    sd.keep_marker.unlink()
    lines, log = logger()
    res = run(load_study(write_study(tmp_path, replicates=2, chunk=2)), out, log=log)
    assert res.computed == 0
    assert chunks(sd) == ["c000_n30__r2-4.nc", "c001_n40__r2-4.nc"]  # 0-1 are in data.nc; 2-3 are not
    assert any("beyond replicates = 2" in x for x in lines), lines


def test_keep_chunks_is_remembered(tmp_path, capsys):
    from test_study import run_main

    path = write_study(tmp_path, replicates=4, chunk=2)
    out = tmp_path / "out"
    assert run_main(capsys, "run", path, "--out", out, "--no-progress", "--no-analyse", "--keep-chunks")[0] == 0
    sd = StudyDir(out / "small")
    assert json.loads(sd.manifest_path.read_text())["keep_chunks"] is True and len(chunks(sd)) == 4
    code, stdout, _ = run_main(capsys, "run", path, "--out", out, "--no-progress", "--no-analyse")
    assert code == 0 and "already complete" in stdout
    assert len(chunks(sd)) == 4  # the plain re-run kept them
    sd.data_path.unlink()
    assert run_main(capsys, "run", path, "--out", out, "--no-progress", "--no-analyse")[0] == 0
    assert len(chunks(sd)) == 4 and sd.data_path.exists()
