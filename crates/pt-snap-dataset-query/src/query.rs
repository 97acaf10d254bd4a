//! Dataset-global answers of the 11 supported templates (Appendix B's dataset semantics):
//!
//! * event ranges (`event`, `allocation`, `memory_peak`, `allocator_gap`,
//!   `callstack_analysis`): real events only, merged over the device's shards in id order;
//! * point events (`active_blocks_at_event`, `active_memory_callstack_at_event`,
//!   `preexisting_live`): the shard owning the event holds the exact live set (its left
//!   boundary rows carry the earlier state); allocation callstacks come from the shards that
//!   own the allocation events (read-only `ATTACH`);
//! * lifecycles (`block`, `leak_detection`, `freed_block_lifetime`): block observations of
//!   all shards deduplicated to one row per lifecycle (the latest observation), with
//!   allocation/free proofs from the owner shards — in an attached in-memory database for
//!   small observation sets, in a page-limited scratch database (`--max-scratch-db-bytes`)
//!   otherwise, which a lifecycle cache keeps in an indexed layout for later calls
//!   ([`derived`]).
//!
//! Where the access path differs from the reference's (kept derivations, index-only probes,
//! a point event's live set read through the index holding the fewest entries), the rows
//! fetched are still its rows, charged as it charges them.

use std::collections::HashMap;

use pt_snap_contract::publish;
use pt_snap_dataset::manifest::SliceRecord;
use pt_snap_dataset::read::{Dataset, SUPPORTED};
use pt_snap_db::rusqlite::{self, types::Value as Sql, Connection, OpenFlags};
use pt_snap_query::{
    registry, Analyzer, ParamValue, Params, QueryError, QueryOutcome, QueryRequest,
};
use serde_json::{json, Map, Value};

use crate::derived::{self, BLOCK_COLUMNS};
use crate::sources::{
    install_interrupt, read_rows, sha_hex, sql_failed, EventSource, Row, Sources,
};
use crate::{Budget, DatasetOptions};

mod attach;
mod attribution;
mod callstacks;
mod events;
mod lifecycles;
mod peaks;

use attribution::{attribution, preexisting};
use callstacks::text_stacks;
use events::events_page;
use lifecycles::lifecycles;
use peaks::peaks;

const METRICS: [&str; 3] = ["allocated", "active", "reserved"];
/// SQLite's default `SQLITE_LIMIT_ATTACHED`.
const ATTACH_LIMIT: usize = 10;
/// Beyond this many block observations the lifecycle merge goes to the scratch database.
const ATTACHED_OBSERVATION_LIMIT: i64 = 4096;
const BUCKETS: [&str; 5] = ["<1k", "1k-5k", "5k-20k", "20k-100k", ">=100k"];

/// One question to a merge: the template, its validated parameters, the `-n` cap,
/// `--exact-total` and the shard `--slice` selects.
#[derive(Clone, Copy)]
struct Question<'q> {
    template: &'q str,
    params: &'q Params,
    max_rows: Option<i64>,
    exact_total: bool,
    slice: Option<usize>,
}

struct Page {
    rows: Vec<Row>,
    total: i64,
    has_more: bool,
    offset: i64,
    scope: Map<String, Value>,
}

fn failed(msg: &str) -> QueryError {
    QueryError::Failed(msg.to_owned())
}

fn int(p: &Params, name: &str) -> Option<i64> {
    p.int(name)
}

