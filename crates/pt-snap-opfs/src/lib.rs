//! The browser's store of SnapshotDBs in the Origin Private File System (OPFS).
//!
//! A dropped snapshot is imported once; its database then lives in OPFS under the SHA-256
//! of the source file, so dropping the same file again reopens it instead of importing, and
//! the tab's memory no longer grows with the database (SQLite reads pages from disk).
//!
//! ```text
//! /pt-snap-cache/<sha256>/pool/      that entry's own opfs-sahpool VFS directory
//!                                    (`.lock`, `.opaque/<slot files>`), holding /snapshot.db
//! /pt-snap-cache/<sha256>/meta.json  the `Entry`, written last by `Pool::commit`
//! ```
//!
//! An entry without a readable `meta.json` is incomplete (an import that was killed, or is
//! still running in some worker): [`list`] and [`find`] skip it and [`cleanup_incomplete`]
//! removes it. Each entry has its own pool, and so its own sync access handles, so a worker
//! that has one database open never contends with a worker that has another.
//!
//! [`Pool`] (the VFS; it needs `createSyncAccessHandle`) works in a dedicated worker only;
//! [`list`], [`find`], [`find_by_size`], [`remove`] and [`cleanup_incomplete`] use the async
//! OPFS API and work on the page too. Everything here is wasm32-only: natively the crate is
//! empty.
#![cfg(target_arch = "wasm32")]
#![forbid(unsafe_code)]

mod js;
mod pool;

pub use pool::{Access, Pool};

use serde::{Deserialize, Serialize};
use wasm_bindgen::JsCast;

/// The OPFS directory (under the origin's root) that holds every entry.
pub const CACHE_DIR: &str = "pt-snap-cache";
/// An entry's metadata file; its presence marks the entry complete.
pub const META_FILE: &str = "meta.json";
/// The pool's directory inside an entry's directory.
const POOL_DIR: &str = "pool";
/// The database's size once it grew after its commit (its deferred indexes built): a file
/// of its own, so `meta.json` is written once and a worker killed while recording the size
/// can never cut it short, which would make the committed entry look incomplete.
const SIZE_FILE: &str = "size.json";

/// What [`SIZE_FILE`] holds: JSON, so a file cut short does not parse and the size
/// `meta.json` recorded stands.
#[derive(Serialize, Deserialize)]
struct RecordedSize {
    db_bytes: u64,
}

/// One cached database, as `meta.json` records it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Entry {
    /// SHA-256 of the source file, lowercase hex: the entry's directory name.
    pub sha256: String,
    /// The source file's name when it was imported.
    pub source_name: String,
    pub source_size: u64,
    /// The source file's `lastModified` (ms since the epoch).
    pub source_last_modified: f64,
    /// Size of the database file; [`Pool::commit`] measures it.
    pub db_bytes: u64,
    /// When the import finished, as the caller spells it (ISO 8601 sorts right).
    pub imported_at: String,
}

/// Whether [`Pool`]s can be installed here: a dedicated worker in a secure context whose
/// browser has OPFS sync access handles. `false` on the page even where [`list`] works
/// there (see [`storage_available`]).
pub async fn available() -> bool {
    let global = js_sys::global();
    if global
        .dyn_ref::<web_sys::DedicatedWorkerGlobalScope>()
        .is_none()
    {
        return false;
    }
    let has =
        |name: &str| js_sys::Reflect::get(&global, &name.into()).is_ok_and(|v| !v.is_undefined());
    has("FileSystemSyncAccessHandle") && has("FileSystemFileHandle") && js::root().await.is_ok()
}

/// Whether the OPFS directory can be reached from here (page or worker): what [`list`],
/// [`remove`] and [`cleanup_incomplete`] need. Private windows of some browsers refuse it.
pub async fn storage_available() -> bool {
    js::root().await.is_ok()
}

