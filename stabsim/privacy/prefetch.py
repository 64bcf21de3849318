"""Account the privacy ledger in the background while a suite runs.

The report at the end of ``stabsim run suite`` has a privacy-ledger section: for every calibration
the suite's privacy studies use, the exact eps it buys and the sigma it would need
(:mod:`stabsim.privacy.ledger`).  Those are PLD computations of seconds each (benchmarks/README.md,
"The privacy ledger"), done once per source version and remembered on disk
(:mod:`stabsim.privacy.memo`).  On a fresh install, or after any code change, the report would
otherwise do them at the very end, on one core.

``start(study_ids)`` does them instead in a spawned process that starts with the run, so they
overlap with the studies (most of a study's analysis is single-threaded Python, leaving a core
free).  It writes the same memo the report reads; ``Prefetch.wait()`` before the report lets it
finish, so nothing is computed twice.  The numbers are those the report would compute itself:
the same functions, the same inputs, the memo's usual key.  Nothing starts when the memo is off
(``STABSIM_NO_LEDGER_CACHE=1``), when every row is already remembered, or when no worker process
can start (then the report computes the rows itself).
"""

from __future__ import annotations

import multiprocessing


def _account_all(mechanisms) -> None:
    import signal

    from stabsim.privacy import ledger

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's to handle (this is a daemon)
    for mech in mechanisms:
        ledger._accounted(mech)   # computes and writes the memo row (skips a row already there)


def missing_mechanisms(study_ids, studies_dir=None) -> list:
    """The distinct ledger mechanisms of these studies that the on-disk memo does not hold yet
    (in the report's order); empty when the memo is switched off."""
    from stabsim.privacy.ledger import suite_settings
    from stabsim.privacy.memo import memo_path, read_memo

    path = memo_path()
    if path is None:
        return []
    memo = read_memo(path)
    out, seen = [], set()
    ids = dict(study_ids) if isinstance(study_ids, dict) else set(study_ids)   # id -> profile, or ids
    for _, mech in suite_settings(studies_dir, ids):
        key = repr(mech)
        if key not in memo and key not in seen:
            seen.add(key)
            out.append(mech)
    return out


class Prefetch:
    """A running background accounting (see the module docstring)."""

    def __init__(self, process, count):
        self.process, self.count = process, count

    def wait(self, log=None) -> None:
        """Let the accounting finish (the report then reads every row from the memo).  A process
        that failed is reported through ``log``; the report then computes the missing rows."""
        self.process.join()
        if self.process.exitcode != 0 and log:
            log(f"background privacy-ledger accounting failed (exit code {self.process.exitcode}); "
                "the report accounts the missing rows itself")


def start(study_ids, studies_dir=None, log=None) -> Prefetch | None:
    """Start accounting the ledger rows of ``study_ids`` in a spawned process; None when there is
    nothing to do or no process can start."""
    try:
        todo = missing_mechanisms(study_ids, studies_dir)
        if not todo:
            return None
        # spawned, not forked: a fork of a process whose numba threads are running can hang
        proc = multiprocessing.get_context("spawn").Process(target=_account_all, args=(todo,), daemon=True,
                                                            name="stabsim-ledger")
        proc.start()
    except Exception as e:   # no worker processes (a sandbox), a study file the ledger cannot read:
        if multiprocessing.parent_process() is not None:   # a spawned child re-running an unguarded script
            raise
        if log:   # the report then handles its ledger section itself (computed there, or "not available")
            log(f"privacy ledger accounted at the report instead: {type(e).__name__}: {e}")
        return None
    if log:
        log(f"accounting {len(todo)} privacy-ledger rows in the background (for the report)")
    return Prefetch(proc, len(todo))
