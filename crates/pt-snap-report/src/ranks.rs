//! `ranks`: the snapshots of a distributed job side by side — one summary row per (file,
//! device), each rank's peaks and what held the memory at its peak, and the ranks whose peak
//! stands out from the others.
//!
//! Everything here is a composition of templates through a [`Source`] ([`summarize`]) or
//! arithmetic on their answers ([`RanksReport::new`]); reading rank numbers from file names
//! ([`rank_from_name`], [`assign_ranks`]) is pure. The caller lists the files, imports them
//! and keeps only each file's [`FileSummary`], so a set of hundreds of files costs one row
//! each.

use std::cmp::Ordering;
use std::fmt::Write as _;

use pt_snap_contract::Failure;
use pt_snap_query::{NoTimes, QueryError, QueryOutcome, QueryRequest, Source, Value};
use serde_json::{json, Map, Value as Json};

use crate::peak::{Metric, Peaks};
use crate::units::{human_bytes, utc};

// ---------------------------------------------------------------------------------------
// Rank numbers from file names

/// Where a row's rank came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RankSource {
    /// Read from the file name ([`rank_from_name`]).
    Name,
    /// The file's position (from 0) in the natural order of the paths ([`natural_cmp`]).
    Position,
}

impl RankSource {
    pub fn name(self) -> &'static str {
        match self {
            RankSource::Name => "name",
            RankSource::Position => "position",
        }
    }
}

/// Suffixes a snapshot or database name carries, stripped (repeatedly, in any case) before
/// the name is read: `rank3.pickle.gz.db` is read as `rank3`.
const SUFFIXES: [&str; 8] = [
    ".db", ".gz", ".zst", ".zstd", ".bz2", ".pkl", ".pickle", ".json",
];

/// The name without its snapshot, compression and database suffixes.
fn stem(file_name: &str) -> &str {
    let mut stem = file_name;
    'strip: loop {
        for suffix in SUFFIXES {
            let n = suffix.len();
            if stem.len() > n
                && stem.is_char_boundary(stem.len() - n)
                && stem[stem.len() - n..].eq_ignore_ascii_case(suffix)
            {
                stem = &stem[..stem.len() - n];
                continue 'strip;
            }
        }
        return stem;
    }
}

/// The decimal number at the start of `s`, with how many bytes it takes; `None` without a
/// digit or past `u64`.
fn leading_number(s: &[u8]) -> Option<(u64, usize)> {
    let len = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if len == 0 {
        return None;
    }
    let text = std::str::from_utf8(&s[..len]).ok()?;
    text.parse().ok().map(|n| (n, len))
}

fn is_separator(b: u8) -> bool {
    matches!(b, b'_' | b'-' | b'.')
}

/// The one value of a rule's matches: `None` for no match, `Some(None)` when they disagree
/// (the name is ambiguous, and later rules are not asked).
fn agreed(found: &[u64]) -> Option<Option<u64>> {
    let first = *found.first()?;
    Some(found.iter().all(|&n| n == first).then_some(first))
}

/// Rule 1: the word `rank` (any case, not preceded by a letter) followed by the number, with
/// at most one `_`, `-` or `.` between: `rank3`, `rank_3`, `RANK-03`, `world_rank.3`. A
/// global rank wins over a `local_rank`/`localrank` one.
fn keyword_rank(lower: &[u8]) -> Option<Option<u64>> {
    let (mut global, mut local) = (Vec::new(), Vec::new());
    let mut at = 0;
    while let Some(i) = find(&lower[at..], b"rank").map(|i| i + at) {
        at = i + 4;
        if i > 0 && lower[i - 1].is_ascii_alphabetic() && !lower[..i].ends_with(b"local") {
            continue;
        }
        let mut rest = &lower[i + 4..];
        if rest.first().is_some_and(|&b| is_separator(b)) {
            rest = &rest[1..];
        }
        let Some((n, _)) = leading_number(rest) else {
            continue;
        };
        let before = &lower[..i];
        let is_local = ["local", "local_", "local-"]
            .iter()
            .any(|p| before.ends_with(p.as_bytes()));
        if is_local {
            local.push(n);
        } else {
            global.push(n);
        }
    }
    agreed(&global).or_else(|| agreed(&local))
}

/// Rule 2: `r` and the number as a token of its own — at the start or after `_`, `-` or
/// `.`, and followed by one of those or the end: `-r3`, `_r3`, `r3_step100`.
fn r_token_rank(lower: &[u8]) -> Option<Option<u64>> {
    let mut found = Vec::new();
    for i in 0..lower.len() {
        if lower[i] != b'r' || (i > 0 && !is_separator(lower[i - 1])) {
            continue;
        }
        let Some((n, len)) = leading_number(&lower[i + 1..]) else {
            continue;
        };
        let end = i + 1 + len;
        if end == lower.len() || is_separator(lower[end]) {
            found.push(n);
        }
    }
    agreed(&found)
}

/// Rule 3: a `.`-separated part that is all digits: `snapshot.3.pickle`.
fn dot_part_rank(stem: &str) -> Option<Option<u64>> {
    let found: Vec<u64> = stem
        .split('.')
        .skip(1)
        .filter_map(|part| match leading_number(part.as_bytes()) {
            Some((n, len)) if len == part.len() => Some(n),
            _ => None,
        })
        .collect();
    agreed(&found)
}

/// Rule 4: a number ending the name after `_` or `-`: `memory_snapshot_3.pickle`.
fn trailing_rank(lower: &[u8]) -> Option<Option<u64>> {
    let digits = lower
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let start = lower.len() - digits;
    if digits == 0 || start == 0 || !matches!(lower[start - 1], b'_' | b'-') {
        return None;
    }
    leading_number(&lower[start..]).map(|(n, _)| Some(n))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The rank a file name states, by the first of these rules that matches anywhere in the
/// name (its snapshot, compression and `.db` suffixes removed first):
///
/// 1. `rank` and a number: `rank3`, `rank_3`, `rank-3`, `rank.3`, `RANK03` (the word not
///    preceded by a letter, except `local_rank`, which counts only when no other `rank` does);
/// 2. `r` and a number as a token of its own: `-r3`, `_r3`, `.r3`, `r3_…`;
/// 3. a number as a `.`-separated part: `snapshot.3.pickle`;
/// 4. a number ending the name after `_` or `-`: `memory_snapshot_3.pickle`.
///
/// When the matches of that rule disagree (`rank1_rank2`), the name states no rank.
pub fn rank_from_name(file_name: &str) -> Option<u64> {
    let stem = stem(file_name);
    let lower = stem.to_ascii_lowercase();
    let lower = lower.as_bytes();
    keyword_rank(lower)
        .or_else(|| r_token_rank(lower))
        .or_else(|| dot_part_rank(stem))
        .or_else(|| trailing_rank(lower))
        .flatten()
}

/// Orders paths as people number files: runs of digits compare by value, so `rank2` comes
/// before `rank10`; equal values with different spellings (`rank02`, `rank2`) and everything
/// else compare as text.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        if x[i].is_ascii_digit() && y[j].is_ascii_digit() {
            let di = x[i..].iter().take_while(|b| b.is_ascii_digit()).count();
            let dj = y[j..].iter().take_while(|b| b.is_ascii_digit()).count();
            let trim = |s: &[u8]| {
                let zeros = s.iter().take_while(|&&b| b == b'0').count();
                s[zeros..].to_vec()
            };
            let (vi, vj) = (trim(&x[i..i + di]), trim(&y[j..j + dj]));
            let by_value = vi.len().cmp(&vj.len()).then_with(|| vi.cmp(&vj));
            if by_value != Ordering::Equal {
                return by_value;
            }
            i += di;
            j += dj;
        } else {
            if x[i] != y[j] {
                return x[i].cmp(&y[j]);
            }
            i += 1;
            j += 1;
        }
    }
    (x.len() - i).cmp(&(y.len() - j)).then_with(|| a.cmp(b))
}

