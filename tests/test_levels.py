"""Level sensitivity of categorical inputs (group indices, flags) against closed forms."""

import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, special, stats

import pm_sens
from tests.conftest import posterior

N_GROUPS = 3


def _grouped_model(rng, likelihood, n=24):
    """``y ~ likelihood(a[group] + b x)`` with a known posterior; returns the pieces."""
    group = rng.integers(0, N_GROUPS, n)
    x = rng.normal(size=n)
    with pm.Model(coords={"obs": range(n)}) as model:
        xd = pm.Data("x", x, dims="obs")
        gd = pm.Data("group", group, dims="obs")
        a = pm.Normal("a", shape=N_GROUPS)
        b = pm.Normal("b")
        eta = a[gd] + b * xd
        if likelihood == "normal":
            sigma = pm.HalfNormal("sigma")
            pm.Normal("y", eta, sigma, observed=np.zeros(n), dims="obs")
        else:
            pm.Bernoulli("y", logit_p=eta, observed=np.zeros(n), dims="obs")
    draws = {
        "a": rng.normal(size=(2, 5, N_GROUPS)),
        "b": rng.normal(size=(2, 5)),
        "sigma": np.exp(0.3 * rng.normal(size=(2, 5))),
    }
    if likelihood != "normal":
        del draws["sigma"]
    return model, posterior(draws), draws, group, x


def _draws(draws, name):
    return draws[name].reshape(-1, *draws[name].shape[2:])


def _weighted_others(divergence, group):
    """Mean over the other levels, weighted by their frequency among the points."""
    weights = np.bincount(group, minlength=N_GROUPS) / len(group)
    others = np.tile(weights, (len(group), 1))
    others[np.arange(len(group)), group] = 0
    return (divergence * others).sum(-1) / others.sum(-1)


def test_normal_level_divergence_per_draw_is_mean_shift_over_sigma(rng):
    model, idata, draws, group, _ = _grouped_model(rng, "normal")
    out = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    a, sigma = _draws(draws, "a"), _draws(draws, "sigma")
    # sqrt(2 KL) between two Normals with the same sigma: |Δμ| / σ
    expected = np.abs(a[:, None, :] - a[:, group][:, :, None]) / sigma[:, None, None]
    levels = out["levels_group"].values.reshape(expected.shape)
    np.testing.assert_allclose(levels, expected, rtol=1e-12, atol=1e-12)
    rsens = out["rsens"].sel(feature="group").values.reshape(expected.shape[:2])
    np.testing.assert_allclose(rsens, _weighted_others(expected, group), rtol=1e-12)
    assert out["feature_kind"].sel(feature="group").item() == "level"
    assert out["feature_kind"].sel(feature="x").item() == "rate"
    np.testing.assert_array_equal(out["input_value"].sel(feature="group").values, group)


def test_bernoulli_level_divergence_per_draw(rng):
    model, idata, draws, group, x = _grouped_model(rng, "bernoulli")
    out = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"]
    a, b = _draws(draws, "a"), _draws(draws, "b")
    p_own = special.expit(a[:, group] + b[:, None] * x)[..., None]
    p_level = special.expit(a[:, None, :] + (b[:, None] * x)[..., None])
    kl = p_own * np.log(p_own / p_level) + (1 - p_own) * np.log((1 - p_own) / (1 - p_level))
    levels = out["levels_group"].values.reshape(kl.shape)
    np.testing.assert_allclose(levels, np.sqrt(2 * kl), rtol=1e-9, atol=1e-12)


def test_moment_mode_is_the_moment_matched_kl_by_hand(rng):
    model, idata, draws, group, x = _grouped_model(rng, "normal")
    out = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]
    a, b, sigma = _draws(draws, "a"), _draws(draws, "b"), _draws(draws, "sigma")

    def matched(mu):  # mixture of Normal(mu_s, sigma_s) over draws s → (mean, variance)
        mean = mu.mean(0)
        return mean, (sigma[:, None] ** 2 + (mu - mean) ** 2).mean(0)

    m0, v0 = matched(a[:, group] + b[:, None] * x)
    for level in range(N_GROUPS):
        m1, v1 = matched(a[:, [level]] + b[:, None] * x)
        kl = 0.5 * (v0 / v1 + (m1 - m0) ** 2 / v1 - 1 + np.log(v1 / v0))
        expected = np.where(group == level, 0.0, np.sqrt(2 * kl))
        np.testing.assert_allclose(
            out["levels_group"].sel(group_level=level).values, expected, rtol=1e-10, atol=1e-13
        )


