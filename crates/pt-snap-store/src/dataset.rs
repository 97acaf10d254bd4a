//! A snapshot → a sharded dataset (`pt-snap-native-v2`, or msinsight's `compatibility-v1`),
//! spec §10.2–10.3.
//!
//! What a dataset is, its reuse rules and how it is written are `pt-snap-dataset`'s; here is
//! where it is staged and published. The dataset is built in a hidden staging directory
//! beside the target, its shards written in parallel (they are independent once the replay
//! has cut them), checked, and published by renames: nothing half-written is ever visible,
//! and a failed import leaves an existing dataset as it was. `force` replaces a recognised
//! native dataset (the old tree is moved to a recovery directory first and removed once the
//! new one is in place); an msinsight export is never replaced.

use std::fs::{self, File};
use std::io::{BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use pt_snap_contract::{publish, Failure};
use pt_snap_dataset::reuse::{self, DatasetReport, Decision, MsinsightSource};
use pt_snap_dataset::write::{self, DatasetPlan, Layout};
use pt_snap_dataset::DatasetKind;
use pt_snap_db::Metadata;
use pt_snap_import::{failure, IMPORTER_NAME, IMPORTER_VERSION};

use crate::{stale, Observer};

/// One dataset import.
pub struct Job<'a> {
    pub kind: DatasetKind,
    /// The snapshot, absolute, as [`crate::snapshot::check`] returns it.
    pub source: &'a Path,
    /// Where the dataset goes (`kind.target(dir, name)`).
    pub target: &'a Path,
    /// The snapshot's file name, recorded in the metadata.
    pub name: &'a str,
    pub device: Option<i64>,
    pub events_per_slice: i64,
    pub force: bool,
}

/// What an import did: the dataset, and why it was built (`None`: reused).
pub struct Imported {
    pub dataset: DatasetReport,
    pub miss: Option<&'static str>,
}

fn backend(message: impl std::fmt::Display) -> Failure {
    failure::import_failed(format!("Dataset import backend failed: {message}"))
}

/// The dataset at `job.target` reused, or built and published there.
pub fn import(job: &Job, observer: &mut dyn Observer) -> Result<Imported, Failure> {
    let target = job.target;
    reuse::check_target(target, job.kind).map_err(failure::import_failed)?;
    // First, so that a dataset an interrupted `--force` had moved away is back before the
    // target is looked at.
    for w in stale::clean(target, stale::Artifacts::Dataset) {
        observer.warn(&w);
    }
    let sha256 = hash_file(job.source)?;
    let request = reuse::ImportRequest {
        kind: job.kind,
        source: job.source,
        sha256: &sha256,
        device: job.device,
        events_per_slice: job.events_per_slice,
        force: job.force,
    };
    match reuse::decide(target, &request).map_err(failure::import_failed)? {
        Decision::Reuse(dataset) => {
            recheck_source(job.source, &sha256)?;
            Ok(Imported {
                dataset,
                miss: None,
            })
        }
        Decision::Build {
            miss,
            replace,
            msinsight,
        } => Ok(Imported {
            dataset: build(job, &sha256, replace, msinsight.as_ref(), observer)?,
            miss: Some(miss),
        }),
    }
}

/// SHA-256 of the file, as lowercase hex.
fn hash_file(path: &Path) -> Result<String, Failure> {
    pt_snap_dataset::sha256_file(path).map_err(backend)
}

/// The source must still be the bytes first hashed when the dataset is kept or published.
fn recheck_source(source: &Path, sha256: &str) -> Result<(), Failure> {
    if hash_file(source)? != sha256 {
        return Err(source_changed());
    }
    Ok(())
}

fn source_changed() -> Failure {
    failure::import_failed(
        "Snapshot source changed while import was running; existing artifact preserved.",
    )
}

