"""Analyses: a finished study's data -> verdicts and figures.

``base`` holds what a check returns (``CheckResult``) and the helpers the checks share;
``overlay`` the generic check (any measure against any bounds, configured in the study file);
the other modules, one per paper and topic, the checks that need more than an overlay.  Each
registers its checks with ``stabsim.registry.register_check``; ``stabsim.reporting.analyse.analyse``
runs a study's check and writes its summary.  An analysis imports neither an experiment
(``stabsim.experiments``) nor the study runner (``stabsim.study``).
"""

from stabsim.registry import register_check
from stabsim.registry.loading import import_package_modules
from stabsim.analyses.base import CheckResult

__all__ = ["CheckResult", "register_check"]

MODULES = import_package_modules(__name__)
