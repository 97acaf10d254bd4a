//! Bulk writing of a fresh SnapshotDB.

use rusqlite::{types::ToSqlOutput, Connection, Statement, ToSql};

use crate::schema;
use crate::Metadata;

/// The `action` column holds the integer code of a known action, and (like the reference)
/// the action's name as TEXT for any other action (`free`, `snapshot`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionValue<'a> {
    Code(i64),
    Text(&'a str),
}

impl ToSql for ActionValue<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match *self {
            ActionValue::Code(c) => ToSqlOutput::from(c),
            ActionValue::Text(t) => ToSqlOutput::from(t),
        })
    }
}

/// A `trace_entry_<d>` row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceRecord<'a> {
    pub id: i64,
    pub action: ActionValue<'a>,
    pub address: i64,
    pub size: i64,
    pub stream: i64,
    pub allocated: i64,
    pub active: i64,
    pub reserved: i64,
    pub callstack_id: i64,
}

/// A `block_<d>` row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRecord {
    pub id: i64,
    pub address: i64,
    pub size: i64,
    pub requested_size: i64,
    pub state: i64,
    pub alloc_event_id: i64,
    pub free_event_id: i64,
}

/// Page cache while rows are appended (negative: KiB). Appending in key order touches few
/// pages, so more would only add to the import's peak memory.
const CACHE_KIB: i64 = -16384;

/// Where `CREATE INDEX` spills its sort runs. On a native build, files: the sorter's runs then
/// live in the OS page cache, which costs ~20% less CPU than SQLite's in-memory journal
/// (measured on the 1M-event benchmark), and only with temp files does SQLite hand sorting to
/// worker threads (`PRAGMA threads`, which a caller may set). The browser build has no temp
/// files.
#[cfg(not(target_arch = "wasm32"))]
const TEMP_STORE: &str = "FILE";
#[cfg(target_arch = "wasm32")]
const TEMP_STORE: &str = "MEMORY";

/// Page cache while indexes are built, when the connection allows sorter worker threads.
/// SQLite sorts in runs of at most the cache size; with smaller runs a worker thread sorts
/// one while the main thread reads the next, and the merge is cheap. Without workers the
/// append-time cache stays.
const THREADED_INDEX_CACHE_KIB: i64 = -4096;

/// Fills an empty database with one import, in a single transaction.
///
/// Rows go in through prepared statements; indexes, the dictionary and the metadata row are
/// written by [`Writer::finish`], which commits. Dropping a `Writer` without finishing rolls
/// back, but callers should discard the file anyway: the journal is off for speed.
pub struct Writer<'c> {
    conn: &'c Connection,
    devices: Vec<usize>,
    trace: Vec<Statement<'c>>,
    block: Vec<Statement<'c>>,
    callstack: Statement<'c>,
    frame: Statement<'c>,
    callstack_frame: Statement<'c>,
    manifest: Statement<'c>,
    committed: bool,
}

