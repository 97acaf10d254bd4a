//! The files of a job, as `ranks`, `export` and `check` take them, and what each one is.
//!
//! A directory contributes its snapshots and databases by name
//! ([`pt_snap_model::names::taken_from_directory`]), not recursively; every path is made
//! absolute without following its last link ([`crate::snapshot::absolute`]: a link's
//! database goes beside the link); the same file reached twice counts once (the path that is
//! not a link is kept); a database is dropped when it is the import of a snapshot of the set
//! (`<snapshot>.db`, written beside it by an earlier run); and the set is in natural order of
//! the paths.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use pt_snap_contract::{ErrorCode, Failure};
use pt_snap_import::failure;
use pt_snap_model::decode::{Detected, HEAD_LEN};
use pt_snap_model::names;
use pt_snap_report::ranks::natural_cmp;
pub use pt_snap_report::ranks::InputKind;

use crate::snapshot;

/// One file of the set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// Absolute; a link stays the link.
    pub path: PathBuf,
    pub kind: InputKind,
    /// Its length, the file's share of a progress bar (0 for databases, which are only read).
    pub bytes: u64,
}

impl Input {
    /// The file's name, as ranks are read from it.
    pub fn file_name(&self) -> &str {
        self.path.file_name().and_then(|n| n.to_str()).unwrap_or("")
    }

    /// The file's SHA-256 in hex, which names what was read; a file gone or unreadable is
    /// `DATABASE_NOT_FOUND` or `SNAPSHOT_INVALID` by its kind.
    pub fn sha256(&self) -> Result<String, Failure> {
        fs::File::open(&self.path)
            .and_then(pt_snap_import::sha256_hex)
            .map_err(|e| match self.kind {
                InputKind::Database => Failure::new(
                    ErrorCode::DatabaseNotFound,
                    format!("Database not found: {} ({e})", self.path.display()),
                ),
                InputKind::Snapshot => failure::snapshot_invalid(format!(
                    "Snapshot not found or unreadable: {} ({e})",
                    self.path.display()
                )),
            })
    }
}

/// What the file at `path` is: a database when it starts with SQLite's header, a snapshot
/// when its content says so or it is named `.pkl`/`.pickle`; otherwise `.db` names a
/// database, and anything else is what the command `expects` (its own error then says what
/// is wrong with it).
pub fn kind_of(path: &Path, expects: InputKind) -> InputKind {
    let mut head = Vec::with_capacity(HEAD_LEN.max(pt_snap_db::SQLITE_HEADER.len()));
    let read =
        fs::File::open(path).and_then(|f| f.take(head.capacity() as u64).read_to_end(&mut head));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let suffix = name.rfind('.').map_or("", |i| &name[i..]);
    if read.is_ok() && pt_snap_db::is_sqlite_header(&head) {
        InputKind::Database
    } else if (read.is_ok() && Detected::of(&head).is_certain()) || names::is_pickle_suffix(suffix)
    {
        InputKind::Snapshot
    } else if suffix.eq_ignore_ascii_case(names::DATABASE_SUFFIX) {
        InputKind::Database
    } else {
        expects
    }
}

/// The files of the set given as `paths` (files or directories), in natural order.
pub fn list(paths: &[PathBuf]) -> Result<Vec<Input>, Failure> {
    let mut listed = Vec::new();
    for path in paths {
        if path.is_dir() {
            let cannot = |e: std::io::Error| {
                failure::snapshot_invalid(format!("Cannot list {}: {e}", path.display()))
            };
            for entry in fs::read_dir(path).map_err(cannot)? {
                let entry = entry.map_err(cannot)?;
                let name = entry.file_name();
                if names::taken_from_directory(&name.to_string_lossy()) && entry.path().is_file() {
                    listed.push(entry.path());
                }
            }
        } else {
            listed.push(path.clone());
        }
    }
    let mut inputs = Vec::with_capacity(listed.len());
    for path in listed {
        let path = snapshot::absolute(&path).map_err(failure::backend)?;
        let kind = kind_of(&path, InputKind::Snapshot);
        let bytes = match kind {
            InputKind::Snapshot => fs::metadata(&path).map_or(0, |m| m.len()),
            InputKind::Database => 0,
        };
        inputs.push(Input { path, kind, bytes });
    }
    let in_order = |inputs: &mut Vec<Input>| {
        inputs.sort_by(|a, b| natural_cmp(&a.path.to_string_lossy(), &b.path.to_string_lossy()))
    };
    in_order(&mut inputs);
    let mut inputs = once_per_file(inputs);
    in_order(&mut inputs);
    let imports: HashSet<PathBuf> = inputs
        .iter()
        .filter(|i| i.kind == InputKind::Snapshot)
        .filter_map(|i| snapshot::database_beside(&i.path).ok())
        .collect();
    inputs.retain(|i| i.kind == InputKind::Snapshot || !imports.contains(&i.path));
    if inputs.is_empty() {
        let given: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(failure::snapshot_invalid(format!(
            "No snapshots or databases found in: {} (a directory contributes its *.pkl, \
             *.pickle and *.db files, compressed pickles included)",
            given.join(", ")
        )));
    }
    Ok(inputs)
}

