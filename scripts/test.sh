#!/usr/bin/env bash
# Run the linters, the size limits (modules <= 400 lines, functions <= 80 lines
# of code), the docs build (warnings are errors) and the whole test suite (slow
# tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/venv.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python scripts/sizes.py
.venv/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html
.venv/bin/python -m pytest -n 2 --dist worksteal --durations=15 "$@"
