"""The docs site as built by scripts/test.sh (PM_SENS_SITE names the HTML folder):
an API page per public name, every example executed with its figures, the version
on every page, every local link and image there, and what each example and paper
reproduction must show, checked on what the build computed."""

import importlib.util
import os
import pickle
import re
import sys
import textwrap
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
import pytest

import pm_sens

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"
PAPERS = EXAMPLES / "papers"
SITE = os.environ.get("PM_SENS_SITE")
pytestmark = pytest.mark.skipif(
    SITE is None, reason="checks a built site: scripts/test.sh builds it and sets PM_SENS_SITE"
)
HTML = ROOT / (SITE or "docs/_build/html")
GALLERY_SOURCE = ROOT / "docs" / "gallery"  # the build's reST, with each example's output


#: run in its own environment (pymc-marketing needs PyMC 6.3); the time-series page
#: shows its output and figures
MARKETING = EXAMPLES / "marketing_mix.py"


def _scripts():
    scripts = sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
    return scripts + sorted(p for p in PAPERS.glob("*.py") if not p.name.startswith("_"))


def _gallery_scripts():
    return [p for p in _scripts() if p != MARKETING]


def _gallery_page(script):
    folder = "gallery/papers" if script.parent == PAPERS else "gallery"
    return HTML / folder / f"{script.stem}.html"


def _output(script):
    """What the example printed, as the docs show it."""
    if script == MARKETING:
        return (EXAMPLES / "figures" / "marketing_mix.txt").read_text()
    folder = GALLERY_SOURCE / ("papers" if script.parent == PAPERS else "")
    rst = (folder / f"{script.stem}.rst").read_text()
    blocks = re.findall(r"\.\. code-block:: none\n\n((?:    .*\n|\n)+)", rst)
    return "\n".join(textwrap.dedent(block) for block in blocks)


def _pages():
    return [p for p in HTML.rglob("*.html") if "_static" not in p.parts]


@pytest.mark.parametrize("name", [n for n in pm_sens.__all__ if n != "__version__"])
def test_every_public_name_has_an_api_page(name):
    page = HTML / "generated" / f"pm_sens.{name}.html"
    assert page.is_file(), f"no API page for pm_sens.{name}"
    text = page.read_text()
    for section in ("Parameters", "Examples"):
        assert f">{section}<" in text, f"pm_sens.{name}: no {section} section"


@pytest.mark.parametrize("script", _gallery_scripts(), ids=lambda p: p.name)
def test_every_example_ran_and_shows_its_figures(script):
    page = _gallery_page(script)
    assert page.is_file(), f"{script.name} has no gallery page"
    images = re.findall(r'<img[^>]+src="([^"]+)"', page.read_text())
    figures = [src for src in images if "sphx_glr" in src and "thumb" not in src]
    assert figures, f"{script.name}'s gallery page shows no figure"
    assert _output(script).strip(), f"{script.name}'s gallery page shows no output"


def test_every_page_shows_the_version_and_its_links_and_images_exist():
    label = f"pm_sens {pm_sens.__version__}"
    for page in _pages():
        text = page.read_text()
        assert label in text, f"{page.relative_to(HTML)} does not show {label!r}"
        for target in re.findall(r'(?:src|href)="([^"#?]+)', text):
            url = urlparse(target)
            if url.scheme or url.netloc or target.startswith("mailto:"):
                continue
            path = (page.parent / unquote(url.path)).resolve()
            assert path.exists(), f"{page.relative_to(HTML)} links to missing {target}"


def test_the_marketing_example_shows_its_output_and_figures():
    page = (HTML / "how_to" / "time_series.html").read_text()
    assert "largest difference over draws and channels" in page
    for name in ("importance", "permutation_importance", "response_curves"):
        assert f"marketing_{name}.png" in page, name


def test_pages_that_show_figures_hold_them():
    """The pages whose Markdown embeds a figure hold an image in their HTML."""
    for source in (ROOT / "docs").rglob("*.md"):
        if "_build" in source.parts or not re.search(r"!\[[^\]]*\]\(", source.read_text()):
            continue
        page = HTML / source.relative_to(ROOT / "docs").with_suffix(".html")
        assert "<img" in page.read_text(), f"{page.relative_to(HTML)} shows no image"


