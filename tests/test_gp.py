"""Gaussian-process predictives against closed forms written in NumPy (SE kernel,
000 supplement §10), with one fixed set of hyperparameters (a one-draw posterior)."""

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats

import pm_sens
from tests.conftest import posterior

D = 2
LS, ETA, SIGMA = np.array([0.6, 1.3]), 1.2, 0.2


def _kernel(a, b, ls=LS):
    d = (a[:, None, :] - b[None, :, :]) / ls
    return ETA**2 * np.exp(-0.5 * (d**2).sum(-1))


def _conditional(x_train, target, x_new, noise, ls=LS):
    """Mean, variance and their first/second derivatives of the GP conditional."""
    K = _kernel(x_train, x_train, ls) + (noise + 1e-6) * np.eye(len(x_train))
    K_inv = np.linalg.inv(K)
    alpha = K_inv @ target
    ks = _kernel(x_new, x_train, ls)  # (M, N)
    diff = (x_new[:, None, :] - x_train[None, :, :]) / ls**2
    dk = -diff * ks[..., None]  # ∂k(x*, x_j)/∂x*_d
    d2k = ks[..., None, None] * (diff[..., :, None] * diff[..., None, :] - np.eye(D) / ls**2)
    mean = ks @ alpha
    var = ETA**2 - np.einsum("mn,nk,mk->m", ks, K_inv, ks)
    dmean = np.einsum("mnd,n->md", dk, alpha)
    dvar = -2 * np.einsum("mnd,nk,mk->md", dk, K_inv, ks)
    d2mean = np.einsum("mnde,n->mde", d2k, alpha)
    d2var = -2 * (
        np.einsum("mnde,nk,mk->mde", d2k, K_inv, ks) + np.einsum("mnd,nk,mke->mde", dk, K_inv, dk)
    )
    return mean, var, dmean, dvar, d2mean, d2var


@pytest.fixture
def data(rng):
    x = rng.uniform(-1, 1, size=(25, D))
    return x, rng.uniform(-1, 1, size=(6, D))


def _hyperparameters():
    return {"ls": LS[None, None], "eta": np.array([[ETA]])}


def _marginal(x, y):
    """A marginal GP on (x, y), its GP and a one-draw posterior at the fixed hyperparameters."""
    with pm.Model() as model:
        ls = pm.HalfNormal("ls", 1, shape=D)
        eta = pm.HalfNormal("eta", 1)
        sigma = pm.HalfNormal("sigma", 1)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.ExpQuad(D, ls=ls))
        gp.marginal_likelihood("y", X=x, y=y, sigma=sigma)
    return model, gp, posterior({**_hyperparameters(), "sigma": np.array([[SIGMA]])})


def test_marginal_gp_matches_closed_forms(rng, data):
    x, x_new = data
    y = np.sin(3 * x[:, 0]) + 0.5 * x[:, 1] + 0.1 * rng.normal(size=len(x))
    model, gp, idata = _marginal(x, y)
    pred = pm_sens.Predictive.from_gp(gp, feature_names=["u", "v"])
    out = pm_sens.sensitivity(
        idata,
        model,
        predictive=pred,
        points={"X": x_new},
        method=["rsens", "ead"],
        interactions=True,
        progressbar=False,
    )["sensitivity"]
    m, v, dm, dv, d2m, d2v = _conditional(x, y, x_new, SIGMA**2)
    v = v + SIGMA**2
    assert list(out["feature"].values) == ["u", "v"]
    np.testing.assert_allclose(out["ead"].values, np.abs(dm), rtol=1e-9)
    np.testing.assert_allclose(out["eah"].values, np.abs(d2m), rtol=1e-8, atol=1e-12)
    expected = np.sqrt(dm**2 / v[:, None] + dv**2 / (2 * v[:, None] ** 2))
    np.testing.assert_allclose(out["rsens"].values, expected, rtol=1e-9)
    expected2 = np.sqrt(d2m**2 / v[:, None, None] + d2v**2 / (2 * v[:, None, None] ** 2))
    np.testing.assert_allclose(out["rsens2"].values, expected2, rtol=1e-8)
    # dask-backed points: the same values, computed block by block
    dask_array = pytest.importorskip("dask.array")
    lazy = pm_sens.sensitivity(
        idata,
        model,
        predictive=pred,
        points={"X": dask_array.from_array(x_new, chunks=(2, D))},
        progressbar=False,
    )["sensitivity"]
    np.testing.assert_allclose(lazy["rsens"].values, out["rsens"].values, rtol=1e-12)
    # points default to the training inputs
    default = pm_sens.sensitivity(idata, model, predictive=pred, progressbar=False)
    assert default["sensitivity"]["rsens"].shape == (len(x), D)
    # the likelihood PFI finds the observations in observed_data
    idata["observed_data"] = xr.DataTree(xr.Dataset({"y": ("y_dim_0", y)}))
    pfi = pm_sens.permutation_importance(
        idata, model, predictive=pred, n_repeats=2, random_seed=0, progressbar=False
    )["permutation_importance"]
    assert np.all(np.isfinite(pfi["likelihood_pfi"].values))


