"""Every example runs from a clean checkout (small sizes where the example allows)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"
QUICK = {
    "gp_poisson.py": ["--quick"],
    "bambi_radon.py": ["--quick"],
    "counts_exposure.py": ["--quick"],
    "splines.py": ["--quick"],
    "bart_importance.py": ["--quick"],
    "marketing_mix.py": ["--quick"],
    "hierarchical.py": ["--quick"],
    "uncertainty.py": ["--quick"],
    "classification.py": ["--quick"],
}
#: Examples that need an extra, and the module it installs (`scripts/test.sh` runs
#: marketing_mix.py in .venv-marketing)
EXTRAS = {"marketing_mix.py": "pymc_marketing"}
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


@pytest.mark.slow
@pytest.mark.parametrize(
    "script", sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
)
def test_example_runs(script):
    if script in EXTRAS:
        pytest.importorskip(EXTRAS[script])
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *QUICK.get(script, [])],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for claim in CLAIMS.get(script, []):
        assert re.search(claim, result.stdout), f"{claim!r} not in:\n{result.stdout[-3000:]}"
    if script not in CLAIMS:
        assert "rsens" in result.stdout or "pfi" in result.stdout
