//! A run measured from a decoded snapshot by the replay alone: the same numbers as
//! [`super::measure_source`] on the database an import would write, without writing it.
//! The replay hands over every event's counters and every block lifetime; the peaks follow
//! `memory_peak`'s rule (each counter's maximum over the real events, ties to the lowest
//! id), the live blocks `active_memory_callstack_at_event`'s (allocated at or before the
//! event and not freed by then, the blocks from before the trace included), and a block's
//! stack is its allocating event's, rendered as the import renders it.

use std::collections::HashMap;

use pt_snap_model::{Action, Snapshot, StackId};
use pt_snap_replay::{BlockRow, Mode, ReplayError, RowSink, TraceRow};

use super::measure::{category_of, stackless_label, Measured, SiteFold};
use crate::capture::{Capture, StackCapture};
use crate::peak::{Metric, Peak, Peaks};
use crate::stack;

/// Measures `device` of `snapshot` at `metric`'s peak, replaying it as a strict import does.
/// `Err` is the replay's refusal, in its words.
pub fn measure_snapshot(
    snapshot: &Snapshot,
    device: usize,
    metric: Metric,
) -> Result<Measured, String> {
    let mut sink = Rows::new(snapshot);
    pt_snap_replay::replay_device(snapshot, device, Mode::Strict, &mut sink, &mut |_| {}).map_err(
        |e| match e {
            ReplayError::Sink(never) => match never {},
            e => e.to_string(),
        },
    )?;
    let peaks = sink.peaks.peaks();
    let mut labels = Labels::new(snapshot);
    let mut fold = SiteFold::default();
    let mut live_bytes = None;
    if let Some(event) = peaks.get(metric).event_id {
        live_bytes = sink.peaks.active_at(metric);
        for b in sink.live_at(event) {
            let (label, category) = match b.alloc_event_id {
                -1 => (
                    stackless_label(if b.free_event_id == -1 {
                        "static"
                    } else {
                        "preexisting_live_at_event"
                    })
                    .to_owned(),
                    category_of(None),
                ),
                id => labels.of(sink.alloc_stacks.get(&id).copied()),
            };
            fold.add(label, category, b.size, 1);
        }
    }
    let (sites, categories) = fold.finish();
    let capture = Capture {
        trace_entries: sink.real_events,
        entries_with_frames: sink.with_frames,
        stacks: match (sink.with_frames, labels.native_seen(&sink.framed_stacks)) {
            (0, _) => StackCapture::None,
            (_, true) => StackCapture::All,
            (_, false) => StackCapture::Python,
        },
        has_time_us: sink
            .peaks
            .active_position()
            .and_then(|p| snapshot.event_time(device, p))
            .is_some(),
        static_bytes_at_peak: peaks.active.event_id.map_or(0, |e| {
            sink.live_at(e)
                .filter(|b| b.alloc_event_id == -1)
                .map(|b| b.size)
                .sum()
        }),
        peak_active_bytes: peaks.active.bytes,
        trace_overflowed: snapshot.trace_buffer.overflowed(device),
        trace_max_entries: snapshot.trace_buffer.max_entries(device),
    };
    Ok(Measured {
        device: device as i64,
        metric,
        peaks,
        live_bytes,
        sites,
        categories,
        capture,
    })
}

/// What one device's replay leaves: the peaks, the stacks of allocations, the lifetimes.
struct Rows<'a> {
    snapshot: &'a Snapshot,
    peaks: PeakFold,
    /// The stack of every `alloc` event, by id: what a block's lifetime is allocated at.
    alloc_stacks: HashMap<i64, StackId>,
    blocks: Vec<Lifetime>,
    real_events: i64,
    with_frames: i64,
    /// The distinct stacks of real events that have frames.
    framed_stacks: Vec<StackId>,
    seen: std::collections::HashSet<StackId>,
}

#[derive(Debug, Clone, Copy)]
struct Lifetime {
    alloc_event_id: i64,
    free_event_id: i64,
    size: i64,
}

impl<'a> Rows<'a> {
    fn new(snapshot: &'a Snapshot) -> Self {
        Rows {
            snapshot,
            peaks: PeakFold::default(),
            alloc_stacks: HashMap::new(),
            blocks: Vec::new(),
            real_events: 0,
            with_frames: 0,
            framed_stacks: Vec::new(),
            seen: std::collections::HashSet::new(),
        }
    }

