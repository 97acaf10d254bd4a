#!/usr/bin/env bash
# What the Spark cross-engine test (crates/pt-snap-cli/tests/spark.rs) needs: a Java runtime
# (Debian's default-jre-headless) and PySpark from PyPI in a venv of its own,
# tests/spark/.venv. Idempotent; a second or so when both are there.
set -euo pipefail
cd "$(dirname "$0")"
PYSPARK_VERSION=4.3.0

if ! command -v java >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq default-jre-headless >/dev/null
fi
if [ "$(.venv/bin/python -c 'import pyspark; print(pyspark.__version__)' 2>/dev/null)" != "$PYSPARK_VERSION" ]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check "pyspark==$PYSPARK_VERSION"
fi
