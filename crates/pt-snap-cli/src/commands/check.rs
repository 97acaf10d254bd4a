//! `pt-snap check`: record a baseline from repeats of a run (`--record`), or judge a run
//! against one (`--baseline`); `pt_snap_report::check` measures, records and judges. A
//! snapshot is measured by the replay alone (no database is written), a database through
//! the query interface. Exit status: 0 pass, 1 regressed, 2 could not judge (every failure).

use std::path::Path;

use pt_snap_contract::{envelope, publish};
use pt_snap_report::check::{judge, Baseline, Tolerance, Verdict};
use pt_snap_report::Metric;
use serde_json::json;

use crate::cli::{CheckArgs, CheckFormat, MetricArg};
use crate::error::{CliError, CliResult};
use crate::job;
use crate::output;

const HINT: &str = "See 'pt-snap check --help' and docs/ci.md.";

pub fn run(args: &CheckArgs) -> CliResult<Verdict> {
    let recording = args.record.is_some();
    let misplaced = [
        ("--metric", args.metric.is_some(), true),
        ("--tolerance", args.tolerance.is_some(), true),
        ("--device", args.device.is_some(), true),
        ("--format", args.format.is_some(), false),
        ("--output", args.output.is_some(), false),
    ]
    .into_iter()
    .find(|&(_, given, with_record)| given && with_record != recording);
    if let Some((flag, _, with_record)) = misplaced {
        return Err(CliError::usage(if with_record {
            format!("{flag} applies to --record: a baseline keeps the metric, limits and device it was recorded with.")
        } else {
            format!("{flag} applies to --baseline: recording prints a summary only.")
        }));
    }
    match &args.record {
        Some(path) => record(args, path).map(|()| Verdict::Pass),
        None => judged(args, args.baseline.as_deref().expect("clap requires one")),
    }
}

fn record(args: &CheckArgs, path: &Path) -> CliResult {
    if args.device.is_some_and(|d| d < 0) {
        return Err(CliError::invalid_parameter(
            "device must be a nonnegative integer.",
            HINT,
        ));
    }
    let tolerance = args
        .tolerance
        .as_deref()
        .map(Tolerance::parse)
        .transpose()
        .map_err(|e| CliError::invalid_parameter(e, HINT))?;
    let metric = Metric::from(args.metric.unwrap_or(MetricArg::Allocated));
    let repeats = args
        .runs
        .iter()
        .map(|r| job::measure(r, metric, args.device, args.jobs, args.json))
        .collect::<CliResult<Vec<_>>>()?;
    let baseline = Baseline::record(metric, args.device, tolerance, &repeats)
        .map_err(|e| CliError::invalid_parameter(format!("cannot record a baseline: {e}"), HINT))?;
    publish::write_file(path, baseline.to_text().as_bytes(), 0o666).map_err(|e| {
        CliError::internal(format!("cannot write {}: {e}", path.display())).with_hint(Some(
            "Check that the directory exists and is writable; an existing baseline is left as it was.",
        ))
    })?;
    if args.json {
        output::print_json(&envelope::success([
            ("baseline", json!(path.display().to_string())),
            ("metric", json!(metric.name())),
            ("repeats", json!(baseline.repeats)),
            ("limit_rule", json!(baseline.limit_rule)),
            (
                "entries",
                json!(baseline
                    .entries
                    .iter()
                    .map(|e| json!({
                        "rank": e.rank, "device": e.device, "baseline_peak": e.baseline_peak,
                        "spread": e.peaks_of(metric).spread, "limit": e.limit,
                    }))
                    .collect::<Vec<_>>()),
            ),
        ]));
    } else {
        println!(
            "Recorded {}: {} rank/device entr{} from {} repeat{}, {} peak.",
            path.display(),
            baseline.entries.len(),
            if baseline.entries.len() == 1 {
                "y"
            } else {
                "ies"
            },
            baseline.repeats,
            if baseline.repeats == 1 { "" } else { "s" },
            metric.name()
        );
        println!("Limit: {}.", baseline.limit_rule.text());
        for e in &baseline.entries {
            println!(
                "  rank {} device {}: peak {} (spread {}), limit {}",
                e.rank,
                e.device,
                pt_snap_report::units::human_bytes(e.baseline_peak as f64),
                pt_snap_report::units::human_bytes(e.peaks_of(metric).spread as f64),
                pt_snap_report::units::human_bytes(e.limit as f64)
            );
        }
    }
    Ok(())
}

fn judged(args: &CheckArgs, path: &Path) -> CliResult<Verdict> {
    let format = match (args.format, args.json) {
        (Some(f), _) => f,
        (None, true) => CheckFormat::Json,
        (None, false) => CheckFormat::Text,
    };
    if args.json && args.output.is_none() && format != CheckFormat::Json {
        return Err(CliError::usage(
            "--json prints JSON on stdout: write the other format to a file with -o FILE.",
        ));
    }
    let [run] = &args.runs[..] else {
        return Err(CliError::usage(
            "check --baseline judges one RUN (a snapshot, a database or a directory of ranks).",
        ));
    };
    let baseline = read_baseline(path)?;
    let measured = job::measure(run, baseline.metric, baseline.device, args.jobs, args.json)?;
    let judgement = judge(&baseline, &measured).map_err(|m| {
        CliError::invalid_parameter(
            format!("{}: {m}", run.display()),
            "A baseline judges the same configuration it was recorded from: check the RUN, \
             or record a new baseline with 'pt-snap check --record'.",
        )
    })?;
    let inputs = vec![
        ("baseline", json!(path.display().to_string())),
        ("run", json!(run.display().to_string())),
    ];
    let report = match format {
        CheckFormat::Text => judgement.to_text(),
        CheckFormat::Markdown => judgement.to_markdown(),
        CheckFormat::Junit => judgement.to_junit(),
        CheckFormat::Json => {
            pt_snap_contract::python::pretty(&envelope::success(
                judgement.json_fields(inputs.clone()),
            )) + "\n"
        }
    };
    output::write_or_print(args.output.as_deref(), &report)?;
    if args.json && args.output.is_some() {
        output::print_json(&envelope::success(judgement.json_fields(inputs)));
    } else if let Some(file) = &args.output {
        let over = judgement
            .checks
            .iter()
            .filter(|c| c.verdict == Verdict::Regressed)
            .count();
        println!(
            "{}: {over} of {} peaks over their limit; report written to {}",
            judgement.verdict.name(),
            judgement.checks.len(),
            file.display()
        );
    }
    Ok(judgement.verdict)
}

fn read_baseline(path: &Path) -> CliResult<Baseline> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::invalid_parameter(
            format!("cannot read the baseline {}: {e}", path.display()),
            "Record one first: pt-snap check --record BASELINE.json RUN [RUN…]",
        )
    })?;
    Baseline::parse(&text).map_err(|e| {
        CliError::invalid_parameter(
            format!(
                "{} is not a baseline pt-snap can judge with: {e}",
                path.display()
            ),
            "Record it again with 'pt-snap check --record' (a baseline is written by pt-snap, \
             not by hand).",
        )
    })
}
