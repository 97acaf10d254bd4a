//! The `time_us` of trace entries, kept at no cost per event.
//!
//! A time is split in two: its low 32 bits are the event's own
//! [`TraceEvent::time_low`](crate::TraceEvent::time_low), in bytes the 56-byte struct pads
//! anyway, and [`EventTimes`] holds the high 32 bits as runs of trace positions. PyTorch's
//! times are epoch microseconds of one clock, non-decreasing within a device, so a trace is
//! one run, or two where it crosses a multiple of 2^32 µs (every 71.6 minutes); a trace
//! without `time_us` (torch_npu, torch before ~2.2) is no run at all.

use crate::TraceEvent;

/// Which trace entries of one device carry a `time_us`, and the high 32 bits of each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventTimes {
    /// `(first position, high bits)`: from that position up to the next run's, entries have
    /// a time with these high bits, or none (`None`). Positions before the first run have
    /// none; consecutive runs differ, and the first is never `None`. Empty: no entry has a
    /// time.
    runs: Vec<(usize, Option<i32>)>,
}

impl EventTimes {
    /// No entry has a time.
    pub const NONE: EventTimes = EventTimes { runs: Vec::new() };

    /// Whether no entry has a time.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// How many runs there are (what this costs: 16 bytes each).
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// The time of the entry at `position`, which is `event`.
    pub fn get(&self, position: usize, event: &TraceEvent) -> Option<i64> {
        let k = self.runs.partition_point(|r| r.0 <= position);
        let high = k.checked_sub(1).and_then(|k| self.runs[k].1)?;
        Some(join(high, event.time_low))
    }

    /// Every entry's time in trace order; `events` is the device's trace.
    pub fn iter<'a>(&'a self, events: &'a [TraceEvent]) -> impl Iterator<Item = Option<i64>> + 'a {
        let mut next_run = 0;
        let mut high = None;
        events.iter().enumerate().map(move |(position, e)| {
            while let Some(&(start, h)) = self.runs.get(next_run) {
                if start > position {
                    break;
                }
                high = h;
                next_run += 1;
            }
            high.map(|h| join(h, e.time_low))
        })
    }

    /// Gives `events` the times `times` lists (one per event, in order; missing ones are
    /// none): sets each event's low bits and returns the rest. For building snapshots by
    /// hand; the decoder keeps what it reads.
    pub fn assign(events: &mut [TraceEvent], times: &[Option<i64>]) -> EventTimes {
        let mut b = EventTimesBuilder::default();
        for (i, e) in events.iter_mut().enumerate() {
            e.time_low = b.push(times.get(i).copied().flatten());
        }
        b.finish()
    }
}

/// The high and low 32 bits of a time.
pub(crate) fn split(time: i64) -> (i32, u32) {
    ((time >> 32) as i32, time as u32)
}

pub(crate) fn join(high: i32, low: u32) -> i64 {
    (i64::from(high) << 32) | i64::from(low)
}

/// Builds the [`EventTimes`] of a trace one entry at a time.
#[derive(Debug, Default)]
pub struct EventTimesBuilder {
    runs: Vec<(usize, Option<i32>)>,
    len: usize,
}

impl EventTimesBuilder {
    /// The next entry's time; returns the low bits its `time_low` must hold.
    pub fn push(&mut self, time: Option<i64>) -> u32 {
        let (high, low) = match time.map(split) {
            Some((high, low)) => (Some(high), low),
            None => (None, 0),
        };
        self.push_high(high);
        low
    }

    /// The next entry, its low bits already in its event.
    pub fn push_high(&mut self, high: Option<i32>) {
        if high != self.runs.last().and_then(|r| r.1) {
            self.runs.push((self.len, high));
        }
        self.len += 1;
    }

    pub fn finish(self) -> EventTimes {
        EventTimes { runs: self.runs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Action, StackId};

    fn events(n: usize) -> Vec<TraceEvent> {
        let e = TraceEvent {
            action: Action::Alloc,
            addr: 0,
            size: 0,
            stream: 0,
            frames: StackId::EMPTY,
            id: None,
            time_low: 0,
        };
        vec![e; n]
    }

    /// Any times, gaps and signs come back as they went in, by position and in order.
    #[test]
    fn times_round_trip() {
        let cases: Vec<Vec<Option<i64>>> = vec![
            vec![],
            vec![None, None],
            vec![Some(1_757_253_255_215_904), Some(1_757_253_255_215_999)],
            // Crossing a multiple of 2^32 µs, and back (a clock that stepped).
            vec![Some((5 << 32) - 1), Some(5 << 32), Some((5 << 32) - 2)],
            vec![
                None,
                Some(-1),
                Some(i64::MIN),
                None,
                Some(i64::MAX),
                Some(0),
            ],
            vec![Some(7), None, None, Some(7), None],
        ];
        for times in cases {
            let mut ev = events(times.len());
            let t = EventTimes::assign(&mut ev, &times);
            let got: Vec<Option<i64>> = t.iter(&ev).collect();
            assert_eq!(got, times);
            let by_position: Vec<Option<i64>> = (0..ev.len()).map(|p| t.get(p, &ev[p])).collect();
            assert_eq!(by_position, times);
            assert_eq!(t.is_empty(), times.iter().all(Option::is_none));
        }
    }

    #[test]
    fn a_monotone_trace_is_one_run() {
        let times: Vec<Option<i64>> = (0..1000).map(|i| Some(1_700_000_000_000_000 + i)).collect();
        let mut ev = events(times.len());
        assert_eq!(EventTimes::assign(&mut ev, &times).runs(), 1);
        let none = EventTimes::assign(&mut ev, &[]);
        assert!(none.is_empty());
        assert_eq!(none, EventTimes::NONE);
    }
}
