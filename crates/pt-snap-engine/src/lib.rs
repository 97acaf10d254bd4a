//! One open SnapshotDB answering the browser's questions, and the messages that carry them
//! (`protocol`). The browser's worker is a thin edge around this crate (the shape of ruff's
//! `ruff_wasm`): it turns messages into calls of [`Engine`] and results back into messages,
//! so every answer the page can get is computed — and tested — here, natively, by the same
//! shared crates as the CLI's.

#![forbid(unsafe_code)]

pub mod preview;
pub mod protocol;
mod segments;

use pt_snap_db::SnapshotDb;
use pt_snap_query::{
    registry, Analyzer, Interrupt, Lifetime, QueryError, QueryRequest, TimelineRequest,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pt_snap_query::category::{CategoryRules, MEMORY_CATEGORIES, NO_ALLOCATION_EVENT, NO_FRAMES};
use pt_snap_report::allocations::{allocations, AllocationRequest, Colour};
use pt_snap_report::diff::{self, DiffRequest};
use pt_snap_report::{
    memory_tree, oom_report, peak_memory, stack, Grouping, OomRequest, PeakRequest, TreeRequest,
};
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::Connection;
use serde_json::Value as Json;

pub use protocol::*;

/// Where a database came from, for its [`Overview`].
#[derive(Debug, Clone)]
pub struct Origin {
    pub name: String,
    pub imported: bool,
    pub db_bytes: u64,
    pub warnings: Vec<String>,
    pub storage: Storage,
    pub cache_hit: bool,
    pub source_unchecked: bool,
}

/// Bounds of an allocation timeline question: a column per pixel of a wide screen at most,
/// and as many kept blocks as a picture can tell apart.
const MAX_COLUMNS: usize = 4096;
const MAX_TOP: usize = 5000;

/// Callstack groups and largest blocks per OOM: `report oom`'s default.
const OOM_TOP: i64 = 10;

/// Why a question stopped early, told by the caller's interrupt: the clock or a newer question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Deadline,
    Superseded,
}

/// An open database and what the page knows of it.
pub struct Engine {
    analyzer: Analyzer,
    overview: Overview,
    /// Set while the SQL console's statement is prepared: [`console_authorizer`] refuses
    /// then what `query_only` and `readonly()` let through.
    console: Arc<AtomicBool>,
    /// One device's block lifetimes, read once for the allocation timeline: every window
    /// is cut from them without another scan of the table.
    blocks: LastDevice<DeviceBlocks>,
    /// The segment map's replays and the segment timeline's bands ([`segments`]).
    segments: segments::Segments,
}

/// One device's data for a timeline, read once and kept until another device is asked for:
/// every window is cut from it without another scan of the database.
struct LastDevice<T>(RefCell<Option<(i64, Rc<T>)>>);

impl<T> Default for LastDevice<T> {
    fn default() -> Self {
        LastDevice(RefCell::new(None))
    }
}

impl<T> LastDevice<T> {
    /// `device`'s data, kept, or `read` now (and kept instead of the last device's).
    fn get(
        &self,
        device: i64,
        read: impl FnOnce() -> Result<T, Refusal>,
    ) -> Result<Rc<T>, Refusal> {
        if let Some((d, kept)) = &*self.0.borrow() {
            if *d == device {
                return Ok(Rc::clone(kept));
            }
        }
        let data = Rc::new(read()?);
        *self.0.borrow_mut() = Some((device, Rc::clone(&data)));
        Ok(data)
    }
}

/// A device's blocks, and (once asked for) their stacks' categories under the last rules
/// asked for.
struct DeviceBlocks {
    lifetimes: Vec<Lifetime>,
    categories: RefCell<Option<Rc<BlockCategories>>>,
    /// Each stack's label once read (`None`: an empty stack), so a window dragged across
    /// asks the database only for stacks it has not labelled yet.
    sites: RefCell<HashMap<i64, Option<String>>>,
}

/// Each stack's category under one set of rules (`None`: the built-in ones), judged once
/// per distinct stack.
struct BlockCategories {
    rules: Option<String>,
    by_stack: HashMap<i64, (u16, String)>,
}

