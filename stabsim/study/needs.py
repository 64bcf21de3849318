"""What a study needs before it runs: the peak memory of one chunk and the disk of its results
(``study_needs``), checked against the machine (``check_study``, with
``stabsim.runtime.resources.check_memory`` / ``check_disk``)."""

from __future__ import annotations

from stabsim.runtime.resources import check_disk, check_memory, fmt_bytes


#: the fixed part of one chunk file (netCDF-3 header: the provenance and chunk attrs, about
#: 4.5 KiB measured on a twin study) and of data.nc (HDF5's superblock, object headers, chunk
#: indexes and dimension scales: about 60 KiB measured on a two-cell study), with a margin
CHUNK_FILE_OVERHEAD = 8 * 2**10
DATA_FILE_OVERHEAD = 96 * 2**10


def study_needs(spec) -> dict | None:
    """Estimated peak memory of one chunk and disk of the results of a study whose kind runs
    ``run_twin`` with ``[data]`` and ``[algorithm]`` sections (None for other kinds):
    ``{"chunk_memory", "chunk_what", "data_bytes", "disk"}``.  The data of every cell
    (replicates x checkpoints x 5 record variables x 8 bytes, plus the outputs when recorded)
    is summed; the disk holds the chunk files and data.nc at once while data.nc is written
    (each file with its fixed part: ``CHUNK_FILE_OVERHEAD``, ``DATA_FILE_OVERHEAD`` and the
    study text, which data.nc holds twice)."""
    from stabsim.engine.algorithm_specs import get_algorithm
    from stabsim.engine.losses import get_loss
    from stabsim.engine.twin_runs import log_checkpoints, twin_memory

    secs = spec.sections
    if not ({"data", "algorithm"} <= set(secs)) or not {"n", "d"} <= set(secs["data"]) or \
            not {"name", "loss", "T", "checkpoints"} <= set(secs["algorithm"]):
        return None
    worst, what, data_bytes, chunk_files = 0.0, "", 0.0, 0.0
    for cell in spec.cells():
        p = spec.cell_params(cell)
        d, a = p["data"], p["algorithm"]
        try:
            lossf = get_loss(a["loss"], a.get("q"))
            alg = get_algorithm(a["name"], buffer=a.get("buffer"), output=a.get("output"))
        except ValueError:
            return None
        T, n, dim = int(a["T"]), int(d["n"]), int(d["d"])
        ck = a["checkpoints"]
        C = len(log_checkpoints(T, ck)) if isinstance(ck, int) else len(ck)
        pp = dim * dim if lossf.matrix else dim
        rec_out = bool(a.get("record_outputs"))
        R = min(spec.chunk, spec.replicates)
        est = twin_memory(R=R, n=n, d=dim, p=pp, md=dim if lossf.matrix else 0, C=C, T=T,
                          nS=R if d.get("per_replicate") else 1, record_outputs=rec_out, eta=a.get("eta"),
                          alg=alg, lossf=lossf)
        if est["total"] > worst:
            worst = est["total"]
            label = ", ".join(f"{k}={v}" for k, v in cell.coords.items()) or "the single cell"
            what = f"one chunk ({R} replicates, T = {T}, d = {dim}, n = {n}, {C} checkpoints; {label})"
        per_rep = 8.0 * C * (5 + (2 * pp if rec_out else 0)) + 16.0  # the records, k and the id
        data_bytes += per_rep * spec.replicates
        for a, b in spec.chunk_ranges():
            chunk_files += CHUNK_FILE_OVERHEAD + per_rep * (b - a) + 32.0 * C
    data_file = DATA_FILE_OVERHEAD + 2.0 * len(spec.text) + 1.1 * data_bytes
    return {"chunk_memory": worst, "chunk_what": what, "data_bytes": data_bytes,
            "disk": chunk_files + data_file}


def check_study(spec, out_dir=None) -> None:
    """Raise ``ResourceError`` before any work when a study's chunk cannot fit in memory or its
    results on the disk of ``out_dir``."""
    need = study_needs(spec)
    if need is None:
        return
    check_memory(need["chunk_memory"], f"study {spec.id!r}: {need['chunk_what']}",
                 "use a smaller [study] chunk (replicates per chunk), fewer checkpoints, a smaller d or n, "
                 "or record_outputs = false")
    if out_dir is not None:
        check_disk(need["disk"], out_dir, f"study {spec.id!r} ({fmt_bytes(need['data_bytes'])} of results, "
                   "written once as chunks and once as data.nc)",
                   "use fewer replicates or checkpoints, record_outputs = false, or another --out")
