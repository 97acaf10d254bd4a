//! Dataset reads against pt-snap-cli 0.4.1: every case of `tests/golden/dataset_query/`
//! (`overview`, `metadata`, `focus` and `query` on the reference's own native and msinsight
//! datasets of the multi-device fixture, and on the upstream 3-shard interop export) replayed
//! with our binary and compared field by field — rows, totals, flags, `scope` (fingerprints
//! included), error codes and messages (work-budget figures included). Then our dataset
//! answers are compared with our single-DB answers where spec §10.4 says they agree.

mod golden;

use std::collections::BTreeMap;
use std::path::PathBuf;

use golden::{
    case_files, compare, golden_root, ours_json, report, run_ours, run_ours_in, Case, Output,
};
use serde_json::Value;

fn sets() -> Vec<(String, PathBuf)> {
    let root = golden_root("dataset_query");
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(&root)
        .expect("tests/golden/dataset_query exists")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("dataset").is_dir())
        .map(|e| {
            // Canonical, as our outputs print it (the placeholder swap needs the same text).
            let dir = std::fs::canonicalize(e.path()).unwrap();
            (e.file_name().to_string_lossy().into_owned(), dir)
        })
        .collect();
    v.sort();
    v
}

/// Deliberate divergences (docs/compatibility.md) and run-specific paths.
fn normalise(case: &mut Case, ours: &mut Output) {
    // Focus files live in each run's own temp CWD.
    if let Some(o) = case.stdout_json.as_object_mut() {
        o.remove("focus_file");
    }
    if let Ok(mut v) = serde_json::from_str::<Value>(&ours.stdout) {
        if let Some(o) = v.as_object_mut() {
            o.remove("focus_file");
        }
        ours.stdout = serde_json::to_string(&v).unwrap();
    }
    // Bug 8: the overview text claims cross-slice queries are unavailable.
    if let Some(text) = &mut case.stdout_text {
        *text = text.replace(
            "structured frames and cross-slice queries unavailable.",
            "structured frames unavailable; cross-slice queries available.",
        );
    }
}

#[test]
fn dataset_reads_match_the_reference() {
    let mut failures = BTreeMap::new();
    let mut ran = 0;
    for (name, dir) in sets() {
        let ds = dir.join("dataset");
        for mut case in case_files(&dir.join("cases")) {
            let mut ours = run_ours(&case, &ds, &dir);
            normalise(&mut case, &mut ours);
            ran += 1;
            if let Err(e) = compare(&case, &ours) {
                failures.insert(format!("{name}/{}", case.name), e);
            }
        }
    }
    report("dataset_query", failures, ran);
    assert!(ran > 150, "only {ran} dataset cases found");
}

fn rows(v: &Value) -> Vec<Value> {
    v["rows"].as_array().cloned().unwrap_or_default()
}

/// Keeps only `keys` of every row.
fn project(rows: &[Value], keys: &[&str]) -> Vec<Value> {
    rows.iter()
        .map(|r| {
            Value::Object(
                keys.iter()
                    .map(|k| ((*k).to_owned(), r[*k].clone()))
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn dataset_answers_agree_with_the_single_database_where_the_spec_says_so() {
    let single = golden_root("query").join("multi_dev0/reference.db");
    let home = tempfile::tempdir().unwrap();
    for set in ["native", "msinsight"] {
        let ds = golden_root("dataset_query").join(set).join("dataset");
        let (ds, single) = (ds.to_str().unwrap(), single.to_str().unwrap());
        let q = |db: &str, template: &str, params: &str, extra: &[&str]| {
            let mut args = vec!["query", db, "--template-use", template, "--params", params];
            args.extend(extra);
            args.push("--json");
            ours_json(&args, home.path())
        };
        for (template, params) in [
            ("memory_peak", "{}"),
            ("allocator_gap", "{}"),
            ("preexisting_live", r#"{"event_id": 7467}"#),
            ("freed_block_lifetime", "{}"),
            ("callstack_analysis", "{}"),
        ] {
            let a = rows(&q(ds, template, params, &[]));
            let b = rows(&q(single, template, params, &[]));
            let keys: Vec<String> = b[0].as_object().unwrap().keys().cloned().collect();
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            assert_eq!(project(&a, &keys), b, "{set} {template}");
        }
        // Leaks: same blocks in the same order (ids of live dynamic blocks are alloc ids).
        let a = rows(&q(ds, "leak_detection", "{}", &[]));
        let b = rows(&q(single, "leak_detection", "{}", &[]));
        assert_eq!(
            project(&a, &["id", "address", "size", "allocEventId"]),
            b,
            "{set} leak_detection"
        );
        // Attribution at the peak: the same groups, sizes and percentages.
        let keys = [
            "callstack",
            "category",
            "block_count",
            "size_bytes",
            "size_gib",
            "requested_bytes",
            "percent_of_active_blocks",
        ];
        let a = rows(&q(
            ds,
            "active_memory_callstack_at_event",
            r#"{"event_id": 7467}"#,
            &[],
        ));
        let b = rows(&q(
            single,
            "active_memory_callstack_at_event",
            r#"{"event_id": 7467}"#,
            &[],
        ));
        assert_eq!(project(&a, &keys), project(&b, &keys), "{set} attribution");
        // Real events are identical; the dataset never returns boundary (negative) rows.
        let a = q(
            ds,
            "event",
            "{}",
            &[
                "--exact-total",
                "-n",
                "20000",
                "--max-work-bytes",
                "1000000000",
            ],
        );
        let b = q(
            single,
            "event",
            r#"{"min_id": 0}"#,
            &["--exact-total", "-n", "20000"],
        );
        assert_eq!(a["total"], 8132);
        // Every column `event` answers: the trace table's, and its callstack.
        let cols = [&pt_snap_db::schema::TRACE_COLUMNS[..], &["callstack"]].concat();
        assert_eq!(
            project(&rows(&a), &cols),
            project(&rows(&b), &cols),
            "{set} events"
        );
    }
}

/// The reference validates and merges from scratch on every call; we keep the validation and
/// the derived lifecycle databases. A second (and third) call with warm caches must give the
/// reference's answers too — budgets, scratch limit and `source_queries` included.
#[test]
fn warm_caches_give_the_reference_answers() {
    let dir = std::fs::canonicalize(golden_root("dataset_query").join("native")).unwrap();
    let ds = dir.join("dataset");
    let home = tempfile::tempdir().unwrap();
    let mut failures = BTreeMap::new();
    let mut ran = 0;
    let cases: Vec<Case> = case_files(&dir.join("cases"))
        .into_iter()
        .filter(|c| {
            [
                "leak_detection",
                "block",
                "freed_block_lifetime",
                "budget__",
                "memory_peak",
                "callstack_analysis",
                "active_",
            ]
            .iter()
            .any(|p| c.name.starts_with(p))
        })
        .collect();
    for round in 0..2 {
        for case in &cases {
            let ours = run_ours_in(home.path(), case, &ds, &dir);
            ran += 1;
            if let Err(e) = compare(case, &ours) {
                failures.insert(format!("round {round}: {}", case.name), e);
            }
        }
    }
    assert!(
        home.path().join(".cache/pt-snap/lifecycles").is_dir(),
        "no derived lifecycle database was kept"
    );
    report("dataset_query", failures, ran);
}
