"""P0 bound registry: every formula against a hand computation, registry metadata, variants, validation."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stabsim.theory import p0
from stabsim.theory.registry import QUANTITIES, TAGS, _REGISTRY

approx = lambda x: pytest.approx(x, rel=1e-12)  # noqa: E731

P0_KEYS = {
    "P0.Thm1.iterate_sq.printed", "P0.Thm1.iterate_sq.corrected", "P0.Thm1.iterate.printed",
    "P0.Thm1.iterate.corrected", "P0.Eq9.avg_sq.printed", "P0.Eq9.avg_sq.corrected", "P0.Eq9.avg_sq.proof",
    "P0.Eq9.avg.printed", "P0.Eq9.avg.corrected", "P0.Eq9.avg.proof", "P0.Thm4.sigma2.printed",
    "P0.Thm4.sigma2.corrected", "P0.Thm2.excess.printed", "P0.Thm2.excess.corrected", "P0.Thm2.rate",
    "P0.Thm3.excess.printed", "P0.Thm3.excess.corrected", "P0.Thm3.rate", "P0.Thm5.excess.printed",
    "P0.Thm5.excess.corrected", "P0.Thm5.rate.printed", "P0.Thm5.rate.corrected", "P0.Lem4.rademacher_linear",
    "P0.Lem4.rademacher_auc_hinge.printed", "P0.Lem4.rademacher_auc_hinge.corrected", "P0.Lem5.rademacher_nuclear",
    "P0.ThmA6.gen.printed", "P0.ThmA6.gen.corrected", "P0.CorA6.gen.printed", "P0.CorA6.gen.corrected",
    "P0.ThmA7.hoeffding", "P0.ThmA8.opt", "P0.LemA9.regret", "P0.LemA10.iterate_norm_sq",
    "P0.LemA12.utility_loss.printed", "P0.LemA12.utility_loss.corrected", "P0.Cor1.rate", "P0.Cor2.rate.printed",
    "P0.Cor2.rate.corrected", "P0.Cor3.rate.printed", "P0.Cor3.rate.corrected", "P0.Cor4.rate.printed",
    "P0.Cor4.rate.corrected",
}


def _p0_bounds():
    return {k: b for k, b in _REGISTRY.items() if b.paper == "P0"}


# ----------------------------------------------------------------------------- registry metadata

def test_all_p0_keys_registered():
    assert set(_p0_bounds()) == P0_KEYS


@pytest.mark.parametrize("key", sorted(P0_KEYS))
def test_metadata(key):
    b = _REGISTRY[key]
    assert key.startswith("P0.")
    assert b.tag in TAGS and b.quantity in QUANTITIES
    assert b.func.__doc__ and "P0" in b.func.__doc__ and b.description
    assert b.sweep and b.assumptions and b.reading
    assert b.variant in ("printed", "corrected", "")
    if key.endswith(".printed"):
        assert b.variant == "printed" and b.reading.startswith("as printed")
    if key.endswith((".corrected", ".proof")):
        assert b.variant == "corrected" and ("P0-E" in b.reading or "errata" in b.reading)
    if b.tag == "RATE":
        assert b.rate and all(isinstance(v, float) for v in b.rate.values())
    if b.tag == "EXPLICIT-DD":
        assert b.measured


# ----------------------------------------------------------------------------- Theorem 1, Eq. (9)

def test_thm1_iterate_printed():
    y = math.log(1 / 0.05)
    c = math.log(math.e * 100) * (100 / 50 + y + math.sqrt(100 * y / 50))
    expected = 4 * math.e * 0.1 ** 2 * 1.5 ** 2 * (100 + c ** 2)
    assert p0.thm1_iterate_sq_printed(t=100, n=50, eta=0.1, G=1.5, gamma=0.05) == approx(expected)
    assert p0.thm1_iterate_printed(t=100, n=50, eta=0.1, G=1.5, gamma=0.05) == approx(math.sqrt(expected))


def test_thm1_iterate_corrected():
    y = math.log(1 / 0.05)
    c = math.log(math.e * 100) * (101 / 50 + y + math.sqrt(2 * 101 * y / 50))
    expected = 4 * math.e * 0.1 ** 2 * 1.5 ** 2 * (100 + c ** 2)
    assert p0.thm1_iterate_sq_corrected(t=100, n=50, eta=0.1, G=1.5, gamma=0.05) == approx(expected)
    assert p0.thm1_iterate_corrected(t=100, n=50, eta=0.1, G=1.5, gamma=0.05) == approx(math.sqrt(expected))


def test_eq9_squared_forms():
    kw = dict(T=200, n=50, eta=0.1, G=1.5, gamma=0.05)
    tail = 200 ** 2 * math.log(math.e * 200) ** 2 * math.log(20) ** 2 / 50 ** 2
    assert p0.eq9_avg_sq_printed(**kw) == approx(4 * math.e * 0.01 * 2.25 * (200 + 3 * tail))
    assert p0.eq9_avg_sq_corrected(**kw) == approx(4 * math.e * 0.01 * 2.25 * (200 + 9 * tail))
    y = math.log(20)
    proof = 4 * math.e * 0.01 * 2.25 * (200 + (math.log(math.e * 200) * (200 / 50 + y + math.sqrt(2 * 200 * y / 50))) ** 2)
    assert p0.eq9_avg_sq_proof(**kw) == approx(proof)
    assert p0.eq9_avg_proof(**kw) == approx(math.sqrt(proof))


def test_eq9_distance_forms():
    kw = dict(T=200, n=50, eta=0.1, G=1.5, gamma=0.05)
    lin = 200 * math.log(math.e * 200) * math.log(20) / 50
    assert p0.eq9_avg_printed(**kw) == approx(2 * math.sqrt(math.e) * 0.1 * 1.5 * (math.sqrt(200) + math.sqrt(3) * lin))
    assert p0.eq9_avg_corrected(**kw) == approx(2 * math.sqrt(math.e) * 0.1 * 1.5 * (math.sqrt(200) + 3 * lin))


def test_eq9_printed_vs_corrected_factor_3():
    """Printed and corrected (9) differ only in the constant of the T^2 term: 3 vs 9 (P0-E4)."""
    T = np.array([50.0, 200.0, 5000.0])
    kw = dict(T=T, n=50, eta=0.1, G=1.5, gamma=0.01)
    base = 4 * math.e * 0.01 * 2.25 * T
    ratio = (p0.eq9_avg_sq_corrected(**kw) - base) / (p0.eq9_avg_sq_printed(**kw) - base)
    np.testing.assert_allclose(ratio, 3.0, rtol=1e-12)
    root = 2 * math.sqrt(math.e) * 0.1 * 1.5 * np.sqrt(T)
    np.testing.assert_allclose((p0.eq9_avg_corrected(**kw) - root) / (p0.eq9_avg_printed(**kw) - root),
                               math.sqrt(3), rtol=1e-12)


def test_eq9_printed_constant_3_fails_near_T_eq_n():
    """errata P0-E4: at T = n, gamma = e^-3 the printed (9) is below Thm 1's own bound at t = T."""
    kw = dict(n=100, eta=0.1, G=1.0, gamma=math.exp(-3))
    assert p0.eq9_avg_sq_printed(T=100, **kw) < p0.thm1_iterate_sq_printed(t=100, **kw)


