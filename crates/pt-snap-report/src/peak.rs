//! `report peak-memory` (spec §8.1): the peaks, the allocator gaps, and what was live at the
//! chosen metric's peak, grouped by allocation callstack — one composition of two templates;
//! with `--by category` (ours) also by memory category (`category_breakdown_at_event`).

use pt_snap_query::{python, QueryError, QueryOutcome, QueryRequest, Source};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as Json};

use crate::categories::{self, Breakdown, Rules};
use crate::stack::{self, Stacks};

/// Which counter's peak to explain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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

/// How `report peak-memory` groups what was live at the peak.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Grouping {
    /// By allocation callstack: the reference's report, unchanged.
    #[default]
    Callstack,
    /// By memory category too, under these rules (ours).
    Category(Rules),
}

/// With [`Grouping::Category`]: the live memory at the peak event by category.
#[derive(Debug, Clone, PartialEq)]
pub struct ByCategory {
    /// `builtin` or `custom` ([`Rules::name`]).
    pub rules: &'static str,
    /// `None` when there is no peak event.
    pub at_peak: Option<Breakdown>,
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
    pub by: Grouping,
}

impl PeakRequest {
    /// Every block live at `metric`'s peak, static ones included, every group kept, each
    /// with its full text and its `stack_kind` (which tells a captured stack from the
    /// synthetic labels): what `diff` and `check` regroup.
    pub fn every_group(device: Option<i64>, metric: Metric) -> PeakRequest {
        PeakRequest {
            device,
            metric,
            include_static: true,
            limit: -1,
            // Any budget turns on `stack_kind`; this one never shortens a text.
            stack_bytes: i64::MAX,
            ..PeakRequest::default()
        }
    }
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
            by: Grouping::Callstack,
        }
    }
}

/// One counter's high-water mark and the first event that reached it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Peak {
    pub bytes: Option<i64>,
    /// `None` also when the counter is NULL everywhere (it has no peak then).
    pub event_id: Option<i64>,
}

/// `memory_peak`'s six fields: the three counters' peaks (also what the browser's engine
/// answers, and previews from the replay before the rows exist).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Peaks {
    pub allocated: Peak,
    pub active: Peak,
    pub reserved: Peak,
}

impl Peaks {
    /// The peaks of an `allocator_gap` or `memory_peak` row (both name them alike).
    pub fn of_row(row: &Map<String, Json>) -> Self {
        let peak = |m: Metric| {
            let bytes = row
                .get(&format!("peak_{}", m.name()))
                .and_then(Json::as_i64);
            Peak {
                bytes,
                event_id: bytes.and(row.get(m.event_column()).and_then(Json::as_i64)),
            }
        };
        Peaks {
            allocated: peak(Metric::Allocated),
            active: peak(Metric::Active),
            reserved: peak(Metric::Reserved),
        }
    }

    pub fn get(&self, metric: Metric) -> Peak {
        match metric {
            Metric::Allocated => self.allocated,
            Metric::Active => self.active,
            Metric::Reserved => self.reserved,
        }
    }

    /// The six fields in the reference's order.
    pub(crate) fn to_json(self) -> Json {
        let mut out = Map::new();
        for m in [Metric::Allocated, Metric::Active, Metric::Reserved] {
            let p = self.get(m);
            out.insert(format!("peak_{}", m.name()), json!(p.bytes));
            out.insert(m.event_column().into(), json!(p.event_id));
        }
        Json::Object(out)
    }
}

/// The parameters the attribution ran with (`effective_params`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttributionParams {
    pub event_id: Option<i64>,
    pub include_static: bool,
    pub min_size: i64,
    pub top_n: i64,
    /// Only when the request set a budget.
    pub stack_bytes: Option<i64>,
}

impl AttributionParams {
    fn to_json(self) -> Json {
        let mut out = Map::new();
        out.insert("event_id".into(), json!(self.event_id));
        out.insert("include_static".into(), json!(self.include_static));
        out.insert("min_size".into(), json!(self.min_size));
        out.insert("top_n".into(), json!(self.top_n));
        if let Some(b) = self.stack_bytes {
            out.insert("stack_bytes".into(), json!(b));
        }
        Json::Object(out)
    }
}

/// The finished report.
#[derive(Debug, Clone)]
pub struct PeakReport {
    pub device_id: i64,
    pub metric: Metric,
    /// The metric's peak event; `None` for an empty range or trace.
    pub event_id: Option<i64>,
    /// `None` when the range or trace has no event.
    pub peak: Option<Peaks>,
    pub allocator_gap: Option<Map<String, Json>>,
    pub callstack_groups: Vec<Map<String, Json>>,
    pub has_more: bool,
    pub truncated: bool,
    pub total_is_exact: bool,
    pub effective_params: AttributionParams,
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
    /// With [`Grouping::Category`] only.
    pub categories: Option<ByCategory>,
}

