"""Risk evaluation: empirical risks F_S, population risks F, certified ERM w_S, and metrics.

Notation (the papers'): S = {z_1..z_n}, z = (x, y).  For a pairwise loss f(w; z, z')

    F_S(w) = 1/(n(n-1)) sum_{i != j} f(w; z_i, z_j)      (all ordered pairs, P0 R_S, P1 F_S)
    F(w)   = E_{z, z'} f(w; z, z')                      (z, z' independent)

and for a pointwise loss F_S(w) = (1/n) sum_i f(w; z_i), F(w) = E_z f(w; z).  w_S is a
minimiser of F_S over the constraint set W, w* one of F.  The generalization error of an
output A(S) is F(A(S)) - F_S(A(S)), its optimization error F_S(A(S)) - min_W F_S, and its
excess risk F(A(S)) - F(w*) (docs/errata.md, Conventions).

Public functions
----------------
``empirical_risk(W, X, y, loss)``     F_S at many parameter vectors W (..., p) at once.
``empirical_grad(w, X, y, loss)``     grad F_S(w) (a subgradient for the hinge losses).
``population_risk(W, problem, loss)`` F(w): closed form when the problem has one for this loss,
                                      else a U-statistic over a fresh test sample, with its SE.
``erm(X, y, loss, constraint)``       w_S, F_S(w_S) and a proven bound on F_S(w_S) - min_W F_S.
``auc``, ``auc_from_scores``, ``misclassification``, ``mse``: test metrics.

Modules (one job each)
----------------------
``plan``           the validated data set + loss bookkeeping of the kernels, parameter arrays.
``empirical``      F_S and grad F_S; ``_Objective``, the oracles of F_S + reg/2 ||w||^2.
``population``     F: closed forms or U-statistic / sample-mean estimates with their SE.
``metrics``        AUC, misclassification rate, mean squared error.
``certificates``   proven lower bounds on min_W Phi (first order, curvature, duality, quadratic).
``exact_dual``     the exact rational weak-duality bound of the unconstrained hinge.
``solvers``        ball QP, Newton, closed form, hinge continuation, L-BFGS-B / FISTA.
``certified_erm``  ``erm`` and ``ErmResult``.

Parameters W may be numpy arrays (..., p) or xarray DataArrays with a ``param`` dimension,
e.g. ``run_twin(..., record_outputs=True).output`` (replicate, t, run, param); the result
then keeps the other dimensions.  Metric-learning parameters are flattened d x d matrices
(p = d*d, row-major), as in ``stabsim.engine.losses``.
"""

from __future__ import annotations

from stabsim.risk.certificates import (_certify_smooth, _dual_lb_hinge, _erm_quadratic_cert, _lb_first_order,
                           _lb_local_curvature, _lmo_min, _slack)
from stabsim.risk.certified_erm import ErmResult, _erm_hinge_smoothed, _erm_setup, erm
from stabsim.risk.empirical import _Objective, _phi2_lower_np, empirical_grad, empirical_risk
from stabsim.risk.exact_dual import _exact_dot, _exact_hinge_lb, _exact_solve
from stabsim.risk.metrics import _labels_pm1, auc, auc_from_scores, misclassification, mse
from stabsim.risk.plan import _METHODS, _RANK_NEWTON_MAX, _Plan, _as_loss, _finish, _param_array, _plan
from stabsim.risk.population import _SE_U, RiskEstimate, _closed_form, _default_m, population_risk
from stabsim.risk.solvers import _ball_qp, _erm_generic, _erm_hinge, _erm_quadratic, _newton

__all__ = ["ErmResult", "RiskEstimate", "auc", "auc_from_scores", "empirical_grad",
           "empirical_risk", "erm", "misclassification", "mse", "population_risk"]