#: What each example's output must show, as regular expressions (default: a ranked
#: table of some measure).
CLAIMS = {
    # x5 and x6 do not enter the data: last in pm_sens's ranking, as in pymc-bart's
    "bart_importance.py": [
        r"pm_sens KL over 0\.1 sd \(draw mode\):\s+(x[0-4] ){5}x[56] x[56]\n",
        r"pymc-bart VI \(inclusion counts\):\s+(x[0-4] ){5}x[56] x[56]\n",
    ],
    # the channels first; IG from zero spend equals pymc-marketing's contributions
    "marketing_mix.py": [
        r"rsens\s+channel_data\[x[12]\].*\n\s+rsens\s+channel_data\[x[12]\]",
        r"largest difference over draws and channels: \d\.\de-(0[7-9]|1\d)",
    ],
    # 18 inputs as written (17 basis columns), then year itself ranks first
    "splines.py": [
        r"pm_sens ranks 18 inputs",
        r"rsens\s+year\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+1\.000",
    ],
    # the floor effect differs between counties (it grows with their uranium)
    "hierarchical.py": [r"floor:county_idx\s+rate:level\s+0\.[1-9]\d*\s+0\.[1-9]"],
    "counts_exposure.py": [
        r"inputs=\['traffic', 'temp_c', 'log_exposure'\], categorical_inputs=\['rain'\]",
        r"log_exposure\s+rate\s+[\d.]+\s+1\n",  # the offset ranks first by default
        r"temp_c\s+rate\s+0\.0[0-9]+\s+0\.[23]",  # small per degree, a third of traffic per sd
        r"EAH of the linear predictor, traffic:temp_c: 0\.0e\+00",  # additive on η
    ],
}


@pytest.mark.parametrize(
    "script", [p for p in _scripts() if p.parent == EXAMPLES], ids=lambda p: p.name
)
def test_example_output_claims(script):
    output = _output(script)
    for claim in CLAIMS.get(script.name, []):
        assert re.search(claim, output), f"{claim!r} not in:\n{output[-3000:]}"
    if script.name not in CLAIMS:
        assert "rsens" in output or "pfi" in output


# The papers' qualitative claims, on the results of the quick runs the gallery made


