//! `pt-snap import --events-per-slice K` (the `pt-snap-native-v2` dataset) and
//! `pt-snap import --format msinsight` (the `compatibility-v1` export), spec §10.2–10.3.
//!
//! The dataset is built in a hidden staging directory beside the target, its shards written
//! in parallel (they are independent once the replay has cut them), checked, and published by
//! renames: nothing half-written is ever visible, and a failed import leaves an existing
//! dataset as it was. `--force` replaces a recognised native dataset (the old tree is moved to
//! a recovery directory first and removed once the new one is in place); an msinsight export is
//! never replaced.

use std::fs::{self, File};
use std::io::{BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use pt_snap_contract::envelope;
use pt_snap_contract::publish;
use pt_snap_dataset::manifest::{
    self, CompatibilityIdentity, NativeIdentity, MSINSIGHT_CACHE_SALT,
    MSINSIGHT_DEFAULT_EVENTS_PER_SLICE,
};
use pt_snap_dataset::reuse::{self, Decision, Reused};
use pt_snap_dataset::write::{self, DatasetPlan, Layout};
use pt_snap_db::Metadata;
use pt_snap_import::{IMPORTER_NAME, IMPORTER_VERSION};
use serde_json::json;

use crate::cli::ImportArgs;
use crate::error::{CliError, CliResult};
use crate::focus;
use crate::output;
use crate::progress::{ImportObserver as _, ImportProgress};
use crate::stale;

/// Which dataset an import builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Native,
    Msinsight,
}

impl Kind {
    fn format(self) -> &'static str {
        match self {
            Kind::Native => manifest::NATIVE_FORMAT,
            Kind::Msinsight => manifest::COMPATIBILITY_FORMAT,
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            Kind::Native => "pt-snap-native-v2",
            Kind::Msinsight => "msinsight",
        }
    }

    fn layout(self) -> Layout {
        match self {
            Kind::Native => Layout::Native,
            Kind::Msinsight => Layout::Msinsight,
        }
    }

    fn import_format_version(self) -> i64 {
        match self {
            Kind::Native => 2,
            Kind::Msinsight => 1,
        }
    }
}

/// What the import command reports about a dataset.
struct Outcome {
    metadata: Metadata,
    reused: bool,
    miss: Option<&'static str>,
    devices: Vec<i64>,
    slice_count: usize,
    omitted: Vec<i64>,
}

impl Outcome {
    fn reused(r: Reused) -> Self {
        Outcome {
            metadata: r.metadata,
            reused: true,
            miss: None,
            devices: r.devices,
            slice_count: r.slice_count,
            omitted: r.omitted_devices,
        }
    }
}

fn backend(message: impl std::fmt::Display) -> CliError {
    CliError::import_failed(format!("Dataset import backend failed: {message}"))
}

pub fn run(args: &ImportArgs, kind: Kind, source: &Path, device: Option<i64>) -> CliResult {
    let events_per_slice = match kind {
        Kind::Native => args.events_per_slice.expect("validated: native needs K"),
        Kind::Msinsight => args
            .events_per_slice
            .unwrap_or(MSINSIGHT_DEFAULT_EVENTS_PER_SLICE),
    };
    let out_dir = match &args.output_dir {
        Some(dir) => focus::absolute(dir)?,
        None => source.parent().expect("a file has a parent").to_path_buf(),
    };
    let name = super::import::source_name(source)?;
    let target = out_dir.join(format!("{name}.{}", kind.suffix()));
    if resolved(&target) != target || target.is_symlink() {
        return Err(CliError::import_failed(match kind {
            Kind::Native => "Dataset output must be canonical and non-symlink.",
            Kind::Msinsight => "Compatible output must be canonical and non-symlink.",
        }));
    }
    // First, so that a dataset an interrupted `--force` had moved away is back before the
    // target is looked at.
    for w in stale::clean(&target, stale::Artifacts::Dataset) {
        if !args.json {
            eprintln!("warning: {w}");
        }
    }
    let sha256 = hash_file(source, b"")?;
    let outcome = reuse_or_build(&Job {
        args,
        kind,
        source,
        target: &target,
        name: &name,
        sha256: &sha256,
        events_per_slice,
        device,
    })?;

    let focus_state = super::import::focus_on(&target, device, args.no_focus)?;
    let path = target.display().to_string();
    if args.json {
        let mut fields = super::import::import_fields(
            &target,
            device,
            outcome.miss,
            &outcome.metadata,
            focus_state.as_ref(),
        );
        fields.extend([
            ("dataset_path", json!(path)),
            ("devices", json!(outcome.devices)),
            ("slice_count", json!(outcome.slice_count)),
            ("format", json!(kind.format())),
            ("omitted_devices", json!(outcome.omitted)),
            ("rebuilt", json!(!outcome.reused)),
        ]);
        output::print_json(&envelope::success(fields));
    } else {
        let action = if outcome.reused { "Reused" } else { "Imported" };
        println!("{action}: {path}");
        println!(
            "Format: {}; devices: [{}]; slices: {}",
            kind.format(),
            outcome
                .devices
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            outcome.slice_count
        );
        if let Some(reason) = outcome.miss {
            println!("Cache miss: {reason}");
        }
        if let Some(f) = focus_state.as_ref().and_then(|s| s.focus_file.as_ref()) {
            println!("Focus: {}", f.display());
        }
    }
    Ok(())
}

