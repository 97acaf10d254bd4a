//! JSON output as the reference prints it, and whether it was asked for.

use pt_snap_contract::python;
use serde_json::Value;

/// Prints `value` as the reference's `--json` output: `json.dumps(indent=2, ensure_ascii=False)`.
pub fn print_json(value: &Value) {
    println!("{}", python::pretty(value));
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