@settings(max_examples=200, deadline=None)
@given(x=st.floats(1.0, 1e3), y=st.floats(1.0, 50.0))
def test_constant_9_covers_papers_chernoff_step(x, y):
    """(x + y + sqrt(xy))^2 <= 9 x^2 y^2 for x = T/n >= 1, y = ln(1/gamma) >= 1 (P0-E4)."""
    assert (x + y + math.sqrt(x * y)) ** 2 <= 9 * x ** 2 * y ** 2 * (1 + 1e-12)


def test_constant_9_does_not_cover_corrected_chernoff_step():
    """With Lemma 1's sqrt(2 mu a), x = y = 1 needs (2 + sqrt 2)^2 > 9: constant 9 is then not proven."""
    kw = dict(T=100, n=100, eta=0.1, G=1.0, gamma=1 / math.e)
    assert p0.eq9_avg_sq_proof(**kw) > p0.eq9_avg_sq_corrected(**kw)


@settings(max_examples=100, deadline=None)
@given(T=st.floats(1.0, 1e6), n=st.floats(1.0, 1e4), gamma=st.floats(1e-6, 0.999))
def test_distance_form_dominates_root_of_squared_form(T, n, gamma):
    kw = dict(T=T, n=n, eta=0.1, G=1.5, gamma=gamma)
    assert p0.eq9_avg_printed(**kw) >= np.sqrt(p0.eq9_avg_sq_printed(**kw)) * (1 - 1e-12)


