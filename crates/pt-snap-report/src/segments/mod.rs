//! `report segments`: the allocator's state right after one event, as memory_viz's
//! "Allocator State History" draws it — every reserved segment with its blocks in address
//! order (allocated, pending free, free), and per pool and stream the free bytes, the
//! largest free block and how fragmented the free space is.
//!
//! The state is replayed forwards over the database's rows ([`Replay`]): the segments
//! from before the trace (its synthetic negative events) and the blocks live before it
//! (`allocEventId = -1`), then event by event the segment events ([`oom::apply_segment_event`],
//! which the OOM report uses too), the blocks each event allocates and frees (`block_<d>`,
//! the lifetimes the import's backward replay wrote) and the `free_requested` events that
//! leave a block pending until its free completes. So every state is the one the import's
//! replay held: the live blocks' sizes add up to the event's counters, and after the last
//! event the segments and blocks are the dump's own.
//!
//! A replay keeps checkpoints as it goes (at most [`CHECKPOINT_BUDGET`] bytes of states,
//! thinned as it grows), so a caller that keeps it (the browser's worker) replays to any
//! later question from the nearest one before it, not from the start. A database made by
//! pt-snap-cli 0.4.1 needs nothing of ours; our import's `pt_snap_x_pool_<d>` adds what the
//! file says of each segment's pool.
//!
//! Free space is what the OOM report computes ([`oom::free_space`]): each segment minus its
//! live blocks, each maximal free run one inactive block (the allocator merges free
//! neighbours). Fragmentation is Paddle's `Frag_mass` (PaddlePaddle/Paddle#76554,
//! `1 − max_free_size / free_size`): 0 when the free bytes are one block, near 1 when they
//! are many small ones. Paddle also weighs in `Frag_hole = free_blocks / total_blocks`; the
//! counts are given, so that score can be computed from them.

mod json;
mod page;
mod text;
mod timeline;

use std::collections::{BTreeMap, HashMap};

use pt_snap_model::PoolId;
use pt_snap_query::{Analyzer, BlocksBy, QueryError, StateBlock, StateEvent};
use serde::{Deserialize, Serialize};

use crate::check::stackless_label;
use crate::oom::{self, Pool, SegmentClass};

pub use json::describe_event;
pub use page::{page, page_data, SCRIPT, STYLE};
pub use timeline::segment_lifetimes;

/// What the fragmentation ratio is, in every output that gives it.
pub const FRAGMENTATION: &str = "1 - largest_free_block_bytes / free_bytes of the pool and \
    stream (PaddlePaddle/Paddle#76554's Frag_mass): 0 when the free bytes are one block, \
    toward 1 as they scatter; null when nothing is free";

/// How many bytes of checkpointed states a [`Replay`] keeps at most.
pub const CHECKPOINT_BUDGET: usize = 64 << 20;

/// Events read (and applied) at a time.
const STEP: i64 = 4096;

/// A block's state, as the snapshot spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockState {
    ActiveAllocated,
    ActivePendingFree,
    Inactive,
}

impl BlockState {
    pub fn name(self) -> &'static str {
        match self {
            BlockState::ActiveAllocated => "active_allocated",
            BlockState::ActivePendingFree => "active_pending_free",
            BlockState::Inactive => "inactive",
        }
    }
}

/// A live block of the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Live {
    block: i64,
    size: i64,
    requested: i64,
    pending: bool,
    alloc: i64,
    free: i64,
}

/// The allocator's state right after one event.
#[derive(Debug, Clone)]
pub struct State {
    /// The last event applied; `None` before the first real one.
    pub event: Option<i64>,
    /// `(allocated, active, reserved)` of that event's row.
    pub counters: (i64, i64, i64),
    segments: Vec<oom::Segment>,
    /// Live blocks by `(address, block id)`.
    blocks: BTreeMap<(i64, i64), Live>,
}

