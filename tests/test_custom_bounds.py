"""Custom bounds in a study file, the generic overlay check, plugins, the README example."""

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from stabsim.cli import main
from stabsim.theory.custom_bounds import ExprError, compile_expr, dry_run, representative_values
from stabsim.study import StudyError, load_study, parse_study

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = Path(__file__).resolve().parent / "plugins"


# ---- the safe evaluator ---------------------------------------------------------------------------

@pytest.mark.parametrize("expr, values, expected", [
    ("2 * G * eta * (sqrt(t) + 2 * t / n)", dict(G=2.0, eta=0.1, t=np.array([1.0, 4.0]), n=10.0),
     2 * 2.0 * 0.1 * (np.sqrt([1.0, 4.0]) + 2 * np.array([1.0, 4.0]) / 10)),
    ("exp(0.5) * log(1 / delta) ** 0.5", dict(delta=0.1), np.exp(0.5) * np.log(10) ** 0.5),
    ("-(-t) + abs(-1)", dict(t=np.array([1.0, 2.0])), np.array([2.0, 3.0])),
    ("min(t, n, 5) + max(t, 0)", dict(t=np.array([1.0, 10.0]), n=7.0), np.array([2.0, 15.0])),
    ("minimum(t, 3) * maximum(G, L)", dict(t=np.array([1.0, 10.0]), G=1.0, L=2.0), np.array([2.0, 6.0])),
    ("B * t", dict(B=3.0, t=np.array([1.0, 2.0])), np.array([3.0, 6.0])),
])
def test_allowed_formulas_give_numpy_values(expr, values, expected):
    f = compile_expr(expr, allowed=("t", "n", "G", "L", "eta", "delta", "B"))
    np.testing.assert_allclose(f(**values), expected, rtol=1e-15)


@pytest.mark.parametrize("expr, match", [
    ("__import__('os')", "function '__import__' is not allowed"),
    ("t.real", "attribute access"),
    ("np.sqrt(t)", "attribute access is not allowed"),
    ("t[0]", "subscripts"),
    ("(lambda: 1)()", "calls of expressions"),
    ("lambda x: x", "lambda"),
    ("[x for x in t]", "comprehensions"),
    ("etaa * t", r"unknown name 'etaa'.*Did you mean 'eta'"),
    ("sqrtt(t)", r"function 'sqrtt' is not allowed.*Did you mean 'sqrt'"),
    ("t if n else 1", "conditional expressions"),
    ("t < n", "comparisons"),
    ("'a'", "only numbers"),
    ("sqrt(t, n)", r"sqrt\(\) takes 1 argument"),
    ("t // n", "operator FloorDiv is not allowed"),
    ("sqrt", "is a function; call it"),
    ("t +", "not a valid expression"),
])
def test_forbidden_constructs_are_rejected(expr, match):
    with pytest.raises(ExprError, match=match):
        compile_expr(expr)


def test_dry_run_rejects_negative_and_non_finite():
    vals = representative_values({"data": {"n": 50}, "algorithm": {"eta": 0.1, "T": 100}})
    assert vals["n"] == 50 and list(vals["t"]) == [1.0, 10.0]
    with pytest.raises(ExprError, match="negative"):
        dry_run(compile_expr("1 - t"), vals)
    with pytest.raises(ExprError, match="not finite"):
        dry_run(compile_expr("1 / (t - 1)"), vals)
    assert dry_run(compile_expr("sqrt(t) / n"), vals).shape == (2,)


# ---- custom bounds and [check] in a study file ----------------------------------------------------

BASE = """
[study]
id = "{id}"
check = "overlay"
replicates = 8
chunk = 8

[data]
problem = "auc_noisy"
d = 5
n = 50

[algorithm]
name = "p1_alg1"
loss = "auc_hinge"
eta = 0.05
T = 200
checkpoints = 5

[bounds.custom.{name}]
quantity = "uas_mean"
expr = "{expr}"
tag = "EXPLICIT"

[check]
measure = "{measure}"
bounds = [{bounds}]
"""


def _study(id="cb", name="b1", expr="2 * G * eta * sqrt(t)", measure="uas_mean", bounds='"custom.b1"'):
    return BASE.format(id=id, name=name, expr=expr, measure=measure, bounds=bounds)


def test_custom_bound_registered_idempotently():
    from stabsim.theory import get

    spec = parse_study(_study(name="idem", bounds='"custom.idem"'))
    b = get("custom.idem")
    assert (b.paper, b.ref, b.quantity, b.tag) == ("custom", "study file", "uas_mean", "EXPLICIT")
    np.testing.assert_allclose(b(t=np.array([4.0]), G=1.0, eta=0.5), [2.0])
    parse_study(_study(name="idem", bounds='"custom.idem"'))  # same expression again: fine
    with pytest.raises(StudyError, match="another definition"):
        parse_study(_study(name="idem", expr="3 * G * eta * sqrt(t)", bounds='"custom.idem"'))
    assert spec.check["bounds"] == ["custom.idem"]
    from stabsim.theory import list_bounds
    assert "custom.idem" not in [x.key for x in list_bounds()]  # the papers' registry is unchanged


@pytest.mark.parametrize("kw, match", [
    (dict(expr="2 * G * etta * t"), r"unknown name 'etta'.*Did you mean 'eta'"),
    (dict(expr="__import__('os').system('true')"), "not allowed"),
    (dict(expr="G * (1 - t)"), "negative"),
    (dict(expr="G / (t - 1)"), "not finite"),
    (dict(measure="uas_meen"), r"not a function of stabsim.engine.measures.*Did you mean 'uas_mean'"),
    (dict(bounds='"P1.Thm4.uass"'), "unknown bound 'P1.Thm4.uass'"),
    (dict(bounds='"custom.nope"'), "unknown bound 'custom.nope'"),
])
def test_bad_custom_bound_rejected_before_any_output(tmp_path, kw, match, capsys):
    text = _study(id="bad", name="b1", **kw)
    with pytest.raises(StudyError, match=match):
        parse_study(text)
    path = tmp_path / "bad.toml"
    path.write_text(text)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 2
    assert not out.exists()