def test_gp_integrated_gradients_in_blocks_of_rows(rng, data, monkeypatch):
    """A kernel row over the training inputs per path point: where one draw's
    temporaries would exceed memory_limit, the rows are evaluated a block at a
    time; against the GP's closed-form gradient along the Gauss–Legendre path."""
    from pm_sens._run import chunks as _chunks

    x, x_new = data
    y = np.sin(3 * x[:, 0]) + 0.5 * x[:, 1]
    model, gp, idata = _marginal(x, y)
    blocks = []
    evaluate = _chunks.evaluate_by_rows

    def spy(compiled, data_values, draw_values, block_rows, per_point):
        blocks.append(block_rows)
        return evaluate(compiled, data_values, draw_values, block_rows, per_point)

    monkeypatch.setattr(_chunks, "evaluate_by_rows", spy)
    out = pm_sens.integrated_gradients(
        idata,
        model,
        predictive=pm_sens.Predictive.from_gp(gp),
        points={"X": x_new},
        n_steps=7,
        progressbar=False,
        # (6 points × 7 nodes + 12) rows × 25 training inputs: 1,350 values per
        # temporary, 43,200 bytes per draw as `_chunks` counts them,
        # against 3e4 for each of the four chunks in memory at once
        memory_limit=1.2e5,
    )["attribution"]
    assert blocks and max(blocks) < 7 * len(x_new)
    base = x_new.mean(0)
    t, w = np.polynomial.legendre.leggauss(7)
    path = base + (t[:, None, None] + 1) / 2 * (x_new - base)  # (7, 6, D)
    slopes = _conditional(x, y, path.reshape(-1, D), SIGMA**2)[2].reshape(7, -1, D)
    expected = (x_new - base) * np.tensordot(w / 2, slopes, axes=1)
    np.testing.assert_allclose(out["ig"].values[0, 0], expected, rtol=1e-9)


def _latent_model(x, likelihood, observed):
    with pm.Model() as model:
        ls = pm.HalfNormal("ls", 1, shape=D)
        eta = pm.HalfNormal("eta", 1)
        gp = pm.gp.Latent(cov_func=eta**2 * pm.gp.cov.ExpQuad(D, ls=ls))
        f = gp.prior("f", X=x)
        if likelihood == "bernoulli":
            pm.Bernoulli("y", p=pm.math.invprobit(f), observed=observed)
        else:
            pm.Poisson("y", mu=pm.math.exp(f), observed=observed)
    return model, gp


def _latent_draw(rng, x):
    """One posterior draw of the rotated latent values, and the f it implies."""
    rotated = rng.normal(size=len(x))
    chol = np.linalg.cholesky(_kernel(x, x) + 1e-6 * np.eye(len(x)))
    return rotated, chol @ rotated


def test_probit_latent_gp_matches_closed_forms(rng, data):
    x, x_new = data
    model, gp = _latent_model(x, "bernoulli", rng.integers(0, 2, len(x)))
    rotated, f = _latent_draw(rng, x)
    idata = posterior({**_hyperparameters(), "f_rotated_": rotated[None, None]})
    pred = pm_sens.Predictive.from_gp(gp, likelihood="bernoulli", link="probit")
    out = pm_sens.sensitivity(
        idata, model, predictive=pred, points={"X": x_new}, progressbar=False
    )["sensitivity"]
    m, v, dm, dv, *_ = _conditional(x, f, x_new, 0.0)
    z = m / np.sqrt(1 + v)
    p = stats.norm.cdf(z)
    dz = dm / np.sqrt(1 + v)[:, None] - (m / (2 * (1 + v) ** 1.5))[:, None] * dv
    dp = stats.norm.pdf(z)[:, None] * dz
    expected = np.abs(dp) / np.sqrt(p * (1 - p))[:, None]
    np.testing.assert_allclose(out["rsens"].values, expected, rtol=1e-7, atol=1e-10)


