//! The same backward replay as [`replay_device`](crate::replay_device), one event at a time,
//! with the allocator state open for inspection between events.
//!
//! Sharded imports (spec §10.2) need more than a stream of rows: they stop at every slice
//! boundary to record the state just before the slice's first event, and they follow each
//! block lifetime across slices (the reference keys its registry by Python object identity;
//! here every live block carries a [`BlockView::uid`] that survives splits and merges of its
//! segment).

use pt_snap_model::{BlockState, Snapshot, StackId, TraceEvent};

use crate::lenient::{Issue, Leniency, Missing, Mode};
use crate::state::{DeviceState, LiveBlock};
use crate::{Inconsistency, ReplayError, SegmentClass, TraceRow, Undone};

/// A live block as the replay holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockView {
    /// Identity of the lifetime within this device's replay: unique, never reused.
    pub uid: u32,
    pub address: i64,
    pub size: i64,
    pub requested_size: i64,
    pub state: BlockState,
    /// The `free_completed`/`free` event that ended it, once its undo re-created the block;
    /// `-1` for blocks live at dump time.
    pub free_event_id: i64,
}

impl From<&LiveBlock> for BlockView {
    fn from(b: &LiveBlock) -> Self {
        BlockView {
            uid: b.uid,
            address: b.address,
            size: b.size,
            requested_size: b.requested,
            state: b.state,
            free_event_id: b.free_event,
        }
    }
}

/// A segment of the current state, with its live blocks in address order.
#[derive(Debug, Clone, Copy)]
pub struct SegmentView<'r> {
    pub address: i64,
    pub total_size: i64,
    pub stream: i64,
    pub is_expandable: bool,
    pub frames: StackId,
    pub class: SegmentClass,
    blocks: &'r [LiveBlock],
}

impl SegmentView<'_> {
    pub fn blocks(&self) -> impl Iterator<Item = BlockView> + '_ {
        self.blocks.iter().map(BlockView::from)
    }
}

/// What undoing one event did to the blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockChange {
    None,
    /// Undoing an `alloc` took this block out (the view is the block just before, with the
    /// state it had then).
    Detached(BlockView),
    /// Undoing a `free_completed`/`free` put this block back.
    Created(BlockView),
}

/// One undone event: its row (totals right after the event happened) and its block effect.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub row: TraceRow,
    pub change: BlockChange,
}

/// Backward replay of one device that can pause anywhere.
pub struct Replayer<'s> {
    snapshot: &'s Snapshot,
    device: usize,
    events: &'s [TraceEvent],
    state: DeviceState,
    workspace: bool,
    warnings: Vec<String>,
    remaining: usize,
    /// Present in [`Mode::Lenient`].
    leniency: Option<Leniency>,
}

impl<'s> Replayer<'s> {
    /// The dump-time state of `device` (after the torch_npu workspace adaptation), with all of
    /// its events still to undo, for the strict replay.
    pub fn new(
        snapshot: &'s Snapshot,
        device: usize,
    ) -> Result<Self, ReplayError<std::convert::Infallible>> {
        Self::with_mode(snapshot, device, Mode::Strict)
    }

    /// [`Replayer::new`] in either mode (see [`Mode`]).
    pub fn with_mode(
        snapshot: &'s Snapshot,
        device: usize,
        mode: Mode,
    ) -> Result<Self, ReplayError<std::convert::Infallible>> {
        let events: &[TraceEvent] = snapshot
            .device_traces
            .get(device)
            .map_or(&[], Vec::as_slice);
        let dump_state = |reason| ReplayError::DumpState { device, reason };
        let mut state = DeviceState::at_dump(snapshot, device as i64).map_err(dump_state)?;
        let mut warnings = Vec::new();
        let workspace = state
            .adapt_workspace(events, &mut warnings)
            .map_err(dump_state)?;
        Ok(Replayer {
            snapshot,
            device,
            events,
            state,
            workspace,
            warnings,
            remaining: events.len(),
            leniency: (mode == Mode::Lenient).then(Leniency::default),
        })
    }

    /// Blocks in the current state, of any state.
    pub fn held_blocks(&self) -> usize {
        self.state.segments.iter().map(|s| s.blocks.len()).sum()
    }

    /// Events not undone yet: the state is the one right before the event at this position.
    pub fn remaining(&self) -> usize {
        self.remaining
    }

    /// `(allocated, active, reserved)` of the current state.
    pub fn totals(&self) -> (i64, i64, i64) {
        (self.state.allocated, self.state.active, self.state.reserved)
    }

