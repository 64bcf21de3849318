"""P4 (Wang, Lei, Ying, Zhou) registry entries: hand computations with literal numbers."""

import math

import numpy as np
import pytest

import stabsim.theory as th
from stabsim.theory import p4

e = math.e


def close(a, b, rel=1e-12):
    return math.isclose(float(a), b, rel_tol=rel, abs_tol=0.0)


# --------------------------------------------------------------------------- constants

# alpha = 1/2, L = 2 by hand:
M1 = 3 ** (1 / 3) * 2 ** (2 / 3)                    # (1 + 2)^{1/3} 2^{2/3}
M2 = (1 / 3) * (2 / 3) ** 2 * M1**6                 # ((1-a)/(1+a)) (2a/(1+a))^{2a/(1-a)} M1^{(2+2a)/(1-a)}
M3 = math.sqrt(1 / 3) * (2 ** -0.5 * 2) ** 2        # = 2/sqrt(3)
MBAR_PRINTED = math.sqrt(e / 3) * 1.5 * 2**2        # sqrt(e(1-a)/(1+a)) (2-a) L^{1/(1-a)}


def test_constants_hand():
    assert close(p4.M_alpha_1(alpha=0.5, L=2.0), M1)
    assert close(p4.M_alpha_2(alpha=0.5, L=2.0), M2)
    assert close(p4.M_alpha_3(alpha=0.5, L=2.0), M3)
    assert math.isclose(M3, 2 / math.sqrt(3), rel_tol=1e-14)
    assert close(p4.Mbar_alpha_3(alpha=0.5, L=2.0, variant="printed"), MBAR_PRINTED)
    assert close(p4.Mbar_alpha_3(alpha=0.5, L=2.0, variant="corrected"), M3)
    # E2: the printed constant is ~4.9x the corrected one here
    assert MBAR_PRINTED / M3 > 4


def test_constants_alpha_zero():
    assert close(p4.M_alpha_1(alpha=0.0, L=2.0, M=0.5), 2.5)             # M + L
    assert close(p4.M_alpha_2(alpha=0.0, L=2.0, M=0.5), 2.5**2)          # M_{0,1}^2
    assert close(p4.M_alpha_3(alpha=0.0, L=2.0), 2.0)                    # sqrt(1) (1 * L)^1
    with pytest.raises(ValueError, match="M"):
        p4.M_alpha_1(alpha=0.0, L=2.0)


def test_M11_squared_is_2L_limit():
    L = 3.0
    for a in (1 - 1e-3, 1 - 1e-6, 1 - 1e-9):
        assert abs(float(p4.M_alpha_1(alpha=a, L=L)) ** 2 - 2 * L) < 20 * (1 - a) * 2 * L
    assert math.isclose(float(p4.M_alpha_1(alpha=1 - 1e-9, L=L)) ** 2, 6.0, rel_tol=1e-7)
    assert close(p4.M_alpha_1(alpha=1.0, L=L) ** 2, 6.0)


def test_constants_bad_alpha():
    with pytest.raises(ValueError, match="alpha"):
        p4.M_alpha_1(alpha=1.5, L=1.0)
    with pytest.raises(ValueError, match="alpha"):
        p4.M_alpha_3(alpha=1.0, L=1.0)
    with pytest.raises(ValueError, match="alpha"):
        p4.M_alpha_2(alpha=-0.1, L=1.0)
    with pytest.raises(ValueError, match="variant"):
        p4.Mbar_alpha_3(alpha=0.5, L=1.0, variant="best")


# --------------------------------------------------------------------------- Lemma 13 / 17


