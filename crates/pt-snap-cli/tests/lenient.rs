//! `import --lenient`: traces the strict replay refuses, imported with every inconsistency
//! listed and every output saying the numbers are approximate.

mod common;

use common::{fixture_json, ok_json, pt_snap, write_pickle};
use pt_snap_testkit::column;
use serde_json::{json, Value};

/// A trace with the traits of memviz-neo's test generator (`scripts/gen_test_data.py`): no
/// segments, no segment events, and blocks placed at addresses that overlap live ones.
/// Returns the snapshot and the running `(allocated, active)` totals the trace alone gives.
fn generated_rank(seed: u64, events: usize) -> (Value, Vec<(i64, i64)>) {
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let frames = |name: &str| json!([{"filename": "train.py", "line": 7, "name": name}]);
    let mut live: Vec<(i64, i64)> = Vec::new();
    let mut trace = Vec::new();
    let mut totals = Vec::new();
    let (mut allocated, mut active) = (0, 0);
    while trace.len() < events {
        if live.len() < 4 || next() % 3 != 0 {
            // A 256-byte grid with sizes up to 1 KiB: neighbours overlap.
            let addr = 0x7f00_0000_0000 + 256 * (next() % 64) as i64;
            let size = 256 * (1 + (next() % 4) as i64);
            trace.push(
                json!({"action": "alloc", "addr": addr, "size": size, "stream": 0,
                              "frames": frames("forward")}),
            );
            allocated += size;
            active += size;
            totals.push((allocated, active));
            live.push((addr, size));
        } else {
            let (addr, size) = live.remove((next() % live.len() as u64) as usize);
            for action in ["free_requested", "free_completed"] {
                trace.push(
                    json!({"action": action, "addr": addr, "size": size, "stream": 0,
                                  "frames": frames("backward")}),
                );
                if action == "free_requested" {
                    allocated -= size;
                } else {
                    active -= size;
                }
                totals.push((allocated, active));
            }
        }
    }
    (json!({"segments": [], "device_traces": [trace]}), totals)
}

/// A fresh directory holding `generated_rank(seed, events)` as `name`, and the rank's running
/// totals.
fn project_with_rank(name: &str, seed: u64, events: usize) -> (tempfile::TempDir, Vec<(i64, i64)>) {
    let dir = tempfile::tempdir().unwrap();
    let (snapshot, totals) = generated_rank(seed, events);
    std::fs::write(dir.path().join(name), snapshot.to_string()).unwrap();
    (dir, totals)
}

