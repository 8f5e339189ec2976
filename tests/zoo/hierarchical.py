"""Hierarchical models and categorical inputs: group indices (one, two, nested),
varying intercepts and slopes, group-level predictors, flags and one-hot columns."""

import zlib

import numpy as np
import pymc as pm
from scipy import stats
from scipy.special import log_expit, logsumexp

from tests.zoo._registry import known_posterior, zoo_model

#: pymc-examples, examples/generalized_linear_models/multilevel_modeling (radon)
RADON_NOTEBOOK = "pymc-examples multilevel_modeling (radon)"


def _radon_like(rng, n=30, n_counties=5):
    """The notebook's arrays: county codes from pd.factorize, floor as int64 0/1
    (srrs_mn.floor.values), log uranium per county (float)."""
    county = np.r_[np.arange(n_counties), rng.integers(0, n_counties, n - n_counties)]
    floor = rng.integers(0, 2, n)
    uranium = rng.normal(size=n_counties)
    return county, floor, uranium


def _radon_arrays(case):
    """The floor flag and the county codes, and their inputs' names: containers in the
    notebook's models with pm.Data, NumPy arrays (named by pm_sens) in the others."""
    if "floor_idx" in case.model:
        floor, county = (case.model[n].get_value() for n in ("floor_idx", "county_idx"))
        return floor, county, ("floor_idx", "county_idx")
    county, floor, _ = _radon_like(np.random.default_rng(zlib.crc32(case.name.encode())))
    return floor, county, ("x_beta", "county")


def _normal_levels(case, mode):
    """sqrt(2 KL) between Normals at each point's own level and every level, for
    the county and the floor flag: per draw, and between the mixtures'
    moment-matched Normals in moment mode."""
    post = case.idata["posterior"]
    alpha = post["alpha"].values.reshape(-1, 5)
    beta = post["beta"].values.reshape(len(alpha), -1)  # common or per county
    sigma = post["sd_y" if "sd_y" in post else "sigma_y"].values.reshape(-1)
    floor, county, (floor_name, county_name) = _radon_arrays(case)

    def level_rates(mu, own):
        var = np.broadcast_to(sigma[:, None, None] ** 2, mu.shape)
        if mode == "moment":  # law of total variance
            var = (var + mu**2).mean(0, keepdims=True) - mu.mean(0, keepdims=True) ** 2
            mu = mu.mean(0, keepdims=True)
        rows = np.arange(len(own))
        m1, v1 = mu[:, rows, own][..., None], var[:, rows, own][..., None]
        kl = 0.5 * (np.log(var / v1) + (v1 + (m1 - mu) ** 2) / var - 1)
        return np.sqrt(2 * np.clip(kl, 0, None))

    beta_county = np.broadcast_to(beta, alpha.shape)
    at_county = alpha[:, None, :] + beta_county[:, None, :] * floor[None, :, None]  # (S, N, 5)
    at_floor = alpha[:, county][..., None] + beta_county[:, county][..., None] * np.arange(2)
    return {county_name: level_rates(at_county, county), floor_name: level_rates(at_floor, floor)}


@zoo_model(
    f"{RADON_NOTEBOOK}, varying_intercept as written: int64 floor_idx and county_idx "
    "containers with dims obs_id, alpha[county_idx] + beta * floor_idx",
    levels=_normal_levels,
    errors={"integrated_gradients": "depend only on categorical inputs"},
)
def varying_intercepts(rng):
    county, floor, _ = _radon_like(rng)
    coords = {"county": [f"c{i}" for i in range(5)], "obs_id": np.arange(len(county))}
    with pm.Model(coords=coords) as model:
        floor_idx = pm.Data("floor_idx", floor, dims="obs_id")
        county_idx = pm.Data("county_idx", county, dims="obs_id")
        mu_a = pm.Normal("mu_a", mu=0.0, sigma=10.0)
        sigma_a = pm.Exponential("sigma_a", 1)
        alpha = pm.Normal("alpha", mu=mu_a, sigma=sigma_a, dims="county")
        beta = pm.Normal("beta", mu=0.0, sigma=10.0)
        sd_y = pm.Exponential("sd_y", 1)
        y_hat = alpha[county_idx] + beta * floor_idx
        log_radon = rng.normal(size=len(county))
        pm.Normal("y_like", mu=y_hat, sigma=sd_y, observed=log_radon, dims="obs_id")
    return model, known_posterior(model)


