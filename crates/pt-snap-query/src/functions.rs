//! SQL functions the templates use where SQLite has no fast plan of its own.

use std::collections::HashMap;

use pt_snap_db::rusqlite::functions::{Aggregate, Context, FunctionFlags};
use pt_snap_db::rusqlite::types::ValueRef;
use pt_snap_db::rusqlite::{self, Connection};

/// Registers the functions on a connection.
pub fn register(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_aggregate_function(
        "pt_snap_group_totals",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        GroupTotals,
    )
}

/// `pt_snap_group_totals(key, value)`: a hash GROUP BY. For every distinct integer `key`
/// (NULL is a key too) it yields `[key, COUNT(*), SUM(value), MAX(value)]`, with SQLite's
/// semantics (NULL values skipped, NULL sum and max when a group has none, an error on
/// integer overflow), as a JSON array ordered by key for `json_each`.
///
/// SQLite groups by sorting every input row. Over a million events with a few hundred
/// distinct callstacks, that sort is most of `callstack_analysis`'s time; a hash table
/// of a few hundred entries is not.
struct GroupTotals;

#[derive(Default, Clone, Copy)]
struct Totals {
    count: i64,
    sum: Option<i64>,
    max: Option<i64>,
}

type Groups = HashMap<Option<i64>, Totals>;

impl Aggregate<Groups, Option<String>> for GroupTotals {
    fn init(&self, _: &mut Context<'_>) -> rusqlite::Result<Groups> {
        Ok(Groups::new())
    }

    fn step(&self, ctx: &mut Context<'_>, groups: &mut Groups) -> rusqlite::Result<()> {
        let key = integer_or_null(ctx.get_raw(0), "key")?;
        let value = integer_or_null(ctx.get_raw(1), "value")?;
        let t = groups.entry(key).or_default();
        t.count += 1;
        if let Some(v) = value {
            t.sum = Some(match t.sum {
                None => v,
                Some(s) => s
                    .checked_add(v)
                    .ok_or_else(|| rusqlite::Error::UserFunctionError("integer overflow".into()))?,
            });
            t.max = Some(t.max.map_or(v, |m| m.max(v)));
        }
        Ok(())
    }

    fn finalize(
        &self,
        _: &mut Context<'_>,
        groups: Option<Groups>,
    ) -> rusqlite::Result<Option<String>> {
        let mut groups: Vec<(Option<i64>, Totals)> =
            groups.unwrap_or_default().into_iter().collect();
        groups.sort_unstable_by_key(|(k, _)| *k);
        let json = |v: Option<i64>| v.map_or("null".to_owned(), |v| v.to_string());
        let items: Vec<String> = groups
            .iter()
            .map(|(k, t)| format!("[{},{},{},{}]", json(*k), t.count, json(t.sum), json(t.max)))
            .collect();
        Ok(Some(format!("[{}]", items.join(","))))
    }
}

fn integer_or_null(v: ValueRef<'_>, what: &str) -> rusqlite::Result<Option<i64>> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(i) => Ok(Some(i)),
        _ => Err(rusqlite::Error::UserFunctionError(
            format!("pt_snap_group_totals: the {what} must be an integer").into(),
        )),
    }
}