def test_poisson_latent_gp_matches_closed_forms(rng, data):
    x, x_new = data
    model, gp = _latent_model(x, "poisson", rng.poisson(2, len(x)))
    rotated, f = _latent_draw(rng, x)
    idata = posterior({**_hyperparameters(), "f_rotated_": rotated[None, None]})
    pred = pm_sens.Predictive.from_gp(gp, likelihood="poisson")
    out = pm_sens.sensitivity(
        idata,
        model,
        predictive=pred,
        points={"X": x_new},
        family="poisson",
        interactions=True,
        progressbar=False,
    )["sensitivity"]
    m, v, dm, dv, d2m, d2v = _conditional(x, f, x_new, 0.0)
    rate = np.exp(m + v / 2)
    drate = rate[:, None] * (dm + dv / 2)
    np.testing.assert_allclose(
        out["rsens"].values, np.abs(drate) / np.sqrt(rate)[:, None], rtol=1e-8
    )
    g = dm + dv / 2
    d2rate = rate[:, None, None] * (g[:, :, None] * g[:, None, :] + d2m + d2v / 2)
    np.testing.assert_allclose(
        out["rsens2"].values, np.abs(d2rate) / np.sqrt(rate)[:, None, None], rtol=1e-8
    )


def test_gp_predictive_errors(rng, data):
    x, _ = data
    model, gp = _latent_model(x, "poisson", rng.poisson(2, len(x)))
    with pytest.raises(ValueError, match=r"likelihood=None is not valid for a pm.gp.Latent"):
        pm_sens.Predictive.from_gp(gp)
    with pytest.raises(ValueError, match=r"link='cauchit' is not valid; valid"):
        pm_sens.Predictive.from_gp(gp, likelihood="poisson", link="cauchit")
    with pytest.raises(TypeError, match=r"gp=str is not supported"):
        pm_sens.Predictive.from_gp("gp")
    with pytest.raises(ValueError, match=r"parameter\(s\) \['bogus'\].*valid: \[\]"):
        pm_sens.Predictive.from_gp(gp, likelihood="poisson", bogus=1.0)


def test_sparse_gp_with_all_points_inducing_matches_the_exact_gp(rng, data):
    x, x_new = data
    y = np.cos(2 * x[:, 1]) + 0.1 * rng.normal(size=len(x))

    def build(sparse):
        with pm.Model() as model:
            ls = pm.HalfNormal("ls", 1, shape=D)
            eta = pm.HalfNormal("eta", 1)
            sigma = pm.HalfNormal("sigma", 1)
            cov = eta**2 * pm.gp.cov.ExpQuad(D, ls=ls)
            if sparse:
                gp = pm.gp.MarginalApprox(cov_func=cov, approx="FITC")
                gp.marginal_likelihood("y", X=x, Xu=x, y=y, sigma=sigma)
            else:
                gp = pm.gp.Marginal(cov_func=cov)
                gp.marginal_likelihood("y", X=x, y=y, sigma=sigma)
        return model, gp

    idata = posterior({**_hyperparameters(), "sigma": np.array([[SIGMA]])})
    results = []
    for sparse in (False, True):
        model, gp = build(sparse)
        out = pm_sens.sensitivity(
            idata,
            model,
            predictive=pm_sens.Predictive.from_gp(gp),
            points={"X": x_new},
            progressbar=False,
        )
        results.append(out["sensitivity"]["rsens"].values)
    # equal up to the jitter each adds to a different matrix
    np.testing.assert_allclose(results[1], results[0], rtol=2e-3)


