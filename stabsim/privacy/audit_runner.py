"""Empirical privacy audits of the private algorithms (:mod:`stabsim.privacy.algorithms`).

``run_audit(algorithm, X, y, eps=..., delta=..., replicates=..., seed=...)``:

1. builds a worst-case neighbouring pair S ~ S' by replacing one example z_k of S with a
   *canary* z' (:func:`make_canary`, design below);
2. runs the algorithm ``replicates`` times on S and on S' with **independent** noise
   (``independent_noise=True``: every Gaussian number of the run on S' comes from
   ``rng.STREAM_NOISE_PRIME``; data-independent randomness -- indices, burn-in points -- may be
   shared, which leaves each run's output distribution unchanged, and the audit statistics
   only use the two marginal samples);
3. computes a scalar statistic of each run, by threat model (``threat_model=``):
   "every_iterate" (P2 Alg. 1, P4 Algs. 1/2, whose every step is a Gaussian mechanism): the
   exact log-likelihood ratio of the whole path w_0..w_T (:mod:`stabsim.privacy.audit_whitebox`);
   "final_output" (every algorithm): a statistic of the released output (:func:`statistic_scores`);
4. two estimators: :func:`stabsim.privacy.audit.eps_lower_from_scores` (threshold chosen on one
   half of the samples, Clopper-Pearson bounds on the other half) for an epsilon lower bound
   ``eps_lower`` valid with probability >= ``confidence`` with no assumption, and the GDP fit
   (:mod:`stabsim.privacy.audit_gdp`: a lower bound on mu, converted to eps(delta); exact for
   P2's every-iterate audit, an approximation where the trade-off curve is not Gaussian);
5. reports both next to the claimed eps and the accountant's epsilon for the noise actually
   used (:mod:`stabsim.privacy.accountant`, PLD and RDP), with the tightness ratios
   audit / accountant (``AuditReport.tightness``).

``audit_scores`` (steps 1-3, for any replicate ids, so a study can chunk them) and
``audit_report`` (steps 4-5) are the two halves of ``run_audit``.  Worst-case designs under which
an audit can reach the accountant: :mod:`stabsim.privacy.audit_designs`.  The command ``stabsim audit``:
:mod:`stabsim.privacy.audit_cli`.

If ``eps_lower > eps`` the run prints a loud "PRIVACY VIOLATION FOUND" warning (and issues a
:class:`PrivacyViolationWarning`) and sets ``report.violation``.  ``eps_lower`` above the
accountant's epsilon sets ``report.accountant_exceeded`` (the accountant's premises -- e.g. a
high-probability sensitivity bound -- do not hold, or something is wrong).

Canary design (``canary="auto"``)
---------------------------------
Let kappa = max ||x_i|| (the canary stays inside the data's norm range, so it does not
change G or the calibration).

* **AUC-type pairwise losses** (``auc``, ``auc_ordered``, ``ranking``; labels +-1): with
  m = mean(x | y = +1) - mean(x | y = -1), the canary is x' = -kappa m/||m|| with label +1.
  Every pair it forms with a negative example has margin w.(x' - x_j) < 0 for any w that
  ranks the data well, so its pairs stay active (hinge/logistic/squared gradients of full
  size) and pull w towards -m, against the data.  The replaced example z_k is the positive
  example most aligned with m (its pairs pull the other way, so the difference of the two
  gradient sums is as large as the data allow); the class counts are unchanged.
* **Pointwise losses** (``point``, ``point_lsq``): m = mean(y_i x_i); the canary is the
  far-away point x' = kappa m/||m|| with the *flipped* label y' = -max|y|; z_k is the
  example with the largest y_i x_i.m.
* **Metric losses** (and labels other than +-1): z_k = the first allowed index, z' = the
  example of S farthest from x_k with the opposite label (the engine's "farthest" neighbour).

For a tight audit choose data whose other examples all have the same gradient (e.g. n
copies of one point): then the runs' randomness other than the noise cannot mask the canary.

Where the replaced example's *position* matters it is restricted: P1 Alg. 3 -> block S_1
(sigma_k/Delta_k is the same in every phase, but phase 1 is the longest, with the largest
step eta_1 = eta/4, so the canary is visited most there); P3 (data order) -> index T_1,
the first Pairwise GIGA step, where Lemma 4's sensitivity 8G/(alpha t) is largest.
``canary="flip"`` replaces z_k by z_k with its label flipped; ``canary=(k, x, y)`` gives
the pair explicitly.

Statistics (``statistic=``)
---------------------------
``"auto"`` / ``"projection"``: <w_priv, v> with v the a-priori direction of the canary's
influence, v = sum of the gradients of z_k's terms minus those of z''s terms at w = 0
(pairwise: over its pairs (z, z_j) and (z_j, z) with every other example; pointwise: its own
gradient) -- the direction in which one SGD step from 0 moves the output of S' away from the
output of S.  ``"loss"``: the loss of the canary's terms at w_priv.  A callable
``f(W) -> scores`` (W: (replicates, p)) is used as is.  All are fixed before the runs, so
the threshold selection on one half keeps the bound valid.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from stabsim.engine.constraints import get_constraint
from stabsim.engine.losses import get_loss
from stabsim.privacy.audit_canary import Canary, make_canary, statistic_scores
from stabsim.privacy.audit_text import accountant_note  # noqa: F401 (re-exported)
from stabsim.engine.validation import check_Xy, open_unit, positive, positive_int
from stabsim.privacy._checks import choice
from stabsim.privacy import algorithms as palg
from stabsim.privacy import audit as audit_stats

__all__ = ["AuditReport", "Canary", "PrivacyViolationWarning", "make_canary", "run_audit",
           "statistic_scores", "accountant_epsilon_for",
           "audit_scores", "audit_report", "AuditScores"]


class PrivacyViolationWarning(UserWarning):
    """An empirical audit found eps_lower > the claimed eps."""


@dataclass
class AuditReport:
    """Result of :func:`run_audit`."""

    algorithm: str
    eps_claimed: float
    delta: float
    eps_lower: float
    confidence: float
    eps_accountant: float | None        # PLD (tight) at the noise actually used
    eps_accountant_rdp: float | None    # RDP (rigorous upper bound)
    violation: bool
    accountant_exceeded: bool
    noise_scale: float
    replicates: int
    statistic: str
    canary: dict
    audit: audit_stats.AuditResult
    calibration: dict
    seconds: float
    notes: list = field(default_factory=list)
    threat_model: str = "final_output"
    gdp: dict | None = None              # :class:`~stabsim.privacy.audit_gdp.GdpAudit` as a dict
    gdp_exact: bool = False              # the trade-off curve is exactly Gaussian (GDP fit exact)
    scores: tuple | None = field(default=None, repr=False)   # (scores on S, scores on S')
    backend: str = "cpu"                 # where the runs' run_twin ran (stabsim.engine.backend)
    family: dict | None = None           # :class:`~stabsim.privacy.audit_family.FamilyFit` as a dict (P4 Alg. 1)

    @property
    def eps_lower_family(self) -> float | None:
        """eps(delta) lower bound of the subsampled-Gaussian family fit (:mod:`stabsim.privacy.audit_family`),
        valid only under its stated assumption (``family["assumption"]``); None where not fitted or rejected."""
        return None if self.family is None else self.family["eps_lower"]

    @property
    def eps_lower_gdp(self) -> float | None:
        """eps(delta) of the GDP fit's mu lower bound (see :mod:`stabsim.privacy.audit_gdp`)."""
        return None if self.gdp is None else self.gdp["eps_lower"]

    @property
    def eps_reference(self) -> float | None:
        """The accountant's eps at the noise used: PLD, or RDP where the PLD was not computed."""
        return self.eps_accountant if self.eps_accountant is not None else self.eps_accountant_rdp

    def tightness(self, which="cp") -> float | None:
        """(audit eps lower bound) / (accountant eps): ``which`` "cp" (Clopper-Pearson) or "gdp"."""
        ref = self.eps_reference
        val = self.eps_lower if which == "cp" else self.eps_lower_gdp
        if ref is None or val is None or not ref > 0:
            return None
        return val / ref

    def summary(self) -> str:
        f = lambda v: "n/a" if v is None else f"{v:.4g}"  # noqa: E731
        gdp = "" if self.gdp is None else (
            f" | GDP fit: mu >= {self.gdp['mu_lower']:.4g} -> eps >= {self.gdp['eps_lower']:.4g}"
            f"{' (exact: Gaussian trade-off)' if self.gdp_exact else ' (if the trade-off is Gaussian)'}")
        if self.family is not None:
            fam = self.family
            gdp += (" | family fit (assumes the subsampled-Gaussian family): " +
                    ("rejected by the data (no bound)" if fam["eps_lower"] is None else
                     f"noise factor <= {fam['rho_max']:.4g} -> eps >= {fam['eps_lower']:.4g}"))
        return (f"audit {self.algorithm} [{self.threat_model}]: eps_lower={self.eps_lower:.4g} (confidence "
                f"{self.confidence:g}, {self.replicates} runs per data set) | claimed eps="
                f"{self.eps_claimed:g}, delta={self.delta:.3g} | accountant eps (pld)="
                f"{f(self.eps_accountant)}, (rdp)={f(self.eps_accountant_rdp)} | noise_scale="
                f"{self.noise_scale:g} | violation={self.violation}{gdp} | backend={self.backend}")

    __str__ = summary


