"""P3 (Huai et al.) registry entries: hand computations with literal numbers."""

import math

import numpy as np
import pytest

import stabsim.theory as th
from stabsim.theory import p3


def close(a, b, rel=1e-12):
    return math.isclose(float(a), b, rel_tol=rel, abs_tol=0.0)


# --------------------------------------------------------------------------- Lemma 4


def test_lemma4_hand():
    assert close(th.get("P3.Lemma4.sensitivity")(t=25, G=1.5, alpha=0.2), 8 * 1.5 / (0.2 * 25))
    # convex variant: G~ = G + alpha ||C||_2
    assert close(th.get("P3.Lemma4.sensitivity.convex")(t=25, G=1.5, alpha=0.2, diam=2.0),
                 8 * (1.5 + 0.2 * 2.0) / (0.2 * 25))
    b = th.get("P3.Lemma4.sensitivity")
    assert b.tag == "EXPLICIT" and b.quantity == "sensitivity" and b.sweep == "t"
    with pytest.raises(ValueError, match="alpha"):
        b(t=3, G=1.0, alpha=0.0)
    with pytest.raises(ValueError, match="t"):
        b(t=0, G=1.0, alpha=1.0)


# --------------------------------------------------------------------------- helpers


def test_T1_and_eta_hand():
    assert int(p3.T1(L=1.0, alpha=0.5)) == 64          # ceil(16 * 1 / 0.25)
    assert int(p3.T1(L=0.1, alpha=1.0)) == 7           # max(ceil(0.16), 7)
    assert int(p3.T1(L=4.0, alpha=1e-3)) == 256_000_000  # errata P3-D: 2.56e8 >> n
    assert close(p3.eta_t(t=10, alpha=0.5), (9 / 8) * 2 / (0.5 * 10))
    with pytest.raises(ValueError, match="t"):
        p3.eta_t(t=2, alpha=1.0)
    assert close(p3.convex_G(G=1.0, alpha=0.1, diam=2.0), 1.2)
    assert close(p3.convex_L(L=1.0, alpha=0.1), 1.1)


# --------------------------------------------------------------------------- rho


@pytest.mark.parametrize("eps,delta", [(0.5, 1 / 40), (2.5, 1 / 40), (1.5, 1 / 350), (0.1, 1e-6), (5.0, 0.5)])
def test_rho_solves_the_equation(eps, delta):
    rho = float(th.get("P3.rho.exact")(eps=eps, delta=delta))
    assert rho > 0
    assert math.isclose(rho + 2 * math.sqrt(rho * math.log(1 / delta)), eps, rel_tol=1e-12)


def test_rho_exact_vs_approx_at_n40():
    # errata P3-E2: n = 40, delta = 1/n, eps = 2.5 -> exact rho ~ 0.76 x approximation
    lg = math.log(40.0)
    exact = (math.sqrt(lg + 2.5) - math.sqrt(lg)) ** 2
    approx = 2.5**2 / (4 * lg)
    assert close(th.get("P3.rho.exact")(eps=2.5, delta=1 / 40), exact)
    assert close(th.get("P3.rho.approx")(eps=2.5, delta=1 / 40), approx)
    ratio = exact / approx
    assert abs(ratio - 0.76) < 0.005
    # hence the approximate sigma_t^2 is ~24% too small
    kw = dict(t=30, n=40, G=1.0, alpha=1.0, eps=2.5, delta=1 / 40, T1=7)
    s_exact = float(th.get("P3.Alg1.sigma2_t.exact")(**kw))
    s_approx = float(th.get("P3.Alg1.sigma2_t.approx")(**kw))
    assert math.isclose(s_approx / s_exact, ratio, rel_tol=1e-12)
    assert abs((1 - s_approx / s_exact) - 0.24) < 0.005


# --------------------------------------------------------------------------- noise levels


