//! Attribution at an event: live memory by callstack and by frame, lifetimes, leak
//! candidates, preexisting blocks.

use pt_snap_db::CallstackLayout;

use super::basic::VALID_STACK_HAVING;
use super::Target;
use crate::error::QueryError;
use crate::params::Params;
use crate::sql::{GroupScan, Sql};

/// `… AND (freeEventId IS NULL OR freeEventId < 0 OR freeEventId > E)`: not yet freed at E.
/// Pending frees count as live: freeEventId is the free-completed event.
/// The unary `+` keeps SQLite from walking an event-id index with a table lookup per
/// block: every block is a candidate, so one scan of the table is faster at any E.
fn not_freed_at(q: &mut Sql, prefix: &str, e: i64) {
    q.push(&format!(
        "(+{prefix}freeEventId IS NULL OR +{prefix}freeEventId < 0 OR +{prefix}freeEventId > "
    ))
    .bind(e)
    .push(")");
}

/// The category of a block live at E: `static`, `preexisting_live_at_event`, or dynamic.
fn category_case(q: &mut Sql, e: i64) {
    q.push(
        "CASE
              WHEN allocEventId = -1 AND freeEventId = -1 THEN 'static'
              WHEN allocEventId = -1 AND ",
    );
    not_freed_at(q, "", e);
    q.push(
        " THEN 'preexisting_live_at_event'
              ELSE 'dynamic_live_at_event'
            END AS category",
    );
}

/// `size >= min_size`. A threshold of zero or less selects (nearly) every block, and then
/// walking the size index with a table lookup per block costs far more than one scan: the
/// unary `+` keeps SQLite off the index without changing the answer.
fn min_size_filter(q: &mut Sql, column: &str, p: &Params) {
    let min_size = p.int_or("min_size", 0);
    let hint = if min_size <= 0 { "+" } else { "" };
    q.push(&format!(" {hint}{column} >= ")).bind(min_size);
}

/// Blocks of at least `min_size` bytes live at E (preexisting ones only with include_static).
fn live_at_filter(q: &mut Sql, p: &Params, e: i64) {
    q.push(" WHERE");
    min_size_filter(q, "size", p);
    q.push(" AND (");
    if p.bool("include_static") {
        q.push("(+allocEventId = -1 AND ");
        not_freed_at(q, "", e);
        q.push(") OR ");
    }
    q.push("(+allocEventId != -1 AND +allocEventId <= ")
        .bind(e)
        .push(" AND ");
    not_freed_at(q, "", e);
    q.push("))");
}

/// `active_blocks_at_event`'s block selection, shared with that statistical template.
pub(crate) fn active_blocks_cte(q: &mut Sql, p: &Params, t: &Target, columns: &str) {
    let e = p.int_or("event_id", 0);
    q.push("WITH active_blocks AS (SELECT ")
        .push(columns)
        .push(", ");
    category_case(q, e);
    q.push(" FROM ").push(&t.block());
    live_at_filter(q, p, e);
    q.push(")");
}

pub fn active_memory_callstack_at_event(p: &Params, t: &Target) -> Result<Sql, QueryError> {
    let layout = t.layout()?;
    let stacks = p.int_or("stack_bytes", -1) >= 0;
    let mut q = Sql::new("");
    active_blocks_cte(
        &mut q,
        p,
        t,
        "id, size, requestedSize, allocEventId, freeEventId",
    );
    // v1 stores the text inline; v2 joins it, and groups by the id so two stacks with the
    // same text stay apart, as the reference does.
    let (text, join, group_key) = match layout {
        CallstackLayout::V1 => ("t.callstack", String::new(), "NULLIF(t.callstack, '')"),
        CallstackLayout::V2 => (
            "cs.callstack",
            " LEFT JOIN callstack cs ON t.callstackId = cs.id".to_owned(),
            "CASE WHEN NULLIF(cs.callstack, '') IS NULL THEN NULL ELSE t.callstackId END",
        ),
    };
    q.push(&format!(
        ", grouped AS (
          SELECT
            CASE
              WHEN b.category = 'static' THEN '[static] allocEventId=-1, freeEventId=-1'
              WHEN b.category = 'preexisting_live_at_event' THEN '[preexisting live] allocEventId=-1'
              ELSE COALESCE(NULLIF({text}, ''), '[missing callstack]')
            END AS callstack,"
    ));
    if stacks {
        let stack_id = match layout {
            CallstackLayout::V1 => "NULL".to_owned(),
            CallstackLayout::V2 => format!(
                "CASE WHEN b.category = 'dynamic_live_at_event' AND NULLIF({text}, '') IS NOT NULL \
                 THEN t.callstackId END"
            ),
        };
        q.push(&format!(
            " {stack_id} AS stack_id,
            CASE WHEN b.category != 'dynamic_live_at_event' THEN b.category
                 WHEN NULLIF({text}, '') IS NULL THEN 'missing'
                 ELSE 'captured' END AS stack_kind,
            CASE WHEN b.category = 'dynamic_live_at_event' AND NULLIF({text}, '') IS NOT NULL
                 THEN MIN(t.id) END AS stack_event_id,"
        ));
    }
    q.push(&format!(
        " b.category,
            COUNT(*) AS block_count,
            SUM(b.size) AS size_bytes,
            ROUND(SUM(b.size) / 1073741824.0, 6) AS size_gib,
            SUM(b.requestedSize) AS requested_bytes,
            ROUND(SUM(b.requestedSize) / 1073741824.0, 6) AS requested_gib
          FROM active_blocks b
          LEFT JOIN {} t ON b.allocEventId = t.id{join}
          GROUP BY {group_key}, b.category
        )",
        t.trace()
    ));
    let cols = if stacks {
        "callstack, stack_id, stack_kind, stack_event_id, category, block_count, size_bytes, \
         size_gib, requested_bytes, requested_gib"
    } else {
        "callstack, category, block_count, size_bytes, size_gib, requested_bytes, requested_gib"
    };
    q.push(&format!(
        ", ranked_dynamic AS (
          SELECT {cols} FROM grouped
          WHERE category = 'dynamic_live_at_event'
          ORDER BY size_bytes DESC, block_count DESC, callstack ASC
          LIMIT "
    ))
    .bind(p.int_or("top_n", 20));
    q.push(&format!(
        ")
        SELECT {cols},
          ROUND(size_bytes * 100.0 / NULLIF(SUM(size_bytes) OVER (), 0), 4) AS percent_of_active_blocks
        FROM (
          SELECT {cols} FROM grouped WHERE category IN ('static', 'preexisting_live_at_event')
          UNION ALL
          SELECT {cols} FROM ranked_dynamic
        )
        ORDER BY size_bytes DESC, block_count DESC, callstack ASC"
    ));
    Ok(q)
}