/// The ranks of a set of files, and why they are what they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankAssignment {
    /// One per file, in the order given.
    pub ranks: Vec<u64>,
    pub source: RankSource,
    /// Why the positions were used: the first file whose name states no rank, or the first
    /// two that state the same one. `None` when the names gave the ranks.
    pub note: Option<String>,
}

/// Ranks for files given in natural order ([`natural_cmp`]) by their names (file names, not
/// paths): the ranks the names state when every name states one and no two state the same;
/// otherwise every file's position in that order. All or nothing, because ranks from names
/// and from positions would collide (the file at position 3 and the one named `rank3`).
pub fn assign_ranks(names: &[&str]) -> RankAssignment {
    let positions = |note: String| RankAssignment {
        ranks: (0..names.len() as u64).collect(),
        source: RankSource::Position,
        note: Some(note),
    };
    let mut seen = std::collections::HashMap::with_capacity(names.len());
    let mut ranks = Vec::with_capacity(names.len());
    for name in names {
        let Some(rank) = rank_from_name(name) else {
            return positions(format!("the name {name:?} states no rank"));
        };
        if let Some(first) = seen.insert(rank, *name) {
            return positions(format!("{first:?} and {name:?} both state rank {rank}"));
        }
        ranks.push(rank);
    }
    RankAssignment {
        ranks,
        source: RankSource::Name,
        note: None,
    }
}

// ---------------------------------------------------------------------------------------
// One file's devices, from the templates

/// One frame of a callstack, as `event_frames` gives it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Frame {
    pub name: String,
    pub filename: String,
    pub line: i64,
}

/// The callstack group holding the most bytes at an event: the first row of
/// `active_memory_callstack_at_event` (it orders groups by size, largest first, static and
/// preexisting ones included).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TopGroup {
    /// The event it was live at: the chosen metric's peak.
    pub event_id: i64,
    /// `dynamic_live_at_event`, `static` or `preexisting_live_at_event`.
    pub category: String,
    pub size_bytes: i64,
    pub block_count: i64,
    /// The template's callstack text (a synthetic label for static and preexisting groups).
    pub callstack: String,
    /// The frames of a captured group (`event_frames` of its representative allocation), in
    /// the snapshot's order, innermost call first; empty for a group without a captured
    /// callstack; `None` where the database has no structured frames (layout v1).
    pub frames: Option<Vec<Frame>>,
    /// When this group is memory without a stack (`static` or `preexisting_live_at_event`):
    /// the largest group allocated during the trace, so the row still names a site; `None`
    /// when this group is one, or there is none.
    #[serde(default)]
    pub largest_dynamic: Option<DynamicGroup>,
}

/// The largest callstack group allocated during the trace (`dynamic_live_at_event`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DynamicGroup {
    pub size_bytes: i64,
    pub block_count: i64,
    /// The template's callstack text.
    pub callstack: String,
    /// Its label ([`crate::stack::label`]).
    pub site: String,
}

/// One device of one file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeviceSummary {
    pub device: i64,
    /// `memory_peak`'s answer.
    pub peaks: Peaks,
    /// Reserved minus allocated bytes at the reserved peak event (`allocator_gap`'s
    /// `reserved_allocated_gap_at_reserved_peak`).
    pub reserved_minus_allocated: Option<i64>,
    /// Real trace events whose action is `oom`.
    pub oom_events: i64,
    /// At the chosen metric's peak; `None` when the device has no peak (no real event).
    pub top_group: Option<TopGroup>,
    /// When the three peaks happened, as the trace recorded it.
    pub peak_times: PeakTimes,
}

/// The `time_us` of each peak event (`peak_*_time_us`): `None` where that event has none,
/// all `None` with the reason when the source keeps no times for the device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PeakTimes {
    pub allocated: Option<i64>,
    pub active: Option<i64>,
    pub reserved: Option<i64>,
    /// Why the source has no time for any event of the device.
    pub unknown: Option<NoTimes>,
}

impl PeakTimes {
    pub fn get(&self, metric: Metric) -> Option<i64> {
        match metric {
            Metric::Allocated => self.allocated,
            Metric::Active => self.active,
            Metric::Reserved => self.reserved,
        }
    }

    /// `time_us_status`: `kept`, or why there are no times.
    pub fn status(&self) -> &'static str {
        self.unknown.map_or("kept", NoTimes::name)
    }

    /// The peaks' events' times through [`Source::event_times`].
    fn of(source: &dyn Source, device: i64, peaks: &Peaks) -> Result<Self, QueryError> {
        const METRICS: [Metric; 3] = [Metric::Allocated, Metric::Active, Metric::Reserved];
        let ids: Vec<i64> = METRICS
            .iter()
            .filter_map(|m| peaks.get(*m).event_id)
            .collect();
        let mut times = PeakTimes::default();
        match source.event_times(device, &ids)? {
            Err(why) => times.unknown = Some(why),
            Ok(found) => {
                let mut found = found.into_iter();
                for m in METRICS {
                    if peaks.get(m).event_id.is_some() {
                        let t = found.next().flatten();
                        match m {
                            Metric::Allocated => times.allocated = t,
                            Metric::Active => times.active = t,
                            Metric::Reserved => times.reserved = t,
                        }
                    }
                }
            }
        }
        Ok(times)
    }
}

/// The `oom` action's code in SnapshotDB format 3's dictionary.
fn oom_action() -> i64 {
    pt_snap_db::schema::ACTIONS
        .iter()
        .find(|(_, name)| *name == "oom")
        .map(|(code, _)| *code)
        .expect("the format has an oom action")
}

