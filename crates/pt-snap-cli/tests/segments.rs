//! `pt-snap report segments` through the binary: its JSON is its contract and adds up, its
//! text and page draw the same map, bad input gets the documented codes, a database made by
//! pt-snap-cli 0.4.1 (no tables of ours) is replayed like ours, and a snapshot argument goes
//! through the import's reuse cache.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::pt_snap;
use serde_json::Value;

fn fixture(relative: &str, dir: &Path) -> PathBuf {
    let from = pt_snap_testkit::repo_root().join(relative);
    let to = dir.join(from.file_name().unwrap());
    std::fs::copy(&from, &to).unwrap();
    to
}

/// `pt-snap report segments <input> <extra>…` run in `dir`.
fn segments(dir: &Path, input: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["report", "segments", input.to_str().unwrap()];
    args.extend_from_slice(extra);
    pt_snap(dir, &args)
}

fn segments_json(dir: &Path, input: &Path, extra: &[&str]) -> Value {
    let out = segments(dir, input, &[extra, &["--json"]].concat());
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    pt_snap_report::commands::find("report segments")
        .unwrap()
        .check_document(&v, false)
        .unwrap();
    v
}

/// The sums a map must show: the blocks' states add up to the counters, the segments to
/// reserved, and the blocks of each segment tile it.
fn check_sums(v: &Value) {
    let (t, c) = (&v["totals"], &v["counters"]);
    assert_eq!(t["active_allocated_bytes"], c["allocated"]);
    assert_eq!(
        t["active_allocated_bytes"].as_i64().unwrap()
            + t["active_pending_free_bytes"].as_i64().unwrap(),
        c["active"].as_i64().unwrap()
    );
    assert_eq!(t["segment_bytes"], c["reserved"]);
    for s in v["segments"].as_array().unwrap() {
        let mut at = s["address"].as_i64().unwrap();
        for b in s["blocks"].as_array().unwrap() {
            assert_eq!(b["address"].as_i64().unwrap(), at);
            at += b["size"].as_i64().unwrap();
        }
        assert_eq!(
            at,
            s["address"].as_i64().unwrap() + s["total_size"].as_i64().unwrap()
        );
    }
}

#[test]
fn json_text_and_page_describe_one_map() {
    let dir = tempfile::tempdir().unwrap();
    let snap = fixture("fixtures/synthetic/synth_small_2dev_oom.pkl", dir.path());
    let v = segments_json(dir.path(), &snap, &["--event-id", "5", "-d", "1"]);
    assert_eq!(
        (v["device_id"].as_i64(), v["event"]["id"].as_i64()),
        (Some(1), Some(5))
    );
    check_sums(&v);
    let pending: Vec<&Value> = (v["segments"].as_array().unwrap().iter())
        .flat_map(|s| s["blocks"].as_array().unwrap())
        .filter(|b| b["state"] == "active_pending_free")
        .collect();
    assert_eq!(
        pending.len(),
        1,
        "event 5 is a free_requested: its block is pending"
    );
    assert!(
        pending[0]["site"].is_string(),
        "a live block names its site"
    );
    for p in v["free_by_pool_and_stream"].as_array().unwrap() {
        let (free, largest) = (
            p["free_bytes"].as_f64().unwrap(),
            p["largest_free_block_bytes"].as_f64().unwrap(),
        );
        assert_eq!(p["fragmentation"].as_f64().unwrap(), 1.0 - largest / free);
    }

    let text = segments(dir.path(), &snap, &["--event-id", "5", "-d", "1"]);
    assert!(text.status.success(), "{text:?}");
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("Device 1 after event 5 (free_requested"),
        "{text}"
    );
    assert!(text.contains("Map: one cell = "), "{text}");
    let rows = text
        .lines()
        .filter(|l| l.trim_start().starts_with("0x") && l.contains('|'))
        .count();
    assert_eq!(rows, v["segments"].as_array().unwrap().len(), "{text}");

    let page = dir.path().join("map.html");
    let out = segments(
        dir.path(),
        &snap,
        &[
            "--event-id",
            "5",
            "-d",
            "1",
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ],
    );
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("default-src 'none'") && html.contains("PtSnapSegments.render"));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "the page makes no request"
    );
    let data = html
        .split("<script id=\"segments-data\" type=\"application/json\">")
        .nth(1)
        .unwrap();
    let data: Value = serde_json::from_str(data.split("</script>").next().unwrap()).unwrap();
    assert_eq!(
        data["segments"].as_array().unwrap().len(),
        v["segments"].as_array().unwrap().len()
    );
    assert_eq!(data["counters"], v["counters"]);

    // --json and --format html do not go together.
    let both = segments(
        dir.path(),
        &snap,
        &["--event-id", "5", "--json", "--format", "html"],
    );
    assert_eq!(both.status.code(), Some(1));
}

