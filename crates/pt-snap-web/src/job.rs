//! The snapshots of one job opened together (one per rank), as the page keeps them: each
//! file's `ranks` rows once its worker has answered, judged as a set by
//! `pt_snap_report::ranks`, the CLI's own rules.

use std::collections::HashMap;

use pt_snap_engine::{Failure, SummaryRead};
use pt_snap_model::names;
use pt_snap_parquet::SummaryRank;
use pt_snap_report::ranks::{
    assign_ranks, natural_cmp, DeviceSummary, FileSummary, InputKind, RanksReport,
};
use pt_snap_report::Metric;

/// Where one file of the job is.
#[derive(Debug, Clone, PartialEq)]
pub enum Member {
    Waiting,
    /// Its worker is importing or opening it: what it says it is doing.
    Working(String),
    Done(Vec<DeviceSummary>),
    Failed(Failure),
}

/// One side of a comparison: a file of the job (its index there) and one of its devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    pub file: usize,
    pub device: i64,
}

/// The files of a job, in natural name order (`rank2` before `rank10`), and how far each is.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub names: Vec<String>,
    pub members: Vec<Member>,
    pub metric: Metric,
    pub origin: Origin,
}

/// Where a job's numbers come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    /// Snapshots or databases opened here: each is summarised by a worker, ranks come from
    /// the names, and a rank can be opened.
    Files,
    /// An exported `summary` table (`pt-snap export --format parquet`): the ranks as the
    /// export stated them, and no snapshot to open.
    Summary(SummaryJob),
}

/// The job shown of an exported summary table, and what the table holds besides.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryJob {
    pub job: String,
    /// Every job the table has, in natural order.
    pub jobs: Vec<String>,
    /// The ranks read, as the export stated them: the first members, in order (the parts
    /// that failed follow them).
    pub files: Vec<FileSummary>,
    /// Parts read, of how many.
    pub read: (u64, u64),
}

/// An exported summary table being read: what its parts gave so far, and which are still
/// to read. `F` is how a part is held (a browser `File`; anything in tests).
#[derive(Debug)]
pub struct SummaryTable<F> {
    ranks: Vec<SummaryRank>,
    failed: Vec<(String, Failure)>,
    /// Parts answered (read or failed), of how many.
    read: (u64, u64),
    /// Parts not sent to a reader yet, with where each was found.
    waiting: Vec<(F, String)>,
    /// Parts sent to the reader and not answered yet.
    sent: Vec<String>,
    /// The job the user chose; else the one with the most ranks is shown.
    chosen: Option<String>,
}

impl<F> SummaryTable<F> {
    pub fn new(parts: Vec<(F, String)>) -> Self {
        SummaryTable {
            ranks: Vec::new(),
            failed: Vec::new(),
            read: (0, parts.len() as u64),
            waiting: parts,
            sent: Vec::new(),
            chosen: None,
        }
    }

    /// The next `n` waiting parts, now sent.
    pub fn next_batch(&mut self, n: usize) -> Vec<(F, String)> {
        let batch: Vec<(F, String)> = self.waiting.drain(..n.min(self.waiting.len())).collect();
        self.sent.extend(batch.iter().map(|(_, p)| p.clone()));
        batch
    }

    pub fn is_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// The reader's answer to the batch sent.
    pub fn answered(&mut self, reads: Vec<SummaryRead>) {
        self.sent.clear();
        self.read.0 += reads.len() as u64;
        for read in reads {
            match read.ranks {
                Ok(ranks) => self.ranks.extend(ranks),
                Err(why) => self.failed.push((read.path, why)),
            }
        }
    }

    /// The reader failed (a panic, a worker that died): the batch it was reading failed
    /// with it, the parts still waiting go to another reader.
    pub fn batch_failed(&mut self, why: &Failure) {
        self.read.0 += self.sent.len() as u64;
        let failed = self.sent.drain(..).map(|path| (path, why.clone()));
        self.failed.extend(failed);
    }

    /// No reader could start: listed with the parts, which stay unread.
    pub fn reader_failed(&mut self, why: Failure) {
        self.failed.push(("(the reader)".into(), why));
    }

    /// Shows `job` from now on (the user's choice).
    pub fn choose(&mut self, job: String) {
        self.chosen = Some(job);
    }

