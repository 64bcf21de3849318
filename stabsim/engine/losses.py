"""Loss functions: numba value/(sub)gradient kernels plus their declared constants.

A pairwise loss is written f(w; z, z') with z = (x, y).  Every loss here is a scalar
function ``phi`` of a scalar "margin" m that is linear (or, for metric learning,
quadratic) in the data:

==================  ==========================================  ======================
form                margin m                                     papers
==================  ==========================================  ======================
``auc``             s w.(x - x'),  s = (y - y')/2 in {-1,0,1}    P0, P1 (AUC), P4 Alg 2
``auc_ordered``     w.(x - x') if (y, y') = (1, -1), else off    P1 Sec. 5 as printed
``ranking``         (y - y') w.(x - x')                          P2 Lemma 2, P3 Ex. 2
``metric_tau``      -tau(y,y') (x-x')^T W (x-x'), tau=+1 if y=y' P0 Sec. 4 (metric hinge)
                    else -1, so hinge gives (1 + tau q)_+
``metric``          y y' (1 - (x-x')^T W (x-x'))                 P2 Lemma 3, P3 Ex. 1
``point``           y w.x                                        P4 Alg 1 (pointwise)
``point_lsq``       f = (w.x - y)^2 / 2 (not a phi of a margin)  P4 Sec. 5
==================  ==========================================  ======================

``phi``: hinge (1-m)_+, squared (1-m)^2, logistic log(1+e^{-m}), q-hinge (1-m)_+^q.

For ``auc`` the pair in the other order is handled symmetrically: f(w; z, z') =
I[y=1,y'=-1] phi(w.(x-x')) + I[y=-1,y'=1] phi(w.(x'-x)), same-label pairs give 0 (value
and gradient).  ``auc_ordered`` keeps only I[y=1, y'=-1] as printed in P1 Sec. 5; its
empirical risk over ordered pairs i != j is half that of ``auc``.

Kernels accumulate ``scale * grad`` into a buffer and return the loss value, so a step
that averages several pairs (P0 Alg 1, P1 Remark 7) needs no temporary arrays.  Matrix
parameters (metric learning) are flattened row-major, p = d*d.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

import numpy as np
from stabsim.compile.jit import njit

# forms
AUC, AUC_ORDERED, RANKING, METRIC_TAU, METRIC, POINT, POINT_LSQ = range(7)
# scalar functions
HINGE, SQUARED, LOGISTIC, QHINGE = range(4)

_PAIRWISE_FORMS = (AUC, AUC_ORDERED, RANKING, METRIC_TAU, METRIC)


@njit(cache=True, inline="always")
def phi_value_deriv(phi, m, q):
    """phi(m) and phi'(m) (a subgradient at kinks: 0 for the hinge at m = 1)."""
    if phi == HINGE:
        if m < 1.0:
            return 1.0 - m, -1.0
        return 0.0, 0.0
    if phi == SQUARED:
        r = 1.0 - m
        return r * r, -2.0 * r
    if phi == LOGISTIC:
        # log(1 + e^{-m}) and -1/(1 + e^{m}), without overflow for large |m|
        if m >= 0.0:
            e = math.exp(-m)
            return math.log1p(e), -e / (1.0 + e)
        e = math.exp(m)
        return -m + math.log1p(e), -1.0 / (1.0 + e)
    # QHINGE
    if m < 1.0:
        r = 1.0 - m
        rq1 = r ** (q - 1.0)
        return rq1 * r, -q * rq1
    return 0.0, 0.0


@njit(cache=True, inline="always")
def phi_deriv(phi, m, q):
    """phi'(m) alone, by the operations ``phi_value_deriv`` uses for it (the same number), for
    callers that discard the value: the logistic loss then skips its log1p, the q-hinge its
    product."""
    if phi == HINGE:
        return -1.0 if m < 1.0 else 0.0
    if phi == SQUARED:
        return -2.0 * (1.0 - m)
    if phi == LOGISTIC:
        if m >= 0.0:
            e = math.exp(-m)
            return -e / (1.0 + e)
        return -1.0 / (1.0 + math.exp(m))
    if m < 1.0:
        return -q * (1.0 - m) ** (q - 1.0)
    return 0.0


