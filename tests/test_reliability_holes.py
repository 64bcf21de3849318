"""Nothing lost, nothing mixed, the last holes: every byte of data.nc that can change
a value is covered by a checksum, valid chunks survive a lost study.json and --force, an edited
chunk attr is damage, resource checks come before any allocation, and clear messages for a full
disk, a string step size and an out-of-range seed.  docs/reliability.md cites these tests."""

from __future__ import annotations

import errno
import json
import re
import shutil
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from stabsim.runtime.data_integrity import DamagedData, verify_data, write_data
from stabsim.study.store import StudyDir
from stabsim.study import load_study, run_study

from test_study import assert_identical, load, write_study


def run(spec, out, **kw):
    return run_study(spec, out, progress=False, **kw)


def logger():
    lines = []
    return lines, lines.append


# ---- 1. every byte of data.nc that can change a value is covered ----------------------------

def _small_dataset() -> xr.Dataset:
    """Several variables (2-D and 3-D floats, ints, a 0-d string and number, coordinates of
    every kind) and attrs, global and per variable."""
    R, C = 6, 12
    rng = np.random.default_rng(1)
    return xr.Dataset(
        {"loss_path": (("n", "replicate", "t"), rng.normal(size=(2, R, C)), {"long_name": "loss", "units": "1"}),
         "dist_iterate": (("n", "replicate", "t"), rng.random((2, R, C))),
         "k": (("n", "replicate"), rng.integers(0, 30, size=(2, R)), {"long_name": "index"}),
         "label": ((), "scalar text"), "total": ((), 3.5)},
        coords={"n": [30, 40], "replicate": np.arange(R), "t": np.arange(1, C + 1),
                "sum_eta": ("t", np.linspace(0.1, 1.2, C)), "run": ["S", "S'"]},
        attrs={"seed": 7, "eta": "0.05", "study_file": "[study]\nid = 'x'\n", "bounds": "{}"})


def _raw_chunk_index_keys(raw: bytes) -> list[int]:
    """Offsets of the first chunk key in every version-1 B-tree node of raw data chunks (the
    index HDF5 looks a variable's chunks up in: signature "TREE", node type 1).  A flipped bit
    there makes HDF5 miss the chunk and read fill values without an error; Fletcher-32 covers
    only the chunk's own bytes."""
    out = []
    for m in re.finditer(b"TREE", raw):
        if raw[m.start() + 4] == 1:  # raw data chunks
            key = m.start() + 24     # after signature, type, level, entries used, two sibling addresses
            out += list(range(key, key + 32, 4))  # chunk size, filter mask, chunk offsets
    return out


