"""Child processes that some tests wait for, started when the test session starts.

A few checks compile kernels from an empty numba cache in a child process (tests/test_nrt_free.py,
tests/test_cache_symbols.py, tests/test_cold_start.py): a minute of one core's compilation, with the
other core idle.  Others compile, in the test process, builds the warm-up does not (the CUDA
simulator's specialised builds: tests/test_cuda_backend.py, tests/test_bench_gpu_script.py): their
child does the same calls first, into the session's numba cache, and the tests load them.  Such
a test module defines ``EARLY_CHILDREN``, a list of keys, and ``early_child(key, folder)``,
which returns the child's (argv, env) for a folder it may write to (one per module).  When the
module is collected, ``tests/conftest.py`` starts these children at nice 10 in a session folder,
so they compile while other tests run (at a lower priority: a test's own OpenMP threads keep both
cores when they need them); the test takes them with ``results(module, tmp_path)``, which
starts them there and then when the session did not.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

NICE = 10
_started: dict = {}
_folder: list = []


def session_folder() -> Path:
    if not _folder:
        _folder.append(Path(tempfile.mkdtemp(prefix="stabsim-early-")))
    return _folder[0]


def _nice():
    os.nice(NICE)


def start(key, argv, env, nice=True) -> subprocess.Popen:
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_nice if nice else None)
    _started[key] = p
    return p


def _module_folder(module) -> Path:
    folder = session_folder() / module.__name__.rsplit(".", 1)[-1]
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def start_for(module) -> None:
    """Start the children of a collected test module (``EARLY_CHILDREN``)."""
    for key in getattr(module, "EARLY_CHILDREN", ()):
        if key not in _started:
            start(key, *module.early_child(key, _module_folder(module)))


def results(module, folder, timeout=900) -> tuple[dict, Path]:
    """The children of ``module`` (``EARLY_CHILDREN``), finished, as {key: CompletedProcess},
    and the folder they wrote to: those the session started (its folder), or, when it did not,
    all started now, together, at normal priority, writing to ``folder``."""
    keys = tuple(module.EARLY_CHILDREN)
    if all(k in _started for k in keys):
        procs = {k: _started.pop(k) for k in keys}
        folder = _module_folder(module)
    else:
        procs = {k: subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for k in keys for argv, env in [module.early_child(k, folder)]}
    done = {}
    for k, p in procs.items():
        out, err = p.communicate(timeout=timeout)
        done[k] = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    return done, folder


def stop_all() -> None:
    """Kill what no test took (a test failed or was deselected after collection) and remove the
    session folder."""
    for p in _started.values():
        p.kill()
        p.wait()
    _started.clear()
    for f in _folder:
        shutil.rmtree(f, ignore_errors=True)
    _folder.clear()