# ---------------------------------------------------------------------------- accountant
def _mechanism_args(record) -> tuple:
    """(constructor name, positional arguments, keyword arguments as (name, value) pairs) of the
    accountant's mechanism for a calibration record: the only fields of the record the mechanism
    depends on (``mechanism_for``; the key of the memo of ``accountant_epsilon_for``)."""
    a = record["algorithm"]
    eps, delta = record["eps"], record["delta"]
    if a == "p0_alg2":
        return "p0_output_perturbation", (record["T"], record["n"], record["eta"], record["G"], eps, delta,
                                          record["reading"]), ()
    if a == "p1_alg3":
        return "p1_alg3", (record["n"], record["eta"], record["G"], eps, delta), ()
    if a == "p2_alg1":
        return "p2_gradient_perturbation", (record["T"], record["n"], record["G"], eps, delta), ()
    if a.startswith("p3_"):
        if record["online"]:
            return "p3_online", (record["n"], record["G_tilde"], record["alpha"], eps, delta, record["T1"],
                                 record["exact_rho"]), ()
        return "p3_offline", (record["n"], record["G_tilde"], record["alpha"], eps, delta), ()
    if a in ("p4_alg1", "p4_alg2"):
        return "p4_dpsgd", (record["n"], record["T"], record["G"], eps, delta), (
            ("pairwise", record["pairwise"]), ("sigma2", record["sigma_paper"] ** 2))
    raise ValueError(f"no accountant mapping for {a!r}")


