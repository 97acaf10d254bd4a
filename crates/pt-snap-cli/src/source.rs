//! What the read commands (`query`, `report`, `overview`, `metadata`, `diff`) open: a dataset
//! path (a directory or its `manifest.json`), validated with the persistent fingerprint
//! cache, or a database file — either one a [`Source`] that every command then asks the same
//! way — or a snapshot, whose database is imported or reused beside it first ([`readable`],
//! [`Opened`]).
//!
//! The cache lives beside the user config (`~/.config/pt-snap-cli/dataset-cache.json`), not
//! in the dataset: a native dataset's directory must hold exactly its manifest and device
//! directories (the reference refuses any other file there), and datasets may sit on
//! read-only media. Derived data — the indexed lifecycle databases of the `block`/
//! `leak_detection`/`freed_block_lifetime` merges of large datasets and the per-shard
//! callstack groups of `callstack_analysis` — is kept under the user cache directory, named
//! after the dataset's fingerprint. `PT_SNAP_DATASET_CACHE=off` disables all of it.

use std::path::{Path, PathBuf};

use pt_snap_contract::{hint, ErrorCode};
use pt_snap_dataset::read::{is_dataset_path, Dataset, ValidationCache};
use pt_snap_dataset_query::{DatasetOptions, DatasetSource};
use pt_snap_query::{Analyzer, Source, WorkLimits};
use pt_snap_store::inputs::{self, InputKind};
use pt_snap_store::{open, ReplayMode};
use serde_json::{json, Map, Value};

use crate::budget::Deadline;
use crate::error::{CliError, CliResult};
use crate::focus::{self, Resolved};
use crate::output::LenientReplay;
use crate::progress::ImportProgress;

/// Text-mode prefix of `query`'s failures.
pub const QUERY_PREFIX: &str = "Error executing query: ";

fn disabled() -> bool {
    std::env::var("PT_SNAP_DATASET_CACHE").is_ok_and(|v| v == "off")
}

/// Derived lifecycle databases (~55 MB for a 1M-event dataset) and callstack groups (tens
/// of KB) are a cache proper: `$XDG_CACHE_HOME/pt-snap/lifecycles` (default
/// `~/.cache/pt-snap/lifecycles`), the eight most recent of each kind kept.
pub fn lifecycle_cache() -> Option<std::path::PathBuf> {
    if disabled() {
        return None;
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))?;
    Some(base.join("pt-snap").join("lifecycles"))
}

pub fn cache() -> ValidationCache {
    if disabled() {
        return ValidationCache::disabled();
    }
    match crate::focus::global_file() {
        Ok(config) => ValidationCache::at(config.with_file_name("dataset-cache.json")),
        Err(_) => ValidationCache::disabled(),
    }
}

/// Validates the dataset at absolute `path`; `None` when it is not a dataset path.
pub fn open_dataset(path: &Path) -> Result<Option<Dataset>, CliError> {
    Dataset::open(path, &mut cache()).map_err(|e| CliError::query(e, None, "Error: "))
}

/// The dataset at absolute `path` as a source answering under the command's limits and
/// deadline; `None` when `path` is not a dataset path.
pub fn dataset(
    path: &Path,
    limits: WorkLimits,
    deadline: &Deadline,
    slice: Option<i64>,
) -> CliResult<Option<Box<dyn Source>>> {
    let options = DatasetOptions {
        slice,
        limits,
        interrupt: deadline.interrupt(),
        lifecycle_cache: lifecycle_cache(),
    };
    Ok(open_dataset(path)?.map(|ds| Box::new(DatasetSource::new(ds, options)) as Box<dyn Source>))
}

