//! The browser worker's import path, as a function both builds can run: a pickle read in
//! small slices → `pt_snap_model::decode` → `pt_snap_import::import_snapshot` into an
//! in-memory SQLite → the serialized image (what "Download .db" hands out) opened again →
//! the canonical form of `pt-snap-testkit`.
//!
//! `tests/import_parity.rs` runs it natively (`cargo test`) and compiled to
//! `wasm32-unknown-unknown` in a Chromium worker (`scripts/wasm-test`), against the same
//! reference-made golden, so both builds are proven to write the same database.

#![forbid(unsafe_code)]

use pt_snap_import::ImportRequest;
use rusqlite::{Connection, MAIN_DB};
use serde_json::Value;

// Linked for the host hooks (clock, randomness) SQLite needs in a browser.
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
use sqlite_wasm_rs as _;

/// What an import through the worker's path produced.
pub struct Imported {
    /// `pt_snap_testkit::canonical_conn` of the re-opened database image.
    pub canonical: Value,
    /// Size of the serialized database image in bytes.
    pub image_len: usize,
    /// Trace events replayed, summed over devices.
    pub events: usize,
}

pub use pt_snap_testkit::ShortReads;

/// Imports `pickle` (named `name`) as the web worker does and returns the canonical form of
/// the database image it would hand to the page. `completed_at` is fixed: the canonical form
/// leaves it out anyway.
pub fn import_like_the_worker(
    pickle: &[u8],
    name: &str,
    device: Option<usize>,
    slice: usize,
) -> Result<Imported, String> {
    let reader = ShortReads::new(pickle, slice);
    let snapshot = pt_snap_model::decode_sized(reader, pickle.len() as u64, &mut |_| {})
        .map_err(|e| format!("decode: {e}"))?;
    let request = ImportRequest {
        device,
        ..ImportRequest::new(
            name,
            pt_snap_import::sha256_hex(pickle).map_err(|e| e.to_string())?,
            pickle.len() as u64,
            "2026-01-01T00:00:00.000000+00:00",
        )
    };
    let mut conn = Connection::open_in_memory().map_err(|e| e.to_string())?;
    let summary = pt_snap_import::import_snapshot(&snapshot, &conn, &request, &mut |_| {})
        .map_err(|e| format!("import: {e}"))?;
    drop(snapshot);
    let image = conn.serialize(MAIN_DB).map_err(|e| e.to_string())?;
    let image_len = image.len();
    // Opened the way the page opens what the worker sends back.
    let reopened = pt_snap_db::SnapshotDb::from_bytes(&image).map_err(|e| e.to_string())?;
    drop(image);
    drop(conn);
    let canonical = pt_snap_testkit::canonical_conn(reopened.conn()).map_err(|e| e.to_string())?;
    Ok(Imported {
        canonical,
        image_len,
        events: summary.events.iter().sum(),
    })
}

/// `None` when equal, else the JSON path of the first difference and both values there
/// (the canonical forms are megabytes: a plain `assert_eq!` would drown the answer).
pub fn first_difference(ours: &Value, theirs: &Value) -> Option<String> {
    fn walk(a: &Value, b: &Value, path: String) -> Option<String> {
        if a == b {
            return None;
        }
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => x
                .keys()
                .chain(y.keys())
                .find(|k| x.get(*k) != y.get(*k))
                .and_then(|k| {
                    walk(
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                        format!("{path}.{k}"),
                    )
                }),
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
                .iter()
                .zip(y)
                .position(|(p, q)| p != q)
                .and_then(|i| walk(&x[i], &y[i], format!("{path}[{i}]"))),
            _ => {
                let show = |v: &Value| {
                    let s = v.to_string();
                    s.chars().take(300).collect::<String>()
                };
                Some(format!("{path}: ours {} / expected {}", show(a), show(b)))
            }
        }
    }
    walk(ours, theirs, "db".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn first_difference_names_the_path() {
        let a = json!({"x": [1, {"y": 2}], "z": 0});
        let b = json!({"x": [1, {"y": 3}], "z": 0});
        assert_eq!(first_difference(&a, &a), None);
        assert_eq!(
            first_difference(&a, &b).as_deref(),
            Some("db.x[1].y: ours 2 / expected 3")
        );
    }
}
