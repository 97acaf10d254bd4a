//! `pt-snap diff` (issue 14): what changed between two runs. For each side, the three peaks
//! and what was live at the chosen metric's peak — the `report peak-memory` composition with
//! every group kept — regrouped by a call stack normalised so that the same code matches
//! across machines ([`crate::stack`]); the two sides' groups matched by that key; and both
//! counter timelines on shared axes: the event ordinal, and the time since each side's first
//! event where the databases keep the trace's `time_us`.
//!
//! [`measure`] asks one [`Source`] (plus the timelines the caller draws, as a timeline is
//! not a template); [`Diff::new`] compares two measured sides and is pure, so the browser
//! can measure each file in its own worker and compare on the page.
//!
//! Totals: each side's groups together hold every block live at its peak event, so
//! `Σ bytes_a = total_a` is the *active* counter at A's chosen peak event (exactly
//! `peak_active` for the active metric). For `allocated` and `reserved` that event's active
//! counter differs from the metric's peak by the allocator's accounting: active includes
//! blocks freed but not yet reusable (`active_pending_free`), and reserved includes cached
//! free memory no block holds. Both figures are reported, as `report peak-memory` reports
//! `active_bytes_at_event` beside the peaks; a database whose groups do not add up to the
//! counter (a lenient replay, a hand-made file) shows the shortfall as `unattributed_bytes`.

mod page;

use std::collections::BTreeMap;

use pt_snap_query::{NoTimes, QueryError, Source, TimeTimeline, Timeline};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as Json};

use crate::peak::{peak_memory, Metric, PeakRequest, Peaks};
pub use crate::stack::{normalize_path, normalize_stack, parse_line, Frame};
use crate::units::{grouped, human_bytes, seconds, signed_human_bytes};
pub use page::PageData;

/// Timeline buckets per side on the page: about one per pixel of its chart.
pub const PAGE_BUCKETS: usize = 800;

/// What to compare: the device (the lowest when `None`) and the peak to explain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffRequest {
    pub device: Option<i64>,
    pub metric: Metric,
}

/// How live blocks are matched across the two runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum By {
    /// By allocation site ([`crate::stack::label`]: the user's innermost frame, then the
    /// torch call): stacks that differ only in depth or in frames outside the user's code
    /// (another launcher, another Python) are one site.
    #[default]
    Site,
    /// By the whole normalised stack.
    Stack,
}

impl By {
    pub fn name(self) -> &'static str {
        match self {
            By::Site => "site",
            By::Stack => "stack",
        }
    }
}

/// What a group of live blocks is matched by across the two runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum StackKey {
    /// Allocated during the trace at this normalised stack, outermost caller first.
    Frames(Vec<Frame>),
    /// Allocated during the trace at this site ([`By::Site`]): every stack with this label.
    Site(String),
    /// Live before recording started and never freed in the trace: no stack.
    Static,
    /// Live before recording started, freed later in the trace: no stack.
    Preexisting,
    /// Allocated during the trace, but its stack is empty or missing.
    Missing,
}

impl StackKey {
    /// `stack`, or the attribution's category of memory without a stack.
    pub fn kind(&self) -> &'static str {
        match self {
            StackKey::Frames(_) => "stack",
            StackKey::Site(_) => "site",
            StackKey::Static => "static",
            StackKey::Preexisting => "preexisting_live_at_event",
            StackKey::Missing => "missing_callstack",
        }
    }

    pub fn frames(&self) -> &[Frame] {
        match self {
            StackKey::Frames(f) => f,
            _ => &[],
        }
    }

    /// One line per frame, outermost first; a bracketed name for memory without a stack.
    pub fn text(&self) -> String {
        match self {
            StackKey::Frames(f) => f.iter().map(Frame::label).collect::<Vec<_>>().join("\n"),
            StackKey::Site(label) => label.clone(),
            StackKey::Static => "[static]".into(),
            StackKey::Preexisting => "[preexisting live]".into(),
            StackKey::Missing => "[missing callstack]".into(),
        }
    }

    /// Where the memory was allocated, in one line ([`crate::stack::label`]): the user's
    /// innermost frame and the torch call below it; a bracketed name for memory without a
    /// stack.
    pub fn site(&self) -> String {
        crate::stack::label(self.frames()).unwrap_or_else(|| self.text())
    }

    /// Memory without a stack: static, preexisting or with its stack missing.
    pub fn is_stackless(&self) -> bool {
        matches!(
            self,
            StackKey::Static | StackKey::Preexisting | StackKey::Missing
        )
    }

    /// The key a group of this stack is matched by under `by`.
    pub fn matched_by(&self, by: By) -> StackKey {
        match (by, self) {
            (By::Site, StackKey::Frames(_)) => StackKey::Site(self.site()),
            _ => self.clone(),
        }
    }
}

