//! `pt-snap capabilities`: everything an agent needs before its first query — the CLI
//! version, every template contract, the bundled skills with their install status, and (after
//! the reference's keys) the contracts of our own commands.

use pt_snap_contract::envelope;
use pt_snap_query::registry;
use pt_snap_report::commands;
use serde_json::{json, Value};

use crate::budget;
use crate::commands::skill;
use crate::error::CliResult;
use crate::output;

pub fn run(json: bool) -> CliResult {
    let limits = budget::env_work_limits()?;
    let listings = skill::capabilities_listing()?;
    if json {
        let templates: Vec<Value> = registry::all()
            .iter()
            .map(|t| Value::Object(t.contract.info_json(&limits)))
            .collect();
        output::print_json(&envelope::success(vec![
            ("cli_version", json!(env!("CARGO_PKG_VERSION"))),
            ("templates", Value::Array(templates)),
            ("skills", json!(listings)),
            (
                "commands",
                Value::Array(commands::all().iter().map(|c| c.json()).collect()),
            ),
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
        print_commands();
        return Ok(());
    }
    println!("Skills ({}):", listings.len());
    print!("{}", skill::render_listings(&listings));
    print_commands();
    Ok(())
}

fn print_commands() {
    println!();
    println!(
        "Commands with output contracts ({}):",
        commands::all().len()
    );
    for c in commands::all() {
        let j = c.json();
        println!("  {}", j["usage"].as_str().unwrap_or(c.name));
        println!("    {}", j["description"].as_str().unwrap_or(""));
    }
}