def _flip_index_of(path: Path, var: str) -> int:
    """Flip a bit of the first chunk offset in the B-tree key that makes HDF5 read ``var`` as
    all fill values (NaN) without an error; returns its offset."""
    import h5py

    raw = path.read_bytes()
    trials = [(m.start() + 32 + i // 8, 1 << (i % 8)) for m in re.finditer(b"TREE", raw)
              if raw[m.start() + 4] == 1 for i in range(64)]  # every bit of the first chunk offset
    for off, bit in trials:
        buf = bytearray(raw)
        buf[off] ^= bit
        trial = path.with_name(f"trial{off}-{bit}.nc")
        trial.write_bytes(bytes(buf))
        try:
            with h5py.File(trial, "r") as f:
                values = f[var][()]
        except Exception:  # noqa: BLE001  (this flip is caught by HDF5 itself)
            continue
        finally:
            trial.unlink()
        if np.isnan(values).all():
            path.write_bytes(bytes(buf))
            return off
    raise AssertionError(f"no B-tree key of {path} hides the chunks of {var}")


def _same(a: xr.Dataset, b: xr.Dataset) -> bool:
    return a.identical(b) and all(a[v].dtype == b[v].dtype for v in a.variables)


def test_every_flipped_bit_in_data_nc_is_detected_or_harmless(tmp_path):
    """A sweep of single-bit flips over a whole data.nc (every 401st byte, plus the chunk keys of
    every B-tree index node): each one is detected (DamagedData) or reads back equal, values and
    attrs.  The old checksum (values left to Fletcher-32) let the index-node flips through."""
    path = tmp_path / "data.nc"
    write_data(_small_dataset(), path)
    reference = verify_data(path)
    raw = path.read_bytes()
    index = _raw_chunk_index_keys(raw)
    assert len(index) >= 5 * 8, "the file should hold a B-tree node per chunked variable"
    offsets = sorted(set(range(0, len(raw), 401)) | set(index))
    detected, harmless, missed = 0, 0, []
    for off in offsets:
        buf = bytearray(raw)
        buf[off] ^= 1 << (off % 8)
        flipped = tmp_path / f"flipped{off}.nc"  # a new name each: xarray caches open files by path
        flipped.write_bytes(bytes(buf))
        try:
            ds = verify_data(flipped)
        except DamagedData:
            detected += 1
            continue
        finally:
            flipped.unlink()
        if _same(ds, reference):
            harmless += 1
        else:
            missed.append(off)
    print(f"\n{len(offsets)} flips over {len(raw)} bytes: {detected} detected, {harmless} harmless, "
          f"{len(missed)} undetected with changed values")
    assert not missed, f"flips at bytes {missed} changed values unnoticed"
    assert detected >= len(index) // 2 and detected + harmless == len(offsets)


def test_a_flipped_chunk_index_of_a_finished_study_is_never_complete(tmp_path):
    spec = load_study(write_study(tmp_path))
    out = tmp_path / "out"
    ref = run(spec, out, keep_chunks=True)
    reference = load(ref.data_path)
    _flip_index_of(ref.data_path, "loss_path")
    from stabsim.reporting.analyse import load_results

    with pytest.raises(DamagedData, match="data.nc is damaged"):
        load_results(ref.out_dir)
    lines, log = logger()
    res = run(spec, out, log=log)
    assert res.status == "complete" and (res.reused, res.computed) == (spec.n_chunks, 0)
    assert any("damaged" in x and "rebuilding it from the 6 kept chunk(s)" in x for x in lines), lines
    assert load(res.data_path).identical(reference)


# ---- 2. valid chunks are never deleted by a rebuild or --force --------------------------------

def test_keep_chunks_survives_a_lost_study_json(tmp_path):
    spec = load_study(write_study(tmp_path))
    out = tmp_path / "out"
    ref = run(spec, out, keep_chunks=True)
    sd = StudyDir(ref.out_dir)
    names = [p.name for p in sd.chunk_files()]
    assert len(names) == spec.n_chunks
    sd.manifest_path.unlink()
    res = run(spec, out)                     # data.nc complete: nothing to do, chunks kept
    assert res.status == "already complete" and [p.name for p in sd.chunk_files()] == names
    assert json.loads(sd.manifest_path.read_text())["keep_chunks"] is True
    sd.manifest_path.write_text("{garbage")
    sd.data_path.unlink()
    res = run(spec, out)                     # rebuilt from the chunks, which stay
    assert (res.reused, res.computed) == (spec.n_chunks, 0)
    assert [p.name for p in sd.chunk_files()] == names


def _sweep_study(tmp_path, values, name="small"):
    path = write_study(tmp_path, name)
    path.write_text(path.read_text().replace("n = [30, 40]", f"n = {values}"))
    return path


def test_force_after_extending_the_sweep_recomputes_only_new_cells(tmp_path):
    out = tmp_path / "out"
    run(load_study(_sweep_study(tmp_path, [30, 40])), out, keep_chunks=True)
    spec = load_study(_sweep_study(tmp_path, [30, 40, 50]))
    lines, log = logger()
    res = run(spec, out, force=True, log=log)
    assert (res.reused, res.computed) == (6, 3), lines
    assert_identical(run(spec, tmp_path / "clean").data_path, res.data_path)
    # a cell whose own definition changed (T) is recomputed; nothing is mixed
    path = write_study(tmp_path, T=300)
    path.write_text(path.read_text().replace("n = [30, 40]", "n = [30, 40, 50]"))
    spec = load_study(path)
    res = run(spec, out, force=True)
    assert (res.reused, res.computed) == (0, 9)
    assert_identical(run(spec, tmp_path / "clean300").data_path, res.data_path)


# ---- 3. chunk attrs are part of the chunk's checksum ------------------------------------------

def test_an_edited_attr_in_a_kept_chunk_is_damage(tmp_path):
    spec = load_study(write_study(tmp_path))
    out = tmp_path / "out"
    ref = run(spec, out, keep_chunks=True)
    reference = load(ref.data_path)
    sd = StudyDir(ref.out_dir)
    chunk = sd.chunk_files()[2]
    raw = chunk.read_bytes()
    assert raw.count(b'"eta": "0.1"') == 1
    chunk.write_bytes(raw.replace(b'"eta": "0.1"', b'"eta": "0.7"'))
    sd.data_path.unlink()
    lines, log = logger()
    res = run(spec, out, log=log)
    assert (res.reused, res.computed) == (5, 1)
    assert res.invalid and res.invalid[0][0] == chunk.name and "attrs checksum" in res.invalid[0][1]
    assert load(res.data_path).identical(reference) and reference.attrs["eta"] == "0.1"


# ---- 4. checks before any allocation proportional to the request ------------------------------

def test_replicate_ids_are_not_built_before_the_memory_check(monkeypatch):
    from stabsim.runtime.resources import ResourceError
    from stabsim.engine.synthetic import make_problem
    from stabsim.engine.twin_runs import run_twin

    monkeypatch.setenv("STABSIM_MEMORY_LIMIT", "1G")
    X, y = make_problem("auc_separable", 4).sample(30, seed=1)
    tracemalloc.start()
    try:
        with pytest.raises(ResourceError, match="100000000 replicates"):
            run_twin(X, y, T=10, replicates=10**8)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 2**20, f"{peak / 2**20:.0f} MiB allocated before the refusal"


def _files_size(sd: StudyDir) -> int:
    return sum(p.stat().st_size for p in sd.chunk_files()) + sd.data_path.stat().st_size


@pytest.mark.parametrize("replicates, chunk, T, checkpoints", [(6, 2, 200, 12), (40, 10, 400, 30)])
def test_disk_estimate_covers_the_measured_files(tmp_path, replicates, chunk, T, checkpoints):
    from stabsim.study.needs import study_needs

    path = write_study(tmp_path, replicates=replicates, chunk=chunk, T=T)
    path.write_text(path.read_text().replace("checkpoints = 12", f"checkpoints = {checkpoints}"))
    spec = load_study(path)
    res = run(spec, tmp_path / "out", keep_chunks=True)
    measured = _files_size(StudyDir(res.out_dir))
    need = study_needs(spec)["disk"]
    assert measured <= need <= 2.5 * measured, (measured, need)


# ---- 5. clear messages ---------------------------------------------------------------------

def test_a_full_disk_while_writing_an_analysis_file_names_the_path(tmp_path, monkeypatch):
    from stabsim.study import store

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store.os, "fsync", full)
    target = tmp_path / "study" / "summary.md"
    target.parent.mkdir()
    with pytest.raises(OSError, match=re.escape(str(target)) + ": the disk is full") as e:
        store.atomic_write_text(target, "text")
    assert e.value.errno == errno.ENOSPC and not list(target.parent.iterdir())


