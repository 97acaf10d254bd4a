//! The open SnapshotDB and every question the views ask it, answered through the shared
//! crates (templates, reports). The `Analyzer` holds a SQLite connection, which is neither
//! Send nor Sync, so it lives in a thread-local rather than in reactive state; views keep
//! only plain results.

use std::cell::RefCell;
use std::sync::Arc;

use pt_snap_query::{registry, Analyzer, Interrupt, QueryError, QueryRequest, TimelineRequest};
use pt_snap_report::{memory_tree, peak_memory, Metric, PeakRequest, TreeRequest};
use serde_json::{Map, Value as Json};

thread_local! {
    static ANALYZER: RefCell<Option<Analyzer>> = const { RefCell::new(None) };
}

/// How long one question (a template, a report, the timeline, a console statement) may run.
/// Queries run on the page thread, which freezes while they do: a database is input, and
/// one crafted to make a query run for ever must not hang the tab. A minute is far above
/// what any view needs on a database a browser can hold (seconds for a 1M-event one).
const LIMIT_S: f64 = 60.0;

/// The deadline of a question starting now, polled by SQLite's progress handler through
/// the analyzer's interrupt (the CLI's mechanism; `Date.now()` is the page's clock).
fn deadline() -> Interrupt {
    let at = js_sys::Date::now() + LIMIT_S * 1000.0;
    Arc::new(move || js_sys::Date::now() >= at)
}

/// The CLI's `QUERY_TIMEOUT`, for this app's limit.
fn timed_out() -> Failure {
    Failure::new("QUERY_TIMEOUT", QueryError::timeout_message(LIMIT_S))
}

/// A SQLite failure: a timeout when the deadline interrupted it, else `code`.
fn sqlite_failure(e: &rusqlite::Error, code: &str) -> Failure {
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) {
        timed_out()
    } else {
        Failure::new(code, pt_snap_db::sqlite_message(e))
    }
}

/// A failure shown to people: the CLI's error code and message.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub code: String,
    pub message: String,
}

impl Failure {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Failure {
            code: code.to_owned(),
            message: message.into(),
        }
    }
}

impl From<pt_snap_import::Failure> for Failure {
    fn from(f: pt_snap_import::Failure) -> Self {
        Failure::new(f.code, f.message)
    }
}

impl From<QueryError> for Failure {
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::Timeout => timed_out(),
            e => Failure::new(e.code(), e.to_string()),
        }
    }
}

/// What the page knows about the open database.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    pub name: String,
    /// Made here from a pickle (so it can be downloaded), rather than opened as a `.db`.
    pub imported: bool,
    pub size: usize,
    pub devices: Vec<i64>,
    /// `(device, first, last)` real-event ids.
    pub bounds: Vec<(i64, Option<(i64, i64)>)>,
    /// The `pt_snap_metadata` row as `(field, value)`, or why it is not valid.
    pub metadata: Result<Vec<(String, String)>, String>,
    pub warnings: Vec<String>,
    /// Bumped on every open so views recompute even for a file of the same name.
    pub generation: u32,
}

/// Opens a database image read-only (`sqlite3_deserialize`); the CLI's `DATABASE_SCHEMA_INVALID`
/// when it is not a SnapshotDB. The image is copied from the JS buffer straight into memory
/// SQLite owns, and not kept: wasm memory never shrinks, so a second copy (a `Vec` on the
/// way in, or one kept for "Download .db") would hold the page at twice the database for
/// good — 1.1 GB more after a 1 GB snapshot.
pub fn open(
    name: &str,
    image: &js_sys::Uint8Array,
    imported: bool,
    warnings: Vec<String>,
    generation: u32,
) -> Result<Opened, Failure> {
    let schema = |e: pt_snap_db::OpenError| Failure::new("DATABASE_SCHEMA_INVALID", e.to_string());
    let len = image.length() as usize;
    let analyzer = Analyzer::from_reader(JsBytes { image, at: 0 }, len).map_err(schema)?;
    analyzer.set_interrupt(Some(deadline()));
    let db = analyzer.db();
    let bounds = db
        .bounds()
        .map_err(|e| sqlite_failure(&e, "DATABASE_SCHEMA_INVALID"))?
        .into_iter()
        .map(|b| (b.device, b.events))
        .collect();
    let metadata = match db.metadata() {
        Ok(Ok(m)) => Ok(metadata_rows(&m)),
        Ok(Err(pt_snap_db::MetadataProblem::Missing)) => {
            Err("No import metadata (a database from an older importer; still queryable).".into())
        }
        Ok(Err(problem)) => Err(format!("Import metadata is not valid: {problem:?}")),
        Err(e) => Err(sqlite_failure(&e, "QUERY_FAILED").message),
    };
    analyzer.set_interrupt(None);
    let opened = Opened {
        name: name.to_owned(),
        imported,
        size: len,
        devices: analyzer.devices().to_vec(),
        bounds,
        metadata,
        warnings,
        generation,
    };
    ANALYZER.with(|a| *a.borrow_mut() = Some(analyzer));
    Ok(opened)
}

