//! `pt-snap metadata`: the import metadata of a database, and whether it is usable.

use std::path::Path;

use pt_snap_contract::python;
use pt_snap_dataset::read::Dataset;
use pt_snap_db::{Metadata, SnapshotDb};
use serde_json::{json, Value};

use crate::error::CliResult;
use crate::focus;

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

/// The mark of a DB made by a lenient replay (`import --lenient`): its numbers are
/// approximate where the trace contradicted the allocator state. Every command that shows
/// a DB's numbers says so, under `replay` in JSON and on a line of its own in text.
pub struct LenientReplay {
    pub issues: i64,
}

impl LenientReplay {
    /// `None` for a DB of the strict replay (the reference's, and ours by default).
    pub fn of(db: &SnapshotDb) -> CliResult<Option<LenientReplay>> {
        Ok(db
            .lenient_replay_issues()?
            .map(|issues| LenientReplay { issues }))
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

/// `{status, reason, metadata}` of a dataset: from its manifest (native) or its `ptSnap`
/// attestation (msinsight).
pub fn dataset_status(ds: &Dataset) -> Value {
    let (status, reason, meta) = ds.metadata_status();
    json!({"status": status, "reason": reason, "metadata": meta.as_ref().map(to_json)})
}

pub fn run(db_path: Option<&Path>, json: bool) -> CliResult {
    let resolved = focus::resolve_required(db_path)?;
    let absolute = focus::absolute(&resolved.db_path)?;
    let (path, status, lenient) = match crate::dataset::open(&absolute)? {
        Some(ds) => (absolute, dataset_status(&ds), None),
        None => {
            let (db, path, _) = focus::open_db(db_path)?;
            let lenient = LenientReplay::of(&db)?;
            (path, status(&db)?, lenient)
        }
    };
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
    println!("Status: {}", status["status"].as_str().unwrap_or(""));
    if let Some(reason) = status["reason"].as_str() {
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
