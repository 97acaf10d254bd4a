//! Which database a command works on: explicit path > `PT_SNAP_DB_PATH` > the nearest
//! project `.pt-snap/focus.json` > the global config. The files are the reference's, so both
//! tools share one focus.

use std::fs;
use std::path::{Path, PathBuf};

use pt_snap_contract::{publish, python};
use pt_snap_db::SnapshotDb;
use serde_json::{json, Map, Value};

use crate::error::{CliError, CliResult};

pub const ENV_DB_PATH: &str = "PT_SNAP_DB_PATH";
const FOCUS_DIR: &str = ".pt-snap";
const FOCUS_FILE: &str = "focus.json";

/// Where the database path came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FocusSource {
    Explicit,
    Env,
    Project,
    Global,
}

impl FocusSource {
    pub fn name(self) -> &'static str {
        match self {
            FocusSource::Explicit => "explicit",
            FocusSource::Env => "env",
            FocusSource::Project => "project",
            FocusSource::Global => "global",
        }
    }
}

/// A resolved database path, with the focused device if the focus carries one.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub db_path: PathBuf,
    pub source: FocusSource,
    /// The focus file the path came from (project or global).
    pub focus_file: Option<PathBuf>,
    pub device_id: Option<i64>,
}

/// A focus file's content: `{"db_path": …, "device_id": …}`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FocusRecord {
    pub db_path: Option<String>,
    pub device_id: Option<i64>,
}

impl FocusRecord {
    fn parse(value: &Value) -> Option<FocusRecord> {
        let obj = value.as_object()?;
        let db_path = obj
            .get("db_path")
            .or_else(|| obj.get("current_db_path"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let device_id = obj.get("device_id").and_then(Value::as_i64);
        Some(FocusRecord { db_path, device_id })
    }

    fn to_json(&self) -> Value {
        let mut map = Map::new();
        if let Some(p) = &self.db_path {
            map.insert("db_path".into(), Value::from(p.clone()));
        }
        if let Some(d) = self.device_id {
            map.insert("device_id".into(), Value::from(d));
        }
        Value::Object(map)
    }
}

pub fn cwd() -> CliResult<PathBuf> {
    std::env::current_dir()
        .map_err(|e| CliError::internal(format!("cannot read the current directory: {e}")))
}

/// Makes a path absolute without resolving symlinks of a file that may not exist yet.
pub fn absolute(path: &Path) -> CliResult<PathBuf> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd()?.join(path)
    };
    Ok(fs::canonicalize(&abs).unwrap_or_else(|_| pt_snap_store::snapshot::normalize(&abs)))
}

/// The nearest `.pt-snap/focus.json` at or above the current directory.
pub fn find_project_file() -> CliResult<Option<PathBuf>> {
    let start = cwd()?;
    Ok(start
        .ancestors()
        .map(|d| d.join(FOCUS_DIR).join(FOCUS_FILE))
        .find(|f| f.is_file()))
}

/// `<cwd>/.pt-snap/focus.json`: where `focus` and `import` write the project focus.
pub fn project_file_here() -> CliResult<PathBuf> {
    Ok(cwd()?.join(FOCUS_DIR).join(FOCUS_FILE))
}

/// `~/.config/pt-snap-cli/config.json`, from `$HOME` like Python's `Path.home()`.
pub fn global_file() -> CliResult<PathBuf> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .ok_or_else(|| CliError::internal("HOME is not set"))?;
    Ok(home.join(".config").join("pt-snap-cli").join("config.json"))
}

pub fn read_project(path: &Path) -> CliResult<FocusRecord> {
    let text = fs::read_to_string(path).map_err(|_| CliError::focus_file_invalid(path))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|_| CliError::focus_file_invalid(path))?;
    match FocusRecord::parse(&value) {
        Some(r) if r.db_path.is_some() => Ok(r),
        _ => Err(CliError::focus_file_invalid(path)),
    }
}

/// The global config as a raw JSON object (empty when absent or unreadable).
pub fn read_global_raw() -> CliResult<Map<String, Value>> {
    let path = global_file()?;
    Ok(fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default())
}

pub fn read_global() -> CliResult<FocusRecord> {
    Ok(FocusRecord::parse(&Value::Object(read_global_raw()?)).unwrap_or_default())
}

