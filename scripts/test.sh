#!/usr/bin/env bash
# Run the linters, the size review (modules over 600 lines and functions over
# 100 lines of code, listed for a reviewer) and the whole test suite (slow
# tests included); then, in a second environment (.venv-marketing:
# pymc-marketing requires PyMC 6.3), the marketing tests, the pymc.dims and
# pymc-marketing zoo models (those of tests/zoo/dims.py), the bambi tests and
# the marketing example; last, the docs site with every example executed
# (warnings are errors), checked by tests/test_site.py.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/venv.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python scripts/sizes.py
.venv/bin/python -m pytest -n 2 --dist worksteal --durations=15 "$@"
bash scripts/venv.sh .venv-marketing test,marketing
.venv-marketing/bin/python -m pytest -n 2 --dist worksteal \
    tests/test_marketing.py tests/test_dims_model.py tests/test_bambi.py tests/zoo/test_zoo.py \
    -k "not zoo_model or dims_linear_regression or dims_hierarchical_poisson or marketing_mmm"
# the docs show every example as this run executes it: the marketing example in
# its own environment (its output and figures in examples/figures), the others
# in the gallery
rm -rf docs/_build docs/generated docs/gallery examples/figures
mkdir -p examples/figures
.venv-marketing/bin/python examples/marketing_mix.py --quick > examples/figures/marketing_mix.txt
.venv/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html
PM_SENS_SITE=docs/_build/html .venv/bin/python -m pytest -q tests/test_site.py
