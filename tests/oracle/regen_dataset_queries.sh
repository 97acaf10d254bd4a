#!/usr/bin/env bash
# Regenerate the oracle dataset goldens in tests/golden/dataset_query/ (rebuilt from scratch):
# the reference's native and msinsight datasets of the multi-device fixture (K=3000), the
# upstream 3-shard interop export, and the reference's answers on them (driver:
# tests/oracle/golden_dataset_queries.py; SETS=native,msinsight to rebuild only some). Needs the oracle in .oracle/ (ORACLE=... to override).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ORACLE="${ORACLE:-$ROOT/.oracle/bin/pt-snap}"
PYTHON="${PYTHON:-python3}"
OUT="$ROOT/tests/golden/dataset_query"
[ -x "$ORACLE" ] || { echo "oracle not found: $ORACLE" >&2; exit 1; }
"$ORACLE" --version | grep -q '0\.4\.1' || { echo "oracle is not pt-snap-cli 0.4.1" >&2; exit 1; }
TMP="$(mktemp -d "${TMPDIR:-/tmp}/pt-snap-dataset.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
TMP="$(cd "$TMP" && pwd -P)"
"$PYTHON" "$ROOT/tests/oracle/golden_dataset_queries.py" --oracle "$ORACLE" --root "$ROOT" \
    --out "$OUT" --tmp "$TMP" ${SETS:+--sets "$SETS"}
echo "wrote $OUT ($(du -sh "$OUT" | cut -f1))"
