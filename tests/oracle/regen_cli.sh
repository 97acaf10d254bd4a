#!/usr/bin/env bash
# Regenerate tests/golden/cli/: raw text and --json outputs of the oracle
# (pt-snap-cli 0.4.1 in .oracle/, override with ORACLE=...) for import (fresh,
# reuse, --force, --device, --output-dir, state-only, refused), focus, overview,
# metadata and config, run as one scripted session in a temp project dir with
# HOME pointed at a temp dir (the real home and the repo are never touched).
#
#   tests/oracle/regen_cli.sh
#
# For each step NAME it writes cli/NAME.stdout and cli/NAME.stderr (the latter
# only when non-empty); cli/exit-codes.txt lists "NAME<TAB>exit<TAB>command".
# Steps run in the listed order and depend on each other (focus state, DB
# reuse), so read them as a transcript. Placeholders: <TMP> = the project dir
# (cwd of every step), <HOME> = the temp HOME, <ORACLE> = the oracle venv,
# <TS> = log-line timestamp, <COMPLETED_AT> = metadata completed_at value;
# rich traceback boxes (uncaught exceptions) are replaced by one marker line.
# Idempotent (output depends only on fixtures + oracle). Needs python3.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ORACLE="${ORACLE:-$ROOT/.oracle/bin/pt-snap}"
PYTHON="${PYTHON:-python3}"
OUT="$ROOT/tests/golden/cli"
ORACLE_VENV="$(cd "$(dirname "$ORACLE")/.." && pwd -P)"

T="$(mktemp -d "${TMPDIR:-/tmp}/pt-snap-cli.XXXXXX")"
trap 'rm -rf "$T"' EXIT
T="$(cd "$T" && pwd -P)"
P="$T/proj"; H="$T/home"
mkdir -p "$P" "$H"
cp "$ROOT/fixtures/synthetic/synth_small_2dev.pkl" "$ROOT/fixtures/synthetic/caseE_devices.pkl" \
   "$ROOT/fixtures/synthetic/caseD_inconsistent.pkl" "$ROOT/fixtures/edge/segments_only.pkl" \
   "$ROOT/fixtures/edge/empty_dict.pkl" "$ROOT/fixtures/real/cuda_legacy_flexgen__oom_snapshot.pickle" "$P/"

rm -rf "$OUT"; mkdir -p "$OUT"
: >"$OUT/exit-codes.txt"

cat >"$T/scrub.py" <<'PY'
import re, sys
p, h, v = sys.argv[1:4]
s = sys.stdin.read()
for old, new in ((v, "<ORACLE>"), (p, "<TMP>"), (h, "<HOME>")):
    s = s.replace(old, new)
s = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00", "<COMPLETED_AT>", s)
s = re.sub(r"(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", "<TS> ", s)
# Uncaught exceptions: rich draws a boxed traceback quoting the oracle's source;
# keep only a marker (the "ExcType: message" line after the box stays).
s = re.sub(r"(?ms)^╭[^\n]*Traceback \(most recent call last\).*?^╰[^\n]*\n", "<TRACEBACK (rich box elided)>\n", s)
sys.stdout.write(s)
PY
scrub() { "$PYTHON" "$T/scrub.py" "$P" "$H" "$ORACLE_VENV"; }

# step NAME ARGS... : run `pt-snap ARGS...` in $P with HOME=$H
step() {
  local name="$1"; shift
  local code=0
  (cd "$P" && env -u PT_SNAP_DB_PATH HOME="$H" COLUMNS=120 NO_COLOR=1 TERM=dumb \
      "$ORACLE" "$@" >"$T/o" 2>"$T/e") || code=$?
  scrub <"$T/o" >"$OUT/$name.stdout"
  if [ -s "$T/e" ]; then scrub <"$T/e" >"$OUT/$name.stderr"; fi
  printf '%s\t%s\tpt-snap %s\n' "$name" "$code" "$*" | scrub >>"$OUT/exit-codes.txt"
  echo "$name exit=$code"
}

DB=synth_small_2dev.pkl.db

