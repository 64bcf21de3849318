"""P2 (Kang et al.) registry entries: hand computations with literal numbers."""

import math

import numpy as np
import pytest

import stabsim.theory as th
from stabsim.theory import p2


def close(a, b, rel=1e-12):
    return math.isclose(float(a), b, rel_tol=rel, abs_tol=0.0)


# --------------------------------------------------------------------------- Thm 1


def test_thm1_sigma_hand():
    # 8 G sqrt(T log(1/delta)) / (n eps), T=10, n=50, G=1.5, eps=0.8, delta=1e-5
    want = 8 * 1.5 * math.sqrt(10 * math.log(1e5)) / (50 * 0.8)
    got = th.get("P2.Thm1.sigma")(T=10, n=50, G=1.5, eps=0.8, delta=1e-5)
    assert close(got, want)
    assert th.get("P2.Thm1.sigma").tag == "CONDITION"


# --------------------------------------------------------------------------- Thm 2

PT = dict(T=5, n=200, p=10, G=2.0, L=4.0, mu=0.5, sigma=0.3, gap0=1.2)


def _A_hand():
    T, n, p, G, L, s = 5, 200, 10, 2.0, 4.0, 0.3
    return (16 * G**2 * T**2 / (L**2 * n**2) + p * T**2 * s**2 / (2 * L**2)
            + 4 * math.sqrt(2) * math.sqrt(p) * G * T**2 * s / (L**2 * n))


def _objective_hand(tau):
    T, p, G, L, mu, s, gap0 = 5, 10, 2.0, 4.0, 0.5, 0.3, 1.2
    return 2 * (tau + L) * _A_hand() + G**2 / (2 * tau) + (1 - mu / L) ** T * gap0 + p * s**2 / (2 * mu)


def test_thm2_closed_form_hand():
    A = _A_hand()
    want = 2 * 4.0 * A + 2 * 2.0 * math.sqrt(A) + (1 - 0.5 / 4.0) ** 5 * 1.2 + 10 * 0.3**2 / (2 * 0.5)
    assert close(th.get("P2.Thm2.excess")(**PT), want)
    assert close(p2.thm2_A(**{k: PT[k] for k in ("T", "n", "p", "G", "L", "sigma")}), A)


def test_thm2_closed_form_equals_bruteforce_tau():
    taus = np.logspace(-4, 4, 400_001)
    vals = [_objective_hand(t) for t in taus[::1000]]  # coarse pass with the hand formula
    i = int(np.argmin(vals))
    fine = np.linspace(taus[max(0, (i - 1) * 1000)], taus[min(len(taus) - 1, (i + 1) * 1000)], 200_001)
    brute = min(_objective_hand(t) for t in fine)
    closed = float(th.get("P2.Thm2.excess")(**PT))
    assert closed <= brute * (1 + 1e-12)          # the closed form is the infimum
    assert math.isclose(closed, brute, rel_tol=1e-9)
    # the printed objective helper agrees with the hand objective, and tau* attains the closed form
    tau_star = 2.0 / (2 * math.sqrt(_A_hand()))
    assert close(p2.thm2_tau_opt(**{k: PT[k] for k in ("T", "n", "p", "G", "L", "sigma")}), tau_star)
    assert close(p2.thm2_objective(tau=tau_star, **PT), _objective_hand(tau_star))
    assert math.isclose(_objective_hand(tau_star), closed, rel_tol=1e-12)


def test_thm2_u_shaped_in_T():
    T = np.arange(1, 80)
    sigma = p2.thm1_sigma(T=T, n=1000, G=1.0, eps=1.0, delta=1e-5)
    b = th.get("P2.Thm2.excess")(T=T, n=1000, p=5, G=1.0, L=2.0, mu=0.2, sigma=sigma, gap0=5.0)
    k = int(np.argmin(b))
    assert 0 < k < len(T) - 1