/// Blocks live at a peak: their bytes and how many.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Live {
    pub bytes: i64,
    pub blocks: i64,
}

/// One side measured: its peaks, what was live at its chosen peak, its timeline. It
/// crosses from a browser worker to the page, where [`Diff::new`] compares two.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub device_id: i64,
    pub metric: Metric,
    /// `None` when the device has no real event.
    pub peaks: Option<Peaks>,
    /// The chosen metric's peak event.
    pub event_id: Option<i64>,
    /// The active counter at `event_id`: what the groups must add up to.
    pub live_bytes_at_peak: Option<i64>,
    /// Every live block at `event_id`, by normalised stack.
    #[serde(with = "pairs")]
    pub groups: BTreeMap<StackKey, Live>,
    /// The metric's counter by event ordinal.
    pub timeline: Timeline,
    /// The same against time since the side's first event (or why there is none).
    pub time_timeline: TimeTimeline,
    /// When `event_id` was recorded: its `time_us`.
    pub peak_time_us: Option<i64>,
}

/// A side's two timelines, as the caller draws them for the device the composition
/// resolved (`Analyzer::timeline` and `Analyzer::time_timeline`).
#[derive(Debug, Clone)]
pub struct Timelines {
    pub by_event: Timeline,
    pub by_time: TimeTimeline,
}

impl Side {
    pub fn metric_peak_bytes(&self) -> Option<i64> {
        self.peaks.and_then(|p| p.get(self.metric).bytes)
    }

    /// Σ bytes over the groups: `total_a` / `total_b`.
    pub fn total(&self) -> i64 {
        self.groups.values().map(|l| l.bytes).sum()
    }

    pub fn blocks(&self) -> i64 {
        self.groups.values().map(|l| l.blocks).sum()
    }

    /// The active counter at the peak minus what the groups hold: 0 when every live byte
    /// is attributed.
    pub fn unattributed_bytes(&self) -> Option<i64> {
        self.live_bytes_at_peak.map(|live| live - self.total())
    }

    /// Real events in the timeline's window (the whole trace).
    pub fn events(&self) -> i64 {
        self.timeline.buckets.iter().map(|b| b.events).sum()
    }

    /// The first real event: ordinal 0 on the shared axis.
    fn first_event(&self) -> Option<i64> {
        self.timeline.bounds.map(|b| b.0)
    }

    /// Why the side has no time axis; `None` when it has one.
    pub fn no_times(&self) -> Option<NoTimes> {
        self.time_timeline.unknown
    }

    /// The peak on the time axis: µs since the side's first event.
    pub fn peak_us(&self) -> Option<i64> {
        let (peak, origin) = self.peak_time_us.zip(self.time_timeline.origin_us)?;
        Some(peak.saturating_sub(origin))
    }
}

/// A map keyed by stacks as a list of `[key, value]` pairs: JSON keys are strings only.
mod pairs {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<K: Serialize, V: Serialize, S: Serializer>(
        map: &BTreeMap<K, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(map)
    }

    pub fn deserialize<
        'de,
        K: Deserialize<'de> + Ord,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    >(
        d: D,
    ) -> Result<BTreeMap<K, V>, D::Error> {
        Ok(Vec::<(K, V)>::deserialize(d)?.into_iter().collect())
    }
}

