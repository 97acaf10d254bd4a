//! The allocated/active/reserved series of a device, downsampled for drawing: events are cut
//! into at most `buckets` runs of consecutive ids and each run keeps its minimum and maximum
//! of every counter (with the events where they occur), so a peak one event wide still shows
//! at any zoom. One ordered range scan over the trace's primary key, no sort, no temp table:
//! it stays linear for millions of events and cheaper the narrower the window.

use pt_snap_db::rusqlite;
use pt_snap_db::rusqlite::types::ValueRef;
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
    // Below the window the division would truncate towards 0, into the first bucket.
    if id < window.0 {
        return None;
    }
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
        Ok(self.series(req, false)?.1)
    }

    /// [`Analyzer::timeline`] and [`Analyzer::time_timeline`] of the same request, equal to
    /// theirs, from one pass over the device's events and times.
    pub fn timelines(&self, req: &TimelineRequest) -> Result<(Timeline, TimeTimeline), QueryError> {
        let (by_event, by_time) = self.series(req, true)?;
        Ok((by_event.expect("asked for"), by_time))
    }

    fn series(
        &self,
        req: &TimelineRequest,
        ordinal: bool,
    ) -> Result<(Option<Timeline>, TimeTimeline), QueryError> {
        let device = self.resolve_device(req.device)?;
        let db = self.db();
        let failed = |e: rusqlite::Error| self.execution_error(e);
        let mut by_time = TimeTimeline {
            device_id: device,
            unknown: None,
            origin_us: None,
            timed_events: 0,
            span: None,
            buckets: Vec::new(),
        };
        by_time.origin_us = match db.times_available(device).map_err(failed)? {
            Err(why) => {
                by_time.unknown = Some(why);
                None
            }
            Ok(()) => self.first_time(device)?,
        };
        let Some(origin) = by_time.origin_us else {
            // Nothing to place against time.
            let by_event = if ordinal {
                Some(self.timeline(req)?)
            } else {
                None
            };
            return Ok((by_event, by_time));
        };
        let bounds = db.device_bounds(device).map_err(failed)?;
        let mut by_event = Timeline {
            device_id: device,
            bounds,
            window: None,
            buckets: Vec::new(),
        };
        let Some((first, last)) = bounds else {
            return Ok((ordinal.then_some(by_event), by_time));
        };
        let lo = req.start_id.map_or(first, |s| s.max(first));
        let hi = req.end_id.map_or(last, |e| e.min(last));
        if lo > hi {
            return Ok((ordinal.then_some(by_event), by_time));
        }
        let mut events = None;
        if ordinal && req.buckets > 0 {
            by_event.window = Some((lo, hi));
            events = Some(Downsampler::new((lo, hi), req.buckets));
        }
        let since = |t: i64| t.saturating_sub(origin);
        // The buckets divide the window's range of times. In every trace PyTorch writes,
        // that is from its first event's time to its last's: guessed so, checked during the
        // pass, and the time axis drawn again over the range seen if the guess was wrong.
        let guess = self.time_ends(device, lo, hi)?;
        let guessed = guess.map(|(a, b)| (since(a.min(b)), since(a.max(b))));
        let mut times = guessed.map(|span| TimeDownsampler::new(span, req.buckets));
        let mut seen: Option<(i64, i64)> = None;
        let mut count = 0;
        self.merge(device, lo, hi, &mut |event, time| {
            if let (Some((id, [allocated, active, reserved])), Some(events)) =
                (event, events.as_mut())
            {
                events.push(id, allocated, active, reserved);
            }
            let Some(t) = time else { return };
            count += 1;
            seen = Some(seen.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
            if let (Some((id, counters)), Some(times)) = (event, times.as_mut()) {
                times.push(since(t), id, counters);
            }
        })?;
        by_event.buckets = events.map_or_else(Vec::new, Downsampler::finish);
        by_time.timed_events = count;
        let Some((min, max)) = seen else {
            return Ok((ordinal.then_some(by_event), by_time));
        };
        let span = (since(min), since(max));
        by_time.span = Some(span);
        if guessed != Some(span) {
            let mut again = TimeDownsampler::new(span, req.buckets);
            self.merge(device, lo, hi, &mut |event, time| {
                if let (Some((id, counters)), Some(t)) = (event, time) {
                    again.push(since(t), id, counters);
                }
            })?;
            times = Some(again);
        }
        by_time.buckets = times.map_or_else(Vec::new, TimeDownsampler::finish);
        Ok((ordinal.then_some(by_event), by_time))
    }

    /// The `time_us` of `device`'s first real event that has one.
    fn first_time(&self, device: i64) -> Result<Option<i64>, QueryError> {
        let failed = |e: rusqlite::Error| self.execution_error(e);
        let mut stmt = (self.db().conn())
            .prepare(&format!(
                "SELECT time_us FROM pt_snap_x_event_time_{device} WHERE event_id >= 0 \
                 ORDER BY event_id"
            ))
            .map_err(failed)?;
        let mut rows = stmt.query([]).map_err(failed)?;
        while let Some(r) = rows.next().map_err(failed)? {
            if let Some(t) = integer(r.get_ref(0).map_err(failed)?) {
                return Ok(Some(t));
            }
        }
        Ok(None)
    }

    /// The times of the first and the last event of the window that have a row, when both
    /// are integers.
    fn time_ends(&self, device: i64, lo: i64, hi: i64) -> Result<Option<(i64, i64)>, QueryError> {
        let failed = |e: rusqlite::Error| self.execution_error(e);
        let end = |order: &str| -> Result<Option<i64>, QueryError> {
            let sql = format!(
                "SELECT time_us FROM pt_snap_x_event_time_{device} \
                 WHERE event_id >= ?1 AND event_id <= ?2 ORDER BY event_id {order} LIMIT 1"
            );
            let mut stmt = self.db().conn().prepare(&sql).map_err(failed)?;
            let mut rows = stmt.query([lo, hi]).map_err(failed)?;
            Ok(match rows.next().map_err(failed)? {
                Some(r) => integer(r.get_ref(0).map_err(failed)?),
                None => None,
            })
        };
        Ok(end("ASC")?.zip(end("DESC")?))
    }

    /// Steps `device`'s trace and its time table side by side over the ids `lo..=hi`, both in
    /// id order (two scans instead of a lookup per event): `visit` gets each event's id and
    /// counters (one the trace did not record counts as zero, as in the other timeline) with
    /// its time, and `None` with the time of a row no event of the window has. A value that
    /// is no integer (a hand-made file) is no time: checked on the values read, since
    /// `typeof()` on every row in SQL costs more than the scan.
    fn merge(
        &self,
        device: i64,
        lo: i64,
        hi: i64,
        visit: &mut dyn FnMut(Option<Event>, Option<i64>),
    ) -> Result<(), QueryError> {
        let conn = self.db().conn();
        let failed = |e: rusqlite::Error| self.execution_error(e);
        let mut trace = conn
            .prepare(&format!(
                "SELECT id, allocated, active, reserved FROM trace_entry_{device} \
                 WHERE id >= ?1 AND id <= ?2 ORDER BY id"
            ))
            .map_err(failed)?;
        let mut timed = conn
            .prepare(&format!(
                "SELECT event_id, time_us FROM pt_snap_x_event_time_{device} \
                 WHERE event_id >= ?1 AND event_id <= ?2 ORDER BY event_id"
            ))
            .map_err(failed)?;
        let mut events = trace.query([lo, hi]).map_err(failed)?;
        let mut stamps = timed.query([lo, hi]).map_err(failed)?;
        let mut next_stamp = || -> Result<Option<(i64, Option<i64>)>, QueryError> {
            let Some(s) = stamps.next().map_err(failed)? else {
                return Ok(None);
            };
            let id = s.get(0).map_err(failed)?;
            Ok(Some((id, integer(s.get_ref(1).map_err(failed)?))))
        };
        let mut stamp = next_stamp()?;
        while let Some(e) = events.next().map_err(failed)? {
            let id: i64 = e.get(0).map_err(failed)?;
            let value = |i: usize| -> Result<i64, QueryError> {
                Ok(e.get::<_, Option<i64>>(i).map_err(failed)?.unwrap_or(0))
            };
            let counters = [value(1)?, value(2)?, value(3)?];
            let mut time = None;
            while let Some((at, t)) = stamp {
                if at > id {
                    break;
                }
                match (at == id, t) {
                    (true, t) => time = t,
                    (false, Some(t)) => visit(None, Some(t)),
                    (false, None) => {}
                }
                stamp = next_stamp()?;
            }
            visit(Some((id, counters)), time);
        }
        while let Some((_, t)) = stamp {
            if t.is_some() {
                visit(None, t);
            }
            stamp = next_stamp()?;
        }
        Ok(())
    }
}

/// An event's id and its allocated, active and reserved counters.
type Event = (i64, [i64; 3]);

fn integer(v: ValueRef<'_>) -> Option<i64> {
    match v {
        ValueRef::Integer(t) => Some(t),
        _ => None,
    }
}
