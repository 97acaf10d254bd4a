//! `Analyzer::timeline` on a database made by pt-snap-cli 0.4.1, checked against the raw
//! series from the `allocation` template and against `memory_peak`.

use pt_snap_query::{Analyzer, QueryRequest, TimelineRequest, Value};
use pt_snap_testkit::{copy_from_repo, repo_root};

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

/// A copy of the fixture's database with `pt_snap_x_event_time_0` filled by `time(id)`
/// (`None`: no row; the text `'soon'` for one id, which no reader takes for a time).
fn with_times(time: impl Fn(i64) -> Option<i64>) -> (tempfile::TempDir, Analyzer, Vec<[i64; 5]>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timed.db");
    copy_from_repo("tests/golden/query/empty_cache/reference.db", &path);
    let all = series(&analyzer());
    let mut timed = Vec::new();
    {
        let conn = pt_snap_query::rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "BEGIN; {};",
            pt_snap_db::schema::create_event_time_table(0)
        ))
        .unwrap();
        let mut insert = conn
            .prepare("INSERT INTO pt_snap_x_event_time_0 VALUES (?, ?)")
            .unwrap();
        for e in &all {
            if let Some(t) = time(e[0]) {
                insert.execute([e[0], t]).unwrap();
                timed.push([e[0], e[1], e[2], e[3], t]);
            }
        }
        conn.execute(
            "INSERT OR REPLACE INTO pt_snap_x_event_time_0 VALUES (?, 'soon')",
            [all[5][0]],
        )
        .unwrap();
        conn.execute_batch("COMMIT").unwrap();
        timed.retain(|e| e[0] != all[5][0]);
    }
    (dir, Analyzer::open(&path).unwrap(), timed)
}

#[test]
fn time_buckets_hold_the_extremes_of_the_events_of_their_span() {
    const T0: i64 = 1_757_253_255_215_904;
    // Bursts and pauses, a clock that steps back once, and events without a time.
    let time = |id: i64| match id {
        _ if id % 97 == 3 => None,
        0..=999 => Some(T0 + id * 20),
        1000..=1999 => Some(T0 + 5_000_000 + (id - 1000) * 3),
        2000..=2099 => Some(T0 + 4_000_000 + id),
        _ => Some(T0 + 9_000_000 + id * id),
    };
    let (_dir, a, timed) = with_times(time);
    for (start, end, buckets) in [
        (None, None, 500),
        (None, None, 9),
        (Some(1500), Some(2300), 40),
    ] {
        let t = a
            .time_timeline(&TimelineRequest {
                device: None,
                start_id: start,
                end_id: end,
                buckets,
            })
            .unwrap();
        assert_eq!((t.unknown, t.origin_us), (None, Some(T0)));
        // Both in one pass are each alone.
        let req = TimelineRequest {
            device: None,
            start_id: start,
            end_id: end,
            buckets,
        };
        assert_eq!(
            a.timelines(&req).unwrap(),
            (a.timeline(&req).unwrap(), t.clone())
        );
        let window: Vec<&[i64; 5]> = timed
            .iter()
            .filter(|e| start.is_none_or(|s| e[0] >= s) && end.is_none_or(|x| e[0] <= x))
            .collect();
        assert_eq!(t.timed_events, window.len() as i64);
        let lo = window.iter().map(|e| e[4] - T0).min().unwrap();
        let hi = window.iter().map(|e| e[4] - T0).max().unwrap();
        assert_eq!(t.span, Some((lo, hi)));
        assert!(t.buckets.len() <= buckets);
        assert_eq!(
            t.buckets.iter().map(|b| b.events).sum::<i64>(),
            window.len() as i64
        );
        let index = |us: i64| (us - lo) as i128 * buckets as i128 / (hi - lo + 1) as i128;
        for w in t.buckets.windows(2) {
            assert!(index(w[0].last_us) < index(w[1].first_us));
        }
        for b in &t.buckets {
            let inside: Vec<&&[i64; 5]> = window
                .iter()
                .filter(|e| index(e[4] - T0) == index(b.first_us))
                .collect();
            assert_eq!(b.events, inside.len() as i64);
            let us = |e: &[i64; 5]| e[4] - T0;
            assert_eq!(b.first_us, inside.iter().map(|e| us(e)).min().unwrap());
            assert_eq!(b.last_us, inside.iter().map(|e| us(e)).max().unwrap());
            for (k, ext) in [(1, b.allocated), (2, b.active), (3, b.reserved)] {
                let min = inside.iter().map(|e| (e[k], us(e), e[0])).min().unwrap();
                let max = inside
                    .iter()
                    .map(|e| (e[k], std::cmp::Reverse((us(e), e[0]))))
                    .max()
                    .unwrap();
                assert_eq!((ext.min, ext.min_us, ext.min_id), min);
                assert_eq!(
                    (ext.max, ext.max_us, ext.max_id),
                    (max.0, (max.1).0 .0, (max.1).0 .1)
                );
            }
        }
    }
    // The peaks' times through the Source: one per id asked, none for ids without a time.
    use pt_snap_query::Source;
    let ids = [0, 3, 1500, 5, -1, 99_999_999];
    let got = a.event_times(0, &ids).unwrap().unwrap();
    assert_eq!(got, [time(0), None, time(1500), None, None, None]);
    assert_eq!(
        a.event_times(7, &ids).unwrap_err().code(),
        "DEVICE_NOT_FOUND"
    );
}

#[test]
fn without_times_the_time_axis_says_why() {
    use pt_snap_query::{NoTimes, Source};
    // The reference's database: no table.
    let a = analyzer();
    let t = a.time_timeline(&TimelineRequest::new(10)).unwrap();
    assert_eq!(
        (t.unknown, t.buckets.len()),
        (Some(NoTimes::NotInDatabase), 0)
    );
    let req = TimelineRequest::new(10);
    assert_eq!(a.timelines(&req).unwrap(), (a.timeline(&req).unwrap(), t));
    assert_eq!(a.event_times(0, &[1]).unwrap(), Err(NoTimes::NotInDatabase));
    // Ours of a trace without time_us: the table, empty.
    let (_dir, a, _) = with_times(|_| None);
    let t = a.time_timeline(&TimelineRequest::new(10)).unwrap();
    // The one non-integer value makes the table non-empty: times kept, none usable.
    assert_eq!((t.unknown, t.origin_us, t.timed_events), (None, None, 0));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.db");
    copy_from_repo("tests/golden/query/empty_cache/reference.db", &path);
    pt_snap_query::rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(&pt_snap_db::schema::create_event_time_table(0))
        .unwrap();
    let a = Analyzer::open(&path).unwrap();
    let t = a.time_timeline(&TimelineRequest::new(10)).unwrap();
    assert_eq!(t.unknown, Some(NoTimes::NotInTrace));
    assert_eq!(a.event_times(0, &[1]).unwrap(), Err(NoTimes::NotInTrace));
}
