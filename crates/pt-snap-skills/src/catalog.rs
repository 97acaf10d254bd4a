//! The skill catalog: embedded at compile time, or a folder named by `PT_SNAP_SKILLS_DIR`.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::paths;
use crate::tree::{self, Digester, Relative};
use crate::{frontmatter, SkillError};

/// Environment variable naming a catalog folder that replaces the embedded skills.
pub const SKILLS_DIR_ENV: &str = "PT_SNAP_SKILLS_DIR";

// `EMBEDDED: &[(&str, &[u8])]`: every file below the repository's `skills/`, by
// `/`-separated path, written by build.rs.
include!(concat!(env!("OUT_DIR"), "/embedded.rs"));

/// The skills available for installation, sorted by folder name.
#[derive(Debug, Clone)]
pub struct Catalog {
    skills: Vec<Skill>,
}

/// One skill: its metadata, its files and their digest.
#[derive(Debug, Clone)]
pub struct Skill {
    name: String,
    description: String,
    source_dir: Option<PathBuf>,
    files: Vec<SkillFile>,
    digest: String,
}

#[derive(Debug, Clone)]
struct SkillFile {
    relative: Relative,
    content: Content,
}

#[derive(Debug, Clone)]
enum Content {
    Embedded(&'static [u8]),
    Disk(PathBuf),
}

impl Skill {
    /// The `name` of the front matter, else the folder name; also the installed folder name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The `description` of the front matter, trimmed (empty when absent).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The skill's folder for a catalog on disk; `None` when embedded in the binary.
    pub fn source_dir(&self) -> Option<&Path> {
        self.source_dir.as_deref()
    }

    /// Hex SHA-256 over the skill's files, comparable with an installed copy's.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The skill's files, `/`-separated and relative to its folder, in digest order.
    pub fn file_paths(&self) -> Vec<String> {
        self.files.iter().map(|f| f.relative.join("/")).collect()
    }

    /// The skill's files, relative to its folder, in digest order.
    pub(crate) fn relatives(&self) -> impl Iterator<Item = &Relative> {
        self.files.iter().map(|f| &f.relative)
    }

    /// Writes the skill's files into `dir` (which must exist). Files of a catalog on disk are
    /// copied with their permissions.
    pub(crate) fn write_into(&self, dir: &Path) -> io::Result<()> {
        for file in &self.files {
            let dest = tree::under(dir, &file.relative);
            if let Some(parent) = dest.parent() {
                fs::create_dir_all(parent)?;
            }
            match &file.content {
                Content::Embedded(bytes) => fs::write(&dest, bytes)?,
                Content::Disk(source) => {
                    fs::copy(source, &dest)?;
                }
            }
        }
        Ok(())
    }

    /// Builds a skill from its folder name, its `SKILL.md` text and its files (digest order).
    fn new(
        folder: &str,
        skill_md: &[u8],
        skill_md_label: &str,
        source_dir: Option<PathBuf>,
        files: Vec<SkillFile>,
    ) -> Result<Skill, SkillError> {
        let text = std::str::from_utf8(skill_md).map_err(|e| {
            SkillError::Catalog(format!("Failed to read skill file '{skill_md_label}': {e}"))
        })?;
        let front = frontmatter::parse(text).map_err(|e| {
            SkillError::Catalog(format!(
                "Invalid SKILL.md frontmatter in '{skill_md_label}': {e}"
            ))
        })?;
        let name = front
            .name
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| folder.to_owned());
        if !valid_name(&name) {
            return Err(SkillError::Catalog(format!(
                "Skill name {} from '{skill_md_label}' is not a valid skill directory name.",
                pt_snap_contract::python::repr_str(&name)
            )));
        }
        let mut digester = Digester::new();
        for file in &files {
            match &file.content {
                Content::Embedded(bytes) => digester.file(&file.relative, bytes),
                Content::Disk(path) => digester.file(&file.relative, &tree::read(path)?),
            }
        }
        Ok(Skill {
            name,
            description: front.description.unwrap_or_default().trim().to_owned(),
            source_dir,
            files,
            digest: digester.finish(),
        })
    }
}

impl Catalog {
    /// The skills compiled into this binary.
    pub fn embedded() -> Result<Catalog, SkillError> {
        let mut folders: BTreeMap<&str, Vec<SkillFile>> = BTreeMap::new();
        for (path, bytes) in EMBEDDED {
            let mut parts = path.split('/');
            let folder = parts.next().expect("split yields one item");
            let relative: Relative = parts.map(str::to_owned).collect();
            // Top-level files are not skills; hidden folders are skipped like on disk.
            if relative.is_empty() || folder.starts_with('.') || tree::ignored(&relative) {
                continue;
            }
            folders.entry(folder).or_default().push(SkillFile {
                relative,
                content: Content::Embedded(bytes),
            });
        }
        let mut skills = Vec::new();
        for (folder, mut files) in folders {
            let Some(skill_md) = files
                .iter()
                .find_map(|f| match (&f.relative[..], &f.content) {
                    ([only], Content::Embedded(bytes)) if only == "SKILL.md" => Some(*bytes),
                    _ => None,
                })
            else {
                continue;
            };
            files.sort_by(|a, b| a.relative.cmp(&b.relative));
            let label = format!("<embedded>/{folder}/SKILL.md");
            skills.push(Skill::new(folder, skill_md, &label, None, files)?);
        }
        if skills.is_empty() {
            return Err(SkillError::Catalog(
                "Bundled agent skills are not available in this installation.".into(),
            ));
        }
        Catalog::checked(skills)
    }

