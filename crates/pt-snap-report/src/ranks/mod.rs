//! `ranks`: the snapshots of a distributed job side by side — one summary row per (file,
//! device), each rank's peaks and what held the memory at its peak, and the ranks whose peak
//! stands out from the others.
//!
//! Everything here is a composition of templates through a [`Source`](pt_snap_query::Source)
//! ([`summarize`]), the same rows from a snapshot replayed without a database
//! ([`summarize_replayed`]), or arithmetic on their answers ([`RanksReport::new`]); reading
//! rank numbers from file names ([`rank_from_name`], [`assign_ranks`]) is pure. The caller
//! lists the files, opens or replays them and keeps only each file's [`FileSummary`], so a
//! set of hundreds of files costs one row each.
//!
//! | file | job |
//! | --- | --- |
//! | `naming` | rank numbers from file names, natural path order |
//! | `summary` | one file's devices from the templates ([`summarize`]) |
//! | `stream` | the same rows from the replay alone ([`summarize_replayed`]) |
//! | `outliers` | the median, the MAD and each row's verdict ([`OutlierRule`]) |
//! | `json` | `ranks --json`'s rows and fields |
//! | `text` | the table printed without `--json` |

use pt_snap_contract::Failure;

use crate::peak::Metric;

mod json;
mod naming;
mod outliers;
mod stream;
mod summary;
mod text;

pub use naming::{assign_ranks, natural_cmp, rank_from_name, RankAssignment, RankSource};
use outliers::median;
pub use outliers::{Medians, OutlierRule, Verdict};
pub use stream::summarize_replayed;
pub use summary::{site, summarize, DeviceSummary, DynamicGroup, Frame, PeakTimes, TopGroup};

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
    /// The database read: the file itself, or the snapshot's import beside it; `None` where
    /// the replay alone answered.
    pub db_path: Option<String>,
    /// `Some(true)` for a snapshot read from the database its import left (the browser's
    /// exported summaries say so too); `None` for a snapshot replayed, and for a database.
    pub reused: Option<bool>,
    /// Events a lenient replay applied from the trace alone (`import --lenient`); `None` for a
    /// strict replay.
    pub lenient_replay_issues: Option<i64>,
    /// Why a file has no summary: the failure the command would have failed with.
    pub devices: Result<Vec<DeviceSummary>, Failure>,
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peak::Peaks;
    use pt_snap_contract::ErrorCode;
    use serde_json::Value as Json;

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
            &Failure::new(ErrorCode::SnapshotInvalid, "1 of 2 files failed"),
        );
        crate::commands::find("ranks")
            .unwrap()
            .check_document(&document, true)
            .unwrap();
    }
}
