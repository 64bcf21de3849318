"""P1 bound registry: every formula against a hand computation, registry metadata, variants, validation."""

import math

import numpy as np
import pytest

from stabsim.theory import p1
from stabsim.theory.registry import QUANTITIES, TAGS, _REGISTRY

approx = lambda x: pytest.approx(x, rel=1e-12)  # noqa: E731

P1_KEYS = {
    "P1.Lem1.gen", "P1.Thm1.rate", "P1.Thm2.rate", "P1.Thm3.rate", "P1.Thm4.uas", "P1.Thm4.gen", "P1.Thm5.uas",
    "P1.Thm5.gen", "P1.Thm6a.eta0_zero", "P1.Thm6a.eta0_eta1", "P1.Thm6b.rate", "P1.Thm7a.eta0_zero",
    "P1.Thm7a.eta0_eta1", "P1.Thm7b.rate", "P1.Thm8.grad", "P1.Thm9.pl", "P1.Thm10.rate", "P1.Thm10.eta.printed",
    "P1.Thm10.eta.corrected", "P1.Rem7.buffer_rate", "P1.Rem8.huai", "P1.Rem8.xue", "P1.Rem9.alg5", "P1.Rem9.p0",
}
ETAS = [0.3, 0.2, 0.1]


# ----------------------------------------------------------------------------- registry metadata

def test_all_p1_keys_registered():
    assert {k for k, b in _REGISTRY.items() if b.paper == "P1"} == P1_KEYS


@pytest.mark.parametrize("key", sorted(P1_KEYS))
def test_metadata(key):
    b = _REGISTRY[key]
    assert key.startswith("P1.")
    assert b.tag in TAGS and b.quantity in QUANTITIES
    assert b.func.__doc__ and "P1" in b.func.__doc__ and b.description
    assert b.sweep and b.assumptions and b.reading
    assert b.variant in ("printed", "corrected", "")
    if b.variant == "corrected":
        assert "P1-E" in b.reading
    if b.tag == "RATE":
        assert b.rate
        for v in b.rate.values():
            value = v(L=1.0, mu=0.5) if callable(v) else v
            assert isinstance(value, float) and -1.5 <= value <= 1
    if b.tag == "EXPLICIT-DD":
        assert b.measured


def test_thm3_exponents_depend_on_L_mu():
    rate = _REGISTRY["P1.Thm3.rate"].rate
    assert rate["n"](L=1.0, mu=1.0) == approx(-3 / 5)
    assert rate["n"](L=1.0, mu=1e-9) == pytest.approx(-1 / 2, rel=1e-6)
    assert rate["mu"](L=1.0, mu=1.0) == approx(-4 / 5)
    assert p1.thm3_exponents(L=2.0, mu=0.5)["n"] == approx(-(4 + 0.5) / (8 + 0.5))


# ----------------------------------------------------------------------------- Lemma 1, Thm 4, Thm 5

def test_lemma1():
    assert p1.lem1_gen(eps_stab=0.3) == approx(0.6)


def test_thm4():
    assert p1.thm4_uas(t=100, n=50, eta=0.1, G=1.0) == approx(
        2 * math.sqrt(math.e) * 1.0 * 0.1 * (math.sqrt(5 * 100) + 2 * 100 / 50))
    assert p1.thm4_gen(t=100, n=50, eta=0.1, G=1.5) == approx(
        4 * math.sqrt(math.e) * 1.5 ** 2 * 0.1 * (math.sqrt(5 * 100) + 2 * 100 / 50))


def test_thm5_constant_and_array():
    assert p1.thm5_uas(n=50, G=1.5, eta=0.1, t=100) == approx(4 * 1.5 / 50 * 0.1 * 100)
    assert p1.thm5_uas(n=50, G=1.5, etas=ETAS) == approx(4 * 1.5 / 50 * 0.6)
    assert p1.thm5_gen(n=50, G=1.5, etas=ETAS) == approx(8 * 1.5 ** 2 / 50 * 0.6)
    assert p1.thm5_gen(n=50, G=1.5, eta=0.1, t=100) == approx(8 * 1.5 ** 2 / 50 * 0.1 * 100)


