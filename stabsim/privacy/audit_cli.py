"""The ``stabsim audit`` command: its parser and ``main`` (the audits themselves are
:mod:`stabsim.privacy.audit_runner`'s).  Default data: the algorithm's worst-case audit design
(:mod:`stabsim.privacy.audit_designs`); ``canary-copies`` is refused where the canary cannot change
anything (``_check_canary_copies``)."""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np

from stabsim.engine.losses import get_loss
from stabsim.privacy import algorithms as palg
from stabsim.privacy.audit_canary import make_canary
from stabsim.privacy.audit_runner import PrivacyViolationWarning, _default, run_audit
from stabsim.privacy.audit_text import DefaultsHelpFormatter, accountant_note


def build_parser():
    """The ``stabsim audit`` argument parser (every option with a one-line help and its default)."""
    import argparse

    from stabsim.engine.backend import BACKENDS

    class _Parser(argparse.ArgumentParser):
        def error(self, message):  # one-line errors, like the rest of the CLI
            raise ValueError(message)

    p = _Parser(prog="stabsim audit", formatter_class=DefaultsHelpFormatter,
                description="Empirical privacy audit of one private algorithm: runs it on two neighbouring data "
                            "sets many times and gives a lower bound on eps with a confidence level, beside the "
                            "accountant's eps.  Exit status: 0 = no violation, 3 = PRIVACY VIOLATION FOUND, "
                            "4 = the audit exceeds the accountant's eps at the calibrated noise (a bug in the "
                            "algorithm or the accountant), 2 = bad input.")
    p.add_argument("algorithm", help=f"one of {', '.join(palg.PRIVATE_ALGORITHMS)}")
    p.add_argument("--data", default="worst-case",
                   help="'worst-case' (the algorithm's worst-case audit design: data, canary, loss, G, eta, w0; "
                        "stabsim.privacy.audit_designs), a stabsim.engine.real_datasets name, 'problem:NAME' (a synthetic "
                        "problem) or 'canary-copies' (n copies of one point with the auto canary; refused where "
                        "the canary changes no gradient)")
    p.add_argument("--threat-model", default="auto", choices=("auto", "every_iterate", "final_output"),
                   help="what the adversary sees: every iterate (gradient-perturbation algorithms; the exact "
                        "path likelihood ratio) or the final output; auto: every iterate where it applies")
    p.add_argument("--n", type=int, default=200, help="number of examples (worst-case, canary-copies, problem:NAME)")
    p.add_argument("--d", type=int, default=2, help="dimension (canary-copies and problem:NAME)")
    p.add_argument("--eps", type=float, required=True,
                   help="the claimed epsilon (> 0) the noise is calibrated to (required)")
    p.add_argument("--delta", type=float, default=1e-3, help="the claimed delta, in (0, 1)")
    p.add_argument("--replicates", type=int, default=2000, help="runs per data set (more: a tighter lower bound)")
    p.add_argument("--seed", type=int, default=0, help="seed of the runs' random numbers")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level of the empirical lower bound")
    p.add_argument("--noise-scale", type=float, default=1.0,
                   help="multiply the calibrated noise (anything but 1 breaks privacy on purpose)")
    p.add_argument("--loss", default=None, help="loss name (default: the algorithm's paper's loss)")
    p.add_argument("--T", type=int, default=None, help="number of steps (default: the paper's schedule)")
    p.add_argument("--eta", type=float, default=None, help="step size (default: the paper's schedule)")
    p.add_argument("--json", default=None, help="also write the report as JSON to this file")
    p.add_argument("--backend", default="cpu", choices=BACKENDS,
                   help="where the runs' twin kernels run (stabsim.engine.backend): cpu, cuda (a GPU) or auto")
    return p


def _check_canary_copies(algorithm, X, y, loss=None):
    """Refuse ``--data canary-copies`` where the canary cannot change anything: a pairwise loss on
    labels of one sign (no pair of opposite labels, so every AUC-type term is zero) or a canary whose
    gradient terms equal those of the example it replaces at w = 0."""
    from stabsim.privacy.audit_canary import _direction

    fn = palg.PRIVATE_ALGORITHMS.get(algorithm)
    if fn is None:
        return
    lossf = get_loss(loss if loss is not None else _default(fn, "loss"))
    if lossf.pairwise and lossf.form in (0, 1, 2) and len(np.unique(y)) < 2:   # auc, auc_ordered, ranking
        raise ValueError(f"--data canary-copies cannot audit {algorithm} with the pairwise loss {lossf.name!r}: "
                         "n copies of one labelled point have no pair of opposite labels, so the canary "
                         "changes nothing; use --data worst-case (the default)")
    can = make_canary(X, y, lossf)
    _, how = _direction(lossf, X, y, can)
    if "vanishes" in how:
        raise ValueError(f"--data canary-copies cannot audit {algorithm} with loss {lossf.name!r}: replacing "
                         "the example by the canary changes no gradient at w = 0, so only the noise is "
                         "audited; use --data worst-case (the default)")


