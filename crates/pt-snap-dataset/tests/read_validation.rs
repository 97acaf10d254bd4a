//! Dataset validation on copies of the reference's datasets (tests/golden/dataset_query): the
//! fingerprint cache skips re-hashing unchanged members and notices any change, and the
//! reference's refusals (changed member, live sidecar, stray file) hold on every path.

use std::fs;
use std::path::{Path, PathBuf};

use pt_snap_dataset::read::{Dataset, ValidationCache};
use pt_snap_query::QueryError;
use pt_snap_testkit::copy_dir;

fn golden(set: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/golden/dataset_query")
        .join(set)
        .join("dataset")
}

/// A canonical copy of a golden dataset in a temp dir.
fn copy(set: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("ds");
    copy_dir(&golden(set), &root);
    (tmp, root)
}

fn open(root: &Path, cache: &mut ValidationCache) -> Result<Dataset, QueryError> {
    Dataset::open(root, cache).map(|d| d.expect("a dataset path"))
}

#[test]
fn a_second_open_reuses_the_verified_validation_until_a_member_changes() {
    for set in ["native", "interop"] {
        let (tmp, root) = copy(set);
        let cache_file = tmp.path().join("cache.json");
        let first = open(&root, &mut ValidationCache::at(cache_file.clone())).unwrap();
        assert!(!first.from_cache, "{set}");
        // A new process: the cache comes from the file.
        let second = open(&root, &mut ValidationCache::at(cache_file.clone())).unwrap();
        assert!(second.from_cache, "{set}");
        assert_eq!(first.fingerprint, second.fingerprint);
        assert_eq!(first.boundary_event_count, second.boundary_event_count);
        // Any write to a member (here the same bytes, rewritten) changes its stamp: full
        // validation again, never a stale answer.
        let member = root.join(&first.manifest.devices[0].slices[0].file);
        let bytes = fs::read(&member).unwrap();
        fs::write(&member, &bytes).unwrap();
        let third = open(&root, &mut ValidationCache::at(cache_file.clone())).unwrap();
        assert!(!third.from_cache, "{set}");
        assert_eq!(third.fingerprint, first.fingerprint);
        // The manifest is re-read on every open.
        let m = root.join("manifest.json");
        let text = fs::read_to_string(&m).unwrap();
        fs::write(
            &m,
            text.replacen("\"status\"", "\"extra\": 1, \"status\"", 1),
        )
        .unwrap();
        let fourth = open(&root, &mut ValidationCache::at(cache_file)).unwrap();
        assert!(!fourth.from_cache, "{set}");
        assert_ne!(fourth.fingerprint, first.fingerprint);
    }
}

#[test]
fn a_changed_member_is_refused_even_when_cached() {
    let (tmp, root) = copy("native");
    let cache_file = tmp.path().join("cache.json");
    let ds = open(&root, &mut ValidationCache::at(cache_file.clone())).unwrap();
    let member = root.join(&ds.manifest.devices[0].slices[1].file);
    let mut bytes = fs::read(&member).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&member, &bytes).unwrap();
    let err = open(&root, &mut ValidationCache::at(cache_file)).unwrap_err();
    assert_eq!(
        err,
        QueryError::SchemaInvalid(
            "Invalid dataset: device_0/slice_00001.db: hash: member content changed".into()
        )
    );
}

#[test]
fn sidecars_and_stray_files_are_refused() {
    let (_tmp, root) = copy("native");
    let mut cache = ValidationCache::disabled();
    fs::write(root.join("device_0/slice_00000.db-wal"), b"").unwrap();
    let err = open(&root, &mut cache).unwrap_err();
    assert!(
        matches!(&err, QueryError::SchemaInvalid(m) if m.contains("unexpected/missing shard")),
        "{err:?}"
    );
    fs::remove_file(root.join("device_0/slice_00000.db-wal")).unwrap();
    fs::write(root.join("notes.txt"), b"").unwrap();
    let err = open(&root, &mut cache).unwrap_err();
    assert_eq!(
        err,
        QueryError::SchemaInvalid(
            "Invalid dataset: dataset: members: unexpected/missing dataset member".into()
        )
    );
    // Compatibility datasets tolerate other files, but not a live journal beside a member.
    let (_tmp, root) = copy("interop");
    fs::write(root.join("device_0/slice_00001.db-journal"), b"").unwrap();
    let err = open(&root, &mut cache).unwrap_err();
    assert!(
        matches!(&err, QueryError::SchemaInvalid(m) if m.starts_with("Dataset member has a live SQLite sidecar")),
        "{err:?}"
    );
}
