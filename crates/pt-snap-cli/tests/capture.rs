//! `overview`'s capture check through the binary: how each device was captured and what
//! that limits, with a stable code and what to do for each warning — on an empty capture,
//! captures with and without C++ frames, and hand-made ones whose static bytes and trace
//! buffer are known exactly.

mod common;

use std::path::Path;

use common::{ok_json, pt_snap, write_pickle};
use serde_json::{json, Value};

fn overview(dir: &Path, input: &Path) -> Value {
    ok_json(dir, &["overview", input.to_str().unwrap(), "--json"])
}

fn copy(relative: &str, dir: &Path) -> std::path::PathBuf {
    let from = pt_snap_testkit::repo_root().join(relative);
    let to = dir.join(from.file_name().unwrap());
    std::fs::copy(&from, &to).unwrap();
    to
}

fn codes(warnings: &Value) -> Vec<&str> {
    (warnings.as_array().unwrap().iter())
        .map(|w| w["code"].as_str().unwrap())
        .collect()
}

#[test]
fn an_empty_capture_says_history_was_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let snap = copy("fixtures/edge/traces_empty_list.pkl", dir.path());
    let v = overview(dir.path(), &snap);
    assert_eq!(v["devices"], json!([]));
    assert_eq!(codes(&v["capture_warnings"]), ["history_not_recorded"]);
    assert!(v["capture_warnings"][0]["message"]
        .as_str()
        .unwrap()
        .contains("_record_memory_history"));
    let text = pt_snap(dir.path(), &["overview", snap.to_str().unwrap()]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("Capture warning history_not_recorded:"),
        "{text}"
    );
}

#[test]
fn stacks_say_whether_cpp_frames_were_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let all = copy(
        "fixtures/real/cuda_cs336_nothanmin__memory_snapshot.pickle",
        dir.path(),
    );
    let c = &overview(dir.path(), &all)["devices"][0]["capture"];
    assert_eq!(
        (c["stacks"].as_str(), c["has_time_us"].as_bool()),
        (Some("all"), Some(true))
    );
    assert_eq!(c["trace_entries"], c["entries_with_frames"]);
    let python = copy(
        "fixtures/real/cuda_cs336_magma27__memory_snapshot.pickle",
        dir.path(),
    );
    let c = &overview(dir.path(), &python)["devices"][0]["capture"];
    assert_eq!(c["stacks"], "python");
    assert!(c["entries_with_frames"].as_i64() < c["trace_entries"].as_i64());
    let none = copy("fixtures/synthetic/caseE_devices.pkl", dir.path());
    let c = &overview(dir.path(), &none)["devices"][0]["capture"];
    assert_eq!(
        (c["stacks"].as_str(), c["entries_with_frames"].as_i64()),
        (Some("none"), Some(0))
    );
    assert_eq!(codes(&c["warnings"]), ["no_stacks"]);
}

const MIB: i64 = 1 << 20;
const LARGE: i64 = 1 << 30;
const SMALL: i64 = 2 << 30;

/// A device with 16 MiB allocated before recording (never freed) and one 1 MiB allocation
/// recorded: at the active peak (the alloc) 16 of its 17 MiB have no stack.
fn mostly_static(settings: Value) -> Value {
    let frames = json!([{"filename": "/home/u/train.py", "line": 12, "name": "step"}]);
    json!({
        "segments": [
            {"device": 0, "address": LARGE, "total_size": 20 * MIB, "stream": 0,
             "segment_type": "large", "allocated_size": 16 * MIB, "active_size": 16 * MIB,
             "is_expandable": false, "frames": [], "blocks": [
                {"address": LARGE, "size": 16 * MIB, "requested_size": 16 * MIB,
                 "state": "active_allocated", "frames": []},
                {"address": LARGE + 16 * MIB, "size": 4 * MIB, "requested_size": 0,
                 "state": "inactive", "frames": []}]},
            {"device": 0, "address": SMALL, "total_size": 2 * MIB, "stream": 0,
             "segment_type": "small", "allocated_size": MIB, "active_size": MIB,
             "is_expandable": false, "frames": [], "blocks": [
                {"address": SMALL, "size": MIB, "requested_size": MIB,
                 "state": "active_allocated", "frames": frames},
                {"address": SMALL + MIB, "size": MIB, "requested_size": 0,
                 "state": "inactive", "frames": []}]}
        ],
        "device_traces": [[
            {"action": "segment_alloc", "addr": SMALL, "size": 2 * MIB, "stream": 0, "frames": frames},
            {"action": "alloc", "addr": SMALL, "size": MIB, "stream": 0, "frames": frames}
        ]],
        "allocator_settings": settings,
    })
}

#[test]
fn static_bytes_are_exact_and_a_wrapped_trace_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            json!({}),
            vec!["allocated_before_recording"],
            json!({"overflowed": null, "max_entries": null}),
        ),
        (
            json!({"trace_alloc_overflowed": true, "trace_alloc_max_entries": 100}),
            vec!["allocated_before_recording", "trace_may_have_wrapped"],
            json!({"overflowed": true, "max_entries": 100}),
        ),
        // No flag (torch before pytorch#179276 writes none), but as many entries as the buffer.
        (
            json!({"trace_alloc_max_entries": 2}),
            vec!["allocated_before_recording", "trace_may_have_wrapped"],
            json!({"overflowed": null, "max_entries": 2}),
        ),
        (
            json!({"trace_alloc_overflowed": false, "trace_alloc_max_entries": 2}),
            vec!["allocated_before_recording"],
            json!({"overflowed": false, "max_entries": 2}),
        ),
    ];
    for (i, (settings, want, buffer)) in cases.into_iter().enumerate() {
        let name = format!("static{i}.pkl");
        write_pickle(dir.path(), &name, &mostly_static(settings));
        let v = overview(dir.path(), &dir.path().join(&name));
        let c = &v["devices"][0]["capture"];
        assert_eq!(c["static_bytes_at_peak"].as_i64(), Some(16 * MIB), "{c}");
        assert_eq!(c["peak_active_bytes"].as_i64(), Some(17 * MIB), "{c}");
        assert_eq!(
            (c["trace_entries"].as_i64(), c["stacks"].as_str()),
            (Some(2), Some("python"))
        );
        assert_eq!(codes(&c["warnings"]), want, "case {i}: {c}");
        assert_eq!(c["trace_buffer"], buffer, "case {i}");
        let static_message = c["warnings"][0]["message"].as_str().unwrap();
        assert!(static_message.contains("94%"), "{static_message}");
        assert!(
            static_message.contains("before the model is built"),
            "{static_message}"
        );
        assert_eq!(v["capture_warnings"], json!([]));
    }
}
