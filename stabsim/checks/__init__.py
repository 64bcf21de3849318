"""Analysis of finished studies: checks (study + data -> verdicts + figures), ``analyse``.

See ``stabsim.checks.base`` for the contract; ``stabsim.checks.p1`` holds the P1 checks
and the study kinds they need (``twin_risk``).  Other papers add ``stabsim/checks/pN.py``
and import it in ``base._import_builtin``.
"""

from .base import (ANALYSIS_FILE, CHECKS, FIGURE_DIR, SUMMARY_FILE, Check, CheckResult, analyse,
                   check_name, get_check, load_results, register_check, reproduce_command)

__all__ = ["CheckResult", "Check", "CHECKS", "register_check", "get_check", "analyse", "check_name",
           "load_results", "reproduce_command", "ANALYSIS_FILE", "SUMMARY_FILE", "FIGURE_DIR"]

from .base import _import_builtin as _imp

_imp()
del _imp