@zoo_model(
    f"{RADON_NOTEBOOK}, varying_intercept_slope_noncentered as written: int64 floor_idx "
    "and county_idx containers, Deterministic alpha and beta with dims county",
    levels=_normal_levels,
    errors={"integrated_gradients": "depend only on categorical inputs"},
)
def varying_slopes(rng):
    county, floor, _ = _radon_like(rng)
    coords = {"county": [f"c{i}" for i in range(5)], "obs_id": np.arange(len(county))}
    with pm.Model(coords=coords) as model:
        floor_idx = pm.Data("floor_idx", floor, dims="obs_id")
        county_idx = pm.Data("county_idx", county, dims="obs_id")
        mu_a = pm.Normal("mu_a", mu=0.0, sigma=10.0)
        sigma_a = pm.Exponential("sigma_a", 5)
        z_a = pm.Normal("z_a", mu=0, sigma=1, dims="county")
        alpha = pm.Deterministic("alpha", mu_a + z_a * sigma_a, dims="county")
        mu_b = pm.Normal("mu_b", mu=0.0, sigma=10.0)
        sigma_b = pm.Exponential("sigma_b", 5)
        z_b = pm.Normal("z_b", mu=0, sigma=1, dims="county")
        beta = pm.Deterministic("beta", mu_b + z_b * sigma_b, dims="county")
        sigma_y = pm.Exponential("sigma_y", 5)
        y_hat = alpha[county_idx] + beta[county_idx] * floor_idx
        log_radon = rng.normal(size=len(county))
        pm.Normal("y_like", mu=y_hat, sigma=sigma_y, observed=log_radon, dims="obs_id")
    return model, known_posterior(model)


def _uranium_is_a_group_level_input(case, state):
    """Per draw, the Normal mean gamma_0 + gamma_1 u[county] + ...: R-sens of u is
    |gamma_1| / sigma_y at every point."""
    rsens = state["draw"]["sensitivity"]["rsens"].sel(feature="x_gamma_1")
    post = case.idata["posterior"]
    expected = abs(post["gamma_1"]) / post["sigma_y"]
    np.testing.assert_allclose(
        rsens.transpose("chain", "draw", ...),
        expected.values[..., None] * np.ones(rsens.shape[-1]),
        rtol=1e-10,
    )


@zoo_model(
    f"{RADON_NOTEBOOK}, hierarchical_intercept as written: NumPy county-level uranium u in "
    "Deterministic mu_a = gamma_0 + gamma_1 * u (no dims), alpha[county] + beta * "
    "floor_measure on NumPy int arrays, NumPy observed (uranium ranked as x_gamma_1)",
    levels=_normal_levels,
    check=_uranium_is_a_group_level_input,
)
def group_level_predictor(rng):
    county, floor_measure, u = _radon_like(rng)
    coords = {"county": [f"c{i}" for i in range(5)]}
    with pm.Model(coords=coords) as model:
        sigma_a = pm.HalfCauchy("sigma_a", 5)
        gamma_0 = pm.Normal("gamma_0", mu=0.0, sigma=10.0)
        gamma_1 = pm.Normal("gamma_1", mu=0.0, sigma=10.0)
        mu_a = pm.Deterministic("mu_a", gamma_0 + gamma_1 * u)
        epsilon_a = pm.Normal("epsilon_a", mu=0, sigma=1, dims="county")
        alpha = pm.Deterministic("alpha", mu_a + sigma_a * epsilon_a, dims="county")
        beta = pm.Normal("beta", mu=0.0, sigma=10.0)
        sigma_y = pm.Uniform("sigma_y", lower=0, upper=100)
        y_hat = alpha[county] + beta * floor_measure
        log_radon = rng.normal(size=len(county))
        pm.Normal("y_like", mu=y_hat, sigma=sigma_y, observed=log_radon)
    return model, known_posterior(model)


@zoo_model("crossed random effects: two group indices (subject and item)")
def two_group_indices(rng):
    n = 30
    subject = np.r_[np.arange(4), rng.integers(0, 4, n - 4)]
    item = np.r_[np.arange(3), rng.integers(0, 3, n - 3)]
    x = rng.normal(size=n)
    with pm.Model(coords={"subject": np.arange(4), "item": np.arange(3)}) as model:
        x_ = pm.Data("x", x)
        s_idx = pm.Data("subject_idx", subject)
        i_idx = pm.Data("item_idx", item)
        a_s = pm.Normal("a_s", 0, 1, dims="subject")
        a_i = pm.Normal("a_i", 0, 1, dims="item")
        b = pm.Normal("b", 0, 1)
        pm.Normal("y", a_s[s_idx] + a_i[i_idx] + b * x_, 1.0, observed=rng.normal(size=n))
    return model, known_posterior(model)


