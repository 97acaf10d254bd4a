//! Files left beside a target by an import that was killed, and how an import marks its own
//! files so that a later import can tell a dead owner's files from a live one's.
//!
//! An import of `<target>` writes, in the target's directory, `.<target>.<T>.tmp` (a single DB,
//! with any SQLite `-journal`/`-wal`/`-shm` beside it), `.<target>.stage-<T>/` (a dataset being
//! built) and `.<target>.recovery-<T>/` (the old dataset while `--force` swaps it), T being 6
//! random letters and digits. It removes them itself on success, on failure and on a panic, but
//! not when it is killed (SIGKILL, the OOM killer, an abort, a power cut). So before creating
//! any of them it creates `.<target>.<T>.lock`, takes an exclusive `flock` on it and writes its
//! PID into it, and it removes that lock file only after the others. The next import of the
//! same target ([`clean`]) removes the files of every owner whose lock it can take.
//!
//! Why an advisory lock rather than a PID in the name checked with `kill(pid, 0)`: the kernel
//! gives the lock up when its process ends, however it ends, and only then. A PID says nothing
//! outside its own PID namespace and host: an import in another container sharing the
//! directory, or on another machine over NFS (where Linux maps `flock` onto the byte-range
//! locks the server arbitrates), would look dead and have its live files deleted, the unsafe
//! direction; a reused PID would keep a dead owner's files forever. The lock is taken on a
//! file of its own, never on the DB: SQLite holds POSIX locks on the DB file, which closing
//! any other descriptor of that file would drop, and which `flock` shares on NFS. The PID in
//! the file is for people; that the file is not empty says its lock was taken.
//!
//! Files without an owner to ask (no lock file: an older pt-snap, or a file system where
//! `flock` fails and the lock file stays empty) are removed only once nothing in them has
//! changed for [`ABANDONED_AFTER`]: no import runs that long, and an older pt-snap may still be
//! writing them. A recovery directory holding the previous dataset is never deleted: it is put
//! back as the target when the target is missing, and left (with a warning) otherwise, unless
//! its owner had marked it as garbage by renaming `previous` to `discard` once the new dataset
//! was in place. Only regular files and directories (never symlinks, which are not followed)
//! named exactly as above for this target are candidates, and a failure to clean up is a
//! warning.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use pt_snap_contract::publish::{self, Existing};

/// How long files without an owner must have been left alone before they are removed.
pub const ABANDONED_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// Random characters in a token (tempfile's default, so older pt-snap's names match too).
const TOKEN_LEN: usize = 6;

/// At most this many entries are looked at to date a directory; a bigger one is kept.
const DATE_WALK_LIMIT: usize = 10_000;

/// Which files an import of the target writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Artifacts {
    /// `.<target>.<T>.tmp` (a single-DB import).
    Db,
    /// `.<target>.stage-<T>/` and `.<target>.recovery-<T>/` (a dataset import).
    Dataset,
}

/// This import's claim on its files: the lock file `.<target>.<T>.lock`, locked while the
/// value lives. Dropping it removes the lock file, so declare it before the files it covers
/// (locals are dropped in reverse order).
pub struct Owner {
    lock: PathBuf,
    token: String,
    keep: bool,
    /// Holds the `flock`; `None` where locks are not available.
    _file: Option<File>,
}

impl Owner {
    /// Creates and locks `.<target_name>.<T>.lock` in `dir`, for a fresh token T.
    pub fn acquire(dir: &Path, target_name: &str) -> io::Result<Owner> {
        let prefix = format!(".{target_name}.");
        let (mut file, lock) = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".lock")
            .rand_bytes(TOKEN_LEN)
            .tempfile_in(dir)?
            .keep()
            .map_err(|e| e.error)?;
        let token = lock
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|n| n.strip_suffix(".lock"))
            .expect("named by the builder")
            .to_owned();
        let mut owner = Owner {
            lock,
            token,
            keep: false,
            _file: None,
        };
        // No lock (the file system refuses it): the file stays empty and only reserves the
        // token; its files are then treated as ownerless.
        if let Ok(true) = try_lock(&file) {
            // Dropping `owner` on this error removes the lock file.
            writeln!(file, "{}", std::process::id())?;
            owner._file = Some(file);
        }
        Ok(owner)
    }

    /// T, to name this import's files with.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Leaves the lock file in place when this owner ends: its recovery directory was kept,
    /// and the next import of the target should find it owned by a dead process and restore it.
    pub fn keep_lock_file(&mut self) {
        self.keep = true;
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        // Still locked here: the lock is given up when `_file` is closed, after this.
        if !self.keep {
            let _ = fs::remove_file(&self.lock);
        }
    }
}

