"""Models whose rows depend on other rows' inputs (lags, adstock): the joint predictive.

R-sens of input row s is ``sqrt(α Σ_i J_{i,s}ᵀ I_i J_{i,s})`` over the rows i
it moves (SPEC §2, "Joint predictive"), checked against closed forms and a
dense Jacobian written in NumPy; the finite-difference KL, integrated
gradients and the stacked evaluations (PDP, permutations) against the same.
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pm_sens
from pm_sens.graph.model.dependence import Dependence
from pm_sens.measures.kl import window_sums
from pm_sens.measures.permutation import permutations
from tests.conftest import posterior

QUIET = dict(progressbar=False, extend_inferencedata=False)
WEIGHTS = np.array([1.0, 0.5, 0.25])


def _lagged(z, weights):
    """``Σ_l w_l z_{t−l}``, zero before the series starts (shifted, padded copies)."""
    return sum(
        w * pt.concatenate([pt.zeros(lag), z[: z.shape[0] - lag]]) for lag, w in enumerate(weights)
    )


def _lag_matrix(n, weights):
    """The same as an (N, N) matrix L with ``lagged = L z``."""
    return sum(w * np.eye(n, k=-lag) for lag, w in enumerate(weights))


@pytest.fixture
def distributed_lag():
    """y_t ~ Normal(b Σ_l w_l x_{t−l}, σ), fixed weights, known draws of b and σ."""
    rng = np.random.default_rng(1)
    n = 30
    x = rng.normal(size=n)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b = pm.Normal("b")
        sigma = pm.HalfNormal("sigma")
        pm.Normal("y", b * _lagged(xd, WEIGHTS), sigma, observed=rng.normal(size=n))
    draws = {"b": np.array([[0.5, -1.0, 2.0]]), "sigma": np.array([[1.0, 0.5, 2.0]])}
    return model, posterior(draws), x, draws


def test_distributed_lag_closed_form(distributed_lag):
    """R-sens(x_s) = |b| sqrt(Σ_l w_l²)/σ away from the end; fewer lags near it."""
    model, idata, _, draws = distributed_lag
    out = pm_sens.sensitivity(idata, model, mode="draw", method=["rsens", "kl"], **QUIET)
    b, sigma = draws["b"][0], draws["sigma"][0]
    n = out["sensitivity"].sizes["point"]
    # input row s moves rows s … s+2 that exist: the lags l < n − s
    kept = np.sqrt(np.array([(WEIGHTS[: n - s] ** 2).sum() for s in range(n)]))
    expected = np.abs(b)[:, None] * kept / sigma[:, None]
    rsens = out["sensitivity"]["rsens"].values[0, :, :, 0]
    np.testing.assert_allclose(rsens, expected, rtol=1e-12)
    # the finite-difference KL of the joint predictive, computed apart
    np.testing.assert_allclose(out["sensitivity"]["kl"].values[0, :, :, 0], expected, rtol=1e-4)
    assert out["sensitivity"].attrs["dependence"].startswith("joint: an input at row s moves")
    assert "s+0 to s+2" in out["sensitivity"].attrs["dependence"]


def test_distributed_lag_moment_mode(distributed_lag):
    """The mixture's mean b̄ L x and variance: R-sens² = Σ_i (∂m_i)²/v_i + (∂v_i)²/(2v_i²)."""
    model, idata, x, draws = distributed_lag
    out = pm_sens.sensitivity(idata, model, method=["rsens", "kl"], kl_scheme="central", **QUIET)
    b, sigma = draws["b"][0], draws["sigma"][0]
    lag = _lag_matrix(len(x), WEIGHTS)
    mu = np.outer(lag @ x, b)  # (N, S)
    v = (sigma**2 + mu**2).mean(1) - mu.mean(1) ** 2
    d_mean = lag * b.mean()  # ∂m_i/∂x_s
    d_var = 2 * ((lag @ x)[:, None] * lag) * (b**2).mean() - 2 * mu.mean(1)[:, None] * d_mean
    expected = np.sqrt((d_mean**2 / v[:, None]).sum(0) + (d_var**2 / (2 * v[:, None] ** 2)).sum(0))
    got = out["sensitivity"]
    np.testing.assert_allclose(got["rsens"].values[:, 0], expected, rtol=1e-10)
    np.testing.assert_allclose(got["kl"].values[:, 0], expected, rtol=1e-6)


