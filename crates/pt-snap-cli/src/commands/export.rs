//! `pt-snap export PATH… --format parquet -o DIR`: snapshots or databases as a
//! Hive-partitioned Parquet dataset, `DIR/<table>/job=<J>/rank=<R>/part-0.parquet`
//! (`docs/parquet.md`). The inputs are listed, ranked and opened as `ranks` takes them
//! (`crate::job`), on `-j` worker threads; `pt-snap-parquet` builds each part and writes or
//! keeps it in its partition (`pt_snap_parquet::layout`).

use std::fs;
use std::path::Path;

use pt_snap_contract::{envelope, ErrorCode};
use pt_snap_parquet::layout::{self, Partition};
use pt_snap_parquet::{PartInfo, Table};
use pt_snap_query::Analyzer;
use pt_snap_report::ranks::{summarize, FileSummary, RankSource, RanksReport};
use pt_snap_report::Metric;
use pt_snap_store::inputs::Input;
use serde_json::{json, Value as Json};

use crate::budget::Deadline;
use crate::cli::ExportArgs;
use crate::error::{CliError, CliResult};
use crate::job::{self, Job};
use crate::output;

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
    let mut job = Job::list(&args.paths, args.json)?;
    if args.rank.is_some() && job.inputs.len() != 1 {
        return Err(CliError::invalid_parameter(
            format!(
                "--rank names the rank of one input; {} were given.",
                job.inputs.len()
            ),
            "Drop --rank to read the ranks from the file names, or export one file at a time.",
        ));
    }
    let name = match &args.job {
        Some(j) if layout::is_job_name(j) => j.clone(),
        Some(j) => {
            return Err(CliError::invalid_parameter(
                format!(
                "Invalid job name {j:?}: use letters, digits, '.', '_' and '-' (not first '.')."
            ),
                "Pass --job NAME with a name that is also a valid directory name.",
            ))
        }
        None => layout::job_name_of(
            &job.inputs[0]
                .path
                .parent()
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ),
    };
    if let Some(r) = args.rank {
        job.ranks.ranks = vec![r];
        job.ranks.source = RankSource::Name;
        job.ranks.note = None;
    }
    let dir = crate::focus::absolute(&args.output)?;
    fs::create_dir_all(&dir).map_err(|e| write_error(&dir, &e))?;

    let outcomes = job.each(args.jobs, |i, input| {
        let mut outcome = Outcome {
            path: input.path.display().to_string(),
            rank: job.ranks.ranks[i],
            rank_source: job.ranks.source,
            sha256: None,
            rows: None,
            kept: false,
            error: None,
        };
        let partition = Partition {
            dir: &dir,
            job: &name,
            rank: outcome.rank,
        };
        let result = job::guard("exporting", &input.path, || {
            export_parts(&job, input, &partition, &mut outcome)
        });
        outcome.error = result.err();
        outcome
    });

    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| o.error.is_some()).collect();
    let failure = failed.first().map(|first| {
        let e = first.error.as_ref().expect("failed");
        let message = format!(
            "{} of {} files could not be exported; the first, {}: {}",
            failed.len(),
            outcomes.len(),
            first.path,
            e.message
        );
        CliError::new(e.code, message).with_hint(e.hint.as_deref())
    });
    if args.json {
        let fields = json_fields(&dir, &name, &outcomes, job.ranks.note.as_deref());
        output::print_json(&match &failure {
            None => envelope::success(fields),
            Some(e) => envelope::partial(fields, e),
        });
    } else {
        print!("{}", text(&dir, &name, &outcomes));
    }
    failure.map_or(Ok(()), Err)
}

fn write_error(path: &Path, e: &std::io::Error) -> CliError {
    CliError::new(
        ErrorCode::Other,
        format!("cannot write {}: {e}", path.display()),
    )
}

fn export_parts(
    job: &Job,
    input: &Input,
    partition: &Partition,
    outcome: &mut Outcome,
) -> CliResult {
    let sha256 = input.sha256()?;
    outcome.sha256 = Some(sha256.clone());
    if let Some(rows) = partition.current(&sha256) {
        outcome.kept = true;
        outcome.rows = Some(rows);
        return Ok(());
    }

    let (db, reused) = job.database(input, "export")?;
    let deadline = Deadline::start(None)?;
    let analyzer = Analyzer::open(&db).map_err(CliError::from)?;
    analyzer.set_interrupt(deadline.interrupt());
    let query_error = |e| CliError::query(e, Some(&deadline), "Error: ");
    let mut file = FileSummary {
        path: outcome.path.clone(),
        rank: outcome.rank,
        rank_source: outcome.rank_source,
        input: input.kind,
        db_path: Some(db.display().to_string()),
        reused,
        lenient_replay_issues: analyzer.db().lenient_replay_issues()?,
        devices: Ok(Vec::new()),
    };
    // A database without a trace (a state-only snapshot) is empty parts, not a failure.
    let summary = if analyzer.devices().is_empty() {
        Vec::new()
    } else {
        file.devices = Ok(summarize(&analyzer, None, Metric::Active).map_err(query_error)?);
        RanksReport::new(Metric::Active, vec![file], None).rows_json()
    };

    let info = PartInfo {
        source_sha256: sha256,
        job: partition.job.to_owned(),
        rank: outcome.rank,
        source: outcome.path.clone(),
    };
    let failed = |e: pt_snap_parquet::ExportError| match e {
        pt_snap_parquet::ExportError::Query(q) => query_error(q),
        e => CliError::internal(format!("{}: {e}", input.path.display())),
    };
    let mut rows = [0i64; 4];
    for (i, table) in Table::ALL.into_iter().enumerate() {
        let built = pt_snap_parquet::part(table, &analyzer, &summary, &info).map_err(failed)?;
        partition
            .write(table, &built)
            .map_err(|(path, e)| write_error(&path, &e))?;
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
            let partition = Partition { dir, job, rank: o.rank };
            let parts = Table::ALL.map(|t| json!(partition.path(t).display().to_string()));
            json!({
                "path": o.path,
                "rank": o.rank,
                "rank_source": o.rank_source.name(),
                "source_sha256": o.sha256,
                "status": if o.error.is_some() { "failed" } else if o.kept { "kept" } else { "written" },
                "rows": o.rows.map(|r| json!({
                    "events": r[0], "blocks": r[1], "callstacks": r[2], "summary": r[3],
                })),
                "parts": if o.error.is_some() { Json::Null } else { Json::from(parts.to_vec()) },
                "error": o.error.as_ref().map(|e| e.to_json()),
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
