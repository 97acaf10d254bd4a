//! The lenient replay: what to do with an event the allocator state cannot reconcile.
//!
//! Some producers write traces that no caching allocator could have produced: memviz-neo's
//! test generator has overlapping addresses and no segment events at all, and a torch_npu
//! bug or a dropped event does the same to a real trace. The strict replay refuses them (as
//! the reference does). Asked for leniency, the replay keeps going, and holds what it
//! stores to the same rules as the strict replay:
//!
//! * every row's counters are `0 ≤ allocated ≤ active ≤ reserved`, and they are sums of what
//!   the replay holds: `reserved` of its segments (and of the reservation each block it sets
//!   aside has of its own, below), `active` of its live blocks, `allocated` of those not
//!   pending a free — the blocks of the block table live at that event;
//! * every block row's free comes after its alloc in the trace, and its size is a byte count.
//!
//! An event the state reconciles is undone exactly as in the strict replay. One it cannot is
//! an [`Issue`] (the event, an [`IssueKind`], the strict replay's reason and what was done
//! instead), and is applied only where the rules above still hold:
//!
//! * a freed block no segment can hold (none contains it, it overlaps a live block, it runs
//!   past its segment) is set aside: counted, in a reservation of its own size, from its
//!   free back to its alloc, which finds it by `(address, stream)` and size, so its lifetime
//!   keeps both ends; a `free_requested` finds it the same way;
//! * an alloc whose block nothing holds — not the dump, not a later free — is a block the
//!   dump lacks: a first pass finds them all, and the second counts each from its alloc to
//!   the dump, in a reservation of its own size (one [`IssueKind::DumpStateShort`] issue
//!   says how many);
//! * anything else — a negative size, a segment event that does not match the segments, a
//!   `free_requested` with no block pending, a block that would take a counter past
//!   2^63 − 1 — changes nothing, and only its issue says it was there.
//!
//! The numbers of a lenient replay are an approximation, and everything that shows them says
//! so, with the issue count.

use std::collections::HashMap;

use pt_snap_model::{Action, BlockState, TraceEvent};

use crate::state::{add, is_overflow, sub, DeviceState};
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
    /// An event whose size is negative.
    NegativeSize,
    /// The dump lacks blocks the trace allocates and never frees.
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
            IssueKind::NegativeSize => "negative_size",
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

/// An alloc whose block nothing held: a block the dump lacks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Missing {
    /// The alloc's trace position.
    position: usize,
    address: i64,
    size: i64,
}

/// The lenient replay's own state beside the allocator's. The blocks it holds are counted
/// in the allocator state's totals, each with a reservation of its own size, so every
/// checked sum of the strict undo covers them too.
#[derive(Debug, Default)]
pub(crate) struct Leniency {
    /// Freed blocks no segment could hold, by `(address, stream)`, until their alloc.
    set_aside: HashMap<(i64, i64), Vec<BlockView>>,
    /// Blocks the dump lacks, by the trace position of the alloc that made them.
    lacking: HashMap<usize, BlockView>,
    /// Allocs whose block nothing held: what the dump lacks, for the next pass.
    pub missing: Vec<Missing>,
    pub issues: Vec<Issue>,
}

/// The totals with `block` counted in (`step` = [`add`]) or out ([`sub`]): its size in
/// `active` and `reserved`, and in `allocated` unless it is pending a free.
fn counted(
    state: &DeviceState,
    block: &BlockView,
    step: fn(i64, i64) -> Result<i64, String>,
) -> Result<(i64, i64, i64), String> {
    let allocated = if block.state == BlockState::ActiveAllocated {
        step(state.allocated, block.size)?
    } else {
        state.allocated
    };
    Ok((
        allocated,
        step(state.active, block.size)?,
        step(state.reserved, block.size)?,
    ))
}

fn count(
    state: &mut DeviceState,
    block: &BlockView,
    step: fn(i64, i64) -> Result<i64, String>,
) -> Result<(), String> {
    (state.allocated, state.active, state.reserved) = counted(state, block, step)?;
    Ok(())
}

impl Leniency {
    /// Counts in, at the dump, the blocks a first pass found `missing` (the allocs whose
    /// block nothing held), each in a reservation of its own size; the issue that says so.
    pub fn seed(
        &mut self,
        state: &mut DeviceState,
        missing: &[Missing],
    ) -> Result<Option<Issue>, String> {
        let (mut blocks, mut bytes, mut dropped) = (0usize, 0i64, 0usize);
        for m in missing {
            let mut block = BlockView {
                uid: 0,
                address: m.address,
                size: m.size,
                requested_size: m.size,
                state: BlockState::ActiveAllocated,
                free_event_id: -1,
            };
            if count(state, &block, add).is_err() {
                dropped += 1;
                continue;
            }
            block.uid = state.take_uid()?;
            self.lacking.insert(m.position, block);
            blocks += 1;
            // At most `reserved`, which has just been checked.
            bytes += m.size;
        }
        if blocks + dropped == 0 {
            return Ok(None);
        }
        let mut message = format!(
            "the dump holds no block for {blocks} allocations that no later free holds either ({bytes} bytes); each is counted from its alloc to the dump, in a reservation of its own size"
        );
        if dropped > 0 {
            message.push_str(&format!(
                "; {dropped} more would take the counters past 2^63 - 1 and are not counted"
            ));
        }
        Ok(Some(Issue {
            event_id: -1,
            kind: IssueKind::DumpStateShort,
            message,
        }))
    }

