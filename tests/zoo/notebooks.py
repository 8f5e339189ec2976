"""Canonical PyMC notebooks as they write their models: the same data types
(bool flags, an integer time index in arithmetic), layouts (features × time),
containers (the observed series in ``pm.Data``) and operations."""

import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from scipy import stats

import pm_sens
from tests.zoo._registry import known_posterior, zoo_model
from tests.zoo.frontends import STEPPED

#: pymc-examples, examples/generalized_linear_models/GLM-negative-binomial-regression
NB_NOTEBOOK = "pymc-examples GLM-negative-binomial-regression"
#: pymc-examples, examples/time_series/Forecasting_with_structural_timeseries
STS_NOTEBOOK = "pymc-examples Forecasting_with_structural_timeseries"


def _sneezes(rng, q=6):
    """The notebook's table: four groups of q rows, bool columns built with np.repeat."""
    return pd.DataFrame(
        {
            "nsneeze": rng.poisson(3, 4 * q),
            "alcohol": np.concatenate(
                [np.repeat(False, q), np.repeat(True, q), np.repeat(False, q), np.repeat(True, q)]
            ),
            "nomeds": np.concatenate(
                [np.repeat(False, q), np.repeat(False, q), np.repeat(True, q), np.repeat(True, q)]
            ),
        }
    )


#: the notebook's flags do not depend on the draws of the counts
_FLAGS = (
    _sneezes(np.random.default_rng(0)).nomeds.to_numpy(),
    _sneezes(np.random.default_rng(0)).alcohol.to_numpy(),
)


def _sneeze_posterior(model, rng):
    """Draws near the notebook's fit: base rate 1, nomeds × 6, alcohol × 3, both × 2 more."""
    slopes = np.log([6.0, 3.0, 2.0]) + rng.normal(0, 0.1, (2, 3, 3))
    return known_posterior(
        model,
        fixed={
            "intercept": rng.normal(0, 0.1, (2, 3)),
            "slopes": slopes,
            "alpha": rng.gamma(100, 0.1, (2, 3)),
        },
    )


def _nb_level_kl(mu_own, alpha_own, mu, alpha):
    """KL(NB(own) ‖ NB(level)) summed over the support with SciPy, (..., L)."""
    top = int(stats.nbinom.ppf(1 - 1e-16, alpha_own, alpha_own / (alpha_own + mu_own)).max())
    y = np.arange(top + 50).reshape(-1, *([1] * mu.ndim))
    log_p = stats.nbinom.logpmf(y, alpha_own, alpha_own / (alpha_own + mu_own))
    log_q = stats.nbinom.logpmf(y, alpha, alpha / (alpha + mu))
    return np.sum(np.exp(log_p) * (log_p - log_q), axis=0)


def _sneeze_levels(names):
    """Level sensitivity of the two flags: per draw NB laws; in moment mode the NB
    matched to the mixture's mean and variance (law of total variance)."""

    def levels(case, mode):
        post = case.idata["posterior"]
        a = post["intercept"].values.reshape(-1, 1, 1)
        b = post["slopes"].values.reshape(-1, 3)
        alpha = post["alpha"].values.reshape(-1, 1, 1)
        flags = _FLAGS
        out = {}
        for which, name in enumerate(names):
            m = np.array(flags, float)  # (2, N): nomeds, alcohol
            values = np.stack([m.copy(), m.copy()])  # a copy per level
            values[:, which, :] = np.array([0.0, 1.0])[:, None]
            nomeds, alcohol = values[:, 0].T[None], values[:, 1].T[None]  # (1, N, L)
            mu = np.exp(
                a
                + b[:, 0, None, None] * nomeds
                + b[:, 1, None, None] * alcohol
                + b[:, 2, None, None] * nomeds * alcohol
            )  # (S, N, L)
            shape = np.broadcast_to(alpha, mu.shape)
            if mode == "moment":
                mean = mu.mean(0, keepdims=True)
                var = (mu + mu**2 / shape + mu**2).mean(0, keepdims=True) - mean**2
                mu, shape = mean, mean**2 / (var - mean)
            own = np.array(flags[which]).astype(int)[None, :, None]
            mu_own = np.take_along_axis(mu, own, -1)
            alpha_own = np.take_along_axis(shape, own, -1)
            kl = _nb_level_kl(mu_own, alpha_own, mu, shape)
            out[name] = np.sqrt(2 * np.clip(kl, 0, None))
        return out

    return levels


@zoo_model(
    f"{NB_NOTEBOOK}: NumPy bool columns (df.nomeds.to_numpy()) straight into "
    "exp(a + b[0] M + b[1] A + b[2] M A), coords for the regressors",
    levels=_sneeze_levels(["x_slopes[nomeds]", "x_slopes[alcohol]"]),
    errors={"integrated_gradients": "depend only on categorical inputs"},
)
def sneezes_numpy_bool(rng):
    df = _sneezes(rng)
    coords = {"regressor": ["nomeds", "alcohol", "nomeds:alcohol"], "obs_idx": df.index}
    with pm.Model(coords=coords) as model:
        a = pm.Normal("intercept", mu=0, sigma=5)
        b = pm.Normal("slopes", mu=0, sigma=1, dims="regressor")
        alpha = pm.Exponential("alpha", 0.5)
        M = df.nomeds.to_numpy()
        A = df.alcohol.to_numpy()
        lam = pm.math.exp(a + b[0] * M + b[1] * A + b[2] * M * A)
        pm.NegativeBinomial(
            "y", mu=lam, alpha=alpha, observed=df.nsneeze.to_numpy(), dims="obs_idx"
        )
    return model, _sneeze_posterior(model, rng)


@zoo_model(
    f"{NB_NOTEBOOK}: its model as written (pm.ConstantData, now pm.Data): bool containers "
    "M and A, the counts S a container passed as observed=",
    levels=_sneeze_levels(["nomeds", "alcohol"]),
    errors={"integrated_gradients": "depend only on categorical inputs"},
)
def sneezes_bool_containers(rng):
    df = _sneezes(rng)
    coords = {"regressor": ["nomeds", "alcohol", "nomeds:alcohol"], "obs_idx": df.index}
    with pm.Model(coords=coords) as model:
        a = pm.Normal("intercept", mu=0, sigma=5)
        b = pm.Normal("slopes", mu=0, sigma=1, dims="regressor")
        alpha = pm.Exponential("alpha", 0.5)
        M = pm.Data("nomeds", df.nomeds.to_numpy(), dims="obs_idx")
        A = pm.Data("alcohol", df.alcohol.to_numpy(), dims="obs_idx")
        S = pm.Data("nsneeze", df.nsneeze.to_numpy(), dims="obs_idx")
        lam = pm.math.exp(a + b[0] * M + b[1] * A + b[2] * M * A)
        pm.NegativeBinomial("y", mu=lam, alpha=alpha, observed=S, dims="obs_idx")
    return model, _sneeze_posterior(model, rng)