fn first_row(outcome: &QueryOutcome) -> Option<Map<String, Json>> {
    outcome.rows_json().into_iter().find_map(|r| match r {
        Json::Object(m) => Some(m),
        _ => None,
    })
}

/// Summarises every device of `source` (or only `device`): the peaks, the allocator gap at
/// the reserved peak, the OOM events and the top callstack group at `metric`'s peak, all
/// from the templates. A source without devices is `DEVICE_NOT_FOUND`, as for `query`.
pub fn summarize(
    source: &dyn Source,
    device: Option<i64>,
    metric: Metric,
) -> Result<Vec<DeviceSummary>, QueryError> {
    let devices = match device {
        Some(d) => vec![d],
        None => source.bounds()?.into_iter().map(|b| b.device).collect(),
    };
    if devices.is_empty() {
        return Err(QueryError::DeviceNotFound(
            "No devices found in database.".into(),
        ));
    }
    devices
        .into_iter()
        .map(|d| summarize_device(source, d, metric))
        .collect()
}

fn summarize_device(
    source: &dyn Source,
    device: i64,
    metric: Metric,
) -> Result<DeviceSummary, QueryError> {
    let peak = source.run(&QueryRequest::new("memory_peak").device(device))?;
    let peaks = first_row(&peak)
        .as_ref()
        .map(Peaks::of_row)
        .unwrap_or_default();
    let gap = source.run(&QueryRequest::new("allocator_gap").device(device))?;
    let gap = first_row(&gap);
    // Both templates pick the earliest event of the highest value; the gap is read at the
    // event reported as the reserved peak, or not at all.
    let at_reserved_peak = |key: &str| gap.as_ref().and_then(|g| g.get(key)?.as_i64());
    let reserved_minus_allocated = match at_reserved_peak("peak_reserved_event_id") {
        Some(e) if Some(e) == peaks.reserved.event_id => {
            at_reserved_peak("reserved_allocated_gap_at_reserved_peak")
        }
        None if peaks.reserved.event_id.is_none() => None,
        other => {
            return Err(QueryError::Failed(format!(
                "allocator_gap puts the reserved peak of device {device} at event {other:?}, \
                 memory_peak at {:?}",
                peaks.reserved.event_id
            )))
        }
    };
    let ooms = source.run(
        &QueryRequest::new("event")
            .device(device)
            .param("action", oom_action())
            .param("min_id", 0)
            .max_rows(1)
            .exact_total(true),
    )?;
    let top_group = match peaks.get(metric).event_id {
        Some(event) => top_group(source, device, event)?,
        None => None,
    };
    Ok(DeviceSummary {
        device,
        peaks,
        reserved_minus_allocated,
        oom_events: ooms.total,
        top_group,
        peak_times: PeakTimes::of(source, device, &peaks)?,
    })
}

fn top_group(
    source: &dyn Source,
    device: i64,
    event_id: i64,
) -> Result<Option<TopGroup>, QueryError> {
    let groups = source.run(
        &QueryRequest::new("active_memory_callstack_at_event")
            .device(device)
            .param("event_id", event_id)
            .param("include_static", true)
            .param("top_n", 1)
            // A budget no text reaches: the full text, and the representative event.
            .param("stack_bytes", i64::MAX),
    )?;
    let Some(row) = first_row(&groups) else {
        return Ok(None);
    };
    let int = |k: &str| row.get(k).and_then(Json::as_i64);
    let text = |k: &str| row.get(k).and_then(Json::as_str).unwrap_or("").to_owned();
    let frames = match int("stack_event_id") {
        None => Some(Vec::new()),
        Some(stack_event) => {
            let request = QueryRequest::new("event_frames")
                .device(device)
                .param("event_id", stack_event);
            match source.run(&request) {
                // No rows: the database has no valid frame list for this stack; its text
                // is the answer.
                Ok(outcome) if outcome.rows.is_empty() => None,
                Ok(outcome) => Some(frames_of(&outcome)),
                // Layout v1 keeps callstacks as text only; the text is the answer there.
                Err(QueryError::Failed(_)) => None,
                Err(e) => return Err(e),
            }
        }
    };
    let category = text("category");
    let largest_dynamic = match category.as_str() {
        "dynamic_live_at_event" => None,
        _ => largest_dynamic(source, device, event_id)?,
    };
    Ok(Some(TopGroup {
        event_id,
        category,
        size_bytes: int("size_bytes").unwrap_or(0),
        block_count: int("block_count").unwrap_or(0),
        callstack: text("callstack"),
        frames,
        largest_dynamic,
    }))
}

/// The largest group allocated during the trace live at `event_id`: the first row of
/// `active_memory_callstack_at_event` without static and preexisting memory.
fn largest_dynamic(
    source: &dyn Source,
    device: i64,
    event_id: i64,
) -> Result<Option<DynamicGroup>, QueryError> {
    let groups = source.run(
        &QueryRequest::new("active_memory_callstack_at_event")
            .device(device)
            .param("event_id", event_id)
            .param("include_static", false)
            .param("top_n", 1)
            .param("stack_bytes", i64::MAX),
    )?;
    let Some(row) = first_row(&groups) else {
        return Ok(None);
    };
    let int = |k: &str| row.get(k).and_then(Json::as_i64).unwrap_or(0);
    let callstack = row
        .get("callstack")
        .and_then(Json::as_str)
        .unwrap_or("")
        .to_owned();
    let site = crate::stack::label_text(&callstack).unwrap_or_else(|| "[missing callstack]".into());
    Ok(Some(DynamicGroup {
        size_bytes: int("size_bytes"),
        block_count: int("block_count"),
        callstack,
        site,
    }))
}

fn frames_of(outcome: &QueryOutcome) -> Vec<Frame> {
    (0..outcome.rows.len())
        .map(|i| {
            let text = |k: &str| match outcome.get(i, k) {
                Some(Value::Text(t)) => t.to_string(),
                _ => String::new(),
            };
            Frame {
                name: text("name"),
                filename: text("filename"),
                line: match outcome.get(i, "line") {
                    Some(Value::Int(n)) => *n,
                    _ => 0,
                },
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// The set

/// What a file was given as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputKind {
    Snapshot,
    Database,
}

impl InputKind {
    pub fn name(self) -> &'static str {
        match self {
            InputKind::Snapshot => "snapshot",
            InputKind::Database => "database",
        }
    }
}

/// One file of the set: what the caller keeps of it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileSummary {
    pub path: String,
    pub rank: u64,
    pub rank_source: RankSource,
    pub input: InputKind,
    /// The database read: the file itself, or the snapshot's import.
    pub db_path: Option<String>,
    /// For a snapshot whose import reached the cache decision: whether its database was
    /// reused.
    pub reused: Option<bool>,
    /// Events a lenient replay applied from the trace alone (`import --lenient`); `None` for a
    /// strict replay.
    pub lenient_replay_issues: Option<i64>,
    /// Why a file has no summary: the failure the command would have failed with.
    pub devices: Result<Vec<DeviceSummary>, Failure>,
}

/// The outlier verdict of one row.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub outlier: bool,
    /// Signed distance from the median, in percent of it; `None` when the median is 0.
    pub vs_median_percent: Option<f64>,
    /// Why it is an outlier; `None` when it is not.
    pub reason: Option<String>,
}

