"""Real data in a study file: ``[data] file`` / ``[data] dataset`` (stabsim.engine.user_data) -- bit-identical
to run_twin on the same arrays, precise errors for malformed files before anything is written, the
file's hash in the fingerprint."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from stabsim import run_twin
from stabsim.engine.user_data import (DataFileError, binary_labels, prepare, read_data_file, stratified_split,
                               stratified_subsample)
from stabsim.study import StudyError, parse_study, run_study
from stabsim.engine.twin_runs import log_checkpoints

STUDY = """
[study]
id = "mine"
seed = 3
replicates = 5
chunk = 3

[data]
{data}

[algorithm]
name = "p1_alg1"
loss = "auc_hinge"
eta = 0.1
T = 120
neighbour = "flip"
checkpoints = 10
"""


def make_xy(n=36, d=3, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, d))
    y01 = (np.arange(n) % 3 == 0).astype(int)  # 12 positives
    return X, y01


def write_csv(path, X, y, header=("f1", "f2", "f3", "label")):
    lines = [",".join(header)] if header else []
    lines += [",".join(repr(float(v)) for v in x) + f",{int(t)}" for x, t in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")
    return path


def study(tmp_path, data, **kw):
    text = STUDY.format(data=data)
    return parse_study(text, path=tmp_path / "mine.toml", **kw)


# ---- (a) a CSV study == run_twin on the same arrays ---------------------------------------------

def test_csv_study_bit_identical_to_run_twin(tmp_path):
    X, y01 = make_xy()
    write_csv(tmp_path / "data.csv", X, y01)
    spec = study(tmp_path, 'file = "data.csv"')
    assert spec.sections["data"]["n"] == 36 and spec.sections["data"]["d"] == 3
    assert spec.data_source["label_map"] == "label 1 -> +1, 0 -> -1"
    res = run_study(spec, tmp_path / "out", progress=False)
    got = xr.load_dataset(res.data_path, engine="h5netcdf")
    y = np.where(y01 == 1, 1.0, -1.0)
    ref = run_twin(X, y, algorithm="p1_alg1", loss="auc_hinge", eta=0.1, T=120, replicates=np.arange(5),
                   seed=3, neighbour="flip", checkpoints=log_checkpoints(120, 10))
    for name in ("dist_output", "dist_last"):
        if name in ref:
            np.testing.assert_array_equal(got[name].values, ref[name].values, err_msg=name)
    assert got.attrs["problem"] == "file:data.csv" and got.attrs["data_sha256"] == spec.data_source["sha256"]


def test_npz_and_nc_and_libsvm_read_the_same_arrays(tmp_path):
    X, y01 = make_xy()
    np.savez(tmp_path / "d.npz", X=X, y=y01)
    xr.Dataset({"X": (("sample", "feature"), X), "y": ("sample", y01)}).to_netcdf(tmp_path / "d.nc")
    (tmp_path / "d.libsvm").write_text("".join(
        f"{t} " + " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(x)) + "\n" for x, t in zip(X, y01)))
    for name in ("d.npz", "d.nc", "d.libsvm"):
        Xr, yr, info = read_data_file(tmp_path / name)
        np.testing.assert_array_equal(Xr, X, err_msg=name)
        np.testing.assert_array_equal(yr, np.where(y01 == 1, 1.0, -1.0), err_msg=name)
        assert info["label_map"] == "label 1 -> +1, 0 -> -1"


# ---- (b) malformed files and settings ------------------------------------------------------------

GOOD = "f1,f2,label\n1,2,1\n3,4,-1\n5,6,1\n7,8,-1\n"

CASES = [
    # (id, file name, content or writer, [data] lines, expected message pattern)
    ("missing label column", "a.csv", "f1,f2,f3\n1,2,3\n4,5,6\n", 'file = "a.csv"',
     r"missing label column: no column named 'label' or 'y'"),
    ("named label absent", "a.csv", GOOD, 'file = "a.csv"\nlabel = "target"',
     r"missing label column 'target'"),
    ("non-numeric cell", "a.csv", "f1,f2,label\n1,2,1\n3,abc,-1\n5,6,1\n", 'file = "a.csv"',
     r"a\.csv:3: column 2 \('f2'\): 'abc' is not a number"),
    ("empty cell", "a.csv", "f1,f2,label\n1,2,1\n3,,-1\n5,6,1\n", 'file = "a.csv"',
     r"a\.csv:3: column 2 \('f2'\): empty cell"),
    ("one class only", "a.csv", "f1,label\n1,1\n2,1\n3,1\n", 'file = "a.csv"', r"one class only"),
    ("three classes", "a.csv", "f1,label\n1,0\n2,1\n3,2\n", 'file = "a.csv"', r"3 classes \(0, 1, 2\)"),
    ("NaN", "a.csv", "f1,f2,label\n1,2,1\n3,nan,-1\n", 'file = "a.csv"',
     r"a\.csv:3: column 2 \('f2'\): 'nan'; expected a finite number"),
    ("inf", "a.csv", "f1,f2,label\n1,2,1\n3,4,-1\ninf,4,-1\n", 'file = "a.csv"',
     r"a\.csv:4: column 1 \('f1'\): 'inf'; expected a finite number"),
    ("ragged row", "a.csv", "f1,f2,label\n1,2,1\n3,-1\n", 'file = "a.csv"',
     r"a\.csv:3: ragged row: 2 fields, expected 3"),
    ("empty file", "a.csv", "", 'file = "a.csv"', r"the file is empty"),
    ("header only", "a.csv", "f1,label\n", 'file = "a.csv"', r"only a header line"),
    ("unknown extension", "a.xlsx", GOOD, 'file = "a.xlsx"', r"unknown file type '\.xlsx'"),
    ("no such file", "a.csv", None, 'file = "b.csv"', r"b\.csv: no such file"),
    ("npz missing key", "a.npz", "npz-no-y", 'file = "a.npz"', r"missing key 'y'; expected arrays 'X'"),
    ("nc missing variable", "a.nc", "nc-no-X", 'file = "a.nc"', r"missing variable 'X'"),
    ("npz NaN", "a.npz", "npz-nan", 'file = "a.npz"', r"X\[1, 0\] \(example 2, feature 1\) is nan"),
    ("libsvm bad token", "a.libsvm", "1 1:0.5\n-1 2=3\n", 'file = "a.libsvm"',
     r"a\.libsvm:2: token '2=3' is not of the form index:value"),
    ("both problem and file", "a.csv", GOOD, 'problem = "auc_separable"\nfile = "a.csv"',
     r"give exactly one of problem, dataset, file \(this file gives problem and file\)"),
    ("both dataset and file", "a.csv", GOOD, 'dataset = "diabetes"\nfile = "a.csv"',
     r"exactly one of problem, dataset, file"),
    ("n larger than the data", "a.csv", GOOD, 'file = "a.csv"\nn = 10',
     r"n = 10: larger than the 4 training examples"),
    ("problem parameter with a file", "a.csv", GOOD, 'file = "a.csv"\ngamma = 0.5',
     r"gamma is a synthetic-problem setting"),
    ("label without a source", "a.csv", GOOD, 'label = "y"', r"label applies to real data only"),
    ("positive not a label", "a.csv", GOOD, 'file = "a.csv"\npositive = 7',
     r"positive = 7 is not one of the labels"),
    ("wrong d", "a.csv", GOOD, 'file = "a.csv"\nd = 5', r"d = 5: file 'a.csv' has 2 features"),
    ("bad scale", "a.csv", GOOD, 'file = "a.csv"\nscale = "zscore"', r"scale = 'zscore': scale must be one of"),
]


FILE_CASES = 17  # CASES[:17] are bad files, the rest bad settings


def _write(path, content):
    if content is None:
        return
    if content == "npz-no-y":
        np.savez(path, X=np.ones((3, 2)), labels=np.array([1, -1, 1]))
    elif content == "npz-nan":
        np.savez(path, X=np.array([[1.0, 2.0], [np.nan, 1.0], [0.0, 0.0]]), y=np.array([1, -1, 1]))
    elif content == "nc-no-X":
        xr.Dataset({"features": (("sample", "feature"), np.ones((3, 2))),
                    "y": ("sample", np.array([1, -1, 1]))}).to_netcdf(path)
    else:
        path.write_text(content)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_malformed_file_gets_a_specific_error_and_writes_nothing(tmp_path, case):
    _, fname, content, data, pattern = case
    _write(tmp_path / fname, content)
    out = tmp_path / "out"
    with pytest.raises(StudyError, match=pattern) as ei:
        spec = study(tmp_path, data)
        run_study(spec, out, progress=False)  # not reached: validation happens at parse time
    assert not out.exists()
    msg = str(ei.value)
    assert "mine.toml: [data]" in msg
    if CASES.index(case) < FILE_CASES:  # a bad file: the message names it (path and, for text, line)
        assert f"{tmp_path / ('b.csv' if content is None else fname)}" in msg


def test_fresh_neighbour_rejected_with_real_data(tmp_path):
    (tmp_path / "a.csv").write_text(GOOD)
    with pytest.raises(StudyError, match="neighbour = 'fresh' draws z' from a synthetic problem"):
        parse_study(STUDY.format(data='file = "a.csv"').replace('"flip"', '"fresh"'), path=tmp_path / "m.toml")


# ---- (c) the file's hash is part of the study ----------------------------------------------------

def test_changed_file_changes_the_fingerprint(tmp_path):
    X, y01 = make_xy()
    f = write_csv(tmp_path / "data.csv", X, y01)
    a = study(tmp_path, 'file = "data.csv"')
    assert study(tmp_path, 'file = "data.csv"').fingerprint == a.fingerprint
    X2 = X.copy()
    X2[5, 1] += 1e-9
    write_csv(f, X2, y01)
    b = study(tmp_path, 'file = "data.csv"')
    assert b.fingerprint != a.fingerprint and b.data_fingerprint != a.data_fingerprint
    assert b.data_source["sha256"] != a.data_source["sha256"]


def test_file_changed_after_loading_is_refused(tmp_path):
    X, y01 = make_xy()
    f = write_csv(tmp_path / "data.csv", X, y01)
    spec = study(tmp_path, 'file = "data.csv"')
    write_csv(f, X + 1.0, y01)
    with pytest.raises(StudyError, match="changed since the study was loaded"):
        run_study(spec, tmp_path / "out", progress=False)


def test_synthetic_studies_keep_their_sections():
    spec = parse_study(STUDY.format(data='problem = "auc_separable"\nd = 4\nn = 30'))
    assert spec.data_source is None
    assert not {"file", "dataset", "label", "scale", "test_fraction"} & set(spec.sections["data"])


# ---- (d) a shipped data set ---------------------------------------------------------------------

def test_dataset_diabetes_with_subsample(tmp_path):
    from stabsim.engine.real_datasets import load

    spec = study(tmp_path, 'dataset = "diabetes"\nn = 60')
    d = spec.sections["data"]
    assert (d["d"], d["n"], d["scale"]) == (8, 60, "minmax[-1,1]")
    res = run_study(spec, tmp_path / "out", progress=False)
    got = xr.load_dataset(res.data_path, engine="h5netcdf")
    assert got.attrs["problem"] == "dataset:diabetes"
    assert np.isfinite(got["dist_output"].values).all()
    # the subsample is the stratified, seeded one
    X, y, _ = load("diabetes")
    idx = stratified_subsample(y, 60, 3)
    ref = run_twin(X[idx], y[idx], algorithm="p1_alg1", loss="auc_hinge", eta=0.1, T=120,
                   replicates=np.arange(5), seed=3, neighbour="flip", checkpoints=log_checkpoints(120, 10))
    np.testing.assert_array_equal(got["dist_output"].values, ref["dist_output"].values)


# ---- helpers ------------------------------------------------------------------------------------

def test_subsample_and_split_are_stratified_and_seeded():
    y = np.where(np.arange(100) % 4 == 0, 1.0, -1.0)  # 25 positives
    tr, te = stratified_split(y, 0.2, 5)
    assert te.size == 20 and (y[te] == 1).sum() == 5 and np.intersect1d(tr, te).size == 0
    assert np.array_equal(stratified_split(y, 0.2, 5)[1], te)
    assert not np.array_equal(stratified_split(y, 0.2, 6)[1], te)
    s = stratified_subsample(y, 40, 5, tr)
    assert s.size == 40 and (y[s] == 1).sum() == 10 and np.isin(s, tr).all()
    part = prepare(np.arange(200.0).reshape(100, 2), y, scale="minmax[-1,1]", n=40, test_fraction=0.2, seed=5)
    assert part["X"].shape == (40, 2) and part["X_test"].shape == (20, 2)
    assert part["X"].min() >= -1 and part["X"].max() <= 1


def test_label_mapping():
    assert binary_labels(["M", "B", "M"])[1] == "label 'M' -> +1, 'B' -> -1"
    y, desc = binary_labels(["M", "B", "M"], positive="B")
    assert y.tolist() == [-1, 1, -1] and desc == "label 'B' -> +1, 'M' -> -1"
    assert binary_labels([-1, 1, 1])[0].tolist() == [-1, 1, 1]
    with pytest.raises(DataFileError, match="one class only"):
        binary_labels([2, 2])


# ---- (f) risk measures on real data: F on the stratified held-out part --------------------------

def test_twin_risk_on_a_csv_uses_the_held_out_split(tmp_path):
    """kind twin_risk with [data] file + test_fraction: F_S on the training rows, F on the held-out
    rows (a U-statistic over their pairs), both equal to a direct computation on the arrays that
    stabsim.engine.user_data.prepare gives; the generalization overlay (P1 Thm 4) runs on it."""
    from stabsim.reporting.analyse import analyse
    from stabsim.risk import empirical_risk

    X, y01 = make_xy(n=60)
    write_csv(tmp_path / "data.csv", X, y01)
    text = STUDY.format(data='file = "data.csv"\ntest_fraction = 0.3').replace(
        '[study]\n', '[study]\nkind = "twin_risk"\ncheck = "overlay"\n').replace('neighbour = "flip"\n', "")
    text += ('\n[risk]\nerm = false\n\n[bounds]\nkeys = ["P1.Thm4.gen"]\n\n[check]\nvalue = "F_out - FS_out"\n'
             'widen = "2 * mean_all(F_out_se)"\nquantity = "gen_gap"\nbounds = ["P1.Thm4.gen"]\n')
    spec = parse_study(text, path=tmp_path / "mine.toml")
    res = run_study(spec, tmp_path / "out", progress=False)
    got = xr.load_dataset(res.data_path, engine="h5netcdf")
    y = np.where(y01 == 1, 1.0, -1.0)
    part = prepare(X, y, test_fraction=0.3, seed=3)
    assert len(part["y_test"]) == 18 and set(np.unique(part["y_test"])) == {-1.0, 1.0}
    ref = run_twin(part["X"], part["y"], algorithm="p1_alg1", loss="auc_hinge", eta=0.1, T=120,
                   replicates=np.arange(5), seed=3, checkpoints=log_checkpoints(120, 10), record_outputs=True)
    W = ref["output"].sel(run="S").values
    np.testing.assert_allclose(got["FS_out"].values, empirical_risk(W, part["X"], part["y"], "auc_hinge"),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got["F_out"].values, empirical_risk(W, part["X_test"], part["y_test"], "auc_hinge"),
                               rtol=1e-12, atol=1e-14)
    assert np.all(got["F_out_se"].values[:, -1] > 0)
    rec = analyse(tmp_path / "out" / "mine")
    assert not rec.get("error"), rec.get("error")
    assert [r["key"] for r in rec["rows"]] == ["P1.Thm4.gen"] and rec["rows"][0]["verdict"] != "error"


def test_twin_risk_on_real_data_needs_a_held_out_part(tmp_path):
    X, y01 = make_xy()
    write_csv(tmp_path / "data.csv", X, y01)
    text = STUDY.format(data='file = "data.csv"').replace('[study]\n', '[study]\nkind = "twin_risk"\n')
    with pytest.raises(StudyError, match="test_fraction"):
        parse_study(text.replace('neighbour = "flip"\n', ""), path=tmp_path / "mine.toml")
    assert not (tmp_path / "out").exists()
