//! The files of a skill folder and the digest that decides a copy's status.
//!
//! The digest is the reference's: SHA-256 over, for every file in order, its relative path
//! (`/`-separated, UTF-8), a NUL byte, then its bytes. Files are ordered by their path
//! components (Python sorts `Path` objects by parts, so `a/b` comes before `a-c` although the
//! strings sort the other way). `.DS_Store` files and anything under `__pycache__` are left
//! out. Symlinked files are followed; symlinked folders are not entered.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::SkillError;

/// A file's path below its skill folder, one string per component.
pub(crate) type Relative = Vec<String>;

/// Files the digest ignores (and that are therefore neither embedded nor copied).
pub(crate) fn ignored(relative: &[String]) -> bool {
    relative.last().is_some_and(|name| name == ".DS_Store")
        || relative.iter().any(|c| c == "__pycache__")
}

/// The files of `dir` in digest order, as (relative components, path on disk).
pub(crate) fn files(dir: &Path) -> Result<Vec<(Relative, PathBuf)>, SkillError> {
    let mut out = Vec::new();
    walk(dir, &mut Vec::new(), &mut out).map_err(|e| {
        SkillError::Catalog(format!(
            "Failed to read skill directory '{}': {e}",
            dir.display()
        ))
    })?;
    out.retain(|(relative, _)| !ignored(relative));
    out.sort();
    Ok(out)
}

fn walk(dir: &Path, prefix: &mut Relative, out: &mut Vec<(Relative, PathBuf)>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        prefix.push(entry.file_name().to_string_lossy().into_owned());
        if entry.file_type()?.is_dir() {
            walk(&path, prefix, out)?;
        } else if path.is_file() {
            out.push((prefix.clone(), path));
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

/// Reads a file of a skill, with the reference's message on failure.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, SkillError> {
    fs::read(path).map_err(|e| {
        SkillError::Catalog(format!(
            "Failed to read skill file '{}': {e}",
            path.display()
        ))
    })
}

/// The digest of the skill folder at `dir`.
pub(crate) fn dir_digest(dir: &Path) -> Result<String, SkillError> {
    let mut digester = Digester::new();
    for (relative, path) in files(dir)? {
        digester.file(&relative, &read(&path)?);
    }
    Ok(digester.finish())
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
    }
}