def test_gp_draw_mode_is_each_draw_and_moment_mode_matches_the_mixture(rng, data):
    x, x_new = data
    y = np.sin(2 * x[:, 0]) + 0.1 * rng.normal(size=len(x))
    with pm.Model() as model:
        ls = pm.HalfNormal("ls", 1, shape=D)
        eta = pm.HalfNormal("eta", 1)
        sigma = pm.HalfNormal("sigma", 1)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.ExpQuad(D, ls=ls))
        gp.marginal_likelihood("y", X=x, y=y, sigma=sigma)
    ls_draws = LS * rng.uniform(0.8, 1.2, size=(2, 3, D))
    idata = posterior(
        {"ls": ls_draws, "eta": np.full((2, 3), ETA), "sigma": np.full((2, 3), SIGMA)}
    )
    pred = pm_sens.Predictive.from_gp(gp)
    kw = dict(predictive=pred, points={"X": x_new}, progressbar=False)
    draw = pm_sens.sensitivity(idata, model, mode="draw", **kw)["sensitivity"]["rsens"]
    moment = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]["rsens"].values
    means, variances, dmeans, dvars = [], [], [], []
    for c in range(2):
        for s in range(3):
            m, v, dm, dv, *_ = _conditional(x, y, x_new, SIGMA**2, ls_draws[c, s])
            v = v + SIGMA**2
            expected = np.sqrt(dm**2 / v[:, None] + dv**2 / (2 * v[:, None] ** 2))
            np.testing.assert_allclose(draw.values[c, s], expected, rtol=1e-8)
            means.append(m)
            variances.append(v)
            dmeans.append(dm)
            dvars.append(dv)
    m, dm = np.mean(means, 0), np.mean(dmeans, 0)
    v = np.mean(variances, 0) + np.var(means, 0)
    dv = np.mean(dvars, 0) + 2 * np.mean(
        [(mi - m)[:, None] * dmi for mi, dmi in zip(means, dmeans, strict=True)], 0
    )
    expected = np.sqrt(dm**2 / v[:, None] + dv**2 / (2 * v[:, None] ** 2))
    np.testing.assert_allclose(moment, expected, rtol=1e-8)


def test_marginal_gp_model_without_a_gp_predictive_gets_a_clear_error(rng, data):
    x, _ = data
    with pm.Model() as model:
        xd = pm.Data("X", x)
        ls = pm.HalfNormal("ls", 1, shape=D)
        gp = pm.gp.Marginal(cov_func=pm.gp.cov.ExpQuad(D, ls=ls))
        gp.marginal_likelihood("y", X=xd, y=x[:, 0], sigma=0.1)
    idata = posterior({"ls": LS[None, None]})
    with pytest.raises(ValueError, match=r"'y' is multivariate.*Predictive.from_gp"):
        pm_sens.sensitivity(idata, model)


@pytest.mark.parametrize("n_new", [6, 25])  # another size than the training set, and the same
def test_permutations_and_grids_follow_the_gp_predictive_inputs(rng, data, n_new):
    """Training data held in pm.Data are the GP's, not per-point features: PFI and PDP
    move only the predictive's X, and the PDP is the GP conditional mean on the grid."""
    x, _ = data
    x_new = rng.uniform(-1, 1, size=(n_new, D))
    y = np.sin(3 * x[:, 0]) + 0.5 * x[:, 1]
    with pm.Model() as model:
        xd, yd = pm.Data("X_train", x), pm.Data("y_train", y)
        ls = pm.HalfNormal("ls", 1, shape=D)
        eta = pm.HalfNormal("eta", 1)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.ExpQuad(D, ls=ls))
        gp.marginal_likelihood("y", X=xd, y=yd, sigma=SIGMA)
    idata = posterior(_hyperparameters())
    pred = pm_sens.Predictive.from_gp(gp, feature_names=["u", "v"])
    options = dict(predictive=pred, points={"X": x_new}, progressbar=False)
    pdp = pm_sens.partial_dependence(idata, model, kind="mean", grid_resolution=5, **options)[
        "partial_dependence"
    ]
    assert list(pdp["feature"].values) == ["u", "v"]
    assert pdp.attrs["inputs"] == ["X"]
    grid = pdp["grid_value"].sel(feature="u").values
    for k, g in enumerate(grid):
        moved = x_new.copy()
        moved[:, 0] = g
        mean = _conditional(x, y, moved, SIGMA**2)[0]
        np.testing.assert_allclose(pdp["mean_ice"].sel(feature="u").values[k], mean, rtol=1e-8)
    pfi = pm_sens.permutation_importance(
        idata, model, kind="entropy", n_repeats=2, random_seed=0, **options
    )["permutation_importance"]
    assert list(pfi["feature"].values) == ["u", "v"]
    assert np.all(np.isfinite(pfi["entropy_pfi"].values))
