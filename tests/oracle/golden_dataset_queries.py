#!/usr/bin/env python3
"""Record the oracle dataset goldens in tests/golden/dataset_query/ (driver of regen_dataset_queries.sh).

Usage: golden_dataset_queries.py --oracle PATH --root REPO --out DIR --tmp DIR

Stdlib only. Rebuilt from scratch in --out:

  <set>/dataset/        the dataset directory the oracle made (native: `import X
                        --events-per-slice 3000`; msinsight: `--format msinsight
                        --events-per-slice 3000`; interop: the upstream 3-shard
                        msinsight export), byte-exact (its fingerprint is part of
                        the recorded outputs). The msinsight manifest's absolute
                        `sourceFile` is rewritten to /fixtures/<name> before any
                        case runs (the reference only checks its file name).
  <set>/set.json        {"fixture", "import_args"}
  <set>/cases/<c>.json  one oracle run, same format as tests/golden/query/
                        ({"args", "env", "exit", "stdout_json", "stdout_text",
                        "stderr_json", "stderr_text"}); <DB> = the dataset dir.

Each run: fresh temp HOME and CWD, PT_SNAP_* removed (a case's "env" adds its own),
COLUMNS=200 NO_COLOR=1 TERM=dumb LC_ALL=C.UTF-8.
"""

import hashlib
import sqlite3
import json
import os
import shutil
import subprocess
import sys
import tempfile

import oracle_run

MULTI = "upstream-pkg/snapshots/snapshot_with_multi_devices.pkl"
SETS = [
    dict(name="native", fixture=MULTI, import_args=["--events-per-slice", "3000"]),
    dict(name="msinsight", fixture=MULTI,
         import_args=["--format", "msinsight", "--events-per-slice", "3000", "--device", "0"]),
    dict(name="interop", fixture=None, import_args=None),
]
INTEROP = "/work/shared/fixtures/upstream-pkg/interop/three_shard_free_requested.pkl.msinsight"


def q(template, params=None, *extra):
    args = ["query", "<DB>", "--template-use", template]
    if params is not None:
        args += ["--params", json.dumps(params)]
    return args + list(extra) + ["--json"]


