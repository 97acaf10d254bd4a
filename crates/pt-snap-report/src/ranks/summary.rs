//! One file's devices, from the templates: the peaks, the allocator gap, the OOM events,
//! and the group holding the most memory at the chosen peak.

use pt_snap_query::{NoTimes, QueryError, QueryOutcome, QueryRequest, Source, Value};
use serde_json::{Map, Value as Json};

use crate::peak::{Metric, Peaks};

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

impl DynamicGroup {
    /// The group of `callstack`'s text, its site labelled from it.
    pub(crate) fn new(size_bytes: i64, block_count: i64, callstack: String) -> Self {
        let site =
            crate::stack::label_text(&callstack).unwrap_or_else(|| "[missing callstack]".into());
        DynamicGroup {
            size_bytes,
            block_count,
            callstack,
            site,
        }
    }
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
    let callstack = (row.get("callstack").and_then(Json::as_str))
        .unwrap_or("")
        .to_owned();
    Ok(Some(DynamicGroup::new(
        int("size_bytes"),
        int("block_count"),
        callstack,
    )))
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
                    crate::units::human_bytes(d.size_bytes as f64)
                ),
                None => other.to_owned(),
            },
        })
}