# ----------------------------------------------------------------------------- Theorem 4 / Eq. (5)

def test_sigma2_printed():
    expected = (8 * 0.1 ** 2 * 1.5 ** 2 * math.log(2.5 / 1e-3) / 0.8 ** 2
                * (200 + 3 * 200 ** 2 * math.log(math.e * 200) ** 2 * math.log(2 / 1e-3) ** 2 / 50 ** 2))
    assert p0.thm4_sigma2_printed(T=200, n=50, eta=0.1, G=1.5, eps=0.8, delta=1e-3) == approx(expected)


def test_sigma2_corrected_is_e_times_printed():
    kw = dict(T=np.array([10.0, 1e4, 1e6]), n=1000, eta=1000 ** -1.5, G=1.0, eps=np.array([0.5, 1.0, 2.0]),
              delta=1e-5)
    np.testing.assert_allclose(p0.thm4_sigma2_corrected(**kw) / p0.thm4_sigma2_printed(**kw), math.e, rtol=1e-12)


def test_sigma_errata_practical_warning():
    """errata P0-E2 example: n = 1000, delta = 1e-5, eps = 1, G = 1, T = n^2, eta = n^-1.5 -> sigma ~ 99 / 163."""
    kw = dict(T=1000 ** 2, n=1000, eta=1000 ** -1.5, G=1.0, eps=1.0, delta=1e-5)
    assert math.sqrt(p0.thm4_sigma2_printed(**kw)) == pytest.approx(99, abs=1)
    assert math.sqrt(p0.thm4_sigma2_corrected(**kw)) == pytest.approx(163, abs=1)


# ----------------------------------------------------------------------------- appendix results

def test_thmA6_printed_and_corrected():
    common = 48 * math.sqrt(6) * math.e * 1.5 * 0.02 * math.ceil(math.log(50)) * math.log(math.e / 0.05) \
        + 12 * math.sqrt(2) * math.e * (0.7 + 1.5 * 1.2) * math.sqrt(math.log(math.e / 0.05) / 50)
    kw = dict(eps_stab=0.02, n=50, G=1.5, M=0.7, B=1.2, gamma=0.05)
    assert p0.thmA6_gen_printed(**kw) == approx(4 * 0.02 + common)
    assert p0.thmA6_gen_corrected(**kw) == approx(4 * 1.5 * 0.02 + common)


def test_corA6_printed():
    expected = (2 * math.sqrt(math.e) * 0.1 * 1.5
                * (4 + 48 * math.sqrt(6) * math.e * 1.5 * math.ceil(math.log(50)) * math.log(2 * math.e / 0.05))
                * (math.sqrt(200) + math.sqrt(3 * 200 * math.log(math.e * 200) * math.log(2 / 0.05)) / 50)
                + 12 * math.sqrt(2) * math.e * (0.7 + 1.5 * 1.2) * math.sqrt(math.log(2 * math.e / 0.05) / 50))
    assert p0.corA6_gen_printed(T=200, n=50, eta=0.1, G=1.5, M=0.7, B_T=1.2, gamma=0.05) == approx(expected)


def test_corA6_corrected():
    expected = (2 * math.sqrt(math.e) * 0.1 * 1.5
                * (4 + 48 * math.sqrt(6) * math.e * 1.5 * 4 * math.log(2 * math.e / 0.05))
                * (math.sqrt(200) + math.sqrt(3) * 200 * math.log(math.e * 200) * math.log(2 / 0.05) / 50)
                + 12 * math.sqrt(2) * math.e * (0.7 + 1.5 * 1.2) * math.sqrt(math.log(2 * math.e / 0.05) / 50))
    assert p0.corA6_gen_corrected(T=200, n=50, eta=0.1, G=1.5, M=0.7, B_T=1.2, gamma=0.05) == approx(expected)


def test_thmA7():
    assert p0.thmA7_hoeffding(n=50, G=1.5, M=0.7, B=1.2, gamma=0.05) == approx(
        (0.7 + 1.5 * 1.2) * math.sqrt(math.log(1 / 0.05) / 50))


def test_thmA8():
    expected = (2 * 0.2 + 2 * 0.1 + 1.2 ** 2 / (2 * 200 * 0.1) + 0.1 * 1.5 ** 2 / 2
                + (6 * 0.7 + 3 * 1.5 * 1.2) * math.sqrt(math.log(2 * 200 / 0.05) / 200)
                + 3 * 1.5 * 2.5 * math.sqrt(math.log(2 * 200 / 0.05) / 200))
    assert p0.thmA8_opt(T=200, eta=0.1, G=1.5, M=0.7, B=1.2, B_T=2.5, gamma=0.05, rad_avg_Wt=0.2,
                        rad_avg_WB=0.1) == approx(expected)