def multi_cases(devices):
    """(name, args, env) for the multi-device datasets (device 0 peak 7467, slices of 3000)."""
    c = []
    add = lambda name, args, env=None: c.append((name, args, env or {}))
    add("overview", ["overview", "<DB>", "--json"])
    add("overview__text", ["overview", "<DB>"])
    add("overview__manifest", ["overview", "<DB>/manifest.json", "--json"])
    add("metadata", ["metadata", "<DB>", "--json"])
    add("metadata__text", ["metadata", "<DB>"])
    add("focus__set", ["focus", "<DB>", "--json"])
    add("focus__set_device1", ["focus", "<DB>", "--device", devices[-1], "--json"])
    for dev in devices:
        d = ["--device", dev]
        add(f"memory_peak__d{dev}", q("memory_peak", None, *d))
        add(f"allocator_gap__d{dev}", q("allocator_gap", None, *d))
        add(f"freed_block_lifetime__d{dev}", q("freed_block_lifetime", None, *d))
        add(f"leak_detection__d{dev}__n20", q("leak_detection", None, *d, "-n", "20"))
        add(f"leak_detection__d{dev}__n20_exact",
            q("leak_detection", None, *d, "-n", "20", "--exact-total"))
        add(f"callstack_analysis__d{dev}__n15", q("callstack_analysis", None, *d, "-n", "15"))
        add(f"block__d{dev}__n10", q("block", None, *d, "-n", "10"))
        add(f"event__d{dev}__n10", q("event", None, *d, "-n", "10"))
        add(f"allocation__d{dev}__n10", q("allocation", None, *d, "-n", "10"))
    add("memory_peak__range", q("memory_peak", {"start_id": 100, "end_id": 3100}))
    add("memory_peak__slice1", q("memory_peak", None, "--slice", "1"))
    add("allocator_gap__range", q("allocator_gap", {"start_id": 2500, "end_id": 6500}))
    add("allocator_gap__range_out_of_scope", q("allocator_gap", {"start_id": -5, "end_id": 10}))
    add("allocator_gap__range_reversed", q("allocator_gap", {"start_id": 10, "end_id": 5}))
    add("memory_peak__n5", q("memory_peak", None, "-n", "5"))
    for ev in (7467, 2999, 3000, 100):
        add(f"active_memory_callstack_at_event__e{ev}",
            q("active_memory_callstack_at_event", {"event_id": ev}))
        add(f"active_blocks_at_event__e{ev}__n10",
            q("active_blocks_at_event", {"event_id": ev}, "-n", "10"))
        add(f"preexisting_live__e{ev}", q("preexisting_live", {"event_id": ev}))
    add("active_memory_callstack_at_event__top3_exact",
        q("active_memory_callstack_at_event", {"event_id": 7467, "top_n": 3}, "--exact-total"))
    add("active_memory_callstack_at_event__top3_n2",
        q("active_memory_callstack_at_event", {"event_id": 7467, "top_n": 3}, "-n", "2"))
    add("active_memory_callstack_at_event__no_static",
        q("active_memory_callstack_at_event", {"event_id": 7467, "include_static": False}))
    add("active_memory_callstack_at_event__sb60",
        q("active_memory_callstack_at_event", {"event_id": 7467, "stack_bytes": 60}))
    add("active_memory_callstack_at_event__d_last",
        q("active_memory_callstack_at_event", {"event_id": 5000}, "--device", devices[-1]))
    add("active_memory_callstack_at_event__slice_mismatch",
        q("active_memory_callstack_at_event", {"event_id": 7467}, "--slice", "0"))
    add("active_memory_callstack_at_event__not_an_event",
        q("active_memory_callstack_at_event", {"event_id": 99999}))
    add("active_memory_callstack_at_event__negative_event",
        q("active_memory_callstack_at_event", {"event_id": -1}))
    add("active_blocks_at_event__order_alloc_asc_off5",
        q("active_blocks_at_event", {"event_id": 7467, "order_by": "allocEventId",
                                     "order_dir": "ASC", "offset": 5, "limit": 7}))
    add("active_blocks_at_event__exact_n10",
        q("active_blocks_at_event", {"event_id": 7467}, "-n", "10", "--exact-total"))
    add("active_blocks_at_event__min_size_no_static",
        q("active_blocks_at_event", {"event_id": 3000, "min_size": 1000000,
                                     "include_static": False}))
    add("event__desc_n10", q("event", {"order_dir": "DESC"}, "-n", "10"))
    add("event__offset_across_shards",
        q("event", {"offset": 2995, "limit": 10}))
    add("event__offset_across_shards_exact",
        q("event", {"offset": 2995, "limit": 10}, "--exact-total"))
    add("event__by_allocated_desc_n10", q("event", {"order_by": "allocated", "order_dir": "DESC"},
                                          "-n", "10"))
    add("event__by_callstack_n5", q("event", {"order_by": "callstack"}, "-n", "5"))
    add("event__by_size_asc_n10", q("event", {"order_by": "size", "order_dir": "ASC"}, "-n", "10"))
    add("event__action4_range", q("event", {"action": 4, "min_id": 2990, "max_id": 3010}))
    add("event__id", q("event", {"id": 6000}))
    add("event__sb40_n3", q("event", {"stack_bytes": 40}, "-n", "3"))
    add("event__slice2_n5", q("event", None, "--slice", "2", "-n", "5"))
    add("event__slice2_desc_n5", q("event", {"order_dir": "DESC"}, "--slice", "2", "-n", "5"))
    add("event__slice9", q("event", None, "--slice", "9", "-n", "5"))
    add("event__min_id_out_of_scope", q("event", {"min_id": 9000}, "-n", "5"))
    add("allocation__by_active_desc_n10",
        q("allocation", {"order_by": "active", "order_dir": "DESC"}, "-n", "10"))
    add("allocation__range_exact", q("allocation", {"min_id": 2998, "max_id": 3003},
                                     "--exact-total"))
    add("allocation__offset_n5", q("allocation", {"offset": 5999}, "-n", "5"))
    add("block__by_alloc_asc_n10", q("block", {"order_by": "allocEventId", "order_dir": "ASC"},
                                     "-n", "10"))
    add("block__by_free_desc_n10", q("block", {"order_by": "freeEventId", "order_dir": "DESC"},
                                     "-n", "10"))
    add("block__by_id_asc_n10", q("block", {"order_by": "id", "order_dir": "ASC"}, "-n", "10"))
    add("block__min_size_exact_n5", q("block", {"min_size": 10000000}, "-n", "5", "--exact-total"))
    add("block__alloc_minus1_n5", q("block", {"allocEventId": -1}, "-n", "5", "--exact-total"))
    add("block__id", q("block", {"id": 3000}))
    add("leak_detection__min_size", q("leak_detection", {"min_size": 5000000}))
    add("leak_detection__no_scratch_n5",
        q("leak_detection", None, "-n", "5", "--max-scratch-db-bytes", "0"))
    add("block__no_scratch_n5",
        q("block", None, "-n", "5", "--max-scratch-db-bytes", "0"))
    add("freed_block_lifetime__no_scratch",
        q("freed_block_lifetime", None, "--max-scratch-db-bytes", "0"))
    add("leak_detection__slice", q("leak_detection", None, "--slice", "2"))
    add("callstack_analysis__min_count50", q("callstack_analysis", {"min_count": 50}))
    add("callstack_analysis__min_size_n5_exact",
        q("callstack_analysis", {"min_size": 100000000}, "-n", "5", "--exact-total"))
    add("callstack_analysis__slice0_n5", q("callstack_analysis", None, "--slice", "0", "-n", "5"))
    add("event_frames__refused", q("event_frames", {"event_id": 7467}))
    add("frame_tree__refused", q("active_memory_frame_tree_at_event", {"event_id": 7467}))
    add("device2", q("memory_peak", None, "--device", "2"))
    # Work budgets: flags, environment, all-or-error.
    add("budget__rows5_event_n10", q("event", None, "-n", "10", "--max-work-rows", "5"))
    add("budget__rows5_memory_peak", q("memory_peak", None, "--max-work-rows", "5"))
    add("budget__rows_env_block_n10", q("block", None, "-n", "10"), {"PT_SNAP_MAX_WORK_ROWS": "50"})
    add("budget__bytes_amc", q("active_memory_callstack_at_event", {"event_id": 7467},
                               "--max-work-bytes", "2000"))
    add("budget__bytes_env_leak", q("leak_detection", None, "-n", "5"),
        {"PT_SNAP_MAX_WORK_BYTES": "3000"})
    add("budget__event_unbounded_rows1000", q("event", None, "--max-work-rows", "1000"))
    add("budget__flag_beats_env", q("memory_peak", None, "--max-work-rows", "100"),
        {"PT_SNAP_MAX_WORK_ROWS": "abc"})
    add("budget__rows0", q("memory_peak", None, "--max-work-rows", "0"))
    add("budget__env_invalid", q("memory_peak"), {"PT_SNAP_MAX_WORK_BYTES": "12kb"})
    add("budget__scratch_too_small", q("memory_peak", None, "--max-scratch-db-bytes", "100"))
    add("budget__scratch_tiny_leak", q("leak_detection", None, "-n", "5",
                                       "--max-scratch-db-bytes", "4096"))
    add("budget__echoed", q("memory_peak", None, "--max-work-rows", "77", "--max-work-bytes",
                            "123456", "--max-scratch-db-bytes", "8192"))
    return c


