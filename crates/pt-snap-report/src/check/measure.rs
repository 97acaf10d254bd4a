//! One (rank, device) of a run measured: its peaks, what was live at the chosen metric's
//! peak by allocation site and category, and how the file was captured.

use std::collections::BTreeMap;

use pt_snap_query::category::{CategoryRules, MEMORY_CATEGORIES};
use pt_snap_query::{QueryError, Source};
use serde::{Deserialize, Serialize};

use crate::capture::{capture_of, Capture};

use crate::peak::{peak_memory, Metric, PeakRequest, Peaks};
use crate::stack;

/// What a (rank, device) of a run holds at its peak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub device: i64,
    pub metric: Metric,
    pub peaks: Peaks,
    /// The active counter at the metric's peak event: what the sites add up to (every block
    /// live there, pending frees included, as `report peak-memory` counts them).
    pub live_bytes: Option<i64>,
    /// Every site live at the metric's peak, by bytes descending (then label).
    pub sites: Vec<SiteBytes>,
    /// The same bytes by memory category, in [`MEMORY_CATEGORIES`] order, empty ones left out.
    pub categories: Vec<(String, i64)>,
    pub capture: Capture,
}

/// The blocks of one allocation site live at a peak.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteBytes {
    /// [`crate::stack::label`] of the allocating stack; for memory without a stack,
    /// `[static]` (live before recording, never freed), `[preexisting live]` (live before
    /// recording, freed later) or `[missing callstack]`.
    pub label: String,
    /// The memory category holding most of the site's bytes (the built-in rules).
    pub category: String,
    pub bytes: i64,
    pub blocks: i64,
}

/// A site's bytes gathered group by group: its total, and its bytes by category.
#[derive(Default)]
pub(super) struct SiteFold {
    sites: BTreeMap<String, (i64, i64, BTreeMap<&'static str, i64>)>,
}

/// The label of memory without a stack, by the attribution's category of a block.
pub(crate) fn stackless_label(category: &str) -> &'static str {
    match category {
        "static" => "[static]",
        "preexisting_live_at_event" => "[preexisting live]",
        _ => "[missing callstack]",
    }
}

impl SiteFold {
    /// `bytes` in `blocks` blocks at `label`, whose stack `rules` put in `category`.
    pub(super) fn add(&mut self, label: String, category: &'static str, bytes: i64, blocks: i64) {
        let site = self.sites.entry(label).or_default();
        site.0 += bytes;
        site.1 += blocks;
        *site.2.entry(category).or_default() += bytes;
    }

    /// The sites by bytes descending, and the bytes by category.
    pub(super) fn finish(self) -> (Vec<SiteBytes>, Vec<(String, i64)>) {
        let mut by_category: BTreeMap<&'static str, i64> = BTreeMap::new();
        let mut sites: Vec<SiteBytes> = self
            .sites
            .into_iter()
            .map(|(label, (bytes, blocks, categories))| {
                for (c, b) in &categories {
                    *by_category.entry(c).or_default() += b;
                }
                // The category with the most bytes; ties to the first in the rules' order.
                let category = MEMORY_CATEGORIES
                    .iter()
                    .copied()
                    .filter(|c| categories.contains_key(c))
                    .max_by_key(|c| (categories[c], std::cmp::Reverse(rank_of(c))))
                    .unwrap_or("unknown");
                SiteBytes {
                    label,
                    category: category.to_owned(),
                    bytes,
                    blocks,
                }
            })
            .collect();
        sites.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.label.cmp(&b.label)));
        let categories = MEMORY_CATEGORIES
            .iter()
            .filter_map(|c| by_category.get(c).map(|b| (c.to_string(), *b)))
            .filter(|(_, b)| *b != 0)
            .collect();
        (sites, categories)
    }
}

fn rank_of(category: &str) -> usize {
    MEMORY_CATEGORIES
        .iter()
        .position(|c| *c == category)
        .unwrap_or(MEMORY_CATEGORIES.len())
}

/// The category the built-in rules give a callstack text (`None`: no allocation event),
/// as one of [`MEMORY_CATEGORIES`].
pub(super) fn category_of(text: Option<&str>) -> &'static str {
    let judged = CategoryRules::builtin().categorise_text(text).category;
    MEMORY_CATEGORIES
        .iter()
        .copied()
        .find(|c| *c == judged)
        .unwrap_or("unknown")
}

/// Measures `device` of `source`: the `report peak-memory` composition at `metric`'s peak
/// with every group kept, regrouped by site; the capture from `callstack_analysis`, the
/// event times and the memory without a stack at the active peak.
pub fn measure_source(
    source: &dyn Source,
    device: i64,
    metric: Metric,
) -> Result<Measured, QueryError> {
    let report = peak_memory(source, &PeakRequest::every_group(Some(device), metric))?;
    if report.has_more || report.truncated {
        return Err(QueryError::Failed(
            "the attribution at the peak came back incomplete, so its sites cannot be judged"
                .into(),
        ));
    }
    let mut fold = SiteFold::default();
    for group in report.groups() {
        let kind = group.stack_kind.unwrap_or(group.category);
        let (label, category) = if group.has_frames() {
            let label = stack::label_text(group.callstack)
                .unwrap_or_else(|| stackless_label("missing").to_owned());
            (label, category_of(Some(group.callstack)))
        } else if kind == "static" || kind == "preexisting_live_at_event" {
            (stackless_label(kind).to_owned(), category_of(None))
        } else {
            (stackless_label("missing").to_owned(), category_of(Some("")))
        };
        fold.add(label, category, group.size_bytes, group.block_count);
    }
    let (sites, categories) = fold.finish();
    let peaks = report.peak.unwrap_or_default();
    let active = peaks.active.event_id.zip(peaks.active.bytes);
    let capture = capture_of(source, report.device_id, active)?;
    Ok(Measured {
        device: report.device_id,
        metric,
        peaks,
        live_bytes: report.active_bytes_at_event,
        sites,
        categories,
        capture,
    })
}
