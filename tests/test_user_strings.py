"""What a user reads: reproduce lines, figure titles, the audit's words, --help, --out, a closed pipe, the
privacy ledger's n and T."""

import argparse
import os
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

from stabsim.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]


# ---- reproduce line ----------------------------------------------------------------------------------

def test_reproduce_command_names_a_users_file_by_its_path(tmp_path):
    from stabsim.reporting.analyse import reproduce_command
    from stabsim.study import parse_study

    text = (ROOT / "studies" / "example_twin.toml").read_text()
    mine = parse_study(text, path=tmp_path / "my_study.toml", profile="quick")
    cmd = reproduce_command(mine, "out")
    assert cmd.startswith(f"stabsim run {tmp_path / 'my_study.toml'} --quick")
    builtin = parse_study(text, path=ROOT / "studies" / "example_twin.toml", profile="quick")
    assert reproduce_command(builtin, "out").startswith("stabsim run example_twin --quick --seed")


# ---- titles ------------------------------------------------------------------------------------------

def test_cell_setting_has_no_none():
    from stabsim.analyses.base import cell_setting

    real = cell_setting({"algorithm": {"loss": "auc_hinge", "eta": 0.1, "T": 100},
                         "data": {"dataset": "breast_cancer", "n": 569}})
    assert real == "auc_hinge, breast_cancer, n=569, eta=0.1, T=100"
    synth = cell_setting({"algorithm": {"loss": "auc_hinge", "eta": 0.1, "T": 100},
                          "data": {"problem": "auc_separable", "n": 50}})
    assert synth == "auc_hinge, auc_separable, n=50, eta=0.1, T=100"
    no_source = cell_setting({"algorithm": {"loss": "auc_hinge", "eta": 0.1, "T": 100}, "data": {"n": 50}})
    assert "None" not in no_source and no_source.startswith("auc_hinge, n=50")


def test_rate_title_t_per_n():
    from stabsim.analyses.p4_rates import _t_per_n

    assert _t_per_n(1.0) == "T = n" and _t_per_n(2.0) == "T = 2 n" and _t_per_n(0.5) == "T = 0.5 n"
    assert _t_per_n(0) == ""


def test_custom_bound_drawn_by_its_name():
    from stabsim.judging.plots import _bound_entries, bound_name, default_title
    from stabsim.theory import get
    from stabsim.theory.registry import Bound

    mine = Bound(key="custom.mine", paper="custom", ref="study file", quantity="uas_mean", tag="EXPLICIT",
                 func=lambda t: t)
    assert bound_name(mine) == "mine"
    assert _bound_entries([(mine, [1.0])])[0]["label"] == "mine bound"
    assert default_title(mine, "uas_mean").startswith("mine: ")
    assert _bound_entries([(get("P1.Thm4.uas"), [1.0])])[0]["label"] == "P1 Theorem 4 bound"


# ---- audit -------------------------------------------------------------------------------------------

def _rep(acc, claimed=2.0, noise_scale=1.0, rdp=None):
    return SimpleNamespace(eps_accountant=acc, eps_accountant_rdp=rdp, eps_claimed=claimed, delta=1e-3,
                           noise_scale=noise_scale)


def test_accountant_note_says_why():
    from stabsim.privacy.audit_runner import accountant_note

    low = accountant_note(_rep(0.108))
    assert "conservative" in low and "0.108" in low and "below the claimed eps 2" in low
    broken = accountant_note(_rep(None, noise_scale=0.01, rdp=1.0e6))
    assert "above the claimed eps" in broken and "--noise-scale 0.01" in broken and "conservative" not in broken
    assert accountant_note(_rep(None)) == ""


