//! The objects the SnapshotDB format defines must be what it defines them as, before any
//! query reads them.
//!
//! A database is input: anyone can hand us a file whose `block_0` is a view over an endless
//! recursive CTE, whose `frame` yields gigabyte texts, or whose `callstack.callstack` is a
//! generated column computing one. Every template and report would then evaluate that SQL
//! for as long as it likes. So each object the format names — `trace_entry_<N>`,
//! `block_<N>`, `callstack`, `frame`, `callstack_frame`, `callstack_frame_manifest`,
//! `dictionary`, `pt_snap_metadata`, the dataset shards' `pt_snap_block_reference`, and our
//! own `pt_snap_x_*` extension tables — must be, when present, an ordinary rowid table (not
//! a view, a virtual table or one's shadow table, nor `WITHOUT ROWID`) with every column the
//! queries read (for `pt_snap_x_*`, any columns, but `event_id` and `time_us` for
//! `pt_snap_x_event_time_<N>`), no generated or hidden column, and no
//! trigger. Other objects are the owner's business and are never read: unknown tables,
//! views and indexes are accepted, and so are indexes on the format's tables.
//!
//! What is left alone, and why it is harmless read-only:
//! * Index expressions and partial-index `WHERE` clauses are evaluated when rows are written,
//!   never when they are read: a query that uses such an index reads the stored keys. (An
//!   index whose entries disagree with its table gives wrong answers, as a corrupt file
//!   does; `PRAGMA integrity_check` would find it, but it evaluates every index expression
//!   and is never run on input. `PRAGMA quick_check`, which dataset validation runs,
//!   computes generated columns but not index expressions, so it runs after this check.)
//! * `CHECK`, `DEFAULT` and foreign-key clauses also act on writes only, and nothing here
//!   writes (`query_only`).
//! * Declared column types: SQLite stores any value in any column, so a type check proves
//!   nothing; values are validated where they are used.
//! * `COLLATE` clauses: an unknown collation fails the statement (`QUERY_FAILED`); a
//!   built-in one changes comparisons, not the cost.
//! * Planner statistics (`sqlite_stat1`/`sqlite_stat4`) may steer a query to a bad plan; that
//!   costs time, which the query deadline bounds.

use rusqlite::Connection;

use crate::reader::sqlite_message;

/// The columns the queries read from each object of the format, `None` when `name` is not
/// one. `pt_snap_metadata`'s columns are not required: a table missing some is reported as
/// `metadata_invalid` by [`crate::Metadata::read`], as the reference reports it.
fn required_columns(name: &str) -> Option<&'static [&'static str]> {
    let lower = name.to_ascii_lowercase();
    let device = |prefix: &str| {
        lower
            .strip_prefix(prefix)
            .is_some_and(|d| d.parse::<i64>().is_ok())
    };
    Some(match lower.as_str() {
        // The callstack column (`callstackId` in v2, `callstack` in v1) is the layout's
        // business: a mismatch is only an error for the templates that read it (§5.1).
        _ if device("trace_entry_") => &crate::schema::TRACE_COLUMNS,
        _ if device("block_") => &crate::schema::BLOCK_COLUMNS,
        "callstack" => &["id", "callstack"],
        "frame" => &["id", "filename", "line", "name"],
        "callstack_frame" => &["callstackId", "position", "frameId"],
        "callstack_frame_manifest" => &["callstackId", "frameCount"],
        "dictionary" => &["table", "column", "key", "value"],
        "pt_snap_metadata" => &[],
        "pt_snap_block_reference" => &["blockId", "stream", "allocCallstack", "freeCallstack"],
        _ if device("pt_snap_x_event_time_") => &crate::schema::EVENT_TIME_COLUMNS,
        _ if device("pt_snap_x_pool_") => &crate::schema::POOL_COLUMNS,
        "pt_snap_x_trace_buffer" => &["device", "overflowed", "max_entries"],
        // Our own extension tables (`pt_snap_x_replay_issues`, …): whatever their columns,
        // a reader that reads them must find plain tables too.
        _ if lower.starts_with("pt_snap_x_") => &[],
        _ => return None,
    })
}

