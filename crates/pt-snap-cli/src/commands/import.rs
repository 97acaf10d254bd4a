//! `pt-snap import`: a snapshot → its SnapshotDB (`pt_snap_store::import`, with the SHA-256
//! reuse cache and atomic publication), or with `--events-per-slice K` / `--format
//! msinsight` a sharded dataset (`pt_snap_store::dataset`, spec §10.2–10.3); the focus set
//! on what was made.

use std::path::Path;

use pt_snap_contract::envelope;
use pt_snap_dataset::DatasetKind;
use pt_snap_db::{Metadata, SnapshotDb};
use pt_snap_store::{dataset, import, snapshot, ReplayMode};
use serde_json::{json, Value};

use crate::cli::ImportArgs;
use crate::error::{CliError, CliResult};
use crate::focus::{self, FocusState};
use crate::output::{self, LenientReplay};
use crate::progress::ImportProgress;

const OPTION_HINT: &str = "Check the import options with 'pt-snap import --help'.";

pub fn run(args: &ImportArgs) -> CliResult {
    let (device, dataset) = validate_options(args)?;
    let source = snapshot::check(&args.snapshot_file)?;
    let name = snapshot::name(&source)?;
    let out_dir = match &args.output_dir {
        Some(dir) => {
            if dataset.is_none() {
                std::fs::create_dir_all(dir).map_err(|e| {
                    CliError::import_failed(format!(
                        "Snapshot import backend failed: cannot create {}: {e}",
                        dir.display()
                    ))
                })?;
            }
            focus::absolute(dir)?
        }
        None => source.parent().expect("a file has a parent").to_path_buf(),
    };
    let mut progress = ImportProgress::pending(!args.json);
    match dataset {
        Some(kind) => {
            let target = kind.target(&out_dir, &name);
            let job = dataset::Job {
                kind,
                source: &source,
                target: &target,
                name: &name,
                device,
                events_per_slice: kind
                    .events_per_slice(args.events_per_slice)
                    .expect("validated: native needs K"),
                force: args.force,
            };
            let imported = dataset::import(&job, &mut progress)?;
            print_dataset(args, kind, &target, device, &imported)
        }
        None => {
            let target = out_dir.join(format!("{name}{}", pt_snap_model::names::DATABASE_SUFFIX));
            let job = import::Job {
                source: &source,
                target: &target,
                name: &name,
                device,
                replay: if args.lenient {
                    ReplayMode::Lenient
                } else {
                    ReplayMode::Strict
                },
                force: args.force,
            };
            let imported = import::import(&job, &mut progress)?;
            print_db(args, &target, device, &imported)
        }
    }
}

fn print_db(
    args: &ImportArgs,
    target: &Path,
    device: Option<i64>,
    imported: &import::Imported,
) -> CliResult {
    let focus_state = focus::point_at(target, device, args.no_focus)?;
    let lenient = SnapshotDb::open_readonly(target)
        .map_err(CliError::from)
        .and_then(|db| Ok(db.lenient_replay_issues()?))?
        .map(|issues| LenientReplay { issues });
    if args.json {
        let mut out = envelope::success(import_fields(
            target,
            device,
            imported.miss,
            &imported.metadata,
            focus_state.as_ref(),
        ));
        LenientReplay::annotate(&lenient, &mut out);
        output::print_json(&out);
        return Ok(());
    }
    if let Some(r) = &lenient {
        eprintln!("warning: {}", r.line());
    }
    match imported.miss {
        None => println!("Reused: {}", target.display()),
        Some(reason) => {
            println!("Imported: {}", target.display());
            println!("Cache miss: {reason}");
        }
    }
    print_focus(focus_state.as_ref());
    Ok(())
}

fn print_dataset(
    args: &ImportArgs,
    kind: DatasetKind,
    target: &Path,
    device: Option<i64>,
    imported: &dataset::Imported,
) -> CliResult {
    let focus_state = focus::point_at(target, device, args.no_focus)?;
    let path = target.display().to_string();
    let dataset = &imported.dataset;
    if args.json {
        let mut fields = import_fields(
            target,
            device,
            imported.miss,
            &dataset.metadata,
            focus_state.as_ref(),
        );
        fields.extend([
            ("dataset_path", json!(path)),
            ("devices", json!(dataset.devices)),
            ("slice_count", json!(dataset.slice_count)),
            ("format", json!(kind.format())),
            ("omitted_devices", json!(dataset.omitted_devices)),
            ("rebuilt", json!(imported.miss.is_some())),
        ]);
        output::print_json(&envelope::success(fields));
        return Ok(());
    }
    let action = if imported.miss.is_none() {
        "Reused"
    } else {
        "Imported"
    };
    println!("{action}: {path}");
    let devices: Vec<String> = dataset.devices.iter().map(i64::to_string).collect();
    println!(
        "Format: {}; devices: [{}]; slices: {}",
        kind.format(),
        devices.join(", "),
        dataset.slice_count
    );
    if let Some(reason) = imported.miss {
        println!("Cache miss: {reason}");
    }
    print_focus(focus_state.as_ref());
    Ok(())
}

fn print_focus(focus_state: Option<&FocusState>) {
    if let Some(f) = focus_state.and_then(|s| s.focus_file.as_ref()) {
        println!("Focus: {}", f.display());
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

/// The keys every `import --json` starts with; `miss` is `None` when the target was reused.
fn import_fields(
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
