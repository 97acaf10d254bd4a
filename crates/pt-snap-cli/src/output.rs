//! JSON output as the reference prints it, whether it was asked for, and the mark every
//! output of a lenient database carries.

use std::path::Path;

use pt_snap_contract::{publish, python};
use pt_snap_query::ImportMetadata;
use serde_json::{json, Value};

use crate::error::{CliError, CliResult};

/// The mark of a DB made by a lenient replay (`import --lenient`): its numbers are
/// approximate where the trace contradicted the allocator state. Every command that shows
/// a DB's numbers says so, under `replay` in JSON and on a line of its own in text.
pub struct LenientReplay {
    pub issues: i64,
}

impl LenientReplay {
    /// `None` for a DB of the strict replay (the reference's, and ours by default).
    pub fn of(metadata: &ImportMetadata) -> Option<LenientReplay> {
        metadata
            .lenient_replay_issues
            .map(|issues| LenientReplay { issues })
    }

    pub fn to_json(&self) -> Value {
        json!({
            "mode": "lenient",
            "issues": self.issues,
            "issues_table": pt_snap_db::schema::REPLAY_ISSUES_TABLE,
        })
    }

    pub fn line(&self) -> String {
        format!(
            "Lenient replay: {} event(s) could not be reconciled with the allocator state and were \
             applied from the trace alone; the numbers are approximate (see table {}).",
            self.issues,
            pt_snap_db::schema::REPLAY_ISSUES_TABLE
        )
    }

    /// Adds the mark to a JSON object, if there is one.
    pub fn annotate(this: &Option<LenientReplay>, out: &mut Value) {
        if let (Some(r), Some(o)) = (this, out.as_object_mut()) {
            o.insert("replay".into(), r.to_json());
        }
    }
}

/// Prints `value` as the reference's `--json` output: `json.dumps(indent=2, ensure_ascii=False)`.
pub fn print_json(value: &Value) {
    println!("{}", python::pretty(value));
}

/// A report into `-o FILE`, published whole, or to stdout without `-o`.
pub fn write_or_print(output: Option<&Path>, report: &str) -> CliResult {
    match output {
        Some(path) => publish::write_file(path, report.as_bytes(), 0o666).map_err(|e| {
            CliError::internal(format!("cannot write {}: {e}", path.display())).with_hint(Some(
                "Check that the directory of -o exists and is writable, and that FILE is not a \
                 directory; an existing FILE is left as it was.",
            ))
        }),
        None => {
            print!("{report}");
            Ok(())
        }
    }
}

/// The terminal's width as `COLUMNS` says it (80 when it does not): what the reference
/// wraps text to.
pub fn terminal_columns() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
        .unwrap_or(80)
}

/// Did the user ask for JSON? Scans argv before parsing so that usage errors can be
/// reported as an envelope too: `--json` counts unless it is the value of the option before
/// it (the reference's rule, minus its quirk of ignoring `--json` after an unknown option).
/// Which options take a value is read from the clap definition, so it cannot drift.
pub fn json_requested(args: &[String], cli: &clap::Command) -> bool {
    let mut value_options = Vec::new();
    collect_value_options(cli, &mut value_options);
    args.iter()
        .enumerate()
        .skip(1)
        .any(|(i, a)| a == "--json" && !value_options.iter().any(|o| *o == args[i - 1]))
}

fn collect_value_options(cmd: &clap::Command, out: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        if arg.is_positional() || !arg.get_action().takes_values() {
            continue;
        }
        out.extend(arg.get_long().map(|l| format!("--{l}")));
        out.extend(arg.get_short().map(|s| format!("-{s}")));
    }
    for sub in cmd.get_subcommands() {
        collect_value_options(sub, out);
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    fn json_requested(args: &[String]) -> bool {
        super::json_requested(args, &crate::cli::Cli::command())
    }

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn json_flag_is_found_unless_it_is_an_option_value() {
        assert!(json_requested(&args("pt-snap import x.pkl --json")));
        assert!(json_requested(&args("pt-snap query --bogus --json")));
        assert!(!json_requested(&args("pt-snap import x.pkl -o --json")));
        assert!(!json_requested(&args("pt-snap import x.pkl")));
    }
}
