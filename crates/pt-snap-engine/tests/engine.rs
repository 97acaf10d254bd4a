//! The engine on real fixtures: what the replay previews equals what the database answers
//! later, questions stop for the reason their interrupt gives, and every message survives
//! its trip as text.

use std::path::{Path, PathBuf};

use pt_snap_engine::preview::device_preview;
use pt_snap_engine::*;
use pt_snap_import::{ImportRequest, Indexes};
use pt_snap_report::allocations::{Colour, Item};
use pt_snap_testkit::{pickles_in, FIXTURE_DIRS};
use rusqlite::Connection;
use serde_json::json;

const BUCKETS: usize = 97;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every snapshot in the repository's fixtures that imports strictly.
fn fixtures() -> Vec<PathBuf> {
    let out = pickles_in(&root(), &FIXTURE_DIRS);
    assert!(out.len() >= 5, "the repository's fixtures are missing");
    out
}

fn origin(name: &str) -> Origin {
    Origin {
        name: name.to_owned(),
        imported: true,
        db_bytes: 0,
        warnings: Vec::new(),
        storage: Storage::Memory,
        cache_hit: false,
        source_unchecked: false,
    }
}

/// Imports `path` in memory, returning the previews the replay gave and the engine.
fn import(path: &Path) -> Option<(Vec<DevicePreview>, Engine)> {
    let (previews, conn) = import_connection(path, Indexes::WithRows)?;
    Some((
        previews,
        Engine::from_connection(conn, origin("x")).unwrap(),
    ))
}

/// [`import`] of every fixture that imports strictly, one at a time: its path, the previews
/// the replay gave and the engine.
fn imported_fixtures() -> impl Iterator<Item = (PathBuf, Vec<DevicePreview>, Engine)> {
    fixtures().into_iter().filter_map(|path| {
        let (previews, engine) = import(&path)?;
        Some((path, previews, engine))
    })
}

fn import_connection(path: &Path, indexes: Indexes) -> Option<(Vec<DevicePreview>, Connection)> {
    let bytes = std::fs::read(path).unwrap();
    let snapshot = pt_snap_model::decode(&bytes[..], &mut |_| {}).ok()?;
    let conn = Connection::open_in_memory().unwrap();
    let request = ImportRequest {
        indexes,
        ..ImportRequest::new(
            "x",
            "0".repeat(64),
            bytes.len() as u64,
            "2026-12-04T00:00:00+00:00",
        )
    };
    let mut previews = Vec::new();
    pt_snap_import::import_snapshot_observed(&snapshot, &conn, &request, &mut |_| {}, &mut |d| {
        previews.push(device_preview(d, BUCKETS))
    })
    .ok()?;
    Some((previews, conn))
}

fn never() -> Option<Stop> {
    None
}

/// Every device of every fixture with events, over its first 300 events at one column each:
/// `f(path, engine, device, window, columns)`.
fn each_first_300_events(mut f: impl FnMut(&Path, &Engine, &DevicePreview, (i64, i64), usize)) {
    for (path, previews, engine) in imported_fixtures() {
        for p in &previews {
            let Some((first, last)) = p.timeline.bounds else {
                continue;
            };
            let (lo, hi) = (first, last.min(first + 299));
            f(&path, &engine, p, (lo, hi), (hi - lo + 1) as usize);
        }
    }
}

/// The counter timeline over `window`, a bucket per event: what the band charts must stack up
/// to, column by column.
fn counters_per_event(engine: &Engine, device: i64, window: (i64, i64)) -> Timeline {
    let buckets = (window.1 - window.0 + 1) as usize;
    (engine.ask(
        question::Timeline {
            device,
            window: Some(window),
            buckets,
        },
        never,
        60.0,
    ))
    .unwrap()
}

