#!/usr/bin/env bash
# Regenerate the oracle report goldens on sharded datasets in tests/golden/dataset_report/
# (rebuilt from scratch): `report peak-memory` and `report memory-tree` runs of pt-snap-cli
# 0.4.1 on native and msinsight datasets of the multi-device fixture (the dataset query
# goldens' committed datasets: run regen_dataset_queries.sh first when those change) and of
# the expandable fixture (imported by the oracle into a temp dir, not committed). Driver:
# tests/oracle/golden_dataset_reports.py (stdlib only).
#
#   tests/oracle/regen_dataset_reports.sh          # ~2 minutes on 2 cores
#
# Needs the oracle venv (.oracle/, git-ignored; override with ORACLE=...). Idempotent.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/oracle.sh"
oracle_tmp pt-snap-dataset-report

"$PYTHON" "$ROOT/tests/oracle/golden_dataset_reports.py" --oracle "$ORACLE" --root "$ROOT" \
    --tmp "$TMP" --jobs "${JOBS:-2}"
echo "wrote $ROOT/tests/golden/dataset_report ($(du -sh "$ROOT/tests/golden/dataset_report" | cut -f1))"
