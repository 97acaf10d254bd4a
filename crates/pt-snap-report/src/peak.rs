//! `report peak-memory` (spec §8.1): the peaks, the allocator gaps, and what was live at the
//! chosen metric's peak, grouped by allocation callstack — one composition of two templates.

use pt_snap_query::{python, Analyzer, QueryError, QueryRequest};
use serde_json::{json, Map, Value as Json};

/// Which counter's peak to explain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Active,
    Allocated,
    Reserved,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Active => "active",
            Metric::Allocated => "allocated",
            Metric::Reserved => "reserved",
        }
    }

    /// The `allocator_gap` column holding this metric's peak event.
    fn event_column(self) -> &'static str {
        match self {
            Metric::Active => "peak_active_event_id",
            Metric::Allocated => "peak_allocated_event_id",
            Metric::Reserved => "peak_reserved_event_id",
        }
    }

    /// The `allocator_gap` column holding the active counter *at* this metric's peak event
    /// (not the active high-water mark, which may be elsewhere).
    fn active_at_peak_column(self) -> &'static str {
        match self {
            Metric::Active => "peak_active",
            Metric::Allocated => "active_at_allocated_peak",
            Metric::Reserved => "active_at_reserved_peak",
        }
    }
}

/// The report's inputs, the CLI flags of `report peak-memory`.
#[derive(Debug, Clone)]
pub struct PeakRequest {
    pub device: Option<i64>,
    pub metric: Metric,
    pub include_static: bool,
    /// Dynamic callstack groups to keep (`top_n`); negative keeps all.
    pub limit: i64,
    /// Per-callstack UTF-8 budget; negative prints full texts without stack columns.
    pub stack_bytes: i64,
    pub start_id: Option<i64>,
    pub end_id: Option<i64>,
}

impl Default for PeakRequest {
    fn default() -> Self {
        PeakRequest {
            device: None,
            metric: Metric::Active,
            include_static: true,
            limit: 20,
            stack_bytes: -1,
            start_id: None,
            end_id: None,
        }
    }
}

const PEAK_FIELDS: [&str; 6] = [
    "peak_allocated",
    "peak_allocated_event_id",
    "peak_active",
    "peak_active_event_id",
    "peak_reserved",
    "peak_reserved_event_id",
];

/// The finished report.
#[derive(Debug, Clone)]
pub struct PeakReport {
    pub device_id: i64,
    pub metric: Metric,
    /// The metric's peak event; `None` for an empty range or trace.
    pub event_id: Option<i64>,
    /// `memory_peak`'s six fields.
    pub peak: Map<String, Json>,
    pub allocator_gap: Option<Map<String, Json>>,
    pub callstack_groups: Vec<Map<String, Json>>,
    pub has_more: bool,
    pub truncated: bool,
    pub total_is_exact: bool,
    pub effective_params: Map<String, Json>,
    /// Σ size_bytes of the returned groups: the denominator of their percentages.
    pub included_bytes: i64,
    pub active_bytes_at_event: Option<i64>,
    pub coverage_percent: Option<f64>,
    /// Datasets: how completely the attribution's sources were resolved (the
    /// `source_coverage` of its query's scope); `None` on a standalone database.
    pub source_coverage: Option<Json>,
    /// Datasets: the `allocator_gap` query's scope (range, shards, fingerprint, work budget,
    /// `peak_owner_slices`); `None` on a standalone database.
    pub scope: Option<Json>,
    /// The composition's deadline, echoed as `timeout_s` (the caller owns the clock).
    pub timeout_s: Option<f64>,
}

/// One template answer as the composition reads it: rows as JSON objects.
pub(crate) struct Answer {
    pub device_id: i64,
    pub rows: Vec<Map<String, Json>>,
    pub has_more: bool,
    pub truncated: bool,
    pub total_is_exact: bool,
    /// A dataset query's `scope` (`None` on a standalone database).
    pub scope: Option<Json>,
}

/// Builds the report. The caller installs one interrupt on the analyzer for the whole
/// composition.
pub fn peak_memory(analyzer: &Analyzer, req: &PeakRequest) -> Result<PeakReport, QueryError> {
    let device = analyzer.resolve_device(req.device)?;
    compose(req, |template, params| {
        let mut request = QueryRequest::new(template).device(device);
        request.params = params;
        let o = analyzer.run(&request)?;
        Ok(Answer {
            device_id: o.device_id,
            rows: o
                .rows_json()
                .into_iter()
                .filter_map(|r| match r {
                    Json::Object(m) => Some(m),
                    _ => None,
                })
                .collect(),
            has_more: o.has_more,
            truncated: o.truncated,
            total_is_exact: o.total_is_exact,
            scope: None,
        })
    })
}

