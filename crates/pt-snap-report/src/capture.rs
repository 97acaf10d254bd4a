//! How a device's history was captured, and what that limits: what `overview` shows under
//! each device and `check` keeps in its baselines. Measured from any [`Source`]
//! ([`capture_of`]) or from a replay of a decoded snapshot (`check`'s stream); both give
//! the same numbers.
//!
//! The warnings say what a capture cannot answer and how to capture better:
//! `history_not_recorded` (no trace entry: `_record_memory_history` was never switched on,
//! Megatron-Bridge#3487), `no_stacks` (entries without frames), `allocated_before_recording`
//! (memory live at the peak that no stack can explain, at least [`STATIC_SHARE`] of it) and
//! `trace_may_have_wrapped` (the ring buffer dropped the oldest entries: the file says so,
//! pytorch#179276, or the trace is as long as the buffer it names).

use pt_snap_query::{QueryError, QueryRequest, Source};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};

use crate::stack;

/// `allocated_before_recording` when the memory without a stack at the active peak is at
/// least this share of it.
pub const STATIC_SHARE: f64 = 0.10;

/// What kind of stacks a capture recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StackCapture {
    /// Python frames only (`stacks="python"`, the default).
    Python,
    /// C++ frames too (`stacks="all"`).
    All,
    /// No entry recorded a frame.
    None,
}

impl StackCapture {
    pub fn name(self) -> &'static str {
        match self {
            StackCapture::Python => "python",
            StackCapture::All => "all",
            StackCapture::None => "none",
        }
    }
}

/// How a device's history was captured, and what that limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capture {
    /// Real trace entries (every action).
    pub trace_entries: i64,
    /// Of them, those with at least one frame.
    pub entries_with_frames: i64,
    pub stacks: StackCapture,
    pub has_time_us: bool,
    /// Bytes live at the active peak that were allocated before the trace began: no stack
    /// can say where they came from.
    pub static_bytes_at_peak: i64,
    /// The active counter at its peak, what `static_bytes_at_peak` is a share of.
    #[serde(default)]
    pub peak_active_bytes: Option<i64>,
    /// `allocator_settings.trace_alloc_overflowed` for the device, where the file says.
    #[serde(default)]
    pub trace_overflowed: Option<bool>,
    /// `allocator_settings.trace_alloc_max_entries` for the device, where the file says.
    #[serde(default)]
    pub trace_max_entries: Option<i64>,
}

/// What a capture cannot answer, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// Stable: `history_not_recorded`, `no_stacks`, `allocated_before_recording`,
    /// `trace_may_have_wrapped`.
    pub code: &'static str,
    pub message: String,
}

impl Capture {
    /// Nothing recorded yet.
    pub fn empty() -> Capture {
        Capture {
            trace_entries: 0,
            entries_with_frames: 0,
            stacks: StackCapture::None,
            has_time_us: false,
            static_bytes_at_peak: 0,
            peak_active_bytes: None,
            trace_overflowed: None,
            trace_max_entries: None,
        }
    }

    /// The share of the active peak allocated before recording; `None` without a peak.
    pub fn static_share(&self) -> Option<f64> {
        self.peak_active_bytes
            .filter(|p| *p > 0)
            .map(|p| self.static_bytes_at_peak as f64 / p as f64)
    }

    /// Whether the trace may have lost its oldest entries, and why.
    fn wrapped(&self) -> Option<String> {
        if self.trace_overflowed == Some(true) {
            let size = self
                .trace_max_entries
                .map_or(String::new(), |m| format!(" of {m} entries"));
            return Some(format!("the allocator's trace buffer{size} overflowed (allocator_settings.trace_alloc_overflowed): the oldest events were overwritten, so the trace starts mid-run and blocks from before it look allocated before recording"));
        }
        match self.trace_max_entries {
            Some(max) if max > 0 && self.trace_entries >= max && self.trace_overflowed.is_none() => {
                Some(format!("the trace holds {} entries, as many as its buffer (trace_alloc_max_entries {max}): older events may have been overwritten", self.trace_entries))
            }
            _ => None,
        }
    }

    /// What the capture cannot answer, each with what to do, in a fixed order.
    pub fn warnings(&self) -> Vec<Warning> {
        let mut out = Vec::new();
        if self.trace_entries <= 1 {
            let what = match self.trace_entries {
                0 => "No trace entry: memory history was not recorded",
                _ => "One trace entry: history was recorded with enabled='state' (max_entries=1), which keeps no history",
            };
            out.push(Warning {
                code: "history_not_recorded",
                message: format!("{what}, so nothing says when or where memory was allocated. Call torch.cuda.memory._record_memory_history(max_entries=100000) before the code to observe (before the model is built), then _dump_snapshot()."),
            });
        } else if self.entries_with_frames == 0 {
            out.push(Warning {
                code: "no_stacks",
                message: "The trace entries carry no stack frames, so no allocation site can be named. Record with context='all' (the default) and stacks='python' or 'all' in _record_memory_history.".into(),
            });
        }
        if let Some(share) = self.static_share().filter(|s| *s >= STATIC_SHARE) {
            out.push(Warning {
                code: "allocated_before_recording",
                message: format!(
                    "{:.0}% of the active peak ({} B of {} B) was allocated before recording began: no stack can say where it came from. Start _record_memory_history before the model is built.",
                    share * 100.0,
                    crate::units::grouped(self.static_bytes_at_peak),
                    crate::units::grouped(self.peak_active_bytes.unwrap_or(0))
                ),
            });
        }
        if let Some(why) = self.wrapped() {
            out.push(Warning {
                code: "trace_may_have_wrapped",
                message: format!(
                    "{why}. Raise max_entries in _record_memory_history, or dump sooner."
                ),
            });
        }
        out
    }