/// Answers `req`, charged to a work budget the caller carries over several queries: a
/// report's composition runs all its queries inside one budget and one deadline (spec §8.1),
/// so the second query fails where the first one's rows and bytes plus its own exceed the
/// limits. On success the budget holds the consumption of every query charged to it so far.
pub fn run_charged(
    ds: &Dataset,
    req: &QueryRequest,
    options: &DatasetOptions,
    budget: &mut Budget,
) -> Result<QueryOutcome, QueryError> {
    let ids = ds.device_ids();
    let device_id = req.device.unwrap_or(ids[0]);
    let device = ds.manifest.device(device_id).ok_or_else(|| {
        QueryError::DeviceNotFound(format!("Device {device_id} not found. Available: {ids:?}"))
    })?;
    let t = registry::find(&req.template)
        .ok_or_else(|| QueryError::TemplateNotFound(req.template.clone()))?;
    if !SUPPORTED.iter().any(|(n, _)| *n == req.template) {
        return Err(failed(
            "Unsupported dataset-global template/custom SQL or runtime override; select an \
             explicit standalone member. A built-in name is not a merge contract.",
        ));
    }
    for name in ["id", "min_id", "max_id", "start_id", "end_id", "event_id"] {
        if req.params.get(name).is_some_and(Value::is_boolean) {
            return Err(QueryError::OutOfScope(
                "Event/block endpoints must not be booleans.".into(),
            ));
        }
    }
    let params = Analyzer::validate(&req.template, &req.params)?;
    let slice = match options.slice {
        None => None,
        Some(s) if s >= 0 && (s as usize) < device.slices.len() => Some(s as usize),
        Some(_) => {
            return Err(QueryError::OutOfScope(
                "scope.slice_index: range: integer out of range".into(),
            ))
        }
    };
    let carried = Budget {
        limits: budget.limits,
        rows: budget.rows,
        bytes: budget.bytes,
        interrupt: budget.interrupt.clone(),
    };
    let mut src = Sources::new(ds, device, carried);
    src.lifecycle_cache = options.lifecycle_cache.clone();
    let question = Question {
        template: req.template.as_str(),
        params: &params,
        max_rows: req.max_rows,
        exact_total: req.exact_total,
        slice,
    };
    let mut page = match question.template {
        "active_blocks_at_event" | "active_memory_callstack_at_event" => {
            attribution(&mut src, question)?
        }
        _ => global(&mut src, question)?,
    };
    if let Some(b) = int(&params, "stack_bytes").filter(|b| *b >= 0) {
        summarize_stacks(&mut page.rows, b);
    }
    src.budget.check()?;
    page.scope
        .insert("work_budget".into(), src.budget.describe());
    (budget.rows, budget.bytes) = (src.budget.rows, src.budget.bytes);
    let c = &t.contract;
    let mut effective = params;
    if let Some(n) = req.max_rows.filter(|n| *n > 0) {
        let cap = match c
            .has_parameter("limit")
            .then(|| effective.int_or("limit", -1))
        {
            Some(l) if l >= 0 => l.min(n),
            _ => n,
        };
        effective.set("limit", ParamValue::Int(cap));
    }
    let returned = page.rows.len() as i64;
    // Every row of one answer has the same keys: they are the columns, in order.
    let columns: Vec<String> = page
        .rows
        .first()
        .map(|r| r.keys().cloned().collect())
        .unwrap_or_default();
    let rows = page
        .rows
        .into_iter()
        .map(|row| {
            debug_assert!(
                row.keys().eq(columns.iter()),
                "rows of one answer differ in keys"
            );
            row.into_iter()
                .map(|(_, v)| pt_snap_query::Value::from(v))
                .collect()
        })
        .collect();
    Ok(QueryOutcome {
        template: c.name.clone(),
        device_id,
        effective_params: effective,
        semantics_version: c.semantics_version,
        columns,
        rows,
        total: if req.exact_total {
            page.total
        } else {
            returned
        },
        returned,
        has_more: page.has_more,
        truncated: page.has_more || page.offset > 0,
        total_is_exact: req.exact_total || (!page.has_more && page.offset == 0),
        scope: Some(Value::Object(page.scope)),
    })
}

/// `stack_bytes` on dataset rows: the text is cut, the dataset identity is kept.
fn summarize_stacks(rows: &mut [Row], budget: i64) {
    let limit = usize::try_from(budget).unwrap_or(usize::MAX);
    for row in rows {
        let text = row
            .get("callstack")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let len = text.as_deref().map_or(0, str::len);
        row.insert("stack_bytes".into(), json!(budget));
        row.insert("stack_original_bytes".into(), json!(len));
        row.insert("stack_truncated".into(), json!(len > limit));
        if let Some(t) = text.filter(|t| t.len() > limit) {
            let mut end = limit;
            while !t.is_char_boundary(end) {
                end -= 1;
            }
            row.insert("callstack".into(), json!(&t[..end]));
        }
    }
}