@njit(cache=True, inline="always")
def _linear_coef(form, ya, yb):
    """The factor c with margin m = c * w.(xa - xb) for the linear pairwise forms."""
    if form == AUC:
        return 0.5 * (ya - yb)
    if form == AUC_ORDERED:
        return 1.0 if (ya == 1.0 and yb == -1.0) else 0.0
    return ya - yb  # RANKING


@njit(cache=True, inline="always")
def pair_loss_grad(form, phi, q, w, Xs, ia, ya, ib, yb, scale, g, dx):
    """f(w; z_ia, z_ib) with x_ia = Xs[ia], x_ib = Xs[ib]; adds scale * grad_w f into g.

    Rows are addressed by index (no array views are created: this is the hot loop).
    ``dx`` is a workspace of length d (used by the metric forms).
    """
    d = Xs.shape[1]
    if form == METRIC_TAU or form == METRIC:
        for a in range(d):
            dx[a] = Xs[ia, a] - Xs[ib, a]
        quad = 0.0
        for a in range(d):
            row = 0.0
            for b in range(d):
                row += w[a * d + b] * dx[b]
            quad += dx[a] * row
        if form == METRIC_TAU:
            c = 1.0 if ya == yb else -1.0  # tau(y, y')
            m = -c * quad
            dm = -c          # d m / d quad
        else:
            c = ya * yb
            m = c * (1.0 - quad)
            dm = -c
        val, dphi = phi_value_deriv(phi, m, q)
        f = scale * dphi * dm
        if f != 0.0:
            for a in range(d):
                fa = f * dx[a]
                for b in range(d):
                    g[a * d + b] += fa * dx[b]
        return val
    if form != RANKING and _linear_coef(form, ya, yb) == 0.0:
        return 0.0  # same-label AUC pair: zero loss and gradient
    dot = 0.0
    for a in range(d):
        dot += w[a] * (Xs[ia, a] - Xs[ib, a])
    val, fc = linear_pair_coef(form, phi, q, dot, ya, yb)
    f = scale * fc
    if f != 0.0:
        for a in range(d):
            g[a] += f * (Xs[ia, a] - Xs[ib, a])
    return val


@njit(cache=True)
def linear_pair_value(form, phi, q, w, Xs, ia, ya, ib, yb):
    """f(w; z_ia, z_ib) for the linear pairwise forms (AUC, AUC_ORDERED, RANKING): the value
    ``pair_loss_grad`` returns, by the same operations, without its gradient and metric branches
    (the fast twin kinds' reference loss: compiling only this keeps their compilation short)."""
    if form != RANKING and _linear_coef(form, ya, yb) == 0.0:
        return 0.0
    dot = 0.0
    for a in range(Xs.shape[1]):
        dot += w[a] * (Xs[ia, a] - Xs[ib, a])
    return linear_pair_coef(form, phi, q, dot, ya, yb)[0]


@njit(cache=True, inline="always")
def linear_pair_coef(form, phi, q, dot, ya, yb):
    """Linear pairwise forms: (f(w; z_a, z_b), c phi'(m)) from dot = w.(x_a - x_b), where the
    margin is m = c dot and grad_w f = c phi'(m) (x_a - x_b).  Same-label pairs of the AUC
    forms give (0, 0); for ``ranking`` they give (phi(0), 0)."""
    c = _linear_coef(form, ya, yb)
    if c == 0.0 and form != RANKING:
        return 0.0, 0.0
    val, dphi = phi_value_deriv(phi, c * dot, q)
    return val, dphi * c


@njit(cache=True, inline="always")
def point_coef_from_dot(form, phi, q, dot, y):
    """Pointwise forms: (f(w; z), s) from dot = w.x, where grad_w f = s x."""
    if form == POINT_LSQ:
        r = dot - y
        return 0.5 * r * r, r
    val, dphi = phi_value_deriv(phi, y * dot, q)
    return val, dphi * y


@njit(cache=True)
def point_coef(form, phi, q, w, Xs, i, y):
    """``point_coef_from_dot`` at w for the point x_i = Xs[i]."""
    dot = 0.0
    for a in range(Xs.shape[1]):
        dot += w[a] * Xs[i, a]
    return point_coef_from_dot(form, phi, q, dot, y)


