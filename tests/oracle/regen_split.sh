#!/usr/bin/env bash
# Regenerate tests/golden/split/: what the oracle (pt-snap-cli 0.4.1 in .oracle/,
# override with ORACLE=...) does for `pt-snap split`, read by
# crates/pt-snap-cli/tests/split.rs.
#
#   tests/oracle/regen_split.sh
#
# Writes split/cases.json: one entry per run, {name, args, exit, stdout (the
# --json envelope, or null), error (the stderr envelope on failure), left_behind
# (entries the failed run left in its directory), slices: [{name, sha256,
# segments, events, first_id, last_id}]}. sha256 is that of the slice's canonical
# JSON bytes (the oracle's own canonical_snapshot_bytes of the decoded slice, which
# is also what --format json writes: the script checks both agree). The slices of
# the small synthetic fixtures are also kept whole as split/<case>/<slice>.json
# (canonical JSON), to show what differs when a digest does not match.
#
# The "remapped" cases check our fix of the reference's device-N bug (spec §15.1.2):
# the oracle cannot split device 1 of synth_small_2dev when a segment free falls in
# a slice, so the script moves device 1 to device 0 (trace and segments) and splits
# that; our device-1 slices must equal those once their device fields are 1 and
# their device_traces carry one leading empty list.
# Idempotent; needs the oracle's python (for the canonical form).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ORACLE="${ORACLE:-$ROOT/.oracle/bin/pt-snap}"
OPY="$(dirname "$ORACLE")/python"
OUT="$ROOT/tests/golden/split"

T="$(mktemp -d "${TMPDIR:-/tmp}/pt-snap-split.XXXXXX")"
trap 'rm -rf "$T"' EXIT
rm -rf "$OUT"; mkdir -p "$OUT"

U="$ROOT/fixtures/upstream-pkg/snapshots"
S="$ROOT/fixtures/synthetic"
cp "$U/snapshot_with_multi_devices.pkl" "$U/snapshot_expandable.pkl" \
   "$U/snapshot_with_empty_cache_expandable.pkl" \
   "$S/synth_small_2dev.pkl" "$S/caseA_legacy_free.pkl" "$S/caseB_expandable.pkl" \
   "$S/caseC_workspace.pkl" "$S/caseE_devices.pkl" \
   "$ROOT/fixtures/real/cuda_cs336_silmont2000__mem_snapshot.pickle" \
   "$ROOT/fixtures/real/cuda_cs336_magma27__memory_snapshot.pickle" \
   "$ROOT/fixtures/real/cuda_legacy_flexgen__oom_snapshot.pickle" \
   "$ROOT/fixtures/edge/bare_list.pkl" "$ROOT/fixtures/edge/empty_dict.pkl" \
   "$ROOT/fixtures/edge/segments_only.pkl" "$ROOT/fixtures/edge/traces_empty_list.pkl" "$T/"
printf 'not a pickle' >"$T/notes.txt"

# device 1 of synth_small_2dev as device 0 (see above)
"$OPY" - "$T/synth_small_2dev.pkl" "$T/synth_small_2dev_as0.pkl" <<'PY'
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
d["device_traces"] = [d["device_traces"][1]]
d["segments"] = [dict(s, device=0) for s in d["segments"] if s.get("device", 0) == 1]
pickle.dump(d, open(sys.argv[2], "wb"), protocol=4)
PY

cat >"$T/cases.txt" <<'CASES'
multi_s3	snapshot_with_multi_devices.pkl --slices 3
multi_m4000_json	snapshot_with_multi_devices.pkl --max-entries 4000 --format json
multi_d1_m2500	snapshot_with_multi_devices.pkl -d 1 -m 2500
exp_m3000	snapshot_expandable.pkl -m 3000
exp_s2_json	snapshot_expandable.pkl -s 2 --format json
ece_s4	snapshot_with_empty_cache_expandable.pkl -s 4 -d 0
small2_d0_m5	synth_small_2dev.pkl -d 0 -m 5 --format json
small2_as0_m2	synth_small_2dev_as0.pkl -m 2 --format json
small2_d1_m2	synth_small_2dev.pkl -d 1 -m 2
caseA_m1	caseA_legacy_free.pkl -m 1 --format json
caseB_s3	caseB_expandable.pkl -s 3 --format json
caseC_m2	caseC_workspace.pkl -m 2 --format json
small2_s100	synth_small_2dev.pkl -s 100 --format json
real_silmont_m40	cuda_cs336_silmont2000__mem_snapshot.pickle -m 40
real_magma_s4_json	cuda_cs336_magma27__memory_snapshot.pickle -s 4 --format json
real_flexgen_torch20	cuda_legacy_flexgen__oom_snapshot.pickle -s 1
err_both	synth_small_2dev.pkl -s 2 -m 3
err_none	synth_small_2dev.pkl
err_zero	synth_small_2dev.pkl -s 0
err_negative	synth_small_2dev.pkl -m -4
err_format	synth_small_2dev.pkl -s 2 --format yaml
err_missing	nothere.pkl -s 2
err_suffix	notes.txt -s 2
err_dir_source	sub.pkl -s 2
err_negdev	synth_small_2dev.pkl -s 2 -d -1
err_parent	synth_small_2dev.pkl -s 2 -o nodir/out
err_exists	synth_small_2dev.pkl -s 2 -o existing
err_baddev	synth_small_2dev.pkl -s 2 -d 3
err_idle_device	caseE_devices.pkl -s 2 -d 1
err_not_a_dict	bare_list.pkl -s 2
err_no_trace_list	empty_dict.pkl -s 2
err_segments_only	segments_only.pkl -m 1
err_no_events	traces_empty_list.pkl -s 2
CASES
mkdir -p "$T/sub.pkl" "$T/existing"

