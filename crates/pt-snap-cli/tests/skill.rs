//! `pt-snap skill …` end to end: the built binary with a temporary HOME and working directory,
//! never the real ones.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use pt_snap_testkit::{element_where, object_keys, string_fields, tree_of};
use serde_json::{json, Value};

/// The bundled skills, in listing order: what the binary embeds (the catalog's own test pins
/// the names).
fn bundled() -> Vec<String> {
    let catalog = pt_snap_skills::Catalog::embedded().unwrap();
    catalog
        .skills()
        .iter()
        .map(|s| s.name().to_owned())
        .collect()
}

const RESTART_HINT: &str =
    "Restart the agent after install, upgrade, or uninstall so the skill change takes effect.";
const SKILL_HINT: &str = "Use 'pt-snap skill list --json' and check --target / --dir options.";

struct Sandbox {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    cwd: PathBuf,
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Output {
    fn json(&self) -> Value {
        assert_eq!(self.code, 0, "stderr: {}", self.stderr);
        serde_json::from_str(&self.stdout).expect("stdout is JSON")
    }

    /// The error envelope of a failed `--json` run: exit 1, nothing on stdout.
    fn error(&self) -> Value {
        assert_eq!(self.code, 1, "stdout: {}", self.stdout);
        assert_eq!(self.stdout, "");
        let v: Value = serde_json::from_str(&self.stderr).expect("stderr is JSON");
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["ok"], false);
        v["error"].clone()
    }
}

impl Sandbox {
    fn new() -> Sandbox {
        let tmp = tempfile::tempdir().unwrap();
        // Canonical, as the process sees its working directory.
        let root = tmp.path().canonicalize().unwrap();
        let home = root.join("home");
        let cwd = root.join("work");
        fs::create_dir_all(&home).unwrap();
        fs::create_dir_all(&cwd).unwrap();
        Sandbox {
            _tmp: tmp,
            home,
            cwd,
        }
    }

    fn run_with(&self, args: &[&str], env: &[(&str, &Path)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pt-snap"));
        cmd.args(args)
            .current_dir(&self.cwd)
            .env("HOME", &self.home)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("PT_SNAP_SKILLS_DIR")
            .env_remove("COLUMNS");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[])
    }

    /// `skill uninstall pt-snap-helper -t <targets> --json`: its report.
    fn uninstall_helper(&self, targets: &str) -> Value {
        self.run(&[
            "skill",
            "uninstall",
            "pt-snap-helper",
            "-t",
            targets,
            "--json",
        ])
        .json()
    }

    fn user_skill(&self, host: &str, name: &str) -> PathBuf {
        self.home.join(format!(".{host}/skills/{name}"))
    }

    fn status(&self, args: &[&str], name: &str) -> Value {
        let mut all = vec!["skill", "list", "--json"];
        all.extend_from_slice(args);
        let listing = self.run(&all).json();
        element_where(&listing["skills"], "name", name).clone()
    }
}

fn results(report: &Value) -> Vec<(String, String, String, String)> {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_owned();
            (s("name"), s("host"), s("scope"), s("action"))
        })
        .collect()
}

#[test]
fn list_json_shape() {
    let sb = Sandbox::new();
    let listing = sb.run(&["skill", "list", "--json"]).json();
    assert_eq!(object_keys(&listing), ["skills"]);
    let skills = listing["skills"].as_array().unwrap();
    let names: Vec<&str> = skills.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, bundled());
    for skill in skills {
        assert_eq!(
            object_keys(skill),
            ["name", "description", "source_dir", "status", "locations"]
        );
        assert!(!skill["description"].as_str().unwrap().is_empty());
        assert_eq!(skill["source_dir"], Value::Null);
        assert_eq!(skill["status"], "missing");
        let name = skill["name"].as_str().unwrap();
        let mut expected = Vec::new();
        for (scope, base) in [("user", &sb.home), ("project", &sb.cwd)] {
            for host in ["agents", "claude", "cursor", "codex"] {
                let path = base.join(format!(".{host}/skills/{name}"));
                expected.push(json!({
                    "host": host,
                    "scope": scope,
                    "path": path.to_str().unwrap(),
                    "status": "missing",
                }));
            }
        }
        assert_eq!(skill["locations"], Value::Array(expected));
    }
}