def test_second_order_against_a_dense_jacobian():
    """A nonlinear lag model: R-sens and R-sens2 from the dense (N, N) Jacobian in NumPy."""
    rng = np.random.default_rng(2)
    n = 20
    x = rng.normal(size=(n, 2)) * 0.5
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=2)
        sigma = pm.HalfNormal("sigma")
        pm.Normal("y", pt.exp(_lagged(xd @ b, WEIGHTS)), sigma, observed=rng.normal(size=n))
    b = np.array([[0.5, 1.0], [-1.0, 0.3], [0.8, 0.8]])
    sigma = np.array([1.0, 0.5, 2.0])
    idata = posterior({"b": b[None], "sigma": sigma[None]})
    out = pm_sens.sensitivity(idata, model, mode="draw", interactions=True, **QUIET)
    lag = _lag_matrix(n, WEIGHTS)
    for k in range(len(sigma)):
        mu = np.exp(lag @ (x @ b[k]))
        # ∂μ_i/∂x_{s,d} = μ_i L_is b_d, ∂²μ_i/∂x_{s,d}∂x_{s,e} = μ_i L_is² b_d b_e
        first = np.sqrt(((mu[:, None] * lag) ** 2).sum(0))
        second = np.sqrt(((mu[:, None] * lag**2) ** 2).sum(0))
        np.testing.assert_allclose(
            out["sensitivity"]["rsens"].values[0, k],
            first[:, None] * np.abs(b[k]) / sigma[k],
            rtol=1e-12,
        )
        np.testing.assert_allclose(
            out["sensitivity"]["rsens2"].values[0, k],
            second[:, None, None] * np.abs(np.outer(b[k], b[k])) / sigma[k],
            rtol=1e-12,
        )


def test_integrated_gradients_of_the_joint_mean(distributed_lag):
    """IG of Σ_i E[y_i]: (x_s − x̄) b Σ_{l < N−s} w_l, complete over all points."""
    model, idata, x, draws = distributed_lag
    out = pm_sens.integrated_gradients(idata, model, **QUIET)["attribution"]
    n = len(x)
    slope = np.array([WEIGHTS[: n - s].sum() for s in range(n)])
    expected = draws["b"][0][:, None] * slope * (x - x.mean())
    np.testing.assert_allclose(out["ig"].values[0, :, :, 0], expected, atol=1e-12)
    assert out["completeness_gap"].dims == ("chain", "draw")
    np.testing.assert_allclose(out["completeness_gap"].values, 0, atol=1e-10)


@pytest.mark.parametrize("passes", ["one", "per grid value"])
def test_stacked_evaluations_keep_each_copy_a_series(distributed_lag, passes, monkeypatch):
    """Partial dependence sets the whole series: ICE_i(g) = b̄ g Σ_{l ≤ i} w_l, in one
    pass over the draws or in one per grid value (`in_passes`), the result saying
    the dependence either way."""
    if passes == "per grid value":
        monkeypatch.setattr("pm_sens.uncertainty.passes.PASS_ROWS", 1)
    model, idata, x, draws = distributed_lag
    out = pm_sens.partial_dependence(idata, model, kind="mean", **QUIET)["partial_dependence"]
    grid = out["grid_value"].values[0]
    reach = np.array([WEIGHTS[: i + 1].sum() for i in range(len(x))])
    expected = draws["b"][0].mean() * grid[:, None] * reach
    np.testing.assert_allclose(out["mean_ice"].values[0], expected, rtol=1e-12)
    assert out.attrs["dependence"].startswith("joint")


