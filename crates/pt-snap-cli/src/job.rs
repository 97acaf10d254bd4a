//! The files of a job as `ranks`, `export` and `check` take them (`pt_snap_store::inputs`):
//! listed and ranked by name, worked on a few at a time (`pt_snap_store::pool`) under one
//! progress bar. A database is opened read-only; a snapshot is either imported or reused
//! beside itself by the strict replay, as a plain `pt-snap import` makes it
//! ([`Job::database`], for `export`), or replayed the same way without writing anything
//! ([`Job::replay_each`], for `check` and for `ranks` where no import is there to read).

use std::path::{Path, PathBuf};

use pt_snap_contract::{hint, Failure};
use pt_snap_query::Analyzer;
use pt_snap_report::check::{measure_replayed, measure_source, Measured};
use pt_snap_report::ranks::{assign_ranks, RankAssignment};
use pt_snap_report::replayed::Replayed;
use pt_snap_report::Metric;
use pt_snap_store::inputs::{self, Input, InputKind};
use pt_snap_store::{open, ReplayMode};

use crate::error::{CliError, CliResult};
use crate::progress::SetProgress;
use pt_snap_store::Observer;

pub struct Job {
    pub inputs: Vec<Input>,
    /// One rank per input, from the names (or the positions).
    pub ranks: RankAssignment,
    pub progress: SetProgress,
}

impl Job {
    /// The job given as `paths`; progress bars and warnings unless `json`.
    pub fn list(paths: &[PathBuf], json: bool) -> CliResult<Job> {
        let inputs = inputs::list(paths)?;
        let names: Vec<&str> = inputs.iter().map(Input::file_name).collect();
        let ranks = assign_ranks(&names);
        let total_bytes = inputs.iter().map(|i| i.bytes).sum();
        let progress = SetProgress::new(total_bytes, inputs.len() as u64, !json);
        Ok(Job {
            inputs,
            ranks,
            progress,
        })
    }

    /// `work(i, input)` for every input on `jobs` threads (default one per core), a panic
    /// failing its own file only (see [`Job::guard`]); the answers in the inputs' order.
    pub fn each<T: Send>(
        &self,
        jobs: Option<u32>,
        work: impl Fn(usize, &Input) -> T + Sync,
    ) -> Vec<T> {
        let answers = pt_snap_store::pool::run(
            &self.inputs,
            jobs.map(|j| j as usize),
            |n| self.progress.files_done(n as u64),
            work,
        );
        self.progress.finish();
        answers
    }

    /// The database of `input` for `command`: itself, or the snapshot's through the reuse
    /// cache; with whether it was reused (`None` for a database).
    pub fn database(&self, input: &Input, command: &str) -> CliResult<(PathBuf, Option<bool>)> {
        let mut progress = self.progress.file(input.bytes, input.file_name());
        let opened = open::database(&input.path, input.kind, ReplayMode::Strict, &mut progress)
            .map_err(|e| for_reading(CliError::from(e), command))?;
        Ok((opened.path, opened.import.map(|i| i.reused())))
    }

    /// `answer` of each device of the snapshot `input` with events (or only `device`),
    /// replayed as a strict import does but writing no database; a refused replay in the
    /// import's words, with the hint for `command`.
    pub fn replay_each<T>(
        &self,
        input: &Input,
        device: Option<i64>,
        command: &str,
        answer: impl Fn(&Replayed<'_>) -> T,
    ) -> CliResult<Vec<T>> {
        let source = pt_snap_store::snapshot::check(&input.path)?;
        let mut progress = self.progress.file(input.bytes, input.file_name());
        let snapshot = pt_snap_store::snapshot::decode(&source, &mut progress)?;
        let devices = (snapshot.devices_with_events().into_iter())
            .map(|d| d as i64)
            .collect();
        wanted(devices, device)?
            .into_iter()
            .map(|d| {
                let replayed = Replayed::strict(&snapshot, d as usize).map_err(|e| {
                    let refused = pt_snap_import::replay_refused(&snapshot, d as usize, e);
                    for_reading(CliError::from(Failure::from(refused)), command)
                })?;
                for w in &replayed.warnings {
                    progress.warn(w);
                }
                Ok(answer(&replayed))
            })
            .collect()
    }
}

/// `work` on one input, where a panic (a bug) becomes this file's internal error
/// ("internal error while `doing` PATH: …") rather than ending the whole command.
pub fn guard<T>(doing: &str, path: &Path, work: impl FnOnce() -> CliResult<T>) -> CliResult<T> {
    let mut failed = None;
    let answer =
        pt_snap_store::pool::panic_as_failure(&format!("{doing} {}", path.display()), || {
            work().map_err(|e| {
                let failure = e.failure.clone();
                failed = Some(e);
                failure
            })
        });
    answer.map_err(|f| failed.unwrap_or_else(|| f.into()))
}

/// A snapshot's replay failure, said to a command that has no `--lenient` but reads any
/// database it is given.
pub fn for_reading(e: CliError, command: &str) -> CliError {
    if e.hint.as_deref() == Some(hint::REPLAY_FAILED) {
        let h = hint::replay_failed_reading(command);
        e.with_hint(Some(&h))
    } else {
        e
    }
}

/// What `check` measures of every (rank, device) of one run (a file, or a directory of
/// ranks) at `metric`'s peak: a snapshot by the replay alone, writing no database; a
/// database through the query interface.
pub fn measure(
    run: &Path,
    metric: Metric,
    device: Option<i64>,
    jobs: Option<u32>,
    json: bool,
) -> CliResult<Vec<(u64, Measured)>> {
    let job = Job::list(std::slice::from_ref(&run.to_path_buf()), json)?;
    let files = job.each(jobs, |i, input| {
        guard("measuring", &input.path, || {
            measure_file(&job, input, metric, device)
        })
        .map(|devices| {
            devices
                .into_iter()
                .map(|m| (job.ranks.ranks[i], m))
                .collect::<Vec<_>>()
        })
    });
    let mut out = Vec::new();
    for (input, file) in job.inputs.iter().zip(files) {
        let measured = file.map_err(|e| {
            let message = format!("{}: {}", input.path.display(), e.message);
            CliError::new(e.code, message).with_hint(e.hint.as_deref())
        })?;
        out.extend(measured);
    }
    Ok(out)
}

fn measure_file(
    job: &Job,
    input: &Input,
    metric: Metric,
    device: Option<i64>,
) -> CliResult<Vec<Measured>> {
    match input.kind {
        InputKind::Snapshot => job.replay_each(input, device, "check", |replayed| {
            measure_replayed(replayed, metric)
        }),
        InputKind::Database => {
            let analyzer = Analyzer::open(&input.path).map_err(CliError::from)?;
            wanted(analyzer.devices().to_vec(), device)?
                .into_iter()
                .map(|d| measure_source(&analyzer, d, metric).map_err(CliError::from))
                .collect()
        }
    }
}

/// `devices`, or only `device` when it is one of them.
fn wanted(devices: Vec<i64>, device: Option<i64>) -> CliResult<Vec<i64>> {
    match device {
        None => Ok(devices),
        Some(d) if devices.contains(&d) => Ok(vec![d]),
        Some(d) => Err(CliError::device_not_found(d, &devices)),
    }
}
