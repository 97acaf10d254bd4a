//! `ranks --json`: the rows and the set's fields, in the contract's order.

use serde_json::{json, Map, Value as Json};

use super::{OutlierRule, RankRow, RanksReport, TopGroup};
use crate::peak::Metric;
use pt_snap_contract::Failure;

impl RanksReport {
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
}
