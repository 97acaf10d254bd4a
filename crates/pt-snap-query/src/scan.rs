//! A template's full-table pass ([`GroupScan`]) split by rowid across connections, so that
//! the templates that must read every row of a million-row table (`callstack_analysis`,
//! `freed_block_lifetime`) use every core instead of one. SQLite runs one statement on one
//! thread; several read-only connections to the same file can each take a rowid range.
//!
//! Only for a database opened from a file (the browser's in-memory image has no second
//! connection, and no threads), and only where the table is large enough to repay opening
//! connections. Otherwise, or when a second connection does not see the same database, the
//! statement runs as written, in one pass.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use pt_snap_db::rusqlite::{self, Connection};

use crate::engine::{interrupted, Interrupt};
use crate::functions;
use crate::sql::GroupScan;

/// Rows below which one more connection costs more than it saves (opening one and reading
/// its schema takes about a millisecond; a thread scans ~10-20k rows in that time).
const MIN_ROWS_PER_PART: i64 = 100_000;

/// At most this many connections for one pass.
const MAX_PARTS: usize = 4;

/// What tells two connections apart if the file was replaced between their opens (an
/// `import --force` publishes by rename): the pass's table's rowid bounds and the file's
/// size in pages.
#[derive(Debug, PartialEq, Eq)]
struct Identity {
    rowids: Option<(i64, i64)>,
    pages: i64,
}

fn identity(conn: &Connection, table: &str) -> rusqlite::Result<Identity> {
    let rowids: (Option<i64>, Option<i64>) = conn.query_row(
        // Two subqueries: SQLite answers a lone MIN or MAX of the rowid from the b-tree's
        // ends, but both in one SELECT by scanning every row.
        &format!("SELECT (SELECT MIN(rowid) FROM {table}), (SELECT MAX(rowid) FROM {table})"),
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let pages = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
    Ok(Identity {
        rowids: rowids.0.zip(rowids.1),
        pages,
    })
}

/// The pass's totals computed over rowid ranges on `parts` connections (`main` and ones
/// opened on `path`), merged; `Ok(None)` when it should run in one pass instead.
pub(crate) fn group_totals(
    main: &Connection,
    path: &Path,
    scan: &GroupScan,
    interrupt: &Arc<Mutex<Option<Interrupt>>>,
) -> rusqlite::Result<Option<String>> {
    let cores = thread::available_parallelism().map_or(1, |n| n.get());
    let expected = identity(main, &scan.table)?;
    let Some((first, last)) = expected.rowids else {
        return Ok(None);
    };
    let span = last.saturating_sub(first).saturating_add(1);
    let parts = cores
        .min(MAX_PARTS)
        .min((span / MIN_ROWS_PER_PART) as usize);
    if parts < 2 {
        return Ok(None);
    }
    split_totals(main, path, scan, interrupt, expected, parts)
}

/// [`group_totals`] on `parts` connections, whatever the table's size.
fn split_totals(
    main: &Connection,
    path: &Path,
    scan: &GroupScan,
    interrupt: &Arc<Mutex<Option<Interrupt>>>,
    expected: Identity,
    parts: usize,
) -> rusqlite::Result<Option<String>> {
    let Some((first, last)) = expected.rowids else {
        return Ok(None);
    };
    let span = last.saturating_sub(first).saturating_add(1);
    let step = span / parts as i64 + 1;
    let ranges: Vec<(i64, i64)> = (0..parts as i64)
        .map(|i| {
            let lo = first + i * step;
            (lo, (lo + step - 1).min(last))
        })
        .collect();
    let statement = scan.statement(true);
    // A failed part stops the others at their next progress check.
    let failed = Arc::new(AtomicBool::new(false));

    let results: Vec<rusqlite::Result<Option<String>>> = thread::scope(|s| {
        let workers: Vec<_> = ranges[1..]
            .iter()
            .map(|&range| {
                let (statement, expected, failed) = (&statement, &expected, Arc::clone(&failed));
                let interrupt = Arc::clone(interrupt);
                s.spawn(move || {
                    let result = (|| {
                        let conn = open_part(path, &interrupt, &failed)?;
                        // Another file (replaced since the analyzer opened it) must pass the
                        // same schema check before a statement reads it.
                        if pt_snap_db::check_format_objects(&conn).is_err()
                            || identity(&conn, &scan.table)? != *expected
                        {
                            return Ok(None);
                        }
                        totals(&conn, statement, range).map(Some)
                    })();
                    if !matches!(result, Ok(Some(_))) {
                        failed.store(true, Ordering::Relaxed);
                    }
                    result
                })
            })
            .collect();
        let own = totals(main, &statement, ranges[0]).map(Some);
        if own.is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        std::iter::once(own)
            .chain(workers.into_iter().map(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }))
            .collect()
    });

    let mut parts = Vec::with_capacity(results.len());
    for result in results {
        match result {
            Ok(Some(json)) => parts.push(json),
            // Another part saw a different file, or stopped because one failed: the error
            // (if any) is reported below, a different file means one pass on `main`.
            Ok(None) => {}
            Err(e) if is_interrupt(&e) && failed.load(Ordering::Relaxed) => {}
            Err(e) => return Err(e),
        }
    }
    if parts.len() < ranges.len() {
        return Ok(None);
    }
    functions::merge_group_totals(&parts).map(Some)
}