/// Measures one side: the `report peak-memory` composition on `source` with every group
/// kept (static and preexisting included), regrouped by normalised stack, the peak event's
/// time ([`Source::event_times`]), and the timelines `timelines` draws for the device the
/// composition resolved.
pub fn measure(
    source: &dyn Source,
    req: &DiffRequest,
    timelines: impl FnOnce(i64) -> Result<Timelines, QueryError>,
) -> Result<Side, QueryError> {
    let report = peak_memory(source, &PeakRequest::every_group(req.device, req.metric))?;
    if report.has_more || report.truncated {
        return Err(QueryError::Failed(
            "the attribution at the peak came back incomplete, so its groups cannot be compared"
                .into(),
        ));
    }
    let mut groups: BTreeMap<StackKey, Live> = BTreeMap::new();
    for group in report.groups() {
        let key = match group.stack_kind.unwrap_or(group.category) {
            "static" => StackKey::Static,
            "preexisting_live_at_event" => StackKey::Preexisting,
            "missing" => StackKey::Missing,
            _ if group.callstack.is_empty() => StackKey::Missing,
            _ => StackKey::Frames(normalize_stack(group.callstack)),
        };
        let live = groups.entry(key).or_default();
        live.bytes += group.size_bytes;
        live.blocks += group.block_count;
    }
    let peak_time_us = match report.event_id {
        Some(event) => match source.event_times(report.device_id, &[event])? {
            Ok(times) => times.first().copied().flatten(),
            Err(_) => None,
        },
        None => None,
    };
    let Timelines { by_event, by_time } = timelines(report.device_id)?;
    Ok(Side {
        device_id: report.device_id,
        metric: req.metric,
        peaks: report.peak,
        event_id: report.event_id,
        live_bytes_at_peak: report.active_bytes_at_event,
        groups,
        timeline: by_event,
        time_timeline: by_time,
        peak_time_us,
    })
}

/// How a group changed from A to B.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Only in B.
    New,
    /// Only in A.
    Gone,
    /// In both, with other bytes or another block count.
    Changed,
    /// In both, the same bytes and blocks.
    Same,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::New => "new",
            Status::Gone => "gone",
            Status::Changed => "changed",
            Status::Same => "same",
        }
    }
}

/// One normalised stack on both sides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDiff {
    pub key: StackKey,
    pub a: Live,
    pub b: Live,
}

impl GroupDiff {
    pub fn delta(&self) -> i64 {
        self.b.bytes - self.a.bytes
    }

    pub fn status(&self) -> Status {
        match (self.a.blocks, self.b.blocks) {
            (0, _) => Status::New,
            (_, 0) => Status::Gone,
            _ if self.a == self.b => Status::Same,
            _ => Status::Changed,
        }
    }
}

/// Two sides compared.
#[derive(Debug, Clone)]
pub struct Diff {
    pub metric: Metric,
    /// What the groups are matched by.
    pub by: By,
    pub a: Side,
    pub b: Side,
    /// Every group of either side, matched [`Diff::by`], by |delta| (then the larger side,
    /// then the key).
    pub groups: Vec<GroupDiff>,
    /// The same blocks by whole normalised stack, in the same order: what the differential
    /// flamegraph draws, frame by frame, whatever the groups are matched by.
    pub stacks: Vec<GroupDiff>,
}

/// Both sides' groups merged by `key`, by |delta| (then the larger side, then the key:
/// BTreeMap order breaks the remaining ties, so the order is deterministic).
fn merged(a: &Side, b: &Side, key: impl Fn(&StackKey) -> StackKey) -> Vec<GroupDiff> {
    let mut merged: BTreeMap<StackKey, GroupDiff> = BTreeMap::new();
    for (side, groups) in [(0, &a.groups), (1, &b.groups)] {
        for (stack, live) in groups {
            let k = key(stack);
            let g = merged.entry(k.clone()).or_insert_with(|| GroupDiff {
                key: k,
                a: Live::default(),
                b: Live::default(),
            });
            let total = if side == 0 { &mut g.a } else { &mut g.b };
            total.bytes += live.bytes;
            total.blocks += live.blocks;
        }
    }
    let mut groups: Vec<GroupDiff> = merged.into_values().collect();
    groups.sort_by_key(|g| {
        (
            std::cmp::Reverse(g.delta().unsigned_abs()),
            std::cmp::Reverse(g.a.bytes.max(g.b.bytes)),
        )
    });
    groups
}

impl Diff {
    /// Both sides must have been measured for the same metric.
    pub fn new(a: Side, b: Side, by: By) -> Diff {
        assert_eq!(
            a.metric, b.metric,
            "both sides of a diff explain the same peak"
        );
        let groups = merged(&a, &b, |k| k.matched_by(by));
        let stacks = merged(&a, &b, StackKey::clone);
        Diff {
            metric: a.metric,
            by,
            a,
            b,
            groups,
            stacks,
        }
    }

    pub fn total_a(&self) -> i64 {
        self.a.total()
    }

    pub fn total_b(&self) -> i64 {
        self.b.total()
    }