def _sts_checks(case, state):
    """Per draw, a Normal with one sigma: R-sens of t is |beta| / sigma and of each
    Fourier row |beta_fourier[k]| / sigma, at every point (the model is linear in them)."""
    local = state["draw"]["sensitivity"]
    post = case.idata["posterior"]
    sigma = post["sigma"]
    names = ["t", *(f"fourier_terms[{k}]" for k in range(4))]
    assert sorted(local["feature"].values) == sorted(names), local["feature"].values
    assert set(local["feature_kind"].values) == {"rate"}, "t is a continuous input"
    expected = [abs(post["beta"]) / sigma] + [
        abs(post["beta_fourier"].isel(fourier_features=k)) / sigma for k in range(4)
    ]
    for name, value in zip(names, expected, strict=True):
        got = local["rsens"].sel(feature=name).transpose("chain", "draw", ...)
        np.testing.assert_allclose(got, np.broadcast_to(value.values[..., None], got.shape))


@zoo_model(
    f"{STS_NOTEBOOK} (make_latent_AR_trend_seasonal_model): a latent pm.AR, a trend "
    "alpha + beta * t on t = list(range(N)), Fourier features stored features × time in "
    "dot(beta_fourier, fourier_terms), the series y a container passed as observed=",
    check=_sts_checks,
)
def structural_time_series(rng):
    n, n_order = 40, 2
    t_data = list(range(n))
    periods = np.array(t_data) / 7
    fourier_features = pd.DataFrame(
        {
            f"{func}_order_{order}": getattr(np, func)(2 * np.pi * periods * order)
            for order in range(1, n_order + 1)
            for func in ("sin", "cos")
        }
    )
    y_t = -4 - 0.1 * np.arange(n) + rng.normal(size=n) + 20 * fourier_features["sin_order_1"]
    with pm.Model() as model:
        pass
    ff = fourier_features.to_numpy().T
    model.add_coord("obs_id", t_data)
    model.add_coord("fourier_features", np.arange(len(ff)))
    with model:
        t = pm.Data("t", t_data, dims="obs_id")
        y = pm.Data("y", y_t, dims="obs_id")
        coefs = pm.Normal("coefs", [0.2, 0.2], [0.5, 0.03])
        sigma = pm.HalfNormal("sigma", 8)
        init = pm.Normal.dist(-4, 0.1, size=1)
        ar1 = pm.AR(
            "ar",
            coefs,
            sigma=sigma,
            init_dist=init,
            constant=True,
            steps=t.shape[0] - 1,
            dims="obs_id",
        )
        alpha = pm.Normal("alpha", -4, 0.1)
        beta = pm.Normal("beta", -0.1, 0.2)
        trend = pm.Deterministic("trend", alpha + beta * t, dims="obs_id")
        beta_fourier = pm.Normal("beta_fourier", mu=0, sigma=2, dims="fourier_features")
        fourier_terms = pm.Data("fourier_terms", ff)
        seasonality = pm.Deterministic(
            "seasonality", pm.math.dot(beta_fourier, fourier_terms), dims="obs_id"
        )
        mu = ar1 + trend + seasonality
        pm.Normal("likelihood", mu=mu, sigma=sigma, observed=y, dims="obs_id")
    return model, known_posterior(model)


#: pymc-examples, examples/survival_analysis/survival_analysis
SURVIVAL_NOTEBOOK = "pymc-examples survival_analysis"


def _survival_checks(case, state):
    """Cells after a patient's last interval have exposure 0: the predictive there is
    the point mass at 0, marked degenerate in every draw (every measure NaN). At the
    other cells the level sensitivity of the flag metastasized is sqrt(2 KL) between
    the Poisson laws at its two levels, λ = t λ₀ exp(β m)."""
    local = state["draw"]["sensitivity"]
    df, exposure, _, _ = _mastectomy_like(np.random.default_rng(zlib.crc32(b"survival_notebook")))
    zero = exposure.ravel() == 0
    degenerate = local["degenerate"].transpose("chain", "draw", ...).values.reshape(6, -1)
    assert zero.any() and (degenerate == zero).all(), "the zero-exposure cells, in every draw"
    post = case.idata["posterior"]
    lam0 = post["lambda0"].values.reshape(-1, 1, exposure.shape[1])
    beta = post["beta"].values.reshape(-1, 1, 1)
    own = df.metastasized.to_numpy()[None, :, None]
    rate = [(exposure * lam0 * np.exp(beta * m)).reshape(6, -1) for m in (own, 0, 1)]
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = [r0 * np.log(r0 / r) - r0 + r for r0, r in ((rate[0], rate[1]), (rate[0], rate[2]))]
    expected = np.sqrt(2 * np.clip(np.stack(kl, -1), 0, None))
    expected[zero[None, :].repeat(6, 0)] = np.nan
    got = local["levels_x_beta"].transpose("chain", "draw", ...).values.reshape(6, -1, 2)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    assert np.isfinite(pm_sens.importance(state["draw"]).values).all()


@zoo_model(
    f"{SURVIVAL_NOTEBOOK}: a piecewise-constant hazard, T.outer(exp(beta * "
    "df.metastasized), lambda0) times an exposure per patient × interval (0 after the "
    "patient's last interval), death a NumPy table",
    check=_survival_checks,
    errors={"integrated_gradients": "depend only on categorical inputs"},
)
def survival_notebook(rng):
    df, exposure, death, intervals = _mastectomy_like(rng)
    coords = {"intervals": intervals}
    with pm.Model(coords=coords) as model:
        lambda0 = pm.Gamma("lambda0", 0.01, 0.01, dims="intervals")
        beta = pm.Normal("beta", 0, sigma=1000)
        lambda_ = pm.Deterministic("lambda_", pt.outer(pt.exp(beta * df.metastasized), lambda0))
        mu = pm.Deterministic("mu", exposure * lambda_)
        pm.Poisson("obs", mu, observed=death)
    draws = {
        "lambda0": rng.gamma(20, 0.005, (2, 3, len(intervals))),
        "beta": rng.normal(0.4, 0.2, (2, 3)),
    }
    return model, known_posterior(model, fixed=draws)


def _mastectomy_like(rng, n_patients=12, interval_length=6):
    """The notebook's table built as it builds it: times, events, metastasized (0/1
    integers), the death indicators and each patient's time at risk per interval."""
    df = pd.DataFrame(
        {
            "time": np.round(rng.uniform(1, 30, n_patients), 1),
            "event": rng.integers(0, 2, n_patients),
            "metastasized": rng.integers(0, 2, n_patients),
        }
    )
    patients = np.arange(n_patients)
    interval_bounds = np.arange(0, df.time.max() + interval_length + 1, interval_length)
    n_intervals = interval_bounds.size - 1
    last_period = np.floor((df.time - 0.01) / interval_length).astype(int)
    death = np.zeros((n_patients, n_intervals))
    death[patients, last_period] = df.event
    exposure = np.greater_equal.outer(df.time.to_numpy(), interval_bounds[:-1]) * interval_length
    exposure[patients, last_period] = df.time - interval_bounds[last_period]
    return df, exposure, death, np.arange(n_intervals)


#: bambi's docs, notebooks/zero_inflated_regression (fish data: counts of fish caught)
ZIP_NOTEBOOK = "bambi's zero_inflated_regression notebook"
_FISH_TERMS = "livebait + camper + persons + child"


