#!/usr/bin/env bash
# Regenerate the dataset-import goldens in tests/golden/dataset_import/ (spec §10.2-10.3):
# `pt-snap import --events-per-slice K` (pt-snap-native-v2) and `--format msinsight`
# (compatibility-v1) runs of pt-snap-cli 0.4.1 on redistributable fixtures, including the
# reuse / refusal / --force sequences and the refusals (unknown actions, OOM, bad ids).
#
#   tests/oracle/regen_dataset_import.sh            # all cases
#   tests/oracle/regen_dataset_import.sh multi      # only cases whose name contains "multi"
#
# Needs the oracle in .oracle/ (override with ORACLE=...) and python3 (stdlib only).
# Each case is one fixture and a sequence of import runs in one fresh temp dir; see
# golden_dataset_import.py for the golden format. Idempotent.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/oracle.sh"
OUT="$ROOT/tests/golden/dataset_import"
FILTER="${1:-}"

if [ -z "$FILTER" ]; then rm -rf "$OUT"; fi
mkdir -p "$OUT"

UP=upstream-pkg/snapshots
# case_ NAME FIXTURE -- RUN [-- RUN ...]
case_() {
  local name="$1" fixture="$2"; shift 2
  [[ -z "$FILTER" || "$name" == *"$FILTER"* ]] || return 0
  "$PYTHON" "$ROOT/tests/oracle/golden_dataset_import.py" "$ORACLE" "$fixture" "$OUT/$name.json" "$@"
  echo "tests/golden/dataset_import/$name.json"
}

# Native datasets, with the reuse / refusal / --force sequence on the multi-device fixture.
case_ native_multi_k3000 "$UP/snapshot_with_multi_devices.pkl" \
  -- --events-per-slice 3000 --json \
  -- --events-per-slice 3000 --json \
  -- --events-per-slice 2999 --json \
  -- --events-per-slice 3000 --json --force \
  -- --events-per-slice 3000
case_ native_multi_dev1_k4000 "$UP/snapshot_with_multi_devices.pkl" \
  -- --events-per-slice 4000 --device 1 --json \
  -- --events-per-slice 4000 --json
case_ native_multi_dev2_refused "$UP/snapshot_with_multi_devices.pkl" \
  -- --events-per-slice 3000 --device 2 --json
case_ native_expandable_k4000 "$UP/snapshot_expandable.pkl" -- --events-per-slice 4000 --json
case_ native_empty_cache_k5000 "$UP/snapshot_with_empty_cache.pkl" -- --events-per-slice 5000 --json
case_ native_caseB_k3 synthetic/caseB_expandable.pkl -- --events-per-slice 3 --json
case_ native_caseC2_k2 synthetic/caseC2_workspace.pkl -- --events-per-slice 2 --json
case_ native_caseE_k1 synthetic/caseE_devices.pkl -- --events-per-slice 1 --json
case_ native_2dev_oom_k4 synthetic/synth_small_2dev_oom.pkl -- --events-per-slice 4 --json
case_ native_1dev_unknown_action synthetic/synth_small_1dev.pkl -- --events-per-slice 7 --json
case_ native_caseA_legacy_free synthetic/caseA_legacy_free.pkl -- --events-per-slice 2 --json
case_ native_caseC_replay_fails synthetic/caseC_workspace.pkl -- --events-per-slice 7 --json

# msinsight exports and their no-replace rules.
case_ msinsight_multi_k3000 "$UP/snapshot_with_multi_devices.pkl" \
  -- --format msinsight --events-per-slice 3000 --json \
  -- --format msinsight --events-per-slice 3000 --json \
  -- --format msinsight --events-per-slice 3000 --json --force \
  -- --format msinsight --events-per-slice 2000 --json --force \
  -- --format msinsight --events-per-slice 3000
case_ msinsight_expandable_default "$UP/snapshot_expandable.pkl" -- --format msinsight --json
case_ msinsight_caseB_k3 synthetic/caseB_expandable.pkl -- --format msinsight --events-per-slice 3 --json
case_ msinsight_caseC2_k2 synthetic/caseC2_workspace.pkl -- --format msinsight --events-per-slice 2 --json
case_ msinsight_oom_refused synthetic/synth_small_2dev_oom.pkl -- --format msinsight --events-per-slice 4 --json
case_ msinsight_ids_refused synthetic/caseA_legacy_free.pkl -- --format msinsight --events-per-slice 2 --json
