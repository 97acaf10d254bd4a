//! `pt-snap report oom` on the OOM fixtures: its free-space figures, verdict and memory
//! categories are checked against the replay's own state at each OOM event (pt-snap-replay's
//! `Replayer`, straight from the decoded snapshot, not through the database and its
//! templates).

mod common;

use std::path::{Path, PathBuf};

use common::pt_snap;
use pt_snap_model::BlockState;
use pt_snap_replay::Replayer;
use serde_json::Value;

/// `report oom --json` on a copy of `fixture`, checked against the command's contract.
fn report(fixture: &Path, dir: &Path) -> Value {
    let copy = dir.join(fixture.file_name().unwrap());
    std::fs::copy(fixture, &copy).unwrap();
    let out = pt_snap(dir, &["report", "oom", copy.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    pt_snap_report::commands::find("report oom")
        .unwrap()
        .check_document(&v, false)
        .unwrap();
    v
}

/// The replay's state of `device` right after trace position `position`.
fn replayed_at(snapshot: &pt_snap_model::Snapshot, device: usize, position: usize) -> Replayer<'_> {
    let mut r = Replayer::new(snapshot, device).unwrap();
    // After undoing every later event the state is the one right after the OOM event.
    while r.remaining() > position + 1 {
        r.undo_last().unwrap().unwrap();
    }
    r
}

fn decode(fixture: &Path) -> pt_snap_model::Snapshot {
    let bytes = std::fs::read(fixture).unwrap();
    pt_snap_model::decode(&bytes[..], &mut |_| {}).unwrap()
}

/// Free bytes inside the replayed segments at trace position `position` of `device`, by
/// stream, and the largest free run of each stream: computed from the replay's state.
fn replayed_free(fixture: &Path, device: usize, position: usize) -> Vec<(i64, i64, i64)> {
    let snapshot = decode(fixture);
    let r = replayed_at(&snapshot, device, position);
    let mut by_stream: Vec<(i64, i64, i64)> = Vec::new();
    for s in r.segments() {
        let mut cursor = s.address;
        let mut gaps = Vec::new();
        let mut blocks: Vec<_> = s
            .blocks()
            .filter(|b| b.state != BlockState::Inactive)
            .collect();
        blocks.sort_by_key(|b| b.address);
        for b in blocks {
            if b.address > cursor {
                gaps.push(b.address - cursor);
            }
            cursor = cursor.max(b.address + b.size);
        }
        if s.address + s.total_size > cursor {
            gaps.push(s.address + s.total_size - cursor);
        }
        let entry = match by_stream.iter_mut().find(|e| e.0 == s.stream) {
            Some(e) => e,
            None => {
                by_stream.push((s.stream, 0, 0));
                by_stream.last_mut().unwrap()
            }
        };
        entry.1 += gaps.iter().sum::<i64>();
        entry.2 = entry.2.max(gaps.iter().copied().max().unwrap_or(0));
    }
    by_stream
}

fn fixtures() -> Vec<PathBuf> {
    let mut out =
        vec![pt_snap_testkit::repo_root().join("fixtures/synthetic/synth_small_2dev_oom.pkl")];
    if let Some(shared) = pt_snap_testkit::shared_fixtures() {
        out.push(shared.join("real/cuda_code_location__memory_snapshot_OOM.pickle"));
    }
    out
}

#[test]
fn free_space_and_verdict_match_the_replayed_state() {
    for fixture in fixtures() {
        let dir = tempfile_dir(&fixture);
        let v = report(&fixture, &dir);
        let events = v["events"].as_array().unwrap();
        assert!(!events.is_empty(), "{}: an OOM fixture", fixture.display());
        assert_eq!(v["oom_events"], events.len());
        for e in events {
            let device = e["device"].as_u64().unwrap() as usize;
            let position = e["event_id"].as_u64().unwrap() as usize;
            let stream = e["stream"].as_i64().unwrap();
            let replayed = replayed_free(&fixture, device, position);
            let total: i64 = replayed.iter().map(|r| r.1).sum();
            assert_eq!(e["all_cached_free_bytes"], total, "{}", fixture.display());
            // The request's stream, both pools: the report splits it by pool.
            let mut stream_free = e["pool_stream_free"]["total_bytes"].as_i64().unwrap();
            let mut stream_largest = e["pool_stream_free"]["largest_block_bytes"]
                .as_i64()
                .unwrap();
            for o in e["other_free"].as_array().unwrap() {
                if o["stream"] == stream {
                    stream_free += o["total_bytes"].as_i64().unwrap();
                    stream_largest = stream_largest.max(o["largest_block_bytes"].as_i64().unwrap());
                }
            }
            let (_, free, largest) = replayed
                .iter()
                .find(|r| r.0 == stream)
                .copied()
                .unwrap_or_default();
            assert_eq!(stream_free, free);
            assert_eq!(stream_largest, largest);
            // The verdict from the numbers, by the contract's rules.
            let rounded = e["rounded_bytes"].as_i64().unwrap();
            let own = e["pool_stream_free"]["total_bytes"].as_i64().unwrap();
            let fits = e["pool_stream_free"]["blocks_fitting"].as_i64().unwrap();
            let device_free = e["device_free"]
                .as_i64()
                .expect("our import keeps device_free");
            let expected = if fits > 0 {
                "block_fits"
            } else if total + device_free < rounded {
                "capacity"
            } else if own + device_free >= rounded {
                "fragmentation"
            } else {
                "other_pools_or_streams"
            };
            assert_eq!(e["verdict"], expected, "{}", e["arithmetic"]);
        }
    }
}

#[test]
fn the_synthetic_oom_is_capacity_with_its_device_free() {
    let fixture = pt_snap_testkit::repo_root().join("fixtures/synthetic/synth_small_2dev_oom.pkl");
    let dir = tempfile_dir(&fixture);
    let v = report(&fixture, &dir);
    for e in v["events"].as_array().unwrap() {
        // The fixture's oom entries say device_free = 123 and ask for 1 TiB.
        assert_eq!(e["device_free"], 123);
        assert_eq!(e["requested_bytes"], 1_i64 << 40);
        assert_eq!(e["verdict"], "capacity");
    }
    assert_eq!(v["category_rules"], "builtin");
    let text = pt_snap(&dir, &["report", "oom", "synth_small_2dev_oom.pkl"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("Verdict: capacity"), "{text}");
    // The synthetic frames match no built-in rule; the pre-trace block has no stack.
    assert!(
        text.contains("Live by category:\n  A heuristic from allocation callstacks"),
        "{text}"
    );
    assert!(text.contains("[no-rule-matched]"), "{text}");
    assert!(text.contains("[no-allocation-event]"), "{text}");
}

/// The categories at each OOM add up exactly to the blocks live in the replayed state
/// (allocated and pending-free), bytes and blocks.
#[test]
fn categories_add_up_to_the_replayed_live_blocks() {
    for fixture in fixtures() {
        let dir = tempfile_dir(&fixture);
        let v = report(&fixture, &dir);
        let snapshot = decode(&fixture);
        for e in v["events"].as_array().unwrap() {
            let device = e["device"].as_u64().unwrap() as usize;
            let position = e["event_id"].as_u64().unwrap() as usize;
            let r = replayed_at(&snapshot, device, position);
            let live: Vec<i64> = r
                .segments()
                .flat_map(|s| {
                    s.blocks()
                        .filter(|b| b.state != BlockState::Inactive)
                        .map(|b| b.size)
                        .collect::<Vec<_>>()
                })
                .collect();
            let rows = e["categories"].as_array().unwrap();
            let sum = |k: &str| rows.iter().map(|r| r[k].as_i64().unwrap()).sum::<i64>();
            assert_eq!(
                sum("bytes"),
                live.iter().sum::<i64>(),
                "{}",
                fixture.display()
            );
            assert_eq!(sum("blocks"), live.len() as i64, "{}", fixture.display());
            assert!(!rows.is_empty());
            for row in rows {
                assert!(!row["rule"].as_str().unwrap().is_empty(), "{row}");
            }
        }
    }
}

/// `--categories`: the file's rules replace the built-in ones, and every row names its rule.
#[test]
fn a_rules_file_replaces_the_builtin_categories() {
    let fixture = pt_snap_testkit::repo_root().join("fixtures/synthetic/synth_small_2dev_oom.pkl");
    let dir = tempfile_dir(&fixture);
    std::fs::copy(&fixture, dir.join("oom.pkl")).unwrap();
    let oom_report = |rules: &str| {
        pt_snap(
            &dir,
            &["report", "oom", "oom.pkl", "--categories", rules, "--json"],
        )
    };
    std::fs::write(
        dir.join("rules.toml"),
        "[[rule]]\nname = \"fn-b\"\ncategory = \"activation\"\nfile = 'synthetic_B\\.py$'\n",
    )
    .unwrap();
    let out = oom_report("rules.toml");
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["category_rules"], "custom");
    let rows = &v["events"][0]["categories"];
    // synthetic_B.py's block (2 KiB) by the file's rule; the rest matches none.
    assert_eq!(rows[0]["category"], "activation");
    assert_eq!(rows[0]["rule"], "fn-b");
    assert_eq!(rows[0]["bytes"], 2048);
    std::fs::write(
        dir.join("bad.toml"),
        "[[rule]]\nname = 'x'\ncategory = 'weights'\nfile = 'a'\n",
    )
    .unwrap();
    let out = oom_report("bad.toml");
    assert_eq!(out.status.code(), Some(1));
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(err["error"]["code"], "INVALID_PARAMETER");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("bad.toml") && message.contains("unknown category 'weights'"),
        "{message}"
    );
}

