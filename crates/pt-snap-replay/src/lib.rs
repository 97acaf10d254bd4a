//! Backward replay of the caching allocator, from the dump-time state to the first event.
//!
//! A snapshot holds the allocator state *at dump time* and the history that led there. Walking
//! the history backwards and undoing each event reconstructs every earlier state, which gives,
//! per event, the device totals right after it happened (`allocated`, `active`, `reserved`)
//! and, per block lifetime, the events that allocated and freed it. This is the replay of
//! pt-snap-cli 0.4.1 (its spec §4), rule for rule, so both tools write the same SnapshotDB rows;
//! the places where we deliberately differ are listed in `docs/compatibility.md`.
//!
//! The replay writes nothing itself: it hands [`TraceRow`]s and [`BlockRow`]s to a
//! [`RowSink`], in the order the reference writes them (events last to first, then the
//! pre-trace blocks and synthetic segment events).

#![forbid(unsafe_code)]

mod lenient;
mod state;
mod stepwise;

pub use lenient::{Issue, IssueKind, Mode};
use pt_snap_model::{Action, BlockState, PoolId, Snapshot, StackId, TraceEvent};
use state::{DeviceState, LiveBlock, SegState};
pub use stepwise::{BlockChange, BlockView, Replayer, SegmentView, Step};

/// One row of `trace_entry_<device>`: an event and the device totals right after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceRow {
    /// The event id (position in the trace, or the explicit `id` key); negative for the
    /// synthetic events that stand for segments reserved before the trace begins.
    pub id: i64,
    pub action: Action,
    pub addr: i64,
    pub size: i64,
    pub stream: i64,
    pub allocated: i64,
    pub active: i64,
    pub reserved: i64,
    pub stack: StackId,
    /// The event's position in the device trace; `None` for synthetic events.
    pub position: Option<usize>,
    /// For an event that reserved a segment (`segment_alloc`, `segment_map`, and the
    /// synthetic events of segments from before the trace): what the file says of that
    /// segment's pool. `None` for every other event.
    pub segment: Option<SegmentClass>,
}

/// What a file says of a segment's pool, where it says it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SegmentClass {
    /// The dump's `segment_type`: the large pool (`true`) or the small one; `None` where
    /// the dump does not describe the segment (one freed before the dump).
    pub large: Option<bool>,
    /// The dump's `segment_pool_id`, or the `pool_id` of the trace entry that re-created
    /// it (pytorch#177717); `(0, 0)` is the default pool.
    pub pool_id: Option<PoolId>,
}

/// One row of `block_<device>`: a block lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRow {
    /// The allocating event's id, or a negative id for blocks live before the trace.
    pub id: i64,
    pub address: i64,
    pub size: i64,
    pub requested_size: i64,
    /// The block's state when the row was written (see [`BlockState::code`]).
    pub state: BlockState,
    /// `-1` for blocks allocated before the trace.
    pub alloc_event_id: i64,
    /// The `free_completed` (or legacy `free`) event that ended it, else `-1`.
    pub free_event_id: i64,
}

/// Receives the rows of one device's replay.
pub trait RowSink {
    type Error;
    fn trace_row(&mut self, row: &TraceRow) -> Result<(), Self::Error>;
    fn block_row(&mut self, row: &BlockRow) -> Result<(), Self::Error>;
    /// `n` block rows are coming from now on (at most; a later call may say it again). A
    /// sink that holds them makes room once: grown row by row, a vector holds up to three
    /// times its rows while it doubles, and at a million events that was the browser
    /// import's peak.
    fn expect_blocks(&mut self, _n: usize) {}
}

/// A sink that keeps no row: for replays run only to check a trace or to collect its issues.
pub struct DiscardRows;

impl RowSink for DiscardRows {
    type Error = std::convert::Infallible;
    fn trace_row(&mut self, _: &TraceRow) -> Result<(), Self::Error> {
        Ok(())
    }
    fn block_row(&mut self, _: &BlockRow) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// An event the replay could not undo: the state before it cannot be what the trace says.
#[derive(Debug, thiserror::Error)]
#[error("replay of device {device} failed at event {event_id} ({action} addr={addr} size={size} stream={stream}): {reason}")]
pub struct Inconsistency {
    pub device: usize,
    pub event_id: i64,
    pub action: String,
    pub addr: i64,
    pub size: i64,
    pub stream: i64,
    pub reason: String,
}

/// Why a device could not be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError<E> {
    #[error(transparent)]
    Inconsistent(Inconsistency),
    /// The dump-time segments themselves cannot be a state (their totals overflow 64 bits).
    #[error("replay of device {device} failed at the dump-time state: {reason}")]
    DumpState { device: usize, reason: String },
    #[error(transparent)]
    Sink(E),
}

