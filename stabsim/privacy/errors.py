"""Errors raised by :mod:`stabsim.privacy`."""

from __future__ import annotations


class InfeasiblePrivacyParameters(ValueError):
    """The privacy calibration a paper prescribes cannot be applied to these parameters.

    Raised, for example, when P4's beta search finds no beta satisfying Thm 2/5, when P3's
    burn-in T_1 = max{ceil(16 L^2/alpha^2), 7} is not smaller than n, or when P1 Thm 10's
    step size violates eta <= 2/L (the UAS bound behind sigma_k needs it).  The message
    names the offending parameters and says what would make the calibration feasible.
    It subclasses ``ValueError`` so generic argument checks still catch it.
    """