/// Decodes, replays, writes the shards in parallel into a staging directory, writes the
/// manifest and publishes the dataset at the target (with `replace`, over the native
/// dataset there). An msinsight export records `msinsight`.
fn build(
    job: &Job,
    sha256: &str,
    replace: bool,
    msinsight: Option<&MsinsightSource>,
    observer: &mut dyn Observer,
) -> Result<DatasetReport, Failure> {
    let (kind, source, target) = (job.kind, job.source, job.target);
    let parent = target.parent().expect("target is in a directory");
    fs::create_dir_all(parent).map_err(backend)?;
    let target_name = target.file_name().unwrap_or_default().to_string_lossy();
    // Marks the staging and recovery directories as this live process's (see `stale`);
    // declared first, so dropped last: the lock is given up only once they are gone.
    let mut owner = stale::Owner::acquire(parent, &target_name).map_err(backend)?;
    let stage = tempfile::Builder::new()
        .prefix(&format!(".{target_name}.stage-{}", owner.token()))
        .rand_bytes(0)
        .tempdir_in(parent)
        .map_err(backend)?;
    let artifact = stage.path().join("artifact");

    let file = File::open(source).map_err(backend)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    observer.begin(size);
    let snapshot = pt_snap_model::decode(BufReader::with_capacity(1 << 20, file), &mut |p| {
        observer.decoding(p)
    })
    .map_err(failure::decode)?;
    observer.finish();
    // The source is hashed again while the shards are written: it must still be the bytes
    // that were decoded when the dataset is published.
    let rehash = {
        let source = source.to_path_buf();
        std::thread::spawn(move || hash_file(&source))
    };
    let plan = write::plan(
        &snapshot,
        job.device.map(|d| d as usize),
        job.events_per_slice as usize,
    )
    .map_err(backend)?;
    for w in plan.devices.iter().flat_map(|p| &p.warnings) {
        observer.warn(w);
    }
    let metadata = Metadata {
        metadata_schema_version: pt_snap_db::METADATA_SCHEMA_VERSION,
        import_format_version: kind.import_format_version(),
        source_sha256: sha256.to_owned(),
        source_size: size as i64,
        source_name: job.name.to_owned(),
        requested_device: job.device,
        importer_name: IMPORTER_NAME.to_owned(),
        importer_version: IMPORTER_VERSION.to_owned(),
        completed_at: crate::now_utc_iso(),
    };
    plan.check(kind.layout()).map_err(backend)?;
    let hashes = write_shards(&plan, &artifact, &metadata, kind.layout())?;
    let text = plan.manifest_text(&metadata, msinsight, &|file: &str| hashes[file].clone());
    File::create_new(artifact.join("manifest.json"))
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(backend)?;
    // What we publish must read back as the dataset we meant (the members were hashed as
    // they were written).
    reuse::inspect(&artifact, false).map_err(backend)?;

    if rehash
        .join()
        .map_err(|_| Failure::internal("the hashing thread panicked"))??
        != sha256
    {
        return Err(source_changed());
    }
    publish_dataset(&artifact, target, replace, &mut owner)?;
    Ok(plan.report(metadata))
}

/// Writes every shard of `plan` under `dir` (created), on as many threads as there are cores;
/// returns each member file's SHA-256.
fn write_shards(
    plan: &DatasetPlan<'_>,
    dir: &Path,
    metadata: &Metadata,
    layout: Layout,
) -> Result<std::collections::HashMap<String, String>, Failure> {
    fs::create_dir(dir).map_err(backend)?;
    plan.create_device_dirs(dir).map_err(backend)?;
    let shards: Vec<_> = plan.shards().collect();
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(shards.len()));
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(shards.len());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(device_plan, shard)) = shards.get(i) else {
                    break;
                };
                let written = plan
                    .write_shard_file(dir, device_plan, shard, metadata, layout)
                    .map_err(backend);
                let failed = written.is_err();
                results
                    .lock()
                    .expect("no panics while locked")
                    .push((shard.file(), written));
                if failed {
                    // The other threads finish their shard and stop.
                    next.store(shards.len(), Ordering::Relaxed);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("threads joined")
        .into_iter()
        .map(|(file, hash)| hash.map(|h| (file, h)))
        .collect()
}

/// Moves the staged `artifact` to `target`. With `replace`, the old tree first goes to the
/// recovery directory `.<target>.recovery-<T>/previous`; it comes back if the new one cannot be
/// put in place, and once it is, it is renamed `discard` (from then on a leftover of a killed
/// import is garbage, see `stale`) and removed.
fn publish_dataset(
    artifact: &Path,
    target: &Path,
    replace: bool,
    owner: &mut stale::Owner,
) -> Result<(), Failure> {
    let parent = target.parent().expect("target is in a directory");
    let failed = |e: std::io::Error| {
        failure::import_failed(format!(
            "Dataset import backend failed: cannot publish {}: {e}",
            target.display()
        ))
    };
    if !replace {
        return publish::rename(artifact, target, publish::Existing::Refuse).map_err(failed);
    }
    let target_name = target.file_name().unwrap_or_default().to_string_lossy();
    let recovery: PathBuf = parent.join(format!(".{target_name}.recovery-{}", owner.token()));
    fs::create_dir(&recovery).map_err(failed)?;
    let previous = recovery.join("previous");
    if let Err(e) = publish::replace_dir(artifact, target, &previous) {
        if let Some(back) = e.rollback {
            // Keep the evidence: the recovery directory is not removed, and its lock file is
            // left for the next import of the target, which restores it.
            owner.keep_lock_file();
            return Err(failure::import_failed(format!(
                "Dataset publication failed; directory rollback also failed: {back}. Recovery directory: {}.",
                recovery.display()
            )));
        }
        let _ = fs::remove_dir(&recovery);
        return Err(failed(e.error));
    }
    fs::rename(&previous, recovery.join("discard"))
        .and_then(|()| fs::remove_dir_all(&recovery))
        .map_err(|e| {
            failure::import_failed(format!(
                "Dataset publication committed but recovery cleanup failed: {e}"
            ))
        })
}