#[test]
fn a_snapshot_without_oom_says_so() {
    let fixture = pt_snap_testkit::repo_root().join("fixtures/synthetic/caseA_legacy_free.pkl");
    let dir = tempfile_dir(&fixture);
    let v = report(&fixture, &dir);
    assert_eq!(v["oom_events"], 0);
    assert_eq!(v["events"], serde_json::json!([]));
    let out = pt_snap(&dir, &["report", "oom", "caseA_legacy_free.pkl"]);
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().starts_with("No OOM"));
}

/// A database the reference made has no pt_snap_x_oom: device_free is unknown, plainly.
#[test]
fn a_reference_database_has_device_free_unknown() {
    // The reference's import of synth_small_1dev.pkl, which has one oom event.
    let golden = pt_snap_testkit::repo_root().join("tests/golden/query/synth_1dev/reference.db");
    let dir = tempfile_dir(&golden);
    let db = dir.join("reference.db");
    std::fs::copy(&golden, &db).unwrap();
    let out = pt_snap(&dir, &["report", "oom", "reference.db", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["oom_events"], 1);
    for e in v["events"].as_array().unwrap() {
        assert!(e["device_free"].is_null());
    }
    let text = pt_snap(&dir, &["report", "oom", "reference.db"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("device_free: unknown"), "{text}");
}

/// A fresh scratch directory per test and fixture under the target directory.
fn tempfile_dir(fixture: &Path) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "pt-snap-oom-{}-{n}-{}",
        std::process::id(),
        fixture.file_stem().unwrap().to_string_lossy()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
