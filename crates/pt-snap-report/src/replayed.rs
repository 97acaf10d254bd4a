//! One device of a decoded snapshot replayed without a database: what `check` and `ranks`
//! read from a fresh snapshot instead of importing it. The replay hands over every event's
//! counters and every block lifetime; [`Replayed`] keeps what the templates would read of
//! the rows an import writes: the peaks by `memory_peak`'s rule (each counter's maximum over
//! the real events, ties to the lowest id) with the counters at each, the OOM events, every
//! allocation's stack, and the lifetimes, so that the blocks live at an event are selected as
//! `active_memory_callstack_at_event` selects them.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;

use pt_snap_model::{Action, Snapshot, StackId};
use pt_snap_replay::{BlockRow, Mode, ReplayError, RowSink, TraceRow};

use crate::peak::{Metric, Peak, Peaks};

/// One device's strict replay, summed up.
pub struct Replayed<'a> {
    pub snapshot: &'a Snapshot,
    pub device: usize,
    /// Per metric (allocated, active, reserved): the peak's event.
    best: [Option<AtEvent>; 3],
    /// The stack of every `alloc` event, by id: what a block's lifetime is allocated at.
    alloc_stacks: HashMap<i64, StackId>,
    blocks: Vec<Lifetime>,
    /// Real events (ids ≥ 0).
    pub real_events: i64,
    /// Real events whose stack has frames.
    pub with_frames: i64,
    /// The distinct stacks of real events that have frames, in the order first met.
    pub framed_stacks: Vec<StackId>,
    seen: HashSet<StackId>,
    /// Real events whose action is `oom`.
    pub oom_events: i64,
    /// What the strict replay tolerated and `import` warns of.
    pub warnings: Vec<String>,
}

/// A real event's counters, where it is the peak of one of them.
#[derive(Debug, Clone, Copy)]
pub struct AtEvent {
    pub id: i64,
    pub allocated: i64,
    pub active: i64,
    pub reserved: i64,
    /// Its position in the device's trace.
    pub position: Option<usize>,
}

/// A block's lifetime, as the import writes it: allocated at `alloc_event_id` (-1 before the
/// trace), freed at `free_event_id` (-1: not by the dump).
#[derive(Debug, Clone, Copy)]
pub struct Lifetime {
    pub alloc_event_id: i64,
    pub free_event_id: i64,
    pub size: i64,
}

impl Lifetime {
    /// `static`, `preexisting_live_at_event` or `dynamic_live_at_event`, as the templates
    /// name a live block.
    pub fn category(&self) -> &'static str {
        match (self.alloc_event_id, self.free_event_id) {
            (-1, -1) => "static",
            (-1, _) => "preexisting_live_at_event",
            _ => "dynamic_live_at_event",
        }
    }
}

fn index(metric: Metric) -> usize {
    match metric {
        Metric::Allocated => 0,
        Metric::Active => 1,
        Metric::Reserved => 2,
    }
}

impl<'a> Replayed<'a> {
    /// Replays `device` of `snapshot` as a strict import does. `Err` is the replay's refusal.
    pub fn strict(snapshot: &'a Snapshot, device: usize) -> Result<Self, ReplayError<Infallible>> {
        let mut replayed = Replayed {
            snapshot,
            device,
            best: [None; 3],
            alloc_stacks: HashMap::new(),
            blocks: Vec::new(),
            real_events: 0,
            with_frames: 0,
            framed_stacks: Vec::new(),
            seen: HashSet::new(),
            oom_events: 0,
            warnings: Vec::new(),
        };
        let done = pt_snap_replay::replay_device(
            snapshot,
            device,
            Mode::Strict,
            &mut replayed,
            &mut |_| {},
        )?;
        replayed.warnings = done.warnings;
        Ok(replayed)
    }

    /// The three peaks, `memory_peak`'s answer.
    pub fn peaks(&self) -> Peaks {
        let peak = |i: usize, value: fn(&AtEvent) -> i64| Peak {
            bytes: self.best[i].as_ref().map(value),
            event_id: self.best[i].map(|b| b.id),
        };
        Peaks {
            allocated: peak(0, |e| e.allocated),
            active: peak(1, |e| e.active),
            reserved: peak(2, |e| e.reserved),
        }
    }

    /// The event of `metric`'s peak, with its counters; `None` without a real event.
    pub fn at_peak(&self, metric: Metric) -> Option<AtEvent> {
        self.best[index(metric)]
    }

    /// The `time_us` of the event at `position`, if it has one.
    pub fn time_at(&self, position: Option<usize>) -> Option<i64> {
        self.snapshot.event_time(self.device, position?)
    }

    /// Whether any entry of the device's trace has a `time_us` (the import writes a time row
    /// for each that does; with none its times table is empty).
    pub fn has_times(&self) -> bool {
        let events = self
            .snapshot
            .device_traces
            .get(self.device)
            .map_or(0, Vec::len);
        (0..events).any(|p| self.time_at(Some(p)).is_some())
    }

    /// The stack of the `alloc` event `id`; `None` when there is none (the template's join
    /// finds no row).
    pub fn alloc_stack(&self, id: i64) -> Option<StackId> {
        self.alloc_stacks.get(&id).copied()
    }

    /// The blocks live right after event `e`, as `active_memory_callstack_at_event` selects
    /// them: from before the trace and not freed by `e`, or allocated at or before `e` and
    /// not freed by `e` (a pending free is still live).
    pub fn live_at(&self, e: i64) -> impl Iterator<Item = &Lifetime> {
        self.blocks.iter().filter(move |b| {
            let not_freed = b.free_event_id < 0 || b.free_event_id > e;
            not_freed && (b.alloc_event_id == -1 || b.alloc_event_id <= e)
        })
    }
}

impl RowSink for Replayed<'_> {
    type Error = Infallible;

    fn trace_row(&mut self, row: &TraceRow) -> Result<(), Self::Error> {
        if row.id < 0 {
            return Ok(());
        }
        // Rows come last event first, so an equal value seen later has the lower id, which
        // `memory_peak`'s `MIN(id)` among equals picks.
        let here = AtEvent {
            id: row.id,
            allocated: row.allocated,
            active: row.active,
            reserved: row.reserved,
            position: row.position,
        };
        for (i, slot) in self.best.iter_mut().enumerate() {
            let value = |e: &AtEvent| [e.allocated, e.active, e.reserved][i];
            if slot.is_none_or(|b| {
                value(&here) > value(&b) || (value(&here) == value(&b) && here.id < b.id)
            }) {
                *slot = Some(here);
            }
        }
        self.real_events += 1;
        match row.action {
            Action::Alloc => {
                self.alloc_stacks.insert(row.id, row.stack);
            }
            Action::Oom => self.oom_events += 1,
            _ => {}
        }
        if !self.snapshot.stacks.stack(row.stack).is_empty() {
            self.with_frames += 1;
            if self.seen.insert(row.stack) {
                self.framed_stacks.push(row.stack);
            }
        }
        Ok(())
    }

    fn block_row(&mut self, row: &BlockRow) -> Result<(), Self::Error> {
        self.blocks.push(Lifetime {
            alloc_event_id: row.alloc_event_id,
            free_event_id: row.free_event_id,
            size: row.size,
        });
        Ok(())
    }

    fn expect_blocks(&mut self, n: usize) {
        self.blocks.reserve(n.saturating_sub(self.blocks.len()));
    }
}