# --- nothing configured yet
step 00_focus_none_text      focus
step 00_focus_none_json      focus --json
step 00_config_none_text     config
step 00_config_none_json     config --json
# --- (e) import text mode: fresh, reuse, force
step 01_import_text          import synth_small_2dev.pkl
step 02_import_reuse_text    import synth_small_2dev.pkl
step 03_import_reuse_json    import synth_small_2dev.pkl --json
step 04_import_force_text    import synth_small_2dev.pkl --force
step 05_import_force_json    import synth_small_2dev.pkl --force --json
# --- (d) requested device changes the cache key; same DB file name
step 06_import_device1_json  import synth_small_2dev.pkl --device 1 --json
step 07_import_nodevice_json import synth_small_2dev.pkl --json
step 08_import_nofocus_json  import synth_small_2dev.pkl --no-focus --json
# --- (d) --output-dir (relative; created if missing)
step 09_import_outdir_json   import synth_small_2dev.pkl --output-dir out --json
step 10_import_outdir_text   import synth_small_2dev.pkl -o out
# --- (b) device without events, device absent
step 11_import_nodev_text    import synth_small_2dev.pkl --device 5 --no-focus
step 12_import_nodev_json    import synth_small_2dev.pkl --device 5 --no-focus --json
# --- (c) device with segments but no events
step 13_import_caseE_text    import caseE_devices.pkl --no-focus --force
step 14_import_caseE_dev1_json import caseE_devices.pkl --device 1 --no-focus --json
# --- refused imports in text mode
step 15_import_unreplayable_text import caseD_inconsistent.pkl --no-focus
step 16_import_legacy_g0_text import cuda_legacy_flexgen__oom_snapshot.pickle --no-focus
step 17_import_legacy_g0_json import cuda_legacy_flexgen__oom_snapshot.pickle --no-focus --json
# --- (f) focus / overview / metadata on the imported DB (focus was set by 09/10 -> out/)
step 20_focus_set_text       focus "$DB"
step 21_focus_read_text      focus
step 22_focus_read_json      focus --json
step 23_focus_set_json       focus "$DB" --json
step 24_focus_set_dev_text   focus "$DB" --device 1
step 25_focus_dev_only_json  focus --device 0 --json
step 26_focus_bad_device_json focus --device 7 --json
step 27_focus_bad_device_text focus --device 7
step 28_focus_session_text   focus "$DB" --session
step 29_focus_session_json   focus "$DB" --session --json
step 30_focus_global_text    focus "$DB" --global
step 31_focus_global_json    focus "$DB" --global --json
step 32_overview_text        overview
step 33_overview_json        overview --json
step 34_overview_path_text   overview "$DB"
step 35_overview_path_json   overview "$DB" --json
step 36_metadata_text        metadata
step 37_metadata_json        metadata --json
step 38_metadata_path_json   metadata "$DB" --json
# --- global focus only: project focus file removed, global config (from 30/31) remains
mv "$P/.pt-snap" "$T/pt-snap.saved"
step 39_focus_global_read_text focus
step 39_focus_global_read_json focus --json
step 39_overview_global_text   overview
mv "$T/pt-snap.saved" "$P/.pt-snap"
# --- (f) config
step 40_config_text          config
step 41_config_json          config --json
step 42_config_path_text     config --path
step 43_config_path_json     config --path --json
step 44_config_clear_text    config --clear
step 45_config_after_clear_text config
step 46_config_clear_json    config --clear --json
step 47_config_after_clear_json config --json
# --- nothing configured any more (project focus file removed, config cleared)
rm -rf "$P/.pt-snap"
step 48_focus_none_after_clear_text focus
step 49_focus_none_after_clear_json focus --json
# --- (a) state-only pickles: import with focus, then overview/focus/metadata
step 50_import_state_only_json import segments_only.pkl --json
step 51_import_state_only_text import segments_only.pkl --force
step 52_focus_state_only_text  focus
step 53_focus_state_only_json  focus --json
step 54_overview_state_only_text overview
step 55_overview_state_only_json overview --json
step 56_metadata_state_only_text metadata
step 57_import_empty_dict_json import empty_dict.pkl --json --no-focus
(cd "$P" && find . -mindepth 1 | LC_ALL=C sort) >"$OUT/99_project_dir_listing.txt"
echo "wrote $OUT"