def mechanism_for(record):
    """The accountant's :class:`~stabsim.privacy.accountant.Mechanism` of a run's calibration record."""
    from stabsim.privacy import accountant as acc

    name, args, kwargs = _mechanism_args(record)
    return getattr(acc, name)(*args, **dict(kwargs))


#: accountant_epsilon_for's results in this process, by mechanism arguments, noise scale and PLD
#: limit: an audit's analysis asks for the accountant's eps at the paper's noise for its AUDIT row and
#: again for its SANITY row's target (PLD compositions of up to seconds each; the same numbers)
_EPSILON_MEMO: dict = {}


def accountant_epsilon_for(record, noise_scale=1.0, pld_skip_above=50.0):
    """(eps_pld, eps_rdp, note) the accountant gives for the calibration record of a run,
    with every noise std multiplied by ``noise_scale``.  The PLD accountant is skipped (None)
    when the RDP epsilon exceeds ``pld_skip_above`` (it would take minutes at tiny noise).
    Remembered in this process by the mechanism's arguments (``_EPSILON_MEMO``)."""
    name, args, kwargs = _mechanism_args(record)
    key = (name, tuple((type(v).__name__, v) for v in args + tuple(v for _, v in kwargs)),
           float(noise_scale), float(pld_skip_above))
    if key not in _EPSILON_MEMO:
        _EPSILON_MEMO[key] = _accountant_epsilon(mechanism_for(record), noise_scale, pld_skip_above)
    return _EPSILON_MEMO[key]


