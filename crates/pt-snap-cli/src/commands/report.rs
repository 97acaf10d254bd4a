//! `pt-snap report peak-memory` and `pt-snap report memory-tree`.

use pt_snap_contract::ErrorCode;
use pt_snap_query::WorkLimits;
use pt_snap_report::{
    memory_tree, memory_tree_dataset, peak_memory, peak_memory_dataset, DatasetBudget, Metric,
    PeakRequest, TreeRequest,
};

use crate::budget::Deadline;
use crate::cli::{MemoryTreeArgs, MetricArg, PeakMemoryArgs, ReportCommand, TreeFormat};
use crate::commands::metadata::LenientReplay;
use crate::error::{CliError, CliResult};
use crate::focus;
use crate::output;

const REPORT_PREFIX: &str = "Error generating report: ";

pub fn run(command: &ReportCommand) -> CliResult {
    match command {
        ReportCommand::PeakMemory(a) => peak(a),
        ReportCommand::MemoryTree(a) => tree(a),
    }
}

fn peak(a: &PeakMemoryArgs) -> CliResult {
    let prefixed = |e: CliError| e.with_text_prefix(REPORT_PREFIX);
    let limits = a.limits.resolve().map_err(prefixed)?;
    // One deadline for the whole composition.
    let deadline = Deadline::start(a.timeout).map_err(prefixed)?;
    let resolved = focus::resolve_required(a.db_path.as_deref())?;
    let request = PeakRequest {
        device: a.device.or(resolved.device_id),
        metric: match a.metric {
            MetricArg::Active => Metric::Active,
            MetricArg::Allocated => Metric::Allocated,
            MetricArg::Reserved => Metric::Reserved,
        },
        include_static: !a.exclude_static,
        limit: a.limit,
        stack_bytes: a.stack_bytes,
        start_id: a.start_id,
        end_id: a.end_id,
    };
    let absolute = focus::absolute(&resolved.db_path)?;
    let mut lenient = None;
    let mut report = if let Some(ds) = crate::dataset::open(&absolute).map_err(prefixed)? {
        // A dataset: both queries charged to one work budget.
        deadline.check().map_err(prefixed)?;
        let budget = dataset_budget(limits, &deadline);
        peak_memory_dataset(&ds, &request, &budget)
            .map_err(|e| CliError::query(e, Some(&deadline), REPORT_PREFIX))?
    } else {
        let (analyzer, _) = super::query::open(&resolved).map_err(|e| {
            if e.code == ErrorCode::DatabaseNotFound {
                e
            } else {
                prefixed(e)
            }
        })?;
        analyzer.set_interrupt(deadline.interrupt());
        lenient = LenientReplay::of(analyzer.db())?;
        peak_memory(&analyzer, &request)
            .map_err(|e| CliError::query(e, Some(&deadline), REPORT_PREFIX))?
    };
    deadline.check().map_err(prefixed)?;
    report.timeout_s = deadline.seconds;
    if a.json {
        let mut out = report.to_json();
        LenientReplay::annotate(&lenient, &mut out);
        output::print_json(&out);
    } else {
        if let Some(r) = &lenient {
            println!("{}", r.line());
        }
        print!("{}", report.to_text());
    }
    Ok(())
}

/// A report's budget on a dataset: the resolved work limits and the command's deadline.
fn dataset_budget(limits: WorkLimits, deadline: &Deadline) -> DatasetBudget {
    DatasetBudget {
        limits,
        interrupt: deadline.interrupt(),
        lifecycle_cache: crate::dataset::lifecycle_cache(),
    }
}

fn tree(a: &MemoryTreeArgs) -> CliResult {
    if a.json && a.format == TreeFormat::Html {
        return Err(CliError::new(
            ErrorCode::InvalidParameter,
            "--json cannot be combined with --format html.",
        )
        .with_hint(None));
    }
    let limits = a.limits.resolve()?;
    let deadline = Deadline::start(a.timeout)?;
    let resolved = focus::resolve_required(a.db_path.as_deref())?;
    let request = TreeRequest {
        device: a.device.or(resolved.device_id),
        event_id: a.event_id,
        include_static: !a.exclude_static,
        min_size: a.min_size,
    };
    let path = existing(&resolved)?;
    if let Some(ds) = crate::dataset::open(&path)? {
        // Datasets have no structured frames: the dataset engine's refusal (after its
        // device check) is the answer, in every output format.
        deadline.check()?;
        let e = memory_tree_dataset(&ds, &request, &dataset_budget(limits, &deadline));
        return Err(CliError::query(e, Some(&deadline), "Error: "));
    }
    let analyzer = super::query::open(&resolved)
        .map(|(analyzer, _)| analyzer)
        .map_err(|e| e.with_text_prefix("Error: "))?;
    analyzer.set_interrupt(deadline.interrupt());
    let lenient = LenientReplay::of(analyzer.db())?;
    let tree = memory_tree(&analyzer, &request)
        .map_err(|e| CliError::query(e, Some(&deadline), "Error: "))?;
    deadline.check()?;
    let incomplete = |e: pt_snap_report::IncompleteTree| {
        CliError::new(ErrorCode::InvalidParameter, e.to_string()).with_hint(None)
    };
    if a.json {
        let mut out = tree.to_json(deadline.seconds);
        LenientReplay::annotate(&lenient, &mut out);
        output::print_json(&out);
    } else if a.format == TreeFormat::Html {
        println!("{}", tree.to_html().map_err(incomplete)?);
    } else {
        if let Some(r) = &lenient {
            println!("{}", r.line());
        }
        print!("{}", tree.to_text().map_err(incomplete)?);
    }
    Ok(())
}

/// The memory tree reports a missing database with its resolved path, as the reference.
fn existing(resolved: &focus::Resolved) -> CliResult<std::path::PathBuf> {
    let path = focus::absolute(&resolved.db_path)?;
    if !path.exists() {
        return Err(CliError::database_not_found(format!(
            "Database not found: {}",
            path.display()
        )));
    }
    Ok(path)
}
