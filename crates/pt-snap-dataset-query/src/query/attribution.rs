//! `active_blocks_at_event`, `active_memory_callstack_at_event` and `preexisting_live` on a
//! dataset: the shard owning the event holds its exact live set; allocation callstacks come
//! from the shards owning the allocation events.

use super::attach::{proof, required_slices, Attached};
use super::*;

/// How the live set of a point event is read from its shard's block table. The rows are the
/// reference's whatever the plan; only the access path differs. Left to itself SQLite takes
/// the `size` index for `size>=0` and then looks up every block of the shard by rowid (55 ms
/// on an 84k-block shard, three times per call); near the end of a shard the blocks freed
/// after the event, and near its start the blocks allocated before it, are a few hundred
/// index entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LivePlan {
    Scan,
    Size,
    Alloc,
    Free,
}

/// Above this many index entries a plan's rowid lookups cost more than a scan of the table.
pub(super) const LIVE_INDEX_ROWS: i64 = 4096;

/// The cheapest [`LivePlan`] for `event` in shard `item`, from capped counts over the block
/// table's indexes (index-only, not charged: the reference's plan has no such reads).
pub(super) fn live_plan(
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

pub(super) fn active_cte(
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

pub(super) fn group_cte(cte: &str, top_n: i64) -> String {
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

pub(super) fn attribution(src: &mut Sources, question: Question) -> Result<Page, QueryError> {
    let (template, params, slice) = (question.template, question.params, question.slice);
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
    let cap = question.max_rows.filter(|n| *n > 0).unwrap_or(-1);
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
    let has_more = if question.exact_total {
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
pub(super) fn hydrate_blocks(src: &mut Sources, blocks: &mut [Row]) -> Result<(), QueryError> {
    let refs = src.events(lifetime_event_ids(blocks))?;
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

/// `preexisting_live`: the blocks live at `event_id` that were allocated before the trace
/// (allocation id -1), from the shard owning the event, and that shard as the scope.
pub(super) fn preexisting(
    src: &mut Sources,
    params: &Params,
    slice: Option<usize>,
) -> Result<(Vec<Row>, Map<String, Value>), QueryError> {
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
    Ok((rows, range_scope(src, event, event, &[item])))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testdata::{pair, project, run, same_as_database};

    /// At every event, what was live (blocks allocated before the trace, and groups by
    /// allocation callstack) is the single database's, whichever shard owns the event and
    /// the allocations.
    #[test]
    fn the_live_set_at_an_event_is_the_databases() {
        let p = pair(3);
        let keys = [
            "callstack",
            "category",
            "block_count",
            "size_bytes",
            "requested_bytes",
            "percent_of_active_blocks",
        ];
        for device in [0, 1] {
            for event in [0, 4, 8, 14] {
                same_as_database(&p, "preexisting_live", json!({"event_id": event}), device);
                let params = json!({"event_id": event});
                let db = run(
                    &p.database,
                    "active_memory_callstack_at_event",
                    params.clone(),
                    device,
                );
                let ds = run(
                    &p.dataset,
                    "active_memory_callstack_at_event",
                    params,
                    device,
                );
                assert_eq!(
                    project(&ds, &keys),
                    project(&db, &keys),
                    "device {device} event {event}"
                );
            }
        }
    }

    /// An event the device does not have is a parameter out of the dataset's scope.
    #[test]
    fn an_event_outside_the_dataset_is_out_of_scope() {
        let p = pair(4);
        let mut request = pt_snap_query::QueryRequest::new("preexisting_live").device(0);
        request.params = json!({"event_id": 1000}).as_object().unwrap().clone();
        let err = pt_snap_query::Source::run(&p.dataset, &request).unwrap_err();
        assert!(
            matches!(err, pt_snap_query::QueryError::OutOfScope(_)),
            "{err:?}"
        );
    }
}
