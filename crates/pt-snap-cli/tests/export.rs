//! `pt-snap export --format parquet`: every fixture's four tables read back from the Parquet
//! parts equal the SnapshotDB's rows (and `summary` equals `ranks --json`'s rows); a second
//! export keeps every part untouched; a failed or killed export leaves no partial part where
//! a reader looks.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::Array;
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use pt_snap_testkit::{column, pickles_in, repo_root, FIXTURE_DIRS};
use rusqlite::Connection;
use serde_json::{json, Value};

mod common;
use common::pt_snap;

/// The JSON on stdout, checked against the command's contract.
fn json_of(out: &Output, command: &str) -> Value {
    let document: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    if let Some(contract) = pt_snap_report::commands::find(command) {
        contract.check_document(&document, false).unwrap();
    }
    document
}

/// Every redistributable snapshot fixture, as the engine's tests list them.
fn fixtures() -> Vec<PathBuf> {
    let out = pickles_in(&repo_root(), &FIXTURE_DIRS);
    assert!(out.len() >= 10, "fixtures missing: {out:?}");
    out
}

/// One value of an Arrow array as JSON (lists of structs nested).
fn value_at(array: &dyn Array, i: usize) -> Value {
    if array.is_null(i) {
        return Value::Null;
    }
    match array.data_type() {
        DataType::Int64 => json!(array.as_primitive::<Int64Type>().value(i)),
        DataType::Utf8 => json!(array.as_string::<i32>().value(i)),
        DataType::Boolean => json!(array.as_boolean().value(i)),
        DataType::List(_) => {
            let items = array.as_list::<i32>().value(i);
            Value::Array((0..items.len()).map(|j| value_at(&items, j)).collect())
        }
        DataType::Struct(fields) => {
            let s = array.as_struct();
            Value::Object(
                fields
                    .iter()
                    .enumerate()
                    .map(|(k, f)| (f.name().clone(), value_at(s.column(k), i)))
                    .collect(),
            )
        }
        other => panic!("unexpected column type {other}"),
    }
}

/// A part's rows, each an object of column: value.
fn read_part(path: &Path) -> Vec<serde_json::Map<String, Value>> {
    let file = fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        let schema = batch.schema();
        for i in 0..batch.num_rows() {
            rows.push(
                schema
                    .fields()
                    .iter()
                    .enumerate()
                    .map(|(k, f)| (f.name().clone(), value_at(batch.column(k), i)))
                    .collect(),
            );
        }
    }
    rows
}

fn part(dir: &Path, table: &str, job: &str, rank: u64) -> PathBuf {
    dir.join(table)
        .join(format!("job={job}"))
        .join(format!("rank={rank}"))
        .join("part-0.parquet")
}

fn name_of(codes: &[(i64, &str)], code: Option<i64>) -> Value {
    match code {
        None => Value::Null,
        Some(c) => match codes.iter().find(|(k, _)| *k == c) {
            Some((_, n)) => json!(n),
            None => json!(c.to_string()),
        },
    }
}

fn devices(conn: &Connection) -> Vec<i64> {
    let names: Vec<String> = column(
        conn,
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'trace_entry_%'",
    );
    let mut out: Vec<i64> = names
        .iter()
        .map(|n| n["trace_entry_".len()..].parse().unwrap())
        .collect();
    out.sort_unstable();
    out
}

fn rows(conn: &Connection, sql: &str, f: impl Fn(&rusqlite::Row) -> Value) -> Vec<Value> {
    let mut stmt = conn.prepare(sql).unwrap();
    let mut rows = stmt.query([]).unwrap();
    let mut out = Vec::new();
    while let Some(r) = rows.next().unwrap() {
        out.push(f(r));
    }
    out
}

