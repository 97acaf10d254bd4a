//! `pt-snap report peak-memory` and `pt-snap report memory-tree`.

use pt_snap_query::{Analyzer, QueryError};
use pt_snap_report::{memory_tree, peak_memory, Metric, PeakRequest, TreeRequest};

use crate::budget::Deadline;
use crate::cli::{MemoryTreeArgs, MetricArg, PeakMemoryArgs, ReportCommand, TreeFormat};
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
    a.limits.resolve().map_err(prefixed)?;
    // One deadline for the whole composition.
    let deadline = Deadline::start(a.timeout).map_err(prefixed)?;
    let resolved = focus::resolve_required(a.db_path.as_deref())?;
    let (analyzer, _) = super::query::open(&resolved).map_err(|e| {
        if e.code == "DATABASE_NOT_FOUND" {
            e
        } else {
            prefixed(e)
        }
    })?;
    analyzer.set_interrupt(deadline.interrupt());
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
    let mut report = peak_memory(&analyzer, &request).map_err(|e| report_error(e, &deadline))?;
    deadline.check().map_err(prefixed)?;
    report.timeout_s = deadline.seconds;
    if a.json {
        output::print_json(&report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    Ok(())
}

fn tree(a: &MemoryTreeArgs) -> CliResult {
    if a.json && a.format == TreeFormat::Html {
        return Err(CliError::new(
            "INVALID_PARAMETER",
            "--json cannot be combined with --format html.",
            None,
        ));
    }
    a.limits.resolve()?;
    let deadline = Deadline::start(a.timeout)?;
    let resolved = focus::resolve_required(a.db_path.as_deref())?;
    let analyzer = open_for_tree(&resolved)?;
    analyzer.set_interrupt(deadline.interrupt());
    let request = TreeRequest {
        device: a.device.or(resolved.device_id),
        event_id: a.event_id,
        include_static: !a.exclude_static,
        min_size: a.min_size,
    };
    let tree = memory_tree(&analyzer, &request)
        .map_err(|e| CliError::query(e, &deadline).with_text_prefix("Error: "))?;
    deadline.check()?;
    let incomplete =
        |e: pt_snap_report::IncompleteTree| CliError::new("INVALID_PARAMETER", e.to_string(), None);
    if a.json {
        output::print_json(&tree.to_json(deadline.seconds));
    } else if a.format == TreeFormat::Html {
        println!("{}", tree.to_html().map_err(incomplete)?);
    } else {
        print!("{}", tree.to_text().map_err(incomplete)?);
    }
    Ok(())
}

/// The memory tree reports a missing database with its resolved path, as the reference.
fn open_for_tree(resolved: &focus::Resolved) -> CliResult<Analyzer> {
    let path = focus::absolute(&resolved.db_path)?;
    if !path.exists() {
        return Err(CliError::database_not_found(format!(
            "Database not found: {}",
            path.display()
        )));
    }
    super::query::open(resolved)
        .map(|(analyzer, _)| analyzer)
        .map_err(|e| e.with_text_prefix("Error: "))
}

/// Query failures inside a report read `Error generating report: …`, except a wrong device.
fn report_error(e: QueryError, deadline: &Deadline) -> CliError {
    let device = matches!(e, QueryError::DeviceNotFound(_));
    let err = CliError::query(e, deadline);
    if device {
        err
    } else {
        err.with_text_prefix(REPORT_PREFIX)
    }
}