def _paper(name):
    """The reproduction's module (its helpers and constants) and its quick run's results."""
    if str(PAPERS) not in sys.path:  # the scripts import their shared module
        sys.path.insert(0, str(PAPERS))
    spec = importlib.util.spec_from_file_location(name, PAPERS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(EXAMPLES / "figures" / f"{name}.pkl", "rb") as file:
        return module, pickle.load(file)


def test_paper000_table1_ranking_claims():
    """000 §3.1: R-sens ranks at least as well as EAD, better where the effect's
    derivative is large in the tails (x³), and AED fails on non-monotonic effects;
    the finite-difference KL method ranks exactly as R-sens."""
    ranking, results = _paper("rsens_ranking")
    column = {m: j for j, m in enumerate(ranking.METHODS)}

    def mean_and_half(kind, shape, method):
        mean, half = ranking.interval(results["student_t", kind, shape])
        return mean[column[method]], half[column[method]]

    for kind in ("ground truth", "imperfect"):
        for shape in ("x", "x^3", "sin(3x)"):
            assert mean_and_half(kind, shape, "kl") == (0.0, 0.0)
            mean, half = mean_and_half(kind, shape, "ead")
            assert mean + half > -0.5, (kind, shape)  # never clearly worse than EAD
        mean, _ = mean_and_half(kind, "sin(3x)", "aed")  # AED averages signed slopes away
        assert mean > 10, (kind, mean)
    mean, half = mean_and_half("ground truth", "x^3", "ead")
    assert mean - half > 0  # R-sens better: EAD is dominated by the heavy tails
    mean, half = mean_and_half("imperfect", "x", "ead")
    assert mean - half > 0  # the biased tails mislead EAD, not R-sens


def test_paper002_sine_benchmark_claims():
    """002 §4.1 (Figure 2): eight equally relevant inputs of growing nonlinearity. ARD
    (inverse length-scales) strongly prefers the nonlinear ones; R-sens and the KL
    method much less, and with normal inputs they rate all eight nearly equal."""
    sine, results = _paper("gp_sine_ard")
    column = {m: k for k, m in enumerate(sine.METHODS)}
    for distribution, relevance in results.items():
        ratios = (relevance.max(2) / relevance.min(2)).mean(0)
        assert ratios[column["ARD"]] > 3, distribution
        assert ratios[column["rsens"]] < 0.5 * ratios[column["ARD"]], distribution
        mean = relevance.mean(0)
        np.testing.assert_allclose(mean[column["kl"]], mean[column["rsens"]], atol=0.02)
    normal = results["normal"].mean(0)
    assert normal[column["rsens"]].min() > 0.7 and normal[column["ARD"], 0] < 0.5


def test_paper001_interaction_benchmark_claims():
    """001 §4.1 (Figures 2-3): R-sens2 puts the three true pairs above the other 63 in
    every data set, with roughly equal relevance; R-sens finds input 9 alone irrelevant
    and inputs 10-12 relevant through their interactions."""
    interactions, (single, pairs) = _paper("gp_interactions")
    found = interactions.claims(single, pairs)
    assert found["top three are the true pairs"].all()
    assert found["input 9 least relevant"].all()
    assert (found["smallest true pair"] > 0.7).all()
    assert (found["largest other pair"] < 0.4).all()
    assert (single[:, 9:] > 3 * single[:, [8]]).all()  # 10-12: interactions only


def test_paper004_correlated_regression_claims():
    """004 §3, Figures 4-5: an input independent of the others (x5) has Entropy-PFI
    near 0 while the correlated x1-x4 have positive Entropy-PFI; less noise raises the
    Likelihood-PFI."""
    _, results = _paper("entropy_pfi_regression")
    for values in results.values():
        likelihood, entropy = values.mean(0)
        assert entropy[:4].min() > 0.005
        assert abs(entropy[4]) < 0.1 * entropy[:4].min()
    low_noise, high_noise = results[0.5].mean(0)[0], results[2.0].mean(0)[0]
    assert (low_noise > 2 * high_noise).all()


def test_paper004_entropy_pdp_toy_claims():
    """004 §4.2 (Figures 6-7): with training inputs around a hollow square, the entropy
    ICE at x = 0 is high only where the other input is mid-range (out of the data);
    with a GP uncertain in the gap the PDP rises in the interior and at the edges."""
    toy, results = _paper("entropy_pdp_toy")
    for per_repetition in results.values():
        found = {name: values.mean() for name, values in toy.claims(per_repetition).items()}
        assert found["ICE at 0, other inside"] > found["ICE at 0, other outside"] + 0.02
        assert found["PDP at |x| = 3"] > found["PDP at |x| = 2.25"]
    found = {k: v.mean() for k, v in toy.claims(results["length-scale fixed at 1"]).items()}
    assert found["PDP at 0"] > found["PDP at |x| = 2.25"] + 0.5
    assert found["ICE at 0, other inside"] > found["ICE at 0, other outside"] + 1


def test_paper004_duplicated_feature_claims():
    """004 §3, Figure 3 (a Bayesian logistic regression for the paper's forest): a copy
    of a relevant feature shares its Likelihood-PFI and makes both copies the most
    important for the entropy; a copy of an irrelevant one leaves the likelihood alone."""
    duplicates, results = _paper("entropy_pfi_duplicates")
    likelihood, entropy = ({v: r[:, k].mean(0) for v, r in results.items()} for k in (0, 1))
    original, copy1, copy5 = (likelihood[v] for v in duplicates.VERSIONS)
    assert original[:4].min() > 5 * np.abs(original[4:]).max()
    assert copy1[0] < 0.5 * copy1[1:4].mean()
    assert copy1[9] > 0.02 and copy1[9] > 3 * np.abs(copy1[4:9]).max()
    top = np.argsort(entropy["x10 = copy of x1"])[-2:]
    assert sorted(top) == [0, 9]
    assert np.abs(copy5[4:]).max() < 0.15 * copy5[:4].min()


def test_paper003_ig_completeness_claims():
    """003: IG of a latent GP's predictive mean through exp and probit is complete:
    Gauss-Legendre closes the gap to rounding by 16 nodes, the paper's right Riemann
    sum only as 1/m; the attributions follow those of the true E[y|x]."""
    ig, results = _paper("gp_ig_links")
    steps = len(ig.NODES)
    for gaps, attribution, truth in results.values():
        assert gaps[0, ig.NODES.index(16)] < 1e-10
        riemann = gaps[0, steps:]
        np.testing.assert_allclose(riemann[:-1] / riemann[1:], 4, rtol=0.15)  # m ×4: gap ÷4
        np.testing.assert_allclose(attribution[0, :3], truth[0, :3], rtol=0.35)
        assert attribution[0, 3] < 0.4 * attribution[0, :2].min()