def test_lemA9_regret():
    assert p0.lemA9_regret(T=200, eta=0.1, B=1.2, G=1.5) == approx(1.44 / 40 + 0.1125)


def test_lemA10_iterate_norm():
    assert p0.lemA10_iterate_norm_sq(t=100, eta=0.1, G=1.5, M=0.7) == approx((2.25 + 1.4) * 0.1 * 100)


def test_lemA12_printed_and_proof():
    assert p0.lemA12_utility_loss_printed(G=1.5, sigma=0.3, d=10, gamma=0.05) == approx(
        2 * 1.5 * 0.3 * math.sqrt(10) * math.log(20) ** 0.25)
    assert p0.lemA12_utility_loss_corrected(G=1.5, sigma=0.3, d=10, gamma=0.05) == approx(
        1.5 * 0.3 * math.sqrt(10) * (1 + (8 * math.log(20) / 10) ** 0.25))


def test_lemA12_printed_below_proof_for_large_gamma():
    """P0-E10: ln(1/gamma) < 1 makes the printed form smaller than the proof's bound."""
    kw = dict(G=1.0, sigma=1.0, d=100, gamma=0.9)
    assert p0.lemA12_utility_loss_printed(**kw) < p0.lemA12_utility_loss_corrected(**kw)


def test_lemma4_rademacher():
    assert p0.lem4_rademacher_linear(t=100, D=2.0, kappa=0.8) == approx(2 * 2.0 * 0.8 / 10)
    assert p0.lem4_rademacher_auc_hinge_printed(t=100, D=2.0, kappa=0.8, G=1.5) == approx(4 * 1.5 * 2.0 * 0.8 / 10)
    assert p0.lem4_rademacher_auc_hinge_corrected(t=100, D=2.0, kappa=0.8) == approx(4 * 2.0 * 0.8 / 10)


def test_lemma4_hinge_printed_over_corrected_is_G():
    t = np.array([1.0, 10.0, 1000.0])
    np.testing.assert_allclose(p0.lem4_rademacher_auc_hinge_printed(t=t, D=2.0, kappa=0.8, G=1.7)
                               / p0.lem4_rademacher_auc_hinge_corrected(t=t, D=2.0, kappa=0.8), 1.7, rtol=1e-12)


def test_lemma5_rate():
    assert p0.lem5_rademacher_nuclear(t=100, D=2.0, chi=2.0, d=10) == approx(
        2.0 * math.sqrt(2.0) * math.sqrt(math.log(10)) / 10)


# ----------------------------------------------------------------------------- Theorems 2, 3, 5

def test_thm2_printed_and_corrected():
    c1 = 100 * math.sqrt(6) * math.e ** 1.5 * 1.5 * 1.5 * math.log(6 * math.e / 0.05)
    c2 = (6 + 19 * math.e) * (0.7 + 1.5 * 2.0)
    head = (4 * 0.3 + 2.0 ** 2 / (2 * 200 * 0.1) + 0.1 * 1.5 ** 2 / 2
            + c2 * math.sqrt(math.log(6 * 200 / 0.05) / 50))
    lnT, lg = math.log(math.e * 200), math.log(6 / 0.05)
    kw = dict(T=200, n=50, eta=0.1, G=1.5, M=0.7, D=2.0, gamma=0.05, rad_avg=0.3)
    assert p0.thm2_excess_printed(**kw) == approx(
        head + c1 * 0.1 * math.ceil(math.log(50)) * (math.sqrt(200) + math.sqrt(3 * 200 * lnT * lg) / 50))
    assert p0.thm2_excess_corrected(**kw) == approx(
        head + c1 * 0.1 * math.ceil(math.log(50)) * (math.sqrt(200) + math.sqrt(3) * 200 * lnT * lg / 50))


