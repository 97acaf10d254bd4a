//! SQL functions the templates use where SQLite has no fast plan of its own, or no way at
//! all (regular-expression rules over callstacks).

use std::collections::HashMap;

use pt_snap_db::rusqlite::functions::{Aggregate, Context, FunctionFlags};
use pt_snap_db::rusqlite::types::ValueRef;
use pt_snap_db::rusqlite::{self, Connection};

use crate::category::CategoryRules;

/// Registers the functions on a connection.
pub fn register(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_aggregate_function(
        "pt_snap_group_totals",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        GroupTotals,
    )?;
    conn.create_scalar_function(
        "pt_snap_memory_category",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        memory_category,
    )
}

/// `pt_snap_memory_category(rules, stack)`: `[category, rule]` (a JSON array) of a rendered
/// callstack under the rules file `rules` (`''`: the built-in rules); a NULL stack is a
/// block without an allocation event. The rules are parsed once per statement: SQLite keeps
/// them as the auxiliary data of their (constant, bound) argument.
fn memory_category(ctx: &mut Context<'_>) -> rusqlite::Result<String> {
    enum Parsed {
        Builtin,
        Custom(CategoryRules),
    }
    let parsed = ctx.get_or_create_aux(0, |v| -> Result<Parsed, String> {
        match v {
            ValueRef::Null => Ok(Parsed::Builtin),
            ValueRef::Text(b"") => Ok(Parsed::Builtin),
            ValueRef::Text(t) => {
                CategoryRules::parse(&String::from_utf8_lossy(t)).map(Parsed::Custom)
            }
            _ => Err("pt_snap_memory_category: the rules must be text".into()),
        }
    })?;
    let rules = match &*parsed {
        Parsed::Builtin => CategoryRules::builtin(),
        Parsed::Custom(r) => r,
    };
    let stack = match ctx.get_raw(1) {
        ValueRef::Null => None,
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t)),
        _ => {
            return Err(rusqlite::Error::UserFunctionError(
                "pt_snap_memory_category: the stack must be text or NULL".into(),
            ))
        }
    };
    let c = rules.categorise_text(stack.as_deref());
    Ok(serde_json::json!([c.category, c.rule]).to_string())
}

/// `pt_snap_group_totals(key, value)`: a hash GROUP BY. For every distinct integer `key`
/// (NULL is a key too) it yields `[key, COUNT(*), SUM(value), MAX(value)]`, with SQLite's
/// semantics (NULL values skipped, NULL sum and max when a group has none, an error on
/// integer overflow), as a JSON array ordered by key for `json_each`. In the NULL group,
/// values that are not integers are taken as NULL instead of failing the query.
///
/// SQLite groups by sorting every input row. Over a million events with a few hundred
/// distinct callstacks, that sort is most of `callstack_analysis`'s time; a table of a few
/// hundred entries is not. Callstack ids are small dense integers, so the groups live in a
/// vector indexed by key; only other keys (negative, huge, NULL) go through a hash map.
struct GroupTotals;

#[derive(Default, Clone, Copy)]
struct Totals {
    count: i64,
    sum: Option<i64>,
    max: Option<i64>,
}

impl Totals {
    fn add(&mut self, value: Option<i64>) -> rusqlite::Result<()> {
        self.count += 1;
        if let Some(v) = value {
            self.sum = Some(match self.sum {
                None => v,
                Some(s) => s
                    .checked_add(v)
                    .ok_or_else(|| rusqlite::Error::UserFunctionError("integer overflow".into()))?,
            });
            self.max = Some(self.max.map_or(v, |m| m.max(v)));
        }
        Ok(())
    }
}

/// Keys below this are vector slots (at most 1 MiB of totals per query).
const DENSE_KEYS: i64 = 1 << 15;

#[derive(Default)]
struct Groups {
    /// `dense[k]` holds key `k`; a slot with count 0 is a key not seen.
    dense: Vec<Totals>,
    other: HashMap<Option<i64>, Totals>,
}

