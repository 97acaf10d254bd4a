//! `pt-snap focus`: show or set which database (and device) later commands use.

use std::path::Path;

use pt_snap_contract::envelope;
use pt_snap_db::SnapshotDb;
use serde_json::{json, Value};

use crate::cli::FocusArgs;
use crate::error::{CliError, CliResult};
use crate::focus::{self, FocusRecord, FocusSource, FocusState, ENV_DB_PATH};
use crate::output;

pub fn run(args: &FocusArgs) -> CliResult {
    if args.session && args.global {
        return Err(CliError::invalid_parameter(
            "--session cannot be combined with --global.",
            "Use --session for a shell export or --global for the global config, not both.",
        ));
    }
    if args.session && args.device.is_some() {
        return Err(CliError::invalid_parameter(
            "--device cannot be used with --session; session focus exports only a database path.",
            "Omit --device; session focus exports only PT_SNAP_DB_PATH.",
        ));
    }
    match (&args.db_path, args.device) {
        (Some(db), _) if args.session => session(db, args.json),
        (Some(db), device) => set(db, device, args.global, args.json),
        (None, Some(device)) => set_device(device, args.json),
        (None, None) => read(args.json),
    }
}

/// Checks that `db` is a SnapshotDB (and has `device`); returns its absolute path.
fn validate(db: &Path, device: Option<i64>) -> CliResult<std::path::PathBuf> {
    let path = focus::absolute(db)?;
    if let Some(ds) = crate::source::open_dataset(&path)? {
        if let Some(d) = device {
            if !ds.device_ids().contains(&d) {
                return Err(CliError::device_not_found(d, &ds.device_ids()));
            }
        }
        return Ok(path);
    }
    if !path.is_file() {
        return Err(CliError::database_not_found(format!(
            "Database not found: {}",
            db.display()
        )));
    }
    let opened = SnapshotDb::open_readonly(&path)?;
    if let Some(d) = device {
        if !opened.devices().contains(&d) {
            return Err(CliError::device_not_found(d, opened.devices()));
        }
    }
    Ok(path)
}

fn report(action: &str, state: &FocusState, extra: Vec<(&str, Value)>, json: bool) {
    if json {
        let dict = state.to_json();
        let mut fields = vec![("action", json!(action))];
        fields.extend(
            dict.as_object()
                .expect("focus state is an object")
                .iter()
                .map(|(k, v)| (k.as_str(), v.clone())),
        );
        fields.extend(extra);
        output::print_json(&envelope::success(fields));
        return;
    }
    let (_, layout, layout_error) = focus::describe_db(&state.db_path);
    match action {
        "set_device" => println!(
            "Focused device ({}): {}",
            state.source.name(),
            state.device_id.map_or("none".into(), |d| d.to_string())
        ),
        "read" => println!(
            "Current database ({}): {}",
            state.source.name(),
            state.db_path.display()
        ),
        _ => println!(
            "Focus set ({}): {}",
            state.source.name(),
            state.db_path.display()
        ),
    }
    if let Some(f) = &state.focus_file {
        println!("Focus file: {}", f.display());
    }
    if action != "set_device" {
        if let Some(d) = state.device_id {
            println!("Focused device: {d}");
        }
    }
    if !state.db_path.exists() {
        println!("Warning: the focused database does not exist.");
    } else {
        match (layout, layout_error) {
            (Some("v1"), _) => println!("Callstack layout: v1 (inline text)"),
            (Some(l), _) => println!("Callstack layout: {l} (deduplicated)"),
            (None, Some(e)) => println!("Callstack layout: unknown ({e})"),
            (None, None) => {}
        }
    }
}

fn set(db: &Path, device: Option<i64>, global: bool, json: bool) -> CliResult {
    let path = validate(db, device)?;
    let (file, source, action) = if global {
        (focus::global_file()?, FocusSource::Global, "set_global")
    } else {
        (
            focus::project_file_here()?,
            FocusSource::Project,
            "set_project",
        )
    };
    let record = FocusRecord {
        db_path: Some(path.display().to_string()),
        device_id: device,
    };
    if global {
        // The global config may hold other keys: keep them.
        let mut raw = focus::read_global_raw()?;
        raw.insert("db_path".into(), json!(record.db_path));
        match device {
            Some(d) => raw.insert("device_id".into(), json!(d)),
            None => raw.remove("device_id"),
        };
        focus::write_json_atomic(&file, &Value::Object(raw))?;
    } else {
        focus::write_record(&file, &record)?;
    }
    let state = FocusState {
        db_path: path,
        source,
        focus_file: Some(file),
        device_id: device,
    };
    report(action, &state, vec![], json);
    Ok(())
}

fn set_device(device: i64, json: bool) -> CliResult {
    let resolved = focus::resolve_required(None)?;
    let path = validate(&resolved.db_path, Some(device))?;
    let (file, source) = match resolved.source {
        FocusSource::Global => (focus::global_file()?, FocusSource::Global),
        _ => (
            resolved
                .focus_file
                .filter(|_| resolved.source == FocusSource::Project)
                .map_or_else(focus::project_file_here, Ok)?,
            FocusSource::Project,
        ),
    };
    if source == FocusSource::Global {
        let mut raw = focus::read_global_raw()?;
        raw.insert("device_id".into(), json!(device));
        focus::write_json_atomic(&file, &Value::Object(raw))?;
    } else {
        focus::write_record(
            &file,
            &FocusRecord {
                db_path: Some(path.display().to_string()),
                device_id: Some(device),
            },
        )?;
    }
    let state = FocusState {
        db_path: path,
        source,
        focus_file: Some(file),
        device_id: Some(device),
    };
    report("set_device", &state, vec![], json);
    Ok(())
}

fn read(json: bool) -> CliResult {
    let Some(resolved) = focus::resolve(None)? else {
        if json {
            return Err(CliError::focus_not_configured());
        }
        println!("No current focus set.");
        println!("Use 'pt-snap focus <database_path>' to set a project database.");
        return Ok(());
    };
    let state = FocusState {
        db_path: focus::absolute(&resolved.db_path)?,
        source: resolved.source,
        focus_file: resolved.focus_file,
        device_id: resolved.device_id,
    };
    report("read", &state, vec![], json);
    Ok(())
}

fn session(db: &Path, json: bool) -> CliResult {
    let path = validate(db, None)?;
    let value = path.display().to_string();
    let export = format!("export {ENV_DB_PATH}={}", shell_quote(&value));
    if json {
        let state = FocusState {
            db_path: path,
            source: FocusSource::Explicit,
            focus_file: None,
            device_id: None,
        };
        report(
            "validate_session",
            &state,
            vec![
                ("session_applied", json!(false)),
                (
                    "env",
                    json!({"name": ENV_DB_PATH, "value": value, "export": export}),
                ),
            ],
            true,
        );
    } else {
        println!("{export}");
    }
    Ok(())
}

/// POSIX shell quoting, like Python's `shlex.quote`.
fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\"'\"'"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn quotes_like_shlex() {
        assert_eq!(super::shell_quote("/a/b.db"), "/a/b.db");
        assert_eq!(super::shell_quote("/a b/it's.db"), "'/a b/it'\"'\"'s.db'");
    }
}
