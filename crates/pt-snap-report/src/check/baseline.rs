//! The baseline: a small, readable JSON file meant to be committed beside the code it
//! guards. One entry per (rank, device): each peak's maximum over the repeats and their
//! spread, the limit and how it was derived, and what was live at the baseline's peak by
//! site and by category — enough to explain a regression without the baseline's snapshot.
//! Its keys come in a fixed order, so re-recording the same runs rewrites the same bytes.

use serde::{Deserialize, Serialize};

use super::measure::{Measured, SiteBytes};
use crate::capture::Capture;
use crate::peak::Metric;

/// The `format` of the files this version writes and reads.
pub const BASELINE_FORMAT: &str = "pt-snap-baseline-1";

/// Sites kept per entry: the largest; the rest are summed in `other_sites_bytes`.
pub const SITES_KEPT: usize = 200;

/// The default limit with fewer than three repeats: the peak plus this much of it.
pub const DEFAULT_PERCENT: f64 = 2.0;
/// With three or more repeats: the peak plus this many times their spread…
pub const SPREAD_FACTOR: i64 = 3;
/// …but at least this much of the peak: three repeats can agree to the byte by chance.
pub const SPREAD_FLOOR_PERCENT: f64 = 0.25;

/// How much above the baseline's peak a run may go, as `--tolerance` gives it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// `2%`: a share of the baseline's peak.
    Percent(f64),
    /// `64MiB`, `1000000`: bytes.
    Bytes(i64),
}

impl Tolerance {
    /// `PCT%` or a byte count with an optional binary or decimal unit (`KiB`, `MB`, `GiB`…).
    pub fn parse(text: &str) -> Result<Tolerance, String> {
        let t = text.trim();
        let bad = || {
            format!(
                "invalid tolerance {text:?}: give a percentage of the peak (2%) or bytes \
                 (67108864, 64MiB, 1.5GB)"
            )
        };
        if let Some(p) = t.strip_suffix('%') {
            let p: f64 = p.trim().parse().map_err(|_| bad())?;
            return if p.is_finite() && p >= 0.0 {
                Ok(Tolerance::Percent(p))
            } else {
                Err(bad())
            };
        }
        let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let n: f64 = number.trim().parse().map_err(|_| bad())?;
        let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1.0,
            "kb" => 1e3,
            "mb" => 1e6,
            "gb" => 1e9,
            "tb" => 1e12,
            "kib" => 1024.0,
            "mib" => 1024.0 * 1024.0,
            "gib" => 1024.0 * 1024.0 * 1024.0,
            "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
            _ => return Err(bad()),
        };
        let bytes = n * scale;
        if n.is_finite() && bytes >= 0.0 && bytes < i64::MAX as f64 {
            Ok(Tolerance::Bytes(bytes.round() as i64))
        } else {
            Err(bad())
        }
    }
}

/// How every entry's limit was derived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum LimitRule {
    /// The peak plus `factor` × the repeats' spread, at least `floor_percent` of the peak.
    Spread {
        factor: i64,
        floor_percent: f64,
        text: String,
    },
    /// The peak plus `percent` of it.
    Percent { percent: f64, text: String },
    /// The peak plus `bytes`.
    Bytes { bytes: i64, text: String },
}

impl LimitRule {
    /// The rule for `repeats` runs, `given` by `--tolerance` or the default.
    pub fn for_repeats(repeats: usize, given: Option<Tolerance>) -> LimitRule {
        match given {
            Some(Tolerance::Percent(percent)) => LimitRule::Percent {
                percent,
                text: format!("the baseline's peak + {percent}% of it (--tolerance)"),
            },
            Some(Tolerance::Bytes(bytes)) => LimitRule::Bytes {
                bytes,
                text: format!("the baseline's peak + {bytes} bytes (--tolerance)"),
            },
            None if repeats >= 3 => LimitRule::Spread {
                factor: SPREAD_FACTOR,
                floor_percent: SPREAD_FLOOR_PERCENT,
                text: format!(
                    "the largest peak of {repeats} repeats + {SPREAD_FACTOR} × their spread \
                     (largest − smallest), at least {SPREAD_FLOOR_PERCENT}% of the peak"
                ),
            },
            None => LimitRule::Percent {
                percent: DEFAULT_PERCENT,
                text: format!(
                    "the largest peak of {repeats} run{} + {DEFAULT_PERCENT}% of it (record \
                     three or more repeats to derive the limit from their spread)",
                    if repeats == 1 { "" } else { "s" }
                ),
            },
        }
    }

