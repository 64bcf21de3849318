"""Population risk F(w) = E_{z,z'} f(w; z, z') (pairwise) or E_z f(w; z): the closed form of a
synthetic problem when it has one for the loss, else a U-statistic (pairwise) or sample mean
(pointwise) over a fresh test sample, with its standard error (``RiskEstimate``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stabsim.engine import rng
from stabsim.kernels.risk_kernels import ustat_batch
from stabsim.risk.plan import _as_loss, _finish, _param_array, _plan


@dataclass
class RiskEstimate:
    """A population risk F(w) estimate.

    ``value``, ``se``: arrays of shape W.shape[:-1] (floats for one w; DataArrays for DataArray
    input).  ``method``: ``"closed_form"`` (se = 0), ``"u_statistic"`` (pairwise Monte Carlo over
    all ordered pairs of an m-point test sample) or ``"sample_mean"`` (pointwise Monte Carlo).
    ``se_method`` says how the standard error was computed.
    """

    value: object
    se: object
    method: str
    m: int | None = None
    se_method: str = ""
    seed: int | None = None
    replicate: int | None = None
    stream: int | None = None
    note: str = ""

    def __iter__(self):  # value, se = population_risk(...)
        yield self.value
        yield self.se


_SE_U = ("Hoeffding decomposition: Var U = 4(m-2)/(m(m-1)) zeta_1 + 2/(m(m-1)) zeta_2, zeta_1 = "
         "sample variance of the per-point row means of the symmetrised kernel (slightly "
         "conservative), zeta_2 = variance of the kernel over the pairs")


def _closed_form(problem, lossf):
    if problem.risk(np.zeros(problem.d)) is None:
        return None, ""
    if lossf.name == problem.loss_name:
        return problem.risk, f"closed form of {problem.name!r} for {lossf.name}"
    if lossf.name == "auc_ordered_squared" and problem.loss_name == "auc_squared":
        # E I[y=1,y'=-1] phi(w.(x-x')) is half the symmetric AUC risk (exchangeability of z, z')
        return (lambda W: 0.5 * problem.risk(W)), \
            f"closed form of {problem.name!r}: half the symmetric auc_squared risk"
    return None, ""


def _default_m(lossf):
    if not lossf.pairwise:
        return 100_000
    return 1_000 if lossf.matrix else 5_000


def population_risk(W, problem, loss=None, *, m=None, seed=0, replicate=0, q=None,
                    method="auto", stream=rng.STREAM_SPLIT) -> RiskEstimate:
    """F(w) = E_{z,z'} f(w; z, z') (pairwise) or E_z f(w; z) for every w in W (..., p).

    problem : a ``stabsim.engine.synthetic.Problem``, or a test sample ``(X_test, y_test)``.
    loss : the loss (default: ``problem.loss_name``).
    method : ``"auto"``: the closed form when the problem has one for this loss (``problem.risk``
        for ``problem.loss_name``; for ``auc_ordered_squared`` half the ``auc_squared`` form),
        otherwise Monte Carlo.  ``"closed_form"`` / ``"monte_carlo"`` force one.
    m, seed, replicate, stream : Monte Carlo test sample ``problem.sample(m, seed, replicate,
        stream=STREAM_SPLIT)``: a counter-based stream distinct from the training data
        (STREAM_DATA), so it is independent of any training set drawn from the same problem.
        Default m: 5000 (linear pairwise), 1000 (metric), 100000 (pointwise).

    Pairwise Monte Carlo is the U-statistic over all m(m-1) ordered test pairs, with the
    standard error from the Hoeffding decomposition (see ``RiskEstimate.se_method``);
    pointwise it is the sample mean with sd/sqrt(m).  Cost per w: O(m log m + m d) for the
    hinge and squared linear forms, O(m^2) scalar work for logistic / q-hinge, O(m^2 d^2) metric.

    Returns a ``RiskEstimate`` (unpacks as ``value, se``).
    """
    if method not in ("auto", "closed_form", "monte_carlo"):
        raise ValueError(f"method must be 'auto', 'closed_form' or 'monte_carlo', got {method!r}")
    is_sample = isinstance(problem, tuple)
    if loss is None:
        if is_sample:
            raise ValueError("give the loss when problem is a test sample (X, y)")
        loss = problem.loss_name
    lossf = _as_loss(loss, q)
    if not is_sample and method != "monte_carlo":
        fn, note = _closed_form(problem, lossf)
        if fn is not None:
            p = problem.d * problem.d if lossf.matrix else problem.d
            W2, lead, wrap = _param_array(W, p)
            val = np.asarray(fn(W2), dtype=float)
            return RiskEstimate(_finish(val, lead, wrap, "F(w)"),
                                _finish(np.zeros_like(val), lead, wrap, "se F(w)"),
                                "closed_form", None, "exact (closed form)", note=note)
        if method == "closed_form":
            raise ValueError(f"problem {problem.name!r} has no closed-form risk for loss "
                             f"{lossf.name!r} (it has one for {problem.loss_name!r})")
    if is_sample:
        Xt, yt = problem
        m_used, seed_used, rep_used, stream_used = len(Xt), None, None, None
    else:
        m_used = _default_m(lossf) if m is None else int(m)
        if m_used < 3:
            raise ValueError(f"test sample size m must be >= 3, got {m_used}")
        Xt, yt = problem.sample(m_used, seed, replicate, stream=stream)
        seed_used, rep_used, stream_used = int(seed), int(replicate), int(stream)
    pl = _plan(Xt, yt, lossf)
    if pl.n < 3:
        raise ValueError("the test sample needs at least 3 points")
    W2, lead, wrap = _param_array(W, pl.p)
    val = np.empty(W2.shape[0]); se = np.empty(W2.shape[0])
    lf = pl.loss
    ustat_batch(pl.kind, lf.form, lf.phi, float(lf.q), W2, pl.X, pl.y, pl.idxP, pl.idxN,
                pl.s, pl.mult, pl.kconst, val, se)
    pair = lossf.pairwise
    return RiskEstimate(_finish(val, lead, wrap, "F(w)"), _finish(se, lead, wrap, "se F(w)"),
                        "u_statistic" if pair else "sample_mean", m_used,
                        _SE_U if pair else "sample standard deviation / sqrt(m)",
                        seed_used, rep_used, stream_used,
                        note="test sample given by the caller" if is_sample else
                        f"fresh test sample: problem.sample(m={m_used}, seed={seed}, "
                        f"replicate={replicate}, stream={stream})")
