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

use pt_snap_dataset::manifest::SliceRecord;
use pt_snap_dataset::read::{Dataset, SUPPORTED};
use pt_snap_db::rusqlite::{self, types::Value as Sql, Connection, OpenFlags};
use pt_snap_query::{registry, Analyzer, ParamValue, Params, QueryError};
use serde_json::{json, Map, Value};

use crate::derived::{self, BLOCK_COLUMNS};
use crate::sources::{
    install_interrupt, read_rows, sha_hex, sql_failed, EventSource, Row, Sources,
};
use crate::Budget;

const METRICS: [&str; 3] = ["allocated", "active", "reserved"];
/// SQLite's default `SQLITE_LIMIT_ATTACHED`.
const ATTACH_LIMIT: usize = 10;
/// Beyond this many block observations the lifecycle merge goes to the scratch database.
const ATTACHED_OBSERVATION_LIMIT: i64 = 4096;
const BUCKETS: [&str; 5] = ["<1k", "1k-5k", "5k-20k", "20k-100k", ">=100k"];

pub struct DatasetRequest {
    pub template: String,
    pub params: Map<String, Value>,
    pub device: Option<i64>,
    pub max_rows: Option<i64>,
    pub exact_total: bool,
    pub slice: Option<i64>,
    /// Where derived lifecycle databases may be kept between calls (`None`: rebuilt by every
    /// call in a temporary directory, as the reference does).
    pub lifecycle_cache: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone)]
