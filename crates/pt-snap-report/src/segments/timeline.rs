//! memory_viz's "Active Cached Segment Timeline": the reserved segments over events, each a
//! band from the event that reserved it to the one that released it. A segment reserved
//! before the trace starts before every event (allocated at -1, as the blocks from before
//! the trace are); each `segment_map` is a band of its own, and a `segment_unmap` ends the
//! bands it cuts and starts what is left of them. The bands are [`Lifetime`]s, so the
//! allocation timeline's cut ([`crate::allocations::allocations`]) and drawing serve both.

use pt_snap_query::{Lifetime, StateEvent};

use crate::oom::{SEGMENT_ALLOC, SEGMENT_FREE, SEGMENT_MAP, SEGMENT_UNMAP};

/// The bands of a device's segment events (by id; [`pt_snap_query::Analyzer::segment_events`]),
/// each band's `block` its index, and each band's stream. At every event the bands live
/// there add up to the reserved counter.
pub fn segment_lifetimes(events: &[StateEvent]) -> (Vec<Lifetime>, Vec<i64>) {
    let mut out = Bands::default();
    // Live bands: (address, size, stream, start).
    let mut live: Vec<(i64, i64, i64, i64)> = Vec::new();
    for e in events {
        let start = if e.id < 0 { -1 } else { e.id };
        match e.action {
            Some(SEGMENT_ALLOC) | Some(SEGMENT_MAP) => {
                live.push((e.address, e.size, e.stream, start))
            }
            Some(SEGMENT_FREE) => {
                let at = live
                    .iter()
                    .position(|l| l.0 == e.address && l.2 == e.stream);
                if let Some(i) = at {
                    out.end(live.swap_remove(i), e.id);
                }
            }
            Some(SEGMENT_UNMAP) => {
                let (cut_start, cut_end) = (e.address, e.address.saturating_add(e.size));
                let mut kept = Vec::with_capacity(live.len());
                for l in live.drain(..) {
                    let l_end = l.0.saturating_add(l.1);
                    if l.2 != e.stream || l_end <= cut_start || cut_end <= l.0 {
                        kept.push(l);
                        continue;
                    }
                    out.end(l, e.id);
                    if l.0 < cut_start {
                        kept.push((l.0, cut_start - l.0, l.2, e.id));
                    }
                    if cut_end < l_end {
                        kept.push((cut_end, l_end - cut_end, l.2, e.id));
                    }
                }
                live = kept;
            }
            _ => {}
        }
    }
    for l in live {
        out.end(l, -1);
    }
    (out.lifetimes, out.streams)
}

#[derive(Default)]
struct Bands {
    lifetimes: Vec<Lifetime>,
    streams: Vec<i64>,
}

impl Bands {
    /// The band `(address, size, stream, start)` ends at `at` (-1: never).
    fn end(&mut self, (address, size, stream, start): (i64, i64, i64, i64), at: i64) {
        let id = self.lifetimes.len() as i64;
        self.lifetimes.push(band(id, address, size, start, at));
        self.streams.push(stream);
    }
}

fn band(id: i64, address: i64, size: i64, alloc: i64, free: i64) -> Lifetime {
    Lifetime {
        block: id,
        address,
        size,
        alloc,
        free,
        callstack: None,
        state: None,
    }
}
