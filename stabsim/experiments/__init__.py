"""Experiments: the study kinds, i.e. what one cell of a study computes.

One module per paper and topic (``p1_excess_rate``, ``p3_giga``, ...), each registering its kinds
with ``stabsim.registry.register_kind`` (the built-in ``twin`` kind they extend:
``stabsim.registry.twin``).  An experiment computes and stores; it never judges (that is
``stabsim.analyses``, which it must not import), nor imports the study runner (``stabsim.study``).
The shared vocabulary of a paper's setting (its constants, schedules, reference points) lives one
layer down, in ``stabsim.setups``.
"""

from stabsim.registry.loading import import_package_modules

MODULES = import_package_modules(__name__)