impl State {
    /// `(allocated, active, reserved)` from what the state holds: the sizes of its
    /// allocated blocks, of all its live blocks, and of its segments. The replay's own
    /// counters are [`State::counters`]; the two agree.
    pub fn sums(&self) -> (i64, i64, i64) {
        let (mut allocated, mut active) = (0i64, 0i64);
        for b in self.blocks.values() {
            active = active.saturating_add(b.size);
            if !b.pending {
                allocated = allocated.saturating_add(b.size);
            }
        }
        let reserved = (self.segments.iter()).fold(0i64, |sum, s| sum.saturating_add(s.size));
        (allocated, active, reserved)
    }

    /// Live blocks held.
    pub fn live_blocks(&self) -> usize {
        self.blocks.len()
    }

    fn approximate_bytes(&self) -> usize {
        64 * self.segments.len() + 96 * self.blocks.len() + 64
    }

    /// Applies event `e`, given the blocks it allocates and frees.
    fn apply(&mut self, e: &StateEvent, allocated: &[StateBlock], freed: &[StateBlock]) {
        for b in allocated {
            self.insert(b);
        }
        if e.action == Some(FREE_REQUESTED) {
            let mut at = self
                .blocks
                .range_mut((e.address, i64::MIN)..=(e.address, i64::MAX));
            if let Some((_, live)) = at.next_back() {
                live.pending = true;
            }
        }
        for b in freed {
            self.blocks.remove(&(b.address, b.id));
        }
        if let Some(action) = e.action.filter(|a| (0..=3).contains(a)) {
            let class = SegmentClass {
                large: e.large,
                pool_id: e.pool,
            };
            oom::apply_segment_event(
                &mut self.segments,
                action,
                e.address,
                e.size,
                e.stream,
                class,
            );
        }
        self.event = Some(e.id);
        self.counters = (e.allocated, e.active, e.reserved);
    }

    fn insert(&mut self, b: &StateBlock) {
        self.blocks.insert(
            (b.address, b.id),
            Live {
                block: b.id,
                size: b.size,
                requested: b.requested_size,
                pending: b.state == Some(0),
                alloc: b.alloc,
                free: b.free,
            },
        );
    }
}

const FREE_REQUESTED: i64 = 5;

/// One device's state replayed forwards over a database, with checkpoints.
#[derive(Debug, Clone)]
pub struct Replay {
    pub device: i64,
    /// The device's first and last real events.
    pub bounds: (i64, i64),
    /// The state before the first real event, then checkpoints in event order.
    checkpoints: Vec<State>,
    /// Checkpoints are kept at about this many events apart; doubled as they thin.
    interval: i64,
}

impl Replay {
    /// The state before `device`'s first real event: the segments and blocks from before
    /// the trace. `Err` (`DEVICE_NOT_FOUND`) for a device without real events.
    pub fn start(analyzer: &Analyzer, device: Option<i64>) -> Result<Replay, QueryError> {
        let device = analyzer.resolve_device(device)?;
        let bounds = analyzer
            .db()
            .device_bounds(device)
            .map_err(|e| QueryError::ReadFailed(e.to_string()))?
            .ok_or_else(|| {
                QueryError::DeviceNotFound(format!("Device {device} has no trace events."))
            })?;
        let mut state = State {
            event: None,
            counters: (0, 0, 0),
            segments: Vec::new(),
            blocks: BTreeMap::new(),
        };
        for e in analyzer.state_events(device, i64::MIN, bounds.0 - 1)? {
            if let Some(action) = e.action.filter(|a| (0..=3).contains(a)) {
                // Each synthetic event is one segment the replay held before the trace.
                state.segments.push(oom::Segment {
                    address: e.address,
                    size: e.size,
                    stream: e.stream,
                    expandable: action == 0,
                    class: SegmentClass {
                        large: e.large,
                        pool_id: e.pool,
                    },
                });
            }
            state.counters = (e.allocated, e.active, e.reserved);
        }
        for b in analyzer.state_blocks(device, BlocksBy::BeforeTrace, 0, 0)? {
            state.insert(&b);
        }
        let span = (bounds.1 - bounds.0).max(1);
        Ok(Replay {
            device,
            bounds,
            checkpoints: vec![state],
            interval: (span / 64).max(STEP),
        })
    }

