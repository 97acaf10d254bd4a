//! An import that leaves its indexes to the caller (the browser's) ends with a database
//! that has none of them, and building the missing ones makes it the schema, rows and
//! answers of an import that built them with the rows.

use pt_snap_db::{build_index, missing_indexes};
use pt_snap_import::{import_snapshot, ImportRequest, Indexes};
use rusqlite::Connection;

fn import(indexes: Indexes) -> Connection {
    let mut cfg = pt_snap_gen::Config::small(7);
    cfg.events_per_device = 1_500;
    cfg.devices = 2;
    let mut bytes = Vec::new();
    pt_snap_gen::generate(&cfg, &mut bytes).unwrap();
    let snapshot = pt_snap_model::decode_slice(&bytes).unwrap();
    let conn = Connection::open_in_memory().unwrap();
    let request = ImportRequest {
        indexes,
        ..ImportRequest::new(
            "generated.pickle",
            "0".repeat(64),
            bytes.len() as u64,
            "2026-12-05T00:00:00.000000+00:00",
        )
    };
    import_snapshot(&snapshot, &conn, &request, &mut |_| {}).unwrap();
    conn
}

/// `sqlite_master` as (type, name, sql), in name order.
fn schema(conn: &Connection) -> Vec<(String, String, Option<String>)> {
    conn.prepare("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn answer(conn: &Connection, sql: &str) -> Vec<Vec<Option<i64>>> {
    let mut stmt = conn.prepare(sql).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| (0..n).map(|i| r.get(i)).collect())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn deferred_indexes_are_built_one_at_a_time_into_the_same_database() {
    let devices = [0, 1];
    let whole = import(Indexes::WithRows);
    assert_eq!(
        missing_indexes(&whole, &devices).unwrap(),
        Vec::<String>::new()
    );
    let deferred = import(Indexes::Deferred);
    let missing = missing_indexes(&deferred, &devices).unwrap();
    assert_eq!(
        missing.len(),
        12,
        "six per device; the frames' UNIQUE one is built with the rows: {missing:?}"
    );
    assert!(missing[0].starts_with("CREATE INDEX idx_trace_entry_0_allocated ON"));
    // Answered before any index: the same as with them.
    let peak = "SELECT MAX(allocated), (SELECT MIN(id) FROM trace_entry_1 WHERE allocated = \
                (SELECT MAX(allocated) FROM trace_entry_1)) FROM trace_entry_1";
    assert_eq!(answer(&deferred, peak), answer(&whole, peak));
    let pragmas = |conn: &Connection| -> (i64, i64) {
        let pragma = |name: &str| -> i64 {
            conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
                .unwrap()
        };
        (pragma("cache_size"), pragma("temp_store"))
    };
    // A connection of its own settings, as the browser's engine opens its database with.
    deferred
        .execute_batch("PRAGMA cache_size = -1234; PRAGMA temp_store = MEMORY")
        .unwrap();
    let before = pragmas(&deferred);
    for (i, statement) in missing.iter().enumerate() {
        build_index(&deferred, statement).unwrap();
        assert_eq!(
            missing_indexes(&deferred, &devices).unwrap(),
            missing[i + 1..]
        );
    }
    assert_eq!(schema(&deferred), schema(&whole));
    assert_eq!(
        pragmas(&deferred),
        before,
        "the connection's cache size and temp store given back"
    );
}
