//! The agent skills that ship with pt-snap, and their installation into the skill folders of
//! coding agents — the `pt-snap skill list|install|upgrade|uninstall` contract of
//! pt-snap-cli 0.4.1 (spec §12).
//!
//! * The [`Catalog`] is the repository's `skills/` folder, embedded at compile time, or the
//!   folder named by `PT_SNAP_SKILLS_DIR` at run time. A skill is a folder holding a
//!   `SKILL.md` whose YAML front matter gives its `name` and `description`.
//! * A copy's [`Status`] compares SHA-256 digests over the sorted relative paths and bytes of
//!   the files, computed exactly like the reference so both tools agree on the same files.
//! * [`Skills`] resolves where skills go ([`Host`] × [`Scope`], or a custom folder) and
//!   lists, installs, upgrades and uninstalls them. A copy is published by writing a staging
//!   folder beside it and renaming it into place, so a skill folder is always either the old
//!   copy or the complete new one.
//! * Every copy pt-snap installs carries a hidden install manifest (`.pt-snap-skill.json`,
//!   published by the same rename) listing the files it wrote and their digests. Uninstall
//!   deletes only those files, and only while unchanged; upgrade keeps files the user added
//!   and leaves copies the user changed, or that have no manifest, as they are. Whatever is
//!   left is named in the report's warnings.
//!
//! The serialised forms of [`SkillListing`] and [`Report`] are the reference's JSON, keys in
//! its order, plus keys the reference does not have, written only when they have something
//! to say (`managed` and `local_changes` of a [`Location`], `warnings` of a [`Report`]).

#![forbid(unsafe_code)]

mod catalog;
mod frontmatter;
mod manifest;
mod paths;
mod service;
pub mod text;
mod tree;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};

pub use catalog::{Catalog, Skill, SKILLS_DIR_ENV};
pub use service::{Environment, ListTarget, Skills, Target};

/// Printed (and returned as `restart_hint`) whenever an operation changed skill files.
pub const RESTART_HINT: &str =
    "Restart the agent after install, upgrade, or uninstall so the skill change takes effect.";

/// A coding agent whose skill folder we know; `Custom` is a folder given with `--dir`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Host {
    Agents,
    Claude,
    Cursor,
    Codex,
    Custom,
}

impl Host {
    /// The built-in hosts in the reference's order (listings and `--target` validation).
    pub const BUILTIN: [Host; 4] = [Host::Agents, Host::Claude, Host::Cursor, Host::Codex];
    /// Where `install`/`upgrade`/`uninstall` go without `--target`.
    pub const DEFAULT_INSTALL: [Host; 2] = [Host::Agents, Host::Claude];

    pub fn as_str(self) -> &'static str {
        match self {
            Host::Agents => "agents",
            Host::Claude => "claude",
            Host::Cursor => "cursor",
            Host::Codex => "codex",
            Host::Custom => "custom",
        }
    }

    /// One built-in host name, trimmed and case-insensitive (`custom` is not accepted: a custom
    /// folder is chosen with `--dir`).
    pub fn parse(name: &str) -> Result<Host, SkillError> {
        let normalized = name.trim().to_lowercase();
        Host::BUILTIN
            .into_iter()
            .find(|h| h.as_str() == normalized)
            .ok_or_else(|| {
                SkillError::InvalidTarget(format!(
                    "Unknown skill target '{name}'. Choose from: agents, claude, cursor, codex"
                ))
            })
    }

    /// The items of a `--target` value: comma-separated, blanks dropped. An empty list is an
    /// error; the names are not validated (see [`Host::parse`]).
    pub fn split_targets(csv: &str) -> Result<Vec<&str>, SkillError> {
        let items: Vec<&str> = csv
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if items.is_empty() {
            return Err(SkillError::InvalidTarget(
                "Skill target list must not be empty.".into(),
            ));
        }
        Ok(items)
    }

    /// `--target` parsed in full: [`Host::split_targets`] then [`Host::parse`] on each item.
    pub fn parse_targets(csv: &str) -> Result<Vec<Host>, SkillError> {
        Host::split_targets(csv)?
            .into_iter()
            .map(Host::parse)
            .collect()
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// User-level (`~/.<host>/skills`) or project-level (`<cwd>/.<host>/skills`) folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    User,
    Project,
}