def test_poisson_flag_that_is_not_an_index(rng):
    """An integer flag multiplied into the linear predictor: levels are the values it holds."""
    n = 20
    flag = rng.integers(0, 2, n)
    with pm.Model() as model:
        fd = pm.Data("treated", flag)
        c = pm.Normal("c")
        pm.Poisson("y", pm.math.exp(1.0 + c * fd), observed=np.zeros(n))
    c = rng.normal(size=(1, 6))
    out = pm_sens.sensitivity(posterior({"c": c}), model, mode="draw", progressbar=False)
    out = out["sensitivity"]
    lam_own = np.exp(1.0 + c[0][:, None] * flag)
    lam_other = np.exp(1.0 + c[0][:, None] * (1 - flag))
    kl = lam_own * np.log(lam_own / lam_other) - lam_own + lam_other
    np.testing.assert_allclose(
        out["rsens"].sel(feature="treated").values[0], np.sqrt(2 * kl), rtol=1e-10
    )
    assert list(out["treated_level"].values) == [0, 1]
    # not an index: a value the data do not hold is a valid new level
    points = {"treated": np.array([0, 2])}
    new = pm_sens.sensitivity(posterior({"c": c}), model, points=points, progressbar=False)
    assert list(new["sensitivity"]["treated_level"].values) == [0, 2]


def test_summary_ranks_a_strong_category_above_a_weak_slope(rng):
    model, _, draws, _, _ = _grouped_model(rng, "normal")
    draws = {
        "a": np.array([-3.0, 0.0, 3.0]) + 0.1 * rng.normal(size=(2, 5, N_GROUPS)),
        "b": 0.05 * rng.normal(size=(2, 5)),
        "sigma": np.ones((2, 5)),
    }
    idata = pm_sens.sensitivity(posterior(draws), model, mode="draw", progressbar=False)
    table = pm_sens.summary(idata)
    assert list(table["feature"]) == ["group", "x"]
    assert list(table["kind"]) == ["level", "rate"]
    assert table["prob_top_1"].iloc[0] == 1.0


def test_summary_scale_sd_multiplies_rates_by_the_inputs_sd(rng):
    model, idata, _, _, x = _grouped_model(rng, "normal")
    idata = pm_sens.sensitivity(idata, model, progressbar=False)
    raw = pm_sens.summary(idata).set_index("feature")["importance"]
    scaled = pm_sens.summary(idata, scale="sd").set_index("feature")["importance"]
    np.testing.assert_allclose(scaled["x"], raw["x"] * x.std(), rtol=1e-12)
    assert scaled["group"] == raw["group"]


def test_level_outside_the_indexed_length_is_refused(rng):
    model, idata, *_ = _grouped_model(rng, "normal")
    points = {"x": np.zeros(3), "group": np.array([0, 1, 3])}
    with pytest.raises(ValueError, match=r"points\['group'\] holds the level 3.*valid: 0\.\.2"):
        pm_sens.sensitivity(idata, model, points=points, progressbar=False)
    points["group"] = np.array([0, -1, 1])
    with pytest.raises(ValueError, match=r"holds the level -1"):
        pm_sens.sensitivity(idata, model, points=points, progressbar=False)


@pytest.mark.parametrize("alpha", [0.5, 2.0])
def test_levels_at_another_order_are_renyi_divergences(rng, alpha):
    """Draw mode, Normal with one σ per draw: ``sqrt(2 D_α) = sqrt(α) |Δa| / σ``;
    moment mode: D_α between the matched Normals by quadrature."""
    model, idata, draws, group, x = _grouped_model(rng, "normal")
    kw = dict(alpha=alpha, progressbar=False)
    out = pm_sens.sensitivity(idata, model, mode="draw", **kw)["sensitivity"]
    a, sigma = _draws(draws, "a"), _draws(draws, "sigma")
    expected = (
        np.sqrt(alpha) * np.abs(a[:, None, :] - a[:, group][:, :, None]) / sigma[:, None, None]
    )
    got = out["levels_group"].values.reshape(expected.shape)
    np.testing.assert_allclose(got, expected, rtol=1e-10)

    out = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]
    b = _draws(draws, "b")
    for i in (0, 5):
        means = a + (b * x[i])[:, None]  # (S, levels)
        m, v = means.mean(0), (sigma**2).mean() + means.var(0)
        own = stats.norm(m[group[i]], np.sqrt(v[group[i]]))
        for level in set(range(N_GROUPS)) - {group[i]}:  # the own level is 0 exactly
            other = stats.norm(m[level], np.sqrt(v[level]))

            def tilted(y, p=own, q=other):
                return np.exp(alpha * p.logpdf(y) + (1 - alpha) * q.logpdf(y))

            renyi = np.log(integrate.quad(tilted, -40, 40)[0]) / (alpha - 1)
            got = out["levels_group"].values[i, level]
            np.testing.assert_allclose(got, np.sqrt(2 * renyi), rtol=1e-7)