    /// How far above `peak` the limit is, given the repeats' `spread`.
    pub fn tolerance(&self, peak: i64, spread: i64) -> i64 {
        let share = |percent: f64| (peak.max(0) as f64 * percent / 100.0).ceil() as i64;
        match self {
            LimitRule::Spread {
                factor,
                floor_percent,
                ..
            } => spread.saturating_mul(*factor).max(share(*floor_percent)),
            LimitRule::Percent { percent, .. } => share(*percent),
            LimitRule::Bytes { bytes, .. } => *bytes,
        }
    }

    pub fn text(&self) -> &str {
        match self {
            LimitRule::Spread { text, .. }
            | LimitRule::Percent { text, .. }
            | LimitRule::Bytes { text, .. } => text,
        }
    }
}

/// One counter's peaks over the repeats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeakStat {
    pub max: i64,
    pub min: i64,
    pub spread: i64,
    /// Each repeat's peak, in the order the repeats were given.
    pub values: Vec<i64>,
}

impl PeakStat {
    fn of(values: Vec<i64>) -> PeakStat {
        let max = values.iter().copied().max().unwrap_or(0);
        let min = values.iter().copied().min().unwrap_or(0);
        PeakStat {
            max,
            min,
            spread: max - min,
            values,
        }
    }
}

/// The three counters' peaks over the repeats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeakStats {
    pub allocated: PeakStat,
    pub active: PeakStat,
    pub reserved: PeakStat,
}

/// A category's bytes at the baseline's peak.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CategoryBytes {
    pub category: String,
    pub bytes: i64,
}

/// One (rank, device) of the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub rank: u64,
    pub device: i64,
    pub peaks: PeakStats,
    /// The metric's largest peak over the repeats.
    pub baseline_peak: i64,
    pub tolerance: i64,
    /// `baseline_peak + tolerance`: a run's peak above it regressed.
    pub limit: i64,
    /// Which repeat had the largest peak (0-based, in the order given): the sites and
    /// categories below are that run's, at its peak event.
    pub repeat: usize,
    pub event_id: Option<i64>,
    pub live_bytes: Option<i64>,
    /// The largest [`SITES_KEPT`] sites live at that peak.
    pub sites: Vec<SiteBytes>,
    /// The bytes of the sites beyond those kept.
    pub other_sites_bytes: i64,
    pub categories: Vec<CategoryBytes>,
    pub capture: Capture,
}

impl Entry {
    /// The peaks of `metric` over the repeats.
    pub fn peaks_of(&self, metric: Metric) -> &PeakStat {
        match metric {
            Metric::Allocated => &self.peaks.allocated,
            Metric::Active => &self.peaks.active,
            Metric::Reserved => &self.peaks.reserved,
        }
    }
}

/// A recorded baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub format: String,
    pub pt_snap_version: String,
    pub metric: Metric,
    /// The one device recorded (`-d`), judged alone; `None`: every device with events.
    pub device: Option<i64>,
    pub repeats: usize,
    pub limit_rule: LimitRule,
    pub entries: Vec<Entry>,
}

