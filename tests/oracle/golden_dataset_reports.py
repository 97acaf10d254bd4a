#!/usr/bin/env python3
"""Record the oracle report goldens on sharded datasets in tests/golden/dataset_report/
(driver of regen_dataset_reports.sh).

Usage: golden_dataset_reports.py --oracle PATH --root REPO --tmp DIR [--jobs N]

Stdlib only. Rebuilt from scratch in tests/golden/dataset_report/:

  <set>/set.json        {"fixture", "import_args", "dataset", "fingerprint"}:
                        the fixture and `import` arguments that make the set's
                        dataset; "dataset" is the committed byte-exact dataset
                        the cases were recorded on, relative to the set directory
                        (the dataset query goldens' native and msinsight datasets
                        of the multi-device fixture: run regen_dataset_queries.sh
                        first when those change), or null when the oracle's
                        dataset is not committed (the expandable fixture: the
                        test replays those cases on the dataset our import makes,
                        as it does for every set); "fingerprint" is the recorded
                        dataset's, which the test swaps for ours.
  <set>/cases/<c>.json  one oracle run, the query goldens' format ({"args", "env",
                        "exit", "stdout_json", "stdout_text", "stderr_json",
                        "stderr_text"}); <DB> = the dataset directory.

Each run: fresh temp HOME and CWD, PT_SNAP_* removed (a case's "env" adds its own),
COLUMNS=200 NO_COLOR=1 TERM=dumb LC_ALL=C.UTF-8. Event ids come from the dataset's
overview (each device's real range), so the cases are deterministic.
"""

import concurrent.futures
import json
import os
import shutil
import subprocess

import oracle_run

MULTI = "upstream-pkg/snapshots/snapshot_with_multi_devices.pkl"
EXPANDABLE = "upstream-pkg/snapshots/snapshot_expandable.pkl"
SETS = [
    dict(name="multi_native", fixture=MULTI, import_args=["--events-per-slice", "3000"],
         committed="../../dataset_query/native/dataset"),
    dict(name="multi_msinsight", fixture=MULTI,
         import_args=["--format", "msinsight", "--events-per-slice", "3000", "--device", "0"],
         committed="../../dataset_query/msinsight/dataset"),
    dict(name="expandable_native", fixture=EXPANDABLE,
         import_args=["--events-per-slice", "2000"], committed=None),
    # The default slice size: one shard.
    dict(name="expandable_msinsight", fixture=EXPANDABLE, import_args=["--format", "msinsight"],
         committed=None),
]


def peak(*args, text=False):
    return ["report", "peak-memory", "<DB>", *args] + ([] if text else ["--json"])


def tree(*args, text=False):
    return ["report", "memory-tree", "<DB>", *args] + ([] if text else ["--json"])


def cases_for(devices, gap_rows):
    """(name, args, env) of one set; devices = [(device_id, first, last)] of the dataset."""
    c = []
    add = lambda name, args, env=None: c.append((name, args, env or {}))
    for dev, _, _ in devices:
        d = ["--device", str(dev)]
        for m in ("active", "allocated", "reserved"):
            add(f"peak__d{dev}__metric_{m}", peak(*d, "--metric", m))
        add(f"peak__d{dev}__exclude_static", peak(*d, "--exclude-static"))
        add(f"peak__d{dev}__limit3_stack64", peak(*d, "--limit", "3", "--stack-bytes", "64"))
        add(f"peak__d{dev}__text", peak(*d, text=True))
    dev, first, last = devices[0]
    d = ["--device", str(dev)]
    mid = (first + last) // 2
    add("peak__default_device", peak())
    add("peak__manifest_path", ["report", "peak-memory", "<DB>/manifest.json", "--json"])
    add("peak__stack0_limit2", peak(*d, "--stack-bytes", "0", "--limit", "2"))
    add("peak__limit0", peak(*d, "--limit", "0"))
    add("peak__limit_unbounded", peak(*d, "--limit", "-1"))
    add("peak__include_then_exclude", peak(*d, "--include-static", "--exclude-static"))
    add("peak__range_first_half", peak(*d, "--start-id", str(first), "--end-id", str(mid)))
    add("peak__range_second_half_allocated",
        peak(*d, "--metric", "allocated", "--start-id", str(mid + 1)))
    add("peak__range_end_only_reserved", peak(*d, "--metric", "reserved", "--end-id", str(mid)))
    add("peak__range_narrow", peak(*d, "--start-id", str(first + 100), "--end-id", str(first + 1100)))
    add("peak__range_one_event", peak(*d, "--start-id", str(mid), "--end-id", str(mid)))
    add("peak__text_reserved_limit3_stack64",
        peak(*d, "--metric", "reserved", "--limit", "3", "--stack-bytes", "64", text=True))
    add("peak__text_exclude_static_allocated",
        peak(*d, "--metric", "allocated", "--exclude-static", text=True))
    add("peak__text_limit1", peak(*d, "--limit", "1", text=True))
    add("peak__text_range_first_half",
        peak(*d, "--start-id", str(first), "--end-id", str(mid), text=True))
    # Work limits: explicit, from the environment, both queries in one budget.
    add("peak__budget_large", peak(*d, "--max-work-rows", "1000000", "--max-work-bytes",
                                   "1000000000", "--max-scratch-db-bytes", "0"))
    add("err__peak_budget_rows5", peak(*d, "--max-work-rows", "5"))
    add("err__peak_budget_rows5_text", peak(*d, "--max-work-rows", "5", text=True))
    add("err__peak_budget_rows_gap", peak(*d, "--max-work-rows", str(gap_rows)))
    add("err__peak_budget_bytes", peak(*d, "--max-work-bytes", "3000"))
    add("err__peak_budget_env", peak(*d), {"PT_SNAP_MAX_WORK_ROWS": "5"})
    add("err__peak_budget_env_invalid", peak(*d), {"PT_SNAP_MAX_WORK_BYTES": "lots"})
    add("err__peak_bad_rows", peak(*d, "--max-work-rows", "0"))
    add("err__peak_bad_scratch", peak(*d, "--max-scratch-db-bytes", "5"))
    add("err__peak_range_out_of_scope", peak(*d, "--start-id", str(last + 1000)))
    add("err__peak_range_out_of_scope_text", peak(*d, "--start-id", str(last + 1000), text=True))
    add("err__peak_range_reversed", peak(*d, "--start-id", str(first + 10), "--end-id", str(first + 5)))
    add("err__peak_bad_device", peak("--device", "9"))
    add("err__peak_bad_device_text", peak("--device", "9", text=True))
    add("err__peak_timeout", peak(*d, "--timeout", "0.000001"))
    ev = str(devices[0][2])
    add("err__tree", tree(*d, "--event-id", ev))
    add("err__tree_text", tree(*d, "--event-id", ev, text=True))
    add("err__tree_html", tree(*d, "--event-id", ev, "--format", "html", text=True))
    add("err__tree_exclude_static_min_size",
        tree(*d, "--event-id", ev, "--exclude-static", "--min-size", "1048576"))
    add("err__tree_manifest_path",
        ["report", "memory-tree", "<DB>/manifest.json", "--event-id", ev, "--json"])
    add("err__tree_bad_device", tree("--device", "9", "--event-id", ev))
    add("err__tree_bad_device_text", tree("--device", "9", "--event-id", ev, text=True))
    add("err__tree_html_json", tree(*d, "--event-id", ev, "--format", "html"))
    add("err__tree_budget_rows5", tree(*d, "--event-id", ev, "--max-work-rows", "5"))
    add("err__tree_bad_rows", tree(*d, "--event-id", ev, "--max-work-rows", "0"))
    return c