/// A JS byte array read into wasm memory piece by piece.
struct JsBytes<'a> {
    image: &'a js_sys::Uint8Array,
    at: u32,
}

impl std::io::Read for JsBytes<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let end = (self.at as usize + out.len()).min(self.image.length() as usize) as u32;
        let n = (end - self.at) as usize;
        self.image.subarray(self.at, end).copy_to(&mut out[..n]);
        self.at = end;
        Ok(n)
    }
}

fn metadata_rows(m: &pt_snap_db::Metadata) -> Vec<(String, String)> {
    let device = m
        .requested_device
        .map_or_else(|| "all devices".to_owned(), |d| d.to_string());
    [
        ("source", m.source_name.clone()),
        ("source size", format!("{} bytes", m.source_size)),
        ("source sha256", m.source_sha256.clone()),
        ("devices requested", device),
        (
            "importer",
            format!("{} {}", m.importer_name, m.importer_version),
        ),
        ("import format", m.import_format_version.to_string()),
        ("completed at", m.completed_at.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// Hands `f` the open database's image (SQLite's own memory, not a copy), for "Download .db".
pub fn with_image<T>(f: impl FnOnce(&[u8]) -> T) -> Option<T> {
    ANALYZER.with(|a| a.borrow_mut().as_mut()?.with_image(f).ok())
}

/// Asks the open database one question, under a deadline of [`LIMIT_S`].
fn with<T>(f: impl FnOnce(&Analyzer) -> Result<T, Failure>) -> Result<T, Failure> {
    ANALYZER.with(|a| match a.borrow().as_ref() {
        Some(analyzer) => {
            analyzer.set_interrupt(Some(deadline()));
            let answer = f(analyzer);
            analyzer.set_interrupt(None);
            answer
        }
        None => Err(Failure::new("DATABASE_NOT_OPEN", "No database is open.")),
    })
}

/// `memory_peak`'s six values for one device.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Peaks {
    pub allocated: (i64, Option<i64>),
    pub active: (i64, Option<i64>),
    pub reserved: (i64, Option<i64>),
}

pub fn peaks(device: i64) -> Result<Peaks, Failure> {
    with(|a| {
        let out = a.run(&QueryRequest::new("memory_peak").device(device))?;
        let row = out.rows_json().into_iter().next().unwrap_or(Json::Null);
        let num = |k: &str| row.get(k).and_then(Json::as_i64);
        Ok(Peaks {
            allocated: (
                num("peak_allocated").unwrap_or(0),
                num("peak_allocated_event_id"),
            ),
            active: (num("peak_active").unwrap_or(0), num("peak_active_event_id")),
            reserved: (
                num("peak_reserved").unwrap_or(0),
                num("peak_reserved_event_id"),
            ),
        })
    })
}

/// The counters over a window of events, downsampled to at most `buckets` runs whose minima
/// and maxima are kept (the shared library's `Analyzer::timeline`).
pub fn timeline(
    device: i64,
    window: Option<(i64, i64)>,
    buckets: usize,
) -> Result<pt_snap_query::Timeline, Failure> {
    with(|a| {
        Ok(a.timeline(&TimelineRequest {
            device: Some(device),
            start_id: window.map(|w| w.0),
            end_id: window.map(|w| w.1),
            buckets,
        })?)
    })
}

/// One trace event as the `event` template gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct EventInfo {
    pub id: i64,
    pub action: String,
    pub size: i64,
    pub address: i64,
    pub allocated: i64,
    pub active: i64,
    pub reserved: i64,
    pub callstack: Option<String>,
}

pub fn event(device: i64, id: i64) -> Result<Option<EventInfo>, Failure> {
    with(|a| {
        let out = a.run(&QueryRequest::new("event").device(device).param("id", id))?;
        let Some(row) = out.rows_json().into_iter().next() else {
            return Ok(None);
        };
        let num = |k: &str| row.get(k).and_then(Json::as_i64).unwrap_or(0);
        let code = num("action");
        let action = pt_snap_db::schema::ACTIONS
            .iter()
            .find(|(c, _)| *c == code)
            .map_or_else(|| format!("action {code}"), |(_, n)| (*n).to_owned());
        Ok(Some(EventInfo {
            id: num("id"),
            action,
            size: num("size"),
            address: num("address"),
            allocated: num("allocated"),
            active: num("active"),
            reserved: num("reserved"),
            callstack: row
                .get("callstack")
                .and_then(Json::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        }))
    })
}

pub fn peak_report(device: i64, metric: Metric, include_static: bool) -> Result<Json, Failure> {
    with(|a| {
        let req = PeakRequest {
            device: Some(device),
            metric,
            include_static,
            limit: 20,
            stack_bytes: -1,
            start_id: None,
            end_id: None,
        };
        Ok(peak_memory(a, &req)?.to_json())
    })
}

/// The flamegraph component's data at one event.
pub fn tree(device: i64, event_id: i64, include_static: bool) -> Result<Json, Failure> {
    with(|a| {
        let req = TreeRequest {
            device: Some(device),
            event_id,
            include_static,
            min_size: 0,
        };
        Ok(memory_tree(a, &req)?.flamegraph_data())
    })
}

/// A template's answer, flattened for a table.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Json>>,
    pub total: i64,
    pub has_more: bool,
    pub truncated: bool,
    pub total_is_exact: bool,
    pub note: Option<String>,
}

pub fn run_template(
    device: i64,
    template: &str,
    params: Map<String, Json>,
    max_rows: i64,
    exact_total: bool,
) -> Result<Table, Failure> {
    with(|a| {
        let mut req = QueryRequest::new(template)
            .device(device)
            .max_rows(max_rows)
            .exact_total(exact_total);
        req.params = params;
        let out = a.run(&req)?;
        let rows = out
            .rows_json()
            .into_iter()
            .map(|r| {
                out.columns
                    .iter()
                    .map(|c| r.get(c).cloned().unwrap_or(Json::Null))
                    .collect()
            })
            .collect();
        Ok(Table {
            columns: out.columns.clone(),
            rows,
            total: out.total,
            has_more: out.has_more,
            truncated: out.truncated,
            total_is_exact: out.total_is_exact,
            note: None,
        })
    })
}

/// Runs one read-only SQL statement, keeping at most `cap` rows.
pub fn run_sql(sql: &str, cap: usize) -> Result<Table, Failure> {
    with(|a| {
        let conn = a.db().conn();
        let failed = |e: rusqlite::Error| sqlite_failure(&e, "QUERY_FAILED");
        let mut stmt = conn.prepare(sql).map_err(failed)?;
        // The connection is query_only already; refusing here gives a clearer message.
        if !stmt.readonly() {
            return Err(Failure::new(
                "QUERY_FAILED",
                "Only read-only statements run here (SELECT, WITH, read-only PRAGMA).",
            ));
        }
        let columns: Vec<String> = stmt.column_names().map(str::to_owned).collect();
        let n = columns.len();
        let mut rows = Vec::new();
        let mut more = false;
        let mut q = stmt.query([]).map_err(failed)?;
        while let Some(r) = q.next().map_err(failed)? {
            if rows.len() == cap {
                more = true;
                break;
            }
            let row = (0..n)
                .map(|i| match r.get_ref(i) {
                    Ok(rusqlite::types::ValueRef::Null) | Err(_) => Json::Null,
                    Ok(rusqlite::types::ValueRef::Integer(v)) => v.into(),
                    Ok(rusqlite::types::ValueRef::Real(v)) => v.into(),
                    Ok(rusqlite::types::ValueRef::Text(t)) => String::from_utf8_lossy(t).into(),
                    Ok(rusqlite::types::ValueRef::Blob(b)) => format!("<{} bytes>", b.len()).into(),
                })
                .collect();
            rows.push(row);
        }
        Ok(Table {
            columns,
            total: rows.len() as i64,
            rows,
            has_more: more,
            truncated: more,
            total_is_exact: !more,
            note: more.then(|| format!("Only the first {cap} rows are shown.")),
        })
    })
}

/// A template's description and interpretation limits, as its contract words them.
pub fn contract_notes(template: &str) -> (String, Vec<String>) {
    registry::find(template).map_or_else(Default::default, |t| {
        (
            t.contract.description.clone(),
            t.contract.interpretation_limits.clone(),
        )
    })
}

/// Template names with their category, in registry order.
pub fn templates() -> Vec<(String, String, String)> {
    registry::all()
        .iter()
        .map(|t| {
            (
                t.name().to_owned(),
                t.contract.category.clone(),
                t.contract.description.clone(),
            )
        })
        .collect()
}

/// How many events a lenient replay applied from the trace alone; `None` for a strict
/// database (the reference's, and ours by default).
pub fn lenient_replay_issues() -> Result<Option<i64>, Failure> {
    with(|a| {
        a.db()
            .lenient_replay_issues()
            .map_err(|e| sqlite_failure(&e, "QUERY_FAILED"))
    })
}