impl Groups {
    fn slot(&mut self, key: Option<i64>) -> &mut Totals {
        match key {
            Some(k) if (0..DENSE_KEYS).contains(&k) => {
                let k = k as usize;
                if k >= self.dense.len() {
                    self.dense
                        .resize((k + 1).next_power_of_two(), Totals::default());
                }
                &mut self.dense[k]
            }
            _ => self.other.entry(key).or_default(),
        }
    }

    /// Every group, ordered by key (NULL first, as SQLite orders it).
    fn into_sorted(self) -> Vec<(Option<i64>, Totals)> {
        let mut groups: Vec<(Option<i64>, Totals)> = self.other.into_iter().collect();
        groups.extend(
            (self.dense.into_iter().enumerate())
                .filter(|(_, t)| t.count > 0)
                .map(|(k, t)| (Some(k as i64), t)),
        );
        groups.sort_unstable_by_key(|(k, _)| *k);
        groups
    }
}

impl Aggregate<Groups, Option<String>> for GroupTotals {
    fn init(&self, _: &mut Context<'_>) -> rusqlite::Result<Groups> {
        Ok(Groups::default())
    }

    fn step(&self, ctx: &mut Context<'_>, groups: &mut Groups) -> rusqlite::Result<()> {
        let key = integer_or_null(ctx.get_raw(0), "key")?;
        // Callers drop the NULL group rather than filter NULL keys row by row (a second
        // column read per row); so that this never fails where such a filter would not
        // have, values of NULL-key rows are not type-checked: non-integers count as NULL.
        let value = match (key, ctx.get_raw(1)) {
            (None, ValueRef::Integer(v)) => Some(v),
            (None, _) => None,
            (Some(_), v) => integer_or_null(v, "value")?,
        };
        groups.slot(key).add(value)
    }

    fn finalize(
        &self,
        _: &mut Context<'_>,
        groups: Option<Groups>,
    ) -> rusqlite::Result<Option<String>> {
        Ok(Some(groups.unwrap_or_default().into_json()))
    }
}

impl Groups {
    fn into_json(self) -> String {
        let json = |v: Option<i64>| v.map_or("null".to_owned(), |v| v.to_string());
        let items: Vec<String> = (self.into_sorted().iter())
            .map(|(k, t)| format!("[{},{},{},{}]", json(*k), t.count, json(t.sum), json(t.max)))
            .collect();
        format!("[{}]", items.join(","))
    }
}