    /// The site of the largest group (on either side) allocated during the trace with a
    /// stack: named beside memory without one, so a row is never just `[static]`.
    pub fn largest_dynamic_site(&self) -> Option<String> {
        (self.groups.iter())
            .filter(|g| !g.key.is_stackless())
            .max_by_key(|g| (g.a.bytes.max(g.b.bytes), std::cmp::Reverse(g.key.clone())))
            .map(|g| g.key.site())
    }

    fn count(&self, status: Status) -> usize {
        self.groups.iter().filter(|g| g.status() == status).count()
    }

    /// `limit` groups, all when `None`.
    fn shown(&self, limit: Option<usize>) -> &[GroupDiff] {
        &self.groups[..limit.map_or(self.groups.len(), |n| n.min(self.groups.len()))]
    }

    /// `--json` (no envelope): `metric`, `a`, `b`, `peaks`, `groups` (the first `limit`),
    /// `group_counts`, `total_a`, `total_b`, `total_delta`, `timelines`. `inputs` are the
    /// caller's fields about each side (paths, import), put first in `a` and `b`.
    pub fn to_json(
        &self,
        limit: Option<usize>,
        inputs: [&Map<String, Json>; 2],
    ) -> Vec<(&'static str, Json)> {
        let peaks = {
            let of = |s: &Side| s.peaks.map_or(json!({}), |p| p.to_json());
            let mut delta = Map::new();
            let mut percent = Map::new();
            for m in [Metric::Allocated, Metric::Active, Metric::Reserved] {
                let (a, b) = (peak_bytes(&self.a, m), peak_bytes(&self.b, m));
                delta.insert(m.name().into(), json!(a.zip(b).map(|(a, b)| b - a)));
                percent.insert(
                    m.name().into(),
                    json!(a.zip(b).and_then(|(a, b)| change_percent(a, b))),
                );
            }
            json!({"a": of(&self.a), "b": of(&self.b), "delta": delta, "delta_percent": percent})
        };
        let dynamic = self.largest_dynamic_site();
        let groups: Vec<Json> = (self.shown(limit).iter())
            .map(|g| group_json(g, dynamic.as_deref()))
            .collect();
        let (ta, tb) = (self.total_a(), self.total_b());
        vec![
            ("metric", json!(self.metric.name())),
            ("by", json!(self.by.name())),
            ("a", self.side_json(&self.a, inputs[0])),
            ("b", self.side_json(&self.b, inputs[1])),
            ("peaks", peaks),
            ("groups", Json::Array(groups)),
            (
                "group_counts",
                json!({
                    "total": self.groups.len(),
                    "returned": self.shown(limit).len(),
                    "new": self.count(Status::New),
                    "gone": self.count(Status::Gone),
                    "changed": self.count(Status::Changed),
                    "same": self.count(Status::Same),
                }),
            ),
            ("total_a", json!(ta)),
            ("total_b", json!(tb)),
            ("total_delta", json!(tb - ta)),
            ("total_delta_percent", json!(change_percent(ta, tb))),
            ("timelines", self.timelines_json()),
        ]
    }

    fn side_json(&self, side: &Side, input: &Map<String, Json>) -> Json {
        let mut out = input.clone();
        let fields = [
            ("device_id", json!(side.device_id)),
            ("events", json!(side.events())),
            ("peak_event_id", json!(side.event_id)),
            ("metric_peak_bytes", json!(side.metric_peak_bytes())),
            ("live_bytes_at_peak", json!(side.live_bytes_at_peak)),
            ("live_blocks_at_peak", json!(side.blocks())),
            ("groups_bytes", json!(side.total())),
            ("unattributed_bytes", json!(side.unattributed_bytes())),
            (
                "metric_minus_live_bytes",
                json!(side
                    .metric_peak_bytes()
                    .zip(side.live_bytes_at_peak)
                    .map(|(m, l)| m - l)),
            ),
            ("groups", json!(side.groups.len())),
        ];
        for (k, v) in fields {
            out.insert(k.into(), v);
        }
        Json::Object(out)
    }

