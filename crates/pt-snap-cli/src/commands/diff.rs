//! `pt-snap diff A B`: open both runs (a snapshot through the import's reuse cache, or a
//! database: `source::Opened`), have `pt-snap-report` measure and compare them, print or
//! publish the result.

use pt_snap_contract::{envelope, python};
use pt_snap_query::TimelineRequest;
use pt_snap_report::diff::{measure, Diff, DiffRequest, Timelines, PAGE_BUCKETS};
use pt_snap_report::Metric;
use pt_snap_store::ReplayMode;

use crate::budget::Deadline;
use crate::cli::{DiffArgs, DiffFormat};
use crate::error::{CliError, CliResult};
use crate::output;
use crate::source::Opened;

/// Timeline buckets per side in JSON and text: enough to see the shape.
const JSON_BUCKETS: usize = 100;

pub fn run(args: &DiffArgs) -> CliResult {
    if args.json && args.format == DiffFormat::Html {
        return Err(CliError::invalid_parameter(
            "--json cannot be combined with --format html.",
            "Use --json for the JSON report, or --format html -o FILE for the page.",
        ));
    }
    if args.device.is_some_and(|d| d < 0) {
        return Err(CliError::invalid_parameter(
            "device must be a nonnegative integer.",
            "Pass --device with an id present in both inputs, or omit it.",
        ));
    }
    let replay = if args.lenient {
        ReplayMode::Lenient
    } else {
        ReplayMode::Strict
    };
    let a = Opened::open(&args.a, replay, args.json)?;
    let b = Opened::open(&args.b, replay, args.json)?;

    // One deadline for the queries of both sides; the imports above are not queries.
    let deadline = Deadline::start(args.timeout)?;
    let request = DiffRequest {
        device: args.device,
        metric: Metric::from(args.metric),
    };
    let buckets = match args.format {
        DiffFormat::Html => PAGE_BUCKETS,
        DiffFormat::Text => JSON_BUCKETS,
    };
    let side = |input: &Opened| {
        input.analyzer.set_interrupt(deadline.interrupt());
        measure(&input.analyzer, &request, |device| {
            let req = TimelineRequest {
                device: Some(device),
                ..TimelineRequest::new(buckets)
            };
            let (by_event, by_time) = input.analyzer.timelines(&req)?;
            Ok(Timelines { by_event, by_time })
        })
        .map_err(|e| CliError::query(e, Some(&deadline), "Error: "))
    };
    let diff = Diff::new(side(&a)?, side(&b)?, args.by.into());
    deadline.check()?;

    let limit = usize::try_from(args.limit).ok().filter(|n| *n > 0);
    let fields = [&a.fields, &b.fields];
    let labels = [a.label.as_str(), b.label.as_str()];
    let out = if args.json {
        python::pretty(&envelope::success(diff.to_json(limit, fields))) + "\n"
    } else if args.format == DiffFormat::Html {
        diff.to_html(limit, labels, fields)
    } else {
        let mut text = String::new();
        for (name, input) in [("A", &a), ("B", &b)] {
            if let Some(r) = &input.lenient {
                text += &format!("{name}: {}\n", r.line());
            }
        }
        text + &diff.to_text(limit, labels)
    };
    output::write_or_print(args.output.as_deref(), &out)
}