def _fish_like(rng, n=40):
    """The notebook's table: livebait and camper pd.Categorical of 0.0/1.0, persons
    and child floats, count a float column."""
    fish = pd.DataFrame(
        {
            "count": rng.poisson(2, n).astype(float),
            "livebait": rng.integers(0, 2, n).astype(float),
            "camper": rng.integers(0, 2, n).astype(float),
            "persons": rng.integers(1, 5, n).astype(float),
            "child": rng.integers(0, 4, n).astype(float),
        }
    )
    fish["livebait"] = pd.Categorical(fish["livebait"])
    fish["camper"] = pd.Categorical(fish["camper"])
    return fish


def _zip_levels(case, mode):
    """Per draw, sqrt(2 KL) between the zero-inflated Poisson laws at each point's own
    livebait (camper) and at both levels, summed over the counts with SciPy."""
    if mode == "moment":
        return None  # matched by moments to a negative binomial
    post = case.idata["posterior"]
    fish = _fish_like(np.random.default_rng(zlib.crc32(b"bambi_zero_inflated_fish")))
    columns = {
        c: fish[c].astype(float).to_numpy() for c in ("livebait", "camper", "persons", "child")
    }

    def coefficient(name):
        return post[name].values.reshape(6, -1)[:, :1]  # (S, 1)

    y = np.arange(1500)[:, None, None]  # (count, draw, point)
    out = {}
    for name in ("livebait", "camper"):
        laws = []
        for level in (None, 0.0, 1.0):
            x = dict(columns)
            if level is not None:
                x[name] = np.full(len(fish), level)
            eta = coefficient("Intercept") + sum(
                coefficient(c) * x[c][None, :] for c in ("livebait", "camper", "persons", "child")
            )
            logit = coefficient("psi_Intercept") + sum(
                coefficient(f"psi_{c}") * x[c][None, :]
                for c in ("livebait", "camper", "persons", "child")
            )
            mu, psi = np.exp(eta), 1 / (1 + np.exp(-logit))
            positive = np.log(psi) + stats.poisson.logpmf(y, mu)
            laws.append(np.where(y == 0, np.log1p(psi * np.expm1(-mu)), positive))
        own = laws[0]
        kl = [np.sum(np.exp(own) * (own - law), axis=0) for law in laws[1:]]
        out[name] = np.sqrt(2 * np.clip(np.stack(kl, -1), 0, None))  # (draw, point, level)
    return out


@zoo_model(
    f"{ZIP_NOTEBOOK}: bmb.Formula('count ~ {_FISH_TERMS}', 'psi ~ {_FISH_TERMS}'), "
    "family='zero_inflated_poisson', livebait and camper pd.Categorical; levels far apart",
    levels=_zip_levels,
)
def bambi_zero_inflated_fish(rng):
    import bambi as bmb

    fish = _fish_like(rng)
    formula = bmb.Formula(f"count ~ {_FISH_TERMS}", f"psi ~ {_FISH_TERMS}")
    model = bmb.Model(formula, fish, family="zero_inflated_poisson")
    model.build()
    # near the notebook's posterior, with livebait's effect far larger (q/p past float64)
    draws = np.random.default_rng(11)

    def near(mean, sd=0.1, extra=()):
        return draws.normal(mean, sd, size=(2, 3, *extra))

    fixed = {
        "Intercept": near(-1.6),
        "livebait": near(4.0, extra=(1,)),
        "camper": near(0.3, extra=(1,)),
        "persons": near(0.6),
        "child": near(-0.8),
        "psi_Intercept": near(-1.4),
        "psi_livebait": near(-0.2, extra=(1,)),
        "psi_camper": near(0.8, extra=(1,)),
        "psi_persons": near(0.9),
        "psi_child": near(-1.9),
    }
    return model, known_posterior(model.backend.model, fixed=fixed)


def _binomial_checks(case, state):
    """Trials are held, never an input; per draw R-sens of x is |b_x| sqrt(n p (1 − p))."""
    local = state["draw"]["sensitivity"]
    assert list(local["feature"].values) == ["x", "z"], local["feature"].values
    frame = _trials_frame(np.random.default_rng(zlib.crc32(b"bambi_binomial_trials")))
    post = case.idata["posterior"]
    coefficient = {k: post[k].values.reshape(6, 1) for k in ("Intercept", "x", "z")}
    eta = coefficient["Intercept"] + coefficient["x"] * frame.x.to_numpy()
    p = 1 / (1 + np.exp(-(eta + coefficient["z"] * frame.z.to_numpy())))
    expected = np.abs(coefficient["x"]) * np.sqrt(frame.trials.to_numpy() * p * (1 - p))
    got = local["rsens"].sel(feature="x").transpose("chain", "draw", ...).values.reshape(6, -1)
    np.testing.assert_allclose(got, expected, rtol=1e-9)


def _trials_frame(rng, n=30):
    frame = pd.DataFrame(
        {"x": rng.normal(size=n), "z": rng.uniform(1, 3, n), "trials": rng.integers(5, 20, n)}
    )
    frame["successes"] = rng.binomial(frame.trials, 0.4)
    return frame


@zoo_model(
    "bambi's docs (binomial regression): p(successes, trials) ~ x + z, family='binomial'",
    check=_binomial_checks,
)
def bambi_binomial_trials(rng):
    import bambi as bmb

    model = bmb.Model("p(successes, trials) ~ x + z", _trials_frame(rng), family="binomial")
    model.build()
    draws = np.random.default_rng(5)
    fixed = {
        "Intercept": draws.normal(0.0, 0.1, (2, 3)),
        "x": draws.normal(0.5, 0.1, (2, 3)),
        "z": draws.normal(-0.3, 0.1, (2, 3)),
    }
    return model, known_posterior(model.backend.model, fixed=fixed)


#: pymc-bart's docs, examples/BART_introduction ("Biking with BART")
BIKES_NOTEBOOK = "pymc-bart BART_introduction (Biking with BART)"
BIKES = Path(__file__).parents[2] / "examples" / "data" / "bike_sharing" / "hour_february.csv"
BIKE_FEATURES = ["hour", "temperature", "humidity", "workingday"]


def _bikes():
    """The notebook's bikes.csv columns, from the UCI bike-sharing hours (February; see
    examples/data/bike_sharing/README.md for the source and citation): hour and
    workingday int64, temperature and humidity float, count int64."""
    hours = pd.read_csv(BIKES).sample(120, random_state=0).reset_index(drop=True)
    names = {"hr": "hour", "temp": "temperature", "hum": "humidity", "cnt": "count"}
    return hours.rename(columns=names)[[*BIKE_FEATURES, "count"]]


def _moved_by_pymc_bart(X):
    """Rows pymc-bart's sampler jitters, as bartrs writes it: in each whole-number
    column, every value already seen in an earlier row."""
    moved = np.zeros(len(X), dtype=bool)
    for column in X.T:
        if np.all(column % 1 == 0):
            seen = set()
            for row, value in enumerate(column):
                moved[row] |= value in seen
                seen.add(value)
    return moved


