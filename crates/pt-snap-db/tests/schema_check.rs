//! Opening refuses a database whose format objects are not the plain tables the format
//! defines (views, triggers, generated columns, virtual tables, missing columns), accepts
//! every database the reference wrote (layouts v1 and v2, dataset shards), and leaves no
//! side file beside a WAL-mode database.

use std::path::{Path, PathBuf};
use std::time::Instant;

use pt_snap_db::rusqlite::Connection;
use pt_snap_db::{check_format_objects, OpenError, SnapshotDb};
use pt_snap_testkit::{copy_from_repo, files_below, repo_root};

fn golden_dbs() -> Vec<PathBuf> {
    files_below(&repo_root().join("tests/golden"), "db")
}

/// A copy of the reference's own database of a fixture (layout v2), altered by `sql`.
fn altered(sql: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.db");
    copy_from_repo("tests/golden/query/single/reference.db", &path);
    Connection::open(&path).unwrap().execute_batch(sql).unwrap();
    (dir, path)
}

fn refusal(path: &Path) -> String {
    let started = Instant::now();
    let result = SnapshotDb::open_readonly(path);
    assert!(
        started.elapsed().as_secs() < 5,
        "the check reads the schema only"
    );
    match result {
        Err(OpenError::SchemaInvalid(m)) => m,
        other => panic!("expected SchemaInvalid, got {other:?}"),
    }
}

/// The refusal of the reference's database altered by `sql`.
fn refusal_of(sql: &str) -> String {
    let (_dir, path) = altered(sql);
    refusal(&path)
}