#[test]
fn a_database_whose_indexes_were_deferred_answers_alike_before_and_after_they_are_built() {
    let mut checked = 0;
    for (path, _, whole) in imported_fixtures() {
        let (_, conn) = import_connection(&path, Indexes::Deferred).unwrap();
        let mut deferred = Engine::from_connection(conn, origin("x")).unwrap();
        let devices = deferred.overview().devices.clone();
        assert_eq!(deferred.indexes_left(), Ok(6 * devices.len()), "{path:?}");
        assert_eq!(whole.indexes_left(), Ok(0), "{path:?}");
        let mut questions: Vec<Query> = vec![
            question::Oom { rules: None }.into(),
            question::RankSummary {
                metric: Metric::Active,
            }
            .into(),
        ];
        for &device in &devices {
            questions.push(question::Peaks { device }.into());
            questions.push(
                question::PeakReport {
                    device,
                    metric: Metric::Reserved,
                    include_static: true,
                }
                .into(),
            );
            questions.push(
                question::Timeline {
                    device,
                    window: None,
                    buckets: 64,
                }
                .into(),
            );
            questions.push(
                question::Allocations {
                    device,
                    window: None,
                    columns: 64,
                    top: 100,
                    colour: Colour::Category,
                    rules: None,
                }
                .into(),
            );
            questions.push(question::Event { device, id: 0 }.into());
            questions.push(
                question::Tree {
                    device,
                    event_id: 0,
                    include_static: true,
                }
                .into(),
            );
            // Every template with its default parameters; one that needs more is refused
            // alike on both sides.
            for (template, _, _) in templates() {
                questions.push(
                    question::Template {
                        device,
                        template,
                        params: serde_json::Map::new(),
                        max_rows: 50,
                        exact_total: true,
                    }
                    .into(),
                );
            }
        }
        let answers =
            |e: &Engine| -> Vec<_> { questions.iter().map(|q| e.answer(q, never, 60.0)).collect() };
        let before = answers(&deferred);
        assert_eq!(before, answers(&whole), "{path:?}: before the indexes");
        // A segment map builds its device's two block indexes first, and no other.
        if let Some(&device) = devices.first() {
            let map: Query = question::Segments {
                device,
                event_id: 0,
            }
            .into();
            let left = Some(6 * devices.len() - 2);
            assert_eq!(deferred.build_indexes_for(&map), Ok(left), "{path:?}");
            assert_eq!(deferred.build_indexes_for(&map), Ok(None), "{path:?}");
            for c in ["allocEventId", "freeEventId"] {
                let name = format!("idx_block_{device}_{c}");
                let sql = format!("SELECT count(*) FROM sqlite_master WHERE name = '{name}'");
                assert_eq!(sql_cell(&deferred, &sql), Ok(json!(1)), "{path:?} {name}");
            }
        }
        let mut left = deferred.indexes_left().unwrap();
        while left > 0 {
            let now = deferred.build_next_index().unwrap();
            assert_eq!(now, Some(left - 1), "{path:?}");
            left -= 1;
        }
        assert_eq!(answers(&deferred), before, "{path:?}: after the indexes");
        assert_eq!(
            deferred.build_next_index(),
            Ok(None),
            "{path:?}: nothing more"
        );
        if !devices.is_empty() {
            let size = sql_cell(
                &deferred,
                "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
            );
            assert_eq!(Ok(json!(deferred.overview().db_bytes)), size, "{path:?}");
        }
        assert_eq!(
            sql_cell(&deferred, "PRAGMA query_only"),
            Ok(json!(1)),
            "{path:?}: read-only again"
        );
        checked += 1;
    }
    assert!(checked >= 5, "{checked} fixtures");
}

/// The first cell of the SQL console's answer to `sql`, or its refusal's code.
fn sql_cell(engine: &Engine, sql: &str) -> Result<serde_json::Value, String> {
    match engine.ask(
        question::Sql {
            sql: sql.into(),
            cap: 1,
        },
        never,
        60.0,
    ) {
        Ok(t) => Ok(t.rows.first().map_or(json!(null), |r| r[0].clone())),
        Err(e) => Err(e.code.to_string()),
    }
}

#[test]
fn the_sql_console_reads_and_changes_nothing_on_a_writable_connection() {
    // A deferred import's connection stays writable for its indexes, as the browser's does.
    let (_, conn) = fixtures()
        .iter()
        .filter_map(|path| import_connection(path, Indexes::Deferred))
        .find(|(previews, _)| !previews.is_empty())
        .unwrap();
    let engine = Engine::from_connection(conn, origin("x")).unwrap();
    for refused in [
        "CREATE INDEX x ON callstack (callstack)",
        "DELETE FROM callstack",
        "PRAGMA query_only = 0",
        "PRAGMA journal_mode = WAL",
        "PRAGMA writable_schema = 1",
        // In memory, so a regression here makes no file.
        "ATTACH ':memory:' AS elsewhere",
        "BEGIN",
        "SAVEPOINT s",
    ] {
        assert_eq!(
            sql_cell(&engine, refused),
            Err("QUERY_FAILED".into()),
            "{refused}"
        );
    }
    assert_eq!(sql_cell(&engine, "PRAGMA query_only"), Ok(json!(1)));
    assert_eq!(
        sql_cell(
            &engine,
            "SELECT count(*) FROM pragma_database_list WHERE name = 'elsewhere'"
        ),
        Ok(json!(0)),
        "nothing attached"
    );
    for reads in [
        "PRAGMA table_info(callstack)",
        "SELECT cid FROM pragma_table_info('callstack')",
        "EXPLAIN QUERY PLAN SELECT * FROM callstack WHERE id = 1",
        "WITH c(n) AS (SELECT 0) SELECT n FROM c",
    ] {
        assert!(sql_cell(&engine, reads).is_ok(), "{reads}");
    }
    assert_eq!(
        sql_cell(&engine, "PRAGMA table_info(callstack)"),
        Ok(json!(0)),
        "a PRAGMA that reads, with an argument"
    );
    assert_eq!(
        sql_cell(&engine, "SELECT count(*) FROM callstack").map(|v| v.is_u64()),
        Ok(true)
    );
    // The engine's own statements still run after a refusal: the flag is down again.
    let device = engine.overview().devices[0];
    assert!(engine.ask(question::Peaks { device }, never, 60.0).is_ok());
}

