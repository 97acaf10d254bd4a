//! Shards attached read-only to one connection (the reference's `_AttachedSources`), and the
//! owner shards whose events prove a block's allocation and free: what the lifecycle merges
//! and the point-event attribution read across shards with.

use super::*;

/// A read-only in-memory connection with shards attached as `s<index>` (the reference's
/// `_AttachedSources`), or a scratch database with them attached one at a time.
pub(super) struct Attached<'s, 'a> {
    pub(super) src: &'s mut Sources<'a>,
    pub(super) conn: Connection,
}

impl<'s, 'a> Attached<'s, 'a> {
    pub(super) fn open(
        src: &'s mut Sources<'a>,
        items: &[usize],
        path: Option<&std::path::Path>,
    ) -> Result<Self, QueryError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_URI;
        let mut conn = match path {
            Some(p) => Connection::open_with_flags(p, flags),
            None => Connection::open_with_flags(":memory:", flags),
        }
        .map_err(|e| QueryError::Failed(e.to_string()))?;
        install_interrupt(&mut conn, &src.budget);
        conn.execute_batch("PRAGMA trusted_schema=OFF")
            .map_err(sql_failed)?;
        for &item in items {
            let uri = member_uri(src, item);
            conn.execute(&format!("ATTACH DATABASE ? AS \"s{item}\""), [uri])
                .map_err(|e| QueryError::Failed(e.to_string()))?;
        }
        if path.is_none() {
            conn.execute_batch("PRAGMA query_only=ON")
                .map_err(sql_failed)?;
        }
        Ok(Self { src, conn })
    }

    pub(super) fn read(&mut self, sql: &str, params: &[Sql]) -> Result<Vec<Row>, QueryError> {
        self.src.query_count += 1;
        read_rows(&self.conn, &mut self.src.budget, sql, params)
    }

    pub(super) fn execute(&mut self, sql: &str, params: &[Sql]) -> Result<(), QueryError> {
        self.src.budget.check()?;
        self.src.query_count += 1;
        let max = self.src.budget.limits.max_scratch_db_bytes;
        self.conn
            .execute(sql, rusqlite::params_from_iter(params.iter()))
            .map(|_| ())
            .map_err(|e| match &e {
                rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DiskFull => {
                    QueryError::Failed(format!(
                        "Dataset lifecycle scratch space exhausted (derived database page limit or \
                         disk full; max_scratch_db_bytes={max}); no partial global result."
                    ))
                }
                _ => sql_failed(e),
            })?;
        self.src.budget.check()
    }
}

pub(super) fn member_uri(src: &Sources, item: usize) -> String {
    format!(
        "file:{}?mode=ro{}",
        src.ds.root.join(&src.device.slices[item].file).display(),
        if src.v2() { "" } else { "&immutable=1" }
    )
}

/// Every shard that must be attached to prove the allocation/free events referenced by the
/// blocks of `items` (`None`: more than the attach limit).
pub(super) fn required_slices(
    src: &mut Sources,
    items: &[usize],
    limit: usize,
) -> Result<Option<Vec<usize>>, QueryError> {
    let all = src.device.slices.len();
    let mut required: std::collections::BTreeSet<usize> = items.iter().copied().collect();
    if required.len() > limit {
        return Ok(None);
    }
    if required.len() == all {
        return Ok(Some(required.into_iter().collect()));
    }
    let block = src.block();
    for &item in items {
        let cap = limit - required.len() + 1;
        let rows = match owners_by_index(src, item, &required, cap)? {
            // The rows the reference's scan below returns (distinct owners, ascending): the
            // block table's event-id indexes answer which shards own any of its events
            // without reading every block (20 ms per 84k-block shard).
            Some(rows) => {
                src.charge(&rows)?;
                rows
            }
            None => {
                let mut queries = Vec::new();
                for field in ["allocEventId", "freeEventId"] {
                    let cases: Vec<String> = src
                        .device
                        .slices
                        .iter()
                        .filter(|o| !required.contains(&o.index))
                        .map(|o| {
                            format!(
                                "WHEN \"{field}\" BETWEEN {} AND {} THEN {}",
                                o.start_event_id, o.end_event_id, o.index
                            )
                        })
                        .collect();
                    queries.push(format!(
                        "SELECT CASE {} END AS owner_index FROM {block}",
                        cases.join(" ")
                    ));
                }
                src.read(
                    item,
                    &format!(
                        "SELECT owner_index FROM ({}) WHERE owner_index IS NOT NULL LIMIT ?",
                        queries.join(" UNION ")
                    ),
                    &[i(cap as i64)],
                )?
            }
        };
        required.extend(
            (rows.iter())
                .filter_map(|r| get_i(r, "owner_index"))
                .map(|o| o as usize),
        );
        // Either way up to `cap` new owners came: one more than the limit allows is the
        // refusal, before a later item's `cap` could be computed from it.
        if required.len() > limit {
            return Ok(None);
        }
        if required.len() == all {
            break;
        }
    }
    Ok(Some(required.into_iter().collect()))
}

