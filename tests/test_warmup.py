"""stabsim.compile.warmup: the recorded kernels compile in worker processes into numba's on-disk cache,
once per source version, and a run then loads them; stabsim.study.warm: a few studies' kernels;
tools/record_kernels.py: what is recorded.  No timing is asserted."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
from numba import types

from stabsim.compile import signatures as kernel_signatures
from stabsim.engine import rng
from stabsim.compile import warmup
from stabsim.study import warm as study_warm

SIG = (types.uint64, types.int64, types.Array(types.float64, 1, "C"))
TOOL = Path(__file__).resolve().parents[1] / "tools" / "record_kernels.py"


def record_tool():
    """The maintainer's recording script (tools/record_kernels.py), imported as a module."""
    spec = importlib.util.spec_from_file_location("record_kernels", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_recorded_signatures_resolve_to_kernels():
    entries = kernel_signatures.load_signatures()
    assert entries, "stabsim/data/kernel_signatures.pkl is missing or unreadable"
    paths = {(m, p) for m, p, _ in entries}
    assert ("stabsim.kernels.twin", "_twin_kernel") in paths   # the twin kernel and its replicates
    assert ("stabsim.kernels.twin", "_CPU_REPLICATES[0]") in paths
    for module, path, sigs in entries:
        disp = kernel_signatures.resolve(module, path)
        assert hasattr(disp, "compile") and sigs


def test_recorded_signatures_fit_the_kernels_arguments():
    """A kernel whose parameters changed makes its recorded signatures fail in the warm-up's
    workers (silently: the run then compiles them itself).  Re-record, or extend the record,
    when this fails: ``python tools/record_kernels.py`` with an empty numba cache."""
    import inspect

    for module, path, sigs in kernel_signatures.load_signatures():
        params = inspect.signature(kernel_signatures.resolve(module, path).py_func).parameters.values()
        fixed = sum(1 for q in params if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD))
        varargs = any(q.kind == q.VAR_POSITIONAL for q in params)
        for sig in sigs:
            assert len(sig) == fixed or (varargs and len(sig) > fixed), \
                f"{module}.{path}: recorded signature has {len(sig)} arguments, the kernel takes {fixed}"


def test_tasks_put_each_twin_replicate_alone_and_first():
    entries = [("stabsim.engine.rng", "fill_uniform", [SIG]), ("stabsim.kernels.twin", "_CPU_REPLICATES[3]", [SIG]),
               ("stabsim.engine.rng", "fill_normal", [SIG]), ("stabsim.kernels.twin", "_CPU_REPLICATES[0]", [SIG])]
    tasks = warmup.tasks(entries)
    assert [t[0][1] for t in tasks[:2]] == ["_CPU_REPLICATES[3]", "_CPU_REPLICATES[0]"]
    assert sorted(e[1] for e in tasks[2]) == ["fill_normal", "fill_uniform"]


def test_warm_compiles_in_workers_once_and_writes_the_marker(tmp_path, monkeypatch):
    monkeypatch.delenv("STABSIM_NO_WARMUP", raising=False)
    entries = [("stabsim.engine.rng", "fill_uniform", [SIG]), ("stabsim.engine.rng", "no_such_kernel", [SIG])]
    done = warmup.warm(processes=2, entries=entries, cache=tmp_path)
    assert done["compiled"] == 1 and done["failed"] == 1 and done["processes"] == 2
    assert (tmp_path / warmup.MARKER).exists()
    assert warmup.warm(processes=2, entries=entries, cache=tmp_path) is None   # once per version
    out = np.empty(3)
    rng.fill_uniform(rng.key(0, 0, 1), np.int64(0), out)   # the run's own call still works
    assert np.all((out >= 0) & (out < 1))


def test_warm_is_skipped_on_one_core_and_on_request(tmp_path, monkeypatch):
    entries = [("stabsim.engine.rng", "fill_uniform", [SIG])]
    assert warmup.warm(processes=1, entries=entries, cache=tmp_path) is None
    monkeypatch.setenv("STABSIM_NO_WARMUP", "1")
    assert warmup.warm(processes=2, entries=entries, cache=tmp_path) is None
    assert not (tmp_path / warmup.MARKER).exists()


def test_a_pool_that_cannot_start_leaves_the_run_to_compile(tmp_path, monkeypatch):
    def broken(*a, **k):
        raise OSError("no semaphores here")

    monkeypatch.setattr(warmup, "ProcessPoolExecutor", broken)
    said = []
    entries = [("stabsim.engine.rng", "fill_uniform", [SIG])]
    assert warmup.warm(processes=2, entries=entries, cache=tmp_path, log=said.append) is None
    assert "warm-up skipped: OSError: no semaphores here" in said[-1]
    assert not (tmp_path / warmup.MARKER).exists()


def test_studies_records_name_kernels_of_the_suites_list():
    """Each built-in study's record (``warm_studies``) names kernels that exist, with signatures the
    suite's warm-up also compiles: a record out of step with the kernels only wastes the warm-up."""
    from stabsim.study import default_studies_dir

    table = kernel_signatures.load_study_kernels()
    assert table, "stabsim/data/study_kernels.pkl is missing or unreadable"
    studies = {p.stem for p in default_studies_dir().glob("*.toml")}
    assert set(table) <= studies and len(table) >= len(studies) - 2
    # by kernel, not by name: a kernel imported into several modules is named after the first one found
    suite = {id(kernel_signatures.resolve(m, p)): sigs for m, p, sigs in kernel_signatures.load_signatures()}
    assert sum(bool(e) for e in table.values()) > len(table) // 2   # (a few, such as P2's privacy table, use none)
    for sid, entries in table.items():
        for module, path, sigs in entries:
            disp = kernel_signatures.resolve(module, path)
            assert hasattr(disp, "compile")
            assert all(s in suite.get(id(disp), ()) for s in sigs), (sid, module, path)
    twin_kinds = [e for e in table["p1_thm4_gen"] if e[1].startswith("_CPU_REPLICATES")]
    assert twin_kinds, "a P1 study without its twin replicate"