@zoo_model("nested groups: county within state, indexed county -> state")
def nested_groups(rng):
    n = 30
    state_of_county = np.array([0, 0, 1, 1, 1])
    county = np.r_[np.arange(5), rng.integers(0, 5, n - 5)]
    x = rng.normal(size=n)
    with pm.Model(coords={"state": [0, 1], "county": np.arange(5)}) as model:
        x_ = pm.Data("x", x)
        c_idx = pm.Data("county_idx", county)
        a_state = pm.Normal("a_state", 0, 1, dims="state")
        a_county = pm.Normal("a_county", a_state[state_of_county], 0.5, dims="county")
        b = pm.Normal("b", 0, 1)
        pm.Normal("y", a_county[c_idx] + b * x_, 1.0, observed=rng.normal(size=n))
    return model, known_posterior(model)


def _bernoulli_levels(case, mode):
    """sqrt(2 KL(own level || level l)) of a Bernoulli, by SciPy's relative entropy
    of the log masses (``log p = log_expit(η)``, exact for logits far apart)."""
    posterior = case.idata["posterior"]
    a = posterior["a"].values.reshape(-1, 3)
    b = posterior["b"].values.reshape(-1)
    x, g = case.model["x"].get_value(), case.model["g"].get_value()
    eta = a[:, None, :] + b[:, None, None] * x[None, :, None]  # (S, N, L)
    log_p, log_q = log_expit(eta), log_expit(-eta)
    if mode == "moment":  # the mixture over draws is a Bernoulli with the mean p
        log_p = logsumexp(log_p, axis=0, keepdims=True) - np.log(len(eta))
        log_q = logsumexp(log_q, axis=0, keepdims=True) - np.log(len(eta))
    own_p = np.take_along_axis(log_p, g[None, :, None], axis=-1)
    own_q = np.take_along_axis(log_q, g[None, :, None], axis=-1)
    kl = np.exp(own_p) * (own_p - log_p) + np.exp(own_q) * (own_q - log_q)
    return {"g": np.sqrt(2 * np.clip(kl, 0, None))}


@zoo_model(
    "a Bernoulli with 3 far-apart group levels (posterior spread of a: 20)",
    levels=_bernoulli_levels,
)
def bernoulli_far_apart_levels(rng):
    n = 20
    g = np.r_[np.arange(3), rng.integers(0, 3, n - 3)]
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        g_ = pm.Data("g", g)
        a = pm.Normal("a", 0, 20, shape=3)
        b = pm.Normal("b", 0, 1)
        pm.Bernoulli("y", logit_p=a[g_] + b * x_, observed=rng.integers(0, 2, n))
    draws = np.array([[[-20.0, 0.0, 20.0], [-30, 5, 25], [0, 40, -40]]] * 2)
    return model, known_posterior(model, fixed={"a": draws})


def _poisson_levels(case, mode):
    """Per draw, sqrt(2 KL) between Poisson laws summed over the support with SciPy."""
    if mode == "moment":
        return None  # matched by moments to a negative binomial: the Normal's check covers it
    post = case.idata["posterior"]
    a, b = post["a"].values.reshape(-1, 3), post["b"].values.reshape(-1)
    x, g = case.model["x"].get_value(), case.model["g"].get_value()
    rate = np.exp(a[:, None, :] + b[:, None, None] * x[None, :, None])  # (S, N, L)
    own = np.take_along_axis(rate, g[None, :, None], axis=-1)
    support = np.arange(int(stats.poisson.ppf(1 - 1e-16, rate.max())) + 10)[:, None, None, None]
    p = stats.poisson.pmf(support, own)
    log_q = stats.poisson.logpmf(support, rate)
    kl = np.sum(np.where(p > 0, p * (stats.poisson.logpmf(support, own) - log_q), 0.0), axis=0)
    return {"g": np.sqrt(2 * np.clip(kl, 0, None))}


@zoo_model(
    "a Poisson with far-apart group intercepts (log rates 15 apart)",
    levels=_poisson_levels,
)
def poisson_far_apart_levels(rng):
    n = 20
    g = np.r_[np.arange(3), rng.integers(0, 3, n - 3)]
    x = rng.normal(size=n)
    with pm.Model() as model:
        x_ = pm.Data("x", x)
        g_ = pm.Data("g", g)
        a = pm.Normal("a", 0, 5, shape=3)
        b = pm.Normal("b", 0, 0.3)
        pm.Poisson("y", mu=pm.math.exp(a[g_] + b * x_), observed=rng.poisson(2, n))
    draws = np.array([[[-7.0, 0.0, 8.0], [-6, 1, 7], [0, 7, -7]]] * 2)
    return model, known_posterior(model, fixed={"a": draws})