/// One row: one device of one file, or a file that has no summary.
#[derive(Debug, Clone, PartialEq)]
pub struct RankRow {
    /// Index into [`RanksReport::files`].
    pub file: usize,
    /// `None` for a file that failed.
    pub summary: Option<DeviceSummary>,
    /// `None` for a failed file, or a device without a value of the metric.
    pub verdict: Option<Verdict>,
}

/// How far from the median a peak must be to be an outlier: more than
/// [`OutlierRule::MAX_SCALED_MADS`] scaled MADs and at least
/// [`OutlierRule::MIN_RELATIVE`] of the median.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutlierRule {
    pub metric: Metric,
    /// Rows with a value of the metric.
    pub rows: usize,
    pub median: f64,
    /// The median of the absolute deviations from the median.
    pub mad: f64,
    /// [`OutlierRule::MAD_SCALE`] · MAD: the standard deviation a normal sample would have.
    pub scaled_mad: f64,
}

impl OutlierRule {
    pub const MAD_SCALE: f64 = 1.4826;
    pub const MAX_SCALED_MADS: f64 = 3.0;
    pub const MIN_RELATIVE: f64 = 0.10;

    /// The rule for a set of values; `None` for an empty one.
    pub fn of(metric: Metric, values: &[i64]) -> Option<Self> {
        let median = median(values.iter().map(|&v| v as f64).collect())?;
        let deviations = values.iter().map(|&v| (v as f64 - median).abs()).collect();
        let mad = self::median(deviations)?;
        Some(OutlierRule {
            metric,
            rows: values.len(),
            median,
            mad,
            scaled_mad: Self::MAD_SCALE * mad,
        })
    }

    /// Both conditions: |v − median| > 3 · 1.4826 · MAD, and |v − median| ≥ 10% of the
    /// median. With MAD = 0 (more than half the rows exactly at the median) the first one is
    /// any difference at all, so the 10% condition alone decides: a rank 10% off a set that
    /// otherwise agrees to the byte is an outlier.
    pub fn judge(&self, value: i64) -> Verdict {
        let distance = value as f64 - self.median;
        let far_in_mads = distance.abs() > Self::MAX_SCALED_MADS * self.scaled_mad;
        let far_relative = distance.abs() >= Self::MIN_RELATIVE * self.median.abs();
        let outlier = far_in_mads && far_relative;
        let vs_median_percent = (self.median != 0.0).then(|| 100.0 * distance / self.median);
        let reason = outlier.then(|| {
            let side = if distance > 0.0 { "above" } else { "below" };
            let relative = match vs_median_percent {
                Some(p) => format!("{:.1}% {side}", p.abs()),
                None => side.to_owned(),
            };
            let mads = if self.scaled_mad > 0.0 {
                format!(
                    "{:.1} scaled MADs (1.4826·MAD = {})",
                    distance.abs() / self.scaled_mad,
                    human_bytes(self.scaled_mad)
                )
            } else {
                "MAD = 0: more than half the rows are exactly at the median".to_owned()
            };
            format!(
                "peak_{} {} is {relative} the median {}; {mads}",
                self.metric.name(),
                human_bytes(value as f64),
                human_bytes(self.median)
            )
        });
        Verdict {
            outlier,
            vs_median_percent,
            reason,
        }
    }

    fn to_json(self) -> Json {
        json!({
            "metric": format!("peak_{}", self.metric.name()),
            "rows": self.rows,
            "median": self.median,
            "mad": self.mad,
            "scaled_mad": self.scaled_mad,
            "mad_scale": Self::MAD_SCALE,
            "max_scaled_mads": Self::MAX_SCALED_MADS,
            "min_relative_difference": Self::MIN_RELATIVE,
        })
    }
}

/// The median (the mean of the two middle values for an even count); `None` for none.
fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

/// The medians of the set, each over the rows that have the value.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Medians {
    pub peak_allocated: Option<f64>,
    pub peak_active: Option<f64>,
    pub peak_reserved: Option<f64>,
    pub reserved_minus_allocated: Option<f64>,
    pub oom_events: Option<f64>,
}

/// The whole answer of `ranks`.
#[derive(Debug, Clone, PartialEq)]
pub struct RanksReport {
    pub metric: Metric,
    /// Every file, in natural path order.
    pub files: Vec<FileSummary>,
    /// Ordered by rank, then device.
    pub rows: Vec<RankRow>,
    pub medians: Medians,
    /// `None` when no row has a value of the metric.
    pub rule: Option<OutlierRule>,
    pub rank_source: RankSource,
    pub rank_note: Option<String>,
}

impl RanksReport {
    /// Flattens the files into rows and judges every row's peak of `metric` against the
    /// set's. `assignment` is the one the files' ranks came from.
    pub fn new(metric: Metric, files: Vec<FileSummary>, assignment_note: Option<String>) -> Self {
        let rank_source = files.first().map_or(RankSource::Name, |f| f.rank_source);
        let mut rows = Vec::with_capacity(files.len());
        for (i, f) in files.iter().enumerate() {
            match &f.devices {
                Ok(devices) => rows.extend(devices.iter().map(|d| RankRow {
                    file: i,
                    summary: Some(d.clone()),
                    verdict: None,
                })),
                Err(_) => rows.push(RankRow {
                    file: i,
                    summary: None,
                    verdict: None,
                }),
            }
        }
        rows.sort_by_key(|r| (files[r.file].rank, r.summary.as_ref().map(|s| s.device)));
        let column = |f: &dyn Fn(&DeviceSummary) -> Option<i64>| -> Vec<i64> {
            rows.iter()
                .filter_map(|r| r.summary.as_ref().and_then(f))
                .collect()
        };
        let median_of = |values: Vec<i64>| median(values.into_iter().map(|v| v as f64).collect());
        let medians = Medians {
            peak_allocated: median_of(column(&|s| s.peaks.allocated.bytes)),
            peak_active: median_of(column(&|s| s.peaks.active.bytes)),
            peak_reserved: median_of(column(&|s| s.peaks.reserved.bytes)),
            reserved_minus_allocated: median_of(column(&|s| s.reserved_minus_allocated)),
            oom_events: median_of(column(&|s| Some(s.oom_events))),
        };
        let rule = OutlierRule::of(metric, &column(&|s| s.peaks.get(metric).bytes));
        if let Some(rule) = rule {
            for row in &mut rows {
                let value = row.summary.as_ref().and_then(|s| s.peaks.get(metric).bytes);
                row.verdict = value.map(|v| rule.judge(v));
            }
        }
        RanksReport {
            metric,
            files,
            rows,
            medians,
            rule,
            rank_source,
            rank_note: assignment_note,
        }
    }

