#!/usr/bin/env bash
# Check that the two canonical-dump twins agree byte for byte:
#   tests/oracle/canon_db.py  (Python, stdlib)   and
#   pt_snap_testkit::canonical_db_json  (Rust, via `cargo run -p pt-snap-testkit --example canon`)
# on (1) the testkit's sample DB and (2) the oracle's DB of every fixture in
# fixtures/ (imported with .oracle in a temp dir; failing imports are skipped).
#
#   tests/oracle/check_twins.sh [FILTER]     # FILTER: substring of the fixture path
#   tests/oracle/check_twins.sh --db A.db B.db ...   # just compare on given DBs
#
# Env: ORACLE (default .oracle/bin/pt-snap), PYTHON (default python3).
# Exit 0 iff every compared DB gives identical output.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ORACLE="${ORACLE:-$ROOT/.oracle/bin/pt-snap}"
PYTHON="${PYTHON:-python3}"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/pt-snap-twins.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

cd "$ROOT"
cargo build -q -p pt-snap-testkit --example canon
canon_rs() { cargo run -q -p pt-snap-testkit --example canon -- "$@"; }

fail=0; n=0
compare() {
  local db="$1" label="$2"
  "$PYTHON" tests/oracle/canon_db.py "$db" >"$TMP/py.json"
  canon_rs "$db" >"$TMP/rs.json"
  n=$((n + 1))
  if cmp -s "$TMP/py.json" "$TMP/rs.json"; then
    echo "same    $label ($(wc -c <"$TMP/py.json") bytes)"
  else
    echo "DIFFER  $label"; diff "$TMP/py.json" "$TMP/rs.json" | head -20; fail=1
  fi
}

if [ "${1:-}" = "--db" ]; then
  shift
  for db in "$@"; do compare "$db" "$db"; done
else
  FILTER="${1:-}"
  canon_rs --sample "$TMP/sample.db"
  compare "$TMP/sample.db" "testkit sample DB"
  mapfile -t FIXTURES < <(cd fixtures && find . -type f \( -iname '*.pkl' -o -iname '*.pickle' \) | sed 's|^\./||' | LC_ALL=C sort)
  for rel in "${FIXTURES[@]}"; do
    [[ -z "$FILTER" || "$rel" == *"$FILTER"* ]] || continue
    work="$TMP/run"; rm -rf "$work"; mkdir -p "$work/home"
    cp "fixtures/$rel" "$work/"
    name="$(basename "$rel")"
    if (cd "$work" && HOME="$work/home" "$ORACLE" import "$work/$name" --json --no-focus >/dev/null 2>&1); then
      compare "$work/$name.db" "$rel"
    else
      echo "skip    $rel (oracle refused it)"
    fi
  done
fi
echo "$n DB(s) compared"
exit $fail
