//! `pt-snap overview`: devices, their event ranges, and the import metadata.

use std::path::Path;

use serde_json::json;

use crate::commands::metadata;
use crate::error::CliResult;
use crate::{focus, output};

pub fn run(db_path: Option<&Path>, json: bool) -> CliResult {
    let (db, path, source) = focus::open_db(db_path)?;
    let bounds = db.bounds()?;
    let status = metadata::status(&db)?;
    if json {
        let devices: Vec<_> = bounds
            .iter()
            .map(|b| {
                json!({
                    "device_id": b.device,
                    "first_event_id": b.events.map(|e| e.0),
                    "last_event_id": b.events.map(|e| e.1),
                })
            })
            .collect();
        output::print_json(&output::envelope(vec![
            ("db_path", json!(path.display().to_string())),
            ("focus_source", json!(source.name())),
            ("devices", json!(devices)),
            ("import_metadata", status),
        ]));
        return Ok(());
    }
    println!("Database: {}", path.display());
    println!("Focus source: {}", source.name());
    println!(
        "Import metadata: {}",
        status["status"].as_str().unwrap_or("")
    );
    if let Some(reason) = status["reason"].as_str() {
        println!("Metadata reason: {reason}");
    }
    if bounds.is_empty() {
        println!("Devices: none");
    } else {
        println!("Devices:");
        for b in &bounds {
            match b.events {
                Some((first, last)) => println!("  {}: events {first}..{last}", b.device),
                None => println!("  {}: no events", b.device),
            }
        }
    }
    Ok(())
}
