"""Empirical privacy audits of the private algorithms (:mod:`stabsim.privacy.algorithms`).

``run_audit(algorithm, X, y, eps=..., delta=..., replicates=..., seed=...)``:

1. builds a worst-case neighbouring pair S ~ S' by replacing one example z_k of S with a
   *canary* z' (:func:`make_canary`, design below);
2. runs the algorithm ``replicates`` times on S and on S' with **independent** noise
   (``independent_noise=True``: every Gaussian number of the run on S' comes from
   ``rng.STREAM_NOISE_PRIME``; data-independent randomness -- indices, burn-in points -- may be
   shared, which leaves each run's output distribution unchanged, and the audit statistics
   only use the two marginal samples);
3. computes a scalar statistic of each released output (:func:`statistic_scores`);
4. calls :func:`stabsim.privacy.audit.eps_lower_from_scores` (threshold chosen on one half
   of the samples, Clopper-Pearson bounds on the other half) for an epsilon lower bound
   ``eps_lower`` valid with probability >= ``confidence``;
5. reports it next to the claimed eps and the accountant's epsilon for the noise actually
   used (:mod:`stabsim.privacy.accountant`, PLD and RDP).

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

from ..constraints import get_constraint
from ..losses import AUC, AUC_ORDERED, POINT, POINT_LSQ, RANKING, get_loss
from ..validation import check_Xy, open_unit, positive, positive_int
from . import algorithms as palg
from . import audit as audit_stats

__all__ = ["AuditReport", "Canary", "PrivacyViolationWarning", "make_canary", "run_audit",
           "statistic_scores", "accountant_epsilon_for"]


class PrivacyViolationWarning(UserWarning):
    """An empirical audit found eps_lower > the claimed eps."""


@dataclass(frozen=True)
class Canary:
    """The neighbouring pair of an audit: S' = S with example k replaced by (x, y)."""

    k: int
    x: np.ndarray
    y: float
    description: str

    @property
    def neighbour(self):
        return (int(self.k), np.asarray(self.x, float), float(self.y))

    def as_dict(self):
        return {"k": int(self.k), "x": [float(v) for v in np.ravel(self.x)], "y": float(self.y),
                "description": self.description}


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

    def summary(self) -> str:
        f = lambda v: "n/a" if v is None else f"{v:.4g}"  # noqa: E731
        return (f"audit {self.algorithm}: eps_lower={self.eps_lower:.4g} (confidence "
                f"{self.confidence:g}, {self.replicates} runs per data set) | claimed eps="
                f"{self.eps_claimed:g}, delta={self.delta:.3g} | accountant eps (pld)="
                f"{f(self.eps_accountant)}, (rdp)={f(self.eps_accountant_rdp)} | noise_scale="
                f"{self.noise_scale:g} | violation={self.violation}")

    __str__ = summary


# ---------------------------------------------------------------------------- canary
def _unit(v):
    nv = float(np.linalg.norm(v))
    return v / nv if nv > 0 else np.eye(len(v))[0]


def make_canary(X, y, loss, *, kind="auto", allowed=None) -> Canary:
    """The neighbouring pair of an audit (see the module docstring for the design).

    ``allowed``: the indices k may take (default all).  ``kind``: "auto", "flip" or a tuple
    (k, x, y).
    """
    lossf = get_loss(loss) if isinstance(loss, str) else loss
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n = len(y)
    idx = np.arange(n) if allowed is None else np.asarray(allowed, dtype=np.int64)
    if idx.size == 0 or idx.min() < 0 or idx.max() >= n:
        raise ValueError(f"allowed canary indices must lie in [0, {n})")
    if isinstance(kind, (tuple, list)):
        k, x, yy = kind
        return Canary(int(k), np.asarray(x, float).ravel(), float(yy), "given by the caller")
    if kind == "flip":
        k = int(idx[0])
        return Canary(k, X[k].copy(), -float(y[k]), f"z_{k} with its label flipped")
    if kind != "auto":
        raise ValueError(f"canary must be 'auto', 'flip' or a tuple (k, x, y), got {kind!r}")
    kappa = float(np.linalg.norm(X, axis=1).max())
    if lossf.form in (AUC, AUC_ORDERED, RANKING) and set(np.unique(y)) <= {-1.0, 1.0}:
        pos, neg = y == 1, y == -1
        m = _unit(X[pos].mean(axis=0) - X[neg].mean(axis=0))
        cand = idx[y[idx] == 1]
        if cand.size == 0:
            cand = idx
        k = int(cand[np.argmax(X[cand] @ m)])
        return Canary(k, -kappa * m, 1.0,
                      "pairwise AUC canary: x' = -kappa m/||m|| (m = mean difference of the "
                      f"classes), label +1, replacing the positive example most aligned with m "
                      f"(k={k})")
    if lossf.form in (POINT, POINT_LSQ):
        m = _unit((y[:, None] * X).mean(axis=0))
        k = int(idx[np.argmax((y[idx, None] * X[idx]) @ m)])
        ymax = float(np.abs(y).max()) or 1.0
        return Canary(k, kappa * m, -ymax,
                      "pointwise canary: far point x' = kappa m/||m|| (m = mean y_i x_i) with "
                      f"the flipped label -{ymax:g}, replacing the example with the largest "
                      f"y_i x_i.m (k={k})")
    # metric or labels not +-1: the engine's "farthest" neighbour
    k = int(idx[0])
    dist = np.linalg.norm(X - X[k], axis=1)
    opposite = y != y[k]
    if opposite.any():
        dist = np.where(opposite, dist, -1.0)
    j = int(np.argmax(dist))
    return Canary(k, X[j].copy(), float(y[j]),
                  f"farthest point of S from x_k with the opposite label (k={k}, j={j})")


