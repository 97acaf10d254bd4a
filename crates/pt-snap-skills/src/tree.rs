//! The files of a skill folder and the digest that decides a copy's status.
//!
//! The digest is the reference's: SHA-256 over, for every file in order, its relative path
//! (`/`-separated, UTF-8), a NUL byte, then its bytes. Files are ordered by their path
//! components (Python sorts `Path` objects by parts, so `a/b` comes before `a-c` although the
//! strings sort the other way). `.DS_Store` files and anything under `__pycache__` are left
//! out, and so is pt-snap's install manifest at the top of an installed copy
//! ([`crate::manifest::MANIFEST`]). Symlinked files are followed; symlinked folders are not
//! entered.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::SkillError;

/// A file's path below its skill folder, one string per component.
pub(crate) type Relative = Vec<String>;

/// The path of `relative` below `dir`.
pub(crate) fn under(dir: &Path, relative: &[String]) -> PathBuf {
    relative.iter().fold(dir.to_path_buf(), |p, c| p.join(c))
}

/// Files the digest ignores (and that are therefore neither embedded nor copied).
pub(crate) fn ignored(relative: &[String]) -> bool {
    relative.last().is_some_and(|name| name == ".DS_Store")
        || relative.iter().any(|c| c == "__pycache__")
        || matches!(relative, [only] if only == crate::manifest::MANIFEST)
}

/// What a walk of a skill folder found, [`ignored`] files left out.
pub(crate) struct Scan {
    /// The files, in digest order, as (relative components, path on disk).
    pub(crate) files: Vec<(Relative, PathBuf)>,
    /// Entries that are neither files nor folders the walk enters: symlinked folders, dangling
    /// symlinks, sockets…; sorted. The digest does not see them.
    pub(crate) others: Vec<(Relative, PathBuf)>,
}

/// Walks the skill folder `dir`.
pub(crate) fn scan(dir: &Path) -> Result<Scan, SkillError> {
    let mut scan = Scan {
        files: Vec::new(),
        others: Vec::new(),
    };
    walk(dir, &mut Vec::new(), &mut scan).map_err(|e| {
        SkillError::Catalog(format!(
            "Failed to read skill directory '{}': {e}",
            dir.display()
        ))
    })?;
    for list in [&mut scan.files, &mut scan.others] {
        list.retain(|(relative, _)| !ignored(relative));
        list.sort();
    }
    Ok(scan)
}

/// The files of `dir` in digest order, as (relative components, path on disk).
pub(crate) fn files(dir: &Path) -> Result<Vec<(Relative, PathBuf)>, SkillError> {
    Ok(scan(dir)?.files)
}

fn walk(dir: &Path, prefix: &mut Relative, out: &mut Scan) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        prefix.push(entry.file_name().to_string_lossy().into_owned());
        if entry.file_type()?.is_dir() {
            walk(&path, prefix, out)?;
        } else if path.is_file() {
            out.files.push((prefix.clone(), path));
        } else {
            out.others.push((prefix.clone(), path));
        }
        prefix.pop();
    }
    Ok(())
}

/// Incremental digest; feed files in [`files`] order.
pub(crate) struct Digester(Sha256);

impl Digester {
    pub(crate) fn new() -> Self {
        Digester(Sha256::new())
    }

    pub(crate) fn file(&mut self, relative: &[String], bytes: &[u8]) {
        self.0.update(relative.join("/").as_bytes());
        self.0.update([0u8]);
        self.0.update(bytes);
    }

    pub(crate) fn finish(self) -> String {
        self.0
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// The digest of one file: the digest of a skill made of that file alone. Install manifests
/// record it for every file they list.
pub(crate) fn file_digest(relative: &[String], bytes: &[u8]) -> String {
    let mut digester = Digester::new();
    digester.file(relative, bytes);
    digester.finish()
}

/// The digest of the skill folder at `dir`.
#[cfg(test)]
pub(crate) fn dir_digest(dir: &Path) -> Result<String, SkillError> {
    let mut digester = Digester::new();
    for (relative, path) in files(dir)? {
        digester.file(&relative, &read(&path)?);
    }
    Ok(digester.finish())
}

/// Reads a file of a skill, with the reference's message on failure.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, SkillError> {
    fs::read(path).map_err(|e| {
        SkillError::Catalog(format!(
            "Failed to read skill file '{}': {e}",
            path.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(s: &str) -> Relative {
        s.split('/').map(str::to_owned).collect()
    }

    #[test]
    fn order_is_by_components_not_by_string() {
        let mut v = vec![rel("a-c"), rel("a/b"), rel("SKILL.md"), rel("B")];
        v.sort();
        assert_eq!(v, vec![rel("B"), rel("SKILL.md"), rel("a/b"), rel("a-c")]);
    }

    #[test]
    fn digest_matches_the_reference_algorithm() {
        // hashlib.sha256(b"SKILL.md\0hi\nref/x.md\0x").hexdigest()
        let mut d = Digester::new();
        d.file(&rel("SKILL.md"), b"hi\n");
        d.file(&rel("ref/x.md"), b"x");
        let mut h = Sha256::new();
        h.update(b"SKILL.md\0hi\nref/x.md\0x");
        let expected: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(d.finish(), expected);
    }

    #[test]
    fn ignored_files() {
        assert!(ignored(&rel(".DS_Store")));
        assert!(ignored(&rel("x/__pycache__/a.pyc")));
        assert!(!ignored(&rel(".hidden")));
        assert!(ignored(&rel(".pt-snap-skill.json")));
        assert!(!ignored(&rel("ref/.pt-snap-skill.json")));
    }

    #[test]
    fn scan_reports_entries_the_digest_cannot_see() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        fs::create_dir_all(dir.join("ref")).unwrap();
        fs::write(dir.join("SKILL.md"), "s").unwrap();
        fs::write(dir.join("ref/x.md"), "x").unwrap();
        fs::write(dir.join(".pt-snap-skill.json"), "{}").unwrap();
        fs::write(dir.join(".DS_Store"), "").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.join("nowhere"), dir.join("dangling")).unwrap();
        let scan = scan(dir).unwrap();
        let files: Vec<Relative> = scan.files.into_iter().map(|(r, _)| r).collect();
        assert_eq!(files, [rel("SKILL.md"), rel("ref/x.md")]);
        #[cfg(unix)]
        assert_eq!(scan.others.len(), 1);
    }

    #[test]
    fn a_file_digest_is_the_digest_of_a_one_file_skill() {
        let mut h = Sha256::new();
        h.update(b"ref/x.md\0x");
        let expected: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(file_digest(&rel("ref/x.md"), b"x"), expected);
    }
}
