//! `pt-snap overview`: devices, their event ranges, and the import metadata.

use std::path::Path;

use pt_snap_contract::envelope;
use pt_snap_dataset::read::Dataset;
use serde_json::json;

use crate::commands::metadata;
use crate::error::CliResult;
use crate::{focus, output};

pub fn run(db_path: Option<&Path>, json: bool) -> CliResult {
    let resolved = focus::resolve_required(db_path)?;
    let absolute = focus::absolute(&resolved.db_path)?;
    if let Some(ds) = crate::dataset::open(&absolute)? {
        return dataset(&ds, &absolute, resolved.source, json);
    }
    let (db, path, source) = focus::open_db(db_path)?;
    let bounds = db.bounds()?;
    let status = metadata::status(&db)?;
    let lenient = metadata::LenientReplay::of(&db)?;
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
        let mut out = envelope::success(vec![
            ("db_path", json!(path.display().to_string())),
            ("focus_source", json!(source.name())),
            ("devices", json!(devices)),
            ("import_metadata", status),
        ]);
        metadata::LenientReplay::annotate(&lenient, &mut out);
        output::print_json(&out);
        return Ok(());
    }
    if let Some(r) = &lenient {
        println!("{}", r.line());
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

fn dataset(ds: &Dataset, path: &Path, source: focus::Source, json: bool) -> CliResult {
    let status = metadata::dataset_status(ds);
    let bounds = ds.device_bounds();
    let info = ds.to_json();
    if json {
        let devices: Vec<_> = bounds
            .iter()
            .map(|(d, first, last)| {
                json!({"device_id": d, "first_event_id": first, "last_event_id": last})
            })
            .collect();
        output::print_json(&envelope::success(vec![
            ("db_path", json!(path.display().to_string())),
            ("focus_source", json!(source.name())),
            ("dataset", info),
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
    println!("Devices:");
    for (d, first, last) in &bounds {
        println!("  {d}: events {first}..{last}");
    }
    println!(
        "Dataset: {} ({})",
        info["format"].as_str().unwrap_or(""),
        info["status"].as_str().unwrap_or("")
    );
    println!(
        "Slices/devices: {}",
        pt_snap_query::python::repr_of_json(&info["devices"])
    );
    // The reference prints "… and cross-slice queries unavailable" here although it answers
    // them (its bug 8, docs/compatibility.md).
    println!(
        "Text callstacks available; structured frames unavailable; cross-slice queries available."
    );
    Ok(())
}
