//! The lenient replay: what to do with an event the allocator state cannot reconcile.
//!
//! Some producers write traces that no caching allocator could have produced: memviz-neo's
//! test generator has overlapping addresses and no segment events at all, and a torch_npu
//! bug or a dropped event does the same to a real trace. The strict replay refuses them (as
//! the reference does). Asked for leniency, the replay keeps going:
//!
//! * an event the state reconciles is undone exactly as in the strict replay;
//! * one it cannot is applied to the counters from the trace alone (its own size), and kept
//!   as an [`Issue`] naming the event, a [`IssueKind`] and the strict replay's reason;
//! * blocks are paired by address: a free whose block cannot be put back waits, keyed by
//!   `(address, stream)`, for the alloc before it, so its lifetime still gets both ends;
//! * if the counters would then go below zero before the first event (a dump that lacks the
//!   memory its trace allocates, e.g. one with no segments), the dump-time counters are
//!   raised so the trace starts at zero, and that is an issue too.
//!
//! The numbers of a lenient replay are an approximation, and everything that shows them says
//! so, with the issue count.

use std::collections::HashMap;

use pt_snap_model::{Action, BlockState, TraceEvent};

use crate::state::{is_overflow, DeviceState};
use crate::{BlockChange, BlockView};

/// Whether the replay may set aside what it cannot reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// The reference's replay: the first inconsistency fails the device.
    #[default]
    Strict,
    Lenient,
}

/// What kind of inconsistency an event had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IssueKind {
    /// An `alloc` or `free_requested` at an address no live block holds.
    NoBlock,
    /// An address no segment of the event's stream contains.
    NoSegment,
    /// A freed block that overlaps a live block or runs past its segment.
    Overlap,
    /// A block in the wrong state (not pending when its free is requested, smaller than
    /// its allocation).
    BlockState,
    /// A segment event that does not match the segments of the state.
    SegmentMismatch,
    /// A sum past 64 bits.
    Overflow,
    /// The dump-time counters were raised so the trace starts at zero.
    DumpStateShort,
}

impl IssueKind {
    /// The name stored in `pt_snap_x_replay_issues.kind`.
    pub fn name(self) -> &'static str {
        match self {
            IssueKind::NoBlock => "no_block",
            IssueKind::NoSegment => "no_segment",
            IssueKind::Overlap => "overlap",
            IssueKind::BlockState => "block_state",
            IssueKind::SegmentMismatch => "segment_mismatch",
            IssueKind::Overflow => "overflow",
            IssueKind::DumpStateShort => "dump_state_short",
        }
    }
}

/// One event the lenient replay could not reconcile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// The event's id; `-1` for an issue of the device as a whole.
    pub event_id: i64,
    pub kind: IssueKind,
    pub message: String,
}

/// A block whose free was applied from the trace alone, waiting for its alloc.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    view: BlockView,
}

/// The lenient replay's own state beside the allocator's.
#[derive(Debug, Default)]
pub(crate) struct Leniency {
    waiting: HashMap<(i64, i64), Vec<Waiting>>,
    pub issues: Vec<Issue>,
}

