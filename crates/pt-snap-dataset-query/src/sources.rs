//! One query's view of one device of a dataset: read-only connections to its shards, every
//! read charged to the [`Budget`], and the event sources (`allocation_source`, …) resolved in
//! batches from the shard that owns each event id.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use pt_snap_dataset::manifest::DeviceRecord;
use pt_snap_dataset::read::Dataset;
use pt_snap_db::rusqlite::{self, types::ValueRef, Connection, OpenFlags};
use pt_snap_query::QueryError;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::Budget;

pub type Row = Map<String, Value>;

const SOURCE_BATCH: usize = 256;

#[derive(Debug, Clone)]
pub struct EventSource {
    pub event: Row,
    pub slice_index: usize,
    pub stack_id: String,
    pub stack_kind: &'static str,
    pub local_stack_id: Option<i64>,
}

impl EventSource {
    pub fn text_kind(&self) -> &'static str {
        match self.event.get("callstack") {
            Some(Value::String(s)) if !s.is_empty() => "captured",
            _ => "missing",
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "event": Value::Object(self.event.clone()),
            "slice_index": self.slice_index,
            "local_stack_id": self.local_stack_id,
            "stack_id": self.stack_id,
            "stack_kind": self.stack_kind,
            "text_kind": self.text_kind(),
            "frames": null,
            "frames_status": "text_only",
        })
    }
}

pub struct Sources<'a> {
    pub ds: &'a Dataset,
    pub device: &'a DeviceRecord,
    pub budget: Budget,
    pub query_count: i64,
    pub namespace: String,
    pub lifecycle_cache: Option<std::path::PathBuf>,
    conns: HashMap<usize, Connection>,
    events: HashMap<i64, EventSource>,
}

pub fn sql_failed(e: rusqlite::Error) -> QueryError {
    match &e {
        rusqlite::Error::SqliteFailure(f, _)
            if f.code == rusqlite::ErrorCode::OperationInterrupted =>
        {
            QueryError::Timeout
        }
        _ => QueryError::Failed(pt_snap_db::sqlite_message(&e)),
    }
}

/// A SQLite value as the reference's Python sees it.
pub fn to_json(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => json!(i),
        ValueRef::Real(f) => json!(f),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::String(format!("{b:?}")),
    }
}

/// Runs `sql` on `conn`, charging `budget` every 256 rows as the reference's executor does.
pub fn read_rows(
    conn: &Connection,
    budget: &mut Budget,
    sql: &str,
    params: &[rusqlite::types::Value],
) -> Result<Vec<Row>, QueryError> {
    budget.check()?;
    let mut stmt = conn.prepare(sql).map_err(sql_failed)?;
    let names: Vec<String> = stmt.column_names().map(str::to_owned).collect();
    let mut rows = stmt
        .query(rusqlite::params_from_iter(params.iter()))
        .map_err(sql_failed)?;
    let mut out = Vec::new();
    let mut batch = Vec::new();
    while let Some(r) = rows.next().map_err(sql_failed)? {
        let mut row = Map::new();
        for (i, n) in names.iter().enumerate() {
            row.insert(n.clone(), to_json(r.get_ref(i).map_err(sql_failed)?));
        }
        batch.push(row);
        if batch.len() == SOURCE_BATCH {
            budget.consume(&batch)?;
            out.append(&mut batch);
        }
    }
    if !batch.is_empty() {
        budget.consume(&batch)?;
        out.append(&mut batch);
    }
    budget.check()?;
    Ok(out)
}

pub fn sha_hex(s: &str) -> String {
    pt_snap_contract::python::hex(&Sha256::digest(s.as_bytes()))
}

pub fn open_member(ds: &Dataset, file: &str, budget: &Budget) -> Result<Connection, QueryError> {
    let uri = format!(
        "file:{}?mode=ro{}",
        ds.root.join(file).display(),
        if ds.manifest.is_native() {
            ""
        } else {
            "&immutable=1"
        }
    );
    let mut conn = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )
    .map_err(|e| QueryError::SchemaInvalid(e.to_string()))?;
    install_interrupt(&mut conn, budget);
    Ok(conn)
}

pub fn install_interrupt(conn: &mut Connection, budget: &Budget) {
    if let Some(i) = budget.interrupt.clone() {
        // A failed install only loses the deadline inside SQLite; checks between reads stay.
        let _ = conn.progress_handler(1000, Some(move || i()));
    }
}

impl<'a> Sources<'a> {
    pub fn new(ds: &'a Dataset, device: &'a DeviceRecord, budget: Budget) -> Self {
        Self {
            namespace: format!("dataset:{}:device:{}", ds.fingerprint, device.device_id),
            ds,
            device,
            budget,
            query_count: 0,
            lifecycle_cache: None,
            conns: HashMap::new(),
            events: HashMap::new(),
        }
    }

    pub fn v2(&self) -> bool {
        self.ds.manifest.is_native()
    }

    pub fn trace(&self) -> String {
        format!("\"trace_entry_{}\"", self.device.device_id)
    }

    pub fn block(&self) -> String {
        format!("\"block_{}\"", self.device.device_id)
    }