def _accountant_epsilon(mech, noise_scale, pld_skip_above):
    from stabsim.privacy import accountant as acc

    res, notes = {}, [mech.note]
    for which in ("rdp", "pld"):
        if which == "pld" and res.get("rdp") is not None and res["rdp"] > pld_skip_above:
            # tiny noise: the PLD discretisation would need a huge support (minutes); the RDP
            # upper bound already shows the claim is far off
            res["pld"] = None
            notes.append(f"PLD skipped: RDP eps {res['rdp']:.4g} > {pld_skip_above:g}")
            continue
        try:
            res[which] = acc.epsilon(mech, which, scale=noise_scale)
        except Exception as e:  # pragma: no cover - accountant numerical failures
            res[which] = None
            notes.append(f"{which} accountant failed: {type(e).__name__}: {e}")
    return res["pld"], res["rdp"], "; ".join(notes)


def accountant_tradeoff(record, noise_scale, alphas, eps_grid=None):
    """The accountant's trade-off curve beta(alpha) = sup_eps max(0, 1 - delta(eps) - e^eps alpha,
    e^-eps (1 - delta(eps) - alpha)) from its PLD privacy profile delta(eps) (dp-accounting), for the
    figure of an audit; None where the mechanism has no PLD event."""
    from stabsim.privacy.pld_gaussian import VectorPLDAccountant   # = dp_accounting's PLDAccountant, faster

    mech = mechanism_for(record)
    spec = mech.events(noise_scale).get("pld")
    if spec is None:
        return None
    event, relation = spec
    acc = VectorPLDAccountant(relation, value_discretization_interval=1e-3)
    acc.compose(event)
    eps_grid = np.linspace(0.0, 8.0, 81) if eps_grid is None else np.asarray(eps_grid, float)
    a = np.asarray(alphas, float)
    beta = np.zeros_like(a)
    for e in eps_grid:
        d = float(acc.get_delta(float(e)))
        beta = np.maximum.reduce([beta, 1 - d - math.exp(e) * a, math.exp(-e) * (1 - d - a)])
    return beta


# ---------------------------------------------------------------------------- runner
def _default(fn, name):
    """Default of argument ``name`` of private algorithm ``fn`` (its config field's, if config-based)."""
    return palg.config_default(fn, name)


