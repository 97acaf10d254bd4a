//! `event` and `allocation` on a dataset: real events of the range, filtered, sorted and paged
//! globally over the device's shards.

use super::*;

#[allow(clippy::too_many_arguments)]
pub(super) fn events_page(
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testdata::{pair, project, run};

    /// The real events of every shard, in id order: the database's events with ids ≥ 0, and
    /// never a boundary row.
    #[test]
    fn real_events_are_the_databases() {
        let p = pair(3);
        let keys = ["id", "action", "address", "size"];
        for device in [0, 1] {
            let db = run(&p.database, "event", json!({"min_id": 0}), device);
            let ds = run(&p.dataset, "event", json!({}), device);
            assert_eq!(ds.total, 15);
            assert_eq!(project(&ds, &keys), project(&db, &keys), "device {device}");
            let db = run(&p.database, "allocation", json!({"min_id": 0}), device);
            let ds = run(&p.dataset, "allocation", json!({}), device);
            assert_eq!(
                project(&ds, &["id"]),
                project(&db, &["id"]),
                "device {device}"
            );
        }
    }

    /// A page of a global sort spans shards: the largest events first, whichever shard holds
    /// them.
    #[test]
    fn a_sorted_page_is_taken_over_all_shards() {
        let p = pair(2);
        let params = json!({"order_by": "size", "order_dir": "DESC", "limit": 3});
        let ds = run(&p.dataset, "event", params.clone(), 0);
        let sizes: Vec<i64> = project(&ds, &["size"])
            .iter()
            .map(|r| r["size"].as_i64().unwrap())
            .collect();
        let mut all: Vec<i64> = project(&run(&p.dataset, "event", json!({}), 0), &["size"])
            .iter()
            .map(|r| r["size"].as_i64().unwrap())
            .collect();
        all.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(sizes, all[..3]);
        assert!(ds.has_more);
    }
}