def test_thm3_printed_and_corrected():
    c1 = 100 * math.sqrt(6) * math.e ** 1.5 * 1.5 * 1.5 * math.log(6 * math.e / 0.05)
    c3 = (7 + 12 * math.sqrt(2) * math.e) * 0.7 + 4 * 1.5 * 2.0 + 16 * math.e * 1.5
    c4 = 3 * 1.5 * math.sqrt(1.5 ** 2 + 2 * 0.7)
    c5 = 12 * math.sqrt(2) * math.e * 1.5 * math.sqrt(1.5 ** 2 + 2 * 0.7)
    head = (2 * (0.2 + 0.1) + 2.0 ** 2 / (2 * 200 * 0.1) + 0.1 * 1.5 ** 2 / 2
            + c4 * math.sqrt(0.1 * math.log(6 * 200 / 0.05))
            + c5 * math.sqrt(0.1 * 200 * math.log(6 * math.e / 0.05) / 50)
            + c3 * math.sqrt(math.log(6 * 200 / 0.05) / 50))
    lnT = math.log(math.e * 200)
    kw = dict(T=200, n=50, eta=0.1, G=1.5, M=0.7, D=2.0, gamma=0.05, rad_avg_Wt=0.2, rad_avg_WD=0.1)
    assert p0.thm3_excess_printed(**kw) == approx(
        head + c1 * 0.1 * 4 * (math.sqrt(200) + 4 * 200 * lnT * math.sqrt(math.log(6 * 50 / 0.05)) / 50))
    assert p0.thm3_excess_corrected(**kw) == approx(
        head + c1 * 0.1 * 4 * (math.sqrt(200) + math.sqrt(3) * 200 * lnT * math.log(6 / 0.05) / 50))


def test_thm5_printed_and_corrected():
    # G = 0.5 exercises max{1, G} = 1 in c_1
    c1 = 100 * math.sqrt(6) * math.e ** 1.5 * 0.5 * 1.0 * math.log(6 * math.e / 0.05)
    c2 = (6 + 19 * math.e) * (0.7 + 0.5 * 2.0)
    head = (4 * 0.3 + 2.0 ** 2 / (2 * 200 * 0.1) + 0.1 * 0.5 ** 2 / 2
            + c2 * math.sqrt(math.log(6 * 200 / 0.05) / 50)
            + 2 * 0.5 * 0.3 * math.sqrt(10) * math.log(4 / 0.05) ** 0.25)
    lnT, ld = math.log(math.e * 200), math.log(2 / 0.01)
    kw = dict(T=200, n=50, eta=0.1, G=0.5, M=0.7, D=2.0, gamma=0.05, delta=0.01, sigma=0.3, d=10, rad_avg=0.3)
    assert p0.thm5_excess_printed(**kw) == approx(
        head + c1 * 0.1 * 4 * (math.sqrt(200) + math.sqrt(3 * 200) * lnT * ld / 50))
    assert p0.thm5_excess_corrected(**kw) == approx(
        head + c1 * 0.1 * 4 * (math.sqrt(200) + math.sqrt(3) * 200 * lnT * ld / 50))


def test_corrected_stability_term_exceeds_printed_at_T_n2():
    """P0-E3: at n = 1000, T = n^2 the T-linear term is orders of magnitude larger."""
    kw = dict(T=1000 ** 2, n=1000, eta=1000 ** -1.5, G=1.0, M=1.0, D=2.0, gamma=0.05, rad_avg=0.0)
    assert p0.thm2_excess_corrected(**kw) > 100 * p0.thm2_excess_printed(**kw)


# ----------------------------------------------------------------------------- RATE claims

def test_rates():
    assert p0.thm2_rate(n=1000) == approx(math.log(1000) ** 2 / math.sqrt(1000))
    assert p0.thm3_rate(n=1000) == approx(math.log(1000) ** 2 / 1000 ** (1 / 3))
    assert p0.thm5_rate_printed(n=1000, eps=0.8, d=10) == approx(math.sqrt(10) / math.sqrt(1000 * 0.8))
    assert p0.thm5_rate_corrected(n=1000, eps=0.8, d=10) == approx(math.sqrt(10) / (math.sqrt(1000) * 0.8))
    assert p0.cor1_rate(n=1000, kappa=0.8) == approx(math.sqrt(0.8 / 1000))
    assert p0.cor2_rate_printed(n=1000, eps=0.8, d=10, kappa=0.8) == approx(math.sqrt(0.8 * 10) / math.sqrt(800))
    assert p0.cor2_rate_corrected(n=1000, eps=0.8, d=10, kappa=0.8) == approx(
        math.sqrt(0.8 * 10) / (math.sqrt(1000) * 0.8))
    assert p0.cor3_rate_printed(n=1000, chi=2.0, d=10) == approx(math.sqrt(2.0 * math.log(10)) / 1000)
    assert p0.cor3_rate_corrected(n=1000, chi=2.0, d=10) == approx(
        1 / math.sqrt(1000) + math.sqrt(2.0 * math.log(10)) / 1000)
    assert p0.cor4_rate_printed(n=1000, eps=0.8, chi=2.0, d=10) == approx(
        math.sqrt(2.0 * 10 * math.log(10)) / math.sqrt(800))
    assert p0.cor4_rate_corrected(n=1000, eps=0.8, chi=2.0, d=10) == approx(
        math.sqrt(2.0 * 10 * math.log(10)) / (math.sqrt(1000) * 0.8))


