//! The peaks and the timeline from a device's replayed counters, computed by the same rules
//! as the database's answers: `memory_peak` (each counter's maximum over the real events,
//! ties to the lowest id) and `Analyzer::timeline` (the real events cut by the shared
//! [`Downsampler`]), so nothing on screen changes when the database becomes ready. Real
//! events are those with `id >= 0`; the replay's synthetic ones (negative ids) are not.

use pt_snap_import::{Counters, ReplayedDevice};
use pt_snap_query::{Downsampler, Timeline};

use crate::protocol::{DevicePreview, Peak, Peaks};

/// What the replay of one device already tells.
pub fn device_preview(replayed: &ReplayedDevice<'_>, buckets: usize) -> DevicePreview {
    let device = replayed.device as i64;
    let mut peaks = PeakFold::default();
    let mut bounds: Option<(i64, i64)> = None;
    for c in replayed.counters().filter(|c| c.id >= 0) {
        peaks.add(&c);
        bounds = Some(bounds.map_or((c.id, c.id), |(lo, _)| (lo, c.id)));
    }
    let mut timeline = Timeline {
        device_id: device,
        bounds,
        window: None,
        buckets: Vec::new(),
    };
    if let (Some(window), true) = (bounds, buckets > 0) {
        let mut series = Downsampler::new(window, buckets);
        for c in replayed.counters().filter(|c| c.id >= 0) {
            series.push(c.id, c.allocated, c.active, c.reserved);
        }
        timeline.window = Some(window);
        timeline.buckets = series.finish();
    }
    DevicePreview {
        device,
        peaks: peaks.peaks,
        timeline,
    }
}

#[derive(Default)]
struct PeakFold {
    peaks: Peaks,
}

impl PeakFold {
    /// Rows arrive in ascending id order, so the first row reaching a maximum is the one
    /// `MIN(id)` picks among equals.
    fn add(&mut self, c: &Counters) {
        for (peak, v) in [
            (&mut self.peaks.allocated, c.allocated),
            (&mut self.peaks.active, c.active),
            (&mut self.peaks.reserved, c.reserved),
        ] {
            if peak.event_id.is_none() || Some(v) > peak.bytes {
                *peak = Peak {
                    bytes: Some(v),
                    event_id: Some(c.id),
                };
            }
        }
    }
}