#[test]
fn the_replays_preview_is_what_the_database_answers() {
    let mut checked = 0;
    for (path, previews, engine) in imported_fixtures() {
        assert_eq!(
            previews.iter().map(|p| p.device).collect::<Vec<_>>(),
            engine.overview().devices,
            "{path:?}"
        );
        for p in &previews {
            let peaks = engine.ask(question::Peaks { device: p.device }, never, 60.0);
            assert_eq!(peaks, Ok(p.peaks), "{path:?} device {}", p.device);
            let timeline = engine.ask(
                question::Timeline {
                    device: p.device,
                    window: None,
                    buckets: BUCKETS,
                },
                never,
                60.0,
            );
            assert_eq!(
                timeline,
                Ok(p.timeline.clone()),
                "{path:?} device {}",
                p.device
            );
            let bounds = engine
                .overview()
                .bounds
                .iter()
                .find(|(d, _)| *d == p.device)
                .and_then(|(_, b)| *b);
            assert_eq!(bounds, p.timeline.bounds, "{path:?}");
            checked += 1;
        }
        // The ranks row of every device, as the page's Ranks view gets it: the peaks are
        // the preview's, and it survives the trip as a message.
        let question = question::RankSummary {
            metric: Metric::Active,
        };
        let summary = engine.answer(&question.into(), never, 60.0);
        let rows = match answer_of::<question::RankSummary>(summary.clone()) {
            Ok(rows) => rows,
            // As `ranks` says of a file without a device trace.
            Err(e) if previews.is_empty() => {
                assert_eq!(e.code, "DEVICE_NOT_FOUND", "{path:?}");
                Vec::new()
            }
            other => panic!("{path:?}: {other:?}"),
        };
        assert_eq!(
            rows.iter().map(|r| (r.device, r.peaks)).collect::<Vec<_>>(),
            previews
                .iter()
                .map(|p| (p.device, p.peaks))
                .collect::<Vec<_>>(),
            "{path:?}"
        );
        let message = FromWorker::Answer {
            id: 1,
            answer: summary.clone(),
        };
        assert_eq!(decode::<FromWorker>(&encode(&message)).unwrap(), message);
    }
    assert!(checked >= 5, "only {checked} devices checked");
}

#[test]
fn a_question_stops_for_the_reason_its_interrupt_gives() {
    let (_, engine) =
        import(&root().join("fixtures/upstream-pkg/snapshots/snapshot_with_multi_devices.pkl"))
            .unwrap();
    let endless = question::Sql {
        sql:
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
                .into(),
        cap: 10,
    };
    let timeout = engine
        .ask(endless.clone(), || Some(Stop::Deadline), 0.5)
        .unwrap_err();
    assert_eq!(timeout.code, "QUERY_TIMEOUT");
    assert!(timeout.message.contains("0.5"), "{}", timeout.message);
    let cancelled = engine
        .ask(endless, || Some(Stop::Superseded), 60.0)
        .unwrap_err();
    assert!(cancelled.is_cancelled());
    // The engine is usable afterwards, with no interrupt left behind.
    let ok = engine.ask(
        question::Sql {
            sql: "SELECT count(*) AS n FROM dictionary".into(),
            cap: 10,
        },
        never,
        60.0,
    );
    assert!(matches!(ok, Ok(t) if t.rows.len() == 1));
}

#[test]
fn the_console_refuses_writes_and_caps_rows() {
    let (_, engine) =
        import(&root().join("fixtures/upstream-pkg/snapshots/snapshot_with_multi_devices.pkl"))
            .unwrap();
    let write = engine
        .ask(
            question::Sql {
                sql: "DELETE FROM dictionary".into(),
                cap: 10,
            },
            never,
            60.0,
        )
        .unwrap_err();
    assert_eq!(write.code, "QUERY_FAILED");
    let t = engine
        .ask(
            question::Sql {
                sql: "SELECT id FROM trace_entry_0".into(),
                cap: 3,
            },
            never,
            60.0,
        )
        .unwrap();
    assert_eq!((t.rows.len(), t.has_more), (3, true));
}

