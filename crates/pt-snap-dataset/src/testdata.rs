//! A tiny native dataset for unit tests, written by this crate's own writer.

use std::fs;
use std::path::Path;

use pt_snap_db::{Metadata, METADATA_SCHEMA_VERSION};

use crate::write;

/// One segment, one block allocated in the trace: two events, a shard each.
const SNAPSHOT: &str = r#"{
    "segments": [{"device": 0, "address": 4294967296, "total_size": 4096, "stream": 0,
        "segment_type": "small", "allocated_size": 512, "active_size": 512,
        "requested_size": 512, "frames": [], "blocks": [
            {"address": 4294967296, "size": 512, "requested_size": 512,
             "state": "active_allocated", "frames": [{"filename": "a.py", "line": 1, "name": "a"}]},
            {"address": 4294967808, "size": 3584, "requested_size": 0,
             "state": "inactive", "frames": []}]}],
    "device_traces": [[
        {"action": "segment_alloc", "addr": 4294967296, "size": 4096, "stream": 0, "frames": []},
        {"action": "alloc", "addr": 4294967296, "size": 512, "stream": 0,
         "frames": [{"filename": "a.py", "line": 1, "name": "a"}]}]]
}"#;

pub fn sha(byte: char) -> String {
    byte.to_string().repeat(64)
}

/// A native dataset of the snapshot made from the source with hash `sha('a')`.
pub fn dataset(dir: &Path) -> std::path::PathBuf {
    let snapshot = pt_snap_model::decode_slice(SNAPSHOT.as_bytes()).unwrap();
    let metadata = Metadata {
        metadata_schema_version: METADATA_SCHEMA_VERSION,
        import_format_version: 2,
        source_sha256: sha('a'),
        source_size: SNAPSHOT.len() as i64,
        source_name: "tiny.json".into(),
        requested_device: None,
        importer_name: "pt-snap".into(),
        importer_version: "0".into(),
        completed_at: "2026-12-04T00:00:00+00:00".into(),
    };
    let root = dir.join("tiny.json.pt-snap-native-v2");
    fs::create_dir(&root).unwrap();
    write::plan(&snapshot, None, 1)
        .and_then(|plan| plan.write_native(&root, &metadata))
        .unwrap();
    root
}
