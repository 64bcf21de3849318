"""P4 (Wang, Lei, Ying, Zhou: DP-SGD with low noise) Lemma 18: the one-step expansion of the
gradient map of a Hoelder-smooth loss (study ``p4_lemma18``; check ``p4_lemma18`` in
:mod:`stabsim.analyses.p4_stability`).

Kind ``p4_expansion``
    sup over sampled (w, w', z) of ||w - eta df(w) - w' + eta df(w')||^2 - ||w - w'||^2 per step
    size eta (one f(.; z)): per replicate the largest value found (``expansion``), with the
    loss's Hoelder constant ``L_holder`` and exponent ``alpha``.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from stabsim.setups.p4 import EXPANSION
from stabsim.registry import StudySpec, register_kind


@register_kind("p4_expansion", params={"expansion": EXPANSION},
               description="P4 Lemma 18: sup of ||w - eta df(w) - w' + eta df(w')||^2 - ||w - w'||^2 over sampled triples")
def p4_expansion_cell(spec: StudySpec, cell: dict, replicates: np.ndarray) -> xr.Dataset:
    """Per replicate: the largest expansion found over ``samples`` random triples.  Half are generic
    (w, w' uniform in a ball of radius 2, random x, y); half straddle a kink of the loss (the two points
    differ by a small step across the margin-1 hyperplane), where the gradient jumps and the expansion
    is largest for the Hoelder losses."""
    from stabsim.engine.losses import get_loss
    from stabsim.engine.synthetic import _Stream

    p = spec.cell_params(cell)["expansion"]
    lossf = get_loss(p["alpha_loss"], p["q"] if p["alpha_loss"] == "auc_qhinge" else None)
    eta, kap, m, d = p["eta"], p["kappa"], p["samples"], 5
    q = lossf.q if p["alpha_loss"] == "auc_qhinge" else 1.0
    best = np.empty(len(replicates))
    for ir, r in enumerate(replicates):
        st = _Stream(spec.seed, int(r), 7)  # counter-based stream keyed by the replicate id
        x = st.normal((m, d)); x *= (kap * st.uniform(m) ** (1 / d) / np.linalg.norm(x, axis=1))[:, None]
        if lossf.pairwise:
            x2 = st.normal((m, d)); x2 *= (kap * st.uniform(m) ** (1 / d) / np.linalg.norm(x2, axis=1))[:, None]
            u = x - x2                       # pair ((x, +1), (x2, -1)): margin w.u
        else:
            yv = np.where(st.uniform(m) < 0.5, 1.0, -1.0)
            u = x * yv[:, None]              # point (x, y): margin y w.x
        w = st.normal((m, d)) * 2 / math.sqrt(d)
        w2 = st.normal((m, d)) * 2 / math.sqrt(d)
        # odd rows: straddle the kink m = 1 (w on it, w' a small step across, plus a little orthogonal jitter)
        nu2 = np.maximum(np.einsum("ij,ij->i", u, u), 1e-300)
        w_k = w + ((1.0 - np.einsum("ij,ij->i", w, u)) / nu2)[:, None] * u
        h = (st.uniform(m) * 2 - 1) * eta * np.sqrt(nu2) * st.uniform(m) ** 2
        jit = st.normal((m, d)) * 1e-3 * np.abs(h)[:, None]
        odd = (np.arange(m) % 2 == 1)[:, None]
        w2 = np.where(odd, w_k + h[:, None] * u + jit, w2)
        w = np.where(odd, w_k - 0.3 * h[:, None] * u, w)

        def grad(wv):
            mg = np.einsum("ij,ij->i", wv, u)
            s = np.maximum(1.0 - mg, 0.0)
            coef = -q * s ** (q - 1.0) if q > 1 else -(mg < 1.0).astype(float)  # d/dm (1-m)_+^q; hinge: -1[m < 1]
            return coef[:, None] * u

        a = w - eta * grad(w) - w2 + eta * grad(w2)
        best[ir] = float(np.max(np.einsum("ij,ij->i", a, a) - np.einsum("ij,ij->i", w - w2, w - w2)))
    out = xr.Dataset({"expansion": (("replicate",), best, {"long_name": "max expansion over the samples"})},
                     coords={"replicate": np.asarray(replicates, dtype=np.int64)})
    out["L_holder"] = ((), float(lossf.L(kap)))
    out["alpha"] = ((), float(lossf.holder))
    return out
