"""``ChunkWriter``: a study's finished chunks written on one background thread while the next
chunk computes.

Writing a chunk (``StudyDir.write_chunk``: netCDF encoding, the file's and the directory's
fsync, the read-back check, the rename) took about 20 ms in the main thread, half of it waiting
for the disk, with the computation stopped: about 2 900 fsyncs and 1 300 read-backs in the
full-profile suite.  Here the write of chunk k runs beside the computation of chunk k + 1 (the
kernels release the GIL).  The numbers do not change: a chunk is written exactly as before, and
chunks are written one at a time in the order they finished.

At most one chunk is being written: ``put`` waits for the previous write to finish first (and
raises its error there), so memory holds one finished chunk beside the one computing, as the
loop that wrote in place did (its last chunk stayed referenced while the next computed).
``finish`` waits for the last write; it runs on every way out of the loop, so a chunk that
finished computing is on disk before an interruption is reported (``stabsim.study.execution``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor


class ChunkWriter:
    """``write(ds, path)`` calls, one at a time in call order, on a background thread."""

    def __init__(self, write):
        self._write = write
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stabsim-chunk-writer")
        self._pending = None

    def put(self, ds, path) -> None:
        """Wait for the previous write (raising its error), then start writing ``ds`` to ``path``."""
        self._wait()
        self._pending = self._pool.submit(self._write, ds, path)

    def _wait(self) -> None:
        pending = self._pending
        if pending is None:
            return
        try:
            pending.result()
        except BaseException:
            if pending.done():  # its error; a Ctrl-C during the wait leaves it pending for finish()
                self._pending = None
            raise
        self._pending = None

    def finish(self, raise_errors: bool = True) -> None:
        """Wait for the last write and stop the thread.  ``raise_errors=False`` (another exception
        is on its way out): the write still completes, but its own error is not raised over it."""
        try:
            self._wait()
        except BaseException:
            if raise_errors:
                raise
        finally:
            self._pool.shutdown(wait=True)
