//! `pt-snap export PATH… --format parquet -o DIR`: snapshots or databases as a
//! Hive-partitioned Parquet dataset, `DIR/<table>/job=<J>/rank=<R>/part-0.parquet`
//! (`docs/parquet.md`). The inputs are listed, ranked and imported as `ranks` does them (its
//! `list_inputs`, `assign_ranks` and `database_of`, so through `import`'s reuse cache), on
//! `-j` worker threads; `pt-snap-parquet` builds each part's bytes and every part is
//! published through `pt_snap_contract::publish::write_file` (a hidden temporary file
//! beside it, renamed into place). A partition whose four parts were all made from the same
//! bytes (their footer's SHA-256) is kept as it is.

use std::fs;
use std::path::{Path, PathBuf};

use pt_snap_contract::{envelope, hint, publish, ErrorCode};
use pt_snap_parquet::{Built, PartInfo, Table, PART_NAME};
use pt_snap_query::Analyzer;
use pt_snap_report::ranks::{assign_ranks, summarize, FileSummary, RankSource, RanksReport};
use pt_snap_report::Metric;
use serde_json::{json, Value as Json};

use super::ranks::{database_of, file_name, list_inputs, on_workers, panic_as_error, Input};
use crate::budget::Deadline;
use crate::cli::ExportArgs;
use crate::error::{CliError, CliResult};
use crate::output;
use crate::progress::SetProgress;

/// What happened to one input.
struct Outcome {
    path: String,
    rank: u64,
    rank_source: RankSource,
    sha256: Option<String>,
    /// Rows per table, in [`Table::ALL`] order.
    rows: Option<[i64; 4]>,
    kept: bool,
    error: Option<CliError>,
}

pub fn run(args: &ExportArgs) -> CliResult {
    Deadline::start(None)?;
    let inputs = list_inputs(&args.paths)?;
    if args.rank.is_some() && inputs.len() != 1 {
        return Err(CliError::invalid_parameter(
            format!(
                "--rank names the rank of one input; {} were given.",
                inputs.len()
            ),
            "Drop --rank to read the ranks from the file names, or export one file at a time.",
        ));
    }
    let job = match &args.job {
        Some(j) => check_job(j)?,
        None => default_job(&inputs[0].path),
    };
    let names: Vec<&str> = inputs.iter().map(|i| file_name(&i.path)).collect();
    let mut assignment = assign_ranks(&names);
    if let Some(r) = args.rank {
        assignment.ranks = vec![r];
        assignment.source = RankSource::Name;
        assignment.note = None;
    }
    let dir = crate::focus::absolute(&args.output)?;
    fs::create_dir_all(&dir).map_err(|e| write_error(&dir, &e))?;

    let total_bytes = inputs.iter().map(|i| i.bytes).sum();
    let progress = SetProgress::new(total_bytes, inputs.len() as u64, !args.json);
    let outcomes = on_workers(&inputs, args.jobs, &progress, |i, input| {
        let rank = (assignment.ranks[i], assignment.source);
        export_one(input, rank, &dir, &job, &progress, args.json)
    });

    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| o.error.is_some()).collect();
    let failure = failed.first().map(|first| {
        let e = first.error.as_ref().expect("failed");
        CliError::new(
            e.code,
            format!(
                "{} of {} files could not be exported; the first, {}: {}",
                failed.len(),
                outcomes.len(),
                first.path,
                e.message
            ),
        )
        .with_hint(e.hint.as_deref())
    });
    if args.json {
        let fields = json_fields(&dir, &job, &outcomes, assignment.note.as_deref());
        output::print_json(&match &failure {
            None => envelope::success(fields),
            Some(e) => envelope::partial(fields, e.code, &e.message, e.hint.as_deref()),
        });
    } else {
        print!("{}", text(&dir, &job, &outcomes));
    }
    failure.map_or(Ok(()), Err)
}

