"""dp_accounting's Gaussian and Poisson-subsampled Gaussian PLDs, with their hockey-stick grid on arrays.

dp_accounting (0.4-0.6) builds the pessimistic connect-the-dots PLD of a subsampled Gaussian
(``privacy_loss_distribution.from_gaussian_mechanism``) by evaluating the eps-hockey-stick
divergence delta(eps) on the whole grid eps_j = j * interval.  ``MonotonePrivacyLoss.
get_delta_for_epsilon`` does that with one Python call of ``inverse_privacy_loss`` per grid point
(10^5-10^6 points per ledger row): ~70 % of the privacy ledger's time (measured: P4 rows, 17 s
each, 11.4 s of it in that loop; benchmarks/README.md).  Without subsampling (q = 1) the same loop
inverts a linear function.

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

:func:`subsampled_gaussian_pld` assembles the remove/add pair (one pmf when q = 1) exactly as
``from_gaussian_mechanism`` does (``_pld_for_subsampled_mechanism``), and
:class:`VectorPLDAccountant` is dp_accounting's ``PLDAccountant`` building its Gaussian events so
(the audits' accountant, :mod:`.accountant`).  Both use dp_accounting's private constructor
``_create_pld_pmf_from_monotone_privacy_loss``; where an installed version lacks it, it falls
back to ``from_gaussian_mechanism`` itself (same numbers, the slow loop).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from dp_accounting import dp_event as dpe
from dp_accounting import NeighboringRelation as NR
from dp_accounting.pld import pld_privacy_accountant as ppa
from dp_accounting.pld import privacy_loss_distribution as pldm
from dp_accounting.pld import privacy_loss_mechanism as plm

__all__ = ["VectorGaussianPrivacyLoss", "VectorPLDAccountant", "subsampled_gaussian_pld"]


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
        q, s, sd2 = self.sampling_prob, self.sensitivity, self._standard_deviation ** 2
        remove = self.adjacency_type == plm.AdjacencyType.REMOVE
        b = eps if remove else -eps            # the parent inverts ADD at -eps
        boundary = math.log(1 - q)
        log_a, log_neg_c = np.log(1 / q), np.log(-(1 - 1 / q))
        d = b + log_a
        regular = (b > boundary) & ~_isclose(b, boundary) & (b != 0) & (log_neg_c < d)
        loss = d[regular] + np.log1p(-np.exp(log_neg_c - d[regular]))   # L(b), as _log_sub
        if not remove:
            loss = -loss
        x = np.empty(eps.shape, dtype=float)
        x[regular] = -0.5 * s - loss * sd2 / s
        if not remove:
            x[regular] = s + x[regular]
        for i in np.flatnonzero(~regular):      # the parent's special branches (and its errors)
            x[i] = self.inverse_privacy_loss(float(eps[i]))
        return x

    def _inverse_losses_unsampled(self, eps):
        """x(eps) without subsampling: REMOVE -s/2 - eps sd^2/s, ADD s + (-s/2 - eps sd^2/s)."""
        s, sd2 = self.sensitivity, self._standard_deviation ** 2
        x = -0.5 * s - eps * sd2 / s
        return s + x if self.adjacency_type == plm.AdjacencyType.ADD else x

    def get_delta_for_epsilon(self, epsilon):
        vectorised = (not isinstance(epsilon, numbers.Number) and 0.0 < self.sampling_prob <= 1.0
                      and self.adjacency_type in (plm.AdjacencyType.ADD, plm.AdjacencyType.REMOVE))
        if not vectorised:
            return super().get_delta_for_epsilon(epsilon)
        epsilons = np.asarray(epsilon)
        deltas = np.zeros_like(epsilons, dtype=float)
        q = self.sampling_prob
        if q == 1.0:                                   # no subsampling: the inverse is linear, everywhere
            x_cut = self._inverse_losses_unsampled(epsilons)
            deltas = self.mu_upper_cdf(x_cut) - np.exp(epsilons + self.mu_lower_log_cdf(x_cut))
            return np.clip(deltas, 0, 1)
        if self.adjacency_type == plm.AdjacencyType.ADD:
            inverse = epsilons < -math.log1p(-q)   # delta = 0 beyond -log(1-q)
        else:
            inverse = epsilons > math.log1p(-q)    # delta = 1 - e^eps below log(1-q)
            deltas[~inverse] = -np.expm1(epsilons[~inverse])
        x_cut = self._inverse_losses(epsilons[inverse])
        deltas[inverse] = self.mu_upper_cdf(x_cut) - np.exp(epsilons[inverse] + self.mu_lower_log_cdf(x_cut))
        return np.clip(deltas, 0, 1)


#: dp_accounting's (private) builder of one adjacency's pmf from a monotone privacy loss
_BUILDER = "_create_pld_pmf_from_monotone_privacy_loss"


def subsampled_gaussian_pld(standard_deviation, sampling_prob, interval, pessimistic=True):
    """The PLD (ADD_OR_REMOVE_ONE, sensitivity 1) that dp_accounting's ``from_gaussian_mechanism``
    returns for these arguments (connect-the-dots when pessimistic, as there; one pmf when
    ``sampling_prob`` is 1, the remove/add pair otherwise), built with
    :class:`VectorGaussianPrivacyLoss`."""
    build = getattr(pldm, _BUILDER, None)
    if build is None or not 0.0 < sampling_prob <= 1.0:
        return pldm.from_gaussian_mechanism(standard_deviation, value_discretization_interval=interval,
                                            sampling_prob=sampling_prob, pessimistic_estimate=pessimistic,
                                            use_connect_dots=pessimistic)

    def pmf(adjacency):
        loss = VectorGaussianPrivacyLoss(standard_deviation, sensitivity=1, pessimistic_estimate=pessimistic,
                                         sampling_prob=sampling_prob, adjacency_type=adjacency)
        return build(loss, pessimistic_estimate=pessimistic, value_discretization_interval=interval,
                     use_connect_dots=pessimistic)

    if sampling_prob == 1.0:
        return pldm.PrivacyLossDistribution(pmf(plm.AdjacencyType.REMOVE))
    return pldm.PrivacyLossDistribution(pmf(plm.AdjacencyType.REMOVE), pmf(plm.AdjacencyType.ADD))


class VectorPLDAccountant(ppa.PLDAccountant):
    """dp_accounting's ``PLDAccountant`` whose Gaussian and Poisson-subsampled Gaussian events are
    built by :func:`subsampled_gaussian_pld` (the same PLDs, composed the same way: the lines of
    ``PLDAccountant._maybe_compose`` for these two events with ``from_gaussian_mechanism``
    replaced).  Every other event, relation or a zero noise goes to the parent; a dp_accounting
    that renames ``_maybe_compose`` never calls this one and stays correct, only slower."""

    def _maybe_compose(self, event, count, do_compose):
        relation_ok = self.neighboring_relation in (NR.ADD_OR_REMOVE_ONE, NR.REPLACE_SPECIAL)
        iv = self._value_discretization_interval
        if do_compose and relation_ok and isinstance(event, dpe.GaussianDpEvent) and event.noise_multiplier != 0:
            self._pld = self._pld.compose(subsampled_gaussian_pld(event.noise_multiplier / math.sqrt(count), 1.0, iv))
            return None
        if (do_compose and relation_ok and isinstance(event, dpe.PoissonSampledDpEvent)
                and isinstance(event.event, dpe.GaussianDpEvent) and event.sampling_probability != 0
                and event.event.noise_multiplier != 0):
            pld = subsampled_gaussian_pld(event.event.noise_multiplier, event.sampling_probability, iv)
            self._pld = self._pld.compose(pld.self_compose(count))
            return None
        return super()._maybe_compose(event, count, do_compose)