def test_warm_studies_compiles_only_what_is_not_cached(tmp_path, monkeypatch):
    import pickle

    from stabsim.compile import beside as compile_beside

    table = {"a": [("stabsim.engine.rng", "fill_uniform", [SIG]), ("stabsim.kernels.twin", "checkpoint_sums", [SIG])],
             "b": [("stabsim.engine.rng", "fill_uniform", [SIG]), ("stabsim.engine.rng", "fill_normal", [SIG])]}
    path = tmp_path / "studies.pkl"
    path.write_bytes(pickle.dumps(table))
    assert study_warm.study_entries(["a", "b", "user's own"], path) == [
        ("stabsim.engine.rng", "fill_uniform", [SIG]), ("stabsim.kernels.twin", "checkpoint_sums", [SIG]),
        ("stabsim.engine.rng", "fill_normal", [SIG])]
    asked = []
    monkeypatch.setattr(study_warm, "warm", lambda *a, **k: asked.append(k) or {"compiled": 1})
    cached = set()
    monkeypatch.setattr(compile_beside, "cached", lambda disp, sig: disp.py_func.__name__ in cached)
    assert study_warm.warm_studies(["a"], path=path) == {"compiled": 1}     # two modules: two tasks
    assert asked[-1]["entries"] == table["a"] and asked[-1]["mark"] is False
    cached.add("checkpoint_sums")
    assert study_warm.warm_studies(["a"], path=path) is None               # one task left: compiled as usual
    cached.add("fill_uniform")
    assert study_warm.warm_studies(["a", "b"], path=path) is None
    assert len(asked) == 1


def test_a_users_study_gets_the_kernels_every_alike_built_in_study_uses(tmp_path, monkeypatch):
    """A study without a record (a user's own) is warmed with the kernels that every built-in study of
    its kind and algorithm uses (the intersection: nothing that one of them does without)."""
    import pickle

    studies = tmp_path / "studies"
    studies.mkdir()
    for sid, kind, alg in (("a", "twin_risk", "p1_alg1"), ("b", "twin_risk", "p1_alg1"), ("c", "twin", "p1_alg1"),
                           ("d", "privacy_audit", None)):
        body = f'[study]\nid = "{sid}"\nkind = "{kind}"\n' + (f'[algorithm]\nname = "{alg}"\n' if alg else
                                                                '[audit]\nalgorithm = "p4_alg1"\n')
        (studies / f"{sid}.toml").write_text(body)
    (studies / "broken.toml").write_text("not toml [")
    assert study_warm.stand_ins("twin_risk", "p1_alg1", studies) == ["a", "b"]
    assert study_warm.stand_ins("privacy_audit", "p4_alg1", studies) == ["d"]
    assert study_warm.stand_ins("twin_risk", "p4_alg1", studies) == []
    assert study_warm.study_likeness("twin", {"algorithm": {"name": "p1_alg1"}}) == ("twin", "p1_alg1")
    assert study_warm.study_likeness("privacy_audit", {"audit": {"algorithm": "p2_alg1"}}) == \
        ("privacy_audit", "p2_alg1")

    other = "(float64,)"
    table = {"a": [("stabsim.engine.rng", "fill_uniform", [SIG, other]), ("stabsim.kernels.twin", "checkpoint_sums", [SIG])],
             "b": [("stabsim.engine.rng", "fill_uniform", [SIG]), ("stabsim.engine.rng", "fill_normal", [SIG])],
             "c": [("stabsim.engine.rng", "fill_normal", [SIG])]}
    path = tmp_path / "studies.pkl"
    path.write_bytes(pickle.dumps(table))
    like = {"mine": ("twin_risk", "p1_alg1"), "odd": ("twin_risk", "p4_alg1")}
    orig = study_warm.stand_ins
    monkeypatch.setattr(study_warm, "stand_ins", lambda kind, alg: orig(kind, alg, studies))
    assert study_warm.study_entries(["mine"], path, like) == [("stabsim.engine.rng", "fill_uniform", [SIG])]
    assert study_warm.study_entries(["odd", "mine2"], path, like) == []          # nothing alike / no likeness
    assert study_warm.study_entries(["c", "mine"], path, like) == [              # a recorded study: its record
        ("stabsim.engine.rng", "fill_normal", [SIG]), ("stabsim.engine.rng", "fill_uniform", [SIG])]
    assert study_warm.study_entries(["mine"], path) == []                            # no likeness given: none


def test_record_studies_runs_each_study_alone_and_skips_one_that_fails(tmp_path, capsys):
    out = tmp_path / "studies.pkl"
    assert record_tool().record_studies(["p2_thm1_privacy", "no_such_study"], out=out) == 1
    assert kernel_signatures.load_study_kernels(out) == {"p2_thm1_privacy": []}   # a privacy table: no kernel
    assert "no_such_study: not recorded" in capsys.readouterr().err