def _direction(lossf, X, y, canary):
    """Unit direction v = grad terms of z_k minus those of z' at w = 0 (see module docstring)."""
    d = X.shape[1]
    p = d * d if lossf.matrix else d
    w = np.zeros(p)
    k = canary.k
    zk, zc = (X[k], y[k]), (canary.x, canary.y)
    if lossf.pairwise:
        gk, gc = np.zeros(p), np.zeros(p)
        for j in range(len(y)):
            if j == k:
                continue
            zj = (X[j], y[j])
            gk += lossf.value_grad(w, zk, zj)[1] + lossf.value_grad(w, zj, zk)[1]
            gc += lossf.value_grad(w, zc, zj)[1] + lossf.value_grad(w, zj, zc)[1]
    else:
        gk = lossf.value_grad(w, zk)[1]
        gc = lossf.value_grad(w, zc)[1]
    v = gk - gc
    nv = float(np.linalg.norm(v))
    if nv == 0.0:
        return np.eye(p)[0], "gradient difference at w=0 vanishes: e_1"
    return v / nv, "a-priori direction: gradient terms of z_k minus those of z' at w=0"


def _canary_loss(lossf, X, y, canary, W):
    """Loss of the canary's terms at each row of W (pairwise: mean over its pairs)."""
    out = np.empty(W.shape[0])
    zc = (canary.x, canary.y)
    for r in range(W.shape[0]):
        if lossf.pairwise:
            tot, cnt = 0.0, 0
            for j in range(len(y)):
                if j == canary.k:
                    continue
                zj = (X[j], y[j])
                tot += lossf.value_grad(W[r], zc, zj)[0] + lossf.value_grad(W[r], zj, zc)[0]
                cnt += 2
            out[r] = tot / cnt
        else:
            out[r] = lossf.value_grad(W[r], zc)[0]
    return out


def statistic_scores(statistic, lossf, X, y, canary, W0, W1):
    """(scores on S, scores on S', description) for the statistic spec (see module docstring)."""
    if callable(statistic):
        return (np.asarray(statistic(W0), float).ravel(), np.asarray(statistic(W1), float).ravel(),
                getattr(statistic, "__name__", "callable"))
    if statistic in ("auto", "projection"):
        v, how = _direction(lossf, X, y, canary)
        return W0 @ v, W1 @ v, f"projection <w_priv, v>, {how}"
    if statistic == "loss":
        return (_canary_loss(lossf, X, y, canary, W0), _canary_loss(lossf, X, y, canary, W1),
                "loss of the canary's terms at w_priv")
    raise ValueError(f"statistic must be 'auto', 'projection', 'loss' or a callable, got {statistic!r}")


