//! `pt-snap report peak-memory`: the peaks and what was live at one (`pt_snap_report::peak`),
//! on a database, a snapshot's database or a sharded dataset.

use pt_snap_contract::ErrorCode;
use pt_snap_query::Source;
use pt_snap_report::{peak_memory, Grouping, Metric, PeakRequest};

use super::{category_rules, lenient_replay, text_only_stacks, REPORT_PREFIX};
use crate::budget::Deadline;
use crate::cli::{GroupBy, PeakMemoryArgs};
use crate::error::{CliError, CliResult};
use crate::output::LenientReplay;
use crate::{focus, output, source};

pub(super) fn run(a: &PeakMemoryArgs) -> CliResult {
    let prefixed = |e: CliError| e.with_text_prefix(REPORT_PREFIX);
    text_only_stacks(Some(a.stacks), a.json).map_err(prefixed)?;
    let by = match a.by {
        GroupBy::Callstack if a.categories.is_some() => {
            return Err(CliError::invalid_parameter(
                "--categories applies to --by category.",
                "Add --by category, or leave out --categories.",
            ))
        }
        GroupBy::Callstack => Grouping::Callstack,
        GroupBy::Category => Grouping::Category(category_rules(a.categories.as_deref())?),
    };
    let limits = a.limits.resolve().map_err(prefixed)?;
    // One deadline (and on a dataset one work budget) for the whole composition.
    let deadline = Deadline::start(a.timeout).map_err(prefixed)?;
    let resolved = focus::resolve_required(a.db_path.as_deref())?;
    let resolved = source::readable(resolved, a.json, "report peak-memory")?;
    let request = PeakRequest {
        device: a.device.or(resolved.device_id),
        metric: Metric::from(a.metric),
        include_static: !a.exclude_static,
        limit: a.limit,
        stack_bytes: a.stack_bytes,
        start_id: a.start_id,
        end_id: a.end_id,
        by,
    };
    let absolute = focus::absolute(&resolved.db_path)?;
    let (source, lenient) =
        match source::dataset(&absolute, limits, &deadline, None).map_err(prefixed)? {
            // The dataset engine does not answer our category template: said plainly,
            // before any query runs.
            Some(_) if matches!(request.by, Grouping::Category(_)) => {
                return Err(prefixed(
                    CliError::new(
                        ErrorCode::QueryFailed,
                        "--by category is not available on a sharded dataset.",
                    )
                    .with_hint(Some(
                        "Import the snapshot as one database (pt-snap import SNAPSHOT, the \
                         default single-db format), or leave out --by category.",
                    )),
                ));
            }
            Some(dataset) => (dataset, None),
            None => {
                let (analyzer, _) = source::database(&resolved, &deadline).map_err(|e| {
                    if e.code == ErrorCode::DatabaseNotFound {
                        e
                    } else {
                        prefixed(e)
                    }
                })?;
                let lenient = lenient_replay(&analyzer)?;
                (Box::new(analyzer) as Box<dyn Source>, lenient)
            }
        };
    deadline.check().map_err(prefixed)?;
    let mut report = peak_memory(source.as_ref(), &request)
        .map_err(|e| CliError::query(e, Some(&deadline), REPORT_PREFIX))?;
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
        print!("{}", report.to_text_stacks(a.stacks.into()));
    }
    Ok(())
}