/// Builds the report on a database or a dataset. The caller installs one deadline for the
/// whole composition (a dataset source also charges both queries to one work budget).
pub fn peak_memory(source: &dyn Source, req: &PeakRequest) -> Result<PeakReport, QueryError> {
    compose(req, |template, params, device| {
        let mut request = QueryRequest::new(template);
        request.params = params;
        request.device = device;
        source.run(&request)
    })
}

/// The composition (spec §8.1), whatever answers the two templates: `allocator_gap` over the
/// range, then `active_memory_callstack_at_event` at the metric's peak event.
fn compose(
    req: &PeakRequest,
    mut run: impl FnMut(&str, Map<String, Json>, Option<i64>) -> Result<QueryOutcome, QueryError>,
) -> Result<PeakReport, QueryError> {
    let mut range = Map::new();
    range.insert("start_id".into(), json!(req.start_id));
    range.insert("end_id".into(), json!(req.end_id));
    let gap = run("allocator_gap", range, req.device)?;
    let device = gap.device_id;
    let gap_row = rows(&gap).into_iter().next();
    let peak = gap_row.as_ref().map(Peaks::of_row);
    let event_id = peak.and_then(|p| p.get(req.metric).event_id);
    let effective_params = AttributionParams {
        event_id,
        include_static: req.include_static,
        min_size: 0,
        top_n: req.limit,
        stack_bytes: (req.stack_bytes >= 0).then_some(req.stack_bytes),
    };
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
            categories: match &req.by {
                Grouping::Callstack => None,
                Grouping::Category(rules) => Some(ByCategory {
                    rules: rules.name(),
                    at_peak: None,
                }),
            },
        });
    };
    let mut params = Map::new();
    params.insert("event_id".into(), json!(event));
    params.insert("include_static".into(), json!(req.include_static));
    params.insert("min_size".into(), json!(0));
    params.insert("top_n".into(), json!(req.limit));
    params.insert("stack_bytes".into(), json!(req.stack_bytes));
    let groups = run("active_memory_callstack_at_event", params, Some(device))?;
    let group_rows = rows(&groups);
    let active_bytes = gap_row
        .as_ref()
        .and_then(|r| r.get(req.metric.active_at_peak_column()))
        .and_then(Json::as_i64);
    // Every returned group counts: static and preexisting groups sit outside top_n but
    // inside the percentages' denominator.
    let included_bytes: i64 = group_rows.iter().map(|r| Group::of_row(r).size_bytes).sum();
    let coverage_percent = active_bytes
        .filter(|a| *a > 0)
        .map(|a| included_bytes as f64 * 100.0 / a as f64);
    let categories = match &req.by {
        Grouping::Callstack => None,
        Grouping::Category(rules) => {
            let r = rules.request(device, event);
            let outcome = run(&r.template, r.params, r.device)?;
            Some(ByCategory {
                rules: rules.name(),
                at_peak: Some(Breakdown::new(event, rules, &outcome)),
            })
        }
    };
    Ok(PeakReport {
        device_id: device,
        metric: req.metric,
        event_id: Some(event),
        peak,
        allocator_gap: gap_row,
        callstack_groups: group_rows,
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
        categories,
    })
}

/// One callstack group as the project reads it: a view of the template's row, which the
/// report keeps and prints as it was answered (so a hostile database's NULL or text reaches
/// the output as the reference prints it). An absent or mistyped text reads as `""`, an
/// absent or mistyped count as 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Group<'a> {
    /// `dynamic_live_at_event`, `static` or `preexisting_live_at_event`.
    pub category: &'a str,
    /// `captured`, `missing`, or the category of memory that has no stack; `None` where the
    /// row has no such column (a database's rows without a `stack_bytes` budget).
    pub stack_kind: Option<&'a str>,
    /// The stack's text (outermost caller first), or a bracketed note for memory without one.
    pub callstack: &'a str,
    pub size_bytes: i64,
    pub requested_bytes: i64,
    pub block_count: i64,
    pub percent_of_active_blocks: Option<f64>,
}

