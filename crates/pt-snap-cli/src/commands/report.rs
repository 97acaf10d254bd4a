//! `pt-snap report peak-memory`, `pt-snap report memory-tree` and `pt-snap report oom`.

use std::path::Path;

use pt_snap_contract::{envelope, ErrorCode};
use pt_snap_import::ReplayMode;
use pt_snap_query::category::CategoryRules;
use pt_snap_query::{QueryError, Source};
use pt_snap_report::categories::Rules;
use pt_snap_report::{
    memory_tree, oom_report, peak_memory, Grouping, Metric, OomRequest, PeakRequest, Stacks,
    TreeRequest,
};

use crate::budget::Deadline;
use crate::cli::{
    GroupBy, MemoryTreeArgs, OomArgs, PeakMemoryArgs, ReportCommand, StacksArg, TreeFormat,
};
use crate::commands::diff::Input;
use crate::commands::metadata::LenientReplay;
use crate::error::{CliError, CliResult};
use crate::{focus, output, source};

const REPORT_PREFIX: &str = "Error generating report: ";

/// `--stacks python` shapes a text report; JSON always carries every frame.
fn text_only_stacks(stacks: Option<StacksArg>, json: bool) -> CliResult {
    if json && stacks == Some(StacksArg::Python) {
        return Err(CliError::invalid_parameter(
            "--stacks python applies to the text report; --json always carries every frame.",
            "Drop --stacks python, or drop --json for the text with Python frames only.",
        ));
    }
    Ok(())
}

pub fn run(command: &ReportCommand) -> CliResult {
    match command {
        ReportCommand::PeakMemory(a) => peak(a),
        ReportCommand::MemoryTree(a) => tree(a),
        ReportCommand::Oom(a) => oom(a),
    }
}

/// `--categories RULES.toml`: the file's rules, checked before anything is opened (the
/// built-in rules without the flag).
fn category_rules(path: Option<&Path>) -> CliResult<Rules> {
    const HINT: &str = "See docs/categories.md for the rules' form; the built-in rules are \
                        crates/pt-snap-query/categories/builtin.toml.";
    let Some(path) = path else {
        return Ok(Rules::default());
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::invalid_parameter(
            format!("Cannot read the --categories file {}: {e}", path.display()),
            HINT,
        )
    })?;
    CategoryRules::parse(&text)
        .map_err(|e| CliError::invalid_parameter(format!("{}: {e}", path.display()), HINT))?;
    Ok(Rules(Some(text)))
}

/// `report oom`: a database or a snapshot (through the reuse cache), or the focus.
fn oom(a: &OomArgs) -> CliResult {
    text_only_stacks(Some(a.stacks), a.json)?;
    if a.device.is_some_and(|d| d < 0) {
        return Err(CliError::invalid_parameter(
            "device must be a nonnegative integer.",
            "Pass --device with an id present in the input, or omit it.",
        ));
    }
    if a.top < 0 {
        return Err(CliError::invalid_parameter(
            "top must be a nonnegative integer.",
            "Pass -n with how many callstack groups and blocks to show.",
        ));
    }
    let category_rules = category_rules(a.categories.as_deref())?;
    let (path, device) = match &a.path {
        Some(p) => (p.clone(), a.device),
        None => {
            let resolved = focus::resolve_required(None)?;
            (resolved.db_path, a.device.or(resolved.device_id))
        }
    };
    let input = Input::open(&path, ReplayMode::Strict, a.json)?;
    let request = OomRequest {
        device,
        top_n: a.top,
        category_rules,
    };
    let db = input.analyzer.db();
    let report = oom_report(&input.analyzer, &request, &|d| {
        let d = usize::try_from(d).map_err(|_| QueryError::DeviceNotFound(d.to_string()))?;
        db.oom_device_free(d)
            .map_err(|e| QueryError::ReadFailed(e.to_string()))
    })
    .map_err(|e| CliError::query(e, None, "Error: "))?;
    if a.json {
        // The input's `path`, `db_path`, `import` (and `replay`) as `diff` prints them.
        let mut fields = input.fields.clone();
        for (k, v) in report.json_fields() {
            fields.insert(k.into(), v);
        }
        let out = envelope::success(fields.iter().map(|(k, v)| (k.as_str(), v.clone())));
        output::print_json(&out);
    } else {
        if let Some(r) = &input.lenient {
            println!("{}", r.line());
        }
        print!("{}", report.to_text_stacks(a.stacks.into()));
    }
    Ok(())
}

fn peak(a: &PeakMemoryArgs) -> CliResult {
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

/// The lenient-replay mark of a database (datasets have none).
fn lenient_replay(analyzer: &pt_snap_query::Analyzer) -> CliResult<Option<LenientReplay>> {
    Ok(analyzer
        .db()
        .lenient_replay_issues()?
        .map(|issues| LenientReplay { issues }))
}

fn tree(a: &MemoryTreeArgs) -> CliResult {
    if a.json && a.format == TreeFormat::Html {
        return Err(CliError::new(
            ErrorCode::InvalidParameter,
            "--json cannot be combined with --format html.",
        )
        .with_hint(None));
    }
    text_only_stacks(a.stacks, a.json)?;
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
    let (source, lenient) = match source::dataset(&path, limits, &deadline, None)? {
        Some(dataset) => (dataset, None),
        None => {
            let (analyzer, _) = source::database(&resolved, &deadline)
                .map_err(|e| e.with_text_prefix("Error: "))?;
            let lenient = lenient_replay(&analyzer)?;
            (Box::new(analyzer) as Box<dyn Source>, lenient)
        }
    };
    deadline.check()?;
    // On a dataset the engine's refusal of the frame tree (after its device check) is the
    // answer, in every output format.
    let tree = memory_tree(source.as_ref(), &request)
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
        let python_frames = a.stacks.map(|s| s == StacksArg::Python);
        println!("{}", tree.to_html(python_frames).map_err(incomplete)?);
    } else {
        if let Some(r) = &lenient {
            println!("{}", r.line());
        }
        let stacks = a.stacks.map_or(Stacks::All, Stacks::from);
        print!("{}", tree.to_text_stacks(stacks).map_err(incomplete)?);
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
