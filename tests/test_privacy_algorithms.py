"""Private algorithms (stabsim.privacy.algorithms, stabsim.kernels.giga) against the slow
references in tests/naive_private.py, the noise coupling, and the input checks."""

import math

import numpy as np
import pytest

from stabsim import make_problem
from stabsim.privacy import InfeasiblePrivacyParameters, calibration as cal
from stabsim.privacy import algorithms as pa

import naive_private as nv

TOL = dict(rtol=1e-10, atol=1e-10)
REPS = [0, 1, 2]


def _auc_data(n, d, seed=0, scale=1.0):
    X, y = make_problem("auc_separable", d=d).sample(n, seed)
    return X * scale, y


def _neighbour(X, y, k):
    """A real neighbour: example k replaced by the farthest example with the other label."""
    opp = np.flatnonzero(y != y[k])
    j = opp[np.argmax(np.linalg.norm(X[opp] - X[k], axis=1))]
    return (k, X[j].copy(), float(y[j]))


# ============================================================================ oracles
@pytest.mark.parametrize("independent", [False, True])
def test_p0_alg2_matches_naive(independent):
    X, y = _auc_data(10, 3)
    nb = _neighbour(X, y, 4)
    T, eta, G, eps, delta, scale = 25, 0.2, 2.0, 1.0, 1e-3, 0.01
    ds = pa.p0_alg2(X, y, eps=eps, delta=delta, loss="auc_hinge", constraint=("l2", 1.0), eta=eta,
                    T=T, replicates=REPS, seed=3, neighbour=nb, G=G, noise_scale=scale,
                    independent_noise=independent)
    sigma = math.sqrt(cal.p0_sigma2(T, 10, eta, G, eps, delta, "corrected")) * scale
    ref = nv.p0_alg2(X, y, nb, "auc_hinge", 1.0, eta, T, sigma, 3, REPS, independent)
    np.testing.assert_allclose(ds["w_priv"].values, ref, **TOL)
    rec = pa.calibration_record(ds)
    assert rec["sigma"] == pytest.approx(sigma, rel=1e-12)
    assert rec["reading"] == "corrected" and rec["as_in_paper"] is False   # noise_scale != 1
    assert "noise deliberately scaled" in ds.attrs["privacy_deviations"]


def test_p0_alg2_printed_reading_recorded():
    X, y = _auc_data(10, 3)
    ds = pa.p0_alg2(X, y, eps=1.0, delta=1e-3, T=12, eta=0.1, replicates=2, G=2.0, reading="printed")
    ds2 = pa.p0_alg2(X, y, eps=1.0, delta=1e-3, T=12, eta=0.1, replicates=2, G=2.0)
    assert ds.attrs["privacy_reading"] == "printed" and ds.attrs["privacy_as_in_paper"] == "no"
    assert ds2.attrs["privacy_as_in_paper"] == "yes"
    assert ds2.attrs["privacy_sigma"] / ds.attrs["privacy_sigma"] == pytest.approx(math.sqrt(math.e))


