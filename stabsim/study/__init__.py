"""Studies: a TOML file -> a validated grid of cells x replicate chunks -> a resumable run
-> one ``data.nc``.

>>> from stabsim.study import load_study, run_study
>>> spec = load_study("studies/example_twin.toml", profile="quick")
>>> result = run_study(spec, "out")                     # in-process (numba threads)
>>> result = run_study(spec, "out", scheduler="local:2")  # dask LocalCluster, 2 workers
>>> xr.open_dataset(result.data_path)

The study-file format (every section and key), the contract of a study kind, execution and
storage are documented in docs/study-files.md.

Modules: ``params`` (``Param``, the value checkers, the kind registry), ``schema`` (the
``[study]``, ``[bounds]``, ``[check]`` keys and the ``twin`` kind's ``[data]``/``[algorithm]``),
``spec`` (``StudySpec``, ``parse_study``, ``load_study``), ``grid`` (cells and their ids),
``data_sources`` (real data: ``[data] dataset``/``file``), ``twin_kind`` (the built-in kind
``twin``), ``execution`` (``Executor``, one chunk), ``resume`` (what an earlier run left),
``run`` (``run_study``, ``run_studies``), ``assembly`` (``assemble``, data.nc's attrs),
``index`` (``study_index``).  Everything is importable from ``stabsim.study`` itself.
"""

from __future__ import annotations

from .params import (KIND_MODULES, KINDS, REQUIRED, _FIXED_SECTIONS, Kind, Param, StudyError, _Bad, _engine,
                     _fmt, _hint, _is_int, _is_num, boolean, choice, get_kind, integer, load_kinds, number,
                     open_unit, register_kind, string)
from .schema import (BOUNDS_PARAMS, CHECK_PARAMS, DATA_SOURCE, PROBLEM_KEYS, RUN_PARAMS, STUDY_PARAMS,
                     TWIN_ALGORITHM, TWIN_DATA, _bound_keys, _check_algorithm, _check_check, _check_checkpoints,
                     _check_constants, _check_constraint, _check_dataset_name, _check_eta, _check_file,
                     _check_k, _check_label, _check_loss, _check_output, _check_plugins, _check_positive,
                     _check_problem, _check_scale, _custom_tables, _eta_arg, _str_list, twin_params)
from .grid import Cell, _cell_id, _cell_label, _sanitize, expand_cells
from .data_sources import _SOURCE_CACHE, _resolve_data_source, _source_arrays, _source_error
from .spec import (_CHUNKING_KEYS, FORMAT_VERSION, StudySpec, _check_value, _err, _finish_custom_and_check,
                   _unknown_key, load_study, parse_study)
from .twin_kind import _problem, _twin_kwargs, _validate_twin, twin_cell
from .assembly import (_PROVENANCE_KEYS, LAZY_ASSEMBLY_BYTES, _axis_values, _constant_along, _refresh_attrs,
                       _versions, assemble, study_attrs)
from .execution import (_WORKER_HOW, Executor, OtherBackend, StaleCode, _check_returned_code, _code_mismatch,
                        _compute_chunk, _parse_scheduler, _run_jobs, _stamp_backend, _stamp_code)
from .resume import (_FOREIGN, _LEGACY_SPEC_KEYS, _changes_text, _data_complete, _flat, _manifest, _move_aside,
                     _remove_chunks, _spec_changes)
from .run import RunResult, _run_locked, run_studies, run_study
from .index import default_studies_dir, study_index

__all__ = ["StudyError", "Param", "StudySpec", "Kind", "KINDS", "register_kind", "get_kind",
           "twin_params", "load_study", "parse_study", "run_study", "run_studies", "RunResult",
           "Executor", "assemble", "default_studies_dir", "study_index",
           "integer", "number", "open_unit", "boolean", "choice", "string"]