def _biking_checks(case, state):
    """The trees reproduce the draws at the rows pymc-bart left unmoved; per draw, the
    KL over a step of temperature is SciPy's sum of the NB log ratio over the counts,
    with the means from pymc-bart's own evaluation of the trees."""
    from pymc_bart.utils import _get_posterior_sampler

    from pm_sens.graph.frontends.trees import jittered_rows

    mu = case.model["μ"]
    sampler = _get_posterior_sampler(mu.owner.op)
    X = _bikes()[BIKE_FEATURES].to_numpy(dtype=float)
    moved = _moved_by_pymc_bart(X)
    np.testing.assert_array_equal(jittered_rows(mu, X), moved)
    draws = case.idata["posterior"]["μ"].values[0]  # one chain: history positions 0..59

    def trees(x):
        return sampler.sample_posterior(np.ascontiguousarray(x), list(range(60)), None)[:, 0]

    at_rows = trees(X)
    np.testing.assert_allclose(at_rows[:, ~moved], draws[:, ~moved], rtol=1e-12)
    assert not np.allclose(at_rows, draws)  # pymc-bart's draws are at the jittered rows

    alpha = case.idata["posterior"]["α"].values[0]
    h = 0.1 * X[:, 1].std()
    kl = state["draw"]["sensitivity"]["kl"].sel(feature="1").values[0]  # (draw, point)
    shifted = [trees(X + s * h * np.eye(4)[1]) for s in (1, -1)]
    for point in (0, 7, 51):
        for draw in (0, 33):
            a, m = alpha[draw], np.exp(at_rows[draw, point])
            p = stats.nbinom(a, a / (a + m))
            y = np.arange(int(p.isf(1e-16)) + 1)
            total = 0.0
            for moved_mu in shifted:
                q_mean = np.exp(moved_mu[draw, point])
                q = stats.nbinom(a, a / (a + q_mean))
                total += np.sum(p.pmf(y) * (p.logpmf(y) - q.logpmf(y)))
            np.testing.assert_allclose(kl[draw, point], np.sqrt(total) / h, rtol=1e-8)


@zoo_model(
    f"{BIKES_NOTEBOOK}: X = bikes[features] a DataFrame with int64 hour and workingday, "
    "BART('μ', X, np.log(Y), m=50), NegativeBinomial(mu=exp(μ), alpha=α)",
    **STEPPED,
    check=_biking_checks,
)
def bart_biking(rng):
    import pymc_bart as pmb

    from tests.zoo.frontends import bart_fit

    bikes = _bikes()
    X = bikes[BIKE_FEATURES]
    Y = bikes["count"]
    with pm.Model() as model:
        α = pm.Exponential("α", 1)
        μ = pmb.BART("μ", X, np.log(Y), m=50)
        pm.NegativeBinomial("y", mu=pm.math.exp(μ), alpha=α, observed=Y)
    return model, bart_fit(model, 5)


@zoo_model(
    f"{BIKES_NOTEBOOK}, Out-of-Sample Predictions as written: X = pm.Data('X', X_train) of "
    "the shuffled training DataFrame (int64 hour and workingday), Y = Y_train a pandas "
    "Series, BART('μ', X, np.log(Y)), NegativeBinomial(..., observed=Y, shape=μ.shape)",
    **STEPPED,
)
def bart_biking_out_of_sample(rng):
    import pymc_bart as pmb

    from tests.zoo.frontends import bart_fit

    bikes = _bikes().iloc[:60]  # fewer rows than the notebook's 348
    # train_test_split(X, Y, test_size=0.2): shuffled rows, the DataFrames' index kept
    train = rng.permutation(len(bikes))[: int(0.8 * len(bikes))]
    X_train, Y_train = bikes[BIKE_FEATURES].iloc[train], bikes["count"].iloc[train]
    with pm.Model() as model:
        X = pm.Data("X", X_train)
        Y = Y_train
        α = pm.Exponential("α", 1)
        μ = pmb.BART("μ", X, np.log(Y), m=10)
        pm.NegativeBinomial("y", mu=pm.math.exp(μ), alpha=α, observed=Y, shape=μ.shape)
    return model, bart_fit(model, 6)


def _coal(rng):
    """Disaster dates like the notebook's coal.csv (1851–1962, fewer after 1890)."""
    early = rng.uniform(1851, 1890, 120)
    late = rng.uniform(1890, 1962, 70)
    return np.sort(np.concatenate([early, late]))


@zoo_model(
    "pymc-examples bart_introduction (Coal mining with BART) as written: x_data = "
    "x_centers[:, None] a NumPy column of histogram bin centres, BART('μ_', X=x_data, "
    "Y=np.log(y_data), m=20), Deterministic μ = exp(μ_), Poisson(mu=μ)",
    **STEPPED,
)
def bart_coal_mining(rng):
    import pymc_bart as pmb

    from tests.zoo.frontends import bart_fit

    coal = _coal(rng)
    years = int(coal.max() - coal.min())
    bins = years // 4
    hist, x_edges = np.histogram(coal, bins=bins)
    x_centers = x_edges[:-1] + (x_edges[1] - x_edges[0]) / 2
    x_data = x_centers[:, None]
    y_data = hist
    with pm.Model() as model_coal:
        μ_ = pmb.BART("μ_", X=x_data, Y=np.log(y_data), m=20)
        μ = pm.Deterministic("μ", pm.math.exp(μ_))
        pm.Poisson("y_pred", mu=μ, observed=y_data)
    return model_coal, bart_fit(model_coal, 7)


#: pymc-examples, examples/mixture_models/dependent_density_regression
DDR_NOTEBOOK = "pymc-examples dependent_density_regression"


def _norm_cdf(z):
    return 0.5 * (1 + pt.erf(z / np.sqrt(2)))


def _stick_breaking(v):
    return v * pt.concatenate(
        [pt.ones_like(v[:, :1]), pt.extra_ops.cumprod(1 - v[:, :-1], axis=1)], axis=1
    )


def _lidar_like(rng, n=30):
    """Standardized range and log ratio shaped like the LIDAR data (flat, then falling,
    noise growing with the range); the data set itself is not shipped."""
    x = np.sort(rng.uniform(390, 720, n))
    y = np.where(x < 550, -0.05, -0.05 - 0.006 * (x - 550)) + rng.normal(0, 0.02 + x / 8000)
    return (x - x.mean()) / x.std(), (y - y.mean()) / y.std()