impl<'a> Group<'a> {
    pub fn of_row(row: &'a Map<String, Json>) -> Self {
        let text = |k: &str| row.get(k).and_then(Json::as_str);
        let int = |k: &str| row.get(k).and_then(Json::as_i64).unwrap_or(0);
        Group {
            category: text("category").unwrap_or(""),
            stack_kind: row.get("stack_kind").map(|v| v.as_str().unwrap_or("")),
            callstack: text("callstack").unwrap_or(""),
            size_bytes: int("size_bytes"),
            requested_bytes: int("requested_bytes"),
            block_count: int("block_count"),
            percent_of_active_blocks: row.get("percent_of_active_blocks").and_then(Json::as_f64),
        }
    }

    /// A dynamic group whose text is a captured stack (not a bracketed note).
    pub fn has_frames(&self) -> bool {
        self.category == "dynamic_live_at_event"
            && !self.callstack.is_empty()
            && !self.callstack.starts_with('[')
    }

    /// Where the group allocated, in one line: a captured stack's [`stack::label`], else
    /// the text's first line (the note of memory without a stack).
    pub fn label(&self) -> String {
        self.has_frames()
            .then(|| stack::label_text(self.callstack))
            .flatten()
            .unwrap_or_else(|| self.callstack.lines().next().unwrap_or("").to_owned())
    }
}

/// A group's stack in `--stacks python` text: its label, its Python frames, how many
/// native ones are not shown. Memory without a stack keeps its bracketed text.
fn python_stack(group: Group<'_>) -> Vec<String> {
    let text = group.callstack;
    if !group.has_frames() {
        return vec![format!("      {text}")];
    }
    let (lines, native) = stack::python_lines(text);
    let mut out = vec![format!(
        "      where: {}",
        stack::label_text(text).unwrap_or_default()
    )];
    out.extend(lines.iter().map(|l| format!("        {l}")));
    if native > 0 {
        out.push(format!(
            "        ({native} native frame{} not shown; --stacks all shows every frame)",
            if native == 1 { "" } else { "s" }
        ));
    }
    out
}

/// A template's rows as JSON objects, columns in SQL order.
pub(crate) fn rows(outcome: &QueryOutcome) -> Vec<Map<String, Json>> {
    outcome
        .rows_json()
        .into_iter()
        .filter_map(|r| match r {
            Json::Object(m) => Some(m),
            _ => None,
        })
        .collect()
}