/// `required_slices`' rows for shard `item` (`{"owner_index": o}` for every other shard `o`
/// that owns an allocation or free event of its blocks), probed through the event-id indexes;
/// `None` when more than `cap` owners exist — then which `cap` rows the reference's `LIMIT`
/// keeps is its scan's business, and the scan itself is run.
pub(super) fn owners_by_index(
    src: &mut Sources,
    item: usize,
    required: &std::collections::BTreeSet<usize>,
    cap: usize,
) -> Result<Option<Vec<Row>>, QueryError> {
    let block = src.block();
    let probes: Vec<String> = src
        .device
        .slices
        .iter()
        .filter(|o| !required.contains(&o.index))
        .map(|o| {
            let (lo, hi) = (o.start_event_id, o.end_event_id);
            format!(
                "SELECT {} AS owner_index WHERE EXISTS(SELECT 1 FROM {block} WHERE \
                 \"allocEventId\" BETWEEN {lo} AND {hi}) OR EXISTS(SELECT 1 FROM {block} WHERE \
                 \"freeEventId\" BETWEEN {lo} AND {hi})",
                o.index
            )
        })
        .collect();
    if probes.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let conn = src.conn(item)?;
    let mut stmt = conn
        .prepare(&format!(
            "{} ORDER BY owner_index",
            probes.join(" UNION ALL ")
        ))
        .map_err(sql_failed)?;
    let owners: Vec<i64> = stmt
        .query_map([], |r| r.get(0))
        .map_err(sql_failed)?
        .collect::<Result<_, _>>()
        .map_err(sql_failed)?;
    if owners.len() > cap {
        return Ok(None);
    }
    Ok(Some(
        owners
            .into_iter()
            .map(|o| {
                let mut r = Map::new();
                r.insert("owner_index".into(), json!(o));
                r
            })
            .collect(),
    ))
}

pub(super) fn proof(src: &Sources, owners: &[usize], field: &str, action: i64) -> String {
    let d = src.device.device_id;
    let cases: Vec<String> = owners
        .iter()
        .map(|&o| {
            let s = &src.device.slices[o];
            format!(
                "WHEN b.\"{field}\" BETWEEN {} AND {} THEN EXISTS(SELECT 1 FROM \
                 \"s{o}\".\"trace_entry_{d}\" e WHERE e.id=b.\"{field}\" AND e.id>=0 AND \
                 e.action={action})",
                s.start_event_id, s.end_event_id
            )
        })
        .collect();
    format!("CASE {} ELSE 0 END", cases.join(" "))
}

pub(super) fn attach_src(a: &mut Attached, item: usize) -> Result<(), QueryError> {
    let uri = member_uri(a.src, item);
    a.execute("ATTACH DATABASE ? AS src", &[Sql::Text(uri)])?;
    a.execute("PRAGMA src.cache_size=-2048", &[])?;
    // mmap_size reports its value as a row.
    a.src.query_count += 1;
    let _ = a.conn.query_row("PRAGMA src.mmap_size=0", [], |_| Ok(()));
    Ok(())
}

pub(super) fn detach_src(a: &mut Attached) -> Result<(), QueryError> {
    a.conn
        .execute_batch("DETACH DATABASE src")
        .map_err(sql_failed)
}
