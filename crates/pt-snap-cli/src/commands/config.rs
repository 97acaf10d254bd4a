//! `pt-snap config`: show, locate or clear the global config.

use pt_snap_contract::{envelope, python};
use serde_json::{json, Value};

use crate::cli::ConfigArgs;
use crate::error::CliResult;
use crate::focus;
use crate::output;

pub fn run(args: &ConfigArgs) -> CliResult {
    let path = focus::global_file()?;
    let shown = path.display().to_string();
    if args.path {
        if args.json {
            output::print_json(&envelope::success(vec![
                ("action", json!("path")),
                ("path", json!(shown)),
            ]));
        } else {
            println!("Config file: {shown}");
        }
        return Ok(());
    }
    if args.clear {
        focus::write_json_atomic(&path, &json!({}))?;
        if args.json {
            output::print_json(&envelope::success(vec![
                ("action", json!("clear")),
                ("cleared", json!(true)),
                ("path", json!(shown)),
            ]));
        } else {
            println!("Configuration cleared: {shown}");
        }
        return Ok(());
    }
    let config = focus::read_global_raw()?;
    if args.json {
        output::print_json(&envelope::success(vec![
            ("action", json!("show")),
            ("path", json!(shown)),
            ("config", Value::Object(config)),
        ]));
    } else if config.is_empty() {
        println!("No configuration set.");
    } else {
        println!("Current configuration:");
        for (k, v) in &config {
            println!("  {k}: {}", python::str_of_json(v));
        }
    }
    Ok(())
}