pub fn active_memory_frame_tree_at_event(p: &Params, t: &Target) -> Result<Sql, QueryError> {
    let e = p.int_or("event_id", 0);
    let mut q = Sql::new(
        "WITH RECURSIVE active_blocks AS (
        SELECT b.size, COALESCE(b.requestedSize, 0) AS requested_size,
               CASE WHEN b.allocEventId = -1 AND b.freeEventId = -1 THEN 'static'
                    WHEN b.allocEventId = -1 THEN 'preexisting_live_at_event'
                    ELSE 'dynamic_live_at_event' END AS category,
               t.callstackId AS stack_id
        FROM ",
    );
    q.push(&t.block())
        .push(" b LEFT JOIN ")
        .push(&t.trace())
        .push(" t ON t.id = b.allocEventId WHERE");
    min_size_filter(&mut q, "b.size", p);
    q.push(" AND ");
    not_freed_at(&mut q, "b.", e);
    q.push(" AND (");
    if p.bool("include_static") {
        q.push("+b.allocEventId = -1 OR ");
    }
    q.push("(+b.allocEventId != -1 AND +b.allocEventId <= ")
        .bind(e)
        .push("))");
    q.push(
        "), stack_shape AS (
        SELECT m.callstackId, m.frameCount - 1 AS last_position
        FROM callstack_frame_manifest m
        JOIN callstack cs ON cs.id = m.callstackId
        LEFT JOIN callstack_frame cf ON cf.callstackId = m.callstackId
        LEFT JOIN frame f ON f.id = cf.frameId",
    );
    q.push(VALID_STACK_HAVING);
    q.push(
        "), groups AS (
        SELECT CASE WHEN b.category = 'dynamic_live_at_event' AND s.last_position = -1
                    THEN 'empty_callstack' ELSE b.category END AS category,
               CASE WHEN s.last_position >= 0 THEN b.stack_id END AS stack_id,
               s.last_position,
               COUNT(*) AS block_count, SUM(b.size) AS size_bytes,
               SUM(b.requested_size) AS requested_bytes
        FROM active_blocks b
        LEFT JOIN stack_shape s ON s.callstackId = b.stack_id
          AND b.category = 'dynamic_live_at_event'
        GROUP BY CASE WHEN b.category = 'dynamic_live_at_event' AND s.last_position = -1
                      THEN 'empty_callstack' ELSE b.category END,
                 CASE WHEN s.last_position >= 0 THEN b.stack_id END
      ), paths AS (
        SELECT g.stack_id, cf.position, cf.frameId AS frame_id,
               'frame/' || cf.frameId AS node_id, 'root' AS parent_id, 1 AS depth,
               g.block_count, g.size_bytes, g.requested_bytes
        FROM groups g
        JOIN callstack_frame cf ON cf.callstackId = g.stack_id
          AND cf.position = g.last_position
        UNION ALL
        SELECT p.stack_id, cf.position, cf.frameId,
               p.node_id || '/' || cf.frameId, p.node_id, p.depth + 1,
               p.block_count, p.size_bytes, p.requested_bytes
        FROM paths p
        JOIN callstack_frame cf ON cf.callstackId = p.stack_id
          AND cf.position = p.position - 1
      ), nodes AS (
        SELECT 'root' AS node_id, NULL AS parent_id, 0 AS depth, NULL AS frame_id,
               'mixed' AS category, '[all active blocks]' AS label,
               COALESCE(SUM(block_count), 0) AS block_count,
               COALESCE(SUM(size_bytes), 0) AS size_bytes,
               COALESCE(SUM(requested_bytes), 0) AS requested_bytes,
               0 AS self_block_count, 0 AS self_bytes, 0 AS self_requested_bytes
        FROM groups
        UNION ALL
        SELECT p.node_id, p.parent_id, p.depth, p.frame_id,
               'dynamic_live_at_event', f.filename || ':' || f.line || ' ' || f.name,
               SUM(p.block_count), SUM(p.size_bytes), SUM(p.requested_bytes),
               SUM(CASE WHEN p.position = 0 THEN p.block_count ELSE 0 END),
               SUM(CASE WHEN p.position = 0 THEN p.size_bytes ELSE 0 END),
               SUM(CASE WHEN p.position = 0 THEN p.requested_bytes ELSE 0 END)
        FROM paths p JOIN frame f ON f.id = p.frame_id
        GROUP BY p.node_id
        UNION ALL
        SELECT CASE WHEN category = 'dynamic_live_at_event' THEN 'missing' ELSE category END,
               'root', 1, NULL, category,
               CASE WHEN category = 'static' THEN '[static]'
                    WHEN category = 'preexisting_live_at_event' THEN '[preexisting live]'
                    WHEN category = 'empty_callstack' THEN '[empty captured callstack]'
                    ELSE '[missing callstack]' END,
               block_count, size_bytes, requested_bytes,
               block_count, size_bytes, requested_bytes
        FROM groups WHERE stack_id IS NULL
      )
      SELECT n.node_id, n.parent_id, n.depth, n.frame_id, n.category, n.label,
             f.filename, f.line, f.name,
             n.block_count, n.size_bytes, n.requested_bytes,
             n.self_block_count, n.self_bytes, n.self_requested_bytes,
             ROUND(n.size_bytes * 100.0 / NULLIF(r.size_bytes, 0), 4) AS percent_of_total
      FROM nodes n
      LEFT JOIN frame f ON f.id = n.frame_id
      CROSS JOIN nodes r
      WHERE r.node_id = 'root'
      ORDER BY n.depth ASC, n.parent_id ASC, n.size_bytes DESC, n.node_id ASC",
    );
    Ok(q)
}

