"""pymc-marketing's MMM (issue 35): channels, controls, adstock and saturation as
pymc-marketing builds them, checked against the model written out in NumPy and
against pymc-marketing's own channel contributions. Runs where pymc-marketing is
installed (``scripts/test.sh`` runs it in ``.venv-marketing``, PyMC 6.3)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import pm_sens
from tests.zoo._registry import known_posterior

pytest.importorskip("pymc_marketing")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

QUIET = dict(progressbar=False, extend_inferencedata=False)
FEATURES = ["channel_data[tv]", "channel_data[search]", "control_data[event]"]
L_MAX = 4


def _data(n=40, seed=3):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "date_week": pd.date_range("2024-01-01", periods=n, freq="W-MON"),
            "tv": rng.uniform(0, 100, n) * (rng.uniform(size=n) > 0.3),
            "search": rng.uniform(5, 40, n),
            "event": (rng.uniform(size=n) > 0.85).astype(float),
        }
    )
    frame["sales"] = 50 + 0.4 * frame.tv + 0.8 * frame.search + rng.normal(0, 5, n)
    return frame


def _mmm(frame, **kwargs):
    from pymc_marketing.mmm import GeometricAdstock, LogisticSaturation
    from pymc_marketing.mmm.mmm import MMM

    mmm = MMM(
        date_column="date_week",
        channel_columns=["tv", "search"],
        adstock=GeometricAdstock(l_max=L_MAX),
        saturation=LogisticSaturation(),
        target_column="sales",
        **kwargs,
    )
    mmm.build_model(frame.drop(columns="sales"), frame["sales"])
    return mmm


@pytest.fixture(scope="module")
def fitted():
    """An MMM with a control, and known draws (prior draws: no MCMC)."""
    frame = _data()
    mmm = _mmm(frame, control_columns=["event"])
    mmm.idata = known_posterior(mmm.model, chains=2, draws=4, seed=5)
    return mmm, frame


def _mean_by_hand(mmm, frame, posterior, spend):
    """μ_t of every draw, from the formulas of pymc-marketing's docs.

    Geometric adstock with normalized weights ``w_l = α^l / Σ α^k`` over the last
    ``l_max`` weeks (zero before the first), of the spend divided by its channel's
    maximum; logistic saturation ``β (1 − e^{−λu}) / (1 + e^{−λu}) = β tanh(λu/2)``;
    plus the intercept and ``γ · control``. Returns μ (S, N), the derivative
    ∂μ_t/∂x_{s,c} (S, N, N, C) and the contributions (S, N, C).
    """
    scale = np.abs(frame[mmm.channel_columns].to_numpy()).max(0)
    alpha, lam, beta = (
        posterior[name].values.reshape(-1, len(mmm.channel_columns))
        for name in ("adstock_alpha", "saturation_lam", "saturation_beta")
    )
    weights = alpha[:, None, :] ** np.arange(L_MAX)[None, :, None]
    weights /= weights.sum(1, keepdims=True)  # (S, L, C)
    n = len(spend)
    lag = np.zeros((alpha.shape[0], n, n, alpha.shape[1]))  # ∂u_t/∂x_s per channel
    for k in range(L_MAX):
        lag += np.eye(n, k=-k)[None, :, :, None] * weights[:, k, None, None, :]
    adstocked = np.einsum("gtsc,sc->gtc", lag, spend / scale)
    saturated = np.tanh(lam[:, None, :] * adstocked / 2)
    contributions = beta[:, None, :] * saturated
    slope = beta[:, None, :] * lam[:, None, :] / 2 * (1 - saturated**2)
    derivative = slope[:, :, None, :] * lag / scale
    gamma = posterior["gamma_control"].values.reshape(alpha.shape[0], -1)
    intercept = posterior["intercept_contribution"].values.reshape(-1, 1)
    control = frame[["event"]].to_numpy()
    mean = intercept + contributions.sum(-1) + gamma @ control.T
    return mean, derivative, contributions


def test_contributions_by_hand_are_pymc_marketings(fitted):
    """The formulas of `_mean_by_hand` are the model pymc-marketing built."""
    mmm, frame = fitted
    posterior = mmm.idata.posterior
    mean, _, contributions = _mean_by_hand(mmm, frame, posterior, frame[["tv", "search"]].values)
    expected = posterior["channel_contribution"].transpose("chain", "draw", "date", "channel")
    expected = expected.values.reshape(contributions.shape)
    np.testing.assert_allclose(contributions, expected, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(mean, posterior["mu"].values.reshape(mean.shape), rtol=1e-12)


def test_rsens_of_each_week_of_spend_is_the_joint_closed_form(fitted):
    """Draw-mode R-sens of x_{s,c}: sqrt(Σ_t (∂μ_t/∂x_{s,c})²)/σ (the adstock carries a
    week's spend into the next l_max − 1 weeks); of the control: |γ|/σ."""
    mmm, frame = fitted
    out = pm_sens.sensitivity(mmm.idata, mmm, mode="draw", **QUIET)["sensitivity"]
    assert list(out.feature.values) == FEATURES
    assert "s+0 to s+3" in out.attrs["dependence"]
    posterior = mmm.idata.posterior
    _, derivative, _ = _mean_by_hand(mmm, frame, posterior, frame[["tv", "search"]].values)
    sigma = posterior["y_sigma"].values.reshape(-1)
    channels = np.sqrt((derivative**2).sum(1)) / sigma[:, None, None]  # (S, N, C)
    gamma = posterior["gamma_control"].values.reshape(-1)
    rsens = out["rsens"].transpose("chain", "draw", "date", "feature").values
    rsens = rsens.reshape(-1, len(frame), 3)
    np.testing.assert_allclose(rsens[..., :2], channels, rtol=1e-10)
    np.testing.assert_allclose(rsens[..., 2], np.abs(gamma / sigma)[:, None] * np.ones(len(frame)))


def test_attributions_from_no_spend_sum_to_pymc_marketings_contributions(fitted):
    """IG of the summed predictive mean from zero spend, per channel, equals the channel's
    contribution summed over the weeks (the model is additive over channels), draw by
    draw; the weeks differ: IG credits a week's spend with its carry-over."""
    mmm, _ = fitted
    out = pm_sens.integrated_gradients(
        mmm.idata, mmm, inputs=["channel_data"], baseline=0.0, **QUIET
    )["attribution"]
    ig = out["ig"].sum("date").transpose("chain", "draw", "feature").values
    contributions = mmm.idata.posterior["channel_contribution"].sum("date")
    np.testing.assert_allclose(ig, contributions.transpose("chain", "draw", "channel"), 1e-10)


def test_response_curve_pdp_is_the_steady_state_by_hand(fitted):
    """The mean PDP of a channel at spend v: every week's spend set to v, μ averaged over
    the weeks and draws (the first weeks carry less, as the series starts there)."""
    mmm, frame = fitted
    grid = np.array([0.0, 20.0, 60.0])
    out = pm_sens.partial_dependence(
        mmm.idata, mmm, inputs=["channel_data"], grid={"tv": grid}, **QUIET
    )["partial_dependence"]
    expected = []
    for value in grid:
        spend = frame[["tv", "search"]].to_numpy().copy()
        spend[:, 0] = value
        mean, _, _ = _mean_by_hand(mmm, frame, mmm.idata.posterior, spend)
        expected.append(mean.mean(1))
    got = out["mean_pdp"].sel(feature="tv").isel(grid=slice(0, len(grid)))
    got = got.transpose("chain", "draw", "grid").values.reshape(-1, len(grid))
    np.testing.assert_allclose(got, np.array(expected).T, rtol=1e-12)


def _entropy_split(mean, sigma):
    """Per week: the entropy of the moment-matched Normal of the mixture over draws, the
    mean entropy of each draw's Normal, and their difference (total, aleatoric, epistemic)."""
    variance = (sigma**2 + mean**2).mean(0) - mean.mean(0) ** 2  # law of total variance
    total = stats.norm(scale=np.sqrt(variance)).entropy()
    aleatoric = stats.norm(scale=sigma).entropy().mean() * np.ones(mean.shape[1])
    return np.stack([total, aleatoric, total - aleatoric], -1)


def test_entropy_split_of_block_permuted_weeks_by_hand(fitted):
    """Permutation importance permutes each input's weeks in blocks of l_max (the
    adstock's reach): the entropy split and the mixture log likelihood, recomputed
    with SciPy on the same permutations."""
    mmm, frame = fitted
    n_repeats, seed = 2, 4
    out = pm_sens.permutation_importance(
        mmm.idata, mmm, n_repeats=n_repeats, random_seed=seed, **QUIET
    )["permutation_importance"]
    assert out.attrs["block_size"] == L_MAX
    posterior = mmm.idata.posterior
    sigma = posterior["y_sigma"].values.reshape(-1, 1)
    y = mmm.idata.observed_data["y"].values
    x = frame[["tv", "search", "event"]].to_numpy()
    rng = np.random.default_rng(seed)
    blocks = np.split(np.arange(len(x)), np.arange(L_MAX, len(x), L_MAX))

    def split_and_density(x):
        work = frame.assign(event=x[:, 2])
        mean, _, _ = _mean_by_hand(mmm, work, posterior, x[:, :2])
        density = stats.norm(mean, sigma).pdf(y).mean(0)
        return _entropy_split(mean, sigma), np.log(density)

    base_h, base_l = split_and_density(x)
    for r in range(n_repeats):
        for d in range(3):
            order = np.concatenate([blocks[b] for b in rng.permutation(len(blocks))])
            permuted = x.copy()
            permuted[:, d] = x[order, d]
            entropy, density = split_and_density(permuted)
            got = out["entropy_pfi"].isel(repeat=r, feature=d).values
            np.testing.assert_allclose(got, (entropy - base_h).mean(0), rtol=1e-9, atol=1e-12)
            loss = (base_l - density).mean()
            np.testing.assert_allclose(out["likelihood_pfi"].values[r, d], loss, rtol=1e-9)


def test_entropy_pdp_of_a_channel_by_hand(fitted):
    """The entropy PDP of a channel, split, at a few spends, against SciPy."""
    mmm, frame = fitted
    grid = np.array([0.0, 50.0])
    out = pm_sens.partial_dependence(
        mmm.idata, mmm, inputs=["channel_data"], grid={"tv": grid}, **QUIET
    )["partial_dependence"]
    sigma = mmm.idata.posterior["y_sigma"].values.reshape(-1, 1)
    for g, value in enumerate(grid):
        spend = frame[["tv", "search"]].to_numpy().copy()
        spend[:, 0] = value
        mean, _, _ = _mean_by_hand(mmm, frame, mmm.idata.posterior, spend)
        got = out["entropy_pdp"].sel(feature="tv").isel(grid=g).values
        np.testing.assert_allclose(got, _entropy_split(mean, sigma).mean(0), rtol=1e-10)


def test_whole_analysis_lands_in_the_mmms_idata(fitted):
    """The MMM passed as it is: results land in ``mmm.idata``; summary and plots read them."""
    mmm, _ = fitted
    idata = mmm.idata.copy()
    idata = pm_sens.sensitivity(idata, mmm, mode="draw", progressbar=False)
    table = pm_sens.summary(idata)
    assert set(table.feature) == set(FEATURES)
    assert "sensitivity" not in mmm.idata.children  # the fixture's idata untouched


def test_an_mmm_that_is_not_built_is_refused():
    from pymc_marketing.mmm import GeometricAdstock, LogisticSaturation
    from pymc_marketing.mmm.mmm import MMM

    mmm = MMM(
        date_column="date_week",
        channel_columns=["tv"],
        adstock=GeometricAdstock(l_max=2),
        saturation=LogisticSaturation(),
    )
    with pytest.raises(ValueError, match=r"not built; call mmm.fit\(X, y\)"):
        pm_sens.sensitivity(None, mmm, **QUIET)
