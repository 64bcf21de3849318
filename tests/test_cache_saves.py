"""Two processes adding different signatures of one function to numba's cache at once
(stabsim.compile.cache, "Saves"): numba's own save can pair one signature's index entry with the other's
machine code; the serialized save cannot.

The two savers are threads with their own open files: ``fcntl.flock`` locks belong to an open
file, so two threads exclude each other as two processes do.  Each step of numba's save is held
at the point where the race needs it (with a timeout, so that a saver blocked by the lock only
delays the other)."""

from __future__ import annotations

import threading

import pytest

from stabsim.compile import cache as _cache

caching = pytest.importorskip("numba.core.caching")
pytest.importorskip("fcntl")

WAIT = 1.0


def _race(tmp_path, save):
    """A and B each add a new key; the interleaving that mixes them under numba's save: both read
    the (empty) index, A writes its index entry, B writes its own over it and its data, then A
    writes its data (under the same file name)."""
    stamp = (1.0, 10)
    a = caching.IndexDataCacheFile(str(tmp_path), "f-1.py", stamp)
    b = caching.IndexDataCacheFile(str(tmp_path), "f-1.py", stamp)
    b_read, a_index, b_done = threading.Event(), threading.Event(), threading.Event()

    def hold(obj, name, before=None, after=None):
        real = getattr(obj, name)

        def step(*args):
            if before is not None:
                before.wait(WAIT)
            out = real(*args)
            if after is not None:
                after.set()
            return out

        setattr(obj, name, step)

    hold(a, "_save_index", before=b_read, after=a_index)
    hold(a, "_save_data", before=b_done)
    hold(b, "_load_index", after=b_read)
    hold(b, "_save_index", before=a_index)

    def run_b():
        save(b, "key-B", "code of B")
        b_done.set()

    tb = threading.Thread(target=run_b)
    tb.start()
    save(a, "key-A", "code of A")
    tb.join()
    reader = caching.IndexDataCacheFile(str(tmp_path), "f-1.py", stamp)
    return {k: reader.load(k) for k in ("key-A", "key-B")}


def test_numbas_own_save_can_mix_two_signatures(tmp_path):
    """The race is real: without the lock, key B ends up naming A's code."""
    got = _race(tmp_path, caching.IndexDataCacheFile.save if caching.IndexDataCacheFile.save is not
                _cache._serialized_save else _cache._serialized_save.numba_save)
    assert got["key-B"] == "code of A"


def test_serialized_saves_keep_each_signature_with_its_code(tmp_path):
    assert _cache.serialize_cache_saves()
    assert caching.IndexDataCacheFile.save is _cache._serialized_save
    got = _race(tmp_path, _cache._serialized_save)
    assert got == {"key-A": "code of A", "key-B": "code of B"}


def test_a_new_entrys_data_is_written_before_its_index_entry(tmp_path):
    f = caching.IndexDataCacheFile(str(tmp_path), "g-1.py", (1.0, 10))
    order = []
    for name in ("_save_data", "_save_index"):
        real = getattr(f, name)
        setattr(f, name, lambda *a, _real=real, _name=name: order.append(_name) or _real(*a))
    _cache._serialized_save(f, "k", "v")
    _cache._serialized_save(f, "k", "w")   # the same key again: its data replaced, the index kept
    assert order == ["_save_data", "_save_index", "_save_data"]
    assert f.load("k") == "w"