impl DeviceBlocks {
    fn categories(
        &self,
        a: &Analyzer,
        rules: Option<&str>,
    ) -> Result<Rc<BlockCategories>, Refusal> {
        if let Some(c) = self
            .categories
            .borrow()
            .as_ref()
            .filter(|c| c.rules.as_deref() == rules)
        {
            return Ok(Rc::clone(c));
        }
        let custom;
        let judge = match rules {
            None => CategoryRules::builtin(),
            Some(text) => {
                custom = CategoryRules::parse(text)
                    .map_err(|e| Refusal::Other(Failure::new(ErrorCode::InvalidParameter, e)))?;
                &custom
            }
        };
        let mut ids: Vec<i64> = self.lifetimes.iter().filter_map(|b| b.callstack).collect();
        ids.sort_unstable();
        ids.dedup();
        let by_stack = a
            .callstack_texts(&ids)?
            .into_iter()
            .map(|(id, text)| {
                let c = judge.categorise_text(Some(&text));
                (id, (category_index(c.category), c.rule.to_owned()))
            })
            .collect();
        let judged = Rc::new(BlockCategories {
            rules: rules.map(str::to_owned),
            by_stack,
        });
        *self.categories.borrow_mut() = Some(Rc::clone(&judged));
        Ok(judged)
    }
}

impl DeviceBlocks {
    /// `(stack id, label)` of the stacks `ids` (sorted) that have a text.
    fn sites(&self, a: &Analyzer, ids: &[i64]) -> Result<Vec<(i64, String)>, Refusal> {
        let missing: Vec<i64> = {
            let known = self.sites.borrow();
            ids.iter()
                .copied()
                .filter(|id| !known.contains_key(id))
                .collect()
        };
        if !missing.is_empty() {
            let texts: HashMap<i64, String> = a.callstack_texts(&missing)?.into_iter().collect();
            let mut known = self.sites.borrow_mut();
            for id in missing {
                let label = texts
                    .get(&id)
                    .filter(|t| !t.trim().is_empty())
                    .map(|t| stack::label_text(t).unwrap_or_default());
                known.insert(id, label);
            }
        }
        let known = self.sites.borrow();
        Ok(ids
            .iter()
            .filter_map(|id| Some((*id, known.get(id)?.clone()?)))
            .collect())
    }
}

impl BlockCategories {
    /// A block's category (an index of `MEMORY_CATEGORIES`) and the rule that chose it.
    fn of(&self, b: &Lifetime) -> (u16, &str) {
        if b.alloc == -1 {
            return (category_index("unknown"), NO_ALLOCATION_EVENT);
        }
        match b.callstack.and_then(|id| self.by_stack.get(&id)) {
            Some((k, rule)) => (*k, rule),
            None => (category_index("unknown"), NO_FRAMES),
        }
    }
}

fn category_index(name: &str) -> u16 {
    let unknown = MEMORY_CATEGORIES.len() - 1;
    MEMORY_CATEGORIES
        .iter()
        .position(|c| *c == name)
        .unwrap_or(unknown) as u16
}

/// How the engine answers one kind of question: with that question's answer type, so
/// [`Engine::dispatch`] cannot give a question another's answer.
trait Answers: Question {
    fn answer(&self, engine: &Engine) -> Result<Self::Answer, Refusal>;
}

impl Answers for question::Peaks {
    fn answer(&self, engine: &Engine) -> Result<Peaks, Refusal> {
        engine.peaks(self.device)
    }
}

impl Answers for question::Timeline {
    fn answer(&self, engine: &Engine) -> Result<Timeline, Refusal> {
        Ok(engine.analyzer.timeline(&TimelineRequest {
            device: Some(self.device),
            start_id: self.window.map(|w| w.0),
            end_id: self.window.map(|w| w.1),
            buckets: self.buckets,
        })?)
    }
}

impl Answers for question::Event {
    fn answer(&self, engine: &Engine) -> Result<Option<EventInfo>, Refusal> {
        engine.event(self.device, self.id)
    }
}

impl Answers for question::PeakReport {
    fn answer(&self, engine: &Engine) -> Result<PeakReport, Refusal> {
        engine.peak_report(self.device, self.metric, self.include_static)
    }
}

