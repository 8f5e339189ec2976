#!/usr/bin/env bash
# Create .venv with Python 3.12 (pyenv reads .python-version) and install
# pm_sens with its test extras; reinstalls when pyproject.toml changes.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -c 'import sys; assert sys.version_info >= (3, 12), sys.version' \
        || { echo "pm_sens needs Python >= 3.12 as python3 (see .python-version)"; exit 1; }
    python3 -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
fi
if [ ! -f .venv/.installed ] || [ pyproject.toml -nt .venv/.installed ]; then
    .venv/bin/python -m pip install --quiet -e ".[test,plots,docs]"
    touch .venv/.installed
fi