def run(oracle, tmp, run_id, args, db, env_extra):
    return oracle_run.run_case(oracle, os.path.join(tmp, run_id), args, db, env_extra)


def oracle_json(oracle, tmp, args):
    """An oracle run outside the recorded cases (import, overview, probes)."""
    root = os.path.join(tmp, "probe")
    os.makedirs(os.path.join(root, "home"), exist_ok=True)
    p = subprocess.run([oracle, *args], env=oracle_run.environment(root, {}), capture_output=True)
    return p.returncode, p.stdout, p.stderr


def gap_rows(oracle, tmp, db, device):
    """The smallest --max-work-rows with which `allocator_gap` alone succeeds: the report then
    fails in its second query, showing that both are charged to one budget."""
    lo, hi = 1, 1 << 20
    while lo < hi:
        mid = (lo + hi) // 2
        code, _, _ = oracle_json(oracle, tmp, ["query", db, "--template-use", "allocator_gap",
                                               "--device", str(device), "--max-work-rows",
                                               str(mid), "--json"])
        if code == 0:
            hi = mid
        else:
            lo = mid + 1
    return lo


def main():
    a = oracle_run.driver_arguments(jobs=True).parse_args()
    out = os.path.join(a.root, "tests/golden/dataset_report")
    shutil.rmtree(out, ignore_errors=True)
    for s in SETS:
        set_dir = os.path.join(out, s["name"])
        os.makedirs(os.path.join(set_dir, "cases"))
        if s["committed"]:
            db = os.path.realpath(os.path.join(set_dir, s["committed"]))
            assert os.path.isfile(os.path.join(db, "manifest.json")), db
        else:
            work = os.path.join(a.tmp, "import-" + s["name"])
            os.makedirs(work)
            src = os.path.join(work, os.path.basename(s["fixture"]))
            shutil.copy(os.path.join(a.root, "fixtures", s["fixture"]), src)
            code, stdout, stderr = oracle_json(a.oracle, a.tmp, ["import", src, "--json",
                                                                  "--no-focus", "-o", work]
                                               + s["import_args"])
            assert code == 0, stderr
            db = os.path.realpath(json.loads(stdout)["dataset_path"])
        code, stdout, stderr = oracle_json(a.oracle, a.tmp, ["overview", db, "--json"])
        assert code == 0, stderr
        info = json.loads(stdout)["dataset"]
        devices = [(d["device_id"], d["slices"][0]["first_event_id"],
                    d["slices"][-1]["last_event_id"]) for d in info["devices"]]
        cases = cases_for(devices, gap_rows(a.oracle, a.tmp, db, devices[0][0]))
        with open(os.path.join(set_dir, "set.json"), "w") as f:
            json.dump({"fixture": "fixtures/" + s["fixture"], "import_args": s["import_args"],
                       "dataset": s["committed"], "fingerprint": info["fingerprint"]}, f,
                      indent=1)
            f.write("\n")
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            results = ex.map(lambda c: (c[0], run(a.oracle, a.tmp, f"{s['name']}-{c[0]}", c[1],
                                                  db, c[2])), cases)
            for name, rec in results:
                oracle_run.write_case(os.path.join(set_dir, "cases", name + ".json"), rec)
        print(f"{s['name']}: {len(cases)} cases")


if __name__ == "__main__":
    main()