    /// The job shown, as read so far: the one chosen while the table has it, else the one
    /// with the most ranks (the first in natural order of those), which can change as parts
    /// arrive.
    pub fn job(&self, metric: Metric) -> Job {
        let job = self
            .chosen
            .clone()
            .filter(|j| self.ranks.iter().any(|r| &r.job == j))
            .or_else(|| self.largest_job())
            .unwrap_or_default();
        Job::from_summary(&job, &self.ranks, &self.failed, self.read, metric)
    }

    fn largest_job(&self) -> Option<String> {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for r in &self.ranks {
            *counts.entry(&r.job).or_default() += 1;
        }
        counts
            .into_iter()
            .min_by(|a, b| b.1.cmp(&a.1).then_with(|| natural_cmp(a.0, b.0)))
            .map(|(j, _)| j.to_owned())
    }
}

/// Which of the chosen paths are parts of an exported `summary` table: the `.parquet`
/// files under a `summary` directory (the export's layout, so that choosing the whole
/// export takes only its summary) or named `summary*.parquet`; failing both, every
/// `.parquet` file when only Parquet files were chosen, for a table another engine wrote
/// under a name of its own.
pub fn summary_parts(paths: &[String]) -> Vec<usize> {
    let parquet: Vec<usize> = (0..paths.len())
        .filter(|&i| paths[i].to_ascii_lowercase().ends_with(".parquet"))
        .collect();
    let summary: Vec<usize> = parquet
        .iter()
        .copied()
        .filter(|&i| {
            let mut parts = paths[i].split('/').rev();
            let name = parts.next().unwrap_or_default();
            name.to_ascii_lowercase().starts_with("summary") || parts.any(|d| d == "summary")
        })
        .collect();
    // Every Parquet file only when nothing else was chosen: a folder of snapshots with some
    // other `.parquet` beside them is still a folder of snapshots.
    if summary.is_empty() && parquet.len() == paths.len() {
        parquet
    } else {
        summary
    }
}

/// Which of the chosen files are the job, by their paths relative to what was chosen (a
/// folder's `webkitRelativePath`, `folder/x.pkl`; a dropped file's bare name): what
/// `pt-snap ranks` takes. From a folder only its own files (not its subfolders') that
/// [`names::taken_from_directory`]; never `<snapshot>.db` beside a snapshot of the set, which is that
/// snapshot's import (made by the CLI) and not another rank.
pub fn members(paths: &[String], folder: bool) -> Vec<usize> {
    let name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_owned();
    let kept: Vec<usize> = (0..paths.len())
        .filter(|&i| {
            !folder
                || (paths[i].matches('/').count() <= 1
                    && names::taken_from_directory(&name(&paths[i])))
        })
        .collect();
    let names: std::collections::HashSet<String> = kept.iter().map(|&i| name(&paths[i])).collect();
    kept.into_iter()
        .filter(|&i| {
            let n = name(&paths[i]);
            !n.strip_suffix(".db")
                .is_some_and(|snapshot| names.contains(snapshot))
        })
        .collect()
}

/// The order the files are summarised and shown in: natural order of their names.
pub fn order(names: &[String]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by(|&a, &b| natural_cmp(&names[a], &names[b]));
    order
}

impl Job {
    pub fn new(names: Vec<String>, metric: Metric) -> Self {
        let members = vec![Member::Waiting; names.len()];
        Job {
            names,
            members,
            metric,
            origin: Origin::Files,
        }
    }

    /// The ranks of `job` in the summary parts read so far (`ranks`; `failed`, the parts
    /// that could not be read), in rank order; `read` parts of how many.
    pub fn from_summary(
        job: &str,
        ranks: &[SummaryRank],
        failed: &[(String, Failure)],
        read: (u64, u64),
        metric: Metric,
    ) -> Self {
        let mut jobs: Vec<String> = ranks.iter().map(|r| r.job.clone()).collect();
        jobs.sort_by(|a, b| natural_cmp(a, b));
        jobs.dedup();
        let mut files: Vec<FileSummary> = ranks
            .iter()
            .filter(|r| r.job == job)
            .map(|r| r.file.clone())
            .collect();
        files.sort_by(|a, b| {
            a.rank
                .cmp(&b.rank)
                .then_with(|| natural_cmp(&a.path, &b.path))
        });
        let mut names: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
        let mut members: Vec<Member> = files
            .iter()
            .map(|f| match &f.devices {
                Ok(devices) => Member::Done(devices.clone()),
                Err(e) => Member::Failed(e.clone()),
            })
            .collect();
        for (path, why) in failed {
            names.push(path.clone());
            members.push(Member::Failed(why.clone()));
        }
        Job {
            names,
            members,
            metric,
            origin: Origin::Summary(SummaryJob {
                job: job.to_owned(),
                jobs,
                files,
                read,
            }),
        }
    }