impl<'c> Writer<'c> {
    /// Creates the tables of `devices` (ascending device ids) and opens the transaction.
    pub fn begin(conn: &'c Connection, devices: &[usize]) -> rusqlite::Result<Self> {
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; \
             PRAGMA cache_size = {CACHE_KIB}; PRAGMA temp_store = {TEMP_STORE}; BEGIN;"
        ))?;
        let mut ddl = String::new();
        for &d in devices {
            ddl += &schema::create_trace_table(d);
            ddl += ";\n";
            ddl += &schema::create_block_table(d);
            ddl += ";\n";
        }
        ddl += schema::CREATE_SHARED_TABLES;
        ddl += schema::CREATE_METADATA_TABLE;
        conn.execute_batch(&ddl)?;
        let prepare_all = |sql: fn(usize) -> String| -> rusqlite::Result<Vec<Statement<'c>>> {
            devices.iter().map(|&d| conn.prepare(&sql(d))).collect()
        };
        Ok(Writer {
            conn,
            devices: devices.to_vec(),
            trace: prepare_all(|d| {
                format!("INSERT INTO trace_entry_{d} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
            })?,
            block: prepare_all(|d| format!("INSERT INTO block_{d} VALUES (?, ?, ?, ?, ?, ?, ?)"))?,
            callstack: conn.prepare("INSERT INTO callstack VALUES (?, ?)")?,
            frame: conn.prepare("INSERT INTO frame VALUES (?, ?, ?, ?)")?,
            callstack_frame: conn.prepare("INSERT INTO callstack_frame VALUES (?, ?, ?)")?,
            manifest: conn.prepare("INSERT INTO callstack_frame_manifest VALUES (?, ?)")?,
            committed: false,
        })
    }

    fn slot(&self, device: usize) -> usize {
        self.devices
            .iter()
            .position(|&d| d == device)
            .expect("rows of a device the writer was not created for")
    }

    // Rows are bound one typed parameter at a time (`raw_bind_parameter`): a million rows
    // through `params!` pay for dynamic dispatch and a parameter-count check on every row.
    pub fn trace(&mut self, device: usize, r: &TraceRecord) -> rusqlite::Result<()> {
        let slot = self.slot(device);
        let st = &mut self.trace[slot];
        st.raw_bind_parameter(1, r.id)?;
        st.raw_bind_parameter(2, r.action)?;
        for (i, v) in [
            r.address,
            r.size,
            r.stream,
            r.allocated,
            r.active,
            r.reserved,
            r.callstack_id,
        ]
        .into_iter()
        .enumerate()
        {
            st.raw_bind_parameter(i + 3, v)?;
        }
        st.raw_execute()?;
        Ok(())
    }

    pub fn block(&mut self, device: usize, r: &BlockRecord) -> rusqlite::Result<()> {
        let slot = self.slot(device);
        let st = &mut self.block[slot];
        for (i, v) in [
            r.id,
            r.address,
            r.size,
            r.requested_size,
            r.state,
            r.alloc_event_id,
            r.free_event_id,
        ]
        .into_iter()
        .enumerate()
        {
            st.raw_bind_parameter(i + 1, v)?;
        }
        st.raw_execute()?;
        Ok(())
    }

    /// A callstack: its rendered text and its frame ids, innermost (position 0) first.
    pub fn callstack(&mut self, id: i64, text: &str, frame_ids: &[i64]) -> rusqlite::Result<()> {
        self.callstack.execute(rusqlite::params![id, text])?;
        for (position, frame) in frame_ids.iter().enumerate() {
            self.callstack_frame
                .execute(rusqlite::params![id, position as i64, frame])?;
        }
        self.manifest
            .execute(rusqlite::params![id, frame_ids.len() as i64])?;
        Ok(())
    }

    pub fn frame(
        &mut self,
        id: i64,
        filename: &str,
        line: i64,
        name: &str,
    ) -> rusqlite::Result<()> {
        self.frame
            .execute(rusqlite::params![id, filename, line, name])?;
        Ok(())
    }

    /// Builds the indexes, writes the dictionary and the metadata row, and commits.
    pub fn finish(mut self, metadata: &Metadata) -> rusqlite::Result<()> {
        let workers: i64 = self.conn.query_row("PRAGMA threads", [], |r| r.get(0))?;
        let mut sql = if workers > 0 {
            format!("PRAGMA cache_size = {THREADED_INDEX_CACHE_KIB};\n")
        } else {
            String::new()
        };
        for &d in &self.devices {
            sql += &schema::create_device_indexes(d);
        }
        sql += schema::CREATE_SHARED_INDEXES;
        self.conn.execute_batch(&sql)?;
        {
            let mut dict = self
                .conn
                .prepare("INSERT INTO dictionary VALUES (?, ?, ?, ?)")?;
            for &d in &self.devices {
                let trace = schema::trace_table(d);
                for (code, name) in schema::ACTIONS {
                    dict.execute(rusqlite::params![trace, "action", code.to_string(), name])?;
                }
                let block = schema::block_table(d);
                for (code, name) in schema::BLOCK_STATES {
                    dict.execute(rusqlite::params![block, "state", code.to_string(), name])?;
                }
            }
        }
        metadata.insert(self.conn)?;
        self.conn
            .execute_batch("COMMIT; PRAGMA journal_mode = DELETE;")?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for Writer<'_> {
    fn drop(&mut self) {
        if !self.committed {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}