def test_lemma13_17_hand():
    L, EFS, nu, k = 2.0, 0.3, 0.01, 0.5
    assert close(th.get("P4.Lemma13a.gen")(L=L, EFS=EFS, nu=nu, kappa=k), L / k * EFS + (L + k) * nu / 2)
    assert close(th.get("P4.Lemma13a.gen")(L=L, EFS=EFS, nu=nu), math.sqrt(2 * L * EFS * nu) + L * nu / 2)
    assert close(th.get("P4.Lemma17a.gen")(L=L, EFS=EFS, nu=nu, kappa=k), L / k * EFS + 2 * (L + k) * nu)
    assert close(th.get("P4.Lemma17a.gen")(L=L, EFS=EFS, nu=nu), 2 * math.sqrt(2 * L * EFS * nu) + 2 * L * nu)
    Ep = 0.4
    assert close(th.get("P4.Lemma13b.gen")(alpha=0.5, L=L, EFS_pow=Ep, nu=nu, kappa=k),
                 M1**2 / (2 * k) * Ep + k * nu / 2)
    assert close(th.get("P4.Lemma13b.gen")(alpha=0.5, L=L, EFS_pow=Ep, nu=nu), M1 * math.sqrt(Ep * nu))
    assert close(th.get("P4.Lemma17b.gen")(alpha=0.5, L=L, EF_pow=Ep, nu=nu, kappa=k),
                 M1**2 / (2 * k) * Ep + 2 * k * nu)
    assert close(th.get("P4.Lemma17b.gen")(alpha=0.5, L=L, EF_pow=Ep, nu=nu), 2 * M1 * math.sqrt(Ep * nu))


@pytest.mark.parametrize("key,kw", [
    ("P4.Lemma13a.gen", dict(L=2.0, EFS=0.3, nu=0.01)),
    ("P4.Lemma17a.gen", dict(L=2.0, EFS=0.3, nu=0.01)),
    ("P4.Lemma13b.gen", dict(alpha=0.5, L=2.0, EFS_pow=0.4, nu=0.01)),
    ("P4.Lemma17b.gen", dict(alpha=0.5, L=2.0, EF_pow=0.4, nu=0.01)),
])
def test_kappa_opt_is_grid_minimum(key, kw):
    b = th.get(key)
    grid = np.logspace(-4, 4, 20001)
    vals = b(kappa=grid, **kw)
    opt = float(b(kappa="opt", **kw))
    assert opt <= vals.min() * (1 + 1e-12)
    assert math.isclose(opt, vals.min(), rel_tol=1e-6)


def test_kappa_bad():
    with pytest.raises(ValueError, match="kappa"):
        th.get("P4.Lemma13a.gen")(L=1.0, EFS=0.1, nu=0.1, kappa=-1.0)
    with pytest.raises(ValueError, match="kappa"):
        th.get("P4.Lemma13a.gen")(L=1.0, EFS=0.1, nu=0.1, kappa="best")


# --------------------------------------------------------------------------- Lemma 14 / 18 / 19

S, SP = 0.7, 0.9          # sum_eta2_EFS, sum_eta2_EFS_pow


def test_lemma14_hand():
    # n=50, T=100, eta=0.1, L=2 (eta <= 2/L = 1)
    a = 8 * e * (1 + 100 / 50) * 2.0 / 50 * S
    assert close(th.get("P4.Lemma14a.onavg")(n=50, T=100, eta=0.1, L=2.0, sum_eta2_EFS=S), a)
    b = M3**2 * e * 100 * 0.1**4 + 4 * e * M1**2 * (1 + 100 / 50) / 50 * SP    # 2/(1-a) = 4
    assert close(th.get("P4.Lemma14b.onavg")(n=50, T=100, eta=0.1, alpha=0.5, L=2.0, sum_eta2_EFS_pow=SP), b)


def test_lemma14_etas_matches_constant_eta():
    f = th.get("P4.Lemma14b.onavg")
    a = f(n=50, T=100, eta=0.1, alpha=0.5, L=2.0, sum_eta2_EFS_pow=SP)
    b = f(n=50, etas=np.full(100, 0.1), alpha=0.5, L=2.0, sum_eta2_EFS_pow=SP)
    assert math.isclose(float(a), float(b), rel_tol=1e-12)
    etas = np.array([0.2, 0.1, 0.05])
    want = M3**2 * e * (0.2**4 + 0.1**4 + 0.05**4) + 4 * e * M1**2 * (1 + 3 / 50) / 50 * SP
    assert close(f(n=50, etas=etas, alpha=0.5, L=2.0, sum_eta2_EFS_pow=SP), want)