    pub fn finished(&self) -> usize {
        self.members
            .iter()
            .filter(|m| matches!(m, Member::Done(_) | Member::Failed(_)))
            .count()
    }

    /// The files summarised so far, judged as one set: ranks come from the names of the
    /// whole job (so they do not change as files finish), medians and outliers from the
    /// files done.
    pub fn report(&self) -> RanksReport {
        if let Origin::Summary(s) = &self.origin {
            // As the export stated them, kept whole.
            let files = s.files.iter().filter(|f| f.devices.is_ok()).cloned();
            return RanksReport::new(self.metric, files.collect(), None);
        }
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        let assigned = assign_ranks(&names);
        let files = self
            .members
            .iter()
            .enumerate()
            .filter_map(|(i, m)| match m {
                Member::Done(devices) => Some(FileSummary {
                    path: self.names[i].clone(),
                    rank: assigned.ranks[i],
                    rank_source: assigned.source,
                    input: if self.names[i].to_ascii_lowercase().ends_with(".db") {
                        InputKind::Database
                    } else {
                        InputKind::Snapshot
                    },
                    db_path: None,
                    reused: None,
                    lenient_replay_issues: None,
                    devices: Ok(devices.clone()),
                }),
                _ => None,
            })
            .collect();
        RanksReport::new(self.metric, files, assigned.note)
    }

    /// The exported summary this job was read from, if it was.
    pub fn summary(&self) -> Option<&SummaryJob> {
        match &self.origin {
            Origin::Summary(s) => Some(s),
            Origin::Files => None,
        }
    }

    /// The job's index of `RanksReport::files[file]` of [`Job::report`], which keeps the
    /// finished files only, in the job's order.
    pub fn member_of(&self, file: usize) -> Option<usize> {
        self.members
            .iter()
            .enumerate()
            .filter(|(_, m)| matches!(m, Member::Done(_)))
            .nth(file)
            .map(|(i, _)| i)
    }

    /// The pair the Compare view shows until the user picks: the first rank summarised
    /// against the first outlier after it (else the second rank), the usual question of a
    /// triage.
    pub fn default_pair(&self) -> [Option<Pick>; 2] {
        let report = self.report();
        let rows: Vec<(Pick, bool)> = report
            .rows
            .iter()
            .filter_map(|r| {
                let s = r.summary.as_ref()?;
                let pick = Pick {
                    file: self.member_of(r.file)?,
                    device: s.device,
                };
                Some((pick, r.verdict.as_ref().is_some_and(|v| v.outlier)))
            })
            .collect();
        let b = rows.iter().skip(1).find(|r| r.1).or_else(|| rows.get(1));
        [rows.first().map(|r| r.0), b.map(|r| r.0)]
    }

