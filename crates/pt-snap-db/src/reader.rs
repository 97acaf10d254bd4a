//! Read-only access to a SnapshotDB, ours or the reference's.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::check::check_format_objects;
use crate::{Metadata, MetadataProblem};

/// How callstacks are stored (spec §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallstackLayout {
    /// Inline `callstack` TEXT column in every trace table (import format 1).
    V1,
    /// `callstackId` in the trace tables, texts in a shared `callstack` table (formats 2, 3).
    V2,
}

impl CallstackLayout {
    pub fn name(self) -> &'static str {
        match self {
            Self::V1 => "v1",
            Self::V2 => "v2",
        }
    }
}

/// Why a file could not be opened as a SnapshotDB.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Not SQLite, or SQLite without a `dictionary` table (`DATABASE_SCHEMA_INVALID`).
    #[error("{0}")]
    SchemaInvalid(String),
    #[error("{}", sqlite_message(.0))]
    Sqlite(#[from] rusqlite::Error),
}

/// SQLite's own words for an error (`file is not a database`), which is what users and the
/// reference's envelopes show, rather than rusqlite's wrapper text.
pub fn sqlite_message(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqliteFailure(_, Some(msg)) => msg.clone(),
        _ => e.to_string(),
    }
}

/// The id range of one device's real events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceBounds {
    pub device: i64,
    /// `(first, last)` over ids ≥ 0; `None` when the device has no real event.
    pub events: Option<(i64, i64)>,
}

/// An open SnapshotDB.
#[derive(Debug)]
pub struct SnapshotDb {
    conn: Connection,
    devices: Vec<i64>,
}

impl SnapshotDb {
    /// Opens a database file read-only ([`open_readonly_connection`]); no statement run
    /// through it can write, and nothing is created beside the file.
    pub fn open_readonly(path: &Path) -> Result<Self, OpenError> {
        Self::from_connection(open_readonly_connection(path)?)
    }