def test_thm2_bad_inputs():
    f = th.get("P2.Thm2.excess")
    with pytest.raises(ValueError, match="mu"):
        f(**{**PT, "mu": 4.0})                     # mu >= L
    with pytest.raises(ValueError, match="n"):
        f(**{**PT, "n": 0})
    with pytest.raises(ValueError, match="gap0"):
        f(**{**PT, "gap0": -1.0})
    with pytest.raises(ValueError, match="delta"):
        th.get("P2.Thm1.sigma")(T=1, n=10, G=1, eps=1, delta=1.0)
    with pytest.raises(ValueError, match="eps"):
        th.get("P2.Thm1.sigma")(T=1, n=10, G=1, eps=0.0, delta=0.1)


# --------------------------------------------------------------------------- Thm 3


def test_thm3_explicit_part_hand():
    n, b, M, G, mu, xi = 500, 0.7, 1.0, 2.0, 0.25, 0.05
    want = (2 * b / n + (4 * b + 4 * M) * math.sqrt(2 * math.log(12 / xi) / n)
            + (M + G**2 / (2 * mu)) * math.sqrt(math.log(3 / xi) / n))
    got = th.get("P2.Thm3.excess.explicit")(n=n, sup_Ebeta=b, M_ell=M, G=G, mu=mu, xi=xi)
    assert close(got, want)
    assert th.get("P2.Thm3.excess.explicit").measured == ("sup_Ebeta",)
    with pytest.raises(ValueError, match="xi"):
        th.get("P2.Thm3.excess.explicit")(n=n, sup_Ebeta=b, M_ell=M, G=G, mu=mu, xi=1.5)


# --------------------------------------------------------------------------- rates


@pytest.mark.parametrize("key", ["P2.Remark2.excess", "P2.Thm3.excess", "P2.Lemma2.excess.exp",
                                 "P2.Lemma2.excess.hp", "P2.Lemma3.excess.exp", "P2.Lemma3.excess.hp"])
def test_rates_have_their_slopes(key):
    b = th.get(key)
    assert b.tag == "RATE" and b.quantity == "excess_risk"
    base = dict(n=100.0, p=4.0, eps=0.5)
    f0 = float(b(**base))
    for var, expo in b.rate.items():
        f1 = float(b(**{**base, var: 2 * base[var]}))
        assert math.isclose(f1 / f0, 2.0**expo, rel_tol=1e-12)


def test_rate_values_hand():
    assert close(th.get("P2.Remark2.excess")(n=100, p=4, eps=0.5), math.sqrt(4) / (100 * 0.5))
    assert close(th.get("P2.Thm3.excess")(n=100, p=4, eps=0.5, c=3.0), 3 * 2 / (10 * 0.5))
    assert th.get("P2.Remark2.excess").rate == {"n": -1.0, "eps": -1.0, "p": 0.5}
    assert th.get("P2.Thm3.excess").rate["n"] == -0.5


def test_lemma1_beta():
    b = th.get("P2.Lemma1.beta")
    assert close(b(n=40), 1 / 40) and b.rate == {"n": -1.0} and b.quantity == "locally_elastic_beta"


# --------------------------------------------------------------------------- Lemma 2/3 constants


def test_lemma_constants_E3():
    br = p2.LEMMA_CONSTANTS["bipartite_ranking"]
    assert close(br["L_printed_expr"], (2 + 2 * 1.4142135623730951) / (3 + 2 * 1.4142135623730951))
    assert math.isclose(br["L_printed_expr"], 2 * (math.sqrt(2) - 1), rel_tol=1e-14)
    assert math.isclose(br["L_exact"], 0.8284271247461903, rel_tol=1e-14)
    assert abs(br["L_printed_approx"] - br["L_exact"]) > 0.01          # "~0.84" is not 0.828
    ml = p2.LEMMA_CONSTANTS["metric_learning"]
    assert math.isclose(ml["L_printed_expr"], 0.20710678118654752, rel_tol=1e-14)
    assert abs(ml["L_printed_approx"] - ml["L_exact"]) < 0.005          # "~0.21" is fine


def test_registry_metadata_p2():
    for b in th.list_bounds("P2"):
        assert b.func.__doc__ and "P2" in b.func.__doc__, b.key
        assert b.quantity in th.QUANTITIES
