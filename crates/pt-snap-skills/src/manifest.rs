//! pt-snap's install manifest: the hidden file [`MANIFEST`] at the top of every copy pt-snap
//! installs, listing the files it wrote there with their digests ([`tree::file_digest`]).
//! It is written into the staging folder, so it is published by the same rename as the files
//! it lists.
//!
//! With it, uninstall and upgrade tell pt-snap's files from the user's: a listed file whose
//! digest still matches is pt-snap's ("pristine"); a listed file with other bytes was modified
//! by the user; anything not listed was added by the user. A folder without a readable
//! manifest (written by hand, by the reference, or by an older pt-snap) is nobody's to delete.
//! The digest never covers the manifest itself (see [`tree::ignored`]).

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::catalog::Skill;
use crate::tree::{self, Digester, Relative};
use crate::SkillError;

/// The manifest's file name, at the top of an installed skill folder.
pub(crate) const MANIFEST: &str = ".pt-snap-skill.json";

/// The value of the manifest's `format` key; any other value makes the manifest unreadable.
const FORMAT: &str = "pt-snap-skill-install-v1";

/// A larger manifest is not ours.
const MAX_BYTES: u64 = 1 << 20;

/// The manifest's JSON.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    format: String,
    /// The skill's name (informative).
    name: String,
    /// The pt-snap version that installed it (informative).
    pt_snap_version: String,
    /// The skill digest of the listed files as written (informative).
    digest: String,
    /// Every file the install wrote, in digest order.
    files: Vec<Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    /// `/`-separated, relative to the skill folder.
    path: String,
    /// [`tree::file_digest`] of the file as written.
    digest: String,
}

/// Who wrote a skill folder, as far as its manifest tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Owner {
    /// A real folder (not a symlink) with a valid manifest: the files pt-snap wrote, with
    /// their digests.
    PtSnap(BTreeMap<Relative, String>),
    /// No manifest, or the folder is a symlink: written by hand or by an older tool.
    Unknown,
    /// A manifest that cannot be used, and why.
    Unreadable(String),
}

/// Writes the manifest of `skill` into `dir`, where its files have just been written: the
/// digests are those of the bytes on disk, so the manifest describes exactly what was written.
pub(crate) fn write(skill: &Skill, dir: &Path) -> io::Result<()> {
    let mut digester = Digester::new();
    let mut files = Vec::new();
    for relative in skill.relatives() {
        let bytes = fs::read(tree::under(dir, relative))?;
        digester.file(relative, &bytes);
        files.push(Entry {
            path: relative.join("/"),
            digest: tree::file_digest(relative, &bytes),
        });
    }
    let manifest = Manifest {
        format: FORMAT.to_owned(),
        name: skill.name().to_owned(),
        pt_snap_version: env!("CARGO_PKG_VERSION").to_owned(),
        digest: digester.finish(),
        files,
    };
    let mut json = serde_json::to_vec_pretty(&manifest).map_err(io::Error::other)?;
    json.push(b'\n');
    fs::write(dir.join(MANIFEST), json)
}

/// Reads the manifest of the skill folder `dest`.
pub(crate) fn owner(dest: &Path) -> Owner {
    if !dest.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        return Owner::Unknown;
    }
    let path = dest.join(MANIFEST);
    let meta = match path.symlink_metadata() {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Owner::Unknown,
        Err(e) => return Owner::Unreadable(e.to_string()),
    };
    if !meta.is_file() {
        return Owner::Unreadable("not a regular file".into());
    }
    if meta.len() > MAX_BYTES {
        return Owner::Unreadable("too large".into());
    }
    match fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|bytes| parse(&bytes))
    {
        Ok(files) => Owner::PtSnap(files),
        Err(reason) => Owner::Unreadable(reason),
    }
}

fn parse(bytes: &[u8]) -> Result<BTreeMap<Relative, String>, String> {
    let manifest: Manifest = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if manifest.format != FORMAT {
        return Err(format!("unknown format {:?}", manifest.format));
    }
    let mut files = BTreeMap::new();
    for entry in manifest.files {
        let relative: Relative = entry.path.split('/').map(str::to_owned).collect();
        // The paths are deleted by uninstall: each must stay inside the folder.
        let inside = relative.iter().all(|c| {
            let mut components = Path::new(c).components();
            matches!(
                (components.next(), components.next()),
                (Some(Component::Normal(n)), None) if n == c.as_str()
            )
        });
        if !inside || tree::ignored(&relative) {
            return Err(format!("bad file path {:?}", entry.path));
        }
        if files.insert(relative, entry.digest).is_some() {
            return Err(format!("file {:?} listed twice", entry.path));
        }
    }
    Ok(files)
}

/// A skill folder's contents measured against its manifest.
#[derive(Debug)]
pub(crate) struct Copy {
    pub(crate) owner: Owner,
    /// Listed files whose digest still matches: pt-snap's to delete or replace.
    pub(crate) pristine: Vec<(Relative, PathBuf)>,
    /// Listed files whose bytes changed since install.
    pub(crate) modified: Vec<Relative>,
    /// Everything else the walk found (files, symlinks, special entries) — every entry when
    /// there is no usable manifest.
    pub(crate) added: Vec<(Relative, PathBuf)>,
    /// The digest deciding the copy's status: over the listed files present, or over every
    /// file without a usable manifest (the reference's rule).
    pub(crate) digest: String,
}