pub fn freed_block_lifetime(_: &Params, t: &Target) -> Result<Sql, QueryError> {
    // The bucket index is the number of bounds the distance reaches; buckets are disjoint
    // ranges, so ordering by index is the reference's ordering by each bucket's smallest
    // distance. Hashing into five buckets (`pt_snap_group_totals`) instead of a GROUP BY
    // that sorts every freed block; `+allocEventId` because nearly every block passes it
    // and walking its index with a lookup per block costs more than a scan.
    let mut q = Sql::new(
        "WITH buckets AS (
        SELECT json_extract(g.value, '$[0]') AS bucket, json_extract(g.value, '$[1]') AS n,
               json_extract(g.value, '$[2]') AS total
        FROM json_each(",
    );
    q.group_totals(GroupScan {
        table: t.block(),
        key: "(freeEventId - allocEventId >= 1000) + (freeEventId - allocEventId >= 5000) \
              + (freeEventId - allocEventId >= 20000) + (freeEventId - allocEventId >= 100000)",
        value: "size",
        filter: "+allocEventId >= 0 AND freeEventId >= allocEventId",
    })
    .push(
        ") g)
      SELECT CASE bucket WHEN 0 THEN '<1k' WHEN 1 THEN '1k-5k' WHEN 2 THEN '5k-20k'
                         WHEN 3 THEN '20k-100k' ELSE '>=100k' END AS lifetime_events,
             n AS block_count, COALESCE(total, 0) AS size_bytes
      FROM buckets ORDER BY bucket",
    );
    Ok(q)
}

pub fn leak_detection(p: &Params, t: &Target) -> Result<Sql, QueryError> {
    let mut q = Sql::new("SELECT id, address, size, allocEventId FROM ");
    q.push(&t.block()).push(" WHERE");
    min_size_filter(&mut q, "size", p);
    q.push(
        " AND (allocEventId >= 0 AND (freeEventId IS NULL OR freeEventId < 0))
      ORDER BY size DESC, id DESC",
    );
    Ok(q)
}

pub fn preexisting_live(p: &Params, t: &Target) -> Result<Sql, QueryError> {
    let e = p.int_or("event_id", 0);
    let mut q =
        Sql::new("SELECT COUNT(*) AS block_count, COALESCE(SUM(size), 0) AS size_bytes FROM ");
    q.push(&t.block())
        .push(
            " WHERE allocEventId = -1 AND (freeEventId IS NULL
          OR (freeEventId > ",
        )
        .bind(e)
        .push(
            " AND freeEventId <> -1)
          OR (freeEventId < 0 AND freeEventId <> -1))",
        );
    Ok(q)
}