impl Answers for question::Tree {
    fn answer(&self, engine: &Engine) -> Result<String, Refusal> {
        let req = TreeRequest {
            device: Some(self.device),
            event_id: self.event_id,
            include_static: self.include_static,
            min_size: 0,
        };
        Ok(memory_tree(&engine.analyzer, &req)?
            .flamegraph_data()
            .to_string())
    }
}

impl Answers for question::Template {
    fn answer(&self, engine: &Engine) -> Result<Table, Refusal> {
        let mut req = QueryRequest::new(&self.template)
            .device(self.device)
            .max_rows(self.max_rows)
            .exact_total(self.exact_total);
        req.params = self.params.clone();
        let out = engine.analyzer.run(&req)?;
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
    }
}

impl Answers for question::Sql {
    fn answer(&self, engine: &Engine) -> Result<Table, Refusal> {
        engine.sql(&self.sql, self.cap)
    }
}

impl Answers for question::RankSummary {
    fn answer(
        &self,
        engine: &Engine,
    ) -> Result<Vec<pt_snap_report::ranks::DeviceSummary>, Refusal> {
        Ok(pt_snap_report::ranks::summarize(
            &engine.analyzer,
            None,
            self.metric,
        )?)
    }
}

impl Answers for question::Allocations {
    fn answer(&self, engine: &Engine) -> Result<AllocationView, Refusal> {
        engine.allocations(
            self.device,
            self.window,
            (self.columns, self.top),
            self.colour,
            self.rules.as_deref(),
        )
    }
}

impl Answers for question::Oom {
    fn answer(&self, engine: &Engine) -> Result<pt_snap_report::OomReport, Refusal> {
        let a = &engine.analyzer;
        let request = OomRequest {
            device: None,
            top_n: OOM_TOP,
            category_rules: pt_snap_report::categories::Rules(self.rules.clone()),
        };
        let db = a.db();
        Ok(oom_report(a, &request, &|d| {
            let d = usize::try_from(d).map_err(|_| QueryError::DeviceNotFound(d.to_string()))?;
            db.oom_device_free(d)
                .map_err(|e| QueryError::ReadFailed(e.to_string()))
        })?)
    }
}

impl Answers for question::DiffSide {
    fn answer(&self, engine: &Engine) -> Result<pt_snap_report::diff::Side, Refusal> {
        let a = &engine.analyzer;
        let req = DiffRequest {
            device: self.device,
            metric: self.metric,
        };
        Ok(diff::measure(a, &req, |device| {
            let req = TimelineRequest {
                device: Some(device),
                ..TimelineRequest::new(self.buckets)
            };
            let (by_event, by_time) = a.timelines(&req)?;
            Ok(diff::Timelines { by_event, by_time })
        })?)
    }
}

impl Engine {
    /// Opens a SnapshotDB image (a dropped `.db`), read-only; `DATABASE_SCHEMA_INVALID` when it
    /// is not one.
    pub fn from_image(
        image: impl std::io::Read,
        len: usize,
        origin: Origin,
    ) -> Result<Self, Failure> {
        let mut db = SnapshotDb::from_reader(image, len).map_err(schema_invalid)?;
        let console = console_authorizer(db.conn_mut())?;
        Self::new(Analyzer::new(db).map_err(schema_invalid)?, origin, console)
    }

    /// Takes over a connection (a database just imported, or one opened from storage) and
    /// makes it read-only: the page's SQL console runs the user's statements on it.
    pub fn from_connection(mut conn: Connection, origin: Origin) -> Result<Self, Failure> {
        conn.execute_batch("PRAGMA query_only = 1; PRAGMA trusted_schema = 0")
            .map_err(|e| {
                Failure::new(
                    ErrorCode::DatabaseSchemaInvalid,
                    pt_snap_db::sqlite_message(&e),
                )
            })?;
        let console = console_authorizer(&mut conn)?;
        let db = SnapshotDb::from_connection(conn).map_err(schema_invalid)?;
        Self::new(Analyzer::new(db).map_err(schema_invalid)?, origin, console)
    }

