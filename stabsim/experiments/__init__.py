"""Experiments: the study kinds, i.e. what one cell of a study computes.

One module per paper and topic (``p1_excess_rate``, ``p3_giga``, ...), each registering its kinds
with ``stabsim.study.register_kind``.  An experiment computes and stores; it never judges (that
is ``stabsim.analyses``, which it must not import).  The shared vocabulary of a paper's setting
(its constants, schedules, reference points) lives one layer down, in ``stabsim.setups``.
"""

from ..builtin import import_package_modules as _import_all

MODULES = _import_all(__name__)
