"""docs/study-files.md is the user's reference of the study-file format: every section and key
the code accepts (the ``Param`` tables of ``stabsim.study.schema``, ``twin_params`` and the
registered kinds' ``params``) is named there, and it names no section, key or kind the code
does not accept.

The doc's structure read here: a heading naming a section in backticks (``## `[data]` ``,
``### `[bounds.custom.NAME]` ``) starts that section; each table row whose first cell is a
key in backticks names a key of it; a table with a ``kinds`` column names, per key, the kinds
that take it; the table under ``## Kinds`` lists the kinds."""

import re
from pathlib import Path

import pytest

from stabsim.theory import custom_bounds
from stabsim.registry import KINDS, load_kinds
from stabsim.study.schema import BOUNDS_PARAMS, CHECK_PARAMS, RUN_PARAMS, STUDY_PARAMS

DOC = Path(__file__).resolve().parents[1] / "docs" / "study-files.md"

_HEADING = re.compile(r"^(#+)\s+(.*)$")
_SECTION = re.compile(r"`\[([A-Za-z0-9_.]+)\]`")
_CELL_NAME = re.compile(r"^`([A-Za-z0-9_]+)`$")
_NAMES = re.compile(r"`([A-Za-z0-9_]+)`")


def _cells(line: str) -> list[str]:
    """The cells of a markdown table row (``\\|`` inside a cell is not a separator)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def read_doc(text: str):
    """``(sections, keys, kinds_of, kinds_table)``: the sections the doc names, ``{section: {key}}``,
    ``{(section, key): {kind}}`` from tables with a kinds column, and the kinds of the Kinds table."""
    sections, keys, kinds_of, kinds_table = set(), {}, {}, set()
    section, in_kinds, header = None, False, None
    for line in text.splitlines():
        m = _HEADING.match(line)
        if m:
            s = _SECTION.search(m.group(2))
            section = s.group(1) if s else None
            in_kinds = m.group(2).strip() == "Kinds"
            header = None
            if section:
                sections.add(section)
            continue
        if not line.startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = [c.lower() for c in cells]
            continue
        if set("".join(cells)) <= set("-: "):
            continue  # the separator row
        name = _CELL_NAME.match(cells[0]) if cells else None
        if not name:
            continue
        if in_kinds and header[0] == "kind":
            kinds_table.add(name.group(1))
        elif section:
            keys.setdefault(section, set()).add(name.group(1))
            if "kinds" in header:
                kinds_of[(section, name.group(1))] = set(_NAMES.findall(cells[header.index("kinds")]))
    return sections, keys, kinds_of, kinds_table


def code_schema():
    """``(keys, kinds_of, kinds)`` of the code: ``{section: {key}}`` over ``[study]``, ``[bounds]``,
    ``[bounds.custom.NAME]``, ``[check]``, ``[run]`` and every built-in kind's sections; ``{(section, key):
    {kind}}`` for the keys that are not the ``twin`` kind's own; the built-in kind names."""
    load_kinds()
    kinds = {n: k for n, k in KINDS.items() if k.func.__module__.startswith("stabsim.")}  # not tests' kinds
    keys = {"study": set(STUDY_PARAMS), "bounds": set(BOUNDS_PARAMS), "check": set(CHECK_PARAMS),
            "run": set(RUN_PARAMS), "bounds.custom.NAME": set(custom_bounds.KEYS)}
    twin = kinds["twin"].params
    kinds_of = {}
    for name, kind in kinds.items():
        for sec, table in kind.params.items():
            keys.setdefault(sec, set()).update(table)
            for key in table:
                if key not in twin.get(sec, {}) and not (sec == "bounds" and key in BOUNDS_PARAMS):
                    kinds_of.setdefault((sec, key), set()).add(name)
    return keys, kinds_of, set(kinds)


@pytest.fixture(scope="module")
def doc():
    return read_doc(DOC.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def code():
    return code_schema()


def test_the_doc_is_read(doc):
    sections, keys, kinds_of, kinds_table = doc
    assert {"study", "data", "algorithm", "sweep", "bounds", "check"} <= sections
    assert "replicates" in keys["study"] and "T" in keys["algorithm"] and "twin" in kinds_table
    assert kinds_of and all(kinds_of.values())


def test_every_section_is_documented_and_no_other(doc, code):
    sections = doc[0]
    expected = set(code[0]) | {"sweep", "profiles.NAME"}
    assert not expected - sections, f"sections missing from {DOC.name}: {sorted(expected - sections)}"
    assert not sections - expected, f"{DOC.name} names sections the code does not accept: {sorted(sections - expected)}"


def test_every_key_is_documented_and_no_other(doc, code):
    doc_keys, code_keys = doc[1], code[0]
    missing = sorted(f"[{s}] {k}" for s, ks in code_keys.items() for k in ks - doc_keys.get(s, set()))
    extra = sorted(f"[{s}] {k}" for s, ks in doc_keys.items() for k in ks - code_keys.get(s, set()))
    assert not missing, f"keys the code accepts that {DOC.name} does not name: {missing}"
    assert not extra, f"keys {DOC.name} names that the code does not accept: {extra}"


def test_kind_specific_keys_name_their_kinds(doc, code):
    doc_kinds, code_kinds = doc[2], code[1]
    for (sec, key), kinds in code_kinds.items():
        assert (sec, key) in doc_kinds, f"[{sec}] {key}: {DOC.name} does not say which kinds take it ({sorted(kinds)})"
        assert doc_kinds[(sec, key)] == kinds, (f"[{sec}] {key}: {DOC.name} names kinds "
                                                f"{sorted(doc_kinds[(sec, key)])}, the code {sorted(kinds)}")
    extra = sorted(f"[{s}] {k}" for s, k in set(doc_kinds) - set(code_kinds))
    assert not extra, f"{DOC.name} names kinds for keys that are no kind's own: {extra}"


def test_every_kind_is_listed(doc, code):
    listed, kinds = doc[3], code[2]
    assert listed == kinds, f"Kinds table of {DOC.name}: missing {sorted(kinds - listed)}, extra {sorted(listed - kinds)}"
