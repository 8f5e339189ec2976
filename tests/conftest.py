import arviz_base as azb
import numpy as np
import pytest


def posterior(draws, dims=None, coords=None):
    """DataTree with a posterior group from arrays shaped (chain, draw, ...)."""
    return azb.from_dict({"posterior": draws}, dims=dims or {}, coords=coords or {})


@pytest.fixture
def rng():
    return np.random.default_rng(20261123)
