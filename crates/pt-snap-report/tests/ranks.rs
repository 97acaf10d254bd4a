//! `ranks`' two ways to summarise a snapshot give one row: the replay alone
//! ([`summarize_replayed`]) and the templates on the database an import writes of it
//! ([`summarize`]), on every fixture of the repository and, where present, the real
//! captures of `../shared`, for each metric.

use std::path::{Path, PathBuf};

use pt_snap_import::ImportRequest;
use pt_snap_query::Analyzer;
use pt_snap_report::ranks::{summarize, summarize_replayed};
use pt_snap_report::replayed::Replayed;
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
fn the_replay_alone_summarises_what_the_database_answers() {
    let (mut compared, mut static_tops, mut dynamic_tops, mut oom_rows, mut timed) =
        (0, 0, 0, 0, 0);
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let Ok(snapshot) = pt_snap_model::decode(&bytes[..], &mut |_| {}) else {
            continue;
        };
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let request = ImportRequest::new("x", "0".repeat(64), bytes.len() as u64, "now");
        if pt_snap_import::import_snapshot(&snapshot, &conn, &request, &mut |_| {}).is_err() {
            // The strict replay refuses it; so does the stream.
            for d in snapshot.devices_with_events() {
                assert!(Replayed::strict(&snapshot, d).is_err());
            }
            continue;
        }
        let db = pt_snap_db::SnapshotDb::from_connection(conn).unwrap();
        let analyzer = Analyzer::new(db).unwrap();
        let devices: Vec<i64> = snapshot
            .devices_with_events()
            .into_iter()
            .map(|d| d as i64)
            .collect();
        assert_eq!(devices, analyzer.devices(), "{}", path.display());
        for device in snapshot.devices_with_events() {
            let replayed = Replayed::strict(&snapshot, device).unwrap();
            for metric in [Metric::Allocated, Metric::Active, Metric::Reserved] {
                let streamed = summarize_replayed(&replayed, metric);
                let queried = summarize(&analyzer, Some(device as i64), metric).unwrap();
                assert_eq!(
                    std::slice::from_ref(&streamed),
                    &queried[..],
                    "{} device {device} {metric:?}",
                    path.display()
                );
                match streamed.top_group.as_ref().map(|g| g.category.as_str()) {
                    Some("dynamic_live_at_event") => dynamic_tops += 1,
                    Some(_) => static_tops += 1,
                    None => {}
                }
                oom_rows += (streamed.oom_events > 0) as usize;
                timed += streamed.peak_times.unknown.is_none() as usize;
                compared += 1;
            }
        }
    }
    // Each kind of row was met: else the comparison proves less than it says.
    assert!(compared >= 15, "only {compared} rows compared");
    assert!(
        dynamic_tops > 0 && static_tops > 0,
        "tops: {dynamic_tops} dynamic, {static_tops} static"
    );
    assert!(oom_rows > 0, "no row with an OOM event");
    assert!(
        timed > 0 && timed < compared,
        "{timed} of {compared} rows with times"
    );
}
