#!/usr/bin/env bash
# End-to-end test of the browser app: serves dist/ (build it first with scripts/web-build) on a
# free 127.0.0.1 port and drives Debian Chromium with playwright-core (tests/browser/setup.sh
# installs both). Screenshots go to target/web/.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
[ -f dist/index.html ] || { echo "tests/web: dist/ missing; run scripts/web-build" >&2; exit 1; }
[ -d tests/browser/node_modules/playwright-core ] || tests/browser/setup.sh
# The CLI's answers are the expected values: the current CLI's, not a stale binary's. With
# this dist/ built in, for `pt-snap view` (tests/web/view.test.mjs).
PT_SNAP_WEB_DIST="$root/dist" cargo build -q -p pt-snap-cli
out=target/web
mkdir -p "$out"

# The CLI's answers are the expected values.
fixture=fixtures/upstream-pkg/snapshots/snapshot_with_empty_cache.pkl
cp "$fixture" "$out/fixture.pkl"
rm -f "$out/fixture.pkl.db"
target/debug/pt-snap import "$out/fixture.pkl" --no-focus --json >/dev/null
target/debug/pt-snap query "$out/fixture.pkl.db" --template-use memory_peak --json > "$out/expected-peak.json"
# The bundled sample (www/index.html copies it into dist/sample/), on both its devices.
cp fixtures/upstream-pkg/snapshots/snapshot_with_multi_devices.pkl "$out/sample.pkl"
rm -f "$out/sample.pkl.db"
target/debug/pt-snap import "$out/sample.pkl" --no-focus --json >/dev/null
for d in 0 1; do
  target/debug/pt-snap query "$out/sample.pkl.db" --device $d --template-use memory_peak --json > "$out/expected-sample-peak-$d.json"
done
# A capture with C++ frames (stacks='all', CS336): the peak report's labels and the tree's
# Python frames view against the CLI's --stacks python.
cp fixtures/real/cuda_cs336_nothanmin__memory_snapshot.pickle "$out/cs336.pickle"
rm -f "$out/cs336.pickle.db"
target/debug/pt-snap import "$out/cs336.pickle" --no-focus --json >/dev/null
target/debug/pt-snap report peak-memory "$out/cs336.pickle.db" --stacks python > "$out/expected-cs336-peak.txt"
# A pickle asking for os.system: refused, never run.
printf '\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03.' > "$out/hostile.pkl"
target/debug/pt-snap import "$out/hostile.pkl" --no-focus --json 2> "$out/expected-hostile.json" >/dev/null && { echo "hostile pickle was accepted" >&2; exit 1; }
printf 'this is not a database, just some text\n' > "$out/not-a.db"
target/debug/pt-snap query "$out/not-a.db" --template-use memory_peak --json 2> "$out/expected-not-a-db.json" >/dev/null && { echo "not-a.db was opened" >&2; exit 1; }
# A pickle cut short; a pickle named .txt (taken by its content); a ZIP (torch.save's) named
# .pt, refused by name and content.
head -c 20000 "$fixture" > "$out/truncated.pkl"
target/debug/pt-snap import "$out/truncated.pkl" --no-focus --json 2> "$out/expected-truncated.json" >/dev/null && { echo "truncated pickle was accepted" >&2; exit 1; }
cp "$fixture" "$out/snapshot.txt"
printf 'PK\x03\x04\x14\x00\x00\x00\x08\x00archive/data.pkl' > "$out/x.pt"
target/debug/pt-snap import "$out/x.pt" --no-focus --json 2> "$out/expected-zip.json" >/dev/null && { echo "a ZIP archive was accepted" >&2; exit 1; }
# A JSON snapshot (the test drops it gzip-compressed), on both its devices.
cp fixtures/synthetic/synth_small_2dev.json "$out/synth.json"
rm -f "$out/synth.json.db"
target/debug/pt-snap import "$out/synth.json" --no-focus --json >/dev/null
for d in 0 1; do
  target/debug/pt-snap query "$out/synth.json.db" --device $d --template-use memory_peak --json > "$out/expected-synth-peak-$d.json"
done
# 512-byte allocations every 256 bytes and no segments: the strict replay refuses the trace,
# the lenient one imports it and lists the events it could not reconcile.
python3 - "$out/overlap.json" <<'PY'
import json, sys
base, events = 0x7f0000000000, []
for i in range(8):
    events.append({"action": "alloc", "addr": base + 256 * i, "size": 512, "stream": 0, "frames": []})
for i in range(8):
    for action in ("free_requested", "free_completed"):
        events.append({"action": action, "addr": base + 256 * i, "size": 512, "stream": 0, "frames": []})