def test_audit_violation_printed_once_without_a_warning(capsys):
    from stabsim.privacy.audit_cli import main as audit_main

    args = ["p4_alg1", "--eps", "2", "--loss", "point_logistic", "--T", "100", "--eta", "0.05",
            "--replicates", "400", "--n", "100", "--seed", "3"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # a Python warning (with its source line) would fail here
        assert audit_main(args + ["--noise-scale", "0.01"]) == 3
    out = capsys.readouterr()
    assert (out.out + out.err).count("PRIVACY VIOLATION FOUND") == 1
    assert "note: the accountant's eps" in out.out


# ---- --help of every subcommand ----------------------------------------------------------------------

def _help_texts():
    from stabsim.privacy.audit_cli import build_parser as audit_parser

    p = build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    texts = {"stabsim": p.format_help()}
    texts.update({name: sp.format_help() for name, sp in sub.choices.items() if name != "audit"})
    texts["audit"] = audit_parser().format_help()
    return texts


def _options(text):
    """Each option's help as one line (argparse wraps it)."""
    out, cur = [], None
    for ln in text.splitlines():
        if ln.startswith("  -") or ln.startswith("  {") or (ln.startswith("  ") and not ln.startswith("   ")):
            if cur:
                out.append(cur)
            cur = ln.strip()
        elif cur is not None and ln.startswith("   "):
            cur += " " + ln.strip()
    if cur:
        out.append(cur)
    return out


def test_no_none_or_duplicated_default_in_any_help():
    texts = _help_texts()
    assert {"run", "report", "privacy", "list", "audit"} <= set(texts)
    for name, text in texts.items():
        flat = " ".join(text.split())
        assert "(default: None)" not in flat, name
        for opt in _options(text):
            assert opt.count("(default:") <= 1, (name, opt)
            assert not ("(default:" in opt and "(default: " in opt.split("(default:", 1)[1]), (name, opt)
    audit = " ".join(texts["audit"].split())
    assert "--eps EPS the claimed epsilon (> 0) the noise is calibrated to (required)" in audit
    assert "(default: the paper's schedule) (default" not in audit
    assert "(default: 0.001)" in audit   # real defaults are still shown


def test_help_check_catches_a_none_default():
    """The other way round: the audit parser with argparse's own formatter shows "(default: None)"."""
    from stabsim.privacy.audit_cli import build_parser as audit_parser

    p = audit_parser()
    p.formatter_class = argparse.ArgumentDefaultsHelpFormatter
    assert "(default: None)" in " ".join(p.format_help().split())


# ---- --out -------------------------------------------------------------------------------------------

def test_unusable_out_is_named(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for bad in (afile / "sub", afile):
        assert main(["run", "example_twin", "--quick", "--out", str(bad), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert f"cannot write the output folder {str(bad)!r} (--out)" in err and "Errno" not in err
    from stabsim.cli import writable_dir

    assert writable_dir(tmp_path / "new" / "dir", "--out").is_dir()


# ---- a closed pipe -----------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["privacy", "p1_alg3", "--n", "200", "--eps", "100", "--delta", "0.005"],
                                  ["list"]])
def test_closed_pipe_exits_quietly(argv):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-m", "stabsim.cli", *argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, cwd=ROOT)
    p.stdout.close()          # the reader goes away before the command writes (like `| head -0`)
    err = p.stderr.read().decode()
    rc = p.wait(timeout=300)
    assert "Traceback" not in err and "Broken pipe" not in err and "BrokenPipeError" not in err, err
    assert rc == 141


# ---- the privacy ledger states the n and T that ran ---------------------------------------------------

def test_ledger_rows_follow_the_profile_that_ran():
    from stabsim.privacy.ledger import suite_settings

    quick = [m for s, m in suite_settings(study_ids={"p0_thm4_sigma": "quick"})]
    full = [m for s, m in suite_settings(study_ids={"p0_thm4_sigma": None})]
    assert quick and {(m.n, m.T) for m in quick} == {(16, 256)}
    assert full and {(m.n, m.T) for m in full} == {(24, 576)}
    assert [(m.n, m.T) for _, m in suite_settings(study_ids={"p0_thm4_sigma"})] == [(m.n, m.T) for m in full]


# ---- expected warnings filtered precisely (pyproject's pytest filterwarnings) ---------------------------

def test_numba_pedantic_noise_filtered_and_nothing_else():
    from numba.core.errors import NumbaIRAssumptionWarning

    from stabsim.privacy.audit_runner import PrivacyViolationWarning

    with warnings.catch_warnings(record=True) as seen:   # keeps the filters pytest applied from pyproject
        warnings.warn(NumbaIRAssumptionWarning("variable 'x.1' is not in scope."))
        warnings.warn(NumbaIRAssumptionWarning("another IR assumption"))
        warnings.warn("PRIVACY VIOLATION FOUND: test", PrivacyViolationWarning)
    first = [str(w.message).split("\n")[0] for w in seen]
    assert first == ["another IR assumption", "PRIVACY VIOLATION FOUND: test"]


# ---- a study without a check --------------------------------------------------------------------------

def test_a_study_without_a_check_is_named_in_the_run_line(tmp_path, monkeypatch, capsys):
    import xarray as xr

    import stabsim.reporting.analyse as base
    from stabsim.cli import _print_verdicts
    from stabsim.study import parse_study

    spec = parse_study((ROOT / "studies" / "example_twin.toml").read_text(), path=tmp_path / "x.toml",
                       profile="quick")
    assert base.check_name(spec) is None   # example_twin names no check
    monkeypatch.setattr(base, "load_results", lambda d: (spec, xr.Dataset(attrs={"seed": 0}), {}))
    rec = base.analyse(tmp_path)
    _print_verdicts([(tmp_path, rec), (tmp_path, {"rows": [{"key": "P1.Thm4.uas", "verdict": "holds"}]})])
    first, second = capsys.readouterr().out.splitlines()
    assert first.endswith("summary.md: (no check): error") and ": : error" not in first
    assert second.endswith("summary.md: P1.Thm4.uas: holds")
