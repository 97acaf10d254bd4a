//! `category_breakdown_at_event` (ours): live memory at an event by memory category, each
//! row naming the rule that chose the category (`crate::category`).

use pt_snap_db::CallstackLayout;

use super::business::active_blocks_cte;
use super::Target;
use crate::category::CategoryRules;
use crate::error::QueryError;
use crate::params::{ParamValue, Params};
use crate::sql::Sql;

/// The blocks of `active_blocks_at_event` with `include_static` and no size threshold (one
/// definition of "live at E": pending frees count), grouped first by allocation stack so
/// each distinct stack is judged once, then by (category, rule). Blocks without an
/// allocation event (static and preexisting ones) have no stack in the database: `unknown`,
/// rule `no-allocation-event`. So the rows add up to every live byte and block at E.
pub fn category_breakdown_at_event(p: &Params, t: &Target) -> Result<Sql, QueryError> {
    let rules = p.str("rules");
    // Refused here with the parameter's code, before SQLite sees them (the SQL function
    // parses them again, once per statement).
    if !rules.is_empty() {
        CategoryRules::parse(rules).map_err(QueryError::InvalidParameter)?;
    }
    let (stack_key, text_join, text) = match t.layout()? {
        // v1 keeps the text inline: group by it.
        CallstackLayout::V1 => ("t.callstack", "", "s.stack_key"),
        CallstackLayout::V2 => (
            "t.callstackId",
            " LEFT JOIN callstack cs ON cs.id = s.stack_key",
            "cs.callstack",
        ),
    };
    let mut live = p.clone();
    live.set("include_static", ParamValue::Bool(true));
    live.set("min_size", ParamValue::Int(0));
    let mut q = Sql::new("");
    active_blocks_cte(&mut q, &live, t, "size, allocEventId");
    q.push(&format!(
        ", stacks AS (
          SELECT b.allocEventId = -1 AS preexisting,
                 CASE WHEN b.allocEventId = -1 THEN NULL ELSE {stack_key} END AS stack_key,
                 SUM(b.size) AS bytes, COUNT(*) AS blocks
          FROM active_blocks b LEFT JOIN {} t ON t.id = b.allocEventId
          GROUP BY 1, 2
        ), judged AS (
          SELECT pt_snap_memory_category(",
        t.trace()
    ))
    .bind(rules.to_owned())
    .push(&format!(
        ", CASE WHEN s.preexisting THEN NULL ELSE COALESCE({text}, '') END) AS verdict,
                 s.bytes, s.blocks
          FROM stacks s{text_join}
        )
        SELECT json_extract(verdict, '$[0]') AS category,
               json_extract(verdict, '$[1]') AS rule,
               SUM(bytes) AS bytes,
               SUM(blocks) AS blocks,
               ROUND(SUM(bytes) * 100.0 / NULLIF(SUM(SUM(bytes)) OVER (), 0), 4)
                 AS percent_of_live_bytes
        FROM judged
        GROUP BY verdict
        ORDER BY bytes DESC, category ASC, rule ASC"
    ));
    Ok(q)
}
