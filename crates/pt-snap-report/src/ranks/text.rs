//! The table `ranks` prints without `--json`.

use std::fmt::Write as _;

use pt_snap_query::NoTimes;

use super::{site, FileSummary, RankRow, RankSource, RanksReport, TopGroup};
use crate::peak::Metric;
use crate::units::{human_bytes, utc};

impl RanksReport {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars() {
        assert_eq!(bar(10, 10, 4), "████");
        assert_eq!(bar(5, 10, 4), "██");
        assert_eq!(bar(1, 16, 2), "▏");
        assert_eq!(bar(0, 10, 4), "");
    }
}