cat >"$T/record.py" <<'PY'
import hashlib, json, os, pickle, sys
from pt_snap_cli.snapshot.representation import canonical_snapshot_bytes

name, args, code, out_dir, stdout, stderr, keep_dir, listing = sys.argv[1:9]
args = json.loads(args)
case = {"name": name, "args": args, "exit": int(code)}
s = open(stdout).read()
case["stdout"] = json.loads(s) if s.strip() else None
if int(code) != 0:
    e = open(stderr).read()
    case["error"] = json.loads(e) if e.strip().startswith("{") else e
    case["left_behind"] = sorted(l for l in open(listing).read().split("\n") if l)
slices = []
if case["stdout"]:
    for f in case["stdout"]["files"]:
        path = os.path.join(out_dir, os.path.basename(f))
        raw = open(path, "rb").read()
        rep = json.loads(raw) if path.endswith(".json") else pickle.loads(raw)
        canon = canonical_snapshot_bytes(rep)
        if path.endswith(".json") and canon != raw:
            sys.exit(f"{path}: JSON output is not the canonical form")
        d = [t for t in rep["device_traces"] if t]
        ev = d[0] if d else []
        slices.append({
            "name": os.path.basename(f),
            "sha256": hashlib.sha256(canon).hexdigest(),
            "segments": len(rep["segments"]),
            "events": len(ev),
            "first_id": ev[0]["id"] if ev else None,
            "last_id": ev[-1]["id"] if ev else None,
        })
        if keep_dir != "-":
            os.makedirs(keep_dir, exist_ok=True)
            open(os.path.join(keep_dir, os.path.basename(f).rsplit(".", 1)[0] + ".json"), "wb").write(canon)
case["slices"] = slices
print(json.dumps(case, sort_keys=True))
PY

cd "$T"
: >"$T/cases.jsonl"
while IFS=$'\t' read -r name rest; do
  # shellcheck disable=SC2206
  args=($rest)
  has_o=0; for a in "${args[@]}"; do [ "$a" = "-o" ] && has_o=1; done
  full=(split "${args[@]}")
  [ $has_o = 1 ] || full+=(-o "out_$name")
  full+=(--json)
  set +e
  "$ORACLE" "${full[@]}" >"$T/o" 2>"$T/e"
  code=$?
  set -e
  # the oracle logs to stderr even under --json: keep only the envelope
  "$OPY" -c 'import sys,re; s=open(sys.argv[1]).read(); i=s.find("\n{"); j=0 if s.startswith("{") else (i+1 if i>=0 else len(s)); open(sys.argv[1],"w").write(s[j:])' "$T/e"
  keep=-
  case "$name" in small2_*|caseA_*|caseB_*|caseC_*) keep="$OUT/$name";; esac
  ls -A "$T" | grep -v -E '^(o|e|record.py|cases.txt|cases.jsonl|listing|out_.*|.*\.pkl|.*\.pickle|notes.txt|existing|sub.pkl)$' >"$T/listing" || true
  argj="$("$OPY" -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "${full[@]:1}")"
  outdir="out_$name"; [ $has_o = 1 ] && outdir=/nonexistent
  "$OPY" "$T/record.py" "$name" "$argj" "$code" "$outdir" "$T/o" "$T/e" "$keep" "$T/listing" >>"$T/cases.jsonl"
done <"$T/cases.txt"

"$OPY" - "$T/cases.jsonl" "$OUT/cases.json" <<'PY'
import json, sys
cases = [json.loads(l) for l in open(sys.argv[1])]
with open(sys.argv[2], "w") as f:
    json.dump(cases, f, indent=1, sort_keys=True)
    f.write("\n")
PY
echo "wrote $OUT"
