"""dp_accounting's Gaussian and Poisson-subsampled Gaussian PLDs, with their hockey-stick grid on arrays.

dp_accounting (0.4-0.6) builds the pessimistic connect-the-dots PLD of a subsampled Gaussian
(``privacy_loss_distribution.from_gaussian_mechanism``) by evaluating the eps-hockey-stick
divergence delta(eps) on the whole grid eps_j = j * interval.  ``MonotonePrivacyLoss.
get_delta_for_epsilon`` does that with one Python call of ``inverse_privacy_loss`` per grid point
(10^5-10^6 points per ledger row): most of the privacy ledger's time (benchmarks/README.md,
"The privacy ledger").  Without subsampling (q = 1) the same loop inverts a linear function.

:class:`VectorGaussianPrivacyLoss` is dp_accounting's own ``GaussianPrivacyLoss`` with that one
loop replaced by the same arithmetic on arrays, in the same order, with the same numpy ufuncs
(``np.log``, ``np.log1p``, ``np.exp``) that the scalar path applies to numpy scalars.  The grid
values are therefore identical bit for bit, not merely close (tests/test_pld_gaussian.py checks
every grid point and the composed eps against ``from_gaussian_mechanism``).  The inverse of the
subsampled loss (dp_accounting's docstring of ``inverse_privacy_loss``; the connect-the-dots
construction is Doroshenko, Ghazi, Kamath, Kumar & Manurangsi, PETS 2022): with q the sampling
probability, s the sensitivity and sd the noise std,

    REMOVE:  x(eps) = -s/2 - L(eps) sd^2 / s,          L(eps) = log(1 + (e^eps - 1)/q)
    ADD:     x(eps) = s + (-s/2 + L(-eps) sd^2 / s),

where ``L`` is evaluated as dp_accounting's ``log_a_times_exp_b_plus_c(1/q, b, 1 - 1/q)``:
``d + log1p(-exp(log(1/q - 1) - d))`` with ``d = b + log(1/q)``.  Grid points where the scalar
path takes a special branch (eps on the boundary log(1-q), eps = 0, or invalid input that makes it
raise) are handed to dp_accounting's scalar method unchanged, so its errors and edge values stay
its own.

:func:`gaussian_pld` assembles the remove/add pair (one pmf when q = 1) exactly as
``from_gaussian_mechanism`` does (``_pld_for_subsampled_mechanism``), and
:class:`VectorPLDAccountant` is dp_accounting's ``PLDAccountant`` building its Gaussian events so
(the audits' accountant, :mod:`.accountant`).  The optimistic privacy-buckets PLD at q = 1 (the
GDP fit's conversion, :mod:`.audit_gdp`) walks its buckets in a Python loop with one inverse per
bucket; :func:`_buckets_pmf` cuts them on arrays (the same cuts, keys and masses).  The
connect-the-dots pmf is kept as the array it is computed as (:func:`_connect_dots_pmf`; the
library goes through a dict of its entries), and :func:`epsilon_for_delta` is
``PrivacyLossDistribution.get_epsilon_for_delta`` with the dense pmf's sequential scan done on
arrays, block by block, in the loop's order of additions and with ``math.exp`` / ``math.log``
themselves (the ledger and :class:`VectorPLDAccountant` use it).  All rely on dp_accounting's
private constructor ``_create_pld_pmf_from_monotone_privacy_loss`` and pmf attributes; where an
installed version lacks them, they fall back to the library's own functions (same numbers, the
slow loops).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from dp_accounting import dp_event as dpe
from dp_accounting import NeighboringRelation as NR
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import pld_privacy_accountant as ppa
from dp_accounting.pld import privacy_loss_distribution as pldm
from dp_accounting.pld import privacy_loss_mechanism as plm

__all__ = ["VectorGaussianPrivacyLoss", "VectorPLDAccountant", "epsilon_for_delta", "gaussian_pld"]


def _isclose(a, b):
    """``math.isclose(a, b)`` elementwise (rel_tol 1e-9, abs_tol 0), ``b`` a scalar."""
    return (a == b) | (np.abs(a - b) <= 1e-9 * np.maximum(np.abs(a), abs(b)))


class VectorGaussianPrivacyLoss(plm.GaussianPrivacyLoss):
    """``GaussianPrivacyLoss`` whose ``get_delta_for_epsilon`` inverts the loss on arrays.

    Only the ADD / REMOVE case (subsampled or not) with an array of eps differs from the parent
    (in speed, not in value); every other case (REPLACE, a scalar eps) is the parent's method.
    """

    def _inverse_losses(self, eps):
        """x(eps) for the entries of ``eps`` in the parent's inverse region (array in, array out)."""
        q = self.sampling_prob
        if q == 1.0:
            return self._inverse_losses_unsampled(eps)
        remove = self.adjacency_type == plm.AdjacencyType.REMOVE
        b = eps if remove else -eps            # the parent inverts ADD at -eps
        boundary = math.log(1 - q)
        log_a, log_neg_c = np.log(1 / q), np.log(-(1 - 1 / q))
        d = b + log_a
        regular = (b > boundary) & ~_isclose(b, boundary) & (b != 0) & (log_neg_c < d)
        loss = d[regular] + np.log1p(-np.exp(log_neg_c - d[regular]))   # L(b), as _log_sub
        x = np.empty(eps.shape, dtype=float)
        x[regular] = self._inverse_losses_unsampled(loss if remove else -loss)
        for i in np.flatnonzero(~regular):      # the parent's special branches (and its errors)
            x[i] = self.inverse_privacy_loss(float(eps[i]))
        return x

    def _inverse_losses_unsampled(self, loss):
        """The inverse of the loss without subsampling: REMOVE -s/2 - loss sd^2/s, ADD s + (-s/2 - loss sd^2/s)."""
        s, sd2 = self.sensitivity, self._standard_deviation ** 2
        x = -0.5 * s - loss * sd2 / s
        return s + x if self.adjacency_type == plm.AdjacencyType.ADD else x

    def get_delta_for_epsilon(self, epsilon):
        vectorised = (not isinstance(epsilon, numbers.Number) and 0.0 < self.sampling_prob <= 1.0
                      and self.adjacency_type in (plm.AdjacencyType.ADD, plm.AdjacencyType.REMOVE))
        if not vectorised:
            return super().get_delta_for_epsilon(epsilon)
        epsilons = np.asarray(epsilon)
        deltas = np.zeros_like(epsilons, dtype=float)
        q = self.sampling_prob
        if q == 1.0:                               # no subsampling: every eps is inverted
            inverse = np.ones(epsilons.shape, dtype=bool)
        elif self.adjacency_type == plm.AdjacencyType.ADD:
            inverse = epsilons < -math.log1p(-q)   # delta = 0 beyond -log(1-q)
        else:
            inverse = epsilons > math.log1p(-q)    # delta = 1 - e^eps below log(1-q)
            deltas[~inverse] = -np.expm1(epsilons[~inverse])
        x_cut = self._inverse_losses(epsilons[inverse])
        deltas[inverse] = self.mu_upper_cdf(x_cut) - np.exp(epsilons[inverse] + self.mu_lower_log_cdf(x_cut))
        return np.clip(deltas, 0, 1)