def test_a_dense_dependence_on_a_short_series():
    """μ_i = b (x_i − mean over the points of x): R-sens = |b| sqrt(1 − 1/N)/σ, at every row."""
    rng = np.random.default_rng(3)
    n = 12
    with pm.Model() as model:
        xd = pm.Data("x", rng.normal(size=n))
        b = pm.Normal("b")
        pm.Normal("y", b * xd - (b * xd).mean(), 1.0, observed=rng.normal(size=n))
    idata = posterior({"b": np.array([[0.5, -2.0]])})
    out = pm_sens.sensitivity(idata, model, mode="draw", method=["rsens", "kl"], **QUIET)
    expected = np.array([0.5, 2.0])[:, None] * np.sqrt(1 - 1 / n) * np.ones(n)
    np.testing.assert_allclose(out["sensitivity"]["rsens"].values[0, :, :, 0], expected)
    np.testing.assert_allclose(out["sensitivity"]["kl"].values[0, :, :, 0], expected, rtol=1e-4)
    assert f"s{-(n - 1):+d} to s{n - 1:+d}" in out["sensitivity"].attrs["dependence"]


def test_a_long_dense_series_is_refused_with_the_size_it_needs():
    rng = np.random.default_rng(4)
    n = 100
    with pm.Model() as model:
        xd = pm.Data("x", rng.normal(size=n))
        b = pm.Normal("b")
        pm.Normal("y", b * xd - (b * xd).mean(), 1.0, observed=rng.normal(size=n))
    idata = posterior({"b": np.ones((1, 3))})
    match = r"up to 199 rows.*100 points.*100 backward passes.*at most 64 rows.*mu - mu.mean"
    with pytest.raises(ValueError, match=match):
        pm_sens.sensitivity(idata, model, **QUIET)
    # measures without derivatives per row evaluate the series whole
    pdp = pm_sens.partial_dependence(idata, model, kind="mean", **QUIET)["partial_dependence"]
    np.testing.assert_allclose(pdp["mean_ice"].values, 0, atol=1e-12)  # centred: no effect


def test_what_has_no_joint_version_is_refused(distributed_lag):
    model, idata, _, _ = distributed_lag
    with pytest.raises(ValueError, match=r"method=\['ead', 'var'\]: not yet available.*joint"):
        pm_sens.sensitivity(idata, model, method=["rsens", "ead", "var"], **QUIET)


def test_lazy_points_are_read_whole(distributed_lag):
    """Dask-backed points of a series are evaluated as one series, not block by block."""
    da = pytest.importorskip("dask.array")
    model, idata, x, _ = distributed_lag
    lazy = {"x": da.from_array(x, chunks=7)}
    kw = dict(mode="draw", method=["rsens", "kl"], **QUIET)
    got = pm_sens.sensitivity(idata, model, points=lazy, **kw)["sensitivity"]
    want = pm_sens.sensitivity(idata, model, points={"x": x}, **kw)["sensitivity"]
    np.testing.assert_allclose(np.asarray(got["rsens"]), want["rsens"].values, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got["kl"]), want["kl"].values, rtol=1e-6)


def test_rows_read_and_window_sums():
    """The colouring's bookkeeping against brute force on a small banded pattern."""
    dependence = Dependence(-1, 2)  # input row s moves rows s−1 … s+2
    n = 9
    rows = dependence.rows_read(n).reshape(dependence.colors(n), n)
    for r in range(4):
        for s in range(n):
            window = [i for i in range(s - 1, s + 3) if 0 <= i < n and i % 4 == r]
            assert rows[r, s] == (window[0] if window else rows[r, s])
            assert not window or len(window) == 1
    per_row = np.random.default_rng(0).random((4, n))
    want = [sum(per_row[s % 4, i] for i in range(s - 1, s + 3) if 0 <= i < n) for s in range(n)]
    np.testing.assert_allclose(window_sums(per_row, 4, -1, 2), want)
    assert Dependence().local and Dependence().colors(5) == 1
    assert (Dependence(-20, 20).rows_read(3) == np.repeat(np.arange(3), 3)).all()


