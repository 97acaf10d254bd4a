//! Running a template: device resolution, validation, the row window and its completeness
//! flags (spec §6.3), `--exact-total`, `stack_bytes`, and interruption.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use pt_snap_db::rusqlite::types::ValueRef;
use pt_snap_db::rusqlite::{self, ErrorCode};
use pt_snap_db::{sqlite_message, CallstackLayout, OpenError, SnapshotDb};
use serde_json::{Map, Value as Json};

use crate::error::QueryError;
use crate::params::{self, ParamValue, Params};
use crate::registry::{self, Template};
use crate::sql::Sql;
use crate::stack;
use crate::templates::Target;
use crate::value::Value;

/// Asked every thousand SQLite steps whether to stop; `true` aborts with
/// [`QueryError::Timeout`]. The caller owns the clock, so the engine needs none (there is
/// no `Instant` in a browser).
pub type Interrupt = Arc<dyn Fn() -> bool + Send + Sync>;

/// Whether the installed interrupt asks to stop (SQLite's progress handler).
pub(crate) fn interrupted(slot: &Mutex<Option<Interrupt>>) -> bool {
    slot.lock()
        .ok()
        .and_then(|f| f.as_ref().map(|f| f()))
        .unwrap_or(false)
}

/// One template run: which template, its raw parameters (validated like the reference
/// validates `--params`), the device, the `-n` row cap and `--exact-total`.
#[derive(Debug, Clone, Default)]
pub struct QueryRequest {
    pub template: String,
    pub params: Map<String, Json>,
    /// `None`: the lowest device id.
    pub device: Option<i64>,
    /// `-n`: a positive value caps the rows; zero or negative means no cap.
    pub max_rows: Option<i64>,
    pub exact_total: bool,
}

impl QueryRequest {
    pub fn new(template: &str) -> Self {
        QueryRequest {
            template: template.to_owned(),
            ..Self::default()
        }
    }

    pub fn param(mut self, name: &str, value: impl Into<Json>) -> Self {
        self.params.insert(name.to_owned(), value.into());
        self
    }

    pub fn device(mut self, device: i64) -> Self {
        self.device = Some(device);
        self
    }

    pub fn max_rows(mut self, n: i64) -> Self {
        self.max_rows = Some(n);
        self
    }

    pub fn exact_total(mut self, yes: bool) -> Self {
        self.exact_total = yes;
        self
    }
}

/// A template's answer and how complete it is.
#[derive(Debug, Clone)]
pub struct QueryOutcome {
    pub template: String,
    pub device_id: i64,
    /// Validated parameters in declaration order, `limit` set to the effective row cap.
    pub effective_params: Params,
    pub semantics_version: Option<i64>,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// Matching rows: exact with `exact_total`, else the rows returned.
    pub total: i64,
    pub returned: i64,
    /// More rows exist beyond this page (or may: a full `top_n` window).
    pub has_more: bool,
    /// This page is not the whole answer.
    pub truncated: bool,
    pub total_is_exact: bool,
    /// What a dataset answer covers (its range, shards, fingerprint, work budget and source
    /// coverage); `None` for a single database.
    pub scope: Option<Json>,
}

impl QueryOutcome {
    /// The value of `column` in row `row`.
    pub fn get(&self, row: usize, column: &str) -> Option<&Value> {
        let i = self.columns.iter().position(|c| c == column)?;
        self.rows.get(row)?.get(i)
    }

    /// Rows as JSON objects, columns in SQL order.
    pub fn rows_json(&self) -> Vec<Json> {
        self.rows
            .iter()
            .map(|row| {
                Json::Object(
                    self.columns
                        .iter()
                        .zip(row)
                        .map(|(c, v)| (c.clone(), v.to_json()))
                        .collect(),
                )
            })
            .collect()
    }
}

/// An open SnapshotDB ready to answer templates: the library face of the query engine,
/// shared by the CLI and the web app.
pub struct Analyzer {
    db: SnapshotDb,
    layout: Result<CallstackLayout, String>,
    interrupt: Arc<Mutex<Option<Interrupt>>>,
    /// The file, when there is one: full-table passes may then read it through more
    /// connections at once.
    path: Option<PathBuf>,
}

