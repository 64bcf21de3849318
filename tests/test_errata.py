"""docs/errata.md carries every errata id the code, studies and reports cite; stabsim.judging.errata
finds and links them; nothing refers to the old external steering document."""

import subprocess
from pathlib import Path

import pytest

from stabsim.judging import errata

ROOT = Path(__file__).resolve().parent.parent


def _tracked(*paths):
    try:
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", *paths], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk the tree
        out = [str(p.relative_to(ROOT)) for q in paths for p in
               ([ROOT / q] if (ROOT / q).is_file() else (ROOT / q).rglob("*")) if p.is_file()]
    return [ROOT / p for p in out if (ROOT / p).is_file()]


def _text(path):
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def test_errata_doc_exists_and_parses():
    assert errata.ERRATA_DOC == ROOT / "docs" / "errata.md"
    ids = errata.errata_ids()
    # every typo entry of the five papers, the section notes the code cites and the findings
    for must in ("P0-E1", "P0-E14", "P1-E9", "P2-E8", "P3-E9", "P4-E10", "P3-D", "P2-A",
                 "P1-F1", "P3-F1", "P4-F1"):
        assert must in ids
    # headings are unique
    heads = [ln for ln in errata.ERRATA_DOC.read_text(encoding="utf-8").splitlines() if ln.startswith("## P")]
    assert len(heads) == len(set(heads)) == len(ids)


def test_errata_ids_missing_file(tmp_path):
    assert errata.errata_ids(tmp_path / "nope.md") == set()


def test_every_cited_id_has_an_entry():
    ids = errata.errata_ids()
    missing = []
    for p in _tracked("stabsim", "studies", "reports", "README.md", "tests", "benchmarks"):
        t = _text(p)
        if t is None:
            continue
        missing += [f"{p.relative_to(ROOT)}: {i}" for i in errata.find_ids(t) if i not in ids]
    assert not missing, missing


def test_find_ids():
    assert errata.find_ids("errata P3-E2; P3-D/E6 and P0-E3/E7 (P2-A), P4-F1.") == \
        ["P3-E2", "P3-D", "P3-E6", "P0-E3", "P0-E7", "P2-A", "P4-F1"]
    # not ids: a bare "P0-E", other papers, longer tokens, unknown section letters
    assert errata.find_ids('"P0-E" in reading; P5-E1; XP0-E1; P0-E1x; P0-Z; P3-E12-b') == []


def test_link_ids_links_and_keeps_links():
    base = "../docs/errata.md"
    t = "see errata P3-E2 and P3-D/E6."
    got = errata.link_ids(t, base=base)
    assert got == ("see errata [P3-E2](../docs/errata.md#p3-e2) and "
                   "[P3-D](../docs/errata.md#p3-d)/[E6](../docs/errata.md#p3-e6).")
    assert errata.link_ids(got, base=base) == got                      # idempotent
    kept = "[P3-E1](other.md#p3-e1), `P0-E2`, https://x.org/P0-E4 and [see P1-E3](y.md)"
    assert errata.link_ids(kept) == kept
    assert errata.link_ids("P1-F1") == "[P1-F1](docs/errata.md#p1-f1)"


@pytest.mark.parametrize("i", ["P0-E11", "P3-D", "P4-F1"])
def test_anchor_matches_heading(i):
    assert f"## {i}\n" in errata.ERRATA_DOC.read_text(encoding="utf-8")
    assert errata.anchor(i) == i.lower()


#: the old steering document (outside the product) and its name, spelled so this file does not match
_FORBIDDEN = ("CATA" + "LOGUE", "shared/" + "theory")


def test_no_reference_to_external_catalogue():
    bad = []
    for p in _tracked("stabsim", "studies", "reports", "README.md", "tests", "benchmarks", "docs", "pyproject.toml"):
        t = _text(p)
        if t is not None and any(w in t for w in _FORBIDDEN):
            bad.append(str(p.relative_to(ROOT)))
    assert not bad, bad