/// The SnapshotDB's rows in the shape of each Parquet table, read with SQL of the test's own.
fn db_tables(db: &Path) -> [Vec<Value>; 3] {
    let conn = Connection::open(db).unwrap();
    let g = |r: &rusqlite::Row, i: usize| r.get::<_, Option<i64>>(i).unwrap();
    let (mut events, mut blocks) = (Vec::new(), Vec::new());
    for d in devices(&conn) {
        let times: bool = conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = ?)",
                [format!("pt_snap_x_event_time_{d}")],
                |r| r.get(0),
            )
            .unwrap();
        let time = if times {
            format!("(SELECT time_us FROM pt_snap_x_event_time_{d} x WHERE x.event_id = t.id)")
        } else {
            "NULL".to_owned()
        };
        events.extend(rows(
            &conn,
            &format!(
                "SELECT id, action, address, size, stream, allocated, active, reserved, \
                 callstackId, {time} FROM trace_entry_{d} t ORDER BY id"
            ),
            |r| {
                json!({
                    "device": d, "id": g(r, 0),
                    "action": match r.get::<_, rusqlite::types::Value>(1).unwrap() {
                        rusqlite::types::Value::Integer(c) => name_of(&pt_snap_db::schema::ACTIONS, Some(c)),
                        rusqlite::types::Value::Text(t) => json!(t),
                        _ => Value::Null,
                    },
                    "address": g(r, 2), "size": g(r, 3), "stream": g(r, 4), "time_us": g(r, 9),
                    "allocated": g(r, 5), "active": g(r, 6), "reserved": g(r, 7),
                    "callstack_id": g(r, 8),
                })
            },
        ));
        blocks.extend(rows(
            &conn,
            &format!(
                "SELECT b.id, b.address, b.size, b.state, b.allocEventId, b.freeEventId, \
                 t.callstackId FROM block_{d} b LEFT JOIN trace_entry_{d} t \
                 ON t.id = b.allocEventId AND b.allocEventId != -1 ORDER BY b.id"
            ),
            |r| {
                json!({
                    "device": d, "id": g(r, 0), "address": g(r, 1), "size": g(r, 2),
                    "state": name_of(&pt_snap_db::schema::BLOCK_STATES, g(r, 3)),
                    "alloc_event_id": g(r, 4), "free_event_id": g(r, 5),
                    "callstack_id": g(r, 6),
                })
            },
        ));
    }
    let frames = rows(
        &conn,
        "SELECT cf.callstackId, f.name, f.filename, f.line FROM callstack_frame cf \
         JOIN frame f ON f.id = cf.frameId ORDER BY cf.callstackId, cf.position",
        |r| {
            json!([r.get::<_, i64>(0).unwrap(), {
                "name": r.get::<_, String>(1).unwrap(),
                "filename": r.get::<_, String>(2).unwrap(),
                "line": r.get::<_, i64>(3).unwrap(),
            }])
        },
    );
    let callstacks = rows(
        &conn,
        "SELECT id, callstack FROM callstack ORDER BY id",
        |r| {
            let id: i64 = r.get(0).unwrap();
            let text: Option<String> = r.get(1).unwrap();
            let own: Vec<Value> = frames
                .iter()
                .filter(|f| f[0] == json!(id))
                .map(|f| f[1].clone())
                .collect();
            json!({
                "id": id,
                "normalized": text.as_deref().map(pt_snap_parquet::normalized_text),
                "text": text,
                "frames": own,
            })
        },
    );
    [events, blocks, callstacks]
}

fn objects(rows: Vec<serde_json::Map<String, Value>>) -> Vec<Value> {
    rows.into_iter().map(Value::Object).collect()
}

/// The fields of a `ranks --json` row that `summary` keeps, in its columns' shape.
fn summary_of_ranks_row(row: &Value) -> Value {
    let mut m = serde_json::Map::new();
    // rank_source: `--rank` gives the rank here, the position in a set of one there.
    let skip = [
        "rank",
        "rank_source",
        "outlier",
        "outlier_reason",
        "vs_median_percent",
        "error",
        "top_callstack_group",
        "reused",
    ];
    for (k, v) in row.as_object().unwrap() {
        if !skip.contains(&k.as_str()) {
            m.insert(k.clone(), v.clone());
        }
    }
    let g = &row["top_callstack_group"];
    for k in [
        "metric",
        "event_id",
        "category",
        "size_bytes",
        "block_count",
        "callstack",
    ] {
        m.insert(format!("top_group_{k}"), g[k].clone());
    }
    m.insert("top_group_frames".into(), g["frames"].clone());
    Value::Object(m)
}

