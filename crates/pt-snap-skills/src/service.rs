//! Where skills go, and listing, installing, upgrading and uninstalling them there.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use pt_snap_contract::publish::{self, Existing};

use crate::catalog::{Catalog, Skill, SKILLS_DIR_ENV};
use crate::manifest::{self, Copy, MANIFEST};
use crate::paths::{self, occupied};
use crate::tree::{self, Relative};
use crate::{
    Action, Host, Location, MutationResult, Report, Scope, SkillError, SkillListing, Status,
};

/// The process state that decides where skills go, captured once; tests build their own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    /// `$HOME`, needed only for user-level folders that no override replaces.
    pub home: Option<PathBuf>,
    /// The current directory; project-level folders are below it.
    pub cwd: PathBuf,
    /// `$CLAUDE_CONFIG_DIR`: user-level Claude skills go to `<it>/skills`.
    pub claude_config_dir: Option<OsString>,
    /// `$CODEX_HOME`: user-level Codex skills go to `<it>/skills`.
    pub codex_home: Option<OsString>,
}

impl Environment {
    /// Reads `HOME`, the current directory, `CLAUDE_CONFIG_DIR` and `CODEX_HOME`.
    pub fn from_process() -> Result<Environment, SkillError> {
        let cwd = std::env::current_dir().map_err(|e| {
            SkillError::InvalidTarget(format!("Cannot read the current directory: {e}"))
        })?;
        Ok(Environment {
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            cwd,
            claude_config_dir: std::env::var_os("CLAUDE_CONFIG_DIR"),
            codex_home: std::env::var_os("CODEX_HOME"),
        })
    }
}

/// Which locations `list` inspects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListTarget {
    /// Built-in folders; `None` means all four hosts / both scopes (scopes outer, hosts inner).
    Builtin {
        hosts: Option<Vec<Host>>,
        scopes: Option<Vec<Scope>>,
    },
    /// One custom skills folder (`--dir`); reported as host `custom`, scope `user`.
    Dir(PathBuf),
}

/// Where `install`, `upgrade` and `uninstall` act.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Built-in folders of one scope; `None` hosts means `agents,claude`.
    Builtin {
        hosts: Option<Vec<Host>>,
        scope: Scope,
    },
    /// One custom skills folder (`--dir`); reported as host `custom`, scope `user`.
    Dir(PathBuf),
}

impl Default for Target {
    fn default() -> Self {
        Target::Builtin {
            hosts: None,
            scope: Scope::User,
        }
    }
}

/// The catalog and the environment it is installed into.
#[derive(Debug, Clone)]
pub struct Skills {
    catalog: Catalog,
    env: Environment,
}

/// One skill at one destination.
struct Job<'a> {
    skill: &'a Skill,
    host: Host,
    scope: Scope,
    dest: PathBuf,
}

impl Job<'_> {
    fn result(&self, action: Action) -> MutationResult {
        MutationResult {
            name: self.skill.name().to_owned(),
            host: self.host,
            scope: self.scope,
            path: self.dest.clone(),
            action,
        }
    }
}

impl Skills {
    pub fn new(catalog: Catalog, env: Environment) -> Skills {
        Skills { catalog, env }
    }

