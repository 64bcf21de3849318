"""The papers' algorithms as specifications over the twin kernel.

===============  ========================================================  ==============
name             algorithm                                                 output
===============  ========================================================  ==============
``p1_alg1``      P1 Alg. 1: pair i_t with i_{t-1}, one gradient per step   sum eta_j w_{j-2} / sum eta_j
``p1_alg2``      P1 Alg. 2 (OGD): online stream z_0, z_1, ..., pair z_t    same
                 with z_{t-1}; the data rows are the stream (n >= T + 1)
``p1_buffer``    P1 Remark 7: FIFO buffer of the last s indices            same
``p1_buffer_online``  Remark 7 on the online stream                        same
``sgd_pair``     SGD_pair: a uniform ordered pair i != j per step          (1/T) sum_{t=1}^T w_t (P4 numbering)
                 (= P4 Alg. 2 without noise)
``p0_alg1``      P0 Alg. 1: the new draw paired with all previous draws    (1/T) sum_{t=1}^T w_t (P0 numbering)
``p4_alg1``      P4 Alg. 1: pointwise (DP-)SGD, noise sigma                (1/T) sum_{t=1}^T w_t
``p4_alg2``      P4 Alg. 2: pairwise (DP-)SGD, uniform pair, noise sigma   (1/T) sum_{t=1}^T w_t
``p2_alg1``      P2 Alg. 1: full-batch all-pairs GD, noise sigma           last iterate theta_T
===============  ========================================================  ==============

"P0/P4 numbering" starts at w_1 = initial point, so their (1/T) sum_{t=1}^T w_t is the
mean of the kernel's w_0..w_{T-1} (the states *before* each step, ``avg_lag = 1``).
The noise calibration of the private algorithms lives in ``stabsim.privacy``; here sigma
is a plain argument (0 = non-private).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, replace

import numpy as np

from stabsim.kernels import ALL_PREV, FULL_BATCH, LAST_ITERATE, POINTWISE, PREVIOUS, UNIFORM_PAIR

OUTPUTS = {"eta_weighted_lag2": 2, "mean_lag1": 1, "t_weighted_lag2": 2, "last": LAST_ITERATE,
           "mean_lag0": 0}


@dataclass(frozen=True)
class Algorithm:
    """A pair schedule + index mode + output convention (+ default noise 0).  ``pairwise``: it
    takes a pairwise loss (False: a pointwise one); ``instance_of``: other algorithms' names it is
    a special case of."""

    name: str
    schedule: int
    sequential: bool = False
    buffer: int = 1
    output: str = "eta_weighted_lag2"
    pairwise: bool = True
    reference: str = ""
    instance_of: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """This algorithm's name and those of the algorithms it is a case of (``instance_of``:
        SGD_pair is P4 Alg. 2 with sigma = 0), for matching a theorem's algorithms
        (``stabsim.judging.applicability``)."""
        return (self.name,) + tuple(self.instance_of)

    @property
    def avg_lag(self) -> int:
        return OUTPUTS[self.output]

    def kernel_omegas(self, etas: np.ndarray, eta_stride: int, T: int) -> tuple[np.ndarray, int]:
        """The weights as the twin kernel reads them, omega_t = out[t * stride], for step sizes
        eta_t = etas[t * eta_stride] (stride 0: one number for a constant)."""
        if self.output == "eta_weighted_lag2":
            return etas, eta_stride
        if self.output == "t_weighted_lag2":
            return np.arange(T + 1, dtype=np.float64), 1
        return np.ones(1), 0

    def min_rows(self, T: int) -> int:
        """The number of data rows the algorithm needs (online streams use one row per step)."""
        if not self.sequential:
            return 2
        return T + self.buffer if self.schedule == PREVIOUS else T + 1


ALGORITHMS = {
    "p1_alg1": Algorithm("p1_alg1", PREVIOUS, reference="P1 Algorithm 1"),
    "p1_alg2": Algorithm("p1_alg2", PREVIOUS, sequential=True, reference="P1 Algorithm 2 (OGD)"),
    "p1_buffer": Algorithm("p1_buffer", PREVIOUS, buffer=2, reference="P1 Remark 7 (buffer s)"),
    "p1_buffer_online": Algorithm("p1_buffer_online", PREVIOUS, sequential=True, buffer=2,
                                  reference="P1 Remark 7 on the online stream"),
    "sgd_pair": Algorithm("sgd_pair", UNIFORM_PAIR, output="mean_lag1",
                          reference="SGD_pair (Lei et al. 2020) = P4 Algorithm 2 without noise",
                          instance_of=("p4_alg2",)),
    "p0_alg1": Algorithm("p0_alg1", ALL_PREV, output="mean_lag1", reference="P0 Algorithm 1"),
    "p4_alg1": Algorithm("p4_alg1", POINTWISE, output="mean_lag1", pairwise=False,
                         reference="P4 Algorithm 1 (pointwise DP-SGD)"),
    "p4_alg2": Algorithm("p4_alg2", UNIFORM_PAIR, output="mean_lag1",
                         reference="P4 Algorithm 2 (pairwise DP-SGD)"),
    "p2_alg1": Algorithm("p2_alg1", FULL_BATCH, output="last",
                         reference="P2 Algorithm 1 (full-batch gradient perturbation)"),
}


def get_algorithm(name: str, *, buffer: int | None = None, output: str | None = None) -> Algorithm:
    """The algorithm called ``name``, optionally with another buffer size or output rule."""
    if isinstance(name, Algorithm):
        alg = name
    elif name in ALGORITHMS:
        alg = ALGORITHMS[name]
    else:
        close = difflib.get_close_matches(str(name), list(ALGORITHMS), n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(f"unknown algorithm {name!r}.{hint} Allowed: {', '.join(ALGORITHMS)}")
    if buffer is not None:
        if alg.schedule != PREVIOUS:
            raise ValueError(f"buffer size s applies to the FIFO algorithms (p1_*), not {alg.name!r}")
        if int(buffer) < 1:
            raise ValueError(f"buffer size s must be >= 1, got {buffer!r}")
        alg = replace(alg, buffer=int(buffer))
    if output is not None:
        if output not in OUTPUTS:
            raise ValueError(f"unknown output rule {output!r}; allowed: {', '.join(OUTPUTS)}")
        alg = replace(alg, output=output)
    return alg
