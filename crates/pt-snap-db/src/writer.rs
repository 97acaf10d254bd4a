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
/// pages, so more would only add to the import's peak memory: 16 MiB imported the 1M-event
/// benchmark no faster natively (2.25–2.55 s against 2.38–2.43 s) and held 7 MiB more.
const CACHE_KIB: i64 = -4096;

/// Where `CREATE INDEX` spills its sort runs: files, on every target. SQLite's sorter only
/// spills when temp files are files; with `temp_store = MEMORY` it sorts a whole index as
/// one in-memory list of separately allocated records, which took twice as long on the
/// 10M-event benchmark's six indexes natively (28.4 s against 14.3 s; more in wasm, where
/// each record is a call into the allocator). Natively the runs live in the OS page cache;
/// in the browser in temp files of the database's VFS (a slot of its OPFS pool, or memory).
const TEMP_STORE: &str = "FILE";

/// Page cache while indexes are built, which is also the size of a sort run. 8 MiB runs
/// were as fast as 16–64 MiB ones, in less memory.
const INDEX_CACHE_KIB: i64 = -8192;

/// When an import builds its database's indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Indexes {
    /// With the rows, in the import's transaction: the database is whole when the import
    /// returns (the CLI).
    WithRows,
    /// The devices' indexes afterwards, by the caller, one at a time ([`missing_indexes`],
    /// [`build_index`]): the browser shows the database first and builds them between the
    /// page's questions. The templates' answers do not depend on them (each orders and
    /// breaks its ties itself); they make them fast. The frames' index is still built with
    /// the rows: it is `UNIQUE`, so an input it refuses is refused by the import, as the
    /// CLI's is, and never by a later step on a database already shown.
    Deferred,
}

/// One `CREATE INDEX` statement per line of `sql`.
fn statements(sql: &str) -> impl Iterator<Item = String> + '_ {
    sql.lines()
        .map(|l| l.trim_end_matches(';').to_owned())
        .filter(|l| !l.is_empty())
}

/// Every index of a database of `devices`, one `CREATE INDEX` statement each, in the order
/// they are built: each device's trace counters (the peaks) and blocks, then the frames.
pub fn index_statements(devices: &[usize]) -> Vec<String> {
    devices
        .iter()
        .map(|&d| schema::create_device_indexes(d))
        .chain([schema::CREATE_SHARED_INDEXES.to_owned()])
        .flat_map(|sql| statements(&sql).collect::<Vec<_>>())
        .collect()
}

/// Those of [`index_statements`] that `conn`'s database does not have, in that order.
pub fn missing_indexes(conn: &Connection, devices: &[usize]) -> rusqlite::Result<Vec<String>> {
    let mut exists =
        conn.prepare("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?")?;
    let mut missing = Vec::new();
    for statement in index_statements(devices) {
        if !exists.exists([index_name(&statement)])? {
            missing.push(statement);
        }
    }
    Ok(missing)
}

/// The name a `CREATE INDEX` statement of [`index_statements`] gives its index.
pub fn index_name(statement: &str) -> &str {
    (statement.split_whitespace())
        .skip_while(|w| *w != "INDEX")
        .nth(1)
        .unwrap_or_default()
}

/// Builds one index of [`missing_indexes`] as an import would (its cache size, sort runs in
/// temp files), and gives the connection its cache size and temp store back.
pub fn build_index(conn: &Connection, statement: &str) -> rusqlite::Result<()> {
    let cache: i64 = conn.query_row("PRAGMA cache_size", [], |r| r.get(0))?;
    let temp_store: i64 = conn.query_row("PRAGMA temp_store", [], |r| r.get(0))?;
    conn.execute_batch(&format!(
        "PRAGMA cache_size = {INDEX_CACHE_KIB}; PRAGMA temp_store = {TEMP_STORE};"
    ))?;
    let built = conn.execute_batch(statement);
    conn.execute_batch(&format!(
        "PRAGMA cache_size = {cache}; PRAGMA temp_store = {temp_store};"
    ))?;
    built
}