def _ddr_checks(case, state):
    """Per draw, R-sens of x is sqrt(KL(x+h) + KL(x−h))/h of the NormalMixtures, with
    the probit stick-breaking weights in SciPy and the KL by adaptive quadrature."""
    from scipy import integrate, special

    post = case.idata["posterior"]
    x = case.model["x"].get_value()
    rsens = state["draw"]["sensitivity"]["rsens"].sel(feature="x")
    for chain, draw, point in ((0, 0, 3), (1, 2, 17)):
        a, b, g, d, s = (
            post[k].values[chain, draw] for k in ("alpha", "beta", "gamma", "delta", "sigma")
        )

        def mixture(xv, a=a, b=b, g=g, d=d):
            v = special.ndtr(a + xv * b)
            return v * np.concatenate([[1.0], np.cumprod(1 - v[:-1])]), g + d * xv

        def kl(xa, xb, s=s, mixture=mixture):
            (wa, ma), (wb, mb) = mixture(xa), mixture(xb)

            def integrand(y):
                p = wa @ stats.norm.pdf(y, ma, s)
                return p * np.log(p / (wb @ stats.norm.pdf(y, mb, s))) if p > 0 else 0.0

            points = np.sort(ma[wa > 1e-12])
            low, high = (ma - 12 * s).min(), (ma + 12 * s).max()
            return integrate.quad(integrand, low, high, points=points, limit=400)[0]

        h, xv = 1e-3, x[point]
        expected = np.sqrt(kl(xv, xv + h) + kl(xv, xv - h)) / h
        got = rsens.isel(chain=chain, draw=draw).values[point]
        np.testing.assert_allclose(got, expected, rtol=1e-3)


@zoo_model(
    f"{DDR_NOTEBOOK}: probit stick-breaking weights norm_cdf(alpha + pt.outer(x, beta)) "
    "by erf, stick_breaking with pt.extra_ops.cumprod, component means gamma + "
    "pt.outer(x, delta), NormalMixture, y a container, dims N and K (3 components, not "
    "the notebook's 20: its graphs take minutes to compile)",
    check=_ddr_checks,
)
def dependent_density_regression(rng):
    std_range, std_logratio = _lidar_like(rng)
    N, K = len(std_range), 3
    with pm.Model(coords={"N": np.arange(N), "K": np.arange(K) + 1}) as model:
        alpha = pm.Normal("alpha", 0, 5, dims="K")
        beta = pm.Normal("beta", 0, 5, dims="K")
        x = pm.Data("x", std_range, dims="N")
        v = _norm_cdf(alpha + pt.outer(x, beta))
        w = pm.Deterministic("w", _stick_breaking(v), dims=["N", "K"])
        gamma = pm.Normal("gamma", 0, 3, dims="K")
        delta = pm.Normal("delta", 0, 3, dims="K")
        mu = pm.Deterministic("mu", gamma + pt.outer(x, delta), dims=("N", "K"))
        sigma = pm.HalfNormal("sigma", 3, dims="K")
        y = pm.Data("y", std_logratio, dims="N")
        pm.NormalMixture("obs", w, mu, sigma=sigma, observed=y, dims="N")
    # as a posterior's draws: the last break takes the rest of the stick, so the
    # truncated weights sum to 1 (PyMC's mixture checks it)
    draws = np.random.default_rng(3)
    alpha = draws.normal(0, 5, (2, 3, K))
    alpha[..., -1] = 40.0
    fixed = {"alpha": alpha, "beta": draws.normal(0, 5, (2, 3, K)).clip(-15, 15)}
    return model, known_posterior(model, fixed=fixed)


#: pymc-examples, examples/generalized_linear_models/GLM-robust
ROBUST_NOTEBOOK = "pymc-examples GLM-robust"


def _robust_checks(case, state):
    """Per draw, Student-t(ν = 3) in its location: R-sens of x is
    |slope| sqrt((ν + 1)/(ν + 3)) / σ at every point."""
    post = case.idata["posterior"]
    expected = np.abs(post["slope"]) * np.sqrt(4 / 6) / post["sigma"]
    got = state["draw"]["sensitivity"]["rsens"].sel(feature="x").transpose("chain", "draw", ...)
    np.testing.assert_allclose(got, np.broadcast_to(expected.values[..., None], got.shape))


@zoo_model(
    f"{ROBUST_NOTEBOOK}: x a container with dims obs_id (pm.ConstantData, now pm.Data), "
    "a Deterministic mu with dims, StudentT(nu=3) on a NumPy y",
    check=_robust_checks,
)
def studentt_robust_notebook(rng):
    size = 30
    x = np.linspace(0, 1, size)
    y = 1 + 2 * x + rng.normal(scale=0.5, size=size)
    x_out, y_out = np.append(x, [0.1, 0.15, 0.2]), np.append(y, [8, 6, 9])
    with pm.Model(coords={"obs_id": np.arange(len(x_out))}) as model:
        xdata = pm.Data("x", x_out, dims="obs_id")
        intercept = pm.Normal("intercept", mu=0, sigma=1)
        slope = pm.Normal("slope", mu=0, sigma=1)
        sigma = pm.HalfCauchy("sigma", beta=10)
        mu = pm.Deterministic("mu", intercept + slope * xdata, dims="obs_id")
        pm.StudentT("y", mu=mu, sigma=sigma, nu=3, observed=y_out, dims="obs_id")
    return model, known_posterior(model)


#: pymc-examples, examples/generalized_linear_models/GLM-ordinal-regression
ORDINAL_NOTEBOOK = "pymc-examples GLM-ordinal-regression"


def _ratings(rng, n=40):
    """The notebook's make_data: salary, work satisfaction, an int 0/1 work-from-home
    flag, a rounded latent rating (here 0..6)."""
    salary = rng.normal(40, 10, n)
    work_sat = rng.beta(1, 0.4, n)
    work_from_home = rng.binomial(1, 0.5, n)
    latent = 0.08 * salary + 0.2 * work_sat + work_from_home + rng.normal(0, 1, n)
    rating = np.clip(np.round(latent), 0, 6).astype(int)
    return pd.DataFrame(
        {
            "salary": salary,
            "work_sat": work_sat,
            "work_from_home": work_from_home,
            "explicit_rating": rating,
        }
    )


@zoo_model(
    f"{ORDINAL_NOTEBOOK} (make_model, model_spec=3): pandas columns straight into "
    "beta[0] * df.salary + beta[1] * df.work_sat + beta[2] * df.work_from_home (an int "
    "0/1 flag), a Deterministic mu, cutpoints Normal(sigma ~ Exponential) with the ordered "
    "transform (univariate_ordered in PyMC 5), OrderedLogistic on the int ratings",
)
def ordinal_regression_notebook(rng):
    df = _ratings(rng)
    K = 7
    with pm.Model() as model:
        sigma = pm.Exponential("sigma", 1)
        cutpoints = pm.Normal(
            "cutpoints",
            mu=np.linspace(0, K, K - 1),
            sigma=sigma,
            transform=pm.distributions.transforms.ordered,
        )
        beta = pm.Normal("beta", 0, 1, size=3)
        mu = pm.Deterministic(
            "mu", beta[0] * df.salary + beta[1] * df.work_sat + beta[2] * df.work_from_home
        )
        pm.OrderedLogistic("y", cutpoints=cutpoints, eta=mu, observed=df.explicit_rating)
    draws = np.random.default_rng(3)
    fixed = {
        "cutpoints": np.sort(draws.normal(np.linspace(2, 6, K - 1), 0.2, (2, 3, K - 1)), -1),
        "beta": draws.normal([0.08, 0.2, 1.0], 0.02, (2, 3, 3)),
    }
    return model, known_posterior(model, fixed=fixed)


#: pymc-examples, examples/gaussian_processes/HSGP-Basic, "Example 2: Working with HSGPs
#: as a parametric, linear model"
HSGP_NOTEBOOK = "pymc-examples HSGP-Basic (example 2)"


