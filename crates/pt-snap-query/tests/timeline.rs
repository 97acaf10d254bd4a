//! `Analyzer::timeline` on a database made by pt-snap-cli 0.4.1, checked against the raw
//! series from the `allocation` template and against `memory_peak`.

use pt_snap_query::{Analyzer, QueryRequest, TimelineRequest, Value};
use pt_snap_testkit::repo_root;

fn analyzer() -> Analyzer {
    Analyzer::open(&repo_root().join("tests/golden/query/empty_cache/reference.db")).unwrap()
}

/// `(id, allocated, active, reserved)` of every real event, by the `allocation` template.
fn series(a: &Analyzer) -> Vec<[i64; 4]> {
    let out = a
        .run(&QueryRequest::new("allocation").param("min_id", 0))
        .unwrap();
    (0..out.rows.len())
        .map(|r| {
            let v = |c: &str| out.get(r, c).and_then(Value::as_i64).unwrap_or(0);
            [v("id"), v("allocated"), v("active"), v("reserved")]
        })
        .collect()
}

#[test]
fn bucket_extremes_match_the_raw_series_in_any_window() {
    let a = analyzer();
    let all = series(&a);
    assert!(all.len() > 1000, "the fixture should have many events");
    let (first, last) = (all[0][0], all[all.len() - 1][0]);
    for (start, end, buckets) in [
        (None, None, 600),
        (None, None, 7),
        (Some(first + 123), Some(first + 1000), 13),
        (Some(last - 40), None, 500),
    ] {
        let t = a
            .timeline(&TimelineRequest {
                device: None,
                start_id: start,
                end_id: end,
                buckets,
            })
            .unwrap();
        assert_eq!(t.bounds, Some((first, last)));
        let (lo, hi) = t.window.unwrap();
        assert_eq!((lo, hi), (start.unwrap_or(first), end.unwrap_or(last)));
        assert!(
            t.buckets.len() <= buckets,
            "{} > {buckets}",
            t.buckets.len()
        );
        // Buckets tile the window: contiguous, in order, every event counted once.
        assert_eq!(t.buckets[0].first_id, lo);
        assert_eq!(t.buckets.last().unwrap().last_id, hi);
        for w in t.buckets.windows(2) {
            assert_eq!(w[0].last_id + 1, w[1].first_id);
        }
        let window: Vec<&[i64; 4]> = all.iter().filter(|e| e[0] >= lo && e[0] <= hi).collect();
        assert_eq!(
            t.buckets.iter().map(|b| b.events).sum::<i64>(),
            window.len() as i64
        );
        for b in &t.buckets {
            let inside: Vec<&&[i64; 4]> = window
                .iter()
                .filter(|e| e[0] >= b.first_id && e[0] <= b.last_id)
                .collect();
            for (k, ext) in [(1, b.allocated), (2, b.active), (3, b.reserved)] {
                let max = inside.iter().map(|e| e[k]).max().unwrap();
                let min = inside.iter().map(|e| e[k]).min().unwrap();
                let max_id = inside.iter().find(|e| e[k] == max).unwrap()[0];
                let min_id = inside.iter().find(|e| e[k] == min).unwrap()[0];
                assert_eq!(
                    (ext.min, ext.min_id, ext.max, ext.max_id),
                    (min, min_id, max, max_id)
                );
            }
        }
    }
}

#[test]
fn the_peaks_survive_downsampling_at_their_events() {
    let a = analyzer();
    let peak = a.run(&QueryRequest::new("memory_peak")).unwrap();
    let p = |c: &str| peak.get(0, c).and_then(Value::as_i64).unwrap();
    for buckets in [1, 3, 100, 1200] {
        let t = a.timeline(&TimelineRequest::new(buckets)).unwrap();
        let top = |f: fn(&pt_snap_query::TimelineBucket) -> pt_snap_query::Extent| {
            let best = t
                .buckets
                .iter()
                .map(f)
                .max_by_key(|e| (e.max, -e.max_id))
                .unwrap();
            (best.max, best.max_id)
        };
        assert_eq!(
            top(|b| b.allocated),
            (p("peak_allocated"), p("peak_allocated_event_id"))
        );
        assert_eq!(
            top(|b| b.active),
            (p("peak_active"), p("peak_active_event_id"))
        );
        assert_eq!(
            top(|b| b.reserved),
            (p("peak_reserved"), p("peak_reserved_event_id"))
        );
    }
}

#[test]
fn one_event_per_bucket_when_zoomed_in_and_nothing_outside_the_events() {
    let a = analyzer();
    let t = a
        .timeline(&TimelineRequest {
            start_id: Some(10),
            end_id: Some(19),
            ..TimelineRequest::new(50)
        })
        .unwrap();
    assert_eq!(t.buckets.len(), 10);
    for (i, b) in t.buckets.iter().enumerate() {
        assert_eq!(
            (b.first_id, b.last_id, b.events),
            (10 + i as i64, 10 + i as i64, 1)
        );
        assert_eq!(b.active.min, b.active.max);
        assert_eq!(b.active.in_order()[0].0, b.first_id);
    }
    let (_, last) = t.bounds.unwrap();
    let beyond = a
        .timeline(&TimelineRequest {
            start_id: Some(last + 1),
            ..TimelineRequest::new(50)
        })
        .unwrap();
    assert_eq!((beyond.window, beyond.buckets.len()), (None, 0));
    let err = a
        .timeline(&TimelineRequest {
            device: Some(99),
            ..TimelineRequest::new(50)
        })
        .unwrap_err();
    assert_eq!(err.code(), "DEVICE_NOT_FOUND");
}