/// `path` with symlinks resolved as far as it exists (Python's `Path.resolve()`).
fn resolved(path: &Path) -> PathBuf {
    if let Ok(p) = fs::canonicalize(path) {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => resolved(parent).join(name),
        _ => path.to_path_buf(),
    }
}

/// SHA-256 of `salt` followed by the file's bytes, as lowercase hex.
fn hash_file(path: &Path, salt: &[u8]) -> CliResult<String> {
    let file = File::open(path).map_err(backend)?;
    pt_snap_import::sha256_hex(salt.chain(file)).map_err(backend)
}

fn decode_error(e: pt_snap_model::DecodeError) -> CliError {
    pt_snap_import::ImportFailure::from(e).into()
}

fn recheck_source(source: &Path, sha256: &str) -> CliResult<()> {
    if hash_file(source, b"")? != sha256 {
        return Err(CliError::import_failed(
            "Snapshot source changed while import was running; existing artifact preserved.",
        ));
    }
    Ok(())
}

/// One dataset import, as `run` resolved it from the command line.
#[derive(Clone, Copy)]
struct Job<'a> {
    args: &'a ImportArgs,
    kind: Kind,
    source: &'a Path,
    target: &'a Path,
    name: &'a str,
    sha256: &'a str,
    events_per_slice: i64,
    device: Option<i64>,
}

/// The reference's reuse rule for `kind` at `target` (`pt_snap_dataset::reuse`), then the
/// reused dataset, or a new one built and published.
fn reuse_or_build(job: &Job) -> CliResult<Outcome> {
    let Job {
        source,
        target,
        sha256,
        events_per_slice,
        device,
        ..
    } = *job;
    // An msinsight export records a salted hash of its source (`cacheHash`).
    let cache_hash = match job.kind {
        Kind::Native => None,
        Kind::Msinsight => Some(hash_file(source, MSINSIGHT_CACHE_SALT).map_err(|e| {
            CliError::import_failed(format!(
                "Cannot calculate msinsight cacheHash: {}",
                e.message
            ))
        })?),
    };
    let decision = match &cache_hash {
        None => reuse::native(
            target,
            &NativeIdentity::new(sha256, device, events_per_slice),
            job.args.force,
        ),
        Some(cache_hash) => reuse::msinsight(
            target,
            &CompatibilityIdentity::new(sha256, device, events_per_slice),
            &reuse::MsinsightSource {
                cache_hash,
                file: &resolved(source).display().to_string(),
                size: fs::metadata(source).map(|m| m.len() as i64).unwrap_or(-1),
            },
        ),
    }
    .map_err(CliError::import_failed)?;
    let (miss, replace) = match decision {
        Decision::Reuse(reused) => {
            recheck_source(source, sha256)?;
            return Ok(Outcome::reused(reused));
        }
        Decision::Build { miss, replace } => (miss, replace),
    };
    let publish_as = if replace {
        Publish::Replace
    } else {
        Publish::New {
            cache_hash: cache_hash.as_deref(),
        }
    };
    let mut outcome = build(job, publish_as)?;
    outcome.miss = Some(miss);
    Ok(outcome)
}

/// How [`build`] puts the dataset in place.
enum Publish<'a> {
    /// The target does not exist; an msinsight export carries its `cacheHash`.
    New { cache_hash: Option<&'a str> },
    /// `--force` over a recognised native dataset.
    Replace,
}

