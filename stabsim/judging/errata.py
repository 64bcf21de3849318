"""Errata ids of the five papers and links to their entries in ``docs/errata.md``.

The code, studies and reports cite entries of ``docs/errata.md`` by id:

``P<k>-E<m>``  a typo or inconsistency of paper P<k> (e.g. ``P0-E2``, factor 8e in P0 Eq. (5));
``P<k>-F<m>``  a finding of stabsim's studies (e.g. ``P4-F1``);
``P<k>-A`` .. ``P<k>-D``  a note on a section of the paper (A algorithms, B measured
               quantities, D experiments), e.g. ``P3-D``.

A compound citation such as ``P3-D/E6`` or ``P0-E3/E7`` names several entries of one paper.
Each entry of ``docs/errata.md`` is a ``## <id>`` heading, so its anchor is the lower-cased id
(``#p3-e2``).  ``docs/`` is not part of the installed package: :func:`errata_ids` returns an
empty set when the file is not there (an installed copy without the repository).
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["ERRATA_DOC", "ID_RE", "errata_doc", "errata_ids", "find_ids", "anchor", "link_ids"]

#: ``docs/errata.md`` of the repository this module sits in (``<repo>/stabsim/errata.py``).
ERRATA_DOC = Path(__file__).resolve().parents[2] / "docs" / "errata.md"

#: one citation: paper, first id, and optional ``/E<m>`` / ``/F<m>`` continuations.
ID_RE = re.compile(r"\b(P[0-4])-([EF][0-9]+|[A-D])((?:/[EF][0-9]+)*)(?![\w-])")
_HEADING_RE = re.compile(r"^##\s+(P[0-4]-(?:[EF][0-9]+|[A-D]))\s*$", re.M)
# spans that must not be linked: inline code, existing links / images, bare URLs
_PROTECT_RE = re.compile(r"`[^`\n]*`|!?\[[^\]\n]*\]\([^)\n]*\)|\[[^\]\n]*\]\[[^\]\n]*\]|<https?://[^>\s]*>|https?://\S+")


def errata_doc() -> Path | None:
    """Path of ``docs/errata.md`` if it exists, else None."""
    return ERRATA_DOC if ERRATA_DOC.is_file() else None


def errata_ids(path: str | Path | None = None) -> set[str]:
    """The ids that have an entry (a ``## <id>`` heading) in ``docs/errata.md``.

    ``path`` overrides the file; without it an installed package with no ``docs/`` returns
    an empty set."""
    p = Path(path) if path is not None else errata_doc()
    if p is None or not p.is_file():
        return set()
    return set(_HEADING_RE.findall(p.read_text(encoding="utf-8")))


def _expand(m: re.Match) -> list[str]:
    paper, first, rest = m.group(1), m.group(2), m.group(3)
    return [f"{paper}-{first}"] + [f"{paper}-{e}" for e in rest.split("/")[1:]]


def find_ids(text: str) -> list[str]:
    """Every errata id cited in ``text``, in order of appearance, repeats included.

    ``"P3-D/E6"`` gives ``["P3-D", "P3-E6"]``.  A bare ``"P0-E"`` (no number) is not an id."""
    out: list[str] = []
    for m in ID_RE.finditer(text):
        out.extend(_expand(m))
    return out


def anchor(errata_id: str) -> str:
    """GitHub anchor of an entry: the lower-cased id (``"P3-E2"`` -> ``"p3-e2"``)."""
    return errata_id.lower()


def _link_one(m: re.Match, base: str) -> str:
    paper, first, rest = m.group(1), m.group(2), m.group(3)
    parts = [f"[{paper}-{first}]({base}#{anchor(f'{paper}-{first}')})"]
    for e in rest.split("/")[1:]:
        parts.append(f"[{e}]({base}#{anchor(f'{paper}-{e}')})")
    return "/".join(parts)


def link_ids(text: str, base: str = "docs/errata.md") -> str:
    """Turn each errata id in markdown ``text`` into a link ``[P3-E2](<base>#p3-e2)``.

    ``base`` is the path of ``docs/errata.md`` relative to the markdown file that will hold
    the text (``"../docs/errata.md"`` from ``reports/``, ``"../../docs/errata.md"`` from
    ``reports/summaries/``).  A compound ``P3-D/E6`` becomes two links joined by ``/``.
    Text already inside a link (``[...](...)``), inline code and URLs is left alone, so the
    function is idempotent."""
    out, pos = [], 0
    for p in _PROTECT_RE.finditer(text):
        out.append(ID_RE.sub(lambda m: _link_one(m, base), text[pos:p.start()]))
        out.append(p.group(0))
        pos = p.end()
    out.append(ID_RE.sub(lambda m: _link_one(m, base), text[pos:]))
    return "".join(out)
