//! Differential tests against pt-snap-cli 0.4.1: every fixture with a golden under
//! `tests/golden/import/` (made by the reference, see `tests/oracle/regen.sh`) is imported
//! by our binary and must give the same import JSON and a semantically equal database (the
//! canonical dump of `pt-snap-testkit`), or — where the reference refuses the file — the same
//! error code, or a consistent import where we deliberately accept what it cannot read
//! (docs/compatibility.md).

use std::path::{Path, PathBuf};
use std::process::Command;

use pt_snap_testkit::repo_root;
use serde_json::Value;

fn goldens() -> Vec<PathBuf> {
    pt_snap_testkit::files_below(&repo_root().join("tests/golden/import"), "json")
}

/// `real/x.pickle.device-1.json` → (`fixtures/real/x.pickle`, Some(1)).
fn fixture_of(golden: &Path) -> (PathBuf, Option<u32>) {
    let rel = golden
        .strip_prefix(repo_root().join("tests/golden/import"))
        .unwrap()
        .to_string_lossy()
        .trim_end_matches(".json")
        .to_owned();
    match rel.rsplit_once(".device-") {
        Some((file, d)) => (
            repo_root().join("fixtures").join(file),
            Some(d.parse().unwrap()),
        ),
        None => (repo_root().join("fixtures").join(rel), None),
    }
}

struct Run {
    exit: i32,
    stdout: String,
    stderr: String,
    db: Option<PathBuf>,
    _dir: tempfile::TempDir,
}

fn import(fixture: &Path, device: Option<u32>) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pt-snap"));
    cmd.arg("import")
        .arg(fixture)
        .arg("-o")
        .arg(dir.path())
        .args(["--json", "--no-focus"])
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env_remove("PT_SNAP_DB_PATH");
    if let Some(d) = device {
        cmd.args(["--device", &d.to_string()]);
    }
    let out = cmd.output().unwrap();
    let db = dir.path().join(format!(
        "{}.db",
        fixture.file_name().unwrap().to_string_lossy()
    ));
    Run {
        exit: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
        db: db.exists().then_some(db),
        _dir: dir,
    }
}

/// The import envelope without what legitimately differs: paths, time, importer identity.
fn normalise_import(mut v: Value) -> Value {
    let obj = v.as_object_mut().unwrap();
    obj.remove("db_path");
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in ["importer_name", "importer_version", "completed_at"] {
            meta.remove(k);
        }
    }
    v
}

/// Every event's totals are ordered and non-negative: what "imported consistently" means.
fn assert_consistent(db: &Path, what: &str) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let tables: Vec<String> = pt_snap_testkit::column(
        &conn,
        "SELECT name FROM sqlite_master WHERE name LIKE 'trace_entry_%'",
    );
    for t in tables {
        let bad: i64 = conn
            .query_row(
                &format!(
                    "SELECT count(*) FROM {t} WHERE NOT (0 <= allocated AND allocated <= active AND active <= reserved)"
                ),
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(
            bad, 0,
            "{what}: {t} has rows with allocated > active > reserved"
        );
    }
}

#[test]
fn imports_match_the_reference() {
    let goldens = goldens();
    assert!(goldens.len() >= 20, "goldens missing: {}", goldens.len());
    let mut failures = Vec::new();
    for golden in &goldens {
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(golden).unwrap()).unwrap();
        let (fixture, device) = fixture_of(golden);
        let name = golden.file_name().unwrap().to_string_lossy().into_owned();
        let run = import(&fixture, device);
        let expected_exit = expected["exit"].as_i64().unwrap() as i32;
        let refused_code = expected["error"]["error"]["code"].as_str();
        let crashed = expected["error"].get("uncaught_exception").is_some();
        if expected_exit == 0 {
            if run.exit != 0 {
                failures.push(format!(
                    "{name}: reference imports it, we exit {}: {}",
                    run.exit, run.stderr
                ));
                continue;
            }
            let ours = normalise_import(serde_json::from_str(&run.stdout).unwrap());
            let theirs = normalise_import(expected["import"].clone());
            if ours != theirs {
                failures.push(format!(
                    "{name}: import JSON differs\nours:   {ours}\ntheirs: {theirs}"
                ));
            }
            let canon = pt_snap_testkit::canonical_db(run.db.as_ref().unwrap()).unwrap();
            if canon != expected["db"] {
                failures.push(format!(
                    "{name}: database differs from the reference's{}",
                    first_difference(&canon, &expected["db"])
                ));
            }
        } else if let (Some(code), false) = (refused_code, run.exit == 0) {
            // Refused by both: same code, empty stdout, no DB left behind.
            let env: Value = serde_json::from_str(&run.stderr).unwrap_or(Value::Null);
            if env["error"]["code"] != code || !run.stdout.is_empty() || run.db.is_some() {
                failures.push(format!(
                    "{name}: expected {code}, got exit {} {}",
                    run.exit, run.stderr
                ));
            }
        } else if run.exit == 0 && (crashed || refused_code.is_some()) {
            // We accept what the reference cannot read; the result must be consistent.
            assert_consistent(run.db.as_ref().unwrap(), &name);
        } else {
            failures.push(format!(
                "{name}: exit {} vs reference {expected_exit}: {}",
                run.exit, run.stderr
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        goldens.len(),
        failures.join("\n\n")
    );
}

/// A short pointer to the first differing place, so a failure is readable.
fn first_difference(a: &Value, b: &Value) -> String {
    fn walk(a: &Value, b: &Value, path: String) -> Option<String> {
        // Both sides' members (absent on one side: `None`), each with its path.
        let members: Vec<(String, Option<&Value>, Option<&Value>)> = match (a, b) {
            (Value::Object(x), Value::Object(y)) => x
                .keys()
                .chain(y.keys())
                .map(|k| (format!("{path}.{k}"), x.get(k), y.get(k)))
                .collect(),
            (Value::Array(x), Value::Array(y)) => (0..x.len().max(y.len()))
                .map(|i| (format!("{path}[{i}]"), x.get(i), y.get(i)))
                .collect(),
            _ => return Some(format!(" at {path}: ours {a} vs theirs {b}")),
        };
        let (path, x, y) = members.into_iter().find(|(_, x, y)| x != y)?;
        walk(x.unwrap_or(&Value::Null), y.unwrap_or(&Value::Null), path)
    }
    walk(a, b, String::new()).unwrap_or_default()
}
