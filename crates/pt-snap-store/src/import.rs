//! One snapshot → its SnapshotDB, through the reuse cache of `import` (spec §5.2): the
//! target's metadata when it was made from the same bytes (SHA-256), device, replay mode and
//! import format, else the database decoded, replayed and written into a temporary file
//! beside the target, the source hashed again (it must still be the bytes decoded), its
//! metadata read back, and the file renamed over the target. A failed import leaves no file
//! behind and an existing database untouched; what a killed one left is removed by the next
//! import of the same target ([`crate::stale`]).

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use pt_snap_contract::publish::{self, Existing};
use pt_snap_contract::Failure;
use pt_snap_db::{Metadata, SnapshotDb, IMPORT_FORMAT_VERSION};
use pt_snap_import::{failure, ImportRequest, ImportSummary, ReplayMode};

use crate::{stale, Observer};

/// A single-DB import of one snapshot: what [`import`] reads and writes.
pub struct Job<'a> {
    /// The snapshot, absolute, as [`crate::snapshot::check`] returns it.
    pub source: &'a Path,
    /// The database to reuse or (re)build.
    pub target: &'a Path,
    /// The snapshot's file name, recorded in the metadata.
    pub name: &'a str,
    pub device: Option<i64>,
    pub replay: ReplayMode,
    /// Rebuild even when the target could be reused.
    pub force: bool,
}

/// What [`import`] did: the target's metadata, and why it was rebuilt (`None`: reused).
#[derive(Debug, Clone)]
pub struct Imported {
    pub metadata: Metadata,
    pub miss: Option<&'static str>,
}

impl Imported {
    pub fn reused(&self) -> bool {
        self.miss.is_none()
    }
}

/// The reuse cache of `import`: the target reused, or built and published in its place.
/// Files a killed import of the same target left are removed first. Every warning and the
/// import's progress go to `observer`, as they arise.
pub fn import(job: &Job, observer: &mut dyn Observer) -> Result<Imported, Failure> {
    let target = job.target;
    // Before anything else, so that a reused target also loses them.
    for w in stale::clean(target, stale::Artifacts::Db) {
        observer.warn(&w);
    }

    // Hashing and decoding are both one pass over the file: when the target cannot be
    // reused anyway, run them side by side on two cores.
    let hashed = hash_in_background(job.source);
    let mut build = |miss: &'static str, sha256: Box<dyn FnOnce() -> Result<String, Failure>>| {
        let summary = build_and_publish(job, sha256, observer)?;
        for w in &summary.warnings {
            observer.warn(w);
        }
        Ok(Imported {
            metadata: summary.metadata,
            miss: Some(miss),
        })
    };
    if !target.exists() {
        build("database_missing", Box::new(hashed))
    } else if job.force {
        build("forced", Box::new(hashed))
    } else {
        let sha = hashed()?;
        match reusable(target, &sha, job.device, job.replay) {
            Ok(metadata) => Ok(Imported {
                metadata,
                miss: None,
            }),
            Err(miss) => build(miss, Box::new(move || Ok(sha))),
        }
    }
}

/// The database beside the snapshot at `path` when [`import`] of all its devices with
/// `replay` would reuse it as it is; `None` when it is missing or would be rebuilt; the
/// snapshot refused as `import` refuses it. Only reads: a command that can answer without a
/// database (`ranks`) takes one that exists, and writes none.
pub fn reusable_beside(
    path: &Path,
    replay: ReplayMode,
) -> Result<Option<(std::path::PathBuf, Imported)>, Failure> {
    let source = crate::snapshot::check(path)?;
    let target = crate::snapshot::database_beside(&source)?;
    if !target.is_file() {
        return Ok(None);
    }
    let sha = hash_file(&source)?;
    Ok(reusable(&target, &sha, None, replay).ok().map(|metadata| {
        let imported = Imported {
            metadata,
            miss: None,
        };
        (target, imported)
    }))
}

/// Starts hashing `path` on another thread; the returned closure waits for the digest.
pub(crate) fn hash_in_background(
    path: &Path,
) -> impl FnOnce() -> Result<String, Failure> + 'static {
    let path = path.to_path_buf();
    let hashing = std::thread::spawn(move || hash_file(&path));
    move || {
        hashing
            .join()
            .map_err(|_| Failure::internal("the hashing thread panicked"))?
    }
}

fn hash_file(path: &Path) -> Result<String, Failure> {
    File::open(path)
        .and_then(pt_snap_import::sha256_hex)
        .map_err(failure::backend)
}

