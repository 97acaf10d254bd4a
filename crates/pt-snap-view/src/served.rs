//! What `pt-snap view` serves besides the app: one file, or the files below one directory,
//! each listed when the server starts and only ever opened again by its place in that list.
//! A request names a file by number, never by path, so no path a client sends reaches the
//! file system; and a file is served only while it is still the one listed (same device and
//! inode), so replacing it by a link or another file after the start does not widen what is
//! served.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde_json::{json, Value};

/// What was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One snapshot, database or Parquet part: it opens as a dropped file does.
    File,
    /// A directory: its files open as a dropped folder's do (the ranks of a job, or an
    /// exported `summary` table).
    Directory,
    /// Nothing: the app alone.
    Nothing,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Directory => "directory",
            Kind::Nothing => "nothing",
        }
    }
}

/// One servable file.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The name the page sees: a file's own name; below a directory, its path from the
    /// directory's name down (`run7/rank0.pkl`, `run7/summary/job=a/rank=0/part-0.parquet`),
    /// as a dropped folder's files are named.
    pub path: String,
    /// Its length when listed.
    pub size: u64,
    /// Its modification time when listed, in ms since the epoch.
    pub modified_ms: Option<u64>,
    /// Where it is opened: the canonical path of the file (a link's target).
    real: PathBuf,
    identity: Identity,
}

/// What tells the listed file from another put at its path later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    #[cfg(unix)]
    device: u64,
    #[cfg(unix)]
    inode: u64,
}

impl Identity {
    fn of(metadata: &fs::Metadata) -> Identity {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Identity {
                device: metadata.dev(),
                inode: metadata.ino(),
            }
        }
        #[cfg(not(unix))]
        {
            let _ = metadata;
            Identity {}
        }
    }
}

/// The file or directory a server was given, listed.
#[derive(Debug, Clone)]
pub struct Served {
    pub kind: Kind,
    /// The name it was given by, for the page's title and the terminal.
    pub name: String,
    pub entries: Vec<Entry>,
    /// Below a directory: what was not listed and why (a link leading out of it, a link to a
    /// directory, something unreadable), for the terminal to say.
    pub left_out: Vec<String>,
}

/// At most this many files below a directory: `pt-snap view ~` should fail fast, not list a
/// home directory for the page.
pub const MAX_FILES: usize = 100_000;

impl Served {
    /// Nothing but the app.
    pub fn nothing() -> Served {
        Served {
            kind: Kind::Nothing,
            name: String::new(),
            entries: Vec::new(),
            left_out: Vec::new(),
        }
    }

    /// The one file at `path` (a link is followed: its target is what is served).
    pub fn file(path: &Path) -> io::Result<Served> {
        let real = path.canonicalize()?;
        let file = File::open(&real)?;
        let metadata = file.metadata()?;
        if !metadata.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a file", path.display()),
            ));
        }
        let name = file_name(path);
        Ok(Served {
            kind: Kind::File,
            name: name.clone(),
            entries: vec![Entry::new(name, real, &metadata)],
            left_out: Vec::new(),
        })
    }

    /// The regular files below the directory at `path`, at any depth. A link is listed only
    /// when it leads to a file inside the directory; links to directories are not entered.
    pub fn directory(path: &Path) -> io::Result<Served> {
        let root = path.canonicalize()?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a directory", path.display()),
            ));
        }
        let name = file_name(&root);
        let mut entries = Vec::new();
        let mut left_out = Vec::new();
        let mut pending = vec![(root.clone(), name.clone())];
        while let Some((dir, shown)) = pending.pop() {
            // The directory given must be readable; one below it that is not is left out.
            let listing = match fs::read_dir(&dir) {
                Ok(listing) => listing,
                Err(e) if dir == root => return Err(e),
                Err(e) => {
                    left_out.push(format!("{shown}/ ({e})"));
                    continue;
                }
            };
            for item in listing {
                let item = item?;
                let shown = format!("{shown}/{}", item.file_name().to_string_lossy());
                let file_type = item.file_type()?;
                if file_type.is_dir() {
                    pending.push((item.path(), shown));
                } else if file_type.is_file() {
                    let real = item.path();
                    match File::open(&real).and_then(|f| f.metadata()) {
                        Ok(metadata) => entries.push(Entry::new(shown, real, &metadata)),
                        Err(e) => left_out.push(format!("{shown} ({e})")),
                    }
                } else if file_type.is_symlink() {
                    match fs::canonicalize(item.path()) {
                        Ok(target) if !target.starts_with(&root) => {
                            left_out.push(format!("{shown} (a link out of the directory)"))
                        }
                        Ok(target) if target.is_dir() => {
                            left_out.push(format!("{shown} (a link to a directory)"))
                        }
                        Ok(target) => match File::open(&target).and_then(|f| f.metadata()) {
                            Ok(metadata) if metadata.is_file() => {
                                entries.push(Entry::new(shown, target, &metadata))
                            }
                            Ok(_) => left_out.push(format!("{shown} (not a regular file)")),
                            Err(e) => left_out.push(format!("{shown} ({e})")),
                        },
                        Err(e) => left_out.push(format!("{shown} ({e})")),
                    }
                }
                if entries.len() > MAX_FILES {
                    return Err(io::Error::other(format!(
                        "{} has more than {MAX_FILES} files below it",
                        path.display()
                    )));
                }
            }
        }
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        left_out.sort();
        Ok(Served {
            kind: Kind::Directory,
            name,
            entries,
            left_out,
        })
    }

    /// Entry `index` opened for reading, with its length now; an error when it is gone or no
    /// longer the file that was listed.
    pub fn open(&self, index: usize) -> io::Result<(File, u64)> {
        let entry = self
            .entries
            .get(index)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))?;
        let file = File::open(&entry.real)?;
        let metadata = file.metadata()?;
        if !metadata.is_file() || Identity::of(&metadata) != entry.identity {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{} was replaced since pt-snap view started; start it again",
                    entry.path
                ),
            ));
        }
        Ok((file, metadata.len()))
    }

    /// The listing the page asks for first: what was given, and each file's name, size, time
    /// and URL (relative to the page; the page adds its token). Size and time are the
    /// file's now: the page reads exactly the size listed, and a snapshot dumped again to
    /// the same path (the same file, rewritten) is read whole on the page's next load.
    pub fn manifest(&self) -> Value {
        let files: Vec<Value> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let (size, modified_ms) = fs::metadata(&e.real)
                    .ok()
                    .filter(|m| m.is_file() && Identity::of(m) == e.identity)
                    .map_or((e.size, e.modified_ms), |m| size_and_time(&m));
                json!({
                    "path": e.path,
                    "size": size,
                    "modified_ms": modified_ms,
                    "url": format!("files/{i}"),
                })
            })
            .collect();
        json!({
            "kind": self.kind.name(),
            "name": self.name,
            "files": files,
            "left_out": self.left_out,
        })
    }

    /// The bytes of every file.
    pub fn total_bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.size).sum()
    }
}

impl Entry {
    fn new(path: String, real: PathBuf, metadata: &fs::Metadata) -> Entry {
        let (size, modified_ms) = size_and_time(metadata);
        Entry {
            path,
            size,
            modified_ms,
            real,
            identity: Identity::of(metadata),
        }
    }
}

/// A file's length, and its modification time in ms since the epoch.
fn size_and_time(metadata: &fs::Metadata) -> (u64, Option<u64>) {
    let modified_ms = (metadata.modified().ok())
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as u64);
    (metadata.len(), modified_ms)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}
