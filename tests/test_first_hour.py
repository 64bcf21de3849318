"""A new user's first hour: a suite survives one study that cannot run, and says so."""

import json

import pytest

from stabsim.cli import main

TABLE1 = """
[study]
id = "needs_data"
description = "tiny P1 Table 1 run on a data set that needs an optional package"
kind = "p1_table1"
check = "p1_table1"
seed = 3
replicates = 5
[data]
dataset = "diabetes"
[algorithm]
passes = 0.5
cv_passes = 0.5
eta_grid = [1.0]
checkpoints = 2
[sweep]
method = ["p1_alg1"]
[profiles.quick]
"""


@pytest.fixture
def studies(tmp_path):
    d = tmp_path / "studies"
    d.mkdir()
    (d / "needs_data.toml").write_text(TABLE1)
    src = (__import__("pathlib").Path(__file__).resolve().parents[1] / "studies" / "example_twin.toml").read_text()
    (d / "example_twin.toml").write_text(src)
    return d


def test_a_study_missing_its_package_is_skipped_and_the_rest_runs(studies, tmp_path, monkeypatch, capsys):
    import stabsim.engine.real_datasets as datasets

    def missing(name, *a, **k):
        raise ImportError(f"dataset {name!r} needs 'scikit-learn', which is not installed; "
                          "install the data extra with: pip install 'stabsim[data]'")

    monkeypatch.setattr(datasets, "load", missing)
    out = tmp_path / "out"
    rc = main(["run", "needs_data", "example_twin", "--quick", "--studies", str(studies), "--out", str(out),
               "--no-progress", "--report", str(tmp_path / "rep")])
    err = capsys.readouterr().err
    assert rc == 1                                      # not all studies ran: non-zero at the end
    assert (out / "example_twin" / "data.nc").is_file()  # the other study ran and was analysed
    assert "needs_data" in err and "skipped (missing optional package" in err
    rows = json.loads((tmp_path / "rep" / "verdicts.json").read_text())
    skipped = [r for r in rows if r["study"] == "needs_data"]
    assert len(skipped) == 1 and skipped[0]["verdict"] == "skipped" and "scikit-learn" in skipped[0]["explanation"]
    assert any(r["study"] == "example_twin" and r["verdict"] != "skipped" for r in rows)
    index = (tmp_path / "rep" / "index.md").read_text()
    assert "failed or were skipped" in index


def test_version_flag(capsys):
    try:
        rc = main(["--version"])
    except SystemExit as e:  # argparse's version action exits
        rc = e.code
    assert rc in (0, None)
    from stabsim import __version__
    assert __version__ in capsys.readouterr().out


@pytest.mark.parametrize("command", ["run", "report", "audit", "privacy", "list"])
def test_every_option_has_a_help_line(command):
    """argparse prints an option without help as a bare flag: every option of every subcommand
    must say what it does."""
    from stabsim.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    if command == "audit":
        from stabsim.privacy.audit_cli import build_parser as audit_parser
        p = audit_parser()
    else:
        p = sub[command]
    bare = [a.option_strings for a in p._actions if a.option_strings and a.help is None]
    assert not bare, f"options without help in 'stabsim {command}': {bare}"
    assert ":func:" not in (p.description or "")


def test_list_names_the_optional_packages_a_study_needs():
    from pathlib import Path

    from stabsim.cli import optional_packages

    studies = Path(__file__).resolve().parents[1] / "studies"
    assert "scikit-learn" in optional_packages(studies / "p3_fig1.toml")          # breast_cancer
    assert set(optional_packages(studies / "p1_table1.toml")) == {"mlxtend", "scikit-learn"}
    assert optional_packages(studies / "example_twin.toml") == {}


def test_integer_features_are_accepted_as_float64():
    import numpy as np

    from stabsim import run_twin

    X = np.array([[1, 0], [0, 1], [1, 1], [2, 0]])
    y = np.array([1.0, -1.0, 1.0, -1.0])
    a = run_twin(X, y, algorithm="p1_alg1", loss="auc_hinge", eta=0.1, T=20, replicates=2, seed=0, neighbour="flip")
    b = run_twin(X.astype(float), y, algorithm="p1_alg1", loss="auc_hinge", eta=0.1, T=20, replicates=2, seed=0,
                 neighbour="flip")
    np.testing.assert_array_equal(a.dist_output.values, b.dist_output.values)


def test_progress_blocks_give_the_same_numbers(capsys):
    """A long call shows a bar over replicate blocks; the blocks never change a number."""
    import numpy as np

    from stabsim import make_problem, run_twin
    from stabsim.engine.twin_runs import replicate_blocks

    X, y = make_problem("auc_separable", d=5).sample(60, seed=0)
    kw = dict(algorithm="p1_alg1", loss="auc_hinge", constraint=("l2", 2.0), eta=0.05, T=400, replicates=13,
              seed=4, neighbour="flip", record_outputs=True)
    plain, barred = run_twin(X, y, progress=False, **kw), run_twin(X, y, progress=True, **kw)
    for v in ("dist_output", "dist_iterate", "output"):
        np.testing.assert_array_equal(plain[v].values, barred[v].values)
    Xs = np.stack([make_problem("auc_separable", d=5).sample(60, seed=s)[0] for s in range(13)])
    ys = np.stack([make_problem("auc_separable", d=5).sample(60, seed=s)[1] for s in range(13)])
    a, b = run_twin(Xs, ys, progress=False, **kw), run_twin(Xs, ys, progress=True, **kw)
    np.testing.assert_array_equal(a["dist_output"].values, b["dist_output"].values)
    blocks, bar = replicate_blocks(1000, 10**7, 10, None)   # ~500 s estimated: a bar over 20 blocks
    assert bar is not None and len(blocks) == 20 and blocks[-1].stop == 1000
    bar.close()
    assert replicate_blocks(100, 1000, 10, None) == ([slice(0, 100)], None)