#[test]
fn templates_and_reports_answer_typed() {
    let (previews, engine) =
        import(&root().join("fixtures/upstream-pkg/snapshots/snapshot_with_multi_devices.pkl"))
            .unwrap();
    let device = previews[0].device;
    let r = engine
        .ask(
            question::PeakReport {
                device,
                metric: Metric::Active,
                include_static: true,
            },
            never,
            60.0,
        )
        .unwrap();
    assert_eq!(r.event_id, previews[0].peaks.active.event_id);
    assert_eq!(
        r.included_bytes,
        r.groups.iter().map(|g| g.size_bytes).sum::<i64>()
    );
    let event = r.event_id.unwrap();
    let e = engine
        .ask(question::Event { device, id: event }, never, 60.0)
        .unwrap()
        .expect("the peak's event");
    assert_eq!(Some(e.active), previews[0].peaks.active.bytes);
    let text = engine
        .ask(
            question::Tree {
                device,
                event_id: event,
                include_static: true,
            },
            never,
            60.0,
        )
        .unwrap();
    // The flamegraph's data: every frame row with its origin, and the Python frames view,
    // both decided by pt-snap-report rather than by the page.
    let tree: serde_json::Value = serde_json::from_str(&text).unwrap();
    let rows = tree["nodes"].as_array().unwrap();
    for r in rows {
        let frame = !r["frame_id"].is_null();
        assert_eq!(r["origin"].is_string(), frame, "{r}");
    }
    assert!(tree["python_view"]["nodes"].is_array());
    let bad = engine
        .ask(
            question::Template {
                device,
                template: "no_such_template".into(),
                params: Default::default(),
                max_rows: 10,
                exact_total: false,
            },
            never,
            60.0,
        )
        .unwrap_err();
    assert_eq!(bad.code, "TEMPLATE_NOT_FOUND");
}

/// The Compare view measures each file in its own worker and compares on the page: a side
/// that crossed as text compares exactly as the CLI's `diff` does with both in one process.
#[test]
fn a_diff_side_crosses_as_text_and_compares_as_the_clis_diff() {
    use pt_snap_report::diff::{measure, Diff, DiffRequest, PAGE_BUCKETS};
    let path = root().join("fixtures/upstream-pkg/snapshots/snapshot_with_multi_devices.pkl");
    let (previews, engine) = import(&path).unwrap();
    let (_, conn) = import_connection(&path, Indexes::WithRows).unwrap();
    let other =
        pt_snap_query::Analyzer::new(pt_snap_db::SnapshotDb::from_connection(conn).unwrap())
            .unwrap();
    for metric in [Metric::Active, Metric::Allocated, Metric::Reserved] {
        for p in &previews {
            let question = question::DiffSide {
                device: Some(p.device),
                metric,
                buckets: PAGE_BUCKETS,
            };
            let message = FromWorker::Answer {
                id: 1,
                answer: engine.answer(&question.into(), never, 60.0),
            };
            let FromWorker::Answer { answer, .. } =
                decode::<FromWorker>(&encode(&message)).unwrap()
            else {
                panic!("no answer");
            };
            let side = answer_of::<question::DiffSide>(answer).unwrap();
            assert_eq!(side.device_id, p.device);
            assert_eq!(side.peaks, Some(p.peaks));
            assert!(!side.groups.is_empty());
            // The CLI's way: both sides measured in one process, from the other import.
            let direct = measure(
                &other,
                &DiffRequest {
                    device: Some(p.device),
                    metric,
                },
                |d| {
                    let req = pt_snap_query::TimelineRequest {
                        device: Some(d),
                        ..pt_snap_query::TimelineRequest::new(PAGE_BUCKETS)
                    };
                    let (by_event, by_time) = other.timelines(&req)?;
                    Ok(pt_snap_report::diff::Timelines { by_event, by_time })
                },
            )
            .unwrap();
            assert_eq!(side, direct, "device {} {metric:?}", p.device);
            let diff = Diff::new(side.clone(), direct, pt_snap_report::diff::By::Stack);
            assert!(diff.groups.iter().all(|g| g.delta() == 0));
            assert_eq!(diff.total_a(), side.live_bytes_at_peak.unwrap());
            let empty = serde_json::Map::new();
            let page = diff.to_page_data(Some(50), ["a", "b"], [&empty, &empty]);
            assert_eq!(page.data["total_delta"], json!(0));
            assert_eq!(page.tree["mode"], json!("diff"));
        }
    }
}

