//! `pt-snap import --events-per-slice K` (the `pt-snap-native-v2` dataset) and
//! `pt-snap import --format msinsight` (the `compatibility-v1` export), spec §10.2–10.3.
//!
//! What a dataset is, its reuse rules and how it is written are `pt-snap-dataset`'s; here is
//! where it is staged and published. The dataset is built in a hidden staging directory
//! beside the target, its shards written in parallel (they are independent once the replay
//! has cut them), checked, and published by renames: nothing half-written is ever visible,
//! and a failed import leaves an existing dataset as it was. `--force` replaces a recognised
//! native dataset (the old tree is moved to a recovery directory first and removed once the
//! new one is in place); an msinsight export is never replaced.

use std::fs::{self, File};
use std::io::{BufReader, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use pt_snap_contract::envelope;
use pt_snap_contract::publish;
use pt_snap_dataset::reuse::{self, DatasetReport, Decision, ImportRequest, MsinsightSource};
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

/// Which dataset an import builds (the name `import` chooses it by).
pub use pt_snap_dataset::DatasetKind as Kind;

/// What the import command reports about a dataset.
struct Outcome {
    dataset: DatasetReport,
    reused: bool,
    miss: Option<&'static str>,
}

fn backend(message: impl std::fmt::Display) -> CliError {
    CliError::import_failed(format!("Dataset import backend failed: {message}"))
}

pub fn run(args: &ImportArgs, kind: Kind, source: &Path, device: Option<i64>) -> CliResult {
    let events_per_slice = kind
        .events_per_slice(args.events_per_slice)
        .expect("validated: native needs K");
    let out_dir = match &args.output_dir {
        Some(dir) => focus::absolute(dir)?,
        None => source.parent().expect("a file has a parent").to_path_buf(),
    };
    let name = super::import::source_name(source)?;
    let target = kind.target(&out_dir, &name);
    reuse::check_target(&target, kind).map_err(CliError::import_failed)?;
    // First, so that a dataset an interrupted `--force` had moved away is back before the
    // target is looked at.
    for w in stale::clean(&target, stale::Artifacts::Dataset) {
        if !args.json {
            eprintln!("warning: {w}");
        }
    }
    let sha256 = hash_file(source)?;
    let request = ImportRequest {
        kind,
        source,
        sha256: &sha256,
        device,
        events_per_slice,
        force: args.force,
    };
    let outcome = match reuse::decide(&target, &request).map_err(CliError::import_failed)? {
        Decision::Reuse(dataset) => {
            recheck_source(source, &sha256)?;
            Outcome {
                dataset,
                reused: true,
                miss: None,
            }
        }
        Decision::Build {
            miss,
            replace,
            msinsight,
        } => Outcome {
            dataset: build(args, &request, &target, &name, replace, msinsight.as_ref())?,
            reused: false,
            miss: Some(miss),
        },
    };

    let focus_state = super::import::focus_on(&target, device, args.no_focus)?;
    let path = target.display().to_string();
    let dataset = &outcome.dataset;
    if args.json {
        let mut fields = super::import::import_fields(
            &target,
            device,
            outcome.miss,
            &dataset.metadata,
            focus_state.as_ref(),
        );
        fields.extend([
            ("dataset_path", json!(path)),
            ("devices", json!(dataset.devices)),
            ("slice_count", json!(dataset.slice_count)),
            ("format", json!(kind.format())),
            ("omitted_devices", json!(dataset.omitted_devices)),
            ("rebuilt", json!(!outcome.reused)),
        ]);
        output::print_json(&envelope::success(fields));
    } else {
        let action = if outcome.reused { "Reused" } else { "Imported" };
        println!("{action}: {path}");
        println!(
            "Format: {}; devices: [{}]; slices: {}",
            kind.format(),
            dataset
                .devices
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            dataset.slice_count
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

/// SHA-256 of the file, as lowercase hex.
fn hash_file(path: &Path) -> CliResult<String> {
    pt_snap_dataset::sha256_file(path).map_err(backend)
}

fn decode_error(e: pt_snap_model::DecodeError) -> CliError {
    pt_snap_import::ImportFailure::from(e).into()
}

/// The source must still be the bytes first hashed when the dataset is kept or published.
fn recheck_source(source: &Path, sha256: &str) -> CliResult<()> {
    if hash_file(source)? != sha256 {
        return Err(source_changed());
    }
    Ok(())
}

fn source_changed() -> CliError {
    CliError::import_failed(
        "Snapshot source changed while import was running; existing artifact preserved.",
    )
}

/// Decodes, replays, writes the shards in parallel into a staging directory, writes the
/// manifest and publishes the dataset at `target` (with `replace`, over the native dataset
/// there). An msinsight export records `msinsight`.
fn build(
    args: &ImportArgs,
    request: &ImportRequest<'_>,
    target: &Path,
    name: &str,
    replace: bool,
    msinsight: Option<&MsinsightSource>,
) -> CliResult<DatasetReport> {
    let (kind, source, device) = (request.kind, request.source, request.device);
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
        std::thread::spawn(move || hash_file(&source))
    };
    let plan = write::plan(
        &snapshot,
        device.map(|d| d as usize),
        request.events_per_slice as usize,
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
        source_sha256: request.sha256.to_owned(),
        source_size: size as i64,
        source_name: name.to_owned(),
        requested_device: device,
        importer_name: IMPORTER_NAME.to_owned(),
        importer_version: IMPORTER_VERSION.to_owned(),
        completed_at: crate::clock::now_utc_iso(),
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
        .map_err(|_| CliError::internal("the hashing thread panicked"))??
        != request.sha256
    {
        return Err(source_changed());
    }
    publish(&artifact, target, replace, &mut owner)?;
    Ok(plan.report(metadata))
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