@pytest.mark.parametrize("key,fixed", [
    ("P0.Thm5.rate.corrected", dict(eps=1.0, d=10)), ("P0.Cor2.rate.printed", dict(eps=1.0, d=10, kappa=1.0)),
    ("P0.Cor3.rate.printed", dict(chi=1.0, d=10)), ("P0.Cor1.rate", dict(kappa=1.0)),
])
def test_rate_exponent_in_n_matches_function(key, fixed):
    b = _REGISTRY[key]
    n = np.array([1e4, 1e6])
    y = b(n=n, **fixed)
    assert np.log(y[1] / y[0]) / np.log(n[1] / n[0]) == pytest.approx(b.rate["n"], rel=1e-9)


# ----------------------------------------------------------------------------- broadcasting, validation

def test_broadcasting_returns_float_arrays():
    out = p0.thm1_iterate_sq_corrected(t=np.arange(1, 11)[:, None], n=np.array([10, 100]), eta=0.1, G=1.0,
                                       gamma=0.05)
    assert out.shape == (10, 2) and out.dtype == float
    assert np.all(np.diff(out, axis=0) > 0)
    assert isinstance(p0.lemA9_regret(T=10, eta=0.1, B=1, G=1), np.ndarray)


@pytest.mark.parametrize("func,kwargs,bad", [
    (p0.thm1_iterate_sq_printed, dict(t=10, n=0, eta=0.1, G=1, gamma=0.1), "n"),
    (p0.thm1_iterate_sq_corrected, dict(t=10, n=10, eta=0.1, G=1, gamma=1.5), "gamma"),
    (p0.thm1_iterate_printed, dict(t=0, n=10, eta=0.1, G=1, gamma=0.1), "t"),
    (p0.eq9_avg_printed, dict(T=10, n=10, eta=-0.1, G=1, gamma=0.1), "eta"),
    (p0.eq9_avg_sq_proof, dict(T=10, n=10, eta=0.1, G=1, gamma=0.0), "gamma"),
    (p0.thm4_sigma2_printed, dict(T=10, n=10, eta=0.1, G=1, eps=0.0, delta=0.1), "eps"),
    (p0.thm4_sigma2_corrected, dict(T=10, n=10, eta=0.1, G=1, eps=1.0, delta=1.0), "delta"),
    (p0.thm5_excess_corrected, dict(T=10, n=10, eta=0.1, G=1, M=0, D=1, gamma=0.5, delta=-0.1, sigma=1, d=2,
                                    rad_avg=0.1), "delta"),
    (p0.thm5_excess_printed, dict(T=10, n=10, eta=0.1, G=1, M=0, D=1, gamma=-0.5, delta=0.1, sigma=1, d=2,
                                  rad_avg=0.1), "gamma"),
    (p0.thm2_excess_printed, dict(T=10, n=10, eta=0, G=1, M=0, D=1, gamma=0.5, rad_avg=0.1), "eta"),
    (p0.corA6_gen_printed, dict(T=10, n=10, eta=0.1, G=1, M=0, B_T=-1, gamma=0.5), "B_T"),
    (p0.thmA6_gen_printed, dict(eps_stab=-1, n=10, G=1, M=0, B=1, gamma=0.5), "eps_stab"),
    (p0.lemA12_utility_loss_corrected, dict(G=1, sigma=1, d=0, gamma=0.5), "d"),
    (p0.lem4_rademacher_linear, dict(t=10, D=1, kappa=-1), "kappa"),
    (p0.thm2_rate, dict(n=0.5), "n"),
])
def test_bad_input_raises_with_argument_name(func, kwargs, bad):
    with pytest.raises(ValueError, match=rf"^{bad}=.* must be"):
        func(**kwargs)
