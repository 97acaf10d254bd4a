//! The files of a job as `ranks`, `export` and `check` take them (`pt_snap_store::inputs`):
//! listed and ranked by name, worked on a few at a time (`pt_snap_store::pool`) under one
//! progress bar, each one's database opened read-only — a snapshot's imported or reused
//! beside it by the strict replay, as a plain `pt-snap import` makes it.

use std::path::{Path, PathBuf};

use pt_snap_contract::hint;
use pt_snap_report::ranks::{assign_ranks, RankAssignment};
use pt_snap_store::inputs::{self, Input};
use pt_snap_store::{open, ReplayMode};

use crate::error::{CliError, CliResult};
use crate::progress::SetProgress;

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