def test_a_string_step_size_and_an_out_of_range_seed_say_what_is_allowed():
    from stabsim.engine.synthetic import make_problem
    from stabsim.engine.twin_runs import run_twin

    X, y = make_problem("auc_separable", 4).sample(30, seed=1)
    with pytest.raises(TypeError, match="eta must be a positive number, a schedule .* or an array of T "
                                        "positive numbers; got the string '0.05'"):
        run_twin(X, y, T=10, replicates=2, eta="0.05")
    with pytest.raises(ValueError, match=re.escape("seed must be an integer in [0, 2**63 - 1]")):
        run_twin(X, y, T=10, replicates=2, seed=2**70)
    with pytest.raises(ValueError, match=re.escape("seed must be an integer in [0, 2**63 - 1]")):
        run_twin(X, y, T=10, replicates=2, seed=-1)


def test_a_data_nc_of_the_older_checksum_method_is_verified_and_upgraded(tmp_path):
    """A data.nc written with ``fletcher32+sha256-1`` (array values under Fletcher-32 only) is
    still read (its own rule), and a run that finds it complete rewrites it with the full SHA-256."""
    import h5py

    from stabsim.runtime.data_integrity import INTEGRITY_ATTR, _fletcher_ok, _integrity_digest, weak_checksum

    spec = load_study(write_study(tmp_path, replicates=2))
    out = tmp_path / "out"
    ref = run(spec, out)
    ds = verify_data(ref.data_path)
    old = "fletcher32+sha256-1"
    filtered = sorted(str(n) for n, v in ds.variables.items() if _fletcher_ok(v))
    ds.attrs.pop(INTEGRITY_ATTR)
    record = json.dumps({"method": old, "fletcher32": filtered,
                         "sha256": _integrity_digest(ds, filtered, method=old)}, sort_keys=True)
    with h5py.File(ref.data_path, "r+") as f:
        f.attrs[INTEGRITY_ATTR] = record
    assert weak_checksum(verify_data(ref.data_path))
    res = run(spec, out)
    assert res.status == "already complete"
    new = verify_data(res.data_path)
    assert not weak_checksum(new) and new.drop_attrs().identical(ds.drop_attrs())