# ---------------------------------------------------------------------------- accountant
def accountant_epsilon_for(record, noise_scale=1.0, pld_skip_above=50.0):
    """(eps_pld, eps_rdp, note) the accountant gives for the calibration record of a run,
    with every noise std multiplied by ``noise_scale``.  The PLD accountant is skipped (None)
    when the RDP epsilon exceeds ``pld_skip_above`` (it would take minutes at tiny noise)."""
    from . import accountant as acc

    a = record["algorithm"]
    eps, delta = record["eps"], record["delta"]
    if a == "p0_alg2":
        mech = acc.p0_output_perturbation(record["T"], record["n"], record["eta"], record["G"],
                                          eps, delta, record["reading"])
    elif a == "p1_alg3":
        mech = acc.p1_alg3(record["n"], record["eta"], record["G"], eps, delta)
    elif a == "p2_alg1":
        mech = acc.p2_gradient_perturbation(record["T"], record["n"], record["G"], eps, delta)
    elif a.startswith("p3_"):
        if record["online"]:
            mech = acc.p3_online(record["n"], record["G_tilde"], record["alpha"], eps, delta,
                                 record["T1"], record["exact_rho"])
        else:
            mech = acc.p3_offline(record["n"], record["G_tilde"], record["alpha"], eps, delta)
    elif a in ("p4_alg1", "p4_alg2"):
        mech = acc.p4_dpsgd(record["n"], record["T"], record["G"], eps, delta,
                            pairwise=record["pairwise"], sigma2=record["sigma_paper"] ** 2)
    else:
        raise ValueError(f"no accountant mapping for {a!r}")
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


def run_audit(algorithm, X, y, *, eps, delta, replicates=2000, seed=0, canary="auto",
              statistic="auto", confidence=0.95, noise_scale=1.0, accountant=True,
              verbose=True, **algorithm_kwargs) -> AuditReport:
    """Empirical privacy audit of ``algorithm`` (a key of ``PRIVATE_ALGORITHMS``) on (X, y).

    ``eps``, ``delta``: the claimed guarantee (also passed to the algorithm's calibration).
    ``replicates``: runs on S and on S' each.  ``noise_scale`` is forwarded (anything but 1
    breaks the calibration on purpose).  Other keyword arguments go to the algorithm
    (``loss``, ``constraint``, ``T``, ``eta``, ``T1``, ...).  Returns an :class:`AuditReport`.
    """
    t0 = time.perf_counter()
    if algorithm not in palg.PRIVATE_ALGORITHMS:
        palg.run_private(algorithm, X, y)  # raises the helpful unknown-name error
    eps, delta = positive("eps", eps), open_unit("delta", delta)
    confidence = open_unit("confidence", confidence)
    R = positive_int("replicates", replicates, minimum=4)
    seed = positive_int("seed", seed, minimum=0)
    for bad in ("independent_noise", "neighbour", "replicates"):
        if bad in algorithm_kwargs:
            raise ValueError(f"run_audit sets {bad!r} itself; do not pass it")
    fn = palg.PRIVATE_ALGORITHMS[algorithm]
    loss = algorithm_kwargs.get("loss", _default(fn, "loss"))
    lossf = get_loss(loss)
    Xc, yc = check_Xy(X, y, pairwise_auc=lossf.form in (0, 1))
    if Xc.ndim != 2:
        raise ValueError("run_audit needs one data set: X must be 2-D (n, d)")
    allowed = _allowed_indices(algorithm, Xc, yc, lossf, algorithm_kwargs)
    can = make_canary(Xc, yc, lossf, kind=canary, allowed=allowed)
    kw = dict(algorithm_kwargs)
    if algorithm.startswith(("p0", "p2", "p4")) and "checkpoints" not in kw:
        kw["checkpoints"] = [1]   # the final step is always added; keep the record small
    ds = fn(Xc, yc, eps=eps, delta=delta, replicates=R, seed=seed, neighbour=can.neighbour,
            independent_noise=True, noise_scale=noise_scale, **kw)
    W = ds["w_priv"].values
    s0, s1, stat_desc = statistic_scores(statistic, lossf, Xc, yc, can, W[:, 0], W[:, 1])
    res = audit_stats.eps_lower_from_scores(s0, s1, delta=delta, confidence=confidence,
                                            method="split", seed=seed)
    record = palg.calibration_record(ds)
    notes = []
    eps_pld = eps_rdp = None
    if accountant:
        eps_pld, eps_rdp, note = accountant_epsilon_for(record, noise_scale)
        notes.append(f"accountant: {note}")
    violation = res.eps_lower > eps
    acc_ref = eps_pld if eps_pld is not None else eps_rdp
    exceeded = acc_ref is not None and res.eps_lower > acc_ref
    rep = AuditReport(algorithm, eps, delta, res.eps_lower, confidence, eps_pld, eps_rdp,
                      bool(violation), bool(exceeded), float(noise_scale), R, stat_desc,
                      can.as_dict(), res, record, time.perf_counter() - t0, notes)
    if violation:
        msg = (f"PRIVACY VIOLATION FOUND: {algorithm} claims ({eps:g}, {delta:.3g})-DP but the "
               f"audit proves eps >= {res.eps_lower:.4g} with confidence {confidence:g} "
               f"(noise_scale={noise_scale:g}, accountant eps={acc_ref if acc_ref is None else round(acc_ref, 4)})")
        bar = "!" * min(len(msg), 100)
        print(f"\n{bar}\n{msg}\n{bar}\n", flush=True)
        warnings.warn(msg, PrivacyViolationWarning, stacklevel=2)
    if exceeded:
        warnings.warn(f"audit eps_lower={res.eps_lower:.4g} exceeds the accountant's epsilon "
                      f"{acc_ref:.4g} for {algorithm}: the accountant's premises do not hold here "
                      "(or there is a bug)", RuntimeWarning, stacklevel=2)
    if verbose:
        print(rep.summary())
    return rep


