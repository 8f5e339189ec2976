#!/usr/bin/env bash
# Build the docs site into docs/_build/html from scratch, every example executed
# (warnings are errors): the marketing example in .venv-marketing (pymc-marketing
# requires PyMC 6.3; its output and figures go to examples/figures, which the
# time-series page shows), the others by the gallery in .venv. Expects both
# environments (scripts/venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf docs/_build docs/generated docs/gallery docs/sg_execution_times.rst examples/figures
mkdir -p examples/figures
.venv-marketing/bin/python examples/marketing_mix.py --quick > examples/figures/marketing_mix.txt
.venv/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html
