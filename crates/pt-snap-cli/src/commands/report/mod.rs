//! `pt-snap report peak-memory`, `memory-tree`, `oom` and `segments`: one file each; here
//! what they share.

mod oom;
mod peak;
mod segments;
mod tree;

use std::path::Path;

use pt_snap_query::category::CategoryRules;
use pt_snap_report::categories::Rules;

use crate::cli::{ReportCommand, StacksArg};
use crate::error::{CliError, CliResult};
use crate::output::LenientReplay;

const REPORT_PREFIX: &str = "Error generating report: ";

pub fn run(command: &ReportCommand) -> CliResult {
    match command {
        ReportCommand::PeakMemory(a) => peak::run(a),
        ReportCommand::MemoryTree(a) => tree::run(a),
        ReportCommand::Oom(a) => oom::run(a),
        ReportCommand::Segments(a) => segments::run(a),
    }
}

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

/// The lenient-replay mark of a database (datasets have none).
fn lenient_replay(analyzer: &pt_snap_query::Analyzer) -> CliResult<Option<LenientReplay>> {
    Ok(analyzer
        .db()
        .lenient_replay_issues()?
        .map(|issues| LenientReplay { issues }))
}