def _allowed_indices(name, X, y, lossf, kw):
    n = len(y)
    if name == "p1_alg3":
        return np.arange(max(n // 2, 1))
    if name.startswith("p3_"):
        if kw.get("permute", False):
            return None
        variant = palg._variant(name[3:])
        cons = get_constraint(kw.get("constraint", _default(palg.p3_giga, "constraint")))
        convex = palg.P3_VARIANTS[variant][1]
        alpha = kw.get("alpha")
        if alpha is None:
            alpha = 1e-3 if not convex else 1.0 / math.sqrt(n)
        kappa = kw.get("kappa") or float(np.linalg.norm(X, axis=1).max())
        plan = palg.p3_plan(n, variant=variant, alpha=alpha, lossf=lossf, cons=cons, kappa=kappa,
                            G=kw.get("G"), L=kw.get("L"), T1=kw.get("T1"))
        return np.array([plan["T1"]])
    return None


def _whitebox_ok(algorithm, kw):
    """Why the every-iterate statistic cannot be used (None if it can)."""
    from stabsim.privacy.audit_designs import WHITEBOX_ALGORITHMS

    if algorithm not in WHITEBOX_ALGORITHMS:
        return (f"{algorithm} releases a noisy output of a non-private trajectory; only "
                f"{', '.join(WHITEBOX_ALGORITHMS)} add noise to every step")
    if algorithm == "p2_alg1" and kw.get("projected", False):
        return "projected iterates are not Gaussian steps"
    cons = get_constraint(kw.get("constraint", "none"))
    if algorithm != "p2_alg1" and cons.name != "none":   # (P2's C only sets its constants)
        return f"constraint {cons.name!r}: projected iterates are not Gaussian steps"
    eta = kw.get("eta")
    if eta is not None and not isinstance(eta, (int, float)):
        return "the every-iterate statistic needs a constant step size eta"
    return None


def _every_iterate_scores(algorithm, record, X, y, canary, lossf, kw, ids, seed, w0, chunk_bytes=2 ** 25):
    """Path log-likelihood ratios (stabsim.privacy.audit_whitebox) of the runs on S and on S'
    for the replicate ids ``ids``, in chunks of replicates whose record (every iterate of both
    runs and the per-step statistics) stays under ``chunk_bytes`` (32 MiB: the P4 audits' peak
    memory; each replicate's ratio is computed alone, so the chunking changes no number)."""
    from stabsim.kernels import N_REC
    from stabsim.engine.twin_runs import run_twin
    from stabsim.privacy.audit_whitebox import path_log_lr

    T = int(record["T"])
    eta = float(record["eta"]) if algorithm == "p2_alg1" else float(kw.get("eta", _default(palg.PRIVATE_ALGORITHMS[algorithm], "eta")))
    sigma = float(record["sigma"])
    k, xk, yk = canary.neighbour
    X1, y1 = X.copy(), y.copy()
    X1[k], y1[k] = xk, yk
    p = X.shape[1]
    per = max(1, int(chunk_bytes // (T * (2 * p + N_REC) * 8)))
    s0, s1 = np.empty(len(ids)), np.empty(len(ids))
    common = dict(eta=eta, sigma=sigma, lossf=lossf, X=X, y=y, X1=X1, y1=y1, full_batch=algorithm == "p2_alg1")
    for a in range(0, len(ids), per):
        part = slice(a, min(len(ids), a + per))
        O = run_twin(X, y, algorithm=algorithm, loss=lossf.name, constraint="none", eta=eta, T=T,
                     replicates=ids[part], seed=seed, neighbour=canary.neighbour,
                     checkpoints=np.arange(1, T + 1), record_outputs=True, w0=w0, sigma=sigma,
                     independent_noise=True, output="last", progress=False, raw=True).outs
        s0[part] = path_log_lr(O[:, :, 0], w0, **common)          # O: (replicate, t, run, param), w_t
        s1[part] = path_log_lr(O[:, :, 1], w0, **common)
        del O
    return s0, s1, ("path log-likelihood ratio of S' against S from every iterate (white box: "
                    "w_0..w_T seen, sampled indices and noise secret)")


@dataclass
class AuditScores:
    """The statistic of every run of an audit (before any estimator): ``s0`` on S, ``s1`` on S'."""

    s0: np.ndarray
    s1: np.ndarray
    record: dict
    threat_model: str
    statistic: str
    canary: Canary
    notes: list
    mixture: object = None   # audit_family.StepMixture of the every-iterate design (P4 Alg. 1), else None


def audit_scores(algorithm, X, y, *, eps, delta, replicates, seed=0, canary="auto", statistic="auto",
                 noise_scale=1.0, threat_model="auto", **algorithm_kwargs) -> AuditScores:
    """Run ``algorithm`` on S and on the canary's S' (independent noise) for the replicate ids
    ``replicates`` (a count or an array) and return the audit statistic of every run
    (:func:`run_audit` documents the arguments).  Each replicate is a pure function of (seed, id),
    so chunks of ids can be computed separately and concatenated."""
    if algorithm not in palg.PRIVATE_ALGORITHMS:
        palg.run_private(algorithm, X, y)  # raises the helpful unknown-name error
    eps, delta = positive("eps", eps), open_unit("delta", delta)
    seed = positive_int("seed", seed, minimum=0)
    if isinstance(replicates, (int, np.integer)):
        ids = np.arange(positive_int("replicates", replicates, minimum=1), dtype=np.int64)
    else:
        ids = np.asarray(replicates, dtype=np.int64).ravel()
    threat_model = choice("threat_model", threat_model, ("auto", "every_iterate", "final_output"))
    for bad in ("independent_noise", "neighbour", "replicates"):
        if bad in algorithm_kwargs:
            raise ValueError(f"run_audit sets {bad!r} itself; do not pass it")
    fn = palg.PRIVATE_ALGORITHMS[algorithm]
    lossf = get_loss(algorithm_kwargs.get("loss", _default(fn, "loss")))
    Xc, yc = check_Xy(X, y, pairwise_auc=lossf.form in (0, 1))
    if Xc.ndim != 2:
        raise ValueError("run_audit needs one data set: X must be 2-D (n, d)")
    why_not = _whitebox_ok(algorithm, algorithm_kwargs)
    if threat_model == "auto":
        threat_model = "final_output" if why_not else "every_iterate"
    elif threat_model == "every_iterate" and why_not:
        raise ValueError(f"threat_model='every_iterate' is not available: {why_not}; use 'final_output'")
    can = make_canary(Xc, yc, lossf, kind=canary, allowed=_allowed_indices(algorithm, Xc, yc, lossf, algorithm_kwargs))
    kw = dict(algorithm_kwargs)
    notes = []
    if algorithm.startswith(("p0", "p2", "p4")) and "checkpoints" not in kw:
        kw["checkpoints"] = [1]   # the final step is always added; keep the record small
    common = dict(eps=eps, delta=delta, seed=seed, neighbour=can.neighbour, independent_noise=True,
                  noise_scale=noise_scale)
    if threat_model == "every_iterate":
        w0 = kw.get("w0")
        if w0 is None or isinstance(w0, str):
            w0 = np.zeros(Xc.shape[1])
            notes.append("initial point w_0 = 0 (public; the every-iterate statistic needs it)")
        kw["w0"] = w0 = np.asarray(w0, float).ravel()
        record = palg.calibration_record(fn(Xc, yc, replicates=ids[:1], **common, **kw))
        s0, s1, stat = _every_iterate_scores(algorithm, record, Xc, yc, can, lossf, kw, ids, seed, w0)
        mixture = _family_mixture(algorithm, record, Xc, yc, can, lossf, w0, notes)
    else:
        ds = fn(Xc, yc, replicates=ids, **common, **kw)
        record = palg.calibration_record(ds)
        W = ds["w_priv"].values
        s0, s1, stat = statistic_scores(statistic, lossf, Xc, yc, can, W[:, 0], W[:, 1])
        mixture = None
    return AuditScores(s0, s1, record, threat_model, stat, can, notes, mixture)


def _family_mixture(algorithm, record, X, y, can, lossf, w0, notes):
    """The step mixture of the family fit (stabsim.privacy.audit_family), or None with a note why not."""
    from stabsim.privacy.audit_family import family_fit_available, step_mixture

    why = family_fit_available(algorithm)
    if why is None:
        k, xk, yk = can.neighbour
        X1, y1 = X.copy(), y.copy()
        X1[k], y1[k] = xk, yk
        try:
            return step_mixture(X, y, X1, y1, lossf, w0, float(record["sigma"]), int(record["T"]), float(record["G"]))
        except ValueError as e:
            why = str(e)
    notes.append(f"no subsampled-Gaussian family fit: {why}")
    return None


def run_audit(algorithm, X, y, *, eps, delta, replicates=2000, seed=0, canary="auto",
              statistic="auto", confidence=0.95, noise_scale=1.0, accountant=True,
              verbose=True, threat_model="auto", backend=None, **algorithm_kwargs) -> AuditReport:
    """Empirical privacy audit of ``algorithm`` (a key of ``PRIVATE_ALGORITHMS``) on (X, y).

    ``eps``, ``delta``: the claimed guarantee (also passed to the algorithm's calibration).
    ``replicates``: runs on S and on S' each.  ``noise_scale`` is forwarded (anything but 1
    breaks the calibration on purpose).  ``threat_model``: "every_iterate" (the adversary sees
    every iterate; gradient-perturbation algorithms only, statistic: the exact path likelihood
    ratio of :mod:`stabsim.privacy.audit_whitebox`), "final_output" (the released output only,
    statistic ``statistic``) or "auto" (every_iterate where it applies).  Other keyword arguments
    go to the algorithm (``loss``, ``constraint``, ``T``, ``eta``, ``G``, ``w0``, ...).
    Two estimators are reported: the Clopper-Pearson eps lower bound (``eps_lower``, no
    assumption) and the GDP fit (``gdp``, :mod:`stabsim.privacy.audit_gdp`).  ``backend``:
    "cpu", "cuda" or "auto" (:mod:`stabsim.engine.backend`), where the runs' ``run_twin`` calls run
    (None: the thread's default, ``use_backend``); resolved once, recorded in the report.
    Returns an :class:`AuditReport`.
    """
    from stabsim.engine.backend import resolve_backend, use_backend

    t0 = time.perf_counter()
    confidence = open_unit("confidence", confidence)
    R = positive_int("replicates", replicates, minimum=4)
    be = resolve_backend(backend)
    with use_backend(be):
        sc = audit_scores(algorithm, X, y, eps=eps, delta=delta, replicates=R, seed=seed, canary=canary,
                          statistic=statistic, noise_scale=noise_scale, threat_model=threat_model,
                          **algorithm_kwargs)
    return audit_report(algorithm, sc, eps=eps, delta=delta, confidence=confidence, seed=seed,
                        noise_scale=noise_scale, accountant=accountant, verbose=verbose,
                        seconds=time.perf_counter() - t0, backend=be)


def audit_report(algorithm, sc: AuditScores, *, eps, delta, confidence=0.95, seed=0, noise_scale=1.0,
                 accountant=True, verbose=False, seconds=math.nan, backend="cpu") -> AuditReport:
    """The estimators and the accountant for the scores of :func:`audit_scores` (see ``run_audit``)."""
    from stabsim.privacy.audit_gdp import gdp_audit

    s0, s1 = sc.s0, sc.s1
    lr = sc.threat_model == "every_iterate"
    gdp = gdp_audit(s0, s1, delta=delta, confidence=confidence, threshold=0.0 if lr else None, seed=seed)
    res = audit_stats.eps_lower_from_scores(s0, s1, delta=delta, confidence=confidence,
                                            method="split", seed=seed)
    notes = list(sc.notes)
    eps_pld = eps_rdp = None
    if accountant:
        eps_pld, eps_rdp, note = accountant_epsilon_for(sc.record, noise_scale)
        notes.append(f"accountant: {note}")
    violation = res.eps_lower > eps
    acc_ref = eps_pld if eps_pld is not None else eps_rdp
    exceeded = acc_ref is not None and res.eps_lower > acc_ref
    gdp_exact = lr and algorithm == "p2_alg1"
    if gdp_exact and acc_ref is not None:
        # the GDP fit is exact here, so its bound is a valid lower bound too; deciding on either of two
        # bounds is two tests: Bonferroni, each at level 1 - (1 - confidence)/2
        c2 = 1.0 - (1.0 - confidence) / 2.0
        cp2 = audit_stats.eps_lower_from_scores(s0, s1, delta=delta, confidence=c2, method="split", seed=seed)
        g2 = gdp_audit(s0, s1, delta=delta, confidence=c2, threshold=0.0)
        exceeded = cp2.eps_lower > acc_ref or g2.eps_lower > acc_ref
        notes.append(f"accountant exceeded? Bonferroni over the Clopper-Pearson and the (exact) GDP bound, each at "
                     f"{c2:g}: {cp2.eps_lower:.4g}, {g2.eps_lower:.4g} vs {acc_ref:.4g}")
    rep = AuditReport(algorithm, eps, delta, res.eps_lower, confidence, eps_pld, eps_rdp,
                      bool(violation), bool(exceeded), float(noise_scale), len(s0), sc.statistic,
                      sc.canary.as_dict(), res, sc.record, seconds, notes,
                      threat_model=sc.threat_model, gdp=gdp.as_dict(), gdp_exact=gdp_exact,
                      scores=(s0, s1), backend=backend)
    if sc.mixture is not None:
        from stabsim.privacy.audit_family import family_fit

        try:
            rep.family = family_fit(s0, s1, sc.mixture, delta=delta, confidence=confidence).as_dict()
        except ValueError as e:   # the fit is an extra estimator: its failure never stops the audit
            rep.notes.append(f"no subsampled-Gaussian family fit: {e}")
    if violation:
        msg = (f"PRIVACY VIOLATION FOUND: {algorithm} claims ({eps:g}, {delta:.3g})-DP but the "
               f"audit proves eps >= {res.eps_lower:.4g} with confidence {confidence:g} "
               f"(noise_scale={noise_scale:g}, accountant eps={acc_ref if acc_ref is None else round(acc_ref, 4)})")
        bar = "!" * min(len(msg), 100)
        if verbose:
            print(f"\n{bar}\n{msg}\n{bar}\n", flush=True)
        warnings.warn(msg, PrivacyViolationWarning, stacklevel=2)
    if exceeded:
        warnings.warn(f"audit eps_lower={max(res.eps_lower, gdp.eps_lower if gdp_exact else 0):.4g} exceeds "
                      f"the accountant's epsilon {acc_ref:.4g} for {algorithm}: the accountant's premises do "
                      "not hold here (or there is a bug)", RuntimeWarning, stacklevel=2)
    if verbose:
        print(rep.summary())
    return rep
