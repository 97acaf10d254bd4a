//! The allocated/active/reserved series of a device, downsampled for drawing: events are cut
//! into at most `buckets` runs of consecutive ids and each run keeps its minimum and maximum
//! of every counter (with the events where they occur), so a peak one event wide still shows
//! at any zoom. One ordered range scan over the trace's primary key, no sort, no temp table:
//! it stays linear for millions of events and cheaper the narrower the window.

use pt_snap_db::rusqlite;
use serde::{Deserialize, Serialize};

use crate::engine::Analyzer;
use crate::error::QueryError;

/// What to draw: a device, an id window (clamped to the device's real events) and the most
/// buckets wanted (typically the plot's width in pixels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimelineRequest {
    /// `None`: the lowest device id.
    pub device: Option<i64>,
    pub start_id: Option<i64>,
    pub end_id: Option<i64>,
    pub buckets: usize,
}

impl TimelineRequest {
    pub fn new(buckets: usize) -> Self {
        TimelineRequest {
            device: None,
            start_id: None,
            end_id: None,
            buckets,
        }
    }
}

/// A counter's extremes within a bucket; ties go to the earliest event, as `memory_peak`'s do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extent {
    pub min: i64,
    pub min_id: i64,
    pub max: i64,
    pub max_id: i64,
}

impl Extent {
    fn new(id: i64, v: i64) -> Self {
        Extent {
            min: v,
            min_id: id,
            max: v,
            max_id: id,
        }
    }

    fn add(&mut self, id: i64, v: i64) {
        if v < self.min {
            self.min = v;
            self.min_id = id;
        }
        if v > self.max {
            self.max = v;
            self.max_id = id;
        }
    }

    /// The extremes in event order: the points a polyline through this bucket visits.
    pub fn in_order(&self) -> [(i64, i64); 2] {
        if self.min_id <= self.max_id {
            [(self.min_id, self.min), (self.max_id, self.max)]
        } else {
            [(self.max_id, self.max), (self.min_id, self.min)]
        }
    }
}

/// A run of consecutive events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineBucket {
    pub first_id: i64,
    pub last_id: i64,
    pub events: i64,
    pub allocated: Extent,
    pub active: Extent,
    pub reserved: Extent,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    pub device_id: i64,
    /// The device's real events (`id >= 0`), whatever the window; `None` when it has none.
    pub bounds: Option<(i64, i64)>,
    /// The window drawn after clamping to `bounds`; `None` when nothing falls in it.
    pub window: Option<(i64, i64)>,
    /// Non-empty buckets in id order; never more than requested.
    pub buckets: Vec<TimelineBucket>,
}

impl Analyzer {
    /// The downsampled counter series of one device over a window of real event ids.
    pub fn timeline(&self, req: &TimelineRequest) -> Result<Timeline, QueryError> {
        let device = self.resolve_device(req.device)?;
        let conn = self.db().conn();
        let failed = |e: rusqlite::Error| self.execution_error(e);
        let table = format!("trace_entry_{device}");
        let bounds = self.db().device_bounds(device).map_err(failed)?;
        let mut out = Timeline {
            device_id: device,
            bounds: None,
            window: None,
            buckets: Vec::new(),
        };
        let Some((first, last)) = bounds else {
            return Ok(out);
        };
        out.bounds = Some((first, last));
        let lo = req.start_id.map_or(first, |s| s.max(first));
        let hi = req.end_id.map_or(last, |e| e.min(last));
        if lo > hi || req.buckets == 0 {
            return Ok(out);
        }
        out.window = Some((lo, hi));
        let mut stmt = conn
            .prepare(&format!(
                "SELECT id, allocated, active, reserved FROM {table} \
                 WHERE id >= ?1 AND id <= ?2 ORDER BY id"
            ))
            .map_err(failed)?;
        let mut rows = stmt.query([lo, hi]).map_err(failed)?;
        let mut series = Downsampler::new((lo, hi), req.buckets);
        while let Some(r) = rows.next().map_err(failed)? {
            // A counter the trace did not record counts as zero, as the charts of the
            // reference's viewer draw it.
            let value = |i: usize| -> Result<i64, QueryError> {
                Ok(r.get::<_, Option<i64>>(i).map_err(failed)?.unwrap_or(0))
            };
            series.push(r.get(0).map_err(failed)?, value(1)?, value(2)?, value(3)?);
        }
        out.buckets = series.finish();
        Ok(out)
    }
}

/// The bucket of event `id` when `buckets` divide the inclusive `window` evenly, as
/// [`Downsampler`] divides it; `None` outside the window.
pub fn bucket_index(window: (i64, i64), buckets: usize, id: i64) -> Option<usize> {
    let span = (window.1 as i128 - window.0 as i128 + 1).max(1);
    let index = (id as i128 - window.0 as i128) * buckets as i128 / span;
    (0..buckets as i128)
        .contains(&index)
        .then_some(index as usize)
}

/// Cuts a series of events, given in ascending id order, into at most `buckets` runs of
/// consecutive ids over a window. The database's timeline reads its rows through this, and
/// the browser's import feeds it the replay's counters before any row is written, so the
/// picture shown first is the one the database draws later.
#[derive(Debug, Clone)]
pub struct Downsampler {
    window: (i64, i64),
    n: usize,
    current: Option<(usize, TimelineBucket)>,
    buckets: Vec<TimelineBucket>,
}

impl Downsampler {
    /// `window`: the inclusive id range the buckets divide (events outside it are ignored).
    pub fn new(window: (i64, i64), buckets: usize) -> Self {
        Downsampler {
            window,
            n: buckets,
            current: None,
            buckets: Vec::new(),
        }
    }

    /// The next event, in ascending id order, with its three counters.
    pub fn push(&mut self, id: i64, allocated: i64, active: i64, reserved: i64) {
        let Some(index) = bucket_index(self.window, self.n, id) else {
            return;
        };
        match &mut self.current {
            Some((i, b)) if *i == index => {
                b.last_id = id;
                b.events += 1;
                b.allocated.add(id, allocated);
                b.active.add(id, active);
                b.reserved.add(id, reserved);
            }
            slot => {
                if let Some((_, done)) = slot.take() {
                    self.buckets.push(done);
                }
                *slot = Some((
                    index,
                    TimelineBucket {
                        first_id: id,
                        last_id: id,
                        events: 1,
                        allocated: Extent::new(id, allocated),
                        active: Extent::new(id, active),
                        reserved: Extent::new(id, reserved),
                    },
                ));
            }
        }
    }

    /// The non-empty buckets in id order.
    pub fn finish(mut self) -> Vec<TimelineBucket> {
        self.buckets.extend(self.current.map(|(_, b)| b));
        self.buckets
    }
}
