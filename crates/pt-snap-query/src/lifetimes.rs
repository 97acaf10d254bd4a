//! Every block's lifetime on one device, in one scan: what the allocation timeline stacks.
//! Not a template: its answer is the whole `block_<d>` table in typed form, which a caller
//! keeps and slices by window itself (each window would otherwise scan the table again).

use serde::{Deserialize, Serialize};

use crate::{Analyzer, CallstackLayout, QueryError};

/// One block from allocation to free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lifetime {
    pub block: i64,
    pub address: i64,
    pub size: i64,
    /// The allocating event; -1 for a block live before the trace began.
    pub alloc: i64,
    /// The event its free completed (`free_completed`, so until then it counts as active);
    /// -1 for a block never freed in the trace.
    pub free: i64,
    /// The allocating event's callstack (`callstack.id`); `None` without one, for a block
    /// from before the trace (its -1 is no event, though the trace's ids go below 0) and
    /// for a database of the inline-text layout.
    pub callstack: Option<i64>,
    /// `block_<d>.state` (`pt_snap_db::schema::BLOCK_STATES`: -1 inactive, 1 active and
    /// allocated, 0 active with its free pending); `None` where the file leaves it NULL.
    pub state: Option<i64>,
}

impl Lifetime {
    /// Live after event `e`: allocated at or before it, freed after it.
    pub fn live_at(&self, e: i64) -> bool {
        self.allocated_by(e) && (self.free == -1 || self.free > e)
    }

    /// Live after some event of `lo..=hi`.
    pub fn overlaps(&self, lo: i64, hi: i64) -> bool {
        self.allocated_by(hi) && (self.free == -1 || self.free > lo)
    }

    /// Allocated by the end of event `e`: -1 is before every event, the trace's negative
    /// ids included.
    fn allocated_by(&self, e: i64) -> bool {
        self.alloc == -1 || self.alloc <= e
    }
}

impl Analyzer {
    /// The device (the lowest when `None`) and its blocks, in id order.
    pub fn lifetimes(&self, device: Option<i64>) -> Result<(i64, Vec<Lifetime>), QueryError> {
        let device = self.resolve_device(device)?;
        let failed = |e| self.execution_error(e);
        let callstack = match self.layout() {
            Ok(CallstackLayout::V2) => "t.callstackId",
            _ => "NULL",
        };
        let mut stmt = self
            .db()
            .conn()
            .prepare(&format!(
                "SELECT b.id, b.address, b.size, b.allocEventId, b.freeEventId, {callstack}, b.state \
                 FROM block_{device} b LEFT JOIN trace_entry_{device} t \
                 ON t.id = b.allocEventId AND b.allocEventId != -1 \
                 ORDER BY b.id"
            ))
            .map_err(failed)?;
        // Sized first: grown by doubling, the vector held 1.5× its rows at its last growth
        // (at 333k blocks, 57 MiB of the worker's memory where 24 are kept). A row per
        // block: the join is on the trace's primary key.
        let count: i64 = (self.db().conn())
            .query_row(&format!("SELECT count(*) FROM block_{device}"), [], |r| {
                r.get(0)
            })
            .map_err(failed)?;
        let mut blocks = Vec::new();
        // Where it cannot be had at once, growth fails or not as it did before.
        let _ = blocks.try_reserve_exact(usize::try_from(count).unwrap_or(0));
        let rows = stmt
            .query_map([], |r| {
                Ok(Lifetime {
                    block: r.get(0)?,
                    address: r.get::<_, Option<i64>>(1)?.unwrap_or(0),
                    size: r.get::<_, Option<i64>>(2)?.unwrap_or(0),
                    alloc: r.get::<_, Option<i64>>(3)?.unwrap_or(-1),
                    free: r.get::<_, Option<i64>>(4)?.unwrap_or(-1),
                    callstack: r.get(5)?,
                    state: r.get(6)?,
                })
            })
            .map_err(failed)?;
        for row in rows {
            blocks.push(row.map_err(failed)?);
        }
        Ok((device, blocks))
    }

    /// The texts of the callstacks `ids` (those the database has), for labels.
    pub fn callstack_texts(&self, ids: &[i64]) -> Result<Vec<(i64, String)>, QueryError> {
        if !matches!(self.layout(), Ok(CallstackLayout::V2)) || ids.is_empty() {
            return Ok(Vec::new());
        }
        let failed = |e| self.execution_error(e);
        let mut stmt = self
            .db()
            .conn()
            .prepare("SELECT callstack FROM callstack WHERE id = ?1")
            .map_err(failed)?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let text: Option<Option<String>> = stmt
                .query_row([id], |r| r.get(0))
                .map(Some)
                .or_else(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    e => Err(e),
                })
                .map_err(failed)?;
            if let Some(Some(text)) = text {
                out.push((id, text));
            }
        }
        Ok(out)
    }
}