    /// Opens a database image held in memory (a dropped `.db` file in the browser), read-only.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, OpenError> {
        Self::from_reader(bytes, bytes.len())
    }

    /// Opens the `len`-byte database image `image` yields, read-only, copied once into
    /// memory SQLite owns: where the image is not in this address space already (a browser
    /// `ArrayBuffer`), no intermediate copy is made.
    pub fn from_reader(image: impl std::io::Read, len: usize) -> Result<Self, OpenError> {
        let mut conn = Connection::open_in_memory()?;
        conn.deserialize_read_exact(rusqlite::MAIN_DB, image, len, true)?;
        conn.execute_batch("PRAGMA query_only = 1; PRAGMA trusted_schema = 0")?;
        Self::from_connection(conn)
    }

    /// Hands `f` the database's image (`sqlite3_serialize`): SQLite's own memory for an
    /// in-memory database, without a copy, else a fresh one.
    pub fn with_image<T>(&mut self, f: impl FnOnce(&[u8]) -> T) -> rusqlite::Result<T> {
        let image = self.conn.serialize(rusqlite::MAIN_DB)?;
        Ok(f(&image))
    }

    /// Wraps an open connection (e.g. a deserialized in-memory DB) after checking its schema:
    /// a `dictionary` table (the reference's test), then every object the format defines
    /// must be the plain table it defines ([`check_format_objects`]), so that no query
    /// evaluates SQL the file brought along.
    pub fn from_connection(conn: Connection) -> Result<Self, OpenError> {
        let tables: Vec<String> = {
            let mut stmt = conn
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
                .map_err(schema_error)?;
            let names = stmt
                .query_map([], |r| r.get(0))
                .map_err(schema_error)?
                .collect::<rusqlite::Result<_>>()
                .map_err(schema_error)?;
            names
        };
        if !tables.iter().any(|t| t == "dictionary") {
            return Err(OpenError::SchemaInvalid(
                "Invalid database schema: 'dictionary' table not found. \
                 This may not be a valid PyTorch memory snapshot database."
                    .into(),
            ));
        }
        check_format_objects(&conn).map_err(OpenError::SchemaInvalid)?;
        let mut devices: Vec<i64> = tables
            .iter()
            .filter_map(|t| t.strip_prefix("trace_entry_")?.parse().ok())
            .collect();
        devices.sort_unstable();
        Ok(SnapshotDb { conn, devices })
    }

    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// For connection-wide settings such as a progress handler.
    pub fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// Device ids with a trace table, ascending.
    pub fn devices(&self) -> &[i64] {
        &self.devices
    }

    pub fn metadata(&self) -> rusqlite::Result<Result<Metadata, MetadataProblem>> {
        Metadata::read(&self.conn)
    }

    /// Whether the database has a table of this name: our own extension tables are optional.
    fn has_table(&self, name: &str) -> rusqlite::Result<bool> {
        self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)",
            [name],
            |r| r.get(0),
        )
    }

    /// How many events a lenient replay could not reconcile (its issues), or `None` when the DB
    /// comes from a strict replay (every DB of the reference's, and ours without
    /// `--lenient`).
    pub fn lenient_replay_issues(&self) -> rusqlite::Result<Option<i64>> {
        if !self.has_table(crate::schema::REPLAY_ISSUES_TABLE)? {
            return Ok(None);
        }
        let sql = format!(
            "SELECT count(*) FROM {}",
            crate::schema::REPLAY_ISSUES_TABLE
        );
        self.conn.query_row(&sql, [], |r| r.get(0)).map(Some)
    }

    /// The `device_free` our import kept for each `oom` event of `device`, by event id
    /// (`None` inside: the entry had none); `None` when the DB has no [`schema::OOM_TABLE`]
    /// (made by the reference or an older pt-snap, or a file without OOMs).
    ///
    /// [`schema::OOM_TABLE`]: crate::schema::OOM_TABLE
    pub fn oom_device_free(&self, device: usize) -> rusqlite::Result<Option<Vec<OomDeviceFree>>> {
        if !self.has_table(crate::schema::OOM_TABLE)? {
            return Ok(None);
        }
        let sql = format!(
            "SELECT event_id, device_free FROM {} WHERE device = ? ORDER BY event_id",
            crate::schema::OOM_TABLE
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map([device as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map(Some)
    }

    /// What the file said about `device`'s trace buffer (`pt_snap_x_trace_buffer`):
    /// `(overflowed, max_entries)`; `None` without a row (the file said nothing, or the
    /// database was made by the reference or an older pt-snap). Values that are no integer
    /// (a hand-made file) are unknown.
    pub fn trace_buffer(
        &self,
        device: i64,
    ) -> rusqlite::Result<Option<(Option<bool>, Option<i64>)>> {
        if !self.has_table(crate::schema::TRACE_BUFFER_TABLE)? {
            return Ok(None);
        }
        let sql = format!(
            "SELECT overflowed, max_entries FROM {} WHERE device = ?",
            crate::schema::TRACE_BUFFER_TABLE
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = stmt.query([device])?;
        Ok(match rows.next()? {
            Some(r) => Some((
                r.get_ref(0)?.as_i64().ok().map(|v| v != 0),
                r.get_ref(1)?.as_i64().ok(),
            )),
            None => None,
        })
    }

    /// Whether `device` has our [`crate::schema::pool_table`].
    pub fn has_pool_table(&self, device: i64) -> rusqlite::Result<bool> {
        self.has_table(&format!("pt_snap_x_pool_{device}"))
    }

    /// Whether `device` has event times, or why it has none: no
    /// [`schema::event_time_table`] (a database of the reference's, or of a pt-snap that did
    /// not keep times), or an empty one (the trace recorded no `time_us`).
    ///
    /// [`schema::event_time_table`]: crate::schema::event_time_table
    pub fn times_available(&self, device: i64) -> rusqlite::Result<Result<(), NoTimes>> {
        let table = format!("pt_snap_x_event_time_{device}");
        if !self.has_table(&table)? {
            return Ok(Err(NoTimes::NotInDatabase));
        }
        let any: bool =
            self.conn
                .query_row(&format!("SELECT EXISTS (SELECT 1 FROM {table})"), [], |r| {
                    r.get(0)
                })?;
        Ok(if any {
            Ok(())
        } else {
            Err(NoTimes::NotInTrace)
        })
    }

    /// The `time_us` of the events `ids` of `device` (`None` for an id without one: a
    /// synthetic event, an entry without `time_us`, an id the trace does not have), or why
    /// the device has no times ([`SnapshotDb::times_available`]). A value that is no integer
    /// (a hand-made file) is no time.
    pub fn event_times(
        &self,
        device: i64,
        ids: &[i64],
    ) -> rusqlite::Result<Result<Vec<Option<i64>>, NoTimes>> {
        if let Err(why) = self.times_available(device)? {
            return Ok(Err(why));
        }
        let mut stmt = self.conn.prepare(&format!(
            "SELECT time_us FROM pt_snap_x_event_time_{device} WHERE event_id = ?"
        ))?;
        let mut times = Vec::with_capacity(ids.len());
        for &id in ids {
            let mut rows = stmt.query([id])?;
            times.push(match rows.next()? {
                Some(r) => r.get_ref(0)?.as_i64().ok(),
                None => None,
            });
        }
        Ok(Ok(times))
    }

    /// Real-event id bounds of every device.
    pub fn bounds(&self) -> rusqlite::Result<Vec<DeviceBounds>> {
        self.devices
            .iter()
            .map(|&device| {
                Ok(DeviceBounds {
                    device,
                    events: self.device_bounds(device)?,
                })
            })
            .collect()
    }

    /// `(first, last)` real-event id of one device; `None` when it has no real event.
    pub fn device_bounds(&self, device: i64) -> rusqlite::Result<Option<(i64, i64)>> {
        // One subquery per bound: SQLite answers a lone min() or max() of the key from the
        // b-tree's ends, but both in one SELECT by scanning every row.
        let sql = format!(
            "SELECT (SELECT min(id) FROM trace_entry_{device} WHERE id >= 0), \
             (SELECT max(id) FROM trace_entry_{device} WHERE id >= 0)"
        );
        let (lo, hi): (Option<i64>, Option<i64>) = self
            .conn
            .query_row(&sql, [], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(lo.zip(hi))
    }

    /// Detects the callstack layout; `Err` explains a mixed or unknown layout.
    pub fn layout(&self) -> rusqlite::Result<Result<CallstackLayout, String>> {
        let has_callstack_table: bool = self.conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'callstack'",
            [],
            |r| r.get::<_, i64>(0).map(|n| n > 0),
        )?;
        let mut layouts = Vec::new();
        for &d in &self.devices {
            let mut stmt = self.conn.prepare(&format!(
                "SELECT name FROM pragma_table_info('trace_entry_{d}')"
            ))?;
            let cols: Vec<String> = stmt
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let has = |c: &str| cols.iter().any(|x| x == c);
            layouts.push(match (has("callstackId"), has("callstack")) {
                (true, false) if has_callstack_table => Some(CallstackLayout::V2),
                (false, true) if !has_callstack_table => Some(CallstackLayout::V1),
                _ => None,
            });
        }
        let first = layouts.first().copied().flatten();
        Ok(match first {
            Some(l) if layouts.iter().all(|x| *x == Some(l)) => Ok(l),
            // No trace table tells which layout it is; say so in the reference's words.
            _ if self.devices.is_empty() => Err(match self.metadata()? {
                Ok(m) => format!(
                    "Incompatible callstack layout: pt_snap_metadata.import_format_version is {} \
                     but the database structure is unrecognized.",
                    m.import_format_version
                ),
                Err(_) => {
                    "Incompatible callstack layout: the database has no trace tables.".to_owned()
                }
            }),
            _ => Err("trace tables have mixed or unknown callstack layouts".to_owned()),
        })
    }
}

/// Opens a database file for reading only, as every reader of a standalone SnapshotDB does
/// (the analyzer and its split-scan connections, `focus`, `overview`, `metadata`, the
/// import's reuse check): `SQLITE_OPEN_READ_ONLY`, `query_only`, and `trusted_schema`
/// off (SQL stored in the file may call no function that is not innocuous).
///
/// A read-only connection to a WAL-mode database still creates the `-wal` and `-shm` files
/// beside it, and cannot remove them when it closes. So when the header says WAL (bytes 18
/// and 19 are 2) and there is no `-wal` file with content, the file is opened `immutable`:
/// no locks and no side files, which is exact since everything committed is in the main
/// file. When a non-empty `-wal` exists, the database has commits that are not yet
/// checkpointed into the main file (or a writer is at work): `immutable` would read a stale
/// or torn image, so it is opened normally, and the side files are the writer's.
pub fn open_readonly_connection(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = if is_wal_without_log(path) {
        Connection::open_with_flags(
            format!("{}?mode=ro&immutable=1", file_uri(path)),
            flags | OpenFlags::SQLITE_OPEN_URI,
        )?
    } else {
        Connection::open_with_flags(path, flags)?
    };
    conn.execute_batch("PRAGMA query_only = 1; PRAGMA trusted_schema = 0")?;
    Ok(conn)
}

/// The first 16 bytes of every SQLite database file.
pub const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Whether `head`, a file's first bytes, starts with [`SQLITE_HEADER`] (a shorter one does
/// not): what every command and the browser read as a database rather than a snapshot,
/// whatever its name.
pub fn is_sqlite_header(head: &[u8]) -> bool {
    head.starts_with(SQLITE_HEADER)
}

/// [`is_sqlite_header`] of the file at `path`.
pub fn is_sqlite_file(path: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut head = Vec::with_capacity(SQLITE_HEADER.len());
    std::fs::File::open(path)?
        .take(SQLITE_HEADER.len() as u64)
        .read_to_end(&mut head)?;
    Ok(is_sqlite_header(&head))
}

/// The header says WAL mode, and no `-wal` file holds frames.
fn is_wal_without_log(path: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 20];
    let wal = std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .is_ok()
        && header.starts_with(SQLITE_HEADER)
        && header[18] == 2
        && header[19] == 2;
    if !wal {
        return false;
    }
    let mut log = path.as_os_str().to_owned();
    log.push("-wal");
    !std::fs::metadata(&log).is_ok_and(|m| m.len() > 0)
}

/// `file:` URI of a path (SQLite's URI filenames): every byte but unreserved characters and
/// `/` percent-encoded, so `?`, `#`, `%` and spaces in names stay part of the path.
pub fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    let bytes = path.as_os_str().as_encoded_bytes();
    if bytes.starts_with(b"//") {
        // `file://host/...` would read as an authority: an empty one first.
        uri.push_str("//");
    }
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

fn schema_error(e: rusqlite::Error) -> OpenError {
    OpenError::SchemaInvalid(sqlite_message(&e))
}

/// Why a device has no event times (the trace entries' `time_us`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoTimes {
    /// The database keeps times, and the trace recorded none (torch_npu, torch before ~2.2).
    NotInTrace,
    /// The database keeps no times: made by pt-snap-cli 0.4.1 (its format has none) or by a
    /// pt-snap that did not keep them; importing the snapshot again with pt-snap
    /// (`import --force`) adds them.
    NotInDatabase,
    /// A sharded dataset: its shards carry no times.
    Dataset,
}

impl NoTimes {
    /// The reason as the JSON outputs spell it.
    pub fn name(self) -> &'static str {
        match self {
            NoTimes::NotInTrace => "not_in_trace",
            NoTimes::NotInDatabase => "not_in_database",
            NoTimes::Dataset => "dataset",
        }
    }

    /// The reason in a sentence, for text outputs.
    pub fn sentence(self) -> &'static str {
        match self {
            NoTimes::NotInTrace => {
                "the trace recorded no time_us (torch_npu and torch before ~2.2 record none)"
            }
            NoTimes::NotInDatabase => {
                "the database keeps no event times (made by pt-snap-cli 0.4.1 or an older \
                 pt-snap; `pt-snap import --force SNAPSHOT` adds them)"
            }
            NoTimes::Dataset => "sharded datasets keep no event times",
        }
    }
}

/// `(event_id, device_free)` of one `oom` event, as `pt_snap_x_oom` keeps it.
pub type OomDeviceFree = (i64, Option<i64>);