    /// The catalog in force (`PT_SNAP_SKILLS_DIR` or the embedded one) and the process
    /// environment.
    pub fn from_process() -> Result<Skills, SkillError> {
        let env = Environment::from_process()?;
        let catalog = Catalog::from_override(
            std::env::var_os(SKILLS_DIR_ENV).as_deref(),
            env.home.as_deref(),
        )?;
        Ok(Skills::new(catalog, env))
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn environment(&self) -> &Environment {
        &self.env
    }

    /// The skills folder of a built-in host in a scope: `<cwd>/.<host>/skills` for project
    /// scope; for user scope `$CLAUDE_CONFIG_DIR/skills` / `$CODEX_HOME/skills` when set and
    /// not blank, else `~/.<host>/skills`.
    pub fn skills_root(&self, host: Host, scope: Scope) -> Result<PathBuf, SkillError> {
        if host == Host::Custom {
            return Err(SkillError::InvalidTarget(
                "Custom destinations require an explicit skill directory.".into(),
            ));
        }
        let folder = format!(".{host}");
        if scope == Scope::Project {
            return Ok(paths::normalize(&self.env.cwd).join(folder).join("skills"));
        }
        let home = self.env.home.as_deref();
        let override_dir = match host {
            Host::Claude => self.env.claude_config_dir.as_ref(),
            Host::Codex => self.env.codex_home.as_ref(),
            _ => None,
        };
        if let Some(dir) = override_dir.filter(|d| !d.to_string_lossy().trim().is_empty()) {
            return Ok(paths::expand_user(Path::new(dir), home).join("skills"));
        }
        let home = home.ok_or_else(|| {
            SkillError::InvalidTarget(
                "Cannot find the user's skill folders: HOME is not set.".into(),
            )
        })?;
        Ok(paths::normalize(home).join(folder).join("skills"))
    }

    /// How the copy at `dest` (a skill's own folder) compares with `skill`.
    pub fn status(&self, skill: &Skill, dest: &Path) -> Result<Status, SkillError> {
        Ok(examine(skill, dest)?.status)
    }

    /// Every catalog skill with its status at the inspected locations.
    /// What `skill list` lists with default options (every built-in host, both scopes):
    /// the `skills` of `capabilities`.
    pub fn default_listing() -> Result<Vec<SkillListing>, SkillError> {
        Skills::from_process()?.list(&ListTarget::Builtin {
            hosts: None,
            scopes: None,
        })
    }

    pub fn list(&self, target: &ListTarget) -> Result<Vec<SkillListing>, SkillError> {
        let mut listings = Vec::new();
        for skill in self.catalog.skills() {
            let mut locations = Vec::new();
            match target {
                ListTarget::Dir(dir) => {
                    let path = custom_dir(dir, self.env.home.as_deref())?;
                    let path = paths::normalize(&path.join(skill.name()));
                    locations.push(location(skill, Host::Custom, Scope::User, path)?);
                }
                ListTarget::Builtin { hosts, scopes } => {
                    for &scope in scopes.as_deref().unwrap_or(&Scope::ALL) {
                        for &host in hosts.as_deref().unwrap_or(&Host::BUILTIN) {
                            let path = self.skills_root(host, scope)?.join(skill.name());
                            locations.push(location(skill, host, scope, path)?);
                        }
                    }
                }
            }
            let status = summary_status(&locations);
            listings.push(SkillListing {
                name: skill.name().to_owned(),
                description: skill.description().to_owned(),
                source_dir: skill.source_dir().map(Path::to_path_buf),
                status,
                locations,
            });
        }
        Ok(listings)
    }

    /// Installs the named skills (all when `names` is empty). A copy that differs is replaced
    /// only with `force`; without it the whole operation is refused before anything is
    /// written. Replacing a copy pt-snap installed keeps the files the user added to it (unless
    /// the new copy has a file of that name); `force` replaces everything else. A copy
    /// already identical but without pt-snap's manifest (an older install) is adopted: written
    /// again with one, so that uninstall can remove it later.
    pub fn install(
        &self,
        names: &[String],
        target: &Target,
        force: bool,
    ) -> Result<Report, SkillError> {
        let jobs = self.jobs(names, target)?;
        if !force {
            for job in &jobs {
                if self.status(job.skill, &job.dest)? == Status::Outdated {
                    return Err(force_replace(job));
                }
            }
        }
        let mut report = Report::default();
        for job in &jobs {
            let found = examine(job.skill, &job.dest)?;
            let action = match found.status {
                Status::Installed => {
                    adopt(job, &found, &mut report.warnings);
                    Action::AlreadyInstalled
                }
                Status::Outdated if !force => return Err(force_replace(job)),
                Status::Outdated => {
                    let carried = found.copy.map(|c| c.carried(job.skill)).unwrap_or_default();
                    publish(job.skill, &job.dest, &carried)?;
                    Action::Updated
                }
                Status::Missing => {
                    publish(job.skill, &job.dest, &[])?;
                    Action::Installed
                }
            };
            report.results.push(job.result(action));
        }
        Ok(report)
    }

    /// Replaces outdated copies of the named skills (all when empty); missing ones stay
    /// missing. A destination that is not a skill (no `SKILL.md`, no manifest) refuses the
    /// whole operation. Only copies pt-snap installed are replaced, keeping the files the user
    /// added; a copy without pt-snap's manifest, or whose installed files the user changed (or
    /// with an added file where the new copy has one), is `kept` as it is, with a warning
    /// (`install --force` replaces it).
    pub fn upgrade(&self, names: &[String], target: &Target) -> Result<Report, SkillError> {
        let jobs = self.jobs(names, target)?;
        for job in &jobs {
            if examine(job.skill, &job.dest)?.not_a_skill() {
                return Err(SkillError::Install(format!(
                    "Skill '{}' already exists at '{}' but is not an installed skill (missing \
                     SKILL.md). Re-run install with --force to replace it.",
                    job.skill.name(),
                    job.dest.display()
                )));
            }
        }
        let mut report = Report::default();
        for job in &jobs {
            let found = examine(job.skill, &job.dest)?;
            let action = match (found.status, &found.copy) {
                (Status::Missing, _) => Action::NotInstalled,
                (Status::Installed, _) => {
                    adopt(job, &found, &mut report.warnings);
                    Action::AlreadyInstalled
                }
                (Status::Outdated, Some(copy)) if copy.managed() => {
                    let conflicts = copy.conflicts(job.skill);
                    if conflicts.is_empty() {
                        publish(job.skill, &job.dest, &copy.carried(job.skill))?;
                        Action::Updated
                    } else {
                        report.warnings.push(format!(
                            "left '{}' as it is: files changed since pt-snap installed it: {}; \
                             'pt-snap skill install {} --force' replaces them",
                            job.dest.display(),
                            manifest::describe(&conflicts),
                            job.skill.name()
                        ));
                        Action::Kept
                    }
                }
                (Status::Outdated, copy) => {
                    report.warnings.push(format!(
                        "left '{}' as it is: {}; 'pt-snap skill install {} --force' replaces it",
                        job.dest.display(),
                        not_ours(copy.as_ref()),
                        job.skill.name()
                    ));
                    Action::Kept
                }
            };
            report.results.push(job.result(action));
        }
        Ok(report)
    }

    /// Removes the named skills (all when empty) from the target's folders.
    pub fn uninstall(&self, names: &[String], target: &Target) -> Result<Report, SkillError> {
        let jobs = self.jobs(names, target)?;
        remove(&jobs)
    }

    /// Removes every copy `list` would find of the named skills (all when empty), in any
    /// built-in host and scope; names found nowhere are reported `not_installed` at the
    /// default user-level folders.
    pub fn uninstall_everywhere(&self, names: &[String]) -> Result<Report, SkillError> {
        let skills = self.catalog.resolve(names)?;
        let mut jobs: Vec<Job> = Vec::new();
        let mut absent: Vec<String> = Vec::new();
        for skill in skills {
            let mut found = false;
            for scope in Scope::ALL {
                for host in Host::BUILTIN {
                    let dest = self.skills_root(host, scope)?.join(skill.name());
                    if found_already(&jobs, &dest) || !occupied(&dest) {
                        continue;
                    }
                    found = true;
                    jobs.push(Job {
                        skill,
                        host,
                        scope,
                        dest,
                    });
                }
            }
            if !found && !absent.iter().any(|n| n == skill.name()) {
                absent.push(skill.name().to_owned());
            }
        }
        // Names found nowhere come last, as in the reference.
        if !absent.is_empty() {
            jobs.extend(self.jobs(&absent, &Target::default())?);
        }
        remove(&jobs)
    }

    fn jobs(&self, names: &[String], target: &Target) -> Result<Vec<Job<'_>>, SkillError> {
        let skills = self.catalog.resolve(names)?;
        let mut jobs = Vec::new();
        for skill in skills {
            match target {
                Target::Dir(dir) => jobs.push(Job {
                    skill,
                    host: Host::Custom,
                    scope: Scope::User,
                    dest: paths::normalize(
                        &custom_dir(dir, self.env.home.as_deref())?.join(skill.name()),
                    ),
                }),
                Target::Builtin { hosts, scope } => {
                    for &host in hosts.as_deref().unwrap_or(&Host::DEFAULT_INSTALL) {
                        jobs.push(Job {
                            skill,
                            host,
                            scope: *scope,
                            dest: self.skills_root(host, *scope)?.join(skill.name()),
                        });
                    }
                }
            }
        }
        Ok(jobs)
    }
}

/// A skill at one destination, examined.
struct Found {
    status: Status,
    /// The folder measured against its manifest; `None` when nothing is there, or when it is
    /// not a skill (no `SKILL.md` and no manifest).
    copy: Option<Copy>,
}

impl Found {
    /// Something is at the destination, but neither a skill nor pt-snap's.
    fn not_a_skill(&self) -> bool {
        self.status == Status::Outdated && self.copy.is_none()
    }
}

