//! `pt-snap metadata`: the import metadata of a database or dataset, and whether it is usable.

use std::path::Path;

use pt_snap_contract::python;
use pt_snap_query::ImportMetadata;
use serde_json::{json, Value};

use crate::error::CliResult;
use crate::source;

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

pub fn run(db_path: Option<&Path>, json: bool) -> CliResult {
    let (source, path, _) = source::for_reading(db_path)?;
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
