//! The rows a replay of the allocator's state reads (`pt_snap_report::segments`): a range of
//! a device's events with what our import kept of their pools, and the blocks allocated or
//! freed in it, each read by key or index. Not templates: typed rows the caller folds into
//! a state and keeps (like [`Analyzer::lifetimes`]).

use std::collections::HashMap;

use crate::{Analyzer, CallstackLayout, QueryError};

/// One event as the replay applies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateEvent {
    pub id: i64,
    /// The dictionary code of its action (`pt_snap_db::schema::ACTIONS`); `None` for an
    /// action stored as text (`free`, `snapshot`, …) or NULL.
    pub action: Option<i64>,
    /// The action's text where it is stored as text (`free` is the legacy one-step free).
    pub action_text: Option<String>,
    pub address: i64,
    pub size: i64,
    pub stream: i64,
    pub allocated: i64,
    pub active: i64,
    pub reserved: i64,
    /// `segment_type` of `pt_snap_x_pool_<d>`: the dump's pool class of the segment a
    /// segment-reserving event reserved (`Some(true)`: large).
    pub large: Option<bool>,
    /// `pool_owner`/`pool_id` of `pt_snap_x_pool_<d>`.
    pub pool: Option<(i64, i64)>,
}

/// One block lifetime (`block_<d>`), as the replay applies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateBlock {
    pub id: i64,
    pub address: i64,
    pub size: i64,
    pub requested_size: i64,
    /// `block_<d>.state` (-1 inactive, 0 pending free, 1 allocated); `None` where NULL.
    pub state: Option<i64>,
    /// The allocating event; -1 for a block live before the trace began.
    pub alloc: i64,
    /// The event its free completed; -1 for a block never freed in the trace.
    pub free: i64,
}

/// Which blocks of a range to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlocksBy {
    /// Allocated by an event of the range.
    Allocated,
    /// Freed by an event of the range.
    Freed,
    /// Live before the trace (allocated at -1).
    BeforeTrace,
}

/// Each event's stack key, and each key's text once ([`Analyzer::event_stacks`]).
pub type EventStacks = (HashMap<i64, i64>, HashMap<i64, String>);

impl Analyzer {
    /// The events of `device` with ids in `(after, upto]`, ascending.
    pub fn state_events(
        &self,
        device: i64,
        after: i64,
        upto: i64,
    ) -> Result<Vec<StateEvent>, QueryError> {
        let device = self.resolve_device(Some(device))?;
        let failed = |e| self.execution_error(e);
        let pools = self.db().has_pool_table(device).map_err(failed)?;
        let sql = if pools {
            format!(
                "SELECT t.id, t.action, t.address, t.size, t.stream, t.allocated, t.active, \
                 t.reserved, p.segment_type, p.pool_owner, p.pool_id FROM trace_entry_{device} t \
                 LEFT JOIN pt_snap_x_pool_{device} p ON p.event_id = t.id \
                 WHERE t.id > ?1 AND t.id <= ?2 ORDER BY t.id"
            )
        } else {
            format!(
                "SELECT id, action, address, size, stream, allocated, active, reserved, \
                 NULL, NULL, NULL FROM trace_entry_{device} \
                 WHERE id > ?1 AND id <= ?2 ORDER BY id"
            )
        };
        let mut stmt = self.db().conn().prepare(&sql).map_err(failed)?;
        let rows = stmt
            .query_map([after, upto], |r| {
                let int =
                    |i: usize| -> rusqlite::Result<i64> { Ok(r.get_ref(i)?.as_i64().unwrap_or(0)) };
                let action = r.get_ref(1)?;
                let owner = r.get_ref(9)?.as_i64().ok();
                let pool_id = r.get_ref(10)?.as_i64().ok();
                Ok(StateEvent {
                    id: r.get(0)?,
                    action: action.as_i64().ok(),
                    action_text: action.as_str().ok().map(str::to_owned),
                    address: int(2)?,
                    size: int(3)?,
                    stream: int(4)?,
                    allocated: int(5)?,
                    active: int(6)?,
                    reserved: int(7)?,
                    large: match r.get_ref(8)?.as_str() {
                        Ok("large") => Some(true),
                        Ok("small") => Some(false),
                        _ => None,
                    },
                    pool: owner.zip(pool_id),
                })
            })
            .map_err(failed)?;
        rows.collect::<Result<_, _>>().map_err(failed)
    }

