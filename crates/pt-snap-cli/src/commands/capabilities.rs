//! `pt-snap capabilities`: everything an agent needs before its first query — the CLI
//! version, every template contract, the bundled skills with their install status, and the
//! contracts of the commands beyond the reference's (`commands`, after the reference's keys).

use pt_snap_contract::envelope;
use pt_snap_query::registry;
use serde_json::{json, Value};

use crate::budget;
use crate::error::{CliError, CliResult};
use crate::output;

pub fn run(json: bool) -> CliResult {
    let limits = budget::env_work_limits()?;
    let listings = pt_snap_skills::Skills::default_listing()
        .map_err(|e| CliError::skill_error(e.to_string()))?;
    if json {
        let templates: Vec<Value> = registry::all()
            .iter()
            .map(|t| Value::Object(t.contract.info_json(&limits)))
            .collect();
        output::print_json(&envelope::success(vec![
            ("cli_version", json!(env!("CARGO_PKG_VERSION"))),
            ("templates", Value::Array(templates)),
            ("skills", json!(listings)),
            ("commands", json!(pt_snap_report::commands::all())),
        ]));
        return Ok(());
    }
    println!("CLI version: {}", env!("CARGO_PKG_VERSION"));
    println!();
    println!("Templates ({}):", registry::all().len());
    for t in registry::all() {
        let c = &t.contract;
        println!("  {}  ({})", c.name, c.category);
        println!("    {}", c.description);
        if !c.parameters.is_empty() {
            let names: Vec<&str> = c.parameters.iter().map(|(n, _)| n.as_str()).collect();
            println!("    parameters: {}", names.join(", "));
        }
    }
    println!();
    println!("Use --json for full parameter contracts, output schemas, and field semantics.");
    println!();
    if listings.is_empty() {
        println!("Skills: none");
    } else {
        println!("Skills ({}):", listings.len());
        let columns = output::terminal_columns();
        print!("{}", pt_snap_skills::text::listings(&listings, columns));
    }
    let commands = pt_snap_report::commands::all();
    println!();
    println!("Commands beyond pt-snap-cli 0.4.1's ({}):", commands.len());
    for c in commands {
        println!("  {}", c.name);
        println!("    {}", c.description);
        println!("    usage: {}", c.usage);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use clap::CommandFactory;

    /// `capabilities` tells agents how to call our own commands: each contract must name
    /// exactly the arguments the parser takes, with their short forms and defaults.
    #[test]
    fn every_command_contract_names_its_arguments_and_only_those() {
        let cli = crate::cli::Cli::command();
        for contract in pt_snap_report::commands::all() {
            // `sql` is in the default build only (the CLI's `sql` feature).
            if cfg!(not(feature = "sql")) && contract.name == "sql" {
                continue;
            }
            let mut command = &cli;
            for word in contract.name.split(' ') {
                command = command
                    .find_subcommand(word)
                    .unwrap_or_else(|| panic!("{}: no such command", contract.name));
            }
            let mut parsed = BTreeMap::new();
            for arg in command.get_arguments() {
                let name = if arg.is_positional() {
                    arg.get_value_names().unwrap()[0].to_string()
                } else {
                    format!("--{}", arg.get_long().unwrap())
                };
                if name == "--help" {
                    continue;
                }
                // A flag's default is false; clap lists none for it.
                let default = match arg.get_action() {
                    clap::ArgAction::SetTrue => Some("false".to_owned()),
                    _ => arg
                        .get_default_values()
                        .first()
                        .map(|v| v.to_string_lossy().into_owned()),
                };
                parsed.insert(name, (arg.get_short().map(|s| format!("-{s}")), default));
            }
            let documented: BTreeMap<_, _> = contract
                .arguments
                .iter()
                .map(|a| {
                    let default = match &a.default {
                        serde_json::Value::Null => None,
                        serde_json::Value::String(s) => Some(s.clone()),
                        other => Some(other.to_string()),
                    };
                    (a.name.clone(), (a.short.clone(), default))
                })
                .collect();
            assert_eq!(documented, parsed, "{}", contract.name);
        }
    }
}