    /// The files that failed, with why.
    pub fn failures(&self) -> Vec<(&str, &Failure)> {
        self.members
            .iter()
            .zip(&self.names)
            .filter_map(|(m, n)| match m {
                Member::Failed(f) => Some((n.as_str(), f)),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pt_snap_engine::ErrorCode;
    use pt_snap_report::ranks::RankSource;
    use pt_snap_report::{Peak, Peaks};

    /// A rank as an export states it: read from its name, from the snapshot's reused import.
    fn stated(path: String, rank: u64, active: i64) -> FileSummary {
        FileSummary {
            db_path: Some(format!("{path}.db")),
            path,
            rank,
            rank_source: RankSource::Name,
            input: InputKind::Snapshot,
            reused: Some(true),
            lenient_replay_issues: None,
            devices: Ok(vec![device(active)]),
        }
    }

    fn device(active: i64) -> DeviceSummary {
        let peak = |b: i64| Peak {
            bytes: Some(b),
            event_id: Some(1),
        };
        DeviceSummary {
            device: 0,
            peaks: Peaks {
                allocated: peak(active),
                active: peak(active),
                reserved: peak(active + 100),
            },
            reserved_minus_allocated: Some(100),
            oom_events: 0,
            top_group: None,
            peak_times: Default::default(),
        }
    }

    #[test]
    fn a_folder_gives_what_ranks_takes() {
        let paths: Vec<String> = [
            "job/rank0.pkl",
            "job/rank0.pkl.db",
            "job/rank1.pkl",
            "job/old/rank1.pkl",
            "job/notes.txt",
            "job/other.db",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            members(&paths, true),
            [0, 2, 5],
            "own files, not a snapshot's import"
        );
        let dropped: Vec<String> = ["rank0.pkl", "rank0.pkl.db", "notes.txt"]
            .map(String::from)
            .to_vec();
        assert_eq!(members(&dropped, false), [0, 2]);
        let names: Vec<String> = ["rank10.pkl", "rank2.pkl", "rank1.pkl"]
            .map(String::from)
            .to_vec();
        assert_eq!(order(&names), [2, 1, 0]);
    }

    #[test]
    fn the_set_is_judged_as_the_cli_does_while_files_finish() {
        let names: Vec<String> = (0..6).map(|r| format!("rank{r}.pkl")).collect();
        let mut job = Job::new(names, Metric::Active);
        for r in 0..5 {
            job.members[r] = Member::Done(vec![device(if r == 3 { 2_000 } else { 1_000 })]);
        }
        job.members[5] = Member::Working("decoding".into());
        let report = job.report();
        assert_eq!(job.finished(), 5);
        assert_eq!(report.rows.len(), 5);
        let flagged: Vec<u64> = report
            .rows
            .iter()
            .filter(|r| r.verdict.as_ref().is_some_and(|v| v.outlier))
            .map(|r| report.files[r.file].rank)
            .collect();
        assert_eq!(flagged, [3]);
        job.members[5] = Member::Failed(Failure::new(ErrorCode::SnapshotInvalid, "x"));
        assert_eq!(job.finished(), 6);
        assert_eq!(
            job.failures(),
            [("rank5.pkl", &Failure::new(ErrorCode::SnapshotInvalid, "x"))]
        );
        assert_eq!(job.report().rows.len(), 5, "a failed file has no row here");
        let pick = |file| Some(Pick { file, device: 0 });
        assert_eq!(
            job.default_pair(),
            [pick(0), pick(3)],
            "the first rank and the outlier"
        );
        job.members[1] = Member::Waiting;
        assert_eq!(
            job.member_of(1),
            Some(2),
            "the report's second file is the job's third"
        );
        assert_eq!(job.member_of(4), None);
        job.members[3] = Member::Done(vec![device(1_000)]);
        assert_eq!(
            job.default_pair(),
            [pick(0), pick(2)],
            "no outlier: the second rank"
        );
        let mut lone = Job::new(vec!["rank0.pkl".into()], Metric::Active);
        assert_eq!(lone.default_pair(), [None, None]);
        lone.members[0] = Member::Done(vec![device(1_000)]);
        assert_eq!(lone.default_pair(), [pick(0), None]);
    }

    #[test]
    fn the_summary_parts_of_what_was_chosen() {
        let paths: Vec<String> = [
            "out/events/job=a/rank=0/part-0.parquet",
            "out/summary/job=a/rank=0/part-0.parquet",
            "out/summary/job=a/rank=1/part-0.parquet",
            "out/blocks/job=a/rank=0/part-0.parquet",
            "rank0.pkl",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(summary_parts(&paths), [1, 2], "a whole export: its summary");
        let one: Vec<String> = ["Summary.PARQUET", "notes.txt"].map(String::from).to_vec();
        assert_eq!(summary_parts(&one), [0]);
        let named: Vec<String> = ["ranks_2026.parquet"].map(String::from).to_vec();
        assert_eq!(
            summary_parts(&named),
            [0],
            "no summary by name: every Parquet file"
        );
        assert!(summary_parts(&["rank0.pkl".to_owned()]).is_empty());
        let beside: Vec<String> = ["job/rank0.pkl", "job/metrics.parquet"]
            .map(String::from)
            .to_vec();
        assert!(
            summary_parts(&beside).is_empty(),
            "snapshots with a stray Parquet file"
        );
    }

    #[test]
    fn a_summary_table_is_judged_as_the_cli_does_with_the_ranks_it_states() {
        let rank = |job: &str, rank: u64, active: i64| SummaryRank {
            job: job.into(),
            file: stated(format!("/runs/{job}/r{rank}.pkl"), rank, active),
        };
        // Out of order, two jobs, rank 40 the outlier of job "b".
        let mut ranks: Vec<SummaryRank> = (0..6)
            .rev()
            .map(|r| rank("b", r * 10, if r == 4 { 5_000 } else { 1_000 }))
            .collect();
        ranks.push(rank("a", 0, 7));
        let failed = [(
            "x/summary/job=b/rank=9/part-0.parquet".to_owned(),
            Failure::new(ErrorCode::InvalidParameter, "not a summary"),
        )];
        let job = Job::from_summary("b", &ranks, &failed, (8, 9), Metric::Active);
        let summary = job.summary().expect("from a summary");
        assert_eq!(summary.jobs, ["a", "b"]);
        assert_eq!(summary.read, (8, 9));
        let report = job.report();
        let stated: Vec<u64> = report.files.iter().map(|f| f.rank).collect();
        assert_eq!(stated, [0, 10, 20, 30, 40, 50], "as stated, in rank order");
        assert!(
            report.files.iter().all(|f| f.reused == Some(true)
                && f.db_path.as_deref() == Some(&format!("{}.db", f.path)[..])),
            "what the export said of each file, kept"
        );
        let flagged: Vec<u64> = report
            .outliers()
            .map(|r| report.files[r.file].rank)
            .collect();
        assert_eq!(flagged, [40]);
        assert_eq!(report.rank_note, None);
        assert_eq!(job.failures().len(), 1, "the part that could not be read");
        assert_eq!(job.finished(), 7);
    }

    #[test]
    fn a_summary_table_read_in_batches_survives_a_failed_reader() {
        let rank = |job: &str, rank: u64| SummaryRank {
            job: job.into(),
            file: stated(format!("{job}/r{rank}.pkl"), rank, 1_000),
        };
        let read = |path: &str, ranks: Vec<SummaryRank>| SummaryRead {
            path: path.into(),
            ranks: Ok(ranks),
        };
        let parts: Vec<((), String)> = (0..5).map(|i| ((), format!("p{i}"))).collect();
        let mut table = SummaryTable::new(parts);
        let batch = table.next_batch(2);
        assert_eq!(batch.len(), 2);
        table.answered(vec![
            read("p0", vec![rank("a", 0)]),
            read("p1", vec![rank("a", 1)]),
        ]);
        let job = table.job(Metric::Active);
        assert_eq!(job.summary().map(|s| s.job.as_str()), Some("a"));
        assert_eq!(job.summary().map(|s| s.read), Some((2, 5)));
        // The reader dies on the next batch: those parts fail, the last one still waits.
        table.next_batch(2);
        let died = Failure::new(ErrorCode::Internal, "The worker died.");
        table.batch_failed(&died);
        assert!(table.is_waiting());
        let job = table.job(Metric::Active);
        assert_eq!(
            job.failures(),
            [("p2", &died), ("p3", &died)],
            "the batch that was being read"
        );
        assert_eq!(job.summary().map(|s| s.read), Some((4, 5)));
        // A later batch makes job "b" the largest: shown unless the user chose another.
        assert_eq!(table.next_batch(32).len(), 1);
        table.answered(vec![read("p4", (0..3).map(|r| rank("b", r)).collect())]);
        assert!(!table.is_waiting());
        let shown = |t: &SummaryTable<()>| t.job(Metric::Active).summary().unwrap().job.clone();
        assert_eq!(shown(&table), "b");
        table.choose("a".into());
        assert_eq!(shown(&table), "a");
        table.choose("gone".into());
        assert_eq!(shown(&table), "b", "a job the table lacks is not shown");
        assert_eq!(table.job(Metric::Active).summary().unwrap().read, (5, 5));
    }
}
