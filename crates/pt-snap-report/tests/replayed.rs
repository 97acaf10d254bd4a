//! What `check` and `ranks` read from a snapshot replayed alone ([`Replayed`]) is what they
//! read through the query interface on the database an import writes of it: on every
//! fixture of the repository and, where present, the real captures of `../shared`, for each
//! device and metric, `check`'s measurement ([`measure_replayed`] against [`measure_source`])
//! and `ranks`' row ([`summarize_replayed`] against [`summarize`]). Each file is imported and
//! each device replayed once for both.

use std::path::{Path, PathBuf};

use pt_snap_import::ImportRequest;
use pt_snap_query::Analyzer;
use pt_snap_report::check::{measure_replayed, measure_source};
use pt_snap_report::ranks::{summarize, summarize_replayed};
use pt_snap_report::replayed::Replayed;
use pt_snap_report::Metric;
use pt_snap_testkit::{pickles_in, shared_dir, FIXTURE_DIRS};

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = pickles_in(&root, &FIXTURE_DIRS);
    assert!(out.len() >= 5, "the repository's fixtures are missing");
    if let Some(real) = shared_dir("fixtures/real") {
        out.extend(pickles_in(&real, &["."]));
    }
    out
}

/// How many comparisons met each kind of row: else they prove less than they say.
#[derive(Default)]
struct Met {
    compared: usize,
    dynamic_tops: usize,
    static_tops: usize,
    oom_rows: usize,
    timed: usize,
}

#[test]
fn the_replay_alone_answers_what_the_database_answers() {
    let mut met = Met::default();
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let Ok(snapshot) = pt_snap_model::decode(&bytes[..], &mut |_| {}) else {
            continue;
        };
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let request = ImportRequest::new("x", "0".repeat(64), bytes.len() as u64, "now");
        if pt_snap_import::import_snapshot(&snapshot, &conn, &request, &mut |_| {}).is_err() {
            // The strict replay refuses it; so does the replay alone.
            for d in snapshot.devices_with_events() {
                assert!(Replayed::strict(&snapshot, d).is_err());
            }
            continue;
        }
        let db = pt_snap_db::SnapshotDb::from_connection(conn).unwrap();
        let analyzer = Analyzer::new(db).unwrap();
        let devices: Vec<i64> = (snapshot.devices_with_events().into_iter())
            .map(|d| d as i64)
            .collect();
        assert_eq!(devices, analyzer.devices(), "{}", path.display());
        for device in snapshot.devices_with_events() {
            let replayed = Replayed::strict(&snapshot, device).unwrap();
            for metric in [Metric::Allocated, Metric::Active, Metric::Reserved] {
                let at = || format!("{} device {device} {metric:?}", path.display());
                let measured = measure_replayed(&replayed, metric);
                assert_eq!(
                    measured,
                    measure_source(&analyzer, device as i64, metric).unwrap(),
                    "{}",
                    at()
                );
                let total: i64 = measured.sites.iter().map(|s| s.bytes).sum();
                assert_eq!(Some(total), measured.live_bytes, "{}: sites add up", at());

                let row = summarize_replayed(&replayed, metric);
                let queried = summarize(&analyzer, Some(device as i64), metric).unwrap();
                assert_eq!(std::slice::from_ref(&row), &queried[..], "{}", at());
                match row.top_group.as_ref().map(|g| g.category.as_str()) {
                    Some("dynamic_live_at_event") => met.dynamic_tops += 1,
                    Some(_) => met.static_tops += 1,
                    None => {}
                }
                met.oom_rows += (row.oom_events > 0) as usize;
                met.timed += row.peak_times.unknown.is_none() as usize;
                met.compared += 1;
            }
        }
    }
    let Met {
        compared,
        dynamic_tops,
        static_tops,
        oom_rows,
        timed,
    } = met;
    assert!(compared >= 15, "only {compared} devices × metrics compared");
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