    fn new(analyzer: Analyzer, origin: Origin, console: Arc<AtomicBool>) -> Result<Self, Failure> {
        let db = analyzer.db();
        let bounds = db
            .bounds()
            .map_err(|e| {
                Failure::new(
                    ErrorCode::DatabaseSchemaInvalid,
                    pt_snap_db::sqlite_message(&e),
                )
            })?
            .into_iter()
            .map(|b| (b.device, b.events))
            .collect();
        let metadata = match db.metadata() {
            Ok(Ok(m)) => Ok(metadata_rows(&m)),
            Ok(Err(pt_snap_db::MetadataProblem::Missing)) => Err(
                "No import metadata (a database from an older importer; still queryable).".into(),
            ),
            Ok(Err(problem)) => Err(format!("Import metadata is not valid: {problem:?}")),
            Err(e) => Err(pt_snap_db::sqlite_message(&e)),
        };
        let lenient_issues = db
            .lenient_replay_issues()
            .map_err(|e| Failure::new(ErrorCode::QueryFailed, pt_snap_db::sqlite_message(&e)))?;
        let overview = Overview {
            name: origin.name,
            imported: origin.imported,
            db_bytes: origin.db_bytes,
            devices: analyzer.devices().to_vec(),
            bounds,
            metadata,
            warnings: origin.warnings,
            lenient_issues,
            storage: origin.storage,
            cache_hit: origin.cache_hit,
            source_unchecked: origin.source_unchecked,
        };
        Ok(Engine {
            analyzer,
            overview,
            console,
            blocks: Default::default(),
            segments: Default::default(),
        })
    }

    pub fn overview(&self) -> &Overview {
        &self.overview
    }

    /// Indexes an import of ours left to build ([`pt_snap_import::Indexes::Deferred`]).
    /// A database opened as a file is never written, so it has none left.
    pub fn indexes_left(&self) -> Result<usize, Failure> {
        Ok(self.missing_indexes()?.len())
    }

    /// `left` indexes still to build, with the database's size as the overview has it (the
    /// whole database's once none is left).
    pub fn indexes_report(&self, left: usize) -> IndexesLeft {
        IndexesLeft {
            left,
            db_bytes: self.overview.db_bytes,
        }
    }

    /// Builds the next index [`Engine::indexes_left`] counts, lifting `query_only` for it
    /// alone, and says how many are left after it; `None` when none was left to build. When
    /// none is left, the overview's `db_bytes` is the whole database's.
    pub fn build_next_index(&mut self) -> Result<Option<usize>, Failure> {
        let missing = self.missing_indexes()?;
        let Some(next) = missing.first() else {
            return Ok(None);
        };
        self.build_index(next, missing.len() - 1)
    }

    /// Builds, ahead of the order [`Engine::build_next_index`] takes, the indexes `query`
    /// cannot do without (only a segment map has any: [`question::Segments::indexes`]), and
    /// says how many are left after them; `None` when it needs none that is missing.
    pub fn build_indexes_for(&mut self, query: &Query) -> Result<Option<usize>, Failure> {
        let wanted = match query {
            Query::Segments(q) => q.indexes(),
            _ => return Ok(None),
        };
        let missing = self.missing_indexes()?;
        let needed: Vec<&String> = (missing.iter())
            .filter(|s| wanted.iter().any(|w| w == pt_snap_db::index_name(s)))
            .collect();
        let mut left = None;
        for (i, statement) in needed.iter().enumerate() {
            left = self.build_index(statement, missing.len() - 1 - i)?;
        }
        Ok(left)
    }