def test_alpha_above_one_without_a_closed_form_leaves_levels_out(rng):
    """A negative binomial has Rényi divergences below order 1 only (sums over
    both laws' supports): at 0.5 its levels are ``sqrt(2 D_α)`` summed with SciPy's
    pmf; at 2 they are left out with a warning, or an error where chosen."""
    n = 20
    group, x = rng.integers(0, N_GROUPS, n), rng.normal(size=n)
    with pm.Model() as model:
        xd, gd = pm.Data("x", x), pm.Data("group", group)
        a, b = pm.Normal("a", shape=N_GROUPS), pm.Normal("b")
        pm.NegativeBinomial("y", mu=pm.math.exp(a[gd] + b * xd), alpha=3.0, observed=np.ones(n))
    draws = {"a": rng.normal(size=(1, 4, N_GROUPS)), "b": rng.normal(size=(1, 4))}
    idata = posterior(draws)
    kw = dict(progressbar=False, extend_inferencedata=False, mode="draw")
    out = pm_sens.sensitivity(idata, model, alpha=0.5, **kw)["sensitivity"]
    mean = np.exp(_draws(draws, "a")[:, None, :] + (_draws(draws, "b")[:, None] * x)[..., None])
    y = np.arange(50_000)  # means up to 1,400 with dispersion 3
    log_pmf = stats.nbinom.logpmf(y[:, None, None, None], 3.0, 3.0 / (3.0 + mean))  # (Y, S, N, L)
    own = np.take_along_axis(
        log_pmf, np.broadcast_to(group[None, None, :, None], log_pmf.shape[:3] + (1,)), -1
    )
    renyi = special.logsumexp(0.5 * own + 0.5 * log_pmf, axis=0) / (0.5 - 1)
    renyi[:, np.arange(n), group] = 0.0  # the own level, exactly
    got = out["levels_group"].values.reshape(renyi.shape)
    # (1e-7: the graph's NB means differ from NumPy's by up to 1e-8, as at alpha=1)
    np.testing.assert_allclose(got, np.sqrt(2 * renyi), rtol=1e-7, atol=1e-12)

    kw["alpha"] = 2.0
    with pytest.warns(UserWarning, match=r"\['group'\] are left out.*'negative_binomial' one"):
        default = pm_sens.sensitivity(idata, model, **kw)["sensitivity"]
    chosen = pm_sens.sensitivity(idata, model, inputs="x", **kw)["sensitivity"]
    assert list(default["feature"].values) == list(chosen["feature"].values) == ["x"]
    np.testing.assert_array_equal(default["rsens"].values, chosen["rsens"].values)
    # chosen by the user, a categorical input at another order is an error
    with pytest.raises(ValueError, match=r"alpha=2.0 is not valid with the categorical"):
        pm_sens.sensitivity(idata, model, inputs=["x", "group"], **kw)
    with pytest.raises(ValueError, match=r"alpha=2.0 is not valid.*pass alpha=1$"):
        pm_sens.sensitivity(idata, model, inputs="group", **kw)


def test_categorical_input_alone(rng):
    model, idata, draws, group, _ = _grouped_model(rng, "normal")
    out = pm_sens.sensitivity(idata, model, inputs="group", mode="draw", progressbar=False)
    out = out["sensitivity"]
    assert list(out["feature"].values) == ["group"]
    a, sigma = _draws(draws, "a"), _draws(draws, "sigma")
    expected = np.abs(a[:, None, :] - a[:, group][:, :, None]) / sigma[:, None, None]
    np.testing.assert_allclose(
        out["rsens"].values[..., 0].reshape(expected.shape[:2]),
        _weighted_others(expected, group),
        rtol=1e-12,
    )