fn i(v: i64) -> Sql {
    Sql::Integer(v)
}

fn get_i(row: &Row, k: &str) -> Option<i64> {
    row.get(k).and_then(Value::as_i64)
}

/// The trace events of these blocks' lifetimes: every `allocEventId` and `freeEventId` that
/// is a real event (not negative), in row order.
fn lifetime_event_ids(blocks: &[Row]) -> Vec<i64> {
    blocks
        .iter()
        .flat_map(|b| [get_i(b, "allocEventId"), get_i(b, "freeEventId")])
        .flatten()
        .filter(|v| *v >= 0)
        .collect()
}

/// `(offset, limit)` of a template's row window with the `-n` cap.
fn window(params: &Params, max_rows: Option<i64>) -> (i64, i64) {
    let offset = int(params, "offset").unwrap_or(0).max(0);
    let mut limit = int(params, "limit").unwrap_or(-1);
    if let Some(n) = max_rows.filter(|n| *n > 0) {
        limit = if limit >= 0 { limit.min(n) } else { n };
    }
    (offset, limit)
}

fn range_scope(src: &Sources, low: i64, high: i64, items: &[usize]) -> Map<String, Value> {
    let slices = &src.device.slices;
    let mut m = Map::new();
    m.insert("kind".into(), json!("event_range"));
    m.insert("device_id".into(), json!(src.device.device_id));
    m.insert(
        "slice_index".into(),
        if items.len() == 1 {
            json!(slices[items[0]].index)
        } else {
            Value::Null
        },
    );
    m.insert("slice_indices".into(), json!(items));
    m.insert("first_event_id".into(), json!(low));
    m.insert("last_event_id".into(), json!(high));
    m.insert(
        "requested_range".into(),
        json!({"first_event_id": low, "last_event_id": high}),
    );
    m.insert(
        "dataset_path".into(),
        json!(src.ds.root.display().to_string()),
    );
    m.insert("fingerprint".into(), json!(src.ds.fingerprint));
    m.insert("boundary_events_included".into(), json!(false));
    m.insert("range_complete".into(), json!(true));
    m.insert("work_budget".into(), Value::Null);
    m
}

/// The event range of a range template, checked against the selected real scope.
fn event_range(
    src: &Sources,
    template: &str,
    params: &Params,
    slice: Option<usize>,
) -> Result<(i64, i64, Vec<usize>), QueryError> {
    let slices = &src.device.slices;
    let members: Vec<usize> = match slice {
        Some(s) => vec![s],
        None => (0..slices.len()).collect(),
    };
    let (mut low, mut high) = (
        slices[members[0]].start_event_id,
        slices[*members.last().unwrap_or(&0)].end_event_id,
    );
    let ranged = matches!(
        template,
        "event" | "allocation" | "memory_peak" | "allocator_gap"
    );
    let (start, end, event) = if !ranged {
        (None, None, None)
    } else if matches!(template, "memory_peak" | "allocator_gap") {
        (int(params, "start_id"), int(params, "end_id"), None)
    } else {
        (
            int(params, "min_id"),
            int(params, "max_id"),
            if template == "event" {
                int(params, "id")
            } else {
                None
            },
        )
    };
    for e in [start, end, event].into_iter().flatten() {
        if !(low..=high).contains(&e) {
            return Err(QueryError::OutOfScope(
                "Event range must lie within the selected real scope.".into(),
            ));
        }
    }
    if let Some(s) = start {
        low = s;
    }
    if let Some(e) = end {
        high = e;
    }
    if let Some(e) = event {
        low = low.max(e);
        high = high.min(e);
    } else if low > high {
        return Err(QueryError::OutOfScope(
            "Event range start must not exceed end.".into(),
        ));
    }
    let items = members
        .into_iter()
        .filter(|s| slices[*s].end_event_id >= low && slices[*s].start_event_id <= high)
        .collect();
    Ok((low, high, items))
}