def _hsgp_checks(case, state):
    """Per draw, a Normal in its mean: R-sens of the fixed-effect column X_fe is
    |beta[1]| / sigma at every point (mu is linear in it)."""
    post = case.idata["posterior"]
    expected = np.abs(post["beta"].sel(beta_dim_0=1)) / post["sigma"]
    got = state["draw"]["sensitivity"]["rsens"].sel(feature="X_fe").transpose("chain", "draw", ...)
    np.testing.assert_allclose(got, np.broadcast_to(expected.values[..., None], got.shape))


@zoo_model(
    f"{HSGP_NOTEBOOK}: gp.prior_linearized on X_gp (pm.Data, two columns), f = "
    "Deterministic(phi @ (basis_coeffs * sqrt_psd)), a fixed effect X_fe (pm.Data of "
    "float 0/1: 1.0 * (|x0 // 5| == 1)), Deterministic mu, Normal with shape=X_gp.shape[0]",
    # R-sens of 0.02 where the largest is 25 (the basis bends there): the central KL's
    # O(delta²) error is 4.7e-4 at 1e-4, 4.7e-6 at 1e-5
    kl_delta=1e-5,
    check=_hsgp_checks,
)
def hsgp_prior_linearized(rng):
    # the notebook: 2048 Sobol points on [-10, 10]², m = [30, 30]; fewer here, same forms
    n = 40
    X = 20 * rng.random((n, 2)) - 10.0
    ix = 1.0 * (np.abs(X[:, 0] // 5) == 1)
    X = np.hstack((X, ix[:, None]))
    y_tr = 3.0 + 2.0 * X[:, 2] + np.sin(X[:, 0] / 2) + rng.normal(0, 0.75, n)
    with pm.Model() as model:
        X_gp = pm.Data("X_gp", X[:, :2])
        X_fe = pm.Data("X_fe", X[:, 2])
        beta = pm.Normal("beta", mu=0.0, sigma=10.0, shape=2)
        eta = pm.Exponential("eta", scale=3.0)
        # the notebook's pm.find_constrained_prior(pm.Lognormal, lower=0.5, upper=5.0,
        # mass=0.9), solved once: its result
        ell = pm.Lognormal("ell", mu=0.458, sigma=0.700)
        cov_func = eta**2 * pm.gp.cov.Matern52(input_dim=2, ls=ell)
        m0, m1, c = 6, 6, 2.5
        gp = pm.gp.HSGP(m=[m0, m1], c=c, cov_func=cov_func)
        # the notebook's Xs= is PyMC 6's X=
        phi, sqrt_psd = gp.prior_linearized(X=X_gp)
        basis_coeffs = pm.Normal("basis_coeffs", size=gp.n_basis_vectors)
        f = pm.Deterministic("f", phi @ (basis_coeffs * sqrt_psd))
        mu = pm.Deterministic("mu", beta[0] + beta[1] * X_fe + f)
        sigma = pm.Exponential("sigma", scale=3.0)
        pm.Normal("y_obs", mu=mu, sigma=sigma, observed=y_tr, shape=X_gp.shape[0])
    return model, known_posterior(model)


#: pymc-examples, examples/gaussian_processes/GP-Marginal, "Example: Regression with
#: white, Gaussian noise"
GP_MARGINAL_NOTEBOOK = "pymc-examples GP-Marginal"


@zoo_model(
    f"{GP_MARGINAL_NOTEBOOK}: X = np.linspace(0, 10, n)[:, None] a NumPy column, Matern52, "
    "ell ~ Gamma(2, 1), eta and sigma HalfCauchy(5), gp.marginal_likelihood; after "
    "sampling, gp.conditional('f_pred', X_new) and ('y_pred', X_new, pred_noise=True) "
    "added to the model, as the notebook does; Predictive.from_gp(gp)",
    # the central KL's O(delta²) error where R-sens is small: 5.3e-4 at 1e-4, 5.3e-6 at 1e-5
    kl_delta=1e-5,
)
def gp_marginal_notebook(rng):
    # the notebook: n = 100 and X_new of 600 points; fewer here, the same forms
    n = 20
    X = np.linspace(0, 10, n)[:, None]
    f_true = np.sin(X[:, 0])
    y = f_true + 0.5 * rng.standard_normal(n)
    with pm.Model() as model:
        ell = pm.Gamma("ell", alpha=2, beta=1)
        eta = pm.HalfCauchy("eta", beta=5)
        cov = eta**2 * pm.gp.cov.Matern52(1, ell)
        gp = pm.gp.Marginal(cov_func=cov)
        sigma = pm.HalfCauchy("sigma", beta=5)
        gp.marginal_likelihood("y", X=X, y=y, sigma=sigma)
    # the notebook samples here; HalfCauchy prior draws would be far from any fit
    draws = np.random.default_rng(3)
    fixed = {
        "ell": draws.gamma(20, 0.05, (2, 3)),
        "eta": draws.gamma(20, 0.075, (2, 3)),
        "sigma": draws.gamma(20, 0.025, (2, 3)),
    }
    idata = known_posterior(model, fixed=fixed)
    X_new = np.linspace(0, 20, 30)[:, None]
    with model:
        gp.conditional("f_pred", X_new)
        gp.conditional("y_pred", X_new, pred_noise=True)
    return model, idata, {"predictive": pm_sens.Predictive.from_gp(gp)}


#: pymc-examples, examples/gaussian_processes/GP-Latent
GP_LATENT_NOTEBOOK = "pymc-examples GP-Latent"


@zoo_model(
    f"{GP_LATENT_NOTEBOOK}, Example 2 (classification) as written: x = np.linspace(0, 10, n), "
    "gp.prior('f', X=x[:, None]), ell ~ InverseGamma(mu=1, sigma=0.5), eta ~ Exponential(1), "
    "Deterministic p = invlogit(f), Bernoulli(p=p); gp.conditional('f_pred', X_new) added "
    "after sampling; Predictive.from_gp(gp, likelihood='bernoulli', link='logit')",
    # the central KL's O(step²) term where R-sens is small: 1.0e-4 of it at 1e-4 sd
    kl_delta=1e-5,
)
def gp_latent_classification_notebook(rng):
    n = 12  # the notebook's 300 points, fewer
    x = np.linspace(0, 10, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-np.sin(x)))).astype(int)
    with pm.Model() as model:
        ell = pm.InverseGamma("ell", mu=1.0, sigma=0.5)
        eta = pm.Exponential("eta", lam=1.0)
        cov = eta**2 * pm.gp.cov.ExpQuad(1, ell)
        gp = pm.gp.Latent(cov_func=cov)
        f = gp.prior("f", X=x[:, None])
        p = pm.Deterministic("p", pm.math.invlogit(f))
        pm.Bernoulli("y", p=p, observed=y)
    draws = np.random.default_rng(4)
    fixed = {"ell": draws.gamma(20, 0.05, (2, 3)), "eta": draws.gamma(20, 0.05, (2, 3))}
    idata = known_posterior(model, fixed=fixed)
    with model:
        gp.conditional("f_pred", np.linspace(0, 12, 30)[:, None], jitter=1e-4)
    predictive = pm_sens.Predictive.from_gp(gp, likelihood="bernoulli", link="logit")
    return model, idata, {"predictive": predictive}