/// The allocation timeline stacks exactly the live bytes: at one event per column, every
/// column's stack (kept blocks and folded ones together) is the trace's `active` counter
/// after that event (a block is live until its free completes), on every fixture and device.
#[test]
fn the_allocation_timeline_stacks_the_active_counter() {
    each_first_300_events(|path, engine, p, (lo, hi), columns| {
        let ask = |top, colour| match engine.ask(
            question::Allocations {
                device: p.device,
                window: Some((lo, hi)),
                columns,
                top,
                colour,
                rules: None,
            },
            never,
            60.0,
        ) {
            Ok(view) => view,
            other => panic!("{}: {other:?}", path.display()),
        };
        let counters = counters_per_event(engine, p.device, (lo, hi));
        for (top, colour) in [
            (0, Colour::Site),
            (7, Colour::Site),
            (usize::MAX, Colour::Site),
            (7, Colour::Category),
        ] {
            let view = ask(top, colour);
            let a = &view.allocations;
            assert!(a.bands.len() <= top);
            for b in &counters.buckets {
                let c = (b.first_id - lo) as usize;
                assert_eq!(a.column_events(c), Some((b.first_id, b.first_id)));
                let height = a.stack_at(c).last().map_or(0, |s| s.2);
                assert_eq!(
                    height,
                    b.active.max,
                    "{} device {} event {} top {top}",
                    path.display(),
                    p.device,
                    b.first_id
                );
            }
            if colour == Colour::Category {
                // By category, a column's bands and folded blocks are the template's
                // breakdown at its event.
                let c = columns / 2;
                let (e, _) = a.column_events(c).unwrap();
                let mut drawn = std::collections::BTreeMap::<String, i64>::new();
                for (item, from, to) in a.stack_at(c) {
                    let key = match item {
                        Item::Rest(k) => k,
                        Item::Band(i) => a.bands[i].key,
                    };
                    *drawn.entry(a.keys[key as usize].clone()).or_default() += to - from;
                }
                let t = engine
                    .ask(
                        question::Template {
                            device: p.device,
                            template: "category_breakdown_at_event".into(),
                            params: json!({"event_id": e}).as_object().unwrap().clone(),
                            max_rows: -1,
                            exact_total: true,
                        },
                        never,
                        60.0,
                    )
                    .unwrap();
                let (ci, bi) = (
                    t.columns.iter().position(|c| c == "category").unwrap(),
                    t.columns.iter().position(|c| c == "bytes").unwrap(),
                );
                let mut want = std::collections::BTreeMap::<String, i64>::new();
                for r in &t.rows {
                    *want.entry(r[ci].as_str().unwrap().to_owned()).or_default() +=
                        r[bi].as_i64().unwrap();
                }
                want.retain(|_, v| *v != 0);
                drawn.retain(|_, v| *v != 0);
                assert_eq!(drawn, want, "{} event {e}", path.display());
                assert_eq!(view.rules.len(), a.bands.len(), "each kept block's rule");
            }
            // Sites label kept blocks' stacks only, each with some text (an empty stack
            // has none).
            let kept: std::collections::HashSet<i64> =
                a.bands.iter().filter_map(|b| b.block.callstack).collect();
            for (id, site) in &view.sites {
                assert!(kept.contains(id) && !site.is_empty(), "{id}: {site:?}");
            }
        }
    });
}

/// The OOM view's answer is `report oom`'s, through the page's text messages; a file without
/// an OOM answers no events.
#[test]
fn the_oom_answer_is_report_ooms() {
    let mut with_oom = 0;
    for (path, _, engine) in imported_fixtures() {
        let answer = engine.answer(&question::Oom { rules: None }.into(), never, 60.0);
        if engine.overview().devices.is_empty() {
            assert_eq!(
                answer.unwrap_err().code,
                "DEVICE_NOT_FOUND",
                "as the CLI says"
            );
            continue;
        }
        let message = FromWorker::Answer { id: 1, answer };
        let FromWorker::Answer { answer, .. } = decode::<FromWorker>(&encode(&message)).unwrap()
        else {
            panic!("{}: no answer", path.display());
        };
        let report = answer_of::<question::Oom>(answer).unwrap();
        let (_, conn) = import_connection(&path, Indexes::WithRows).unwrap();
        let analyzer =
            pt_snap_query::Analyzer::new(pt_snap_db::SnapshotDb::from_connection(conn).unwrap())
                .unwrap();
        let db = analyzer.db();
        let direct = pt_snap_report::oom_report(
            &analyzer,
            &pt_snap_report::OomRequest {
                device: None,
                top_n: 10,
                category_rules: Default::default(),
            },
            &|d| Ok(db.oom_device_free(d as usize).unwrap()),
        )
        .unwrap();
        assert_eq!(report, direct, "{}", path.display());
        // Not every "oom" capture recorded the `oom` event (flexgen's did not).
        if path.ends_with("synth_small_2dev_oom.pkl") {
            assert_eq!(report.events.len(), 2, "one OOM per device");
            with_oom += 1;
        }
    }
    assert_eq!(with_oom, 1, "the OOM fixture was explained");
}

