//! Row access: the allocation curve, blocks, events and one event's frames.

use pt_snap_db::CallstackLayout;

use super::{filters, order_by, Target};
use crate::error::QueryError;
use crate::params::Params;
use crate::sql::Sql;

pub fn allocation(p: &Params, t: &Target) -> Result<Sql, QueryError> {
    let mut q = Sql::new("SELECT id, allocated, active, reserved FROM ");
    q.push(&t.trace()).push(" WHERE 1=1");
    filters(
        &mut q,
        p,
        &[
            (" AND id >= ", "min_id"),
            (" AND id <= ", "max_id"),
            (" AND allocated >= ", "min_allocated"),
            (" AND active >= ", "min_active"),
            (" AND reserved >= ", "min_reserved"),
        ],
    );
    order_by(&mut q, p, &["id", "allocated", "active", "reserved"]);
    Ok(q)
}

pub fn block(p: &Params, t: &Target) -> Result<Sql, QueryError> {
    let mut q = Sql::new("SELECT * FROM ");
    q.push(&t.block()).push(" WHERE 1=1");
    filters(
        &mut q,
        p,
        &[
            (" AND id = ", "id"),
            (" AND address = ", "address"),
            (" AND size = ", "size"),
            (" AND size >= ", "min_size"),
            (" AND size <= ", "max_size"),
            (" AND requestedSize = ", "requestedSize"),
            (" AND allocEventId = ", "allocEventId"),
            (" AND allocEventId >= ", "min_allocEventId"),
            (" AND allocEventId <= ", "max_allocEventId"),
            (" AND freeEventId = ", "freeEventId"),
            (" AND freeEventId >= ", "min_freeEventId"),
            (" AND freeEventId <= ", "max_freeEventId"),
        ],
    );
    order_by(
        &mut q,
        p,
        &[
            "size",
            "id",
            "address",
            "requestedSize",
            "state",
            "allocEventId",
            "freeEventId",
        ],
    );
    Ok(q)
}

pub fn event(p: &Params, t: &Target) -> Result<Sql, QueryError> {
    let trace = t.trace();
    let stacks = p.int_or("stack_bytes", -1) >= 0;
    let mut q = Sql::new("SELECT id, action, address, size, stream, allocated, active, reserved, ");
    match t.layout()? {
        CallstackLayout::V1 => {
            q.push("callstack");
            if stacks {
                q.push(
                    ", NULL AS stack_id, \
                     CASE WHEN NULLIF(callstack, '') IS NULL THEN 'missing' ELSE 'captured' END \
                     AS stack_kind, \
                     CASE WHEN NULLIF(callstack, '') IS NOT NULL THEN id END AS stack_event_id",
                );
            }
        }
        CallstackLayout::V2 => {
            let text = format!(
                "(SELECT callstack FROM callstack WHERE callstack.id = {trace}.callstackId)"
            );
            q.push(&text).push(" AS callstack");
            if stacks {
                q.push(&format!(
                    ", callstackId AS stack_id, \
                     CASE WHEN NULLIF({text}, '') IS NULL THEN 'missing' ELSE 'captured' END \
                     AS stack_kind, id AS stack_event_id"
                ));
            }
        }
    }
    q.push(" FROM ").push(&trace).push(" WHERE 1=1");
    filters(
        &mut q,
        p,
        &[
            (" AND id = ", "id"),
            (" AND id >= ", "min_id"),
            (" AND id <= ", "max_id"),
            (" AND action = ", "action"),
            (" AND address = ", "address"),
            (" AND size = ", "size"),
            (" AND stream = ", "stream"),
            (" AND allocated >= ", "min_allocated"),
            (" AND active >= ", "min_active"),
            (" AND reserved >= ", "min_reserved"),
        ],
    );
    order_by(
        &mut q,
        p,
        &[&pt_snap_db::schema::TRACE_COLUMNS[..], &["callstack"]].concat(),
    );
    Ok(q)
}

/// A callstack's frames are trusted only when the manifest, the positions and the SQLite
/// types all agree; otherwise the stack counts as missing rather than half-read. Shared with
/// the frame tree, which must validate stacks the same way.
pub(crate) const VALID_STACK_HAVING: &str = "
        GROUP BY m.callstackId
        HAVING typeof(m.callstackId) = 'integer'
           AND typeof(m.frameCount) = 'integer' AND m.frameCount >= 0
           AND COUNT(cf.callstackId) = m.frameCount
           AND (m.frameCount = 0 OR (
             MIN(cf.position) = 0 AND MAX(cf.position) = m.frameCount - 1
             AND COUNT(DISTINCT cf.position) = m.frameCount
             AND SUM(CASE WHEN typeof(cf.position) = 'integer'
               AND typeof(cf.frameId) = 'integer' AND typeof(f.id) = 'integer'
               AND typeof(f.filename) = 'text' AND typeof(f.line) = 'integer'
               AND typeof(f.name) = 'text' THEN 1 ELSE 0 END) = m.frameCount
           ))";

pub fn event_frames(p: &Params, t: &Target) -> Result<Sql, QueryError> {
    let trace = t.trace();
    let event_id = p.int_or("event_id", 0);
    let mut q = Sql::new(
        "WITH valid_stacks AS (
        SELECT m.callstackId, m.frameCount - 1 AS last_position
        FROM callstack_frame_manifest m
        JOIN callstack cs ON cs.id = m.callstackId
        LEFT JOIN callstack_frame cf ON cf.callstackId = m.callstackId
        LEFT JOIN frame f ON f.id = cf.frameId
        WHERE m.callstackId = (SELECT callstackId FROM ",
    );
    q.push(&trace).push(" WHERE id = ").bind(event_id).push(")");
    q.push(VALID_STACK_HAVING);
    q.push(
        ")
      SELECT t.id AS event_id, t.callstackId AS stack_id,
             cf.position, f.id AS frame_id, f.filename, f.line, f.name
      FROM ",
    );
    q.push(&trace).push(
        " t
      JOIN valid_stacks valid ON valid.callstackId = t.callstackId
      JOIN callstack_frame cf ON cf.callstackId = t.callstackId
      JOIN frame f ON f.id = cf.frameId
      WHERE t.id = ",
    );
    q.bind(event_id);
    q.push(if p.str("frame_order") == "root_first" {
        " ORDER BY cf.position DESC"
    } else {
        " ORDER BY cf.position ASC"
    });
    Ok(q)
}
