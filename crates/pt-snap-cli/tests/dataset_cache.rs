//! What dataset reads keep between calls — the verified validation, the indexed lifecycle
//! databases and the per-shard callstack groups — is named after the dataset's fingerprint
//! (the manifest's and every member's SHA-256): a shard whose bytes change is refused until
//! its manifest says so, and then it is a different dataset whose answers are computed
//! afresh, never an earlier call's.

use std::path::{Path, PathBuf};
use std::process::Command;

use pt_snap_db::rusqlite::Connection;
use pt_snap_testkit::{copy_dir, repo_root};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// `(exit code, JSON answer or error)` of `query <ds> --template-use <template> --params <params>
/// <extra> --json` with `home` as HOME; `cache: false` disables every kept cache.
fn query(
    ds: &Path,
    home: &Path,
    cache: bool,
    template: &str,
    params: &str,
    extra: &[&str],
) -> (i32, Value) {
    std::fs::create_dir_all(home).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pt-snap"));
    cmd.arg("query")
        .arg(ds)
        .args(["--template-use", template, "--params", params])
        .args(extra)
        .arg("--json")
        .current_dir(home)
        .env("HOME", home)
        .env_remove("XDG_CACHE_HOME")
        .env_remove("PT_SNAP_DB_PATH")
        .env_remove("PT_SNAP_MAX_WORK_ROWS")
        .env_remove("PT_SNAP_MAX_WORK_BYTES")
        .env_remove("PT_SNAP_MAX_SCRATCH_DB_BYTES");
    if cache {
        cmd.env_remove("PT_SNAP_DATASET_CACHE");
    } else {
        cmd.env("PT_SNAP_DATASET_CACHE", "off");
    }
    let out = cmd.output().unwrap();
    // Failures are reported as JSON on stderr.
    let body = if out.status.success() {
        &out.stdout
    } else {
        &out.stderr
    };
    let json = serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("{template}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), json)
}

/// The cached queries: the lifecycle templates (kept indexed database) and
/// `callstack_analysis` (kept callstack groups), on device 0 of the native golden dataset.
const QUERIES: [(&str, &str, &[&str]); 5] = [
    (
        "block",
        "{}",
        &["--device", "0", "-n", "20", "--exact-total"],
    ),
    (
        "block",
        r#"{"order_by": "allocEventId", "order_dir": "ASC", "min_size": 1000}"#,
        &["--device", "0", "-n", "7"],
    ),
    ("freed_block_lifetime", "{}", &["--device", "0"]),
    ("leak_detection", "{}", &["--device", "0", "-n", "10"]),
    ("callstack_analysis", "{}", &["--device", "0", "-n", "50"]),
];

fn answers(ds: &Path, home: &Path, cache: bool) -> Vec<Value> {
    QUERIES
        .iter()
        .map(|(t, p, extra)| {
            let (code, json) = query(ds, home, cache, t, p, extra);
            assert_eq!(code, 0, "{t} {p}: {json}");
            json
        })
        .collect()
}

/// Answers equal to a cache-less call's, template by template (short messages: the answers
/// are long).
fn same(ours: &[Value], fresh: &[Value], when: &str) {
    for (i, (t, p, _)) in QUERIES.iter().enumerate() {
        assert!(
            ours[i] == fresh[i],
            "{when}: {t} {p} differs from a cache-less call"
        );
    }
}

fn cached_files(home: &Path) -> Vec<String> {
    let dir = home.join(".cache/pt-snap/lifecycles");
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn set_member_hash(ds: &Path, file: &str) {
    let sha: String = Sha256::digest(std::fs::read(ds.join(file)).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let path = ds.join("manifest.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut found = false;
    for device in manifest["devices"].as_object_mut().unwrap().values_mut() {
        for slice in device["slices"].as_array_mut().unwrap() {
            if slice["file"] == file {
                slice["sha256"] = Value::String(sha.clone());
                found = true;
            }
        }
    }
    assert!(found, "{file} in the manifest");
    std::fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
}

#[test]
fn a_changed_shard_never_meets_an_earlier_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let ds: PathBuf = root.join("ds.pt-snap-native-v2");
    copy_dir(
        &repo_root().join("tests/golden/dataset_query/native/dataset"),
        &ds,
    );
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();

    // Cold, then warm from the kept derivations: the answers of a cache-less call.
    let fresh = answers(&ds, &root.join("fresh-home-0"), false);
    let cold = answers(&ds, &home, true);
    let warm = answers(&ds, &home, true);
    same(&cold, &fresh, "cold");
    same(&warm, &fresh, "warm");
    let before = warm;
    let kept = cached_files(&home);
    assert!(
        kept.iter().any(|f| f.ends_with(".db")) && kept.iter().any(|f| f.ends_with(".stacks.json")),
        "derivations kept: {kept:?}"
    );

    // A lifecycle database kept by an earlier layout (no `layout` in its description) is
    // rebuilt, not read.
    let lifecycles = home.join(".cache/pt-snap/lifecycles");
    let described: Vec<&String> = kept
        .iter()
        .filter(|f| f.ends_with("slices0_1_2.json"))
        .collect();
    assert_eq!(described.len(), 1, "{kept:?}");
    for f in described {
        let path = lifecycles.join(f);
        let mut meta: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(meta["layout"], 2, "{f}");
        meta.as_object_mut().unwrap().remove("layout");
        std::fs::write(&path, serde_json::to_vec(&meta).unwrap()).unwrap();
        std::fs::write(path.with_extension("db"), b"not a database").unwrap();
    }
    same(&answers(&ds, &home, true), &fresh, "old layout");

    // Change shard 0 of device 0: one callstack text every callstack_analysis row shows, and
    // the size of a block lifetime observed only there (allocated and freed in the shard).
    let member = "device_0/slice_00000.db";
    {
        let conn = Connection::open(ds.join(member)).unwrap();
        let changed = conn
            .execute(
                "UPDATE callstack SET callstack = callstack || ' [changed]' WHERE id = (SELECT \
                 callstackId FROM trace_entry_0 WHERE id>=0 AND callstackId IS NOT NULL GROUP \
                 BY callstackId ORDER BY SUM(size) DESC LIMIT 1)",
                [],
            )
            .unwrap();
        assert_eq!(changed, 1);
        let end: i64 = conn
            .query_row("SELECT MAX(id) FROM trace_entry_0", [], |r| r.get(0))
            .unwrap();
        let changed = conn
            .execute(
                "UPDATE block_0 SET size = (SELECT MAX(size) FROM block_0) * 2 + 512 WHERE id = \
                 (SELECT id FROM block_0 WHERE allocEventId>=0 AND freeEventId>allocEventId AND \
                 freeEventId<=? ORDER BY id LIMIT 1)",
                [end],
            )
            .unwrap();
        assert_eq!(changed, 1);
        // And an allocation's size, which the kept callstack groups sum.
        let changed = conn
            .execute(
                "UPDATE trace_entry_0 SET size = size + 4096 WHERE id = (SELECT MIN(id) FROM \
                 trace_entry_0 WHERE id>=0 AND action=4 AND callstackId IS NOT NULL)",
                [],
            )
            .unwrap();
        assert_eq!(changed, 1);
    }

    // The manifest still vouches for the old bytes: refused, never answered from the caches.
    for (t, p, extra) in QUERIES {
        let (code, json) = query(&ds, &home, true, t, p, extra);
        assert_ne!(code, 0, "{t}: {json}");
        assert_eq!(
            json["error"]["code"], "DATABASE_SCHEMA_INVALID",
            "{t}: {json}"
        );
    }

    // Vouched for: a new fingerprint, whose answers are computed afresh — those of a
    // cache-less call, and not the earlier ones.
    set_member_hash(&ds, member);
    let fresh = answers(&ds, &root.join("fresh-home-1"), false);
    let cold = answers(&ds, &home, true);
    let warm = answers(&ds, &home, true);
    same(&cold, &fresh, "cold after the change");
    same(&warm, &fresh, "warm after the change");
    let print = |v: &Value| v["scope"]["fingerprint"].as_str().unwrap().to_owned();
    assert_ne!(print(&warm[0]), print(&before[0]), "a new fingerprint");
    for (i, (t, p, _)) in QUERIES.iter().enumerate() {
        // Leaks: the changed lifetime is not a survivor.
        if *t != "leak_detection" {
            assert_ne!(
                warm[i]["rows"], before[i]["rows"],
                "{t} {p}: the change shows"
            );
        }
    }
    let now = cached_files(&home);
    assert!(
        now.len() > kept.len() && kept.iter().all(|f| now.contains(f)),
        "new derivations beside the old ones: {kept:?} → {now:?}"
    );
}

/// Full validation reads each shard's `dictionary` against the single database's codes
/// (`pt_snap_db::schema`): a native shard whose manifest vouches for its bytes is still
/// refused when an action or a block state is named otherwise, or its `oom` row is missing.
#[test]
fn a_vouched_for_shard_with_a_wrong_dictionary_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let member = "device_0/slice_00000.db";
    for (i, sql) in [
        "UPDATE dictionary SET value = 'malloc' WHERE \"column\" = 'action' AND key = '4'",
        "UPDATE dictionary SET value = 'pending' WHERE \"column\" = 'state' AND key = '0'",
        "DELETE FROM dictionary WHERE \"column\" = 'action' AND key = '8'",
    ]
    .into_iter()
    .enumerate()
    {
        let ds = root.join(format!("ds{i}.pt-snap-native-v2"));
        copy_dir(
            &repo_root().join("tests/golden/dataset_query/native/dataset"),
            &ds,
        );
        let (code, _) = query(
            &ds,
            &root.join("home"),
            false,
            "block",
            "{}",
            &["--device", "0"],
        );
        assert_eq!(code, 0, "the untouched dataset answers");
        let changed = Connection::open(ds.join(member))
            .unwrap()
            .execute(sql, [])
            .unwrap();
        assert_eq!(changed, 1, "{sql}");
        set_member_hash(&ds, member);
        let (code, json) = query(
            &ds,
            &root.join(format!("home{i}")),
            false,
            "block",
            "{}",
            &["--device", "0"],
        );
        assert_ne!(code, 0, "{sql}: {json}");
        assert_eq!(
            json["error"]["code"], "DATABASE_SCHEMA_INVALID",
            "{sql}: {json}"
        );
    }
}
