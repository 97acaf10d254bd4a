//! The library API on a database made by pt-snap-cli 0.4.1 (the query goldens' copy).

use std::sync::Arc;

use pt_snap_query::{registry, Analyzer, QueryError, QueryRequest, Value};
use pt_snap_testkit::repo_root;

fn db_path() -> std::path::PathBuf {
    repo_root().join("tests/golden/query/empty_cache/reference.db")
}

fn analyzer() -> Analyzer {
    Analyzer::open(&db_path()).unwrap()
}

fn peak_active_event(a: &Analyzer) -> i64 {
    let peak = a.run(&QueryRequest::new("memory_peak")).unwrap();
    peak.get(0, "peak_active_event_id")
        .and_then(Value::as_i64)
        .unwrap()
}

/// A request that every template accepts: required parameters filled in.
fn request_for(name: &str, event: i64) -> QueryRequest {
    let t = registry::find(name).unwrap();
    let mut r = QueryRequest::new(name);
    if t.contract.has_parameter("event_id") {
        r = r.param("event_id", event);
    }
    r
}

#[test]
fn every_template_returns_exactly_its_contract_columns() {
    let a = analyzer();
    let event = peak_active_event(&a);
    for t in registry::all() {
        for stack_bytes in [None, Some(32)] {
            let mut r = request_for(t.name(), event);
            if let Some(b) = stack_bytes {
                if !t.contract.has_parameter("stack_bytes") {
                    continue;
                }
                r = r.param("stack_bytes", b);
            }
            let out = a.run(&r).unwrap();
            let declared: Vec<&str> = t
                .contract
                .output_schema
                .iter()
                .filter(|c| !c.dataset_only())
                .filter(|c| stack_bytes.is_some() || !c.opt_in())
                .map(|c| c.column.as_str())
                .collect();
            let mut got: Vec<&str> = out.columns.iter().map(String::as_str).collect();
            let mut want = declared.clone();
            got.sort_unstable();
            want.sort_unstable();
            assert_eq!(got, want, "{} stack_bytes={stack_bytes:?}", t.name());
        }
    }
}

#[test]
fn a_database_image_answers_like_the_file() {
    let bytes = std::fs::read(db_path()).unwrap();
    let from_file = analyzer();
    let from_bytes = Analyzer::from_bytes(&bytes).unwrap();
    assert_eq!(from_file.devices(), from_bytes.devices());
    let r = QueryRequest::new("leak_detection").max_rows(25);
    let (a, b) = (from_file.run(&r).unwrap(), from_bytes.run(&r).unwrap());
    assert_eq!(a.rows, b.rows);
    assert!(a.has_more && a.truncated && !a.total_is_exact);
    assert_eq!(a.returned, 25);
}

/// The browser reads a dropped image in pieces (`from_reader`) and offers it back for
/// download (`with_image`): the bytes handed back are the bytes read.
#[test]
fn an_image_read_in_pieces_is_handed_back_unchanged() {
    struct Pieces<'a>(&'a [u8]);
    impl std::io::Read for Pieces<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = out.len().min(self.0.len()).min(4093);
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let bytes = std::fs::read(db_path()).unwrap();
    let mut a = Analyzer::from_reader(Pieces(&bytes), bytes.len()).unwrap();
    let r = QueryRequest::new("memory_peak");
    assert_eq!(a.run(&r).unwrap().rows, analyzer().run(&r).unwrap().rows);
    assert!(a.with_image(|image| image == bytes.as_slice()).unwrap());
}

#[test]
fn not_a_database_is_refused() {
    assert!(
        Analyzer::from_bytes(b"definitely not SQLite, but long enough to look like a header")
            .is_err()
    );
}

/// A database image whose format tables are views (the browser opens images) is refused
/// before any template can evaluate them.
#[test]
fn an_image_with_a_view_for_a_table_is_refused() {
    use pt_snap_query::rusqlite::Connection;
    let mut conn = Connection::open_in_memory().unwrap();
    let image = std::fs::read(db_path()).unwrap();
    conn.deserialize_read_exact("main", image.as_slice(), image.len(), false)
        .unwrap();
    conn.execute_batch(
        "ALTER TABLE callstack RENAME TO callstack_real;
         CREATE VIEW callstack AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
         SELECT x AS id, 'a' AS callstack FROM c;",
    )
    .unwrap();
    let hostile = conn.serialize("main").unwrap().to_vec();
    match Analyzer::from_bytes(&hostile) {
        Err(pt_snap_query::OpenError::SchemaInvalid(m)) => {
            assert!(m.contains("'callstack' is a view"), "{m}")
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a view was accepted"),
    }
}

#[test]
fn an_interrupt_stops_the_statement() {
    let a = analyzer();
    a.set_interrupt(Some(Arc::new(|| true)));
    let err = a.run(&QueryRequest::new("callstack_analysis")).unwrap_err();
    assert_eq!(err, QueryError::Timeout);
    a.set_interrupt(None);
    assert!(a.run(&QueryRequest::new("callstack_analysis")).is_ok());
}

#[test]
fn exact_totals_count_past_the_window() {
    let a = analyzer();
    let page = a
        .run(
            &QueryRequest::new("event")
                .param("limit", 5)
                .param("offset", 10)
                .exact_total(true),
        )
        .unwrap();
    let all = a.run(&QueryRequest::new("event")).unwrap();
    assert_eq!(page.total, all.returned);
    assert_eq!(page.returned, 5);
    assert_eq!(page.rows[..], all.rows[10..15]);
    assert!(page.truncated && page.total_is_exact);
}

#[test]
fn unknown_devices_and_templates_are_named() {
    let a = analyzer();
    assert_eq!(
        a.run(&QueryRequest::new("memory_peak").device(7))
            .unwrap_err(),
        QueryError::DeviceNotFound("Device 7 not found. Available: [0]".into())
    );
    assert_eq!(
        a.run(&QueryRequest::new("nope")).unwrap_err().code(),
        "TEMPLATE_NOT_FOUND"
    );
}

#[test]
fn stack_bytes_cuts_on_character_boundaries() {
    let a = analyzer();
    let out = a
        .run(
            &QueryRequest::new("event")
                .param("stack_bytes", 7)
                .max_rows(200),
        )
        .unwrap();
    for i in 0..out.rows.len() {
        let text = out
            .get(i, "callstack")
            .and_then(Value::as_str)
            .unwrap_or("");
        assert!(text.len() <= 7);
        let original = out
            .get(i, "stack_original_bytes")
            .and_then(Value::as_i64)
            .unwrap();
        assert_eq!(
            out.get(i, "stack_truncated"),
            Some(&Value::Bool(original > 7))
        );
    }
}