    /// Both counter series of the metric on shared axes: ordinal = event id − the side's
    /// first real event id (`a`, `b`), and µs since the side's first event (`time_axis`).
    /// Buckets keep each one's minimum and maximum and where they occur.
    fn timelines_json(&self) -> Json {
        let series = |s: &Side| {
            let first = s.first_event();
            let ord = |id: i64| first.map(|f| id - f);
            let buckets: Vec<Json> = s
                .timeline
                .buckets
                .iter()
                .map(|b| {
                    let e = extent(b, self.metric);
                    json!({
                        "first": ord(b.first_id),
                        "last": ord(b.last_id),
                        "min": e.min,
                        "min_at": ord(e.min_id),
                        "max": e.max,
                        "max_at": ord(e.max_id),
                    })
                })
                .collect();
            json!({
                "first_event_id": s.timeline.bounds.map(|b| b.0),
                "last_event_id": s.timeline.bounds.map(|b| b.1),
                "events": s.events(),
                "peak_ordinal": s.event_id.and_then(ord),
                "buckets": buckets,
            })
        };
        let by_time = |s: &Side| {
            let t = &s.time_timeline;
            let buckets: Vec<Json> = t
                .buckets
                .iter()
                .map(|b| {
                    let e = match self.metric {
                        Metric::Active => b.active,
                        Metric::Allocated => b.allocated,
                        Metric::Reserved => b.reserved,
                    };
                    json!({
                        "first": b.first_us,
                        "last": b.last_us,
                        "min": e.min,
                        "min_at": e.min_us,
                        "max": e.max,
                        "max_at": e.max_us,
                    })
                })
                .collect();
            json!({
                "times": t.unknown.map_or("kept", NoTimes::name),
                "first_event_time_us": t.origin_us,
                "timed_events": t.timed_events,
                "start": t.span.map(|s| s.0),
                "end": t.span.map(|s| s.1),
                "peak_time_us": s.peak_time_us,
                "peak_at": s.peak_us(),
                "buckets": buckets,
            })
        };
        json!({
            "axis": "event_ordinal",
            "axis_note": self.axis_note(),
            "metric": self.metric.name(),
            "a": series(&self.a),
            "b": series(&self.b),
            "time_axis": {
                "axis": "time_since_first_event_us",
                "available": self.has_time_axis(),
                "a": by_time(&self.a),
                "b": by_time(&self.b),
            },
        })
    }

    /// Whether both sides can be drawn against time.
    pub fn has_time_axis(&self) -> bool {
        [&self.a, &self.b]
            .iter()
            .all(|s| s.no_times().is_none() && s.time_timeline.origin_us.is_some())
    }

    /// How the two timelines line up, and why there is no time axis when there is none:
    /// said in every output that shows them.
    pub fn axis_note(&self) -> String {
        let mut note = String::from(ORDINAL_AXIS);
        if self.has_time_axis() {
            note.push(' ');
            note.push_str(TIME_AXIS);
            return note;
        }
        let why: Vec<String> = [("A", &self.a), ("B", &self.b)]
            .iter()
            .filter_map(
                |(name, s)| match (s.no_times(), s.time_timeline.origin_us) {
                    (Some(why), _) => Some(format!("{name}: {}", why.sentence())),
                    (None, None) => Some(format!("{name}: none of its real events has a time")),
                    (None, Some(_)) => None,
                },
            )
            .collect();
        note.push_str(&format!(" No time axis: {}.", why.join("; ")));
        note
    }

