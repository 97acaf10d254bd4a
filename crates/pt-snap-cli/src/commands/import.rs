//! `pt-snap import`: snapshot pickle → SnapshotDB, with the SHA-256 reuse cache and atomic
//! publication (a failed import never leaves a partial DB and never harms an existing one).

use std::fs::{self, File};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use pt_snap_contract::envelope;
use pt_snap_contract::publish::{self, Existing};
use pt_snap_db::{Metadata, SnapshotDb, IMPORT_FORMAT_VERSION};
use pt_snap_import::{ImportFailure, ImportRequest, ReplayMode};
use pt_snap_model::decode::{describe_start, Detected, HEAD_LEN};
use serde_json::{json, Value};

use super::import_dataset::Kind as DatasetKind;

use crate::cli::ImportArgs;
use crate::error::{CliError, CliResult};
use crate::focus::{self, FocusRecord, FocusSource, FocusState};
use crate::output;
use crate::progress::{ImportObserver, ImportProgress};
use crate::stale;

const OPTION_HINT: &str = "Check the import options with 'pt-snap import --help'.";

pub fn run(args: &ImportArgs) -> CliResult {
    let (device, dataset) = validate_options(args)?;
    let source = check_source(&args.snapshot_file)?;
    if let Some(kind) = dataset {
        return super::import_dataset::run(args, kind, &source, device);
    }
    let out_dir = match &args.output_dir {
        Some(dir) => {
            fs::create_dir_all(dir).map_err(|e| {
                CliError::import_failed(format!(
                    "Snapshot import backend failed: cannot create {}: {e}",
                    dir.display()
                ))
            })?;
            focus::absolute(dir)?
        }
        None => source.parent().expect("a file has a parent").to_path_buf(),
    };
    let name = source_name(&source)?;
    let target = out_dir.join(format!("{name}.db"));
    let replay = if args.lenient {
        ReplayMode::Lenient
    } else {
        ReplayMode::Strict
    };
    let (metadata, miss) = single_db(
        &SingleDb {
            source: &source,
            target: &target,
            name: &name,
            device,
            replay,
            force: args.force,
        },
        &mut ImportProgress::pending(!args.json),
        &mut |w| {
            if !args.json {
                eprintln!("warning: {w}");
            }
        },
    )?;

    let focus_state = focus_on(&target, device, args.no_focus)?;

    let lenient = SnapshotDb::open_readonly(&target)
        .map_err(CliError::from)
        .and_then(|db| Ok(db.lenient_replay_issues()?))?
        .map(|issues| super::metadata::LenientReplay { issues });
    if args.json {
        let mut out = envelope::success(import_fields(
            &target,
            device,
            miss,
            &metadata,
            focus_state.as_ref(),
        ));
        super::metadata::LenientReplay::annotate(&lenient, &mut out);
        output::print_json(&out);
    } else {
        if let Some(r) = &lenient {
            eprintln!("warning: {}", r.line());
        }
        match miss {
            None => println!("Reused: {}", target.display()),
            Some(reason) => {
                println!("Imported: {}", target.display());
                println!("Cache miss: {reason}");
            }
        }
        if let Some(f) = focus_state.as_ref().and_then(|s| s.focus_file.as_ref()) {
            println!("Focus: {}", f.display());
        }
    }
    Ok(())
}

/// A single-DB import of one snapshot: what [`single_db`] reads and writes.
pub(crate) struct SingleDb<'a> {
    /// The snapshot, absolute, as [`check_source`] returns it.
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

/// The reuse cache of `import` (spec §5.2): the target's metadata when it was made from the
/// same bytes (SHA-256), device, replay mode and import format, else the database built and
/// published atomically in its place, with the cache-miss reason. Files a killed import of
/// the same target left are removed first. Every warning goes to `warn`, as it arises; the
/// import's progress to `progress`. `import` and `ranks` both import through here.
pub(crate) fn single_db(
    job: &SingleDb,
    progress: &mut dyn ImportObserver,
    warn: &mut dyn FnMut(&str),
) -> CliResult<(Metadata, Option<&'static str>)> {
    let target = job.target;
    // Before anything else, so that a reused target also loses them.
    for w in stale::clean(target, stale::Artifacts::Db) {
        warn(&w);
    }

    // Hashing and decoding are both one pass over the file: when the target cannot be
    // reused anyway, run them side by side on two cores.
    let hashed = hash_in_background(job.source);
    let mut build = |reason: &'static str, sha256: Box<dyn FnOnce() -> CliResult<String>>| {
        let summary = build_and_publish(job, sha256, progress)?;
        for w in &summary.warnings {
            warn(w);
        }
        CliResult::Ok((summary.metadata, Some(reason)))
    };
    if !target.exists() {
        build("database_missing", Box::new(hashed))
    } else if job.force {
        build("forced", Box::new(hashed))
    } else {
        let sha = hashed()?;
        match reusable(target, &sha, job.device, job.replay) {
            Ok(metadata) => Ok((metadata, None)),
            Err(reason) => build(reason, Box::new(move || Ok(sha))),
        }
    }
}

