//! `pt-snap check` (issue 32): a memory gate for CI that explains itself. A run — one
//! snapshot or database per (rank, device) — is [measured](Measured): its three peaks and
//! what was live at the chosen metric's peak by allocation site ([`crate::stack::label`]:
//! the user's innermost frame, then the torch call) and memory category. A [`Baseline`] is
//! recorded from repeats of one configuration: each peak's maximum and spread, the limit
//! and how it was derived, and the sites and categories at the baseline's peak, so a
//! regression is explained without the baseline's snapshot. [`judge`] holds a new run to it:
//! per (rank, device) the peak against its limit, and the sites that grew, matched by label.
//!
//! A run is measured from a database through the query interface ([`measure_source`]) or,
//! much faster, from a snapshot replayed alone ([`measure_replayed`]), without writing a
//! database; both give the same numbers (`tests/replayed.rs` holds them to each other on
//! every fixture).

mod baseline;
mod format;
mod measure;
mod stream;

pub use crate::capture::{Capture, StackCapture};
pub use baseline::{Baseline, Entry, LimitRule, PeakStat, Tolerance, BASELINE_FORMAT};
pub use format::Format;
pub(crate) use measure::stackless_label;
pub use measure::{measure_source, Measured, SiteBytes};
pub use stream::measure_replayed;

use serde::Serialize;

use crate::peak::Metric;

/// One (rank, device) of a run held to its baseline entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub rank: u64,
    pub device: i64,
    pub baseline_peak: i64,
    pub peak: i64,
    pub delta: i64,
    pub limit: i64,
    pub verdict: Verdict,
    /// Sites holding more at this run's peak than at the baseline's, by delta descending.
    pub growers: Vec<Grower>,
    /// The run's peak event.
    pub event_id: Option<i64>,
}

/// Whether a peak is within its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Regressed,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Regressed => "regressed",
        }
    }
}

/// A site that holds more at the run's peak than at the baseline's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grower {
    pub label: String,
    pub category: String,
    pub baseline_bytes: i64,
    pub bytes: i64,
    pub delta: i64,
}

/// A run judged against a baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgement {
    pub verdict: Verdict,
    pub metric: Metric,
    /// How the limits were derived, as the baseline states it.
    pub limit_rule: LimitRule,
    pub checks: Vec<Check>,
}

/// Growers kept per check: enough to name what grew, small enough for a PR comment.
pub const GROWERS: usize = 10;

/// Why a run cannot be judged against a baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// (rank, device) pairs the baseline has and the run does not, and the reverse.
    Ranks {
        missing: Vec<(u64, i64)>,
        new: Vec<(u64, i64)>,
    },
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Mismatch::Ranks { missing, new } = self;
        let list = |pairs: &[(u64, i64)]| {
            pairs
                .iter()
                .map(|(r, d)| format!("rank {r} device {d}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !missing.is_empty() {
            parts.push(format!("missing from the run: {}", list(missing)));
        }
        if !new.is_empty() {
            parts.push(format!("not in the baseline: {}", list(new)));
        }
        write!(
            f,
            "the run's ranks and devices differ from the baseline's ({})",
            parts.join("; ")
        )
    }
}

/// Holds `run` (each measured (rank, device)) to `baseline`. Every (rank, device) of either
/// must be in both: a run is never judged on part of its ranks.
pub fn judge(baseline: &Baseline, run: &[(u64, Measured)]) -> Result<Judgement, Mismatch> {
    let key = |rank: u64, m: &Measured| (rank, m.device);
    let mut missing: Vec<(u64, i64)> = baseline
        .entries
        .iter()
        .map(|e| (e.rank, e.device))
        .filter(|k| !run.iter().any(|(r, m)| key(*r, m) == *k))
        .collect();
    let mut new: Vec<(u64, i64)> = run
        .iter()
        .map(|(r, m)| key(*r, m))
        .filter(|k| !baseline.entries.iter().any(|e| (e.rank, e.device) == *k))
        .collect();
    if !missing.is_empty() || !new.is_empty() {
        missing.sort_unstable();
        new.sort_unstable();
        return Err(Mismatch::Ranks { missing, new });
    }
    let mut checks: Vec<Check> = run
        .iter()
        .map(|(rank, m)| {
            let entry = baseline
                .entries
                .iter()
                .find(|e| (e.rank, e.device) == key(*rank, m))
                .expect("matched above");
            check_one(baseline.metric, *rank, entry, m)
        })
        .collect();
    checks.sort_by_key(|c| (c.rank, c.device));
    let verdict = if checks.iter().any(|c| c.verdict == Verdict::Regressed) {
        Verdict::Regressed
    } else {
        Verdict::Pass
    };
    Ok(Judgement {
        verdict,
        metric: baseline.metric,
        limit_rule: baseline.limit_rule.clone(),
        checks,
    })
}

fn check_one(metric: Metric, rank: u64, entry: &Entry, m: &Measured) -> Check {
    let peak = m.peaks.get(metric).bytes.unwrap_or(0);
    let mut growers: Vec<Grower> = Vec::new();
    for site in &m.sites {
        let before = entry
            .sites
            .iter()
            .find(|s| s.label == site.label)
            .map_or(0, |s| s.bytes);
        if site.bytes > before {
            growers.push(Grower {
                label: site.label.clone(),
                category: site.category.clone(),
                baseline_bytes: before,
                bytes: site.bytes,
                delta: site.bytes - before,
            });
        }
    }
    growers.sort_by(|a, b| b.delta.cmp(&a.delta).then_with(|| a.label.cmp(&b.label)));
    growers.truncate(GROWERS);
    Check {
        rank,
        device: m.device,
        baseline_peak: entry.baseline_peak,
        peak,
        delta: peak - entry.baseline_peak,
        limit: entry.limit,
        verdict: if peak > entry.limit {
            Verdict::Regressed
        } else {
            Verdict::Pass
        },
        growers,
        event_id: m.peaks.get(metric).event_id,
    }
}