/// Opens the resolved standalone database read-only for `query` and the reports, with
/// `query`'s error wording, its statements stopped at the deadline. Callers try
/// [`dataset`] first.
pub fn database(resolved: &Resolved, deadline: &Deadline) -> CliResult<(Analyzer, PathBuf)> {
    let path = focus::absolute(&resolved.db_path)?;
    if !path.is_file() {
        return Err(CliError::database_not_found(format!(
            "Database from {} focus not found: {}",
            resolved.source.name(),
            resolved.db_path.display()
        ))
        .with_hint(Some(hint::DATABASE_MOVED)));
    }
    let analyzer = Analyzer::open(&path).map_err(|e| {
        CliError::new(ErrorCode::DatabaseSchemaInvalid, e.to_string())
            .with_text_prefix(QUERY_PREFIX)
    })?;
    analyzer.set_interrupt(deadline.interrupt());
    Ok((analyzer, path))
}

/// The source `overview` and `metadata` read: a dataset, or a database opened with their
/// wording (`Database not found: …`); with its absolute path and where the path came from.
pub fn for_reading(
    explicit: Option<&Path>,
    json: bool,
    command: &str,
) -> CliResult<(Box<dyn Source>, PathBuf, focus::FocusSource)> {
    let resolved = readable(focus::resolve_required(explicit)?, json, command)?;
    let absolute = focus::absolute(&resolved.db_path)?;
    if let Some(ds) = open_dataset(&absolute)? {
        let source = DatasetSource::new(ds, DatasetOptions::default());
        return Ok((Box::new(source), absolute, resolved.source));
    }
    let (db, path) = focus::open_db(&resolved)?;
    Ok((Box::new(Analyzer::new(db)?), path, resolved.source))
}

/// The resolved path, ready to be read as a database or a dataset: a snapshot there is
/// imported (or its database reused) beside it first, as `pt-snap import PATH --no-focus`
/// would, and the path becomes its database's. Progress and warnings unless `json`.
pub fn readable(mut resolved: Resolved, json: bool, command: &str) -> CliResult<Resolved> {
    let path = &resolved.db_path;
    if is_dataset_path(path) || inputs::kind_of(path, InputKind::Database) != InputKind::Snapshot {
        return Ok(resolved);
    }
    let db = open::database(
        path,
        InputKind::Database,
        ReplayMode::Strict,
        &mut ImportProgress::pending(!json),
    )
    .map_err(|e| crate::job::for_reading(e.into(), command))?;
    resolved.db_path = db.path;
    Ok(resolved)
}

/// One input opened read-only for `diff` and `report oom`: a SnapshotDB (told by SQLite's
/// header, whatever its name) as it is, any other path a snapshot, checked, imported or
/// reused beside it exactly as `import PATH --no-focus` would (the focus is left alone:
/// these commands only read).
pub struct Opened {
    pub analyzer: Analyzer,
    /// The path as given, for text and the page.
    pub label: String,
    /// What `--json` says about the input before its numbers: `path`, `db_path`, `import`
    /// (`null` for a database argument), and `replay` for a lenient database.
    pub fields: Map<String, Value>,
    pub lenient: Option<LenientReplay>,
}

impl Opened {
    pub fn open(path: &Path, replay: ReplayMode, json: bool) -> CliResult<Opened> {
        let db = open::database(
            path,
            InputKind::Snapshot,
            replay,
            &mut ImportProgress::pending(!json),
        )?;
        let import = db.import.as_ref().map_or(
            Value::Null,
            |i| json!({"reused": i.reused(), "cache_miss_reason": i.miss}),
        );
        let analyzer = Analyzer::open(&db.path)
            .map_err(|e| CliError::schema_invalid(format!("{}: {e}", db.path.display())))?;
        let lenient = analyzer
            .db()
            .lenient_replay_issues()?
            .map(|issues| LenientReplay { issues });
        let mut fields = Map::new();
        fields.insert("path".into(), json!(db.input.display().to_string()));
        fields.insert("db_path".into(), json!(db.path.display().to_string()));
        fields.insert("import".into(), import);
        if let Some(r) = &lenient {
            fields.insert("replay".into(), r.to_json());
        }
        Ok(Opened {
            analyzer,
            label: path.display().to_string(),
            fields,
            lenient,
        })
    }
}