impl PeakReport {
    /// The callstack groups, in the report's order.
    pub fn groups(&self) -> impl Iterator<Item = Group<'_>> {
        self.callstack_groups.iter().map(Group::of_row)
    }

    /// The report as `--json` prints it (no envelope), keys in the reference's order.
    pub fn to_json(&self) -> Json {
        let mut out = json!({
            "device_id": self.device_id,
            "metric": self.metric.name(),
            "event_id": self.event_id,
            "peak": self.peak.map_or(json!({}), Peaks::to_json),
            "allocator_gap": self.allocator_gap,
            "callstack_groups": self.callstack_groups,
            "has_more": self.has_more,
            "truncated": self.truncated,
            "total_is_exact": self.total_is_exact,
            "effective_params": self.effective_params.to_json(),
            "included_bytes": self.included_bytes,
            "percent_denominator": "included_bytes",
            "active_bytes_at_event": self.active_bytes_at_event,
            "coverage_percent": self.coverage_percent,
            "source_coverage": self.source_coverage,
            "scope": self.scope,
            "timeout_s": self.timeout_s,
            "budget_scope": "report_composition",
        });
        // Ours (docs/compatibility.md): only with `--by category`, after the reference's keys.
        if let (Some(by), Json::Object(m)) = (&self.categories, &mut out) {
            m.insert("by".into(), json!("category"));
            m.insert("category_rules".into(), json!(by.rules));
            m.insert(
                "categories_interpretation".into(),
                json!(categories::INTERPRETATION),
            );
            m.insert(
                "categories".into(),
                by.at_peak
                    .as_ref()
                    .map_or(Json::Array(Vec::new()), Breakdown::rows_json),
            );
        }
        out
    }

    /// The human-readable report, line for line the reference's.
    pub fn to_text(&self) -> String {
        self.to_text_stacks(Stacks::All)
    }

    /// [`PeakReport::to_text`] with each group's full callstack (`Stacks::All`, the
    /// reference's text), or (`Stacks::Python`) with its label
    /// ([`crate::stack::label`]) and only its Python frames, one per line, then how many
    /// native frames were left out.
    pub fn to_text_stacks(&self, stacks: Stacks) -> String {
        let py = |v: Option<&Json>| v.map_or("None".to_owned(), python::str_of_json);
        let mut out = Vec::new();
        out.push("Peak memory report".to_owned());
        out.push(format!("Device: {}", self.device_id));
        out.push(format!("Metric: {}", self.metric.name()));
        out.push(format!(
            "Event ID: {}",
            self.event_id.map_or("None".to_owned(), |v| v.to_string())
        ));
        out.push(String::new());
        out.push("Peak counters:".into());
        let int = |v: Option<i64>| v.map_or("None".to_owned(), |v| v.to_string());
        match &self.peak {
            None => out.push("  No peak counters found.".into()),
            Some(peaks) => {
                for m in [Metric::Allocated, Metric::Active, Metric::Reserved] {
                    let p = peaks.get(m);
                    out.push(format!(
                        "  {}: {} at event {}",
                        m.name(),
                        int(p.bytes),
                        int(p.event_id)
                    ));
                }
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
        if let Some(by) = &self.categories {
            // `--by category`: the categories in place of the callstack groups.
            out.push("Active memory by category:".into());
            match &by.at_peak {
                None => out.push("  Attribution: unavailable (no peak event).".into()),
                Some(b) => out.extend(b.text("  ")),
            }
            return out.join("\n") + "\n";
        }
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
        let p = &self.effective_params;
        out.push(format!(
            "  Parameters: include_static={}, min_size={}, top_n={}",
            if p.include_static { "True" } else { "False" },
            p.min_size,
            p.top_n
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
            int(self.event_id),
            self.included_bytes,
            int(self.active_bytes_at_event)
        ));
        if self.callstack_groups.is_empty() {
            out.push("  No active memory callstack groups found.".into());
            return out.join("\n") + "\n";
        }
        for (i, row) in self.callstack_groups.iter().enumerate() {
            let r = |k: &str| py(row.get(k));
            let group = Group::of_row(row);
            out.push(format!(
                "  [{}] {} {} bytes, {} blocks ({}%)",
                i + 1,
                r("category"),
                r("size_bytes"),
                r("block_count"),
                r("percent_of_active_blocks")
            ));
            match stacks {
                Stacks::All => out.push(format!("      {}", r("callstack"))),
                Stacks::Python => out.extend(python_stack(group)),
            }
            if row.contains_key("stack_id") {
                out.push(format!(
                    "      stack_id={} kind={} stack_truncated={} stack_bytes={} stack_original_bytes={}",
                    r("stack_id"),
                    r("stack_kind"),
                    r("stack_truncated"),
                    r("stack_bytes"),
                    r("stack_original_bytes")
                ));
                if group.stack_kind == Some("captured") {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(v: Json) -> Map<String, Json> {
        match v {
            Json::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_group_reads_a_hostile_row_as_empty_and_zero() {
        let r = row(json!({
            "callstack": null,
            "category": 7,
            "stack_kind": null,
            "size_bytes": "512",
            "block_count": 2,
            "percent_of_active_blocks": null,
        }));
        let g = Group::of_row(&r);
        assert_eq!(
            (g.category, g.callstack, g.stack_kind),
            ("", "", Some("")),
            "a non-text value reads as empty text; a column present stays present"
        );
        assert_eq!((g.size_bytes, g.requested_bytes, g.block_count), (0, 0, 2));
        assert_eq!(g.percent_of_active_blocks, None);
        assert!(!g.has_frames());
        assert_eq!(g.label(), "");
        let without = row(json!({"category": "static"}));
        assert_eq!(Group::of_row(&without).stack_kind, None);
    }

    #[test]
    fn only_a_captured_dynamic_stack_is_labelled_by_its_frames() {
        let stack = "/home/u/train.py:40 step\n\
                     /opt/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py:125 forward";
        let dynamic = row(json!({"category": "dynamic_live_at_event", "callstack": stack}));
        let g = Group::of_row(&dynamic);
        assert!(g.has_frames());
        assert_eq!(
            g.label(),
            "step (train.py:40) → torch/nn/modules/linear.py:forward"
        );
        let empty = row(json!({"category": "dynamic_live_at_event", "callstack": ""}));
        assert!(!Group::of_row(&empty).has_frames());
        assert_eq!(Group::of_row(&empty).label(), "");
        let note = row(json!({
            "category": "dynamic_live_at_event",
            "callstack": "[no callstack]\nsecond line",
        }));
        assert!(!Group::of_row(&note).has_frames());
        assert_eq!(Group::of_row(&note).label(), "[no callstack]");
        let fixed = row(json!({"category": "static", "callstack": stack}));
        assert!(!Group::of_row(&fixed).has_frames());
        assert_eq!(Group::of_row(&fixed).label(), "/home/u/train.py:40 step");
    }
}