/// Whether `name` is an object the SnapshotDB format defines (compared as SQLite compares
/// names, ignoring ASCII case).
pub fn is_format_object(name: &str) -> bool {
    required_columns(name).is_some()
}

/// Checks every format object of the connection's main database; `Err` says which object
/// is wrong and how, in a sentence for the `DATABASE_SCHEMA_INVALID` message.
///
/// Reads the schema only (`sqlite_master`, `PRAGMA table_list`, `PRAGMA table_xinfo`):
/// no view is evaluated and no virtual table module is loaded.
pub fn check_format_objects(conn: &Connection) -> Result<(), String> {
    let failed = |e: rusqlite::Error| sqlite_message(&e);
    let objects: Vec<(String, String, String)> = {
        let mut stmt = conn
            .prepare("SELECT type, name, tbl_name FROM main.sqlite_master")
            .map_err(failed)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                    r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                    r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                ))
            })
            .map_err(failed)?
            .collect::<rusqlite::Result<_>>()
            .map_err(failed)?;
        rows
    };
    let invalid = |what: String| Err(format!("Invalid database schema: {what}"));
    for (kind, name, table) in &objects {
        match kind.as_str() {
            "trigger" if is_format_object(table) => {
                return invalid(format!(
                    "trigger '{name}' on '{table}'; a SnapshotDB has no triggers."
                ));
            }
            "view" if is_format_object(name) => {
                return invalid(format!(
                    "'{name}' is a view; the SnapshotDB format defines it as a table."
                ));
            }
            "table" => {
                if let Some(columns) = required_columns(name) {
                    check_table(conn, name, columns)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// One format table: an ordinary rowid table with the columns the queries read, none of
/// them (nor any other) generated or hidden.
fn check_table(conn: &Connection, name: &str, columns: &[&str]) -> Result<(), String> {
    let invalid = |what: String| Err(format!("Invalid database schema: {what}"));
    let failed =
        |e: rusqlite::Error| format!("Invalid database schema: '{name}': {}", sqlite_message(&e));
    // `table_list` tells a virtual table apart even when its module is unknown (where
    // `table_xinfo` would fail), without connecting to it.
    let (kind, without_rowid): (String, bool) = conn
        .query_row(
            "SELECT type, wr FROM pragma_table_list(?1) WHERE schema = 'main'",
            [name],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(failed)?;
    match kind.as_str() {
        "table" => {}
        "virtual" => {
            return invalid(format!(
                "'{name}' is a virtual table; the SnapshotDB format defines it as a plain table."
            ))
        }
        other => {
            return invalid(format!(
                "'{name}' is a {other} table; the SnapshotDB format defines it as a plain table."
            ))
        }
    }
    if without_rowid {
        return invalid(format!(
            "'{name}' is a WITHOUT ROWID table; the SnapshotDB format defines a rowid table."
        ));
    }
    let mut stmt = conn
        .prepare("SELECT name, hidden FROM pragma_table_xinfo(?1, 'main')")
        .map_err(failed)?;
    let present: Vec<(String, i64)> = stmt
        .query_map([name], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(failed)?
        .collect::<rusqlite::Result<_>>()
        .map_err(failed)?;
    if let Some((column, hidden)) = present.iter().find(|(_, h)| *h != 0) {
        let what = match hidden {
            2 | 3 => "a generated column",
            _ => "a hidden column",
        };
        return invalid(format!(
            "column '{column}' of '{name}' is {what}; a SnapshotDB stores every column."
        ));
    }
    for want in columns {
        if !present.iter().any(|(c, _)| c.eq_ignore_ascii_case(want)) {
            return invalid(format!("'{name}' has no column '{want}'."));
        }
    }
    Ok(())
}