@njit(cache=True, inline="always")
def point_loss_grad(form, phi, q, w, Xs, i, y, scale, g):
    """f(w; z_i) for the pointwise forms, x_i = Xs[i]; adds scale * grad into g."""
    val, fc = point_coef(form, phi, q, w, Xs, i, y)
    f = scale * fc
    if f != 0.0:
        for a in range(Xs.shape[1]):
            g[a] += f * Xs[i, a]
    return val


# ---- Python-side specification ---------------------------------------------------------

_PHI_NAMES = {"hinge": HINGE, "squared": SQUARED, "logistic": LOGISTIC, "qhinge": QHINGE}
_FORM_NAMES = {"auc": AUC, "auc_ordered": AUC_ORDERED, "ranking": RANKING,
               "metric": METRIC, "metric_tau": METRIC_TAU, "point": POINT}


@dataclass(frozen=True)
class Loss:
    """A loss with its declared properties.

    ``G(kappa, R)`` and ``L(kappa, R)`` give the Lipschitz and smoothness constants in w
    for data with sup ||x|| <= kappa, labels in [-1, 1], and parameters in the l2 (or
    Frobenius) ball of radius R (``math.inf`` when unconstrained; G is then infinite for
    losses with unbounded gradients).  ``holder`` is the Hölder exponent alpha of the
    gradient (1 = smooth, 0 = only bounded subgradients, P4 Def. 3); ``L`` is then the
    Hölder constant.  What a theorem may assume of it (``classes``: nonnegative, convex,
    Lipschitz, smooth, Hölder, strongly convex / PL; ``pairwise``) is checked against the theorems'
    assumptions by ``stabsim.judging.applicability``.
    """

    name: str
    form: int
    phi: int
    q: float = 2.0

    @property
    def pairwise(self) -> bool:
        return self.form in _PAIRWISE_FORMS

    @property
    def matrix(self) -> bool:
        return self.form in (METRIC, METRIC_TAU)

    @property
    def convex(self) -> bool:
        return True  # every phi here is convex and every margin is affine in w

    @property
    def holder(self) -> float:
        if self.form == POINT_LSQ or self.phi in (SQUARED, LOGISTIC):
            return 1.0
        if self.phi == QHINGE:
            return self.q - 1.0
        return 0.0

    @property
    def smooth(self) -> bool:
        return self.holder == 1.0

    @property
    def nonnegative(self) -> bool:
        return True  # every phi here is >= 0, and so is (w.x - y)^2 / 2

    @property
    def lipschitz_everywhere(self) -> bool:
        """G finite on all of W = R^d: phi' bounded (hinge, logistic); the squared, q-hinge and
        least-squares losses are Lipschitz only on a bounded W (``G(kappa, inf)`` is infinite)."""
        return self.form != POINT_LSQ and self.phi in (HINGE, LOGISTIC)

    @property
    def curved(self) -> bool:
        """phi'' > 0 everywhere (squared, logistic, least squares): F_S is strongly convex, and so
        PL, on data whose pair differences (points) span R^d (for the logistic loss with a modulus
        that shrinks as the margins grow: on a bounded W, or near a finite minimiser); not checked
        here.  The hinge and q-hinge losses are flat beyond the margin: never strongly convex nor PL."""
        return self.form == POINT_LSQ or self.phi in (SQUARED, LOGISTIC)

    def classes(self, bounded: bool) -> frozenset:
        """The loss classes of ``stabsim.theory.assumptions.LOSS_CLASSES`` this loss is in, on a
        bounded W (``bounded``) or on R^d."""
        out = {"holder"}  # alpha = self.holder in [0, 1] (bounded subgradients for alpha = 0)
        if self.nonnegative:
            out.add("nonnegative")
        if self.convex:
            out.add("convex")
        if self.lipschitz_everywhere or bounded:
            out.add("lipschitz")
        if self.smooth:
            out.add("smooth")
        if self.curved:
            out.update(("strongly_convex", "pl"))
        return frozenset(out)

    def _data_scale(self, kappa: float) -> float:
        """sup || d m / d w || for |y| <= 1, ||x|| <= kappa."""
        if self.form in (AUC, AUC_ORDERED):
            return 2.0 * kappa
        if self.form == RANKING:
            return 4.0 * kappa
        if self.matrix:
            return 4.0 * kappa ** 2  # ||dx dx^T||_F = ||dx||^2
        return kappa

    def _margin_range(self, kappa: float, R: float) -> float:
        """sup |m| over the data and the ball of radius R."""
        if self.form == METRIC:
            return 1.0 + 4.0 * kappa ** 2 * R
        return self._data_scale(kappa) * R

    def G(self, kappa: float, R: float = math.inf) -> float:
        c = self._data_scale(kappa)
        if self.form == POINT_LSQ:
            return (kappa * R + 1.0) * kappa
        if self.phi in (HINGE, LOGISTIC):
            return c
        mmax = self._margin_range(kappa, R)
        if self.phi == SQUARED:
            return 2.0 * (1.0 + mmax) * c
        return self.q * (1.0 + mmax) ** (self.q - 1.0) * c  # QHINGE

    def L(self, kappa: float, R: float = math.inf) -> float:
        c = self._data_scale(kappa)
        if self.form == POINT_LSQ:
            return kappa ** 2
        if self.phi == LOGISTIC:
            return c * c / 4.0
        if self.phi == SQUARED:
            return 2.0 * c * c
        if self.phi == QHINGE:
            return self.q * c ** self.q  # Hölder constant with exponent q - 1
        return 2.0 * c  # hinge: ||df(w) - df(w')|| <= 2G (Hölder alpha = 0, P4 Def. 3)

    def value_grad(self, w, za, zb=None):
        """Python convenience: (value, gradient) at one pair (or one point)."""
        w = np.ascontiguousarray(w, dtype=np.float64).ravel()
        g = np.zeros_like(w)
        if self.pairwise:
            (xa, ya), (xb, yb) = za, zb
            Xs = np.ascontiguousarray(np.stack([np.asarray(xa, float), np.asarray(xb, float)]))
            v = pair_loss_grad(self.form, self.phi, self.q, w, Xs, 0, float(ya), 1, float(yb),
                               1.0, g, np.empty(Xs.shape[1]))
        else:
            x, y = za
            Xs = np.ascontiguousarray(np.asarray(x, float)[None])
            v = point_loss_grad(self.form, self.phi, self.q, w, Xs, 0, float(y), 1.0, g)
        return v, g


