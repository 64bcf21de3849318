"""The grid of a study: one ``Cell`` per combination of the ``[sweep]`` axes (their cartesian
product in file order), with a stable, file-name-safe id (the chunk files are named after it)."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Cell:
    index: int
    id: str
    coords: dict


def expand_cells(sweep: dict) -> list[Cell]:
    """The cells of ``sweep`` (``{axis: [values]}``): the cartesian product of the axes in
    file order, cell i holding the i-th combination."""
    axes = list(sweep)
    out = []
    for i, combo in enumerate(itertools.product(*(sweep[a] for a in axes))):
        coords = dict(zip(axes, combo))
        out.append(Cell(i, _cell_id(i, coords), coords))
    return out


def _sanitize(v) -> str:
    s = re.sub(r"[^A-Za-z0-9.+-]+", "-", str(v)).strip("-")
    return s or "x"


def _cell_id(i: int, coords: dict) -> str:
    parts = [f"c{i:03d}"] + [f"{_sanitize(a)}{_sanitize(v)}" for a, v in coords.items()]
    cid = "_".join(parts).replace("__", "_")
    if len(cid) > 80:
        h = hashlib.sha256(json.dumps(coords, sort_keys=True, default=str).encode()).hexdigest()[:8]
        cid = f"{cid[:70]}-{h}"
    return cid


def _cell_label(cell: Cell) -> str:
    return "cell " + (", ".join(f"{k}={v}" for k, v in cell.coords.items()) or "(single cell)")