#: dp_accounting's (private) builder of one adjacency's pmf from a monotone privacy loss
_BUILDER = "_create_pld_pmf_from_monotone_privacy_loss"
#: the largest pmf ``pld_pmf.create_pmf`` keeps sparse (its ``_MAX_PMF_SPARSE_SIZE``; 1000 in 0.4-0.6)
_SPARSE_MAX = getattr(pld_pmf, "_MAX_PMF_SPARSE_SIZE", 1000)


def _buckets_pmf(loss, interval, pessimistic):
    """The privacy-buckets pmf (``use_connect_dots=False``) of an unsubsampled Gaussian loss, as
    ``_create_pld_pmf_from_monotone_privacy_loss`` builds it, with its bucket loop on arrays.

    dp_accounting walks r = floor(loss(lower_x)/interval), r - 1, ... and cuts x at
    inverse_privacy_loss(r * interval) until r * interval <= loss(upper_x) (then x = upper_x);
    each bucket's mass mu_upper_cdf(x_k) - mu_upper_cdf(x_{k-1}) goes to key round(r + 1/2)
    (ceil when pessimistic, floor otherwise), after the tail's masses.  The same cuts here, from
    the same products r * interval and the same linear inverse; the loop's stop (the first cut
    at or beyond upper_x) is found on the array."""
    round_fn = math.ceil if pessimistic else math.floor
    tail = loss.privacy_loss_tail()
    lower_x, upper_x = tail.lower_x_truncation, tail.upper_x_truncation
    pmf = {}
    infinity_mass = tail.tail_probability_mass_function.get(math.inf, 0)
    for value, mass in tail.tail_probability_mass_function.items():
        if value != math.inf:
            key = round_fn(value / interval)
            pmf[key] = pmf.get(key, 0) + mass
    r0 = math.floor(loss.privacy_loss(lower_x) / interval)
    upper_loss = loss.privacy_loss(upper_x)
    r_last = math.floor(upper_loss / interval) - 1        # below every r with r * interval > upper_loss
    r = np.arange(r0, min(r_last, r0 - 1) - 1, -1, dtype=np.int64)
    v = interval * r.astype(float)
    x = np.where(v <= upper_loss, upper_x, loss._inverse_losses_unsampled(v))
    stop = np.flatnonzero(x >= upper_x)
    if stop.size == 0:                                     # cannot happen (the last v <= upper_loss)
        raise AssertionError("privacy buckets: no cut reaches upper_x")
    k = int(stop[0]) + 1
    r, x = r[:k], x[:k]
    keys = (np.ceil(r + 0.5) if pessimistic else np.floor(r + 0.5)).astype(np.int64)   # distinct, descending
    cdf = loss.mu_upper_cdf(np.concatenate([[lower_x], x]))
    masses = cdf[1:] - cdf[:-1]
    shared = {tk: int(i[0]) for tk in pmf for i in [np.flatnonzero(keys == tk)] if i.size}   # tail keys among the buckets
    if len(pmf) + len(keys) - len(shared) <= _SPARSE_MAX:  # small: dp_accounting's own dict, in its order
        for key, mass in zip(keys.tolist(), masses):
            pmf[key] = pmf.get(key, 0) + mass
        return pld_pmf.create_pmf(pmf, interval, infinity_mass, pessimistic_estimate=pessimistic)
    # large: the dense pmf that create_pmf would make of that dict (keys min..max, 0 where none)
    lo = min(int(keys[-1]), min(pmf, default=int(keys[-1])))
    hi = max(int(keys[0]), max(pmf, default=int(keys[0])))
    probs = np.zeros(hi - lo + 1)
    for key, mass in pmf.items():
        probs[key - lo] = mass
    probs[keys - lo] = masses
    for key, i in shared.items():                          # a tail key that is also a bucket: tail + bucket
        probs[key - lo] = pmf[key] + masses[i]
    return pld_pmf.DensePLDPmf(interval, lo, probs, infinity_mass, pessimistic)


