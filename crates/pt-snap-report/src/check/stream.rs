//! A run measured from a decoded snapshot by the replay alone ([`Replayed`]): the same
//! numbers as [`super::measure_source`] on the database an import would write, without
//! writing it. A block's stack is its allocating event's, rendered as the import renders it.

use std::collections::HashMap;

use pt_snap_model::{Snapshot, StackId};

use super::measure::{category_of, stackless_label, Measured, SiteFold};
use crate::capture::{Capture, StackCapture};
use crate::peak::Metric;
use crate::replayed::Replayed;
use crate::stack;

/// Measures a device replayed as a strict import does, at `metric`'s peak.
pub fn measure_replayed(replayed: &Replayed<'_>, metric: Metric) -> Measured {
    let (snapshot, device) = (replayed.snapshot, replayed.device);
    let peaks = replayed.peaks();
    let mut labels = Labels::new(snapshot);
    let mut fold = SiteFold::default();
    let at_peak = replayed.at_peak(metric);
    if let Some(event) = at_peak {
        for b in replayed.live_at(event.id) {
            let (label, category) = match b.alloc_event_id {
                -1 => (stackless_label(b.category()).to_owned(), category_of(None)),
                id => labels.of(replayed.alloc_stack(id)),
            };
            fold.add(label, category, b.size, 1);
        }
    }
    let (sites, categories) = fold.finish();
    let active_peak = replayed.at_peak(Metric::Active);
    let capture = Capture {
        trace_entries: replayed.real_events,
        entries_with_frames: replayed.with_frames,
        stacks: match (
            replayed.with_frames,
            labels.native_seen(&replayed.framed_stacks),
        ) {
            (0, _) => StackCapture::None,
            (_, true) => StackCapture::All,
            (_, false) => StackCapture::Python,
        },
        has_time_us: replayed
            .time_at(active_peak.and_then(|p| p.position))
            .is_some(),
        static_bytes_at_peak: active_peak.map_or(0, |e| {
            replayed
                .live_at(e.id)
                .filter(|b| b.alloc_event_id == -1)
                .map(|b| b.size)
                .sum()
        }),
        peak_active_bytes: peaks.active.bytes,
        trace_overflowed: snapshot.trace_buffer.overflowed(device),
        trace_max_entries: snapshot.trace_buffer.max_entries(device),
    };
    let live_bytes = at_peak.map(|e| e.active);
    Measured {
        device: device as i64,
        metric,
        peaks,
        live_bytes,
        sites,
        categories,
        capture,
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