@zoo_model("a treatment flag (0/1 integer) and a one-hot design matrix of species (floats)")
def flag_and_one_hot(rng):
    n = 24
    treated = rng.integers(0, 2, n)
    species = np.r_[np.arange(3), rng.integers(0, 3, n - 3)]
    onehot = np.eye(3)[species][:, 1:]
    x = rng.normal(size=n)
    with pm.Model(coords={"species": ["b", "c"]}) as model:
        x_ = pm.Data("x", x)
        t_ = pm.Data("treated", treated)
        S = pm.Data("S", onehot, dims=(None, "species"))
        a = pm.Normal("a", 0, 1)
        effect = pm.Normal("effect", 0, 1, shape=2)
        bs = pm.Normal("bs", 0, 1, dims="species")
        b = pm.Normal("b", 0, 1)
        mu = a + effect[t_] + S @ bs + b * x_
        pm.Normal("y", mu, 1.0, observed=rng.normal(size=n))
    return model, known_posterior(model)


def _time_is_a_rate(case, state):
    kinds = state["moment"]["sensitivity"]["feature_kind"].to_series()
    assert kinds["t"] == "rate", f"t is taken as {kinds['t']!r}, not as a numeric input"


@zoo_model(
    "an integer time index used in arithmetic (the structural-AR notebook's trend without "
    "its latent AR: notebooks.structural_time_series writes the notebook's model)",
    check=_time_is_a_rate,
)
def integer_used_in_arithmetic(rng):
    n = 30
    t = np.arange(n)
    x = rng.normal(size=n)
    with pm.Model() as model:
        t_ = pm.Data("t", list(range(n)))
        x_ = pm.Data("x", x)
        alpha = pm.Normal("alpha", 0, 1)
        beta = pm.Normal("beta", 0, 0.1)
        gamma = pm.Normal("gamma", 0, 1)
        pm.Normal("y", alpha + beta * t_ + gamma * x_, 1.0, observed=0.05 * t + x)
    return model, known_posterior(model)


def _effect_read_at_its_row(case, state):
    """Draw mode, Poisson log link: R-sens = |b| sqrt(λ), λ = exp(a + b x_i + eps_i)."""
    post = case.idata["posterior"].to_dataset()
    a, b = (post[v].values.reshape(-1, 1) for v in ("a", "b"))
    eps = post["eps"].values.reshape(len(a), -1)
    rate = np.exp(a + b * case.model["x"].get_value() + eps)
    got = state["draw"]["sensitivity"]["rsens"].values.reshape(len(a), -1)
    np.testing.assert_allclose(got, np.abs(b) * np.sqrt(rate), rtol=1e-10)


@zoo_model(
    "an observation-level random effect for overdispersed counts (a user's form of the "
    "GLMM literature; no pymc-examples notebook writes it)",
    check=_effect_read_at_its_row,
)
def observation_level_effect(rng):
    n = 20
    x = rng.normal(size=n)
    with pm.Model(coords={"obs": np.arange(n)}) as model:
        x_ = pm.Data("x", x, dims="obs")
        a = pm.Normal("a", 0, 1)
        b = pm.Normal("b", 0, 0.5)
        s = pm.HalfNormal("s", 0.5)
        eps = pm.Normal("eps", 0, s, dims="obs")
        pm.Poisson("y", mu=pm.math.exp(a + b * x_ + eps), observed=rng.poisson(2, n), dims="obs")
    return model, known_posterior(model)


def _only_z_is_an_input(case, state):
    """Given the draws of the true values, the measured ones change nothing."""
    features = [str(f) for f in state["moment"]["sensitivity"]["feature"].values]
    assert features == ["z"], features


@zoo_model(
    "a measurement-error model: NumPy x_obs in a prior (a user's errors-in-variables form; "
    "no pymc-examples notebook writes it)",
    check=_only_z_is_an_input,
)
def measurement_error(rng):
    n = 20
    x_obs = rng.normal(size=n)
    z = rng.normal(size=n)
    with pm.Model() as model:
        z_ = pm.Data("z", z)
        x_true = pm.Normal("x_true", mu=x_obs, sigma=0.2, shape=n)
        b = pm.Normal("b", 0, 1, shape=3)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", b[0] + b[1] * x_true + b[2] * z_, sigma, observed=x_obs + z)
    return model, known_posterior(model)
