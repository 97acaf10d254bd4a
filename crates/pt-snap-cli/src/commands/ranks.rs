//! `pt-snap ranks PATH…`: many snapshots of one job side by side. This file lists the
//! inputs, imports the snapshots in parallel through `import`'s reuse cache with one progress
//! bar, opens each database read-only and hands it to `pt_snap_report::ranks`, which does the
//! analysis; then it prints. Each worker keeps only its file's summary, so hundreds of files
//! cost one row each, and every file's descriptors are closed before the next one is taken.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use pt_snap_contract::{envelope, hint};
use pt_snap_import::ReplayMode;
use pt_snap_query::Analyzer;
use pt_snap_report::ranks::{
    assign_ranks, natural_cmp, summarize, DeviceSummary, FileSummary, InputKind, RankSource,
    RanksReport, RowError,
};
use pt_snap_report::Metric;

use super::import::{self, SingleDb};
use crate::budget::Deadline;
use crate::cli::RanksArgs;
use crate::error::{CliError, CliResult};
use crate::progress::SetProgress;
use crate::{focus, output};

/// What a directory contributes: snapshots by their usual names (also compressed) and
/// databases. JSON snapshots are taken when named explicitly only: a directory's `*.json`
/// files are mostly something else.
const DIRECTORY_SUFFIXES: [&str; 11] = [
    ".pkl",
    ".pickle",
    ".pkl.gz",
    ".pkl.zst",
    ".pkl.bz2",
    ".pickle.gz",
    ".pickle.zst",
    ".pickle.bz2",
    ".pkl.zstd",
    ".pickle.zstd",
    ".db",
];

/// `work` over every input on `jobs` scoped threads (default one per core), each taking the
/// next file not yet taken, so one large file does not hold up the rest; the answers in the
/// inputs' order. `progress` counts each file as it is answered and is finished on return.
pub(crate) fn on_workers<T: Send>(
    inputs: &[Input],
    jobs: Option<u32>,
    progress: &SetProgress,
    work: impl Fn(usize, &Input) -> T + Sync,
) -> Vec<T> {
    let jobs = jobs
        .map(|j| j as usize)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, inputs.len());
    let mut answers: Vec<Option<T>> = (0..inputs.len()).map(|_| None).collect();
    let next = AtomicUsize::new(0);
    let (sender, results) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let sender = sender.clone();
            let (next, work) = (&next, &work);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(input) = inputs.get(i) else { break };
                if sender.send((i, work(i, input))).is_err() {
                    break;
                }
            });
        }
        drop(sender);
        for (done, (i, answer)) in results.iter().enumerate() {
            answers[i] = Some(answer);
            progress.files_done(done as u64 + 1);
        }
    });
    progress.finish();
    answers
        .into_iter()
        .map(|a| a.expect("every worker answers every file it takes"))
        .collect()
}

/// `work` on one input of a set, where a panic becomes that file's internal error
/// ("internal error while `doing` PATH: …") rather than ending the whole command.
pub(crate) fn panic_as_error<T>(
    doing: &str,
    input: &Input,
    work: impl FnOnce() -> CliResult<T>,
) -> CliResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        Err(CliError::internal(format!(
            "internal error while {doing} {}: {what}",
            input.path.display()
        )))
    })
}

