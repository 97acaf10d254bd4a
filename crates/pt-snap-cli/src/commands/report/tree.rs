//! `pt-snap report memory-tree`: live memory after an event as a frame tree
//! (`pt_snap_report::tree`), as text, JSON or the flamegraph page.

use pt_snap_contract::ErrorCode;
use pt_snap_query::Source;
use pt_snap_report::{memory_tree, Stacks, TreeRequest};

use super::{lenient_replay, text_only_stacks};
use crate::budget::Deadline;
use crate::cli::{MemoryTreeArgs, StacksArg, TreeFormat};
use crate::error::{CliError, CliResult};
use crate::output::LenientReplay;
use crate::{focus, output, source};

pub(super) fn run(a: &MemoryTreeArgs) -> CliResult {
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
    let resolved = source::readable(resolved, a.json, "report memory-tree")?;
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