def interop_cases():
    c = []
    add = lambda name, args, env=None: c.append((name, args, env or {}))
    add("overview", ["overview", "<DB>", "--json"])
    add("metadata", ["metadata", "<DB>", "--json"])
    for t in ("memory_peak", "allocator_gap", "freed_block_lifetime", "leak_detection",
              "callstack_analysis", "block", "event", "allocation"):
        add(t, q(t, {"min_count": 1} if t == "callstack_analysis" else None))
    for ev in (0, 1, 2):
        add(f"active_memory_callstack_at_event__e{ev}",
            q("active_memory_callstack_at_event", {"event_id": ev}))
        add(f"active_blocks_at_event__e{ev}", q("active_blocks_at_event", {"event_id": ev}))
        add(f"preexisting_live__e{ev}", q("preexisting_live", {"event_id": ev}))
    add("event__slice1", q("event", None, "--slice", "1"))
    add("event__sb5", q("event", {"stack_bytes": 5}))
    return c


def dump(path):
    """Every table's rows, sorted (VACUUM may renumber the rowids of tables without an
    INTEGER PRIMARY KEY, e.g. `dictionary`; no reader depends on those)."""
    with sqlite3.connect(path) as c:
        tables = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                          "ORDER BY name")]
        return {t: sorted(c.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr)
                for t in tables}