/// Decodes, replays, writes the shards in parallel into a staging directory, writes the
/// manifest and publishes the dataset at `target`.
fn build(job: &Job, publish_as: Publish<'_>) -> CliResult<Outcome> {
    let Job {
        args,
        kind,
        source,
        target,
        name,
        sha256,
        events_per_slice,
        device,
    } = *job;
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
    let mut progress = ImportProgress::new(size, !args.json);
    let snapshot = pt_snap_model::decode(BufReader::with_capacity(1 << 20, file), &mut |p| {
        progress.decoding(p)
    })
    .map_err(decode_error)?;
    progress.finish();
    // The source is hashed again while the shards are written: it must still be the bytes
    // that were decoded when the dataset is published.
    let rehash = {
        let source = source.to_path_buf();
        std::thread::spawn(move || hash_file(&source, b""))
    };
    let plan = write::plan(
        &snapshot,
        device.map(|d| d as usize),
        events_per_slice as usize,
    )
    .map_err(backend)?;
    if !args.json {
        for w in plan.devices.iter().flat_map(|p| &p.warnings) {
            eprintln!("warning: {w}");
        }
    }
    let metadata = Metadata {
        metadata_schema_version: pt_snap_db::METADATA_SCHEMA_VERSION,
        import_format_version: kind.import_format_version(),
        source_sha256: sha256.to_owned(),
        source_size: size as i64,
        source_name: name.to_owned(),
        requested_device: device,
        importer_name: IMPORTER_NAME.to_owned(),
        importer_version: IMPORTER_VERSION.to_owned(),
        completed_at: crate::clock::now_utc_iso(),
    };
    plan.check(kind.layout()).map_err(backend)?;
    let hashes = write_shards(&plan, &artifact, &metadata, kind.layout())?;
    let member_hash = |file: &str| hashes[file].clone();
    let text = match kind {
        Kind::Native => write::manifest_json(&plan.native_manifest(&metadata, &member_hash)),
        Kind::Msinsight => write::manifest_json(&plan.msinsight_manifest(
            &metadata,
            &resolved(source).display().to_string(),
            match publish_as {
                Publish::New {
                    cache_hash: Some(h),
                } => h,
                _ => unreachable!("an msinsight export is always new and has its cacheHash"),
            },
            &member_hash,
        )),
    };
    File::create_new(artifact.join("manifest.json"))
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(backend)?;
    // What we publish must read back as the dataset we meant (the members were hashed as
    // they were written).
    reuse::inspect(&artifact, false).map_err(backend)?;

    if rehash
        .join()
        .map_err(|_| CliError::internal("the hashing thread panicked"))??
        != sha256
    {
        return Err(CliError::import_failed(
            "Snapshot source changed while import was running; existing artifact preserved.",
        ));
    }
    publish(
        &artifact,
        target,
        matches!(publish_as, Publish::Replace),
        &mut owner,
    )?;
    Ok(Outcome {
        metadata,
        reused: false,
        miss: None,
        devices: plan.devices.iter().map(|p| p.device as i64).collect(),
        slice_count: plan.shard_count(),
        omitted: plan.omitted_devices.clone(),
    })
}

/// Writes every shard of `plan` under `dir` (created), on as many threads as there are cores;
/// returns each member file's SHA-256.
fn write_shards(
    plan: &DatasetPlan<'_>,
    dir: &Path,
    metadata: &Metadata,
    layout: Layout,
) -> CliResult<std::collections::HashMap<String, String>> {
    fs::create_dir(dir).map_err(backend)?;
    for p in &plan.devices {
        fs::create_dir(dir.join(format!("device_{}", p.device))).map_err(backend)?;
    }
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
                let file = shard.file();
                let path = dir.join(&file);
                let written = rusqlite::Connection::open(&path)
                    .and_then(|conn| {
                        let source = plan.source(device_plan, metadata);
                        write::write_shard(&conn, &source, shard, layout)?;
                        conn.close().map_err(|(_, e)| e)
                    })
                    .map_err(backend)
                    .and_then(|()| hash_file(&path, b""));
                let failed = written.is_err();
                results
                    .lock()
                    .expect("no panics while locked")
                    .push((file, written));
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
fn publish(
    artifact: &Path,
    target: &Path,
    replace: bool,
    owner: &mut stale::Owner,
) -> CliResult<()> {
    let parent = target.parent().expect("target is in a directory");
    let failed = |e: std::io::Error| {
        CliError::import_failed(format!(
            "Dataset import backend failed: cannot publish {}: {e}",
            target.display()
        ))
    };
    if !replace {
        return publish::rename(artifact, target, publish::Existing::Refuse).map_err(failed);
    }
    let target_name = target.file_name().unwrap_or_default().to_string_lossy();
    let recovery = parent.join(format!(".{target_name}.recovery-{}", owner.token()));
    fs::create_dir(&recovery).map_err(failed)?;
    let previous = recovery.join("previous");
    if let Err(e) = publish::replace_dir(artifact, target, &previous) {
        if let Some(back) = e.rollback {
            // Keep the evidence: the recovery directory is not removed, and its lock file is
            // left for the next import of the target, which restores it.
            owner.keep_lock_file();
            return Err(CliError::import_failed(format!(
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
            CliError::import_failed(format!(
                "Dataset publication committed but recovery cleanup failed: {e}"
            ))
        })
}
