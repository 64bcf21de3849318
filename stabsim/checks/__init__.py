"""TRANSITION (issue #18): the modules still to be split into stabsim.experiments / stabsim.analyses."""

from ..builtin import import_package_modules as _import_all

MODULES = _import_all(__name__)