def test_gen_is_twice_G_times_uas():
    """Lemma 1 with uniform stability G * UAS gives exactly the printed generalization bounds."""
    t = np.array([1.0, 10.0, 1e4])
    np.testing.assert_allclose(p1.thm4_gen(t=t, n=50, eta=0.1, G=1.5), 2 * 1.5 * p1.thm4_uas(t=t, n=50, eta=0.1, G=1.5))
    np.testing.assert_allclose(p1.thm5_gen(n=50, G=1.5, eta=0.1, t=t), 2 * 1.5 * p1.thm5_uas(n=50, G=1.5, eta=0.1, t=t))


# ----------------------------------------------------------------------------- Theorems 6, 7 (step-size sums)

def test_thm6a_array():
    s2 = 0.09 + 0.04 + 0.01
    assert p1.thm6a_eta0_zero(dist_sq=2.0, G=1.5, etas=ETAS) == approx(
        (2.0 + 1.5 ** 2 * (2 * (0 * 0.3 + 0.3 * 0.2 + 0.2 * 0.1) + s2)) / (2 * 0.6))
    assert p1.thm6a_eta0_eta1(dist_sq=2.0, G=1.5, etas=ETAS) == approx(
        (2.0 + 1.5 ** 2 * (2 * (0.3 * 0.3 + 0.3 * 0.2 + 0.2 * 0.1) + s2)) / (2 * 0.6))


def test_thm6a_constant():
    assert p1.thm6a_eta0_zero(dist_sq=2.0, G=1.5, eta=0.1, t=10) == approx(
        (2.0 + 1.5 ** 2 * (2 * 9 * 0.01 + 10 * 0.01)) / (2 * 10 * 0.1))
    # eta_0 = eta: the closed form of errata P1-E3 ||w_0 - w||^2/(2 t eta) + 3 G^2 eta / 2
    assert p1.thm6a_eta0_eta1(dist_sq=2.0, G=1.5, eta=0.1, t=10) == approx(2.0 / (2 * 10 * 0.1) + 3 * 1.5 ** 2 * 0.1 / 2)


def test_thm6a_eta0_variants_differ_by_G2_eta1_sq_over_sum():
    diff = p1.thm6a_eta0_eta1(dist_sq=2.0, G=1.5, etas=ETAS) - p1.thm6a_eta0_zero(dist_sq=2.0, G=1.5, etas=ETAS)
    assert diff == approx(1.5 ** 2 * 0.3 * 0.3 / 0.6)


def test_constant_eta_equals_array_of_equal_steps():
    t = 7
    for f in (p1.thm6a_eta0_zero, p1.thm6a_eta0_eta1):
        assert f(dist_sq=1.0, G=2.0, eta=0.05, t=t) == approx(f(dist_sq=1.0, G=2.0, etas=[0.05] * t))
    assert p1.thm7a_eta0_eta1(dist_sq=1.0, G=2.0, B=1.0, delta=0.1, eta=0.05, t=t) == approx(
        p1.thm7a_eta0_eta1(dist_sq=1.0, G=2.0, B=1.0, delta=0.1, etas=[0.05] * t))


def test_etas_last_axis_is_j():
    etas = np.array([ETAS, [0.1, 0.1, 0.1]])
    out = p1.thm5_uas(n=50, G=1.0, etas=etas)
    np.testing.assert_allclose(out, [4 / 50 * 0.6, 4 / 50 * 0.3])


def test_thm7a():
    s2, cross0 = 0.09 + 0.04 + 0.01, 0.3 * 0.2 + 0.2 * 0.1
    hp = 2 * 0.9 * math.sqrt(2 * s2 * math.log(2 / 0.05))
    kw = dict(dist_sq=2.0, G=1.5, B=0.9, delta=0.05, etas=ETAS)
    assert p1.thm7a_eta0_zero(**kw) == approx((hp + 0.5 * 2.0 + 1.5 ** 2 * (cross0 + s2 / 2)) / 0.6)
    assert p1.thm7a_eta0_eta1(**kw) == approx((hp + 0.5 * 2.0 + 1.5 ** 2 * (cross0 + 0.09 + s2 / 2)) / 0.6)


