//! `memory_peak` and `allocator_gap` on a dataset: the counters' peaks over the device's real
//! events, merged shard by shard (earliest event on ties), with the shards owning them.

use super::*;

pub(super) fn peaks(
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testdata::{agree_at_shard_sizes, pair, run};

    /// Merged shard by shard, the peaks are the single database's: no extreme is lost at a
    /// shard boundary, whatever the shard size.
    #[test]
    fn peaks_over_shards_are_the_databases() {
        agree_at_shard_sizes(&[1, 4], "memory_peak", json!({}));
        agree_at_shard_sizes(&[1, 4], "allocator_gap", json!({}));
    }

    /// A range names the shards it covers; the peak found is inside it.
    #[test]
    fn a_range_is_searched_only_where_it_lies() {
        let p = pair(4);
        let o = run(
            &p.dataset,
            "memory_peak",
            json!({"start_id": 5, "end_id": 9}),
            0,
        );
        let event = o.get(0, "peak_active_event_id").and_then(|v| v.as_i64());
        assert!(event.is_some_and(|e| (5..=9).contains(&e)), "{event:?}");
        let scope = o.scope.unwrap();
        assert_eq!(scope["first_event_id"], 5);
        assert_eq!(scope["last_event_id"], 9);
        assert_eq!(scope["slice_indices"], json!([1, 2]));
    }
}
