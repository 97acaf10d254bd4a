//! Dataset paths (a directory or its `manifest.json`) for the read commands: validation with
//! the persistent fingerprint cache, and the reference's error codes for dataset failures.
//!
//! The cache lives beside the user config (`~/.config/pt-snap-cli/dataset-cache.json`), not
//! in the dataset: a native dataset's directory must hold exactly its manifest and device
//! directories (the reference refuses any other file there), and datasets may sit on
//! read-only media. Derived data — the indexed lifecycle databases of the `block`/
//! `leak_detection`/`freed_block_lifetime` merges of large datasets and the per-shard
//! callstack groups of `callstack_analysis` — is kept under the user cache directory, named
//! after the dataset's fingerprint. `PT_SNAP_DATASET_CACHE=off` disables all of it.

use std::path::Path;

use pt_snap_dataset::read::{Dataset, ValidationCache};

use crate::error::CliError;

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
pub fn open(path: &Path) -> Result<Option<Dataset>, CliError> {
    Dataset::open(path, &mut cache()).map_err(|e| CliError::query(e, None, "Error: "))
}
