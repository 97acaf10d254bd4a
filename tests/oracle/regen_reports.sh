#!/usr/bin/env bash
# Regenerate the oracle report goldens in tests/golden/report/ (rebuilt from scratch):
# `report peak-memory` and `report memory-tree` runs of pt-snap-cli 0.4.1 on the query
# goldens' databases (tests/golden/query/<set>/reference.db; run regen_queries.sh first
# when those change). Driver: tests/oracle/golden_report.py (stdlib only).
#
#   tests/oracle/regen_reports.sh          # ~2 minutes on 2 cores
#
# Needs the oracle venv (.oracle/, git-ignored; override with ORACLE=...). Idempotent.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/oracle.sh"
oracle_tmp pt-snap-report

"$PYTHON" "$ROOT/tests/oracle/golden_report.py" --oracle "$ORACLE" --root "$ROOT" \
    --tmp "$TMP" --jobs "${JOBS:-2}"
echo "wrote $ROOT/tests/golden/report ($(du -sh "$ROOT/tests/golden/report" | cut -f1))"