/// How the folder `dest` compares with `skill`. A copy pt-snap installed is compared on the
/// files its manifest lists; any other copy on all its files (the reference's rule).
fn examine(skill: &Skill, dest: &Path) -> Result<Found, SkillError> {
    if !occupied(dest) {
        return Ok(Found {
            status: Status::Missing,
            copy: None,
        });
    }
    let skill_md = dest.join("SKILL.md").is_file();
    let owner = manifest::owner(dest);
    if !skill_md && !matches!(owner, manifest::Owner::PtSnap(_)) {
        return Ok(Found {
            status: Status::Outdated,
            copy: None,
        });
    }
    let copy = manifest::inspect(dest, owner)?;
    let status = if skill_md && copy.digest == skill.digest() {
        Status::Installed
    } else {
        Status::Outdated
    };
    Ok(Found {
        status,
        copy: Some(copy),
    })
}

fn location(
    skill: &Skill,
    host: Host,
    scope: Scope,
    path: PathBuf,
) -> Result<Location, SkillError> {
    let found = examine(skill, &path)?;
    let managed =
        (found.status != Status::Missing).then(|| found.copy.as_ref().is_some_and(Copy::managed));
    let local_changes = found
        .copy
        .map(|c| c.local_changes().into_iter().map(|(p, _)| p).collect())
        .unwrap_or_default();
    Ok(Location {
        host,
        scope,
        path,
        status: found.status,
        managed,
        local_changes,
    })
}

/// Why a skill folder is not pt-snap's to change.
fn not_ours(copy: Option<&Copy>) -> String {
    match copy.map(|c| &c.owner) {
        Some(manifest::Owner::Unreadable(reason)) => {
            format!("its pt-snap install manifest ({MANIFEST}) is unreadable ({reason})")
        }
        _ => format!(
            "it has no pt-snap install manifest ({MANIFEST}), so it was written by hand or by \
             an older pt-snap"
        ),
    }
}

/// Writes an installed-but-unmanaged copy again, identical but with pt-snap's manifest, when
/// it is a plain folder of plain files (a failure only costs a warning: the copy is intact).
fn adopt(job: &Job, found: &Found, warnings: &mut Vec<String>) {
    let Some(copy) = &found.copy else { return };
    let real_dir = job.dest.symlink_metadata().is_ok_and(|m| m.is_dir());
    if copy.managed() || !real_dir || !copy.plain() {
        return;
    }
    if let Err(e) = publish(job.skill, &job.dest, &[]) {
        warnings.push(format!(
            "could not add pt-snap's install manifest to '{}': {e}",
            job.dest.display()
        ));
    }
}

fn found_already(jobs: &[Job], dest: &Path) -> bool {
    jobs.iter().any(|j| j.dest == dest)
}

fn summary_status(locations: &[Location]) -> Status {
    if locations.iter().any(|l| l.status == Status::Installed) {
        Status::Installed
    } else if locations.iter().any(|l| l.status == Status::Outdated) {
        Status::Outdated
    } else {
        Status::Missing
    }
}

/// A `--dir` value: `~` expanded; it may not exist yet but must not be a file.
fn custom_dir(dir: &Path, home: Option<&Path>) -> Result<PathBuf, SkillError> {
    let path = paths::expand_user(dir, home);
    if path.exists() && !path.is_dir() {
        return Err(SkillError::InvalidTarget(format!(
            "Skill directory must be a directory, not a file: {}",
            path.display()
        )));
    }
    Ok(path)
}

fn force_replace(job: &Job) -> SkillError {
    SkillError::Install(format!(
        "Skill '{}' already exists at '{}' and differs from the bundled copy. Re-run with \
         --force to replace it.",
        job.skill.name(),
        job.dest.display()
    ))
}

fn not_a_skill_to_delete(job: &Job) -> SkillError {
    SkillError::Install(format!(
        "Skill '{}' exists at '{}' but is not an installed skill (missing SKILL.md). \
         Refusing to delete it.",
        job.skill.name(),
        job.dest.display()
    ))
}

/// Uninstalls: only the files pt-snap's manifest lists, and only while unchanged. A copy
/// without a usable manifest is `kept`; a copy holding the user's files loses pt-snap's files
/// and manifest but keeps the folder and the user's files; both with a warning.
fn remove(jobs: &[Job]) -> Result<Report, SkillError> {
    for job in jobs {
        if examine(job.skill, &job.dest)?.not_a_skill() {
            return Err(not_a_skill_to_delete(job));
        }
    }
    let mut report = Report::default();
    for job in jobs {
        let found = examine(job.skill, &job.dest)?;
        let action = match &found.copy {
            _ if found.status == Status::Missing => Action::NotInstalled,
            None => return Err(not_a_skill_to_delete(job)),
            Some(copy) if !copy.managed() => {
                report.warnings.push(format!(
                    "left '{}' in place: {}; delete it yourself if it is no longer needed",
                    job.dest.display(),
                    not_ours(Some(copy))
                ));
                Action::Kept
            }
            Some(copy) => {
                let fail = |e: io::Error| {
                    SkillError::Install(format!(
                        "Failed to uninstall '{}' at '{}': {e}",
                        job.skill.name(),
                        job.dest.display()
                    ))
                };
                let kept = copy.local_changes();
                if kept.is_empty() {
                    unpublish(&job.dest).map_err(fail)?;
                    Action::Uninstalled
                } else {
                    remove_installed_files(&job.dest, &copy.pristine).map_err(fail)?;
                    report.warnings.push(format!(
                        "kept '{}' with {} file(s) pt-snap did not install or that changed \
                         since: {}",
                        job.dest.display(),
                        kept.len(),
                        manifest::describe(&kept)
                    ));
                    if copy.pristine.is_empty() {
                        Action::Kept
                    } else {
                        Action::Uninstalled
                    }
                }
            }
        };
        report.results.push(job.result(action));
    }
    Ok(report)
}

/// Deletes pt-snap's unchanged files of the copy at `dest`, then its manifest (last, so that an
/// interrupted uninstall can be run again), then the folders this left empty.
fn remove_installed_files(dest: &Path, pristine: &[(Relative, PathBuf)]) -> io::Result<()> {
    let mut folders = Vec::new();
    for (relative, path) in pristine {
        fs::remove_file(path)?;
        for depth in 1..relative.len() {
            folders.push(tree::under(dest, &relative[..depth]));
        }
    }
    fs::remove_file(dest.join(MANIFEST))?;
    // Deepest first; a folder still holding the user's files stays.
    folders.sort_by(|a, b| (b.components().count(), b).cmp(&(a.components().count(), a)));
    folders.dedup();
    for folder in folders {
        let _ = fs::remove_dir(folder);
    }
    Ok(())
}