def main(argv=None) -> int:
    """``stabsim audit ALGORITHM [options]``: command-line front end of ``run_audit``.

    The data are, by default, the algorithm's worst-case design (``--data worst-case``,
    :func:`stabsim.privacy.audit_designs.worst_case_design` with ``--n`` examples), or a shipped real
    data set (``--data diabetes``), a synthetic problem (``--data problem:auc_separable``, with
    ``--n`` and ``--d``), or ``--data canary-copies`` (``--n`` copies of one point and the auto
    canary; refused, with the reason, where the canary changes no gradient at w = 0 -- e.g. a
    pairwise loss on copies with one label, where no pair has opposite labels).  Besides the
    Clopper-Pearson ``eps_lower`` and the GDP fit, the JSON carries ``eps_lower_family`` and
    ``family_assumption`` (P4 Alg. 1: :mod:`stabsim.privacy.audit_family`, valid only under that
    assumption; null elsewhere).  Exit status: 0 = no violation,
    3 = PRIVACY VIOLATION FOUND, 4 = the audit exceeds the accountant's eps at the calibrated
    noise (a bug in the algorithm or the accountant), 2 = bad input.
    """
    import json
    import sys

    from stabsim.engine.backend import BackendError

    p = build_parser()
    try:
        a = p.parse_args(argv)
        kw = {k: v for k, v in (("loss", a.loss), ("T", a.T), ("eta", a.eta)) if v is not None}
        canary = "auto"
        if a.data == "worst-case":
            from stabsim.privacy.audit_designs import worst_case_design

            design = worst_case_design(a.algorithm, n=a.n, T=a.T)
            X, y, canary = design.X, design.y, design.canary
            kw = dict(design.kwargs, **kw)
        elif a.data == "canary-copies":
            X = np.tile(np.eye(a.d)[0], (a.n, 1))
            pointwise = a.algorithm.startswith(("p4_alg1",))
            y = np.ones(a.n) if pointwise else np.where(np.arange(a.n) % 2 == 0, 1.0, -1.0)
            if not pointwise:
                X = X * y[:, None]
            _check_canary_copies(a.algorithm, X, y, kw.get("loss"))
        elif a.data.startswith("problem:"):
            from stabsim.engine.synthetic import make_problem
            X, y = make_problem(a.data.split(":", 1)[1], d=a.d).sample(a.n, seed=a.seed)
        else:
            from stabsim.engine import real_datasets as datasets
            X, y, _ = datasets.load(a.data)
        with warnings.catch_warnings():
            # the violation is printed once, in the banner (verbose); not again as a Python warning
            warnings.simplefilter("ignore", PrivacyViolationWarning)
            rep = run_audit(a.algorithm, X, y, eps=a.eps, delta=a.delta, replicates=a.replicates,
                            seed=a.seed, confidence=a.confidence, noise_scale=a.noise_scale, canary=canary,
                            threat_model=a.threat_model, backend=a.backend, **kw)
    except (ValueError, KeyError, BackendError) as e:
        print(f"stabsim: error: audit: {e}", file=sys.stderr)
        return 2
    note = accountant_note(rep)
    if note:
        print(note)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"algorithm": rep.algorithm, "eps_claimed": rep.eps_claimed, "delta": rep.delta,
                       "eps_lower": rep.eps_lower, "confidence": rep.confidence,
                       "eps_accountant_pld": rep.eps_accountant, "eps_accountant_rdp": rep.eps_accountant_rdp,
                       "violation": rep.violation, "noise_scale": rep.noise_scale,
                       "replicates": rep.replicates, "seconds": rep.seconds, "threat_model": rep.threat_model,
                       "gdp": rep.gdp, "gdp_exact": rep.gdp_exact, "accountant_exceeded": rep.accountant_exceeded,
                       "tightness_cp": rep.tightness("cp"), "tightness_gdp": rep.tightness("gdp"),
                       "backend": rep.backend, "eps_lower_family": rep.eps_lower_family,
                       "family_assumption": None if rep.family is None else rep.family["assumption"],
                       "tightness_family": (None if rep.eps_lower_family is None or not rep.eps_reference
                                            else rep.eps_lower_family / rep.eps_reference),
                       "family": rep.family}, fh, indent=1)
    if rep.violation:
        return 3
    return 4 if (rep.accountant_exceeded and rep.noise_scale == 1.0) else 0

