"""P1 (Yang et al. 2021): the non-convex checks, Thm 8 (gradient norm) and Thm 9 (PL condition).

Check ``p1_path`` (kind ``p1_path``; studies ``p1_thm8_grad``, ``p1_thm9_pl``; errata P1-E5)
    Thm 8 (EXPLICIT-DD, alpha_0^2 = max_j of the replicate mean of m2, F_S(w_0) exact) and Thm 9
    (EXPLICIT-DD, same alpha_0, plus the ERM certificate added to the measured gap).
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.engine.measures import REPLICATE
from stabsim.setups.constants import cell_constants
from stabsim.judging.rules import check_bound
from stabsim.registry import register_check
from stabsim.analyses.base import CheckResult, sweep_slices
from stabsim.analyses.p1_common import label_suffix, loss_sup, measure_over, overlay_figure


def _alpha0_sq(sub):
    """alpha_0^2 := max over steps j of the replicate mean of E_{i,i'}||grad f(w_j; z_i, z_i')||^2."""
    m = sub["m2"].mean(REPLICATE)
    j = int(np.argmax(m.values))
    return float(m.values[j]), int(m["step"].values[j])


def grad_trivial_bound(c) -> tuple[float | None, str]:
    """(trivial bound of the running mean of ||grad F_S(w_j)||^2, note): F_S is an average of G-Lipschitz losses,
    so ||grad F_S|| <= G at every point of W (the iterates are in W) and the mean of its square <= G^2.  G is
    finite on an unbounded W for the hinge / logistic losses; None where it is not."""
    G = c["G"]
    if not math.isfinite(G):
        return None, "no trivial bound: the loss has no finite Lipschitz constant on W"
    return G * G, f"trivial bound: G^2 = {G * G:.4g} (||grad F_S|| <= G)"


def pl_trivial_bound(params, c, cert: float) -> tuple[float | None, str]:
    """(trivial bound of F_S(w_t) - F_S(w_hat) + cert, note): w_t lies in W (projected), the loss is >= 0 and at
    most B = ``loss_sup`` on W, so F_S(w_t) - F_S(w_hat) <= B and the measure <= B + cert.  None when W is
    unbounded (no B known)."""
    a = params["algorithm"]
    B = loss_sup(a["loss"], c["kappa"], c["radius"], a.get("q"))
    if B is None:
        return None, "no trivial bound: W is unbounded, so the loss has no known upper bound on it"
    return B + cert, (f"trivial bound: sup of the loss over W and the data B = {B:.4g} (R = {c['radius']:g}) "
                      f"+ the ERM certificate = {B + cert:.4g}")


@register_check("p1_path", description="P1 Thm 8 (running mean of ||grad F_S||^2) and Thm 9 (PL gap of the last "
                                       "iterate) with measured alpha_0^2 and F_S(w_0)")
def check_path(spec, ds) -> CheckResult:
    """P1 Thm 8 (running mean of ||grad F_S||^2) and Thm 9 (PL gap of the last iterate), EXPLICIT-DD."""
    from stabsim.theory import get

    res = CheckResult()
    keys = [k for k in spec.bounds.get("keys", []) if k in ("P1.Thm8.grad", "P1.Thm9.pl")]
    if not keys:
        raise ValueError("[bounds] keys must contain P1.Thm8.grad or P1.Thm9.pl")
    for label, params, sub in sweep_slices(spec, ds):
        c = cell_constants(params)
        a = params["algorithm"]
        a0sq, jmax = _alpha0_sq(sub)
        t = sub["t"].values.astype(float)
        sfx = label_suffix(label)
        res.measured["alpha_0^2 (max_j of the mean gradient moment)" + sfx] = a0sq
        res.measured["L" + sfx] = c["L"]
        for key in keys:
            if key == "P1.Thm8.grad":
                eta = a["eta"]
                if isinstance(eta, str):
                    raise ValueError("Thm 8 needs a constant step size")
                FS0 = float(sub["FS_w0"].max())
                measure = measure_over(sub["grad_avg"], "grad_norm_sq",
                                        "mean over replicates of (1/t) sum_j ||grad F_S(w_{j-2})||^2")
                b = get(key)(t=t, eta=float(eta), L=c["L"], FS_w0=FS0, alpha0=math.sqrt(a0sq))
                triv, triv_note = grad_trivial_bound(c)   # ||grad F_S||^2 <= G^2
                v = check_bound(measure, b, "EXPLICIT-DD", key=key, trivial_bound=triv, notes=[
                    f"F_S(w_0) = {FS0:.4g}", triv_note, f"alpha_0^2 = {a0sq:.4g} (max at step {jmax})",
                    f"L = {c['L']:.4g}",
                    (f"eta = {eta:g}; printed condition 1/(2 sqrt L) = {1 / (2 * math.sqrt(c['L'])):.4g}, "
                     f"corrected 1/(2L) = {1 / (2 * c['L']):.4g} (P1-E5)")])
                fig = overlay_figure(res, key, measure, [(key, b)], [v], label, params)
                expl = None if v.ok else "measured running mean of ||grad F_S||^2 above Thm 8: " + "; ".join(v.notes)
                if float(eta) > 1 / (2 * c["L"]) or float(eta) > 1 / (2 * math.sqrt(c["L"])):
                    res.notes.append(f"Thm 8 step condition NOT met: eta = {eta}")
                res.measured["F_S(w_0)" + sfx] = FS0
            else:
                eta = a["eta"]
                if not (isinstance(eta, str) and eta.startswith("pl:")):
                    raise ValueError("Thm 9 needs the schedule eta = 'pl:mu' (eta_j = 2/(mu(j+1)))")
                mu = float(eta.split(":")[1])
                cert = float(sub["erm_certificate"].max())
                gap = sub["FS_last"] - sub["FS_wS"] + cert
                measure = measure_over(gap, "pl_gap", "E_A F_S(w_t) - F_S(w_hat) + ERM certificate")
                b = get(key)(t=t, L=c["L"], mu=mu, alpha0=math.sqrt(a0sq))
                notes = [f"mu = {mu:g}", f"alpha_0^2 = {a0sq:.4g} (max at step {jmax})", f"L = {c['L']:.4g}",
                         f"ERM certificate {cert:.2g} added"]
                triv, triv_note = pl_trivial_bound(params, c, cert)   # F_S(w_t) - min F_S <= sup f on W
                notes.append(triv_note)
                if "mu_S" in sub:
                    mus = float(sub["mu_S"].min())
                    notes.append(f"PL constant of F_S = {mus:.4g}" + (" >= mu" if mus >= mu else " < mu: (A4) FAILS"))
                    res.measured["PL constant of F_S (min)" + sfx] = mus
                v = check_bound(measure, b, "EXPLICIT-DD", key=key, trivial_bound=triv, notes=notes)
                fig = overlay_figure(res, key, measure, [(key, b)], [v], label, params)
                expl = None if v.ok else "measured PL gap above Thm 9: " + "; ".join(v.notes)
                if a["constraint"] != "none":
                    wmax = float(sub["wS_norm"].max()) if "wS_norm" in sub else math.nan
                    res.notes.append(
                        f"Thm 9 is stated without projection; the run projects onto {a['constraint']} because the "
                        f"first steps 2/(mu(j+1)) >> 2/L would overflow unprojected; ||w_S|| <= {wmax:.3g} lies "
                        "inside W, so min_W F_S = min F_S")
            res.add(v, figure=fig, label=label or None, explanation=expl)
    res.notes.append("alpha_0^2 is the max over the recorded steps j of the replicate mean of the exact "
                     "E_{i,i'}||grad f(w_j; z_i, z_i')||^2 (i, i' fresh uniform indices, independent of w_j): "
                     "the theorems' 'for any j' is checked on the simulated steps only (EXPLICIT-DD)")
    return res