    /// The files without a summary.
    pub fn failures(&self) -> impl Iterator<Item = (&FileSummary, &Failure)> {
        self.files
            .iter()
            .filter_map(|f| f.devices.as_ref().err().map(|e| (f, e)))
    }

    pub fn outliers(&self) -> impl Iterator<Item = &RankRow> {
        self.rows
            .iter()
            .filter(|r| r.verdict.as_ref().is_some_and(|v| v.outlier))
    }

    /// The rows as `ranks --json` lists them (`ranks[]`), in its order.
    pub fn rows_json(&self) -> Vec<Json> {
        self.rows.iter().map(|r| self.row_json(r)).collect()
    }

    /// One row as `ranks --json` lists it.
    fn row_json(&self, row: &RankRow) -> Json {
        let f = &self.files[row.file];
        let mut m = Map::new();
        m.insert("path".into(), json!(f.path));
        m.insert("rank".into(), json!(f.rank));
        m.insert("rank_source".into(), json!(f.rank_source.name()));
        m.insert(
            "device".into(),
            json!(row.summary.as_ref().map(|s| s.device)),
        );
        let peaks = row.summary.as_ref().map(|s| s.peaks).unwrap_or_default();
        for metric in [Metric::Allocated, Metric::Active, Metric::Reserved] {
            let p = peaks.get(metric);
            m.insert(format!("peak_{}", metric.name()), json!(p.bytes));
            m.insert(
                format!("peak_{}_event_id", metric.name()),
                json!(p.event_id),
            );
        }
        let s = row.summary.as_ref();
        for metric in [Metric::Allocated, Metric::Active, Metric::Reserved] {
            m.insert(
                format!("peak_{}_time_us", metric.name()),
                json!(s.and_then(|s| s.peak_times.get(metric))),
            );
        }
        m.insert(
            "time_us_status".into(),
            json!(s.map(|s| s.peak_times.status())),
        );
        m.insert(
            "reserved_minus_allocated".into(),
            json!(s.and_then(|s| s.reserved_minus_allocated)),
        );
        m.insert("oom_events".into(), json!(s.map(|s| s.oom_events)));
        m.insert(
            "top_callstack_group".into(),
            s.and_then(|s| s.top_group.as_ref())
                .map_or(Json::Null, |g| self.group_json(g)),
        );
        let verdict = row.verdict.as_ref();
        m.insert("outlier".into(), json!(verdict.map(|v| v.outlier)));
        m.insert(
            "outlier_reason".into(),
            json!(verdict.and_then(|v| v.reason.clone())),
        );
        m.insert(
            "vs_median_percent".into(),
            json!(verdict.and_then(|v| v.vs_median_percent)),
        );
        m.insert("input".into(), json!(f.input.name()));
        m.insert("db_path".into(), json!(f.db_path));
        m.insert("reused".into(), json!(f.reused));
        m.insert(
            "lenient_replay_issues".into(),
            json!(f.lenient_replay_issues),
        );
        m.insert(
            "error".into(),
            f.devices
                .as_ref()
                .err()
                .map_or(Json::Null, Failure::to_json),
        );
        Json::Object(m)
    }

    fn group_json(&self, g: &TopGroup) -> Json {
        json!({
            "metric": format!("peak_{}", self.metric.name()),
            "event_id": g.event_id,
            "category": g.category,
            "size_bytes": g.size_bytes,
            "block_count": g.block_count,
            "callstack": g.callstack,
            "frames": g.frames.as_ref().map(|frames| frames
                .iter()
                .map(|f| json!({"name": f.name, "filename": f.filename, "line": f.line}))
                .collect::<Vec<_>>()),
            "largest_dynamic_group": g.largest_dynamic.as_ref().map(|d| json!({
                "site": d.site,
                "size_bytes": d.size_bytes,
                "block_count": d.block_count,
                "callstack": d.callstack,
            })),
        })
    }

    /// The fields of `ranks --json` after `schema_version` and `ok`, in order: `metric`,
    /// `ranks`, `median`, then the rule, the rank source and the counts.
    pub fn json_fields(&self) -> Vec<(&'static str, Json)> {
        let m = &self.medians;
        vec![
            ("metric", json!(self.metric.name())),
            ("ranks", Json::Array(self.rows_json())),
            (
                "median",
                json!({
                    "peak_allocated": m.peak_allocated,
                    "peak_active": m.peak_active,
                    "peak_reserved": m.peak_reserved,
                    "reserved_minus_allocated": m.reserved_minus_allocated,
                    "oom_events": m.oom_events,
                }),
            ),
            (
                "outlier_rule",
                self.rule.map_or(Json::Null, OutlierRule::to_json),
            ),
            ("outliers", json!(self.outliers().count())),
            ("rank_source", json!(self.rank_source.name())),
            ("rank_note", json!(self.rank_note)),
            ("files", json!(self.files.len())),
            ("failed", json!(self.failures().count())),
        ]
    }

