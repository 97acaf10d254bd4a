//! Whole-trace statistics: live blocks at an event, peaks, allocator gaps, callstack totals.

use pt_snap_db::CallstackLayout;

use super::business::active_blocks_cte;
use super::{ident, Target};
use crate::error::QueryError;
use crate::params::Params;
use crate::sql::{GroupScan, Sql};

pub fn active_blocks_at_event(p: &Params, t: &Target) -> Result<Sql, QueryError> {
    let mut q = Sql::new("");
    active_blocks_cte(
        &mut q,
        p,
        t,
        "id, address, size, requestedSize, state, allocEventId, freeEventId",
    );
    let key = ident(
        p,
        "order_by",
        &["size", "requestedSize", "allocEventId", "freeEventId", "id"],
    );
    let dir = ident(p, "order_dir", &["DESC", "ASC"]);
    // Unlike the row templates, ties always break by ascending id. The `+` sorts the few
    // live blocks instead of walking a whole block index in key order to find them.
    q.push(&format!(
        " SELECT * FROM active_blocks ORDER BY +{key} {dir}, id ASC"
    ));
    Ok(q)
}

/// ` WHERE id >= 0 [AND id >= start_id] [AND id <= end_id]`: the real events in range.
fn in_range(q: &mut Sql, p: &Params) {
    q.push(" WHERE id >= 0")
        .filter(" AND id >= ", p.get("start_id"))
        .filter(" AND id <= ", p.get("end_id"));
}

/// `peaks`: each counter's maximum over the range and the earliest event reaching it.
/// One `MAX()` per subquery and an equality lookup for the event let SQLite answer from
/// the counter indexes instead of scanning (and sorting) every event; the answer is the
/// reference's "highest value, ties to the lowest id".
fn peaks_cte(q: &mut Sql, p: &Params, t: &Target) {
    let trace = t.trace();
    q.push("WITH maxima AS (SELECT ");
    for (i, counter) in ["allocated", "active", "reserved"].iter().enumerate() {
        if i > 0 {
            q.push(", ");
        }
        q.push(&format!("(SELECT MAX({counter}) FROM {trace}"));
        in_range(q, p);
        q.push(&format!(") AS {counter}"));
    }
    q.push("), peaks AS (SELECT ");
    for (i, counter) in ["allocated", "active", "reserved"].iter().enumerate() {
        if i > 0 {
            q.push(", ");
        }
        q.push(&format!(
            "maxima.{counter} AS peak_{counter}, (SELECT MIN(id) FROM {trace}"
        ));
        in_range(q, p);
        q.push(&format!(
            " AND {counter} = maxima.{counter}) AS peak_{counter}_event_id"
        ));
    }
    q.push(" FROM maxima)");
}

/// `allocator_gap`'s columns for each peak: its event and value, the other two counters at
/// that event, and the event's reserved-minus-active and reserved-minus-allocated gaps.
fn peak_gap_columns() -> String {
    const COUNTERS: [&str; 3] = ["allocated", "active", "reserved"];
    let mut columns = String::new();
    for peak in COUNTERS {
        columns.push_str(&format!(
            "\n        p.peak_{peak}_event_id,\n        p.peak_{peak},"
        ));
        for other in COUNTERS.into_iter().filter(|c| *c != peak) {
            columns.push_str(&format!(
                "\n        {peak}_event.{other} AS {other}_at_{peak}_peak,"
            ));
        }
        for gap in ["active", "allocated"] {
            columns.push_str(&format!(
                "\n        {peak}_event.reserved - {peak}_event.{gap} \
                 AS reserved_{gap}_gap_at_{peak}_peak,"
            ));
        }
    }
    columns
}