def test_strongly_convex_rates():
    assert p1.thm6b_rate(t=100, G=1.5, alpha=0.2) == approx(1.5 ** 2 / (0.2 * 100))
    assert p1.thm7b_rate(t=100, G=1.5, alpha=0.2, delta=0.05) == approx(1.5 ** 2 * math.log(1 / 0.05) / (0.2 * 100))


# ----------------------------------------------------------------------------- Theorems 8, 9

def test_thm8():
    assert p1.thm8_grad(t=100, eta=0.05, L=2.0, FS_w0=0.7, alpha0=1.3) == approx(
        0.7 / (100 * 0.05) + 8 * 2.0 * 0.05 * 1.3 ** 2)


def test_thm9():
    assert p1.thm9_pl(t=100, L=2.0, mu=0.5, alpha0=1.3) == approx(
        32 * 2.0 * 1.3 ** 2 / 0.5 ** 2 * (1 / 101 + math.log(math.e * 100) / (0.5 * 100 * 101)))


# ----------------------------------------------------------------------------- Theorems 1-3 rates

def test_thm1_rate():
    # default schedule n = 100: T = 10^4, eta = T^{-3/4} = 10^{-3}
    assert p1.thm1_rate(n=100) == approx(100 * 0.001 + 1e4 * 0.001 / 100 + (1 + 1e4 * 1e-6) / (1e4 * 0.001))
    assert p1.thm1_rate(n=50, T=200, eta=0.1) == approx(
        math.sqrt(200) * 0.1 + 200 * 0.1 / 50 + (1 + 200 * 0.01) / (200 * 0.1))


def test_thm2_rate():
    assert p1.thm2_rate(n=100) == approx(100 * 0.1 / 100 + (1 + 100 * 0.01) / (100 * 0.1))
    assert p1.thm2_rate(n=50, T=200, eta=0.1) == approx(200 * 0.1 / 50 + (1 + 200 * 0.01) / (200 * 0.1))


def test_thm3_rate():
    T = 1000 ** (2.5 / 4.5) * 0.5 ** (-5 / 4.5)
    expected = T ** (2 / 2.5) / 1000 + 1 / (T * 0.5 ** 2)
    assert p1.thm3_rate(n=1000, L=1.0, mu=0.5) == approx(expected)
    # with the tuned T both terms are equal: 2 n^{-(2L+mu)/(4L+mu)} mu^{-4L/(4L+mu)}
    assert p1.thm3_rate(n=1000, L=1.0, mu=0.5) == approx(2 * 1000 ** (-2.5 / 4.5) * 0.5 ** (-4 / 4.5))
    assert p1.thm3_rate(n=1000, L=1.0, mu=0.5, T=300) == approx(300 ** 0.8 / 1000 + 1 / (300 * 0.25))


@pytest.mark.parametrize("key,fixed", [("P1.Thm1.rate", {}), ("P1.Thm2.rate", {}),
                                       ("P1.Thm3.rate", dict(L=1.0, mu=0.5))])
def test_rate_slope_matches_exponent(key, fixed):
    b = _REGISTRY[key]
    n = np.array([1e6, 1e8])
    y = b(n=n, **fixed)
    exponent = b.rate["n"](**fixed) if callable(b.rate["n"]) else b.rate["n"]
    assert np.log(y[1] / y[0]) / np.log(n[1] / n[0]) == pytest.approx(exponent, abs=1e-3)


def test_rem7():
    assert p1.rem7_buffer_rate(t=100, s=4) == approx(math.sqrt(4 / 100))


# ----------------------------------------------------------------------------- Theorem 10, Remarks 8/9

def test_thm10_rate():
    assert p1.thm10_rate(n=1000, d=10, eps=0.8, delta=1e-3, G=1.5, D=2.0) == approx(
        1.5 * 2.0 * (1 / math.sqrt(1000) + math.sqrt(10) * math.log(1 / 1e-3) ** 1.5 / (0.8 * 1000)))


