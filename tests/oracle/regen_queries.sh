#!/usr/bin/env bash
# Regenerate the oracle query goldens in tests/golden/query/ (rebuilt from
# scratch) from the redistributable fixtures in fixtures/.
#
#   tests/oracle/regen_queries.sh            # run from anywhere (paths are repo-relative)
#   JOBS=1 tests/oracle/regen_queries.sh     # oracle runs in parallel (default 2)
#
# Needs the reference implementation pt-snap-cli 0.4.1 in .oracle/ (a venv,
# git-ignored; override with ORACLE=/path/to/pt-snap) and python3 (stdlib only;
# override with PYTHON=...). The driver is tests/oracle/golden_query.py; the
# layout and placeholders are described in tests/golden/README.md ("query/").
#
# What it does: imports each set's fixture with the oracle (`import <copy>
# --json --no-focus -o <tmp>`; the v1 set takes one shard of an
# `--format msinsight --events-per-slice 300` export), copies the DB to
# <set>/reference.db (completed_at overwritten with a fixed value so the file is
# byte-reproducible), then runs every case (`pt-snap query ...`) against a temp
# copy of the set dir, each run in a fresh temp CWD with HOME pointed at a temp
# dir and PT_SNAP_* variables removed, and writes one JSON file per run.
# Idempotent: the output depends only on the fixtures and the oracle (checked:
# two full runs, `diff -r` empty). Takes ~8 minutes on 2 cores.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/oracle.sh"
oracle_tmp pt-snap-query
OUT="$ROOT/tests/golden/query"

"$PYTHON" "$ROOT/tests/oracle/golden_query.py" --oracle "$ORACLE" --root "$ROOT" \
    --out "$OUT" --tmp "$TMP" --jobs "${JOBS:-2}"
echo "wrote $OUT ($(du -sh "$OUT" | cut -f1))"