def _connect_dots_pmf(loss, interval):
    """The pessimistic connect-the-dots pmf of a continuous monotone loss, as
    ``_create_pld_pmf_from_monotone_privacy_loss(..., use_connect_dots=True)`` builds it with
    ``pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap``, whose probabilities are kept as an
    array: dp_accounting makes a dict of them and, when it has more than ``_SPARSE_MAX`` keys, the
    same dense array again (``create_pmf``).  Small pmfs, and every error, are its own."""
    bounds = loss.connect_dots_bounds()
    if bounds.epsilon_upper is None or bounds.epsilon_lower is None:
        return getattr(pldm, _BUILDER)(loss, pessimistic_estimate=True, value_discretization_interval=interval,
                                       use_connect_dots=True)
    upper = math.ceil(bounds.epsilon_upper / interval)
    lower = math.floor(bounds.epsilon_lower / interval)
    deltas = np.asarray(loss.get_delta_for_epsilon(np.arange(lower, upper + 1) * interval), dtype=np.float64)
    tolerance = getattr(pld_pmf, "_DELTA_DIFF_TOLERANCE", None)
    if tolerance is None or deltas.size <= max(_SPARSE_MAX, 2) or np.any(deltas < 0) or np.any(deltas > 1) \
            or np.any(np.diff(deltas) > tolerance):
        return pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(interval, lower, upper, deltas)
    deltas = np.minimum.accumulate(deltas)
    diffs = np.diff(deltas)
    probs = np.zeros_like(deltas)
    probs[0] = 1 - deltas[0] + diffs[0] / math.expm1(interval)
    probs[1:-1] = (diffs[1:] - diffs[:-1] * math.exp(interval)) / math.expm1(interval)
    probs[-1] = diffs[-1] / math.expm1(-interval)
    return pld_pmf.DensePLDPmf(interval, lower, np.maximum(0.0, probs), deltas[-1], True)


