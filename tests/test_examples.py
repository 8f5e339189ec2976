"""Every example runs from a clean checkout (small sizes where the example allows)."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"
QUICK = {
    "gp_regression.py": ["--quick"],
    "gp_poisson.py": ["--quick"],
    "bambi_radon.py": ["--quick"],
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "script", sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
)
def test_example_runs(script):
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *QUICK.get(script, [])],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rsens" in result.stdout or "pfi" in result.stdout