    /// The state right after event `event`, replayed from the nearest checkpoint before
    /// it; with `keep`, checkpoints are added along the way. `INVALID_PARAMETER` outside
    /// the device's real events.
    pub fn state_at(
        &mut self,
        analyzer: &Analyzer,
        event: i64,
        keep: bool,
    ) -> Result<State, QueryError> {
        let (first, last) = self.bounds;
        if event < first || event > last {
            return Err(QueryError::InvalidParameter(format!(
                "event_id {event} is outside device {}'s events {first}..{last}.",
                self.device
            )));
        }
        let from = self
            .checkpoints
            .iter()
            .rposition(|c| c.event.is_none_or(|e| e <= event))
            .expect("the first checkpoint is before every event");
        let mut state = self.checkpoints[from].clone();
        self.advance(analyzer, &mut state, event, keep, &mut |_| {})?;
        Ok(state)
    }

    /// Replays every event from the state before the trace to the last one, keeping
    /// checkpoints, and hands each state to `f` right after its event.
    pub fn for_each_state(
        &mut self,
        analyzer: &Analyzer,
        f: &mut dyn FnMut(&State),
    ) -> Result<(), QueryError> {
        let mut state = self.checkpoints[0].clone();
        let last = self.bounds.1;
        self.advance(analyzer, &mut state, last, true, f)
    }

    /// Applies the events after `state`'s up to `event`, `STEP` ids at a time.
    fn advance(
        &mut self,
        analyzer: &Analyzer,
        state: &mut State,
        event: i64,
        keep: bool,
        f: &mut dyn FnMut(&State),
    ) -> Result<(), QueryError> {
        let mut at = state.event.unwrap_or(self.bounds.0 - 1);
        while at < event {
            let upto = (at.saturating_add(STEP)).min(event);
            let events = analyzer.state_events(self.device, at, upto)?;
            let allocated = by_event(
                analyzer.state_blocks(self.device, BlocksBy::Allocated, at, upto)?,
                |b| b.alloc,
            );
            let freed = by_event(
                analyzer.state_blocks(self.device, BlocksBy::Freed, at, upto)?,
                |b| b.free,
            );
            let none = Vec::new();
            for e in &events {
                let a = allocated.get(&e.id).unwrap_or(&none);
                let fr = freed.get(&e.id).unwrap_or(&none);
                state.apply(e, a, fr);
                f(state);
                if keep && e.id >= self.next_checkpoint() && e.id < event {
                    self.checkpoint(state);
                }
            }
            at = upto;
        }
        Ok(())
    }

    fn next_checkpoint(&self) -> i64 {
        let last = self.checkpoints.last().and_then(|c| c.event);
        last.map_or(self.bounds.0, |l| l.saturating_add(self.interval))
    }

    /// Keeps `state` (the latest so far), thinning older checkpoints to every other one
    /// while they exceed the budget.
    fn checkpoint(&mut self, state: &State) {
        if self.checkpoints.last().and_then(|c| c.event) >= state.event {
            return;
        }
        self.checkpoints.push(state.clone());
        while self.bytes() > CHECKPOINT_BUDGET && self.checkpoints.len() > 2 {
            let mut i = 0;
            // The state before the trace stays; every other later one goes.
            self.checkpoints.retain(|_| {
                i += 1;
                i == 1 || i % 2 == 0
            });
            self.interval = self.interval.saturating_mul(2);
        }
    }

    fn bytes(&self) -> usize {
        self.checkpoints.iter().map(State::approximate_bytes).sum()
    }

    /// How many checkpoints are kept (the state before the trace included).
    pub fn checkpoints(&self) -> usize {
        self.checkpoints.len()
    }
}

fn by_event(
    blocks: Vec<StateBlock>,
    key: impl Fn(&StateBlock) -> i64,
) -> HashMap<i64, Vec<StateBlock>> {
    let mut out: HashMap<i64, Vec<StateBlock>> = HashMap::new();
    for b in blocks {
        out.entry(key(&b)).or_default().push(b);
    }
    out
}

