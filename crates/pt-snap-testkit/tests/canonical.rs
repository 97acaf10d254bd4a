//! The canonical dump of the sample DB must match the committed expected JSON
//! (`tests/expected/sample_db.json`, also produced by `tests/oracle/canon_db.py`
//! on the same DB). Set `PT_SNAP_UPDATE_EXPECT=1` to rewrite it.

use std::path::PathBuf;

#[test]
fn sample_db_canonical_form_is_stable() {
    let dir = std::env::temp_dir().join(format!("pt-snap-testkit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("sample.db");
    pt_snap_testkit::write_sample_db(&db).unwrap();
    let got = pt_snap_testkit::canonical_db_json(&db).unwrap();
    let _ = std::fs::remove_dir_all(&dir);

    let expected_path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/expected/sample_db.json");
    if std::env::var_os("PT_SNAP_UPDATE_EXPECT").is_some() {
        std::fs::write(&expected_path, &got).unwrap();
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap();
    assert_eq!(got, expected, "canonical dump of the sample DB changed");
}

#[test]
fn helpers() {
    assert_eq!(pt_snap_testkit::fnv1a64_key(""), "cs-cbf29ce484222325");
    assert_eq!(
        pt_snap_testkit::norm_sql("\n CREATE  TABLE\tx (\n a )\n"),
        "CREATE TABLE x ( a )"
    );
    let v = serde_json::json!({"a": [1, "x", null], "b": [[1], {}], "c": {}, "d": []});
    assert_eq!(
        pt_snap_testkit::render(&v),
        "{\n \"a\": [1, \"x\", null],\n \"b\": [\n  [1],\n  {}\n ],\n \"c\": {},\n \"d\": []\n}\n"
    );
}
