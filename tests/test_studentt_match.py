"""The moment-matched Student-t predictive, against values computed by hand.

Known draws with ν on both sides of 2 (no variance for some): the match has
location ``E μ``, squared scale ``E σ² + Var μ`` and ``1/ν = E[1/ν]``; R-sens
is ``sqrt(α (I_μμ (∂m)² + I_ss (∂s²)²))`` with Lange et al.'s information, and
the total entropy is SciPy's entropy of that Student-t.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pm_sens
from tests.conftest import posterior

A = np.array([[0.2, -0.4, 1.0, 0.5]])
B = np.array([[1.5, 0.3, -0.8, 2.0]])
SIGMA = np.array([[0.7, 1.3, 0.4, 2.2]])
NU = np.array([[1.2, 30.0, 2.5, 0.8]])


def _model(x):
    with pm.Model() as model:
        xd = pm.Data("x", x)
        a, b = pm.Normal("a"), pm.Normal("b")
        s, nu = pm.HalfNormal("s"), pm.Gamma("nu", 2, 0.1)
        pm.StudentT("y", nu=nu, mu=a + b * xd, sigma=s, observed=np.zeros_like(x))
    return model


def _matched(x):
    """Location, squared scale, ν of the match at each x, and their x-derivatives."""
    mu = A.T + B.T * x  # (S, N)
    m, s2 = mu.mean(0), (SIGMA.T**2).mean(0) + mu.var(0)
    dm = B.mean()
    ds2 = 2 * ((mu - m) * (B.T - dm)).mean(0)  # ∂ Var μ
    return m, s2, 1 / (1 / NU).mean(), dm, ds2


@pytest.fixture(scope="module")
def fitted():
    x = np.linspace(-2, 2, 5)
    idata = posterior({"a": A, "b": B, "s": SIGMA, "nu": NU})
    return _model(x), idata, x


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_rsens_of_the_studentt_match(fitted, alpha):
    model, idata, x = fitted
    out = pm_sens.sensitivity(idata, model, alpha=alpha, progressbar=False)["sensitivity"]
    assert out.attrs["family"] == "studentt"
    m, s2, nu, dm, ds2 = _matched(x)
    i_mm = (nu + 1) / ((nu + 3) * s2)
    i_ss = nu / (2 * (nu + 3) * s2**2)
    expected = np.sqrt(alpha * (i_mm * dm**2 + i_ss * ds2**2))
    np.testing.assert_allclose(out["rsens"].values[:, 0], expected, rtol=1e-10)


def test_rsens_agrees_with_the_kl_of_the_match(fitted):
    model, idata, _ = fitted
    out = pm_sens.sensitivity(idata, model, method=["rsens", "kl"], progressbar=False)[
        "sensitivity"
    ]
    kl = out["kl"].values
    assert np.isfinite(kl).all()
    np.testing.assert_allclose(out["rsens"].values, kl, rtol=1e-4)


def test_entropy_of_the_match_is_scipys(fitted):
    model, idata, x = fitted
    grid = np.array([-1.0, 0.0, 1.5])
    pdp = pm_sens.partial_dependence(
        idata, model, kind="entropy", grid={"x": grid}, progressbar=False
    )
    ice = (
        pdp["partial_dependence"]["entropy_ice"].sel(feature="x").values
    )  # (grid, point, component)
    m, s2, nu, *_ = _matched(grid)
    total = stats.t(nu, m, np.sqrt(s2)).entropy()
    laws = zip(A[0], B[0], SIGMA[0], NU[0], strict=True)
    aleatoric = np.mean([stats.t(n, a + b * grid, s).entropy() for a, b, s, n in laws], 0)
    assert np.isfinite(ice).all()
    components = list(pdp["partial_dependence"]["entropy_ice"].component.values)
    got_total = ice[..., components.index("total")]
    got_aleatoric = ice[..., components.index("aleatoric")]
    np.testing.assert_allclose(got_total, np.repeat(total[:, None], len(x), 1), rtol=1e-10)
    np.testing.assert_allclose(got_aleatoric, np.repeat(aleatoric[:, None], len(x), 1), rtol=1e-10)


def test_one_draw_matches_the_draw_itself(fitted):
    """With one draw the match is that draw's Student-t: moment and draw mode agree."""
    model, _, _ = fitted
    idata = posterior({"a": A[:, :1], "b": B[:, :1], "s": SIGMA[:, :1], "nu": NU[:, :1]})
    moment = pm_sens.sensitivity(idata, model, progressbar=False)["sensitivity"]["rsens"].values
    draw = pm_sens.sensitivity(idata, model, mode="draw", progressbar=False)["sensitivity"][
        "rsens"
    ].values
    np.testing.assert_allclose(moment, draw.reshape(moment.shape), rtol=1e-12)