/// Checks the option combinations; returns the requested device and, for the sharded
/// formats, which dataset to build.
fn validate_options(args: &ImportArgs) -> CliResult<(Option<i64>, Option<DatasetKind>)> {
    if args.device.is_some_and(|d| d < 0) {
        return Err(CliError::invalid_parameter(
            "device must be a nonnegative integer.",
            OPTION_HINT,
        ));
    }
    if args.events_per_slice.is_some_and(|k| k <= 0) {
        return Err(CliError::invalid_parameter(
            "events_per_slice must be a positive integer.",
            OPTION_HINT,
        ));
    }
    let sliced = args.events_per_slice.is_some();
    if args.lenient && (sliced || args.format.as_deref().is_some_and(|f| f != "single-db")) {
        return Err(CliError::invalid_parameter(
            "--lenient applies to single-db imports: sharded datasets are made by the strict replay only.",
            OPTION_HINT,
        ));
    }
    match args.format.as_deref() {
        Some("msinsight" | "compatibility-v1") => Ok((args.device, Some(DatasetKind::Msinsight))),
        None if sliced => Ok((args.device, Some(DatasetKind::Native))),
        None => Ok((args.device, None)),
        Some("single-db") if !sliced => Ok((args.device, None)),
        Some("pt-snap-native-v2") if sliced => Ok((args.device, Some(DatasetKind::Native))),
        Some("single-db" | "pt-snap-native-v2") => Err(CliError::invalid_parameter(
            "pt-snap-native-v2 requires --events-per-slice; single-db forbids it.",
            OPTION_HINT,
        )),
        Some(f) => Err(CliError::invalid_parameter(
            format!("Unsupported import format: {f}"),
            OPTION_HINT,
        )),
    }
}

/// The source must be an existing regular file that is a snapshot by its content (a pickle
/// with PROTO 2-5, JSON, or gzip/zstd/bzip2), or else one named `.pkl`/`.pickle` (the
/// reference's rule, kept for protocol 0/1 pickles, which have no magic bytes); returns its
/// absolute path.
pub(crate) fn check_source(path: &Path) -> CliResult<PathBuf> {
    if !path.exists() {
        return Err(CliError::snapshot_invalid(format!(
            "Snapshot file does not exist: {}",
            path.display()
        )));
    }
    if !path.is_file() {
        return Err(CliError::snapshot_invalid(format!(
            "Snapshot path is not a file: {}",
            path.display()
        )));
    }
    let mut head = Vec::with_capacity(HEAD_LEN);
    File::open(path)
        .and_then(|f| f.take(HEAD_LEN as u64).read_to_end(&mut head))
        .map_err(|e| CliError::from(ImportFailure::backend(e)))?;
    let suffix = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    if !Detected::of(&head).is_certain() && !ImportFailure::suffix_accepted(&suffix) {
        let mut failure = ImportFailure::bad_suffix(&suffix);
        failure.message = format!(
            "{} (and the content is no snapshot either: {})",
            failure.message,
            describe_start(&head)
        );
        return Err(failure.into());
    }
    focus::absolute(path)
}

/// Starts hashing `path` on another thread; the returned closure waits for the digest.
fn hash_in_background(path: &Path) -> impl FnOnce() -> CliResult<String> + 'static {
    let path = path.to_path_buf();
    let hashing = std::thread::spawn(move || hash_file(&path));
    move || {
        hashing
            .join()
            .map_err(|_| CliError::internal("the hashing thread panicked"))?
    }
}