    pub fn to_json(&self) -> Json {
        json!({
            "trace_entries": self.trace_entries,
            "entries_with_frames": self.entries_with_frames,
            "stacks": self.stacks.name(),
            "has_time_us": self.has_time_us,
            "static_bytes_at_peak": self.static_bytes_at_peak,
            "peak_active_bytes": self.peak_active_bytes,
            "trace_buffer": {
                "overflowed": self.trace_overflowed,
                "max_entries": self.trace_max_entries,
            },
            "warnings": self.warnings().iter().map(|w| json!({"code": w.code, "message": w.message})).collect::<Vec<_>>(),
        })
    }

    /// The capture in a few lines for `overview`'s text, each indented by `indent`.
    pub fn text(&self, indent: &str) -> Vec<String> {
        let mut lines = vec![format!(
            "{indent}capture: {} trace entries, {} with frames; stacks {}; time_us {}; {} B live at the active peak from before recording",
            crate::units::grouped(self.trace_entries),
            crate::units::grouped(self.entries_with_frames),
            self.stacks.name(),
            if self.has_time_us { "kept" } else { "none" },
            crate::units::grouped(self.static_bytes_at_peak)
        )];
        for w in self.warnings() {
            lines.push(format!("{indent}warning {}: {}", w.code, w.message));
        }
        lines
    }
}

fn run(
    source: &dyn Source,
    device: i64,
    template: &str,
    params: Json,
) -> Result<Vec<serde_json::Map<String, Json>>, QueryError> {
    let mut request = QueryRequest::new(template);
    request.device = Some(device);
    request.max_rows = Some(-1);
    if let Json::Object(p) = params {
        request.params = p;
    }
    Ok(crate::peak::rows(&source.run(&request)?))
}

/// The capture of `device`: its real entries by callstack (`callstack_analysis`, every
/// group), whether it kept times, the memory without a stack at the active peak
/// (`active_peak`: its event and bytes; `None` to look it up), and what the file said of
/// its trace buffer.
pub fn capture_of(
    source: &dyn Source,
    device: i64,
    active_peak: Option<(i64, i64)>,
) -> Result<Capture, QueryError> {
    let active_peak = match active_peak {
        Some(p) => Some(p),
        None => {
            let peak = run(source, device, "memory_peak", json!({}))?;
            peak.first().and_then(|r| {
                let int = |k: &str| r.get(k).and_then(Json::as_i64);
                int("peak_active_event_id").zip(int("peak_active"))
            })
        }
    };
    let groups = run(
        source,
        device,
        "callstack_analysis",
        json!({"min_count": 1, "min_size": 0, "limit": -1}),
    )?;
    let mut capture = Capture::empty();
    let mut native = false;
    for g in &groups {
        let count = g.get("alloc_count").and_then(Json::as_i64).unwrap_or(0);
        let text = g.get("callstack").and_then(Json::as_str).unwrap_or("");
        capture.trace_entries += count;
        if !text.is_empty() && !text.starts_with('[') {
            capture.entries_with_frames += count;
            native |= stack::normalize_stack(text).iter().any(|f| !f.is_python());
        }
    }
    capture.stacks = match (capture.entries_with_frames, native) {
        (0, _) => StackCapture::None,
        (_, true) => StackCapture::All,
        (_, false) => StackCapture::Python,
    };
    if let Some((event, bytes)) = active_peak {
        capture.peak_active_bytes = Some(bytes);
        capture.has_time_us = matches!(source.event_times(device, &[event])?, Ok(t) if t.first().copied().flatten().is_some());
        let stackless = run(
            source,
            device,
            "active_memory_callstack_at_event",
            json!({"event_id": event, "include_static": true, "min_size": 0, "top_n": 0}),
        )?;
        capture.static_bytes_at_peak = stackless
            .iter()
            .filter(|g| {
                matches!(
                    g.get("category").and_then(Json::as_str),
                    Some("static" | "preexisting_live_at_event")
                )
            })
            .filter_map(|g| g.get("size_bytes").and_then(Json::as_i64))
            .sum();
    }
    if let Some((overflowed, max_entries)) = source.trace_buffer(device)? {
        capture.trace_overflowed = overflowed;
        capture.trace_max_entries = max_entries;
    }
    Ok(capture)
}
