"""What a kind's function and a check receive: ``StudySpec``, a validated study (the effective
values: profile applied, defaults filled in; built by ``stabsim.study.parse_study``), and the
``Cell``s of its grid -- one per combination of the ``[sweep]`` axes (their cartesian product in
file order), with a stable, file-name-safe id (the chunk files are named after it)."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Cell:
    index: int
    id: str
    coords: dict

    @property
    def label(self) -> str:
        """``cell k=v, ...`` (``cell (single cell)`` without a sweep), for messages."""
        return "cell " + (", ".join(f"{k}={v}" for k, v in self.coords.items()) or "(single cell)")


def expand_cells(sweep: dict) -> list[Cell]:
    """The cells of ``sweep`` (``{axis: [values]}``): the cartesian product of the axes in
    file order, cell i holding the i-th combination."""
    axes = list(sweep)
    out = []
    for i, combo in enumerate(itertools.product(*(sweep[a] for a in axes))):
        coords = dict(zip(axes, combo))
        out.append(Cell(i, cell_id(i, coords), coords))
    return out


def sanitize(v) -> str:
    s = re.sub(r"[^A-Za-z0-9.+-]+", "-", str(v)).strip("-")
    return s or "x"


def cell_id(i: int, coords: dict) -> str:
    parts = [f"c{i:03d}"] + [f"{sanitize(a)}{sanitize(v)}" for a, v in coords.items()]
    cid = "_".join(parts).replace("__", "_")
    if len(cid) > 80:
        h = hashlib.sha256(json.dumps(coords, sort_keys=True, default=str).encode()).hexdigest()[:8]
        cid = f"{cid[:70]}-{h}"
    return cid


FORMAT_VERSION = 1
#: the fields of ``normalized()`` that only say how the replicates are chunked
CHUNKING_KEYS = ("replicates", "chunk")


@dataclass
class StudySpec:
    """A validated study: the effective values (profile applied, defaults filled in)."""

    id: str
    description: str
    kind: str
    seed: int
    replicates: int
    chunk: int
    suite: bool
    sections: dict            # the kind's sections: {"data": {...}, "algorithm": {...}, ...}
    sweep: dict               # axis -> list of normalised values (file order)
    bounds: dict
    profile: str | None = None
    path: str | None = None
    text: str = ""
    axes: dict = field(default_factory=dict)  # axis -> (section, key)
    check: dict = field(default_factory=dict)  # the [check] section (analysis only, not in the fingerprint)
    plugins: tuple = ()  # user modules ([study] plugins and --plugins), stabsim.registry.plugins
    data_source: dict | None = None  # [data] dataset/file: what was read (stabsim.study.data_sources)
    backend: str = "cpu"  # [run] backend: how, not what (not in the fingerprint; stabsim.engine.backend)
    # bound key -> its mismatches with this study's runs, for the bounds the study opted to use
    # outside their theorems' assumptions (stabsim.judging.applicability; not in the fingerprint)
    outside_assumptions: dict = field(default_factory=dict)

    # grid ---------------------------------------------------------------------------------
    def cells(self) -> list[Cell]:
        return expand_cells(self.sweep)

    def chunk_ranges(self) -> list[tuple[int, int]]:
        return [(s, min(s + self.chunk, self.replicates)) for s in range(0, self.replicates, self.chunk)]

    @property
    def n_chunks(self) -> int:
        return len(self.cells()) * len(self.chunk_ranges())

    def cell_params(self, cell) -> dict:
        """``{section: {key: value}}`` for one cell (``cell``: a Cell or its coords dict)."""
        coords = cell.coords if isinstance(cell, Cell) else cell
        out = copy.deepcopy(self.sections)
        for axis, value in coords.items():
            sec, key = self.axes[axis]
            out[sec][key] = value
        return out

    # identity -----------------------------------------------------------------------------
    def normalized(self) -> dict:
        """Everything that determines the data (not description, suite, bounds).  The code is
        not part of it: its identity is recorded beside every result (``stabsim.runtime.codeid``); nor
        is ``[run] backend``: the backend is recorded beside every chunk (``chunk_backend``)."""
        out = {"id": self.id, "kind": self.kind, "seed": self.seed, "replicates": self.replicates,
               "chunk": self.chunk, "sections": self.sections, "sweep": self.sweep,
               "format": FORMAT_VERSION}
        if self.plugins:  # the code identity covers stabsim only: a plugin's source is part of the study
            from stabsim.registry.plugins import plugin_hashes

            out["plugins"] = plugin_hashes(self.plugins)
        if self.data_source and self.data_source.get("sha256"):  # a changed file is another study
            out["data_file_sha256"] = self.data_source["sha256"]
        return out

    @property
    def fingerprint(self) -> str:
        text = json.dumps(self.normalized(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    @property
    def data_fingerprint(self) -> str:
        """The fingerprint without ``replicates`` and ``chunk``: replicate r is a pure function
        of (this, cell, r), so chunks with the same data fingerprint hold valid replicates for
        any replicate count and chunk size (the ``chunk_fingerprint`` attr of chunks)."""
        norm = {k: v for k, v in self.normalized().items() if k not in CHUNKING_KEYS}
        text = json.dumps(norm, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def cell_fingerprints(self) -> dict:
        """``{cell id: fingerprint}``: what one cell's replicates are a function of -- the data
        fingerprint's fields with the cell's own parameters (``cell_params``) in place of the
        sections and the sweep.  A chunk records it (``chunk_cell_fingerprint``), so a cell
        whose definition did not change keeps its chunks when the sweep around it changes."""
        base = {k: v for k, v in self.normalized().items() if k not in CHUNKING_KEYS + ("sections", "sweep")}
        out = {}
        for cell in self.cells():
            norm = {**base, "sections": self.cell_params(cell), "cell": cell.coords, "cell_id": cell.id}
            text = json.dumps(norm, sort_keys=True, separators=(",", ":"), default=str)
            out[cell.id] = hashlib.sha256(text.encode()).hexdigest()[:20]
        return out