def test_ar1_errors_hold_the_observed_past():
    """μ_t = x_t β + ρ (y_{t−1} − x_{t−1} β) with y_{t−1} the observed past (data):
    moving x_s moves μ_s by β and μ_{s+1} by −ρβ, the observed y_s staying as it
    was, so R-sens(x_{s,d}) = |β_d| sqrt(1 + ρ²)/σ, and |β_d|/σ at the last step.
    The observed past is itself an input with R-sens |ρ|/σ (a local one)."""
    rng = np.random.default_rng(5)
    n, d = 25, 2
    x = rng.normal(size=(n, d))
    y = x @ np.ones(d) + np.cumsum(rng.normal(0, 0.3, size=n))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        past = pm.Data("y_past", np.concatenate([[0.0], y[:-1]]))
        beta = pm.Normal("beta", shape=d)
        rho = pm.Uniform("rho", -1, 1)
        sigma = pm.HalfNormal("sigma")
        mu = xd @ beta
        pm.Normal("y", mu + rho * (past - pt.concatenate([[0.0], mu[:-1]])), sigma, observed=y)
    beta = np.array([[1.0, -0.5], [0.3, 2.0]])
    rho, sigma = np.array([0.6, -0.2]), np.array([0.5, 1.5])
    idata = posterior({"beta": beta[None], "rho": rho[None], "sigma": sigma[None]})
    out = pm_sens.sensitivity(idata, model, mode="draw", method=["rsens", "kl"], **QUIET)
    got = out["sensitivity"]
    assert list(got["feature"].values) == ["X[0]", "X[1]", "y_past"]
    reach = np.where(np.arange(n) < n - 1, np.sqrt(1 + rho[:, None] ** 2), 1.0)  # (S, N)
    expected = np.abs(beta)[:, None, :] * reach[..., None] / sigma[:, None, None]
    np.testing.assert_allclose(got["rsens"].values[0, :, :, :2], expected, rtol=1e-12)
    own = np.abs(rho) / sigma
    np.testing.assert_allclose(got["rsens"].values[0, :, :, 2], own[:, None] * np.ones(n))
    np.testing.assert_allclose(got["kl"].values, got["rsens"].values, rtol=1e-4)
    assert "s+0 to s+1" in got.attrs["dependence"]


def test_lagged_slices_of_a_longer_series_are_shifted_copies_of_its_points():
    """The same AR(1)-error regression written with slices, as notebooks do: a
    container of N + 1 rows, ``x[1:]`` and ``x[:-1]``, observed ``y[1:]``. The points
    are the container's last N rows (its first row held: the lag of the first
    observation), and the values are those of the shifted-copy form."""
    rng = np.random.default_rng(7)
    n, d = 25, 2
    x = rng.normal(size=(n + 1, d))
    y = x @ np.ones(d) + np.cumsum(rng.normal(0, 0.3, size=n + 1))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        beta = pm.Normal("beta", shape=d)
        rho = pm.Uniform("rho", -1, 1)
        sigma = pm.HalfNormal("sigma")
        mu = xd[1:] @ beta + rho * (y[:-1] - xd[:-1] @ beta)
        pm.Normal("y", mu, sigma, observed=y[1:])
    beta = np.array([[1.0, -0.5], [0.3, 2.0]])
    rho, sigma = np.array([0.6, -0.2]), np.array([0.5, 1.5])
    idata = posterior({"beta": beta[None], "rho": rho[None], "sigma": sigma[None]})
    out = pm_sens.sensitivity(idata, model, mode="draw", method=["rsens", "kl"], **QUIET)
    got = out["sensitivity"]
    assert list(got["feature"].values) == ["0", "1"]  # X's columns, as for N rows
    np.testing.assert_array_equal(got["input_value"].values, x[1:])
    reach = np.where(np.arange(n) < n - 1, np.sqrt(1 + rho[:, None] ** 2), 1.0)  # (S, N)
    expected = np.abs(beta)[:, None, :] * reach[..., None] / sigma[:, None, None]
    np.testing.assert_allclose(got["rsens"].values[0], expected, rtol=1e-12)
    np.testing.assert_allclose(got["kl"].values, got["rsens"].values, rtol=1e-4)
    # new points: a series of N values of the container; the held first row stays
    moved = pm_sens.sensitivity(idata, model, mode="draw", points={"X": 2 * x[1:]}, **QUIET)[
        "sensitivity"
    ]
    np.testing.assert_allclose(moved["rsens"].values, got["rsens"].values, rtol=1e-12)
    with pytest.raises(ValueError, match=r"its last 25 rows .* points=\{'X': values\[1:\]\}"):
        pm_sens.sensitivity(idata, model, points={"X": x}, **QUIET)


