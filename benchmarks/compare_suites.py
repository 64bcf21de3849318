"""Two runs of the suite side by side: the same verdicts?  How far apart are the numbers?

    python benchmarks/compare_suites.py CPU_OUT GPU_OUT [--markdown FILE]

Made for ``stabsim run suite --backend cuda`` against a CPU run of the same profile and seeds
(docs/gpu.md): the GPU's numbers agree with the CPU's to rounding, not bit for bit, so a study's
data.nc is compared by the largest relative difference of its floating-point variables (integer
and string variables must be equal; also the largest difference relative to a variable's largest
magnitude, with that variable's name), and its verdicts row by row (theorem key, verdict).  A study
found in one folder only is listed.  Exit status 1 when a verdict differs or a study is missing
from the second folder, else 0.

P1 Table 1 measures CPU seconds: its ``cpu`` variable differs between any two runs and is left
out of the numeric comparison (named in the output).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import xarray as xr

#: variables that measure the machine (wall or CPU seconds), not the algorithm
TIMED = {"cpu", "seconds", "wall_s"}


def verdicts(study: Path) -> list[tuple[str, str]]:
    path = study / "analysis.json"
    if not path.exists():
        return []
    rows = json.loads(path.read_text()).get("rows") or []
    return [(r.get("key", ""), r.get("verdict", "")) for r in rows]


def max_rel_diff(a: Path, b: Path) -> tuple[float, list[str], tuple[str, float]]:
    """Largest relative difference over the floating-point variables of two data.nc files
    (NaN in both, or the same infinity, counts as equal), the variables that differ in kind
    (shape, integers or strings, a NaN or an infinity in one run only), and (variable, difference)
    for the largest difference relative to its variable's largest magnitude: a pointwise relative
    difference of a number that is rounding noise next to its variable's scale (a distance of
    1e-34 where others are 0.1) says nothing, the scaled one does."""
    worst, bad, where = 0.0, [], ("", 0.0)
    with xr.open_dataset(a) as da, xr.open_dataset(b) as db:
        for name in da.data_vars:
            if name in TIMED:
                continue
            if name not in db:
                bad.append(f"{name} (missing)")
                continue
            x, y = da[name].values, db[name].values
            if x.shape != y.shape:
                bad.append(f"{name} (shape {x.shape} vs {y.shape})")
            elif x.dtype.kind == "f":
                same = (x == y) | (np.isnan(x) & np.isnan(y))   # equal infinities too
                if np.any(np.isnan(x[~same]) | np.isnan(y[~same]) | np.isinf(x[~same]) | np.isinf(y[~same])):
                    bad.append(f"{name} (NaN or infinity in one run only)")
                elif np.any(~same):
                    diff = np.abs(x[~same] - y[~same])
                    worst = max(worst, float((diff / np.maximum(np.abs(x[~same]), np.finfo(float).tiny)).max()))
                    scale = float(np.max(np.abs(x[np.isfinite(x)]), initial=0.0))
                    scaled = float(diff.max()) / max(scale, np.finfo(float).tiny)
                    if scaled > where[1]:
                        where = (name, scaled)
            elif not np.array_equal(x, y):
                bad.append(name)
    return worst, bad, where


def compare(first: Path, second: Path) -> dict:
    studies = sorted({p.parent.name for p in first.glob("*/data.nc")} | {p.parent.name for p in second.glob("*/data.nc")})
    out = {"studies": [], "verdicts_differ": [], "missing": []}
    for name in studies:
        a, b = first / name, second / name
        if not (a / "data.nc").exists() or not (b / "data.nc").exists():
            out["missing"].append(f"{name} (only in {'first' if (a / 'data.nc').exists() else 'second'})")
            continue
        va, vb = verdicts(a), verdicts(b)
        rel, bad, (var, scaled) = max_rel_diff(a / "data.nc", b / "data.nc")
        same = va == vb
        if not same:
            out["verdicts_differ"].append(name)
        out["studies"].append({"study": name, "verdicts": len(va), "same_verdicts": same, "max_rel_diff": rel,
                               "variable": var, "scaled_diff": scaled, "differ_in_kind": bad})
    return out


def markdown(res: dict) -> str:
    rels = [s["max_rel_diff"] for s in res["studies"]]
    n = len(res["studies"])
    lines = [f"{n} studies in both runs; verdicts identical in {n - len(res['verdicts_differ'])} "
             f"({sum(s['verdicts'] for s in res['studies'])} verdict rows).", ""]
    if rels:
        bins = [(0.0, 0.0), (0.0, 1e-12), (1e-12, 1e-8), (1e-8, 1e-4), (1e-4, np.inf)]
        lines += ["| largest relative difference in data.nc | studies |", "|---|---|"]
        for lo, hi in bins:
            k = sum(1 for r in rels if (r == 0.0 if hi == 0.0 else lo < r <= hi))
            label = "0 (identical)" if hi == 0.0 else f"({lo:g}, {hi:g}]"
            lines.append(f"| {label} | {k} |")
        lines.append("")
        for s in sorted(res["studies"], key=lambda s: -s["max_rel_diff"])[:10]:
            if s["max_rel_diff"] > 1e-8:
                lines.append(f"- {s['study']}: {s['max_rel_diff']:.2e}; relative to a variable's largest magnitude "
                             f"at most {s['scaled_diff']:.1e} (`{s['variable']}`)")
    for name in res["verdicts_differ"]:
        lines.append(f"- verdicts differ: {name}")
    for name in res["missing"]:
        lines.append(f"- missing: {name}")
    for s in res["studies"]:
        if s["differ_in_kind"]:
            lines.append(f"- {s['study']}: {', '.join(s['differ_in_kind'])}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("first", type=Path)
    ap.add_argument("second", type=Path)
    ap.add_argument("--markdown", type=Path, default=None, help="also write the summary here")
    args = ap.parse_args(argv)
    res = compare(args.first, args.second)
    text = markdown(res)
    print(text, end="")
    if args.markdown:
        args.markdown.write_text(text)
    return 1 if res["verdicts_differ"] or any("only in first" in m for m in res["missing"]) else 0


if __name__ == "__main__":
    sys.exit(main())