    /// Applies what can be applied of `e` (at trace `position`), which `state` could not
    /// undo for `reason`; returns the block it took out or put back.
    pub fn set_aside(
        &mut self,
        state: &mut DeviceState,
        e: &TraceEvent,
        position: usize,
        id: i64,
        reason: String,
    ) -> Result<BlockChange, String> {
        let mut kind = classify(state, e, &reason);
        let key = (e.addr, e.stream);
        let (change, done) = match e.action {
            _ if e.size < 0 => (BlockChange::None, "not applied".to_owned()),
            Action::Alloc => {
                let found = match self.lacking.remove(&position) {
                    Some(block) => Some((block, "counted from here to the dump".to_owned())),
                    None => self.take(key, e.size).map(|block| {
                        let free = block.free_event_id;
                        (block, format!("paired with the free at event {free}"))
                    }),
                };
                match found {
                    Some((block, done)) => {
                        count(state, &block, sub)?;
                        (BlockChange::Detached(block), done)
                    }
                    None => {
                        self.missing.push(Missing {
                            position,
                            address: e.addr,
                            size: e.size,
                        });
                        // A first pass's: what the dump lacks. A second pass's: a block
                        // the dump lacks that would take the counters past 2^63 - 1.
                        let done = "not counted: neither the dump nor a later free holds its block, and counting it to the dump would pass 2^63 - 1";
                        (BlockChange::None, done.to_owned())
                    }
                }
            }
            Action::FreeRequested => {
                let pending = |b: &BlockView| b.state == BlockState::ActivePendingFree;
                let found = self.set_aside.get_mut(&key).and_then(|list| {
                    let i = pick(list, e.size, pending)?;
                    Some(&mut list[i])
                });
                match found {
                    Some(block) => match add(state.allocated, block.size) {
                        Ok(allocated) => {
                            state.allocated = allocated;
                            block.state = BlockState::ActiveAllocated;
                            let free = block.free_event_id;
                            let done = format!("applied to the block freed at event {free}");
                            (BlockChange::None, done)
                        }
                        Err(why) => {
                            kind = IssueKind::Overflow;
                            (BlockChange::None, format!("not applied: {why}"))
                        }
                    },
                    None => (
                        BlockChange::None,
                        "not applied: no block set aside there is pending a free".to_owned(),
                    ),
                }
            }
            Action::FreeCompleted | Action::Free => {
                let mut block = BlockView {
                    uid: 0,
                    address: e.addr,
                    size: e.size,
                    requested_size: e.size,
                    state: if e.action == Action::Free {
                        BlockState::ActiveAllocated
                    } else {
                        BlockState::ActivePendingFree
                    },
                    free_event_id: id,
                };
                match count(state, &block, add) {
                    Ok(()) => {
                        block.uid = state.take_uid()?;
                        self.set_aside.entry(key).or_default().push(block);
                        let done = "counted until its alloc, in a reservation of its own size";
                        (BlockChange::Created(block), done.to_owned())
                    }
                    Err(why) => {
                        kind = IssueKind::Overflow;
                        (BlockChange::None, format!("not counted: {why}"))
                    }
                }
            }
            _ => (BlockChange::None, "not applied".to_owned()),
        };
        self.issues.push(Issue {
            event_id: id,
            kind,
            message: format!("{reason}; {done}"),
        });
        Ok(change)
    }

    /// The set-aside block at `key` that an alloc of `size` belongs to, taken out.
    fn take(&mut self, key: (i64, i64), size: i64) -> Option<BlockView> {
        let list = self.set_aside.get_mut(&key)?;
        let block = list.remove(pick(list, size, |_| true)?);
        if list.is_empty() {
            self.set_aside.remove(&key);
        }
        Some(block)
    }

    /// Blocks still held when the first event is undone: frees whose alloc never came, and
    /// blocks the dump lacks whose alloc was undone otherwise. They were live before the
    /// trace, in address order like the strict replay's pre-trace blocks.
    pub fn still_held(&self) -> Vec<BlockView> {
        let mut blocks: Vec<BlockView> = (self.set_aside.values().flatten())
            .chain(self.lacking.values())
            .copied()
            .collect();
        blocks.sort_by_key(|b| (b.address, b.uid));
        blocks
    }
}

/// Which of the blocks set aside at one address an event of `size` pairs with, among those
/// `accept`ed: the latest freed of that size (blocks at one address nest, so the latest
/// undone is the innermost). PyTorch records a block's requested size on its alloc and on
/// its frees alike, so a block of another size is another lifetime: pairing with it would
/// count the alloc at the wrong size.
fn pick(list: &[BlockView], size: i64, accept: impl Fn(&BlockView) -> bool) -> Option<usize> {
    // Only the latest few are looked at, so a hostile trace piling frees on one address
    // cannot make each alloc scan them all.
    const LOOK_BACK: usize = 64;
    (list.iter().enumerate().rev().take(LOOK_BACK))
        .find(|(_, b)| b.size == size && accept(b))
        .map(|(i, _)| i)
}

fn classify(state: &DeviceState, e: &TraceEvent, reason: &str) -> IssueKind {
    if e.size < 0 {
        return IssueKind::NegativeSize;
    }
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