/// One block of the map: live (with its allocation) or a free run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapBlock {
    pub address: i64,
    pub size: i64,
    /// What was asked for; `None` for a free block (the allocator keeps a stale value).
    pub requested_size: Option<i64>,
    pub state: BlockState,
    /// The allocating event; `None` for a block from before the trace and a free block.
    pub alloc_event_id: Option<i64>,
    /// Where it was allocated ([`crate::stack::label`], as `check` and `diff --by site`
    /// name it); `[static]`, `[preexisting live]` or `[missing callstack]` for memory
    /// without a stack; `None` for a free block.
    pub site: Option<String>,
}

/// One reserved segment and its blocks in address order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapSegment {
    pub address: i64,
    pub total_size: i64,
    pub stream: i64,
    pub pool: Pool,
    /// Whether the file says which pool (the dump's `segment_type`), or it is inferred from
    /// the allocator's sizes.
    pub pool_recorded: bool,
    /// `segment_pool_id` (or the reserving entry's `pool_id`) where the file records it.
    pub segment_pool_id: Option<PoolId>,
    pub is_expandable: bool,
    pub blocks: Vec<MapBlock>,
}

/// Free space of one (pool, stream).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolFree {
    pub pool: Pool,
    pub stream: i64,
    pub segments: i64,
    pub reserved_bytes: i64,
    pub free_bytes: i64,
    pub free_blocks: i64,
    /// Every block of its segments, live and free.
    pub blocks: i64,
    pub largest_free_block_bytes: i64,
    /// [`FRAGMENTATION`]; `None` when nothing is free.
    pub fragmentation: Option<f64>,
}

/// The trace event the map is right after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapEvent {
    pub id: i64,
    pub action: String,
    pub address: i64,
    pub size: i64,
    pub stream: i64,
}

/// The allocator's state right after one event, ready to print or draw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentMap {
    pub device: i64,
    /// The device's first and last real events.
    pub events: (i64, i64),
    pub event: MapEvent,
    pub allocated: i64,
    pub active: i64,
    pub reserved: i64,
    /// In address order.
    pub segments: Vec<MapSegment>,
    /// By pool, then stream.
    pub pools: Vec<PoolFree>,
    /// Live blocks no segment holds (a lenient replay's set-aside blocks); empty otherwise.
    pub outside_segments: Vec<MapBlock>,
}

/// The map of `device` (the lowest when `None`) right after `event`, replayed from the
/// start.
pub fn segment_map(
    analyzer: &Analyzer,
    device: Option<i64>,
    event: i64,
) -> Result<SegmentMap, QueryError> {
    let mut replay = Replay::start(analyzer, device)?;
    let state = replay.state_at(analyzer, event, false)?;
    map_of(analyzer, &replay, &state)
}