#[test]
fn an_event_outside_the_device_is_invalid_with_its_range_in_the_hint() {
    let dir = tempfile::tempdir().unwrap();
    let snap = fixture("fixtures/synthetic/synth_small_2dev_oom.pkl", dir.path());
    for bad in ["-1", "16", "99999"] {
        let out = segments(dir.path(), &snap, &["--event-id", bad, "--json"]);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let err: Value = serde_json::from_slice(&out.stderr).unwrap();
        assert_eq!(err["error"]["code"], "INVALID_PARAMETER");
        assert_eq!(
            err["error"]["hint"],
            "Pass --event-id between 0 and 15 (device 0's real events)."
        );
    }
    let out = segments(dir.path(), &snap, &["--event-id", "3", "-d", "7", "--json"]);
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(err["error"]["code"], "DEVICE_NOT_FOUND", "{err}");
}

/// The reference's own database of a fixture (no checkpoints, no table of ours) gives the
/// map our database of it gives, but for what only our tables say (the file's pools).
#[test]
fn a_database_of_pt_snap_cli_0_4_1_is_replayed_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let reference = pt_snap_testkit::repo_root().join("tests/golden/query/expandable/reference.db");
    let db = dir.path().join("reference.db");
    std::fs::copy(&reference, &db).unwrap();
    let snap = fixture(
        "fixtures/upstream-pkg/snapshots/snapshot_expandable.pkl",
        dir.path(),
    );
    let overview: Value =
        common::ok_json(dir.path(), &["overview", db.to_str().unwrap(), "--json"]);
    let last = overview["devices"][0]["last_event_id"].as_i64().unwrap();
    let mut compared = 0;
    for event in [0, last / 3, last / 2, last] {
        let e = event.to_string();
        let theirs = segments_json(dir.path(), &db, &["--event-id", &e]);
        let ours = segments_json(dir.path(), &snap, &["--event-id", &e]);
        check_sums(&theirs);
        let strip = |v: &Value| {
            let mut v = v.clone();
            v.as_object_mut().unwrap().remove("db_path");
            for s in v["segments"].as_array_mut().unwrap() {
                let s = s.as_object_mut().unwrap();
                s.remove("pool_recorded");
                s.remove("segment_pool_id");
            }
            v
        };
        assert_eq!(strip(&theirs), strip(&ours), "event {event}");
        compared += 1;
    }
    assert_eq!(compared, 4);
}

#[test]
fn a_snapshot_is_imported_once_through_the_reuse_cache() {
    let dir = tempfile::tempdir().unwrap();
    let snap = fixture("fixtures/synthetic/synth_small_1dev.pkl", dir.path());
    segments_json(dir.path(), &snap, &["--event-id", "3"]);
    let db = dir.path().join("synth_small_1dev.pkl.db");
    let before = std::fs::metadata(&db).unwrap().modified().unwrap();
    let v = segments_json(dir.path(), &snap, &["--event-id", "4"]);
    assert_eq!(
        std::fs::metadata(&db).unwrap().modified().unwrap(),
        before,
        "reused, not rewritten"
    );
    assert_eq!(v["db_path"].as_str(), db.canonicalize().unwrap().to_str());
}