/// The totals of several `pt_snap_group_totals` results over disjoint rows, as one result
/// over all of them: what the aggregate would have returned in a single pass (a sum that
/// overflows fails the same way).
pub(crate) fn merge_group_totals(parts: &[String]) -> rusqlite::Result<String> {
    let mut groups = Groups::default();
    for part in parts {
        // `[key, count, sum, max]` per group, as `into_json` writes them.
        type Row = (Option<i64>, i64, Option<i64>, Option<i64>);
        let rows: Vec<Row> = serde_json::from_str(part).map_err(|e| {
            rusqlite::Error::UserFunctionError(
                format!("pt_snap_group_totals: unreadable partial totals: {e}").into(),
            )
        })?;
        for (key, count, sum, max) in rows {
            let totals = groups.slot(key);
            totals.count += count;
            totals.sum = match (totals.sum, sum) {
                (Some(a), Some(b)) => Some(a.checked_add(b).ok_or_else(|| {
                    rusqlite::Error::UserFunctionError("integer overflow".into())
                })?),
                (a, b) => a.or(b),
            };
            totals.max = match (totals.max, max) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
    }
    Ok(groups.into_json())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The aggregate must agree with SQLite's own GROUP BY for dense, negative, huge and
    /// NULL keys, NULL values, and groups whose values are all NULL.
    #[test]
    fn group_totals_match_sqlite_group_by() {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        conn.execute_batch("CREATE TABLE t (k INTEGER, v INTEGER)")
            .unwrap();
        let mut rows: Vec<(Option<i64>, Option<i64>)> = Vec::new();
        for i in 0..5000i64 {
            let key = match i % 7 {
                0 => None,
                1 => Some(-(i % 3) - 1),
                2 => Some(DENSE_KEYS + i % 5),
                3 => Some(i64::MAX - i % 2),
                _ => Some(i % 300),
            };
            let value = (i % 11 != 0).then_some(i * 37 % 1000 - 200);
            rows.push((key, value));
        }
        rows.push((Some(12_345), None));
        let mut insert = conn.prepare("INSERT INTO t VALUES (?, ?)").unwrap();
        for r in &rows {
            insert.execute(rusqlite::params![r.0, r.1]).unwrap();
        }
        let ours: String = conn
            .query_row("SELECT pt_snap_group_totals(k, v) FROM t", [], |r| r.get(0))
            .unwrap();
        let sqlite: String = conn
            .query_row(
                "SELECT '[' || group_concat(g, ',') || ']' FROM (SELECT json_array(k, COUNT(*), \
                 SUM(v), MAX(v)) AS g FROM t GROUP BY k ORDER BY k)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(ours, sqlite);
        assert!(ours.contains("[12345,1,null,null]"));
    }

    /// Totals of row ranges, merged, equal the totals of all rows.
    #[test]
    fn merged_partial_totals_equal_one_pass() {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        conn.execute_batch(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER, v INTEGER);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
             INSERT INTO t SELECT i, CASE WHEN i % 13 = 0 THEN NULL WHEN i % 7 = 0 THEN -i % 5
             ELSE i % 40 END, CASE WHEN i % 11 = 0 THEN NULL ELSE i * 31 % 977 END FROM n;
             INSERT INTO t VALUES (5000, 99999, NULL);",
        )
        .unwrap();
        let totals = |sql: &str| -> String { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        let whole = totals("SELECT pt_snap_group_totals(k, v) FROM t");
        let parts: Vec<String> = [(0, 999), (1000, 1000), (1001, 2500), (2501, 9999)]
            .iter()
            .map(|(lo, hi)| {
                totals(&format!(
                    "SELECT pt_snap_group_totals(k, v) FROM t WHERE id BETWEEN {lo} AND {hi}"
                ))
            })
            .collect();
        assert_eq!(merge_group_totals(&parts).unwrap(), whole);
        assert!(whole.contains("[99999,1,null,null]"), "{whole}");
    }

    #[test]
    fn group_totals_report_overflow_like_sum() {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        conn.execute_batch(&format!(
            "CREATE TABLE t (k INTEGER, v INTEGER); INSERT INTO t VALUES (1, {m}), (1, {m});",
            m = i64::MAX
        ))
        .unwrap();
        let err = conn
            .query_row("SELECT pt_snap_group_totals(k, v) FROM t", [], |r| {
                r.get::<_, String>(0)
            })
            .unwrap_err();
        assert!(err.to_string().contains("integer overflow"), "{err}");
    }

    /// Non-integer values fail the query, except in the NULL group, which callers drop
    /// instead of filtering NULL keys per row.
    #[test]
    fn group_totals_refuse_non_integers_outside_the_null_group() {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        conn.execute_batch(
            "CREATE TABLE t (k, v); INSERT INTO t VALUES (NULL, 'x'), (NULL, 2.5), (NULL, 4), (1, 3);",
        )
        .unwrap();
        let totals: String = conn
            .query_row("SELECT pt_snap_group_totals(k, v) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(totals, "[[null,3,4,4],[1,1,3,3]]");
        conn.execute_batch("INSERT INTO t VALUES (2, 'y')").unwrap();
        let err = conn
            .query_row("SELECT pt_snap_group_totals(k, v) FROM t", [], |r| {
                r.get::<_, String>(0)
            })
            .unwrap_err();
        assert!(err.to_string().contains("must be an integer"), "{err}");
    }
}
