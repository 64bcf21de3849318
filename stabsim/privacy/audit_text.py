"""The words of ``stabsim audit`` beside its numbers: the note on the accountant's eps against the
claimed one (``accountant_note``) and the help formatter that shows a default only where it says
something (``DefaultsHelpFormatter``)."""

from __future__ import annotations

import argparse


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Appends "(default: X)" to an option's help where X says something: not for a required
    option, a default of None or False, or a help that already names its default."""

    def _get_help_string(self, action):
        text = action.help or ""
        d = action.default
        if ("default" in text or action.required or d is None or d is False or d is argparse.SUPPRESS
                or not action.option_strings):
            return text
        return f"{text} (default: %(default)s)"


def accountant_note(rep) -> str:
    """One line on how the accountant's eps for the noise used compares with the claimed eps of an
    ``AuditReport``: below it the calibration is conservative (more noise than the claim needs),
    above it the noise is short of the claim (``noise_scale`` < 1 on purpose, or a calibration that
    does not deliver its eps); "" when no accountant ran."""
    acc = rep.eps_accountant if rep.eps_accountant is not None else rep.eps_accountant_rdp
    if acc is None:
        return ""
    which = "PLD" if rep.eps_accountant is not None else "RDP"
    claim = f"({rep.eps_claimed:g}, {rep.delta:.3g})-DP"
    if acc < rep.eps_claimed:
        return (f"note: the accountant's eps for the noise used ({which}: {acc:.3g}) is below the claimed eps "
                f"{rep.eps_claimed:g}: the calibration is conservative (it adds more noise than {claim} needs), "
                f"so an audit cannot reach the claimed eps; compare eps_lower with the accountant's eps.")
    if rep.noise_scale != 1.0:
        return (f"note: the accountant's eps for the noise used ({which}: {acc:.3g}) is above the claimed eps "
                f"{rep.eps_claimed:g}: --noise-scale {rep.noise_scale:g} breaks the calibration on purpose.")
    return (f"note: the accountant's eps for the noise used ({which}: {acc:.3g}) is above the claimed eps "
            f"{rep.eps_claimed:g}: the paper's calibration does not deliver {claim} by this accountant "
            "(stabsim privacy ALGORITHM gives the ledger row).")
