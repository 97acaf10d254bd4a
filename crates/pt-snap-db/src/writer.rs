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
        conn.execute_batch(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; \
             PRAGMA cache_size = -16384; PRAGMA temp_store = MEMORY; BEGIN;",
        )?;
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

    pub fn trace(&mut self, device: usize, r: &TraceRecord) -> rusqlite::Result<()> {
        let slot = self.slot(device);
        self.trace[slot].execute(rusqlite::params![
            r.id,
            r.action,
            r.address,
            r.size,
            r.stream,
            r.allocated,
            r.active,
            r.reserved,
            r.callstack_id
        ])?;
        Ok(())
    }

    pub fn block(&mut self, device: usize, r: &BlockRecord) -> rusqlite::Result<()> {
        let slot = self.slot(device);
        self.block[slot].execute(rusqlite::params![
            r.id,
            r.address,
            r.size,
            r.requested_size,
            r.state,
            r.alloc_event_id,
            r.free_event_id
        ])?;
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
        let mut sql = String::new();
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