json.dump({"segments": [], "device_traces": [events]}, open(sys.argv[1], "w"))
PY
rm -f "$out/overlap.json.db"
target/debug/pt-snap import "$out/overlap.json" --no-focus --json 2> "$out/expected-overlap-strict.json" >/dev/null && { echo "the overlapping trace was accepted by the strict replay" >&2; exit 1; }
target/debug/pt-snap import "$out/overlap.json" --no-focus --json --lenient > "$out/expected-overlap-lenient.json"
target/debug/pt-snap query "$out/overlap.json.db" --template-use memory_peak --json > "$out/expected-overlap-peak.json"
# Large enough (33 MB) that its import is still running when the test cancels it, and that
# the peaks show well before the database is ready.
[ -f "$out/big.pickle" ] || cargo run -q --release -p pt-snap-gen -- --seed 7 --events 300000 --out "$out/big.pickle" >/dev/null
rm -f "$out/big.pickle.db"
target/debug/pt-snap import "$out/big.pickle" --no-focus --json >/dev/null
target/debug/pt-snap query "$out/big.pickle.db" --template-use memory_peak --json > "$out/expected-big-peak.json"
# Another seed: a file the browser's cache has not seen, for the peaks-first test.
[ -f "$out/fresh.pickle" ] || cargo run -q --release -p pt-snap-gen -- --seed 8 --events 300000 --out "$out/fresh.pickle" >/dev/null
rm -f "$out/fresh.pickle.db"
target/debug/pt-snap import "$out/fresh.pickle" --no-focus --json >/dev/null
target/debug/pt-snap query "$out/fresh.pickle.db" --template-use memory_peak --json > "$out/expected-fresh-peak.json"
# Its indexes, which the browser's import defers and builds after ready.
python3 - "$out/fresh.pickle.db" > "$out/expected-fresh-indexes.json" <<'PY'
import json, sqlite3, sys
names = sqlite3.connect(sys.argv[1]).execute(
    "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
print(json.dumps([r[0] for r in names]))
PY
# The ranks of a job: four generated ranks, rank 2 leaking, and a rank file that is no
# snapshot; `pt-snap ranks` on them is what the Ranks view must show.
mkdir -p "$out/job"
for r in 0 1 2 3; do
  leak=0; [ $r = 2 ] && leak=0.05
  [ -f "$out/job/rank$r.pickle" ] || cargo run -q --release -p pt-snap-gen -- --seed 21 --rank $r --leak-rate $leak --events 20000 --out "$out/job/rank$r.pickle" >/dev/null
done
cp "$out/hostile.pkl" "$out/job/rank4.pickle"
rm -f "$out"/job/*.db
target/debug/pt-snap ranks "$out"/job/rank*.pickle --json > "$out/expected-ranks.json" 2> "$out/expected-ranks-stderr.json" && { echo "ranks passed a file that is no snapshot" >&2; exit 1; }
# An OOM on each of two devices: the banner and the OOM view must say what report oom says.
cp fixtures/synthetic/synth_small_2dev_oom.pkl "$out/oom.pkl"
rm -f "$out/oom.pkl.db"
target/debug/pt-snap report oom "$out/oom.pkl" --json > "$out/expected-oom.json"
# Rules of one's own, in the form --categories reads: everything is temporary.
printf '[[rule]]\nname = "everything"\ncategory = "temporary"\nfile = "."\n' > "$out/all-temporary.toml"
target/debug/pt-snap report oom "$out/oom.pkl" --categories "$out/all-temporary.toml" --json > "$out/expected-oom-custom.json"
# The Compare view's default pair (the first rank and the outlier), every group listed.
target/debug/pt-snap diff "$out/job/rank0.pickle" "$out/job/rank2.pickle" -n 0 --json > "$out/expected-diff.json"
# The job's four good ranks exported as Parquet: the Ranks view reads their summary table
# as DataFusion (`pt-snap sql`) and `ranks` give it. Then the same parts as 2,048 ranks
# (rank R holds rank R mod 4's part): a job too large for its snapshots to be opened.
target/debug/pt-snap export "$out"/job/rank[0-3].pickle -o "$out/export" --job demo --json >/dev/null
target/debug/pt-snap sql "$out/export" --query peak_by_rank --json > "$out/expected-sql-peaks.json"
if [ ! -d "$out/export-big" ]; then
  for r in $(seq 0 2047); do
    mkdir -p "$out/export-big/summary/job=big/rank=$r"
    cp "$out/export/summary/job=demo/rank=$((r % 4))/part-0.parquet" "$out/export-big/summary/job=big/rank=$r/"
  done
fi
# The 1M-event benchmark snapshot (~109 MB): no main-thread task over 100 ms from its drop
# to every view.
[ -f "$out/bench-1m.pickle" ] || cargo run -q --release -p pt-snap-gen -- --seed 7 --events 1000000 --out "$out/bench-1m.pickle" >/dev/null

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
scripts/serve-dist "$port" dist >"$out/http.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.1; done

# The read-ahead helper's hashing and shared slots, in node (no browser needed).
node tests/web/read-worker.test.mjs
node tests/web/app.test.mjs "http://127.0.0.1:$port/" "$root"
# `pt-snap view`: its URL, a wrong token, a directory, loopback only, Ctrl+C.
node tests/web/view.test.mjs "$root"
# The Segments view: report segments at CS336's active peak and at the first OOM, and
# overview's capture warnings.
cs336_peak=$(target/debug/pt-snap query "$out/cs336.pickle.db" --template-use memory_peak --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["rows"][0]["peak_active_event_id"])')
target/debug/pt-snap report segments "$out/cs336.pickle.db" --event-id "$cs336_peak" --json > "$out/expected-segments-cs336.json"
oom_at=$(python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["events"][0]; print(e["event_id"], e["device"])' "$out/expected-oom.json")
target/debug/pt-snap report segments "$out/oom.pkl" --event-id "${oom_at% *}" -d "${oom_at#* }" --json > "$out/expected-segments-oom.json"
target/debug/pt-snap overview "$out/cs336.pickle.db" --json > "$out/expected-overview-cs336.json"
target/debug/pt-snap overview "$out/oom.pkl.db" --json > "$out/expected-overview-oom.json"
node tests/web/segments.test.mjs "http://127.0.0.1:$port/" "$root"