/// The reference's reuse rule (§5.2) for an existing target without `--force`: the
/// existing metadata when the DB can be reused as is, else the cache-miss reason.
fn reusable(
    target: &Path,
    sha256: &str,
    device: Option<i64>,
    replay: ReplayMode,
) -> Result<Metadata, &'static str> {
    let db = SnapshotDb::open_readonly(target).map_err(|_| "database_invalid")?;
    // A lenient DB answers a lenient import only, and a strict one a strict import: the
    // same bytes give different numbers.
    let lenient = db
        .lenient_replay_issues()
        .map_err(|_| "database_invalid")?
        .is_some();
    if lenient != (replay == ReplayMode::Lenient) {
        return Err("replay_mode_changed");
    }
    let metadata = db
        .metadata()
        .map_err(|_| "database_invalid")?
        .map_err(|problem| problem.reason())?;
    if metadata.source_sha256 != sha256 {
        Err("source_changed")
    } else if metadata.import_format_version != IMPORT_FORMAT_VERSION {
        Err("import_format_changed")
    } else if metadata.requested_device != device {
        Err("device_changed")
    } else {
        Ok(metadata)
    }
}

/// Imports into a temp file beside the target, checks it, then renames it over the target.
fn build_and_publish(
    job: &Job,
    sha256: Box<dyn FnOnce() -> Result<String, Failure>>,
    observer: &mut dyn Observer,
) -> Result<ImportSummary, Failure> {
    let Job {
        source,
        target,
        name,
        device,
        replay,
        ..
    } = *job;
    let dir = target.parent().expect("target is in a directory");
    let cannot_create = |e: std::io::Error| {
        failure::import_failed(format!(
            "Snapshot import backend failed: cannot create a file in {}: {e}",
            dir.display()
        ))
    };
    let target_name = target.file_name().unwrap_or_default().to_string_lossy();
    // Marks the temp file as this live process's (see `stale`); declared first, so dropped
    // last: the lock is given up only once the temp file is gone.
    let owner = stale::Owner::acquire(dir, &target_name).map_err(cannot_create)?;
    let mut builder = tempfile::Builder::new();
    // A temp file is private (0600) by default, and the rename would publish the DB so;
    // a DB is created like any file (0666 less the umask), as SQLite and the reference do.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let tmp = builder
        .prefix(&format!(".{target_name}.{}", owner.token()))
        .rand_bytes(0)
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(cannot_create)?;
    // The file is removed on any early return: `tmp` deletes it when dropped.
    let file = File::open(source).map_err(failure::backend)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    observer.begin(size);
    let snapshot = pt_snap_model::decode(BufReader::with_capacity(1 << 20, file), &mut |p| {
        observer.decoding(p)
    })
    .map_err(failure::decode)?;
    // Hashing the source again now proves that the bytes decoded are the bytes first hashed;
    // it runs on the second core while SQLite works.
    let rehashed = hash_in_background(source);
    let request = ImportRequest {
        device: device.map(|d| d as usize),
        replay,
        ..ImportRequest::new(name, sha256()?, size, crate::now_utc_iso())
    };
    let summary = {
        let conn = rusqlite::Connection::open(tmp.path()).map_err(failure::backend)?;
        let summary = pt_snap_import::import_snapshot(&snapshot, &conn, &request, &mut |s| {
            observer.update(s)
        })
        .map_err(Failure::from)?;
        conn.close().map_err(|(_, e)| failure::backend(e))?;
        summary
    };
    observer.finish();
    drop(snapshot);
    if rehashed()? != request.source_sha256 {
        return Err(failure::import_failed(
            "Snapshot source changed while import was running; existing database preserved.",
        ));
    }
    let written = SnapshotDb::open_readonly(tmp.path())
        .map_err(failure::backend)?
        .metadata()
        .map_err(failure::backend)?;
    if written.as_ref() != Ok(&summary.metadata) {
        return Err(failure::import_failed(format!(
            "Snapshot import backend failed: metadata read back differs: {written:?}"
        )));
    }
    let tmp = tmp.into_temp_path();
    publish::rename(&tmp, target, Existing::Replace).map_err(|e| {
        failure::import_failed(format!(
            "Snapshot import backend failed: cannot publish {}: {e}",
            target.display(),
        ))
    })?;
    // Published: the temporary name no longer exists, so there is nothing to delete.
    let _ = tmp.keep();
    Ok(summary)
}
