"""Studies: a TOML file -> a validated grid of cells x replicate chunks -> a resumable run
-> one ``data.nc``.

>>> from stabsim.study import load_study, run_study
>>> spec = load_study("studies/example_twin.toml", profile="quick")
>>> result = run_study(spec, "out")                     # in-process (numba threads)
>>> result = run_study(spec, "out", scheduler="local:2")  # dask LocalCluster, 2 workers
>>> xr.open_dataset(result.data_path)

The study-file format (every section and key), the contract of a study kind, execution and
storage are documented in docs/study-files.md.  The kinds and checks a study names are looked up
in ``stabsim.registry`` (where ``StudySpec``, ``StudyError`` and ``Param`` are defined).

Modules: ``schema`` (the ``[study]``, ``[bounds]``, ``[check]``, ``[run]`` keys), ``spec``
(``parse_study``, ``load_study``, ``apply_profile``), ``data_sources`` (real data: ``[data]
dataset``/``file``, read at parse time), ``needs`` (memory and disk a study needs),
``execution`` (``Executor``, one chunk), ``resume`` (what an earlier run left), ``run``
(``run_study``, ``run_studies``), ``lane`` (a second process taking studies from the back of a
long run), ``assembly`` (``assemble``, data.nc's attrs), ``index`` (``default_studies_dir``,
``study_index``).
"""

from __future__ import annotations

from stabsim.registry import StudyError, StudySpec
from stabsim.study.execution import Executor, OtherBackend, StaleCode
from stabsim.study.index import default_studies_dir, study_index
from stabsim.study.run import RunResult, run_studies, run_study
from stabsim.study.spec import apply_profile, load_study, parse_study

__all__ = ["StudyError", "StudySpec", "load_study", "parse_study", "apply_profile", "run_study", "run_studies",
           "RunResult", "Executor", "StaleCode", "OtherBackend", "default_studies_dir", "study_index"]