impl Leniency {
    /// Applies `e`, which `state` could not undo for `reason`, from the trace alone; returns
    /// the block it took out or put back.
    pub fn set_aside(
        &mut self,
        state: &mut DeviceState,
        e: &TraceEvent,
        id: i64,
        reason: String,
    ) -> Result<BlockChange, String> {
        let kind = classify(state, e, &reason);
        self.issues.push(Issue {
            event_id: id,
            kind,
            message: reason,
        });
        let key = (e.addr, e.stream);
        Ok(match e.action {
            Action::Alloc => {
                let view = match self.take_waiting(key, e.size) {
                    Some(view) => BlockView {
                        size: e.size,
                        requested_size: e.size,
                        ..view
                    },
                    // Allocated here and never freed in the trace: live at the end.
                    None => BlockView {
                        uid: state.take_uid()?,
                        address: e.addr,
                        size: e.size,
                        requested_size: e.size,
                        state: BlockState::ActiveAllocated,
                        free_event_id: -1,
                    },
                };
                // The trace alone: the alloc's own size, whatever its free said.
                state.active = state.active.saturating_sub(e.size);
                if view.state == BlockState::ActiveAllocated {
                    state.allocated = state.allocated.saturating_sub(e.size);
                }
                BlockChange::Detached(view)
            }
            Action::FreeRequested => {
                if let Some(waiting) = self.waiting.get_mut(&key) {
                    if let Some(i) = matching(waiting, e.size) {
                        waiting[i].view.state = BlockState::ActiveAllocated;
                    }
                }
                state.allocated = state.allocated.saturating_add(e.size);
                BlockChange::None
            }
            Action::FreeCompleted | Action::Free => {
                let block_state = if e.action == Action::Free {
                    state.allocated = state.allocated.saturating_add(e.size);
                    BlockState::ActiveAllocated
                } else {
                    BlockState::ActivePendingFree
                };
                state.active = state.active.saturating_add(e.size);
                let view = BlockView {
                    uid: state.take_uid()?,
                    address: e.addr,
                    size: e.size,
                    requested_size: e.size,
                    state: block_state,
                    free_event_id: id,
                };
                self.waiting.entry(key).or_default().push(Waiting { view });
                BlockChange::Created(view)
            }
            Action::SegmentAlloc | Action::SegmentMap => {
                state.reserved = state.reserved.saturating_sub(e.size);
                BlockChange::None
            }
            Action::SegmentFree | Action::SegmentUnmap => {
                state.reserved = state.reserved.saturating_add(e.size);
                BlockChange::None
            }
            Action::WorkspaceSnapshot | Action::Oom | Action::Other(_) => BlockChange::None,
        })
    }

    /// The waiting block at `key` that an event of `size` belongs to.
    fn take_waiting(&mut self, key: (i64, i64), size: i64) -> Option<BlockView> {
        let waiting = self.waiting.get_mut(&key)?;
        let i = matching(waiting, size)?;
        Some(waiting.remove(i).view)
    }

    /// Freed blocks whose alloc never came: they were live before the trace, in address
    /// order like the strict replay's pre-trace blocks.
    pub fn still_waiting(&self) -> Vec<BlockView> {
        let mut blocks: Vec<BlockView> = self.waiting.values().flatten().map(|w| w.view).collect();
        blocks.sort_by_key(|b| (b.address, b.uid));
        blocks
    }
}

/// Which of the blocks waiting at one address an event of `size` pairs with: the latest
/// freed of that size (blocks at one address nest, so the latest undone is the innermost),
/// else the latest freed.
fn matching(waiting: &[Waiting], size: i64) -> Option<usize> {
    // Only the latest few are looked at, so a hostile trace piling frees on one address
    // cannot make each alloc scan them all.
    const LOOK_BACK: usize = 64;
    let last = waiting.len().checked_sub(1)?;
    waiting
        .iter()
        .rev()
        .take(LOOK_BACK)
        .position(|w| w.view.size == size)
        .map(|back| last - back)
        .or(Some(last))
}

fn classify(state: &DeviceState, e: &TraceEvent, reason: &str) -> IssueKind {
    if is_overflow(reason) {
        return IssueKind::Overflow;
    }
    match e.action {
        Action::Alloc | Action::FreeRequested => match state.find_segment(e.addr, e.stream) {
            None => IssueKind::NoSegment,
            Some(_) if state.find_block(e.addr, e.stream).is_none() => IssueKind::NoBlock,
            Some(_) => IssueKind::BlockState,
        },
        Action::FreeCompleted | Action::Free => match state.find_segment(e.addr, e.stream) {
            None => IssueKind::NoSegment,
            Some(_) => IssueKind::Overlap,
        },
        _ => IssueKind::SegmentMismatch,
    }
}