def test_lemma19_hand_and_variants():
    a = 16 * 2.0 * (1 + 2 * 100 / 50) * e / 50 * S
    assert close(th.get("P4.Lemma19a.onavg")(n=50, T=100, eta=0.1, L=2.0, sum_eta2_EFS=S), a)
    kw = dict(n=50, T=100, eta=0.1, alpha=0.5, L=2.0, sum_eta2_EFS_pow=SP)
    first = 8 * e * M1**2 * (1 + 2 * 100 / 50) / 50 * SP
    corrected = first + M3**2 * e * 100 * 0.1**4
    printed = first + MBAR_PRINTED**2 * e * 100 * 0.1**4
    assert close(th.get("P4.Lemma19b.onavg.corrected")(**kw), corrected)
    assert close(th.get("P4.Lemma19b.onavg.printed")(**kw), printed)
    # the variants differ exactly by (Mbar_printed^2 - M_{a,3}^2) e sum eta^{2/(1-a)}
    assert math.isclose(printed - corrected, (MBAR_PRINTED**2 - M3**2) * e * 100 * 0.1**4, rel_tol=1e-10)
    assert th.get("P4.Lemma19b.onavg.printed").variant == "printed"
    assert th.get("P4.Lemma19b.onavg.corrected").variant == "corrected"


def test_lemma18_hand():
    assert close(th.get("P4.Lemma18.expansion.corrected")(alpha=0.5, L=2.0, eta=0.3), M3**2 * 0.3**4)
    assert close(th.get("P4.Lemma18.expansion.printed")(alpha=0.5, L=2.0, eta=0.3), MBAR_PRINTED**2 * 0.3**4)


def test_stability_bad_inputs():
    with pytest.raises(ValueError, match="eta"):
        th.get("P4.Lemma14a.onavg")(n=50, T=100, eta=1.5, L=2.0, sum_eta2_EFS=S)     # eta > 2/L
    with pytest.raises(ValueError, match="eta"):
        th.get("P4.Lemma14a.onavg")(n=50, T=100, eta=0.0, L=2.0, sum_eta2_EFS=S)
    with pytest.raises(ValueError, match="alpha"):
        th.get("P4.Lemma14b.onavg")(n=50, T=100, eta=0.1, alpha=1.0, L=2.0, sum_eta2_EFS_pow=SP)
    with pytest.raises(ValueError, match="n"):
        th.get("P4.Lemma19a.onavg")(n=0, T=100, eta=0.1, L=2.0, sum_eta2_EFS=S)
    with pytest.raises(ValueError, match="etas"):
        th.get("P4.Lemma19a.onavg")(n=5, eta=0.1, etas=[0.1], L=2.0, sum_eta2_EFS=S)
    with pytest.raises(ValueError, match="T"):
        th.get("P4.Lemma19a.onavg")(n=5, T=3, etas=[0.1, 0.1], L=2.0, sum_eta2_EFS=S)


def test_eta2_weighted_sum_hand():
    vals = np.array([1.0, 0.5, 0.25])
    assert close(p4.eta2_weighted_sum(vals, etas=[0.3, 0.2, 0.1]), 0.09 + 0.02 + 0.0025)
    assert close(p4.eta2_weighted_sum(vals, eta=0.1), 0.01 * 1.75)


# --------------------------------------------------------------------------- Theorem 15


def test_thm15_hand():
    n, T, eta, L, EFS = 50, 100, 0.1, 2.0, 0.3
    b = 4 * e * (1 + T / n) * L / n * S
    k = 0.7
    want = L / k * EFS + (L + k) * b
    assert close(th.get("P4.Thm15a.gen")(n=n, T=T, eta=eta, L=L, EFS=EFS, sum_eta2_EFS=S, kappa=k), want)
    a = L * EFS
    assert close(th.get("P4.Thm15a.gen")(n=n, T=T, eta=eta, L=L, EFS=EFS, sum_eta2_EFS=S),
                 2 * math.sqrt(a * b) + L * b)
    Ep = 0.4
    nu_b = M3**2 * e * T * eta**4 + 4 * e * M1**2 * (1 + T / n) / n * SP
    want_b = M1**2 / (2 * k) * Ep + k / 2 * nu_b
    kw = dict(n=n, T=T, eta=eta, alpha=0.5, L=L, EFS_pow=Ep, sum_eta2_EFS_pow=SP)
    assert close(th.get("P4.Thm15b.gen")(kappa=k, **kw), want_b)
    assert close(th.get("P4.Thm15b.gen")(**kw), 2 * math.sqrt(M1**2 * Ep / 2 * nu_b / 2))


# --------------------------------------------------------------------------- Theorem 16 / Lemma 20

