//! The reference's own interoperability fixture (`upstream-pkg/interop/`): a three-event
//! snapshot (alloc, free_requested, free_completed of one block) exported by pt-snap-cli as a
//! three-shard msinsight dataset. Our writer, given the same snapshot and the metadata the
//! reference recorded, must produce semantically equal shards and a byte-identical manifest.
//!
//! The fixture lives in `../shared/fixtures` (not in this repository); the test is skipped
//! where it is absent.

use std::path::Path;

use pt_snap_dataset::write::{self, Layout};
use pt_snap_db::Metadata;
use pt_snap_model::{Action, Block, BlockState, Segment, Snapshot, StackId, TraceEvent};
use serde_json::Value;

/// `three_shard_free_requested.json` as our model.
fn snapshot(source: &Value) -> Snapshot {
    let mut snapshot = Snapshot::default();
    let mut stack = |frames: &Value| -> StackId {
        let ids: Vec<_> = frames
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                snapshot.stacks.intern_frame(
                    f["filename"].as_str().unwrap(),
                    f["line"].as_i64().unwrap(),
                    f["name"].as_str().unwrap(),
                )
            })
            .collect();
        snapshot.stacks.intern_stack(&ids)
    };
    let int = |v: &Value| v.as_i64().unwrap();
    let mut segments = Vec::new();
    for s in source["segments"].as_array().unwrap() {
        let blocks = s["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| Block {
                address: int(&b["address"]),
                size: int(&b["size"]),
                requested_size: int(&b["requested_size"]),
                state: BlockState::from_name(b["state"].as_str().unwrap()).unwrap(),
                frames: stack(&b["frames"]),
            })
            .collect();
        segments.push(Segment {
            device: int(&s["device"]),
            address: int(&s["address"]),
            total_size: int(&s["total_size"]),
            stream: int(&s["stream"]),
            segment_type: s["segment_type"].as_str().unwrap().into(),
            allocated_size: int(&s["allocated_size"]),
            active_size: int(&s["active_size"]),
            is_expandable: s["is_expandable"].as_bool().unwrap(),
            pool_id: None,
            frames: stack(&s["frames"]),
            blocks,
        });
    }
    let traces = source["device_traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|events| {
            events
                .as_array()
                .unwrap()
                .iter()
                .map(|e| TraceEvent {
                    action: Action::from_name(e["action"].as_str().unwrap()).unwrap(),
                    addr: int(&e["addr"]),
                    size: int(&e["size"]),
                    stream: int(&e["stream"]),
                    frames: stack(&e["frames"]),
                    id: None,
                    time_low: 0,
                })
                .collect()
        })
        .collect();
    snapshot.segments = segments;
    snapshot.device_traces = traces;
    snapshot
}

#[test]
fn our_msinsight_export_of_the_interop_fixture_is_the_reference_s() {
    let Some(shared) = pt_snap_testkit::shared_fixtures() else {
        return;
    };
    let interop = shared.join("upstream-pkg/interop");
    let export = interop.join("three_shard_free_requested.pkl.msinsight");
    let read_json =
        |p: &Path| -> Value { serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap() };
    let source = read_json(&interop.join("three_shard_free_requested.json"));
    let reference_text = std::fs::read_to_string(export.join("manifest.json")).unwrap();
    let reference: Value = serde_json::from_str(&reference_text).unwrap();
    let metadata: Metadata =
        serde_json::from_value(reference["ptSnap"]["metadata"].clone()).unwrap();

    let snapshot = snapshot(&source);
    let plan = write::plan(&snapshot, None, 1).unwrap();
    plan.check(Layout::Msinsight).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (device, shard) in plan.shards() {
        let ours = dir.path().join(shard.file().replace('/', "_"));
        let conn = rusqlite::Connection::open(&ours).unwrap();
        write::write_shard(
            &conn,
            &plan.source(device, &metadata),
            shard,
            Layout::Msinsight,
        )
        .unwrap();
        conn.close().unwrap();
        assert_eq!(
            pt_snap_testkit::canonical_db_json(&ours).unwrap(),
            pt_snap_testkit::canonical_db_json(export.join(shard.file())).unwrap(),
            "{}",
            shard.file()
        );
    }

    // With the reference's recorded metadata, source path, cacheHash and member hashes, the
    // manifest is the reference's byte for byte.
    let members = &reference["ptSnap"]["members"];
    let manifest = plan.msinsight_manifest(
        &metadata,
        reference["sourceFile"].as_str().unwrap(),
        reference["cacheHash"].as_str().unwrap(),
        &|file| members[file].as_str().unwrap().to_owned(),
    );
    assert_eq!(write::manifest_json(&manifest), reference_text);
}
