//! Small datasets for the engine's unit tests: the synthetic two-device snapshot of
//! `fixtures/synthetic/` (blocks allocated before the trace, freed and live blocks, a segment
//! mapped and released), without its `oom` and `snapshot` markers (15 events a device; the
//! native format has no place for them), written as a native dataset of a few events a
//! shard, and the same snapshot imported as one database — what the spec says the dataset
//! answers must agree with.

use pt_snap_dataset::read::{Dataset, ValidationCache};
use pt_snap_dataset::write;
use pt_snap_db::rusqlite::Connection;
use pt_snap_db::{Metadata, METADATA_SCHEMA_VERSION};
use pt_snap_import::ImportRequest;
use pt_snap_query::{Analyzer, QueryOutcome, QueryRequest, Source};
use serde_json::{Map, Value};

use crate::{DatasetOptions, DatasetSource};

const SNAPSHOT: &[u8] = include_bytes!("../../../fixtures/synthetic/synth_small_2dev.json");

/// The snapshot as a dataset of `events_per_slice` events a shard, and as one database.
pub struct Pair {
    pub dataset: DatasetSource,
    pub database: Analyzer,
    _dir: tempfile::TempDir,
}

pub fn pair(events_per_slice: usize) -> Pair {
    let mut json: Value = serde_json::from_slice(SNAPSHOT).expect("the fixture is JSON");
    for trace in json["device_traces"].as_array_mut().unwrap() {
        let trace = trace.as_array_mut().unwrap();
        trace.retain(|e| !matches!(e["action"].as_str(), Some("oom" | "snapshot")));
    }
    let bytes = serde_json::to_vec(&json).unwrap();
    let snapshot = pt_snap_model::decode_slice(&bytes).expect("the fixture decodes");
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let metadata = Metadata {
        metadata_schema_version: METADATA_SCHEMA_VERSION,
        import_format_version: 2,
        source_sha256: "0".repeat(64),
        source_size: bytes.len() as i64,
        source_name: "synth_small_2dev.json".into(),
        requested_device: None,
        importer_name: pt_snap_import::IMPORTER_NAME.into(),
        importer_version: pt_snap_import::IMPORTER_VERSION.into(),
        completed_at: "2026-12-04T00:00:00.000000+00:00".into(),
    };

    let ds_root = root.join("dataset");
    std::fs::create_dir(&ds_root).unwrap();
    write::plan(&snapshot, None, events_per_slice)
        .and_then(|plan| plan.write_native(&ds_root, &metadata))
        .unwrap();
    let dataset = Dataset::open(&ds_root, &mut ValidationCache::disabled())
        .unwrap()
        .expect("a dataset path");

    let db_path = root.join("single.db");
    let conn = Connection::open(&db_path).unwrap();
    let request = ImportRequest::new(
        metadata.source_name.clone(),
        metadata.source_sha256.clone(),
        bytes.len() as u64,
        metadata.completed_at.clone(),
    );
    pt_snap_import::import_snapshot(&snapshot, &conn, &request, &mut |_| {}).unwrap();
    conn.close().unwrap();

    Pair {
        dataset: DatasetSource::new(dataset, DatasetOptions::default()),
        database: Analyzer::open(&db_path).unwrap(),
        _dir: dir,
    }
}

/// Runs `template` with `params` (a JSON object) on `device` of `source`.
pub fn run(source: &dyn Source, template: &str, params: Value, device: i64) -> QueryOutcome {
    let mut request = QueryRequest::new(template).device(device);
    request.params = params.as_object().cloned().unwrap_or_default();
    request.max_rows = Some(100_000);
    source
        .run(&request)
        .unwrap_or_else(|e| panic!("{template}: {e}"))
}

/// The rows of `outcome` as JSON objects with only `keys`, in their order.
pub fn project(outcome: &QueryOutcome, keys: &[&str]) -> Vec<Map<String, Value>> {
    outcome
        .rows_json()
        .into_iter()
        .map(|row| {
            keys.iter()
                .map(|k| ((*k).to_owned(), row.get(*k).cloned().unwrap_or(Value::Null)))
                .collect()
        })
        .collect()
}

/// Every column the database's answer has, projected from both answers.
pub fn same_as_database(pair: &Pair, template: &str, params: Value, device: i64) {
    let db = run(&pair.database, template, params.clone(), device);
    let ds = run(&pair.dataset, template, params, device);
    let keys: Vec<&str> = db.columns.iter().map(String::as_str).collect();
    assert!(
        !db.rows.is_empty(),
        "{template}: the database answers something"
    );
    assert_eq!(
        project(&ds, &keys),
        project(&db, &keys),
        "{template} device {device}"
    );
}

/// `template` answers on the dataset cut in shards of each of `sizes` events what it answers
/// on the database, on both devices.
pub fn agree_at_shard_sizes(sizes: &[usize], template: &str, params: Value) {
    for &events_per_slice in sizes {
        let pair = pair(events_per_slice);
        for device in [0, 1] {
            same_as_database(&pair, template, params.clone(), device);
        }
    }
}