/// Rules of the user's own (a `--categories` file's TOML) colour the allocation timeline
/// and the OOM view's breakdown; bad rules are the CLI's `INVALID_PARAMETER`.
#[test]
fn the_users_category_rules_replace_the_built_in_ones() {
    const ALL_TEMPORARY: &str =
        "[[rule]]\nname = \"everything\"\ncategory = \"temporary\"\nfile = \".\"\n";
    let (previews, engine) =
        import(&root().join("fixtures/synthetic/synth_small_2dev_oom.pkl")).unwrap();
    let ask = |rules: Option<&str>| {
        engine.ask(
            question::Allocations {
                device: previews[0].device,
                window: None,
                columns: 64,
                top: 100,
                colour: Colour::Category,
                rules: rules.map(str::to_owned),
            },
            never,
            60.0,
        )
    };
    let view = ask(Some(ALL_TEMPORARY)).unwrap();
    let a = &view.allocations;
    assert!(!a.bands.is_empty());
    for band in &a.bands {
        let rule = &view.rules[view
            .rules
            .binary_search_by_key(&band.block.block, |r| r.0)
            .expect("each kept block's rule")]
        .1;
        let category = &a.keys[band.key as usize];
        if band.block.alloc == -1 {
            assert_eq!(
                (category.as_str(), rule.as_str()),
                ("unknown", "no-allocation-event")
            );
        } else {
            assert_eq!(
                (category.as_str(), rule.as_str()),
                ("temporary", "everything")
            );
        }
    }
    // The built-in rules again: nothing of the user's is kept.
    let builtin = ask(None).unwrap();
    assert!(builtin.rules.iter().all(|(_, r)| r != "everything"));
    let bad = ask(Some(
        "[[rule]]\nname = \"x\"\ncategory = \"nonsense\"\nfile = \".\"\n",
    ))
    .unwrap_err();
    assert_eq!(bad.code, "INVALID_PARAMETER");
    assert!(bad.message.contains("nonsense"), "{}", bad.message);
    let report = engine
        .ask(
            question::Oom {
                rules: Some(ALL_TEMPORARY.to_owned()),
            },
            never,
            60.0,
        )
        .unwrap();
    let rows = &report.events[0].categories.rows;
    assert!(rows
        .iter()
        .any(|r| r.category == "temporary" && r.rule == "everything"));
    assert_eq!(report.category_rules, "custom");
}

#[test]
fn a_file_that_is_not_a_snapshot_db_is_refused_with_the_clis_code() {
    let junk = b"SQLite format 3\0 but not really";
    let failure = Engine::from_image(&junk[..], junk.len(), origin("junk.db"))
        .err()
        .unwrap();
    assert_eq!(failure.code, "DATABASE_SCHEMA_INVALID");
}

#[test]
fn messages_survive_their_trip_as_text_with_every_integer_exact() {
    let messages = vec![
        ToWorker::Ask {
            id: u64::MAX,
            budget_s: 0.25,
            query: question::Template {
                device: 3,
                template: "event".into(),
                params: json!({"id": i64::MAX, "address": i64::MIN})
                    .as_object()
                    .unwrap()
                    .clone(),
                max_rows: -1,
                exact_total: true,
            }
            .into(),
        },
        ToWorker::Import {
            lenient: true,
            buckets: 1000,
            shown_sha256: Some("ef".repeat(32)),
            quick_match: true,
        },
        ToWorker::Reopen {
            sha256: "ab".repeat(32),
            warnings: vec!["w".into()],
            cache_hit: true,
        },
        ToWorker::Open,
        ToWorker::Download,
        ToWorker::BuildIndexes,
    ];
    for m in &messages {
        assert_eq!(&decode::<ToWorker>(&encode(m)).unwrap(), m);
    }
    let big = Peak {
        bytes: Some((1 << 62) + 1),
        event_id: Some(-(1 << 60) - 3),
    };
    let answers = vec![
        FromWorker::Answer {
            id: 7,
            answer: Ok(Answer::Peaks(Peaks {
                allocated: big,
                active: big,
                reserved: Peak::default(),
            })),
        },
        FromWorker::Answer {
            id: 8,
            answer: Err(pt_snap_engine::protocol::superseded()),
        },
        FromWorker::Progress(Progress::Decoding {
            bytes: 1.0,
            total: 2.0,
            events: 3,
        }),
        FromWorker::Failed(Failure::new(ErrorCode::SnapshotInvalid, "x")),
        FromWorker::Ready,
        FromWorker::AlreadyOpen,
        FromWorker::SourceChecked { same: false },
        FromWorker::Stored {
            sha256: "cd".repeat(32),
            warnings: Vec::new(),
        },
        FromWorker::Indexes(Ok(IndexesLeft {
            left: 13,
            db_bytes: u64::from(u32::MAX) + 1,
        })),
        FromWorker::Indexes(Err(Failure::new(ErrorCode::QueryFailed, "disk full"))),
    ];
    for m in &answers {
        assert_eq!(&decode::<FromWorker>(&encode(m)).unwrap(), m);
    }
    let wrong = decode::<ToWorker>("{\"Nope\":1}").unwrap_err();
    assert_eq!(wrong.code, "INTERNAL_ERROR");
}