def build_parser():
    """The ``stabsim audit`` argument parser (every option with a one-line help and its default)."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message):  # one-line errors, like the rest of the CLI
            raise ValueError(message)

    p = _Parser(prog="stabsim audit", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                description="Empirical privacy audit of one private algorithm: runs it on two neighbouring data "
                            "sets many times and gives a lower bound on eps with a confidence level, beside the "
                            "accountant's eps.  Exit status: 0 = no violation, 3 = PRIVACY VIOLATION FOUND, "
                            "2 = bad input.")
    p.add_argument("algorithm", help=f"one of {', '.join(palg.PRIVATE_ALGORITHMS)}")
    p.add_argument("--data", default="canary-copies",
                   help="a stabsim.datasets name, 'problem:NAME' (a synthetic problem) or 'canary-copies' "
                        "(n copies of one point, so only the noise can hide the canary)")
    p.add_argument("--n", type=int, default=200, help="number of examples (canary-copies and problem:NAME)")
    p.add_argument("--d", type=int, default=2, help="dimension (canary-copies and problem:NAME)")
    p.add_argument("--eps", type=float, required=True, help="the claimed epsilon (> 0) the noise is calibrated to")
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
    return p


def main(argv=None) -> int:
    """``stabsim audit ALGORITHM [options]``: command-line front end of ``run_audit``.

    The data are a shipped real data set (``--data diabetes``) or a synthetic problem
    (``--data problem:auc_separable``, with ``--n`` and ``--d``), or the tight audit design
    ``--data canary-copies`` (``--n`` copies of one point, so that only the noise can hide the
    canary).  Exit status: 0 = no violation, 3 = PRIVACY VIOLATION FOUND, 2 = bad input.
    """
    import json
    import sys

    p = build_parser()
    try:
        a = p.parse_args(argv)
        kw = {k: v for k, v in (("loss", a.loss), ("T", a.T), ("eta", a.eta)) if v is not None}
        if a.data == "canary-copies":
            X = np.tile(np.eye(a.d)[0], (a.n, 1))
            pointwise = a.algorithm.startswith(("p4_alg1",))
            y = np.ones(a.n) if pointwise else np.where(np.arange(a.n) % 2 == 0, 1.0, -1.0)
            if not pointwise:
                X = X * y[:, None]
        elif a.data.startswith("problem:"):
            from ..synthetic import make_problem
            X, y = make_problem(a.data.split(":", 1)[1], d=a.d).sample(a.n, seed=a.seed)
        else:
            from .. import datasets
            X, y, _ = datasets.load(a.data)
        rep = run_audit(a.algorithm, X, y, eps=a.eps, delta=a.delta, replicates=a.replicates,
                        seed=a.seed, confidence=a.confidence, noise_scale=a.noise_scale, **kw)
    except (ValueError, KeyError) as e:
        print(f"stabsim: error: audit: {e}", file=sys.stderr)
        return 2
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"algorithm": rep.algorithm, "eps_claimed": rep.eps_claimed, "delta": rep.delta,
                       "eps_lower": rep.eps_lower, "confidence": rep.confidence,
                       "eps_accountant_pld": rep.eps_accountant, "eps_accountant_rdp": rep.eps_accountant_rdp,
                       "violation": rep.violation, "noise_scale": rep.noise_scale,
                       "replicates": rep.replicates, "seconds": rep.seconds}, fh, indent=1)
    return 3 if rep.violation else 0