    /// One read on shard `index`.
    pub fn read(
        &mut self,
        index: usize,
        sql: &str,
        params: &[rusqlite::types::Value],
    ) -> Result<Vec<Row>, QueryError> {
        self.budget.check()?;
        if !self.conns.contains_key(&index) {
            let conn = open_member(self.ds, &self.device.slices[index].file, &self.budget)?;
            self.conns.insert(index, conn);
        }
        self.query_count += 1;
        let conn = &self.conns[&index];
        read_rows(conn, &mut self.budget, sql, params)
    }

    /// Rows computed here that the reference fetches from shard SQL: counted as one read and
    /// charged 256 rows at a time, as its executor does.
    pub fn charge(&mut self, rows: &[Row]) -> Result<(), QueryError> {
        self.query_count += 1;
        for chunk in rows.chunks(SOURCE_BATCH) {
            self.budget.consume(chunk)?;
        }
        self.budget.check()
    }

    /// Shard `index`'s connection, for scans aggregated here rather than in SQL (not charged:
    /// callers charge what the reference would have fetched).
    pub fn conn(&mut self, index: usize) -> Result<&Connection, QueryError> {
        self.budget.check()?;
        if !self.conns.contains_key(&index) {
            let conn = open_member(self.ds, &self.device.slices[index].file, &self.budget)?;
            self.conns.insert(index, conn);
        }
        Ok(&self.conns[&index])
    }

    /// The shard whose declared range holds real event `id`.
    pub fn owner(&self, id: i64) -> Option<usize> {
        if id < 0 {
            return None;
        }
        let i = self
            .device
            .slices
            .partition_point(|s| s.start_event_id <= id)
            .checked_sub(1)?;
        (id <= self.device.slices[i].end_event_id).then_some(i)
    }

    /// The owner shard of a point-in-time event, which must be a real event (and in the
    /// `--slice` shard when one is given).
    pub fn target(&mut self, id: i64, slice: Option<usize>) -> Result<usize, QueryError> {
        let item = self.owner(id).filter(|i| slice.is_none_or(|s| s == *i));
        let Some(item) = item else {
            return Err(QueryError::OutOfScope(
                "Event ID must be a real ID within the selected scope.".into(),
            ));
        };
        if !self.events([id])?.contains_key(&id) {
            return Err(QueryError::OutOfScope(format!(
                "No real event at ID {id}; sparse gaps are not events."
            )));
        }
        Ok(item)
    }

    /// Event sources of real events, fetched from their owner shards 256 ids at a time.
    pub fn events(
        &mut self,
        ids: impl IntoIterator<Item = i64>,
    ) -> Result<HashMap<i64, EventSource>, QueryError> {
        let mut grouped: BTreeMap<usize, Vec<i64>> = BTreeMap::new();
        let mut result = HashMap::new();
        let wanted: BTreeSet<i64> = ids.into_iter().collect();
        for id in wanted {
            self.budget.check()?;
            if let Some(s) = self.events.get(&id) {
                result.insert(id, s.clone());
                continue;
            }
            if let Some(owner) = self.owner(id) {
                grouped.entry(owner).or_default().push(id);
            }
        }
        for (index, ids) in grouped {
            for chunk in ids.chunks(SOURCE_BATCH) {
                let marks = vec!["?"; chunk.len()].join(",");
                let trace = self.trace();
                let base = if self.v2() {
                    format!(
                        "SELECT t.*, cs.callstack FROM {trace} t LEFT JOIN callstack cs ON \
                         t.callstackId=cs.id"
                    )
                } else {
                    format!("SELECT t.* FROM {trace} t")
                };
                let params: Vec<rusqlite::types::Value> =
                    chunk.iter().map(|i| (*i).into()).collect();
                let rows = self.read(
                    index,
                    &format!("{base} WHERE t.id IN ({marks}) AND t.id>=0"),
                    &params,
                )?;
                result.extend(self.events_from_rows(index, rows)?);
            }
        }
        self.budget.check()?;
        Ok(result)
    }

    /// Event sources from already fetched (and charged) full event rows of shard `index`.
    pub fn events_from_rows(
        &mut self,
        index: usize,
        rows: Vec<Row>,
    ) -> Result<HashMap<i64, EventSource>, QueryError> {
        let mut out = HashMap::new();
        for mut row in rows {
            self.budget.check()?;
            let id = row.get("id").and_then(Value::as_i64).unwrap_or(-1);
            if self.owner(id) != Some(index) {
                return Err(QueryError::Failed(
                    "Source event does not belong to the selected shard.".into(),
                ));
            }
            if let Some(s) = self.events.get(&id) {
                out.insert(id, s.clone());
                continue;
            }
            let local = row.shift_remove("callstackId").and_then(|v| v.as_i64());
            let captured = matches!(row.get("callstack"), Some(Value::String(s)) if !s.is_empty());
            let stack_id = if captured {
                let text = row["callstack"].as_str().unwrap_or("");
                format!("{}:text:sha256:{}", self.namespace, sha_hex(text))
            } else {
                format!("{}:category:missing", self.namespace)
            };
            let source = EventSource {
                event: row,
                slice_index: index,
                stack_id,
                stack_kind: if captured { "captured" } else { "missing" },
                local_stack_id: local,
            };
            self.events.insert(id, source.clone());
            out.insert(id, source);
        }
        Ok(out)
    }
}
