//! `diff` on databases made by pt-snap-cli 0.4.1 (the query goldens' copies): the groups of
//! each side add up to what the templates say was live at its peak.

use pt_snap_query::{Analyzer, QueryRequest, TimelineRequest, Value};
use pt_snap_report::diff::{measure, Diff, DiffRequest, Side, Status, Timelines};
use pt_snap_report::Metric;
use pt_snap_testkit::reference_databases;

fn side(a: &Analyzer, metric: Metric) -> Side {
    measure(
        a,
        &DiffRequest {
            device: None,
            metric,
        },
        |device| {
            let req = TimelineRequest {
                device: Some(device),
                ..TimelineRequest::new(100)
            };
            let (by_event, by_time) = a.timelines(&req)?;
            Ok(Timelines { by_event, by_time })
        },
    )
    .unwrap()
}

/// Σ size of the blocks `active_blocks_at_event` lists at `event` (static included).
fn live_bytes(a: &Analyzer, event: i64) -> i64 {
    let out = a
        .run(
            &QueryRequest::new("active_blocks_at_event")
                .param("event_id", event)
                .param("limit", -1),
        )
        .unwrap();
    let size = out.columns.iter().position(|c| c == "size").unwrap();
    out.rows.iter().map(|r| r[size].as_i64().unwrap()).sum()
}

#[test]
fn a_database_against_itself_changes_nothing_and_adds_up() {
    for db in reference_databases() {
        let a = Analyzer::open(&db).unwrap();
        let peak = a.run(&QueryRequest::new("memory_peak")).unwrap();
        for metric in [Metric::Active, Metric::Allocated, Metric::Reserved] {
            let s = side(&a, metric);
            let event = s.event_id.unwrap();
            // The peaks are memory_peak's.
            for (m, p) in [
                (Metric::Allocated, s.peaks.unwrap().allocated),
                (Metric::Active, s.peaks.unwrap().active),
                (Metric::Reserved, s.peaks.unwrap().reserved),
            ] {
                let want = |col: String| peak.get(0, &col).and_then(Value::as_i64);
                assert_eq!(p.bytes, want(format!("peak_{}", m.name())));
                assert_eq!(p.event_id, want(format!("peak_{}_event_id", m.name())));
            }
            // The groups hold every live block, which the counter counts.
            assert_eq!(
                s.total(),
                live_bytes(&a, event),
                "{} {metric:?}",
                db.display()
            );
            assert_eq!(
                s.unattributed_bytes(),
                Some(0),
                "{} {metric:?}",
                db.display()
            );
            if metric == Metric::Active {
                assert_eq!(Some(s.total()), s.peaks.unwrap().active.bytes);
            }
            let d = Diff::new(s.clone(), s, pt_snap_report::diff::By::Stack);
            assert!(d
                .groups
                .iter()
                .all(|g| g.delta() == 0 && g.status() == Status::Same));
            assert_eq!(d.total_a(), d.total_b());
        }
    }
}

#[test]
fn two_databases_add_up_on_each_side() {
    let dbs = reference_databases();
    for pair in dbs.windows(2) {
        let (a, b) = (
            Analyzer::open(&pair[0]).unwrap(),
            Analyzer::open(&pair[1]).unwrap(),
        );
        let d = Diff::new(
            side(&a, Metric::Active),
            side(&b, Metric::Active),
            pt_snap_report::diff::By::Stack,
        );
        let sa: i64 = d.groups.iter().map(|g| g.a.bytes).sum();
        let sb: i64 = d.groups.iter().map(|g| g.b.bytes).sum();
        assert_eq!(sa, d.total_a());
        assert_eq!(sb, d.total_b());
        assert_eq!(Some(sa), d.a.peaks.unwrap().active.bytes);
        assert_eq!(Some(sb), d.b.peaks.unwrap().active.bytes);
        let deltas: Vec<u64> = d.groups.iter().map(|g| g.delta().unsigned_abs()).collect();
        assert!(deltas.windows(2).all(|w| w[0] >= w[1]), "sorted by |delta|");
        // Both timelines cover their whole trace.
        for s in [&d.a, &d.b] {
            let (first, last) = s.timeline.bounds.unwrap();
            assert_eq!(s.events(), last - first + 1);
        }
    }
}