    /// Builds the index `statement`, `left` others being missing after it.
    fn build_index(&mut self, statement: &str, left: usize) -> Result<Option<usize>, Failure> {
        let conn = self.analyzer.db().conn();
        let failed = |e: rusqlite::Error| {
            Failure::new(
                ErrorCode::QueryFailed,
                format!("building an index: {}", pt_snap_db::sqlite_message(&e)),
            )
        };
        // Within a transaction left open the index would be the transaction's to commit;
        // the console cannot open one ([`console_authorizer`]), so this is a bug's guard.
        if !conn.is_autocommit() {
            return Err(Failure::new(
                ErrorCode::Internal,
                "building an index: a transaction is open on the database",
            ));
        }
        conn.execute_batch("PRAGMA query_only = 0")
            .map_err(failed)?;
        let built = pt_snap_db::build_index(conn, statement);
        conn.execute_batch("PRAGMA query_only = 1")
            .map_err(failed)?;
        built.map_err(failed)?;
        if left == 0 {
            self.overview.db_bytes = conn
                .query_row(
                    "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(failed)? as u64;
        }
        Ok(Some(left))
    }

    fn missing_indexes(&self) -> Result<Vec<String>, Failure> {
        if !self.overview.imported {
            return Ok(Vec::new());
        }
        let devices: Vec<usize> = self
            .analyzer
            .devices()
            .iter()
            .map(|&d| d as usize)
            .collect();
        pt_snap_db::missing_indexes(self.analyzer.db().conn(), &devices)
            .map_err(|e| Failure::new(ErrorCode::QueryFailed, pt_snap_db::sqlite_message(&e)))
    }

    /// Hands `f` the database's image, for "Download .db" of an in-memory database.
    pub fn with_image<T>(&mut self, f: impl FnOnce(&[u8]) -> T) -> Result<T, Failure> {
        self.analyzer
            .with_image(f)
            .map_err(|e| Failure::new(ErrorCode::QueryFailed, pt_snap_db::sqlite_message(&e)))
    }

    /// Answers one question. `interrupt` is polled while SQLite works and says why to stop;
    /// `budget_s` words the `QUERY_TIMEOUT` message as the CLI's `--timeout` would.
    pub fn answer(
        &self,
        query: &Query,
        interrupt: impl Fn() -> Option<Stop> + Send + Sync + 'static,
        budget_s: f64,
    ) -> Result<Answer, Failure> {
        let stop = std::sync::Arc::new(std::sync::Mutex::new(None));
        let seen = std::sync::Arc::clone(&stop);
        let poll: Interrupt = std::sync::Arc::new(move || match interrupt() {
            Some(why) => {
                *seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
                true
            }
            None => false,
        });
        self.analyzer.set_interrupt(Some(poll));
        let answer = self.dispatch(query);
        self.analyzer.set_interrupt(None);
        let stopped = *stop.lock().unwrap_or_else(|p| p.into_inner());
        answer.map_err(|e| match (stopped, e) {
            (Some(Stop::Superseded), _) => protocol::superseded(),
            (Some(Stop::Deadline), _) | (None, Refusal::Query(QueryError::Timeout)) => {
                Failure::new(
                    ErrorCode::QueryTimeout,
                    QueryError::timeout_message(budget_s),
                )
            }
            (None, Refusal::Query(e)) => Failure::from(e),
            (None, Refusal::Sqlite(e)) => {
                Failure::new(ErrorCode::QueryFailed, pt_snap_db::sqlite_message(&e))
            }
            (None, Refusal::Other(f)) => f,
        })
    }

    /// Answers `question`, typed: the answer of its own kind, or why there is none.
    pub fn ask<Q: Question>(
        &self,
        question: Q,
        interrupt: impl Fn() -> Option<Stop> + Send + Sync + 'static,
        budget_s: f64,
    ) -> Result<Q::Answer, Failure> {
        answer_of::<Q>(self.answer(&question.into(), interrupt, budget_s))
    }

    fn dispatch(&self, query: &Query) -> Result<Answer, Refusal> {
        /// The answer of `q`'s own type, as the wire carries it.
        fn by<Q: Answers>(q: &Q, engine: &Engine) -> Result<Answer, Refusal> {
            q.answer(engine).map(Q::wrap)
        }
        match query {
            Query::Peaks(q) => by(q, self),
            Query::Timeline(q) => by(q, self),
            Query::Event(q) => by(q, self),
            Query::PeakReport(q) => by(q, self),
            Query::Tree(q) => by(q, self),
            Query::Template(q) => by(q, self),
            Query::Sql(q) => by(q, self),
            Query::RankSummary(q) => by(q, self),
            Query::Allocations(q) => by(q, self),
            Query::Oom(q) => by(q, self),
            Query::DiffSide(q) => by(q, self),
            Query::Segments(q) => by(q, self),
            Query::SegmentTimeline(q) => by(q, self),
            Query::Capture(q) => by(q, self),
        }
    }

    /// `device`'s first and last real events; `None` without any.
    fn bounds_of(&self, device: i64) -> Option<(i64, i64)> {
        (self.overview.bounds.iter())
            .find(|(d, _)| *d == device)
            .and_then(|(_, b)| *b)
    }

    fn peaks(&self, device: i64) -> Result<Peaks, Refusal> {
        let out = self
            .analyzer
            .run(&QueryRequest::new("memory_peak").device(device))?;
        Ok(match out.rows_json().into_iter().next() {
            Some(Json::Object(row)) => Peaks::of_row(&row),
            _ => Peaks::default(),
        })
    }

    fn event(&self, device: i64, id: i64) -> Result<Option<EventInfo>, Refusal> {
        let out = self
            .analyzer
            .run(&QueryRequest::new("event").device(device).param("id", id))?;
        let Some(row) = out.rows_json().into_iter().next() else {
            return Ok(None);
        };
        let num = |k: &str| row.get(k).and_then(Json::as_i64).unwrap_or(0);
        let callstack = row
            .get("callstack")
            .and_then(Json::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
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
            label: callstack.as_deref().and_then(stack::label_text),
            callstack,
        }))
    }

    fn allocations(
        &self,
        device: i64,
        window: Option<(i64, i64)>,
        (columns, top): (usize, usize),
        colour: Colour,
        rules: Option<&str>,
    ) -> Result<AllocationView, Refusal> {
        let a = &self.analyzer;
        let device_blocks = self.blocks.get(device, || {
            let (_, lifetimes) = a.lifetimes(Some(device))?;
            Ok(DeviceBlocks {
                lifetimes,
                categories: RefCell::new(None),
                sites: RefCell::default(),
            })
        })?;
        let bounds = self.bounds_of(device);
        let req = AllocationRequest {
            window,
            columns: columns.min(MAX_COLUMNS),
            top: top.min(MAX_TOP),
        };
        let blocks = &device_blocks.lifetimes;
        let (allocations, rules) = match colour {
            Colour::Site => (
                allocations(blocks, bounds, &req, vec!["other blocks".into()], |_| 0),
                Vec::new(),
            ),
            Colour::Category => {
                let categories = device_blocks.categories(a, rules)?;
                let keys = MEMORY_CATEGORIES.iter().map(|c| (*c).to_owned()).collect();
                let view = allocations(blocks, bounds, &req, keys, |b| categories.of(b).0);
                let mut rules: Vec<(i64, String)> = view
                    .bands
                    .iter()
                    .map(|b| (b.block.block, categories.of(&b.block).1.to_owned()))
                    .collect();
                rules.sort_unstable();
                (view, rules)
            }
        };
        let mut ids: Vec<i64> = allocations
            .bands
            .iter()
            .filter_map(|b| b.block.callstack)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let sites = device_blocks.sites(a, &ids)?;
        Ok(AllocationView {
            allocations,
            sites,
            rules,
        })
    }

    fn peak_report(
        &self,
        device: i64,
        metric: Metric,
        include_static: bool,
    ) -> Result<PeakReport, Refusal> {
        let req = PeakRequest {
            device: Some(device),
            metric,
            include_static,
            limit: 20,
            stack_bytes: -1,
            start_id: None,
            end_id: None,
            by: Grouping::Callstack,
        };
        let r = peak_memory(&self.analyzer, &req)?;
        let groups = r
            .groups()
            .map(|g| CallstackGroup {
                size_bytes: g.size_bytes,
                requested_bytes: g.requested_bytes,
                block_count: g.block_count,
                percent_of_active_blocks: g.percent_of_active_blocks,
                category: g.category.to_owned(),
                callstack: g.callstack.to_owned(),
                label: g.label(),
            })
            .collect();
        Ok(PeakReport {
            metric,
            event_id: r.event_id,
            groups,
            has_more: r.has_more,
            included_bytes: r.included_bytes,
            active_bytes_at_event: r.active_bytes_at_event,
            coverage_percent: r.coverage_percent,
            allocator_gap: r
                .allocator_gap
                .map(|m| m.into_iter().collect())
                .unwrap_or_default(),
        })
    }

    fn sql(&self, sql: &str, cap: usize) -> Result<Table, Refusal> {
        let conn = self.analyzer.db().conn();
        let read_only = || {
            Refusal::Other(Failure::new(
                ErrorCode::QueryFailed,
                "Only read-only statements run here (SELECT, WITH, PRAGMA that reads); \
                 not writes, ATTACH, transactions or PRAGMA settings.",
            ))
        };
        self.console.store(true, Ordering::Relaxed);
        let prepared = conn.prepare(sql);
        self.console.store(false, Ordering::Relaxed);
        let mut stmt = match prepared {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::AuthorizationForStatementDenied =>
            {
                return Err(read_only());
            }
            other => other?,
        };
        // The connection is query_only already; refusing here gives a clearer message.
        if !stmt.readonly() {
            return Err(read_only());
        }
        let columns: Vec<String> = stmt.column_names().map(str::to_owned).collect();
        let n = columns.len();
        let mut rows = Vec::new();
        let mut more = false;
        let mut q = stmt.query([])?;
        while let Some(r) = q.next()? {
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
    }
}

