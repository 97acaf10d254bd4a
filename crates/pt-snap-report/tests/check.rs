//! `check`'s two ways to measure a run give one answer: the replay alone on a decoded
//! snapshot ([`measure_snapshot`]) and the query interface on the database an import writes
//! of it ([`measure_source`]), on every fixture of the repository and, where present, the
//! real captures of `../shared`, for each metric.

use std::path::{Path, PathBuf};

use pt_snap_import::ImportRequest;
use pt_snap_query::Analyzer;
use pt_snap_report::check::{measure_snapshot, measure_source};
use pt_snap_report::Metric;
use pt_snap_testkit::{pickles_in, shared_dir, FIXTURE_DIRS};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixtures() -> Vec<PathBuf> {
    let mut out = pickles_in(&root(), &FIXTURE_DIRS);
    assert!(out.len() >= 5, "the repository's fixtures are missing");
    if let Some(real) = shared_dir("fixtures/real") {
        out.extend(pickles_in(&real, &["."]));
    }
    out
}

#[test]
fn the_replay_alone_measures_what_the_database_answers() {
    let mut compared = 0;
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let Ok(snapshot) = pt_snap_model::decode(&bytes[..], &mut |_| {}) else {
            continue;
        };
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let request = ImportRequest::new("x", "0".repeat(64), bytes.len() as u64, "now");
        if pt_snap_import::import_snapshot(&snapshot, &conn, &request, &mut |_| {}).is_err() {
            // The strict replay refuses it; so does the stream (checked below).
            for d in snapshot.devices_with_events() {
                assert!(measure_snapshot(&snapshot, d, Metric::Allocated).is_err());
            }
            continue;
        }
        let db = pt_snap_db::SnapshotDb::from_connection(conn).unwrap();
        let analyzer = Analyzer::new(db).unwrap();
        for device in snapshot.devices_with_events() {
            for metric in [Metric::Allocated, Metric::Active, Metric::Reserved] {
                let streamed = measure_snapshot(&snapshot, device, metric).unwrap();
                let queried = measure_source(&analyzer, device as i64, metric).unwrap();
                assert_eq!(
                    streamed,
                    queried,
                    "{} device {device} {metric:?}",
                    path.display()
                );
                let total: i64 = streamed.sites.iter().map(|s| s.bytes).sum();
                assert_eq!(
                    Some(total),
                    streamed.live_bytes,
                    "{}: sites add up",
                    path.display()
                );
                compared += 1;
            }
        }
    }
    assert!(compared >= 15, "only {compared} measurements compared");
}