/// The composition (spec §8.1), whatever answers the two templates: `allocator_gap` over the
/// range, then `active_memory_callstack_at_event` at the metric's peak event.
pub(crate) fn compose<E>(
    req: &PeakRequest,
    mut run: impl FnMut(&str, Map<String, Json>) -> Result<Answer, E>,
) -> Result<PeakReport, E> {
    let mut range = Map::new();
    range.insert("start_id".into(), json!(req.start_id));
    range.insert("end_id".into(), json!(req.end_id));
    let gap = run("allocator_gap", range)?;
    let device = gap.device_id;
    let gap_row = gap.rows.into_iter().next();
    let mut peak = Map::new();
    if let Some(row) = &gap_row {
        for field in PEAK_FIELDS {
            peak.insert(field.into(), row.get(field).cloned().unwrap_or(Json::Null));
        }
        // A counter that is NULL everywhere has no peak event either.
        for m in [Metric::Allocated, Metric::Active, Metric::Reserved] {
            if peak[&format!("peak_{}", m.name())].is_null() {
                peak.insert(m.event_column().into(), Json::Null);
            }
        }
    }
    let event_id = peak.get(req.metric.event_column()).and_then(Json::as_i64);
    let mut effective_params = Map::new();
    effective_params.insert("event_id".into(), json!(event_id));
    effective_params.insert("include_static".into(), json!(req.include_static));
    effective_params.insert("min_size".into(), json!(0));
    effective_params.insert("top_n".into(), json!(req.limit));
    if req.stack_bytes >= 0 {
        effective_params.insert("stack_bytes".into(), json!(req.stack_bytes));
    }
    let Some(event) = event_id else {
        return Ok(PeakReport {
            device_id: device,
            metric: req.metric,
            event_id: None,
            peak,
            allocator_gap: None,
            callstack_groups: Vec::new(),
            has_more: false,
            truncated: false,
            total_is_exact: true,
            effective_params,
            included_bytes: 0,
            active_bytes_at_event: None,
            coverage_percent: None,
            source_coverage: None,
            scope: gap.scope,
            timeout_s: None,
        });
    };
    let mut params = Map::new();
    params.insert("event_id".into(), json!(event));
    params.insert("include_static".into(), json!(req.include_static));
    params.insert("min_size".into(), json!(0));
    params.insert("top_n".into(), json!(req.limit));
    params.insert("stack_bytes".into(), json!(req.stack_bytes));
    let groups = run("active_memory_callstack_at_event", params)?;
    let active_bytes = gap_row
        .as_ref()
        .and_then(|r| r.get(req.metric.active_at_peak_column()))
        .and_then(Json::as_i64);
    // Every returned group counts: static and preexisting groups sit outside top_n but
    // inside the percentages' denominator.
    let included_bytes: i64 = groups
        .rows
        .iter()
        .filter_map(|r| r.get("size_bytes").and_then(Json::as_i64))
        .sum();
    let coverage_percent = active_bytes
        .filter(|a| *a > 0)
        .map(|a| included_bytes as f64 * 100.0 / a as f64);
    Ok(PeakReport {
        device_id: device,
        metric: req.metric,
        event_id: Some(event),
        peak,
        allocator_gap: gap_row,
        callstack_groups: groups.rows,
        has_more: groups.has_more,
        truncated: groups.truncated,
        total_is_exact: groups.total_is_exact,
        effective_params,
        included_bytes,
        active_bytes_at_event: active_bytes,
        coverage_percent,
        // The attribution's evidence; the scope is the peak search's (the range and the
        // shards owning the peaks).
        source_coverage: groups
            .scope
            .as_ref()
            .and_then(|s| s.get("source_coverage"))
            .cloned(),
        scope: gap.scope,
        timeout_s: None,
    })
}

impl PeakReport {
    /// The report as `--json` prints it (no envelope), keys in the reference's order.
    pub fn to_json(&self) -> Json {
        json!({
            "device_id": self.device_id,
            "metric": self.metric.name(),
            "event_id": self.event_id,
            "peak": self.peak,
            "allocator_gap": self.allocator_gap,
            "callstack_groups": self.callstack_groups,
            "has_more": self.has_more,
            "truncated": self.truncated,
            "total_is_exact": self.total_is_exact,
            "effective_params": self.effective_params,
            "included_bytes": self.included_bytes,
            "percent_denominator": "included_bytes",
            "active_bytes_at_event": self.active_bytes_at_event,
            "coverage_percent": self.coverage_percent,
            "source_coverage": self.source_coverage,
            "scope": self.scope,
            "timeout_s": self.timeout_s,
            "budget_scope": "report_composition",
        })
    }