#[test]
fn a_trace_the_strict_replay_refuses_imports_leniently_and_says_so() {
    let (dir, totals) = project_with_rank("rank0.json", 7, 400);

    // Strict: refused, naming the event and offering --lenient.
    let out = pt_snap(
        dir.path(),
        &["import", "rank0.json", "--no-focus", "--json"],
    );
    assert_eq!(out.status.code(), Some(1));
    let env: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(env["error"]["code"], "IMPORT_FAILED");
    let message = env["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("replay of device 0 failed at event"),
        "{message}"
    );
    assert!(
        env["error"]["hint"].as_str().unwrap().contains("--lenient"),
        "{env}"
    );
    assert!(!dir.path().join("rank0.json.db").exists());

    // Lenient: imported, with the issues counted and listed.
    let imported = ok_json(
        dir.path(),
        &["import", "rank0.json", "--lenient", "--no-focus", "--json"],
    );
    let issues = imported["replay"]["issues"].as_i64().unwrap();
    assert!(issues > 0, "{imported}");
    assert_eq!(imported["replay"]["mode"], "lenient");
    let db = dir.path().join("rank0.json.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let listed: i64 = conn
        .query_row("SELECT count(*) FROM pt_snap_x_replay_issues", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(listed, issues);
    let kinds: Vec<String> = column(
        &conn,
        "SELECT DISTINCT kind FROM pt_snap_x_replay_issues ORDER BY kind",
    );
    assert!(kinds.contains(&"no_segment".to_owned()), "{kinds:?}");
    // The counters are the trace's own running sums.
    let mut stmt = conn
        .prepare("SELECT allocated, active FROM trace_entry_0 WHERE id >= 0 ORDER BY id")
        .unwrap();
    let rows: Vec<(i64, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows, totals);
    drop(stmt);
    drop(conn);

    // Everything that shows the numbers says they are approximate.
    let db_arg = db.to_str().unwrap();
    for args in [
        vec!["metadata", db_arg, "--json"],
        vec!["overview", db_arg, "--json"],
        vec!["report", "peak-memory", db_arg, "--json"],
    ] {
        let out = ok_json(dir.path(), &args);
        assert_eq!(out["replay"]["issues"], issues, "{args:?}: {out}");
    }
    let text = pt_snap(dir.path(), &["report", "peak-memory", db_arg]);
    assert!(String::from_utf8_lossy(&text.stdout).starts_with("Lenient replay: "));
    let peak = ok_json(
        dir.path(),
        &["query", db_arg, "--template-use", "memory_peak", "--json"],
    );
    let max_allocated = totals.iter().map(|t| t.0).max().unwrap();
    assert_eq!(peak["rows"][0]["peak_allocated"], max_allocated, "{peak}");

    // A strict import does not reuse the lenient DB, and its failure leaves it in place.
    let out = pt_snap(
        dir.path(),
        &["import", "rank0.json", "--no-focus", "--json"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(db.exists());
    let again = ok_json(
        dir.path(),
        &["import", "rank0.json", "--lenient", "--no-focus", "--json"],
    );
    assert_eq!(again["reused"], true);
}

#[test]
fn lenient_is_for_single_database_imports() {
    let (dir, _) = project_with_rank("r.json", 3, 50);
    let out = pt_snap(
        dir.path(),
        &[
            "import",
            "r.json",
            "--lenient",
            "--events-per-slice",
            "10",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let env: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(env["error"]["code"], "INVALID_PARAMETER");
}

/// A real capture (`fixtures/real/`, 5,163 events of a CS336 training step) as canonical
/// JSON, for a test to alter.
fn real_snapshot() -> Value {
    fixture_json("fixtures/real/cuda_cs336_magma27__memory_snapshot.pickle")
}

/// Imports `snapshot` leniently (it must be refused strictly) and holds the database to the
/// lenient replay's guarantee: every device's counters and blocks (`counters_hold`), every
/// set-aside event listed, and every report readable.
fn lenient_import_holds(snapshot: &Value) {
    let dir = tempfile::tempdir().unwrap();
    write_pickle(dir.path(), "rank0.pkl", snapshot);
    let strict = pt_snap(dir.path(), &["import", "rank0.pkl", "--no-focus", "--json"]);
    assert_eq!(strict.status.code(), Some(1), "{strict:?}");

    let imported = ok_json(
        dir.path(),
        &["import", "rank0.pkl", "--lenient", "--no-focus", "--json"],
    );
    assert!(
        imported["replay"]["issues"].as_i64().unwrap() > 0,
        "{imported}"
    );
    let db = dir.path().join("rank0.pkl.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    for d in column::<String>(
        &conn,
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'trace_entry_%'",
    ) {
        let d: usize = d["trace_entry_".len()..].parse().unwrap();
        if let Err(e) = pt_snap_testkit::counters_hold(&conn, d, pt_snap_testkit::Replay::Lenient) {
            panic!("{e}");
        }
    }
    drop(conn);
    let db = db.to_str().unwrap();
    for args in [
        vec!["report", "peak-memory", db, "--json"],
        vec![
            "report",
            "peak-memory",
            db,
            "--metric",
            "allocated",
            "--json",
        ],
        vec!["report", "peak-memory", db, "--by", "category", "--json"],
        vec!["report", "oom", db, "--json"],
        vec!["query", db, "--template-use", "allocator_gap", "--json"],
    ] {
        ok_json(dir.path(), &args);
    }
    let ranks = pt_snap(dir.path(), &["ranks", "rank0.pkl.db", "--json"]);
    assert!(ranks.status.success(), "{ranks:?}");
}

#[test]
fn lenient_counters_stay_true_with_alloc_sizes_of_2_pow_62() {
    // Was: i64::MIN on the synthetic rows, and `report peak-memory` failing with "integer
    // overflow".
    let mut snapshot = real_snapshot();
    for e in snapshot["device_traces"][0].as_array_mut().unwrap() {
        if e["action"] == "alloc" {
            e["size"] = json!(1i64 << 62);
        }
    }
    lenient_import_holds(&snapshot);
}

#[test]
fn lenient_counters_stay_true_on_a_reversed_trace() {
    // Was: `active` at -3.2 GB mid-trace, `allocated` past `reserved`, blocks freed before
    // they were allocated.
    let mut snapshot = real_snapshot();
    snapshot["device_traces"][0]
        .as_array_mut()
        .unwrap()
        .reverse();
    lenient_import_holds(&snapshot);
}

#[test]
fn lenient_counters_stay_true_with_negated_alloc_sizes() {
    let mut snapshot = real_snapshot();
    for e in snapshot["device_traces"][0].as_array_mut().unwrap() {
        if e["action"] == "alloc" {
            e["size"] = json!(-e["size"].as_i64().unwrap());
        }
    }
    lenient_import_holds(&snapshot);
}

#[test]
fn a_trace_without_segments_reserves_what_its_blocks_hold() {
    // memviz-neo's generator writes no segments: its blocks are counted each in a
    // reservation of its own, so `reserved` is never below `active` (it was 0 throughout).
    let (dir, totals) = project_with_rank("rank0.json", 11, 300);
    ok_json(
        dir.path(),
        &["import", "rank0.json", "--lenient", "--no-focus", "--json"],
    );
    let conn = rusqlite::Connection::open(dir.path().join("rank0.json.db")).unwrap();
    let reserved: Vec<i64> = column(
        &conn,
        "SELECT reserved FROM trace_entry_0 WHERE id >= 0 ORDER BY id",
    );
    let active: Vec<i64> = totals.iter().map(|t| t.1).collect();
    assert_eq!(reserved, active);
    pt_snap_testkit::counters_hold(&conn, 0, pt_snap_testkit::Replay::Lenient).unwrap();
}