/// A hidden sibling of `dest` that no other process or call can be using:
/// `.<name>.<unique>.<suffix>`.
fn sibling(dest: &Path, suffix: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let unique = format!(
        "{:x}{:08x}{:x}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let name = dest.file_name().unwrap_or_default().to_string_lossy();
    dest.with_file_name(format!(".{name}.{unique}.{suffix}"))
}

/// Removes a folder (or file, or symlink) and everything in it.
fn remove_all(path: &Path) -> io::Result<()> {
    if path.symlink_metadata()?.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}

/// A staging folder, deleted when dropped unless [`Staging::disarm`]ed.
struct Staging(Option<PathBuf>);

impl Staging {
    fn path(&self) -> &Path {
        self.0.as_deref().expect("not yet published")
    }

    /// The folder has been renamed into place: nothing to clean up.
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = remove_all(&path);
        }
    }
}

/// Installs `skill` as the folder `dest`: the files, the `carried` files of the old copy (user
/// files to keep, as (relative path, path in the old copy)) and the install manifest are
/// written to a staging folder beside it, the old copy (if any) is renamed aside, the staging
/// folder renamed into place, and only then the old copy deleted. Any failure leaves the old
/// copy (or nothing) at `dest`.
fn publish(skill: &Skill, dest: &Path, carried: &[(Relative, PathBuf)]) -> Result<(), SkillError> {
    let fail = |e: io::Error| {
        SkillError::Install(format!(
            "Failed to install skill at '{}': {e}",
            dest.display()
        ))
    };
    if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(fail)?;
    }
    let staging_path = sibling(dest, "pt-snap-staging");
    fs::create_dir(&staging_path).map_err(fail)?;
    let staging = Staging(Some(staging_path));
    skill.write_into(staging.path()).map_err(fail)?;
    for (relative, from) in carried {
        carry(from, &tree::under(staging.path(), relative)).map_err(fail)?;
    }
    manifest::write(skill, staging.path()).map_err(fail)?;

    let backup = occupied(dest).then(|| sibling(dest, "pt-snap-backup"));
    match &backup {
        Some(backup) => {
            publish::replace_dir(staging.path(), dest, backup).map_err(|e| fail(e.error))?
        }
        None => publish::rename(staging.path(), dest, Existing::Refuse).map_err(fail)?,
    }
    staging.disarm();
    if let Some(backup) = &backup {
        // The new copy is in place; a leftover hidden backup is harmless.
        let _ = remove_all(backup);
    }
    Ok(())
}

/// Copies a user's file into a new copy: a symlink as a symlink (on Unix), a file with its
/// permissions.
fn carry(from: &Path, to: &Path) -> io::Result<()> {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent)?;
    }
    let meta = from.symlink_metadata()?;
    #[cfg(unix)]
    if meta.file_type().is_symlink() {
        return std::os::unix::fs::symlink(fs::read_link(from)?, to);
    }
    if meta.is_file() || from.is_file() {
        return fs::copy(from, to).map(drop);
    }
    Err(io::Error::other(format!(
        "cannot keep '{}': not a file",
        from.display()
    )))
}

