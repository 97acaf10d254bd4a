//! `split` on disk (spec §10.1): the reference's argument and path checks (same order, same
//! phases and messages), a hidden staging directory next to the output, every slice read
//! back from disk and replayed before anything is published, and one atomic rename that
//! never replaces an existing path. The slicing itself is `pt-snap-split`'s.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use pt_snap_contract::publish::{self, Existing};
use pt_snap_contract::python::py_path;
use pt_snap_contract::{ErrorCode, Failure};
use pt_snap_split::{Format, Source, SourceError, SplitError, Strategy};

use crate::Observer;

/// A split as asked for, unchecked: [`split`] checks it as the reference does.
pub struct Request<'a> {
    pub source: &'a Path,
    pub output: &'a Path,
    pub device: Option<i64>,
    pub slices: Option<i64>,
    pub max_entries: Option<i64>,
    pub format: &'a str,
}

/// What was published.
pub struct Split {
    pub output: PathBuf,
    /// The slices' file names in `output`, device by device, each device's in trace order.
    pub files: Vec<String>,
    pub devices: Vec<usize>,
    pub format: Format,
}

/// A `SPLIT_FAILED` failure in the reference's words: `Split <phase> failed for '<source>': …`.
fn fail(phase: &str, source: &Path, detail: impl std::fmt::Display) -> Failure {
    Failure::new(
        ErrorCode::SplitFailed,
        format!("Split {phase} failed for '{}': {detail}", py_path(source)),
    )
}

/// Checks `request`, slices its source and publishes the slices as the new directory
/// `request.output`; why a replay stopped goes to `observer` as a warning.
pub fn split(request: &Request, observer: &mut dyn Observer) -> Result<Split, Failure> {
    let source = request.source;
    let (strategy, format) = validate(request)?;

    let bytes = fs::read(source).map_err(|e| fail("load/engine", source, e))?;
    // Two independent decodes of the same bytes (plain values for what slices copy, the
    // typed model for the replay): one per core.
    let src = std::thread::scope(|s| {
        let values = s.spawn(|| Source::decode_values(&bytes));
        let model = Source::decode_model(&bytes);
        let values = values.join().expect("the decoder does not panic");
        Source::from_decoded(values, model)
    })
    .map_err(|e| match e {
        SourceError::Unsafe(_) | SourceError::Invalid(_) => fail("load/engine", source, e),
    })?;
    drop(bytes);
    if !src.has_trace_list() {
        return Err(fail("device", source, "snapshot has no device trace list"));
    }
    let with_events = src.devices_with_events();
    let devices = match request.device {
        Some(d) => {
            let d = usize::try_from(d).expect("negative devices were refused");
            if !with_events.contains(&d) {
                return Err(fail(
                    "device",
                    source,
                    format!("device {d} does not exist or has no trace entries"),
                ));
            }
            vec![d]
        }
        None if with_events.is_empty() => {
            return Err(fail(
                "device",
                source,
                "snapshot has no device with trace entries",
            ))
        }
        None => with_events,
    };

    let out = request.output;
    let parent = parent_of(out);
    let stage = tempfile::Builder::new()
        .prefix(&format!(".{}.pt-snap-", file_name(out)))
        .tempdir_in(parent)
        .and_then(|dir| {
            restrict(dir.path())?;
            Ok(dir)
        })
        .map_err(|e| {
            fail(
                "publication",
                source,
                format!("cannot create staging directory: {e}"),
            )
        })?;
    let identity = Identity::of(stage.path()).map_err(|e| {
        fail(
            "publication",
            source,
            format!("cannot create staging directory: {e}"),
        )
    })?;

    let stem = source
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut names = Vec::new();
    for &device in &devices {
        let mut written: Vec<String> = Vec::new();
        let mut emit = |slice: pt_snap_split::Slice| -> Result<(), Failure> {
            let name = pt_snap_split::slice_file_name(&stem, device, slice.index, format);
            let path = stage.path().join(&name);
            write_new(&path, &slice.bytes).map_err(|e| fail("publication", source, e))?;
            drop(slice);
            // Validate what is on disk, as the reference re-loads the file it wrote.
            let back = fs::read(&path).map_err(|e| fail("generated-validation", source, e))?;
            pt_snap_split::validate(&back, format, device).map_err(|reason| {
                fail(
                    "generated-validation",
                    source,
                    format!("generated slice for device {device} failed validation: {reason}"),
                )
            })?;
            written.push(name);
            Ok(())
        };
        let count = pt_snap_split::split_device(&src, device, strategy, format, &mut emit)
            .map_err(|e| match e {
                SplitError::Emit(e) => e,
                SplitError::Replay { device, reason } => {
                    // The reference logs why its replay stopped and reports only that it did.
                    observer.warn(&format!("replay of device {device} stopped: {reason}"));
                    fail(
                        "load/engine",
                        source,
                        format!("device {device}: replay engine returned false"),
                    )
                }
                SplitError::Encode { device, reason } => {
                    fail("load/engine", source, format!("device {device}: {reason}"))
                }
            })?;
        if count == 0 {
            return Err(fail(
                "load/engine",
                source,
                format!("device {device}: engine generated no slices"),
            ));
        }
        // Slices come last first; list them in trace order.
        written.reverse();
        names.extend(written);
    }

    identity
        .verify(stage.path())
        .map_err(|e| fail("publication", source, e))?;
    publish::rename(stage.path(), out, Existing::Refuse).map_err(|e| {
        fail(
            "publication",
            source,
            os_error(e.raw_os_error().unwrap_or(0), out),
        )
    })?;
    // The directory now lives at `out`; nothing is left to clean up.
    let _ = stage.keep();

    Ok(Split {
        output: out.to_path_buf(),
        files: names,
        devices,
        format,
    })
}