    /// The segments of the current state, sorted by `(address, stream)`.
    pub fn segments(&self) -> impl Iterator<Item = SegmentView<'_>> {
        self.state.segments.iter().map(|s| SegmentView {
            address: s.address,
            total_size: s.total_size,
            stream: s.stream,
            is_expandable: s.is_expandable,
            frames: s.frames,
            class: s.class,
            blocks: &s.blocks,
        })
    }

    /// Inconsistencies tolerated so far (the reference logs them as warnings).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// What a lenient replay set aside so far (empty when strict).
    pub fn issues(&self) -> &[Issue] {
        self.leniency.as_ref().map_or(&[], |l| &l.issues)
    }

    /// Blocks a lenient replay holds outside the segments (freed but not allocated yet, or
    /// lacking from the dump): once every event is undone, live before the trace.
    pub fn set_aside_blocks(&self) -> Vec<BlockView> {
        self.leniency
            .as_ref()
            .map_or_else(Vec::new, Leniency::still_held)
    }

    /// The allocs a lenient replay found no block for so far: blocks the dump lacks.
    pub(crate) fn missing(&self) -> &[Missing] {
        self.leniency.as_ref().map_or(&[], |l| &l.missing)
    }

    /// Counts in, at the dump, the blocks a first lenient pass found `missing`; before any
    /// event is undone, and only in a lenient replay.
    pub(crate) fn seed(&mut self, missing: &[Missing]) -> Result<(), String> {
        debug_assert_eq!(self.remaining, self.events.len());
        if let Some(l) = &mut self.leniency {
            if let Some(issue) = l.seed(&mut self.state, missing)? {
                l.issues.push(issue);
            }
        }
        Ok(())
    }

    pub fn into_parts(self) -> (Vec<String>, Vec<Issue>) {
        let issues = self.leniency.map_or_else(Vec::new, |l| l.issues);
        (self.warnings, issues)
    }

    /// Undoes the last remaining event; `None` once every event is undone.
    pub fn undo_last(&mut self) -> Option<Result<Step, ReplayError<std::convert::Infallible>>> {
        let pos = self.remaining.checked_sub(1)?;
        let event = &self.events[pos];
        let id = event.id.unwrap_or(pos as i64);
        let (allocated, active, reserved) = self.totals();
        let row = TraceRow {
            id,
            action: event.action,
            addr: event.addr,
            size: event.size,
            stream: event.stream,
            allocated,
            active,
            reserved,
            stack: event.frames,
            position: Some(pos),
            segment: None,
        };
        let pool = self.snapshot.event_pool(self.device, pos);
        let undone = self
            .state
            .undo(event, id, pool, self.workspace, &mut self.warnings);
        let inconsistent = |reason| {
            Some(Err(ReplayError::Inconsistent(Inconsistency {
                device: self.device,
                event_id: id,
                action: event.action.name(&self.snapshot.other_actions).to_owned(),
                addr: event.addr,
                size: event.size,
                stream: event.stream,
                reason,
            })))
        };
        let mut row = row;
        let change = match undone {
            Ok(Undone::None) => BlockChange::None,
            Ok(Undone::Unreserved(class)) => {
                row.segment = Some(class);
                BlockChange::None
            }
            Ok(Undone::Detached(block)) => BlockChange::Detached(BlockView::from(&block)),
            Ok(Undone::Created(block)) => BlockChange::Created(BlockView::from(&block)),
            Err(reason) => match &mut self.leniency {
                Some(l) => match l.set_aside(&mut self.state, event, pos, id, reason) {
                    Ok(change) => change,
                    Err(reason) => return inconsistent(reason),
                },
                None => return inconsistent(reason),
            },
        };
        self.remaining = pos;
        Some(Ok(Step { row, change }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay_device;
    use crate::tests::{block, event, segment, Rows};
    use pt_snap_model::Action;

    fn snapshot() -> Snapshot {
        let live = |address, size| block(address, size, BlockState::ActiveAllocated);
        Snapshot {
            // 1536 bytes allocated and active.
            segments: vec![segment(0, 4096, vec![live(0, 512), live(1024, 1024)])],
            device_traces: vec![vec![
                event(Action::Alloc, 2048, 512),
                event(Action::FreeRequested, 2048, 512),
                event(Action::FreeCompleted, 2048, 512),
                event(Action::Alloc, 1024, 1024),
                event(Action::FreeRequested, 0, 512),
                event(Action::FreeCompleted, 0, 512),
                event(Action::Alloc, 0, 512),
            ]],
            ..Snapshot::default()
        }
    }

    #[test]
    fn steps_give_the_rows_of_the_full_replay_and_follow_lifetimes() {
        let snapshot = snapshot();
        let mut full = Rows::default();
        replay_device(&snapshot, 0, crate::Mode::Strict, &mut full, &mut |_| {}).unwrap();

        let mut replayer = Replayer::new(&snapshot, 0).unwrap();
        let mut rows = Vec::new();
        let mut changes = Vec::new();
        while let Some(step) = replayer.undo_last() {
            let step = step.unwrap();
            rows.push(step.row);
            changes.push(step.change);
        }
        assert_eq!(rows[..], full.trace[..rows.len()]);
        assert_eq!(replayer.remaining(), 0);

        // The block live at dump time at 0 is re-allocated by event 6: detached there; event
        // 5's undo re-creates the previous lifetime at 0 (a new uid), which event 4's undo
        // turns back to allocated, and which is still live before the trace.
        let BlockChange::Detached(last) = changes[0] else {
            panic!("{:?}", changes[0])
        };
        let BlockChange::Created(earlier) = changes[1] else {
            panic!("{:?}", changes[1])
        };
        assert_eq!((last.address, earlier.address), (0, 0));
        assert_ne!(last.uid, earlier.uid);
        assert_eq!(earlier.free_event_id, 5);
        let before: Vec<BlockView> = replayer
            .segments()
            .flat_map(|s| s.blocks().collect::<Vec<_>>())
            .collect();
        assert_eq!(before.len(), 1);
        assert_eq!(before[0].uid, earlier.uid);
        assert_eq!(before[0].state, BlockState::ActiveAllocated);
        assert_eq!(
            replayer.totals(),
            (
                full.trace.last().unwrap().allocated,
                full.trace.last().unwrap().active,
                4096
            )
        );
    }
}
