//! Reports on databases made by pt-snap-cli 0.4.1 (the query goldens' copies).

use pt_snap_query::{Analyzer, QueryRequest, Value};
use pt_snap_report::{
    flamegraph_page, memory_tree, peak_memory, IncompleteTree, Metric, PeakRequest, TreeRequest,
};
use pt_snap_testkit::{events_worth_checking, reference_databases};

/// Every event id worth a tree: each counter's peak, the first and last events, and a
/// spread of events between them.
fn events(a: &Analyzer) -> Vec<i64> {
    let peak = a.run(&QueryRequest::new("memory_peak")).unwrap();
    let bounds = a.db().bounds().unwrap();
    events_worth_checking(
        |field| peak.get(0, field).and_then(Value::as_i64),
        bounds[0].events,
    )
}

#[test]
fn every_node_holds_its_children_and_itself() {
    for db in reference_databases() {
        let a = Analyzer::open(&db).unwrap();
        for event_id in events(&a) {
            for include_static in [true, false] {
                let tree = memory_tree(
                    &a,
                    &TreeRequest {
                        device: None,
                        event_id,
                        include_static,
                        min_size: 0,
                    },
                )
                .unwrap();
                // nodes() checks size = self + Σ children for bytes, requested bytes and
                // blocks, one root, and parents one level up.
                let nodes = tree
                    .nodes()
                    .unwrap_or_else(|e| panic!("{}: event {event_id}: {e}", db.display()));
                let root = nodes.iter().find(|n| n.node_id == "root").unwrap();
                let live = a
                    .run(
                        &QueryRequest::new("active_blocks_at_event")
                            .param("event_id", event_id)
                            .param("include_static", include_static)
                            .exact_total(true),
                    )
                    .unwrap();
                assert_eq!(
                    root.block_count,
                    live.total,
                    "{} @ {event_id}",
                    db.display()
                );
            }
        }
    }
}

#[test]
fn a_tree_that_does_not_add_up_is_refused() {
    let a = Analyzer::open(&reference_databases()[0]).unwrap();
    let event_id = events(&a)[1];
    let mut tree = memory_tree(
        &a,
        &TreeRequest {
            device: None,
            event_id,
            include_static: true,
            min_size: 0,
        },
    )
    .unwrap();
    assert!(tree.to_text().is_ok());
    let size = tree
        .outcome
        .columns
        .iter()
        .position(|c| c == "size_bytes")
        .unwrap();
    let last = tree.outcome.rows.len() - 1;
    if let Value::Int(v) = &mut tree.outcome.rows[last][size] {
        *v += 1;
    }
    assert_eq!(tree.to_text().unwrap_err(), IncompleteTree);
    assert!(tree.to_html(None).is_err());
}

#[test]
fn coverage_is_included_bytes_over_active_bytes_at_the_event() {
    for db in reference_databases() {
        let a = Analyzer::open(&db).unwrap();
        for metric in [Metric::Active, Metric::Allocated, Metric::Reserved] {
            let r = peak_memory(
                &a,
                &PeakRequest {
                    metric,
                    ..PeakRequest::default()
                },
            )
            .unwrap();
            let sum: i64 = r
                .callstack_groups
                .iter()
                .map(|g| g["size_bytes"].as_i64().unwrap())
                .sum();
            assert_eq!(r.included_bytes, sum);
            // With every group included and nothing filtered, the groups are all live memory.
            if !r.truncated {
                assert_eq!(
                    Some(r.included_bytes),
                    r.active_bytes_at_event,
                    "{}",
                    db.display()
                );
            }
        }
    }
}

#[test]
fn the_page_is_self_contained_and_escapes_frame_text() {
    let data = serde_json::json!({
        "title": "t",
        "nodes": [{"node_id": "root", "label": "</script><script>alert(1)</script> & <!--"}],
    });
    let page = flamegraph_page("a <b> & \"c\"", &data);
    assert!(!page.contains("</script><script>alert"));
    assert!(page.contains("\\u003c/script\\u003e"));
    assert!(page.contains("a &lt;b&gt; &amp; &quot;c&quot;"));
    assert!(page.contains("Content-Security-Policy"));
    for needle in ["{{TITLE}}", "{{STYLE}}", "{{SCRIPT}}", "{{DATA}}"] {
        assert!(!page.contains(needle), "{needle} left in the page");
    }
    // Nothing that would load another resource (the browser test also watches requests).
    for needle in [
        "src=\"http",
        "href=\"http",
        "url(http",
        "@import",
        "fetch(",
        "XMLHttpRequest",
    ] {
        assert!(!page.contains(needle), "{needle} in the page");
    }
}
