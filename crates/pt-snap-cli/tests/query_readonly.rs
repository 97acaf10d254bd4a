//! No query can write: after every template has run (and `capabilities`, `--template-info`,
//! `--exact-total` and a timeout on top), the database file's bytes and mtime are unchanged
//! and no journal, WAL or temporary file appeared beside it.

use std::path::Path;
use std::process::Command;

use pt_snap_testkit::copy_from_repo;
use sha2::{Digest, Sha256};

fn pt_snap(db: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pt-snap"))
        .arg("query")
        .arg(db)
        .args(args)
        .env("HOME", db.parent().unwrap())
        .current_dir(db.parent().unwrap())
        .env_remove("PT_SNAP_DB_PATH")
        .env_remove("PT_SNAP_QUERY_TIMEOUT")
        .output()
        .unwrap()
}

fn fingerprint(dir: &Path, db: &Path) -> (Vec<String>, String, std::time::SystemTime) {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let digest = Sha256::digest(std::fs::read(db).unwrap());
    let hex = digest.iter().map(|b| format!("{b:02x}")).collect();
    (
        names,
        hex,
        std::fs::metadata(db).unwrap().modified().unwrap(),
    )
}

#[test]
fn every_template_leaves_the_database_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("snapshot.db");
    copy_from_repo("tests/golden/query/empty_cache/reference.db", &db);
    let before = fingerprint(dir.path(), &db);

    let peak = pt_snap(&db, &["--template-use", "memory_peak", "--json"]);
    assert!(peak.status.success());
    let peak: serde_json::Value = serde_json::from_slice(&peak.stdout).unwrap();
    let event = peak["rows"][0]["peak_active_event_id"].as_i64().unwrap();
    let at_event = format!("{{\"event_id\": {event}}}");
    let with_stacks = format!("{{\"event_id\": {event}, \"stack_bytes\": 40}}");
    let runs: Vec<Vec<&str>> = vec![
        vec!["--template-use", "allocation", "-n", "5", "--exact-total"],
        vec![
            "--template-use",
            "block",
            "--params",
            r#"{"offset": 3, "limit": 2}"#,
        ],
        vec![
            "--template-use",
            "event",
            "--params",
            r#"{"stack_bytes": 8}"#,
            "-n",
            "3",
        ],
        vec!["--template-use", "event_frames", "--params", &at_event],
        vec![
            "--template-use",
            "active_memory_callstack_at_event",
            "--params",
            &with_stacks,
            "--exact-total",
        ],
        vec![
            "--template-use",
            "active_memory_frame_tree_at_event",
            "--params",
            &at_event,
        ],
        vec!["--template-use", "freed_block_lifetime"],
        vec!["--template-use", "leak_detection", "-n", "10"],
        vec!["--template-use", "preexisting_live", "--params", &at_event],
        vec![
            "--template-use",
            "active_blocks_at_event",
            "--params",
            &at_event,
            "--exact-total",
        ],
        vec!["--template-use", "allocator_gap"],
        vec!["--template-use", "callstack_analysis"],
        vec![
            "--template-use",
            "memory_peak",
            "--params",
            r#"{"start_id": 5, "end_id": 50}"#,
        ],
        vec!["--template-use", "callstack_analysis", "--timeout", "1e-9"],
        vec!["--template-info", "event"],
    ];
    for args in runs {
        let mut with_json = args.clone();
        with_json.push("--json");
        for a in [args, with_json] {
            let out = pt_snap(&db, &a);
            let timed = a.contains(&"--timeout");
            assert_eq!(
                out.status.success(),
                !timed,
                "{a:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    assert_eq!(fingerprint(dir.path(), &db), before);
}