#[test]
fn every_fixture_round_trips_through_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let dataset = root.join("dataset");
    for (rank, fixture) in fixtures().into_iter().enumerate() {
        let rank = rank as u64;
        let name = fixture.file_name().unwrap().to_str().unwrap().to_owned();
        let copy = root.join(&name);
        fs::copy(&fixture, &copy).unwrap();
        let r = rank.to_string();
        let out = export(&root, &copy, "dataset", &["--job", "fx", "--rank", &r]);
        let doc = json_of(&out, "export");
        // A trace the strict replay refuses: through its lenient database, as the hint says.
        let (input, db) = if doc["files"][0]["status"] == "failed" {
            assert_eq!(
                doc["files"][0]["error"]["code"], "IMPORT_FAILED",
                "{name}: {doc}"
            );
            assert_eq!(out.status.code(), Some(1));
            let lenient = root.join("lenient");
            let imported = pt_snap(
                &root,
                &[
                    "import",
                    copy.to_str().unwrap(),
                    "--lenient",
                    "-o",
                    "lenient",
                    "--no-focus",
                    "--json",
                ],
            );
            assert!(imported.status.success(), "{name}: {imported:?}");
            let db = lenient.join(format!("{name}.db"));
            let out = export(&root, &db, "dataset", &["--job", "fx", "--rank", &r]);
            assert!(out.status.success(), "{name}: {out:?}");
            (db.clone(), db)
        } else {
            assert!(out.status.success(), "{name}: {out:?}");
            assert_eq!(doc["files"][0]["status"], "written");
            (copy.clone(), root.join(format!("{name}.db")))
        };
        let [events, blocks, callstacks] = db_tables(&db);
        for (table, want) in [
            ("events", events),
            ("blocks", blocks),
            ("callstacks", callstacks),
        ] {
            let got = objects(read_part(&part(&dataset, table, "fx", rank)));
            assert_eq!(got.len(), want.len(), "{name}: {table} rows");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g, w, "{name}: {table}");
            }
        }
        // summary: the rows `ranks --json` gives the same input, less what a set judges.
        // A file without a trace has no devices: no rows (`ranks` fails it instead).
        let ranks = pt_snap(&root, &["ranks", input.to_str().unwrap(), "--json"]);
        let ranks = json_of(&ranks, "ranks");
        let want: Vec<Value> = if ranks["ranks"][0]["error"]["code"] == "DEVICE_NOT_FOUND" {
            Vec::new()
        } else {
            assert_eq!(ranks["ok"], true, "{name}: {ranks}");
            ranks["ranks"]
                .as_array()
                .unwrap()
                .iter()
                .map(summary_of_ranks_row)
                .collect()
        };
        let strip = |mut m: serde_json::Map<String, Value>| {
            m.remove("reused");
            m.remove("rank_source");
            Value::Object(m)
        };
        let summary = part(&dataset, "summary", "fx", rank);
        let got: Vec<Value> = read_part(&summary).into_iter().map(strip).collect();
        assert_eq!(got, want, "{name}: summary");
        // Read back as the browser's Ranks view reads it: the same rows, judged again.
        let path = format!("summary/job=fx/rank={rank}/part-0.parquet");
        let read = pt_snap_parquet::read_summary(fs::read(&summary).unwrap(), &path).unwrap();
        assert!(
            read.iter().all(|r| r.job == "fx" && r.file.rank == rank),
            "{name}"
        );
        let files = read.into_iter().map(|r| r.file).collect();
        let again =
            pt_snap_report::ranks::RanksReport::new(pt_snap_report::Metric::Active, files, None);
        let again: Vec<Value> = again.rows_json().iter().map(summary_of_ranks_row).collect();
        assert_eq!(again, want, "{name}: summary read back");
    }
}