pub fn allocator_gap(p: &Params, t: &Target) -> Result<Sql, QueryError> {
    let trace = t.trace();
    let columns = peak_gap_columns();
    let mut q = Sql::new("");
    peaks_cte(&mut q, p, t);
    q.push(&format!(
        "
      SELECT{columns}
        CASE
          WHEN p.peak_allocated_event_id = p.peak_active_event_id
           AND p.peak_active_event_id = p.peak_reserved_event_id
          THEN 1 ELSE 0
        END AS all_peaks_same_event,
        CASE WHEN p.peak_allocated_event_id = p.peak_active_event_id THEN 1 ELSE 0 END AS allocated_active_same_event,
        CASE WHEN p.peak_active_event_id = p.peak_reserved_event_id THEN 1 ELSE 0 END AS active_reserved_same_event,
        CASE WHEN p.peak_allocated_event_id = p.peak_reserved_event_id THEN 1 ELSE 0 END AS allocated_reserved_same_event
      FROM peaks p
      LEFT JOIN {trace} allocated_event ON allocated_event.id = p.peak_allocated_event_id
      LEFT JOIN {trace} active_event ON active_event.id = p.peak_active_event_id
      LEFT JOIN {trace} reserved_event ON reserved_event.id = p.peak_reserved_event_id"
    ));
    Ok(q)
}

pub fn callstack_analysis(p: &Params, t: &Target) -> Result<Sql, QueryError> {
    let mut q = Sql::new("");
    match t.layout()? {
        CallstackLayout::V1 => {
            q.push(
                "SELECT callstack, COUNT(*) AS alloc_count, SUM(size) AS total_size,
                 AVG(size) AS avg_size, MAX(size) AS max_size FROM ",
            )
            .push(&t.trace())
            .push(" WHERE id >= 0 AND callstack IS NOT NULL GROUP BY callstack");
        }
        CallstackLayout::V2 => {
            // Totals per callstack id in one hashed pass (see `pt_snap_group_totals`), then
            // ids that share a text merged: the reference groups a million rows by their
            // joined text, sorting long strings. AVG over integers is their exact sum over
            // the count, so the merge keeps it.
            q.push(
                "WITH per_id AS (SELECT json_extract(g.value, '$[0]') AS callstackId,
                 json_extract(g.value, '$[1]') AS n, json_extract(g.value, '$[2]') AS total,
                 json_extract(g.value, '$[3]') AS largest
                 FROM json_each(",
            )
            // Rows without a callstack id are dropped as the NULL group after aggregation:
            // filtering them per row costs a second column read for each of a million rows.
            .group_totals(GroupScan {
                table: t.trace(),
                key: "callstackId",
                value: "size",
                filter: "+id >= 0",
            })
            .push(
                ") g WHERE json_extract(g.value, '$[0]') IS NOT NULL),
                 per_text AS (SELECT c.callstack AS text, SUM(n) AS alloc_count,
                 SUM(total) AS total_size, MAX(largest) AS max_size
                 FROM per_id p LEFT JOIN callstack c ON c.id = p.callstackId GROUP BY c.callstack)
                 SELECT COALESCE(text, '[missing callstack]') AS callstack, alloc_count, total_size,
                 CAST(total_size AS REAL) / alloc_count AS avg_size, max_size FROM per_text",
            );
            q.push(" WHERE alloc_count >= ")
                .bind(p.int_or("min_count", 5))
                .push(" AND total_size >= ")
                .bind(p.int_or("min_size", 0))
                .push(" ORDER BY total_size DESC, callstack ASC, text IS NULL ASC");
            return Ok(q);
        }
    }
    q.push(" HAVING alloc_count >= ")
        .bind(p.int_or("min_count", 5))
        .push(" AND total_size >= ")
        .bind(p.int_or("min_size", 0));
    q.push(" ORDER BY total_size DESC, callstack ASC");
    Ok(q)
}

pub fn memory_peak(p: &Params, t: &Target) -> Result<Sql, QueryError> {
    let mut q = Sql::new("");
    peaks_cte(&mut q, p, t);
    q.push(
        " SELECT peak_allocated, peak_allocated_event_id, peak_active, peak_active_event_id,
                 peak_reserved, peak_reserved_event_id FROM peaks",
    );
    Ok(q)
}