    /// The readable report: peaks, the totals check, and the first `limit` groups with a
    /// bar for their change. `labels` name the two inputs.
    pub fn to_text(&self, limit: Option<usize>, labels: [&str; 2]) -> String {
        let mut out = Vec::new();
        let m = self.metric.name();
        out.push(format!(
            "pt-snap diff · metric {m} · device {} (A) / {} (B)",
            self.a.device_id, self.b.device_id
        ));
        out.push(format!("  A: {}", labels[0]));
        out.push(format!("  B: {}", labels[1]));
        out.push(String::new());
        out.push(format!(
            "Peaks{}{:>24}{:>24}  change",
            " ".repeat(10),
            "A",
            "B"
        ));
        for metric in [Metric::Allocated, Metric::Active, Metric::Reserved] {
            let at = |s: &Side| match s.peaks.map(|p| p.get(metric)) {
                Some(p) => match (p.bytes, p.event_id) {
                    (Some(b), Some(e)) => format!("{} @{e}", human_bytes(b as f64)),
                    _ => "None".to_owned(),
                },
                None => "None".to_owned(),
            };
            let change = match (peak_bytes(&self.a, metric), peak_bytes(&self.b, metric)) {
                (Some(a), Some(b)) => change_text(a, b),
                _ => "n/a".to_owned(),
            };
            let mark = if metric == self.metric { "*" } else { " " };
            out.push(format!(
                "  {:<10}{mark}  {:>24}{:>24}  {change}",
                metric.name(),
                at(&self.a),
                at(&self.b)
            ));
        }
        out.push("  (* the metric compared; @ the first event reaching each peak)".to_owned());
        out.push(String::new());
        let (ta, tb) = (self.total_a(), self.total_b());
        out.push(format!(
            "Live at each side's {m} peak, every block grouped by {}:",
            match self.by {
                By::Site => "allocation site",
                By::Stack => "normalised call stack",
            }
        ));
        for (name, side) in [("A", &self.a), ("B", &self.b)] {
            let Some(event) = side.event_id else {
                out.push(format!("  {name}: no peak (the device has no real event)"));
                continue;
            };
            let check = match side.unattributed_bytes() {
                Some(0) => "= the active counter there".to_owned(),
                Some(gap) => format!(
                    "≠ the active counter there ({} B): {gap} B are in no group",
                    grouped(side.live_bytes_at_peak.unwrap_or(0))
                ),
                None => "(no active counter at that event)".to_owned(),
            };
            out.push(format!(
                "  {name}: {} B in {} blocks at event {event} {check}",
                grouped(side.total()),
                grouped(side.blocks())
            ));
        }
        out.push(format!("  change: {}", change_text(ta, tb)));
        if self.metric != Metric::Active {
            let gaps: Vec<String> = [("A", &self.a), ("B", &self.b)]
                .iter()
                .filter_map(|(n, s)| {
                    let (peak, live) = (s.metric_peak_bytes()?, s.live_bytes_at_peak?);
                    Some(format!("{n} {} B", grouped(peak - live)))
                })
                .collect();
            let why = match self.metric {
                Metric::Reserved => "memory the allocator holds in its cache, in no block",
                _ => "negative: blocks freed but not yet reusable count as active, not allocated",
            };
            out.push(format!(
                "  {m} peak − live bytes: {} ({why})",
                gaps.join(", ")
            ));
        }
        out.push(String::new());
        let shown = self.shown(limit);
        out.push(format!(
            "{} groups by |change| ({} of {} shown; the totals above are over all):",
            match self.by {
                By::Site => "Site",
                By::Stack => "Call-stack",
            },
            shown.len(),
            self.groups.len()
        ));
        if shown.is_empty() {
            out.push("  No live blocks on either side.".into());
        } else {
            let widest = shown
                .iter()
                .map(|g| g.delta().unsigned_abs())
                .max()
                .unwrap_or(0);
            out.push(format!(
                "  {:>4}  {:<7}  {:>12} {:<10}  {:>11}  {:>11}  {:>13}  where allocated (your code → torch call)",
                "#", "status", "change", "", "A", "B", "blocks A→B"
            ));
            let dynamic = self.largest_dynamic_site();
            for (i, g) in shown.iter().enumerate() {
                let site = match (g.key.frames().len(), &dynamic) {
                    (0, Some(d)) if g.key.is_stackless() => {
                        format!("{} · largest allocated during the trace: {d}", g.key.site())
                    }
                    (0, _) => g.key.site(),
                    (n, _) => format!("{}  [{n} frames]", g.key.site()),
                };
                out.push(format!(
                    "  {:>4}  {:<7}  {:>12} {:<10}  {:>11}  {:>11}  {:>13}  {}",
                    i + 1,
                    g.status().name(),
                    signed_human_bytes(g.delta()),
                    bar(g.delta(), widest, 10),
                    human_bytes(g.a.bytes as f64),
                    human_bytes(g.b.bytes as f64),
                    format!("{}→{}", g.a.blocks, g.b.blocks),
                    site
                ));
            }
        }
        out.push(format!(
            "Over all {} groups: {} new (only in B), {} gone (only in A), {} changed, {} same.",
            self.groups.len(),
            self.count(Status::New),
            self.count(Status::Gone),
            self.count(Status::Changed),
            self.count(Status::Same)
        ));
        out.push(match self.by {
            By::Site => "Sites match by where they allocated: the innermost frame of your own \
                         code, then the torch call below it, whatever the frames around them \
                         (--by stack matches whole stacks)."
                .into(),
            By::Stack => "Stacks match by their frames' `function (file:line)`, paths cut to \
                          what is the same on every machine (after site-packages/, the \
                          standard library's own path, a known package's checkout, else the \
                          file name); --json lists every frame."
                .into(),
        });
        out.push(format!(
            "Timelines (their buckets in --json, drawn by --format html): {}",
            self.axis_note()
        ));
        for (name, s) in [("A", &self.a), ("B", &self.b)] {
            let mut line = format!("  {name}: {} events", grouped(s.events()));
            if let (Some((start, end)), None) = (s.time_timeline.span, s.no_times()) {
                line += &format!(" over {}", seconds(end.saturating_sub(start)));
            }
            if let Some(event) = s.event_id {
                let ordinal = s.first_event().map_or(0, |f| event - f);
                line += &format!("; its {m} peak at ordinal {}", grouped(ordinal));
                if let Some(us) = s.peak_us() {
                    line += &format!(", {} after its first event", seconds(us));
                }
            }
            out.push(line);
        }
        out.join("\n") + "\n"
    }