    /// The human-readable report, line for line the reference's.
    pub fn to_text(&self) -> String {
        let py = |v: Option<&Json>| v.map_or("None".to_owned(), py_str);
        let mut out = Vec::new();
        out.push("Peak memory report".to_owned());
        out.push(format!("Device: {}", self.device_id));
        out.push(format!("Metric: {}", self.metric.name()));
        out.push(format!(
            "Event ID: {}",
            py(self.event_id.map(Json::from).as_ref())
        ));
        out.push(String::new());
        out.push("Peak counters:".into());
        if self.peak.is_empty() {
            out.push("  No peak counters found.".into());
        } else {
            for m in ["allocated", "active", "reserved"] {
                out.push(format!(
                    "  {m}: {} at event {}",
                    py(self.peak.get(&format!("peak_{m}"))),
                    py(self.peak.get(&format!("peak_{m}_event_id")))
                ));
            }
        }
        out.push(String::new());
        out.push("Allocator gap:".into());
        match &self.allocator_gap {
            Some(gap) => {
                let g = |k: &str| py(gap.get(k));
                out.push(format!(
                    "  active peak event: {} reserved-active gap={}",
                    g("peak_active_event_id"),
                    g("reserved_active_gap_at_active_peak")
                ));
                out.push(format!(
                    "  allocated peak event: {} reserved-allocated gap={}",
                    g("peak_allocated_event_id"),
                    g("reserved_allocated_gap_at_allocated_peak")
                ));
                out.push(format!(
                    "  reserved peak event: {} reserved-active gap={}",
                    g("peak_reserved_event_id"),
                    g("reserved_active_gap_at_reserved_peak")
                ));
                let same = gap
                    .get("all_peaks_same_event")
                    .and_then(Json::as_i64)
                    .is_some_and(|v| v != 0);
                out.push(format!(
                    "  all peaks same event: {}",
                    if same { "True" } else { "False" }
                ));
            }
            None => out.push("  No allocator gap data found.".into()),
        }
        out.push(String::new());
        out.push("Active memory by callstack:".into());
        if self.event_id.is_none() {
            out.push("  Attribution: unavailable (no peak event).".into());
        } else if self.has_more || self.truncated {
            out.push(
                "  Attribution: partial / possibly incomplete (dynamic top_n cap reached).".into(),
            );
            out.push(
                "  Increase --limit within a finite budget to check for additional groups.".into(),
            );
        } else {
            out.push("  Attribution: complete for the effective filters.".into());
        }
        let p = |k: &str| py(self.effective_params.get(k));
        out.push(format!(
            "  Parameters: include_static={}, min_size={}, top_n={}",
            p("include_static"),
            p("min_size"),
            p("top_n")
        ));
        out.push(format!(
            "  Percentage denominator: included_bytes={} bytes (included groups after \
             filtering/top_n; not all active memory or block counts).",
            self.included_bytes
        ));
        let coverage = self
            .coverage_percent
            .map_or("unknown".to_owned(), |c| format!("{c:.4}%"));
        out.push(format!(
            "  Active coverage at event {}: {coverage} (included={} bytes, active={} bytes).",
            py(self.event_id.map(Json::from).as_ref()),
            self.included_bytes,
            py(self.active_bytes_at_event.map(Json::from).as_ref())
        ));
        if self.callstack_groups.is_empty() {
            out.push("  No active memory callstack groups found.".into());
            return out.join("\n") + "\n";
        }
        for (i, row) in self.callstack_groups.iter().enumerate() {
            let r = |k: &str| py(row.get(k));
            out.push(format!(
                "  [{}] {} {} bytes, {} blocks ({}%)",
                i + 1,
                r("category"),
                r("size_bytes"),
                r("block_count"),
                r("percent_of_active_blocks")
            ));
            out.push(format!("      {}", r("callstack")));
            if row.contains_key("stack_id") {
                out.push(format!(
                    "      stack_id={} kind={} stack_truncated={} stack_bytes={} stack_original_bytes={}",
                    r("stack_id"),
                    r("stack_kind"),
                    r("stack_truncated"),
                    r("stack_bytes"),
                    r("stack_original_bytes")
                ));
                if row.get("stack_kind").and_then(Json::as_str) == Some("captured") {
                    out.push(format!(
                        "      Full text: query event with id={}, omit stack_bytes, same database/device.",
                        r("stack_event_id")
                    ));
                }
            }
        }
        out.join("\n") + "\n"
    }
}

/// Python's `str()` of a JSON value as the reference's f-strings print it.
fn py_str(v: &Json) -> String {
    match v {
        Json::Null => "None".into(),
        Json::Bool(true) => "True".into(),
        Json::Bool(false) => "False".into(),
        Json::String(s) => s.clone(),
        Json::Number(n) if n.is_f64() => python::float_repr(n.as_f64().unwrap_or(f64::NAN)),
        other => other.to_string(),
    }
}