pub struct DatasetOutcome {
    pub template: String,
    pub device_id: i64,
    pub effective_params: Params,
    pub semantics_version: Option<i64>,
    pub total: i64,
    pub returned: i64,
    pub has_more: bool,
    pub truncated: bool,
    pub total_is_exact: bool,
    pub rows: Vec<Row>,
    pub scope: Value,
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
    req: &DatasetRequest,
    budget: &mut Budget,
) -> Result<DatasetOutcome, QueryError> {
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
    let slice = match req.slice {
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
    src.lifecycle_cache = req.lifecycle_cache.clone();
    let name = req.template.as_str();
    let mut page = match name {
        "active_blocks_at_event" | "active_memory_callstack_at_event" => attribution(
            &mut src,
            name,
            &params,
            req.max_rows,
            req.exact_total,
            slice,
        )?,
        _ => global(
            &mut src,
            name,
            &params,
            req.max_rows,
            req.exact_total,
            slice,
        )?,
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
    Ok(DatasetOutcome {
        template: c.name.clone(),
        device_id,
        effective_params: effective,
        semantics_version: c.semantics_version,
        total: if req.exact_total {
            page.total
        } else {
            returned
        },
        returned,
        has_more: page.has_more,
        truncated: page.has_more || page.offset > 0,
        total_is_exact: req.exact_total || (!page.has_more && page.offset == 0),
        rows: page.rows,
        scope: Value::Object(page.scope),
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

fn peaks(
    src: &mut Sources,
    low: i64,
    high: i64,
    items: &[usize],
    template: &str,
    scope: &mut Map<String, Value>,
) -> Result<Vec<Row>, QueryError> {
    range_statistics(src, low, high, items, scope, "1", &[])?;
    let mut chosen: Vec<(&str, Row)> = Vec::new();
    let trace = src.trace();
    for &item in items {
        let (range, params) = range_clause(&src.device.slices[item], low, high);
        for m in METRICS {
            // The highest value, then its earliest event: both answered from the counter's
            // index (the reference sorts the shard's rows).
            let rows = src.read(
                item,
                &format!(
                    "SELECT id, allocated, active, reserved FROM {trace} WHERE id>=0{range} AND \
                     \"{m}\" = (SELECT \"{m}\" FROM {trace} WHERE id>=0{range} AND \"{m}\" IS NOT \
                     NULL ORDER BY \"{m}\" DESC LIMIT 1) ORDER BY id LIMIT 1"
                ),
                &[params.clone(), params.clone()].concat(),
            )?;
            let Some(row) = rows.into_iter().next() else {
                continue;
            };
            let key = |r: &Row| {
                (
                    get_i(r, m).unwrap_or(i64::MIN),
                    -get_i(r, "id").unwrap_or(0),
                )
            };
            match chosen.iter_mut().find(|(n, _)| *n == m) {
                None => chosen.push((m, row)),
                Some(slot) if key(&row) > key(&slot.1) => slot.1 = row,
                Some(_) => {}
            }
        }
    }
    let pick = |m: &str| chosen.iter().find(|(n, _)| *n == m).map(|(_, r)| r);
    let mut out = Map::new();
    for m in METRICS {
        let row = pick(m);
        let val = |k: &str| row.and_then(|r| r.get(k).cloned()).unwrap_or(Value::Null);
        out.insert(format!("peak_{m}"), val(m));
        out.insert(format!("peak_{m}_event_id"), val("id"));
        if template == "allocator_gap" {
            for other in METRICS.iter().filter(|o| **o != m) {
                out.insert(format!("{other}_at_{m}_peak"), val(other));
            }
            for other in ["active", "allocated"] {
                let gap = match (
                    row.and_then(|r| get_i(r, "reserved")),
                    row.and_then(|r| get_i(r, other)),
                ) {
                    (Some(r), Some(o)) => json!(r - o),
                    _ => Value::Null,
                };
                out.insert(format!("reserved_{other}_gap_at_{m}_peak"), gap);
            }
        }
    }
    if template == "allocator_gap" {
        let id = |m: &str| out[&format!("peak_{m}_event_id")].as_i64();
        let ids: Vec<Option<i64>> = METRICS.iter().map(|m| id(m)).collect();
        let all = ids.iter().all(Option::is_some) && ids.windows(2).all(|w| w[0] == w[1]);
        let same = |a: &str, b: &str| i64::from(id(a).is_some() && id(a) == id(b));
        let flags = [
            ("all_peaks_same_event", i64::from(all)),
            ("allocated_active_same_event", same("allocated", "active")),
            ("active_reserved_same_event", same("active", "reserved")),
            (
                "allocated_reserved_same_event",
                same("allocated", "reserved"),
            ),
        ];
        for (k, v) in flags {
            out.insert(k.into(), json!(v));
        }
    }
    let owners: Map<String, Value> = chosen
        .iter()
        .map(|(m, r)| {
            let owner = get_i(r, "id").and_then(|id| src.owner(id));
            (
                (*m).to_owned(),
                json!(owner.map(|o| src.device.slices[o].index)),
            )
        })
        .collect();
    scope.insert("peak_owner_slices".into(), Value::Object(owners));
    Ok(vec![out])
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

#[allow(clippy::too_many_arguments)]
fn events_page(
    src: &mut Sources,
    low: i64,
    high: i64,
    items: &[usize],
    params: &Params,
    template: &str,
    scope: &mut Map<String, Value>,
    offset: i64,
    limit: i64,
) -> Result<(Vec<Row>, i64), QueryError> {
    let mut fields: Vec<&str> = METRICS.to_vec();
    let mut columns: Vec<&str> = vec!["id"];
    columns.extend(METRICS);
    if template == "event" {
        fields.extend(["id", "action", "address", "size", "stream"]);
        columns = vec!["id", "action", "address", "size", "stream"];
        columns.extend(METRICS);
    }
    let (predicate, values) = predicates(params, &fields, "");
    let (total, counts) = range_statistics(src, low, high, items, scope, &predicate, &values)?;
    let order = params.str("order_by").to_owned();
    let dir = params.str("order_dir").to_owned();
    let candidate = if limit >= 0 { offset + limit } else { -1 };
    let projection: Vec<String> = columns.iter().map(|c| format!("t.\"{c}\"")).collect();
    let (row_pred, row_values) = predicates(params, &fields, "t.");
    let trace = src.trace();
    let mut rows = Vec::new();
    if order == "id" {
        let ordered: Vec<usize> = if dir == "DESC" {
            items.iter().rev().copied().collect()
        } else {
            items.to_vec()
        };
        let (mut offset, mut limit) = (offset, limit);
        for item in ordered {
            src.budget.check()?;
            if limit == 0 {
                break;
            }
            let count = counts[&item];
            if offset >= count {
                offset -= count;
                continue;
            }
            let mut p = vec![i(low), i(high)];
            p.extend(row_values.iter().cloned());
            p.extend([i(limit), i(offset)]);
            let batch = src.read(
                item,
                &format!(
                    "SELECT {} FROM {trace} t WHERE t.id>=0 AND t.id>=? AND t.id<=? AND \
                     {row_pred} ORDER BY t.id {dir} LIMIT ? OFFSET ?",
                    projection.join(", ")
                ),
                &p,
            )?;
            offset = 0;
            if limit >= 0 {
                limit -= batch.len() as i64;
            }
            rows.extend(batch);
        }
        return Ok((rows, total));
    }
    for &item in items {
        let mut proj = projection.join(", ");
        let mut join = String::new();
        if order == "callstack" {
            if src.v2() {
                proj.push_str(", t.callstackId, cs.callstack");
                join = " LEFT JOIN callstack cs ON t.callstackId=cs.id".into();
            } else {
                proj.push_str(", t.callstack");
            }
        }
        let sort = if order == "callstack" {
            "\"callstack\" COLLATE BINARY".to_owned()
        } else {
            format!("\"{order}\"")
        };
        let (range, mut p) = range_clause(&src.device.slices[item], low, high);
        let range = range.replace("id", "t.id");
        p.extend(row_values.iter().cloned());
        p.push(i(candidate));
        let batch = src.read(
            item,
            &format!(
                "SELECT {proj} FROM {trace} t{join} WHERE t.id>=0{range} AND {row_pred} ORDER BY \
                 {sort} {dir}, t.id {dir} LIMIT ?"
            ),
            &p,
        )?;
        if order == "callstack" {
            src.events_from_rows(item, batch.clone())?;
        }
        rows.extend(batch);
    }
    sort_rows(&mut rows, &order, dir == "DESC");
    Ok((rows, total))
}

fn text_stacks(
    src: &mut Sources,
    low: i64,
    high: i64,
    items: &[usize],
    params: &Params,
    scope: &mut Map<String, Value>,
) -> Result<Vec<Row>, QueryError> {
    let mut grouped: Vec<(String, Row)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut events = 0;
    let trace = src.trace();
    let (table, text, present) = if src.v2() {
        (
            format!("{trace} t LEFT JOIN callstack cs ON t.callstackId=cs.id"),
            "cs.callstack",
            "t.callstackId IS NOT NULL",
        )
    } else {
        (
            format!("{trace} t"),
            "t.callstack",
            "t.callstack IS NOT NULL",
        )
    };
    for &item in items {
        let batch = if src.v2() {
            stack_groups_by_id(src, item, low, high)?
        } else {
            src.read(
                item,
                &format!(
                    "SELECT {text} AS callstack, COUNT(*) AS alloc_count, SUM(t.size) AS \
                     total_size, MAX(t.size) AS max_size, MIN(t.id) AS stack_event_id FROM {table} \
                     WHERE t.id>=0 AND t.id>=? AND t.id<=? AND {present} GROUP BY {text} COLLATE \
                     BINARY"
                ),
                &[i(low), i(high)],
            )?
        };
        for local in batch {
            src.budget.check()?;
            let value = local
                .get("callstack")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let identity = match &value {
                Some(t) => format!("{}:text:sha256:{}", src.namespace, sha_hex(t)),
                None => format!("{}:category:missing", src.namespace),
            };
            let kind = if value.as_deref().is_some_and(|t| !t.is_empty()) {
                "captured"
            } else {
                "missing"
            };
            let n = get_i(&local, "alloc_count").unwrap_or(0);
            match index.get(&identity) {
                None => {
                    let mut row = local.clone();
                    row.insert(
                        "callstack".into(),
                        json!(value.as_deref().unwrap_or("[missing callstack]")),
                    );
                    row.insert("source_stack_id".into(), json!(identity));
                    row.insert("stack_kind".into(), json!(kind));
                    row.insert("text_kind".into(), json!(kind));
                    row.insert("frames_status".into(), json!("text_only"));
                    index.insert(identity.clone(), grouped.len());
                    grouped.push((identity, row));
                }
                Some(&at) => {
                    let row = &mut grouped[at].1;
                    let add = |row: &mut Row, k: &str, f: fn(i64, i64) -> i64| {
                        let v = f(get_i(row, k).unwrap_or(0), get_i(&local, k).unwrap_or(0));
                        row.insert(k.into(), json!(v));
                    };
                    add(row, "alloc_count", |a, b| a + b);
                    add(row, "total_size", |a, b| a + b);
                    add(row, "max_size", i64::max);
                    add(row, "stack_event_id", i64::min);
                }
            }
            events += n;
        }
    }
    let min_count = int(params, "min_count").unwrap_or(5);
    let min_size = int(params, "min_size").unwrap_or(0);
    let mut rows: Vec<Row> = grouped
        .into_iter()
        .map(|(_, r)| r)
        .filter(|r| {
            get_i(r, "alloc_count").unwrap_or(0) >= min_count
                && get_i(r, "total_size").unwrap_or(0) >= min_size
        })
        .collect();
    for r in &mut rows {
        let avg = get_i(r, "total_size").unwrap_or(0) as f64
            / get_i(r, "alloc_count").unwrap_or(1) as f64;
        r.insert("avg_size".into(), json!(avg));
    }
    rows.sort_by(|a, b| {
        let k = |r: &Row| {
            (
                -get_i(r, "total_size").unwrap_or(0),
                r["callstack"].as_str().unwrap_or("").to_owned(),
                r["stack_kind"] == "missing",
                r["source_stack_id"].as_str().unwrap_or("").to_owned(),
            )
        };
        k(a).cmp(&k(b))
    });
    let q = src.query_count;
    scope.insert(
        "source_coverage".into(),
        json!({
            "range_complete": true,
            "coverage_scope": "all_real_stack_bearing_actions_before_global_thresholds",
            "stack_events": events,
            "ordered_frame_events": 0,
            "source_queries": q,
        }),
    );
    Ok(rows)
}

/// One shard's rows of `callstack_analysis` grouped by callstack text — the rows the
/// reference's `GROUP BY text` returns, in its order — computed by one pass over the events
/// keyed by `callstackId` and a join with the shard's small `callstack` table, instead of
/// sorting every event's text (13 s per 250k-event shard in the reference, 0.1 s here).
fn stack_groups_by_id(
    src: &mut Sources,
    item: usize,
    low: i64,
    high: i64,
) -> Result<Vec<Row>, QueryError> {
    type Group = derived::Group; // count, sum, max, min id
    let trace = src.trace();
    let interrupt = src.budget.interrupt.clone();
    // A whole shard's groups are a function of its bytes: kept under the dataset's
    // fingerprint, they spare later calls the pass over its events.
    let (fingerprint, device) = (src.ds.fingerprint.clone(), src.device.device_id);
    let cache = src
        .lifecycle_cache
        .clone()
        .filter(|_| covers(&src.device.slices[item], low, high));
    let kept = cache
        .as_deref()
        .and_then(|dir| derived::load_stack_groups(dir, &fingerprint, device, item));
    let conn = src.conn(item)?;
    let mut by_id: HashMap<i64, Group> = HashMap::new();
    if let Some(kept) = kept {
        by_id.extend(kept);
    } else {
        let mut stmt = conn
            .prepare(&format!(
                "SELECT callstackId, size, id FROM {trace} WHERE id>=0 AND id>=? AND id<=? AND \
                 callstackId IS NOT NULL"
            ))
            .map_err(sql_failed)?;
        let mut rows = stmt.query([low, high]).map_err(sql_failed)?;
        let mut n = 0u32;
        while let Some(r) = rows.next().map_err(sql_failed)? {
            n = n.wrapping_add(1);
            if n.is_multiple_of(65536) && interrupt.as_ref().is_some_and(|f| f()) {
                return Err(QueryError::Timeout);
            }
            let (cs, size, id): (i64, i64, i64) = (
                r.get(0).map_err(sql_failed)?,
                r.get(1).map_err(sql_failed)?,
                r.get(2).map_err(sql_failed)?,
            );
            let g = by_id.entry(cs).or_insert((0, 0, i64::MIN, i64::MAX));
            g.0 += 1;
            g.1 += size;
            g.2 = g.2.max(size);
            g.3 = g.3.min(id);
        }
        if let Some(dir) = &cache {
            let mut groups: Vec<(i64, Group)> = by_id.iter().map(|(k, g)| (*k, *g)).collect();
            groups.sort_unstable();
            derived::store_stack_groups(dir, &fingerprint, device, item, groups);
        }
    }
    let mut texts: HashMap<i64, Option<String>> = HashMap::new();
    {
        let mut stmt = conn
            .prepare("SELECT id, callstack FROM callstack")
            .map_err(sql_failed)?;
        let mut rows = stmt.query([]).map_err(sql_failed)?;
        while let Some(r) = rows.next().map_err(sql_failed)? {
            texts.insert(r.get(0).map_err(sql_failed)?, r.get(1).map_err(sql_failed)?);
        }
    }
    let mut by_text: std::collections::BTreeMap<Option<String>, Group> = Default::default();
    for (cs, g) in by_id {
        let text = texts.get(&cs).cloned().flatten();
        let t = by_text.entry(text).or_insert((0, 0, i64::MIN, i64::MAX));
        t.0 += g.0;
        t.1 += g.1;
        t.2 = t.2.max(g.2);
        t.3 = t.3.min(g.3);
    }
    // BTreeMap order: NULL first, then texts by bytes — SQLite's BINARY collation.
    let rows: Vec<Row> = by_text
        .into_iter()
        .map(|(text, (count, sum, max, min))| {
            let mut r = Map::new();
            r.insert("callstack".into(), text.map_or(Value::Null, Value::String));
            r.insert("alloc_count".into(), json!(count));
            r.insert("total_size".into(), json!(sum));
            r.insert("max_size".into(), json!(max));
            r.insert("stack_event_id".into(), json!(min));
            r
        })
        .collect();
    src.charge(&rows)?;
    Ok(rows)
}

fn global(
    src: &mut Sources,
    template: &str,
    params: &Params,
    max_rows: Option<i64>,
    exact_total: bool,
    slice: Option<usize>,
) -> Result<Page, QueryError> {
    let (low, high, items) = event_range(src, template, params, slice)?;
    let mut scope = range_scope(src, low, high, &items);
    let (offset, limit) = window(params, max_rows);
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
            let event = int(params, "event_id").unwrap_or(-1);
            let item = src.target(event, slice)?;
            let block = src.block();
            let rows = src.read(
                item,
                &format!(
                    "SELECT COUNT(*) AS block_count, COALESCE(SUM(size),0) AS size_bytes FROM \
                     {block} WHERE allocEventId=-1 AND (freeEventId IS NULL OR freeEventId> ? OR \
                     (freeEventId<0 AND freeEventId!=-1))"
                ),
                &[i(event)],
            )?;
            scope = range_scope(src, event, event, &[item]);
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
    let _ = exact_total;
    Ok(Page {
        rows: selected,
        total,
        has_more: more,
        offset,
        scope,
    })
}

/// A read-only in-memory connection with shards attached as `s<index>` (the reference's
/// `_AttachedSources`), or a scratch database with them attached one at a time.
struct Attached<'s, 'a> {
    src: &'s mut Sources<'a>,
    conn: Connection,
}

impl<'s, 'a> Attached<'s, 'a> {
    fn open(
        src: &'s mut Sources<'a>,
        items: &[usize],
        path: Option<&std::path::Path>,
    ) -> Result<Self, QueryError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_URI;
        let mut conn = match path {
            Some(p) => Connection::open_with_flags(p, flags),
            None => Connection::open_with_flags(":memory:", flags),
        }
        .map_err(|e| QueryError::Failed(e.to_string()))?;
        install_interrupt(&mut conn, &src.budget);
        conn.execute_batch("PRAGMA trusted_schema=OFF")
            .map_err(sql_failed)?;
        for &item in items {
            let uri = member_uri(src, item);
            conn.execute(&format!("ATTACH DATABASE ? AS \"s{item}\""), [uri])
                .map_err(|e| QueryError::Failed(e.to_string()))?;
        }
        if path.is_none() {
            conn.execute_batch("PRAGMA query_only=ON")
                .map_err(sql_failed)?;
        }
        Ok(Self { src, conn })
    }

    fn read(&mut self, sql: &str, params: &[Sql]) -> Result<Vec<Row>, QueryError> {
        self.src.query_count += 1;
        read_rows(&self.conn, &mut self.src.budget, sql, params)
    }

    fn execute(&mut self, sql: &str, params: &[Sql]) -> Result<(), QueryError> {
        self.src.budget.check()?;
        self.src.query_count += 1;
        let max = self.src.budget.limits.max_scratch_db_bytes;
        self.conn
            .execute(sql, rusqlite::params_from_iter(params.iter()))
            .map(|_| ())
            .map_err(|e| match &e {
                rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DiskFull => {
                    QueryError::Failed(format!(
                        "Dataset lifecycle scratch space exhausted (derived database page limit or \
                         disk full; max_scratch_db_bytes={max}); no partial global result."
                    ))
                }
                _ => sql_failed(e),
            })?;
        self.src.budget.check()
    }
}

fn member_uri(src: &Sources, item: usize) -> String {
    format!(
        "file:{}?mode=ro{}",
        src.ds.root.join(&src.device.slices[item].file).display(),
        if src.v2() { "" } else { "&immutable=1" }
    )
}

/// Every shard that must be attached to prove the allocation/free events referenced by the
/// blocks of `items` (`None`: more than the attach limit).
fn required_slices(
    src: &mut Sources,
    items: &[usize],
    limit: usize,
) -> Result<Option<Vec<usize>>, QueryError> {
    let all = src.device.slices.len();
    let mut required: std::collections::BTreeSet<usize> = items.iter().copied().collect();
    if required.len() > limit {
        return Ok(None);
    }
    if required.len() == all {
        return Ok(Some(required.into_iter().collect()));
    }
    let block = src.block();
    for &item in items {
        let cap = limit - required.len() + 1;
        let rows = match owners_by_index(src, item, &required, cap)? {
            // The rows the reference's scan below returns (distinct owners, ascending): the
            // block table's event-id indexes answer which shards own any of its events
            // without reading every block (20 ms per 84k-block shard).
            Some(rows) => {
                src.charge(&rows)?;
                rows
            }
            None => {
                let mut queries = Vec::new();
                for field in ["allocEventId", "freeEventId"] {
                    let cases: Vec<String> = src
                        .device
                        .slices
                        .iter()
                        .filter(|o| !required.contains(&o.index))
                        .map(|o| {
                            format!(
                                "WHEN \"{field}\" BETWEEN {} AND {} THEN {}",
                                o.start_event_id, o.end_event_id, o.index
                            )
                        })
                        .collect();
                    queries.push(format!(
                        "SELECT CASE {} END AS owner_index FROM {block}",
                        cases.join(" ")
                    ));
                }
                src.read(
                    item,
                    &format!(
                        "SELECT owner_index FROM ({}) WHERE owner_index IS NOT NULL LIMIT ?",
                        queries.join(" UNION ")
                    ),
                    &[i(cap as i64)],
                )?
            }
        };
        required.extend(
            (rows.iter())
                .filter_map(|r| get_i(r, "owner_index"))
                .map(|o| o as usize),
        );
        // Either way up to `cap` new owners came: one more than the limit allows is the
        // refusal, before a later item's `cap` could be computed from it.
        if required.len() > limit {
            return Ok(None);
        }
        if required.len() == all {
            break;
        }
    }
    Ok(Some(required.into_iter().collect()))
}

/// `required_slices`' rows for shard `item` (`{"owner_index": o}` for every other shard `o`
/// that owns an allocation or free event of its blocks), probed through the event-id indexes;
/// `None` when more than `cap` owners exist — then which `cap` rows the reference's `LIMIT`
/// keeps is its scan's business, and the scan itself is run.
fn owners_by_index(
    src: &mut Sources,
    item: usize,
    required: &std::collections::BTreeSet<usize>,
    cap: usize,
) -> Result<Option<Vec<Row>>, QueryError> {
    let block = src.block();
    let probes: Vec<String> = src
        .device
        .slices
        .iter()
        .filter(|o| !required.contains(&o.index))
        .map(|o| {
            let (lo, hi) = (o.start_event_id, o.end_event_id);
            format!(
                "SELECT {} AS owner_index WHERE EXISTS(SELECT 1 FROM {block} WHERE \
                 \"allocEventId\" BETWEEN {lo} AND {hi}) OR EXISTS(SELECT 1 FROM {block} WHERE \
                 \"freeEventId\" BETWEEN {lo} AND {hi})",
                o.index
            )
        })
        .collect();
    if probes.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let conn = src.conn(item)?;
    let mut stmt = conn
        .prepare(&format!(
            "{} ORDER BY owner_index",
            probes.join(" UNION ALL ")
        ))
        .map_err(sql_failed)?;
    let owners: Vec<i64> = stmt
        .query_map([], |r| r.get(0))
        .map_err(sql_failed)?
        .collect::<Result<_, _>>()
        .map_err(sql_failed)?;
    if owners.len() > cap {
        return Ok(None);
    }
    Ok(Some(
        owners
            .into_iter()
            .map(|o| {
                let mut r = Map::new();
                r.insert("owner_index".into(), json!(o));
                r
            })
            .collect(),
    ))
}

fn proof(src: &Sources, owners: &[usize], field: &str, action: i64) -> String {
    let d = src.device.device_id;
    let cases: Vec<String> = owners
        .iter()
        .map(|&o| {
            let s = &src.device.slices[o];
            format!(
                "WHEN b.\"{field}\" BETWEEN {} AND {} THEN EXISTS(SELECT 1 FROM \
                 \"s{o}\".\"trace_entry_{d}\" e WHERE e.id=b.\"{field}\" AND e.id>=0 AND \
                 e.action={action})",
                s.start_event_id, s.end_event_id
            )
        })
        .collect();
    format!("CASE {} ELSE 0 END", cases.join(" "))
}

fn attached_lifecycle_cte(src: &Sources, items: &[usize], owners: &[usize]) -> String {
    let d = src.device.device_id;
    let allocated = proof(src, owners, "allocEventId", 4);
    let completed = proof(src, owners, "freeEventId", 6);
    let observations: Vec<String> = items
        .iter()
        .map(|&s| {
            format!(
                "SELECT b.*, {s} AS observation_slice_index, {allocated} AS allocation_proved, \
                 CASE WHEN {completed} THEN b.freeEventId END AS completed_free FROM \
                 \"s{s}\".\"block_{d}\" b"
            )
        })
        .collect();
    let conflicts: Vec<String> = ["address", "size", "requestedSize", "allocEventId"]
        .iter()
        .map(|c| {
            format!(
                "(MIN(\"{c}\") IS NOT MAX(\"{c}\") OR (COUNT(\"{c}\")>0 AND COUNT(\"{c}\")<COUNT(*)))"
            )
        })
        .collect();
    let terminal = src.device.slices.len() - 1;
    format!(
        "WITH observations AS ({}), identified AS (SELECT *, CASE WHEN allocation_proved THEN \
         'alloc:' || allocEventId WHEN allocEventId=-1 AND id<0 THEN 'preexisting:' || id ELSE \
         'unproved:slice:' || observation_slice_index || ':block:' || id END AS token FROM \
         observations), history AS (SELECT token, MAX(completed_free) AS known_free, ({}) AS \
         invariant_conflict, MIN(completed_free) IS NOT MAX(completed_free) AS free_conflict FROM \
         identified GROUP BY token), ranked AS (SELECT *, ROW_NUMBER() OVER (PARTITION BY token \
         ORDER BY observation_slice_index DESC, id DESC) AS observation_rank FROM identified), \
         latest AS (SELECT r.id, r.address, r.size, r.requestedSize, r.state, r.allocEventId, \
         COALESCE(h.known_free,r.freeEventId) AS freeEventId, r.observation_slice_index, \
         r.allocation_proved, r.token, h.known_free IS NOT NULL AS completion_proved, \
         h.invariant_conflict, h.free_conflict FROM ranked r JOIN history h ON h.token=r.token \
         WHERE observation_rank=1), lifecycles AS (SELECT *, (observation_slice_index={terminal} \
         AND state IN (0,1) AND (freeEventId IS NULL OR freeEventId<0)) AS terminal_survivor \
         FROM latest) ",
        observations.join(" UNION ALL "),
        conflicts.join(" OR ")
    )
}

fn scratch_lifecycle_cte(terminal: usize) -> String {
    format!(
        "WITH latest AS (SELECT id,address,size,requestedSize,state,allocEventId, \
         COALESCE(known_free,freeEventId) AS freeEventId, observation_slice_index,\
         allocation_proved,token, known_free IS NOT NULL AS completion_proved,invariant_conflict,\
         free_conflict FROM lifecycle_state), lifecycles AS (SELECT *, \
         (observation_slice_index={terminal} AND state IN (0,1) AND (freeEventId IS NULL OR \
         freeEventId<0)) AS terminal_survivor FROM latest) "
    )
}

/// Builds the scratch database: one row per lifecycle token, with proofs from the owner
/// shards; shards are attached one at a time as `src`.
fn build_scratch(a: &mut Attached, items: &[usize]) -> Result<Vec<(usize, i64)>, QueryError> {
    let mut needed_rows = Vec::new();
    let max = a.src.budget.limits.max_scratch_db_bytes;
    for pragma in [
        "PRAGMA trusted_schema=OFF".to_owned(),
        "PRAGMA main.page_size=4096".to_owned(),
        format!("PRAGMA main.max_page_count={}", max / 4096),
        "PRAGMA main.cache_size=-2048".to_owned(),
        "PRAGMA main.mmap_size=0".to_owned(),
        "PRAGMA temp_store=FILE".to_owned(),
        "PRAGMA journal_mode=DELETE".to_owned(),
    ] {
        // Pragmas that report a value (max_page_count, journal_mode) return a row.
        a.src.query_count += 1;
        a.conn
            .query_row(&pragma, [], |_| Ok(()))
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(()),
                e => Err(e),
            })
            .map_err(sql_failed)?;
    }
    a.execute(
        "CREATE TABLE refs(id INTEGER PRIMARY KEY, allocation_proved INTEGER NOT NULL DEFAULT 0, \
         completion_proved INTEGER NOT NULL DEFAULT 0)",
        &[],
    )?;
    let d = a.src.device.device_id;
    for &item in items {
        attach_src(a, item)?;
        for column in ["allocEventId", "freeEventId"] {
            a.execute(
                &format!(
                    "INSERT OR IGNORE INTO refs(id) SELECT \"{column}\" FROM src.\"block_{d}\" \
                     WHERE \"{column}\">=0"
                ),
                &[],
            )?;
        }
        detach_src(a)?;
    }
    let slices: Vec<SliceRecord> = a.src.device.slices.clone();
    for s in &slices {
        let needed = a.read(
            "SELECT EXISTS(SELECT 1 FROM refs WHERE id BETWEEN ? AND ?) AS needed",
            &[i(s.start_event_id), i(s.end_event_id)],
        )?;
        let needed = get_i(&needed[0], "needed").unwrap_or(0);
        needed_rows.push((s.index, needed));
        if needed == 1 {
            attach_src(a, s.index)?;
            a.execute(
                &format!(
                    "UPDATE refs SET allocation_proved=EXISTS(SELECT 1 FROM src.\"trace_entry_{d}\" \
                     e WHERE e.id=refs.id AND e.id>=0 AND e.action=4), completion_proved=EXISTS(\
                     SELECT 1 FROM src.\"trace_entry_{d}\" e WHERE e.id=refs.id AND e.id>=0 AND \
                     e.action=6) WHERE id BETWEEN ? AND ?"
                ),
                &[i(s.start_event_id), i(s.end_event_id)],
            )?;
            detach_src(a)?;
        }
    }
    let cols: Vec<String> = BLOCK_COLUMNS
        .iter()
        .map(|c| format!("\"{c}\" INTEGER"))
        .collect();
    a.execute(
        &format!(
            "CREATE TABLE lifecycle_state(token TEXT PRIMARY KEY COLLATE BINARY, {}, \
             observation_slice_index INTEGER NOT NULL, allocation_proved INTEGER NOT NULL, \
             known_free INTEGER, invariant_conflict INTEGER NOT NULL DEFAULT 0, free_conflict \
             INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID",
            cols.join(", ")
        ),
        &[],
    )?;
    let latest = "(excluded.observation_slice_index>lifecycle_state.observation_slice_index OR \
                  (excluded.observation_slice_index=lifecycle_state.observation_slice_index AND \
                  excluded.id>lifecycle_state.id))";
    let updates: Vec<String> = BLOCK_COLUMNS
        .iter()
        .chain(["observation_slice_index"].iter())
        .map(|c| {
            format!(
                "\"{c}\"=CASE WHEN {latest} THEN excluded.\"{c}\" ELSE lifecycle_state.\"{c}\" END"
            )
        })
        .collect();
    let conflict: Vec<String> = ["address", "size", "requestedSize", "allocEventId"]
        .iter()
        .map(|c| format!("lifecycle_state.\"{c}\" IS NOT excluded.\"{c}\""))
        .collect();
    let names: Vec<String> = BLOCK_COLUMNS.iter().map(|c| format!("\"{c}\"")).collect();
    let b_names: Vec<String> = BLOCK_COLUMNS.iter().map(|c| format!("b.\"{c}\"")).collect();
    for &item in items {
        attach_src(a, item)?;
        a.execute(
            &format!(
                "INSERT INTO lifecycle_state(token, {}, observation_slice_index, \
                 allocation_proved, known_free) SELECT CASE WHEN a.allocation_proved THEN \
                 'alloc:' || b.allocEventId WHEN b.allocEventId=-1 AND b.id<0 THEN 'preexisting:' \
                 || b.id ELSE 'unproved:slice:{item}:block:' || b.id END, {}, {item}, \
                 COALESCE(a.allocation_proved,0), CASE WHEN f.completion_proved THEN \
                 b.freeEventId END FROM src.\"block_{d}\" b LEFT JOIN refs a ON \
                 a.id=b.allocEventId LEFT JOIN refs f ON f.id=b.freeEventId WHERE 1 ON \
                 CONFLICT(token) DO UPDATE SET invariant_conflict=lifecycle_state.\
                 invariant_conflict OR ({}), free_conflict=lifecycle_state.free_conflict OR \
                 (lifecycle_state.known_free IS NOT NULL AND excluded.known_free IS NOT NULL AND \
                 lifecycle_state.known_free IS NOT excluded.known_free), known_free=COALESCE(\
                 lifecycle_state.known_free,excluded.known_free), {}",
                names.join(", "),
                b_names.join(", "),
                conflict.join(" OR "),
                updates.join(", ")
            ),
            &[],
        )?;
        detach_src(a)?;
    }
    a.conn
        .execute_batch("PRAGMA query_only=ON")
        .map_err(sql_failed)?;
    a.src.query_count += 1;
    Ok(needed_rows)
}

/// What a kept derived database needs to stand for its build: the per-shard `needed` rows
/// the build fetched (charged again on reuse, so budgets and `source_queries` are those of a
/// fresh build) and the size of the scratch database the build wrote (checked against
/// `--max-scratch-db-bytes`; the kept file itself is the indexed layout of
/// [`derived::build_lifecycles`], `layout`).
#[derive(serde::Serialize, serde::Deserialize)]
struct KeptScratch {
    needed: Vec<(usize, i64)>,
    page_count: i64,
    #[serde(default)]
    layout: u32,
}

/// Where the lifecycle rows of a query come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Derivation {
    /// The reference's scratch database (`lifecycle_state`), read through its CTE.
    Scratch,
    /// A kept indexed database ([`derived`]).
    Indexed,
}

fn scratch_exhausted(max: i64) -> QueryError {
    QueryError::Failed(format!(
        "Dataset lifecycle scratch space exhausted (derived database page limit or disk full; \
         max_scratch_db_bytes={max}); no partial global result."
    ))
}

/// The derived lifecycle database of `items`: reused from the lifecycle cache when this
/// dataset (by fingerprint) was merged before, else built (and kept when a cache is set).
/// The derived rows depend only on the shards' bytes, never on the query's parameters.
fn scratch_lifecycles<'s, 'a>(
    src: &'s mut Sources<'a>,
    items: &[usize],
) -> Result<(Attached<'s, 'a>, Option<tempfile::TempDir>, Derivation), QueryError> {
    let max = src.budget.limits.max_scratch_db_bytes;
    let storage = |e: &dyn std::fmt::Display| {
        QueryError::Failed(format!(
            "Dataset lifecycle scratch storage failed (max_scratch_db_bytes={max}); no partial \
             global result: {e}"
        ))
    };
    let kept = src.lifecycle_cache.clone().map(|dir| {
        let list: Vec<String> = items.iter().map(usize::to_string).collect();
        let name = format!(
            "{}-device{}-slices{}",
            src.ds.fingerprint,
            src.device.device_id,
            list.join("_")
        );
        (
            dir.clone(),
            dir.join(format!("{name}.db")),
            dir.join(format!("{name}.json")),
        )
    });
    if let Some((_, db, meta)) = &kept {
        let reuse = std::fs::read(meta)
            .ok()
            .and_then(|b| serde_json::from_slice::<KeptScratch>(&b).ok())
            .filter(|k| k.layout == derived::LIFECYCLE_LAYOUT && db.is_file());
        if let Some(k) = reuse {
            // The build's statements, as counted by a fresh build.
            src.query_count += 7 + 1 + 5 * items.len() as i64;
            for (_, needed) in &k.needed {
                let mut row = Map::new();
                row.insert("needed".into(), json!(needed));
                src.charge(&[row])?;
                if *needed == 1 {
                    src.query_count += 4;
                }
            }
            src.query_count += 1 + 4 * items.len() as i64 + 1;
            if k.page_count.saturating_mul(4096) > max {
                return Err(scratch_exhausted(max));
            }
            let a = Attached::open(src, &[], Some(db))?;
            a.conn
                .execute_batch("PRAGMA query_only=ON")
                .map_err(sql_failed)?;
            return Ok((a, None, Derivation::Indexed));
        }
    }
    let tmp = tempfile::Builder::new()
        .prefix("pt-snap-lifecycle-")
        .tempdir()
        .map_err(|e| storage(&e))?;
    let path = tmp.path().join("derived.db");
    let mut a = Attached::open(src, &[], Some(&path))?;
    let needed = build_scratch(&mut a, items)?;
    if let Some((dir, db, meta)) = kept {
        let page_count: i64 = a
            .conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .map_err(sql_failed)?;
        let terminal = a.src.device.slices.len() - 1;
        let staged = db.with_extension(format!("db.tmp{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::remove_file(&staged);
        let built = derived::build_lifecycles(
            &path,
            &staged,
            &scratch_lifecycle_cte(terminal),
            &a.src.budget,
        );
        // Keeping is an optimisation: a failure only costs the next call a rebuild (a missed
        // deadline is still the caller's timeout).
        let keep = |built: rusqlite::Result<()>| -> std::io::Result<bool> {
            if built.is_err() {
                return Ok(false);
            }
            std::fs::rename(&staged, &db)?;
            let body = serde_json::to_vec(&KeptScratch {
                needed,
                page_count,
                layout: derived::LIFECYCLE_LAYOUT,
            })?;
            let staged = meta.with_extension(format!("json.tmp{}", std::process::id()));
            std::fs::write(&staged, body)?;
            std::fs::rename(&staged, &meta)?;
            derived::prune(&dir, ".db", 8);
            Ok(true)
        };
        let kept = keep(built);
        let _ = std::fs::remove_file(&staged);
        a.src.budget.check()?;
        if kept.unwrap_or(false) {
            let src = a.src;
            drop(a.conn);
            let a = Attached::open(src, &[], Some(&db))?;
            a.conn
                .execute_batch("PRAGMA query_only=ON")
                .map_err(sql_failed)?;
            return Ok((a, None, Derivation::Indexed));
        }
    }
    Ok((a, Some(tmp), Derivation::Scratch))
}

fn attach_src(a: &mut Attached, item: usize) -> Result<(), QueryError> {
    let uri = member_uri(a.src, item);
    a.execute("ATTACH DATABASE ? AS src", &[Sql::Text(uri)])?;
    a.execute("PRAGMA src.cache_size=-2048", &[])?;
    // mmap_size reports its value as a row.
    a.src.query_count += 1;
    let _ = a.conn.query_row("PRAGMA src.mmap_size=0", [], |_| Ok(()));
    Ok(())
}

fn detach_src(a: &mut Attached) -> Result<(), QueryError> {
    a.conn
        .execute_batch("DETACH DATABASE src")
        .map_err(sql_failed)
}

fn large_observation_set(src: &mut Sources, items: &[usize]) -> Result<bool, QueryError> {
    let mut remaining = ATTACHED_OBSERVATION_LIMIT + 1;
    let block = src.block();
    for &item in items {
        let rows = src.read(
            item,
            &format!("SELECT COUNT(*) AS count FROM (SELECT 1 FROM {block} LIMIT ?)"),
            &[i(remaining)],
        )?;
        remaining -= get_i(&rows[0], "count").unwrap_or(0);
        if remaining == 0 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The block columns `block`'s parameters filter on (`x`, `min_x`, `max_x`).
const BLOCK_FILTERS: [&str; 6] = [
    "id",
    "address",
    "size",
    "requestedSize",
    "allocEventId",
    "freeEventId",
];

/// The kept summary figures, in the reference's summary row order.
const SUMMARY_COLUMNS: &str = "lifecycles, allocation_events_resolved, free_events_resolved, \
     unproved_identities, missing_allocations, invariant_conflict, free_conflict";

fn lifecycle_filter(template: &str, params: &Params) -> (String, Vec<Sql>) {
    match template {
        "leak_detection" => (
            format!("{} AND size>=?", derived::LEAK_PREDICATE),
            vec![i(int(params, "min_size").unwrap_or(0))],
        ),
        "freed_block_lifetime" => (derived::FREED_PREDICATE.into(), vec![]),
        _ => predicates(params, &BLOCK_FILTERS, ""),
    }
}

fn lifecycles(
    src: &mut Sources,
    items: &[usize],
    template: &str,
    params: &Params,
    scope: &mut Map<String, Value>,
    candidate: i64,
) -> Result<(Vec<Row>, i64), QueryError> {
    let required = required_slices(src, items, ATTACH_LIMIT)?;
    let (predicate, values) = lifecycle_filter(template, params);
    let scratch_enabled = src.budget.limits.max_scratch_db_bytes != 0;
    let use_scratch = scratch_enabled && (required.is_none() || large_observation_set(src, items)?);
    let terminal = src.device.slices.len() - 1;
    let _tmp;
    let (mut a, cte, derivation) = if use_scratch {
        let (a, guard, derivation) = scratch_lifecycles(src, items)?;
        _tmp = guard;
        (a, scratch_lifecycle_cte(terminal), derivation)
    } else {
        let Some(owners) = required else {
            // The reference merges in Python here (more than 10 proof shards and the scratch
            // database disabled); we need the scratch database for that scale.
            return Err(failed(
                "Dataset lifecycle query needs more than 10 attached shards; enable the scratch \
                 database (--max-scratch-db-bytes > 0).",
            ));
        };
        let cte = attached_lifecycle_cte(src, items, &owners);
        (
            Attached::open(src, &owners, None)?,
            cte,
            Derivation::Scratch,
        )
    };
    let indexed = derivation == Derivation::Indexed;
    let (order, dir) = if template == "block" {
        (
            params.str("order_by").to_owned(),
            params.str("order_dir").to_owned(),
        )
    } else {
        ("size".to_owned(), "DESC".to_owned())
    };
    // The block columns this call's filters constrain (indexed access paths).
    let filtered: Vec<&str> = if template == "block" {
        BLOCK_FILTERS
            .iter()
            .copied()
            .filter(|f| {
                ["", "min_", "max_"]
                    .iter()
                    .any(|p| int(params, &format!("{p}{f}")).is_some())
            })
            .collect()
    } else {
        Vec::new()
    };
    // The same summary row either way: kept figures plus this call's `matching`.
    let summary_sql = match (indexed, template) {
        (false, _) => format!(
            "{cte}SELECT {}, COALESCE(SUM(CASE WHEN {predicate} THEN 1 ELSE 0 END),0) AS \
             matching FROM lifecycles",
            derived::SUMMARY
        ),
        (true, "freed_block_lifetime") => {
            format!("SELECT {SUMMARY_COLUMNS}, freed_matching AS matching FROM lifecycle_summary")
        }
        (true, "block") if filtered.is_empty() => {
            format!("SELECT {SUMMARY_COLUMNS}, lifecycles AS matching FROM lifecycle_summary")
        }
        (true, _) => {
            let hint = if template == "leak_detection" {
                "INDEXED BY lifecycle_leak".to_owned()
            } else {
                derived::block_hints(&filtered, &order, None, 0).0
            };
            format!(
                "SELECT {SUMMARY_COLUMNS}, (SELECT COUNT(*) FROM lifecycle_rows {hint} WHERE \
                 {predicate}) AS matching FROM lifecycle_summary"
            )
        }
    };
    let summary = a.read(&summary_sql, &values)?.remove(0);
    if get_i(&summary, "invariant_conflict").unwrap_or(0) != 0 {
        return Err(failed(
            "Conflicting observations for a proved lifecycle identity.",
        ));
    }
    if get_i(&summary, "free_conflict").unwrap_or(0) != 0 {
        return Err(failed(
            "Conflicting free-completion events for one lifecycle.",
        ));
    }
    let mut coverage = Map::new();
    coverage.insert(
        "coverage_scope".into(),
        json!("all_deduplicated_lifecycles_before_filters_and_page"),
    );
    coverage.insert("range_complete".into(), json!(true));
    for k in [
        "lifecycles",
        "allocation_events_resolved",
        "free_events_resolved",
        "unproved_identities",
    ] {
        coverage.insert(k.into(), summary[k].clone());
    }
    coverage.insert(
        "allocation_source_complete".into(),
        json!(get_i(&summary, "missing_allocations") == Some(0)),
    );
    coverage.insert("source_queries".into(), json!(a.src.query_count));
    if template == "freed_block_lifetime" {
        let sql = if indexed {
            "SELECT bucket, block_count, size_bytes FROM lifecycle_buckets ORDER BY bucket"
                .to_owned()
        } else {
            format!(
                "{cte}{} WHERE {predicate} GROUP BY bucket ORDER BY bucket",
                derived::BUCKETS
            )
        };
        let mut buckets = a.read(&sql, &values)?;
        for r in &mut buckets {
            let b = r
                .shift_remove("bucket")
                .and_then(|v| v.as_i64())
                .unwrap_or(0);
            r.insert("lifetime_events".into(), json!(BUCKETS[b as usize]));
        }
        coverage.insert("source_queries".into(), json!(a.src.query_count));
        scope.insert("source_coverage".into(), Value::Object(coverage));
        let n = buckets.len() as i64;
        return Ok((buckets, n));
    }
    let mut p = values.clone();
    p.push(i(candidate));
    let sql = if indexed {
        let hint = if template == "leak_detection" {
            "INDEXED BY lifecycle_leak".to_owned()
        } else {
            derived::block_hints(
                &filtered,
                &order,
                get_i(&summary, "matching"),
                get_i(&summary, "lifecycles").unwrap_or(0),
            )
            .1
        };
        format!(
            "SELECT * FROM lifecycle_rows {hint} WHERE {predicate} ORDER BY {} LIMIT ?",
            derived::page_order(&order, &dir)
        )
    } else {
        format!(
            "{cte}SELECT * FROM lifecycles WHERE {predicate} ORDER BY \"{order}\" {dir}, id {dir}, \
             token {dir} LIMIT ?"
        )
    };
    let mut rows = a.read(&sql, &p)?;
    drop(a);
    let ids: Vec<i64> = rows
        .iter()
        .flat_map(|r| [get_i(r, "allocEventId"), get_i(r, "freeEventId")])
        .flatten()
        .filter(|v| *v >= 0)
        .collect();
    let refs = src.events(ids)?;
    for row in &mut rows {
        let alloc = get_i(row, "allocEventId").unwrap_or(-1);
        let free = get_i(row, "freeEventId");
        let proved =
            |r: &mut Row, k: &str| r.shift_remove(k).and_then(|v| v.as_i64()).unwrap_or(0) != 0;
        let allocation: Option<&EventSource> = if proved(row, "allocation_proved") {
            refs.get(&alloc)
        } else {
            None
        };
        let completion: Option<&EventSource> = if proved(row, "completion_proved") {
            free.and_then(|f| refs.get(&f))
        } else {
            None
        };
        let token = row
            .shift_remove("token")
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        row.shift_remove("invariant_conflict");
        row.shift_remove("free_conflict");
        let survivor = get_i(row, "terminal_survivor").unwrap_or(0) != 0;
        row.insert(
            "lifecycle_id".into(),
            json!(format!("{}:{token}", src.namespace)),
        );
        row.insert(
            "identity_status".into(),
            json!(if allocation.is_some() {
                "proved_allocation_event"
            } else if token.starts_with("preexisting:") {
                "stable_negative_token"
            } else {
                "unproved_shard_local"
            }),
        );
        row.insert(
            "allocation_source".into(),
            allocation.map_or(Value::Null, EventSource::to_json),
        );
        row.insert(
            "allocation_source_status".into(),
            json!(if allocation.is_some() {
                "resolved"
            } else if alloc == -1 {
                "unknown_preexisting"
            } else {
                "missing"
            }),
        );
        row.insert(
            "free_source".into(),
            completion.map_or(Value::Null, EventSource::to_json),
        );
        row.insert(
            "free_source_status".into(),
            json!(if completion.is_some() {
                "resolved"
            } else if free.is_none_or(|f| f < 0) {
                "live_or_unknown"
            } else {
                "missing"
            }),
        );
        row.insert("state_scope".into(), json!("latest_slice_observation"));
        row.insert("terminal_survivor".into(), json!(survivor));
        row.insert(
            "category".into(),
            json!(if alloc >= 0 {
                "dynamic"
            } else if free == Some(-1) {
                "static"
            } else {
                "preexisting"
            }),
        );
    }
    coverage.insert("source_queries".into(), json!(src.query_count));
    scope.insert("source_coverage".into(), Value::Object(coverage));
    Ok((rows, get_i(&summary, "matching").unwrap_or(0)))
}

// ---------------------------------------------------------------------------------------------
// Point-event attribution

/// How the live set of a point event is read from its shard's block table. The rows are the
/// reference's whatever the plan; only the access path differs. Left to itself SQLite takes
/// the `size` index for `size>=0` and then looks up every block of the shard by rowid (55 ms
/// on an 84k-block shard, three times per call); near the end of a shard the blocks freed
/// after the event, and near its start the blocks allocated before it, are a few hundred
/// index entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LivePlan {
    Scan,
    Size,
    Alloc,
    Free,
}

/// Above this many index entries a plan's rowid lookups cost more than a scan of the table.
const LIVE_INDEX_ROWS: i64 = 4096;

/// The cheapest [`LivePlan`] for `event` in shard `item`, from capped counts over the block
/// table's indexes (index-only, not charged: the reference's plan has no such reads).
fn live_plan(
    src: &mut Sources,
    item: usize,
    event: i64,
    min_size: i64,
) -> Result<LivePlan, QueryError> {
    let block = src.block();
    let conn = src.conn(item)?;
    let capped = |cond: &str, v: i64| -> Result<i64, QueryError> {
        conn.query_row(
            &format!("SELECT COUNT(*) FROM (SELECT 1 FROM {block} WHERE {cond} LIMIT ?)"),
            [v, LIVE_INDEX_ROWS + 1],
            |r| r.get(0),
        )
        .map_err(sql_failed)
    };
    let candidates = [
        (
            LivePlan::Free,
            capped("freeEventId>?", event)? + capped("freeEventId=?", -1)?,
        ),
        // allocEventId=-1 OR allocEventId<=event, for a real (non-negative) event.
        (LivePlan::Alloc, capped("allocEventId<=?", event)?),
        (LivePlan::Size, capped("size>=?", min_size)?),
    ];
    Ok(candidates
        .into_iter()
        .filter(|(_, n)| *n <= LIVE_INDEX_ROWS)
        .min_by_key(|(_, n)| *n)
        .map_or(LivePlan::Scan, |(p, _)| p))
}

fn active_cte(
    src: &Sources,
    item: usize,
    owners: &[usize],
    include_static: bool,
    plan: LivePlan,
) -> String {
    let d = src.device.device_id;
    // A unary `+` keeps a column's index out of the plan (integers compare the same).
    let col = |c: &str, p: LivePlan| {
        if plan == p {
            c.to_owned()
        } else {
            format!("+{c}")
        }
    };
    let (size, alloc, free) = (
        col("size", LivePlan::Size),
        col("allocEventId", LivePlan::Alloc),
        col("freeEventId", LivePlan::Free),
    );
    let text_cases: Vec<String> = owners
        .iter()
        .map(|&o| {
            let s = &src.device.slices[o];
            let (join, text) = if src.v2() {
                (
                    format!(" LEFT JOIN \"s{o}\".callstack cs ON cs.id=e.callstackId"),
                    "cs.callstack",
                )
            } else {
                (String::new(), "e.callstack")
            };
            format!(
                "WHEN b.allocEventId BETWEEN {} AND {} THEN (SELECT {text} FROM \
                 \"s{o}\".\"trace_entry_{d}\" e{join} WHERE e.id=b.allocEventId AND e.id>=0 AND \
                 e.action=4)",
                s.start_event_id, s.end_event_id
            )
        })
        .collect();
    format!(
        "WITH active AS (SELECT * FROM \"s{item}\".\"block_{d}\" WHERE {size}>=? AND \
         ({alloc}=-1 OR {alloc}<=?) AND ({free}=-1 OR {free}>?) {}), \
         attributed AS (SELECT b.*, {} AS allocation_proved, {} AS completion_proved, CASE {} END \
         AS source_text FROM active b), classified AS (SELECT *, CASE WHEN allocEventId>=0 THEN \
         'dynamic_live_at_event' WHEN freeEventId=-1 THEN 'static' ELSE \
         'preexisting_live_at_event' END AS category, CASE WHEN allocEventId>=0 THEN CASE WHEN \
         typeof(source_text)='text' AND source_text!='' THEN 'captured' ELSE 'missing' END WHEN \
         freeEventId=-1 THEN 'static' ELSE 'preexisting_live_at_event' END AS stack_kind FROM \
         attributed) ",
        if include_static {
            ""
        } else {
            "AND allocEventId!=-1"
        },
        proof(src, owners, "allocEventId", 4),
        proof(src, owners, "freeEventId", 6),
        text_cases.join(" ")
    )
}

fn group_cte(cte: &str, top_n: i64) -> String {
    format!(
        "{cte}, labelled AS (SELECT *, CASE stack_kind WHEN 'captured' THEN source_text WHEN \
         'static' THEN '[static] allocEventId=-1, freeEventId=-1' WHEN \
         'preexisting_live_at_event' THEN '[preexisting live] allocEventId=-1' ELSE '[missing \
         callstack]' END AS callstack FROM classified), grouped AS (SELECT category, stack_kind, \
         callstack, COUNT(*) AS block_count, SUM(size) AS size_bytes, SUM(requestedSize) AS \
         requested_bytes, MIN(CASE WHEN stack_kind='captured' THEN allocEventId END) AS \
         stack_event_id FROM labelled GROUP BY stack_kind, callstack), ranked AS (SELECT *, \
         ROW_NUMBER() OVER (PARTITION BY category ORDER BY size_bytes DESC, block_count DESC, \
         callstack, stack_kind='captured') AS group_rank FROM grouped), included AS (SELECT * \
         FROM ranked WHERE category!='dynamic_live_at_event' OR {top_n}<0 OR group_rank<={top_n}) "
    )
}

fn attribution(
    src: &mut Sources,
    template: &str,
    params: &Params,
    max_rows: Option<i64>,
    exact_total: bool,
    slice: Option<usize>,
) -> Result<Page, QueryError> {
    let event = int(params, "event_id").unwrap_or(-1);
    let item = src.target(event, slice)?;
    let Some(owners) = required_slices(src, &[item], ATTACH_LIMIT)? else {
        return Err(failed(
            "Dataset attribution needs more than 10 attached shards for its allocation sources.",
        ));
    };
    let min_size = int(params, "min_size").unwrap_or(0);
    let plan = live_plan(src, item, event, min_size)?;
    let cte = active_cte(src, item, &owners, params.bool("include_static"), plan);
    let values = vec![i(min_size), i(event), i(event)];
    let cap = max_rows.filter(|n| *n > 0).unwrap_or(-1);
    let namespace = src.namespace.clone();
    let mut a = Attached::open(src, &owners, None)?;
    let fields = [
        ("active_bytes", "size"),
        (
            "dynamic_bytes",
            "CASE WHEN allocEventId>=0 THEN size ELSE 0 END",
        ),
        (
            "captured_dynamic_bytes",
            "CASE WHEN stack_kind='captured' THEN size ELSE 0 END",
        ),
    ];
    let sums: Vec<String> = fields
        .iter()
        .flat_map(|(f, e)| {
            (0..4).map(move |p| {
                format!(
                    "COALESCE(SUM((({e}) >> {}) & 65535),0) AS \"{f}_{p}\"",
                    16 * p
                )
            })
        })
        .collect();
    let mut coverage = a
        .read(
            &format!(
                "{cte}SELECT COUNT(*) AS active_blocks, {}, COALESCE(SUM(allocEventId>=0),0) AS \
                 dynamic_blocks, COALESCE(SUM(allocEventId>=0 AND allocation_proved),0) AS \
                 allocation_events_resolved, COALESCE(SUM(stack_kind='captured'),0) AS \
                 allocation_stacks_captured, COALESCE(SUM(allocEventId<0),0) AS \
                 unknown_preexisting_blocks, COALESCE(SUM(freeEventId>=0),0) AS free_references, \
                 COALESCE(SUM(completion_proved),0) AS free_events_resolved FROM classified",
                sums.join(", ")
            ),
            &values,
        )?
        .remove(0);
    for (f, _) in fields {
        let mut total: i128 = 0;
        for p in 0..4 {
            let part = coverage
                .shift_remove(&format!("{f}_{p}"))
                .and_then(|v| v.as_i64())
                .unwrap_or(0);
            total += i128::from(part) << (16 * p);
        }
        coverage.insert(f.into(), json!(total as i64));
    }
    let complete = coverage["dynamic_blocks"] == coverage["allocation_events_resolved"];
    coverage.insert("range_complete".into(), json!(true));
    coverage.insert("event_position".into(), json!("after"));
    coverage.insert("allocation_source_complete".into(), json!(complete));
    coverage.insert("ordered_frame_blocks".into(), json!(0));
    coverage.insert("ordered_frames_complete".into(), json!(false));
    coverage.insert("frame_degradation".into(), json!("text_only_or_uncovered"));
    let (mut rows, total, rank_full, offset) = if template == "active_blocks_at_event" {
        let mut limit = int(params, "limit").unwrap_or(-1);
        if cap >= 0 {
            limit = if limit >= 0 { limit.min(cap) } else { cap };
        }
        let offset = int(params, "offset").unwrap_or(0).max(0);
        let mut p = values.clone();
        p.extend([i(limit), i(offset)]);
        let rows = a.read(
            &format!(
                "{cte}SELECT * FROM active ORDER BY \"{}\" {}, id ASC LIMIT ? OFFSET ?",
                params.str("order_by"),
                params.str("order_dir")
            ),
            &p,
        )?;
        let total = get_i(&coverage, "active_blocks").unwrap_or(0);
        (rows, total, false, offset)
    } else {
        let top_n = int(params, "top_n").unwrap_or(20);
        let grouped = group_cte(&cte, top_n);
        let summary = a
            .read(
                &format!(
                    "{grouped}SELECT COUNT(*) AS total, \
                     COALESCE(SUM(category='dynamic_live_at_event'),0) AS dynamic_groups FROM \
                     grouped"
                ),
                &values,
            )?
            .remove(0);
        let mut p = values.clone();
        p.push(i(cap));
        let mut rows = a.read(
            &format!(
                "{grouped}SELECT category, stack_kind, callstack, block_count, size_bytes, \
                 requested_bytes, stack_event_id, ROUND(size_bytes / 1073741824.0,6) AS size_gib, \
                 ROUND(requested_bytes / 1073741824.0,6) AS requested_gib, ROUND(size_bytes * \
                 100.0 / NULLIF((SELECT SUM(size_bytes) FROM included),0),4) AS \
                 percent_of_active_blocks FROM included ORDER BY size_bytes DESC, block_count \
                 DESC, callstack, stack_kind='captured' LIMIT ?"
            ),
            &p,
        )?;
        for r in &mut rows {
            a.src.budget.check()?;
            let kind = r["stack_kind"].as_str().unwrap_or("").to_owned();
            let identity = if kind == "captured" {
                format!(
                    "text:sha256:{}",
                    sha_hex(r["callstack"].as_str().unwrap_or(""))
                )
            } else {
                format!("category:{kind}")
            };
            let id = format!("{namespace}:{identity}");
            r.insert("source_stack_id".into(), json!(id));
            r.insert("stack_id".into(), json!(id));
            r.insert("text_kind".into(), json!(kind));
            r.insert("frames".into(), Value::Null);
            r.insert("frames_status".into(), json!("text_only"));
        }
        let total = get_i(&summary, "total").unwrap_or(0);
        let dynamic = get_i(&summary, "dynamic_groups").unwrap_or(0);
        (rows, total, top_n >= 0 && dynamic >= top_n, 0)
    };
    drop(a);
    if template == "active_blocks_at_event" {
        hydrate_blocks(src, &mut rows)?;
    }
    coverage.insert("source_queries".into(), json!(src.query_count));
    let mut scope = Map::new();
    scope.insert("kind".into(), json!("event"));
    scope.insert("device_id".into(), json!(src.device.device_id));
    scope.insert("slice_index".into(), json!(src.device.slices[item].index));
    scope.insert("first_event_id".into(), json!(event));
    scope.insert("last_event_id".into(), json!(event));
    scope.insert(
        "db_path".into(),
        json!(src
            .ds
            .root
            .join(&src.device.slices[item].file)
            .display()
            .to_string()),
    );
    scope.insert(
        "dataset_path".into(),
        json!(src.ds.root.display().to_string()),
    );
    scope.insert("fingerprint".into(), json!(src.ds.fingerprint));
    scope.insert("boundary_events_included".into(), json!(false));
    scope.insert("source_coverage".into(), Value::Object(coverage));
    let n = rows.len() as i64;
    let has_more = if exact_total {
        total > n + offset
    } else {
        total > n + offset || rank_full
    };
    src.budget.consume(&rows)?;
    Ok(Page {
        rows,
        total,
        has_more,
        offset,
        scope,
    })
}

/// Adds the lifecycle and source columns to the returned blocks of `active_blocks_at_event`.
fn hydrate_blocks(src: &mut Sources, blocks: &mut [Row]) -> Result<(), QueryError> {
    let ids: Vec<i64> = blocks
        .iter()
        .flat_map(|b| [get_i(b, "allocEventId"), get_i(b, "freeEventId")])
        .flatten()
        .filter(|v| *v >= 0)
        .collect();
    let refs = src.events(ids)?;
    for b in blocks {
        src.budget.check()?;
        let alloc = get_i(b, "allocEventId").unwrap_or(-1);
        let free = get_i(b, "freeEventId").unwrap_or(-1);
        let category = if alloc >= 0 {
            "dynamic_live_at_event"
        } else if free == -1 {
            "static"
        } else {
            "preexisting_live_at_event"
        };
        b.insert("category".into(), json!(category));
        let token = if alloc >= 0 {
            format!("alloc:{alloc}")
        } else {
            format!("preexisting:{}", get_i(b, "id").unwrap_or(0))
        };
        b.insert(
            "lifecycle_id".into(),
            json!(format!("{}:{token}", src.namespace)),
        );
        b.insert("state_scope".into(), json!("slice_observation"));
        let allocation = refs
            .get(&alloc)
            .filter(|s| s.event.get("action").and_then(Value::as_i64) == Some(4));
        let completion = refs
            .get(&free)
            .filter(|s| s.event.get("action").and_then(Value::as_i64) == Some(6));
        b.insert(
            "allocation_source".into(),
            allocation.map_or(Value::Null, EventSource::to_json),
        );
        b.insert(
            "free_source".into(),
            completion.map_or(Value::Null, EventSource::to_json),
        );
        b.insert(
            "allocation_source_status".into(),
            json!(if alloc == -1 {
                "unknown_preexisting"
            } else if allocation.is_some() {
                "resolved"
            } else {
                "missing"
            }),
        );
        b.insert(
            "free_source_status".into(),
            json!(if free == -1 {
                "live_or_unknown"
            } else if completion.is_some() {
                "resolved"
            } else {
                "missing"
            }),
        );
    }
    Ok(())
}