def test_sigma2_t_variants_hand():
    # n=100, T1=10, t=20, G=1, alpha=0.5, eps=1.5, delta=0.01
    lg = math.log(100.0)
    rho = (math.sqrt(lg + 1.5) - math.sqrt(lg)) ** 2
    kw = dict(t=20, n=100, G=1.0, alpha=0.5, eps=1.5, delta=0.01, T1=10)
    exact = 32 * 1.0 * 90 / (0.25 * 400 * rho)
    printed = 32 * 1.0 * 90 / (0.25 * 400 * 1.5**2)          # garbled parenthesis = eps^2
    approx = 128 * 1.0 * 90 * lg / (0.25 * 400 * 1.5**2)
    assert close(th.get("P3.Alg1.sigma2_t.exact")(**kw), exact)
    assert close(th.get("P3.Alg1.sigma2_t.printed")(**kw), printed)
    assert close(th.get("P3.Alg1.sigma2_t.approx")(**kw), approx)
    # P3-E1: the printed form is smaller than the exact one by rho/eps^2 (here ~ 0.05)
    assert printed / exact < 0.1
    assert th.get("P3.Alg1.sigma2_t.printed").variant == "printed"
    assert th.get("P3.Alg1.sigma2_t.exact").variant == "corrected"


def test_sigma2_t_burnin_from_L_and_bad_t():
    f = th.get("P3.Alg1.sigma2_t.exact")
    # L = 1, alpha = 1 -> T1 = max(16, 7) = 16
    a = f(t=20, n=100, G=1.0, alpha=1.0, eps=1.0, delta=0.01, L=1.0)
    b = f(t=20, n=100, G=1.0, alpha=1.0, eps=1.0, delta=0.01, T1=16)
    assert close(a, float(b))
    with pytest.raises(ValueError, match="t"):
        f(t=16, n=100, G=1.0, alpha=1.0, eps=1.0, delta=0.01, T1=16)      # t must exceed T1
    with pytest.raises(ValueError, match="t"):
        f(t=101, n=100, G=1.0, alpha=1.0, eps=1.0, delta=0.01, T1=16)
    with pytest.raises(ValueError, match="n"):
        f(t=20, n=50, G=1.0, alpha=1e-3, eps=1.0, delta=0.01, L=1.0)      # T1 = 1.6e7 >= n
    with pytest.raises(ValueError, match="T1"):
        f(t=20, n=100, G=1.0, alpha=1.0, eps=1.0, delta=0.01, L=1.0, T1=16)
    with pytest.raises(ValueError, match="delta"):
        f(t=20, n=100, G=1.0, alpha=1.0, eps=1.0, delta=0.0, T1=16)
    with pytest.raises(ValueError, match="eps"):
        f(t=20, n=100, G=1.0, alpha=1.0, eps=-1.0, delta=0.1, T1=16)


def test_alg3_sigma2_hand():
    want = 128 * 2.0**2 * math.log(60) ** 2 * math.log(1.25 / 0.01) / (0.3**2 * 60**2 * 0.7**2)
    assert close(th.get("P3.Alg3.sigma2")(n=60, G=2.0, alpha=0.3, eps=0.7, delta=0.01), want)
    # consistency with the Gaussian mechanism: 2 ln(1.25/delta) (8 G log n/(alpha n))^2 / eps^2
    sens = 8 * 2.0 * math.log(60) / (0.3 * 60)
    assert math.isclose(want, 2 * math.log(1.25 / 0.01) * sens**2 / 0.7**2, rel_tol=1e-12)


# --------------------------------------------------------------------------- rates


RK = dict(d=4, eps=0.5, delta=0.01, zeta=0.1)


def test_thm2_regret_hand_and_average():
    n, G, L, alpha, diam = 400, 1.0, 2.0, 0.5, 2.0
    f = math.sqrt(4) * math.log(n / 0.1) ** 1.5 * math.sqrt(math.log(100)) / 0.5
    want = G**2 * f * math.sqrt(n) / alpha + G * L**2 * diam / alpha**2 + G**2 * math.log(n) / alpha
    kw = dict(n=n, G=G, L=L, alpha=alpha, diam=diam, **RK)
    assert close(th.get("P3.Thm2.regret")(**kw), want)
    assert close(th.get("P3.Thm2.avg_regret")(**kw), want / (n - 1))
    assert th.get("P3.Thm2.regret").rate == {"n": 0.5, "eps": -1.0}
    assert th.get("P3.Thm2.avg_regret").rate == {"n": -0.5, "eps": -1.0}