OK = dict(L=2.0, sigma2=0.5, d=3, w_star_norm2=0.4, F_star=0.05)


def test_thm16a_hand():
    t, eta = 20, 0.1
    sd = 0.5 * 3
    rhs = ((0.5 + 3 * 2.0 * eta) * 0.4 + 3 * 2.0 * t * (3 * eta**3 * sd + 2 * eta**2 * 0.05)
           + t * 3 * eta**2 * sd)
    assert close(th.get("P4.Thm16a.opt")(t=t, eta=eta, **OK), rhs / (t * eta))
    assert close(p4.thm16_rhs(t=t, eta=eta, alpha=1.0, **OK), rhs)
    # Lemma 20 at alpha = 1 is Thm 16(a)
    assert close(th.get("P4.Lemma20.opt")(t=t, eta=eta, alpha=1.0, **OK), rhs / (t * eta))


def test_thm16b_lemma20_hand():
    t, eta, a = 20, 0.1, 0.5
    sd = 0.5 * 3
    bracket = 2 * eta * 0.4 + t * (6 * eta**3 * sd + 4 * eta**2 * 0.05 + 3 * M2 * eta**5)   # (3-a)/(1-a) = 5
    rhs = 0.4 / 2 + 0.75 * M1**2 * (t * eta**2) ** (1 / 3) * bracket ** (2 / 3) + t * 3 * eta**2 * sd
    assert close(th.get("P4.Thm16b.opt")(t=t, eta=eta, alpha=a, **OK), rhs / (t * eta), rel=1e-11)
    assert close(th.get("P4.Lemma20.opt")(t=t, eta=eta, alpha=a, **OK), rhs / (t * eta), rel=1e-11)
    assert close(th.get("P4.Lemma20.sum_eta2_FS")(t=t, eta=eta, alpha=a, **OK), bracket)
    # alpha = 1: the M_{a,2} term is dropped (Eq. (11))
    assert close(th.get("P4.Lemma20.sum_eta2_FS")(t=t, eta=eta, alpha=1.0, **OK),
                 2 * eta * 0.4 + t * (6 * eta**3 * sd + 4 * eta**2 * 0.05))


def test_thm16_schedule_checks():
    with pytest.raises(ValueError, match="etas"):
        th.get("P4.Thm16a.opt")(etas=[0.1, 0.2], **OK)                  # must be non-increasing
    with pytest.raises(ValueError, match="alpha"):
        th.get("P4.Thm16b.opt")(t=5, eta=0.1, alpha=1.0, **OK)
    with pytest.raises(ValueError, match="eta"):
        th.get("P4.Thm16a.opt")(t=5, **OK)                              # no step size at all
    etas = np.array([0.2, 0.1])
    sd = 1.5
    rhs = (0.5 + 3 * 2.0 * 0.2) * 0.4 + 3 * 2.0 * (3 * sd * (0.2**3 + 0.1**3) + 2 * 0.05 * (0.04 + 0.01)) \
        + 3 * sd * (0.04 + 0.01)
    assert close(th.get("P4.Thm16a.opt")(etas=etas, **OK), rhs / 0.3)


# --------------------------------------------------------------------------- proof-derived explicit excess risk


def _explicit_hand(pair, coef_F, kappa):
    n, T, eta, L, s2, d, w2, F = 100, 200, 0.05, 2.0, 0.2, 3, 0.4, 0.02
    sd = s2 * d
    A = T * eta * F + (0.5 + 3 * L * eta) * w2 + 9 * L * T * eta**3 * sd + 3 * T * eta**2 * sd + coef_F * T * eta**2 * F
    tri = T * (T + 1) / 2
    if pair:
        B = 32 * e * (1 + 2 * T / n) * L / n * eta * (2 * T * eta * w2 + tri * (6 * eta**3 * sd + 4 * eta**2 * F))
    else:
        B = 8 * e * (1 + T / n) * L / n * eta * (T * eta * w2 + tri * (3 * eta**3 * sd + 2 * eta**2 * F))
    if kappa == "opt":
        total = A + L * B + 2 * math.sqrt(L * A * B)
    else:
        total = (1 + L / kappa) * A + (L + kappa) * B
    return total / (T * eta) - F


