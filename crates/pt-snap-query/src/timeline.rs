//! The allocated/active/reserved series of a device, downsampled for drawing: events are cut
//! into at most `buckets` runs of consecutive ids and each run keeps its minimum and maximum
//! of every counter (with the events where they occur), so a peak one event wide still shows
//! at any zoom. One ordered range scan over the trace's primary key, no sort, no temp table:
//! it stays linear for millions of events and cheaper the narrower the window.

use pt_snap_db::rusqlite::{self, OptionalExtension};
use pt_snap_db::NoTimes;
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

/// A device's counters against time: microseconds since its first real event's `time_us`
/// (the first real event that has one, should the very first have none), cut into at most
/// `buckets` equal spans of time over the window's times, each keeping every counter's
/// minimum and maximum with where (when, and at which event) they occur. Only events with a
/// time are placed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeTimeline {
    pub device_id: i64,
    /// Why the device has no time axis; `None` when it has one.
    pub unknown: Option<NoTimes>,
    /// The `time_us` that is time 0.
    pub origin_us: Option<i64>,
    /// Events of the window with a time.
    pub timed_events: i64,
    /// The earliest and latest time of the window's events, in µs since the origin; `None`
    /// when none has a time.
    pub span: Option<(i64, i64)>,
    /// Non-empty buckets in time order; never more than requested.
    pub buckets: Vec<TimeBucket>,
}

/// A span of time: the events whose time falls in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeBucket {
    /// The earliest and latest time of its events, µs since the origin.
    pub first_us: i64,
    pub last_us: i64,
    pub events: i64,
    pub allocated: TimeExtent,
    pub active: TimeExtent,
    pub reserved: TimeExtent,
}

/// A counter's extremes within a time bucket: value, time (µs since the origin) and event;
/// ties go to the earliest time, then the lowest event id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeExtent {
    pub min: i64,
    pub min_us: i64,
    pub min_id: i64,
    pub max: i64,
    pub max_us: i64,
    pub max_id: i64,
}

impl TimeExtent {
    fn new(us: i64, id: i64, v: i64) -> Self {
        TimeExtent {
            min: v,
            min_us: us,
            min_id: id,
            max: v,
            max_us: us,
            max_id: id,
        }
    }

    fn merge(&mut self, o: &TimeExtent) {
        if (o.min, o.min_us, o.min_id) < (self.min, self.min_us, self.min_id) {
            (self.min, self.min_us, self.min_id) = (o.min, o.min_us, o.min_id);
        }
        let later = |v: i64, us: i64, id: i64| (v, std::cmp::Reverse((us, id)));
        if later(o.max, o.max_us, o.max_id) > later(self.max, self.max_us, self.max_id) {
            (self.max, self.max_us, self.max_id) = (o.max, o.max_us, o.max_id);
        }
    }
}

impl TimeBucket {
    fn new(us: i64, id: i64, counters: [i64; 3]) -> Self {
        let [allocated, active, reserved] = counters;
        TimeBucket {
            first_us: us,
            last_us: us,
            events: 1,
            allocated: TimeExtent::new(us, id, allocated),
            active: TimeExtent::new(us, id, active),
            reserved: TimeExtent::new(us, id, reserved),
        }
    }

    fn merge(&mut self, o: &TimeBucket) {
        self.first_us = self.first_us.min(o.first_us);
        self.last_us = self.last_us.max(o.last_us);
        self.events += o.events;
        self.allocated.merge(&o.allocated);
        self.active.merge(&o.active);
        self.reserved.merge(&o.reserved);
    }
}

/// Cuts events into at most `buckets` equal spans of time. Events come in id order, which is
/// time order in every trace PyTorch writes; an event earlier than the one before it (a
/// clock that stepped back, a hand-made file) is merged into the bucket of its time, so the
/// answer never depends on the order.
#[derive(Debug, Clone)]
pub struct TimeDownsampler {
    lo: i64,
    span: i128,
    n: i128,
    current: Option<(i128, TimeBucket)>,
    /// Finished buckets by index, ascending.
    done: Vec<(i128, TimeBucket)>,
}

impl TimeDownsampler {
    /// `span`: the inclusive range of times (µs since the origin) the buckets divide.
    pub fn new(span: (i64, i64), buckets: usize) -> Self {
        TimeDownsampler {
            lo: span.0,
            span: (span.1 as i128 - span.0 as i128 + 1).max(1),
            n: buckets as i128,
            current: None,
            done: Vec::new(),
        }
    }

    /// One event: its time (µs since the origin), id and the three counters.
    pub fn push(&mut self, us: i64, id: i64, counters: [i64; 3]) {
        let index = (us as i128 - self.lo as i128) * self.n / self.span;
        if index < 0 || index >= self.n {
            return;
        }
        let one = TimeBucket::new(us, id, counters);
        match &mut self.current {
            Some((i, b)) if *i == index => b.merge(&one),
            _ => {
                if let Some(finished) = self.current.replace((index, one)) {
                    self.file(finished);
                }
            }
        }
    }