/// A question crosses as the text it did when `Query` had a variant of fields per kind, and
/// its answer is its own type: another question's answer is refused, never misread.
#[test]
fn a_question_crosses_as_text_and_takes_only_its_own_answer() {
    assert_eq!(
        encode(&Query::from(question::Peaks { device: 3 })),
        r#"{"Peaks":{"device":3}}"#
    );
    assert_eq!(
        encode(&Query::from(question::Sql {
            sql: "SELECT 1".into(),
            cap: 2
        })),
        r#"{"Sql":{"sql":"SELECT 1","cap":2}}"#
    );
    let table = Table {
        columns: vec!["n".into()],
        rows: vec![vec![json!(1)]],
        total: 1,
        has_more: false,
        truncated: false,
        total_is_exact: true,
        note: None,
    };
    let answer = Ok(question::Sql::wrap(table.clone()));
    assert_eq!(answer_of::<question::Template>(answer.clone()), Ok(table));
    let misread = answer_of::<question::Peaks>(answer).unwrap_err();
    assert_eq!(misread.code, "INTERNAL_ERROR");
    assert_eq!(
        answer_of::<question::Event>(Err(pt_snap_engine::protocol::stopped())),
        Err(pt_snap_engine::protocol::stopped()),
        "a failure stays the failure it was"
    );
}

/// A new analyzer over `path`'s database, as the CLI opens one: what the engine's answers
/// are compared with.
fn direct_analyzer(path: &Path) -> pt_snap_query::Analyzer {
    let (_, conn) = import_connection(path, Indexes::WithRows).unwrap();
    pt_snap_query::Analyzer::new(pt_snap_db::SnapshotDb::from_connection(conn).unwrap()).unwrap()
}

/// Where two JSON values first differ (a path and both sides), for a readable failure of
/// a map of thousands of blocks.
fn difference(a: &serde_json::Value, b: &serde_json::Value) -> Option<String> {
    use serde_json::Value::{Array, Object};
    match (a, b) {
        (Object(x), Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let none = serde_json::Value::Null;
                let (u, v) = (x.get(k).unwrap_or(&none), y.get(k).unwrap_or(&none));
                difference(u, v).map(|d| format!(".{k}{d}"))
            })
        }
        (Array(x), Array(y)) if x.len() == y.len() => (x.iter().zip(y))
            .enumerate()
            .find_map(|(i, (u, v))| difference(u, v).map(|d| format!("[{i}]{d}"))),
        _ if a == b => None,
        _ => {
            let short = |v: &serde_json::Value| v.to_string().chars().take(300).collect::<String>();
            Some(format!(": {} != {}", short(a), short(b)))
        }
    }
}

/// `text` is the page data of `map`, to the byte (the text the CLI's page inlines; a float
/// read back from text may differ in its last bit, so the text is compared).
fn same_page(text: &str, map: &pt_snap_report::segments::SegmentMap, what: &str) {
    let want = pt_snap_report::segments::page_data(map).to_string();
    if text != want {
        let parse = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap();
        panic!("{what}: {:?}", difference(&parse(text), &parse(&want)));
    }
}