/// Examines the skill folder `dest`, whose [`owner`] is `owner`.
pub(crate) fn inspect(dest: &Path, owner: Owner) -> Result<Copy, SkillError> {
    let scan = tree::scan(dest)?;
    let mut digester = Digester::new();
    let mut pristine = Vec::new();
    let mut modified = Vec::new();
    let mut added = Vec::new();
    for (relative, path) in scan.files {
        let expected = match &owner {
            Owner::PtSnap(listed) => match listed.get(&relative) {
                Some(digest) => Some(digest),
                None => {
                    added.push((relative, path));
                    continue;
                }
            },
            Owner::Unknown | Owner::Unreadable(_) => None,
        };
        let bytes = tree::read(&path)?;
        digester.file(&relative, &bytes);
        match expected {
            Some(digest) if *digest == tree::file_digest(&relative, &bytes) => {
                pristine.push((relative, path))
            }
            Some(_) => modified.push(relative),
            None => added.push((relative, path)),
        }
    }
    added.extend(scan.others);
    added.sort();
    Ok(Copy {
        owner,
        pristine,
        modified,
        added,
        digest: digester.finish(),
    })
}

impl Copy {
    /// pt-snap installed this folder (it has a usable manifest).
    pub(crate) fn managed(&self) -> bool {
        matches!(self.owner, Owner::PtSnap(_))
    }

    /// The user's files in a managed copy: modified and added ones, by path, each with
    /// `"modified"` or `"added"`. Uninstall leaves them; upgrade keeps them.
    pub(crate) fn local_changes(&self) -> Vec<(String, &'static str)> {
        if !self.managed() {
            return Vec::new();
        }
        let mut out: Vec<(String, &'static str)> = self
            .modified
            .iter()
            .map(|r| (r.join("/"), "modified"))
            .chain(self.added.iter().map(|(r, _)| (r.join("/"), "added")))
            .collect();
        out.sort();
        out
    }

    /// The user's files that replacing this copy with `skill` would destroy: every modified
    /// file, and added files where `skill` has a file.
    pub(crate) fn conflicts(&self, skill: &Skill) -> Vec<(String, &'static str)> {
        self.local_changes()
            .into_iter()
            .filter(|(path, kind)| {
                *kind == "modified" || skill.relatives().any(|r| r.join("/") == *path)
            })
            .collect()
    }

    /// The added files that a new copy of `skill` takes over (those `skill` does not replace);
    /// none when the folder is not managed, since its files cannot be told apart.
    pub(crate) fn carried(&self, skill: &Skill) -> Vec<(Relative, PathBuf)> {
        if !self.managed() {
            return Vec::new();
        }
        self.added
            .iter()
            .filter(|(relative, _)| !skill.relatives().any(|r| r == relative))
            .cloned()
            .collect()
    }

    /// Every entry is a regular file (no symlinks or special entries that a copy would turn
    /// into something else).
    pub(crate) fn plain(&self) -> bool {
        self.pristine
            .iter()
            .chain(&self.added)
            .all(|(_, path)| path.symlink_metadata().is_ok_and(|m| m.is_file()))
    }
}

/// `a (modified), b (added)`.
pub(crate) fn describe(changes: &[(String, &'static str)]) -> String {
    changes
        .iter()
        .map(|(path, kind)| format!("{path} ({kind})"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(files: &str) -> Vec<u8> {
        format!(
            r#"{{"format":"{FORMAT}","name":"x","pt_snap_version":"0","digest":"d","files":{files}}}"#
        )
        .into_bytes()
    }

    #[test]
    fn paths_must_stay_inside_the_folder() {
        let ok = parse(&manifest(
            r#"[{"path":"SKILL.md","digest":"a"},{"path":"r/x","digest":"b"}]"#,
        ))
        .unwrap();
        assert_eq!(ok.len(), 2);
        for bad in ["../x", "/etc/passwd", "a//b", "./a", "r/..", "", MANIFEST] {
            let json = manifest(&format!(r#"[{{"path":{bad:?},"digest":"a"}}]"#));
            assert!(parse(&json).is_err(), "{bad}");
        }
        let twice = manifest(r#"[{"path":"a","digest":"1"},{"path":"a","digest":"2"}]"#);
        assert!(parse(&twice).unwrap_err().contains("twice"));
        let other = br#"{"format":"v0","name":"x","pt_snap_version":"0","digest":"d","files":[]}"#;
        assert!(parse(other).unwrap_err().contains("unknown format"));
        assert!(parse(b"not json").is_err());
    }

    #[test]
    fn owner_of_folders() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s");
        assert_eq!(owner(&dir), Owner::Unknown);
        fs::create_dir(&dir).unwrap();
        assert_eq!(owner(&dir), Owner::Unknown);
        fs::write(dir.join(MANIFEST), "{").unwrap();
        assert!(matches!(owner(&dir), Owner::Unreadable(_)));
        fs::write(
            dir.join(MANIFEST),
            manifest(r#"[{"path":"SKILL.md","digest":"a"}]"#),
        )
        .unwrap();
        assert!(matches!(owner(&dir), Owner::PtSnap(f) if f.len() == 1));
        #[cfg(unix)]
        {
            let link = tmp.path().join("link");
            std::os::unix::fs::symlink(&dir, &link).unwrap();
            assert_eq!(
                owner(&link),
                Owner::Unknown,
                "a symlinked folder is never ours"
            );
        }
    }
}