/// An exclusive lock without waiting (`flock(LOCK_EX | LOCK_NB)` on Unix): whether it was
/// taken; an error where locks do not work.
fn try_lock(file: &File) -> io::Result<bool> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(fs::TryLockError::WouldBlock) => Ok(false),
        Err(fs::TryLockError::Error(e)) => Err(e),
    }
}

/// One kind of file an import leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Lock,
    /// The temp DB or one of its SQLite sidecars.
    Db,
    Stage,
    Recovery,
}

/// The token and the kind of `rest`, a name with `.<target>.` stripped, if it is one of ours.
fn parse(rest: &str, artifacts: Artifacts) -> Option<(&str, Part)> {
    let (token, part) = if let Some(t) = rest.strip_suffix(".lock") {
        (t, Part::Lock)
    } else if artifacts == Artifacts::Db {
        let t = ["tmp", "tmp-journal", "tmp-wal", "tmp-shm"]
            .iter()
            .find_map(|s| rest.strip_suffix(s)?.strip_suffix('.'))?;
        (t, Part::Db)
    } else if let Some(t) = rest.strip_prefix("stage-") {
        (t, Part::Stage)
    } else {
        (rest.strip_prefix("recovery-")?, Part::Recovery)
    };
    let is_token = token.len() == TOKEN_LEN && token.bytes().all(|b| b.is_ascii_alphanumeric());
    is_token.then_some((token, part))
}

/// Whose files a token's are.
enum Status {
    /// The lock is held: a running import.
    Alive,
    /// We hold the lock of an owner that ended without cleaning up (kept until we are done).
    Gone(#[allow(dead_code)] File),
    /// No lock file, or an empty one: judged by age.
    Ownerless,
    /// Cannot tell (not ours to open, locks failing, the owner just finished): left alone.
    Unknown,
}

fn judge(lock: &Path) -> Status {
    let mut options = OpenOptions::new();
    // Read-write: on NFS an exclusive flock is a write lock, which needs it.
    options.read(true).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NOFOLLOW | libc::O_NONBLOCK,
    );
    let Ok(mut file) = options.open(lock) else {
        return Status::Unknown;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Status::Unknown;
    }
    let mut pid = Vec::new();
    if (&mut file).take(64).read_to_end(&mut pid).is_err() {
        return Status::Unknown;
    }
    if pid.is_empty() {
        // Being created right now, or by an owner that could not lock it.
        return Status::Ownerless;
    }
    match try_lock(&file) {
        Ok(true) if same_file(&file, lock) => Status::Gone(file),
        Ok(true) | Err(_) => Status::Unknown,
        Ok(false) => Status::Alive,
    }
}

/// Whether `path` still names the file open as `file` (the owner may have just removed it).
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (file.metadata(), fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &File, path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok()
}

/// Removes what interrupted imports of `target` left beside it (see the module's doc);
/// returns what the user should be told, as warnings.
pub fn clean(target: &Path, artifacts: Artifacts) -> Vec<String> {
    let mut notes = Vec::new();
    let (Some(dir), Some(name)) = (target.parent(), target.file_name().and_then(|n| n.to_str()))
    else {
        return notes;
    };
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return notes,
        Err(e) => {
            notes.push(format!(
                "cannot look for files left by interrupted imports in {}: {e}",
                dir.display()
            ));
            return notes;
        }
    };
    let prefix = format!(".{name}.");
    let mut groups: BTreeMap<String, Vec<(Part, PathBuf)>> = BTreeMap::new();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(rest) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        if let Some((token, part)) = parse(rest, artifacts) {
            groups
                .entry(token.to_owned())
                .or_default()
                .push((part, entry.path()));
        }
    }
    for parts in groups.values() {
        clean_group(target, parts, &mut notes);
    }
    notes
}

fn clean_group(target: &Path, parts: &[(Part, PathBuf)], notes: &mut Vec<String>) {
    let lock = parts.iter().find(|(p, _)| *p == Part::Lock).map(|(_, l)| l);
    // Held (for a dead owner) until the lock file is removed, last.
    let _status = match lock.map_or(Status::Ownerless, |l| judge(l)) {
        Status::Alive | Status::Unknown => return,
        Status::Ownerless if !abandoned(parts) => return,
        status => status,
    };
    let mut resolved = true;
    for (part, path) in parts {
        let Ok(meta) = fs::symlink_metadata(path) else {
            continue;
        };
        let removed = match part {
            Part::Lock => continue,
            Part::Db if meta.is_file() => fs::remove_file(path),
            Part::Stage if meta.is_dir() => fs::remove_dir_all(path),
            Part::Recovery if meta.is_dir() => {
                resolved &= recover(path, target, notes);
                continue;
            }
            // A symlink or something else that only looks like ours.
            _ => continue,
        };
        if let Err(e) = removed {
            resolved = false;
            notes.push(format!(
                "cannot remove {}, left by an interrupted import: {e}",
                path.display()
            ));
        }
    }
    if let Some(lock) = lock.filter(|_| resolved) {
        if let Err(e) = fs::remove_file(lock) {
            if e.kind() != io::ErrorKind::NotFound {
                notes.push(format!(
                    "cannot remove {}, left by an interrupted import: {e}",
                    lock.display()
                ));
            }
        }
    }
}

