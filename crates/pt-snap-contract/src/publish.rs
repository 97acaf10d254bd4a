//! Publication of what a command writes (spec §4.5, §10): everything is written under a
//! temporary name beside its target and renamed into place in one step, so no reader ever
//! sees a half-written database, dataset, split directory, skill folder or config file, and a
//! failed write leaves the previous one as it was.

use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// What publication does when something is already at the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Fail with `EEXIST` and leave both in place.
    Refuse,
    /// Replace it in the same rename (a file, or an empty directory on POSIX).
    Replace,
}

/// Renames `staged` (a file or a directory, on the same file system) to `target`.
///
/// [`Existing::Refuse`] never replaces anything: on Linux the kernel checks and renames in one
/// step (`renameat2(RENAME_NOREPLACE)`); elsewhere, and on file systems without it, the check
/// comes first, so a path created between the two could still be replaced (on POSIX only an
/// empty directory or a file, never a non-empty directory).
pub fn rename(staged: &Path, target: &Path, existing: Existing) -> io::Result<()> {
    if existing == Existing::Replace {
        return fs::rename(staged, target);
    }
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        match renameat_with(CWD, staged, CWD, target, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            // File systems without RENAME_NOREPLACE say EINVAL: check, then rename.
            Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {}
            Err(e) => return Err(io::Error::from_raw_os_error(e.raw_os_error())),
        }
    }
    if fs::symlink_metadata(target).is_ok() {
        return Err(already_exists());
    }
    fs::rename(staged, target)
}

/// `EEXIST` with its errno, which the reference's messages quote (`[Errno 17] File exists`).
fn already_exists() -> io::Error {
    #[cfg(unix)]
    return io::Error::from_raw_os_error(17);
    #[cfg(not(unix))]
    return io::ErrorKind::AlreadyExists.into();
}

/// Why a directory could not replace another.
#[derive(Debug)]
pub struct ReplaceError {
    /// What failed: moving the old tree aside, or the new one into place.
    pub error: io::Error,
    /// Moving the old tree back failed too: it is still at `aside`, and `target` is empty.
    pub rollback: Option<io::Error>,
}

/// Replaces the directory at `target` by `staged`. A directory cannot be renamed over a
/// non-empty one, so the old tree first moves to `aside` (a free path on the same file
/// system); if the new one then cannot be put in place, the old one moves back. On success the
/// old tree is at `aside`, for the caller to delete.
pub fn replace_dir(staged: &Path, target: &Path, aside: &Path) -> Result<(), ReplaceError> {
    fs::rename(target, aside).map_err(|error| ReplaceError {
        error,
        rollback: None,
    })?;
    fs::rename(staged, target).map_err(|error| ReplaceError {
        error,
        rollback: fs::rename(aside, target).err(),
    })
}

/// Writes `bytes` as the file `path`: to a temporary file beside it (created with `mode` on
/// Unix, less the umask), flushed to disk, then renamed over `path`.
pub fn write_file(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let tmp = temp_beside(path);
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let result = options.open(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    });
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// `.<name>.tmp-<pid>-<n>` beside `path`: hidden, and distinct for every write of this
/// process, so concurrent writers never share a temporary file.
fn temp_beside(path: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain rename would replace an empty directory that appeared at the destination
    /// after the caller's checks; refusing publication must not.
    #[test]
    fn refusing_publication_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let stage = dir.path().join(".out.stage");
        let dest = dir.path().join("out");
        fs::create_dir(&stage).unwrap();
        fs::write(stage.join("slice"), b"s").unwrap();
        fs::create_dir(&dest).unwrap();
        let err = rename(&stage, &dest, Existing::Refuse).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        #[cfg(unix)]
        assert_eq!(err.raw_os_error(), Some(17));
        assert!(stage.join("slice").exists());
        assert_eq!(fs::read_dir(&dest).unwrap().count(), 0);
        fs::remove_dir(&dest).unwrap();
        rename(&stage, &dest, Existing::Refuse).unwrap();
        assert!(dest.join("slice").exists() && !stage.exists());
    }

    #[test]
    fn a_directory_replaces_another_and_the_old_one_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let (stage, dest, aside) = (
            dir.path().join("stage"),
            dir.path().join("dest"),
            dir.path().join("aside"),
        );
        fs::create_dir(&stage).unwrap();
        fs::write(stage.join("new"), b"n").unwrap();
        fs::create_dir(&dest).unwrap();
        fs::write(dest.join("old"), b"o").unwrap();
        replace_dir(&stage, &dest, &aside).unwrap();
        assert!(dest.join("new").exists() && aside.join("old").exists() && !stage.exists());
    }

    #[test]
    fn a_failed_replacement_puts_the_old_directory_back() {
        let dir = tempfile::tempdir().unwrap();
        let (dest, aside) = (dir.path().join("dest"), dir.path().join("aside"));
        fs::create_dir(&dest).unwrap();
        fs::write(dest.join("old"), b"o").unwrap();
        let err = replace_dir(&dir.path().join("missing"), &dest, &aside).unwrap_err();
        assert_eq!(err.error.kind(), io::ErrorKind::NotFound);
        assert!(err.rollback.is_none());
        assert!(dest.join("old").exists() && !aside.exists());
    }

    #[test]
    fn files_are_written_whole_and_no_temporary_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("focus.json");
        write_file(&path, b"first", 0o600).unwrap();
        write_file(&path, b"second", 0o600).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
