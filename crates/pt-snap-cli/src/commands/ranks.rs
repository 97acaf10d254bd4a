//! `pt-snap ranks PATH…`: many snapshots of one job side by side. The files are listed,
//! ranked and worked on in parallel by `crate::job` (one progress bar); each is summarised
//! by `pt_snap_report::ranks`, which does the analysis: a database, or the one a snapshot's
//! import left beside it, through the templates; any other snapshot by the replay alone,
//! writing nothing. Then it prints. Each worker keeps only its file's summary, so hundreds of
//! files cost one row each, and every file's descriptors are closed before the next one is
//! taken.

use pt_snap_contract::envelope;
use pt_snap_query::Analyzer;
use pt_snap_report::ranks::{
    summarize, summarize_replayed, DeviceSummary, FileSummary, RankSource, RanksReport,
};
use pt_snap_report::Metric;
use pt_snap_store::import;
use pt_snap_store::inputs::{Input, InputKind};
use pt_snap_store::ReplayMode;

use crate::budget::Deadline;
use crate::cli::RanksArgs;
use crate::error::{CliError, CliResult};
use crate::job::{self, Job};
use crate::output;

pub fn run(args: &RanksArgs) -> CliResult {
    if args.device.is_some_and(|d| d < 0) {
        return Err(CliError::invalid_parameter(
            "device must be a nonnegative integer.",
            "Check the options with 'pt-snap ranks --help'.",
        ));
    }
    // A bad PT_SNAP_QUERY_TIMEOUT is the command's error, not every file's.
    Deadline::start(None)?;
    let metric = Metric::from(args.metric);
    let job = Job::list(&args.paths, args.json)?;
    let files = job.each(args.jobs, |i, input| {
        let rank = (job.ranks.ranks[i], job.ranks.source);
        file_summary(&job, input, rank, args.device, metric)
    });

    let report = RanksReport::new(metric, files, job.ranks.note.clone());
    let failure = failure_of(&report);
    if args.json {
        let fields = report.json_fields();
        output::print_json(&match &failure {
            None => envelope::success(fields),
            Some(e) => envelope::partial(fields, e),
        });
    } else {
        print!("{}", report.to_text());
    }
    failure.map_or(Ok(()), Err)
}

/// The command's error when files failed: the first one's code and hint, and a message that
/// counts them. Exit status 1, after every row was printed.
fn failure_of(report: &RanksReport) -> Option<CliError> {
    let failed = report.failures().count();
    let (file, first) = report.failures().next()?;
    Some(
        CliError::new(
            first.code,
            format!(
                "{failed} of {} files could not be summarised; the first, {}: {}",
                report.files.len(),
                file.path,
                first.message
            ),
        )
        .with_hint(first.hint.as_deref()),
    )
}

/// One file, summarised or failed.
pub fn file_summary(
    job: &Job,
    input: &Input,
    (rank, rank_source): (u64, RankSource),
    device: Option<i64>,
    metric: Metric,
) -> FileSummary {
    let mut summary = FileSummary {
        path: input.path.display().to_string(),
        rank,
        rank_source,
        input: input.kind,
        db_path: None,
        reused: None,
        lenient_replay_issues: None,
        devices: Ok(Vec::new()),
    };
    let outcome = job::guard("summarising", &input.path, || {
        summarize_file(job, input, device, metric, &mut summary)
    });
    summary.devices = outcome.map_err(|e| e.failure);
    summary
}

fn summarize_file(
    job: &Job,
    input: &Input,
    device: Option<i64>,
    metric: Metric,
    out: &mut FileSummary,
) -> CliResult<Vec<DeviceSummary>> {
    let db_path = match input.kind {
        InputKind::Database => input.path.clone(),
        InputKind::Snapshot => match import::reusable_beside(&input.path, ReplayMode::Strict)? {
            Some((db_path, _)) => {
                out.reused = Some(true);
                db_path
            }
            // No database to read: the replay alone answers, and none is written.
            None => {
                let rows = job.replay_each(input, device, "ranks", |replayed| {
                    summarize_replayed(replayed, metric)
                })?;
                // A file without events fails as its database would (`summarize`).
                if rows.is_empty() {
                    return Err(CliError::device_not_found(device.unwrap_or(0), &[]));
                }
                return Ok(rows);
            }
        },
    };
    out.db_path = Some(db_path.display().to_string());
    // Moves the set's bar by the file's size when it is done, as a replayed file's decode does.
    let _progress = job.progress.file(input.bytes, input.file_name());
    // The query time limit of `query` (PT_SNAP_QUERY_TIMEOUT, else 600 s), per file.
    let deadline = Deadline::start(None)?;
    let analyzer = Analyzer::open(&db_path).map_err(CliError::from)?;
    analyzer.set_interrupt(deadline.interrupt());
    out.lenient_replay_issues = analyzer.db().lenient_replay_issues()?;
    summarize(&analyzer, device, metric).map_err(|e| CliError::query(e, Some(&deadline), "Error: "))
}
