#!/usr/bin/env python3
"""Record the oracle report goldens in tests/golden/report/ (driver of regen_reports.sh).

Usage: golden_report.py --oracle PATH --root REPO --tmp DIR [--jobs N]

Stdlib only. Reuses the query goldens' databases: for every set below,
tests/golden/query/<set>/reference.db (made by the oracle, see golden_query.py)
is what the cases run against. Writes, rebuilt from scratch:

  report/<set>/set.json         copied from query/<set>/set.json, plus "db":
                                "../../query/<set>/reference.db"
  report/<set>/cases/<c>.json   one oracle run: {"args", "env", "exit",
                                "stdout_json", "stdout_text", "stderr_json",
                                "stderr_text"} (the query goldens' format)

Placeholders in args and outputs: <DB> (the set's database), <TMP> (the run's
temp root). Each run: fresh temp HOME and CWD, PT_SNAP_* removed, COLUMNS=200,
NO_COLOR=1, TERM=dumb, LC_ALL=C.UTF-8. Event ids come from the database
(the peaks of each counter, the last event), so the cases are deterministic.
`--format html` pages are not recorded: ours is a different (better) page; the
browser test checks it.
"""

import concurrent.futures
import json
import os
import shutil
import sqlite3

import oracle_run

SETS = ["empty_cache", "expandable", "multi_dev1", "synth_1dev", "legacy_free", "single"]


def peaks(db, device):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    t = f"trace_entry_{device}"
    out = {}
    for m in ("allocated", "active", "reserved"):
        (v,) = con.execute(f"SELECT MAX({m}) FROM {t} WHERE id >= 0").fetchone()
        (e,) = con.execute(f"SELECT MIN(id) FROM {t} WHERE id >= 0 AND {m} = ?", (v,)).fetchone()
        out[m] = e
    (out["first"], out["last"]) = con.execute(f"SELECT MIN(id), MAX(id) FROM {t} WHERE id >= 0").fetchone()
    con.close()
    return out


def cases_for(device, p):
    dev = ["--device", str(device)]
    mid = (p["first"] + p["last"]) // 2
    c = {}

    def peak(name, *args, text=False):
        c["peak__" + name] = ["report", "peak-memory", "<DB>", *dev, *args] + ([] if text else ["--json"])

    def tree(name, *args, text=False):
        c["tree__" + name] = ["report", "memory-tree", "<DB>", *dev, *args] + ([] if text else ["--json"])

    for m in ("active", "allocated", "reserved"):
        peak(f"metric_{m}", "--metric", m)
    peak("exclude_static", "--exclude-static")
    peak("limit3_stack64", "--limit", "3", "--stack-bytes", "64")
    peak("reserved_limit3_stack80", "--metric", "reserved", "-n", "3", "--stack-bytes", "80")
    peak("limit0", "--limit", "0")
    peak("limit_unbounded", "--limit", "-1")
    peak("stack0", "--stack-bytes", "0", "--limit", "2")
    peak("range_first_half", "--start-id", str(p["first"]), "--end-id", str(mid))
    peak("range_second_half_allocated", "--metric", "allocated", "--start-id", str(mid + 1))
    peak("range_empty", "--start-id", str(p["last"] + 1000))
    peak("include_then_exclude", "--include-static", "--exclude-static")
    peak("text_default", text=True)
    peak("text_reserved_limit3_stack64", "--metric", "reserved", "--limit", "3", "--stack-bytes", "64", text=True)
    peak("text_exclude_static_allocated", "--metric", "allocated", "--exclude-static", text=True)
    peak("text_range_empty", "--start-id", str(p["last"] + 1000), text=True)
    peak("text_limit1", "--limit", "1", text=True)
    for m in ("active", "reserved"):
        tree(f"at_{m}_peak", "--event-id", str(p[m]))
        tree(f"text_at_{m}_peak", "--event-id", str(p[m]), text=True)
    tree("exclude_static", "--event-id", str(p["active"]), "--exclude-static")
    tree("text_exclude_static", "--event-id", str(p["active"]), "--exclude-static", text=True)
    tree("min_size_1mib", "--event-id", str(p["active"]), "--min-size", "1048576")
    tree("text_min_size_1mib", "--event-id", str(p["active"]), "--min-size", "1048576", text=True)
    tree("before_first", "--event-id", "-1")
    tree("text_before_first", "--event-id", "-1", text=True)
    tree("last", "--event-id", str(p["last"]))
    tree("text_last", "--event-id", str(p["last"]), text=True)
    return c


def error_cases(device, p):
    dev = ["--device", str(device)]
    return {
        "err__peak_bad_metric": ["report", "peak-memory", "<DB>", "--metric", "bogus", "--json"],
        "err__peak_bad_metric_text": ["report", "peak-memory", "<DB>", "--metric", "bogus"],
        "err__peak_bad_device": ["report", "peak-memory", "<DB>", "--device", "9", "--json"],
        "err__peak_missing_db": ["report", "peak-memory", "/nonexistent/x.db", "--json"],
        "err__peak_timeout_env": ["report", "peak-memory", "<DB>", *dev, "--json"],
        "err__tree_html_json": ["report", "memory-tree", "<DB>", *dev, "--event-id", str(p["active"]), "--format", "html", "--json"],
        "err__tree_missing_event_id": ["report", "memory-tree", "<DB>", "--json"],
        "err__tree_bad_device": ["report", "memory-tree", "<DB>", "--device", "9", "--event-id", "1", "--json"],
        "err__tree_bad_device_text": ["report", "memory-tree", "<DB>", "--device", "9", "--event-id", "1"],
        "err__report_without_subcommand": ["report"],
    }


ENV_FOR = {"err__peak_timeout_env": {"PT_SNAP_QUERY_TIMEOUT": "abc"}}


def run(oracle, tmp, run_id, args, db, env_extra):
    return oracle_run.run_case(oracle, os.path.join(tmp, run_id), args, db, env_extra)


def main():
    a = oracle_run.driver_arguments(jobs=True).parse_args()
    out = os.path.join(a.root, "tests/golden/report")
    shutil.rmtree(out, ignore_errors=True)
    for name in SETS:
        qdir = os.path.join(a.root, "tests/golden/query", name)
        meta = json.load(open(os.path.join(qdir, "set.json")))
        device = meta["device"] or 0
        db = os.path.join(qdir, "reference.db")
        p = peaks(db, device)
        cases = cases_for(device, p)
        if name == "empty_cache":
            cases.update(error_cases(device, p))
        sdir = os.path.join(out, name)
        os.makedirs(os.path.join(sdir, "cases"))
        meta["db"] = f"../../query/{name}/reference.db"
        with open(os.path.join(sdir, "set.json"), "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            results = ex.map(lambda kv: (kv[0], run(a.oracle, a.tmp, f"{name}-{kv[0]}", kv[1], db,
                                                      ENV_FOR.get(kv[0], {}))), cases.items())
            for case, rec in results:
                oracle_run.write_case(os.path.join(sdir, "cases", case + ".json"), rec)
        print(f"{name}: {len(cases)} cases")


if __name__ == "__main__":
    main()