/// Resolves the database to use, or `None` when nothing is configured.
pub fn resolve(explicit: Option<&Path>) -> CliResult<Option<Resolved>> {
    if let Some(p) = explicit {
        return Ok(Some(Resolved {
            db_path: p.to_path_buf(),
            source: FocusSource::Explicit,
            focus_file: None,
            device_id: None,
        }));
    }
    if let Some(p) = std::env::var_os(ENV_DB_PATH).filter(|p| !p.is_empty()) {
        return Ok(Some(Resolved {
            db_path: PathBuf::from(p),
            source: FocusSource::Env,
            focus_file: None,
            device_id: None,
        }));
    }
    if let Some(file) = find_project_file()? {
        let rec = read_project(&file)?;
        return Ok(Some(Resolved {
            db_path: PathBuf::from(rec.db_path.unwrap_or_default()),
            source: FocusSource::Project,
            focus_file: Some(file),
            device_id: rec.device_id,
        }));
    }
    let global = read_global()?;
    Ok(global.db_path.map(|p| Resolved {
        db_path: PathBuf::from(p),
        source: FocusSource::Global,
        focus_file: global_file().ok(),
        device_id: global.device_id,
    }))
}

pub fn resolve_required(explicit: Option<&Path>) -> CliResult<Resolved> {
    resolve(explicit)?.ok_or_else(CliError::focus_not_configured)
}

/// Opens the resolved database a read-only command works on, with the reference's errors.
pub fn open_db(resolved: &Resolved) -> CliResult<(SnapshotDb, PathBuf)> {
    let path = absolute(&resolved.db_path)?;
    if !path.is_file() {
        return Err(CliError::database_not_found(format!(
            "Database not found: {}",
            resolved.db_path.display()
        )));
    }
    Ok((SnapshotDb::open_readonly(&path)?, path))
}

/// Writes a focus file atomically (temp file + rename), new files readable by the owner only.
pub fn write_record(path: &Path, record: &FocusRecord) -> CliResult<()> {
    write_json_atomic(path, &record.to_json())
}

pub fn write_json_atomic(path: &Path, value: &Value) -> CliResult<()> {
    let fail =
        |e: std::io::Error| CliError::internal(format!("cannot write {}: {e}", path.display()));
    let dir = path.parent().expect("focus files live in a directory");
    fs::create_dir_all(dir).map_err(fail)?;
    publish::write_file(path, python::pretty(value).as_bytes(), 0o600).map_err(fail)
}

/// What `focus --json` and `import --json` report about a focus.
pub struct FocusState {
    pub db_path: PathBuf,
    pub source: FocusSource,
    pub focus_file: Option<PathBuf>,
    pub device_id: Option<i64>,
}

impl FocusState {
    /// The focus dict: configured, path, source, file, device, and what the DB holds.
    pub fn to_json(&self) -> Value {
        // A dataset is a directory (or its manifest.json): it exists without being a file.
        let exists = self.db_path.exists();
        let (devices, layout, layout_error) = if exists {
            describe_db(&self.db_path)
        } else {
            (vec![], None, None)
        };
        json!({
            "configured": true,
            "db_path": self.db_path.display().to_string(),
            "focus_source": self.source.name(),
            "focus_file": self.focus_file.as_ref().map(|f| f.display().to_string()),
            "device_id": self.device_id,
            "available_devices": devices,
            "callstack_layout": layout,
            "callstack_layout_error": layout_error,
            "db_exists": exists,
        })
    }
}

/// Devices and callstack layout of a DB, for focus reports; problems become the layout error.
pub fn describe_db(path: &Path) -> (Vec<i64>, Option<&'static str>, Option<String>) {
    match crate::source::open_dataset(path) {
        Ok(Some(ds)) => return (ds.device_ids(), Some(ds.layout_name()), None),
        Ok(None) => {}
        Err(e) => return (vec![], None, Some(e.failure.message)),
    }
    match SnapshotDb::open_readonly(path) {
        Ok(db) => {
            let layout = db.layout();
            let devices = db.devices().to_vec();
            match layout {
                Ok(Ok(l)) => (devices, Some(l.name()), None),
                Ok(Err(e)) => (devices, None, Some(e)),
                Err(e) => (devices, None, Some(e.to_string())),
            }
        }
        Err(e) => (vec![], None, Some(e.to_string())),
    }
}

/// Points the project focus at what an import made (unless `no_focus`).
pub fn point_at(
    target: &Path,
    device: Option<i64>,
    no_focus: bool,
) -> CliResult<Option<FocusState>> {
    if no_focus {
        return Ok(None);
    }
    let file = project_file_here()?;
    write_record(
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
