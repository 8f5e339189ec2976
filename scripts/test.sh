#!/usr/bin/env bash
# Run the linters, the size review (modules over 600 lines and functions over
# 100 lines of code, listed for a reviewer) and the whole test suite (slow
# tests included). Beside the suite, in the background (its output in
# background.log): a second environment, .venv-marketing (pymc-marketing
# requires PyMC 6.3), with the marketing tests and the pymc.dims and
# pymc-marketing zoo models (those of tests/zoo/dims.py); then scripts/docs.sh
# builds the docs site with every example executed. The bambi tests run once,
# in the main suite.
# Last, tests/test_site.py checks the built site.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/venv.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python scripts/sizes.py
# the JAX backend's tests run in a process of their own, after the tests that fork
# (pm.sample's chains): a process that forks once JAX runs may deadlock (JAX's warning)
JAX_TESTS=(tests/test_backend.py tests/zoo/test_zoo_jax.py)
(
    bash scripts/venv.sh .venv-marketing test,marketing
    .venv-marketing/bin/python -m pytest -q -p no:cacheprovider \
        tests/test_marketing.py tests/test_dims_model.py tests/zoo/test_zoo.py \
        -k "not zoo_model or dims_linear_regression or dims_hierarchical_poisson or marketing_mmm"
    .venv-marketing/bin/python -m pytest -q -p no:cacheprovider "${JAX_TESTS[@]}"
    bash scripts/docs.sh
) > background.log 2>&1 &
background=$!
# a failed step stops the background work too
trap 'pkill -P "$background" 2>/dev/null || true; kill "$background" 2>/dev/null || true' EXIT
.venv/bin/python -m pytest -n 2 --dist worksteal --durations=15 \
    "${JAX_TESTS[@]/#/--ignore=}" "$@"
if ! wait "$background"; then
    tail -n 100 background.log
    echo "the marketing tests or the docs build failed: background.log has their whole output"
    exit 1
fi
grep -E "^(=+ )?[0-9]+ passed" background.log || true
PM_SENS_SITE=docs/_build/html .venv/bin/python -m pytest -q tests/test_site.py
