#!/usr/bin/env bash
# Run the whole test suite (slow tests included) and the linters.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/venv.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -n 2 --durations=15 "$@"
