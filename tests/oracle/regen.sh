#!/usr/bin/env bash
# Regenerate the oracle import goldens in tests/golden/import/ (and
# tests/golden/import-summary.md) from the redistributable fixtures in fixtures/.
#
#   tests/oracle/regen.sh            # all fixtures
#   tests/oracle/regen.sh synthetic  # only fixtures whose relative path contains "synthetic"
#
# Needs the reference implementation pt-snap-cli 0.4.1 in .oracle/ (a venv,
# git-ignored; override with ORACLE=/path/to/pt-snap) and python3 (stdlib only;
# override with PYTHON=...). Idempotent: the output depends only on the fixtures
# and the oracle; the import/ tree is rebuilt from scratch on a full run.
#
# For every fixtures/**/*.pkl|*.pickle (relative path R) it copies the file into
# a fresh temp dir (HOME is pointed at a temp dir too, so nothing touches the
# real home or the repo), runs
#     pt-snap import <copy> --json --no-focus
# and writes tests/golden/import/R.json =
#     {"import": <stdout JSON minus db_path, metadata.completed_at,
#                 metadata.importer_version; temp paths -> "<TMP>">,
#      "exit": <exit code>,
#      "error": <stderr error envelope, only if exit != 0>,
#      "db": <canonical dump (tests/oracle/canon_db.py), only on success>}
# For the multi-device fixtures it also runs `--device d` for every device with
# events and writes R.device-<d>.json; DEVICE_EXTRA below adds runs for devices
# without events (the oracle refuses them).
# Fixture-relative paths: upstream-pkg/snapshots/..., synthetic/..., real/..., edge/...
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/oracle.sh"
oracle_tmp pt-snap-regen
HERE="$ROOT/tests/oracle"
OUT="$ROOT/tests/golden/import"
FILTER="${1:-}"

# Fixtures imported once per device that has events (plus the default run).
MULTI_DEVICE=(
  "synthetic/synth_small_2dev.pkl"
  "upstream-pkg/snapshots/snapshot_with_multi_devices.pkl"
)
# Extra "fixture:device" runs for devices without events / absent devices.
DEVICE_EXTRA=(
  "upstream-pkg/snapshots/snapshot_with_multi_devices.pkl:2"
  "upstream-pkg/snapshots/snapshot_with_multi_devices.pkl:9"
  "synthetic/caseE_devices.pkl:1"
  "synthetic/synth_small_1dev.pkl:0"
)

if [ -z "$FILTER" ]; then rm -rf "$OUT"; fi
mkdir -p "$OUT"

# run_one REL GOLDEN [extra import args...]
run_one() {
  local rel="$1" golden="$2"; shift 2
  local work="$TMP/run"
  rm -rf "$work"; mkdir -p "$work/home" "$work/cwd"
  local name; name="$(basename "$rel")"
  cp "$ROOT/fixtures/$rel" "$work/cwd/$name"
  local code=0
  (cd "$work/cwd" && HOME="$work/home" COLUMNS=200 NO_COLOR=1 \
      "$ORACLE" import "$work/cwd/$name" --json --no-focus "$@" \
      >"$work/stdout" 2>"$work/stderr") || code=$?
  mkdir -p "$(dirname "$golden")"
  "$PYTHON" "$HERE/golden_import.py" --stdout "$work/stdout" --stderr "$work/stderr" \
      --exit "$code" --tmp "$work" --db "$work/cwd/$name.db" -o "$golden"
  echo "$(printf '%-75s' "${golden#"$ROOT"/}") exit=$code"
}

cd "$ROOT/fixtures"
mapfile -t FIXTURES < <(find . -type f \( -iname '*.pkl' -o -iname '*.pickle' \) | sed 's|^\./||' | LC_ALL=C sort)

for rel in "${FIXTURES[@]}"; do
  [[ -z "$FILTER" || "$rel" == *"$FILTER"* ]] || continue
  run_one "$rel" "$OUT/$rel.json"
done

for rel in "${MULTI_DEVICE[@]}"; do
  [[ -z "$FILTER" || "$rel" == *"$FILTER"* ]] || continue
  mapfile -t devs < <("$PYTHON" -c '
import json, sys
g = json.load(open(sys.argv[1]))
for d in (g.get("db") or {}).get("devices", []):
    print(d["device"])' "$OUT/$rel.json")
  for d in "${devs[@]}"; do
    run_one "$rel" "$OUT/$rel.device-$d.json" --device "$d"
  done
done

for item in "${DEVICE_EXTRA[@]}"; do
  rel="${item%:*}"; d="${item##*:}"
  [[ -z "$FILTER" || "$rel" == *"$FILTER"* ]] || continue
  run_one "$rel" "$OUT/$rel.device-$d.json" --device "$d"
done

"$PYTHON" "$HERE/golden_summary.py" "$OUT" >"$ROOT/tests/golden/import-summary.md"
echo "wrote $ROOT/tests/golden/import-summary.md"