EX = dict(n=100, T=200, eta=0.05, L=2.0, sigma2=0.2, d=3, w_star_norm2=0.4, F_star=0.02)


@pytest.mark.parametrize("key,pair,coef", [
    ("P4.Thm3.excess_explicit.corrected", False, 6 * 2.0),
    ("P4.Thm3.excess_explicit.printed", False, 6.0),
    ("P4.Thm6.excess_explicit.corrected", True, 6 * 2.0),
    ("P4.Thm6.excess_explicit.printed", True, 4.0),
])
def test_excess_explicit_hand(key, pair, coef):
    b = th.get(key)
    assert close(b(kappa=1.5, **EX), _explicit_hand(pair, coef, 1.5))
    assert close(b(**EX), _explicit_hand(pair, coef, "opt"))
    grid = np.logspace(-3, 4, 20001)
    assert float(b(**EX)) <= float(np.min(b(kappa=grid, **EX))) + 1e-12


def test_excess_explicit_variants_differ_as_E8():
    c = th.get("P4.Thm3.excess_explicit.corrected")
    p = th.get("P4.Thm3.excess_explicit.printed")
    # fixed kappa: difference = (1 + L/kappa)(6L - 6) T eta^2 F* / (T eta) = (1 + 2/1.5) * 6 * 0.05 * 0.02
    assert math.isclose(float(c(kappa=1.5, **EX) - p(kappa=1.5, **EX)), (1 + 2 / 1.5) * 6 * 0.05 * 0.02,
                        rel_tol=1e-9)
    # under low noise (F* = 0) the coefficient does not matter
    low = {**EX, "F_star": 0.0}
    assert close(c(**low), float(p(**low)))
    q, r = th.get("P4.Thm6.excess_explicit.corrected"), th.get("P4.Thm6.excess_explicit.printed")
    assert float(q(**EX)) > float(r(**EX))          # 6L = 12 > 4


def test_excess_explicit_bad_eta():
    with pytest.raises(ValueError, match="eta"):
        th.get("P4.Thm3.excess_explicit.corrected")(**{**EX, "eta": 1.5})     # eta > 2/L = 1


# --------------------------------------------------------------------------- rates


def test_rates_hand_and_slopes():
    n, d, eps, delta = 1000.0, 10, 2.0, 1e-4
    priv = math.sqrt(d * math.log(1 / delta)) / (n * eps)
    for k in ("P4.Thm3a.excess", "P4.Thm4a.excess", "P4.Thm6a.excess", "P4.Thm7a.excess"):
        assert close(th.get(k)(n=n, d=d, eps=eps, delta=delta), 1 / math.sqrt(n) + priv)
        assert th.get(k).rate == {"n": -0.5, "eps": -1.0}
    for k in ("P4.Thm3b.excess", "P4.Thm6b.excess"):
        assert close(th.get(k)(n=n, d=d, eps=eps, delta=delta), priv)
        assert th.get(k).rate == {"n": -1.0, "eps": -1.0}
        assert close(th.get(k)(n=2 * n, d=d, eps=eps, delta=delta) / th.get(k)(n=n, d=d, eps=eps, delta=delta), 0.5)
    for k in ("P4.Thm4b.excess", "P4.Thm7b.excess"):
        b = th.get(k)
        assert close(b(n=n, d=d, eps=eps, delta=delta, alpha=0.5), n**-0.75 + priv)
        assert b.extra["rate_of_alpha"](0.5) == {"n": -0.75, "eps": -1.0}
        # at large n the Hoelder term dominates: local slope -> -(1+alpha)/2
        big = 1e12
        slope = math.log(float(b(n=2 * big, d=d, eps=eps, delta=delta, alpha=0.5))
                         / float(b(n=big, d=d, eps=eps, delta=delta, alpha=0.5))) / math.log(2)
        assert abs(slope + 0.75) < 0.01


# --------------------------------------------------------------------------- sigma^2 and schedules