#[test]
fn every_database_the_reference_wrote_is_accepted() {
    let mut opened = 0;
    for path in golden_dbs() {
        let conn = Connection::open_with_flags(
            &path,
            pt_snap_db::rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let name = path.display().to_string();
        if name.ends_with("errors/not_snapshot.db") || name.ends_with("errors/empty.db") {
            continue;
        }
        check_format_objects(&conn).unwrap_or_else(|e| panic!("{name}: {e}"));
        SnapshotDb::open_readonly(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        opened += 1;
    }
    // v2 fixtures, the v1 shard, and the three datasets' shards (v1 and v2 with references).
    assert!(opened >= 20, "{opened}");
    let v1 =
        SnapshotDb::open_readonly(&repo_root().join("tests/golden/query/v1_shard/reference.db"))
            .unwrap();
    assert_eq!(v1.layout().unwrap(), Ok(pt_snap_db::CallstackLayout::V1));
}

#[test]
fn a_view_is_refused() {
    let m = refusal_of(
        "ALTER TABLE block_0 RENAME TO block_0_real;
         CREATE VIEW block_0 AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
         SELECT x AS id, x AS address, 512 AS size, 512 AS requestedSize, 1 AS state,
         1 AS allocEventId, -1 AS freeEventId FROM c;",
    );
    assert!(m.contains("'block_0' is a view"), "{m}");

    let m = refusal_of(
        "ALTER TABLE frame RENAME TO frame_real;
         CREATE VIEW Frame AS SELECT id, printf('%.*c', 400000000, 'x') AS filename, line, name
         FROM frame_real;",
    );
    assert!(m.contains("'Frame' is a view"), "{m}");
}

#[test]
fn a_trigger_is_refused() {
    let m = refusal_of(
        "CREATE TABLE audit (n INTEGER);
         CREATE TRIGGER t_block AFTER INSERT ON block_0 BEGIN INSERT INTO audit VALUES (1); END;",
    );
    assert!(m.contains("trigger 't_block' on 'block_0'"), "{m}");
    // On a table of the user's own, a trigger is the user's business.
    let (_dir, path) = altered(
        "CREATE TABLE my_notes (n INTEGER); CREATE TABLE audit (n INTEGER);
         CREATE TRIGGER t_notes AFTER INSERT ON my_notes BEGIN
         INSERT INTO audit VALUES (1); END;",
    );
    SnapshotDb::open_readonly(&path).unwrap();
}

#[test]
fn a_generated_column_is_refused() {
    for (sql, column) in [
        (
            "ALTER TABLE callstack RENAME TO cs_real;
             CREATE TABLE callstack (id INTEGER PRIMARY KEY, base TEXT, callstack TEXT
             GENERATED ALWAYS AS (printf('%.*c', 300000000, 'z')) VIRTUAL);",
            "column 'callstack' of 'callstack' is a generated column",
        ),
        (
            "ALTER TABLE trace_entry_0 ADD COLUMN extra INTEGER GENERATED ALWAYS AS (id + 1)",
            "column 'extra' of 'trace_entry_0' is a generated column",
        ),
        (
            "CREATE TABLE b (`id` INTEGER PRIMARY KEY, `address` INTEGER, `size` INTEGER,
             `requestedSize` INTEGER, `state` INTEGER, `allocEventId` INTEGER,
             `freeEventId` INTEGER, s INTEGER AS (size * 2) STORED);
             DROP TABLE block_0; ALTER TABLE b RENAME TO block_0;",
            "column 's' of 'block_0' is a generated column",
        ),
    ] {
        let m = refusal_of(sql);
        assert!(m.contains(column), "{m}");
    }
}

#[test]
fn a_virtual_table_is_refused() {
    // A module SQLite does not know: refused from the schema alone, without loading it.
    let m = refusal_of(
        "DROP TABLE frame;
         PRAGMA writable_schema = ON;
         INSERT INTO sqlite_master VALUES ('table', 'frame', 'frame', 0,
           'CREATE VIRTUAL TABLE frame USING no_such_module(id, filename, line, name)');
         PRAGMA writable_schema = OFF;",
    );
    assert!(m.contains("'frame' is a virtual table"), "{m}");
}

#[test]
fn a_missing_column_is_refused() {
    let m = refusal_of("ALTER TABLE block_0 DROP COLUMN requestedSize");
    assert!(m.contains("'block_0' has no column 'requestedSize'"), "{m}");
    let m = refusal_of(
        "CREATE TABLE pt_snap_block_reference (blockId INTEGER PRIMARY KEY, stream INTEGER)",
    );
    assert!(
        m.contains("'pt_snap_block_reference' has no column 'allocCallstack'"),
        "{m}"
    );
}

#[test]
fn our_extension_tables_must_be_plain_tables_too() {
    let m = refusal_of(
        "CREATE VIEW pt_snap_x_replay_issues AS WITH RECURSIVE c(x) AS
         (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x AS device FROM c;",
    );
    assert!(m.contains("'pt_snap_x_replay_issues' is a view"), "{m}");
    // The event-time tables are read by column: both must be there.
    let m =
        refusal_of("CREATE TABLE pt_snap_x_event_time_0 (event_id INTEGER PRIMARY KEY, t INTEGER)");
    assert!(
        m.contains("'pt_snap_x_event_time_0' has no column 'time_us'"),
        "{m}"
    );
    let m = refusal_of(
        "CREATE VIEW pt_snap_x_event_time_0 AS WITH RECURSIVE c(x) AS
         (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x AS event_id, x AS time_us FROM c;",
    );
    assert!(m.contains("'pt_snap_x_event_time_0' is a view"), "{m}");
    let (_dir, path) = altered(&pt_snap_db::schema::create_event_time_table(0));
    SnapshotDb::open_readonly(&path).unwrap();
}

#[test]
fn a_without_rowid_table_is_refused() {
    let m = refusal_of(
        "DROP TABLE callstack_frame_manifest;
         CREATE TABLE callstack_frame_manifest (callstackId INTEGER PRIMARY KEY,
         frameCount INTEGER NOT NULL) WITHOUT ROWID;",
    );
    assert!(m.contains("WITHOUT ROWID"), "{m}");
}

#[test]
fn unknown_objects_and_format_indexes_are_accepted() {
    let (_dir, path) = altered(
        "CREATE TABLE pt_snap_x_future (id INTEGER PRIMARY KEY, v TEXT);
         CREATE INDEX pt_snap_x_future_v ON pt_snap_x_future (v);
         CREATE VIEW my_notes AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
         SELECT x FROM c;
         CREATE TABLE block_extra_notes (m INTEGER, n INTEGER GENERATED ALWAYS AS (1));
         CREATE INDEX my_size_idx ON block_0 (size, address);
         CREATE INDEX my_expr_idx ON frame (length(filename));",
    );
    let db = SnapshotDb::open_readonly(&path).unwrap();
    assert_eq!(db.devices(), &[0]);
}

/// A WAL-mode database closed cleanly (its `-wal` folded back and removed) is read without
/// creating `-wal`/`-shm` beside it, and reads the same rows.
#[test]
fn a_wal_database_is_read_without_side_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w a#l?%.db");
    copy_from_repo("tests/golden/query/single/reference.db", &path);
    let count = |db: &SnapshotDb| -> i64 {
        db.conn()
            .query_row(
                "SELECT count(*) + sum(allocated) FROM trace_entry_0",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    let before = count(&SnapshotDb::open_readonly(&path).unwrap());
    pt_snap_testkit::switch_to_wal(&path);
    let names = || pt_snap_testkit::names_in(dir.path());
    assert_eq!(names(), ["w a#l?%.db"]);
    assert_eq!(std::fs::read(&path).unwrap()[18..20], [2, 2]);
    let db = SnapshotDb::open_readonly(&path).unwrap();
    assert_eq!(count(&db), before);
    drop(db);
    assert_eq!(names(), ["w a#l?%.db"], "no side file left");
}

/// With uncheckpointed commits in a `-wal`, the reader sees them (a normal read-only open).
#[test]
fn a_wal_with_frames_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.db");
    copy_from_repo("tests/golden/query/single/reference.db", &path);
    let writer = Connection::open(&path).unwrap();
    writer
        .execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE pt_snap_x_marker (n INTEGER); INSERT INTO pt_snap_x_marker VALUES (7);",
        )
        .unwrap();
    assert!(
        std::fs::metadata(dir.path().join("live.db-wal"))
            .unwrap()
            .len()
            > 0
    );
    let db = SnapshotDb::open_readonly(&path).unwrap();
    let n: i64 = db
        .conn()
        .query_row("SELECT n FROM pt_snap_x_marker", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 7);
    drop(db);
    drop(writer);
}