/// Template names with their category and description, in registry order.
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

/// A template's description and interpretation limits, as its contract words them.
pub fn contract_notes(template: &str) -> (String, Vec<String>) {
    registry::find(template).map_or_else(Default::default, |t| {
        (
            t.contract.description.clone(),
            t.contract.interpretation_limits.clone(),
        )
    })
}

/// How a question failed inside [`Engine::dispatch`], before [`Engine::answer`] knows
/// whether its interrupt fired.
enum Refusal {
    Query(QueryError),
    Sqlite(rusqlite::Error),
    Other(Failure),
}

impl From<QueryError> for Refusal {
    fn from(e: QueryError) -> Self {
        Refusal::Query(e)
    }
}

impl From<rusqlite::Error> for Refusal {
    fn from(e: rusqlite::Error) -> Self {
        Refusal::Sqlite(e)
    }
}

/// PRAGMAs that take an argument and only read.
const READING_PRAGMAS: &[&str] = &[
    "foreign_key_check",
    "foreign_key_list",
    "index_info",
    "index_list",
    "index_xinfo",
    "integrity_check",
    "quick_check",
    "table_info",
    "table_list",
    "table_xinfo",
];

/// Installs the authorizer that holds the SQL console to reading while the returned flag is
/// set. `query_only` and `readonly()` refuse writes, yet not what changes the connection
/// itself: ATTACH (on a writable OPFS connection it makes files in the cache's pool), a
/// transaction left open (a deferred index would be built inside it), or a PRAGMA setting
/// (`query_only = 0` among them). The engine's own statements run with the flag clear.
fn console_authorizer(conn: &mut Connection) -> Result<Arc<AtomicBool>, Failure> {
    let console = Arc::new(AtomicBool::new(false));
    let on = Arc::clone(&console);
    conn.authorizer(Some(move |ctx: AuthContext<'_>| {
        if !on.load(Ordering::Relaxed) {
            return Authorization::Allow;
        }
        match ctx.action {
            AuthAction::Attach { .. }
            | AuthAction::Detach { .. }
            | AuthAction::Transaction { .. }
            | AuthAction::Savepoint { .. } => Authorization::Deny,
            AuthAction::Pragma {
                pragma_name,
                pragma_value: Some(_),
            } if !READING_PRAGMAS.contains(&pragma_name.to_ascii_lowercase().as_str()) => {
                Authorization::Deny
            }
            _ => Authorization::Allow,
        }
    }))
    .map_err(|e| Failure::new(ErrorCode::Internal, pt_snap_db::sqlite_message(&e)))?;
    Ok(console)
}

fn schema_invalid(e: pt_snap_db::OpenError) -> Failure {
    Failure::new(ErrorCode::DatabaseSchemaInvalid, e.to_string())
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
