#!/usr/bin/env bash
# The Python side of the tests: a venv of its own, tests/python/.venv, with pytest, which runs
# the CI example examples/ci/test_memory_gate.py (crates/pt-snap-cli/tests/check.rs).
# Idempotent; a second when it is there.
set -euo pipefail
cd "$(dirname "$0")"
PYTEST_VERSION=8.4.2

if [ "$(.venv/bin/python -c 'import pytest; print(pytest.__version__)' 2>/dev/null)" != "$PYTEST_VERSION" ]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check "pytest==$PYTEST_VERSION"
fi
