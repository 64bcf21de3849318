"""A user's data file -> ``(X, y)`` for a study, with precise errors.

>>> from stabsim.engine.user_data import read_data_file, prepare
>>> X, y, info = read_data_file("mydata.csv", label="outcome")
>>> parts = prepare(X, y, scale="minmax[-1,1]", n=200, test_fraction=0.2, seed=0)

Formats (chosen by the file's extension):

``.csv``        comma-separated text, one example a line.  The first line is a header when one
                of its cells is not a number.  Blank lines and lines starting with ``#`` are
                skipped.  ``label``: the label column, by name (needs a header) or 0-based index
                (negative counts from the end); default: the column named ``label`` or ``y``
                (any case) when there is a header, else the last column.  Every other column
                is a feature and every feature cell must be a finite number (no empty cells,
                NaN or inf).
``.npz``        ``numpy.savez`` archive with arrays ``X`` (n, d) and ``y`` (n,) (``label``
                names another key for the labels).
``.libsvm``     LIBSVM / svmlight text (``.svm``, ``.svmlight`` too), read with
``.svm``        ``stabsim.engine.real_datasets.read_libsvm`` (absent features are 0).
``.nc``         netCDF (xarray) with variables ``X`` (sample, feature) and ``y`` (sample)
                (``label`` names another variable for the labels).

Labels: exactly two distinct values.  ``{-1, +1}`` are kept; otherwise ``positive`` (a label
value) maps to +1, by default the larger value (numbers) or the later one in sorted order
(strings), e.g. ``{0, 1}``: 1 -> +1.  One class only or more than two classes is an error.

Every error is a :class:`DataFileError` naming the file and, where it applies, the line and
column, and saying what was expected.  ``prepare`` scales (``"none"``, ``"minmax[-1,1]"``
per feature as the P1 authors, ``"unit-norm"`` rows, ``"minmax[-1,1]+unit-norm"``), splits off
a stratified held-out part (``test_fraction``) and draws a stratified subsample of ``n``
training examples; both are pure functions of ``seed`` (``stabsim.engine.rng`` stream
``STREAM_SPLIT`` of (seed, 0): counters 0..N-1 for the split, N..2N-1 for the subsample), and
the chosen rows keep the file's order.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
from pathlib import Path

import numpy as np

from stabsim.engine import rng

__all__ = ["DataFileError", "FORMATS", "SCALES", "read_data_file", "file_sha256", "binary_labels",
           "scale_features", "stratified_split", "stratified_subsample", "prepare"]

FORMATS = {".csv": "csv", ".npz": "npz", ".libsvm": "libsvm", ".svm": "libsvm", ".svmlight": "libsvm",
           ".nc": "nc"}
SCALES = ("none", "minmax[-1,1]", "unit-norm", "minmax[-1,1]+unit-norm")


class DataFileError(ValueError):
    """A data file that cannot be used; the message names the file and what is wrong."""


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---- labels ---------------------------------------------------------------------------------

def _num(s: str):
    try:
        return float(s)
    except ValueError:
        return None


def binary_labels(labels, *, positive=None, where: str = "labels"):
    """``labels`` (numbers or strings, any 1-D sequence) -> (y in {-1., +1.}, description)."""
    raw = list(labels)
    numeric = all(isinstance(v, (int, float, np.integer, np.floating)) for v in raw)
    if not numeric:
        nums = [_num(str(v)) for v in raw]
        if all(v is not None for v in nums):
            raw, numeric = nums, True
        else:
            raw = [str(v) for v in raw]
    if numeric:
        raw = [float(v) for v in raw]
        bad = [i for i, v in enumerate(raw) if not math.isfinite(v)]
        if bad:
            raise DataFileError(f"{where}: label of example {bad[0] + 1} is {raw[bad[0]]}; labels must be "
                                "finite numbers or names")
    uniq = sorted(set(raw))
    show = ", ".join(_show(v) for v in uniq[:6]) + (", ..." if len(uniq) > 6 else "")
    if len(uniq) < 2:
        raise DataFileError(f"{where}: one class only (every label is {show}); expected two classes "
                            "(a classification / AUC loss needs examples of both)")
    if len(uniq) > 2:
        raise DataFileError(f"{where}: {len(uniq)} classes ({show}); expected exactly two distinct labels "
                            "(binarise the labels first, e.g. one class against the rest)")
    if positive is not None:
        key = _num(str(positive)) if numeric else str(positive)
        if key not in uniq:
            raise DataFileError(f"{where}: positive = {positive!r} is not one of the labels {{{show}}}")
        pos = key
    elif numeric and uniq == [-1.0, 1.0]:
        pos = 1.0
    else:
        pos = uniq[1]
    neg = uniq[0] if pos == uniq[1] else uniq[1]
    y = np.where(np.asarray([v == pos for v in raw]), 1.0, -1.0)
    return y, f"label {_show(pos)} -> +1, {_show(neg)} -> -1"


def _show(v) -> str:
    return f"{v:g}" if isinstance(v, float) else repr(v)


# ---- readers ----------------------------------------------------------------------------------

def _check_finite(X, where, what="X"):
    bad = ~np.isfinite(X)
    if bad.any():
        i, j = (int(t) for t in np.argwhere(bad)[0])
        raise DataFileError(f"{where}: {what}[{i}, {j}] (example {i + 1}, feature {j + 1}) is {X[i, j]}; "
                            "expected finite numbers (no NaN or inf)")


def _read_csv(path: Path, label):
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataFileError(f"{where}: not UTF-8 text ({e}); expected a comma-separated text file") from None
    reader = csv.reader(io.StringIO(text))
    rows = []
    try:
        for cells in reader:
            if not cells or all(not c.strip() for c in cells) or cells[0].lstrip().startswith("#"):
                continue
            rows.append((reader.line_num, [c.strip() for c in cells]))
    except csv.Error as e:
        raise DataFileError(f"{where}:{reader.line_num}: not valid CSV: {e}") from None
    if not rows:
        raise DataFileError(f"{where}: the file is empty (no data rows); expected a header line and one "
                            "example a line")
    header = None
    if any(_num(c) is None for c in rows[0][1]):
        header = rows[0][1]
        rows = rows[1:]
        if not rows:
            raise DataFileError(f"{where}: only a header line, no data rows")
    ncol = len(header) if header is not None else len(rows[0][1])
    names = header if header is not None else [str(j) for j in range(ncol)]
    if ncol < 2:
        raise DataFileError(f"{where}: {ncol} column; expected a label column and at least one feature column")
    # the label column
    if label is None:
        if header is not None:
            hits = [j for j, h in enumerate(header) if h.lower() in ("label", "y")]
            if not hits:
                raise DataFileError(f"{where}: missing label column: no column named 'label' or 'y' in the "
                                    f"header ({', '.join(repr(h) for h in header)}); set [data] label = "
                                    "\"<column name>\"")
            lab = hits[0]
        else:
            lab = ncol - 1
    elif isinstance(label, str):
        if header is None:
            raise DataFileError(f"{where}: label = {label!r} names a column but the file has no header line; "
                                f"give the column's 0-based index instead (0..{ncol - 1})")
        if label not in header:
            raise DataFileError(f"{where}: missing label column {label!r}: the header has "
                                f"{', '.join(repr(h) for h in header)}")
        lab = header.index(label)
    else:
        if not -ncol <= label < ncol:
            raise DataFileError(f"{where}: label = {label}: no such column; the file has {ncol} columns "
                                f"(indices 0..{ncol - 1})")
        lab = label % ncol
    feats = [j for j in range(ncol) if j != lab]
    X = np.empty((len(rows), len(feats)))
    labels = []
    for r, (line, cells) in enumerate(rows):
        if len(cells) != ncol:
            raise DataFileError(f"{where}:{line}: ragged row: {len(cells)} fields, expected {ncol} "
                                f"(as the {'header' if header is not None else 'first row'})")
        for c, j in enumerate(feats):
            cell = cells[j]
            col = f"column {j + 1} ({names[j]!r})" if header is not None else f"column {j + 1}"
            if not cell:
                raise DataFileError(f"{where}:{line}: {col}: empty cell; expected a number "
                                    "(missing values are not allowed)")
            v = _num(cell)
            if v is None:
                raise DataFileError(f"{where}:{line}: {col}: {cell!r} is not a number; expected a number "
                                    "in every feature column")
            if not math.isfinite(v):
                raise DataFileError(f"{where}:{line}: {col}: {cell!r}; expected a finite number "
                                    "(no NaN or inf)")
            X[r, c] = v
        if not cells[lab]:
            raise DataFileError(f"{where}:{line}: label column {lab + 1} ({names[lab]!r}) is empty; "
                                "expected a label")
        labels.append(cells[lab])
    return X, labels, {"label_column": names[lab], "header": header is not None,
                       "features": [names[j] for j in feats] if header is not None else None}


def _arrays(where, X, y, label_key):
    X = np.asarray(X)
    y = np.asarray(y)
    if X.ndim != 2:
        raise DataFileError(f"{where}: X has shape {X.shape}; expected 2-D (examples, features)")
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise DataFileError(f"{where}: {label_key} has shape {y.shape}; expected ({X.shape[0]},), one label "
                            "per row of X")
    if not np.issubdtype(X.dtype, np.number) or np.iscomplexobj(X):
        raise DataFileError(f"{where}: X has dtype {X.dtype}; expected real numbers")
    X = np.array(X, dtype=np.float64)
    _check_finite(X, where)
    return X, y.tolist()


def _read_npz(path: Path, label):
    where, key = str(path), label or "y"
    try:
        with np.load(path, allow_pickle=False) as z:
            keys = list(z.files)
            missing = [k for k in ("X", key) if k not in keys]
            if missing:
                raise DataFileError(f"{where}: missing key{'s' if len(missing) > 1 else ''} "
                                    f"{', '.join(repr(k) for k in missing)}; expected arrays 'X' (n, d) and "
                                    f"{key!r} (n,); the archive has {', '.join(repr(k) for k in keys) or 'none'}")
            X, y = z["X"], z[key]
    except DataFileError:
        raise
    except Exception as e:  # BadZipFile, pickled object arrays, truncated files
        raise DataFileError(f"{where}: not a readable .npz archive ({type(e).__name__}: {e}); expected "
                            "numpy.savez(path, X=..., y=...)") from None
    X, labels = _arrays(where, X, y, key)
    return X, labels, {"label_column": key}


def _read_libsvm(path: Path, label):
    from stabsim.engine.real_datasets import read_libsvm

    if label is not None:
        raise DataFileError(f"{path}: label = {label!r}: a LIBSVM file has its label first on every line; "
                            "leave label unset")
    try:
        X, y = read_libsvm(path)
    except UnicodeDecodeError as e:
        raise DataFileError(f"{path}: not ASCII text ({e}); expected LIBSVM lines 'label index:value ...'") from None
    except ValueError as e:
        raise DataFileError(f"{e}; expected LIBSVM lines 'label index:value ...'") from None
    if X.shape[1] == 0:
        raise DataFileError(f"{path}: no features (no index:value tokens)")
    _check_finite(X, str(path))
    return X, y.tolist(), {"label_column": "first token"}


def _read_nc(path: Path, label):
    import xarray as xr

    where, key = str(path), label or "y"
    try:
        with xr.open_dataset(path) as ds:
            missing = [k for k in ("X", key) if k not in ds.variables]
            if missing:
                raise DataFileError(f"{where}: missing variable{'s' if len(missing) > 1 else ''} "
                                    f"{', '.join(repr(k) for k in missing)}; expected X (sample, feature) and "
                                    f"{key} (sample); the file has {', '.join(map(repr, ds.variables)) or 'none'}")
            X, y = ds["X"].values, ds[key].values
    except DataFileError:
        raise
    except Exception as e:
        raise DataFileError(f"{where}: not a readable netCDF file ({type(e).__name__}: {e})") from None
    X, labels = _arrays(where, X, y, key)
    return X, labels, {"label_column": key}


_READERS = {"csv": _read_csv, "npz": _read_npz, "libsvm": _read_libsvm, "nc": _read_nc}


def read_data_file(path, *, label=None, positive=None):
    """Read ``path`` -> ``(X float64 (n, d), y in {-1., +1.} (n,), info)``; raises DataFileError.

    ``info``: format, sha256, rows, features, label column, the label mapping."""
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise DataFileError(f"{path}: unknown file type {path.suffix or '(no extension)'!r}; expected one of "
                            f"{', '.join(FORMATS)}")
    if not path.is_file():
        raise DataFileError(f"{path}: no such file")
    try:
        X, labels, info = _READERS[fmt](path, label)
    except OSError as e:
        raise DataFileError(f"{path}: cannot read it ({e})") from None
    if X.shape[0] < 2:
        raise DataFileError(f"{path}: {X.shape[0]} example; expected at least 2")
    y, mapping = binary_labels(labels, positive=positive, where=f"{path}: label column {info['label_column']!r}")
    info.update(format=fmt, sha256=file_sha256(path), rows=int(X.shape[0]), d=int(X.shape[1]),
                label_map=mapping, n_pos=int((y == 1).sum()), n_neg=int((y == -1).sum()))
    return np.ascontiguousarray(X), y, info


# ---- scaling, split, subsample ----------------------------------------------------------------

def scale_features(X, scale: str | None):
    """``"none"``/None, ``"minmax[-1,1]"`` (per feature, constant feature -> -1, as sklearn),
    ``"unit-norm"`` (rows; zero rows stay zero) or ``"minmax[-1,1]+unit-norm"``."""
    from stabsim.engine.real_datasets import _scale

    if scale in (None, "none"):
        return np.array(X, dtype=np.float64)
    if scale not in SCALES:
        raise ValueError(f"scale = {scale!r}; expected one of {', '.join(SCALES)}")
    return _scale(np.array(X, dtype=np.float64), scale)


def stratified_split(y, test_fraction: float, seed: int):
    """(train, test) sorted row indices: about ``test_fraction`` of each class held out (at
    least one per class with >= 2 examples, never the whole class); pure function of seed."""
    y = np.asarray(y)
    N = y.size
    if not 0 <= test_fraction < 1:
        raise ValueError(f"test_fraction = {test_fraction}; expected a number in [0, 1)")
    if test_fraction == 0:
        return np.arange(N), np.arange(0)
    u = rng.uniforms(seed, 0, rng.STREAM_SPLIT, N)
    test = []
    for c in (1.0, -1.0):
        idx = np.flatnonzero(y == c)
        k = min(max(int(round(test_fraction * idx.size)), 1), idx.size - 1)
        test.append(idx[np.argsort(u[idx], kind="stable")][:k])
    test = np.sort(np.concatenate(test))
    return np.setdiff1d(np.arange(N), test), test


def stratified_subsample(y, n: int, seed: int, candidates=None):
    """``n`` sorted indices among ``candidates`` (default all rows) keeping the class ratio
    (at least one example of each class); pure function of seed (counters N..2N-1)."""
    y = np.asarray(y)
    N = y.size
    cand = np.arange(N) if candidates is None else np.asarray(candidates)
    if n > cand.size:
        raise ValueError(f"n = {n} is larger than the {cand.size} available examples")
    if n == cand.size:
        return np.sort(cand)
    u = rng.uniforms(seed, 0, rng.STREAM_SPLIT, N, start=N)
    pos, neg = cand[y[cand] == 1], cand[y[cand] != 1]
    n_pos = int(round(n * pos.size / cand.size))
    n_pos = min(max(n_pos, 1, n - neg.size), pos.size, n - 1)
    pick = np.r_[pos[np.argsort(u[pos], kind="stable")][:n_pos], neg[np.argsort(u[neg], kind="stable")][:n - n_pos]]
    return np.sort(pick)


def prepare(X, y, *, scale="none", n=None, test_fraction=0.0, seed=0) -> dict:
    """Scale (over the whole file), split off a stratified held-out part, subsample ``n``
    training rows.  Returns ``{"X", "y", "X_test", "y_test", "train_idx", "test_idx"}``."""
    Xs = scale_features(X, scale)
    y = np.asarray(y, dtype=np.float64)
    train, test = stratified_split(y, test_fraction, seed)
    if n is not None:
        train = stratified_subsample(y, int(n), seed, train)
    return {"X": np.ascontiguousarray(Xs[train]), "y": np.ascontiguousarray(y[train]),
            "X_test": np.ascontiguousarray(Xs[test]), "y_test": np.ascontiguousarray(y[test]),
            "train_idx": train, "test_idx": test}