    /// Every segment event of `device` (`segment_map`, `segment_unmap`, `segment_alloc`,
    /// `segment_free`, the synthetic ones from before the trace included), by id: what the
    /// segment timeline is drawn from. One pass over the trace (no index holds the action).
    pub fn segment_events(&self, device: i64) -> Result<Vec<StateEvent>, QueryError> {
        let device = self.resolve_device(Some(device))?;
        let failed = |e| self.execution_error(e);
        let mut stmt = self
            .db()
            .conn()
            .prepare(&format!(
                "SELECT id, action, address, size, stream FROM trace_entry_{device} \
                 WHERE +action IN (0, 1, 2, 3) ORDER BY id"
            ))
            .map_err(failed)?;
        let rows = stmt
            .query_map([], |r| {
                let int =
                    |i: usize| -> rusqlite::Result<i64> { Ok(r.get_ref(i)?.as_i64().unwrap_or(0)) };
                Ok(StateEvent {
                    id: r.get(0)?,
                    action: r.get_ref(1)?.as_i64().ok(),
                    action_text: None,
                    address: int(2)?,
                    size: int(3)?,
                    stream: int(4)?,
                    allocated: 0,
                    active: 0,
                    reserved: 0,
                    large: None,
                    pool: None,
                })
            })
            .map_err(failed)?;
        rows.collect::<Result<_, _>>().map_err(failed)
    }

    /// The blocks of `device` allocated in, freed in (ids in `(after, upto]`), or live
    /// before the trace, by id.
    pub fn state_blocks(
        &self,
        device: i64,
        by: BlocksBy,
        after: i64,
        upto: i64,
    ) -> Result<Vec<StateBlock>, QueryError> {
        let device = self.resolve_device(Some(device))?;
        let failed = |e| self.execution_error(e);
        let (filter, range) = match by {
            BlocksBy::Allocated => ("allocEventId > ?1 AND allocEventId <= ?2", true),
            BlocksBy::Freed => ("freeEventId > ?1 AND freeEventId <= ?2", true),
            BlocksBy::BeforeTrace => ("allocEventId = -1", false),
        };
        let sql = format!(
            "SELECT id, address, size, requestedSize, state, allocEventId, freeEventId \
             FROM block_{device} WHERE {filter} ORDER BY id"
        );
        let mut stmt = self.db().conn().prepare(&sql).map_err(failed)?;
        let params: &[i64] = if range { &[after, upto] } else { &[] };
        let rows = stmt
            .query_map(rusqlite::params_from_iter(params), |r| {
                let int = |i: usize, default: i64| -> rusqlite::Result<i64> {
                    Ok(r.get_ref(i)?.as_i64().unwrap_or(default))
                };
                Ok(StateBlock {
                    id: r.get(0)?,
                    address: int(1, 0)?,
                    size: int(2, 0)?,
                    requested_size: int(3, 0)?,
                    state: r.get_ref(4)?.as_i64().ok(),
                    alloc: int(5, -1)?,
                    free: int(6, -1)?,
                })
            })
            .map_err(failed)?;
        rows.collect::<Result<_, _>>().map_err(failed)
    }

    /// The callstack texts of the events `ids` of `device`: each event's key, and each
    /// key's text once (`callstack.id` on layout v2; on v1, whose trace holds the text
    /// inline, keys number the distinct texts). Events without a stack have no key.
    pub fn event_stacks(&self, device: i64, ids: &[i64]) -> Result<EventStacks, QueryError> {
        let device = self.resolve_device(Some(device))?;
        let failed = |e| self.execution_error(e);
        let v2 = matches!(self.layout(), Ok(CallstackLayout::V2));
        let column = if v2 { "callstackId" } else { "callstack" };
        let mut keys = HashMap::new();
        let mut texts: HashMap<i64, String> = HashMap::new();
        let mut interned: HashMap<String, i64> = HashMap::new();
        for chunk in ids.chunks(500) {
            let marks = vec!["?"; chunk.len()].join(", ");
            let sql =
                format!("SELECT id, {column} FROM trace_entry_{device} WHERE id IN ({marks})");
            let mut stmt = self.db().conn().prepare(&sql).map_err(failed)?;
            let mut rows = stmt
                .query(rusqlite::params_from_iter(chunk))
                .map_err(failed)?;
            while let Some(r) = rows.next().map_err(failed)? {
                let id: i64 = r.get(0).map_err(failed)?;
                let value = r.get_ref(1).map_err(failed)?;
                if v2 {
                    if let Ok(stack) = value.as_i64() {
                        keys.insert(id, stack);
                    }
                } else if let Ok(text) = value.as_str() {
                    let next = interned.len() as i64;
                    let key = *interned.entry(text.to_owned()).or_insert(next);
                    keys.insert(id, key);
                }
            }
        }
        if v2 {
            let mut distinct: Vec<i64> = keys.values().copied().collect();
            distinct.sort_unstable();
            distinct.dedup();
            texts.extend(self.callstack_texts(&distinct)?);
        } else {
            texts.extend(interned.into_iter().map(|(t, k)| (k, t)));
        }
        Ok((keys, texts))
    }
}