@pytest.mark.parametrize("independent,project", [(False, False), (True, True)])
def test_p1_alg3_matches_naive(independent, project):
    X, y = _auc_data(16, 3)
    nb = _neighbour(X, y, 9)          # index 9 lies in block S_2 = indices 8..11
    eta, G, eps, delta = 0.5, 1.5, 1.0, 0.1
    cfg = pa.P1Alg3Config(eps=eps, delta=delta, eta=eta, loss="auc_logistic", constraint=("l2", 1.0),
                          G=G, project_noise=project)
    ds = pa.p1_alg3(X, y, cfg, replicates=REPS, seed=5, neighbour=nb, independent_noise=independent)
    ref = nv.p1_alg3(X, y, nb, "auc_logistic", 1.0, eta, G, eps, delta, 5, REPS, independent, project)
    np.testing.assert_allclose(ds["w_priv"].values, ref, **TOL)
    assert list(ds["n_k"].values) == [8, 4, 2, 1] and list(ds["skipped"].values) == [False, False, False, True]
    assert np.all(ds["k_phase"].values == 2)
    rec = pa.calibration_record(ds)
    assert rec["skipped_phases"] == [4] and rec["projection_after_noise"] is project
    if not independent:
        # phase 1 does not see the replaced point: identical; phase 2 holds it: noise cancels
        assert np.all(ds["dist_phase"].sel(phase=1).values == 0.0)
        np.testing.assert_allclose(ds["dist_phase"].sel(phase=2), ds["dist_phase_avg"].sel(phase=2),
                                   rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("projected,independent", [(False, False), (True, True)])
def test_p2_alg1_matches_naive(projected, independent):
    X, y = _auc_data(8, 2)
    nb = _neighbour(X, y, 2)
    T, eta, G, eps, delta = 5, 0.5, 2.0, 1.0, 1e-3
    ds = pa.p2_alg1(X, y, eps=eps, delta=delta, loss="ranking_logistic", constraint=("l2", 1.0),
                    projected=projected, eta=eta, T=T, replicates=REPS, seed=7, neighbour=nb, G=G,
                    independent_noise=independent)
    sigma = cal.p2_sigma(T, 8, G, eps, delta)
    ref = nv.p2_alg1(X, y, nb, "ranking_logistic", 1.0 if projected else None, eta, T, sigma, 7,
                     REPS, independent)
    np.testing.assert_allclose(ds["w_priv"].values, ref, **TOL)
    assert ds.attrs["privacy_variant"] == ("projected onto C (not in paper)" if projected
                                           else "unprojected (as printed)")
    assert ds.attrs["privacy_as_in_paper"] == ("no" if projected else "yes")


@pytest.mark.parametrize("pairwise", [False, True])
def test_p4_matches_naive(pairwise):
    n, T, eps, delta, G, eta = 20, 40, 8.0, 0.1, 1.0, 0.2
    if pairwise:
        X, y = _auc_data(n, 3)
        loss, fn = "auc_logistic", pa.p4_alg2
    else:
        X, y = make_problem("p4_logistic").sample(n, 1)
        loss, fn = "point_logistic", pa.p4_alg1
    nb = _neighbour(X, y, 3)
    for independent in (False, True):
        ds = fn(X, y, eps=eps, delta=delta, loss=loss, constraint=("l2", 2.0), eta=eta, T=T,
                replicates=REPS, seed=11, neighbour=nb, G=G, independent_noise=independent)
        res = cal.p4_beta_search(eps, delta, n, T, G, pairwise, grid_step=1e-4)
        sigma = math.sqrt(res.sigma2)
        ref = nv.p4_alg(X, y, nb, loss, 2.0, eta, T, sigma, 11, REPS, pairwise, independent)
        np.testing.assert_allclose(ds["w_priv"].values, ref, **TOL)
        rec = pa.calibration_record(ds)
        assert rec["beta"] == res.beta and rec["grid_step"] == 1e-4 and rec["search"] == "grid"
        assert rec["sigma"] == pytest.approx(sigma)


def _p3_setup(variant, n=20, d=3, scale=1.0):
    X, y = _auc_data(n, d, seed=2, scale=scale)
    online, convex = pa.P3_VARIANTS[variant][:2]
    return X, y, online, convex


@pytest.mark.parametrize("variant", list(pa.P3_VARIANTS))
@pytest.mark.parametrize("independent,permute", [(False, False), (True, True)])
def test_p3_matches_naive(variant, independent, permute):
    n, alpha, T1, G, L, R = 20, 1.5, 5, 2.0, 1.0, 1.0
    eps, delta = 1.0, 1 / 20
    X, y, online, convex = _p3_setup(variant, n)
    nb = _neighbour(X, y, 7)
    cfg = pa.P3GigaConfig(variant=variant, eps=eps, delta=delta, alpha=alpha, T1=T1, G=G, L=L,
                          constraint=("l2", R), permute=permute)
    ds = pa.p3_giga(X, y, cfg, replicates=REPS, seed=13, neighbour=nb, independent_noise=independent,
                    record_outputs=True)
    Gt = G + alpha * (2 * R if convex else R)
    rho = cal.p3_rho(eps, delta)
    sig_coef = math.sqrt(32 * Gt**2 * (n - T1) / (alpha**2 * rho)) if online else 0.0
    sigma_off = 0.0 if online else math.sqrt(128 * Gt**2 * math.log(n) ** 2 * math.log(1.25 / delta)
                                              / (alpha**2 * n**2 * eps**2))
    center = "random" if variant == "OnPairC" else "zero"
    ref = nv.p3(X, y, nb, "ranking_logistic", R, alpha, T1, online, sig_coef, sigma_off, center, 13,
                REPS, independent, permute)
    for i, (a, b) in enumerate(ref):
        np.testing.assert_allclose(ds["w_priv"].values[i], [a["w_priv"], b["w_priv"]], **TOL)
        np.testing.assert_allclose(ds["w_average"].values[i], [a["w_average"], b["w_average"]], **TOL)
        np.testing.assert_allclose(ds["dist_iterate"].values[i],
                                   np.linalg.norm(a["w"] - b["w"], axis=1), **TOL)
        np.testing.assert_allclose(ds["loss_path"].values[i], a["loss_path"], **TOL)
        np.testing.assert_allclose(ds["released"].values[i, :, 0], a["played"], **TOL)
        np.testing.assert_allclose(ds["released"].values[i, :, 1], b["played"], **TOL)
    rec = pa.calibration_record(ds)
    assert rec["T1"] == T1 and rec["T1_as_in_paper"] is False and rec["as_in_paper"] is False
    assert "not as in paper" in ds.attrs["privacy_deviations"]
    assert rec["G_tilde"] == pytest.approx(Gt)
    # the replaced example arrives at its stream position; before it the runs coincide
    pos = ds["k_position"].values
    for i in range(len(REPS)):
        assert np.all(ds["dist_iterate"].values[i, : pos[i] - 1] == 0.0)
        assert ds["dist_iterate"].values[i, -1] > 0


def test_p3_as_in_paper_when_feasible():
    # small data scale -> small L, T_1 = max(ceil(16 (L + alpha)^2 / alpha^2), 7) < n
    X, y = _auc_data(24, 3, scale=0.05)
    ds = pa.p3_onpairstrc(X, y, eps=1.0, delta=1 / 24, alpha=1.0, replicates=2, seed=0)
    rec = pa.calibration_record(ds)
    L = rec["L"]
    assert rec["T1"] == max(math.ceil(16 * (L + 1.0) ** 2), 7) < 24
    assert rec["T1_as_in_paper"] is True and rec["as_in_paper"] is True
    assert ds.attrs["privacy_T1_as_in_paper"] == "yes"
    # Lemma 4 overlay: the measured non-private distance is below 8 G~/(alpha t)
    assert np.all(ds["dist_iterate"].max("replicate") <= ds["lemma4_bound"] + 1e-12)


# ============================================================================ coupling
def _all_runs(neighbour, independent, **over):
    """Every private algorithm on tiny data (quick, small sizes)."""
    X, y = _auc_data(24, 3)
    Xp, yp = make_problem("p4_logistic").sample(200, 0)
    common = dict(replicates=3, seed=1, neighbour=neighbour, independent_noise=independent)
    nb_p = neighbour if isinstance(neighbour, str) else _neighbour(Xp, yp, 3)
    out = {
        "p0_alg2": pa.p0_alg2(X, y, eps=1.0, delta=1e-3, T=20, eta=0.1, G=2.0, noise_scale=1e-3,
                              **common),
        "p1_alg3": pa.p1_alg3(X, y, pa.P1Alg3Config(eps=1.0, delta=0.1, eta=0.5), **common),
        "p2_alg1": pa.p2_alg1(X, y, eps=1.0, delta=1e-3, T=4, **common),
        "p4_alg1": pa.p4_alg1(Xp, yp, eps=2.0, delta=1e-3, T=50, **{**common, "neighbour": nb_p}),
        "p4_alg2": pa.p4_alg2(Xp, np.where(yp > 0, 1.0, -1.0), eps=2.0, delta=1e-3, T=50,
                              **{**common, "neighbour": nb_p}),
    }
    for v in pa.P3_VARIANTS:
        cfg = pa.P3GigaConfig(variant=v, eps=1.0, delta=1 / 24, alpha=1.0, T1=6)
        out[v] = pa.p3_giga(X, y, cfg, **common)
    return out


def test_shared_noise_same_dataset_gives_zero_distance():
    for name, ds in _all_runs("same", False).items():
        assert ds.attrs["privacy_sigma"] > 0, name
        assert np.all(ds["dist_priv"].values == 0.0), name
        np.testing.assert_array_equal(ds["w_priv"].values[:, 0], ds["w_priv"].values[:, 1])


def test_independent_noise_same_dataset_differs():
    for name, ds in _all_runs("same", True).items():
        assert np.all(ds["dist_priv"].values > 0), name


def test_shared_noise_cancels_with_real_neighbour():
    X, y = make_problem("p4_lsq").sample(200, 0)
    nb = (5, X[5].copy(), -0.4 if y[5] > 0 else 0.4)
    # affine gradients (least squares, unconstrained) and a label-only replacement: w - w'
    # follows an affine recursion in w - w' alone, so it does not depend on the shared noise
    kw = dict(eps=2.0, delta=1e-3, loss="point_lsq", constraint="none", G=1.5, T=100, eta=0.1,
              replicates=3, seed=2, neighbour=nb)
    noisy = pa.p4_alg1(X, y, **kw)
    quiet = pa.p4_alg1(X, y, noise_scale=1e-12, **kw)
    assert noisy.attrs["privacy_sigma"] > 1
    diff_noisy = noisy["w_priv"].values[:, 0] - noisy["w_priv"].values[:, 1]
    diff_quiet = quiet["w_priv"].values[:, 0] - quiet["w_priv"].values[:, 1]
    np.testing.assert_allclose(diff_noisy, diff_quiet, rtol=1e-7, atol=1e-9)
    # output perturbation without projection: the noise cancels exactly
    Xa, ya = _auc_data(12, 3)
    ds = pa.p0_alg2(Xa, ya, eps=1.0, delta=1e-3, T=15, eta=0.1, G=2.0, replicates=3,
                    neighbour=_neighbour(Xa, ya, 1))
    np.testing.assert_allclose(ds["dist_priv"], ds["dist_output_nonprivate"], rtol=1e-6)
    assert np.any(ds["dist_output_nonprivate"].values > 0)
    # P3 online: projection is non-expansive, so released distances <= iterate distances
    for name, run in _all_runs("farthest", False).items():
        if name in ("OnPairStrC", "OnPairC"):
            assert np.all(run["dist_release"].values <= run["dist_iterate"].values + 1e-12)
            assert np.any(run["dist_iterate"].values > 0)


# ============================================================================ checks
@pytest.mark.parametrize("name", list(pa.PRIVATE_ALGORITHMS))
@pytest.mark.parametrize("eps,delta,match", [(0.0, 1e-3, "eps"), (-1.0, 1e-3, "eps"),
                                             (1.0, 0.0, "delta"), (1.0, 1.0, "delta"),
                                             (1.0, 1.5, "delta"), (float("nan"), 0.1, "eps")])
def test_bad_privacy_parameters(name, eps, delta, match):
    X, y = _auc_data(20, 3)
    with pytest.raises(ValueError, match=match):
        pa.run_private(name, X, y, eps=eps, delta=delta, replicates=2)


def test_p3_burnin_larger_than_n_raises_with_advice():
    X, y = _auc_data(40, 3)
    for name in ("p3_onpairstrc", "p3_onpairc", "p3_offpairstrc", "p3_offpairc"):
        with pytest.raises(InfeasiblePrivacyParameters) as e:
            pa.run_private(name, X, y, eps=1.0, delta=1 / 40, replicates=2)
        msg = str(e.value)
        assert "T_1" in msg and "T1=" in msg and "alpha" in msg and "not as in paper" in msg


def test_p4_infeasible_raises():
    X, y = make_problem("p4_logistic").sample(50, 0)
    with pytest.raises(InfeasiblePrivacyParameters, match="no beta"):
        pa.p4_alg1(X, y, eps=0.5, delta=1e-6, T=50, replicates=2)
    Xa, ya = _auc_data(50, 3)
    with pytest.raises(InfeasiblePrivacyParameters):
        pa.p4_alg2(Xa, ya, eps=0.5, delta=1e-6, T=50, replicates=2)


def test_p1_thm10_step_infeasible_and_unknown_names():
    X, y = _auc_data(64, 3)
    with pytest.raises(InfeasiblePrivacyParameters, match="2/L"):
        pa.p1_alg3(X, y, pa.P1Alg3Config(eps=1.0, delta=0.1, eta="thm10", L=50.0, constraint=("l2", 100.0)),
                   replicates=2)
    with pytest.raises(ValueError, match="unknown private algorithm"):
        pa.run_private("p4_alg3", X, y, eps=1.0, delta=0.1)
    with pytest.raises(ValueError, match="variant"):
        pa.P3GigaConfig(variant="OnlineStrC", eps=1.0, delta=0.1)


def test_quick_configurations_cover_every_algorithm():
    assert set(pa.QUICK) == set(pa.PRIVATE_ALGORITHMS)
    for name in pa.QUICK:
        X, y = pa.quick_data(name)
        assert len(y) == pa.QUICK[name][0][1]


def test_configs_validate_once_with_clear_errors():
    P1, P3 = pa.P1Alg3Config, pa.P3GigaConfig
    cfg = P3(variant="onpairstrc", eps=1, delta=0.1, alpha=2, T1=5.0, center=[0.1, 0.2])
    assert cfg.variant == "OnPairStrC" and cfg.eps == 1.0 and cfg.alpha == 2.0 and cfg.T1 == 5
    assert cfg.center == (0.1, 0.2) and cfg.radius == 1.0 and cfg.online and not cfg.convex
    with pytest.raises(AttributeError):                  # frozen: dataclasses.FrozenInstanceError
        cfg.alpha = 3.0
    bad = [(P3, dict(variant="OnPairC", eps=1.0, delta=0.1, alpha=0.0), "alpha"),
           (P3, dict(variant="OnPairC", eps=1.0, delta=0.1, T1=1), "T1"),
           (P3, dict(variant="OnPairC", eps=1.0, delta=0.1, loss="point_logistic"), "pairwise"),
           (P3, dict(variant="OnPairC", eps=1.0, delta=0.1, constraint="none"), "bounded ball"),
           (P3, dict(variant="OnPairC", eps=1.0, delta=0.1, center="middle"), "center"),
           (P3, dict(variant="OnPairC", eps=1.0, delta=0.1, center=[2.0, 0.0]), "lie in C"),
           (P3, dict(variant="OnPairC", eps=1.0, delta=0.1, noise_scale=-1), "noise_scale"),
           (P1, dict(eps=1.0, delta=0.1, eta="thm11"), "thm10"),
           (P1, dict(eps=1.0, delta=0.1, eta=0.0), "thm10"),
           (P1, dict(eps=1.0, delta=0.1, constraint="none"), "bounded W"),
           (P1, dict(eps=1.0, delta=0.1, loss="point_logistic"), "pairwise"),
           (P1, dict(eps=1.0, delta=0.1, G=-1.0), "G"),
           (P1, dict(eps=1.0, delta=0.1, project_noise="yes"), "project_noise")]
    for cls, kw, match in bad:
        with pytest.raises(ValueError, match=match):
            cls(**kw)
    X, y = _auc_data(24, 3)
    with pytest.raises(TypeError, match="P3GigaConfig"):
        pa.p3_giga(X, y, P1(eps=1.0, delta=0.1))


def test_keyword_forms_equal_config_calls():
    X, y = _auc_data(24, 3)
    run = dict(replicates=2, seed=4, neighbour="farthest")
    a = pa.run_private("p3_offpairc", X, y, eps=1.0, delta=1 / 24, alpha=1.0, T1=6, **run)
    b = pa.p3_giga(X, y, pa.P3GigaConfig(variant="OffPairC", eps=1.0, delta=1 / 24, alpha=1.0, T1=6), **run)
    np.testing.assert_array_equal(a["w_priv"].values, b["w_priv"].values)
    c = pa.run_private("p1_alg3", X, y, eps=1.0, delta=0.1, eta=0.5, **run)
    d = pa.p1_alg3(X, y, pa.P1Alg3Config(eps=1.0, delta=0.1, eta=0.5), **run)
    np.testing.assert_array_equal(c["w_priv"].values, d["w_priv"].values)
    assert pa.config_default("p1_alg3", "loss") == "auc_logistic"
    assert pa.config_default(pa.p3_giga, "constraint") == ("l2", 1.0)
    assert pa.config_default("p3_onpairc", "replicates") == 100
    assert pa.config_default("p0_alg2", "loss") == "auc_hinge"


def test_p3_run_holds_what_p3_giga_stores():
    """``p3_run`` (the figure studies' path, no Dataset) holds p3_giga's variables, coordinates and
    attrs: the Dataset built from it is p3_giga's, but for the creation time."""
    import xarray as xr

    X, y = _auc_data(24, 3)
    cfg = pa.P3GigaConfig(variant="OnPairC", eps=1.0, delta=1 / 24, alpha=1.0, T1=6)
    kw = dict(replicates=[2, 5], seed=4, neighbour="farthest", record_outputs=True)
    ds = pa.p3_giga(X, y, cfg, **kw)
    run = pa.p3_run(X, y, cfg, **kw)
    built = xr.Dataset(run.data, coords=run.coords, attrs=run.attrs)
    built.attrs["created"] = ds.attrs["created"]
    assert built.identical(ds)
    for name in ("w_priv", "loss_path", "t", "lemma4_bound"):
        np.testing.assert_array_equal(run.values(name), ds[name].values)
    with pytest.raises(TypeError, match="P3GigaConfig"):
        pa.p3_run(X, y, pa.P1Alg3Config(eps=1.0, delta=0.1))