def test_thm10_eta_private_branch():
    private = 0.8 / (12 * math.log(4 / 1e-3) * math.sqrt(2 * 10 * math.log(2.5 / 1e-3)))
    kw = dict(n=1000, d=10, G=1.5, D=2.0, eps=0.8, delta=1e-3)
    assert p1.thm10_eta_printed(**kw) == approx(2.0 / 1.5 * min(math.log(4 / 1e-3) / math.sqrt(1000), private))
    assert p1.thm10_eta_corrected(**kw) == approx(
        2.0 / 1.5 * min(1 / (math.sqrt(1000) * math.log(4 / 1e-3)), private))


def test_thm10_eta_nonprivate_branch_differs_by_log_squared():
    """Where the first argument is active, printed / corrected = log^2(4/delta) (P1-E7)."""
    kw = dict(n=1000, d=10, G=1.5, D=2.0, eps=1000.0, delta=1e-3)
    assert p1.thm10_eta_printed(**kw) == approx(2.0 / 1.5 * math.log(4 / 1e-3) / math.sqrt(1000))
    assert p1.thm10_eta_corrected(**kw) == approx(2.0 / 1.5 / (math.sqrt(1000) * math.log(4 / 1e-3)))
    assert p1.thm10_eta_printed(**kw) / p1.thm10_eta_corrected(**kw) == approx(math.log(4 / 1e-3) ** 2)


def test_remarks_8_9():
    kw = dict(n=1000, d=10, eps=0.8, delta=1e-3)
    huai = math.sqrt(10 * math.log(1 / 1e-3)) * math.log(1000 / 1e-3) / (math.sqrt(1000) * 0.8)
    optimal = 1 / math.sqrt(1000) + math.sqrt(10 * math.log(1 / 1e-3)) / (0.8 * 1000)
    assert p1.rem8_huai(**kw) == approx(huai)
    assert p1.rem9_p0(**kw) == approx(huai)
    assert p1.rem8_xue(**kw) == approx(optimal)
    assert p1.rem9_alg5(**kw) == approx(optimal)


# ----------------------------------------------------------------------------- validation

@pytest.mark.parametrize("func,kwargs,bad", [
    (p1.thm4_uas, dict(t=10, n=0.5, eta=0.1, G=1.0), "n"),
    (p1.thm4_gen, dict(t=10, n=5, eta=0.0, G=1.0), "eta"),
    (p1.thm5_uas, dict(n=5, G=1.0, etas=[0.1, -0.1]), "etas"),
    (p1.thm5_gen, dict(n=5, G=1.0, eta=0.1, t=0), "t"),
    (p1.thm6a_eta0_zero, dict(dist_sq=-1.0, G=1.0, eta=0.1, t=5), "dist_sq"),
    (p1.thm7a_eta0_zero, dict(dist_sq=1.0, G=1.0, B=1.0, delta=1.0, eta=0.1, t=5), "delta"),
    (p1.thm6b_rate, dict(t=10, G=1.0, alpha=0.0), "alpha"),
    (p1.thm9_pl, dict(t=10, L=1.0, mu=0.0, alpha0=1.0), "mu"),
    (p1.thm8_grad, dict(t=10, eta=0.1, L=-1.0, FS_w0=1.0, alpha0=1.0), "L"),
    (p1.thm10_eta_printed, dict(n=100, d=2, G=1.0, D=1.0, eps=-1.0, delta=0.1), "eps"),
    (p1.thm10_eta_corrected, dict(n=100, d=2, G=0.0, D=1.0, eps=1.0, delta=0.1), "G"),
    (p1.rem8_huai, dict(n=100, d=2, eps=1.0, delta=0.0), "delta"),
    (p1.lem1_gen, dict(eps_stab=-0.1), "eps_stab"),
])
def test_bad_input_raises_with_argument_name(func, kwargs, bad):
    with pytest.raises(ValueError, match=rf"^{bad}=.* must be"):
        func(**kwargs)


@pytest.mark.parametrize("kwargs", [dict(), dict(eta=0.1), dict(t=5), dict(eta=0.1, t=5, etas=[0.1]),
                                    dict(etas=[])])
def test_step_size_convention_errors(kwargs):
    with pytest.raises(ValueError, match="eta"):
        p1.thm5_uas(n=10, G=1.0, **kwargs)