fn totals(conn: &Connection, statement: &str, (lo, hi): (i64, i64)) -> rusqlite::Result<String> {
    conn.query_row(statement, [lo, hi], |r| r.get(0))
}

/// A read-only connection like the analyzer's own, opened the same way
/// ([`pt_snap_db::open_readonly_connection`]: `query_only`, no side files beside a WAL-mode
/// file), with the SQL functions and the same interrupt, so `--timeout` stops every part.
fn open_part(
    path: &Path,
    interrupt: &Arc<Mutex<Option<Interrupt>>>,
    failed: &Arc<AtomicBool>,
) -> rusqlite::Result<Connection> {
    let mut conn = pt_snap_db::open_readonly_connection(path)?;
    functions::register(&conn)?;
    let (interrupt, failed) = (Arc::clone(interrupt), Arc::clone(failed));
    conn.progress_handler(
        1000,
        Some(move || failed.load(Ordering::Relaxed) || interrupted(&interrupt)),
    )?;
    Ok(conn)
}

fn is_interrupt(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database(rows: i64) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = Connection::open(&path).unwrap();
        // Negative ids first, as the replay writes synthetic rows; NULL keys and values.
        conn.execute_batch(&format!(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER, v INTEGER);
             WITH RECURSIVE n(i) AS (SELECT -50 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
             INSERT INTO t SELECT i, CASE WHEN i % 17 = 0 THEN NULL ELSE i % 300 END,
             CASE WHEN i % 13 = 0 THEN NULL ELSE i * 7919 % 100003 END FROM n;"
        ))
        .unwrap();
        (dir, path)
    }

    fn scan() -> GroupScan {
        GroupScan {
            table: "t".into(),
            key: "k",
            value: "v",
            filter: "+id >= 0",
        }
    }

    fn analyzer_connection(path: &Path) -> Connection {
        let conn =
            Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        functions::register(&conn).unwrap();
        conn
    }

    /// Any number of parts gives the totals of one pass.
    #[test]
    fn split_totals_equal_one_pass() {
        let (_dir, path) = database(20_000);
        let main = analyzer_connection(&path);
        let one_pass: String = main
            .query_row(&scan().statement(false), [], |r| r.get(0))
            .unwrap();
        let none = Arc::new(Mutex::new(None));
        for parts in [2, 3, 7] {
            let expected = identity(&main, "t").unwrap();
            let split = split_totals(&main, &path, &scan(), &none, expected, parts).unwrap();
            assert_eq!(split.as_deref(), Some(one_pass.as_str()), "{parts} parts");
        }
    }

    /// A part that finds another database (the file was replaced since the analyzer
    /// opened it) gives way to one pass on the analyzer's own connection.
    #[test]
    fn another_file_means_one_pass() {
        let (_dir, path) = database(20_000);
        let main = analyzer_connection(&path);
        let mut expected = identity(&main, "t").unwrap();
        expected.pages += 1;
        let none = Arc::new(Mutex::new(None));
        assert_eq!(
            split_totals(&main, &path, &scan(), &none, expected, 2).unwrap(),
            None
        );
    }

    /// The caller's deadline stops the other connections' parts too.
    #[test]
    fn the_interrupt_reaches_every_part() {
        let (_dir, path) = database(20_000);
        let main = analyzer_connection(&path);
        let stop: Interrupt = Arc::new(|| true);
        let interrupt = Arc::new(Mutex::new(Some(stop)));
        let slot = Arc::clone(&interrupt);
        let mut main = main;
        main.progress_handler(1000, Some(move || interrupted(&slot)))
            .unwrap();
        let expected = identity(&main, "t").unwrap();
        let err = split_totals(&main, &path, &scan(), &interrupt, expected, 2);
        // Every part interrupted: the caller's one pass then meets the same deadline.
        assert!(
            matches!(err, Ok(None)) || err.as_ref().is_err_and(is_interrupt),
            "{err:?}"
        );
        let serial = main.query_row(&scan().statement(false), [], |r| r.get::<_, String>(0));
        assert!(serial.is_err_and(|e| is_interrupt(&e)));
    }

    /// The parts' connections open a WAL-mode file as the analyzer does: nothing is created
    /// beside it.
    #[test]
    fn parts_leave_no_side_files_beside_a_wal_database() {
        let (dir, path) = database(20_000);
        pt_snap_testkit::switch_to_wal(&path);
        let names = || pt_snap_testkit::names_in(dir.path());
        assert_eq!(names(), ["t.db"]);
        let main = pt_snap_db::open_readonly_connection(&path).unwrap();
        functions::register(&main).unwrap();
        let one_pass: String = main
            .query_row(&scan().statement(false), [], |r| r.get(0))
            .unwrap();
        let expected = identity(&main, "t").unwrap();
        let none = Arc::new(Mutex::new(None));
        let split = split_totals(&main, &path, &scan(), &none, expected, 3).unwrap();
        assert_eq!(split.as_deref(), Some(one_pass.as_str()));
        drop(main);
        assert_eq!(names(), ["t.db"]);
    }

    /// Too small a table for parts: one pass.
    #[test]
    fn small_tables_take_one_pass() {
        let (_dir, path) = database(1000);
        let main = analyzer_connection(&path);
        let none = Arc::new(Mutex::new(None));
        assert_eq!(group_totals(&main, &path, &scan(), &none).unwrap(), None);
    }
}
