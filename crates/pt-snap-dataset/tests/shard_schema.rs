//! Dataset shards go through the check every SnapshotDB reader makes
//! (`pt_snap_db::check_format_objects`): a generated column, which `PRAGMA table_info`
//! (the reference's shape check) does not list, or a trigger, is refused before any row
//! is read.

use std::fs;
use std::path::{Path, PathBuf};

use pt_snap_dataset::read::{Dataset, ValidationCache};
use pt_snap_db::rusqlite::Connection;
use pt_snap_query::QueryError;
use pt_snap_testkit::copy_dir;
use sha2::{Digest, Sha256};

/// A copy of a golden dataset whose first shard of device 0 is altered by `sql` (and its
/// hash in the manifest updated, where the manifest records one).
fn altered(set: &str, sql: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("ds");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/golden/dataset_query")
            .join(set)
            .join("dataset"),
        &root,
    );
    let shard = root.join("device_0/slice_00000.db");
    let hash = |p: &Path| {
        Sha256::digest(fs::read(p).unwrap())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let old = hash(&shard);
    Connection::open(&shard)
        .unwrap()
        .execute_batch(sql)
        .unwrap();
    let manifest = root.join("manifest.json");
    let text = fs::read_to_string(&manifest).unwrap();
    fs::write(&manifest, text.replace(&old, &hash(&shard))).unwrap();
    (tmp, root)
}

fn refusal(root: &Path) -> String {
    match Dataset::open(root, &mut ValidationCache::disabled()) {
        Err(QueryError::SchemaInvalid(m)) => m,
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("accepted"),
    }
}

#[test]
fn a_generated_column_in_a_shard_is_refused() {
    for set in ["native", "msinsight"] {
        let (_tmp, root) = altered(
            set,
            "ALTER TABLE trace_entry_0 ADD COLUMN g TEXT \
             GENERATED ALWAYS AS (printf('%.*c', 300000000, 'z')) VIRTUAL",
        );
        let t = std::time::Instant::now();
        let m = refusal(&root);
        // Refused from the schema, before `PRAGMA quick_check` (which computes every
        // generated value) or any row is read.
        assert!(t.elapsed().as_secs() < 5, "{set}: {:?}", t.elapsed());
        assert!(
            m.contains("column 'g' of 'trace_entry_0' is a generated column"),
            "{set}: {m}"
        );
    }
}

#[test]
fn a_trigger_in_a_shard_is_refused() {
    let (_tmp, root) = altered(
        "msinsight",
        "CREATE TRIGGER t AFTER DELETE ON block_0 BEGIN SELECT 1; END",
    );
    let m = refusal(&root);
    assert!(m.contains("trigger 't' on 'block_0'"), "{m}");
}

#[test]
fn the_golden_datasets_are_accepted() {
    for set in ["native", "msinsight", "interop"] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/golden/dataset_query")
            .join(set)
            .join("dataset");
        let root = fs::canonicalize(root).unwrap();
        Dataset::open(&root, &mut ValidationCache::disabled())
            .unwrap_or_else(|e| panic!("{set}: {e:?}"))
            .expect("a dataset");
    }
}
