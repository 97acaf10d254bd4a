//! Databases are input. One whose format tables are views over endless recursive CTEs or
//! huge texts, or carry generated columns, must be refused at once with
//! `DATABASE_SCHEMA_INVALID` (exit 1) by `query` and both reports — not run until killed.
//! And reading a WAL-mode database leaves nothing beside it and answers as before.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pt_snap_testkit::copy_from_repo;
use rusqlite::Connection;
use serde_json::Value;

/// Runs `pt-snap <args>`, killed if it runs past `limit`; `(exit code, stdout, stderr)`.
fn pt_snap(cwd: &Path, args: &[&str], limit: Duration) -> (Option<i32>, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pt-snap"))
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env("XDG_CONFIG_HOME", cwd.join(".config"))
        .env("XDG_CACHE_HOME", cwd.join(".cache"))
        .env_remove("PT_SNAP_DB_PATH")
        .env_remove("PT_SNAP_QUERY_TIMEOUT")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("`pt-snap {}` still running after {limit:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The reference's database of a two-device fixture, altered by `sql`, as the outside fuzz
/// campaign's reproducers were made.
fn hostile(dir: &Path, name: &str, sql: &str) -> PathBuf {
    let path = dir.join(name);
    copy_from_repo("tests/golden/query/errors/reference.db", &path);
    Connection::open(&path).unwrap().execute_batch(sql).unwrap();
    path
}

#[test]
fn hostile_databases_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            hostile(
                dir.path(),
                "view_callstack_infinite.db",
                "ALTER TABLE callstack RENAME TO callstack_real;
                 CREATE VIEW callstack AS WITH RECURSIVE c(x) AS
                 (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x AS id, 'a' AS callstack FROM c;",
            ),
            "'callstack' is a view",
        ),
        (
            hostile(
                dir.path(),
                "view_block0_infinite.db",
                "DROP TABLE block_0;
                 CREATE VIEW block_0 AS WITH RECURSIVE c(x) AS
                 (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x AS id, x AS address,
                 512 AS size, 512 AS requestedSize, 1 AS state, 1 AS allocEventId,
                 -1 AS freeEventId FROM c;",
            ),
            "'block_0' is a view",
        ),
        (
            hostile(
                dir.path(),
                "view_frame_bigtext.db",
                "ALTER TABLE frame RENAME TO frame_real;
                 CREATE VIEW frame AS SELECT id, printf('%.*c', 400000000, 'x') AS filename,
                 line, name FROM frame_real;",
            ),
            "'frame' is a view",
        ),
        (
            hostile(
                dir.path(),
                "generated_column.db",
                "ALTER TABLE callstack RENAME TO cs_real;
                 CREATE TABLE callstack (id INTEGER PRIMARY KEY, base TEXT, callstack TEXT
                 GENERATED ALWAYS AS (printf('%.*c', 300000000, 'z')) VIRTUAL);
                 INSERT INTO callstack (id, base) SELECT id, callstack FROM cs_real;",
            ),
            "column 'callstack' of 'callstack' is a generated column",
        ),
        (
            hostile(
                dir.path(),
                "trigger.db",
                "CREATE TRIGGER t AFTER INSERT ON frame BEGIN SELECT 1; END;",
            ),
            "trigger 't' on 'frame'",
        ),
    ];
    for (db, why) in &cases {
        let db = db.to_str().unwrap();
        let runs: [&[&str]; 7] = [
            &[
                "query",
                db,
                "--template-use",
                "event_frames",
                "--params",
                r#"{"event_id": 5}"#,
            ],
            &["query", db, "--template-use", "block", "-n", "5"],
            &["query", db, "--template-use", "event", "-n", "5"],
            &["query", db, "--template-use", "callstack_analysis"],
            &[
                "query",
                db,
                "--template-use",
                "active_memory_frame_tree_at_event",
                "--params",
                r#"{"event_id": 5}"#,
            ],
            &["report", "peak-memory", db],
            &["report", "memory-tree", db, "--event-id", "5"],
        ];
        for args in runs {
            let mut args = args.to_vec();
            args.push("--json");
            let started = Instant::now();
            let (code, stdout, stderr) = pt_snap(dir.path(), &args, Duration::from_secs(30));
            let took = started.elapsed();
            let what = format!("`pt-snap {}`", args.join(" "));
            assert_eq!(code, Some(1), "{what}: {stdout}{stderr}");
            assert!(took < Duration::from_secs(5), "{what} took {took:?}");
            let envelope: Value =
                serde_json::from_str(&stderr).unwrap_or_else(|e| panic!("{what}: {e}: {stderr}"));
            assert_eq!(
                envelope["error"]["code"], "DATABASE_SCHEMA_INVALID",
                "{what}"
            );
            let message = envelope["error"]["message"].as_str().unwrap();
            assert!(message.contains(why), "{what}: {message}");
            assert!(stdout.is_empty(), "{what}: {stdout}");
        }
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    v.sort();
    v
}

/// A WAL-mode database (converted, then closed cleanly so that its `-wal` is folded back and
/// removed) is read by `query` and the reports without any `-wal`/`-shm` appearing beside
/// it, with the answers it gave before the conversion.
#[test]
fn reading_a_wal_database_leaves_no_side_files() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("dbs");
    std::fs::create_dir(&db_dir).unwrap();
    let db = db_dir.join("snap shot#1.db");
    copy_from_repo("tests/golden/query/errors/reference.db", &db);
    let db_arg = db.to_str().unwrap();
    let runs: Vec<Vec<&str>> = vec![
        vec!["query", db_arg, "--template-use", "memory_peak", "--json"],
        vec![
            "query",
            db_arg,
            "--template-use",
            "event",
            "-n",
            "20",
            "--exact-total",
            "--json",
        ],
        vec![
            "query",
            db_arg,
            "--template-use",
            "callstack_analysis",
            "--json",
        ],
        vec![
            "query",
            db_arg,
            "--template-use",
            "leak_detection",
            "--device",
            "1",
            "--json",
        ],
        vec!["report", "peak-memory", db_arg, "--json"],
        vec!["overview", db_arg, "--json"],
        vec!["metadata", db_arg, "--json"],
    ];
    let answer = |args: &[&str]| {
        let (code, stdout, stderr) = pt_snap(dir.path(), args, Duration::from_secs(60));
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        stdout
    };
    let before: Vec<String> = runs.iter().map(|a| answer(a)).collect();
    {
        let conn = Connection::open(&db).unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }
    assert_eq!(
        std::fs::read(&db).unwrap()[18..20],
        [2, 2],
        "WAL in the header"
    );
    assert_eq!(names(&db_dir), ["snap shot#1.db"]);
    let bytes = std::fs::read(&db).unwrap();
    for (args, before) in runs.iter().zip(&before) {
        assert_eq!(&answer(args), before, "{args:?}");
        assert_eq!(names(&db_dir), ["snap shot#1.db"], "after {args:?}");
    }
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "not a byte changed");
    // `timeout_s` stays null without --timeout: the default limit is not the user's.
    let peak: Value = serde_json::from_str(&before[0]).unwrap();
    assert_eq!(peak["timeout_s"], Value::Null);
}
