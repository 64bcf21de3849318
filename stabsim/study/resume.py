"""Resuming a study in ``OUT/<id>/`` (``stabsim.study.store``): whose directory it is
(``study.json``, ``_claim_dir``), whether ``data.nc`` is complete and verified
(``_check_data``), which chunk files are valid for this study and this code (``_scan_chunks``),
how they cover replicates 0..R-1 of every cell in any chunking and which chunks are missing
(``_plan_chunks``), and removing the chunks once data.nc holds them (``_remove_chunks``).
``stabsim.study.run`` runs these steps in order; docs/reliability.md lists every case."""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path
from typing import Any

import numpy as np

from stabsim import __version__
from stabsim.registry import StudyError, StudySpec
from stabsim.registry.spec import CHUNKING_KEYS, FORMAT_VERSION
from stabsim.study.store import StoreError, StudyDir, chunk_attrs, open_chunk, stored_backend, validate_chunk
from stabsim.study.assembly import _refresh_attrs
from stabsim.study.execution import OtherBackend, StaleCode, _code_mismatch


def _manifest(spec: StudySpec) -> dict:
    return {"format": FORMAT_VERSION, "study_id": spec.id, "fingerprint": spec.fingerprint,
            "data_fingerprint": spec.data_fingerprint,
            "stabsim_version": __version__, "kind": spec.kind, "profile": spec.profile, "seed": spec.seed,
            "replicates": spec.replicates, "chunk": spec.chunk, "n_cells": len(spec.cells()),
            "n_chunks": spec.n_chunks, "study_path": spec.path, "spec": spec.normalized(),
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def _data_complete(sd: StudyDir, spec: StudySpec) -> bool:
    """data.nc exists, its checksums verify, and it holds this study."""
    from stabsim.runtime.data_integrity import verify_data

    if not sd.data_path.exists():
        return False
    try:
        return verify_data(sd.data_path).attrs.get("study_fingerprint") == spec.fingerprint
    except StoreError:
        return False


def _flat(d, prefix="") -> dict:
    out = {}
    for k, v in (d or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


#: keys of old manifests' specs that are no longer part of the study's identity
_LEGACY_SPEC_KEYS = ("stabsim_version",)


def _spec_changes(old: dict | None, new: dict) -> list[tuple[str, Any, Any]]:
    """``(dotted key, old value, new value)`` for every key of the normalised spec that differs."""
    a = {k: v for k, v in _flat(old).items() if k not in _LEGACY_SPEC_KEYS}
    b = _flat(new)
    missing = object()
    out = []
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k, missing), b.get(k, missing)
        if va != vb:
            out.append((k, "(absent)" if va is missing else va, "(absent)" if vb is missing else vb))
    return out


def _changes_text(changes) -> str:
    return "; ".join(f"{k}: {o!r} -> {n!r}" for k, o, n in changes) or "no key (the fingerprint only)"


_FOREIGN = "attr chunk_fingerprint is"


def _move_aside(path: Path, suffix: str) -> Path:
    dest = path.with_name(path.name + suffix)
    os.replace(path, dest)
    return dest


def _claim_dir(spec, sd, result, log, *, force, keep_chunks):
    """Step 1, ``study.json``: does the directory belong to this study?  A lost or damaged one
    is rebuilt (every chunk and data.nc carries its own record); another study's is refused
    unless ``force``.  Removes leftover temporary files and (re)writes the manifest.  Returns
    ``(keep, foreign_study)``: whether chunks are kept after assembly, and whether the
    directory held another study (``force``: its files go)."""
    problem = None
    try:
        manifest = sd.read_manifest()
    except StoreError as e:
        manifest, problem = None, str(e)
    if manifest is None and problem is None and sd.has_results():
        problem = f"{sd.manifest_path} is missing"
    if problem:
        log(f"{spec.id}: {problem}; rebuilding it (every chunk and data.nc is checked against this study "
            "by its own records)")
    remembered_keep = bool(manifest and manifest.get("keep_chunks")) or sd.keeps_chunks()
    keep = bool(keep_chunks or remembered_keep)
    if keep:  # beside the chunks too: a lost study.json must not turn --keep-chunks off
        sd.mark_keep_chunks()
    foreign_study = False
    if manifest is not None and manifest.get("fingerprint") != spec.fingerprint:
        changes = _spec_changes(manifest.get("spec"), spec.normalized())
        data_changes = [c for c in changes if c[0] not in CHUNKING_KEYS]
        if data_changes:
            if not force:
                what = (f"study {manifest.get('study_id')!r} (profile {manifest.get('profile')}, seed "
                        f"{manifest.get('seed')}, fingerprint {manifest.get('fingerprint')})")
                raise StudyError(f"{sd.root} holds {what}, not this study {spec.id!r} (profile {spec.profile}, "
                                 f"seed {spec.seed}, fingerprint {spec.fingerprint}); changed: "
                                 f"{_changes_text(data_changes)}; refusing to mix results. Use another --out "
                                 "directory, or --force to remove the old study's files (chunks valid for this "
                                 "study are kept)")
            foreign_study = True
        elif changes:
            log(f"{spec.id}: {_changes_text(changes)}: every replicate already computed and valid is reused")
    result.removed_temps = [str(p) for p in sd.remove_temps()]
    new_manifest = {**_manifest(spec), "keep_chunks": keep}
    if manifest is None or any(manifest.get(k) != new_manifest[k] for k in ("fingerprint", "keep_chunks")):
        if manifest is not None and manifest.get("fingerprint") == spec.fingerprint:
            new_manifest["created"] = manifest.get("created", new_manifest["created"])
        sd.write_manifest(new_manifest)
    return keep, foreign_study


def _check_data(spec, sd, result, log, code, *, force, keep, recompute_stale, foreign_study, backend="cpu"):
    """Step 2, ``data.nc``: verified (checksums) before it is believed.  Returns ``(done,
    data_note)``: ``done`` when it already holds this study (its attrs refreshed, the chunks
    dropped unless kept; nothing left to do; computed by other code or on another backend
    than ``backend``: a note, or recomputed with ``recompute_stale``); ``data_note`` says why a
    damaged one was moved aside.  Another study's data.nc is refused unless ``force`` (then
    removed)."""
    from stabsim.runtime.codeid import describe, differences, matches, recorded_identity
    from stabsim.runtime.data_integrity import DamagedData, verify_data

    data_note = None
    if sd.data_path.exists():
        try:
            ds = verify_data(sd.data_path)
        except DamagedData as e:
            legacy = getattr(e, "legacy", False)
            dest = _move_aside(sd.data_path, ".unverified" if legacy else ".damaged")
            data_note = f"{e}; moved aside to {dest.name}"
        else:
            fp, dfp = ds.attrs.get("study_fingerprint"), ds.attrs.get("study_data_fingerprint")
            rec = recorded_identity(ds.attrs)
            other_be = stored_backend(ds.attrs) != backend
            if fp == spec.fingerprint and not (recompute_stale and (other_be or not matches(rec, code))):
                if not matches(rec, code):
                    log(f"{spec.id}: note: {sd.data_path} was computed by {describe(rec)}; this process runs "
                        f"{describe(code)} (changed: {'; '.join(differences(rec, code))}). It is kept as it is; "
                        "to recompute it with this code, run again with --recompute-stale")
                if other_be:
                    log(f"{spec.id}: note: {sd.data_path} was computed on backend {stored_backend(ds.attrs)!r}; "
                        f"this run asks for {backend!r} (the two agree only to rounding). It is kept as it is; "
                        f"to recompute it on {backend!r}, run again with --recompute-stale")
                result.status = "already complete"
                _refresh_attrs(sd, spec, ds)
                if not keep:
                    _remove_chunks(sd, spec)
                return True, data_note
            if dfp != spec.data_fingerprint and fp != spec.fingerprint:
                if not force:
                    raise StudyError(f"{sd.data_path} holds the results of another study (fingerprint {fp}), "
                                     f"not this study {spec.id!r} (fingerprint {spec.fingerprint}); refusing to "
                                     "mix results. Use another --out directory, or --force to remove it")
                foreign_study = True
            if foreign_study:
                sd.data_path.unlink()
                log(f"--force: removed {sd.data_path}")
            elif fp != spec.fingerprint:
                log(f"{spec.id}: {sd.data_path} holds this study with replicates = {ds.sizes.get('replicate')}; "
                    "it is replaced once the new result is assembled")
    return False, data_note


def _scan_chunks(spec, sd, cells, cjson, result, log, code, *, force, recompute_stale, backend="cpu") -> dict:
    """Step 3, the chunk files: each checks itself (study, cell, replicates, checksum, code,
    backend).  Invalid ones are deleted (their replicates recomputed); another study's are
    refused unless ``force``; chunks of other code (``StaleCode``) or computed on another
    backend than ``backend`` (``OtherBackend``) are refused unless ``recompute_stale``.
    Returns ``{cell id: [(start, stop, path), ...]}`` of the valid ones."""
    from stabsim.runtime.codeid import describe, recorded_identity
    from stabsim.study.store import CHUNK_RE, OTHER_BACKEND, STALE

    valid = {c.id: [] for c in cells}
    cell_fp = spec.cell_fingerprints()
    stale, foreign, bad, other_be = [], [], [], []
    for p in sd.chunk_files():
        m = CHUNK_RE.match(p.name)
        cid, a, b = m.group("cell"), int(m.group("start")), int(m.group("stop"))
        if cid not in valid or b <= a:
            if force:
                p.unlink()
                log(f"--force: removed {p}")
            else:
                log(f"{spec.id}: ignoring unexpected file {p}")
            continue
        meta = chunk_attrs(spec.data_fingerprint, cid, cjson[cid], np.arange(a, b), cell_fp[cid])
        reason = validate_chunk(p, meta, code=code, backend=backend)
        if reason is None:
            valid[cid].append((a, b, p))
        elif reason.startswith(STALE):
            stale.append(p)
        elif reason.startswith(OTHER_BACKEND):
            other_be.append(p)
        elif reason.startswith(_FOREIGN):
            foreign.append((p, reason))
        else:
            bad.append((p, reason))
    if foreign and not force:
        p, reason = foreign[0]
        raise StudyError(f"{sd.chunk_dir} holds {len(foreign)} chunk(s) of another study (e.g. {p.name}: {reason}), "
                         f"not of this study {spec.id!r}; refusing to mix results. Use another --out directory, "
                         "or --force to remove them (chunks valid for this study are kept)")
    for p, reason in foreign:
        p.unlink()
        log(f"--force: removed {p} ({reason})")
    for p, reason in bad:
        p.unlink()
        result.invalid.append((p.name, reason))
        log(f"{spec.id}: invalid chunk {p.name} ({reason}); removed, its replicates are recomputed")
    n_valid = sum(map(len, valid.values()))
    if stale:
        old = recorded_identity({k: v for k, v in open_chunk(stale[0]).attrs.items() if k.startswith("chunk_code_")})
        if not recompute_stale:
            raise StaleCode(_code_mismatch(
                f"{spec.id}: {len(stale)} chunk(s) in {sd.chunk_dir} were computed by", old, code,
                f"to recompute only those {len(stale)} chunk(s) with this code (keeping the {n_valid} valid ones "
                "it computed), run again with --recompute-stale (run_study(..., recompute_stale=True)); or use "
                "another --out directory"))
        for p in stale:
            p.unlink()
        result.stale = [p.name for p in stale]
        log(f"{spec.id}: --recompute-stale: removed {len(stale)} chunk(s) computed by {describe(old)}; "
            "recomputing them with this code")
    if other_be:
        _other_backend_chunks(spec, sd, other_be, n_valid, result, log, recompute_stale=recompute_stale,
                              backend=backend)
    return valid


def _other_backend_chunks(spec, sd, paths, n_valid, result, log, *, recompute_stale, backend) -> None:
    """Chunks valid for this study and code but computed on another backend: refused
    (``OtherBackend``: what is stored, what is asked, how to go on), or with
    ``recompute_stale`` deleted (recomputed on ``backend``)."""
    stored = sorted({stored_backend(open_chunk(p).attrs) for p in paths})
    names = " and ".join(map(repr, stored))
    if not recompute_stale:
        resume = (f"to resume on the stored backend, run again with --backend {stored[0]} (run_study(..., "
                  f"backend={stored[0]!r})); " if len(stored) == 1 else "")
        raise OtherBackend(
            f"{spec.id}: {len(paths)} chunk(s) in {sd.chunk_dir} were computed on backend {names} (e.g. "
            f"{paths[0].name}), but this run computes on backend {backend!r} ([run] backend / --backend). "
            "The backends agree only to rounding (about 1e-14), so mixing their chunks in one data.nc is "
            f"refused; {resume}to recompute only those {len(paths)} chunk(s) on {backend!r} (keeping the "
            f"{n_valid} valid ones), run again with --recompute-stale (run_study(..., recompute_stale=True)); "
            "or use another --out directory")
    for p in paths:
        p.unlink()
    result.other_backend = [p.name for p in paths]
    log(f"{spec.id}: --recompute-stale: removed {len(paths)} chunk(s) computed on backend {names}; "
        f"recomputing them on {backend!r}")


def _plan_chunks(spec, sd, cells, valid, cjson):
    """Step 4: cover replicates 0..R-1 of every cell with valid chunks (any chunking, the
    longest reaching one first); the gaps, cut at the spec's chunk boundaries, are jobs.
    Returns ``(cover, jobs, expected, used, reused_reps)``: ``{cell id: [(path, start, stop,
    lo, hi), ...]}`` (``assemble``'s ``cover``), ``[(cell, start, stop, path)]``, the attrs
    each new chunk must carry, the reused chunk files and the number of reused replicates."""
    R = spec.replicates
    cell_fp = spec.cell_fingerprints()
    cover, jobs, expected, used = {}, [], {}, set()
    reused_reps = 0
    for cell in cells:
        files = valid[cell.id]
        pieces, pos = [], 0
        while pos < R:
            best = max((f for f in files if f[0] <= pos < f[1]), key=lambda f: f[1], default=None)
            if best is not None:
                hi = min(best[1], R)
                pieces.append((best[2], best[0], best[1], pos, hi))
                used.add(best[2])
                reused_reps += hi - pos
                pos = hi
                continue
            gap_end = min([f[0] for f in files if f[0] > pos] + [R])
            while pos < gap_end:
                stop = min(gap_end, (pos // spec.chunk + 1) * spec.chunk)
                path = sd.chunk_path(cell.id, pos, stop)
                expected[path.name] = chunk_attrs(spec.data_fingerprint, cell.id, cjson[cell.id],
                                                  np.arange(pos, stop), cell_fp[cell.id])
                jobs.append((cell, pos, stop, path))
                pieces.append((path, pos, stop, pos, stop))
                pos = stop
        cover[cell.id] = pieces
    return cover, jobs, expected, used, reused_reps


def _log_plan(spec, log, result, data_note, cover, jobs, used, reused_reps, n_cells) -> None:
    """Say what a resumed run reuses and recomputes."""
    R = spec.replicates
    if data_note:
        how = (f"rebuilding it from the {len(used)} kept chunk(s)" if not jobs else
               f"recomputing {len(jobs)} chunk(s)" + (f" (reusing {len(used)} kept)" if used else ""))
        log(f"{spec.id}: {data_note}; {how}")
    if result.reused:
        log(f"{spec.id}: resuming, {result.reused} of {result.n_chunks} chunks already done")
        if reused_reps and any(not (a, b) in spec.chunk_ranges() for p, a, b, lo, hi in
                               (x for pcs in cover.values() for x in pcs) if p in used):
            log(f"{spec.id}: {reused_reps} of {R * n_cells} replicates reused from chunks of another "
                "chunking")


def _remove_chunks(sd: StudyDir, spec: StudySpec, log=None) -> None:
    """Delete the chunk files of this study's cells whose replicates data.nc holds (a chunk
    with replicates beyond ``replicates`` is valid work data.nc lacks: it stays)."""
    from stabsim.study.store import CHUNK_RE

    ids = {c.id for c in spec.cells()}
    kept = []
    for p in sd.chunk_files():
        m = CHUNK_RE.match(p.name)
        if m.group("cell") not in ids:
            continue
        if int(m.group("stop")) <= spec.replicates:
            p.unlink()
        else:
            kept.append(p.name)
    if kept and log is not None:
        log(f"{spec.id}: kept {len(kept)} chunk file(s) holding replicates beyond replicates = "
            f"{spec.replicates} (e.g. {kept[0]}): data.nc does not hold them")
    if sd.chunk_dir.is_dir() and not any(p for p in sd.chunk_dir.iterdir() if p.name != sd.keep_marker.name):
        sd.keep_marker.unlink(missing_ok=True)
        sd.chunk_dir.rmdir()