/// One file of the set.
pub(crate) struct Input {
    /// Absolute (canonical when it exists).
    pub path: PathBuf,
    pub kind: InputKind,
    /// Its length, the file's share of the progress bar (0 for databases, which are only
    /// read).
    pub bytes: u64,
}

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
    let inputs = list_inputs(&args.paths)?;
    let names: Vec<&str> = inputs.iter().map(|i| file_name(&i.path)).collect();
    let assignment = assign_ranks(&names);

    let total_bytes = inputs.iter().map(|i| i.bytes).sum();
    let progress = SetProgress::new(total_bytes, inputs.len() as u64, !args.json);
    let job = Job {
        device: args.device,
        metric,
        json: args.json,
        progress: &progress,
    };
    let files = on_workers(&inputs, args.jobs, &progress, |i, input| {
        job.file(input, (assignment.ranks[i], assignment.source))
    });

    let report = RanksReport::new(metric, files, assignment.note);
    let failure = failure_of(&report);
    if args.json {
        let fields = report.json_fields();
        output::print_json(&match &failure {
            None => envelope::success(fields),
            Some(e) => envelope::partial(fields, e.code, &e.message, e.hint.as_deref()),
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

/// The files of the set: directories listed (not recursively), every path made absolute,
/// duplicates dropped, and a database dropped when it is the import of a snapshot of the set
/// (`<snapshot>.db`, written beside it by an earlier run); in natural order of the paths.
pub(crate) fn list_inputs(paths: &[PathBuf]) -> CliResult<Vec<Input>> {
    let mut listed = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = fs::read_dir(path).map_err(|e| {
                CliError::snapshot_invalid(format!("Cannot list {}: {e}", path.display()))
            })?;
            for entry in entries {
                let entry = entry.map_err(|e| {
                    CliError::snapshot_invalid(format!("Cannot list {}: {e}", path.display()))
                })?;
                let name = entry.file_name().to_string_lossy().to_ascii_lowercase();
                let taken = !name.starts_with('.')
                    && DIRECTORY_SUFFIXES.iter().any(|s| name.ends_with(s))
                    && entry.path().is_file();
                if taken {
                    listed.push(entry.path());
                }
            }
        } else {
            listed.push(path.clone());
        }
    }
    let mut seen = HashSet::with_capacity(listed.len());
    let mut inputs = Vec::with_capacity(listed.len());
    for path in listed {
        let path = focus::absolute(&path)?;
        if seen.insert(path.clone()) {
            let (kind, bytes) = classify(&path);
            inputs.push(Input { path, kind, bytes });
        }
    }
    let imports: HashSet<PathBuf> = inputs
        .iter()
        .filter(|i| i.kind == InputKind::Snapshot)
        .map(|i| {
            let mut name = i.path.file_name().unwrap_or_default().to_owned();
            name.push(".db");
            i.path.with_file_name(name)
        })
        .collect();
    inputs.retain(|i| i.kind == InputKind::Snapshot || !imports.contains(&i.path));
    if inputs.is_empty() {
        let given: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(CliError::snapshot_invalid(format!(
            "No snapshots or databases found in: {} (a directory contributes its *.pkl, \
             *.pickle and *.db files, compressed pickles included)",
            given.join(", ")
        )));
    }
    inputs.sort_by(|a, b| natural_cmp(&a.path.to_string_lossy(), &b.path.to_string_lossy()));
    Ok(inputs)
}

/// A database by its first 16 bytes (SQLite's header), anything else a snapshot (the import
/// tells what it is); a file that cannot be read by its name.
fn classify(path: &Path) -> (InputKind, u64) {
    let opened =
        pt_snap_db::is_sqlite_file(path).and_then(|sqlite| Ok((sqlite, fs::metadata(path)?.len())));
    match opened {
        Ok((true, _)) => (InputKind::Database, 0),
        Ok((false, len)) => (InputKind::Snapshot, len),
        Err(_) if file_name(path).to_ascii_lowercase().ends_with(".db") => (InputKind::Database, 0),
        Err(_) => (InputKind::Snapshot, 0),
    }
}

pub(crate) fn file_name(path: &Path) -> &str {
    path.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

/// What every worker shares.
struct Job<'a> {
    device: Option<i64>,
    metric: Metric,
    json: bool,
    progress: &'a SetProgress,
}

impl Job<'_> {
    /// One file, summarised or failed; a panic while doing so (a bug) fails this file only,
    /// so that the other ranks of a large set still get their rows.
    fn file(&self, input: &Input, (rank, rank_source): (u64, RankSource)) -> FileSummary {
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
        let outcome = panic_as_error("summarising", input, || self.summarize(input, &mut summary));
        summary.devices = outcome.map_err(|e| RowError {
            code: e.code,
            message: e.message,
            hint: e.hint,
        });
        summary
    }

    fn summarize(&self, input: &Input, out: &mut FileSummary) -> CliResult<Vec<DeviceSummary>> {
        let db_path = database_of(input, self.progress, self.json, out)?;
        // The query time limit of `query` (PT_SNAP_QUERY_TIMEOUT, else 600 s), per file.
        let deadline = Deadline::start(None)?;
        let analyzer = Analyzer::open(&db_path).map_err(CliError::from)?;
        analyzer.set_interrupt(deadline.interrupt());
        out.lenient_replay_issues = analyzer.db().lenient_replay_issues()?;
        summarize(&analyzer, self.device, self.metric)
            .map_err(|e| CliError::query(e, Some(&deadline), "Error: "))
    }
}