/// A job name is one path component that every reader takes as a partition value as it is.
fn check_job(job: &str) -> CliResult<String> {
    let fine = !job.is_empty()
        && !job.starts_with('.')
        && job
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if fine {
        Ok(job.to_owned())
    } else {
        Err(CliError::invalid_parameter(
            format!(
                "Invalid job name {job:?}: use letters, digits, '.', '_' and '-' (not first '.')."
            ),
            "Pass --job NAME with a name that is also a valid directory name.",
        ))
    }
}

/// The first input's directory name, cut to the characters a job name may have.
fn default_job(first: &Path) -> String {
    let name = first
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let cleaned = cleaned.trim_start_matches('.').to_owned();
    if cleaned.is_empty() {
        "job".to_owned()
    } else {
        cleaned
    }
}

fn write_error(path: &Path, e: &std::io::Error) -> CliError {
    CliError::new(
        ErrorCode::Other,
        format!("cannot write {}: {e}", path.display()),
    )
}

/// `DIR/<table>/job=<J>/rank=<R>/part-0.parquet`.
pub fn part_path(dir: &Path, table: Table, job: &str, rank: u64) -> PathBuf {
    dir.join(table.name())
        .join(format!("job={job}"))
        .join(format!("rank={rank}"))
        .join(PART_NAME)
}

fn export_one(
    input: &Input,
    (rank, rank_source): (u64, RankSource),
    dir: &Path,
    job: &str,
    progress: &SetProgress,
    json: bool,
) -> Outcome {
    let mut outcome = Outcome {
        path: input.path.display().to_string(),
        rank,
        rank_source,
        sha256: None,
        rows: None,
        kept: false,
        error: None,
    };
    let result = panic_as_error("exporting", input, || {
        export_parts(input, &mut outcome, dir, job, progress, json)
    });
    if let Err(e) = result {
        outcome.error = Some(e);
    }
    outcome
}

fn export_parts(
    input: &Input,
    outcome: &mut Outcome,
    dir: &Path,
    job: &str,
    progress: &SetProgress,
    json: bool,
) -> CliResult {
    let sha256 = fs::File::open(&input.path)
        .and_then(pt_snap_import::sha256_hex)
        .map_err(|e| match input.kind {
            pt_snap_report::ranks::InputKind::Database => CliError::database_not_found(format!(
                "Database not found: {} ({e})",
                input.path.display()
            )),
            pt_snap_report::ranks::InputKind::Snapshot => CliError::snapshot_invalid(format!(
                "Snapshot not found or unreadable: {} ({e})",
                input.path.display()
            )),
        })?;
    outcome.sha256 = Some(sha256.clone());
    let paths = Table::ALL.map(|t| part_path(dir, t, job, outcome.rank));
    // Kept when every part was made from these bytes by this layout.
    let existing = paths.clone().map(|p| {
        fs::File::open(p)
            .ok()
            .and_then(pt_snap_parquet::part_metadata)
            .filter(|m| m.is_current(&sha256))
    });
    if existing.iter().all(Option::is_some) {
        outcome.kept = true;
        outcome.rows = Some(existing.map(|m| m.expect("checked").rows));
        return Ok(());
    }

    let mut file = FileSummary {
        path: outcome.path.clone(),
        rank: outcome.rank,
        rank_source: outcome.rank_source,
        input: input.kind,
        db_path: None,
        reused: None,
        lenient_replay_issues: None,
        devices: Ok(Vec::new()),
    };
    let db = database_of(input, progress, json, &mut file).map_err(|e| {
        if e.hint.as_deref() == Some(hint::REPLAY_FAILED_RANKS) {
            e.with_hint(Some(hint::REPLAY_FAILED_EXPORT))
        } else {
            e
        }
    })?;
    let deadline = Deadline::start(None)?;
    let analyzer = Analyzer::open(&db).map_err(CliError::from)?;
    analyzer.set_interrupt(deadline.interrupt());
    let query_error = |e| CliError::query(e, Some(&deadline), "Error: ");
    file.lenient_replay_issues = analyzer.db().lenient_replay_issues()?;
    // A database without a trace (a state-only snapshot) is empty parts, not a failure.
    let summary = if analyzer.devices().is_empty() {
        Vec::new()
    } else {
        file.devices = Ok(summarize(&analyzer, None, Metric::Active).map_err(query_error)?);
        RanksReport::new(Metric::Active, vec![file], None).rows_json()
    };

    let info = PartInfo {
        source_sha256: sha256,
        job: job.to_owned(),
        rank: outcome.rank,
        source: outcome.path.clone(),
    };
    let failed = |e: pt_snap_parquet::ExportError| match e {
        pt_snap_parquet::ExportError::Query(q) => query_error(q),
        e => CliError::internal(format!("{}: {e}", input.path.display())),
    };
    let mut rows = [0i64; 4];
    for (i, table) in Table::ALL.into_iter().enumerate() {
        let built: Built = match table {
            Table::Events => pt_snap_parquet::events_part(&analyzer, &info),
            Table::Blocks => pt_snap_parquet::blocks_part(&analyzer, &info),
            Table::Callstacks => pt_snap_parquet::callstacks_part(&analyzer, &info),
            Table::Summary => pt_snap_parquet::summary_part(&summary, &info),
        }
        .map_err(failed)?;
        let path = &paths[i];
        let parent = path.parent().expect("a part has a directory");
        fs::create_dir_all(parent).map_err(|e| write_error(parent, &e))?;
        publish::write_file(path, &built.bytes, 0o644).map_err(|e| write_error(path, &e))?;
        rows[i] = built.rows as i64;
    }
    outcome.rows = Some(rows);
    Ok(())
}

