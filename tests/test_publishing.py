"""For people who publish: LICENSE, CITATION.cff, the README's "How to cite", and the examples/ scripts."""

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = {"p1_thm4_tightness.py": "p1_thm4.png", "rate_in_n.py": "rate_in_n.png",
            "privacy_calibration.py": "privacy_ledger.md"}


def _version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def cff_problems(text: str, version: str) -> list[str]:
    """What a CITATION.cff lacks of CFF 1.2.0's required keys and of what this project states."""
    top = dict(re.findall(r"^([a-z-]+):\s*(.*)$", text, re.M))
    probs = [f"missing {k}" for k in ("cff-version", "message", "title", "authors") if k not in top]
    if top.get("cff-version", "").strip("\"'") != "1.2.0":
        probs.append("cff-version is not 1.2.0")
    if top.get("version", "").strip("\"'") != version:
        probs.append(f"version {top.get('version')!r} is not pyproject's {version!r}")
    if top.get("license", "").strip("\"'") != "MIT":
        probs.append("license is not MIT")
    if not re.search(r"^authors:\n  - name: \"The stabsim authors\"$", text, re.M):
        probs.append("authors is not the entity 'The stabsim authors'")
    return probs


def test_citation_cff():
    text = (ROOT / "CITATION.cff").read_text()
    assert cff_problems(text, _version()) == []
    assert cff_problems(text.replace(_version(), "9.9.9"), _version()) == [
        f"version '\"9.9.9\"' is not pyproject's {_version()!r}"]
    assert "missing title" in cff_problems(re.sub(r"^title:.*\n", "", text, flags=re.M), _version())


def test_license_is_mit_as_pyproject_says():
    text = (ROOT / "LICENSE").read_text()
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] == "MIT"
    assert text.startswith("MIT License") and "Copyright (c) 2026 the stabsim authors" in text


def test_readme_how_to_cite_has_the_five_papers():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    sec = text.split("## How to cite", 1)[1].split("\n## ", 1)[0]
    keys = re.findall(r"^\* \*\*(P\d)\*\*", sec, re.M)
    assert keys == ["P0", "P1", "P2", "P3", "P4"]
    table = text.split("| key | paper |", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"^\| (P\d) \|", table, re.M) == keys   # the same keys as the README's table
    for title in ("Non-Smooth Loss", "Simple Stochastic and Online Gradient Descent",
                  "Differentially Private Pairwise Learning", "Pairwise Learning with Differential Privacy",
                  "Low-Noise"):
        assert title in " ".join(sec.split())


def _run_example(name, out, small=True):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               STABSIM_EXAMPLE_SMALL="1" if small else "0", MPLBACKEND="Agg")
    return subprocess.run([sys.executable, str(ROOT / "examples" / name), str(out)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_runs_and_writes_its_output(name, tmp_path):
    r = _run_example(name, tmp_path / "out")
    assert r.returncode == 0, r.stderr[-3000:]
    made = tmp_path / "out" / EXAMPLES[name]
    assert made.is_file() and made.stat().st_size > 0
    assert str(made) in r.stdout


def test_example_fails_where_it_cannot_write(tmp_path):
    """The other way round: an output path that is a file makes the example exit non-zero."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = _run_example("privacy_calibration.py", blocker / "out")
    assert r.returncode != 0 and not (blocker / "out").exists()
