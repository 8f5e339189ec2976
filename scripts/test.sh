#!/usr/bin/env bash
# Run the linters, the size review (modules over 600 lines and functions over
# 100 lines of code, listed for a reviewer) and the whole test suite (slow
# tests included); then, in a second environment (.venv-marketing:
# pymc-marketing requires PyMC 6.3), the marketing tests, the pymc.dims and
# pymc-marketing zoo models (those of tests/zoo/dims.py) and the bambi tests.
# Beside them, scripts/docs.sh builds the docs site with every example executed
# (its log in docs-build.log); tests/test_site.py then checks it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/venv.sh
bash scripts/venv.sh .venv-marketing test,marketing
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python scripts/sizes.py
bash scripts/docs.sh > docs-build.log 2>&1 &
docs=$!
trap 'pkill -P "$docs" 2>/dev/null || true; kill "$docs" 2>/dev/null || true' EXIT  # a failed step stops the build
.venv/bin/python -m pytest -n 2 --dist worksteal --durations=15 "$@"
.venv-marketing/bin/python -m pytest -n 2 --dist worksteal \
    tests/test_marketing.py tests/test_dims_model.py tests/test_bambi.py tests/zoo/test_zoo.py \
    -k "not zoo_model or dims_linear_regression or dims_hierarchical_poisson or marketing_mmm"
if ! wait "$docs"; then
    tail -n 80 docs-build.log
    echo "the docs build failed: docs-build.log has its whole output"
    exit 1
fi
PM_SENS_SITE=docs/_build/html .venv/bin/python -m pytest -q tests/test_site.py