def _make(name: str) -> Loss:
    if name == "point_lsq":
        return Loss(name, POINT_LSQ, SQUARED)
    form, _, phiname = name.partition("_")
    if form == "auc" and phiname.startswith("ordered_"):
        form, phiname = "auc_ordered", phiname[len("ordered_"):]
    return Loss(name, _FORM_NAMES[form], _PHI_NAMES[phiname])


#: Every loss by name.  ``metric_hinge`` is P0's (1 + tau (x-x')^T W (x-x'))_+.
LOSSES = {n: _make(n) for n in (
    "auc_hinge", "auc_squared", "auc_logistic",
    "auc_ordered_hinge", "auc_ordered_squared", "auc_ordered_logistic",
    "ranking_hinge", "ranking_squared", "ranking_logistic",
    "metric_logistic",
    "point_lsq", "point_logistic", "point_hinge")}
LOSSES["metric_hinge"] = Loss("metric_hinge", METRIC_TAU, HINGE)


def get_loss(name: str, q: float | None = None) -> Loss:
    """The loss called ``name``; ``auc_qhinge`` / ``ranking_qhinge`` need ``q`` in (1, 2]."""
    if name in ("auc_qhinge", "ranking_qhinge", "auc_ordered_qhinge"):
        if q is None or not (1.0 < float(q) <= 2.0):
            raise ValueError(f"loss {name!r} needs q in (1, 2] (Hölder exponent q - 1), got q={q!r}")
        form = {"auc_qhinge": AUC, "ranking_qhinge": RANKING, "auc_ordered_qhinge": AUC_ORDERED}[name]
        return Loss(name, form, QHINGE, float(q))
    if name in LOSSES:
        return LOSSES[name]
    allowed = sorted(LOSSES) + ["auc_qhinge", "ranking_qhinge", "auc_ordered_qhinge"]
    close = difflib.get_close_matches(name, allowed, n=3)
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    raise ValueError(f"unknown loss {name!r}.{hint} Allowed: {', '.join(allowed)}")