impl ReplayError<std::convert::Infallible> {
    /// The same failure, for a caller whose sink can fail.
    fn widen<E>(self) -> ReplayError<E> {
        match self {
            ReplayError::Inconsistent(at) => ReplayError::Inconsistent(at),
            ReplayError::DumpState { device, reason } => ReplayError::DumpState { device, reason },
            ReplayError::Sink(never) => match never {},
        }
    }
}

/// What a device's replay tolerated.
#[derive(Debug, Default)]
pub struct Replayed {
    /// Inconsistencies the strict replay tolerates too (the reference logs them as warnings).
    pub warnings: Vec<String>,
    /// Events a lenient replay could not reconcile (always empty when strict).
    pub issues: Vec<Issue>,
}

/// Replays the events of `device` backwards and hands every row to `sink`.
///
/// `progress` is called with the number of events undone so far, every few thousand events.
/// Negative ids (pre-trace blocks, synthetic segment events) start at -1 for every device.
///
/// This is [`Replayer`] run to the end: sharded imports step the same replay, so both paths
/// accept and refuse the same files.
pub fn replay_device<S: RowSink>(
    snapshot: &Snapshot,
    device: usize,
    mode: Mode,
    sink: &mut S,
    progress: &mut dyn FnMut(usize),
) -> Result<Replayed, ReplayError<S::Error>> {
    let mut replayer = Replayer::with_mode(snapshot, device, mode).map_err(ReplayError::widen)?;
    // The block rows to come, where a first pass has counted them.
    let mut counted = None;
    if mode == Mode::Lenient {
        // A first pass finds the allocs whose block nothing holds: blocks the dump lacks,
        // which the second pass counts from the dump on. It also counts the block rows.
        let mut probe = Replayer::with_mode(snapshot, device, mode).map_err(ReplayError::widen)?;
        let mut detached = 0;
        while let Some(step) = probe.undo_last() {
            if let BlockChange::Detached(_) = step.map_err(ReplayError::widen)?.change {
                detached += 1;
            }
        }
        let missing = probe.missing();
        counted =
            Some(detached + missing.len() + probe.set_aside_blocks().len() + probe.held_blocks());
        replayer
            .seed(missing)
            .map_err(|reason| ReplayError::DumpState { device, reason })?;
    }
    // Strict: every block the dump holds and every block a free brings back ends as a row
    // (undoing an alloc moves its block from the state to the rows).
    let announced = counted.unwrap_or_else(|| {
        let trace = snapshot
            .device_traces
            .get(device)
            .map_or(&[][..], Vec::as_slice);
        let returning = (trace.iter())
            .filter(|e| matches!(e.action, Action::FreeCompleted | Action::Free))
            .count();
        replayer.held_blocks() + returning
    });
    sink.expect_blocks(announced);
    let total = replayer.remaining();
    while let Some(step) = replayer.undo_last() {
        let step = step.map_err(ReplayError::widen)?;
        sink.trace_row(&step.row).map_err(ReplayError::Sink)?;
        if let BlockChange::Detached(block) = step.change {
            sink.block_row(&BlockRow {
                id: step.row.id,
                address: block.address,
                size: block.size,
                requested_size: block.requested_size,
                state: block.state,
                alloc_event_id: step.row.id,
                free_event_id: block.free_event_id,
            })
            .map_err(ReplayError::Sink)?;
        }
        let done = total - replayer.remaining();
        if done.is_multiple_of(8192) {
            progress(done);
        }
    }
    progress(total);

    // What is left is the state before the first event: blocks and segments that predate the
    // trace. Each gets a negative id; each segment a synthetic reserving event.
    let (allocated, active, reserved) = replayer.totals();
    let mut next_block_id = -1;
    let mut next_event_id = -1;
    let mut pre_trace = |sink: &mut S, block: BlockView| {
        let row = BlockRow {
            id: next_block_id,
            address: block.address,
            size: block.size,
            requested_size: block.requested_size,
            state: block.state,
            alloc_event_id: -1,
            free_event_id: block.free_event_id,
        };
        next_block_id -= 1;
        sink.block_row(&row).map_err(ReplayError::Sink)
    };
    let set_aside = replayer.set_aside_blocks();
    // Already announced where the count was right; said again so a sink is never short.
    sink.expect_blocks(set_aside.len() + replayer.held_blocks());
    for block in set_aside {
        pre_trace(sink, block)?;
    }
    for seg in replayer.segments() {
        for block in seg.blocks() {
            pre_trace(sink, block)?;
        }
        sink.trace_row(&TraceRow {
            id: next_event_id,
            action: if seg.is_expandable {
                Action::SegmentMap
            } else {
                Action::SegmentAlloc
            },
            addr: seg.address,
            size: seg.total_size,
            stream: seg.stream,
            allocated,
            active,
            reserved,
            stack: seg.frames,
            position: None,
            segment: Some(seg.class),
        })
        .map_err(ReplayError::Sink)?;
        next_event_id -= 1;
    }
    let (warnings, issues) = replayer.into_parts();
    Ok(Replayed { warnings, issues })
}

