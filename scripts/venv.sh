#!/usr/bin/env bash
# Create a virtual environment with Python 3.12 (pyenv reads .python-version)
# and install pm_sens with extras into it; reinstalls when pyproject.toml changes.
#   bash scripts/venv.sh                                  # .venv: test, plots, docs
#   bash scripts/venv.sh .venv-marketing test,marketing   # pymc-marketing (PyMC 6.3)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:-.venv}"
EXTRAS="${2:-test,plots,docs}"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -c 'import sys; assert sys.version_info >= (3, 12), sys.version' \
        || { echo "pm_sens needs Python >= 3.12 as python3 (see .python-version)"; exit 1; }
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
fi
if [ ! -f "$VENV/.installed" ] || [ pyproject.toml -nt "$VENV/.installed" ]; then
    "$VENV/bin/python" -m pip install --quiet -e ".[$EXTRAS]"
    touch "$VENV/.installed"
fi