/// Every complete entry, newest `imported_at` first.
pub async fn list() -> Result<Vec<Entry>, String> {
    let Some(cache) = cache_dir(false).await? else {
        return Ok(Vec::new());
    };
    let mut entries = Vec::new();
    for (name, kind) in js::children(&cache).await? {
        if let (true, js::Kind::Directory(dir)) = (is_sha256(&name), kind) {
            if let Some(entry) = read_meta(&dir, &name).await? {
                entries.push(entry);
            }
        }
    }
    entries.sort_by(|a, b| {
        b.imported_at
            .cmp(&a.imported_at)
            .then_with(|| a.sha256.cmp(&b.sha256))
    });
    Ok(entries)
}

/// The complete entry of the source file with this SHA-256 (lowercase hex), if any.
pub async fn find(sha256: &str) -> Result<Option<Entry>, String> {
    check_sha256(sha256)?;
    let Some(cache) = cache_dir(false).await? else {
        return Ok(None);
    };
    match js::dir(&cache, sha256, false).await? {
        Some(dir) => read_meta(&dir, sha256).await,
        None => Ok(None),
    }
}

/// The complete entries whose source had `size` bytes: what a dropped file may be a cache
/// hit on, known before it is hashed.
pub async fn find_by_size(size: u64) -> Result<Vec<Entry>, String> {
    let mut entries = list().await?;
    entries.retain(|e| e.source_size == size);
    Ok(entries)
}

/// Deletes the entry (its database and metadata). Not an error when it does not exist; an
/// error (`NoModificationAllowedError`) while some worker has its pool installed.
pub async fn remove(sha256: &str) -> Result<(), String> {
    check_sha256(sha256)?;
    if let Some(cache) = cache_dir(false).await? {
        js::remove(&cache, sha256).await?;
    }
    Ok(())
}

/// Deletes every incomplete entry that no worker holds, and returns how many. One that a
/// worker holds (an import in progress) is left alone: OPFS refuses to remove it.
pub async fn cleanup_incomplete() -> Result<usize, String> {
    let Some(cache) = cache_dir(false).await? else {
        return Ok(0);
    };
    let mut removed = 0;
    for (name, kind) in js::children(&cache).await? {
        let js::Kind::Directory(dir) = kind else {
            continue;
        };
        if !is_sha256(&name) || read_meta(&dir, &name).await?.is_some() {
            continue;
        }
        match js::remove(&cache, &name).await {
            Ok(true) => removed += 1,
            Ok(false) => {}
            // Held by a worker's sync access handles: in use, so not abandoned.
            Err(e) if e.contains("NoModificationAllowedError") => {}
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
}

async fn cache_dir(create: bool) -> Result<Option<web_sys::FileSystemDirectoryHandle>, String> {
    js::dir(&js::root().await?, CACHE_DIR, create).await
}

/// The entry `meta.json` in `dir` records, when it parses and belongs to `sha256`, with the
/// size [`SIZE_FILE`] records if it parses. A file cut short by a killed worker does not
/// parse, so a half-written `meta.json` counts as absent.
async fn read_meta(
    dir: &web_sys::FileSystemDirectoryHandle,
    sha256: &str,
) -> Result<Option<Entry>, String> {
    let Some(entry) = read_json::<Entry>(dir, META_FILE).await? else {
        return Ok(None);
    };
    if entry.sha256 != sha256 {
        return Ok(None);
    }
    // An optional file: one that cannot be read (another worker writing it) is absent.
    let recorded = read_json::<RecordedSize>(dir, SIZE_FILE)
        .await
        .ok()
        .flatten();
    Ok(Some(match recorded {
        Some(RecordedSize { db_bytes }) => Entry { db_bytes, ..entry },
        None => entry,
    }))
}

/// `name` in `dir`, when it exists and parses as a `T`.
async fn read_json<T: serde::de::DeserializeOwned>(
    dir: &web_sys::FileSystemDirectoryHandle,
    name: &str,
) -> Result<Option<T>, String> {
    let Some(handle) = js::file(dir, name, false).await? else {
        return Ok(None);
    };
    let file = js::get_file(&handle).await?;
    let text = js::text(&file).await?;
    Ok(serde_json::from_str(&text).ok())
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn check_sha256(s: &str) -> Result<(), String> {
    if is_sha256(s) {
        Ok(())
    } else {
        Err(format!("not a lowercase hex SHA-256: {s:?}"))
    }
}