def test_methods_without_a_level_version_give_nan_for_categories(rng):
    model, idata, *_ = _grouped_model(rng, "normal")
    out = pm_sens.sensitivity(
        idata, model, method=["rsens", "kl", "ead"], interactions=True, progressbar=False
    )["sensitivity"]
    np.testing.assert_allclose(out["kl"].sel(feature="group"), out["rsens"].sel(feature="group"))
    assert np.isnan(out["ead"].sel(feature="group")).all()
    assert np.isnan(out["eah"].sel(feature="group")).all()
    # R-sens2 has level pairs (tests/test_level_pairs.py), not a level's curvature
    assert np.isnan(out["rsens2"].sel(feature="group", feature_bis="group")).all()
    assert np.isfinite(out["rsens2"].sel(feature="group", feature_bis="x")).all()
    assert np.isfinite(out["rsens2"].sel(feature="x", feature_bis="x")).all()


def test_normal_kl_matches_scipy_for_the_two_levels():
    """The closed-form Normal KL used above, against numeric integration."""
    p, q = stats.norm(0.3, 1.2), stats.norm(-0.5, 0.7)
    grid = np.linspace(-12, 12, 200001)
    numeric = np.trapezoid(p.pdf(grid) * (p.logpdf(grid) - q.logpdf(grid)), grid)
    closed = np.log(0.7 / 1.2) + (1.2**2 + 0.8**2) / (2 * 0.7**2) - 0.5
    np.testing.assert_allclose(numeric, closed, rtol=1e-8)


def test_one_hot_columns_and_a_constant_column_of_a_design_matrix(rng):
    """A patsy-like design: an intercept column (constant: reported as such, not
    ranked) and species as two one-hot columns declared as one categorical input
    (reference level: both 0)."""
    n = 30
    species = rng.integers(0, 3, n)
    x = np.column_stack([np.ones(n), rng.normal(size=n), np.eye(3)[species][:, 1:]])
    with pm.Model(coords={"col": ["Intercept", "x", "sp_b", "sp_c"]}) as model:
        xd = pm.Data("X", x, dims=("obs", "col"))
        b = pm.Normal("b", dims="col")
        sigma = pm.HalfNormal("sigma")
        pm.Normal("y", xd @ b, sigma, observed=np.zeros(n), dims="obs")
    draws = {"b": rng.normal(size=(1, 5, 4)), "sigma": np.exp(0.2 * rng.normal(size=(1, 5)))}
    idata = posterior(draws, dims={"b": ["col"]})
    result = pm_sens.sensitivity(
        idata,
        model,
        mode="draw",
        categorical={"species": ["sp_b", "sp_c"]},
        progressbar=False,
    )
    out = result["sensitivity"]
    assert list(out["feature"].values) == ["Intercept", "x", "species"]
    assert list(out["feature_kind"].values) == ["constant", "rate", "level"]
    assert list(out["species_level"].values) == ["reference", "sp_c", "sp_b"]
    assert np.isnan(out["rsens"].sel(feature="Intercept")).all()
    b, sigma = draws["b"][0], draws["sigma"][0]
    effect = np.column_stack([np.zeros(5), b[:, 3], b[:, 2]])  # reference, c, b
    own = np.array([0, 2, 1])[species]
    expected = np.abs(effect[:, None, :] - effect[:, own][:, :, None]) / sigma[:, None, None]
    np.testing.assert_allclose(out["levels_species"].values[0], expected, atol=1e-12)
    np.testing.assert_allclose(
        out["rsens"].sel(feature="x").values[0],
        np.broadcast_to(np.abs(b[:, [1]]) / sigma[:, None], (5, n)),
    )
    table = pm_sens.summary(result)
    assert table["feature"].iloc[-1] == "Intercept" and table["rank"].isna().tolist()[-1]
    with pytest.raises(ValueError, match=r"categorical\['species'\] names the unknown feature"):
        pm_sens.sensitivity(idata, model, categorical={"species": ["sp_d"]}, progressbar=False)
    bad = {"X": np.array([[1.0, 0.0, 1.0, 1.0]])}
    with pytest.raises(ValueError, match=r"a combination the model's data does not have"):
        pm_sens.sensitivity(
            idata, model, points=bad, categorical={"species": ["sp_b", "sp_c"]}, progressbar=False
        )