/// The inputs with every file kept once: of its paths, the first that is not a link, else
/// the first.
fn once_per_file(inputs: Vec<Input>) -> Vec<Input> {
    let mut kept: Vec<Input> = Vec::with_capacity(inputs.len());
    let mut by_file: HashMap<FileId, usize> = HashMap::new();
    for input in inputs {
        match by_file.entry(FileId::of(&input.path)) {
            std::collections::hash_map::Entry::Occupied(at) => {
                let old = &mut kept[*at.get()];
                if old.path.is_symlink() && !input.path.is_symlink() {
                    *old = input;
                }
            }
            std::collections::hash_map::Entry::Vacant(at) => {
                at.insert(kept.len());
                kept.push(input);
            }
        }
    }
    kept
}

/// What tells two paths to one file apart from two files: the device and inode where the
/// file exists, else the path.
#[derive(Debug, PartialEq, Eq, Hash)]
enum FileId {
    #[cfg(unix)]
    Inode(u64, u64),
    Path(PathBuf),
}

impl FileId {
    fn of(path: &Path) -> FileId {
        #[cfg(unix)]
        if let Ok(m) = fs::metadata(path) {
            use std::os::unix::fs::MetadataExt as _;
            return FileId::Inode(m.dev(), m.ino());
        }
        FileId::Path(fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()))
    }
}

#[cfg(test)]
mod tests {
    use pt_snap_contract::ErrorCode;

    use super::*;

    fn touch(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
        let p = dir.join(name);
        fs::write(&p, content).unwrap();
        p
    }

    fn names_of(inputs: &[Input]) -> Vec<(&str, InputKind)> {
        inputs.iter().map(|i| (i.file_name(), i.kind)).collect()
    }

    /// Directories give their snapshots and databases in natural order, not their other
    /// files, not hidden ones; a database that is a listed snapshot's import is dropped;
    /// a path given twice counts once.
    #[test]
    fn inputs_are_listed_deduplicated_and_ordered() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        let sqlite = &pt_snap_db::SQLITE_HEADER[..];
        touch(&d, "rank10.pickle", b"\x80\x04");
        touch(&d, "rank2.pkl", b"\x80\x04");
        touch(&d, "rank2.pkl.db", sqlite);
        touch(&d, "rank3.db", sqlite);
        touch(&d, "rank4.pickle.gz", b"\x1f\x8b");
        touch(&d, "notes.txt", b"x");
        touch(&d, "rank5.json", b"{}");
        touch(&d, ".rank6.pickle", b"\x80\x04");
        fs::create_dir(d.join("sub.pkl")).unwrap();
        let explicit = touch(&d, "other.json", b"{}");
        let inputs = list(&[d.clone(), d.join("rank3.db"), explicit]).unwrap();
        assert_eq!(
            names_of(&inputs),
            [
                ("other.json", InputKind::Snapshot),
                ("rank2.pkl", InputKind::Snapshot),
                ("rank3.db", InputKind::Database),
                ("rank4.pickle.gz", InputKind::Snapshot),
                ("rank10.pickle", InputKind::Snapshot),
            ]
        );
        assert_eq!(inputs[1].bytes, 2);
        assert_eq!(inputs[2].bytes, 0);

        let empty = tempfile::tempdir().unwrap();
        let e = list(&[empty.path().to_path_buf()]).unwrap_err();
        assert_eq!(e.code, ErrorCode::SnapshotInvalid);
        assert!(e
            .message
            .starts_with("No snapshots or databases found in: "));
    }

    /// A link in the directory is read, and keeps its own name and directory (its database
    /// goes beside it); a file reached through a link and directly counts once, as itself.
    #[cfg(unix)]
    #[test]
    fn links_keep_their_place_and_count_once() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        let outside = touch(elsewhere.path(), "x.pkl", b"\x80\x04");
        std::os::unix::fs::symlink(&outside, d.join("rank1.pkl")).unwrap();
        let inside = touch(&d, "rank0.pkl", b"\x80\x04");
        std::os::unix::fs::symlink(&inside, d.join("latest.pkl")).unwrap();
        let inputs = list(std::slice::from_ref(&d)).unwrap();
        assert_eq!(
            names_of(&inputs),
            [
                ("rank0.pkl", InputKind::Snapshot),
                ("rank1.pkl", InputKind::Snapshot)
            ]
        );
        assert_eq!(inputs[1].path, d.join("rank1.pkl"));
        assert_eq!(
            snapshot::database_beside(&inputs[1].path).unwrap(),
            d.join("rank1.pkl.db")
        );
    }

    #[test]
    fn a_file_is_told_by_its_content_then_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let db = touch(d, "x.bin", pt_snap_db::SQLITE_HEADER);
        let pickle = touch(d, "y.bin", b"\x80\x04N.");
        let text = touch(d, "z.txt", b"hello");
        let named = touch(d, "w.db", b"not sqlite");
        assert_eq!(kind_of(&db, InputKind::Snapshot), InputKind::Database);
        assert_eq!(kind_of(&pickle, InputKind::Database), InputKind::Snapshot);
        assert_eq!(kind_of(&text, InputKind::Database), InputKind::Database);
        assert_eq!(kind_of(&text, InputKind::Snapshot), InputKind::Snapshot);
        assert_eq!(kind_of(&named, InputKind::Snapshot), InputKind::Database);
        assert_eq!(
            kind_of(&d.join("gone.db"), InputKind::Snapshot),
            InputKind::Database
        );
        assert_eq!(
            kind_of(&d.join("gone.pkl"), InputKind::Database),
            InputKind::Snapshot
        );
    }
}