#: pymc-examples, examples/howto/spline ("Splines", the cherry blossoms)
SPLINE_NOTEBOOK = "pymc-examples spline"


def _blossoms(rng):
    """Integer years (the notebook: 827 between 812 and 2015; fewer here), a day of
    bloom each, and the notebook's 15 knots at the years' quantiles."""
    year = np.sort(rng.choice(np.arange(812, 2016), 40, replace=False))
    doy = pd.Series(rng.integers(90, 120, year.size), name="doy")
    return year, doy, np.quantile(year, np.linspace(0, 1, 15))


def _spline_checks(case, state):
    """Per draw, R-sens of year is |Σ_j w_j B_j′(year)| / σ, with SciPy's derivative
    of the spline on patsy's knots."""
    from scipy.interpolate import BSpline

    year, _, knot_list = _blossoms(np.random.default_rng(zlib.crc32(b"spline_notebook")))
    knots = np.r_[[year.min()] * 4, knot_list[1:-1], [year.max()] * 4]
    post = case.idata["posterior"].to_dataset()
    w = post["w"].values.reshape(-1, post["w"].shape[-1])
    sigma = post["sigma"].values.reshape(-1)
    slope = np.array([BSpline(knots, c, 3).derivative()(year) for c in w])
    got = state["draw"]["sensitivity"]["rsens"].sel(feature="year").values
    np.testing.assert_allclose(
        got.reshape(len(w), -1), np.abs(slope) / sigma[:, None], rtol=1e-8, atol=1e-12
    )


@zoo_model(
    f"{SPLINE_NOTEBOOK}: integer years, 15 knots at the years' quantiles, patsy's "
    "bs(year, knots=knots, degree=3, include_intercept=True) - 1 as a Fortran-ordered "
    "NumPy B, w with size= and dims=, mu = Deterministic(a + pm.math.dot(B, w.T)), integer "
    "doy observed as a pandas Series on dims 'obs' (coords the notebook leaves out and "
    "PyMC 6 requires); ranked "
    "per year with raw_inputs= and design=pm_sens.bspline_basis",
    # where the spline is nearly flat (R-sens 4e-5 of its largest) the central KL's
    # O(delta²) term is 6.6e-4 of R-sens at 1e-6, 4.1e-6 at 1e-7
    kl_delta=1e-7,
    check=_spline_checks,
)
def spline_notebook(rng):
    import patsy

    year, doy, knot_list = _blossoms(rng)
    B = patsy.dmatrix(
        "bs(year, knots=knots, degree=3, include_intercept=True) - 1",
        {"year": year, "knots": knot_list[1:-1]},
    )
    # the notebook's coords lack "obs", which PyMC 6 refuses: a user adds it
    coords = {"splines": np.arange(B.shape[1]), "obs": np.arange(year.size)}
    with pm.Model(coords=coords) as model:
        a = pm.Normal("a", 100, 5)
        w = pm.Normal("w", mu=0, sigma=3, size=B.shape[1], dims="splines")
        mu = pm.Deterministic("mu", a + pm.math.dot(np.asarray(B, order="F"), w.T))
        sigma = pm.Exponential("sigma", 1)
        pm.Normal("D", mu=mu, sigma=sigma, observed=doy, dims="obs")
    # patsy's knots: the inner ones padded by degree + 1 copies of each boundary
    knots = np.r_[[year.min()] * 4, knot_list[1:-1], [year.max()] * 4]
    predictive = pm_sens.Predictive.from_observed(
        model, raw_inputs={"year": year}, design=lambda year: pm_sens.bspline_basis(year, knots)
    )
    return model, known_posterior(model), {"predictive": predictive}


#: pymc-examples, examples/survival_analysis/bayes_param_survival ("Weibull survival regression")
PARAM_SURVIVAL_NOTEBOOK = "pymc-examples bayes_param_survival"


def _gumbel_sf(y, mu, sigma):
    """The notebook's survival function of the Gumbel distribution."""
    return 1.0 - pt.exp(-pt.exp(-(y - mu) / sigma))


def _aft_checks(location_information):
    """The points are the uncensored patients (the mask picks them); per draw, the
    location eta moves by beta[1] per unit of metastized: R-sens =
    |beta[1]| sqrt(I)/s, I the standard law's location information (Gumbel: 1;
    logistic: 1/3), both in closed form."""

    def check(case, state):
        local = state["draw"]["sensitivity"]
        X = case.model["predictors"].get_value()
        uncensored = ~case.model["censored"].get_value()
        np.testing.assert_array_equal(local["input_value"].values, X[uncensored])
        post = case.idata["posterior"]
        expected = np.abs(post["beta"].values[..., 1]) * np.sqrt(location_information)
        expected /= post["s"].values
        got = local["rsens"].sel(feature="1").transpose("chain", "draw", "point").values
        np.testing.assert_allclose(
            got, np.repeat(expected[..., None], got.shape[-1], -1), rtol=1e-12
        )

    return check


def _param_survival_data(rng):
    """The notebook's data prep (mastectomy-like: time, event, metastized), its
    design X (a column of ones and metastized) and the standardized log times."""
    n_patient = 30
    df = pd.DataFrame(
        {
            "time": rng.integers(1, 230, n_patient),
            "event": rng.integers(0, 2, n_patient),
            "metastized": rng.integers(0, 2, n_patient),
        }
    )
    X = np.empty((n_patient, 2))
    X[:, 0] = 1.0
    X[:, 1] = df.metastized
    y = np.log(df.time.values)
    y_std = (y - y.mean()) / y.std()
    return df, X, y_std


@zoo_model(
    f"{PARAM_SURVIVAL_NOTEBOOK}, weibull_model as written: predictors = pm.Data(X) with a "
    "column of ones and the int metastized flag as floats, eta = beta.dot(predictors.T), a "
    "bool container censored (df.event.values == 0.0), Gumbel('events', eta[~censored], s, "
    "observed=y_obs container), the censored rows through pm.Potential",
    check=_aft_checks(1.0),
)
def gumbel_aft_notebook(rng):
    df, X, y_std = _param_survival_data(rng)
    with pm.Model() as weibull_model:
        predictors = pm.Data("predictors", X)
        censored = pm.Data("censored", df.event.values == 0.0)
        y_obs = pm.Data("y_obs", y_std[df.event.values == 1.0])
        y_cens = pm.Data("y_cens", y_std[df.event.values == 0.0])
        beta = pm.Normal("beta", mu=0.0, sigma=5.0, shape=2)
        eta = beta.dot(predictors.T)
        s = pm.HalfNormal("s", 5.0)
        pm.Gumbel("events", eta[~censored], s, observed=y_obs)
        pm.Potential("censored_like", _gumbel_sf(y_cens, eta[censored], s))
    return weibull_model, known_posterior(weibull_model)


def _logistic_sf(y, mu, s):
    """The notebook's survival function of the logistic distribution."""
    return 1.0 - pm.math.sigmoid((y - mu) / s)