/// The segment map at any event is `report segments`' map there, however the events are
/// asked for (later, earlier, again: the engine keeps each device's replay and goes on
/// from its nearest checkpoint); an event outside the device's is the CLI's
/// `INVALID_PARAMETER`; a question stopped part way leaves the replay usable.
#[test]
fn the_segment_map_is_report_segments_at_every_event_asked() {
    let mut checked = 0;
    for (path, previews, engine) in imported_fixtures() {
        if previews.is_empty() {
            continue;
        }
        let direct = direct_analyzer(&path);
        for p in &previews {
            let Some((first, last)) = p.timeline.bounds else {
                continue;
            };
            let span = last - first;
            let what = |e: i64| format!("{} device {} event {e}", path.display(), p.device);
            // Out of order on purpose: forwards, back, the same again, the middle.
            for e in [
                first + span / 2,
                last,
                first,
                first + span / 2,
                first + span / 3,
                first + span * 7 / 8,
            ] {
                let answer = engine.answer(
                    &question::Segments {
                        device: p.device,
                        event_id: e,
                    }
                    .into(),
                    never,
                    60.0,
                );
                let message = FromWorker::Answer { id: 1, answer };
                let FromWorker::Answer { answer, .. } =
                    decode::<FromWorker>(&encode(&message)).unwrap()
                else {
                    panic!("{}: no answer", what(e));
                };
                let text = answer_of::<question::Segments>(answer).unwrap();
                let map = pt_snap_report::segments::segment_map(&direct, Some(p.device), e)
                    .unwrap_or_else(|err| panic!("{}: {err}", what(e)));
                same_page(&text, &map, &what(e));
                let page: serde_json::Value = serde_json::from_str(&text).unwrap();
                // The last event at or before `e` (ids may skip).
                assert!(page["event"]["id"].as_i64() <= Some(e), "{}", what(e));
                checked += 1;
            }
            let outside = engine
                .ask(
                    question::Segments {
                        device: p.device,
                        event_id: last + 1,
                    },
                    never,
                    60.0,
                )
                .unwrap_err();
            assert_eq!(outside.code, "INVALID_PARAMETER", "{}", what(last + 1));
            let stopped = engine.ask(
                question::Segments {
                    device: p.device,
                    event_id: last,
                },
                || Some(Stop::Superseded),
                60.0,
            );
            // A map already replayed to may be answered before the interrupt is polled;
            // either way the next question is answered whole.
            if let Err(f) = stopped {
                assert!(f.is_cancelled(), "{}: {f:?}", what(last));
            }
            let again = engine
                .ask(
                    question::Segments {
                        device: p.device,
                        event_id: last,
                    },
                    never,
                    60.0,
                )
                .unwrap();
            let map = pt_snap_report::segments::segment_map(&direct, Some(p.device), last).unwrap();
            same_page(
                &again,
                &map,
                &format!("{}: after a stopped question", what(last)),
            );
        }
    }
    assert!(checked >= 30, "only {checked} maps checked");
}

/// The segment timeline at one event per column stacks exactly the reserved counter there.
#[test]
fn the_segment_timeline_stacks_the_reserved_counter() {
    let mut checked = 0;
    each_first_300_events(|path, engine, p, (lo, hi), columns| {
        let counters = counters_per_event(engine, p.device, (lo, hi));
        for top in [0, 3, usize::MAX] {
            let a = engine
                .ask(
                    question::SegmentTimeline {
                        device: p.device,
                        window: Some((lo, hi)),
                        columns,
                        top,
                    },
                    never,
                    60.0,
                )
                .unwrap_or_else(|f| panic!("{}: {f:?}", path.display()));
            assert!(a.bands.len() <= top);
            for b in &counters.buckets {
                let c = (b.first_id - lo) as usize;
                let height = a.stack_at(c).last().map_or(0, |s| s.2);
                assert_eq!(
                    height,
                    b.reserved.max,
                    "{} device {} event {} top {top}",
                    path.display(),
                    p.device,
                    b.first_id
                );
                checked += 1;
            }
        }
    });
    assert!(checked >= 1000, "only {checked} columns checked");
}

/// The capture banner's answer is `overview`'s `capture` of the device, its warnings with
/// their codes and messages; a file without trace events has the file's warnings.
#[test]
fn the_capture_answer_is_overviews() {
    let mut warned = 0;
    for path in fixtures() {
        let Some((_, engine)) = import(&path) else {
            continue;
        };
        let direct = direct_analyzer(&path);
        let bounds = engine.overview().bounds.clone();
        let any_events = bounds.iter().any(|b| b.1.is_some());
        for (device, events) in &bounds {
            let answer = engine.answer(&question::Capture { device: *device }.into(), never, 60.0);
            let message = FromWorker::Answer { id: 1, answer };
            let FromWorker::Answer { answer, .. } =
                decode::<FromWorker>(&encode(&message)).unwrap()
            else {
                panic!("no answer");
            };
            let check = answer_of::<question::Capture>(answer).unwrap();
            let expected = match (events, any_events) {
                (Some(_), _) => {
                    Some(pt_snap_report::capture::capture_of(&direct, *device, None).unwrap())
                }
                (None, _) => None,
            };
            assert_eq!(check.capture, expected, "{}", path.display());
            let warnings = match (&expected, any_events) {
                (Some(c), _) => c.warnings(),
                (None, false) => pt_snap_report::capture::Capture::empty().warnings(),
                (None, true) => Vec::new(),
            };
            let wire: Vec<(String, String)> = (check.warnings.iter())
                .map(|w| (w.code.clone(), w.message.clone()))
                .collect();
            let cli: Vec<(String, String)> = (warnings.into_iter())
                .map(|w| (w.code.to_owned(), w.message))
                .collect();
            assert_eq!(wire, cli, "{} device {device}", path.display());
            warned += usize::from(!wire.is_empty());
        }
    }
    assert!(warned >= 1, "no fixture's capture warned");
}