def test_a_dependence_at_rows_the_probes_miss_is_found():
    """A lag that acts at one row of a long series only: the spread probes miss
    it, the check of the window at every row does not (and a dependence it
    cannot place is taken to span the series: too long here, refused)."""
    rng = np.random.default_rng(6)
    n = 200
    acts = np.arange(n) == 100  # row 99, which no probe moves, moves row 100
    with pm.Model() as model:
        xd = pm.Data("x", rng.normal(size=n))
        b = pm.Normal("b")
        lag = pt.concatenate([pt.zeros(1), xd[:-1]])
        pm.Normal("y", b * xd + 0.5 * acts * lag, 1.0, observed=rng.normal(size=n))
    idata = posterior({"b": np.ones((1, 2))})
    with pytest.raises(ValueError, match=r"up to 399 rows .*200 points"):
        pm_sens.sensitivity(idata, model, **QUIET)
    # on a stretch of the series short enough to probe every row: s+0 to s+1
    points = {"x": rng.normal(size=30), "numpy_input_0": acts[85:115]}  # its name here
    out = pm_sens.sensitivity(idata, model, inputs="x", points=points, **QUIET)
    assert "s+0 to s+1" in out["sensitivity"].attrs["dependence"]


def test_block_permutations_keep_each_block_in_order():
    rng = np.random.default_rng(7)
    order = permutations(10, 3, 2, rng, block_size=4)  # blocks 0-3, 4-7, 8-9
    assert order.shape == (3, 2, 10)
    for perm in order.reshape(-1, 10):
        assert sorted(perm) == list(range(10))
        position = np.argsort(perm)  # where each point went
        for block in ([0, 1, 2, 3], [4, 5, 6, 7], [8, 9]):
            assert (np.diff(position[block]) == 1).all()
    assert (permutations(10, 1, 1, rng, block_size=10) == np.arange(10)).all()


def test_permutation_importance_of_a_series_permutes_blocks(distributed_lag):
    """Entropy PFI of the distributed lag, blocks of the window (3 rows) by default,
    against the moment-matched Normal's entropy of each block-permuted series."""
    model, idata, x, draws = distributed_lag
    out = pm_sens.permutation_importance(
        idata, model, kind="entropy", n_repeats=2, random_seed=3, **QUIET
    )["permutation_importance"]
    assert out.attrs["block_size"] == 3
    order = permutations(len(x), 2, 1, np.random.default_rng(3), 3)
    b, sigma = draws["b"][0], draws["sigma"][0]
    lag = _lag_matrix(len(x), WEIGHTS)

    def entropy(series):
        mu = np.outer(lag @ series, b)
        v = (sigma**2 + mu**2).mean(1) - mu.mean(1) ** 2
        return 0.5 * np.log(2 * np.pi * np.e * v)

    expected = [np.mean(entropy(x[o[0]]) - entropy(x)) for o in order]
    np.testing.assert_allclose(out["entropy_pfi"].sel(component="total")[:, 0], expected)
    with pytest.raises(ValueError, match="block_size"):
        pm_sens.permutation_importance(idata, model, kind="entropy", block_size=0, **QUIET)


def test_a_likelihood_without_closed_forms_on_a_series():
    """Moyal (the quadrature route): the location's information is 1/(2s²), so
    R-sens = |b| sqrt(Σ w_l²)/(√2 s) away from the end; R-sens = KL in both modes."""
    rng = np.random.default_rng(8)
    n = 25
    with pm.Model() as model:
        xd = pm.Data("x", rng.normal(size=n))
        b = pm.Normal("b")
        scale = pm.HalfNormal("scale")
        pm.Moyal("y", mu=b * _lagged(xd, WEIGHTS), sigma=scale, observed=rng.normal(size=n))
    b, scale = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.5, 2.0])
    idata = posterior({"b": b[None], "scale": scale[None]})
    kw = dict(method=["rsens", "kl"], kl_scheme="central", **QUIET)
    for mode in ("draw", "moment"):
        out = pm_sens.sensitivity(idata, model, mode=mode, **kw)["sensitivity"]
        np.testing.assert_allclose(out["kl"].values, out["rsens"].values, rtol=1e-6)
        if mode == "draw":
            assert "quadrature" in out.attrs["fisher"]
            expected = np.abs(b) * np.sqrt((WEIGHTS**2).sum()) / (np.sqrt(2) * scale)
            np.testing.assert_allclose(
                out["rsens"].values[0, :, :-2, 0].T,
                expected[None] * np.ones((n - 2, 1)),
                rtol=1e-6,
            )