#: entries of a dense pmf scanned at once by ``_dense_epsilon`` (from the largest loss down)
_SCAN_BLOCK = 4096


def _dense_epsilon(pmf, delta):
    """``DensePLDPmf.get_epsilon_for_delta`` (dp_accounting's ``_get_epsilon_for_delta``) with its
    scan on arrays, block by block from the largest loss down: the same running sums (``cumsum``
    adds in the loop's order), the same losses (``itertools.count`` adds -interval again and
    again, so does ``cumsum``), ``math.exp`` and ``math.log`` themselves (NumPy's may differ in the
    last bit; its log only picks the candidates of the loop's exit test, which ``math.log``
    decides).  Returns what the loop returns, value for value."""
    inf_mass, d = pmf._infinity_mass, pmf._discretization
    if inf_mass > delta:
        return math.inf
    probs = np.flip(pmf._probs)
    n = probs.size
    upper, lower, loss0 = float(inf_mass), 0.0, (pmf._lower_loss + n - 1) * d
    for start in range(0, n, _SCAN_BLOCK):
        p = probs[start:start + _SCAN_BLOCK]
        m = p.size
        steps = np.full(m, -d)
        steps[0] = loss0
        losses = np.cumsum(steps)                                    # loss0, loss0 - d, ...
        loss0 = float(losses[-1]) - d
        e = np.fromiter(map(math.exp, (-losses).tolist()), dtype=np.float64, count=m)
        up = np.cumsum(np.concatenate(([upper], p)))                 # up[k]: mass_upper before entry k
        lo = np.cumsum(np.concatenate(([lower], e * p)))
        exit_k = m
        ok = (up[:m] > delta) & (lo[:m] > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(ok, (up[:m] - delta) / np.where(ok, lo[:m], 1.0), 1.0)
            near = ok & (np.log(ratio) >= losses - 1e-9 * (np.abs(losses) + 1.0))
        for k in np.flatnonzero(near):
            if math.log(float(ratio[k])) >= losses[k]:
                exit_k = int(k)
                break
        zero = np.flatnonzero((up[1:exit_k + 1] >= delta) & (lo[1:exit_k + 1] == 0))
        if zero.size:
            return max(0, float(losses[zero[0]]))
        if exit_k < m:
            upper, lower = float(up[exit_k]), float(lo[exit_k])
            break
        upper, lower = float(up[m]), float(lo[m])
    if upper <= lower + delta:
        return 0
    return math.log((upper - delta) / lower)


def epsilon_for_delta(pld, delta):
    """``pld.get_epsilon_for_delta(delta)`` (a ``PrivacyLossDistribution``), its dense pmfs scanned
    by :func:`_dense_epsilon`; the library's own method for anything else."""
    remove, add = getattr(pld, "_pmf_remove", None), getattr(pld, "_pmf_add", None)
    if remove is None or add is None or not hasattr(pld, "_symmetric"):
        return pld.get_epsilon_for_delta(delta)

    def one(pmf):
        dense = isinstance(pmf, pld_pmf.DensePLDPmf) and all(
            hasattr(pmf, a) for a in ("_probs", "_lower_loss", "_discretization", "_infinity_mass"))
        return _dense_epsilon(pmf, delta) if dense else pmf.get_epsilon_for_delta(delta)

    eps_remove = one(remove)
    return eps_remove if pld._symmetric else max(eps_remove, one(add))


def gaussian_pld(standard_deviation, sampling_prob, interval, pessimistic=True, connect_dots=None):
    """The PLD (ADD_OR_REMOVE_ONE, sensitivity 1) that dp_accounting's ``from_gaussian_mechanism``
    returns for these arguments (``connect_dots`` default: when pessimistic, as there; one pmf
    when ``sampling_prob`` is 1, the remove/add pair otherwise), built with
    :class:`VectorGaussianPrivacyLoss` (and :func:`_buckets_pmf` for the privacy buckets at q = 1)."""
    # the library builds connect-the-dots pmfs only for a pessimistic estimate (otherwise it warns and
    # uses the privacy buckets), so an optimistic one never takes that path here either
    connect_dots = pessimistic and (connect_dots is None or bool(connect_dots))
    build = getattr(pldm, _BUILDER, None)
    if build is None or not 0.0 < sampling_prob <= 1.0 or (not connect_dots and sampling_prob < 1.0):
        return pldm.from_gaussian_mechanism(standard_deviation, value_discretization_interval=interval,
                                            sampling_prob=sampling_prob, pessimistic_estimate=pessimistic,
                                            use_connect_dots=connect_dots)

    def pmf(adjacency):
        loss = VectorGaussianPrivacyLoss(standard_deviation, sensitivity=1, pessimistic_estimate=pessimistic,
                                         sampling_prob=sampling_prob, adjacency_type=adjacency)
        if not connect_dots:
            return _buckets_pmf(loss, interval, pessimistic)
        return _connect_dots_pmf(loss, interval)

    if sampling_prob == 1.0:
        return pldm.PrivacyLossDistribution(pmf(plm.AdjacencyType.REMOVE))
    return pldm.PrivacyLossDistribution(pmf(plm.AdjacencyType.REMOVE), pmf(plm.AdjacencyType.ADD))


class VectorPLDAccountant(ppa.PLDAccountant):
    """dp_accounting's ``PLDAccountant`` whose Gaussian and Poisson-subsampled Gaussian events are
    built by :func:`gaussian_pld` (the same PLDs, composed the same way: the lines of
    ``PLDAccountant._maybe_compose`` for these two events with ``from_gaussian_mechanism``
    replaced).  Every other event, relation or a zero noise goes to the parent; a dp_accounting
    that renames ``_maybe_compose`` never calls this one and stays correct, only slower."""

    def _maybe_compose(self, event, count, do_compose):
        relation_ok = self.neighboring_relation in (NR.ADD_OR_REMOVE_ONE, NR.REPLACE_SPECIAL)
        iv = self._value_discretization_interval
        if do_compose and relation_ok and isinstance(event, dpe.GaussianDpEvent) and event.noise_multiplier != 0:
            self._pld = self._pld.compose(gaussian_pld(event.noise_multiplier / math.sqrt(count), 1.0, iv))
            return None
        if (do_compose and relation_ok and isinstance(event, dpe.PoissonSampledDpEvent)
                and isinstance(event.event, dpe.GaussianDpEvent) and event.sampling_probability != 0
                and event.event.noise_multiplier != 0):
            pld = gaussian_pld(event.event.noise_multiplier, event.sampling_probability, iv)
            self._pld = self._pld.compose(pld.self_compose(count))
            return None
        return super()._maybe_compose(event, count, do_compose)

    def get_epsilon(self, target_delta):
        if self._contains_non_dp_event:
            return math.inf
        return epsilon_for_delta(self._pld, target_delta)
