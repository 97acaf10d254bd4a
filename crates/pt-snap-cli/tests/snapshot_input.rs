//! Every command that reads a database also takes a snapshot (issue 35): the snapshot is
//! imported beside itself through the reuse cache, as `pt-snap import PATH --no-focus` would,
//! and the command answers exactly as it does on that database. The focus is left alone.

mod common;

use std::fs;
use std::path::Path;

use common::{ok_json, pt_snap};
use pt_snap_testkit::repo_root;
use serde_json::Value;

fn scratch_with(fixture: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let name = Path::new(fixture).file_name().unwrap();
    fs::copy(repo_root().join(fixture), root.join(name)).unwrap();
    (dir, root.join(name))
}

/// The document without the keys that name the path it was asked about.
fn without_paths(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("db_path");
        o.remove("focus_source");
    }
    v
}

#[test]
fn read_commands_take_a_snapshot_and_answer_as_on_its_database() {
    let (_dir, snapshot) =
        scratch_with("fixtures/upstream-pkg/snapshots/snapshot_with_empty_cache.pkl");
    let root = snapshot.parent().unwrap();
    let s = snapshot.to_str().unwrap();
    let db = root.join("snapshot_with_empty_cache.pkl.db");
    let d = db.to_str().unwrap();
    let commands: [&[&str]; 5] = [
        &["report", "peak-memory", "-n", "3", "--json"],
        &["report", "memory-tree", "--event-id", "100", "--json"],
        &["query", "--template-use", "memory_peak", "--json"],
        &["overview", "--json"],
        &["metadata", "--json"],
    ];
    for args in commands {
        let (command, rest) = args.split_at(if args[0] == "report" { 2 } else { 1 });
        let on = |path: &str| {
            let mut all: Vec<&str> = command.to_vec();
            all.push(path);
            all.extend_from_slice(rest);
            ok_json(root, &all)
        };
        let from_snapshot = on(s);
        assert!(
            db.is_file(),
            "{args:?}: the database is beside the snapshot"
        );
        assert_eq!(
            from_snapshot.get("db_path").and_then(Value::as_str),
            from_snapshot.get("db_path").map(|_| d),
            "{args:?}: db_path names the database read"
        );
        assert_eq!(
            without_paths(from_snapshot),
            without_paths(on(d)),
            "{args:?}"
        );
    }
    assert!(!root.join(".pt-snap").exists(), "the focus is left alone");
    // The import was made once and reused after.
    let text = pt_snap(root, &["report", "peak-memory", s]);
    assert!(text.status.success(), "{text:?}");
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("Peak"),
        "{text:?}"
    );
}

#[test]
fn a_trace_the_replay_refuses_says_how_to_read_it_anyway() {
    let (_dir, snapshot) = scratch_with("fixtures/synthetic/caseD_inconsistent.pkl");
    let root = snapshot.parent().unwrap();
    let out = pt_snap(
        root,
        &[
            "report",
            "peak-memory",
            snapshot.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let envelope: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(envelope["error"]["code"], "IMPORT_FAILED");
    let hint = envelope["error"]["hint"].as_str().unwrap();
    assert!(
        hint.contains("pt-snap import --lenient") && hint.contains("'pt-snap report peak-memory'"),
        "{hint}"
    );
    assert!(!root.join("caseD_inconsistent.pkl.db").exists());
}