@zoo_model(
    f"{PARAM_SURVIVAL_NOTEBOOK}, log_logistic_model as written: the weibull_model's "
    "containers (predictors with a column of ones, the bool censored flag, y_obs and "
    "y_cens), eta = beta.dot(predictors.T), Logistic('events', eta[~censored], s, "
    "observed=y_obs), the censored rows through pm.Potential of the notebook's "
    "logistic_sf",
    check=_aft_checks(1 / 3),
)
def log_logistic_aft_notebook(rng):
    df, X, y_std = _param_survival_data(rng)
    with pm.Model() as log_logistic_model:
        predictors = pm.Data("predictors", X)
        censored = pm.Data("censored", df.event.values == 0.0)
        y_obs = pm.Data("y_obs", y_std[df.event.values == 1.0])
        y_cens = pm.Data("y_cens", y_std[df.event.values == 0.0])
        beta = pm.Normal("beta", 0.0, 5.0, shape=2)
        eta = beta.dot(predictors.T)
        s = pm.HalfNormal("s", 5.0)
        pm.Logistic("events", eta[~censored], s, observed=y_obs)
        pm.Potential("censored_like", _logistic_sf(y_cens, eta[censored], s))
    return log_logistic_model, known_posterior(log_logistic_model)


#: mfleader/llama-stack, benchmarking/api_latency_comparison/analysis/fit_resp_latency_model.py
WALD_LATENCY_SCRIPT = "llama-stack's API latency model (fit_resp_latency_model.py, build_model)"


def _latency_data(rng, n_runs=6, per_run=10):
    """Requests of two versions in alternating runs: time_idx 1.. per run (int), the
    run's position scaled to [0, 1], int run and group indexes, times in ms."""
    groups = ["baseline", "candidate"]
    run = np.repeat(np.arange(n_runs), per_run)
    group_idx = run % 2
    time_idx = np.tile(np.arange(1, per_run + 1), n_runs)
    y = rng.wald(np.where(group_idx == 0, 25.0, 27.0), 1000.0)
    runs_of = {g: [t for t in range(n_runs) if t % 2 == k] for k, g in enumerate(groups)}
    return groups, run, group_idx, time_idx, y, runs_of


def _wald_latency_checks(case, state):
    """Per draw, only the Wald's mean μ moves with the inputs (λ is per run), and
    ∂μ/∂x_drift = beta_drift: R-sens of x_drift is |beta_drift| √(λ/μ³) at every
    request, μ and λ rebuilt from the draws as the script builds them."""
    post = case.idata["posterior"]
    model = case.model
    run, group_idx = model["x_run"].get_value(), model["x_group"].get_value()
    delta = np.zeros((*post["beta_drift"].shape, int(run.max()) + 1))
    for k, group in enumerate(("baseline", "candidate")):
        delta[..., [t for t in range(delta.shape[-1]) if t % 2 == k]] = post[f"delta_{group}"]
    mu = (
        post["mu_version"].values[..., group_idx]
        + post["beta_drift"].values[..., None] * model["x_drift"].get_value()
        + delta[..., run]
        + post["f"].values
    )
    lam = np.exp(post["log_lambda_run"].values[..., run])
    expected = np.abs(post["beta_drift"].values[..., None]) * np.sqrt(lam / mu**3)
    got = state["draw"]["sensitivity"]["rsens"].sel(feature="x_drift")
    np.testing.assert_allclose(got.transpose("chain", "draw", ...).values, expected, rtol=1e-10)


@zoo_model(
    f"{WALD_LATENCY_SCRIPT}: coords with dims='obs_id', pm.Data x_time (float64 time "
    "index [:, None]), x_drift (run order scaled), int x_run and x_group; per-group "
    "ZeroSumNormal run intercepts set into pt.zeros(n_runs) one by one; "
    "lambda_obs = pt.exp(log_lambda_run[x_run]); an HSGP(m=[20], c=1.5, noncentered, "
    "drop_first) of x_time; mu clamped by pt.maximum(mu, 1e-6); pm.Wald(mu, lam, dims)",
    # R-sens of x_time near 5e-5 where f turns (its largest 0.44): the central KL's
    # O(delta²) error is 5e-4 there at 1e-4, 5e-6 at 1e-5
    kl_delta=1e-5,
    check=_wald_latency_checks,
)
def wald_latency_hsgp(rng):
    groups, run, group_idx, time_idx, y, runs_of = _latency_data(rng)
    n_runs = int(run.max()) + 1
    run_order_scaled = run.astype(np.float64) / max(n_runs - 1, 1)
    coords = {"group": groups, "obs_id": np.arange(len(y)), "run": np.arange(n_runs)}
    for g in groups:
        coords[f"run_{g}"] = np.arange(len(runs_of[g]))
    with pm.Model(coords=coords) as model:
        x_time = pm.Data("x_time", time_idx.astype(np.float64)[:, None])
        x_drift = pm.Data("x_drift", run_order_scaled, dims="obs_id")
        x_run = pm.Data("x_run", run, dims="obs_id")
        x_group = pm.Data("x_group", group_idx, dims="obs_id")
        mu_version = pm.Normal("mu_version", mu=25, sigma=10, dims="group")
        beta_drift = pm.Normal("beta_drift", mu=0, sigma=2)
        sigma_run = pm.Exponential("sigma_run", lam=1)
        delta_blocks = [
            pm.ZeroSumNormal(f"delta_{g}", sigma=sigma_run, dims=f"run_{g}") for g in groups
        ]
        delta_run_full = pt.zeros(n_runs)
        for gidx, g in enumerate(groups):
            for pos, t in enumerate(runs_of[g]):
                delta_run_full = pt.set_subtensor(delta_run_full[t], delta_blocks[gidx][pos])
        log_lambda_bar = pm.Normal("log_lambda_bar", mu=7, sigma=2)
        sigma_lambda = pm.Exponential("sigma_lambda", lam=1)
        log_lambda_run = pm.Normal(
            "log_lambda_run", mu=log_lambda_bar, sigma=sigma_lambda, dims="run"
        )
        lambda_obs = pt.exp(log_lambda_run[x_run])
        eta_gp = pm.HalfNormal("eta_gp", sigma=0.25)
        ell_gp = pm.InverseGamma("ell_gp", mu=6, sigma=3)
        cov_func = eta_gp**2 * pm.gp.cov.Matern32(input_dim=1, ls=ell_gp)
        gp = pm.gp.HSGP(
            m=[20], c=1.5, cov_func=cov_func, parametrization="noncentered", drop_first=True
        )
        f = gp.prior("f", X=x_time)
        mu = mu_version[x_group] + beta_drift * x_drift + delta_run_full[x_run] + f
        mu = pt.maximum(mu, 1e-6)
        pm.Wald("y", mu=mu, lam=lambda_obs, observed=y, dims="obs_id")
    draws = np.random.default_rng(4)
    # versions near the data's 25 and 27 ms: mu stays far above the clamp
    fixed = {"mu_version": draws.normal([25.0, 27.0], 0.5, (2, 3, 2))}
    return model, known_posterior(model, fixed=fixed)
