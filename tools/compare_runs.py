"""Compare every <study>/data.nc under two output folders bit for bit (a maintainer tool).

Usage: python tools/compare_runs.py BEFORE AFTER   (e.g. out/ of the code before a refactor, and a fresh run)
Data variables and coordinates must be identical (NaN-aware, dtype-aware), except variables whose
name says they are a measured time (cpu/wall/seconds/time_s).  Attributes must be equal except
the ones that record when/where/which code produced the file.
"""
import sys, json
from pathlib import Path
import numpy as np
import xarray as xr

SKIP_ATTRS = {"git_commit", "created", "code_sha256", "code_git_commit", "code_git_dirty",
              "study_path", "stabsim_integrity", "versions",
              "study_file"}  # the study file's text (comments edited); its parsed spec, study_spec, is compared
TIME_WORDS = ("cpu", "wall", "seconds", "time_s", "elapsed", "timing")

def is_time(name):
    n = name.lower()
    return any(w in n for w in TIME_WORDS)

def same(a, b):
    a = np.asarray(a); b = np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return a.tobytes() == b.tobytes()
    return np.array_equal(a, b)

def compare(p, q):
    bad = []
    A = xr.open_dataset(p); B = xr.open_dataset(q)
    names = set(A.variables) | set(B.variables)
    for v in sorted(names):
        if v not in A.variables or v not in B.variables:
            bad.append(f"variable {v} only in one"); continue
        if is_time(v):
            continue
        if not same(A[v].values, B[v].values):
            bad.append(f"variable {v} differs")
    for k in sorted(set(A.attrs) | set(B.attrs)):
        if k in SKIP_ATTRS:
            continue
        if str(A.attrs.get(k)) != str(B.attrs.get(k)):
            bad.append(f"attr {k}: {str(A.attrs.get(k))[:80]!r} != {str(B.attrs.get(k))[:80]!r}")
    return bad

def main():
    before, after = Path(sys.argv[1]), Path(sys.argv[2])
    studies = sorted(p.parent.name for p in before.glob("*/data.nc"))
    ok = diff = missing = 0
    for s in studies:
        q = after / s / "data.nc"
        if not q.exists():
            print(f"MISSING {s}"); missing += 1; continue
        bad = compare(before / s / "data.nc", q)
        if bad:
            diff += 1
            print(f"DIFF {s}: " + "; ".join(bad[:6]))
        else:
            ok += 1
    print(f"identical {ok}, different {diff}, missing {missing} (of {len(studies)})")
    return 1 if diff or missing else 0

if __name__ == "__main__":
    sys.exit(main())