def test_thm3_regret_hand():
    n = 400
    want = 2.0**2 * 1.0**2 * 2.0**2 * 2 * math.log(n / 0.1) ** 1.5 * math.sqrt(math.log(100)) / 0.5 * n**0.75
    kw = dict(n=n, G=1.0, L=2.0, diam=2.0, **RK)
    assert close(th.get("P3.Thm3.regret")(**kw), want)
    assert th.get("P3.Thm3.avg_regret").rate["n"] == -0.25


def test_thm4_thm5_hand():
    n, d = 5, 4
    rad_prev = sum(math.sqrt(d / t) for t in range(1, n)) / (n - 1)      # sum_{t=2}^n R_{t-1}/(n-1)
    rad_all = sum(math.sqrt(d / t) for t in range(1, n + 1)) / n         # (1/n) sum_{t=1}^n R_t
    f = math.sqrt(d) * math.log(n / 0.1) ** 1.5 * math.sqrt(math.log(100)) / 0.5
    G, L, diam, alpha = 1.0, 2.0, 2.0, 0.5
    assert close(th.get("P3.Thm4.eq10")(n=n, G=G, L=L, diam=diam, **RK),
                 rad_prev + L**2 * G**2 * diam**2 * f / n**0.25)
    assert close(th.get("P3.Thm4.eq11")(n=n, G=G, L=L, alpha=alpha, diam=diam, **RK),
                 rad_prev + G**2 * L**2 * diam**2 * f / (alpha**2 * math.sqrt(n)))
    priv = math.sqrt(d) * G**2 * math.log(n / 0.1) * math.sqrt(math.log(100)) / 0.5
    assert close(th.get("P3.Thm5.eq12")(n=n, G=G, alpha=alpha, diam=diam, **RK),
                 priv * diam / (alpha * n) + rad_all)
    assert close(th.get("P3.Thm5.eq13")(n=n, G=G, diam=diam, **RK),
                 priv * diam**2 * math.log(n) / math.sqrt(n) + rad_all)
    # a user-supplied Rademacher average replaces sqrt(d/t)
    got = th.get("P3.Thm5.eq13")(n=n, G=G, diam=diam, rademacher=lambda t: 0 * t, **RK)
    assert close(got, priv * diam**2 * math.log(n) / math.sqrt(n))


def test_rate_exponents_and_vectorisation():
    assert th.get("P3.Thm4.eq10").rate == {"n": -0.25, "eps": -1.0}
    assert th.get("P3.Thm4.eq11").rate == {"n": -0.5, "eps": -1.0}
    assert th.get("P3.Thm5.eq12").rate == {"n": -0.5, "eps": -1.0}
    assert th.get("P3.Thm5.eq13").rate == {"n": -0.5, "eps": -1.0}
    ns = np.array([10, 100, 1000])
    v = th.get("P3.Thm5.eq13")(n=ns, G=1.0, diam=1.0, **RK)
    assert v.shape == (3,) and np.all(np.diff(v) < 0)
    with pytest.raises(ValueError, match="zeta"):
        th.get("P3.Thm4.eq10")(n=10, G=1.0, L=1.0, diam=1.0, d=2, eps=1.0, delta=0.1, zeta=0.0)
    with pytest.raises(ValueError, match="alpha"):
        th.get("P3.Thm5.eq12")(n=10, G=1.0, alpha=-1.0, diam=1.0, d=2, eps=1.0, delta=0.1, zeta=0.1)


def test_registry_metadata_p3():
    for b in th.list_bounds("P3"):
        assert b.func.__doc__ and "P3" in b.func.__doc__, b.key
        assert b.quantity in th.QUANTITIES
