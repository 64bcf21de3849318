"""What holds the suite's memory (issue #17, item 4): each study's own peak RSS inside `stabsim run`.

    python benchmarks/suite_memory.py OUT.jsonl run suite --out DIR --no-progress   # any `stabsim` arguments

Runs the CLI in this process and, around every study's computation (``run_study``) and analysis
(``analyse``), resets the kernel's high-water mark (``/proc/self/clear_refs``, value 5) and records
one JSON line: RSS before, the step's peak (VmHWM), RSS after, wall and CPU seconds.  The step's
peak minus the RSS before it is what the step itself added.  Linux only.  Because the mark is
reset, ``/usr/bin/time``'s maximum RSS of such a run is not the run's peak: take the largest
``hwm`` of the file, or time an unrecorded run.  The warm-up's compile workers and the privacy
ledger's background process are other processes (their peaks: ``python -m stabsim.compile.warmup`` under
``/usr/bin/time``).  Measurements, never asserted.
"""

from __future__ import annotations

import json
import os
import sys
import time


def _status() -> dict:
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmHWM", "VmRSS")):
                key, val = line.split(":")
                out[key] = int(val.split()[0]) // 1024
    return out


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    import stabsim.reporting.analyse as report_study
    from stabsim import cli

    log = open(argv[0], "w")
    run_study, analyse = cli.run_study, report_study.analyse

    def recorded(step, name_of, fn):
        def wrapper(*a, **k):
            before, t0, c0 = _status()["VmRSS"], time.perf_counter(), sum(os.times()[:2])
            _reset_peak()
            result = fn(*a, **k)
            after = _status()
            log.write(json.dumps({"study": name_of(a), "step": step, "rss_before": before, "hwm": after["VmHWM"],
                                  "rss_after": after["VmRSS"], "s": round(time.perf_counter() - t0, 2),
                                  "cpu": round(sum(os.times()[:2]) - c0, 2)}) + "\n")
            log.flush()
            return result
        return wrapper

    cli.run_study = recorded("run", lambda a: a[0].id, run_study)
    report_study.analyse = recorded("analyse", lambda a: os.path.basename(str(a[0]).rstrip("/")), analyse)
    return cli.main(argv[1:])


if __name__ == "__main__":   # the warm-up's spawned workers import this file: nothing may run then
    sys.exit(main(sys.argv[1:]))