def test_a_dependence_that_reaches_further_on_later_draws_is_found():
    """A latent GP's f = L(X) v (GP-Latent's form): how far an input row reaches depends
    on the draw's lengthscale. The first draw's is short (rows 3.3 apart, couplings of
    1e-12), a later one's long: R-sens per draw equals the derivative of NumPy's
    Cholesky factor at every row, and the central KL agrees."""
    n = 4
    X = np.linspace(0, 10, n)[:, None]
    with pm.Model() as model:
        ell = pm.Gamma("ell", alpha=2, beta=1)
        eta = pm.HalfNormal("eta", sigma=5)
        gp = pm.gp.Latent(cov_func=eta**2 * pm.gp.cov.ExpQuad(1, ell))
        gp.prior("f", X=X)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu=model["f"], sigma=sigma, observed=np.sin(X[:, 0]))
    rng = np.random.default_rng(3)
    draws = {
        "ell": np.array([[0.9, 3.8]]),
        "eta": np.array([[4.0, 4.0]]),
        "sigma": np.array([[0.5, 0.7]]),
        "f_rotated_": rng.normal(size=(1, 2, n)),
    }
    idata = posterior(draws)
    out = pm_sens.sensitivity(
        idata, model, mode="draw", method=["rsens", "kl"], kl_scheme="central", **QUIET
    )["sensitivity"]
    x = X[:, 0]

    def f(x, d):
        distance = (x[:, None] - x[None, :]) ** 2
        K = 16.0 * np.exp(-0.5 * distance / draws["ell"][0, d] ** 2) + 1e-6 * np.eye(n)
        return np.linalg.cholesky(K) @ draws["f_rotated_"][0, d]

    for d in range(2):
        for s in range(n):
            step = np.zeros(n)
            step[s] = 1e-6
            df = (f(x + step, d) - f(x - step, d)) / 2e-6
            expected = np.sqrt(np.sum(df**2)) / draws["sigma"][0, d]
            np.testing.assert_allclose(out["rsens"].values[0, d, s, 0], expected, rtol=1e-6)
            np.testing.assert_allclose(out["kl"].values[0, d, s, 0], expected, rtol=1e-5)


def test_the_dependence_is_found_once_for_the_same_values(distributed_lag, monkeypatch):
    """A second call on the same points and posterior takes the dependence found by
    the first (the probes evaluate the graph about 20 times over every row); other
    points, or another posterior, are probed again. Results are the same."""
    from pm_sens._run import compiling

    model, idata, x, draws = distributed_lag
    probed = []
    find = compiling.find_dependence
    monkeypatch.setattr(
        compiling,
        "find_dependence",
        lambda compiled, points, d: probed.append(points.n_points) or find(compiled, points, d),
    )
    first = pm_sens.sensitivity(idata, model, mode="draw", **QUIET)["sensitivity"]["rsens"]
    again = pm_sens.sensitivity(idata, model, mode="draw", **QUIET)["sensitivity"]["rsens"]
    assert probed == [30]
    np.testing.assert_array_equal(first.values, again.values)
    shifted = {"x": x + 1.0}
    pm_sens.sensitivity(idata, model, mode="draw", points=shifted, **QUIET)
    assert probed == [30, 30]
    other = posterior({"b": draws["b"] * 2, "sigma": draws["sigma"]})
    pm_sens.sensitivity(other, model, mode="draw", **QUIET)
    assert probed == [30, 30, 30]
    pm_sens.sensitivity(idata, model, mode="draw", points={"x": x + 1.0}, **QUIET)
    assert probed == [30, 30, 30]  # the shifted points' values again