/// Removes the skill folder `dest`: renamed aside first so the skill disappears at once and
/// never shows up half-deleted.
fn unpublish(dest: &Path) -> io::Result<()> {
    let doomed = sibling(dest, "pt-snap-removing");
    fs::rename(dest, &doomed)?;
    remove_all(&doomed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Catalog;
    use pt_snap_testkit::{object_keys, string_fields, tree_of};

    /// A temporary HOME and project directory, and a two-skill catalog on disk.
    struct Fixture {
        _tmp: tempfile::TempDir,
        root: PathBuf,
        skills: Skills,
    }

    fn fixture() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let catalog = root.join("catalog");
        for (name, body) in [("alpha", "Alpha skill. More."), ("beta", "Beta skill.")] {
            let dir = catalog.join(name);
            fs::create_dir_all(dir.join("ref")).unwrap();
            fs::write(
                dir.join("SKILL.md"),
                format!("---\nname: {name}\ndescription: {body}\n---\n# {name}\n"),
            )
            .unwrap();
            fs::write(dir.join("ref/notes.md"), "notes\n").unwrap();
        }
        fs::create_dir_all(root.join("home")).unwrap();
        fs::create_dir_all(root.join("project")).unwrap();
        let env = Environment {
            home: Some(root.join("home")),
            cwd: root.join("project"),
            claude_config_dir: None,
            codex_home: None,
        };
        let skills = Skills::new(Catalog::from_dir(&catalog).unwrap(), env);
        Fixture {
            _tmp: tmp,
            root,
            skills,
        }
    }

    /// The user-scope `.agents` host, where most of these tests install one skill at a time.
    impl Fixture {
        fn install_for_agents(&self, name: &str) -> Result<Report, SkillError> {
            self.skills.install(&names(&[name]), &agents_only(), false)
        }

        fn uninstall_for_agents(&self, name: &str) -> Result<Report, SkillError> {
            self.skills.uninstall(&names(&[name]), &agents_only())
        }

        fn agents_dir(&self, name: &str) -> PathBuf {
            self.root.join("home/.agents/skills").join(name)
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn actions(report: &Report) -> Vec<(&str, Host, Action)> {
        report
            .results
            .iter()
            .map(|r| (r.name.as_str(), r.host, r.action))
            .collect()
    }

    fn status_of(f: &Fixture, name: &str, target: &ListTarget) -> Status {
        f.skills
            .list(target)
            .unwrap()
            .into_iter()
            .find(|l| l.name == name)
            .unwrap()
            .status
    }

    fn all_builtin() -> ListTarget {
        ListTarget::Builtin {
            hosts: None,
            scopes: None,
        }
    }

    #[test]
    fn listing_covers_every_host_and_scope_in_reference_order() {
        let f = fixture();
        let listing = f.skills.list(&all_builtin()).unwrap();
        assert_eq!(listing.len(), 2);
        let alpha = &listing[0];
        assert_eq!(alpha.name, "alpha");
        assert_eq!(alpha.description, "Alpha skill. More.");
        assert_eq!(alpha.status, Status::Missing);
        let places: Vec<(Host, Scope, PathBuf)> = alpha
            .locations
            .iter()
            .map(|l| (l.host, l.scope, l.path.clone()))
            .collect();
        let mut expected = Vec::new();
        for (scope, base) in [(Scope::User, "home"), (Scope::Project, "project")] {
            for host in Host::BUILTIN {
                let path = f.root.join(base).join(format!(".{host}/skills/alpha"));
                expected.push((host, scope, path));
            }
        }
        assert_eq!(places, expected);
        let json = serde_json::to_value(&listing[0]).unwrap();
        let keys = object_keys(&json);
        assert_eq!(
            keys,
            ["name", "description", "source_dir", "status", "locations"]
        );
        assert_eq!(
            json["locations"][0],
            serde_json::json!({
                "host": "agents",
                "scope": "user",
                "path": f.agents_dir("alpha").to_str().unwrap(),
                "status": "missing",
            })
        );
        assert_eq!(
            json["source_dir"],
            f.root.join("catalog/alpha").to_str().unwrap()
        );
    }

    #[test]
    fn install_then_outdated_then_force_then_upgrade_then_uninstall() {
        let f = fixture();
        let report = f.skills.install(&[], &Target::default(), false).unwrap();
        assert_eq!(
            actions(&report),
            [
                ("alpha", Host::Agents, Action::Installed),
                ("alpha", Host::Claude, Action::Installed),
                ("beta", Host::Agents, Action::Installed),
                ("beta", Host::Claude, Action::Installed),
            ]
        );
        assert!(report.restart_required());
        let installed = f.root.join("home/.claude/skills/alpha");
        assert_eq!(
            fs::read_to_string(installed.join("ref/notes.md")).unwrap(),
            "notes\n"
        );
        assert_eq!(status_of(&f, "alpha", &all_builtin()), Status::Installed);

        // Installing again changes nothing and needs no restart.
        let again = f
            .skills
            .install(&names(&["alpha"]), &Target::default(), false)
            .unwrap();
        assert!(again
            .results
            .iter()
            .all(|r| r.action == Action::AlreadyInstalled));
        assert_eq!(
            serde_json::to_value(&again).unwrap()["restart_hint"],
            serde_json::Value::Null
        );

        // A local edit makes the copy outdated, and install refuses it before writing.
        fs::write(installed.join("SKILL.md"), "edited").unwrap();
        let claude_only = ListTarget::Builtin {
            hosts: Some(vec![Host::Claude]),
            scopes: Some(vec![Scope::User]),
        };
        assert_eq!(status_of(&f, "alpha", &claude_only), Status::Outdated);
        assert_eq!(status_of(&f, "alpha", &all_builtin()), Status::Installed);
        let err = f
            .skills
            .install(&names(&["alpha"]), &Target::default(), false)
            .unwrap_err();
        assert_eq!(
            err,
            SkillError::Install(format!(
                "Skill 'alpha' already exists at '{}' and differs from the bundled copy. \
                 Re-run with --force to replace it.",
                installed.display()
            ))
        );
        assert_eq!(
            fs::read_to_string(installed.join("SKILL.md")).unwrap(),
            "edited"
        );

        let forced = f
            .skills
            .install(&names(&["alpha"]), &Target::default(), true)
            .unwrap();
        assert_eq!(
            actions(&forced),
            [
                ("alpha", Host::Agents, Action::AlreadyInstalled),
                ("alpha", Host::Claude, Action::Updated),
            ]
        );
        assert_eq!(status_of(&f, "alpha", &claude_only), Status::Installed);

        // Upgrade replaces outdated copies and leaves missing ones missing. A file the user
        // added is not pt-snap's: it neither makes the copy outdated nor gets deleted.
        // (Before install manifests, upgrade replaced such a copy and deleted `extra.md`.)
        fs::write(installed.join("extra.md"), "x").unwrap();
        assert_eq!(status_of(&f, "alpha", &claude_only), Status::Installed);
        fs::remove_file(installed.join("ref/notes.md")).unwrap();
        assert_eq!(status_of(&f, "alpha", &claude_only), Status::Outdated);
        let cursor = Target::Builtin {
            hosts: Some(vec![Host::Claude, Host::Cursor]),
            scope: Scope::User,
        };
        let upgraded = f.skills.upgrade(&names(&["alpha"]), &cursor).unwrap();
        assert_eq!(
            actions(&upgraded),
            [
                ("alpha", Host::Claude, Action::Updated),
                ("alpha", Host::Cursor, Action::NotInstalled),
            ]
        );
        assert!(installed.join("ref/notes.md").is_file());
        assert_eq!(fs::read_to_string(installed.join("extra.md")).unwrap(), "x");
        assert!(upgraded.warnings.is_empty());

        let removed = f
            .skills
            .uninstall(&names(&["beta"]), &Target::default())
            .unwrap();
        assert_eq!(
            actions(&removed),
            [
                ("beta", Host::Agents, Action::Uninstalled),
                ("beta", Host::Claude, Action::Uninstalled),
            ]
        );
        assert!(!f.agents_dir("beta").exists());
        let again = f
            .skills
            .uninstall(&names(&["beta"]), &Target::default())
            .unwrap();
        assert!(again
            .results
            .iter()
            .all(|r| r.action == Action::NotInstalled));
        assert!(!again.restart_required());
        assert_no_leftovers(&f.root.join("home/.claude/skills"));
    }

    fn assert_no_leftovers(dir: &Path) {
        for entry in fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name();
            assert!(
                !name.to_string_lossy().starts_with('.'),
                "leftover {name:?} in {}",
                dir.display()
            );
        }
    }

    #[test]
    fn custom_dir_and_project_scope() {
        let f = fixture();
        let dir = f.root.join("custom/skills");
        let report = f
            .skills
            .install(&names(&["beta"]), &Target::Dir(dir.clone()), false)
            .unwrap();
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "results": [{
                    "name": "beta",
                    "host": "custom",
                    "scope": "user",
                    "path": dir.join("beta").to_str().unwrap(),
                    "action": "installed",
                }],
                "restart_required": true,
                "restart_hint": crate::RESTART_HINT,
            })
        );
        let listed = f.skills.list(&ListTarget::Dir(dir.clone())).unwrap();
        assert_eq!(listed[1].locations.len(), 1);
        assert_eq!(listed[1].status, Status::Installed);
        assert_eq!(listed[0].status, Status::Missing);

        let project = Target::Builtin {
            hosts: Some(vec![Host::Cursor]),
            scope: Scope::Project,
        };
        let report = f
            .skills
            .install(&names(&["alpha"]), &project, false)
            .unwrap();
        assert_eq!(
            report.results[0].path,
            f.root.join("project/.cursor/skills/alpha")
        );
        assert!(f
            .root
            .join("project/.cursor/skills/alpha/SKILL.md")
            .is_file());
        let project_only = ListTarget::Builtin {
            hosts: None,
            scopes: Some(vec![Scope::Project]),
        };
        assert_eq!(status_of(&f, "alpha", &project_only), Status::Installed);

        // A file where the custom folder should be is refused.
        let file = f.root.join("a-file");
        fs::write(&file, "").unwrap();
        let err = f.skills.list(&ListTarget::Dir(file.clone())).unwrap_err();
        assert_eq!(
            err,
            SkillError::InvalidTarget(format!(
                "Skill directory must be a directory, not a file: {}",
                file.display()
            ))
        );
    }

    #[test]
    fn unknown_names_and_hosts() {
        let f = fixture();
        let err = f
            .skills
            .install(
                &names(&["nope", "alpha", "bogus"]),
                &Target::default(),
                false,
            )
            .unwrap_err();
        assert_eq!(
            err,
            SkillError::NotFound("Unknown skill(s): nope, bogus. Available: alpha, beta".into())
        );
        assert_eq!(
            Host::parse_targets("claude, bogus"),
            Err(SkillError::InvalidTarget(
                "Unknown skill target 'bogus'. Choose from: agents, claude, cursor, codex".into()
            ))
        );
        assert_eq!(
            Host::parse_targets(" , "),
            Err(SkillError::InvalidTarget(
                "Skill target list must not be empty.".into()
            ))
        );
        assert_eq!(
            Host::parse_targets(" Claude ,cursor"),
            Ok(vec![Host::Claude, Host::Cursor])
        );
        assert!(Host::parse("custom").is_err());
    }

    #[test]
    fn config_dir_overrides_and_uninstall_everywhere() {
        let mut f = fixture();
        let claude_home = f.root.join("claude-config");
        f.skills.env.claude_config_dir = Some(claude_home.clone().into_os_string());
        f.skills.env.codex_home = Some("  ".into());
        assert_eq!(
            f.skills.skills_root(Host::Claude, Scope::User).unwrap(),
            claude_home.join("skills")
        );
        assert_eq!(
            f.skills.skills_root(Host::Codex, Scope::User).unwrap(),
            f.root.join("home/.codex/skills")
        );
        assert_eq!(
            f.skills.skills_root(Host::Claude, Scope::Project).unwrap(),
            f.root.join("project/.claude/skills")
        );

        f.skills
            .install(&names(&["alpha"]), &Target::default(), false)
            .unwrap();
        let project = Target::Builtin {
            hosts: Some(vec![Host::Codex]),
            scope: Scope::Project,
        };
        f.skills
            .install(&names(&["alpha"]), &project, false)
            .unwrap();
        let report = f.skills.uninstall_everywhere(&[]).unwrap();
        assert_eq!(
            actions(&report),
            [
                ("alpha", Host::Agents, Action::Uninstalled),
                ("alpha", Host::Claude, Action::Uninstalled),
                ("alpha", Host::Codex, Action::Uninstalled),
                ("beta", Host::Agents, Action::NotInstalled),
                ("beta", Host::Claude, Action::NotInstalled),
            ]
        );
        assert_eq!(report.results[2].scope, Scope::Project);
        assert!(!claude_home.join("skills/alpha").exists());
    }

    #[test]
    fn a_folder_that_is_not_a_skill_is_never_replaced_or_deleted_silently() {
        let f = fixture();
        let dest = f.agents_dir("alpha");
        fs::create_dir_all(&dest).unwrap();
        fs::write(dest.join("mine.txt"), "user data").unwrap();
        assert_eq!(status_of(&f, "alpha", &all_builtin()), Status::Outdated);
        let agents = Target::Builtin {
            hosts: Some(vec![Host::Agents]),
            scope: Scope::User,
        };
        assert!(matches!(
            f.skills.uninstall(&names(&["alpha"]), &agents),
            Err(SkillError::Install(m)) if m.ends_with("Refusing to delete it.")
        ));
        assert!(matches!(
            f.skills.upgrade(&names(&["alpha"]), &agents),
            Err(SkillError::Install(m)) if m.contains("(missing SKILL.md)")
        ));
        assert!(f
            .skills
            .install(&names(&["alpha"]), &agents, false)
            .is_err());
        assert!(dest.join("mine.txt").is_file());
        // --force is the explicit way to replace it.
        f.skills.install(&names(&["alpha"]), &agents, true).unwrap();
        assert!(!dest.join("mine.txt").exists());
        assert!(dest.join("SKILL.md").is_file());
    }

    #[test]
    fn a_failed_install_leaves_the_old_copy_and_no_staging_folder() {
        let f = fixture();
        let agents = Target::Builtin {
            hosts: Some(vec![Host::Agents]),
            scope: Scope::User,
        };
        f.skills
            .install(&names(&["alpha"]), &agents, false)
            .unwrap();
        let dest = f.agents_dir("alpha");
        fs::write(dest.join("SKILL.md"), "old local copy").unwrap();
        // The catalog's file vanishes after the catalog was read: copying it fails midway.
        fs::remove_file(f.root.join("catalog/alpha/ref/notes.md")).unwrap();
        let err = f
            .skills
            .install(&names(&["alpha"]), &agents, true)
            .unwrap_err();
        assert!(
            matches!(err, SkillError::Install(m) if m.starts_with("Failed to install skill at"))
        );
        assert_eq!(
            fs::read_to_string(dest.join("SKILL.md")).unwrap(),
            "old local copy"
        );
        assert!(dest.join("ref/notes.md").is_file());
        assert_no_leftovers(&f.root.join("home/.agents/skills"));
    }

    #[test]
    fn embedded_skills_install_as_installed() {
        let tmp = tempfile::tempdir().unwrap();
        let env = Environment {
            home: Some(tmp.path().join("home")),
            cwd: tmp.path().to_path_buf(),
            claude_config_dir: None,
            codex_home: None,
        };
        let catalog = Catalog::embedded().unwrap();
        let bundled = catalog.skills().len();
        let skills = Skills::new(catalog, env);
        let target = Target::Dir(tmp.path().join("skills"));
        let report = skills.install(&[], &target, false).unwrap();
        // Every bundled skill (the catalog's own test pins their names).
        assert_eq!(report.results.len(), bundled);
        let listing = skills
            .list(&ListTarget::Dir(tmp.path().join("skills")))
            .unwrap();
        assert!(listing.iter().all(|l| l.status == Status::Installed));
        assert!(listing.iter().all(|l| l.source_dir.is_none()));
    }

    fn agents_only() -> Target {
        Target::Builtin {
            hosts: Some(vec![Host::Agents]),
            scope: Scope::User,
        }
    }

    fn location_of(f: &Fixture, name: &str, host: Host) -> Location {
        let target = ListTarget::Builtin {
            hosts: Some(vec![host]),
            scopes: Some(vec![Scope::User]),
        };
        let listing = f.skills.list(&target).unwrap();
        let skill = listing.into_iter().find(|l| l.name == name).unwrap();
        skill.locations.into_iter().next().unwrap()
    }

    #[test]
    fn install_writes_a_manifest_of_the_installed_files() {
        let f = fixture();
        f.install_for_agents("alpha").unwrap();
        let dest = f.agents_dir("alpha");
        assert_eq!(
            tree_of(&dest),
            [MANIFEST, "SKILL.md", "ref/notes.md"],
            "the manifest is part of the published folder"
        );
        let m: serde_json::Value =
            serde_json::from_slice(&fs::read(dest.join(MANIFEST)).unwrap()).unwrap();
        let alpha = &f.skills.catalog().skills()[0];
        assert_eq!(m["format"], "pt-snap-skill-install-v1");
        assert_eq!(m["name"], "alpha");
        assert_eq!(m["digest"], alpha.digest());
        let paths = string_fields(&m["files"], "path");
        assert_eq!(paths, ["SKILL.md", "ref/notes.md"]);
        assert_eq!(
            m["files"][1]["digest"],
            tree::file_digest(&["ref".into(), "notes.md".into()], b"notes\n")
        );
        // The manifest does not count in the digest: the copy is installed.
        let loc = location_of(&f, "alpha", Host::Agents);
        assert_eq!((loc.status, loc.managed), (Status::Installed, Some(true)));
        assert!(loc.local_changes.is_empty());
        assert_no_leftovers(&f.root.join("home/.agents/skills"));
    }

    #[test]
    fn a_plain_install_then_uninstall_leaves_nothing() {
        let f = fixture();
        f.skills.install(&[], &agents_only(), false).unwrap();
        let report = f.skills.uninstall(&[], &agents_only()).unwrap();
        assert_eq!(
            actions(&report),
            [
                ("alpha", Host::Agents, Action::Uninstalled),
                ("beta", Host::Agents, Action::Uninstalled),
            ]
        );
        assert!(report.warnings.is_empty());
        let root = f.root.join("home/.agents/skills");
        assert_eq!(
            fs::read_dir(&root).unwrap().count(),
            0,
            "{:?}",
            tree_of(&root)
        );
    }

    #[test]
    fn uninstall_leaves_a_same_named_folder_the_user_wrote() {
        let f = fixture();
        let dest = f.agents_dir("alpha");
        fs::create_dir_all(&dest).unwrap();
        fs::write(dest.join("SKILL.md"), "---\nname: alpha\n---\nmine\n").unwrap();
        fs::write(dest.join("notes.txt"), "my notes").unwrap();
        let loc = location_of(&f, "alpha", Host::Agents);
        assert_eq!((loc.status, loc.managed), (Status::Outdated, Some(false)));

        let report = f.uninstall_for_agents("alpha").unwrap();
        assert_eq!(actions(&report), [("alpha", Host::Agents, Action::Kept)]);
        assert!(!report.restart_required());
        assert_eq!(
            report.warnings,
            [format!(
                "left '{}' in place: it has no pt-snap install manifest ({MANIFEST}), so it was \
                 written by hand or by an older pt-snap; delete it yourself if it is no longer \
                 needed",
                dest.display()
            )]
        );
        assert_eq!(tree_of(&dest), ["SKILL.md", "notes.txt"]);
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["results"][0]["action"], "kept");
        assert_eq!(json["warnings"][0], report.warnings[0].as_str());

        // uninstall_everywhere (no --target) is just as careful.
        let report = f.skills.uninstall_everywhere(&names(&["alpha"])).unwrap();
        assert_eq!(actions(&report), [("alpha", Host::Agents, Action::Kept)]);
        assert_eq!(tree_of(&dest), ["SKILL.md", "notes.txt"]);
    }

    #[test]
    fn uninstall_keeps_files_the_user_added_and_drops_the_installed_ones() {
        let f = fixture();
        f.install_for_agents("alpha").unwrap();
        let dest = f.agents_dir("alpha");
        fs::write(dest.join("mine.md"), "mine").unwrap();
        fs::write(dest.join("ref/also-mine.md"), "mine too").unwrap();
        fs::write(dest.join(".DS_Store"), "").unwrap();
        let loc = location_of(&f, "alpha", Host::Agents);
        assert_eq!((loc.status, loc.managed), (Status::Installed, Some(true)));
        assert_eq!(loc.local_changes, ["mine.md", "ref/also-mine.md"]);

        let report = f.uninstall_for_agents("alpha").unwrap();
        assert_eq!(
            actions(&report),
            [("alpha", Host::Agents, Action::Uninstalled)]
        );
        assert!(report.restart_required());
        assert_eq!(
            report.warnings,
            [format!(
                "kept '{}' with 2 file(s) pt-snap did not install or that changed since: \
                 mine.md (added), ref/also-mine.md (added)",
                dest.display()
            )]
        );
        assert_eq!(tree_of(&dest), [".DS_Store", "mine.md", "ref/also-mine.md"]);
        // What is left is the user's: no longer a skill, and never deleted silently.
        assert!(f.uninstall_for_agents("alpha").is_err());
        assert_eq!(tree_of(&dest), [".DS_Store", "mine.md", "ref/also-mine.md"]);
    }

    #[test]
    fn uninstall_keeps_an_installed_file_the_user_modified() {
        let f = fixture();
        f.install_for_agents("alpha").unwrap();
        let dest = f.agents_dir("alpha");
        fs::write(dest.join("ref/notes.md"), "my edits\n").unwrap();
        let loc = location_of(&f, "alpha", Host::Agents);
        assert_eq!((loc.status, loc.managed), (Status::Outdated, Some(true)));
        assert_eq!(loc.local_changes, ["ref/notes.md"]);

        let report = f.uninstall_for_agents("alpha").unwrap();
        assert_eq!(
            actions(&report),
            [("alpha", Host::Agents, Action::Uninstalled)]
        );
        assert_eq!(
            report.warnings,
            [format!(
                "kept '{}' with 1 file(s) pt-snap did not install or that changed since: \
                 ref/notes.md (modified)",
                dest.display()
            )]
        );
        assert_eq!(tree_of(&dest), ["ref/notes.md"]);
        assert_eq!(
            fs::read_to_string(dest.join("ref/notes.md")).unwrap(),
            "my edits\n"
        );

        // Every installed file modified: nothing of pt-snap's is left to delete but the manifest.
        f.install_for_agents("beta").unwrap();
        let beta = f.agents_dir("beta");
        fs::write(beta.join("SKILL.md"), "mine").unwrap();
        fs::write(beta.join("ref/notes.md"), "mine").unwrap();
        let report = f.uninstall_for_agents("beta").unwrap();
        assert_eq!(actions(&report), [("beta", Host::Agents, Action::Kept)]);
        assert_eq!(tree_of(&beta), ["SKILL.md", "ref/notes.md"]);
    }

    #[test]
    fn an_install_without_manifest_is_left_with_a_warning_until_adopted() {
        let f = fixture();
        f.install_for_agents("alpha").unwrap();
        let dest = f.agents_dir("alpha");
        // What an older pt-snap (or the reference) leaves: the same files, no manifest.
        fs::remove_file(dest.join(MANIFEST)).unwrap();
        let loc = location_of(&f, "alpha", Host::Agents);
        assert_eq!((loc.status, loc.managed), (Status::Installed, Some(false)));

        let report = f.uninstall_for_agents("alpha").unwrap();
        assert_eq!(actions(&report), [("alpha", Host::Agents, Action::Kept)]);
        assert_eq!(report.warnings.len(), 1);
        assert!(report.warnings[0].contains("no pt-snap install manifest"));
        assert_eq!(tree_of(&dest), ["SKILL.md", "ref/notes.md"]);

        // An unreadable manifest is no manifest either.
        fs::write(dest.join(MANIFEST), "{ not json").unwrap();
        let report = f.uninstall_for_agents("alpha").unwrap();
        assert_eq!(actions(&report), [("alpha", Host::Agents, Action::Kept)]);
        assert!(
            report.warnings[0].contains("is unreadable"),
            "{:?}",
            report.warnings
        );
        assert!(dest.join("SKILL.md").is_file());

        // Installing over an identical copy adopts it (no restart: same files); then
        // uninstall removes it.
        let report = f.install_for_agents("alpha").unwrap();
        assert_eq!(
            actions(&report),
            [("alpha", Host::Agents, Action::AlreadyInstalled)]
        );
        assert!(!report.restart_required());
        assert_eq!(location_of(&f, "alpha", Host::Agents).managed, Some(true));
        f.uninstall_for_agents("alpha").unwrap();
        assert!(!dest.exists());
    }

    #[test]
    fn upgrade_keeps_added_files_and_leaves_changed_or_foreign_copies() {
        let f = fixture();
        let every = Target::Builtin {
            hosts: Some(Host::BUILTIN.to_vec()),
            scope: Scope::User,
        };
        f.skills.install(&names(&["alpha"]), &every, false).unwrap();
        let at = |host: &str| f.root.join(format!("home/.{host}/skills/alpha"));
        // agents: an added file; claude: a modified installed file; cursor: an added file
        // where the new version has one; codex: written by hand (no manifest).
        fs::write(at("agents").join("mine.md"), "mine").unwrap();
        fs::write(at("claude").join("ref/notes.md"), "edited\n").unwrap();
        fs::write(at("cursor").join("ref/new.md"), "mine").unwrap();
        fs::remove_dir_all(at("codex")).unwrap();
        fs::create_dir_all(at("codex")).unwrap();
        fs::write(at("codex").join("SKILL.md"), "hand written").unwrap();

        // A new version of the skill: SKILL.md changes, ref/new.md appears.
        let catalog = f.root.join("catalog");
        fs::write(
            catalog.join("alpha/SKILL.md"),
            "---\nname: alpha\ndescription: Alpha skill. More.\n---\n# alpha v2\n",
        )
        .unwrap();
        fs::write(catalog.join("alpha/ref/new.md"), "new\n").unwrap();
        let v2 = Skills::new(
            Catalog::from_dir(&catalog).unwrap(),
            f.skills.environment().clone(),
        );
        let report = v2.upgrade(&names(&["alpha"]), &every).unwrap();
        assert_eq!(
            actions(&report),
            [
                ("alpha", Host::Agents, Action::Updated),
                ("alpha", Host::Claude, Action::Kept),
                ("alpha", Host::Cursor, Action::Kept),
                ("alpha", Host::Codex, Action::Kept),
            ]
        );
        assert_eq!(
            tree_of(&at("agents")),
            [
                MANIFEST,
                "SKILL.md",
                "mine.md",
                "ref/new.md",
                "ref/notes.md"
            ]
        );
        assert_eq!(
            fs::read_to_string(at("agents").join("mine.md")).unwrap(),
            "mine"
        );
        assert!(fs::read_to_string(at("agents").join("SKILL.md"))
            .unwrap()
            .contains("v2"));
        let hint = "'pt-snap skill install alpha --force' replaces";
        assert_eq!(
            report.warnings,
            [
                format!(
                    "left '{}' as it is: files changed since pt-snap installed it: \
                     ref/notes.md (modified); {hint} them",
                    at("claude").display()
                ),
                format!(
                    "left '{}' as it is: files changed since pt-snap installed it: \
                     ref/new.md (added); {hint} them",
                    at("cursor").display()
                ),
                format!(
                    "left '{}' as it is: it has no pt-snap install manifest ({MANIFEST}), so it \
                     was written by hand or by an older pt-snap; {hint} it",
                    at("codex").display()
                ),
            ]
        );
        assert_eq!(
            fs::read_to_string(at("claude").join("ref/notes.md")).unwrap(),
            "edited\n"
        );
        assert_eq!(
            fs::read_to_string(at("cursor").join("ref/new.md")).unwrap(),
            "mine"
        );
        assert_eq!(tree_of(&at("codex")), ["SKILL.md"]);
        let agents = v2
            .list(&ListTarget::Builtin {
                hosts: Some(vec![Host::Agents]),
                scopes: Some(vec![Scope::User]),
            })
            .unwrap();
        assert_eq!(agents[0].locations[0].status, Status::Installed);
        assert_eq!(agents[0].locations[0].local_changes, ["mine.md"]);

        // install --force is the explicit way to replace them; files the user added to a
        // copy pt-snap installed are still kept unless the new copy has a file there.
        fs::write(at("claude").join("mine.md"), "mine").unwrap();
        let forced = v2.install(&names(&["alpha"]), &every, true).unwrap();
        assert_eq!(
            actions(&forced),
            [
                ("alpha", Host::Agents, Action::AlreadyInstalled),
                ("alpha", Host::Claude, Action::Updated),
                ("alpha", Host::Cursor, Action::Updated),
                ("alpha", Host::Codex, Action::Updated),
            ]
        );
        assert_eq!(
            fs::read_to_string(at("claude").join("ref/notes.md")).unwrap(),
            "notes\n"
        );
        assert!(at("claude").join("mine.md").is_file());
        assert_eq!(
            fs::read_to_string(at("cursor").join("ref/new.md")).unwrap(),
            "new\n"
        );
        assert_eq!(
            tree_of(&at("codex")),
            [MANIFEST, "SKILL.md", "ref/new.md", "ref/notes.md"]
        );
    }
}
