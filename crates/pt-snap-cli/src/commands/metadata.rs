//! `pt-snap metadata`: the import metadata of a database or dataset, and whether it is usable.

use std::path::Path;

use pt_snap_contract::python;
use serde_json::{json, Value};

use crate::error::CliResult;
use crate::output::LenientReplay;
use crate::source;

pub fn run(db_path: Option<&Path>, json: bool) -> CliResult {
    let (source, path, _) = source::for_reading(db_path, json, "metadata")?;
    let metadata = source.metadata()?;
    let status = metadata.to_json();
    let lenient = LenientReplay::of(&metadata);
    if json {
        let mut out = serde_json::Map::new();
        out.insert("db_path".into(), json!(path.display().to_string()));
        for (k, v) in status.as_object().expect("status is an object") {
            out.insert(k.clone(), v.clone());
        }
        let mut out = Value::Object(out);
        LenientReplay::annotate(&lenient, &mut out);
        crate::output::print_json(&out);
        return Ok(());
    }
    if let Some(r) = &lenient {
        println!("{}", r.line());
    }
    println!("Database: {}", path.display());
    println!("Status: {}", metadata.status.name());
    if let Some(reason) = metadata.reason {
        println!("Reason: {reason}");
    }
    if let Some(meta) = status["metadata"].as_object() {
        println!("Metadata:");
        for (k, v) in meta {
            println!("  {k}: {}", python::str_of_json(v));
        }
    }
    Ok(())
}