    fn file(&mut self, (index, bucket): (i128, TimeBucket)) {
        match self.done.last() {
            Some((last, _)) if *last >= index => {
                match self.done.binary_search_by_key(&index, |(i, _)| *i) {
                    Ok(at) => self.done[at].1.merge(&bucket),
                    Err(at) => self.done.insert(at, (index, bucket)),
                }
            }
            _ => self.done.push((index, bucket)),
        }
    }

    /// The non-empty buckets in time order.
    pub fn finish(mut self) -> Vec<TimeBucket> {
        if let Some(last) = self.current.take() {
            self.file(last);
        }
        self.done.into_iter().map(|(_, b)| b).collect()
    }
}

impl Analyzer {
    /// The counter series of one device against time, over a window of real event ids (as
    /// [`Analyzer::timeline`]'s), from `pt_snap_x_event_time_<d>`: the origin is the time of
    /// the device's first real event with one, whatever the window.
    pub fn time_timeline(&self, req: &TimelineRequest) -> Result<TimeTimeline, QueryError> {
        let device = self.resolve_device(req.device)?;
        let db = self.db();
        let conn = db.conn();
        let failed = |e: rusqlite::Error| self.execution_error(e);
        let mut out = TimeTimeline {
            device_id: device,
            unknown: None,
            origin_us: None,
            timed_events: 0,
            span: None,
            buckets: Vec::new(),
        };
        if let Err(why) = db.times_available(device).map_err(failed)? {
            out.unknown = Some(why);
            return Ok(out);
        }
        let times = format!("pt_snap_x_event_time_{device}");
        // A value that is no integer (a hand-made file) is no time.
        let is_time = "typeof(time_us) = 'integer'";
        out.origin_us = conn
            .query_row(
                &format!(
                    "SELECT time_us FROM {times} WHERE event_id >= 0 AND {is_time} \
                     ORDER BY event_id LIMIT 1"
                ),
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(failed)?;
        let (Some(origin), Some((first, last))) =
            (out.origin_us, db.device_bounds(device).map_err(failed)?)
        else {
            return Ok(out);
        };
        let lo = req.start_id.map_or(first, |s| s.max(first));
        let hi = req.end_id.map_or(last, |e| e.min(last));
        if lo > hi {
            return Ok(out);
        }
        let since = |t: i64| t.saturating_sub(origin);
        let (min, max, count): (Option<i64>, Option<i64>, i64) = conn
            .query_row(
                &format!(
                    "SELECT min(time_us), max(time_us), count(*) FROM {times} \
                     WHERE event_id >= ?1 AND event_id <= ?2 AND {is_time}"
                ),
                [lo, hi],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(failed)?;
        out.timed_events = count;
        let (Some(min), Some(max)) = (min, max) else {
            return Ok(out);
        };
        let span = (since(min), since(max));
        out.span = Some(span);
        if req.buckets == 0 {
            return Ok(out);
        }
        // Both tables in id order, side by side: two scans instead of a lookup per event.
        let mut trace = conn
            .prepare(&format!(
                "SELECT id, allocated, active, reserved FROM trace_entry_{device} \
                 WHERE id >= ?1 AND id <= ?2 ORDER BY id"
            ))
            .map_err(failed)?;
        let mut timed = conn
            .prepare(&format!(
                "SELECT event_id, time_us FROM {times} \
                 WHERE event_id >= ?1 AND event_id <= ?2 AND {is_time} ORDER BY event_id"
            ))
            .map_err(failed)?;
        let mut events = trace.query([lo, hi]).map_err(failed)?;
        let mut stamps = timed.query([lo, hi]).map_err(failed)?;
        let mut series = TimeDownsampler::new(span, req.buckets);
        // A counter the trace did not record counts as zero, as in the other timeline.
        let mut next_event = || -> Result<Option<(i64, [i64; 3])>, QueryError> {
            let Some(e) = events.next().map_err(failed)? else {
                return Ok(None);
            };
            let value = |i: usize| -> Result<i64, QueryError> {
                Ok(e.get::<_, Option<i64>>(i).map_err(failed)?.unwrap_or(0))
            };
            Ok(Some((
                e.get(0).map_err(failed)?,
                [value(1)?, value(2)?, value(3)?],
            )))
        };
        let mut event = next_event()?;
        while let Some(s) = stamps.next().map_err(failed)? {
            let (id, time): (i64, i64) = (s.get(0).map_err(failed)?, s.get(1).map_err(failed)?);
            while event.is_some_and(|(e, _)| e < id) {
                event = next_event()?;
            }
            match event {
                Some((e, counters)) if e == id => series.push(since(time), id, counters),
                Some(_) => {}
                None => break,
            }
        }
        out.buckets = series.finish();
        Ok(out)
    }
}