@pytest.mark.parametrize("level", [3, -1, 10**12])
def test_every_function_refuses_an_index_outside_what_it_indexes(rng, level):
    model, idata, *_ = _grouped_model(rng, "normal")
    points = {"x": np.zeros(3), "group": np.array([0, 1, level])}
    message = rf"points\[.group.\] holds the level {level}, which"
    with pytest.raises(ValueError, match=message):
        pm_sens.integrated_gradients(idata, model, points=points, progressbar=False)
    with pytest.raises(ValueError, match=message):
        pm_sens.permutation_importance(
            idata, model, points=points, observed=np.zeros(3), progressbar=False
        )


def test_a_placeholder_container_is_not_constant_when_the_points_vary(rng):
    """pm.Data holding zeros until the points are given (a common pattern when the
    model is built before the data): its columns vary at the points, so they are
    rates; an intercept column of ones stays constant at points that keep it."""
    n = 20
    with pm.Model(coords={"col": ["Intercept", "x"]}) as model:
        xd = pm.Data("X", np.zeros((n, 2)), dims=("obs", "col"))
        b = pm.Normal("b", dims="col")
        pm.Normal("y", xd @ b, 1.0, observed=np.zeros(n), dims="obs")
    idata = posterior({"b": rng.normal(size=(1, 4, 2))}, dims={"b": ["col"]})
    points = np.column_stack([rng.normal(size=n), rng.normal(size=n)])
    out = pm_sens.sensitivity(idata, model, points={"X": points}, progressbar=False)
    out = out["sensitivity"]
    assert list(out["feature_kind"].values) == ["rate", "rate"]
    assert np.isfinite(out["rsens"].values).all()
    points[:, 0] = 0.0  # the placeholder's own value at every point: nothing varies
    out = pm_sens.sensitivity(idata, model, points={"X": points}, progressbar=False)
    assert list(out["sensitivity"]["feature_kind"].values) == ["constant", "rate"]


def test_nan_attrs_say_why_level_columns_are_nan(rng):
    model, idata, *_ = _grouped_model(rng, "normal")
    out = pm_sens.sensitivity(
        idata, model, method=["rsens", "ead", "aed"], interactions=True, progressbar=False
    )["sensitivity"]
    for name in ("eah", "aeh"):
        assert out[name].attrs["nan"] == (
            f"categorical inputs (feature_kind 'level') have no {name} pairs; "
            "their level sensitivity is in levels_<input>"
        ), name
    assert out["rsens2"].attrs["nan"] == (
        "a categorical input (feature_kind 'level') has no curvature, so its diagonal "
        "entry is NaN; its pairs are defined (documentation, "
        "'Hierarchical models and categorical inputs')"
    )
    assert "pairs" not in out["ead"].attrs["nan"]
    assert "nan" not in out["rsens"].attrs


def test_censored_normal_levels_at_order_two():
    """The per-draw censored Normal has a closed-form Rényi divergence of any
    order: levels at alpha=2 without a warning, equal to ``sqrt(2 D_2)`` between
    the censored laws of each point at its own and every other level."""
    from pm_sens.families import censored_normal

    group, x = np.array([0, 1, 2, 0, 1, 2]), np.linspace(-1, 1, 6)
    with pm.Model() as model:
        g, xd = pm.Data("g", group), pm.Data("x", x)
        a, b, s = pm.Normal("a", shape=3), pm.Normal("b"), pm.HalfNormal("s")
        pm.Censored("y", pm.Normal.dist(a[g] + b * xd, s), lower=-1.0, upper=1.5, observed=x)
    a_draw = np.array([-0.5, 1.0, 4.0])
    idata = posterior(
        {"a": a_draw[None, None], "b": np.full((1, 1), 0.7), "s": np.full((1, 1), 0.8)}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = pm_sens.sensitivity(
            idata, model, mode="draw", alpha=2.0, progressbar=False, extend_inferencedata=False
        )["sensitivity"]
    assert out.attrs["likelihood"] == "censored_normal"
    mu = a_draw[None, :] + 0.7 * x[:, None]  # (point, level)
    own = np.stack([mu[np.arange(6), group], np.full(6, 0.8)], -1)
    divergence = censored_normal.renyi_divergence(
        own[:, None], np.stack([mu, np.full_like(mu, 0.8)], -1), 2.0, -1.0, 1.5
    )
    divergence[np.arange(6), group] = 0.0  # the own level, exactly
    np.testing.assert_allclose(out["levels_g"].values[0, 0], np.sqrt(2 * divergence), rtol=1e-10)