def test_custom_table_errors():
    bad = _study().replace('tag = "EXPLICIT"', 'tag = "EXPLICIT"\nunits = "m"')
    with pytest.raises(StudyError, match="unknown key 'units'"):
        parse_study(bad)
    with pytest.raises(StudyError, match="quantity 'uas' is not a registered measure"):
        parse_study(_study().replace('quantity = "uas_mean"', 'quantity = "uas"'))
    with pytest.raises(StudyError, match="RATE bound needs its exponents"):
        parse_study(_study().replace('tag = "EXPLICIT"', 'tag = "RATE"'))


# ---- overlay == the specific check ----------------------------------------------------------------

@pytest.fixture(scope="module")
def thm4(tmp_path_factory):
    out = tmp_path_factory.mktemp("ov")
    assert main(["run", "p1_thm4_uas", "--quick", "--out", str(out), "--no-progress"]) == 0
    return out / "p1_thm4_uas"


def test_overlay_gives_the_specific_checks_verdict(thm4):
    from reference_checks import p1_uas
    from stabsim.reporting.analyse import _row, load_results

    spec, ds, _ = load_results(thm4)
    assert spec.check["measure"] == "uas_mean"  # the study now uses the overlay check
    rec = json.loads((thm4 / "analysis.json").read_text())
    assert rec["check"] == "overlay"
    old = p1_uas(spec, ds)  # the specific check the overlay replaced (tests/reference_checks.py)
    old_rows = [_row(old, i) for i in range(len(old.verdicts))]
    assert len(rec["rows"]) == len(old_rows) >= 1
    for a, b in zip(rec["rows"], old_rows):
        for k in ("key", "label", "verdict", "worst_margin", "tightness_min", "tightness_max", "vacuous", "figure"):
            assert a[k] == b[k], k
        assert (thm4 / a["figure"]).is_file()


# ---- plugins ----------------------------------------------------------------------------------------

def test_plugin_missing_is_a_clear_error(tmp_path):
    from stabsim.registry.plugins import PluginError, load_plugins

    with pytest.raises(PluginError, match=r"'no_such_plugin_mod' cannot be imported.*PYTHONPATH"):
        load_plugins(["no_such_plugin_mod"])
    with pytest.raises(PluginError, match="not a module name"):
        load_plugins(["plugins/myplugin.py"])
    text = _study(id="plug").replace('check = "overlay"', 'check = "overlay"\nplugins = ["no_such_plugin_mod"]')
    with pytest.raises(StudyError, match="no_such_plugin_mod"):
        parse_study(text)
    assert main(["run", "p1_thm4_uas", "--quick", "--plugins", "no_such_plugin_mod",
                 "--out", str(tmp_path / "o")]) == 2
    assert not (tmp_path / "o").exists()


def test_plugin_registers_a_bound_and_a_check(monkeypatch, thm4):
    from stabsim.registry import get_check
    from stabsim.reporting.analyse import load_results
    from stabsim.registry.plugins import load_plugins, plugin_hashes

    monkeypatch.syspath_prepend(str(PLUGINS))
    assert load_plugins(["myplugin"]) == ["myplugin"]
    text = _study(id="plug").replace('check = "overlay"', 'check = "myplugin_uas"\nplugins = ["myplugin"]')
    text = text.replace('bounds = ["custom.b1"]', 'bounds = ["custom.b1", "custom.myplugin_loose"]')
    spec = parse_study(text)
    assert spec.plugins == ("myplugin",)
    h = plugin_hashes(["myplugin"])["myplugin"]
    assert spec.normalized()["plugins"] == {"myplugin": h} and len(h) == 64
    no_plugin = parse_study(_study(id="plug"))
    assert "plugins" not in no_plugin.normalized() and no_plugin.fingerprint != spec.fingerprint
    # the plugin's check on real results
    spec4, ds, _ = load_results(thm4)
    res = get_check("myplugin_uas").func(spec4, ds.sel(neighbour="flip"))
    assert [v.verdict for v in res.verdicts] == ["holds"]
    assert "myplugin" in sys.modules


# ---- the README example ------------------------------------------------------------------------------

def _readme_study() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    sec = text.split("## Check your own bound", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```toml\n(.*?)```", sec, re.S).group(1)


def test_readme_example_runs(tmp_path):
    from stabsim.engine.synthetic import make_problem

    study = _readme_study()
    assert len(study.strip().splitlines()) <= 25
    X, y = make_problem("auc_noisy", 5).sample(300, 1, 0)
    rows = [",".join([f"x{i}" for i in range(X.shape[1])] + ["y"])]
    rows += [",".join(f"{v:.6g}" for v in xi) + f",{int(yi)}" for xi, yi in zip(X, y)]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "my_bound.toml").write_text(study)
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "my_bound.toml"), "--out", str(out), "--no-progress"]) == 0
    rec = json.loads((out / "my_bound" / "analysis.json").read_text())
    assert [r["key"] for r in rec["rows"]] == ["P1.Thm4.uas", "custom.mine"]
    assert all(r["verdict"] in ("holds", "violated", "inconclusive") for r in rec["rows"]), rec["rows"]
    assert all((out / "my_bound" / r["figure"]).is_file() for r in rec["rows"])