/// A generated snapshot at `path`: seed `seed`, rank `rank`, `events` events per device.
fn generate(path: &Path, seed: u64, rank: u32, events: u64) {
    let mut cfg = pt_snap_gen::Config::small(seed);
    cfg.rank = rank;
    cfg.events_per_device = events;
    let file = fs::File::create(path).unwrap();
    pt_snap_gen::generate(&cfg, std::io::BufWriter::new(file)).unwrap();
}

/// A small job of generated ranks (`rank<r>.pickle`).
fn job(dir: &Path, ranks: u32, events: u64) -> PathBuf {
    let job = dir.join("job7");
    fs::create_dir_all(&job).unwrap();
    for rank in 0..ranks {
        generate(&job.join(format!("rank{rank}.pickle")), 21, rank, events);
    }
    job
}

/// A scratch directory (kept alive by the returned guard), its canonical path, and a job
/// of `ranks` generated ranks in it.
fn scratch_with_job(ranks: u32, events: u64) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let job = job(&root, ranks, events);
    (dir, root, job)
}

/// `pt-snap export INPUT -o OUT [EXTRA...] --json`, run in `root`.
fn export(root: &Path, input: &Path, out: &str, extra: &[&str]) -> Output {
    let mut args = vec!["export", input.to_str().unwrap(), "-o", out];
    args.extend_from_slice(extra);
    args.push("--json");
    pt_snap(root, &args)
}