/// A dead or abandoned import's recovery directory: the previous dataset goes back to
/// `target` if that is missing; it is kept while a dataset is in place (it may be the only copy
/// of what the user had), unless its owner marked it `discard`. Whether nothing is kept.
fn recover(recovery: &Path, target: &Path, notes: &mut Vec<String>) -> bool {
    let previous = recovery.join("previous");
    let remove = |notes: &mut Vec<String>| match fs::remove_dir_all(recovery) {
        Ok(()) => true,
        Err(e) => {
            notes.push(format!(
                "cannot remove {}, left by an interrupted import: {e}",
                recovery.display()
            ));
            false
        }
    };
    match fs::symlink_metadata(&previous) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return remove(notes),
        Err(e) => {
            notes.push(format!("cannot read {}: {e}", previous.display()));
            return false;
        }
        Ok(meta) if meta.is_dir() && fs::symlink_metadata(target).is_err() => {
            // Never over a target an import of it may be publishing meanwhile.
            match publish::rename(&previous, target, Existing::Refuse) {
                Ok(()) => {
                    notes.push(format!(
                        "restored {} from {}, where an interrupted --force import had moved it",
                        target.display(),
                        recovery.display()
                    ));
                    return remove(notes);
                }
                Err(e) => notes.push(format!(
                    "cannot restore {} from {}: {e}; the previous dataset is still there",
                    target.display(),
                    previous.display()
                )),
            }
        }
        Ok(_) => notes.push(format!(
            "kept {}: it holds the dataset an interrupted --force import was replacing with {}; \
             delete it once you no longer need the old dataset",
            recovery.display(),
            target.display()
        )),
    }
    false
}

/// Whether nothing in a group's files has changed for [`ABANDONED_AFTER`].
fn abandoned(parts: &[(Part, PathBuf)]) -> bool {
    let Some(limit) = SystemTime::now().checked_sub(ABANDONED_AFTER) else {
        return false;
    };
    let mut budget = DATE_WALK_LIMIT;
    parts
        .iter()
        .all(|(_, path)| newest(path, &mut budget).is_some_and(|t| t < limit))
}

/// The latest modification time of `path` and, for a directory, of everything under it (no
/// symlink followed); `None` when unknown.
fn newest(path: &Path, budget: &mut usize) -> Option<SystemTime> {
    *budget = budget.checked_sub(1)?;
    let meta = fs::symlink_metadata(path).ok()?;
    let mut latest = meta.modified().ok()?;
    if meta.is_dir() {
        for entry in fs::read_dir(path).ok()? {
            latest = latest.max(newest(&entry.ok()?.path(), budget)?);
        }
    }
    Some(latest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_names_are_ours() {
        let db = |n| parse(n, Artifacts::Db);
        let ds = |n| parse(n, Artifacts::Dataset);
        assert_eq!(db("aB3xY9.tmp"), Some(("aB3xY9", Part::Db)));
        assert_eq!(db("aB3xY9.tmp-journal"), Some(("aB3xY9", Part::Db)));
        assert_eq!(db("aB3xY9.lock"), Some(("aB3xY9", Part::Lock)));
        assert_eq!(ds("aB3xY9.lock"), Some(("aB3xY9", Part::Lock)));
        assert_eq!(ds("stage-aB3xY9"), Some(("aB3xY9", Part::Stage)));
        assert_eq!(ds("recovery-aB3xY9"), Some(("aB3xY9", Part::Recovery)));
        for n in [
            "aB3xY9.tmpx",
            "aB3xY.tmp",
            "aB3xY90.tmp",
            "aB-xY9.tmp",
            "x.aB3xY9.tmp",
            "stage-aB3xY9",
            "aB3xY9.tmp.lock",
        ] {
            assert_eq!(db(n), None, "{n}");
        }
        for n in [
            "aB3xY9.tmp",
            "stage-aB3xY9/",
            "stage-aB3xY",
            "recovery-",
            "stage",
        ] {
            assert_eq!(ds(n), None, "{n}");
        }
    }

    #[test]
    fn an_owner_is_alive_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let owner = Owner::acquire(dir.path(), "x.pkl.db").unwrap();
        let lock = dir.path().join(format!(".x.pkl.db.{}.lock", owner.token()));
        assert_eq!(
            fs::read_to_string(&lock).unwrap(),
            format!("{}\n", std::process::id())
        );
        assert!(matches!(judge(&lock), Status::Alive));
        drop(owner);
        assert!(!lock.exists());
    }
}