fn hash_file(path: &Path) -> CliResult<String> {
    File::open(path)
        .and_then(pt_snap_import::sha256_hex)
        .map_err(|e| ImportFailure::backend(e).into())
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

/// The snapshot's file name: what targets are named after and metadata records.
pub(super) fn source_name(source: &Path) -> CliResult<String> {
    source
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .ok_or_else(|| CliError::snapshot_invalid("Snapshot file name is not valid UTF-8"))
}

/// Points the project focus at what an import made (unless `--no-focus`).
pub(super) fn focus_on(
    target: &Path,
    device: Option<i64>,
    no_focus: bool,
) -> CliResult<Option<FocusState>> {
    if no_focus {
        return Ok(None);
    }
    let file = focus::project_file_here()?;
    focus::write_record(
        &file,
        &FocusRecord {
            db_path: Some(target.display().to_string()),
            device_id: device,
        },
    )?;
    Ok(Some(FocusState {
        db_path: target.to_path_buf(),
        source: FocusSource::Project,
        focus_file: Some(file),
        device_id: device,
    }))
}

/// The keys every `import --json` starts with; `miss` is `None` when the target was reused.
pub(super) fn import_fields(
    target: &Path,
    device: Option<i64>,
    miss: Option<&str>,
    metadata: &Metadata,
    focus_state: Option<&FocusState>,
) -> Vec<(&'static str, Value)> {
    vec![
        ("db_path", json!(target.display().to_string())),
        ("device_id", json!(device)),
        ("reused", json!(miss.is_none())),
        ("cache_miss_reason", json!(miss)),
        ("metadata", pt_snap_query::metadata_json(metadata)),
        (
            "focus_state",
            focus_state.map_or(Value::Null, FocusState::to_json),
        ),
        ("focus_source", json!(focus_state.map(|_| "project"))),
    ]
}

/// Imports into a temp file beside the target, checks it, then renames it over the target.
fn build_and_publish(
    job: &SingleDb,
    sha256: Box<dyn FnOnce() -> CliResult<String>>,
    progress: &mut dyn ImportObserver,
) -> CliResult<pt_snap_import::ImportSummary> {
    let SingleDb {
        source,
        target,
        name,
        device,
        replay,
        ..
    } = *job;
    let dir = target.parent().expect("target is in a directory");
    let cannot_create = |e: std::io::Error| {
        CliError::import_failed(format!(
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
    let file = File::open(source).map_err(|e| CliError::from(ImportFailure::backend(e)))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    progress.begin(size);
    let snapshot = pt_snap_model::decode(BufReader::with_capacity(1 << 20, file), &mut |p| {
        progress.decoding(p)
    })
    .map_err(|e| CliError::from(ImportFailure::from(e)))?;
    // Hashing the source again now proves that the bytes decoded are the bytes first hashed;
    // it runs on the second core while SQLite works.
    let rehashed = hash_in_background(source);
    let request = ImportRequest {
        device: device.map(|d| d as usize),
        source_sha256: sha256()?,
        source_size: size,
        source_name: name.to_owned(),
        completed_at: crate::clock::now_utc_iso(),
        replay,
        indexes: pt_snap_import::Indexes::WithRows,
    };
    let summary = {
        let conn = rusqlite::Connection::open(tmp.path())?;
        let summary = pt_snap_import::import_snapshot(&snapshot, &conn, &request, &mut |s| {
            progress.update(s)
        })
        .map_err(|e| CliError::from(ImportFailure::from(e)))?;
        conn.close().map_err(|(_, e)| CliError::from(e))?;
        summary
    };
    progress.finish();
    drop(snapshot);
    if rehashed()? != request.source_sha256 {
        return Err(CliError::import_failed(
            "Snapshot source changed while import was running; existing database preserved.",
        ));
    }
    let written = SnapshotDb::open_readonly(tmp.path())?.metadata()?;
    if written.as_ref() != Ok(&summary.metadata) {
        return Err(CliError::import_failed(format!(
            "Snapshot import backend failed: metadata read back differs: {written:?}"
        )));
    }
    let tmp = tmp.into_temp_path();
    publish::rename(&tmp, target, Existing::Replace).map_err(|e| {
        CliError::import_failed(format!(
            "Snapshot import backend failed: cannot publish {}: {e}",
            target.display(),
        ))
    })?;
    // Published: the temporary name no longer exists, so there is nothing to delete.
    let _ = tmp.keep();
    Ok(summary)
}
