//! `pt-snap skill list|install|upgrade|uninstall`: the agent skills shipped in the binary
//! (spec §12). Their JSON is not enveloped: `{skills}` and `{results, restart_required,
//! restart_hint}`, as in the reference, plus `warnings` when there are any (files or folders
//! that uninstall or upgrade left in place); in text mode those go to stderr as `warning: …`.

use std::path::Path;

use pt_snap_contract::python;
use pt_snap_skills::{
    text, Host, ListTarget, MutationResult, Report, Scope, SkillError, Skills, Target, RESTART_HINT,
};
use serde_json::json;

use crate::cli::{SkillArgs, SkillCommand, SkillListArgs, SkillUninstallArgs};
use crate::error::{CliError, CliResult};

pub fn run(args: &SkillArgs) -> CliResult {
    match &args.command {
        SkillCommand::List(a) => list(a),
        SkillCommand::Install(a) => {
            let m = Mutation::new(&a.names, a.target.as_deref(), a.project, a.dir.as_deref())?;
            let report = m.run(|skills, target| skills.install(&a.names, target, a.force))?;
            print_report(&report, a.json);
            Ok(())
        }
        SkillCommand::Upgrade(a) => {
            let m = Mutation::new(&a.names, a.target.as_deref(), a.project, a.dir.as_deref())?;
            let report = m.run(|skills, target| skills.upgrade(&a.names, target))?;
            print_report(&report, a.json);
            Ok(())
        }
        SkillCommand::Uninstall(a) => uninstall(a),
    }
}

fn skill_error(e: SkillError) -> CliError {
    CliError::skill_error(e.to_string())
}

fn conflict(message: &str, hint: &str) -> CliError {
    CliError::invalid_parameter(message, hint)
}

/// `--dir` excludes the flags that choose built-in folders (checked before anything else, as
/// the reference does). An empty `--target ""` counts as not given here.
fn check_dir_conflicts(
    dir: Option<&Path>,
    target: Option<&str>,
    project: bool,
    user: bool,
) -> CliResult {
    if dir.is_none() {
        return Ok(());
    }
    if target.is_some_and(|t| !t.is_empty()) {
        return Err(conflict(
            "--dir cannot be combined with --target.",
            "Use either --dir or --target.",
        ));
    }
    if project {
        return Err(conflict(
            "--dir cannot be combined with --project.",
            "Use either --dir or --project.",
        ));
    }
    if user {
        return Err(conflict(
            "--dir cannot be combined with --user.",
            "Use either --dir or --user.",
        ));
    }
    Ok(())
}

/// `--target` as given: `None` when absent (or replaced by `--dir`), else the validated host
/// list. The empty-list check comes before the catalog is read, the name check after.
fn split_targets(
    target: Option<&str>,
    dir: Option<&Path>,
) -> Result<Option<Vec<String>>, CliError> {
    match (target, dir) {
        (Some(t), None) => Ok(Some(
            Host::split_targets(t)
                .map_err(skill_error)?
                .into_iter()
                .map(str::to_owned)
                .collect(),
        )),
        _ => Ok(None),
    }
}

fn parse_hosts(items: Option<Vec<String>>) -> Result<Option<Vec<Host>>, CliError> {
    items
        .map(|items| items.iter().map(|h| Host::parse(h)).collect())
        .transpose()
        .map_err(skill_error)
}

fn list(a: &SkillListArgs) -> CliResult {
    if a.project && a.user {
        return Err(conflict(
            "--project and --user cannot be used together.",
            "Choose either --project or --user.",
        ));
    }
    check_dir_conflicts(a.dir.as_deref(), a.target.as_deref(), a.project, a.user)?;
    let items = split_targets(a.target.as_deref(), a.dir.as_deref())?;
    let skills = Skills::from_process().map_err(skill_error)?;
    let target = match &a.dir {
        Some(dir) => ListTarget::Dir(dir.clone()),
        None => ListTarget::Builtin {
            hosts: parse_hosts(items)?,
            scopes: match (a.project, a.user) {
                (true, _) => Some(vec![Scope::Project]),
                (_, true) => Some(vec![Scope::User]),
                _ => None,
            },
        },
    };
    let listings = skills.list(&target).map_err(skill_error)?;
    if a.json {
        println!("{}", python::pretty_ascii(&json!({ "skills": listings })));
    } else if listings.is_empty() {
        println!("No bundled agent skills are available.");
    } else {
        print!(
            "{}",
            text::listings(&listings, crate::output::terminal_columns())
        );
    }
    Ok(())
}

/// Flag checks, target parsing and catalog loading shared by install and upgrade, in the
/// reference's order of failures.
struct Mutation {
    skills: Skills,
    target: Target,
}

impl Mutation {
    fn new(
        names: &[String],
        target: Option<&str>,
        project: bool,
        dir: Option<&Path>,
    ) -> Result<Mutation, CliError> {
        check_dir_conflicts(dir, target, project, false)?;
        let items = split_targets(target, dir)?;
        let skills = Skills::from_process().map_err(skill_error)?;
        skills.catalog().resolve(names).map_err(skill_error)?;
        let target = match dir {
            Some(dir) => Target::Dir(dir.to_path_buf()),
            None => Target::Builtin {
                hosts: parse_hosts(items)?,
                scope: if project { Scope::Project } else { Scope::User },
            },
        };
        Ok(Mutation { skills, target })
    }

    fn run(
        &self,
        op: impl FnOnce(&Skills, &Target) -> Result<Report, SkillError>,
    ) -> Result<Report, CliError> {
        op(&self.skills, &self.target).map_err(skill_error)
    }
}

/// Without `--target`, `--project` or `--dir`, every copy `skill list` would find goes.
fn uninstall(a: &SkillUninstallArgs) -> CliResult {
    let m = Mutation::new(&a.names, a.target.as_deref(), a.project, a.dir.as_deref())?;
    let everywhere = a.target.is_none() && !a.project && a.dir.is_none();
    let report = if everywhere {
        m.skills
            .uninstall_everywhere(&a.names)
            .map_err(skill_error)?
    } else {
        m.run(|skills, target| skills.uninstall(&a.names, target))?
    };
    print_report(&report, a.json);
    Ok(())
}

fn print_report(report: &Report, json: bool) {
    if json {
        println!(
            "{}",
            python::pretty_ascii(&serde_json::to_value(report).expect("reports serialise"))
        );
        return;
    }
    if report.results.is_empty() {
        println!("No matching skills were found.");
        return;
    }
    for item in &report.results {
        println!(
            "{} {} -> {}",
            action_label(item),
            item.name,
            destination(item)
        );
    }
    if report.restart_required() {
        println!();
        println!("{RESTART_HINT}");
    }
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
}

fn action_label(item: &MutationResult) -> &'static str {
    use pt_snap_skills::Action;
    match item.action {
        Action::AlreadyInstalled => "Already installed",
        Action::Updated => "Updated",
        Action::Installed => "Installed",
        Action::NotInstalled => "Not installed",
        Action::Uninstalled => "Uninstalled",
        Action::Kept => "Kept",
    }
}

fn destination(item: &MutationResult) -> String {
    match item.host {
        Host::Custom => item.path.display().to_string(),
        host => format!("{} ({host}, {})", item.path.display(), item.scope),
    }
}