/// The reference's checks before it reads the source, in its order.
fn validate(request: &Request) -> Result<(Strategy, Format), Failure> {
    let source = request.source;
    let strategy = match (request.slices, request.max_entries) {
        (Some(_), Some(_)) | (None, None) => {
            return Err(fail(
                "argument",
                source,
                "exactly one of --slices and --max-entries is required",
            ))
        }
        (Some(n), None) if n > 0 => Strategy::Slices(n as u64),
        (None, Some(m)) if m > 0 => Strategy::MaxEntries(m as u64),
        _ => {
            return Err(fail(
                "argument",
                source,
                "the split strategy value must be positive",
            ))
        }
    };
    let format = Format::parse(request.format).ok_or_else(|| {
        fail(
            "argument",
            source,
            "format must be exactly 'pickle' or 'json'",
        )
    })?;
    if !source.exists() {
        return Err(fail("path", source, "source does not exist"));
    }
    if !source.is_file() {
        return Err(fail("path", source, "source is not a regular file"));
    }
    let suffix = source
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase());
    if !matches!(suffix.as_deref(), Some("pkl" | "pickle")) {
        return Err(fail(
            "path",
            source,
            "source suffix must be .pkl or .pickle",
        ));
    }
    if request.device.is_some_and(|d| d < 0) {
        return Err(fail("device", source, "device must be non-negative"));
    }
    let out = request.output;
    let parent = parent_of(out);
    if !parent.exists() {
        return Err(fail(
            "path",
            source,
            format!("output parent does not exist: {}", py_path(parent)),
        ));
    }
    if !parent.is_dir() {
        return Err(fail(
            "path",
            source,
            format!("output parent is not a directory: {}", py_path(parent)),
        ));
    }
    if fs::symlink_metadata(out).is_ok() {
        return Err(fail(
            "conflict",
            source,
            format!("destination already exists: {}", py_path(out)),
        ));
    }
    Ok((strategy, format))
}

/// `Path(p).parent`: `.` for a bare name.
fn parent_of(p: &Path) -> &Path {
    match p.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Python's `tempfile.mkdtemp` makes the directory private; so do we, whatever the umask.
fn restrict(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// The staging directory's identity, checked before publishing so that a directory swapped
/// in under the same name is never published.
struct Identity {
    #[cfg(unix)]
    dev_ino: (u64, u64),
}

impl Identity {
    fn of(dir: &Path) -> std::io::Result<Identity> {
        let meta = fs::symlink_metadata(dir)?;
        if !meta.is_dir() {
            return Err(std::io::Error::other(
                "staging path is not an owned directory",
            ));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Ok(Identity {
                dev_ino: (meta.dev(), meta.ino()),
            })
        }
        #[cfg(not(unix))]
        Ok(Identity {})
    }

    fn verify(&self, dir: &Path) -> std::io::Result<()> {
        let now = Identity::of(dir)?;
        #[cfg(unix)]
        if now.dev_ino != self.dev_ino {
            return Err(std::io::Error::other("staging directory identity changed"));
        }
        let _ = now;
        Ok(())
    }
}

/// Python's `str(OSError(errno, strerror, path))`.
fn os_error(errno: i32, path: &Path) -> String {
    let text = std::io::Error::from_raw_os_error(errno).to_string();
    let text = text
        .rsplit_once(" (os error")
        .map_or(text.as_str(), |(t, _)| t);
    format!("[Errno {errno}] {text}: '{}'", py_path(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_name_has_the_current_directory_as_parent() {
        assert_eq!(parent_of(Path::new("out")), Path::new("."));
        assert_eq!(parent_of(Path::new("a/out")), Path::new("a"));
    }
}
