#!/usr/bin/env bash
# Regenerate the oracle dataset goldens in tests/golden/dataset_query/ (rebuilt from scratch):
# the reference's native and msinsight datasets of the multi-device fixture (K=3000), the
# upstream 3-shard interop export, and the reference's answers on them (driver:
# tests/oracle/golden_dataset_queries.py; SETS=native,msinsight to rebuild only some). Needs the oracle in .oracle/ (ORACLE=... to override).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/oracle.sh"
oracle_tmp pt-snap-dataset
OUT="$ROOT/tests/golden/dataset_query"
"$PYTHON" "$ROOT/tests/oracle/golden_dataset_queries.py" --oracle "$ORACLE" --root "$ROOT" \
    --out "$OUT" --tmp "$TMP" ${SETS:+--sets "$SETS"}
echo "wrote $OUT ($(du -sh "$OUT" | cut -f1))"
