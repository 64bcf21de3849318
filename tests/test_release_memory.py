"""stabsim.resources.release_freed_memory: the heap that freed arrays leave behind goes back to the
system (glibc), as `stabsim run` does between studies."""

import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import numpy as np
    from stabsim.resources import release_freed_memory

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