/// The map of a replayed state, with its blocks' sites.
pub fn map_of(
    analyzer: &Analyzer,
    replay: &Replay,
    state: &State,
) -> Result<SegmentMap, QueryError> {
    let device = replay.device;
    let id = state.event.unwrap_or(replay.bounds.0);
    let row = analyzer
        .state_events(device, id - 1, id)?
        .into_iter()
        .next()
        .ok_or_else(|| {
            QueryError::InvalidParameter(format!("event_id {id} is not in the trace."))
        })?;
    let action = match (&row.action, &row.action_text) {
        (Some(code), _) => pt_snap_db::schema::ACTIONS
            .iter()
            .find(|(c, _)| c == code)
            .map_or_else(|| code.to_string(), |(_, n)| (*n).to_owned()),
        (None, Some(text)) => text.clone(),
        (None, None) => String::new(),
    };
    let mut alloc_ids: Vec<i64> = state
        .blocks
        .values()
        .map(|b| b.alloc)
        .filter(|a| *a >= 0)
        .collect();
    alloc_ids.sort_unstable();
    alloc_ids.dedup();
    let (keys, texts) = analyzer.event_stacks(device, &alloc_ids)?;
    let labels: HashMap<i64, String> = texts
        .iter()
        .map(|(k, t)| {
            let label = crate::stack::label_text(t)
                .unwrap_or_else(|| stackless_label("missing").to_owned());
            (*k, label)
        })
        .collect();
    let site = |b: &Live| -> String {
        if b.alloc < 0 {
            return stackless_label(if b.free < 0 {
                "static"
            } else {
                "preexisting_live_at_event"
            })
            .to_owned();
        }
        keys.get(&b.alloc)
            .and_then(|k| labels.get(k))
            .cloned()
            .unwrap_or_else(|| stackless_label("missing").to_owned())
    };
    let live_block = |(&(address, _), b): (&(i64, i64), &Live)| MapBlock {
        address,
        size: b.size,
        requested_size: Some(b.requested),
        state: if b.pending {
            BlockState::ActivePendingFree
        } else {
            BlockState::ActiveAllocated
        },
        alloc_event_id: (b.alloc >= 0).then_some(b.alloc),
        site: Some(site(b)),
    };
    let live: Vec<(i64, i64)> = state
        .blocks
        .iter()
        .map(|(&(a, _), b)| (a, b.size))
        .collect();
    let spaces = oom::free_space(&state.segments, &live);
    let mut segments = Vec::with_capacity(spaces.len());
    let mut placed = 0usize;
    let mut pools: BTreeMap<(Pool, i64), PoolFree> = BTreeMap::new();
    for space in &spaces {
        let s = &space.segment;
        let end = s.address.saturating_add(s.size);
        let mut blocks: Vec<MapBlock> = state
            .blocks
            .range((s.address, i64::MIN)..(end, i64::MIN))
            .map(live_block)
            .collect();
        placed += blocks.len();
        blocks.extend(space.free_runs.iter().map(|&(address, size)| MapBlock {
            address,
            size,
            requested_size: None,
            state: BlockState::Inactive,
            alloc_event_id: None,
            site: None,
        }));
        blocks.sort_by_key(|b| b.address);
        let p = pools
            .entry((space.pool, s.stream))
            .or_insert_with(|| PoolFree {
                pool: space.pool,
                stream: s.stream,
                segments: 0,
                reserved_bytes: 0,
                free_bytes: 0,
                free_blocks: 0,
                blocks: 0,
                largest_free_block_bytes: 0,
                fragmentation: None,
            });
        p.segments += 1;
        p.reserved_bytes = p.reserved_bytes.saturating_add(s.size);
        p.blocks += blocks.len() as i64;
        for size in space.free_blocks() {
            p.free_bytes = p.free_bytes.saturating_add(size);
            p.free_blocks += 1;
            p.largest_free_block_bytes = p.largest_free_block_bytes.max(size);
        }
        segments.push(MapSegment {
            address: s.address,
            total_size: s.size,
            stream: s.stream,
            pool: space.pool,
            pool_recorded: s.class.large.is_some(),
            segment_pool_id: s.class.pool_id,
            is_expandable: s.expandable,
            blocks,
        });
    }
    for p in pools.values_mut() {
        p.fragmentation = (p.free_bytes > 0)
            .then(|| 1.0 - p.largest_free_block_bytes as f64 / p.free_bytes as f64);
    }
    let outside_segments = if placed == state.blocks.len() {
        Vec::new()
    } else {
        let inside = |a: i64| {
            spaces.iter().any(|s| {
                s.segment.address <= a && a < s.segment.address.saturating_add(s.segment.size)
            })
        };
        state
            .blocks
            .iter()
            .filter(|(&(a, _), _)| !inside(a))
            .map(live_block)
            .collect()
    };
    Ok(SegmentMap {
        device,
        events: replay.bounds,
        event: MapEvent {
            id,
            action,
            address: row.address,
            size: row.size,
            stream: row.stream,
        },
        allocated: state.counters.0,
        active: state.counters.1,
        reserved: state.counters.2,
        segments,
        pools: pools.into_values().collect(),
        outside_segments,
    })
}
