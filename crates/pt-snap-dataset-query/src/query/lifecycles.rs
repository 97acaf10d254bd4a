//! `block`, `freed_block_lifetime` and `leak_detection` on a dataset: block observations of all
//! shards deduplicated to one row per lifecycle, with allocation/free proofs from the owner
//! shards — attached in memory for small sets, in a page-limited scratch database otherwise.

use super::attach::{attach_src, detach_src, proof, required_slices, Attached};
use super::*;

pub(super) fn attached_lifecycle_cte(src: &Sources, items: &[usize], owners: &[usize]) -> String {
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

pub(super) fn scratch_lifecycle_cte(terminal: usize) -> String {
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
pub(super) fn build_scratch(
    a: &mut Attached,
    items: &[usize],
) -> Result<Vec<(usize, i64)>, QueryError> {
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
pub(super) struct KeptScratch {
    needed: Vec<(usize, i64)>,
    page_count: i64,
    #[serde(default)]
    layout: u32,
}

/// Where the lifecycle rows of a query come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Derivation {
    /// The reference's scratch database (`lifecycle_state`), read through its CTE.
    Scratch,
    /// A kept indexed database ([`derived`]).
    Indexed,
}

pub(super) fn scratch_exhausted(max: i64) -> QueryError {
    QueryError::Failed(format!(
        "Dataset lifecycle scratch space exhausted (derived database page limit or disk full; \
         max_scratch_db_bytes={max}); no partial global result."
    ))
}

/// The derived lifecycle database of `items`: reused from the lifecycle cache when this
/// dataset (by fingerprint) was merged before, else built (and kept when a cache is set).
/// The derived rows depend only on the shards' bytes, never on the query's parameters.
pub(super) fn scratch_lifecycles<'s, 'a>(
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
            publish::rename(&staged, &db, publish::Existing::Replace)?;
            let body = serde_json::to_vec(&KeptScratch {
                needed,
                page_count,
                layout: derived::LIFECYCLE_LAYOUT,
            })?;
            publish::write_file(&meta, &body, 0o666)?;
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

pub(super) fn large_observation_set(
    src: &mut Sources,
    items: &[usize],
) -> Result<bool, QueryError> {
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
pub(super) const BLOCK_FILTERS: [&str; 6] = [
    "id",
    "address",
    "size",
    "requestedSize",
    "allocEventId",
    "freeEventId",
];

/// The kept summary figures, in the reference's summary row order.
pub(super) const SUMMARY_COLUMNS: &str =
    "lifecycles, allocation_events_resolved, free_events_resolved, \
     unproved_identities, missing_allocations, invariant_conflict, free_conflict";

pub(super) fn lifecycle_filter(template: &str, params: &Params) -> (String, Vec<Sql>) {
    match template {
        "leak_detection" => (
            format!("{} AND size>=?", derived::LEAK_PREDICATE),
            vec![i(int(params, "min_size").unwrap_or(0))],
        ),
        "freed_block_lifetime" => (derived::FREED_PREDICATE.into(), vec![]),
        _ => predicates(params, &BLOCK_FILTERS, ""),
    }
}

pub(super) fn lifecycles(
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
    let refs = src.events(lifetime_event_ids(&rows))?;
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testdata::{agree_at_shard_sizes, pair, project, run};

    /// A block seen in several shards is one lifecycle: freed lifetimes and survivors are
    /// the single database's.
    #[test]
    fn lifecycles_are_deduplicated_across_shards() {
        agree_at_shard_sizes(&[1, 4], "freed_block_lifetime", json!({}));
        let keys = ["id", "address", "size", "allocEventId"];
        let p = pair(2);
        for device in [0, 1] {
            let db = run(&p.database, "leak_detection", json!({}), device);
            let ds = run(&p.dataset, "leak_detection", json!({}), device);
            assert_eq!(project(&ds, &keys), project(&db, &keys), "device {device}");
        }
    }

    /// `leak_detection` is about the end of the trace: one shard cannot answer it.
    #[test]
    fn leak_detection_refuses_a_slice() {
        let mut p = pair(4);
        p.dataset.options.slice = Some(0);
        let err = pt_snap_query::Source::run(
            &p.dataset,
            &pt_snap_query::QueryRequest::new("leak_detection"),
        )
        .unwrap_err();
        assert_eq!(err.code(), "QUERY_FAILED");
        assert!(err.to_string().contains("terminal dataset scope"), "{err}");
    }
}
