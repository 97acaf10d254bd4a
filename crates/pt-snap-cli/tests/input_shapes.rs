//! Every shape a snapshot arrives in (JSON, gzip, zstd, bzip2, protocol 5) decodes to the
//! same snapshot as the plain pickle, and imports to the same database.

mod common;

use std::path::{Path, PathBuf};

use common::ok_json;
use pt_snap_testkit::compress::{bzip2, gzip, zstd};
use pt_snap_testkit::repo_root;
use serde_json::Value;

fn fixture_pickles() -> Vec<PathBuf> {
    pt_snap_testkit::pickles_in(
        &pt_snap_testkit::repo_root().join("fixtures"),
        &["real", "upstream-pkg/snapshots", "synthetic", "edge"],
    )
}

/// The same file as CPython's `pickle.dumps(obj, protocol=5)`: protocol 5 only adds opcodes
/// for out-of-band buffers, which snapshots never hold, so the bytes differ in the header.
fn protocol_5(pickle: &[u8]) -> Option<Vec<u8>> {
    (pickle.starts_with(&[0x80, 4])).then(|| {
        let mut p = pickle.to_vec();
        p[1] = 5;
        p
    })
}

/// Every other form of `pickle`, named as a person would name the file.
fn shapes(pickle: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let json = pt_snap_split::canonical_json(pickle).unwrap();
    let mut out = vec![
        ("pickle.gz", gzip(pickle)),
        ("pickle.zst", zstd(pickle)),
        ("pickle.bz2", bzip2(pickle)),
    ];
    // Without the pickle memo every frame is written out in full: a 4 MB pickle is 100 MB of
    // JSON. Compressed JSON is checked on the fixtures whose JSON stays small.
    if json.len() <= 16 << 20 {
        out.push(("json.gz", gzip(&json)));
        out.push(("json.zst", zstd(&json)));
    }
    out.push(("json", json));
    if let Some(p5) = protocol_5(pickle) {
        out.push(("proto5.pkl", p5));
    }
    out
}

/// Everything the import reads from a snapshot, in a comparable form: stack ids are the
/// interner's numbering (which memo sharing in a pickle may change, and which the import
/// renumbers anyway), so each is replaced by the stack it names.
fn decoded(bytes: &[u8]) -> Result<String, String> {
    let s = pt_snap_model::decode(bytes, &mut |_| {}).map_err(|e| e.to_string())?;
    let text = format!(
        "{:?}\n{:?}\n{:?}\n{:?}",
        s.segments, s.device_traces, s.other_actions, s.layout
    );
    let stacks: Vec<String> = (0..s.stacks.stack_count() as u32)
        .map(|i| format!("{:?}", s.stacks.render(pt_snap_model::StackId(i))))
        .collect();
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(i) = rest.find("StackId(") {
        out.push_str(&rest[..i]);
        rest = &rest[i + "StackId(".len()..];
        let end = rest.find(')').unwrap();
        let id: u32 = rest[..end].parse().unwrap();
        out.push_str(&stacks[id as usize]);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[test]
fn every_fixture_decodes_alike_in_every_shape() {
    let fixtures = fixture_pickles();
    assert!(fixtures.len() >= 10, "{fixtures:?}");
    for path in fixtures {
        let pickle = std::fs::read(&path).unwrap();
        let want = decoded(&pickle);
        for (shape, bytes) in shapes(&pickle) {
            let got = decoded(&bytes);
            if got != want {
                panic!(
                    "{} as {shape}: {}",
                    path.file_name().unwrap().to_string_lossy(),
                    first_difference(&format!("{want:?}"), &format!("{got:?}"))
                );
            }
        }
    }
}

/// Where two long texts part, with some context on both sides.
fn first_difference(want: &str, got: &str) -> String {
    let at = want
        .bytes()
        .zip(got.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(want.len().min(got.len()));
    let window = |s: &str| {
        let start = s.floor_char_boundary(at.saturating_sub(120));
        let end = s.ceil_char_boundary((at + 120).min(s.len()));
        s[start..end].to_owned()
    };
    format!(
        "at byte {at}:\n want …{}…\n got  …{}…",
        window(want),
        window(got)
    )
}

/// Imports `bytes` saved as `name` in `dir`: the database and its `metadata --json`.
fn import(dir: &Path, name: &str, bytes: &[u8]) -> (PathBuf, Value) {
    std::fs::write(dir.join(name), bytes).unwrap();
    ok_json(dir, &["import", name, "--no-focus", "--json"]);
    let db = dir.join(format!("{name}.db"));
    let metadata = ok_json(dir, &["metadata", db.to_str().unwrap(), "--json"]);
    (db, metadata)
}

/// The canonical dump without what names the source file.
fn content(db: &Path) -> Value {
    let mut dump = pt_snap_testkit::canonical_db(db).unwrap();
    dump.as_object_mut().unwrap().remove("metadata");
    dump
}

#[test]
fn every_shape_imports_to_the_plain_pickles_database() {
    let dir = tempfile::tempdir().unwrap();
    for fixture in [
        "fixtures/upstream-pkg/snapshots/snapshot_with_multi_devices.pkl",
        "fixtures/real/cuda_legacy_flexgen__oom_snapshot.pickle",
    ] {
        let pickle = std::fs::read(repo_root().join(fixture)).unwrap();
        let (plain, _) = import(dir.path(), "plain.pkl", &pickle);
        let want = content(&plain);
        for (shape, bytes) in shapes(&pickle) {
            let name = format!("snapshot.{shape}");
            let (db, metadata) = import(dir.path(), &name, &bytes);
            let got = content(&db);
            if got != want {
                panic!(
                    "{fixture} as {shape}: {}",
                    first_difference(&want.to_string(), &got.to_string())
                );
            }
            // The reuse key is the file as given, compressed or not.
            let sha = pt_snap_import::sha256_hex(&bytes[..]).unwrap();
            let row = &metadata["metadata"];
            assert_eq!(
                row["source_sha256"],
                sha.as_str(),
                "{fixture} as {shape}: {metadata}"
            );
            assert_eq!(row["source_size"], bytes.len(), "{fixture} as {shape}");
        }
    }
}