/// Range evidence (`actual_range`), collected before non-range filters; returns the number
/// of rows matching `predicate` in total and per shard.
fn range_statistics(
    src: &mut Sources,
    low: i64,
    high: i64,
    items: &[usize],
    scope: &mut Map<String, Value>,
    predicate: &str,
    values: &[Sql],
) -> Result<(i64, HashMap<usize, i64>), QueryError> {
    let (mut count, mut matching) = (0, 0);
    let mut per = HashMap::new();
    let (mut first, mut last): (Option<i64>, Option<i64>) = (None, None);
    let trace = src.trace();
    for &item in items {
        let s = &src.device.slices[item];
        let rows = if predicate == "1" && covers(s, low, high) {
            // Validation proved the shard's real ids: its count and bounds are the manifest's.
            // The reference fetches this very row; it is charged the same.
            let mut row = Map::new();
            row.insert("first".into(), json!(s.start_event_id));
            row.insert("last".into(), json!(s.end_event_id));
            row.insert("count".into(), json!(s.event_count));
            row.insert("matching".into(), json!(s.event_count));
            src.query_count += 1;
            src.budget.consume(std::slice::from_ref(&row))?;
            vec![row]
        } else {
            let mut p = values.to_vec();
            p.extend([i(low), i(high)]);
            src.read(
                item,
                &format!(
                    "SELECT MIN(id) AS first, MAX(id) AS last, COUNT(*) AS count, \
                     COALESCE(SUM(CASE WHEN {predicate} THEN 1 ELSE 0 END), 0) AS matching \
                     FROM {trace} WHERE id>=0 AND id>=? AND id<=?"
                ),
                &p,
            )?
        };
        let r = &rows[0];
        count += get_i(r, "count").unwrap_or(0);
        let m = get_i(r, "matching").unwrap_or(0);
        matching += m;
        per.insert(item, m);
        if let (Some(f), Some(l)) = (get_i(r, "first"), get_i(r, "last")) {
            first = Some(first.map_or(f, |x| x.min(f)));
            last = Some(last.map_or(l, |x| x.max(l)));
        }
    }
    scope.insert(
        "actual_range".into(),
        json!({"first_event_id": first, "last_event_id": last, "real_event_count": count}),
    );
    Ok((matching, per))
}

/// Whether `[low, high]` holds every real event of the shard.
fn covers(s: &SliceRecord, low: i64, high: i64) -> bool {
    low <= s.start_event_id && high >= s.end_event_id
}

/// The id-range condition for a shard (`" AND id>=? AND id<=?"`), empty when the range
/// covers the whole shard: then SQLite can walk a counter index instead of the rowid range.
fn range_clause(s: &SliceRecord, low: i64, high: i64) -> (&'static str, Vec<Sql>) {
    if covers(s, low, high) {
        ("", vec![])
    } else {
        (" AND id>=? AND id<=?", vec![i(low), i(high)])
    }
}

fn predicates(params: &Params, fields: &[&str], alias: &str) -> (String, Vec<Sql>) {
    let mut clauses = Vec::new();
    let mut values = Vec::new();
    for f in fields {
        for (prefix, op) in [("", "="), ("min_", ">="), ("max_", "<=")] {
            if let Some(v) = int(params, &format!("{prefix}{f}")) {
                clauses.push(format!("{alias}\"{f}\" {op} ?"));
                values.push(i(v));
            }
        }
    }
    let p = if clauses.is_empty() {
        "1".to_owned()
    } else {
        clauses.join(" AND ")
    };
    (p, values)
}