def compact(ds, manifest):
    """VACUUM every shard (the oracle's incrementally built indexes leave pages ~40 % empty)
    and update the manifest's member hashes; rows and rowids are checked unchanged."""
    for device in manifest["devices"].values():
        for item in device["slices"]:
            path = os.path.join(ds, item["file"])
            before = dump(path)
            c = sqlite3.connect(path)
            c.execute("VACUUM")
            c.close()
            assert dump(path) == before, path
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            if "sha256" in item:
                item["sha256"] = digest
            if "ptSnap" in manifest:
                manifest["ptSnap"]["members"][item["file"]] = digest


class Runner:
    def __init__(self, oracle, tmp):
        self.oracle, self.tmp, self.n = oracle, tmp, 0

    def run(self, args, env_extra, db):
        self.n += 1
        return oracle_run.run_case(self.oracle, os.path.join(self.tmp, f"run{self.n}"), args,
                                   db, env_extra)


def main():
    ap = oracle_run.driver_arguments(out=True)
    ap.add_argument("--sets", help="comma-separated set names to rebuild (default: all)")
    a = ap.parse_args()
    runner = Runner(a.oracle, a.tmp)
    only = set(a.sets.split(",")) if a.sets else None
    if only is None and os.path.exists(a.out):
        shutil.rmtree(a.out)
    for s in SETS:
        if only is not None and s["name"] not in only:
            continue
        set_dir = os.path.join(a.out, s["name"])
        if os.path.exists(set_dir):
            shutil.rmtree(set_dir)
        ds = os.path.join(set_dir, "dataset")
        os.makedirs(set_dir)
        if s["fixture"] is None:
            shutil.copytree(INTEROP, ds)
            cases = interop_cases()
        else:
            work = tempfile.mkdtemp(dir=a.tmp)
            src = os.path.join(work, os.path.basename(s["fixture"]))
            shutil.copy(os.path.join(a.root, "fixtures", s["fixture"]), src)
            out = os.path.join(work, "out")
            os.makedirs(out)
            p = subprocess.run([a.oracle, "import", src, "--json", "--no-focus", "-o", out]
                               + s["import_args"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, check=True)
            made = json.loads(p.stdout)["dataset_path"]
            shutil.copytree(made, ds)
            manifest = os.path.join(ds, "manifest.json")
            with open(manifest, encoding="utf-8") as f:
                m = json.load(f)
            compact(ds, m)
            if "cacheHash" in m:
                m["sourceFile"] = "/fixtures/" + os.path.basename(s["fixture"])
            with open(manifest, "w", encoding="utf-8") as f:
                json.dump(m, f, indent=2)
            cases = multi_cases(sorted(m["devices"], key=int))
        with open(os.path.join(set_dir, "set.json"), "w") as f:
            json.dump({"fixture": s["fixture"] and "fixtures/" + s["fixture"],
                       "import_args": s["import_args"]}, f, indent=1)
        os.makedirs(os.path.join(set_dir, "cases"))
        db = os.path.abspath(ds)
        for name, args, env in cases:
            result = runner.run(args, env, db)
            oracle_run.write_case(os.path.join(set_dir, "cases", name + ".json"), result)
            print(s["name"], name, result["exit"], file=sys.stderr)


if __name__ == "__main__":
    main()