def test_sigma2_hand():
    beta, eps, delta, n, T, G = 2e-4, 0.5, 1 / 5000**2, 5000, 1000, 1.0
    lam = math.log(1 / delta) / ((1 - beta) * eps) + 1
    want = 14 * G**2 * T * lam / (beta * n**2 * eps)
    assert close(th.get("P4.Thm2.sigma2")(beta=beta, eps=eps, delta=delta, n=n, T=T, G=G), want)
    assert close(th.get("P4.Thm5.sigma2")(beta=beta, eps=eps, delta=delta, n=n, T=T, G=G), 4 * want)
    # errata P4-A: eps = 0.5, beta = 2e-4 on the paper's grid gives sigma^2/G^2 ~ 196
    assert abs(want - 196) < 1
    with pytest.raises(ValueError, match="beta"):
        th.get("P4.Thm2.sigma2")(beta=1.0, eps=eps, delta=delta, n=n, T=T, G=G)


def test_recommended_schedule_hand():
    n, eps, delta, d = 10000, 1.0, 1e-4, 10
    scale = eps / math.sqrt(d * math.log(1 / delta))
    eta, T = p4.recommended_schedule(theorem="3a", n=n, eps=eps, delta=delta, d=d, c=0.5)
    assert close(eta, 0.5 * min(1 / math.sqrt(n), scale)) and int(T) == n
    eta, T = p4.recommended_schedule(theorem="6b", n=n, eps=eps, delta=delta, d=d, c=0.5)
    assert close(eta, 0.5 * scale) and int(T) == n
    eta, T = p4.recommended_schedule(theorem="4a", n=n, eps=eps, delta=delta, d=d, alpha=0.25, c=0.5)
    assert int(T) == math.ceil(n ** (1.75 / 1.25))
    assert close(eta, 0.5 * min(n ** (3 * (0.25 - 1) / (2 * 1.25)), scale))
    eta, T = p4.recommended_schedule(theorem="7a", n=n, eps=eps, delta=delta, d=d, alpha=0.75, c=0.5)
    assert int(T) == n and close(eta, 0.5 * min(1 / math.sqrt(n), scale))
    # low-noise Hoelder, statement version (E3): n^{(a^2+2a-3)/(2(1+a))} and n eps/(T sqrt(d log(1/delta)))
    a = 0.5
    eta, T = p4.recommended_schedule(theorem="4b", n=n, eps=eps, delta=delta, d=d, alpha=a, c=1.0)
    T_hand = math.ceil(n ** (2 / 1.5))
    assert int(T) == T_hand
    assert close(eta, min(n ** ((a * a + 2 * a - 3) / (2 * (1 + a))), n * scale / T_hand))
    # the n-power branch gives T eta ~ n^{(1+a)/2}
    assert math.isclose(T_hand * n ** ((a * a + 2 * a - 3) / 3), n ** 0.75, rel_tol=1e-3)


def test_recommended_schedule_bad():
    with pytest.raises(ValueError, match="c"):
        p4.recommended_schedule(theorem="3b", n=100, eps=50.0, delta=0.1, d=1, c=1.0)       # eta > 1
    with pytest.raises(ValueError, match="c"):
        p4.recommended_schedule(theorem="3a", n=100, eps=1.0, delta=0.1, d=1, c=1.0, L=50.0)  # eta > 2/L
    with pytest.raises(ValueError, match="alpha"):
        p4.recommended_schedule(theorem="4b", n=100, eps=1.0, delta=0.1, d=1)
    with pytest.raises(ValueError, match="theorem"):
        p4.recommended_schedule(theorem="5a", n=100, eps=1.0, delta=0.1, d=1)
    with pytest.raises(ValueError, match="delta"):
        p4.recommended_schedule(theorem="3a", n=100, eps=1.0, delta=2.0, d=1)


def test_registry_metadata():
    assert th.get("P4.Lemma14a.onavg").quantity == "onavg_stability"
    assert th.get("P4.Lemma19b.onavg.printed").quantity == "onavg_stability"
    assert th.get("P4.Thm15a.gen").quantity == "gen_gap"
    assert th.get("P4.Lemma13a.gen").quantity == "gen_gap"
    assert th.get("P4.Thm16a.opt").quantity == "opt_error"
    assert th.get("P4.Lemma20.opt").quantity == "opt_error"
    assert th.get("P4.Thm3a.excess").quantity == "excess_risk"
    assert th.get("P4.Lemma14a.onavg").measured == ("sum_eta2_EFS",)
    assert th.get("P4.Thm15a.gen").measured == ("EFS", "sum_eta2_EFS")
    for b in th.list_bounds("P4"):
        assert b.func.__doc__ and "P4" in b.func.__doc__