/// Every file under `dir`: (path, inode, modification time).
fn inventory(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.push((e.path(), m.ino(), m.modified().unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_second_export_keeps_every_part() {
    let (_dir, root, job) = scratch_with_job(3, 3000);
    let out = export(&root, &job, "ds", &[]);
    assert!(out.status.success(), "{out:?}");
    let first = json_of(&out, "export");
    assert_eq!(first["job"], "job7", "the directory's name");
    assert_eq!(first["written"], 3);
    let before = inventory(&root.join("ds"));
    assert_eq!(before.len(), 12, "{before:?}");
    let out = export(&root, &job, "ds", &[]);
    assert!(out.status.success(), "{out:?}");
    let second = json_of(&out, "export");
    assert_eq!(
        (second["written"].clone(), second["kept"].clone()),
        (json!(0), json!(3))
    );
    for (a, b) in first["files"]
        .as_array()
        .unwrap()
        .iter()
        .zip(second["files"].as_array().unwrap())
    {
        assert_eq!(b["status"], "kept");
        assert_eq!(
            a["rows"], b["rows"],
            "rows of kept parts come from their footers"
        );
        assert_eq!(a["source_sha256"], b["source_sha256"]);
    }
    assert_eq!(inventory(&root.join("ds")), before, "nothing was rewritten");

    // Another source under the same rank replaces that rank's parts, and only those.
    let other = root.join("other");
    fs::create_dir(&other).unwrap();
    generate(&other.join("rank1.pickle"), 99, 0, 2000);
    let out = export(&root, &other.join("rank1.pickle"), "ds", &["--job", "job7"]);
    assert!(out.status.success(), "{out:?}");
    let after = inventory(&root.join("ds"));
    let changed: Vec<&PathBuf> = after
        .iter()
        .zip(&before)
        .filter(|(a, b)| a != b)
        .map(|(a, _)| &a.0)
        .collect();
    assert_eq!(changed.len(), 4, "{changed:?}");
    assert!(changed
        .iter()
        .all(|p| p.to_str().unwrap().contains("/rank=1/")));
}

/// Every `*.parquet` a reader would list is a whole part (its footer reads and says where
/// it came from); temporary files are hidden.
fn only_whole_parts(dir: &Path) -> usize {
    let mut parts = 0;
    for (path, _, _) in inventory(dir) {
        let name = path.file_name().unwrap().to_str().unwrap();
        if name.ends_with(".parquet") {
            let meta = pt_snap_parquet::part_metadata(fs::File::open(&path).unwrap())
                .unwrap_or_else(|| panic!("{} is not a whole part", path.display()));
            assert!(meta.get(pt_snap_parquet::KEY_SOURCE_SHA256).is_some());
            parts += 1;
        } else {
            assert!(name.starts_with('.'), "{} is visible", path.display());
        }
    }
    parts
}

#[test]
fn a_failed_or_killed_export_leaves_no_partial_part() {
    let (_dir, root, job) = scratch_with_job(2, 3000);
    // A part that cannot be published (a directory is where rank 1's summary goes).
    let blocked = part(&root.join("ds"), "summary", "j", 1);
    fs::create_dir_all(blocked.join("x")).unwrap();
    let out = export(&root, &job, "ds", &["--job", "j"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let doc = json_of(&out, "export");
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["files"][0]["status"], "written");
    assert_eq!(doc["files"][1]["status"], "failed");
    assert_eq!(doc["files"][1]["error"]["code"], "ERROR");
    let envelope: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(envelope["error"]["code"], "ERROR");
    fs::remove_dir_all(&blocked).unwrap();
    assert_eq!(only_whole_parts(&root.join("ds")), 7);

    // Killed at any moment: each part is whole or absent, and the next run completes it.
    let big = root.join("big");
    fs::create_dir(&big).unwrap();
    let snapshot = big.join("rank0.pickle");
    generate(&snapshot, 5, 0, 150_000);
    let imported = pt_snap(&root, &["import", snapshot.to_str().unwrap(), "--no-focus"]);
    assert!(imported.status.success());
    for delay_ms in [50, 150, 300, 600, 1000] {
        let _ = fs::remove_dir_all(root.join("killed"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_pt-snap"))
            .args([
                "export",
                snapshot.to_str().unwrap(),
                "-o",
                "killed",
                "--json",
            ])
            .current_dir(&root)
            .env("HOME", &root)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        child.wait().unwrap();
        if root.join("killed").exists() {
            only_whole_parts(&root.join("killed"));
        }
    }
    let out = export(&root, &snapshot, "killed", &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(only_whole_parts(&root.join("killed")), 4);
}

#[test]
fn usage_errors() {
    let (_dir, root, job) = scratch_with_job(2, 500);
    let out = export(&root, &job, "ds", &["--rank", "3"]);
    assert_eq!(out.status.code(), Some(1));
    let envelope: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(envelope["error"]["code"], "INVALID_PARAMETER");
    let out = export(&root, &job, "ds", &["--job", "a/b"]);
    assert_eq!(out.status.code(), Some(1));
    let out = pt_snap(&root, &["export", job.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(2), "-o is required");
    let out = pt_snap(&root, &["export", "missing.pickle", "-o", "ds", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json_of(&out, "export")["files"][0]["error"]["code"],
        "SNAPSHOT_INVALID"
    );
}

/// As for `ranks`: a snapshot reached through a link in the job's directory is exported
/// under the link's rank, its database written beside the link, nothing beside the target.
#[test]
fn a_link_in_the_job_writes_beside_the_link_only() {
    let (_dir, root, job) = scratch_with_job(1, 1500);
    let elsewhere = root.join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    generate(&elsewhere.join("x.pickle"), 22, 0, 1500);
    std::os::unix::fs::symlink(elsewhere.join("x.pickle"), job.join("rank1.pickle")).unwrap();
    let out = export(&root, &job, "ds", &[]);
    assert!(out.status.success(), "{out:?}");
    let document = json_of(&out, "export");
    assert_eq!(document["written"], 2);
    let linked = &document["files"][1];
    assert_eq!(linked["path"], job.join("rank1.pickle").to_str().unwrap());
    assert_eq!(linked["rank"], 1);
    assert!(part(&root.join("ds"), "events", "job7", 1).is_file());
    assert!(
        job.join("rank1.pickle.db").is_file(),
        "the database beside the link"
    );
    let beside_target: Vec<_> = fs::read_dir(&elsewhere)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        beside_target,
        ["x.pickle"],
        "nothing written beside the target"
    );
}
