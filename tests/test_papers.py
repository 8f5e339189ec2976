"""The papers' experiments (examples/papers), quick settings: the qualitative claims."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

PAPERS = Path(__file__).parent.parent / "examples" / "papers"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, PAPERS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_paper000_table1_ranking_claims():
    """000 §3.1: R-sens ranks at least as well as EAD, better where the effect's
    derivative is large in the tails (x³), and AED fails on non-monotonic effects;
    the finite-difference KL method ranks exactly as R-sens."""
    ranking = _load("rsens_ranking")
    results = ranking.run(20, ["student_t"])
    column = {m: j for j, m in enumerate(ranking.METHODS)}

    def mean_and_half(kind, shape, method):
        mean, half = ranking.interval(results["student_t", kind, shape])
        return mean[column[method]], half[column[method]]

    for kind in ("ground truth", "imperfect"):
        for shape in ranking.SHAPES:
            assert mean_and_half(kind, shape, "kl") == (0.0, 0.0)
        for shape in ("sin(3x)", "exp(-x^2)"):  # AED averages signed slopes away
            mean, _ = mean_and_half(kind, shape, "aed")
            assert mean > 10, (kind, shape, mean)
    mean, half = mean_and_half("ground truth", "x^3", "ead")
    assert mean - half > 0  # R-sens better: EAD is dominated by the heavy tails
    mean, half = mean_and_half("imperfect", "x", "ead")
    assert mean - half > 0  # the biased tails mislead EAD, not R-sens
    for shape in ranking.SHAPES:  # never clearly worse than EAD
        mean, half = mean_and_half("ground truth", shape, "ead")
        assert mean + half > -0.5, shape
    assert np.isfinite(ranking.interval(results["student_t", "imperfect", "x^3"])[0]).all()