/// Rows per multi-row `INSERT` in [`Writer::traces`] and [`Writer::blocks`]: one statement
/// execution per row costs about as much again as the row itself.
const BATCH: usize = 64;

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
    trace_batch: Vec<Statement<'c>>,
    block_batch: Vec<Statement<'c>>,
    time: Vec<Statement<'c>>,
    time_batch: Vec<Statement<'c>>,
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
            ddl += &schema::create_event_time_table(d);
            ddl += ";\n";
        }
        ddl += schema::CREATE_SHARED_TABLES;
        ddl += schema::CREATE_METADATA_TABLE;
        conn.execute_batch(&ddl)?;
        let prepare_all = |sql: &dyn Fn(usize) -> String| -> rusqlite::Result<Vec<Statement<'c>>> {
            devices.iter().map(|&d| conn.prepare(&sql(d))).collect()
        };
        let rows = |n: usize, row: &str| vec![row; n].join(", ");
        Ok(Writer {
            conn,
            devices: devices.to_vec(),
            trace: prepare_all(&|d| format!("INSERT INTO trace_entry_{d} VALUES {TRACE_ROW}"))?,
            block: prepare_all(&|d| format!("INSERT INTO block_{d} VALUES {BLOCK_ROW}"))?,
            trace_batch: prepare_all(&|d| {
                format!(
                    "INSERT INTO trace_entry_{d} VALUES {}",
                    rows(BATCH, TRACE_ROW)
                )
            })?,
            block_batch: prepare_all(&|d| {
                format!("INSERT INTO block_{d} VALUES {}", rows(BATCH, BLOCK_ROW))
            })?,
            time: prepare_all(&|d| {
                format!("INSERT INTO {} VALUES (?, ?)", schema::event_time_table(d))
            })?,
            time_batch: prepare_all(&|d| {
                format!(
                    "INSERT INTO {} VALUES {}",
                    schema::event_time_table(d),
                    rows(BATCH, "(?, ?)")
                )
            })?,
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
        let st = &mut self.trace[slot];
        bind_trace(st, 0, r)?;
        st.raw_execute()?;
        Ok(())
    }

    /// Many `trace_entry_<d>` rows, inserted in the order given, [`BATCH`] per statement.
    pub fn traces<'r>(
        &mut self,
        device: usize,
        rows: impl IntoIterator<Item = TraceRecord<'r>>,
    ) -> rusqlite::Result<()> {
        let slot = self.slot(device);
        let (batch, one) = (&mut self.trace_batch[slot], &mut self.trace[slot]);
        insert_batched(batch, one, TRACE_COLUMNS, rows, bind_trace)
    }

    pub fn block(&mut self, device: usize, r: &BlockRecord) -> rusqlite::Result<()> {
        let slot = self.slot(device);
        let st = &mut self.block[slot];
        bind_block(st, 0, r)?;
        st.raw_execute()?;
        Ok(())
    }

    /// Many `block_<d>` rows, inserted in the order given, [`BATCH`] per statement.
    pub fn blocks(
        &mut self,
        device: usize,
        rows: impl IntoIterator<Item = BlockRecord>,
    ) -> rusqlite::Result<()> {
        let slot = self.slot(device);
        let (batch, one) = (&mut self.block_batch[slot], &mut self.block[slot]);
        insert_batched(batch, one, BLOCK_COLUMNS, rows, bind_block)
    }

    /// `(event_id, time_us)` rows of [`schema::event_time_table`], inserted in the order
    /// given (ascending ids appends), [`BATCH`] per statement. Every device's table exists
    /// from [`Writer::begin`] on; a device whose trace has no times gets no rows.
    pub fn event_times(
        &mut self,
        device: usize,
        rows: impl IntoIterator<Item = (i64, i64)>,
    ) -> rusqlite::Result<()> {
        let slot = self.slot(device);
        let (batch, one) = (&mut self.time_batch[slot], &mut self.time[slot]);
        insert_batched(batch, one, 2, rows, |st, after, &(id, time)| {
            st.raw_bind_parameter(after + 1, id)?;
            st.raw_bind_parameter(after + 2, time)
        })
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

    /// Marks the DB as made by a lenient replay, with what it set aside: `(device,
    /// event_id, kind, message)` rows of [`schema::REPLAY_ISSUES_TABLE`].
    pub fn replay_issues<'r>(
        &mut self,
        issues: impl IntoIterator<Item = (usize, i64, &'r str, &'r str)>,
    ) -> rusqlite::Result<()> {
        self.conn
            .execute_batch(schema::CREATE_REPLAY_ISSUES_TABLE)?;
        let mut insert = self.conn.prepare(&format!(
            "INSERT INTO {} VALUES (?, ?, ?, ?)",
            schema::REPLAY_ISSUES_TABLE
        ))?;
        for (device, event_id, kind, message) in issues {
            insert.execute(rusqlite::params![device as i64, event_id, kind, message])?;
        }
        Ok(())
    }

    /// Writes [`schema::OOM_TABLE`]: one `(device, event_id, device_free)` row per `oom`
    /// event of the imported devices. The caller calls it only when there is at least one.
    pub fn oom_events(
        &mut self,
        rows: impl IntoIterator<Item = (usize, i64, Option<i64>)>,
    ) -> rusqlite::Result<()> {
        self.conn.execute_batch(schema::CREATE_OOM_TABLE)?;
        let mut insert = self.conn.prepare(&format!(
            "INSERT INTO {} VALUES (?, ?, ?)",
            schema::OOM_TABLE
        ))?;
        for (device, event_id, device_free) in rows {
            insert.execute(rusqlite::params![device as i64, event_id, device_free])?;
        }
        Ok(())
    }

    /// `(event_id, segment_type, pool)` rows of [`schema::pool_table`], in ascending ids;
    /// the table is made only for a device with rows.
    pub fn pools<'r>(
        &mut self,
        device: usize,
        rows: impl IntoIterator<Item = (i64, Option<&'r str>, Option<(i64, i64)>)>,
    ) -> rusqlite::Result<()> {
        let mut rows = rows.into_iter().peekable();
        if rows.peek().is_none() {
            return Ok(());
        }
        self.conn
            .execute_batch(&schema::create_pool_table(device))?;
        let table = schema::pool_table(device);
        let row = "(?, ?, ?, ?)";
        let mut batch = self.conn.prepare(&format!(
            "INSERT INTO {table} VALUES {}",
            vec![row; BATCH].join(", ")
        ))?;
        let mut one = self
            .conn
            .prepare(&format!("INSERT INTO {table} VALUES {row}"))?;
        insert_batched(
            &mut batch,
            &mut one,
            4,
            rows,
            |st, after, (id, kind, pool)| {
                st.raw_bind_parameter(after + 1, id)?;
                st.raw_bind_parameter(after + 2, kind)?;
                st.raw_bind_parameter(after + 3, pool.map(|p| p.0))?;
                st.raw_bind_parameter(after + 4, pool.map(|p| p.1))
            },
        )
    }

    /// `(device, overflowed, max_entries)` rows of [`schema::TRACE_BUFFER_TABLE`]; the table
    /// is made only when there are rows.
    pub fn trace_buffers(
        &mut self,
        rows: &[(usize, Option<bool>, Option<i64>)],
    ) -> rusqlite::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        self.conn.execute_batch(schema::CREATE_TRACE_BUFFER_TABLE)?;
        let mut insert = self.conn.prepare(&format!(
            "INSERT INTO {} VALUES (?, ?, ?)",
            schema::TRACE_BUFFER_TABLE
        ))?;
        for (device, overflowed, max_entries) in rows {
            insert.execute(rusqlite::params![*device as i64, overflowed, max_entries])?;
        }
        Ok(())
    }

    /// Writes the dictionary and the metadata row and commits; with [`Indexes::WithRows`]
    /// the indexes first, in the same transaction.
    pub fn finish(mut self, metadata: &Metadata, indexes: Indexes) -> rusqlite::Result<()> {
        let with_rows = match indexes {
            Indexes::WithRows => index_statements(&self.devices),
            Indexes::Deferred => statements(schema::CREATE_SHARED_INDEXES).collect(),
        };
        let mut sql = format!("PRAGMA cache_size = {INDEX_CACHE_KIB};\n");
        for statement in with_rows {
            sql += &statement;
            sql += ";\n";
        }
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

/// `rows` in the order given: [`BATCH`] at a time through `batch` (a statement of `BATCH`
/// rows of `columns` parameters each), the rest one by one through `one`. `bind` binds a
/// row's values after the first `after` parameters.
fn insert_batched<R>(
    batch: &mut Statement<'_>,
    one: &mut Statement<'_>,
    columns: usize,
    rows: impl IntoIterator<Item = R>,
    bind: impl Fn(&mut Statement<'_>, usize, &R) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    let mut pending = Vec::with_capacity(BATCH);
    for r in rows {
        pending.push(r);
        if pending.len() == BATCH {
            for (i, r) in pending.iter().enumerate() {
                bind(batch, i * columns, r)?;
            }
            batch.raw_execute()?;
            pending.clear();
        }
    }
    for r in &pending {
        bind(one, 0, r)?;
        one.raw_execute()?;
    }
    Ok(())
}

const TRACE_ROW: &str = "(?, ?, ?, ?, ?, ?, ?, ?, ?)";
const TRACE_COLUMNS: usize = 9;
const BLOCK_ROW: &str = "(?, ?, ?, ?, ?, ?, ?)";
const BLOCK_COLUMNS: usize = 7;

// Rows are bound one typed parameter at a time (`raw_bind_parameter`): a million rows
// through `params!` pay for dynamic dispatch and a parameter-count check on every row.

/// Binds `r` to parameters `after + 1 ..= after + 9`.
fn bind_trace(st: &mut Statement<'_>, after: usize, r: &TraceRecord) -> rusqlite::Result<()> {
    st.raw_bind_parameter(after + 1, r.id)?;
    st.raw_bind_parameter(after + 2, r.action)?;
    let rest = [
        r.address,
        r.size,
        r.stream,
        r.allocated,
        r.active,
        r.reserved,
        r.callstack_id,
    ];
    for (i, v) in rest.into_iter().enumerate() {
        st.raw_bind_parameter(after + 3 + i, v)?;
    }
    Ok(())
}

/// Binds `r` to parameters `after + 1 ..= after + 7`.
fn bind_block(st: &mut Statement<'_>, after: usize, r: &BlockRecord) -> rusqlite::Result<()> {
    let values = [
        r.id,
        r.address,
        r.size,
        r.requested_size,
        r.state,
        r.alloc_event_id,
        r.free_event_id,
    ];
    for (i, v) in values.into_iter().enumerate() {
        st.raw_bind_parameter(after + 1 + i, v)?;
    }
    Ok(())
}

impl Drop for Writer<'_> {
    fn drop(&mut self) {
        if !self.committed {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Batched inserts write exactly the rows given, in order, across whole batches and the
    /// remainder, with text actions and on more than one device.
    #[test]
    fn batched_rows_equal_row_by_row_rows() {
        let n = 2 * BATCH as i64 + 22;
        let trace = |i: i64| TraceRecord {
            id: i - 3,
            action: if i % 10 == 0 {
                ActionValue::Text("snapshot")
            } else {
                ActionValue::Code(i % 9)
            },
            address: i << 40,
            size: i * 512,
            stream: -i,
            allocated: i * 3,
            active: i * 5,
            reserved: i * 7,
            callstack_id: i % 4,
        };
        let block = |i: i64| BlockRecord {
            id: i - 3,
            address: i << 20,
            size: i,
            requested_size: i - 1,
            state: i % 3 - 1,
            alloc_event_id: i * 2,
            free_event_id: -i,
        };
        let time = |i: i64| (i * 3, 1_757_253_255_215_904 + i * i);
        let dump = |batched: bool| {
            let conn = Connection::open_in_memory().unwrap();
            let mut w = Writer::begin(&conn, &[0, 2]).unwrap();
            for d in [0, 2] {
                if batched {
                    w.traces(d, (0..n).map(trace)).unwrap();
                    w.blocks(d, (0..n).map(block)).unwrap();
                    w.event_times(d, (0..n).map(time)).unwrap();
                } else {
                    (0..n).for_each(|i| w.trace(d, &trace(i)).unwrap());
                    (0..n).for_each(|i| w.block(d, &block(i)).unwrap());
                    (0..n).for_each(|i| w.event_times(d, [time(i)]).unwrap());
                }
            }
            // Read inside the writer's transaction: dropping it unfinished rolls back.
            let mut rows = Vec::new();
            for t in [
                "trace_entry_0",
                "trace_entry_2",
                "block_0",
                "block_2",
                "pt_snap_x_event_time_0",
                "pt_snap_x_event_time_2",
            ] {
                let mut st = conn
                    .prepare(&format!("SELECT * FROM {t} ORDER BY rowid"))
                    .unwrap();
                let cols = st.column_count();
                let got: Vec<String> = st
                    .query_map([], |r| {
                        (0..cols)
                            .map(|c| {
                                r.get::<_, rusqlite::types::Value>(c)
                                    .map(|v| format!("{v:?}"))
                            })
                            .collect::<rusqlite::Result<Vec<_>>>()
                            .map(|v| v.join(","))
                    })
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                assert_eq!(got.len() as i64, n, "{t}");
                rows.push(got);
            }
            drop(w);
            rows
        };
        assert_eq!(dump(true), dump(false));
    }
}