/// The database of one input: a `.db` as given, or a snapshot's through `import`'s reuse
/// cache (beside the snapshot, all devices, strict replay: the database a plain `pt-snap
/// import` makes and reuses); `out` gets its `db_path` and `reused`. Shared with `export`.
pub(crate) fn database_of(
    input: &Input,
    progress: &SetProgress,
    json: bool,
    out: &mut FileSummary,
) -> CliResult<PathBuf> {
    match input.kind {
        InputKind::Snapshot => import_snapshot(input, progress, json, out),
        InputKind::Database => {
            out.db_path = Some(input.path.display().to_string());
            if !input.path.is_file() {
                return Err(CliError::database_not_found(format!(
                    "Database not found: {}",
                    input.path.display()
                )));
            }
            Ok(input.path.clone())
        }
    }
}

fn import_snapshot(
    input: &Input,
    progress: &SetProgress,
    json: bool,
    out: &mut FileSummary,
) -> CliResult<PathBuf> {
    let source = import::check_source(&input.path)?;
    let name = import::source_name(&source)?;
    let target = source
        .parent()
        .expect("an absolute file path has a parent")
        .join(format!("{name}.db"));
    out.db_path = Some(target.display().to_string());
    let mut file_progress = progress.file(input.bytes);
    let shown = file_name(&input.path).to_owned();
    let imported = import::single_db(
        &SingleDb {
            source: &source,
            target: &target,
            name: &name,
            device: None,
            replay: ReplayMode::Strict,
            force: false,
        },
        &mut file_progress,
        &mut |w| {
            if !json {
                progress.println(&format!("warning: {shown}: {w}"));
            }
        },
    );
    match imported {
        Ok((_, miss)) => {
            out.reused = Some(miss.is_none());
            Ok(target)
        }
        // `ranks` and `export` have no --lenient: say how to include such a file anyway.
        Err(e) if e.hint.as_deref() == Some(hint::REPLAY_FAILED) => {
            Err(e.with_hint(Some(hint::REPLAY_FAILED_RANKS)))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use pt_snap_contract::ErrorCode;

    use super::*;

    fn touch(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
        let p = dir.join(name);
        fs::write(&p, content).unwrap();
        p
    }

    /// Directories give their snapshots and databases in natural order, not their other
    /// files, not hidden ones; a database that is a listed snapshot's import is dropped;
    /// a path given twice counts once.
    #[test]
    fn inputs_are_listed_deduplicated_and_ordered() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        let sqlite = &pt_snap_db::SQLITE_HEADER[..];
        touch(&d, "rank10.pickle", b"\x80\x04");
        touch(&d, "rank2.pkl", b"\x80\x04");
        touch(&d, "rank2.pkl.db", sqlite);
        touch(&d, "rank3.db", sqlite);
        touch(&d, "rank4.pickle.gz", b"\x1f\x8b");
        touch(&d, "notes.txt", b"x");
        touch(&d, "rank5.json", b"{}");
        touch(&d, ".rank6.pickle", b"\x80\x04");
        fs::create_dir(d.join("sub.pkl")).unwrap();
        let explicit = touch(&d, "other.json", b"{}");
        let inputs = list_inputs(&[d.clone(), d.join("rank3.db"), explicit]).unwrap();
        let got: Vec<(&str, InputKind)> = inputs
            .iter()
            .map(|i| (file_name(&i.path), i.kind))
            .collect();
        assert_eq!(
            got,
            [
                ("other.json", InputKind::Snapshot),
                ("rank2.pkl", InputKind::Snapshot),
                ("rank3.db", InputKind::Database),
                ("rank4.pickle.gz", InputKind::Snapshot),
                ("rank10.pickle", InputKind::Snapshot),
            ]
        );
        assert_eq!(inputs[1].bytes, 2);
        assert_eq!(inputs[2].bytes, 0);

        let empty = tempfile::tempdir().unwrap();
        let e = list_inputs(&[empty.path().to_path_buf()]).err().unwrap();
        assert_eq!(e.code, ErrorCode::SnapshotInvalid);
        assert!(e
            .message
            .starts_with("No snapshots or databases found in: "));
    }
}