    /// The table of `ranks` without `--json`: rows sorted by the metric's peak, largest
    /// first, with bars, outliers marked; then the median, the outliers' reasons and top
    /// callstack groups, and the files that failed.
    pub fn to_text(&self) -> String {
        let metric = self.metric.name();
        let mut out = String::new();
        let rows_with_value = self.rule.map_or(0, |r| r.rows);
        let _ = writeln!(
            out,
            "{} file(s), {} row(s) with a peak; ranks from {}; sorted by peak {metric}",
            self.files.len(),
            rows_with_value,
            match self.rank_source {
                RankSource::Name => "the file names",
                RankSource::Position => "the positions of the files in path order",
            },
        );
        if let Some(note) = &self.rank_note {
            let _ = writeln!(out, "  (positions because {note})");
        }
        out.push('\n');

        let mut sorted: Vec<&RankRow> = self.rows.iter().filter(|r| r.summary.is_some()).collect();
        let value = |r: &RankRow| {
            r.summary
                .as_ref()
                .and_then(|s| s.peaks.get(self.metric).bytes)
        };
        sorted.sort_by(|a, b| {
            value(b)
                .cmp(&value(a))
                .then_with(|| self.files[a.file].rank.cmp(&self.files[b.file].rank))
        });
        let max = sorted.iter().filter_map(|r| value(r)).max().unwrap_or(0);
        let bytes = |v: Option<i64>| v.map_or("-".to_owned(), |b| human_bytes(b as f64));
        let header = [
            "rank".to_owned(),
            "dev".to_owned(),
            format!("peak {metric}"),
            String::new(),
            "vs median".to_owned(),
        ];
        let others: Vec<Metric> = [Metric::Allocated, Metric::Active, Metric::Reserved]
            .into_iter()
            .filter(|m| *m != self.metric)
            .collect();
        let mut table: Vec<Vec<String>> = Vec::with_capacity(sorted.len() + 1);
        let mut head = header.to_vec();
        head.extend(others.iter().map(|m| format!("peak {}", m.name())));
        head.extend(
            [
                "res-alloc",
                "OOMs",
                "peak at (UTC)",
                "top callstack site",
                "file",
                "",
            ]
            .map(String::from),
        );
        table.push(head);
        for r in &sorted {
            let s = r.summary.as_ref().expect("filtered");
            let f = &self.files[r.file];
            let verdict = r.verdict.as_ref();
            let mut cells = vec![
                f.rank.to_string(),
                s.device.to_string(),
                bytes(value(r)),
                bar(value(r).unwrap_or(0), max, BAR_WIDTH),
                verdict
                    .and_then(|v| v.vs_median_percent)
                    .map_or("-".to_owned(), |p| format!("{p:+.1}%")),
            ];
            cells.extend(others.iter().map(|m| bytes(s.peaks.get(*m).bytes)));
            cells.push(bytes(s.reserved_minus_allocated));
            cells.push(s.oom_events.to_string());
            cells.push(
                s.peak_times
                    .get(self.metric)
                    .map_or("-".to_owned(), |t| utc(t).1),
            );
            cells.push(s.top_group.as_ref().map_or("-".to_owned(), site));
            cells.push(file_name(&f.path).to_owned());
            cells.push(if verdict.is_some_and(|v| v.outlier) {
                "<< OUTLIER".to_owned()
            } else {
                String::new()
            });
            table.push(cells);
        }
        // Numbers right-aligned, text left-aligned; the bar and the last columns as they are.
        let right = [
            true, true, true, false, true, true, true, true, true, true, false, false, false,
        ];
        let widths: Vec<usize> = (0..table[0].len())
            .map(|c| {
                table
                    .iter()
                    .map(|row| row[c].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for row in &table {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                let pad = widths[c] - cell.chars().count();
                if c > 0 {
                    line.push_str("  ");
                }
                if right.get(c).copied().unwrap_or(false) {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        if sorted.is_empty() {
            out.push_str("(no row has a peak)\n");
        }
        self.peak_time_notes(&sorted, &mut out);
        let m = &self.medians;
        let median_bytes = |v: Option<f64>| v.map_or("-".to_owned(), human_bytes);
        let _ = writeln!(
            out,
            "\nmedian: peak allocated {}, peak active {}, peak reserved {}, res-alloc {}",
            median_bytes(m.peak_allocated),
            median_bytes(m.peak_active),
            median_bytes(m.peak_reserved),
            median_bytes(m.reserved_minus_allocated),
        );
        if let Some(rule) = self.rule {
            let _ = writeln!(
                out,
                "outlier: peak {metric} more than 3 scaled MADs (1.4826·MAD = {}) and at least 10% \
                 from the median {}",
                human_bytes(rule.scaled_mad),
                human_bytes(rule.median)
            );
        }
        let outliers: Vec<&RankRow> = self.outliers().collect();
        if outliers.is_empty() {
            out.push_str("no outliers\n");
        } else {
            let _ = writeln!(out, "\nOutliers ({}):", outliers.len());
            for r in outliers {
                let f = &self.files[r.file];
                let s = r.summary.as_ref().expect("judged rows have a summary");
                let reason = r.verdict.as_ref().and_then(|v| v.reason.as_deref());
                let _ = writeln!(
                    out,
                    "  rank {} device {} ({}): {}",
                    f.rank,
                    s.device,
                    f.path,
                    reason.unwrap_or("")
                );
                if let Some(g) = &s.top_group {
                    let _ = writeln!(
                        out,
                        "    largest group at event {}: {} in {} block(s), {}",
                        g.event_id,
                        human_bytes(g.size_bytes as f64),
                        g.block_count,
                        g.category
                    );
                    for line in stack_lines(g) {
                        let _ = writeln!(out, "      {line}");
                    }
                    if let Some(d) = &g.largest_dynamic {
                        let _ = writeln!(
                            out,
                            "    largest group allocated during the trace: {} in {} block(s), at {}",
                            human_bytes(d.size_bytes as f64),
                            d.block_count,
                            d.site
                        );
                    }
                }
            }
        }
        let lenient: Vec<&FileSummary> = self
            .files
            .iter()
            .filter(|f| f.lenient_replay_issues.is_some())
            .collect();
        if !lenient.is_empty() {
            let _ = writeln!(
                out,
                "\nLenient replays ({}; their numbers are approximate):",
                lenient.len()
            );
            for f in lenient {
                let _ = writeln!(
                    out,
                    "  rank {} ({}): {} event(s) applied from the trace alone",
                    f.rank,
                    f.path,
                    f.lenient_replay_issues.unwrap_or(0)
                );
            }
        }
        let failures: Vec<_> = self.failures().collect();
        if !failures.is_empty() {
            let _ = writeln!(out, "\nFailed ({}):", failures.len());
            for (f, e) in failures {
                let _ = writeln!(
                    out,
                    "  rank {} ({}): {}: {}",
                    f.rank,
                    f.path,
                    e.code.as_str(),
                    e.message
                );
            }
        }
        out
    }
}

impl RanksReport {
    /// What the `peak at (UTC)` column shows: the metric's peak event's `time_us`, its time
    /// of day (the dates under the table), and why a `-` has none.
    fn peak_time_notes(&self, rows: &[&RankRow], out: &mut String) {
        let metric = self.metric.name();
        let mut dates = std::collections::BTreeSet::new();
        let mut unknown: Vec<(NoTimes, usize)> = Vec::new();
        for s in rows.iter().filter_map(|r| r.summary.as_ref()) {
            match (s.peak_times.get(self.metric), s.peak_times.unknown) {
                (Some(t), _) => {
                    dates.insert(utc(t).0);
                }
                (None, Some(why)) => match unknown.iter_mut().find(|(w, _)| *w == why) {
                    Some((_, n)) => *n += 1,
                    None => unknown.push((why, 1)),
                },
                (None, None) => {}
            }
        }
        if !dates.is_empty() {
            let dates: Vec<String> = dates.into_iter().collect();
            let _ = writeln!(
                out,
                "peak at: when the {metric} peak's event was recorded (its time_us), UTC, on {}",
                dates.join(", ")
            );
        }
        for (why, n) in unknown {
            let _ = writeln!(out, "peak at -: {} ({n} row(s))", why.sentence());
        }
    }
}

const BAR_WIDTH: usize = 30;
/// Frames of an outlier's top callstack shown in text mode.
const STACK_LINES: usize = 6;

/// The innermost Python frames of a group, where its code is (the frames below them are the
/// allocator's own C++); all frames when none is Python. Innermost first.
fn stack_lines(g: &TopGroup) -> Vec<String> {
    let python = |s: &str| s.contains(".py");
    let lines: Vec<String> = match &g.frames {
        Some(frames) if !frames.is_empty() => frames
            .iter()
            .map(|f| format!("{} ({}:{})", f.name, f.filename, f.line))
            .collect(),
        // The template's text lists the outermost call first.
        _ => g.callstack.lines().rev().map(str::to_owned).collect(),
    };
    let in_python: Vec<String> = lines.iter().filter(|l| python(l)).cloned().collect();
    let shown = if in_python.is_empty() {
        lines
    } else {
        in_python
    };
    shown.into_iter().take(STACK_LINES).collect()
}

/// A bar of `width` cells for `value` out of `max`, in eighths of a cell.
fn bar(value: i64, max: i64, width: usize) -> String {
    if max <= 0 || value <= 0 {
        return String::new();
    }
    let eighths = ((value as f64 / max as f64) * (width * 8) as f64).round() as usize;
    let mut s = "█".repeat(eighths / 8);
    const PARTS: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];
    s.push_str(PARTS[eighths % 8]);
    s
}

fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// A one-cell label of where a group was allocated: [`crate::stack::label`] of its frames
/// (the user's innermost frame and the torch call below it); the callstack text's label on
/// layout v1, and the category for groups without a callstack.
pub fn site(g: &TopGroup) -> String {
    let frames: Vec<crate::stack::Frame> = g
        .frames
        .iter()
        .flatten()
        .rev()
        .map(|f| crate::stack::Frame::new(&f.filename, Some(f.line), &f.name))
        .collect();
    crate::stack::label(&frames)
        .or_else(|| match g.category.as_str() {
            "dynamic_live_at_event" => crate::stack::label_text(&g.callstack),
            _ => None,
        })
        .unwrap_or_else(|| match g.category.as_str() {
            "dynamic_live_at_event" => "[missing callstack]".to_owned(),
            other => match &g.largest_dynamic {
                Some(d) => format!(
                    "{other} · largest dynamic: {} ({})",
                    d.site,
                    human_bytes(d.size_bytes as f64)
                ),
                None => other.to_owned(),
            },
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pt_snap_contract::ErrorCode;

    #[test]
    fn rank_from_the_usual_names() {
        let cases = [
            ("rank3.pickle", Some(3)),
            ("rank_3.pkl", Some(3)),
            ("rank-3.pickle", Some(3)),
            ("RANK03.pickle", Some(3)),
            ("memory_snapshot_rank12.pickle", Some(12)),
            ("snapshot_rank_7_step_100.pickle", Some(7)),
            ("world_rank.5.pickle", Some(5)),
            ("local_rank2.pickle", Some(2)),
            ("local_rank2_rank10.pickle", Some(10)),
            ("snap-r3.pickle", Some(3)),
            ("snap_r3_step100.pkl", Some(3)),
            ("r4.pickle", Some(4)),
            ("snapshot.3.pickle", Some(3)),
            ("memory_snapshot_3.pickle", Some(3)),
            ("mem-11.pkl", Some(11)),
            ("rank3.pickle.db", Some(3)),
            ("rank3.pickle.gz", Some(3)),
            ("rank3.json.zst.db", Some(3)),
            ("snapshot_5.pickle.db", Some(5)),
        ];
        for (name, want) in cases {
            assert_eq!(rank_from_name(name), want, "{name}");
        }
    }

    #[test]
    fn names_without_a_rank_or_with_two() {
        for name in [
            "snapshot.pickle",
            "layer3.pickle",      // a letter before the number, not `rank`
            "gpu3.pickle",        // no rule reads device words
            "ranking.pickle",     // `rank` without a number
            "rank1_rank2.pickle", // two ranks: ambiguous
            "snap.2024.3.pickle", // two dot parts: ambiguous
            "cranky3.pickle",     // `rank` inside a word
            "snap_r3_r4.pickle",
            "12345678901234567890123.pickle",
            "rank99999999999999999999999.pkl",
        ] {
            assert_eq!(rank_from_name(name), None, "{name}");
        }
        // The first rule that matches decides, even when a later one would read a number.
        assert_eq!(rank_from_name("rank2_step_100.pickle"), Some(2));
        assert_eq!(rank_from_name("r1.snapshot.7.pickle"), Some(1));
    }

    #[test]
    fn natural_order_reads_numbers_by_value() {
        let mut names = vec![
            "rank10.pkl",
            "rank2.pkl",
            "rank1.pkl",
            "rank02.pkl",
            "a.pkl",
        ];
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            names,
            [
                "a.pkl",
                "rank1.pkl",
                "rank02.pkl",
                "rank2.pkl",
                "rank10.pkl"
            ]
        );
        assert_eq!(natural_cmp("x", "x"), Ordering::Equal);
        assert_eq!(natural_cmp("x1", "x1a"), Ordering::Less);
    }

    #[test]
    fn ranks_come_from_names_only_when_all_differ() {
        let a = assign_ranks(&["rank0.pkl", "rank1.pkl", "rank7.pkl"]);
        assert_eq!(a.ranks, [0, 1, 7]);
        assert_eq!(a.source, RankSource::Name);
        assert_eq!(a.note, None);

        let a = assign_ranks(&["rank0.pkl", "rank1.pkl", "notes.pkl"]);
        assert_eq!(a.ranks, [0, 1, 2]);
        assert_eq!(a.source, RankSource::Position);
        assert!(a.note.unwrap().contains("\"notes.pkl\" states no rank"));

        let a = assign_ranks(&["rank3.pkl", "rank_3.pickle"]);
        assert_eq!((a.ranks, a.source), (vec![0, 1], RankSource::Position));
        assert!(a.note.unwrap().contains("both state rank 3"));

        let a = assign_ranks(&[]);
        assert_eq!((a.ranks.len(), a.source), (0, RankSource::Name));
    }

    fn rule(values: &[i64]) -> OutlierRule {
        OutlierRule::of(Metric::Active, values).unwrap()
    }

    #[test]
    fn median_and_mad() {
        let r = rule(&[1, 2, 3, 4, 100]);
        assert_eq!((r.median, r.mad), (3.0, 1.0));
        assert!((r.scaled_mad - 1.4826).abs() < 1e-12);
        let r = rule(&[4, 1, 3, 2]);
        assert_eq!((r.median, r.mad), (2.5, 1.0));
        assert!(OutlierRule::of(Metric::Active, &[]).is_none());
    }

    #[test]
    fn an_outlier_is_far_in_mads_and_in_percent() {
        // Spread of ~1%: the 10% condition protects ranks that are only many MADs off.
        let r = rule(&[1000, 1005, 995, 1002, 998, 1001, 999, 1060]);
        let v = r.judge(1060);
        assert!(!v.outlier, "6% off is not an outlier, however many MADs");
        assert!((v.vs_median_percent.unwrap() - 5.95).abs() < 0.1);
        let v = r.judge(1200);
        assert!(v.outlier);
        assert!(v.reason.unwrap().contains("above the median"));
        let v = r.judge(800);
        assert!(v.outlier && v.reason.unwrap().contains("below"));
        // A wide spread: 20% off but within 3 scaled MADs.
        let r = rule(&[600, 800, 1000, 1200, 1400]);
        assert!(!r.judge(1200).outlier);
        assert_eq!(r.judge(1000).reason, None);
    }

    #[test]
    fn with_mad_zero_ten_percent_decides() {
        let r = rule(&[1000, 1000, 1000, 1000, 1099]);
        assert_eq!(r.mad, 0.0);
        assert!(!r.judge(1099).outlier, "9.9% off");
        assert!(!r.judge(1000).outlier);
        let r = rule(&[1000, 1000, 1000, 1000, 1100]);
        let v = r.judge(1100);
        assert!(v.outlier, "10% off with MAD 0");
        assert!(v.reason.unwrap().contains("MAD = 0"));
        assert!(r.judge(900).outlier);
        // A median of 0: any positive value is off by more than 10% of it.
        let r = rule(&[0, 0, 0, 5]);
        let v = r.judge(5);
        assert!(v.outlier && v.vs_median_percent.is_none());
    }

    #[test]
    fn bars() {
        assert_eq!(bar(10, 10, 4), "████");
        assert_eq!(bar(5, 10, 4), "██");
        assert_eq!(bar(1, 16, 2), "▏");
        assert_eq!(bar(0, 10, 4), "");
    }

    fn summary(device: i64, active: i64) -> DeviceSummary {
        let peak = |b: i64| crate::peak::Peak {
            bytes: Some(b),
            event_id: Some(7),
        };
        DeviceSummary {
            device,
            peaks: Peaks {
                allocated: peak(active - 10),
                active: peak(active),
                reserved: peak(active + 100),
            },
            reserved_minus_allocated: Some(110),
            oom_events: 0,
            top_group: None,
            peak_times: PeakTimes {
                allocated: Some(1_757_253_255_215_904),
                active: None,
                reserved: None,
                unknown: None,
            },
        }
    }

    fn file(rank: u64, devices: Result<Vec<DeviceSummary>, Failure>) -> FileSummary {
        FileSummary {
            path: format!("/x/rank{rank}.pickle"),
            rank,
            rank_source: RankSource::Name,
            input: InputKind::Snapshot,
            db_path: Some(format!("/x/rank{rank}.pickle.db")),
            reused: Some(false),
            lenient_replay_issues: None,
            devices,
        }
    }

    #[test]
    fn the_report_flags_rows_and_keeps_failures() {
        let failed = Failure::new(ErrorCode::ImportFailed, "corrupt").with_hint(None);
        let files = vec![
            file(2, Ok(vec![summary(0, 1000), summary(1, 1010)])),
            file(0, Ok(vec![summary(0, 2000)])),
            file(1, Err(failed)),
            file(3, Ok(vec![summary(0, 990)])),
        ];
        let report = RanksReport::new(Metric::Active, files, None);
        let order: Vec<(u64, Option<i64>)> = report
            .rows
            .iter()
            .map(|r| {
                (
                    report.files[r.file].rank,
                    r.summary.as_ref().map(|s| s.device),
                )
            })
            .collect();
        assert_eq!(
            order,
            [
                (0, Some(0)),
                (1, None),
                (2, Some(0)),
                (2, Some(1)),
                (3, Some(0))
            ]
        );
        let flagged: Vec<u64> = report
            .outliers()
            .map(|r| report.files[r.file].rank)
            .collect();
        assert_eq!(flagged, [0]);
        assert_eq!(report.medians.peak_active, Some(1005.0));
        assert_eq!(report.failures().count(), 1);

        let fields = report.json_fields();
        let keys: Vec<&str> = fields.iter().map(|(k, _)| *k).collect();
        assert_eq!(&keys[..3], ["metric", "ranks", "median"]);
        let rows = &fields[1].1;
        assert_eq!(rows[1]["error"]["code"], "IMPORT_FAILED");
        assert_eq!(rows[1]["outlier"], Json::Null);
        assert_eq!(rows[0]["outlier"], true);
        assert_eq!(rows[2]["outlier"], false);

        let text = report.to_text();
        let lines: Vec<&str> = text.lines().collect();
        let first_row = lines.iter().position(|l| l.starts_with("rank")).unwrap() + 1;
        assert!(lines[first_row].trim_start().starts_with('0'), "{text}");
        assert!(lines[first_row].ends_with("<< OUTLIER"), "{text}");
        assert!(text.contains("Failed (1):\n  rank 1 (/x/rank1.pickle): IMPORT_FAILED: corrupt"));
    }

    /// The contract lists exactly the fields the command prints, failures included.
    #[test]
    fn the_contract_describes_every_field() {
        let group = TopGroup {
            event_id: 7,
            category: "dynamic_live_at_event".into(),
            size_bytes: 4096,
            block_count: 2,
            callstack: "train.py:3 main".into(),
            frames: Some(vec![Frame {
                name: "main".into(),
                filename: "train.py".into(),
                line: 3,
            }]),
            largest_dynamic: Some(DynamicGroup {
                size_bytes: 1024,
                block_count: 1,
                callstack: "train.py:4 step".into(),
                site: "step (train.py:4)".into(),
            }),
        };
        let mut with_group = summary(0, 1000);
        with_group.top_group = Some(group);
        let failed = Failure::new(ErrorCode::SnapshotInvalid, "no").with_hint(Some("yes"));
        let report = RanksReport::new(
            Metric::Active,
            vec![file(0, Ok(vec![with_group])), file(1, Err(failed))],
            Some("a note".into()),
        );
        let document = pt_snap_contract::envelope::partial(
            report.json_fields(),
            &pt_snap_contract::Failure::new(ErrorCode::SnapshotInvalid, "1 of 2 files failed"),
        );
        crate::commands::find("ranks")
            .unwrap()
            .check_document(&document, true)
            .unwrap();
    }
}