    /// One self-contained page: peaks, the totals, both timelines overlaid, the first
    /// `limit` groups, and the differential flamegraph of every group.
    pub fn to_html(
        &self,
        limit: Option<usize>,
        labels: [&str; 2],
        inputs: [&Map<String, Json>; 2],
    ) -> String {
        page::render(self, limit, labels, inputs)
    }

    /// What the page draws, for a host that draws `www/diff/diff.js` itself (the browser's
    /// Compare view): the same data and tree as [`Diff::to_html`]'s page.
    pub fn to_page_data(
        &self,
        limit: Option<usize>,
        labels: [&str; 2],
        inputs: [&Map<String, Json>; 2],
    ) -> PageData {
        page::data(self, limit, labels, inputs)
    }
}

/// The ordinal axis, in every output that shows the timelines.
const ORDINAL_AXIS: &str = "aligned by event ordinal (event id − the side's first real event \
    id: equal ordinals are equal positions in the two traces).";

/// The time axis, when both sides have one.
const TIME_AXIS: &str = "And by time since each side's first event, from the trace \
    entries' time_us that our import keeps (equal times are equal durations since each run \
    started recording, not the same moment of the clock; events without a time are left out \
    of that axis).";

fn peak_bytes(side: &Side, metric: Metric) -> Option<i64> {
    side.peaks.and_then(|p| p.get(metric).bytes)
}

fn extent(b: &pt_snap_query::TimelineBucket, metric: Metric) -> pt_snap_query::Extent {
    match metric {
        Metric::Active => b.active,
        Metric::Allocated => b.allocated,
        Metric::Reserved => b.reserved,
    }
}

fn group_json(g: &GroupDiff, largest_dynamic: Option<&str>) -> Json {
    let frames: Vec<Json> = g
        .key
        .frames()
        .iter()
        .map(|f| json!({"function": f.function, "file": f.file, "line": f.line}))
        .collect();
    json!({
        "status": g.status().name(),
        "delta": g.delta(),
        "delta_percent": change_percent(g.a.bytes, g.b.bytes),
        "bytes_a": g.a.bytes,
        "bytes_b": g.b.bytes,
        "count_a": g.a.blocks,
        "count_b": g.b.blocks,
        "kind": g.key.kind(),
        "site": g.key.site(),
        "largest_dynamic_site": if g.key.is_stackless() { largest_dynamic } else { None },
        "frames": frames,
    })
}

/// (B − A) as a percentage of A; `None` when A is 0.
fn change_percent(a: i64, b: i64) -> Option<f64> {
    (a != 0).then(|| (b - a) as f64 * 100.0 / a as f64)
}

/// `+64.00 MiB (+5.2%)`, `0 B (0.0%)`, `+1.00 KiB (new)`.
fn change_text(a: i64, b: i64) -> String {
    let pct = match change_percent(a, b) {
        Some(p) => format!("{p:+.1}%"),
        None if b == 0 => "0.0%".to_owned(),
        None => "from 0".to_owned(),
    };
    format!("{} ({pct})", signed_human_bytes(b - a))
}

/// `width` cells for |delta| against the widest change: `█` growth, `▒` shrinkage; a
/// change too small for a whole cell still gets one, so no change reads as none.
fn bar(delta: i64, widest: u64, width: usize) -> String {
    if delta == 0 || widest == 0 {
        return String::new();
    }
    let cells = ((delta.unsigned_abs() as f64 / widest as f64) * width as f64).round() as usize;
    let glyph = if delta > 0 { "█" } else { "▒" };
    glyph.repeat(cells.clamp(1, width))
}

#[cfg(test)]
mod tests;
