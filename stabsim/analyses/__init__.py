"""Analyses: a finished study's data -> verdicts, figures and ``summary.md``.

``base`` holds the contract (``CheckResult``, ``register_check``, ``analyse``); ``overlay`` the
generic check (any measure against any bounds, configured in the study file); the other
modules, one per paper and topic, the checks that need more than an overlay.  An analysis
never imports an experiment (``stabsim.experiments``).
"""

from .base import (ANALYSIS_FILE, CHECKS, FIGURE_DIR, SUMMARY_FILE, Check, CheckResult, analyse,
                   check_name, get_check, load_results, register_check, reproduce_command)

__all__ = ["CheckResult", "Check", "CHECKS", "register_check", "get_check", "analyse", "check_name",
           "load_results", "reproduce_command", "ANALYSIS_FILE", "SUMMARY_FILE", "FIGURE_DIR"]

from ..builtin import import_package_modules as _import_all

MODULES = _import_all(__name__)