/// What undoing one event did to the blocks.
pub(crate) enum Undone {
    None,
    /// An `alloc` undo took this block out (as it was just before).
    Detached(LiveBlock),
    /// A `free_completed`/`free` undo put this block back.
    Created(LiveBlock),
    /// A `segment_alloc`/`segment_map` undo took out (part of) a segment of this class.
    Unreserved(SegmentClass),
}

impl DeviceState {
    /// Undoes one event (whose entry names the memory pool `pool`, if it does), and says
    /// which block it took out or put back.
    pub(crate) fn undo(
        &mut self,
        e: &TraceEvent,
        id: i64,
        pool: Option<PoolId>,
        workspace: bool,
        warnings: &mut Vec<String>,
    ) -> Result<Undone, String> {
        // The reference takes any integer; a negative one would run the counters the wrong
        // way (an alloc that lowers them), and is no byte count an allocator records.
        if e.size < 0 {
            return Err(format!("size {} is negative", e.size));
        }
        match e.action {
            Action::Alloc => {
                let Some((s, b)) = self.find_block(e.addr, e.stream) else {
                    if workspace {
                        warnings.push(format!("alloc {id}: no block at {:#x}, skipped", e.addr));
                        return Ok(Undone::None);
                    }
                    return Err(self.missing(e.addr));
                };
                let block = self.segments[s].blocks[b];
                if block.size < e.size {
                    return Err(format!(
                        "block at {:#x} has size {} < allocated size {}",
                        block.address, block.size, e.size
                    ));
                }
                Ok(Undone::Detached(self.detach(s, b)?))
            }
            Action::FreeRequested => {
                let (s, b) = self
                    .find_block(e.addr, e.stream)
                    .ok_or_else(|| self.missing(e.addr))?;
                let block = &mut self.segments[s].blocks[b];
                if block.state != BlockState::ActivePendingFree {
                    if workspace {
                        warnings.push(format!("free_requested {id}: block not pending, skipped"));
                        return Ok(Undone::None);
                    }
                    return Err(format!(
                        "block at {:#x} is {}, not active_pending_free",
                        block.address,
                        block.state.name()
                    ));
                }
                let allocated = state::add(self.allocated, block.size)?;
                block.state = BlockState::ActiveAllocated;
                self.allocated = allocated;
                Ok(Undone::None)
            }
            Action::FreeCompleted | Action::Free => {
                let state = if e.action == Action::Free {
                    BlockState::ActiveAllocated
                } else {
                    BlockState::ActivePendingFree
                };
                let s = self
                    .find_segment(e.addr, e.stream)
                    .ok_or_else(|| self.missing(e.addr))?;
                let block = LiveBlock {
                    address: e.addr,
                    size: e.size,
                    requested: e.size,
                    state,
                    free_event: id,
                    uid: self.next_uid,
                };
                self.attach(s, block)?;
                self.take_uid()?;
                Ok(Undone::Created(block))
            }
            Action::SegmentAlloc => {
                let s = self
                    .segment_at(e.addr, e.stream)
                    .ok_or_else(|| format!("no segment at {:#x} on stream {}", e.addr, e.stream))?;
                let seg = &self.segments[s];
                if seg.total_size != e.size || seg.active != 0 {
                    return Err(format!(
                        "segment at {:#x} has size {} and {} active bytes; expected size {} and none active",
                        seg.address, seg.total_size, seg.active, e.size
                    ));
                }
                let reserved = state::sub(self.reserved, e.size)?;
                let removed = self.segments.remove(s);
                self.reserved = reserved;
                Ok(Undone::Unreserved(removed.class))
            }
            Action::SegmentFree => {
                // Its range must end below 2^63, as every segment of the dump does.
                state::add(e.addr, e.size)?;
                let reserved = state::add(self.reserved, e.size)?;
                self.insert_segment(SegState::released_by(e, false, pool));
                self.reserved = reserved;
                Ok(Undone::None)
            }
            Action::SegmentMap => {
                let reserved = state::sub(self.reserved, e.size)?;
                let class = self.unmap_range(e)?;
                self.reserved = reserved;
                Ok(Undone::Unreserved(class))
            }
            Action::SegmentUnmap => {
                let reserved = state::add(self.reserved, e.size)?;
                self.map_range(e, pool)?;
                self.reserved = reserved;
                Ok(Undone::None)
            }
            Action::WorkspaceSnapshot | Action::Oom | Action::Other(_) => Ok(Undone::None),
        }
    }

    fn missing(&self, addr: i64) -> String {
        format!("no live block or segment contains address {addr:#x}")
    }
}

#[cfg(test)]
mod tests;