fn json_fields<'a>(
    dir: &Path,
    job: &str,
    outcomes: &[Outcome],
    rank_note: Option<&str>,
) -> Vec<(&'a str, Json)> {
    let files: Vec<Json> = outcomes
        .iter()
        .map(|o| {
            json!({
                "path": o.path,
                "rank": o.rank,
                "rank_source": o.rank_source.name(),
                "source_sha256": o.sha256,
                "status": if o.error.is_some() { "failed" } else if o.kept { "kept" } else { "written" },
                "rows": o.rows.map(|r| json!({
                    "events": r[0], "blocks": r[1], "callstacks": r[2], "summary": r[3],
                })),
                "parts": if o.error.is_some() { Json::Null } else {
                    Json::Array(Table::ALL.iter().map(|&t| json!(part_path(dir, t, job, o.rank).display().to_string())).collect())
                },
                "error": o.error.as_ref().map(|e| json!({"code": e.code.as_str(), "message": e.message, "hint": e.hint})),
            })
        })
        .collect();
    let count = |f: &dyn Fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    vec![
        ("format", json!("parquet")),
        ("dir", json!(dir.display().to_string())),
        ("job", json!(job)),
        (
            "tables",
            json!(Table::ALL.iter().map(|t| t.name()).collect::<Vec<_>>()),
        ),
        ("files", Json::Array(files)),
        ("written", json!(count(&|o| o.error.is_none() && !o.kept))),
        ("kept", json!(count(&|o| o.error.is_none() && o.kept))),
        ("failed", json!(count(&|o| o.error.is_some()))),
        ("rank_note", json!(rank_note)),
    ]
}

fn text(dir: &Path, job: &str, outcomes: &[Outcome]) -> String {
    let mut out = format!("Parquet dataset {} (job={job})\n", dir.display());
    for o in outcomes {
        let what = match (&o.error, o.kept) {
            (Some(e), _) => format!("failed: {} {}", e.code.as_str(), e.message),
            (None, true) => "kept (same source)".to_owned(),
            (None, false) => "written".to_owned(),
        };
        let rows = o.rows.map_or(String::new(), |r| {
            format!(
                " — {} events, {} blocks, {} callstacks, {} summary rows",
                r[0], r[1], r[2], r[3]
            )
        });
        out += &format!("  rank={} {}: {what}{rows}\n", o.rank, o.path);
    }
    out
}