impl Baseline {
    /// A baseline of `repeats` (each a run: its (rank, device) measurements), which must all
    /// hold the same (rank, device) pairs.
    pub fn record(
        metric: Metric,
        device: Option<i64>,
        tolerance: Option<Tolerance>,
        repeats: &[Vec<(u64, Measured)>],
    ) -> Result<Baseline, String> {
        let keys = |run: &[(u64, Measured)]| {
            let mut k: Vec<(u64, i64)> = run.iter().map(|(r, m)| (*r, m.device)).collect();
            k.sort_unstable();
            k
        };
        let first = repeats.first().ok_or("no run to record")?;
        let pairs = keys(first);
        if pairs.is_empty() {
            return Err("the run has no device with trace events to record".into());
        }
        for (i, run) in repeats.iter().enumerate().skip(1) {
            if keys(run) != pairs {
                return Err(format!(
                    "repeat {} holds other ranks or devices than repeat 1 ({:?} against {:?}); \
                     every repeat must be the same configuration",
                    i + 1,
                    keys(run),
                    pairs
                ));
            }
        }
        let limit_rule = LimitRule::for_repeats(repeats.len(), tolerance);
        let entries = pairs
            .iter()
            .map(|&(rank, device)| {
                let runs: Vec<&Measured> = repeats
                    .iter()
                    .map(|run| {
                        &run.iter()
                            .find(|(r, m)| *r == rank && m.device == device)
                            .expect("same pairs")
                            .1
                    })
                    .collect();
                entry(rank, device, metric, &limit_rule, &runs)
            })
            .collect();
        Ok(Baseline {
            format: BASELINE_FORMAT.to_owned(),
            pt_snap_version: env!("CARGO_PKG_VERSION").to_owned(),
            metric,
            device,
            repeats: repeats.len(),
            limit_rule,
            entries,
        })
    }

    /// The baseline in a file's text, checked to be one this version can judge with.
    pub fn parse(text: &str) -> Result<Baseline, String> {
        let baseline: Baseline = serde_json::from_str(text).map_err(|e| format!("{e}"))?;
        if baseline.format != BASELINE_FORMAT {
            return Err(format!(
                "its format is {:?}, not {BASELINE_FORMAT:?}",
                baseline.format
            ));
        }
        if baseline.entries.is_empty() {
            return Err("it has no entry".into());
        }
        for e in &baseline.entries {
            if e.limit < e.baseline_peak || e.tolerance != e.limit - e.baseline_peak {
                return Err(format!(
                    "rank {} device {}: its limit {} is not its peak {} plus its tolerance {}",
                    e.rank, e.device, e.limit, e.baseline_peak, e.tolerance
                ));
            }
        }
        let mut keys: Vec<(u64, i64)> = baseline
            .entries
            .iter()
            .map(|e| (e.rank, e.device))
            .collect();
        keys.sort_unstable();
        if keys.windows(2).any(|w| w[0] == w[1]) {
            return Err("it has two entries for one rank and device".into());
        }
        Ok(baseline)
    }

    /// The file's text: pretty JSON, keys in a fixed order, a final newline.
    pub fn to_text(&self) -> String {
        serde_json::to_string_pretty(self).expect("a baseline serializes") + "\n"
    }
}

fn entry(rank: u64, device: i64, metric: Metric, rule: &LimitRule, runs: &[&Measured]) -> Entry {
    let stat = |m: Metric| {
        PeakStat::of(
            runs.iter()
                .map(|r| r.peaks.get(m).bytes.unwrap_or(0))
                .collect(),
        )
    };
    let peaks = PeakStats {
        allocated: stat(Metric::Allocated),
        active: stat(Metric::Active),
        reserved: stat(Metric::Reserved),
    };
    let of_metric = match metric {
        Metric::Allocated => &peaks.allocated,
        Metric::Active => &peaks.active,
        Metric::Reserved => &peaks.reserved,
    }
    .clone();
    let repeat = of_metric
        .values
        .iter()
        .position(|v| *v == of_metric.max)
        .unwrap_or(0);
    let chosen = runs[repeat];
    let tolerance = rule.tolerance(of_metric.max, of_metric.spread);
    let of_metric = &of_metric;
    let kept = chosen.sites.len().min(SITES_KEPT);
    Entry {
        rank,
        device,
        baseline_peak: of_metric.max,
        tolerance,
        limit: of_metric.max.saturating_add(tolerance),
        repeat,
        event_id: chosen.peaks.get(metric).event_id,
        live_bytes: chosen.live_bytes,
        sites: chosen.sites[..kept].to_vec(),
        other_sites_bytes: chosen.sites[kept..].iter().map(|s| s.bytes).sum(),
        categories: chosen
            .categories
            .iter()
            .map(|(category, bytes)| CategoryBytes {
                category: category.clone(),
                bytes: *bytes,
            })
            .collect(),
        capture: chosen.capture.clone(),
        peaks,
    }
}
