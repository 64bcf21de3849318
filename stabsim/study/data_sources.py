"""Real data in a study (``[data] dataset`` / ``file``, ``stabsim.engine.user_data``): read and
checked at parse time (``resolve_data_source``, which fills ``spec.data_source``).  The arrays
of one cell: ``stabsim.registry.source_arrays``."""

from __future__ import annotations

from pathlib import Path

from stabsim.registry import DATA_SOURCE, PROBLEM_KEYS, StudyError


def _source_error(src, what, msg):
    return StudyError(f"{src}: [data] {what}: {msg}")


def resolve_data_source(src, path, sections: dict, sweep: dict, merged: dict, seed: int) -> dict | None:
    """Read and check ``[data] dataset``/``file`` at parse time (before any output exists); fill
    ``d`` and (unless given) ``n`` from the data.  Returns ``spec.data_source`` or None.  Without
    a source the source keys are dropped from the sections (fingerprints of synthetic studies
    are unchanged)."""
    from stabsim.engine.user_data import DataFileError, read_data_file, stratified_split

    d = sections["data"]
    given = set(merged.get("data", {})) | {k for k in sweep if k in d or k in ("problem", "n", "d")}
    if d["dataset"] is None and d["file"] is None:
        extra = [k for k in DATA_SOURCE if k in given]
        if extra:
            raise StudyError(f"{src}: [data] {extra[0]} applies to real data only: give [data] dataset = "
                             "\"NAME\" or file = \"PATH\"")
        for k in DATA_SOURCE:
            d.pop(k, None)
        return None
    chosen = [k for k in ("problem", "dataset", "file") if k in given]
    if len(chosen) > 1:
        raise StudyError(f"{src}: [data] give exactly one of problem, dataset, file (this file gives "
                         f"{' and '.join(chosen)})")
    bad = [k for k in PROBLEM_KEYS + ("per_replicate",) if k in given]
    if bad:
        raise StudyError(f"{src}: [data] {bad[0]} is a synthetic-problem setting; it does not apply to "
                         f"real data ({'dataset ' + repr(d['dataset']) if d['dataset'] else 'file ' + repr(d['file'])})")
    if "d" in sweep:
        raise StudyError(f"{src}: [sweep] d: the dimension of real data is fixed by the data")
    if d["dataset"] is not None:
        from stabsim.engine.real_datasets import load

        for k in ("label", "positive"):
            if k in given:
                raise _source_error(src, k, f"applies to [data] file only; dataset {d['dataset']!r} has "
                                            "its own labels")
        scale = d["scale"] or "minmax[-1,1]"
        try:
            X, y, info = load(d["dataset"], scale=None if scale == "none" else scale)
        except (ValueError, ImportError) as e:
            raise _source_error(src, f"dataset = {d['dataset']!r}", str(e)) from None
        source = {"kind": "dataset", "name": info["name"], "label_map": info["binarize_rule"]}
        what = f"dataset {d['dataset']!r}"
    else:
        fp = Path(d["file"]).expanduser()
        if not fp.is_absolute():
            fp = (Path(path).resolve().parent if path is not None else Path.cwd()) / fp
        scale = d["scale"] or "none"
        try:
            X, y, info = read_data_file(fp, label=d["label"], positive=d["positive"])
        except DataFileError as e:
            raise _source_error(src, f"file = {d['file']!r}", str(e)) from None
        source = {"kind": "file", "path": str(fp), "sha256": info["sha256"], "format": info["format"],
                  "label_map": info["label_map"]}
        what = f"file {d['file']!r}"
    d["scale"] = scale
    d["problem"] = None
    rows, dim = X.shape
    if "d" in given and d["d"] != dim:
        raise _source_error(src, f"d = {d['d']}", f"{what} has {dim} features; leave d unset (it is "
                                                   "taken from the data)")
    d["d"] = int(dim)
    n_train = int(stratified_split(y, d["test_fraction"], 0)[0].size)
    held = f" ({rows} rows less {rows - n_train} held out by test_fraction = {d['test_fraction']})" \
        if n_train < rows else ""
    if "n" not in merged.get("data", {}):
        d["n"] = n_train  # every training row (a swept n replaces it)
    for n in sweep.get("n", [d["n"]]):
        if n > n_train:
            raise _source_error(src, f"n = {n}", f"larger than the {n_train} training examples of "
                                                 f"{what}{held}; the subsample n must be <= {n_train}")
    source.update(rows=int(rows), d=int(dim), n_train=n_train, n_pos=int((y == 1).sum()),
                  n_neg=int((y == -1).sum()))
    return source