#[test]
fn install_defaults_to_agents_and_claude_and_then_lists_installed() {
    let sb = Sandbox::new();
    let report = sb.run(&["skill", "install", "--json"]).json();
    assert_eq!(
        object_keys(&report),
        ["results", "restart_required", "restart_hint"]
    );
    assert_eq!(report["restart_required"], true);
    assert_eq!(report["restart_hint"], RESTART_HINT);
    let expected: Vec<_> = bundled()
        .iter()
        .flat_map(|n| {
            ["agents", "claude"]
                .map(|h| (n.to_string(), h.into(), "user".into(), "installed".into()))
        })
        .collect();
    assert_eq!(results(&report), expected);
    let first = &report["results"][0];
    assert_eq!(
        object_keys(first),
        ["name", "host", "scope", "path", "action"]
    );
    assert_eq!(
        first["path"],
        sb.user_skill("agents", &bundled()[0]).to_str().unwrap()
    );
    for name in bundled() {
        for host in ["agents", "claude"] {
            let md = fs::read_to_string(sb.user_skill(host, &name).join("SKILL.md")).unwrap();
            assert!(md.starts_with(&format!("---\nname: {name}\n")), "{name}");
        }
    }
    // Nothing else was written beside the skills (no staging or backup folders).
    let entries: Vec<_> = fs::read_dir(sb.home.join(".claude/skills"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(entries.len(), bundled().len(), "{entries:?}");

    let helper = sb.status(&[], "pt-snap-helper");
    assert_eq!(helper["status"], "installed");
    let statuses = string_fields(&helper["locations"], "status");
    assert_eq!(
        statuses,
        [
            "installed",
            "installed",
            "missing",
            "missing",
            "missing",
            "missing",
            "missing",
            "missing"
        ]
    );

    let again = sb
        .run(&["skill", "install", "pt-snap-helper", "--json"])
        .json();
    assert_eq!(again["restart_required"], false);
    assert_eq!(again["restart_hint"], Value::Null);
    assert!(results(&again).iter().all(|r| r.3 == "already_installed"));
}

#[test]
fn an_outdated_copy_is_replaced_only_with_force() {
    let sb = Sandbox::new();
    sb.run(&["skill", "install", "pt-snap-helper", "--json"])
        .json();
    let edited = sb.user_skill("claude", "pt-snap-helper").join("SKILL.md");
    fs::write(&edited, "my local notes\n").unwrap();
    let claude = sb.status(&["--target", "claude", "--user"], "pt-snap-helper");
    assert_eq!(claude["status"], "outdated");

    let refused = sb.run(&["skill", "install", "pt-snap-helper", "--json"]);
    assert_eq!(
        refused.error(),
        json!({
            "code": "SKILL_ERROR",
            "message": format!(
                "Skill 'pt-snap-helper' already exists at '{}' and differs from the bundled \
                 copy. Re-run with --force to replace it.",
                sb.user_skill("claude", "pt-snap-helper").display()
            ),
            "hint": SKILL_HINT,
        })
    );
    assert_eq!(fs::read_to_string(&edited).unwrap(), "my local notes\n");

    let text = sb.run(&["skill", "install", "pt-snap-helper"]);
    assert_eq!(text.code, 1);
    assert!(text
        .stderr
        .starts_with("Error: Skill 'pt-snap-helper' already exists"));

    let forced = sb
        .run(&["skill", "install", "pt-snap-helper", "--force", "--json"])
        .json();
    assert_eq!(
        results(&forced),
        [
            (
                "pt-snap-helper".into(),
                "agents".into(),
                "user".into(),
                "already_installed".into()
            ),
            (
                "pt-snap-helper".into(),
                "claude".into(),
                "user".into(),
                "updated".into()
            ),
        ]
    );
    assert_eq!(forced["restart_required"], true);
    assert_eq!(sb.status(&[], "pt-snap-helper")["status"], "installed");
}

#[test]
fn upgrade_refreshes_outdated_copies_only() {
    let sb = Sandbox::new();
    sb.run(&["skill", "install", "pt-snap-setup", "--json"])
        .json();
    // A deleted installed file makes the copy outdated; a file the user added does not, and
    // upgrade keeps it (it used to delete it).
    fs::remove_file(sb.user_skill("agents", "pt-snap-setup").join("SKILL.md")).unwrap();
    fs::write(
        sb.user_skill("agents", "pt-snap-setup").join("extra.md"),
        "x",
    )
    .unwrap();
    let report = sb.run(&["skill", "upgrade", "--json"]).json();
    let actions: Vec<_> = results(&report)
        .into_iter()
        .filter(|r| r.0 == "pt-snap-setup" || r.0 == "pt-snap-helper")
        .map(|r| (r.0, r.1, r.3))
        .collect();
    assert_eq!(
        actions,
        [
            (
                "pt-snap-helper".into(),
                "agents".into(),
                "not_installed".into()
            ),
            (
                "pt-snap-helper".into(),
                "claude".into(),
                "not_installed".into()
            ),
            ("pt-snap-setup".into(), "agents".into(), "updated".into()),
            (
                "pt-snap-setup".into(),
                "claude".into(),
                "already_installed".into()
            ),
        ]
    );
    assert!(sb
        .user_skill("agents", "pt-snap-setup")
        .join("extra.md")
        .is_file());
    assert!(sb
        .user_skill("agents", "pt-snap-setup")
        .join("SKILL.md")
        .is_file());
    assert!(report.get("warnings").is_none());
    assert!(!sb.user_skill("agents", "pt-snap-helper").exists());
}

#[test]
fn uninstall_removes_every_copy_and_reports_the_rest() {
    let sb = Sandbox::new();
    sb.run(&["skill", "install", "pt-snap-helper", "--json"])
        .json();
    sb.run(&[
        "skill",
        "install",
        "pt-snap-helper",
        "--project",
        "-t",
        "codex",
        "--json",
    ])
    .json();
    let report = sb
        .run(&[
            "skill",
            "uninstall",
            "pt-snap-helper",
            "pt-snap-leak-free",
            "--json",
        ])
        .error();
    assert_eq!(report["code"], "SKILL_ERROR");

    let report = sb
        .run(&["skill", "uninstall", "pt-snap-helper", "--json"])
        .json();
    assert_eq!(
        results(&report),
        [
            (
                "pt-snap-helper".into(),
                "agents".into(),
                "user".into(),
                "uninstalled".into()
            ),
            (
                "pt-snap-helper".into(),
                "claude".into(),
                "user".into(),
                "uninstalled".into()
            ),
            (
                "pt-snap-helper".into(),
                "codex".into(),
                "project".into(),
                "uninstalled".into()
            ),
        ]
    );
    assert!(!sb.user_skill("agents", "pt-snap-helper").exists());
    assert!(!sb.cwd.join(".codex/skills/pt-snap-helper").exists());

    let text = sb.run(&["skill", "uninstall", "pt-snap-helper"]);
    assert_eq!(text.code, 0);
    assert_eq!(
        text.stdout,
        format!(
            "Not installed pt-snap-helper -> {} (agents, user)\n\
             Not installed pt-snap-helper -> {} (claude, user)\n",
            sb.user_skill("agents", "pt-snap-helper").display(),
            sb.user_skill("claude", "pt-snap-helper").display()
        )
    );
}

#[test]
fn project_scope_goes_below_the_working_directory() {
    let sb = Sandbox::new();
    let text = sb.run(&["skill", "install", "pt-snap-leak", "--project"]);
    assert_eq!(text.code, 1);
    let out = sb.run(&[
        "skill",
        "install",
        "pt-snap-memory-leak",
        "--project",
        "-t",
        "cursor",
    ]);
    let dest = sb.cwd.join(".cursor/skills/pt-snap-memory-leak");
    assert_eq!(
        out.stdout,
        format!(
            "Installed pt-snap-memory-leak -> {} (cursor, project)\n\n{RESTART_HINT}\n",
            dest.display()
        )
    );
    assert!(dest.join("SKILL.md").is_file());
    let listed = sb.status(&["--project"], "pt-snap-memory-leak");
    assert_eq!(listed["status"], "installed");
    assert_eq!(listed["locations"].as_array().unwrap().len(), 4);
    assert_eq!(listed["locations"][2]["path"], dest.to_str().unwrap());
    assert!(!sb.home.join(".cursor").exists());
}

#[test]
fn a_custom_dir_is_host_custom() {
    let sb = Sandbox::new();
    let dir = sb.cwd.join("my-skills");
    let d = dir.to_str().unwrap();
    let report = sb
        .run(&["skill", "install", "pt-snap-helper", "--dir", d, "--json"])
        .json();
    assert_eq!(
        report["results"],
        json!([{
            "name": "pt-snap-helper",
            "host": "custom",
            "scope": "user",
            "path": dir.join("pt-snap-helper").to_str().unwrap(),
            "action": "installed",
        }])
    );
    let helper = sb.status(&["--dir", d], "pt-snap-helper");
    assert_eq!(helper["status"], "installed");
    assert_eq!(helper["locations"].as_array().unwrap().len(), 1);
    assert_eq!(helper["locations"][0]["host"], "custom");

    let text = sb.run(&["skill", "list", "--dir", d]);
    assert!(
        text.stdout
            .starts_with("pt-snap-ascend-npu-collect\n  Status     missing\n  Locations  —\n"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains(&format!(
        "pt-snap-helper\n  Status     installed\n  Locations  {d}\n"
    )));

    let removed = sb
        .run(&["skill", "uninstall", "--dir", d, "pt-snap-helper", "--json"])
        .json();
    assert_eq!(results(&removed)[0].3, "uninstalled");
    assert!(!dir.join("pt-snap-helper").exists());

    let conflict = sb.run(&["skill", "install", "--dir", d, "-t", "claude", "--json"]);
    assert_eq!(
        conflict.error(),
        json!({
            "code": "INVALID_PARAMETER",
            "message": "--dir cannot be combined with --target.",
            "hint": "Use either --dir or --target.",
        })
    );
}

#[test]
fn unknown_skill_names_are_a_skill_error() {
    let sb = Sandbox::new();
    let err = sb
        .run(&[
            "skill",
            "install",
            "nope",
            "pt-snap-helper",
            "bogus",
            "--json",
        ])
        .error();
    assert_eq!(
        err,
        json!({
            "code": "SKILL_ERROR",
            "message": format!("Unknown skill(s): nope, bogus. Available: {}", bundled().join(", ")),
            "hint": SKILL_HINT,
        })
    );
    assert!(!sb.home.join(".agents").exists(), "nothing installed");
}

#[test]
fn bad_target_values_are_a_skill_error() {
    let sb = Sandbox::new();
    let err = sb
        .run(&["skill", "list", "--target", "claude,bogus", "--json"])
        .error();
    assert_eq!(
        err,
        json!({
            "code": "SKILL_ERROR",
            "message": "Unknown skill target 'bogus'. Choose from: agents, claude, cursor, codex",
            "hint": SKILL_HINT,
        })
    );
    let err = sb.run(&["skill", "install", "-t", " , ", "--json"]).error();
    assert_eq!(err["message"], "Skill target list must not be empty.");
    let err = sb
        .run(&["skill", "list", "--project", "--user", "--json"])
        .error();
    assert_eq!(err["code"], "INVALID_PARAMETER");
    // Hosts are case-insensitive and trimmed.
    let ok = sb.run(&["skill", "list", "-t", " Codex ", "--json"]).json();
    assert_eq!(ok["skills"][0]["locations"][0]["host"], "codex");
}

#[test]
fn a_skill_command_without_subcommand_is_a_usage_error() {
    let sb = Sandbox::new();
    assert_eq!(sb.run(&["skill"]).code, 2);
    let out = sb.run(&["skill", "list", "--bogus", "--json"]);
    assert_eq!(out.code, 2);
    let v: Value = serde_json::from_str(&out.stderr).unwrap();
    assert_eq!(v["error"]["code"], "INVALID_PARAMETER");
}

#[test]
fn pt_snap_skills_dir_replaces_the_catalog() {
    let sb = Sandbox::new();
    let catalog = sb.cwd.join("catalog");
    fs::create_dir_all(catalog.join("my-skill")).unwrap();
    fs::write(
        catalog.join("my-skill/SKILL.md"),
        "---\nname: my-skill\ndescription: Mine. Really.\n---\nbody\n",
    )
    .unwrap();
    let listing = sb
        .run_with(
            &["skill", "list", "--json"],
            &[("PT_SNAP_SKILLS_DIR", &catalog)],
        )
        .json();
    let skills = listing["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 1);
    assert_eq!(skills[0]["name"], "my-skill");
    assert_eq!(skills[0]["description"], "Mine. Really.");
    assert_eq!(
        skills[0]["source_dir"],
        catalog.join("my-skill").to_str().unwrap()
    );
    let text = sb.run_with(&["skill", "list"], &[("PT_SNAP_SKILLS_DIR", &catalog)]);
    assert_eq!(
        text.stdout,
        "my-skill\n  Status     missing\n  Locations  —\n  Mine.\n"
    );

    let empty = sb.cwd.join("empty");
    fs::create_dir_all(&empty).unwrap();
    let err = sb
        .run_with(
            &["skill", "list", "--json"],
            &[("PT_SNAP_SKILLS_DIR", &empty)],
        )
        .error();
    assert_eq!(
        err["message"],
        format!(
            "PT_SNAP_SKILLS_DIR is not a skill catalog: {}",
            empty.display()
        )
    );
}

const MANIFEST: &str = ".pt-snap-skill.json";

#[test]
fn install_then_uninstall_leaves_nothing_behind() {
    let sb = Sandbox::new();
    sb.run(&["skill", "install", "--json"]).json();
    assert_eq!(
        tree_of(&sb.user_skill("claude", "pt-snap-helper")),
        [MANIFEST, "SKILL.md"]
    );
    let report = sb.run(&["skill", "uninstall", "--json"]).json();
    assert_eq!(
        object_keys(&report),
        ["results", "restart_required", "restart_hint"]
    );
    assert!(results(&report).iter().all(|r| r.3 == "uninstalled"));
    for host in ["agents", "claude"] {
        let root = sb.home.join(format!(".{host}/skills"));
        assert_eq!(tree_of(&root), Vec::<String>::new(), "{host}");
    }
}

#[test]
fn uninstall_leaves_a_same_named_folder_the_user_wrote() {
    let sb = Sandbox::new();
    let mine = sb.user_skill("claude", "pt-snap-helper");
    fs::create_dir_all(&mine).unwrap();
    fs::write(
        mine.join("SKILL.md"),
        "---\nname: pt-snap-helper\n---\nmine\n",
    )
    .unwrap();
    fs::write(mine.join("notes.md"), "my notes").unwrap();
    let listed = sb.status(&["-t", "claude", "--user"], "pt-snap-helper");
    assert_eq!(
        listed["locations"][0],
        json!({
            "host": "claude",
            "scope": "user",
            "path": mine.to_str().unwrap(),
            "status": "outdated",
            "managed": false,
        })
    );

    let text = sb.run(&["skill", "uninstall", "pt-snap-helper"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert_eq!(
        text.stdout,
        format!("Kept pt-snap-helper -> {} (claude, user)\n", mine.display())
    );
    let warning = format!(
        "left '{}' in place: it has no pt-snap install manifest ({MANIFEST}), so it was written \
         by hand or by an older pt-snap; delete it yourself if it is no longer needed",
        mine.display()
    );
    assert_eq!(text.stderr, format!("warning: {warning}\n"));
    assert_eq!(tree_of(&mine), ["SKILL.md", "notes.md"]);

    let report = sb.uninstall_helper("claude");
    assert_eq!(
        object_keys(&report),
        ["results", "restart_required", "restart_hint", "warnings"]
    );
    assert_eq!(report["results"][0]["action"], "kept");
    assert_eq!(report["restart_required"], false);
    assert_eq!(report["warnings"], json!([warning]));
    assert_eq!(tree_of(&mine), ["SKILL.md", "notes.md"]);

    // Nor does upgrade replace it.
    let upgraded = sb.run(&["skill", "upgrade", "pt-snap-helper", "--json"]);
    let upgraded = upgraded.json();
    assert_eq!(upgraded["results"][1]["action"], "kept");
    assert_eq!(upgraded["warnings"].as_array().unwrap().len(), 1);
    assert_eq!(tree_of(&mine), ["SKILL.md", "notes.md"]);
}

#[test]
fn uninstall_keeps_files_the_user_added_or_modified() {
    let sb = Sandbox::new();
    sb.run(&["skill", "install", "pt-snap-helper", "--json"])
        .json();
    let agents = sb.user_skill("agents", "pt-snap-helper");
    let claude = sb.user_skill("claude", "pt-snap-helper");
    fs::create_dir_all(agents.join("scripts")).unwrap();
    fs::write(agents.join("scripts/mine.sh"), "echo mine").unwrap();
    fs::write(claude.join("SKILL.md"), "my edits\n").unwrap();

    let listed = sb.status(&["--user"], "pt-snap-helper");
    assert_eq!(listed["locations"][0]["status"], "installed");
    assert_eq!(listed["locations"][0]["managed"], true);
    assert_eq!(
        listed["locations"][0]["local_changes"],
        json!(["scripts/mine.sh"])
    );
    assert_eq!(listed["locations"][1]["status"], "outdated");
    assert_eq!(listed["locations"][1]["local_changes"], json!(["SKILL.md"]));
    assert_eq!(
        object_keys(&listed["locations"][2]),
        ["host", "scope", "path", "status"]
    );

    // Upgrade does not overwrite the user's edit.
    let upgraded = sb
        .run(&["skill", "upgrade", "pt-snap-helper", "--json"])
        .json();
    assert_eq!(
        results(&upgraded)
            .into_iter()
            .map(|r| r.3)
            .collect::<Vec<_>>(),
        ["already_installed", "kept"]
    );
    assert_eq!(
        upgraded["warnings"],
        json!([format!(
            "left '{}' as it is: files changed since pt-snap installed it: SKILL.md (modified); \
             'pt-snap skill install pt-snap-helper --force' replaces them",
            claude.display()
        )])
    );
    assert_eq!(
        fs::read_to_string(claude.join("SKILL.md")).unwrap(),
        "my edits\n"
    );

    let report = sb.uninstall_helper("agents,claude");
    assert_eq!(
        results(&report)
            .into_iter()
            .map(|r| (r.1, r.3))
            .collect::<Vec<_>>(),
        [
            ("agents".to_owned(), "uninstalled".to_owned()),
            ("claude".to_owned(), "kept".to_owned()),
        ]
    );
    assert_eq!(report["restart_required"], true);
    assert_eq!(
        report["warnings"],
        json!([
            format!(
                "kept '{}' with 1 file(s) pt-snap did not install or that changed since: \
                 scripts/mine.sh (added)",
                agents.display()
            ),
            format!(
                "kept '{}' with 1 file(s) pt-snap did not install or that changed since: \
                 SKILL.md (modified)",
                claude.display()
            ),
        ])
    );
    // The installed files and manifests are gone; the user's files are not.
    assert_eq!(tree_of(&agents), ["scripts/mine.sh"]);
    assert_eq!(tree_of(&claude), ["SKILL.md"]);
    assert_eq!(
        fs::read_to_string(claude.join("SKILL.md")).unwrap(),
        "my edits\n"
    );
}

#[test]
fn an_install_without_manifest_is_left_with_a_warning() {
    let sb = Sandbox::new();
    sb.run(&["skill", "install", "pt-snap-setup", "-t", "codex", "--json"])
        .json();
    let dest = sb.user_skill("codex", "pt-snap-setup");
    // What an older pt-snap, or the reference, leaves behind.
    fs::remove_file(dest.join(MANIFEST)).unwrap();
    let listed = sb.status(&["-t", "codex", "--user"], "pt-snap-setup");
    assert_eq!(listed["locations"][0]["status"], "installed");
    assert_eq!(listed["locations"][0]["managed"], false);

    let out = sb.run(&["skill", "uninstall", "pt-snap-setup", "-t", "codex"]);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.starts_with("Kept pt-snap-setup -> "),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr
            .starts_with(&format!("warning: left '{}' in place", dest.display())),
        "{}",
        out.stderr
    );
    assert_eq!(tree_of(&dest), ["SKILL.md"]);

    // Installing over the identical copy adopts it; uninstall then removes it.
    let again = sb
        .run(&["skill", "install", "pt-snap-setup", "-t", "codex", "--json"])
        .json();
    assert_eq!(results(&again)[0].3, "already_installed");
    assert_eq!(tree_of(&dest), [MANIFEST, "SKILL.md"]);
    let out = sb.run(&["skill", "uninstall", "pt-snap-setup", "-t", "codex"]);
    assert_eq!(out.stderr, "");
    assert!(!dest.exists());
}