impl Scope {
    /// Both scopes in the reference's listing order.
    pub const ALL: [Scope; 2] = [Scope::User, Scope::Project];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a copy at one location compares with the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Same files, same bytes (for a copy pt-snap installed: the files it installed; files the
    /// user added do not count).
    Installed,
    /// Something is there but differs, or is not a skill (no `SKILL.md`).
    Outdated,
    /// Nothing is there.
    Missing,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Installed => "installed",
            Status::Outdated => "outdated",
            Status::Missing => "missing",
        }
    }
}

/// What an install, upgrade or uninstall did at one location.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Installed,
    Updated,
    AlreadyInstalled,
    NotInstalled,
    Uninstalled,
    /// Left as it was: not installed by pt-snap, or changed by the user (see the warnings).
    Kept,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Installed => "installed",
            Action::Updated => "updated",
            Action::AlreadyInstalled => "already_installed",
            Action::NotInstalled => "not_installed",
            Action::Uninstalled => "uninstalled",
            Action::Kept => "kept",
        }
    }

    /// Did the files change, so that a running agent must restart to see it?
    pub fn changed_files(self) -> bool {
        matches!(
            self,
            Action::Installed | Action::Updated | Action::Uninstalled
        )
    }
}

/// One place a skill can live, and what is there. JSON: `{host, scope, path, status}`, then
/// `managed` when something is there, then `local_changes` when there are any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    pub host: Host,
    pub scope: Scope,
    #[serde(serialize_with = "path_string")]
    pub path: PathBuf,
    pub status: Status,
    /// `None` when nothing is there; else whether pt-snap installed it (it has pt-snap's
    /// install manifest), which decides what uninstall and upgrade may change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed: Option<bool>,
    /// In a managed copy, the files the user modified or added (`/`-separated, sorted):
    /// uninstall leaves them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub local_changes: Vec<String>,
}

/// A catalog skill with its state at the inspected locations.
/// JSON: `{name, description, source_dir, status, locations}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillListing {
    pub name: String,
    pub description: String,
    /// The skill's folder when the catalog is a folder on disk, `None` for the embedded one.
    #[serde(serialize_with = "optional_path_string")]
    pub source_dir: Option<PathBuf>,
    /// `installed` if any location is, else `outdated` if any is, else `missing`.
    pub status: Status,
    pub locations: Vec<Location>,
}

/// What happened to one skill at one location. JSON: `{name, host, scope, path, action}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MutationResult {
    pub name: String,
    pub host: Host,
    pub scope: Scope,
    #[serde(serialize_with = "path_string")]
    pub path: PathBuf,
    pub action: Action,
}

/// The outcome of an install, upgrade or uninstall.
/// JSON: `{results, restart_required, restart_hint}` (the hint is `null` when nothing changed),
/// then `warnings` when there are any.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    pub results: Vec<MutationResult>,
    /// What the user should know: files or folders left in place, and why. One sentence each,
    /// without a `warning:` prefix.
    pub warnings: Vec<String>,
}

impl Report {
    pub fn restart_required(&self) -> bool {
        self.results.iter().any(|r| r.action.changed_files())
    }

    pub fn restart_hint(&self) -> Option<&'static str> {
        self.restart_required().then_some(RESTART_HINT)
    }
}

impl Serialize for Report {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            results: &'a [MutationResult],
            restart_required: bool,
            restart_hint: Option<&'static str>,
            #[serde(skip_serializing_if = "<[String]>::is_empty")]
            warnings: &'a [String],
        }
        Json {
            results: &self.results,
            restart_required: self.restart_required(),
            restart_hint: self.restart_hint(),
            warnings: &self.warnings,
        }
        .serialize(serializer)
    }
}

/// Every failure of this crate; all are the CLI's `SKILL_ERROR`. The message is the
/// reference's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    /// The catalog cannot be read or is not a catalog.
    #[error("{0}")]
    Catalog(String),
    /// A requested skill name is not in the catalog.
    #[error("{0}")]
    NotFound(String),
    /// A bad `--target` or `--dir`.
    #[error("{0}")]
    InvalidTarget(String),
    /// An install, upgrade or uninstall refused or failed; nothing was left half-written.
    #[error("{0}")]
    Install(String),
}

fn path_string<S: Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&path.to_string_lossy())
}

fn optional_path_string<S: Serializer>(
    path: &Option<PathBuf>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match path {
        Some(p) => path_string(p, serializer),
        None => serializer.serialize_none(),
    }
}
