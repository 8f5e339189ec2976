#!/usr/bin/env bash
# Run the worked example: fit a small PyMC model, rank its inputs with pm_sens.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/venv.sh
.venv/bin/python examples/quickstart.py "$@"