/// Python's three stable sorts: by lifecycle id, then id, then the key (NULLs first), all
/// in one direction.
fn sort_rows(rows: &mut [Row], key: &str, desc: bool) {
    let lifecycle = |r: &Row| {
        r.get("lifecycle_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let cmp_val = |a: &Value, b: &Value| -> std::cmp::Ordering {
        use std::cmp::Ordering;
        match (a, b) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Less,
            (_, Value::Null) => Ordering::Greater,
            (Value::String(x), Value::String(y)) => x.cmp(y),
            (x, y) => x
                .as_f64()
                .partial_cmp(&y.as_f64())
                .unwrap_or(Ordering::Equal),
        }
    };
    let dir = |o: std::cmp::Ordering| if desc { o.reverse() } else { o };
    rows.sort_by(|a, b| dir(lifecycle(a).cmp(&lifecycle(b))));
    rows.sort_by(|a, b| dir(get_i(a, "id").cmp(&get_i(b, "id"))));
    rows.sort_by(|a, b| {
        dir(cmp_val(
            a.get(key).unwrap_or(&Value::Null),
            b.get(key).unwrap_or(&Value::Null),
        ))
    });
}

fn global(src: &mut Sources, question: Question) -> Result<Page, QueryError> {
    let (template, params, slice) = (question.template, question.params, question.slice);
    let (low, high, items) = event_range(src, template, params, slice)?;
    let mut scope = range_scope(src, low, high, &items);
    let (offset, limit) = window(params, question.max_rows);
    let candidate = if limit >= 0 { offset + limit } else { -1 };
    let mut total_override = None;
    let mut selected_offset = offset;
    let mut rows = match template {
        "memory_peak" | "allocator_gap" => peaks(src, low, high, &items, template, &mut scope)?,
        "event" | "allocation" => {
            let (rows, total) = events_page(
                src, low, high, &items, params, template, &mut scope, offset, limit,
            )?;
            total_override = Some(total);
            if params.str("order_by") == "id" {
                selected_offset = 0;
            }
            rows
        }
        "callstack_analysis" => text_stacks(src, low, high, &items, params, &mut scope)?,
        "preexisting_live" => {
            let (rows, event_scope) = preexisting(src, params, slice)?;
            scope = event_scope;
            rows
        }
        _ => {
            if template == "leak_detection" && slice.is_some() {
                return Err(failed(
                    "Dataset leak_detection requires terminal dataset scope, not --slice; select \
                     an explicit member for local observations.",
                ));
            }
            let (rows, matching) =
                lifecycles(src, &items, template, params, &mut scope, candidate)?;
            total_override = Some(matching);
            rows
        }
    };
    let total = total_override.unwrap_or(rows.len() as i64);
    let start = usize::try_from(selected_offset)
        .unwrap_or(usize::MAX)
        .min(rows.len());
    let mut selected: Vec<Row> = rows.drain(start..).collect();
    if limit >= 0 {
        selected.truncate(limit as usize);
    }
    if template == "event" {
        let ids: Vec<i64> = selected.iter().filter_map(|r| get_i(r, "id")).collect();
        let refs = src.events(ids.iter().copied())?;
        let detailed = int(params, "stack_bytes").unwrap_or(-1) >= 0;
        selected = ids
            .iter()
            .map(|id| {
                let s = &refs[id];
                let mut row = s.event.clone();
                if detailed {
                    row.insert("source_stack_id".into(), json!(s.stack_id));
                    row.insert("stack_id".into(), json!(s.stack_id));
                    row.insert("stack_kind".into(), json!(s.stack_kind));
                    row.insert("text_kind".into(), json!(s.text_kind()));
                    row.insert(
                        "stack_event_id".into(),
                        if s.stack_kind == "captured" {
                            json!(id)
                        } else {
                            Value::Null
                        },
                    );
                    row.insert("frames".into(), Value::Null);
                    row.insert("frames_status".into(), json!("text_only"));
                }
                row
            })
            .collect();
        let q = src.query_count;
        scope.insert(
            "source_coverage".into(),
            json!({
                "range_complete": true,
                "event_position": "after",
                "coverage_scope": "returned_events",
                "events_resolved": refs.len(),
                "ordered_frame_events": 0,
                "source_queries": q,
            }),
        );
    } else if template == "allocation" {
        for r in &mut selected {
            r.retain(|k, _| k == "id" || METRICS.contains(&k.as_str()));
        }
    }
    src.budget.consume(&selected)?;
    let more = total > offset + selected.len() as i64;
    Ok(Page {
        rows: selected,
        total,
        has_more: more,
        offset,
        scope,
    })
}