impl Analyzer {
    /// Opens a database file read-only.
    pub fn open(path: &Path) -> Result<Self, OpenError> {
        let mut analyzer = Self::new(SnapshotDb::open_readonly(path)?)?;
        analyzer.path = Some(path.to_owned());
        Ok(analyzer)
    }

    /// Opens a database image held in memory, read-only.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, OpenError> {
        Self::new(SnapshotDb::from_bytes(bytes)?)
    }

    /// Opens the `len`-byte database image `image` yields, read-only
    /// ([`SnapshotDb::from_reader`]).
    pub fn from_reader(image: impl std::io::Read, len: usize) -> Result<Self, OpenError> {
        Self::new(SnapshotDb::from_reader(image, len)?)
    }

    pub fn new(mut db: SnapshotDb) -> Result<Self, OpenError> {
        let layout = db.layout()?;
        crate::functions::register(db.conn())?;
        let interrupt: Arc<Mutex<Option<Interrupt>>> = Arc::default();
        let slot = Arc::clone(&interrupt);
        db.conn_mut()
            .progress_handler(1000, Some(move || interrupted(&slot)))?;
        Ok(Analyzer {
            db,
            layout,
            interrupt,
            path: None,
        })
    }

    /// The database's image, as [`SnapshotDb::with_image`] hands it.
    pub fn with_image<T>(&mut self, f: impl FnOnce(&[u8]) -> T) -> rusqlite::Result<T> {
        self.db.with_image(f)
    }

    pub fn db(&self) -> &SnapshotDb {
        &self.db
    }

    /// Device ids, ascending.
    pub fn devices(&self) -> &[i64] {
        self.db.devices()
    }

    pub fn layout(&self) -> &Result<CallstackLayout, String> {
        &self.layout
    }

    /// Installs (or removes) the interrupt for every later statement, so several queries
    /// composing one report share one deadline.
    pub fn set_interrupt(&self, interrupt: Option<Interrupt>) {
        if let Ok(mut slot) = self.interrupt.lock() {
            *slot = interrupt;
        }
    }

    /// The requested device if the database has it, else the lowest one.
    pub fn resolve_device(&self, requested: Option<i64>) -> Result<i64, QueryError> {
        let devices = self.devices();
        match requested {
            Some(d) if devices.contains(&d) => Ok(d),
            Some(d) => Err(QueryError::DeviceNotFound(format!(
                "Device {d} not found. Available: {devices:?}"
            ))),
            None => devices
                .first()
                .copied()
                .ok_or_else(|| QueryError::DeviceNotFound("No devices found in database.".into())),
        }
    }

    /// Validates a request's parameters without running anything.
    pub fn validate(template: &str, raw: &Map<String, Json>) -> Result<Params, QueryError> {
        let t = registry::find(template)
            .ok_or_else(|| QueryError::TemplateNotFound(template.to_owned()))?;
        validated(t, raw)
    }

    /// What `run` and `statement` start from: the request's template, its parameters
    /// validated, and the device resolved.
    fn prepare(
        &self,
        req: &QueryRequest,
    ) -> Result<(&'static Template, Params, Target), QueryError> {
        let device = self.resolve_device(req.device)?;
        let t = registry::find(&req.template)
            .ok_or_else(|| QueryError::TemplateNotFound(req.template.clone()))?;
        let params = validated(t, &req.params)?;
        let target = Target {
            device,
            layout: self.layout.clone(),
        };
        Ok((t, params, target))
    }

    /// Runs one template.
    pub fn run(&self, req: &QueryRequest) -> Result<QueryOutcome, QueryError> {
        let (t, params, target) = self.prepare(req)?;
        let c = &t.contract;

        let limit_param = c.has_parameter("limit").then(|| params.int_or("limit", -1));
        let injected = req.max_rows.filter(|n| *n > 0).map(|n| match limit_param {
            Some(l) if l >= 0 => l.min(n),
            _ => n,
        });
        let final_limit = injected.or(limit_param);
        let applied = final_limit.filter(|l| *l >= 0);
        let offset = if c.has_parameter("offset") {
            params.int_or("offset", 0).max(0)
        } else {
            0
        };

        let mut sql = (t.plan)(&params, &target)?;
        if let Some(limit) = final_limit {
            // One row beyond the page tells whether there is more, without a COUNT.
            let probe = if limit >= 0 {
                limit.saturating_add(1)
            } else {
                limit
            };
            sql.push(" LIMIT ").bind(probe);
        }
        if offset > 0 {
            if final_limit.is_none() {
                sql.push(" LIMIT -1");
            }
            sql.push(" OFFSET ").bind(offset);
        }
        let (mut columns, mut rows) = self.fetch(&sql)?;
        let mut has_more = applied.is_some_and(|k| rows.len() as i64 > k);
        if let Some(k) = applied {
            rows.truncate(k as usize);
        }
        if let Some(top_n) = c
            .has_parameter("top_n")
            .then(|| params.int_or("top_n", -1))
            .filter(|n| *n >= 0)
        {
            if top_n == 0 || ranked_rows(&columns, &rows) >= top_n && !rows.is_empty() {
                // A full ranking window may have cut groups: a cap hit, not a probe.
                has_more = true;
            }
        }
        let returned = rows.len() as i64;
        let (total, total_is_exact) = if req.exact_total {
            let total = self.count(t, &params, &target)?;
            if offset == 0 {
                has_more = total > returned;
            }
            (total, true)
        } else {
            (returned, !has_more && offset == 0)
        };
        let truncated = has_more || offset > 0 || (req.exact_total && total > returned);

        let stack_bytes = c
            .has_parameter("stack_bytes")
            .then(|| params.int_or("stack_bytes", -1));
        if let Some(budget) = stack_bytes.filter(|b| *b >= 0) {
            let layout = self.layout.clone().unwrap_or(CallstackLayout::V2);
            stack::summarize(&mut columns, &mut rows, budget, layout);
        }
        let mut effective_params = params;
        if let Some(cap) = injected {
            effective_params.set("limit", ParamValue::Int(cap));
        }
        Ok(QueryOutcome {
            template: c.name.clone(),
            device_id: target.device,
            effective_params,
            semantics_version: c.semantics_version,
            columns,
            rows,
            total,
            returned,
            has_more,
            truncated,
            total_is_exact,
            scope: None,
        })
    }

    /// The statement `run` would execute first, with its bound values, for display and
    /// `EXPLAIN QUERY PLAN` (the row window is not included).
    pub fn statement(&self, req: &QueryRequest) -> Result<(String, Vec<Value>), QueryError> {
        let (t, params, target) = self.prepare(req)?;
        let sql = (t.plan)(&params, &target)?;
        let binds = sql
            .binds()
            .iter()
            .map(|b| match b {
                rusqlite::types::Value::Null => Value::Null,
                rusqlite::types::Value::Integer(i) => Value::Int(*i),
                rusqlite::types::Value::Real(f) => Value::Real(*f),
                rusqlite::types::Value::Text(s) => Value::Text(Arc::from(s.as_str())),
                rusqlite::types::Value::Blob(b) => Value::Blob(Arc::from(b.as_slice())),
            })
            .collect();
        Ok((sql.text().to_owned(), binds))
    }

    /// Counts every matching row: the same statement without its row window or `top_n`.
    fn count(&self, t: &Template, params: &Params, target: &Target) -> Result<i64, QueryError> {
        let mut unwindowed = params.clone();
        for (name, value) in [("limit", -1), ("offset", 0), ("top_n", -1)] {
            if t.contract.has_parameter(name) {
                unwindowed.set(name, ParamValue::Int(value));
            }
        }
        let sql =
            (t.plan)(&unwindowed, target)?.wrap("SELECT COUNT(*) FROM (", ") AS pt_snap_count");
        let (_, rows) = self.fetch(&sql)?;
        Ok(rows
            .first()
            .and_then(|r| r.first())
            .and_then(Value::as_i64)
            .unwrap_or(0))
    }

    fn fetch(&self, sql: &Sql) -> Result<(Vec<String>, Vec<Vec<Value>>), QueryError> {
        let conn = self.db.conn();
        let split;
        let sql = match &self.path {
            Some(path) if sql.scans().next().is_some() => {
                let mut totals = Vec::new();
                for scan in sql.scans() {
                    match crate::scan::group_totals(conn, path, scan, &self.interrupt) {
                        Ok(Some(json)) => totals.push(json),
                        Ok(None) => break,
                        Err(e) => return Err(self.execution_error(e)),
                    }
                }
                if totals.len() < sql.scans().count() {
                    sql
                } else {
                    split = sql.with_scan_totals(totals);
                    &split
                }
            }
            _ => sql,
        };
        let mut stmt = conn
            .prepare(sql.text())
            .map_err(|e| self.execution_error(e))?;
        let columns: Vec<String> = stmt.column_names().map(str::to_owned).collect();
        let mut rows = Vec::new();
        // Callstack texts repeat on thousands of rows; keep one copy of each.
        let mut texts: HashMap<Box<str>, Arc<str>> = HashMap::new();
        let mut cursor = stmt
            .query(rusqlite::params_from_iter(sql.binds()))
            .map_err(|e| self.execution_error(e))?;
        while let Some(row) = cursor.next().map_err(|e| self.execution_error(e))? {
            let mut values = Vec::with_capacity(columns.len());
            for i in 0..columns.len() {
                let v = row.get_ref(i).map_err(|e| self.execution_error(e))?;
                values.push(match v {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(i) => Value::Int(i),
                    ValueRef::Real(f) => Value::Real(f),
                    ValueRef::Text(b) => {
                        let s = String::from_utf8_lossy(b);
                        match texts.get(&*s) {
                            Some(shared) => Value::Text(Arc::clone(shared)),
                            None => {
                                let shared: Arc<str> = Arc::from(&*s);
                                texts.insert(Box::from(&*s), Arc::clone(&shared));
                                Value::Text(shared)
                            }
                        }
                    }
                    ValueRef::Blob(b) => Value::Blob(Arc::from(b)),
                });
            }
            rows.push(values);
        }
        Ok((columns, rows))
    }

    /// SQLite's failure in the reference's words, which name the layout problem behind
    /// a missing table or column.
    pub(crate) fn execution_error(&self, e: rusqlite::Error) -> QueryError {
        if e.sqlite_error_code() == Some(ErrorCode::OperationInterrupted) {
            return QueryError::Timeout;
        }
        let detail = sqlite_message(&e);
        let missing_frames = ["frame", "callstack_frame", "callstack_frame_manifest"]
            .iter()
            .any(|t| detail == format!("no such table: {t}"));
        let message = if missing_frames {
            "structured callstack frames are unavailable. Re-import the original snapshot \
             with this version of pt-snap; legacy callstack text cannot reconstruct original \
             frame fields reliably."
                .to_owned()
        } else if detail.contains("no such table: callstack")
            || (detail.starts_with("no such column:") && detail.ends_with("callstackId"))
        {
            match self.layout {
                Ok(CallstackLayout::V1) => "this SQL requires callstackId, but this database \
                                            uses the v1 inline-callstack layout"
                    .to_owned(),
                Ok(CallstackLayout::V2) => "this SQL expects the v1 inline-callstack layout, \
                                            but this database uses the v2 callstackId layout"
                    .to_owned(),
                Err(_) => "this SQL requires a recognized v1 or v2 callstack layout".to_owned(),
            }
        } else {
            detail
        };
        QueryError::Failed(format!("Query execution failed: {message}"))
    }
}

fn validated(t: &Template, raw: &Map<String, Json>) -> Result<Params, QueryError> {
    params::validate(&t.contract, raw).map_err(|m| {
        QueryError::InvalidParameter(format!(
            "Failed to validate parameters for template '{}': {m}",
            t.contract.name
        ))
    })
}

/// Rows that compete for a `top_n` place: the dynamic groups when rows are categorised.
fn ranked_rows(columns: &[String], rows: &[Vec<Value>]) -> i64 {
    match columns.iter().position(|c| c == "category") {
        Some(i) => rows
            .iter()
            .filter(|r| r[i].as_str() == Some("dynamic_live_at_event"))
            .count() as i64,
        None => rows.len() as i64,
    }
}
