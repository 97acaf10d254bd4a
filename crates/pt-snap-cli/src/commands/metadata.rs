//! `pt-snap metadata`: the import metadata of a database, and whether it is usable.

use std::path::Path;

use pt_snap_dataset::read::Dataset;
use pt_snap_db::{Metadata, SnapshotDb};
use serde_json::{json, Value};

use crate::error::CliResult;
use crate::{focus, output};

pub fn to_json(m: &Metadata) -> Value {
    json!({
        "metadata_schema_version": m.metadata_schema_version,
        "import_format_version": m.import_format_version,
        "source_sha256": m.source_sha256,
        "source_size": m.source_size,
        "source_name": m.source_name,
        "requested_device": m.requested_device,
        "importer_name": m.importer_name,
        "importer_version": m.importer_version,
        "completed_at": m.completed_at,
    })
}

/// `{status, reason, metadata}` as `metadata` and `overview` report it.
pub fn status(db: &SnapshotDb) -> CliResult<Value> {
    Ok(match db.metadata()? {
        Ok(m) => json!({"status": "available", "reason": null, "metadata": to_json(&m)}),
        Err(p @ pt_snap_db::MetadataProblem::Missing) => {
            json!({"status": "unavailable", "reason": p.reason(), "metadata": null})
        }
        Err(p) => json!({"status": "invalid", "reason": p.reason(), "metadata": null}),
    })
}

/// `{status, reason, metadata}` of a dataset: from its manifest (native) or its `ptSnap`
/// attestation (msinsight).
pub fn dataset_status(ds: &Dataset) -> Value {
    let (status, reason, meta) = ds.metadata_status();
    json!({"status": status, "reason": reason, "metadata": meta.as_ref().map(to_json)})
}

pub fn run(db_path: Option<&Path>, json: bool) -> CliResult {
    let resolved = focus::resolve_required(db_path)?;
    let absolute = focus::absolute(&resolved.db_path)?;
    let (path, status) = match crate::dataset::open(&absolute)? {
        Some(ds) => (absolute, dataset_status(&ds)),
        None => {
            let (db, path, _) = focus::open_db(db_path)?;
            (path, status(&db)?)
        }
    };
    if json {
        let mut out = serde_json::Map::new();
        out.insert("db_path".into(), json!(path.display().to_string()));
        for (k, v) in status.as_object().expect("status is an object") {
            out.insert(k.clone(), v.clone());
        }
        crate::output::print_json(&Value::Object(out));
        return Ok(());
    }
    println!("Database: {}", path.display());
    println!("Status: {}", status["status"].as_str().unwrap_or(""));
    if let Some(reason) = status["reason"].as_str() {
        println!("Reason: {reason}");
    }
    if let Some(meta) = status["metadata"].as_object() {
        println!("Metadata:");
        for (k, v) in meta {
            println!("  {k}: {}", output::python_str(v));
        }
    }
    Ok(())
}