    /// The blocks live right after event `e`, as `active_memory_callstack_at_event` selects
    /// them: from before the trace and not freed by `e`, or allocated at or before `e` and
    /// not freed by `e` (a pending free is still live).
    fn live_at(&self, e: i64) -> impl Iterator<Item = &Lifetime> {
        self.blocks.iter().filter(move |b| {
            let not_freed = b.free_event_id < 0 || b.free_event_id > e;
            not_freed && (b.alloc_event_id == -1 || b.alloc_event_id <= e)
        })
    }
}

impl RowSink for Rows<'_> {
    type Error = std::convert::Infallible;

    fn trace_row(&mut self, row: &TraceRow) -> Result<(), Self::Error> {
        if row.id < 0 {
            return Ok(());
        }
        self.peaks.add(row);
        self.real_events += 1;
        if row.action == Action::Alloc {
            self.alloc_stacks.insert(row.id, row.stack);
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

/// One counter's peak so far: (bytes, event id, the active counter there, its position).
type Best = (i64, i64, i64, Option<usize>);

/// Each counter's peak as `memory_peak` finds it, with the active counter at that event.
#[derive(Default)]
struct PeakFold {
    /// Per metric (allocated, active, reserved).
    best: [Option<Best>; 3],
}

impl PeakFold {
    /// Rows come last event first, so an equal value seen later has the lower id, which
    /// `memory_peak`'s `MIN(id)` among equals picks.
    fn add(&mut self, row: &TraceRow) {
        for (slot, v) in self
            .best
            .iter_mut()
            .zip([row.allocated, row.active, row.reserved])
        {
            if slot.is_none_or(|(best, id, _, _)| v > best || (v == best && row.id < id)) {
                *slot = Some((v, row.id, row.active, row.position));
            }
        }
    }

    fn peak(&self, i: usize) -> Peak {
        Peak {
            bytes: self.best[i].map(|b| b.0),
            event_id: self.best[i].map(|b| b.1),
        }
    }

    fn peaks(&self) -> Peaks {
        Peaks {
            allocated: self.peak(0),
            active: self.peak(1),
            reserved: self.peak(2),
        }
    }

    fn index(metric: Metric) -> usize {
        match metric {
            Metric::Allocated => 0,
            Metric::Active => 1,
            Metric::Reserved => 2,
        }
    }

    fn active_at(&self, metric: Metric) -> Option<i64> {
        self.best[Self::index(metric)].map(|b| b.2)
    }

    fn active_position(&self) -> Option<usize> {
        self.best[1].and_then(|b| b.3)
    }
}

/// Sites and categories of stacks, each judged once.
struct Labels<'a> {
    snapshot: &'a Snapshot,
    judged: HashMap<StackId, (String, &'static str)>,
}

impl<'a> Labels<'a> {
    fn new(snapshot: &'a Snapshot) -> Self {
        Labels {
            snapshot,
            judged: HashMap::new(),
        }
    }

    /// The site and category of a block allocated at `stack` (`None`: its allocation event
    /// has no stack the database could join, the reference's missing callstack).
    fn of(&mut self, stack: Option<StackId>) -> (String, &'static str) {
        let Some(stack) = stack else {
            return (stackless_label("missing").to_owned(), category_of(Some("")));
        };
        let snapshot = self.snapshot;
        self.judged
            .entry(stack)
            .or_insert_with(|| {
                let text = snapshot.stacks.render(stack);
                if text.is_empty() {
                    return (stackless_label("missing").to_owned(), category_of(Some("")));
                }
                let label = stack::label_text(&text)
                    .unwrap_or_else(|| stackless_label("missing").to_owned());
                (label, category_of(Some(&text)))
            })
            .clone()
    }

    /// Whether any of `stacks` holds a native (C++) frame, as the database's texts show it.
    fn native_seen(&self, stacks: &[StackId]) -> bool {
        stacks.iter().any(|&s| {
            let text = self.snapshot.stacks.render(s);
            !text.is_empty() && stack::normalize_stack(&text).iter().any(|f| !f.is_python())
        })
    }
}
