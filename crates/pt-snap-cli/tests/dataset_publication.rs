//! Publication rules of dataset imports (spec §10.2–10.3) that the oracle goldens cannot
//! express: a failed import leaves an existing dataset exactly as it was, nothing staged is
//! left behind, an unrecognised or tampered target is handled as the reference handles it, and
//! an msinsight export is never replaced.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pt_snap_testkit::copy_from_repo;
use serde_json::Value;

const FIXTURE: &str = "fixtures/synthetic/caseB_expandable.pkl";

struct Work {
    _dir: tempfile::TempDir,
    root: PathBuf,
    source: PathBuf,
}

fn work() -> Work {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("home")).unwrap();
    let source = root.join("caseB_expandable.pkl");
    copy_from_repo(FIXTURE, &source);
    Work {
        _dir: dir,
        root,
        source,
    }
}

impl Work {
    fn import(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_pt-snap"))
            .arg("import")
            .arg(&self.source)
            .args(["--json", "--no-focus"])
            .args(args)
            .current_dir(&self.root)
            .env("HOME", self.root.join("home"))
            .output()
            .unwrap()
    }

    fn native(&self) -> PathBuf {
        self.root.join("caseB_expandable.pkl.pt-snap-native-v2")
    }

    /// Every file under the work dir (but the home) with its bytes.
    fn files(&self) -> BTreeMap<String, Vec<u8>> {
        fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let rel = path
                    .strip_prefix(base)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if rel == "home" {
                    continue;
                }
                if path.is_dir() {
                    out.insert(rel + "/", Vec::new());
                    walk(base, &path, out);
                } else {
                    out.insert(rel, std::fs::read(&path).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.root, &self.root, &mut out);
        out
    }
}

fn error_of(out: &Output) -> (String, String) {
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stderr).unwrap();
    (
        v["error"]["code"].as_str().unwrap().to_owned(),
        v["error"]["message"].as_str().unwrap().to_owned(),
    )
}

fn ok_json(out: &Output) -> Value {
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_failed_forced_rebuild_leaves_the_dataset_as_it_was() {
    let w = work();
    ok_json(&w.import(&["--events-per-slice", "3"]));
    let before = w.files();
    // Same name, bytes that do not replay: the rebuild fails after the old dataset was
    // recognised.
    copy_from_repo("fixtures/synthetic/caseD_inconsistent.pkl", &w.source);
    let (code, message) = error_of(&w.import(&["--events-per-slice", "3", "--force"]));
    assert_eq!(code, "IMPORT_FAILED");
    assert!(
        message.starts_with("Dataset import backend failed: Replay failed for device 0, slice"),
        "{message}"
    );
    let mut after = w.files();
    after.remove("caseB_expandable.pkl");
    let mut before = before;
    before.remove("caseB_expandable.pkl");
    assert_eq!(
        before, after,
        "the dataset changed or staging files were left behind"
    );
}

#[test]
fn a_forced_rebuild_replaces_the_dataset_and_leaves_nothing_else() {
    let w = work();
    ok_json(&w.import(&["--events-per-slice", "3"]));
    let v = ok_json(&w.import(&["--events-per-slice", "2", "--force"]));
    assert_eq!(v["cache_miss_reason"], "forced");
    assert_eq!(v["slice_count"], 4);
    let names: Vec<String> = w.files().into_keys().collect();
    let native = "caseB_expandable.pkl.pt-snap-native-v2/";
    let expected: Vec<String> = ["caseB_expandable.pkl".to_owned(), native.to_owned()]
        .into_iter()
        .chain([
            format!("{native}device_0/"),
            format!("{native}manifest.json"),
        ])
        .chain((0..4).map(|i| format!("{native}device_0/slice_{i:05}.db")))
        .collect();
    let mut expected = expected;
    expected.sort();
    assert_eq!(names, expected);
    // And it is reusable as it is.
    let again = ok_json(&w.import(&["--events-per-slice", "2"]));
    assert_eq!(again["reused"], true);
}

#[test]
fn a_tampered_member_makes_the_dataset_invalid_but_still_replaceable() {
    let w = work();
    ok_json(&w.import(&["--events-per-slice", "3"]));
    let shard = w.native().join("device_0/slice_00000.db");
    let mut bytes = std::fs::read(&shard).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&shard, bytes).unwrap();
    let (_, message) = error_of(&w.import(&["--events-per-slice", "3"]));
    assert_eq!(
        message,
        "Existing dataset is not reusable (database_invalid); use --force to replace this recognized native artifact. Existing target and focus preserved."
    );
    let v = ok_json(&w.import(&["--events-per-slice", "3", "--force"]));
    assert_eq!(v["reused"], false);
    assert_eq!(
        ok_json(&w.import(&["--events-per-slice", "3"]))["reused"],
        true
    );
}

#[test]
fn an_unrecognised_target_is_preserved_even_under_force() {
    let w = work();
    std::fs::create_dir(w.native()).unwrap();
    std::fs::write(w.native().join("notes.txt"), "mine").unwrap();
    let before = w.files();
    for args in [
        &["--events-per-slice", "3"][..],
        &["--events-per-slice", "3", "--force"],
    ] {
        let (code, message) = error_of(&w.import(args));
        assert_eq!(code, "IMPORT_FAILED");
        assert_eq!(
            message,
            "Existing target is not a recognized native dataset; preserved: manifest.json: missing: artifact file missing"
        );
    }
    assert_eq!(before, w.files());
}

#[test]
fn an_msinsight_export_is_reused_but_never_replaced() {
    let w = work();
    let msinsight = |events_per_slice: &str, extra: &[&str]| {
        let mut args = vec![
            "--format",
            "msinsight",
            "--events-per-slice",
            events_per_slice,
        ];
        args.extend_from_slice(extra);
        w.import(&args)
    };
    let first = ok_json(&msinsight("3", &[]));
    assert_eq!(first["format"], "compatibility-v1");
    let before = w.files();
    let reused = ok_json(&msinsight("3", &["--force"]));
    assert_eq!(reused["reused"], true);
    let (_, message) = error_of(&msinsight("2", &["--force"]));
    assert_eq!(
        message,
        "Existing compatible output is not reusable; preserved even under --force. Choose a new output directory: Source/options/format identity changed"
    );
    assert_eq!(before, w.files());
}

#[test]
fn option_rules() {
    let w = work();
    let invalid = |args: &[&str], want: &str| {
        let out = w.import(args);
        let v: Value = serde_json::from_slice(&out.stderr).unwrap();
        assert_eq!(v["error"]["code"], "INVALID_PARAMETER", "{args:?}");
        assert_eq!(v["error"]["message"], want, "{args:?}");
    };
    invalid(
        &["--events-per-slice", "0"],
        "events_per_slice must be a positive integer.",
    );
    invalid(
        &["--format", "pt-snap-native-v2"],
        "pt-snap-native-v2 requires --events-per-slice; single-db forbids it.",
    );
    invalid(
        &["--format", "single-db", "--events-per-slice", "3"],
        "pt-snap-native-v2 requires --events-per-slice; single-db forbids it.",
    );
    // The format may be named explicitly.
    let v = ok_json(&w.import(&["--format", "pt-snap-native-v2", "--events-per-slice", "3"]));
    assert_eq!(v["format"], "pt-snap-native-v2");
}
