#!/usr/bin/env bash
# The Python side of the build and the tests: a venv of its own, tests/python/.venv, with
# pytest, which runs the CI example examples/ci/test_memory_gate.py
# (crates/pt-snap-cli/tests/check.rs) and the wheel's test (tests/python/test_wheel.py), and
# maturin, which builds the wheel (scripts/wheel).
# Idempotent; a second when it is there.
set -euo pipefail
cd "$(dirname "$0")"
PYTEST_VERSION=8.4.2
MATURIN_VERSION=1.16.0

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if [ "$(.venv/bin/python -c 'import pytest; print(pytest.__version__)' 2>/dev/null)" != "$PYTEST_VERSION" ]; then
  .venv/bin/pip install --quiet --disable-pip-version-check "pytest==$PYTEST_VERSION"
fi
if [ "$(.venv/bin/maturin --version 2>/dev/null)" != "maturin $MATURIN_VERSION" ]; then
  .venv/bin/pip install --quiet --disable-pip-version-check "maturin==$MATURIN_VERSION"
fi
