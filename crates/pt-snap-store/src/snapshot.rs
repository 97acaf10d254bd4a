//! A snapshot path as a command is given it: checked to be one, named, and where its
//! database goes.
//!
//! Links are followed to read a file, never to decide where to write: a path's directory is
//! made canonical, its last component is kept as given. So `ranks DIR` with `DIR/r3.pkl` a
//! link to `/elsewhere/x.pkl` reads `/elsewhere/x.pkl` and writes `DIR/r3.pkl.db`, named after
//! the link; nothing is ever written beside a link's target.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use pt_snap_contract::Failure;
use pt_snap_import::failure;
use pt_snap_model::decode::{describe_start, Detected, HEAD_LEN};
use pt_snap_model::{names, Snapshot};

/// `path` made absolute: its directory canonical, its last component as given (a link stays
/// the link). A path that does not exist is made absolute lexically.
pub fn absolute(path: &Path) -> io::Result<PathBuf> {
    let abs = std::path::absolute(path)?;
    let parent_and_name = abs
        .file_name()
        .map(|name| (abs.parent().unwrap_or(Path::new("/")), name));
    Ok(match parent_and_name {
        Some((parent, name)) => match parent.canonicalize() {
            Ok(dir) => dir.join(name),
            Err(_) => normalize(&abs),
        },
        None => abs.canonicalize().unwrap_or_else(|_| normalize(&abs)),
    })
}

/// `path` with its `.` and `..` components resolved by name, not by the file system: for a
/// path that does not exist (yet).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The snapshot at `path`: an existing regular file (a link to one is one) that is a snapshot
/// by its content (a pickle with PROTO 2-5, JSON, or gzip/zstd/bzip2), or else one named
/// `.pkl`/`.pickle` (the reference's rule, kept for protocol 0/1 pickles, which have no magic
/// bytes); its [`absolute`] path.
pub fn check(path: &Path) -> Result<PathBuf, Failure> {
    if !path.exists() {
        return Err(failure::snapshot_invalid(format!(
            "Snapshot file does not exist: {}",
            path.display()
        )));
    }
    if !path.is_file() {
        return Err(failure::snapshot_invalid(format!(
            "Snapshot path is not a file: {}",
            path.display()
        )));
    }
    let mut head = Vec::with_capacity(HEAD_LEN);
    File::open(path)
        .and_then(|f| f.take(HEAD_LEN as u64).read_to_end(&mut head))
        .map_err(failure::backend)?;
    let suffix = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    if !Detected::of(&head).is_certain() && !names::is_pickle_suffix(&suffix) {
        let mut refused = failure::bad_suffix(&suffix);
        refused.message = format!(
            "{} (and the content is no snapshot either: {})",
            refused.message,
            describe_start(&head)
        );
        return Err(refused);
    }
    absolute(path).map_err(failure::backend)
}

/// The snapshot's file name, as given: what its database is named after and its metadata
/// records.
pub fn name(source: &Path) -> Result<String, Failure> {
    source
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .ok_or_else(|| failure::snapshot_invalid("Snapshot file name is not valid UTF-8"))
}

/// The snapshot at `path` decoded (any shape `import` reads), its progress to `observer`.
pub fn decode(path: &Path, observer: &mut dyn crate::Observer) -> Result<Snapshot, Failure> {
    let file = File::open(path).map_err(failure::backend)?;
    observer.begin(file.metadata().map_or(0, |m| m.len()));
    let snapshot =
        pt_snap_model::decode(std::io::BufReader::with_capacity(1 << 20, file), &mut |p| {
            observer.decoding(p)
        })
        .map_err(failure::decode);
    observer.finish();
    snapshot
}

/// Where a snapshot's database goes by default: `<its directory>/<its name>.db`.
pub fn database_beside(source: &Path) -> Result<PathBuf, Failure> {
    let name = name(source)?;
    Ok(source.with_file_name(format!("{name}{}", names::DATABASE_SUFFIX)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_link_keeps_its_own_name_and_directory() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let target = elsewhere.path().join("x.pkl");
        std::fs::write(&target, b"\x80\x04N.").unwrap();
        let link = dir.path().join("r3.pkl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let checked = check(&link).unwrap();
        assert_eq!(checked, dir.path().canonicalize().unwrap().join("r3.pkl"));
        assert_eq!(
            database_beside(&checked).unwrap(),
            dir.path().canonicalize().unwrap().join("r3.pkl.db")
        );
    }

    #[test]
    fn a_file_of_no_known_kind_is_refused_by_suffix_and_content() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("notes.txt");
        std::fs::write(&p, b"hello").unwrap();
        let e = check(&p).unwrap_err();
        assert_eq!(e.code, pt_snap_contract::ErrorCode::SnapshotInvalid);
        assert!(e.message.starts_with("Snapshot suffix must be .pkl or .pickle, got '.txt' (and the content is no snapshot either"), "{}", e.message);
        let missing = check(&dir.path().join("gone.pkl")).unwrap_err();
        assert!(missing.message.starts_with("Snapshot file does not exist"));
    }
}
