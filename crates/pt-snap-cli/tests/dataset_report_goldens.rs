//! `report peak-memory` and `report memory-tree` on sharded datasets against pt-snap-cli
//! 0.4.1: every case of `tests/golden/dataset_report/` (made by
//! `tests/oracle/regen_dataset_reports.sh`: native and msinsight datasets of the multi-device
//! fixture, both devices, and of the expandable fixture) replayed with our binary and
//! compared field by field — the report JSON with its `scope`, `source_coverage` and dataset
//! columns, the text, the error codes and messages (work-budget figures included).
//!
//! Twice: on the reference's own datasets where they are committed (byte-exact: the
//! dataset query goldens' multi-device datasets, fingerprints included), and on the
//! datasets our import makes of the same fixtures with the same arguments, where only the
//! fingerprint (shard hashes differ) and the paths are normalised.

mod common;
mod golden;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::import_into;
use golden::{case_files, compare, golden_root, ours_json, report, run_ours, Case};
use pt_snap_testkit::{repo_root, strings_of};
use serde_json::Value;

const FINGERPRINT: &str = "<FINGERPRINT>";

/// (name, canonical set dir, set.json) of every set.
fn sets() -> Vec<(String, PathBuf, Value)> {
    let root = golden_root("dataset_report");
    let mut v: Vec<(String, PathBuf, Value)> = std::fs::read_dir(&root)
        .expect("tests/golden/dataset_report exists")
        .filter_map(Result::ok)
        .filter_map(|e| {
            let meta = std::fs::read(e.path().join("set.json")).ok()?;
            // Canonical, as our outputs print dataset paths (the placeholder swap needs
            // the same text).
            Some((
                e.file_name().to_string_lossy().into_owned(),
                std::fs::canonicalize(e.path()).unwrap(),
                serde_json::from_slice(&meta).unwrap(),
            ))
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// The case with `fingerprint` replaced by a placeholder in every recorded output.
fn without_fingerprint(case: &Case, fingerprint: &str) -> Case {
    let swap = |v: &Value| -> Value {
        serde_json::from_str(&v.to_string().replace(fingerprint, FINGERPRINT)).unwrap()
    };
    let mut c = golden::case_clone(case);
    c.stdout_json = swap(&c.stdout_json);
    c.stderr_json = swap(&c.stderr_json);
    c.stdout_text = c.stdout_text.map(|t| t.replace(fingerprint, FINGERPRINT));
    c
}

fn replay(
    set: &str,
    dir: &Path,
    ds: &Path,
    fingerprints: Option<(&str, &str)>,
) -> BTreeMap<String, String> {
    let mut failures = BTreeMap::new();
    for case in case_files(&dir.join("cases")) {
        let mut ours = run_ours(&case, ds, dir);
        let want = match fingerprints {
            Some((reference, mine)) => {
                ours.stdout = ours.stdout.replace(mine, FINGERPRINT);
                ours.stderr = ours.stderr.replace(mine, FINGERPRINT);
                without_fingerprint(&case, reference)
            }
            None => golden::case_clone(&case),
        };
        if let Err(e) = compare(&want, &ours) {
            failures.insert(format!("{set}/{}", case.name), e);
        }
    }
    failures
}

#[test]
fn dataset_reports_equal_the_reference_on_its_own_datasets() {
    let mut failures = BTreeMap::new();
    let mut ran = 0;
    for (name, dir, meta) in sets() {
        let Some(rel) = meta["dataset"].as_str() else {
            continue;
        };
        let ds = std::fs::canonicalize(dir.join(rel)).unwrap();
        ran += case_files(&dir.join("cases")).len();
        failures.extend(replay(&name, &dir, &ds, None));
    }
    report("dataset_report", failures, ran);
    assert!(ran > 80, "only {ran} cases on the reference's datasets");
}

/// Imports `fixture` with our binary (`import_args`) into a temp dir: the dataset's
/// canonical path and fingerprint.
fn import_dataset(fixture: &str, import_args: &[String]) -> (tempfile::TempDir, PathBuf, String) {
    let tmp = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| -> Value { ours_json(args, tmp.path()) };
    let source = repo_root().join(fixture);
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let mut args = import_into(&source, &out_dir);
    args.extend(import_args.iter().map(String::as_str));
    let imported = run(&args);
    let ds = std::fs::canonicalize(imported["dataset_path"].as_str().unwrap()).unwrap();
    let overview = run(&["overview", ds.to_str().unwrap(), "--json"]);
    let fingerprint = overview["dataset"]["fingerprint"]
        .as_str()
        .unwrap()
        .to_owned();
    (tmp, ds, fingerprint)
}

#[test]
fn dataset_reports_equal_the_reference_on_our_datasets() {
    let mut failures = BTreeMap::new();
    let mut ran = 0;
    for (name, dir, meta) in sets() {
        let import_args = strings_of(&meta["import_args"]);
        let (_tmp, ds, mine) = import_dataset(meta["fixture"].as_str().unwrap(), &import_args);
        let reference = meta["fingerprint"].as_str().unwrap();
        ran += case_files(&dir.join("cases")).len();
        failures.extend(replay(&name, &dir, &ds, Some((reference, &mine))));
    }
    report("dataset_report", failures, ran);
    assert!(ran > 150, "only {ran} cases on our datasets");
}
