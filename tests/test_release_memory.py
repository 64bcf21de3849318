"""stabsim.runtime.resources.release_freed_memory: the heap that freed arrays leave behind goes back to the
system (glibc), as `stabsim run` does between studies."""

import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import numpy as np
    from stabsim.runtime.resources import release_freed_memory

    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20

    base = rss_mb()
    blocks = [np.ones(8000) for _ in range(4000)]   # 4000 x 64 KB: below glibc's mmap threshold, in the heap
    keep = blocks[-1]                                # the heap top stays in use: free() alone cannot shrink it
    del blocks
    held = rss_mb()
    ran = release_freed_memory()
    print(ran, round(base), round(held), round(rss_mb()), keep.size)
""")


def test_freed_heap_goes_back_to_the_system():
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/statm")
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True).stdout.split()
    ran, base, held, after = out[0] == "True", float(out[1]), float(out[2]), float(out[3])
    if not ran:
        pytest.skip("no glibc malloc_trim here")
    assert held - base > 150          # about 250 MB freed but still held by the allocator
    assert after - base < 0.2 * (held - base)


ARENAS = textwrap.dedent("""
    import os, sys
    from stabsim.runtime.resources import limit_malloc_arenas
    ran = limit_malloc_arenas()
    print(ran, os.environ.get("MALLOC_ARENA_MAX"))
""")


@pytest.mark.parametrize("user", [None, "4"])
def test_stabsim_run_shares_one_heap_between_threads_unless_the_user_chose(user):
    """``limit_malloc_arenas`` (called by ``stabsim run``) sets glibc's arena limit in the process
    and, through MALLOC_ARENA_MAX, in the processes it starts; a limit the user set is kept."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    if user:
        env["MALLOC_ARENA_MAX"] = user
    out = subprocess.run([sys.executable, "-c", ARENAS], capture_output=True, text=True, check=True, env=env).stdout
    ran, value = out.split()
    if ran != "True" and not sys.platform.startswith("linux"):
        pytest.skip("no glibc mallopt here")
    assert ran == "True"
    assert value == (user or "1")


def test_stabsim_run_limits_the_arenas_before_it_runs(monkeypatch, tmp_path):
    """The CLI's ``run`` sets the limit first (before warm-up workers, the ledger process or
    numba's threads start)."""
    import stabsim.cli as cli

    calls = []
    monkeypatch.setattr(cli, "limit_malloc_arenas", lambda: calls.append("limit"))
    monkeypatch.setattr("stabsim.registry.load_builtin", lambda: calls.append("load"))
    assert cli.main(["run", "no_such_study_xyz", "--out", str(tmp_path)]) != 0   # (an unknown study)
    assert calls[:2] == ["limit", "load"]


FREEZE = textwrap.dedent("""
    import gc, weakref
    from stabsim.runtime.resources import freeze_long_lived

    class Node:
        pass

    def cycle():
        a, b = Node(), Node()
        a.other, b.other = b, a
        return weakref.ref(a)

    kept = Node()
    dead_before = cycle()            # garbage (an unreachable cycle) when the run freezes
    gc.disable()                     # so that only the calls below collect
    freeze_long_lived()
    frozen = gc.get_freeze_count()
    dead_after = cycle()             # garbage made later
    gc.collect()
    print(frozen, gc.is_tracked(kept), dead_before() is None, dead_after() is None)
""")


def test_freeze_long_lived_keeps_collecting_what_comes_later():
    """What is alive at the call is moved out of the collector's walks; garbage that exists at the
    call is collected first (not frozen, which would leak it), and cycles made later are still
    collected."""
    out = subprocess.run([sys.executable, "-c", FREEZE], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) > 1000        # the imported modules' objects
    assert out[1:] == ["True", "True", "True"]