    /// A catalog folder: every non-hidden sub-folder holding a `SKILL.md` is a skill.
    pub fn from_dir(dir: &Path) -> Result<Catalog, SkillError> {
        if !dir.is_dir() {
            return Err(SkillError::Catalog(format!(
                "Skill catalog directory does not exist: {}",
                dir.display()
            )));
        }
        let read_error = |e: io::Error| {
            SkillError::Catalog(format!(
                "Failed to read skill catalog '{}': {e}",
                dir.display()
            ))
        };
        let mut children: Vec<_> = fs::read_dir(dir)
            .map_err(read_error)?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .map_err(read_error)?;
        children.sort();
        let mut skills = Vec::new();
        for folder in children {
            let child = dir.join(&folder);
            let folder = folder.to_string_lossy();
            let skill_md = child.join("SKILL.md");
            if folder.starts_with('.') || !child.is_dir() || !skill_md.is_file() {
                continue;
            }
            let files = tree::files(&child)?
                .into_iter()
                .map(|(relative, path)| SkillFile {
                    relative,
                    content: Content::Disk(path),
                })
                .collect();
            let text = tree::read(&skill_md)?;
            let label = skill_md.display().to_string();
            skills.push(Skill::new(&folder, &text, &label, Some(child), files)?);
        }
        if skills.is_empty() {
            return Err(SkillError::Catalog(format!(
                "No SKILL.md directories found in '{}'",
                dir.display()
            )));
        }
        Catalog::checked(skills)
    }

    /// The catalog in force: the folder named by `PT_SNAP_SKILLS_DIR` (`value`, `~`
    /// expanded with `home`) when set and non-empty, else the embedded one.
    pub fn from_override(
        value: Option<&OsStr>,
        home: Option<&Path>,
    ) -> Result<Catalog, SkillError> {
        let Some(value) = value.filter(|v| !v.is_empty()) else {
            return Catalog::embedded();
        };
        let dir = paths::expand_user(Path::new(value), home);
        if !looks_like_catalog(&dir) {
            return Err(SkillError::Catalog(format!(
                "{SKILLS_DIR_ENV} is not a skill catalog: {}",
                dir.display()
            )));
        }
        Catalog::from_dir(&dir)
    }

    /// Two folders declaring the same `name` would install into one folder.
    fn checked(skills: Vec<Skill>) -> Result<Catalog, SkillError> {
        for (i, skill) in skills.iter().enumerate() {
            if skills[..i].iter().any(|s| s.name == skill.name) {
                return Err(SkillError::Catalog(format!(
                    "Two skills in the catalog are named '{}'.",
                    skill.name
                )));
            }
        }
        Ok(Catalog { skills })
    }

    /// All skills, sorted by folder name.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The skills named, in the order given (repeats kept); all of them when `names` is empty.
    /// Unknown names are one error listing them all.
    pub fn resolve(&self, names: &[String]) -> Result<Vec<&Skill>, SkillError> {
        if names.is_empty() {
            return Ok(self.skills.iter().collect());
        }
        let unknown: Vec<&str> = names
            .iter()
            .filter(|n| self.get(n).is_none())
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            let available: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
            let available = if available.is_empty() {
                "(none)".to_owned()
            } else {
                available.join(", ")
            };
            return Err(SkillError::NotFound(format!(
                "Unknown skill(s): {}. Available: {available}",
                unknown.join(", ")
            )));
        }
        Ok(names.iter().filter_map(|n| self.get(n)).collect())
    }
}

/// A folder with at least one sub-folder holding a `SKILL.md`.
fn looks_like_catalog(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.path().is_dir() && e.path().join("SKILL.md").is_file())
    })
}

/// The reference's `^[A-Za-z0-9][A-Za-z0-9._-]*$`: safe as a single folder name.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalog_has_the_eight_skills() {
        let catalog = Catalog::embedded().unwrap();
        let names: Vec<&str> = catalog.skills().iter().map(Skill::name).collect();
        assert_eq!(
            names,
            [
                "pt-snap-ascend-npu-collect",
                "pt-snap-compare-runs",
                "pt-snap-helper",
                "pt-snap-memory-fragmentation",
                "pt-snap-memory-gate",
                "pt-snap-memory-leak",
                "pt-snap-memory-peak-breakdown",
                "pt-snap-setup",
            ]
        );
        for skill in catalog.skills() {
            assert!(!skill.description().is_empty(), "{}", skill.name());
            assert!(skill.source_dir().is_none());
            assert!(skill.file_paths().contains(&"SKILL.md".to_owned()));
        }
    }

    #[test]
    fn embedded_digest_equals_the_repository_folders() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../skills");
        let on_disk = Catalog::from_dir(&repo).unwrap();
        let embedded = Catalog::embedded().unwrap();
        for (a, b) in embedded.skills().iter().zip(on_disk.skills()) {
            assert_eq!(a.name(), b.name());
            assert_eq!(a.digest(), b.digest());
            assert_eq!(
                a.digest(),
                tree::dir_digest(b.source_dir().unwrap()).unwrap()
            );
        }
    }

    #[test]
    fn names() {
        assert!(valid_name("pt-snap-helper"));
        assert!(valid_name("a.b_c"));
        assert!(!valid_name("-x"));
        assert!(!valid_name("a/b"));
        assert!(!valid_name(""));
    }
}
